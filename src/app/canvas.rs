//! Drawing charts on `<canvas>` elements, and the budget chart itself.

use super::reactive::text;
use super::{BaselineBudget, Budget, DetailedBudget, DetailedTimeline, State};
use crate::budget::{dominant_sentence, estimate};
use crate::canvas::{observe_size, paint, Surface};
use crate::chart::{verdict_bars, Bar, ChartSpec};
use crate::state::{Mode, PageState};
use leptos::html::Canvas;
use leptos::prelude::*;
use std::sync::Arc;
use wasm_bindgen::prelude::*;

/// Bumped when the screen's pixel density may have changed (the window
/// was resized or zoomed); charts track it.
#[derive(Clone, Copy)]
pub struct Redraw(pub RwSignal<u32>);

/// Whether the reader's system asks for dark colours, kept current by a
/// listener (asking on every draw costs a `matchMedia` call).
#[derive(Clone, Copy)]
pub struct Dark(pub RwSignal<bool>);

/// Provides [`Redraw`], bumped on window resize, and [`Dark`].
pub fn provide_redraw() {
    let redraw = Redraw(RwSignal::new(0));
    let handle = window_event_listener(leptos::ev::resize, move |_| {
        redraw.0.update(|n| *n = n.wrapping_add(1))
    });
    on_cleanup(move || handle.remove());
    let dark = Dark(RwSignal::new(false));
    let query = web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten());
    if let Some(query) = query {
        dark.0.set(query.matches());
        let listener = Closure::<dyn Fn(web_sys::MediaQueryListEvent)>::new(
            move |e: web_sys::MediaQueryListEvent| dark.0.set(e.matches()),
        );
        let _ = query.add_event_listener_with_callback("change", listener.as_ref().unchecked_ref());
        // Lives as long as the page: one listener per mounted calculator.
        listener.forget();
    }
    provide_context(redraw);
    provide_context(dark);
}

/// A chart's `<canvas>`: the element once mounted, and the size of its box
/// in CSS pixels, kept current by [`observe_size`].
///
/// An `IntersectionObserver` also tells whether the canvas is on screen
/// ([`ChartCanvas::in_view`]): a secondary chart scrolled out of view is
/// neither computed nor drawn while inputs change, and is brought up to
/// date when it scrolls back in.
#[derive(Clone, Copy)]
pub struct ChartCanvas {
    /// Goes on the `<canvas>`.
    pub node: NodeRef<Canvas>,
    /// The canvas's 2D context, looked up at the first draw.
    surface: StoredValue<Option<Surface>, LocalStorage>,
    size: RwSignal<(f64, f64)>,
    on_screen: RwSignal<bool>,
    redraw: Redraw,
    dark: Dark,
}

impl ChartCanvas {
    /// Observes the canvas once it is mounted (inside a calculator, whose
    /// [`Redraw`] and [`Dark`] it reads).
    pub fn new() -> Self {
        let node = NodeRef::<Canvas>::new();
        let size = RwSignal::new((0.0, 0.0));
        // On screen until the observer says otherwise: the first draw is
        // not held back.
        let on_screen = RwSignal::new(true);
        node.on_load(move |canvas| {
            let on_cross = Closure::<dyn Fn(js_sys::Array)>::new(move |entries: js_sys::Array| {
                let last = entries.get(entries.length().saturating_sub(1));
                if let Ok(entry) = last.dyn_into::<web_sys::IntersectionObserverEntry>() {
                    let seen = entry.is_intersecting();
                    if on_screen.get_untracked() != seen {
                        on_screen.set(seen);
                    }
                }
            });
            if let Ok(observer) =
                web_sys::IntersectionObserver::new(on_cross.as_ref().unchecked_ref())
            {
                observer.observe(&canvas);
            }
            on_cross.forget();
            observe_size(&canvas, move |new| {
                if size.get_untracked() != new {
                    size.set(new);
                }
            });
        });
        Self {
            node,
            surface: StoredValue::new_local(None),
            size,
            on_screen,
            redraw: super::context::<Redraw>(),
            dark: super::context::<Dark>(),
        }
    }

