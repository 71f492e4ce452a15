//! The stacked bar chart on a `<canvas>`, redrawn whenever the budget changes.

use super::Budget;
use crate::budget::dominant_sentence;
use crate::chart::{draw, Bar, ChartStyle};
use leptos::html::Canvas;
use leptos::prelude::*;
use plotters::prelude::IntoDrawingArea;
use plotters_canvas::CanvasBackend;

/// Whether the reader's system asks for dark colours.
fn prefers_dark() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .is_some_and(|m| m.matches())
}

/// The chart: one stacked bar for the current budget, sized to its box at
/// the screen's pixel density so it stays crisp on high-DPI screens.
#[component]
pub fn BudgetChart() -> impl IntoView {
    let Budget(budget) = expect_context::<Budget>();
    let canvas_ref = NodeRef::<Canvas>::new();
    // Bumped on window resize so the chart is redrawn at the new size.
    let resized = RwSignal::new(0u32);
    let handle = window_event_listener(leptos::ev::resize, move |_| {
        resized.update(|n| *n = n.wrapping_add(1))
    });
    on_cleanup(move || handle.remove());

    Effect::new(move |_| {
        resized.track();
        let Some(canvas) = canvas_ref.get() else {
            return;
        };
        let Ok(b) = budget.get() else { return };
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
            dark: prefers_dark(),
        };
        let bars = [Bar {
            label: "Current",
            breakdown: &b,
        }];
        if let Err(e) = draw(&backend.into_drawing_area(), &bars, &style) {
            leptos::logging::error!("chart: {e:?}");
        }
    });

    view! {
        <div class="chart">
            <canvas
                node_ref=canvas_ref
                id="budget-chart"
                role="img"
                aria-label=move || budget.get().map(|b| dominant_sentence(&b)).unwrap_or_default()
            ></canvas>
        </div>
    }
}
