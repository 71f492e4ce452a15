//! "Make it fit": when the step does not fit the GPU, what to change — the
//! planner's rows (`detailed::planner`), each naming every flag it changes,
//! the term it cuts and its cost (in time too, on a card of the table),
//! applied to the controls with one click; the rows that need more GPUs
//! apart. "Faster and still fits": when it fits a card of the table, the
//! layouts over the same GPUs that fit and run faster
//! (`detailed::search`), or a sentence when none is. What each says is
//! `crate::panel`'s; this file wires it.

use super::canvas::Charts;
use super::reactive::{cond, on_click, on_event, text};
use super::steptime::TokenBudget;
use super::State;
use crate::detailed::plan::diff::Lever;
use crate::detailed::DetailedConfig;
use crate::panel::{answer, change_summary, faster_summary, question, Answer, ROWS};
use crate::state::{PageState, Pinned, GPU_PRESETS};
use leptos::prelude::*;

/// How long the state must rest before the planner searches (ms): the
/// search prices about seventy configurations, so it runs after a drag,
/// never inside one.
const REST_MS: u64 = 200;

/// One row: its verdict, what it says, "Apply", which sets the controls
/// to `to`, and "Compare", which pins it beside them.
fn row(
    index: usize,
    verdict: &'static str,
    fits: bool,
    summary: String,
    from: DetailedConfig,
    to: DetailedConfig,
) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    view! {
        <li class:fits=fits>
            <span class="plan-verdict">{verdict}</span>
            " "
            <span class="plan-summary">{summary}</span>
            " "
            <button
                type="button"
                class="plan-apply"
                id=format!("plan-apply-{index}")
                on:click=on_click(move || charts.change(state, |s| s.apply_change(&from, &to)))
            >
                "Apply"
            </button>
            " "
            <button
                type="button"
                class="plan-compare"
                id=format!("plan-compare-{index}")
                on:click=on_click(move || compare_row(state, &from, &to))
            >
                "Compare"
            </button>
            " "
            {super::trainer::row_file(to, index)}
        </li>
    }
}

/// "Compare": pins the row (as *Apply* would set it, without applying it)
/// and brings the comparison into view.
fn compare_row(state: RwSignal<PageState>, from: &DetailedConfig, to: &DetailedConfig) {
    state.update(|s| s.pin = Some(Pinned::row(s, from, to)));
    if let Some(e) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id("detailed-compare"))
    {
        e.scroll_into_view();
    }
}

/// The levers the rows leave alone: a compact line of boxes (`keep`).
fn keep_boxes() -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let boxes = Lever::ALL
        .into_iter()
        .map(|lever| {
            view! {
                <label class="check">
                    <input
                        type="checkbox"
                        id=format!("keep-{}", lever.name())
                        prop:checked=cond(move || state.read().detailed.keep.holds(lever))
                        on:change=on_event(move |ev| {
                            let on = event_target_checked(&ev);
                            charts.change(state, |s| s.detailed.keep.set(lever, on));
                        })
                    />
                    {format!(" {}", lever.name())}
                </label>
            }
        })
        .collect_view();
    view! { <p class="plan-keep" id="plan-keep">"Keep as it is: " {boxes}</p> }
}

/// The rows of `found` for the configuration `from`: *Make it fit*'s
/// within the GPUs, then those over more GPUs under their own line; or
/// *Faster and still fits*'s.
fn rows_of(
    found: Option<Answer>,
    from: DetailedConfig,
    unit: crate::budget::Unit,
    budget: crate::panel::Budget,
) -> Vec<AnyView> {
    let mut out = Vec::new();
    match found {
        Some(Answer::Fit(p, rate)) => {
            let summary = |c: &crate::detailed::plan::planner::Change| {
                change_summary(c, &from, unit, budget, rate)
            };
            let verdict = |fits| if fits { "Fits" } else { "Not enough" };
            for c in p.within().take(ROWS) {
                out.push(
                    row(out.len(), verdict(c.fits), c.fits, summary(c), from, c.cfg).into_any(),
                );
            }
            let more: Vec<_> = p.more_gpus().take(ROWS).collect();
            if !more.is_empty() {
                let line = format!("With more GPUs than the {} it runs on:", p.gpus);
                out.push(view! { <li class="plan-more" id="plan-more">{line}</li> }.into_any());
            }
            for c in more {
                out.push(
                    row(out.len(), verdict(c.fits), c.fits, summary(c), from, c.cfg).into_any(),
                );
            }
        }
        Some(Answer::Faster { now, rows, .. }) => {
            for r in &rows {
                let summary = faster_summary(r, now, &from, unit, budget);
                out.push(row(out.len(), "Faster", true, summary, from, r.cfg).into_any());
            }
        }
        None => {}
    }
    out
}

/// The page's state without its pin: what the planner answers (pinning a
/// row does not search again).
fn unpinned(s: PageState) -> PageState {
    PageState { pin: None, ..s }
}

/// The panel, under the GPU verdict in detailed mode.
#[component]
pub fn MakeItFit() -> impl IntoView {
    let State(state) = super::context::<State>();
    // The plan and the state it answers; searched once the state rests.
    let plan = RwSignal::new(None::<(PageState, Answer)>);
    let generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        let s = unpinned(state.get());
        let Some(q) = question(&s) else {
            return;
        };
        if plan.with_untracked(|p| p.as_ref().is_some_and(|(at, _)| *at == s)) {
            return;
        }
        let g = generation.get_value().wrapping_add(1);
        generation.set_value(g);
        set_timeout(
            move || {
                if generation.get_value() != g || unpinned(state.get_untracked()) != s {
                    return;
                }
                let found = answer(&q, s.detailed.overhead.as_ref());
                plan.set(Some((s, found)));
            },
            std::time::Duration::from_millis(REST_MS),
        );
    });
    let current = move || {
        let s = unpinned(state.get());
        question(&s)?;
        plan.with(|p| match p {
            Some((at, found)) if *at == s => Some(Some(found.clone())),
            // Still searching for this state.
            _ => Some(None),
        })
    };
    let shown = move || current().is_some_and(|p| crate::panel::shown(p.as_ref()));
    // A bigger card, named as the picker names them (memory as sold).
    let card = |need: f64| {
        GPU_PRESETS
            .iter()
            .find(|(gib, _)| gib * (1u64 << 30) as f64 >= need)
            .map_or(String::new(), |(gib, cards)| {
                format!(" As it is, it fits a {gib} GB card as sold ({cards}).")
            })
    };
    let title = move || match current() {
        Some(Some(Answer::Faster { .. })) => "Faster and still fits".to_string(),
        _ => "Make it fit".to_string(),
    };
    let status = move || match current() {
        Some(None) => "Searching…".to_string(),
        Some(Some(a)) => {
            let need = match &a {
                Answer::Fit(p, _) => p.need,
                Answer::Faster { .. } => f64::INFINITY,
            };
            crate::panel::status(&a, &card(need), state.read().detailed.keep)
        }
        None => String::new(),
    };
    let budget = super::context::<TokenBudget>();
    let rows = move || {
        let found = current().flatten();
        let s = state.read_untracked();
        rows_of(found, s.detailed_config(), s.unit, budget.get()).collect_view()
    };
    view! {
        <section class="make-it-fit" id="make-it-fit" aria-live="polite" hidden=cond(move || !shown())>
            <h3 id="plan-title">{text(title)}</h3>
            <p class="derived" id="plan-status">{text(status)}</p>
            {keep_boxes()}
            <ol class="plan-rows">{rows}</ol>
        </section>
    }
}
