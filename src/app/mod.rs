//! The Leptos page: controls wired to the budget core, a table, two charts,
//! GPU fit, comparison, exercises and sharing.
//!
//! One source of truth: [`State`] holds the whole [`PageState`] (the URL
//! encodes exactly it); the budgets are memos derived from it; every view
//! reads those. Effects only talk to the outside world: the canvases and the
//! address bar.

mod canvas;
mod compare;
mod controls;
mod detailed;
mod exercises;
mod fit;
pub(crate) mod panic;
mod plan;
mod reactive;
mod readers;
mod share;
mod steptime;
mod sweep;
mod table;
mod timeline;
mod trainer;

use crate::budget::{estimate, Breakdown, ConfigError, Field};
use crate::detailed::{DetailedBreakdown, DetailedError, StepOptions, StepTimeline};
use crate::state::{DetailedOptions, Mode, PageState};
use crate::url::{decode_with, encode, Ignored};
use leptos::prelude::*;
use reactive::{cond, not, text, Cond};

pub use canvas::BudgetChart;
pub use compare::{DetailedCompare, PinBaseline};
pub use controls::{FieldControl, MixedPrecisionToggle, UnitSwitch};
pub use detailed::{DetailedControls, DetailedTable, ModeSwitch, ModelDifference};
pub use exercises::{EmbeddedExercise, Exercises};
pub use fit::GpuFit;
pub use plan::MakeItFit;
pub use share::{ExportPanel, UrlNotices};
pub use steptime::StepTimeBar;
pub use sweep::SweepPanel;
pub use table::BudgetTable;
pub use timeline::StepChart;

/// The page state every control edits, passed by context.
#[derive(Clone, Copy)]
pub struct State(pub RwSignal<PageState>);

/// The detailed model's settings alone, passed by context: the many
/// controls that show them follow this memo, so that moving a slider (which
/// changes the state but not these) does not run them again.
#[derive(Clone, Copy)]
pub struct Options(pub Memo<DetailedOptions>);

/// The budget of the current configuration, passed by context.
#[derive(Clone, Copy)]
pub struct Budget(pub Memo<Result<Breakdown, ConfigError>>);

/// The budget of the pinned baseline, if one is pinned.
#[derive(Clone, Copy)]
pub struct BaselineBudget(pub Memo<Option<Breakdown>>);

/// The detailed model's per-GPU budget for the same page, passed by context.
#[derive(Clone, Copy)]
pub struct DetailedBudget(pub Memo<Result<DetailedBreakdown, DetailedError>>);

/// The detailed model's step timeline (a later step), in detailed mode only.
#[derive(Clone, Copy)]
pub struct DetailedTimeline(pub Memo<Option<StepTimeline>>);

/// The step timeline the page shows: a later step, in detailed mode only.
fn step_timeline(s: &PageState) -> Option<StepTimeline> {
    (s.mode == Mode::Detailed)
        .then(|| {
            crate::detailed::memory::timeline(&s.detailed_config(), &StepOptions::default()).ok()
        })
        .flatten()
}

/// The step timeline the chart shows: the pipeline stage the reader picked,
/// or the one with the higher peak (the verdict's, [`step_timeline`]).
fn shown_timeline(s: &PageState) -> Option<StepTimeline> {
    use crate::state::ShownStage;
    if s.mode != Mode::Detailed {
        return None;
    }
    let all =
        crate::detailed::stage_timelines(&s.detailed_config(), &StepOptions::default()).ok()?;
    let pick = match s.detailed.stage_shown {
        ShownStage::First => all.first().cloned(),
        ShownStage::Last => all.last().cloned(),
        ShownStage::Highest => None,
    };
    pick.or_else(|| step_timeline(s))
}

/// Installs the panic banner and mounts the calculator on `query` in place
/// of the light lesson page
/// ([`crate::light`]), which asks for this once this wasm has loaded and no
/// slider is held. The same markup replaces the same markup, in one task
/// (no frame is painted between), and the control that had the focus
/// keeps it.
pub fn take_over(query: &str) {
    panic::install_hook();
    let doc = web_sys::window().and_then(|w| w.document());
    let focused = doc
        .as_ref()
        .and_then(|d| d.active_element())
        .map(|e| e.id());
    let query = query.to_string();
    mount_to_body(move || calculator_for(&query));
    let Some(doc) = doc else { return };
    if let Some(light) = doc.get_element_by_id("light-page") {
        light.remove();
    }
    let target = focused
        .filter(|id| !id.is_empty())
        .and_then(|id| doc.get_element_by_id(&id));
    if let Some(e) =
        target.and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(e).ok())
    {
        let _ = e.focus();
    }
}

