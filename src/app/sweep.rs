//! The sweep chart: every term against batch size (or sequence length).

use super::canvas::{ChartCanvas, Charts};
use super::controls::radio;
use super::reactive::text;
use super::State;
use crate::budget::estimate;
use crate::chart::{Bar, ChartSpec};
use crate::state::{sweep, Mode, SweepAxis};
use leptos::prelude::*;

/// `1k` for 1024, `128k` for 131072, the number itself otherwise.
fn short(v: u32) -> String {
    if v >= 1024 && v.is_multiple_of(1024) {
        format!("{}k", v / 1024)
    } else {
        v.to_string()
    }
}

/// Draws the sweep chart: the budget at every power of two of batch
/// size (or sequence length), with the current value among them and
/// marked; nothing while the chart is off screen or the mode hides it.
pub fn painter(chart: ChartCanvas) -> impl Fn() + Send + Sync {
    let State(state) = super::context::<State>();
    move || {
        let s = *state.read();
        // Hidden with the rest of the lesson's panels in detailed mode.
        if s.mode != Mode::Lesson || !chart.in_view() {
            return;
        }
        let field = s.sweep.field();
        let current = s.config.get(field) as u32;
        let mut points = sweep(&s.config, s.sweep);
        if !points.iter().any(|(v, _)| *v == current) {
            if let Ok(b) = estimate(&s.config) {
                let at = points.partition_point(|(v, _)| *v < current);
                points.insert(at, (current, b));
            }
        }
        let bars = points
            .iter()
            .map(|(v, b)| Bar::lesson(short(*v), b))
            .collect();
        let spec = ChartSpec {
            bars,
            unit: s.unit,
            // A GPU line means nothing on bars scaled to 100 %; the
            // fit panel gives the largest batch and sequence that fit.
            capacity_bytes: None,
            marked: points.iter().position(|(v, _)| *v == current),
            legend: None,
            share: true,
        };
        chart.paint(&spec);
    }
}

/// Stacked bars of the budget at every power of two of batch size (or
/// sequence length), with the current value among them and marked: only
/// the activations climb.
#[component]
pub fn SweepPanel() -> impl IntoView {
    let State(state) = super::context::<State>();
    let chart = super::context::<Charts>().sweep;
    let axis = move || state.read().sweep;

    let option = |a: SweepAxis, text: &str| {
        radio(
            "sweep",
            format!("sweep-{}", a.key()),
            text.into(),
            a,
            |s| s.sweep,
            |s, v| s.sweep = v,
        )
    };
    view! {
        <section class="panel sweep" aria-labelledby="sweep-title">
            <h2 id="sweep-title">
                {text(move || match axis() {
                    SweepAxis::Batch => "How the budget grows with batch size".into(),
                    SweepAxis::SeqLen => "How the budget grows with sequence length".into(),
                })}
            </h2>
            <div class="switch" role="group" aria-label="Sweep">
                {option(SweepAxis::Batch, " Batch size")}
                {option(SweepAxis::SeqLen, " Sequence length")}
            </div>
            <p class="derived">"Each bar is that setting's whole budget (100 %, its total written on the current one): a term's height is its share, so you see the activations take over as the value grows."</p>
            <div class="chart sweep-chart">
                <canvas
                    node_ref=chart.node
                    id="sweep-chart"
                    role="img"
                    aria-label=text(move || {
                        format!(
                            "Bars of every term's share of the budget for {} from the smallest to the largest; the activations' share grows.",
                            match axis() {
                                SweepAxis::Batch => "batch sizes",
                                SweepAxis::SeqLen => "sequence lengths",
                            }
                        )
                    })
                ></canvas>
            </div>
        </section>
    }
}
