//! "Memory over one training step": the detailed model's step timeline as
//! a chart (one bar per event, the peak marked, the GPU line across it) and
//! a sentence on why the peak differs from the sum of states and saved
//! activations.

use super::canvas::{ChartCanvas, Charts};
use super::reactive::text;
use super::{DetailedBudget, DetailedTimeline, State};
use crate::chart::{timeline_bars, ChartSpec};
use crate::detailed::why_peak;
use crate::state::Mode;
use leptos::prelude::*;

/// Draws the step timeline: one bar per event, the peak marked, the
/// GPU line across; nothing while the chart is off screen or the mode
/// hides it.
pub fn painter(chart: ChartCanvas) -> impl Fn() + Send + Sync {
    let State(state) = super::context::<State>();
    move || {
        let s = *state.read();
        if s.mode != Mode::Detailed || !chart.in_view() {
            return;
        }
        let Some(t) = super::shown_timeline(&s) else {
            return;
        };
        let cfg = s.detailed_config();
        let overhead = s
            .detailed
            .overhead
            .map_or(0.0, |o| o.for_step(&cfg, &t).total());
        let (bars, peak) = timeline_bars(&t, overhead);
        let spec = ChartSpec {
            legend: (!s.embed).then_some(peak),
            share: false,
            bars,
            unit: s.unit,
            capacity_bytes: s.gpu.map(|g| g.bytes()),
            marked: Some(peak),
        };
        chart.paint(&spec);
    }
}

/// The step timeline chart and its explanation (detailed mode).
#[component]
pub fn StepChart() -> impl IntoView {
    let State(state) = super::context::<State>();
    let DetailedTimeline(timeline) = super::context::<DetailedTimeline>();
    let DetailedBudget(detailed) = super::context::<DetailedBudget>();
    let chart = super::context::<Charts>().timeline;

    let explanation = move || {
        let s = state.read();
        if s.mode != Mode::Detailed {
            return String::new();
        }
        let (Some(worst), Some(t), Ok(b)) =
            (timeline.get(), super::shown_timeline(&s), detailed.get())
        else {
            return String::new();
        };
        let u = s.unit;
        let mut out = why_peak(&t, b.total, |bytes| {
            format!("{:.1} {}", u.of(bytes), u.label())
        });
        // Which GPU the chart shows: ranks of one pipeline stage are alike
        // (data, tensor, context and expert parallel shards are even).
        let cfg = s.detailed_config();
        let p = cfg.parallel.pp;
        if p > 1 && t.stage == worst.stage {
            out += &format!(
                " Shown: pipeline stage {} of {p}, the one with the higher peak (the first holds the micro-batches in flight, the last the logits); its {} GPUs are alike.",
                t.stage,
                cfg.gpus() / p
            );
        } else if p > 1 {
            out += &format!(
                " Shown: pipeline stage {} of {p}, as picked; stage {} peaks higher, at {:.1} {}, and decides the fit. Its {} GPUs are alike.",
                t.stage,
                worst.stage,
                u.of(worst.peak_bytes()),
                u.label(),
                cfg.gpus() / p
            );
        } else if cfg.gpus() > 1 {
            out += &format!(
                " Shown: any one of the {} GPUs; they are alike.",
                cfg.gpus()
            );
        }
        let paged = crate::detailed::memory::paged::paged_at_peak(
            &cfg,
            t.peak_event().live.optimizer_state,
        );
        // Under 0.05 of the unit (QLoRA's small adapters) the two figures
        // read the same: nothing to tell apart.
        if cfg.optimizer.paged() && u.of(paged) >= 0.05 {
            out += &format!(
                " Of the peak, {:.1} {} is bitsandbytes' paged optimizer state in CUDA unified memory: on the card until memory pressure pages it out, but not in torch.cuda.max_memory_allocated, so a trainer's log (torchtune's peak_memory_alloc) shows {:.1} {}. The fit is judged on the card.",
                u.of(paged),
                u.label(),
                u.of(t.peak_bytes() - paged),
                u.label()
            );
        }
        if let Some(o) = s.detailed.overhead {
            let ob = o.for_step(&cfg, &t);
            out += &format!(
                " With the runtime overhead (grey band: CUDA context, workspaces, communication buffers, fragmentation) it needs {:.1} {}.",
                u.of(t.peak_bytes() + ob.total()),
                u.label()
            );
        }
        out
    };
    let label = move || {
        let s = state.read();
        let u = s.unit;
        super::shown_timeline(&s)
            .map(|t| {
                format!(
                    "Live memory per GPU over one training step; peak {:.1} {} at {}",
                    u.of(t.peak_bytes()),
                    u.label(),
                    t.peak_event().moment.label()
                )
            })
            .unwrap_or_default()
    };
    view! {
        <section class="step-chart" aria-labelledby="step-chart-title">
            <h2 id="step-chart-title">"Memory over one training step"</h2>
            <p class="hint">
                "Live memory per GPU at each event of a later step (the optimizer state already exists): "
                "under GRPO the rollout first (prefill, last decoding step), then "
                "forward layer by layer, the loss, backward (↓), the optimizer update. The peak is the bar with its total."
            </p>
            <div class="chart step">
                <canvas node_ref=chart.node id="timeline-chart" role="img" aria-label=text(label)></canvas>
            </div>
            <p id="peak-explanation" aria-live="polite">{text(explanation)}</p>
        </section>
    }
}