/// The calculator's shared value of type `T`. Like `expect_context`, but
/// its message names no type: `expect_context` formats the type name with
/// `{:?}`, code the wasm would carry for a message no reader could use.
fn context<T: Clone + 'static>() -> T {
    use_context::<T>().expect("a calculator component outside <Calculator>")
}

/// The browser's own decimal-to-`f64` conversion (`Number.parseFloat`), for
/// [`crate::number::read`]: it keeps Rust's conversion tables out of the wasm.
pub fn browser_to_f64(decimal: &str) -> f64 {
    js_sys::Number::parse_float(decimal)
}

/// The query string of the page's address, without the `?`.
fn location_query() -> String {
    web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default()
}

/// The whole calculator, reading its first state from the address bar.
#[component]
pub fn App() -> impl IntoView {
    calculator_for(&location_query())
}

/// The calculator starting from `query`.
fn calculator_for(query: &str) -> impl IntoView {
    // Debug builds only: `?debug_panic=1` panics on purpose, so the end-to-end
    // tests can check that a panic shows the banner, not a blank page.
    #[cfg(debug_assertions)]
    if query.contains("debug_panic=1") {
        panic!("debug_panic=1 asked for a panic");
    }
    let decoded = decode_with(query, browser_to_f64);
    let initial = decoded.state.with_exercise_set_up();
    view! { <Calculator initial=initial ignored=decoded.ignored /> }
}

/// The calculator for a given starting state; `ignored` lists what the
/// address carried that could not be used.
#[component]
pub fn Calculator(
    /// The state to start from.
    initial: PageState,
    /// Values from the address that were not used, shown until dismissed.
    #[prop(optional)]
    ignored: Vec<Ignored>,
) -> impl IntoView {
    let state = provide_state(initial);
    keep_address_in_step(state);
    let embed = move || state.0.read().embed;
    let lesson = move || state.0.read().mode == Mode::Lesson;
    let in_lesson = cond(lesson);
    let in_detailed = not(in_lesson);
    view! {
        <main class="membudget" class:embed=cond(embed) class:detailed=in_detailed>
            <UrlNotices ignored=ignored />
            <header class="full-only">
                <h1>"GPU memory for training"</h1>
                <p class="lede">
                    "Training memory splits into terms that scale differently. "
                    "Move the sliders and watch which one grows."
                </p>
            </header>
            <div class="layout">
                {controls(in_lesson, in_detailed)}
                {results(state, in_lesson, in_detailed)}
            </div>
            <div class="full-only panels">
                <div hidden=in_detailed>
                    <SweepPanel />
                    <Exercises />
                </div>
                <ExportPanel />
            </div>
            {footer(in_lesson, in_detailed)}
        </main>
    }
}

/// The page state starting from `initial`, provided by context with the
/// budgets and step timeline derived from it; sets up the charts.
fn provide_state(initial: PageState) -> State {
    let state = State(RwSignal::new(initial));
    let budget = Budget(Memo::new(move |_| estimate(&state.0.read().config)));
    let baseline = BaselineBudget(Memo::new(move |_| {
        state.0.read().baseline.and_then(|b| estimate(&b).ok())
    }));
    provide_context(state);
    provide_context(steptime::TokenBudget(state.0));
    provide_context(Options(Memo::new(move |_| state.0.read().detailed)));
    provide_context(budget);
    provide_context(baseline);
    let detailed = DetailedBudget(Memo::new(move |_| {
        crate::detailed::estimate(&state.0.read().detailed_config())
    }));
    provide_context(detailed);
    provide_context(DetailedTimeline(Memo::new(move |_| {
        step_timeline(&state.0.read())
    })));
    canvas::provide_redraw();
    canvas::charts(|budget, sweep, timeline| {
        let paint_budget = canvas::budget_painter(budget);
        let paint_timeline = timeline::painter(timeline);
        let paint_sweep = sweep::painter(sweep);
        move || {
            paint_budget();
            paint_timeline();
            paint_sweep();
        }
    });
    state
}

