//! Does it fit on my GPU? A capacity line, the verdict, and the largest
//! batch and sequence length that fit.

use super::canvas::Charts;
use super::reactive::{cond, not, on_event, text, Cond};
use super::{browser_to_f64, Budget, DetailedTimeline, State};
use crate::budget::Field;
use crate::detailed::memory::overhead::{edge_need, step_need};
use crate::detailed::time::hardware::GPUS;
use crate::number::read;
use crate::state::{
    max_detailed_seq, max_fitting, max_micro_batch, GpuCapacity, Mode, PageState, Unit,
    GPU_PRESETS, MAX_GPU_AMOUNT,
};
use leptos::prelude::*;

/// The `<select>` value for a capacity: `none`, `c:h100-sxm` (a card of the
/// table, detailed mode), `p80` (a preset) or `custom`.
fn choice_of(gpu: Option<GpuCapacity>, card: Option<&str>, detailed: bool) -> String {
    match gpu {
        None => "none".into(),
        Some(_) if detailed && card.is_some() => format!("c:{}", card.unwrap_or_default()),
        Some(g) if g.unit == Unit::Gib && GPU_PRESETS.iter().any(|p| p.0 == g.amount) => {
            format!("p{}", g.amount)
        }
        Some(_) => "custom".into(),
    }
}

/// A GPU picker (the cards' capacities as sold, and custom) and what fits.
#[component]
pub fn GpuFit() -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let gpu = move || state.read().gpu;
    // Whether the reader chose "Custom" (a custom amount may equal a preset).
    let custom = RwSignal::new({
        let s = state.read_untracked();
        choice_of(s.gpu, s.card, s.mode == Mode::Detailed) == "custom"
    });
    let message = RwSignal::new(None::<String>);
    let has_gpu = cond(move || gpu().is_some());
    // Detailed mode: the cards by name and its own largest lines.
    let in_detailed = cond(move || state.read().mode == Mode::Detailed);
    view! {
        <div class="field gpu-fit">
            {gpu_select(state, charts, custom, message, in_detailed)}
            {custom_amount(state, charts, custom, message)}
            <p class="field-message" role="status">{text(move || message.get().unwrap_or_default())}</p>
            <div hidden=not(has_gpu)>
                {verdicts(state)}
                {largest_lines(state, in_detailed)}
            </div>
        </div>
    }
}

/// The picker's label and `<select>`: no GPU, the table's cards (offered
/// while `in_detailed`), the capacities as sold, and custom.
fn gpu_select(
    state: RwSignal<PageState>,
    charts: Charts,
    custom: RwSignal<bool>,
    message: RwSignal<Option<String>>,
    in_detailed: Cond,
) -> impl IntoView {
    let on_select = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        message.set(None);
        custom.set(value == "custom");
        charts.change(state, |s| {
            if let Some(key) = value.strip_prefix("c:") {
                s.choose_card(key);
                return;
            }
            s.card = None;
            s.gpu = match value.as_str() {
                "none" => None,
                "custom" => Some(s.gpu.unwrap_or(GpuCapacity {
                    amount: 80.0,
                    unit: s.unit,
                })),
                preset => preset
                    .strip_prefix('p')
                    .and_then(|n| read(n, browser_to_f64))
                    .map(|amount| GpuCapacity {
                        amount,
                        unit: Unit::Gib,
                    }),
            }
        });
    };
    view! {
        <label for="gpu-select">"GPU memory"</label>
        <select
            id="gpu-select"
            prop:value=text(move || {
                if custom.get() {
                    "custom".to_string()
                } else {
                    let s = state.read();
                    choice_of(s.gpu, s.card, s.mode == Mode::Detailed)
                }
            })
            on:change=on_event(on_select)
        >
            <option value="none">"No GPU"</option>
            // Detailed mode names the cards of the table: their memory,
            // and their speeds for the step's time.
            <optgroup label="Cards (memory and speed)" hidden=not(in_detailed)>
                {GPUS
                    .iter()
                    .map(|g| {
                        view! {
                            <option value=format!("c:{}", g.key) disabled=not(in_detailed)>
                                {format!("{} — {} GB as sold", g.name, g.memory_gib)}
                            </option>
                        }
                    })
                    .collect_view()}
            </optgroup>
            {GPU_PRESETS
                .iter()
                .map(|(amount, cards)| {
                    view! {
                        <option value=format!("p{amount}")>
                            {format!("{amount} GB as sold ({cards})")}
                        </option>
                    }
                })
                .collect_view()}
            <option value="custom">"Custom…"</option>
        </select>
    }
}

