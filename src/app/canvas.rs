//! Drawing charts on `<canvas>` elements, and the budget chart itself.

use super::reactive::text;
use super::{BaselineBudget, Budget, DetailedBudget, State};
use crate::budget::dominant_sentence;
use crate::chart::{draw, Bar, ChartSpec, ChartStyle};
use crate::state::Mode;
use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::prelude::IntoDrawingArea;
use plotters_canvas::CanvasBackend;
use wasm_bindgen::prelude::*;

/// Bumped whenever every chart must be redrawn (window resized, light/dark
/// switched); charts track it.
#[derive(Clone, Copy)]
pub struct Redraw(pub RwSignal<u32>);

fn dark_query() -> Option<web_sys::MediaQueryList> {
    web_sys::window()?
        .match_media("(prefers-color-scheme: dark)")
        .ok()
        .flatten()
}

/// Provides [`Redraw`], bumped on window resize and colour-scheme change.
pub fn provide_redraw() {
    let redraw = Redraw(RwSignal::new(0));
    let bump = move || redraw.0.update(|n| *n = n.wrapping_add(1));
    let handle = window_event_listener(leptos::ev::resize, move |_| bump());
    on_cleanup(move || handle.remove());
    if let Some(query) = dark_query() {
        let listener = Closure::<dyn Fn()>::new(bump);
        let _ = query.add_event_listener_with_callback("change", listener.as_ref().unchecked_ref());
        // Lives as long as the page: one listener per mounted calculator.
        listener.forget();
    }
    provide_context(redraw);
}

/// Records a performance mark (`membudget:budget-drawn` …) for the benchmark.
pub fn mark(name: &str) {
    if let Some(perf) = web_sys::window().and_then(|w| w.performance()) {
        let _ = perf.mark(name);
    }
}

/// Sizes `canvas` to its box at the screen's pixel density (crisp on
/// high-DPI screens) and draws `spec` on it in the reader's colour scheme.
pub fn paint(canvas: &web_sys::HtmlCanvasElement, spec: &ChartSpec, name: &str) {
    let scale = web_sys::window()
        .map_or(1.0, |w| w.device_pixel_ratio())
        .max(1.0);
    let css_w = f64::from(canvas.client_width().max(1));
    let css_h = f64::from(canvas.client_height().max(1));
    canvas.set_width((css_w * scale).round() as u32);
    canvas.set_height((css_h * scale).round() as u32);
    let Some(backend) = CanvasBackend::with_canvas_object(canvas.clone()) else {
        return;
    };
    let style = ChartStyle {
        scale,
        dark: dark_query().is_some_and(|q| q.matches()),
    };
    if let Err(e) = draw(&backend.into_drawing_area(), spec, &style) {
        leptos::logging::error!("chart: {e}");
    }
    mark(&format!("membudget:{name}-drawn"));
}

/// The main chart: the current budget as one stacked bar, the pinned
/// baseline beside it, and the GPU's memory as a dashed line.
#[component]
pub fn BudgetChart() -> impl IntoView {
    let Budget(budget) = super::context::<Budget>();
    let BaselineBudget(baseline) = super::context::<BaselineBudget>();
    let State(state) = super::context::<State>();
    let Redraw(redraw) = super::context::<Redraw>();
    let canvas_ref = NodeRef::<Canvas>::new();

    let DetailedBudget(detailed) = super::context::<DetailedBudget>();
    Effect::new(move |_| {
        redraw.track();
        let Some(canvas) = canvas_ref.get() else {
            return;
        };
        let s = *state.read();
        let mut bars = Vec::with_capacity(2);
        match s.mode {
            Mode::Lesson => {
                let Ok(current) = budget.get() else { return };
                if let Some(b) = baseline.get() {
                    bars.push(Bar::lesson("Baseline", &b));
                }
                bars.push(Bar::lesson("Current", &current));
            }
            Mode::Detailed => {
                let Ok(d) = detailed.get() else { return };
                if s.detailed.show_lesson {
                    if let Ok(l) = crate::budget::estimate(&s.lesson_for_detailed()) {
                        bars.push(Bar::lesson("Lesson's rule", &l));
                    }
                }
                bars.push(Bar::detailed("Detailed, per GPU", &d));
            }
        }
        let spec = ChartSpec {
            legend: (!s.embed).then_some(bars.len() - 1),
            bars,
            unit: s.unit,
            capacity_bytes: s.gpu.map(|g| g.bytes()),
            marked: None,
        };
        paint(&canvas, &spec, "budget");
    });

    let label = move || {
        let unit = state.read().unit;
        if state.read().mode == Mode::Detailed {
            return detailed
                .get()
                .map(|b| {
                    format!(
                        "Detailed model, per GPU: {:.1} {} in all",
                        unit.of(b.total),
                        unit.label()
                    )
                })
                .unwrap_or_default();
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
        <div class="chart">
            <canvas node_ref=canvas_ref id="budget-chart" role="img" aria-label=text(label)></canvas>
        </div>
    }
}