/// Keeps the address bar in step, without adding history entries, once
/// the state has rested for 250 ms (the end of a drag, a typed value):
/// each change of the address costs about a millisecond, and Chromium
/// fetches and decodes the page's icon again for each one (measured:
/// 3 ms of the main thread every 100 ms of a drag when it followed the
/// slider), and it ignores more than 200 of them in 10 s. Each change
/// starts a timer; only the latest one writes, with the state at its time.
fn keep_address_in_step(state: State) {
    let url_generation = StoredValue::new(0u64);
    Effect::new(move |_| {
        state.0.track();
        let generation = url_generation.get_value().wrapping_add(1);
        url_generation.set_value(generation);
        set_timeout(
            move || {
                if url_generation.get_value() != generation {
                    return;
                }
                let query = format!("?{}", encode(&state.0.get_untracked()));
                let Some(window) = web_sys::window() else {
                    return;
                };
                if window.location().search().ok().as_deref() == Some(query.as_str()) {
                    return;
                }
                if let Ok(history) = window.history() {
                    let _ = history.replace_state_with_url(
                        &wasm_bindgen::JsValue::NULL,
                        "",
                        Some(&query),
                    );
                }
            },
            std::time::Duration::from_millis(250),
        );
    });
}

/// The controls' column: the mode switch, the lesson's fields, the
/// detailed model's controls, and the GPU, its fit and the baseline.
fn controls(in_lesson: Cond, in_detailed: Cond) -> impl IntoView {
    view! {
        <section class="controls" aria-label="Training configuration">
            <div class="full-only">
                <ModeSwitch />
            </div>
            <div hidden=in_detailed>
                <FieldControl field=Field::ModelSize />
            </div>
            {Field::ALL[1..]
                .iter()
                .map(|&field| view! { <FieldControl field=field /> })
                .collect_view()}
            <div hidden=in_detailed>
                <MixedPrecisionToggle />
            </div>
            <EmbeddedExercise />
            <div hidden=in_lesson>
                <DetailedControls />
            </div>
            <div class="full-only">
                <UnitSwitch />
                <GpuFit />
                <MakeItFit />
                <div hidden=in_detailed>
                    <PinBaseline />
                </div>
            </div>
        </section>
    }
}

/// The results' column: the budget chart, the lesson's table or the
/// detailed model's table, step time and step chart, and (embedded) a link
/// to the full calculator.
fn results(state: State, in_lesson: Cond, in_detailed: Cond) -> impl IntoView {
    view! {
        <section class="results" aria-label="Memory budget">
            <BudgetChart />
            <div hidden=in_detailed>
                <BudgetTable />
            </div>
            <div hidden=in_lesson>
                <DetailedTable />
                <StepTimeBar />
                <div class="full-only">
                    <DetailedCompare />
                </div>
                <ModelDifference />
                <StepChart />
            </div>
            <a class="embed-only open-full" target="_blank" rel="noopener" href=text(move || {
                let mut s = *state.0.read();
                s.embed = false;
                format!("?{}", encode(&s))
            })>"Open the full calculator ↗"</a>
        </section>
    }
}

/// The footer: where each model's figures come from.
fn footer(in_lesson: Cond, in_detailed: Cond) -> impl IntoView {
    view! {
        <footer class="full-only">
            <span hidden=in_detailed>
                "The lesson's rule of thumb. Parameters, gradients and master weights after "
                "Micikevicius et al. 2018; Adam's two fp32 moments after Kingma & Ba 2015; "
                "activations 34·L·b·s·h·2 bytes after Korthikanti et al. 2022. "
            </span>
            <span hidden=in_lesson>
                "The detailed model: model states after Rajbhandari et al. 2020 (ZeRO); activations after "
                "Korthikanti et al. 2022 and stock Hugging Face code as PyTorch keeps it; the step's peak from "
                "PyTorch's autograd and AdamW, checked against memory measured in PyTorch. "
            </span>
            "Nothing leaves your browser."
        </footer>
    }
}