/// The custom amount's box and unit, shown once "Custom…" is picked; a
/// value out of range is refused with `message`.
fn custom_amount(
    state: RwSignal<PageState>,
    charts: Charts,
    custom: RwSignal<bool>,
    message: RwSignal<Option<String>>,
) -> impl IntoView {
    let gpu = move || state.read().gpu;
    let unit = move || state.read().unit;
    let on_custom = move |ev: leptos::ev::Event| {
        let text = event_target_value(&ev);
        let u = unit();
        match read(&text, browser_to_f64) {
            Some(amount) if (GpuCapacity { amount, unit: u }).is_valid() => {
                message.set(None);
                charts.change(state, |s| {
                    s.card = None;
                    s.gpu = Some(GpuCapacity { amount, unit: u });
                });
            }
            _ => message.set(Some(format!(
                "GPU memory must be a number above 0 and at most {MAX_GPU_AMOUNT} {}; kept the previous value.",
                u.label()
            ))),
        }
    };
    view! {
        <div class="field-inputs" hidden=not(cond(move || custom.get()))>
            <input
                type="number"
                id="gpu-custom"
                class="number"
                min="0"
                step="any"
                aria-label="Custom GPU memory"
                prop:value=text(move || gpu().map(|g| format!("{}", unit().of(g.bytes()))).unwrap_or_default())
                on:change=on_event(on_custom)
            />
            <span class="unit">{text(move || unit().label().into())}</span>
        </div>
    }
}

/// Whether `t` bytes fit in `cap`, in words: how much is used and spare,
/// or by how much it does not fit; `what` names what was measured.
fn sentence(t: f64, cap: f64, u: Unit, what: &str) -> String {
    let (need, have) = (u.of(t), u.of(cap));
    if t <= cap {
        format!(
            "Fits{what}: {need:.1} of {have:.1} {l} used, {:.1} {l} to spare.",
            have - need,
            l = u.label()
        )
    } else {
        format!(
            "Does not fit{what} by {:.1} {l}: needs {need:.1} {l}, the GPU has {have:.1} {l}.",
            need - have,
            l = u.label()
        )
    }
}

/// When the step does not fit with the runtime overhead but would without
/// the allocator's fragmentation band: it may run at the card's edge
/// ([`edge_need`]).
fn at_the_edge(state: RwSignal<PageState>, cap: f64) -> String {
    let DetailedTimeline(timeline) = super::context::<DetailedTimeline>();
    let s = state.read();
    let edge = timeline
        .get()
        .filter(|_| s.mode == Mode::Detailed)
        .and_then(|t| edge_need(&s.detailed_config(), &t, s.detailed.overhead.as_ref(), cap));
    edge.map_or_else(String::new, |edge| {
        format!(
            " Without the allocator's fragmentation band it needs {:.1} {l}, so it may run at the card's edge (PyTorch's allocator frees its cache and retries; slower).",
            s.unit.of(edge),
            l = s.unit.label()
        )
    })
}