    /// Whether the canvas is on screen (tracked: an effect that asks is run
    /// again when it scrolls into view). The sweep and the step timeline
    /// check it before building what they draw; the main chart, which the
    /// PNG export copies, is always kept current.
    pub fn in_view(&self) -> bool {
        self.on_screen.get()
    }

    /// Everything besides the page state that decides what [`paint`]
    /// draws (tracked, like `paint`): whether the canvas is mounted and on
    /// screen, its box, the pixel density's generation, the colour scheme.
    ///
    /// [`paint`]: ChartCanvas::paint
    fn inputs(&self) -> (bool, bool, (f64, f64), u32, bool) {
        (
            self.node.get().is_some(),
            self.on_screen.get(),
            self.size.get(),
            self.redraw.0.get(),
            self.dark.0.get(),
        )
    }

    /// Sizes the canvas to its box at the screen's pixel density (crisp on
    /// high-DPI screens) and draws `spec` in the reader's colour scheme.
    /// Tracks the box size, the pixel density and the colour scheme; draws
    /// nothing while the canvas is hidden (a zero-size box) or not mounted.
    pub fn paint(&self, spec: &ChartSpec) {
        self.redraw.0.track();
        let dark = self.dark.0.get();
        let Some(canvas) = self.node.get() else {
            return;
        };
        if self.surface.with_value(Option::is_none) {
            self.surface.set_value(Surface::new(canvas));
        }
        let mut css = self.size.get();
        self.surface.with_value(|surface| {
            if let Some(surface) = surface {
                paint(surface, &mut css, spec, dark);
            }
        });
        // The box as measured by `paint` before the observer's first report.
        self.size.update_untracked(|s| *s = css);
    }
}

/// What the charts were last drawn from: the page state and each canvas's
/// [`ChartCanvas::inputs`].
type Drawn = (PageState, [(bool, bool, (f64, f64), u32, bool); 3]);

/// The page's three charts, made before anything else on the page (see
/// [`charts`]); each component takes its canvas from here.
#[derive(Clone, Copy)]
pub struct Charts {
    /// The budget bar.
    pub budget: ChartCanvas,
    /// The sweep over batch size or sequence length (lesson mode).
    pub sweep: ChartCanvas,
    /// The step timeline (detailed mode).
    pub timeline: ChartCanvas,
    /// Draws every chart on screen, unless nothing it draws from changed.
    draw: StoredValue<Arc<dyn Fn() + Send + Sync>>,
    /// Whether the reader has changed anything yet (ends [`rehearse`]).
    interacted: StoredValue<bool>,
}

impl Charts {
    /// Changes the page state with `f` and draws the charts before anything
    /// else on the page hears of it; every control's handler changes the
    /// state through this. A signal tells its subscribers in the order they
    /// last subscribed, and the charts' effect, run at every change,
    /// subscribes again each time: left to the signal it ran after the rest
    /// of the page had been told (0.3 ms of every input on the detailed
    /// page: README "Benchmark"). The effect, run next by the signal, finds
    /// nothing changed since and draws nothing.
    pub fn change(&self, state: RwSignal<PageState>, f: impl FnOnce(&mut PageState)) {
        let mut next = state.get_untracked();
        f(&mut next);
        self.set(state, next);
    }

    /// [`Charts::change`]'s work, once in the wasm rather than once per
    /// control (the state is `Copy`).
    fn set(&self, state: RwSignal<PageState>, next: PageState) {
        self.interacted.set_value(true);
        state.update_untracked(|s| *s = next);
        let draw = self.draw.get_value();
        untrack(|| draw());
        state.notify();
    }
}

