//! Pinning a baseline to compare against: the lesson's configuration
//! (its bar and table column), or in detailed mode a whole configuration
//! (or a planner's row) beside the one on screen, term by term and in time
//! ([`crate::compare`]).

use super::canvas::Charts;
use super::reactive::{cond, on_click, text};
use super::State;
use crate::budget::TrainingConfig;
use crate::state::Pinned;
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

/// Detailed mode's comparison: "Pin as baseline" keeps the configuration
/// on screen (a planner row's "Compare" pins that row); while pinned, a
/// table of both, term by term and in time, with now − pinned
/// ([`crate::compare::html`]). One click unpins.
#[component]
pub fn DetailedCompare() -> impl IntoView {
    let State(state) = super::context::<State>();
    let pinned = move || state.read().pin.is_some();
    view! {
        <section class="compare detailed-compare" id="detailed-compare" aria-label="Comparison">
            <div class="buttons">
                <button type="button" id="pin-detailed" on:click=on_click(move || state.update(|s| s.pin = Some(Pinned::of(s))))>
                    {text(move || if pinned() { "Pin current instead".into() } else { "Pin as baseline".into() })}
                </button>
                <button type="button" id="unpin-detailed" hidden=cond(move || !pinned()) on:click=on_click(move || state.update(|s| s.pin = None))>
                    "Unpin"
                </button>
            </div>
            <div inner_html=text(move || crate::compare::html(&state.read()))></div>
        </section>
    }
}
