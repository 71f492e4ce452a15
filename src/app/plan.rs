//! "Make it fit": when the step does not fit the GPU, what to change — the
//! planner's rows (`detailed::planner`), each naming the term it cuts and
//! its cost (in time too, on a card of the table), applied to the controls
//! with one click. "Faster and still fits": when it fits a card of the
//! table, the layouts over the same GPUs that fit and run faster
//! (`detailed::search`).

use super::canvas::Charts;
use super::reactive::{cond, on_click, text};
use super::State;
use crate::detailed::plan::planner::{flags, make_it_fit, need, Change, Plan};
use crate::detailed::plan::search::{search, Row};
use crate::detailed::time::steptime::{Cluster, Efficiency};
use crate::detailed::DetailedConfig;
use crate::state::{Mode, PageState, GPU_PRESETS};
use leptos::prelude::*;

/// How long the state must rest before the planner searches (ms): the
/// search prices about seventy configurations, so it runs after a drag,
/// never inside one.
const REST_MS: u64 = 200;
/// Rows shown.
const ROWS: usize = 6;

/// The search's inputs, if the panel has anything to say: detailed mode
/// and a GPU (with its speeds when it is a card of the table).
type Question = (f64, DetailedConfig, Option<(Cluster, Efficiency)>);
fn question(s: &PageState) -> Option<Question> {
    (s.mode == Mode::Detailed).then_some(())?;
    let timed = s.card().map(|g| {
        (
            Cluster::new(g, s.detailed.offload.gpus_per_node),
            Efficiency::for_gpu(&g),
        )
    });
    Some((s.gpu?.bytes(), s.detailed_config(), timed))
}

/// What the panel found.
#[derive(Clone, Debug, PartialEq)]
enum Answer {
    /// The planner's changes (it does not fit, or no card's speeds).
    Fit(Plan),
    /// It fits a card of the table: the layouts over the same GPUs that
    /// fit and are faster, fastest first, and the step time now.
    Faster { now: f64, rows: Vec<Row> },
}

/// Searches for `q`: see [`Answer`].
fn answer(q: &Question, overhead: Option<&crate::detailed::Overhead>) -> Answer {
    let (capacity, cfg, timed) = q;
    let fits = need(cfg, overhead).is_some_and(|n| n <= *capacity);
    match timed {
        Some((cluster, eff)) if fits => {
            let now = crate::detailed::time::steptime::step_time(cfg, cluster, eff).step_s;
            let rows = search(cfg, cluster, cfg.gpus(), overhead, eff)
                .rows
                .into_iter()
                // The reader's optimizer: another one changes the training
                // (8-bit moments) for memory, not speed.
                .filter(|r| r.time.step_s < 0.99 * now && r.cfg.optimizer == cfg.optimizer)
                .take(ROWS)
                .collect();
            Answer::Faster { now, rows }
        }
        _ => Answer::Fit(make_it_fit(
            cfg,
            *capacity,
            overhead,
            timed.as_ref().map(|(c, e)| (c, e)),
        )),
    }
}

/// One faster layout: its step time against now, its peak, the flags that
/// differ, and "Apply".
fn faster_row(index: usize, r: &Row, now: f64, from: DetailedConfig) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let unit = state.read_untracked().unit;
    let to = r.cfg;
    let summary = format!(
        "{}: {} per step ({:+.0} %), needs {:.1} {u}, MFU {:.1} %.",
        flags(&from, &to).join(" "),
        super::steptime::seconds(r.time.step_s),
        100.0 * (r.time.step_s / now - 1.0),
        unit.of(r.need),
        100.0 * r.time.mfu,
        u = unit.label(),
    );
    view! {
        <li class="fits">
            <span class="plan-verdict">"Faster"</span>
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
            {super::trainer::row_file(to, index)}
        </li>
    }
}

/// One row: what it is, what it saves and costs, and "Apply".
fn row(index: usize, c: &Change, from: DetailedConfig) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let unit = state.read_untracked().unit;
    let to = c.cfg;
    let time = c.time.map_or(String::new(), |t| {
        format!("; GPU-time per token {:+.0} %", 100.0 * (t - 1.0))
    });
    let summary = format!(
        "{}: needs {:.1} {u}, saves {:.1} {u} of {}; {} GPU{}; compute ×{:.2}{time}. Cost: {}.",
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
            " "
            {super::trainer::row_file(to, index)}
        </li>
    }
}

/// The panel, under the GPU verdict in detailed mode.
#[component]
pub fn MakeItFit() -> impl IntoView {
    let State(state) = super::context::<State>();
    // The plan and the state it answers; searched once the state rests.
    let plan = RwSignal::new(None::<(PageState, Answer)>);
    let generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        let s = state.get();
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
                if generation.get_value() != g || state.get_untracked() != s {
                    return;
                }
                let found = answer(&q, s.detailed.overhead.as_ref());
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
    let shown = move || {
        current().is_some_and(|p| match p {
            None => true,
            Some(Answer::Fit(p)) => !p.fits_now,
            Some(Answer::Faster { rows, .. }) => !rows.is_empty(),
        })
    };
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
    let status = move || {
        match current() {
        Some(None) => "Searching…".to_string(),
        Some(Some(Answer::Fit(p))) if !p.changes.iter().any(|c| c.fits) => format!(
            "Nothing the planner tries makes it fit this GPU; the closest changes are below.{}",
            card(p.need)
        ),
        Some(Some(Answer::Fit(p))) => format!(
            "Each change priced by the model (the step's peak, and the step time on a card of the table), the ones that fit first.{}",
            card(p.need)
        ),
        Some(Some(Answer::Faster { now, .. })) => format!(
            "Layouts over the same GPUs and batch that fit this card and are faster than now ({} per step), fastest first.",
            super::steptime::seconds(now)
        ),
        None => String::new(),
    }
    };
    let rows = move || {
        let from = state.read_untracked().detailed_config();
        match current().flatten() {
            Some(Answer::Fit(p)) => p
                .changes
                .into_iter()
                .take(ROWS)
                .enumerate()
                .map(|(i, c)| row(i, &c, from).into_any())
                .collect_view(),
            Some(Answer::Faster { now, rows }) => rows
                .iter()
                .enumerate()
                .map(|(i, r)| faster_row(i, r, now, from).into_any())
                .collect_view(),
            None => Vec::new().collect_view(),
        }
    };
    view! {
        <section class="make-it-fit" id="make-it-fit" aria-live="polite" hidden=cond(move || !shown())>
            <h3 id="plan-title">{text(title)}</h3>
            <p class="derived" id="plan-status">{text(status)}</p>
            <ol class="plan-rows">{rows}</ol>
        </section>
    }
}
