//! Pinning a baseline to compare against: the lesson's configuration
//! (its bar and table column), or in detailed mode a whole configuration
//! (or a planner's row) beside the one on screen, term by term and in time
//! ([`crate::compare`]).

use super::canvas::Charts;
use super::reactive::{cond, on_click, text};
use super::State;
use crate::budget::TrainingConfig;
use crate::compare::{compare, difference, error, Context, Line, Pinned};
use crate::state::Mode;
use leptos::prelude::*;

/// `7 B, batch 4, seq 2048, hidden 4096, 32 layers, mixed`.
fn describe(c: &TrainingConfig) -> String {
    format!(
        "{} B, batch {}, seq {}, hidden {}, {} layers, {}",
        c.params_b,
        c.batch,
        c.seq_len,
        c.hidden,
        c.layers,
        if c.mixed_precision { "mixed" } else { "fp32" }
    )
}

/// "Pin as baseline" keeps the current configuration; the chart then shows
/// its bar beside the current one and the table its column and the change.
/// One click clears it.
#[component]
pub fn PinBaseline() -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let pinned = move || state.read().baseline;
    view! {
        <div class="field compare">
            <div class="buttons">
                <button
                    type="button"
                    id="pin-baseline"
                    on:click=on_click(move || charts.change(state, |s| s.baseline = Some(s.config)))
                >
                    {text(move || if pinned().is_some() { "Pin current instead".into() } else { "Pin as baseline".into() })}
                </button>
                <button
                    type="button"
                    id="clear-baseline"
                    hidden=cond(move || pinned().is_none())
                    on:click=on_click(move || charts.change(state, |s| s.baseline = None))
                >
                    "Clear baseline"
                </button>
            </div>
            <p class="hint">
                {text(move || match pinned() {
                    Some(b) => format!("Baseline: {}", describe(&b)),
                    None => "Pin a configuration, change the inputs, and compare.".to_string(),
                })}
            </p>
        </div>
    }
}

/// The configuration pinned in detailed mode, passed by context; the
/// address keeps it (`dbase`, [`crate::url::encode_pin`]).
#[derive(Clone, Copy)]
pub struct Pin(pub RwSignal<Option<Pinned>>);

/// What the comparison shows: its lines, what the pinned side is, and why
/// it cannot be computed, if it cannot.
type Shown = (Vec<Line>, String, Option<String>);

/// The most lines a comparison has ([`crate::compare::compare`]'s: seven
/// terms, peak, need, GPUs, three of time, days and cost).
const LINES: usize = 15;

/// Detailed mode's comparison: "Pin as baseline" keeps the configuration
/// on screen (a planner row's "Compare" pins that row); while pinned, a
/// table of both, term by term and in time, with now − pinned. One click
/// unpins.
#[component]
pub fn DetailedCompare() -> impl IntoView {
    let State(state) = super::context::<State>();
    let Pin(pin) = super::context::<Pin>();
    let shown = Memo::new(move |_| {
        let p = pin.get()?;
        let s = state.read();
        (s.mode == Mode::Detailed).then_some(())?;
        let (base, now) = (p.over(&s).detailed_config(), s.detailed_config());
        let lines = compare(&base, &now, &Context::of(&s));
        Some((lines, difference(&base, &now), error(&base))) as Option<Shown>
    });
    let pinned = move || pin.read().is_some();
    let unit = move || state.read().unit;
    let cell = move |i: usize, c: usize| {
        text(move || {
            shown.with(|s| {
                s.as_ref()
                    .and_then(|s| s.0.get(i))
                    .map_or(String::new(), |l| l.cells(unit())[c].clone())
            })
        })
    };
    let rows = (0..LINES).map(|i| {
        let line = move || shown.with(|s| s.as_ref().and_then(|s| s.0.get(i).copied()));
        view! {
            <tr hidden=cond(move || line().is_none()) data-line=text(move || line().map_or("", |l| l.key).into())>
                <th scope="row">{text(move || line().map_or("", |l| l.label).into())}</th>
                <td class="num">{cell(i, 0)}</td>
                <td class="num">{cell(i, 1)}</td>
                <td class="num">{cell(i, 2)}</td>
            </tr>
        }
    });
    let why = move || shown.with(|s| s.as_ref().and_then(|s| s.2.clone()));
    view! {
        <section class="compare detailed-compare" id="detailed-compare" aria-label="Comparison">
            <div class="buttons">
                <button type="button" id="pin-detailed" on:click=on_click(move || pin.set(Some(Pinned::of(&state.get_untracked()))))>
                    {text(move || if pinned() { "Pin current instead".into() } else { "Pin as baseline".into() })}
                </button>
                <button type="button" id="unpin-detailed" hidden=cond(move || !pinned()) on:click=on_click(move || pin.set(None))>
                    "Unpin"
                </button>
            </div>
            <p class="hint" id="compare-what">
                {text(move || match shown.with(|s| s.as_ref().map(|s| s.1.clone())) {
                    Some(what) => what,
                    None => "Pin this configuration, change it, and compare; or compare with a planner's row.".into(),
                })}
            </p>
            <p class="derived" id="compare-error" hidden=cond(move || why().is_none())>{text(move || why().unwrap_or_default())}</p>
            <table class="budget compare-table" id="compare-table" hidden=cond(move || shown.with(Option::is_none))>
                <caption>{text(move || format!("Pinned and now, per GPU (memory in {})", unit().label()))}</caption>
                <thead>
                    <tr>
                        <th scope="col">"Figure"</th>
                        <th scope="col" class="num">"Pinned"</th>
                        <th scope="col" class="num">"Now"</th>
                        <th scope="col" class="num">"Now − pinned"</th>
                    </tr>
                </thead>
                <tbody>{rows.collect_view()}</tbody>
            </table>
        </section>
    }
}