/// Makes the page's charts, provides them as [`Charts`], and draws them
/// all in one immediate effect: it runs inside the input's own handler, as
/// soon as the state changes, so every chart on screen is drawn before the
/// text around it is updated (the page's other effects run in a task after
/// the handler). Drawn later, a chart's first text made the browser
/// recompute the styles of every changed text at once, and with an effect
/// per chart the sweep's and the timeline's ran only after the effects the
/// budget's memos wake (the table, the fit lines): measured from outside,
/// input -> last chart drawn with the sweep on screen, p95 2.6 -> 1.6 ms
/// (README "Benchmark"). The painters compute what they draw from the
/// state itself, not from the page's memos: an immediate effect runs while
/// the state is still telling its dependants, when a memo further down
/// that list is not yet marked stale, and would hand over its old value.
/// The controls' handlers draw first through [`Charts::change`]; the effect
/// draws for every other cause (a resize, a chart scrolled into view, the
/// colour scheme, the first mount) and skips a drawing already made.
///
/// `painters` makes the one drawing of all three charts from their
/// canvases (budget, sweep, timeline): the chart modules depend on this
/// one, never the other way round.
pub fn charts<P>(painters: impl FnOnce(ChartCanvas, ChartCanvas, ChartCanvas) -> P)
where
    P: Fn() + Send + Sync + 'static,
{
    let State(state) = super::context::<State>();
    let (budget, sweep, timeline) = (ChartCanvas::new(), ChartCanvas::new(), ChartCanvas::new());
    let paint_all: Arc<dyn Fn() + Send + Sync> = Arc::new(painters(budget, sweep, timeline));
    let last = StoredValue::new(None::<Drawn>);
    let interacted = StoredValue::new(false);
    let paint = paint_all.clone();
    let draw = Arc::new(move || {
        // Read (and so tracked) whether anything is drawn or not.
        let now = (
            *state.read(),
            [budget.inputs(), sweep.inputs(), timeline.inputs()],
        );
        if last.get_value() == Some(now) {
            return;
        }
        last.set_value(Some(now));
        paint();
    });
    let charts = Charts {
        budget,
        sweep,
        timeline,
        draw: StoredValue::new(draw.clone()),
        interacted,
    };
    provide_context(charts);
    ImmediateEffect::new_scoped(move || draw());
    rehearse(paint_all, interacted);
}

/// How many times [`rehearse`] draws the charts, and for how long at most
/// in all (ms): a slow device does fewer.
const REHEARSALS: u32 = 250;
const REHEARSAL_MS: f64 = 400.0;

/// Draws the charts on screen again, unchanged, [`REHEARSALS`] times while
/// the page is idle after it mounts, until the reader's first input. V8
/// runs new wasm code from its baseline compiler and compiles a function
/// with its optimizing one, in the background, only once the function has
/// run often: without rehearsals a reader's first hundred slider moves ran
/// the drawing code unoptimized while the compiler competed for the CPU,
/// their p95 half again as long as later ones' (README "Benchmark"). Each
/// rehearsal takes about a millisecond, only in idle time, and all of them
/// at most [`REHEARSAL_MS`]; the pixels do not change. Browsers without
/// `requestIdleCallback` skip them.
fn rehearse(paint_all: Arc<dyn Fn() + Send + Sync>, interacted: StoredValue<bool>) {
    use std::cell::RefCell;
    use std::rc::Rc;
    type Idle = Closure<dyn FnMut(web_sys::IdleDeadline)>;
    let Some(window) = web_sys::window() else {
        return;
    };
    if !js_sys::Reflect::has(&window, &"requestIdleCallback".into()).unwrap_or(false) {
        return;
    }
    let slot: Rc<RefCell<Option<Idle>>> = Rc::default();
    let again = slot.clone();
    let (mut left, mut spent) = (REHEARSALS, 0.0);
    let performance = window.performance();
    let now = move || performance.as_ref().map_or(0.0, |p| p.now());
    let step = Idle::new(move |deadline: web_sys::IdleDeadline| {
        let go =
            |left: u32, spent: f64| left > 0 && spent < REHEARSAL_MS && !interacted.get_value();
        while go(left, spent) && deadline.time_remaining() > 2.0 {
            let t = now();
            untrack(|| paint_all());
            spent += now() - t;
            left -= 1;
        }
        if go(left, spent) {
            if let (Some(w), Some(f)) = (web_sys::window(), again.borrow().as_ref()) {
                let _ = w.request_idle_callback(f.as_ref().unchecked_ref());
            }
        }
    });
    let _ = window.request_idle_callback(step.as_ref().unchecked_ref());
    // Kept for the page's life (it reschedules itself): one per calculator.
    *slot.borrow_mut() = Some(step);
    std::mem::forget(slot);
}

