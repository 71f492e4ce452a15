//! "Make it fit": when the step does not fit the GPU, what to change — the
//! planner's rows (`detailed::planner`), each naming the term it cuts and
//! its cost, applied to the controls with one click.

use super::canvas::Charts;
use super::reactive::{on_click, text};
use super::State;
use crate::detailed::planner::{make_it_fit, Change, Plan};
use crate::state::{Mode, PageState, GPU_PRESETS};
use leptos::prelude::*;

/// How long the state must rest before the planner searches (ms): the
/// search prices about seventy configurations, so it runs after a drag,
/// never inside one.
const REST_MS: u64 = 200;
/// Rows shown.
const ROWS: usize = 6;

/// The search's inputs, if the panel has anything to say: detailed mode,
/// a GPU, and a step that does not fit it.
fn question(s: &PageState) -> Option<(f64, crate::detailed::DetailedConfig)> {
    (s.mode == Mode::Detailed).then_some(())?;
    Some((s.gpu?.bytes(), s.detailed_config()))
}

/// One row: what it is, what it saves and costs, and "Apply".
fn row(index: usize, c: &Change, from: crate::detailed::DetailedConfig) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let unit = state.read_untracked().unit;
    let to = c.cfg;
    let summary = format!(
        "{}: needs {:.1} {u}, saves {:.1} {u} of {}; {} GPU{}; compute ×{:.2}. Cost: {}.",
        c.name,
        unit.of(c.need),
        unit.of(c.saved),
        c.term.replace('_', " "),
        c.gpus,
        if c.gpus == 1 { "" } else { "s" },
        c.compute,
        c.cost,
        u = unit.label(),
    );
    let fits = c.fits;
    view! {
        <li class:fits=fits>
            <span class="plan-verdict">{if fits { "Fits" } else { "Not enough" }}</span>
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
        </li>
    }
}

/// The panel, under the GPU verdict in detailed mode.
#[component]
pub fn MakeItFit() -> impl IntoView {
    let State(state) = super::context::<State>();
    // The plan and the state it answers; searched once the state rests.
    let plan = RwSignal::new(None::<(PageState, Plan)>);
    let generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        let s = state.get();
        let Some((capacity, cfg)) = question(&s) else {
            return;
        };
        if plan.with_untracked(|p| p.as_ref().is_some_and(|(at, _)| *at == s)) {
            return;
        }
        let g = generation.get_value().wrapping_add(1);
        generation.set_value(g);
        set_timeout(
            move || {
                if generation.get_value() != g || state.get_untracked() != s {
                    return;
                }
                let found = make_it_fit(&cfg, capacity, s.detailed.overhead.as_ref());
                plan.set(Some((s, found)));
            },
            std::time::Duration::from_millis(REST_MS),
        );
    });
    let current = move || {
        let s = state.get();
        question(&s)?;
        plan.with(|p| match p {
            Some((at, found)) if *at == s => Some(Some(found.clone())),
            // Still searching for this state.
            _ => Some(None),
        })
    };
    let shown = move || current().is_some_and(|p| p.is_none_or(|p| !p.fits_now));
    // A bigger card, named as the picker names them (memory as sold).
    let card = |need: f64| {
        GPU_PRESETS
            .iter()
            .find(|(gib, _)| gib * (1u64 << 30) as f64 >= need)
            .map_or(String::new(), |(gib, cards)| {
                format!(" As it is, it fits a {gib} GB card as sold ({cards}).")
            })
    };
    let status = move || match current() {
        Some(None) => "Searching for what would make it fit…".to_string(),
        Some(Some(p)) if !p.changes.iter().any(|c| c.fits) => format!(
            "Nothing the planner tries makes it fit this GPU; the closest changes are below.{}",
            card(p.need)
        ),
        Some(Some(p)) => format!(
            "Each change priced by the model (the step's peak), the ones that fit first.{}",
            card(p.need)
        ),
        None => String::new(),
    };
    let rows = move || {
        let from = state.read_untracked().detailed_config();
        current()
            .flatten()
            .map(|p| p.changes)
            .unwrap_or_default()
            .into_iter()
            .take(ROWS)
            .enumerate()
            .map(|(i, c)| row(i, &c, from))
            .collect_view()
    };
    view! {
        <section class="make-it-fit" id="make-it-fit" aria-live="polite" hidden=move || !shown()>
            <h3>"Make it fit"</h3>
            <p class="derived" id="plan-status">{text(status)}</p>
            <ol class="plan-rows">{rows}</ol>
        </section>
    }
}