/// The capacity as sold in bytes, the verdict (in detailed mode by the
/// step's peak plus the runtime overhead, unless it is turned off) and, with
/// the overhead on, its parts and the figures a trainer's log prints.
fn verdicts(state: RwSignal<PageState>) -> impl IntoView {
    let Budget(budget) = super::context::<Budget>();
    let DetailedTimeline(timeline) = super::context::<DetailedTimeline>();
    let gpu = move || state.read().gpu;
    let unit = move || state.read().unit;
    let detailed_mode = move || state.read().mode == Mode::Detailed;
    // What must fit: the lesson's total, or the detailed model's peak of a
    // training step per GPU plus the runtime overhead when it is on.
    let total = move || {
        if detailed_mode() {
            let s = state.read();
            let t = timeline.get()?;
            Some(step_need(
                &s.detailed_config(),
                &t,
                s.detailed.overhead.as_ref(),
            ))
        } else {
            budget.get().ok().map(|b| b.total)
        }
    };
    let verdict = move || {
        let (g, t, u) = (gpu()?, total()?, unit());
        let what = match (detailed_mode(), state.read().detailed.overhead.is_some()) {
            (false, _) => "",
            (true, true) => " with the runtime overhead",
            (true, false) => " by the step's peak",
        };
        Some(sentence(t, g.bytes(), u, what) + &at_the_edge(state, g.bytes()))
    };
    // Detailed mode with the runtime overhead on: its parts, and which
    // figure a trainer's log prints.
    let parts = move || {
        if !detailed_mode() {
            return None;
        }
        let s = state.read();
        let (o, t, u) = (s.detailed.overhead?, timeline.get()?, s.unit);
        let cfg = s.detailed_config();
        let peak = t.peak_bytes();
        let b = o.for_step(&cfg, &t);
        let paged = if cfg.optimizer.paged() {
            crate::detailed::memory::paged::paged_at_peak(&cfg, t.peak_event().live.optimizer_state)
        } else {
            0.0
        };
        let (allocated, reserved) = b.pytorch_figures(peak, paged);
        let f = |v: f64| format!("{:.1}", u.of(v));
        Some(format!(
            "Step's peak {} + CUDA context {} + workspaces {} + communication buffers {} + fragmentation {} = {} {l}. \
             A trainer's log prints torch.cuda.max_memory_allocated {} {l} (the tensors) and max_memory_reserved {} {l} \
             (with fragmentation); the card holds {} {l}.",
            f(peak),
            f(b.cuda_context),
            f(b.workspaces),
            f(b.communication),
            f(b.fragmentation),
            f(peak + b.total()),
            f(allocated),
            f(reserved),
            f(peak + b.total()),
            l = u.label()
        ))
    };
    let overhead_on = cond(move || detailed_mode() && state.read().detailed.overhead.is_some());
    view! {
        <p class="hint">
            {text(move || {
                gpu()
                    .filter(|g| g.unit == Unit::Gib)
                    .map(|g| {
                        format!(
                            "Sold as {} GB, which is {} GiB = {:.1} × 10⁹ bytes.",
                            g.amount,
                            g.amount,
                            g.bytes() / 1e9
                        )
                    })
                    .unwrap_or_default()
            })}
        </p>
        <p id="fit-verdict" class="verdict">{text(move || verdict().unwrap_or_default())}</p>
        <p id="fit-verdict-overhead" class="hint" hidden=not(overhead_on)>
            {text(move || parts().unwrap_or_default())}
        </p>
    }
}

/// A solver for the largest micro-batch or sequence length that fits in a
/// capacity by the step's peak (and the overhead, if given).
type Solver =
    fn(&crate::detailed::DetailedConfig, f64, Option<&crate::detailed::Overhead>) -> Option<u64>;

/// The largest micro-batch and sequence length that fit (detailed mode,
/// `in_detailed`), and the largest batch and sequence length (lesson mode).
/// Each mode's lines are hidden in the other, and compute nothing there.
fn largest_lines(state: RwSignal<PageState>, in_detailed: Cond) -> impl IntoView {
    let Budget(budget) = super::context::<Budget>();
    let gpu = move || state.read().gpu;
    let unit = move || state.read().unit;
    let detailed_mode = move || state.read().mode == Mode::Detailed;
    let largest = move |field: Field| {
        if detailed_mode() {
            return None;
        }
        let (g, u) = (gpu()?, unit());
        let cfg = state.read().config;
        Some(match max_fitting(&cfg, field, g.bytes()) {
            Some(v) => format!("{v}"),
            None => {
                let b = budget.get().ok()?;
                format!(
                    "none (even {} does not fit; weights and optimizer state alone take {:.1} {})",
                    field.range().0,
                    u.of(b.total - b.activations),
                    u.label()
                )
            }
        })
    };
    // The largest micro-batch or sequence length that fits by the peak (and
    // overhead), by `solve`; `none` says what does not fit even at 1.
    let largest_detailed = move |solve: Solver, none: &'static str| {
        if !detailed_mode() {
            return None;
        }
        let g = gpu()?;
        let s = state.read();
        Some(
            solve(
                &s.detailed_config(),
                g.bytes(),
                s.detailed.overhead.as_ref(),
            )
            .map_or_else(|| none.to_string(), |v| v.to_string()),
        )
    };
    let largest_micro = move || {
        largest_detailed(
            max_micro_batch,
            "none (even one sequence per GPU does not fit)",
        )
    };
    let largest_seq =
        move || largest_detailed(max_detailed_seq, "none (even one token does not fit)");
    view! {
        <p id="fit-micro" hidden=not(in_detailed)>
            "Largest micro-batch per GPU that fits: " {text(move || largest_micro().unwrap_or_default())}
        </p>
        <p id="fit-seq-detailed" hidden=not(in_detailed)>
            "Largest sequence length that fits: " {text(move || largest_seq().unwrap_or_default())}
        </p>
        <p id="fit-batch" hidden=in_detailed>
            "Largest batch that fits: " {text(move || largest(Field::Batch).unwrap_or_default())}
        </p>
        <p id="fit-seq" hidden=in_detailed>
            "Largest sequence length that fits: " {text(move || largest(Field::SeqLen).unwrap_or_default())}
        </p>
    }
}