/// Draws the main chart: the current budget as one stacked bar, the
/// pinned baseline beside it, and the GPU's memory as a dashed line.
pub fn budget_painter(chart: ChartCanvas) -> impl Fn() + Send + Sync {
    let State(state) = super::context::<State>();
    let DetailedTimeline(timeline) = super::context::<DetailedTimeline>();
    move || {
        let s = *state.read();
        let mut bars = Vec::with_capacity(2);
        match s.mode {
            Mode::Lesson => {
                let Ok(current) = estimate(&s.config) else {
                    return;
                };
                if let Some(b) = s.baseline.and_then(|b| estimate(&b).ok()) {
                    bars.push(Bar::lesson("Baseline", &b));
                }
                bars.push(Bar::lesson("Current", &current));
            }
            Mode::Detailed => {
                let Ok(d) = crate::detailed::estimate(&s.detailed_config()) else {
                    return;
                };
                if s.detailed.show_lesson {
                    if let Ok(l) = estimate(&s.lesson_for_detailed()) {
                        bars.push(Bar::lesson("Lesson's rule", &l));
                    }
                }
                // The terms at rest beside the step's peak with the
                // runtime overhead: the figure the verdict judges.
                let Some(t) = timeline.get() else {
                    return;
                };
                let overhead = s
                    .detailed
                    .overhead
                    .map_or(0.0, |o| o.for_step(&s.detailed_config(), &t).total());
                bars.extend(verdict_bars(&d, &t, overhead));
            }
        }
        let spec = ChartSpec {
            legend: (!s.embed).then_some(bars.len() - 1),
            share: false,
            bars,
            unit: s.unit,
            capacity_bytes: s.gpu.map(|g| g.bytes()),
            marked: None,
        };
        chart.paint(&spec);
    }
}

/// The main chart's canvas (drawn by [`charts`]).
#[component]
pub fn BudgetChart() -> impl IntoView {
    let Budget(budget) = super::context::<Budget>();
    let BaselineBudget(baseline) = super::context::<BaselineBudget>();
    let State(state) = super::context::<State>();
    let DetailedBudget(detailed) = super::context::<DetailedBudget>();
    let chart = super::context::<Charts>().budget;

    let DetailedTimeline(timeline) = super::context::<DetailedTimeline>();
    let label = move || {
        let unit = state.read().unit;
        if state.read().mode == Mode::Detailed {
            let s = state.read();
            let (Some(b), Some(t)) = (detailed.get().ok(), timeline.get()) else {
                return String::new();
            };
            let peak = t.peak_bytes();
            let o = s
                .detailed
                .overhead
                .map_or(0.0, |o| o.for_step(&s.detailed_config(), &t).total());
            return format!(
                "Detailed model, per GPU: {:.1} {l} at rest; the step peaks at {:.1} {l}{}",
                unit.of(b.total),
                unit.of(peak + o),
                if o > 0.0 {
                    " with the runtime overhead"
                } else {
                    ""
                },
                l = unit.label()
            );
        }
        let mut text = budget
            .get()
            .map(|b| dominant_sentence(&b, unit))
            .unwrap_or_default();
        if let Some(b) = baseline.get() {
            text += &format!("; baseline {:.1} {}", unit.of(b.total), unit.label());
        }
        text
    };
    view! {
        <div class="chart main-chart">
            <canvas node_ref=chart.node id="budget-chart" role="img" aria-label=text(label)></canvas>
        </div>
    }
}
