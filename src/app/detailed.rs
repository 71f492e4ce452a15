//! The detailed model on the page: the Lesson / Detailed switch, the model
//! picker and option groups, the per-GPU table, and the comparison with the
//! lesson's rule.

use super::canvas::Charts;
use super::controls::radio;
use super::reactive::{cond, not, on_event, text, Cond, Text};
use super::{DetailedBudget, DetailedTimeline, Options, State};
use crate::budget::Term;
use crate::chart::{term_colour_hex, LOGITS_COLOUR};
use crate::detailed::config::{LoraDtype, QuantPath};
use crate::detailed::memory::offload::BUFFER_FACTOR;
use crate::detailed::memory::overhead::{
    step_need, EXPANDABLE_FRAGMENTATION_PERCENT, FRAGMENTATION_PERCENT,
};
use crate::detailed::{
    host_ram, ActOffload, Architecture, AttentionKernel, BaseQuant, CompileScope, CpComm,
    DetailedBreakdown, DetailedError, Family, Framework, FsdpSharding, LoraTargets, Loss,
    Objective, Optimizer, Overhead, Precision, Profile, Recompute, Schedule, StepTimeline, TpPlan,
    PRESETS,
};
use crate::export::{detailed_rows, DETAILED_ROWS};
pub(super) use crate::number::grouped;
use crate::state::{DetailedOptions, Mode, PageState, ShownStage};
use leptos::prelude::*;

/// "Lesson" or "Detailed": which model the page shows.
#[component]
pub fn ModeSwitch() -> impl IntoView {
    let option = |mode: Mode, id: &str, text: &str| {
        radio(
            "mode",
            id.into(),
            text.into(),
            mode,
            |s| s.mode,
            |s, m| s.set_mode(m),
        )
    };
    view! {
        <fieldset class="field mode-switch">
            <legend>"Calculation"</legend>
            {option(Mode::Lesson, "mode-lesson", " Lesson's rule")}
            {option(Mode::Detailed, "mode-detailed", " Detailed, per GPU")}
        </fieldset>
    }
}

/// Reads a choice as an index into its option list.
type GetIndex = fn(&DetailedOptions) -> usize;
/// Writes a choice from an index into its option list.
type SetIndex = fn(&mut DetailedOptions, usize);

/// A `<select>` over a setting's options, by index. Plain function pointers
/// keep this one function (no copy per setting) in the wasm.
fn choice(
    id: &'static str,
    label: &'static str,
    options: &'static str,
    get: GetIndex,
    set: SetIndex,
) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let Options(opts) = super::context::<Options>();
    view! {
        <label class="sub" for=id>{label}</label>
        <select
            id=id
            prop:value=text(move || get(&opts.read()).to_string())
            on:change=on_event(move |ev| {
                if let Some(i) = event_target_value(&ev).parse::<usize>().ok().filter(|&i| i < options.lines().count()) {
                    charts.change(state, |s| set(&mut s.detailed, i));
                }
            })
        >
            {options
                .lines()
                .enumerate()
                .map(|(i, text)| view! { <option value=i.to_string()>{text}</option> })
                .collect_view()}
        </select>
    }
}

/// Index of `v` in `all` (0 when absent).
fn index_of<T: PartialEq>(all: &[T], v: T) -> usize {
    all.iter().position(|x| *x == v).unwrap_or(0)
}

/// A checkbox for an on/off detailed setting.
fn flag(
    id: &'static str,
    label: &'static str,
    get: fn(&DetailedOptions) -> bool,
    set: fn(&mut DetailedOptions, bool),
) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let Options(opts) = super::context::<Options>();
    view! {
        <label class="sub check">
            <input
                type="checkbox"
                id=id
                prop:checked=cond(move || get(&opts.read()))
                on:change=on_event(move |ev| {
                    let on = event_target_checked(&ev);
                    charts.change(state, |s| set(&mut s.detailed, on));
                })
            />
            {format!(" {label}")}
        </label>
    }
}

/// Reads a whole-number setting.
type GetCount = fn(&DetailedOptions) -> Option<u64>;
/// Writes a whole-number setting.
type SetCount = fn(&mut DetailedOptions, Option<u64>);

/// A whole-number box for a detailed setting; empty means "none" where
/// `optional`; out of range is refused with a message.
fn count(
    id: &'static str,
    label: &'static str,
    (min, max): (u64, u64),
    get: GetCount,
    set: SetCount,
    optional: bool,
) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let Options(opts) = super::context::<Options>();
    let message = RwSignal::new(None::<String>);
    view! {
        <label class="sub" for=id>{label}</label>
        <input
            type="number"
            class="number"
            id=id
            min=min
            max=max
            step="1"
            placeholder=if optional { "none" } else { "" }
            prop:value=text(move || get(&opts.read()).map(|v| v.to_string()).unwrap_or_default())
            on:change=on_event(move |ev| {
                let text = event_target_value(&ev);
                let text = text.trim();
                if text.is_empty() && optional {
                    message.set(None);
                    charts.change(state, |s| set(&mut s.detailed, None));
                    return;
                }
                match text.parse::<u64>().ok().filter(|v| (min..=max).contains(v)) {
                    Some(v) => {
                        message.set(None);
                        charts.change(state, |s| set(&mut s.detailed, Some(v)));
                    }
                    None => {
                        message.set(Some(format!("{label} must be a whole number from {min} to {max}; kept the previous value.")));
                        let input = event_target::<web_sys::HtmlInputElement>(&ev);
                        input.set_value(&get(&state.read_untracked().detailed).map(|v| v.to_string()).unwrap_or_default());
                    }
                }
            })
        />
        <p class="field-message" role="status">{text(move || message.get().unwrap_or_default())}</p>
    }
}

/// Reads a decimal overhead setting (GB or percent).
type GetDecimal = fn(&Overhead) -> f64;
/// Writes a decimal overhead setting.
type SetDecimal = fn(&mut Overhead, f64);

/// A decimal box for a runtime overhead setting; a value that is not a
/// number or out of range is refused with a message that stays.
fn overhead_input(
    id: &'static str,
    label: &'static str,
    unit: &'static str,
    get: GetDecimal,
    set: SetDecimal,
) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let Options(opts) = super::context::<Options>();
    let message = RwSignal::new(None::<String>);
    let current = move || get(&opts.read().overhead.unwrap_or_default());
    view! {
        <label class="sub" for=id>{label}</label>
        <div class="field-inputs">
            <input
                type="number"
                class="number"
                id=id
                min="0"
                step="any"
                prop:value=text(move || format!("{}", current()))
                on:change=on_event(move |ev| {
                    let value = crate::number::read(&event_target_value(&ev), super::browser_to_f64);
                    let mut o = state.read_untracked().detailed.overhead.unwrap_or_default();
                    if let Some(v) = value {
                        set(&mut o, v);
                    }
                    if value.is_some() && o.is_valid() {
                        message.set(None);
                        charts.change(state, |s| s.detailed.overhead = Some(o));
                    } else {
                        message.set(Some(format!(
                            "{label} must be a number from 0 to {}; kept the previous value.",
                            if unit == "%" { Overhead::MAX_PERCENT } else { Overhead::MAX_GB }
                        )));
                        event_target::<web_sys::HtmlInputElement>(&ev).set_value(&format!("{}", current()));
                    }
                })
            />
            <span class="unit">{unit}</span>
        </div>
        <p class="field-message" id=format!("{id}-message") role="status">{text(move || message.get().unwrap_or_default())}</p>
    }
}

const PRECISIONS: [Precision; 3] = [Precision::Mixed, Precision::Bf16, Precision::Fp32];
const PRECISION_NAMES: &str = "\
Mixed: bf16 + fp32 master
Pure bf16
fp32";
const OPTIMIZERS: [Optimizer; 9] = [
    Optimizer::AdamW,
    Optimizer::Sgd,
    Optimizer::SgdMomentum,
    Optimizer::Adam8bit,
    Optimizer::PagedAdamW,
    Optimizer::PagedAdam8bit,
    Optimizer::Lion,
    Optimizer::Muon,
    Optimizer::Adafactor,
];
const OPTIMIZER_NAMES: &str = "\
AdamW
SGD
SGD with momentum
8-bit Adam
Paged AdamW (bitsandbytes)
Paged 8-bit AdamW (bitsandbytes)
Lion
Muon (AdamW on embeddings, head, norms)
Adafactor";
const QUANTS: [BaseQuant; 4] = [
    BaseQuant::None,
    BaseQuant::Nf4 { double_quant: true },
    BaseQuant::Nf4 {
        double_quant: false,
    },
    BaseQuant::Int8,
];
const LORA_DTYPE_NAMES: &str = "\
fp32 (PEFT)
bf16 (torchtune, litgpt)";
const QUANT_PATH_NAMES: &str = "\
PEFT (fp32 casts)
bitsandbytes (Lightning, litgpt)
torchao NF4 (torchtune)
FSDP-QLoRA (bf16 storage)";
const QUANT_NAMES: &str = "\
Not quantized
NF4, double quantization (QLoRA)
NF4
int8 (LLM.int8())";
const TARGET_NAMES: &str = "\
q, v
All projections
All projections and lm_head
All projections, lm_head and embed";
/// The targets the select offers, in its order.
const TARGETS: [LoraTargets; 4] = [
    LoraTargets(LoraTargets::Q | LoraTargets::V),
    LoraTargets(LoraTargets::LAYERS),
    LoraTargets(LoraTargets::LAYERS | LoraTargets::LM_HEAD),
    LoraTargets(LoraTargets::LAYERS | LoraTargets::LM_HEAD | LoraTargets::EMBED),
];
const FP8S: [crate::detailed::Fp8; 5] = [
    crate::detailed::Fp8::None,
    crate::detailed::Fp8::Tensorwise,
    crate::detailed::Fp8::Rowwise,
    crate::detailed::Fp8::Te,
    crate::detailed::Fp8::TeMxfp8,
];
const FP8_NAMES: &str = "\
None (the precision's dtype)
torchao, tensorwise scales
torchao, rowwise scales
Transformer Engine (Megatron)
Transformer Engine MXFP8 (Blackwell)";
const OBJECTIVES: [Objective; 5] = [
    Objective::Sft,
    Objective::Dpo {
        reference: crate::detailed::Reference::Model,
    },
    Objective::Dpo {
        reference: crate::detailed::Reference::Precomputed,
    },
    Objective::Grpo { kl: false },
    Objective::Grpo { kl: true },
];
const OBJECTIVE_NAMES: &str = "\
Supervised (next token)
DPO, reference model on the GPUs
DPO, reference log-probs precomputed
GRPO (TRL), no KL: generate, then train
GRPO (TRL) with KL: reference model too";
const ATTENTION: [AttentionKernel; 2] = [AttentionKernel::Flash, AttentionKernel::Eager];
const SCHEDULES: [Schedule; 2] = [Schedule::OneFOneB, Schedule::ZbH1];
const CP_COMMS: [CpComm; 2] = [CpComm::P2p, CpComm::A2a];
const COMPILE_SCOPES: [CompileScope; 3] = [
    CompileScope::Model,
    CompileScope::Layers,
    CompileScope::LayersLoss,
];
const COMPILE_SCOPE_NAMES: &str = "\
Whole model (torch.compile(model))
Each layer, loss eager (torchtitan 2024-12)
Each layer and the loss (torchtitan, torchtune)";
const STAGES_SHOWN: [ShownStage; 3] = [ShownStage::Highest, ShownStage::First, ShownStage::Last];
const STAGE_SHOWN_NAMES: &str = "\
The one with the higher peak
First (embedding, micro-batches in flight)
Last (logits and loss)";
const CP_COMM_NAMES: &str = "\
Ring attention (p2p, overlapped)
All-to-all (a2a, Ulysses; heads divisible by cp)";
const TP_PLAN_NAMES: &str = "\
Megatron (vocabulary-parallel embedding, output, loss)
transformers tp_plan=auto (logits gathered; no SP)
torchtitan (logits gathered; needs SP)
torchtitan with loss_parallel (needs SP)
Layers only (embedding, output, logits whole)";
const SCHEDULE_NAMES: &str = "\
1F1B (interleaved with virtual stages)
Zero Bubble ZB-H1 (weight gradients fill the bubble)";
const FRAMEWORKS: [Framework; 9] = [
    Framework::Megatron,
    Framework::Ddp { bucket_view: false },
    Framework::Ddp { bucket_view: true },
    Framework::Fsdp2 {
        reshard_after_forward: true,
    },
    Framework::Fsdp2 {
        reshard_after_forward: false,
    },
    Framework::DEEPSPEED,
    Framework::Fsdp1 {
        sharding: FsdpSharding::Full,
    },
    Framework::Fsdp1 {
        sharding: FsdpSharding::GradOp,
    },
    Framework::Fsdp1 {
        sharding: FsdpSharding::NoShard,
    },
];
const FRAMEWORK_NAMES: &str = "\
Megatron-LM (gradient buffers, ZeRO)
PyTorch DDP (buckets: a second copy of the gradients)
PyTorch DDP, gradient_as_bucket_view
PyTorch FSDP2 (ZeRO-3)
PyTorch FSDP2, reshard_after_forward=False
DeepSpeed (fp32 partition, 5e8-value bucket)
PyTorch FSDP1 FULL_SHARD (accelerate, flat parameters)
PyTorch FSDP1 SHARD_GRAD_OP
PyTorch FSDP1 NO_SHARD (--zero 0)";
const ATTENTION_NAMES: &str = "\
Flash / SDPA (the default)
Eager (keeps a·s² scores)";
const OVERLAP_NAMES: &str = "\
DeepSpeed's default (on at ZeRO-3 only)
On (stages 1-2: two buckets)
Off (ZeRO-1: whole gradients through backward)";

/// DeepSpeed's `sub_group_size`, or with `persist` its persistence
/// threshold; none under other frameworks.
fn deepspeed_setting(f: Framework, persist: bool) -> Option<u64> {
    match f {
        Framework::DeepSpeed {
            sub_group_size,
            param_persistence_threshold,
            ..
        } => Some(if persist {
            param_persistence_threshold
        } else {
            sub_group_size
        }),
        _ => None,
    }
}

/// Sets what [`deepspeed_setting`] reads, under DeepSpeed only.
fn set_deepspeed_setting(f: &mut Framework, persist: bool, v: Option<u64>) {
    if let (
        Framework::DeepSpeed {
            sub_group_size,
            param_persistence_threshold,
            ..
        },
        Some(v),
    ) = (f, v)
    {
        *if persist {
            param_persistence_threshold
        } else {
            sub_group_size
        } = v;
    }
}

/// Bytes per GPU that eager attention keeps beyond flash attention's for
/// `cfg` (the a·s² scores), if both compute.
fn eager_cost(cfg: &crate::detailed::DetailedConfig) -> Option<f64> {
    let (mut eager, mut flash) = (*cfg, *cfg);
    eager.attention = AttentionKernel::Eager;
    flash.attention = AttentionKernel::Flash;
    let e = crate::detailed::estimate(&eager).ok()?;
    let f = crate::detailed::estimate(&flash).ok()?;
    Some((e.activations - f.activations).max(0.0))
}
const RECOMPUTE: [Recompute; 4] = [
    Recompute::None,
    Recompute::Selective,
    Recompute::SelectiveOp,
    Recompute::Full,
];
const RECOMPUTE_NAMES: &str = "\
None
Selective (Megatron: attention scores)
Per-operator (torchtitan's selective op)
Full";
const PROFILES: [Option<Profile>; 4] = [
    None,
    Some(Profile::Fused),
    Some(Profile::Hf),
    Some(Profile::Hf),
];
const PROFILE_NAMES: &str = "\
Automatic (follows the set-up)
Fused kernels (Megatron)
Stock Hugging Face
Hugging Face with Liger's kernels";

/// The implementation's index in [`PROFILES`]: Liger's kernels are the last.
fn implementation_index(d: &DetailedOptions) -> usize {
    if d.liger {
        3
    } else {
        index_of(&PROFILES[..3], d.profile)
    }
}

const LOSSES: [Option<Loss>; 5] = [
    None,
    Some(Loss::Full),
    Some(Loss::Chunked),
    Some(Loss::Liger),
    Some(Loss::Cce),
];
const LOSS_NAMES: &str = "\
Automatic (full; Liger's under its kernels)
Full logits
Chunked (torchtune)
Liger's fused linear cross entropy
Cut Cross-Entropy (Apple)";
const FAMILIES: [Family; 2] = [Family::Llama, Family::Gpt2];
const FAMILY_NAMES: &str = "\
Llama style
GPT-2 style";

/// Switches the architecture's family, keeping its sizes.
fn set_family(d: &mut DetailedOptions, i: usize) {
    let f = FAMILIES[i];
    if d.arch.family != f {
        let a = d.arch;
        d.arch = match f {
            Family::Gpt2 => Architecture::gpt2(a.layers, a.hidden, a.heads, a.vocab),
            Family::Llama => {
                Architecture::llama(a.layers, a.hidden, a.heads, a.kv_heads, a.ffn, a.vocab)
            }
        };
    }
}

/// A pasted or chosen `config.json`: read as it is typed; a good file sets
/// the shape (the address keeps the shape, not the text), a bad one leaves
/// everything as it was and says which field is wrong.
#[component]
fn ConfigImport(on_import: impl Fn() + Copy + Send + Sync + 'static) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    // (the message, whether it is an error).
    let message = RwSignal::new(None::<(String, bool)>);
    let read =
        super::readers::reading("read_config_json", state, charts, message, false, on_import);
    let on_file = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        if let Some(file) = input.files().and_then(|f| f.get(0)) {
            super::readers::read_file(file, read, message);
        }
    };
    view! {
        <details class="config-import">
            <summary>"Import a config.json"</summary>
            <label for="config-input">"Paste a Hugging Face config.json"</label>
            <textarea
                id="config-input"
                rows="4"
                spellcheck="false"
                placeholder="{\"model_type\": \"mixtral\", …}"
                on:input=on_event(move |ev| read("config.json".into(), event_target_value(&ev)))
            ></textarea>
            <label for="config-file">"or choose the file"</label>
            <input id="config-file" type="file" accept=".json,application/json" on:change=on_event(on_file) />
            <p
                id="config-message"
                role="status"
                class:invalid=cond(move || message.get().is_some_and(|(_, bad)| bad))
                hidden=cond(move || message.get().is_none())
            >
                {text(move || message.get().map(|(m, _)| m).unwrap_or_default())}
            </p>
        </details>
    }
}

/// The detailed model's controls: model picker, derived parameter count,
/// and collapsed groups of options.
#[component]
pub fn DetailedControls() -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    // "Custom" chosen by the reader, even while the shape still equals a preset.
    let chose_custom = RwSignal::new(false);
    let custom = move || chose_custom.get() || state.read().preset_name().is_none();
    let preset_value = move || {
        if custom() {
            "custom".to_string()
        } else {
            state.read().preset_name().unwrap_or("custom").to_string()
        }
    };
    view! {
        <div class="field detailed-controls">
            {model_picker(state, charts, chose_custom, text(preset_value))}
            {parameter_count(state)}
            <ConfigImport on_import=move || chose_custom.set(false) />
            <super::trainer::TrainerControls />
            {architecture_group(cond(custom))}
            {precision_group()}
            {attention_group(state)}
            {parallelism_group()}
            {lora_group()}
            {objective_group()}
            {offload_group()}
            {recipes(state, charts, chose_custom)}
            {overhead_group()}
            {flag("both-input", "Show the lesson's rule beside", |d| d.show_lesson, |d, on| d.show_lesson = on)}
        </div>
    }
}

/// The model picker: the presets by name, and custom. `value` is the
/// preset shown; picking "Custom" sets `chose_custom`.
fn model_picker(
    state: RwSignal<PageState>,
    charts: Charts,
    chose_custom: RwSignal<bool>,
    value: Text,
) -> impl IntoView {
    view! {
        <label for="model-select">"Model"</label>
        <select
            id="model-select"
            prop:value=value
            on:change=on_event(move |ev| {
                let name = event_target_value(&ev);
                match PRESETS.iter().find(|p| p.name == name) {
                    Some(p) => {
                        chose_custom.set(false);
                        charts.change(state, |s| s.choose_preset(p));
                    }
                    None => chose_custom.set(true),
                }
            })
        >
            {PRESETS
                .iter()
                .map(|p| view! { <option value=p.name>{p.name}</option> })
                .collect_view()}
            <option value="custom">"Custom"</option>
        </select>
    }
}

/// The parameter count derived from the architecture, with the active
/// parameters of a mixture of experts or a hybrid's Mamba-2 mixer.
fn parameter_count(state: RwSignal<PageState>) -> impl IntoView {
    let params = move || grouped(state.read().architecture().params());
    let active = move || {
        let a = state.read().architecture();
        let moe = a
            .moe
            .map(|_| format!(", {} active per token", grouped(a.active_params())));
        // A hybrid (Falcon-H1): the mixer's share, and its shape.
        let ssm = a.ssm.map(|m| {
            format!(
                ", {} in a Mamba-2 mixer beside the attention in every layer ({} heads of {}, state {})",
                grouped(a.layers * m.params(a.hidden)),
                m.heads,
                m.head_dim,
                m.state
            )
        });
        moe.or(ssm)
    };
    view! {
        <p class="derived">
            <span id="param-count">{text(params)}</span>
            " parameters"
            <span id="active-count">{text(move || active().unwrap_or_default())}</span>
            ", from the architecture"
        </p>
    }
}

/// The architecture's group, open while the model is custom (`open`).
fn architecture_group(open: Cond) -> impl IntoView {
    view! {
        <details open=open>
            <summary>"Architecture"</summary>
            {choice("family-select", "Family", FAMILY_NAMES, |d| index_of(&FAMILIES, d.arch.family), set_family)}
            {count("heads-input", "Attention heads", (1, 1024), |d| Some(d.arch.heads), |d, v| d.arch.heads = v.unwrap_or(1), false)}
            {count("kv-input", "KV heads", (1, 1024), |d| Some(d.arch.kv_heads), |d, v| d.arch.kv_heads = v.unwrap_or(1), false)}
            {count("ffn-input", "FFN size", (1, 1 << 20), |d| Some(d.arch.ffn), |d, v| d.arch.ffn = v.unwrap_or(1), false)}
            {count("vocab-input", "Vocabulary", (1, 1 << 22), |d| Some(d.arch.vocab), |d, v| d.arch.vocab = v.unwrap_or(1), false)}
        </details>
    }
}

/// The precision, float8 and optimizer group.
fn precision_group() -> impl IntoView {
    view! {
        <details>
            <summary>"Precision and optimizer"</summary>
            {choice("precision-select", "Precision", PRECISION_NAMES, |d| index_of(&PRECISIONS, d.precision), |d, i| d.precision = PRECISIONS[i])}
            {choice("fp8-select", "Float8 matmuls", FP8_NAMES, |d| index_of(&FP8S, d.fp8), |d, i| d.fp8 = FP8S[i])}
            {flag("fp8param-input", "FP8 weights, no bf16 copy (Megatron --fp8-param-gather)", |d| d.fp8_param, |d, on| d.fp8_param = on)}
            {choice("optimizer-select", "Optimizer", OPTIMIZER_NAMES, |d| index_of(&OPTIMIZERS, d.optimizer), |d, i| d.optimizer = OPTIMIZERS[i])}
            {flag("optbwd-input", "Optimizer step in backward (torchtune)", |d| d.optimizer_in_backward, |d, on| d.optimizer_in_backward = on)}
        </details>
    }
}

/// The attention kernel (with what eager attention would cost), dropout,
/// recomputation and implementation group.
fn attention_group(state: RwSignal<PageState>) -> impl IntoView {
    // What eager attention would cost: the frameworks' default is fused.
    let attention_cost = move || {
        let s = state.read();
        if s.mode != Mode::Detailed {
            return String::new();
        }
        let cfg = s.detailed_config();
        let (u, unit) = (s.unit, s.unit.label());
        match (eager_cost(&cfg), cfg.attention) {
            (Some(x), AttentionKernel::Flash) => format!(
                "PyTorch SDPA and FlashAttention, what training frameworks run by default. Eager attention would keep {:.1} {unit} more per GPU here.",
                u.of(x)
            ),
            (Some(x), AttentionKernel::Eager) => format!(
                "Eager keeps {:.1} {unit} per GPU of a·s² scores that flash attention does not.",
                u.of(x)
            ),
            (None, _) => String::new(),
        }
    };
    view! {
        <details>
            <summary>"Attention, dropout, recomputation"</summary>
            {choice("attention-select", "Attention", ATTENTION_NAMES, |d| index_of(&ATTENTION, d.attention), |d, i| d.attention = ATTENTION[i])}
            <p class="derived" id="attention-cost">{text(attention_cost)}</p>
            {flag("dropout-input", "Dropout", |d| d.dropout, |d, on| d.dropout = on)}
            {flag("compile-input", "torch.compile (hf)", |d| d.compile, |d, on| d.compile = on)}
            {choice("compile-scope-select", "torch.compile wraps", COMPILE_SCOPE_NAMES, |d| index_of(&COMPILE_SCOPES, d.compile_scope), |d, i| d.compile_scope = COMPILE_SCOPES[i])}
            {choice("recompute-select", "Recomputation", RECOMPUTE_NAMES, |d| index_of(&RECOMPUTE, d.recompute), |d, i| d.recompute = RECOMPUTE[i])}
            {flag("rm-norm-input", "Megatron: recompute MoE norms (layernorm)", |d| d.recompute_modules.layernorm, |d, on| d.recompute_modules.layernorm = on)}
            {flag("rm-act-input", "Megatron: recompute experts' activation (moe_act)", |d| d.recompute_modules.moe_act, |d, on| d.recompute_modules.moe_act = on)}
            {flag("rm-up-input", "Megatron: recompute MLA up-projections (mla_up_proj)", |d| d.recompute_modules.mla_up_proj, |d, on| d.recompute_modules.mla_up_proj = on)}
            {flag("rm-mlp-input", "Megatron: recompute dense MLPs (mlp)", |d| d.recompute_modules.mlp, |d, on| d.recompute_modules.mlp = on)}
            {flag("rm-moe-input", "Megatron: recompute MoE layers (moe)", |d| d.recompute_modules.moe, |d, on| d.recompute_modules.moe = on)}
            {flag("rm-shared-input", "Megatron: recompute shared experts (shared_experts)", |d| d.recompute_modules.shared_experts, |d, on| d.recompute_modules.shared_experts = on)}
            {choice("impl-select", "Implementation", PROFILE_NAMES, implementation_index, |d, i| { d.profile = PROFILES[i]; d.liger = i == 3; })}
            {choice("loss-select", "Loss", LOSS_NAMES, |d| index_of(&LOSSES, d.loss), |d, i| d.loss = LOSSES[i])}
            {count("loss-chunks-input", "Loss chunks (chunked)", (1, 4096), |d| Some(d.loss_chunks), |d, v| d.loss_chunks = v.unwrap_or(8), false)}
        </details>
    }
}

/// The parallelism group: data, ZeRO, tensor, pipeline, expert and
/// context parallelism, and the micro-batch.
fn parallelism_group() -> impl IntoView {
    view! {
        <details>
            <summary>"Parallelism"</summary>
            {count("dp-input", "Data-parallel GPUs", (1, 4096), |d| Some(d.parallel.dp), |d, v| d.parallel.dp = v.unwrap_or(1), false)}
            {choice("framework-select", "Data parallelism run by", FRAMEWORK_NAMES, |d| FRAMEWORKS.iter().position(|f| f.name() == d.framework.name()).unwrap_or(0), |d, i| d.framework = FRAMEWORKS[i])}
            {choice("overlap-select", "DeepSpeed overlap_comm", OVERLAP_NAMES, |d| match d.framework { Framework::DeepSpeed { overlap_comm: Some(on), .. } => 2 - usize::from(on), _ => 0 }, |d, i| if let Framework::DeepSpeed { overlap_comm, .. } = &mut d.framework { *overlap_comm = [None, Some(true), Some(false)][i] })}
            {megatron_overlaps()}
            {count("subgroup-input", "DeepSpeed ZeRO-3 sub_group_size", (0, 10_000_000_000), |d| deepspeed_setting(d.framework, false), |d, v| set_deepspeed_setting(&mut d.framework, false, v), false)}
            {count("persist-input", "DeepSpeed ZeRO-3 param_persistence_threshold", (0, 10_000_000_000), |d| deepspeed_setting(d.framework, true), |d, v| set_deepspeed_setting(&mut d.framework, true, v), false)}
            {count("zero-input", "ZeRO stage", (0, 3), |d| Some(u64::from(d.parallel.zero)), |d, v| d.parallel.zero = v.unwrap_or(0) as u8, false)}
            {count("shard-input", "ZeRO shard group (hybrid, HSDP)", (1, 4096), |d| d.parallel.dp_shard, |d, v| d.parallel.dp_shard = v, true)}
            {count("tp-input", "Tensor parallel", (1, 512), |d| Some(d.parallel.tp), |d, v| d.parallel.tp = v.unwrap_or(1), false)}
            {flag("sp-input", "Sequence parallel", |d| d.parallel.sp, |d, on| d.parallel.sp = on)}
            {choice("tp-plan-select", "Tensor-parallel plan (embedding, output, logits)", TP_PLAN_NAMES, |d| index_of(&TpPlan::ALL, d.parallel.plan()), |d, i| d.parallel.set_plan(TpPlan::ALL[i]))}
            {count("pp-input", "Pipeline stages", (1, 256), |d| Some(d.parallel.pp), |d, v| d.parallel.pp = v.unwrap_or(1), false)}
            {count("vp-input", "Virtual stages per GPU (interleaved)", (1, 64), |d| Some(d.parallel.vp), |d, v| d.parallel.vp = v.unwrap_or(1), false)}
            {count("ep-input", "Expert parallel (MoE)", (1, 4096), |d| Some(d.parallel.ep), |d, v| d.parallel.ep = v.unwrap_or(1), false)}
            {count("etp-input", "Expert tensor parallel (MoE)", (1, 512), |d| Some(d.parallel.etp), |d, v| d.parallel.etp = v.unwrap_or(1), false)}
            {choice("schedule-select", "Pipeline schedule", SCHEDULE_NAMES, |d| index_of(&SCHEDULES, d.parallel.schedule), |d, i| d.parallel.schedule = SCHEDULES[i])}
            {choice("stage-select", "Pipeline stage the step chart shows", STAGE_SHOWN_NAMES, |d| index_of(&STAGES_SHOWN, d.stage_shown), |d, i| d.stage_shown = STAGES_SHOWN[i])}
            {count("cp-input", "Context parallel (long sequences)", (1, 64), |d| Some(d.parallel.cp), |d, v| d.parallel.cp = v.unwrap_or(1), false)}
            {choice("cp-comm-select", "Context parallel exchange", CP_COMM_NAMES, |d| index_of(&CP_COMMS, d.parallel.cp_comm), |d, i| d.parallel.cp_comm = CP_COMMS[i])}
            {count("micro-input", "Micro-batch per GPU", (1, 4096), |d| d.micro_batch, |d, v| d.micro_batch = v, true)}
        </details>
    }
}

/// Megatron-Core's communication overlaps, the first three on by default as
/// NVIDIA's recipes run them (Megatron-LM's own flags are off unless
/// given), the expert all-to-all's off as Megatron-Core's default, shown
/// under the Megatron framework only.
fn megatron_overlaps() -> impl IntoView {
    let Options(opts) = super::context::<Options>();
    view! {
        <div id="megatron-overlaps" hidden=cond(move || opts.read().framework != Framework::Megatron)>
            {flag("ovgrad-input", "Megatron: gradient reduction overlapped", |d| d.overlap.grad_reduce, |d, on| d.overlap.grad_reduce = on)}
            {flag("ovparam-input", "Megatron: parameter gather overlapped (ZeRO 1, 2)", |d| d.overlap.param_gather, |d, on| d.overlap.param_gather = on)}
            {flag("ovtp-input", "Megatron: tensor-parallel communication overlapped (with SP)", |d| d.overlap.tp_comm, |d, on| d.overlap.tp_comm = on)}
            {flag("ovmoe-input", "Megatron: expert all-to-alls behind another micro-batch (EP)", |d| d.overlap.moe_a2a, |d, on| d.overlap.moe_a2a = on)}
        </div>
    }
}

/// The LoRA and QLoRA group.
fn lora_group() -> impl IntoView {
    view! {
        <details>
            <summary>"LoRA and QLoRA"</summary>
            {count("lora-input", "LoRA rank", (1, 1024), |d| d.lora_rank, |d, v| d.lora_rank = v, true)}
            {choice("lora-targets-select", "LoRA adapts", TARGET_NAMES, |d| TARGETS.iter().position(|t| *t == d.lora_targets).unwrap_or(1), |d, i| d.lora_targets = TARGETS[i])}
            {choice("quant-select", "Frozen base stored as", QUANT_NAMES, |d| index_of(&QUANTS, d.base_quant), |d, i| d.base_quant = QUANTS[i])}
            {choice("quant-path-select", "4-bit base held by", QUANT_PATH_NAMES, |d| QuantPath::NAMES.iter().position(|n| *n == d.quant_path.name()).unwrap_or(0), |d, i| d.quant_path = QuantPath::NAMES[i].parse().unwrap_or(QuantPath::Peft))}
            {choice("lora-dtype-select", "Adapters kept in", LORA_DTYPE_NAMES, |d| usize::from(d.lora_dtype == LoraDtype::Bf16), |d, i| d.lora_dtype = if i == 0 { LoraDtype::Fp32 } else { LoraDtype::Bf16 })}
            {count("lora-dropout-input", "LoRA dropout, % (empty: none)", (1, 99), |d| (d.lora_dropout_percent > 0).then_some(d.lora_dropout_percent), |d, v| d.lora_dropout_percent = v.unwrap_or(0), true)}
        </details>
    }
}

/// The training objective group, with GRPO's rollout and vLLM settings.
fn objective_group() -> impl IntoView {
    view! {
        <details>
            <summary>"Objective"</summary>
            {choice("objective-select", "Training objective", OBJECTIVE_NAMES, |d| index_of(&OBJECTIVES, d.objective), |d, i| {
                // Choosing GRPO brings TRL's default checkpointing.
                if !matches!(d.objective, Objective::Grpo { .. }) && matches!(OBJECTIVES[i], Objective::Grpo { .. }) {
                    d.recompute = crate::detailed::config::defaults::recompute(OBJECTIVES[i]);
                }
                d.objective = OBJECTIVES[i];
            })}
            {count("completion-input", "GRPO completion tokens (of the sequence)", (1, 1 << 24), |d| Some(d.rollout.completion), |d, v| d.rollout.completion = v.unwrap_or(512), false)}
            {count("gens-input", "GRPO completions per prompt", (1, 4096), |d| Some(d.rollout.generations), |d, v| d.rollout.generations = v.unwrap_or(8), false)}
            {count("vllm-input", "GRPO: vLLM colocated, % of the card (empty: generate)", (5, 95), |d| d.vllm_percent, |d, v| d.vllm_percent = v, true)}
            {flag("vllm-sleep-input", "GRPO: vLLM sleeps during training", |d| d.vllm_sleep, |d, on| d.vllm_sleep = on)}
        </details>
    }
}

const ACT_OFFLOAD_NAMES: &str = "\
save_on_cpu (one copy of each saved tensor)
torchtune OffloadActivations (needs full recomputation)
Offloaded checkpoints (Unsloth; full recomputation)";

/// The offload to host memory group.
fn offload_group() -> impl IntoView {
    view! {
        <details>
            <summary>"Offload to host memory"</summary>
            {flag("offload-opt-input", "Optimizer state (ZeRO-Offload)", |d| d.offload.optimizer, |d, on| d.offload.optimizer = on)}
            {flag("offload-params-input", "Parameters (ZeRO-3)", |d| d.offload.params, |d, on| d.offload.params = on)}
            {flag("offload-acts-input", "Activations", |d| d.offload.activations, |d, on| d.offload.activations = on)}
            {choice("offload-acts-select", "Activations offloaded by", ACT_OFFLOAD_NAMES, |d| index_of(&ActOffload::ALL, d.offload.activations_by), |d, i| d.offload.activations_by = ActOffload::ALL[i])}
            {count("offload-layers-input", "Megatron: offload only the first layers (empty: all)", (1, 1 << 20), |d| (d.offload.activation_layers > 0).then_some(d.offload.activation_layers), |d, v| { d.offload.activation_layers = v.unwrap_or(0); d.offload.activations |= v.is_some(); }, true)}
            {count("gpn-input", "GPUs per node", (1, 72), |d| Some(d.offload.gpus_per_node), |d, v| d.offload.gpus_per_node = v.unwrap_or(1), false)}
        </details>
    }
}

/// The recipes: one button each, setting the whole page from its address
/// (and leaving "Custom").
fn recipes(
    state: RwSignal<PageState>,
    charts: Charts,
    chose_custom: RwSignal<bool>,
) -> impl IntoView {
    view! {
        <p class="recipes">
            "Recipes: "
            {crate::state::RECIPES
                .iter()
                .map(|&(id, name, query)| {
                    view! {
                        <button
                            type="button"
                            class="recipe"
                            id=id
                            on:click=move |_| {
                                chose_custom.set(false);
                                charts.change(state, |s| *s = crate::url::decode_with(query, super::browser_to_f64).state);
                            }
                        >
                            {name}
                        </button>
                    }
                })
                .collect_view()}
        </p>
    }
}

/// The runtime overhead: the switch (on by default, outside the group so
/// that turning it off is one click), then the group with where the
/// defaults come from, expandable segments and the four amounts.
fn overhead_group() -> impl IntoView {
    view! {
        {flag("overhead-input", "Count the runtime overhead (what the card holds, not only the tensors)", |d| d.overhead.is_some(), |d, on| d.overhead = on.then(|| d.overhead.unwrap_or_default()))}
        <details>
            <summary>"Runtime overhead"</summary>
            <p class="hint">
                "Beyond the tensors: defaults from measurements — CUDA context 723 MiB (PyTorch forums), "
                "cuBLAS and cuBLASLt workspaces 32 MiB each on Hopper (PyTorch #120925), NCCL buffers 256 MiB "
                "per parallel group (NCCL_BUFFSIZE 4 MiB × 32 channels × 2), fragmentation 15 % of the peak "
                "(GMLake, ASPLOS 2024; on real GPUs the tensors' peak is a median 11 % under PyTorch's reserved memory), "
                "5 % with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."
            </p>
            {flag("expandable-input", "expandable_segments:True (fragmentation 5 %)", |d| d.overhead.is_some_and(|o| o.fragmentation_percent == EXPANDABLE_FRAGMENTATION_PERCENT), |d, on| {
                let o = d.overhead.unwrap_or_default();
                d.overhead = Some(Overhead {
                    fragmentation_percent: if on { EXPANDABLE_FRAGMENTATION_PERCENT } else { FRAGMENTATION_PERCENT },
                    ..o
                });
            })}
            {overhead_input("ctx-input", "CUDA context", "GB", |o| o.cuda_context_gb, |o, v| o.cuda_context_gb = v)}
            {overhead_input("ws-input", "Library workspaces", "GB", |o| o.workspaces_gb, |o, v| o.workspaces_gb = v)}
            {overhead_input("comm-input", "Communication, per group", "GB", |o| o.communication_gb, |o, v| o.communication_gb = v)}
            {overhead_input("frag-input", "Fragmentation", "%", |o| o.fragmentation_percent, |o, v| o.fragmentation_percent = v)}
        </details>
    }
}

/// Short notes on where each detailed term comes from.
fn note(key: &str) -> &'static str {
    match key {
        "params" => "weights in their storage dtype, split by tp (routed experts by ep × etp), pp and ZeRO-3",
        "grads" => "one per trainable weight; ZeRO-2 splits them",
        "master_weights" => "fp32 copy under mixed precision (DeepSpeed: always); ZeRO-1 splits it; none under FSDP2, whose fp32 shards are the weights",
        "optimizer_state" => {
            "AdamW 2 moments; Lion, Muon's and SGD-momentum's 1; Adafactor a row and column per matrix; 8-bit Adam 2 bytes"
        }
        "activations_without_logits" => {
            "Korthikanti et al. 2022 per layer (a hybrid's Mamba-2 mixer added; recomputation keeps less), for the micro-batch"
        }
        "logits" => "fp32 log-probabilities kept by the loss, 4·s·b·V (none under GRPO: TRL's fused head)",
        _ => "sum",
    }
}

/// The per-GPU table of the detailed model, with the logits as their own row.
#[component]
pub fn DetailedTable() -> impl IntoView {
    let DetailedBudget(detailed) = super::context::<DetailedBudget>();
    let State(state) = super::context::<State>();
    let DetailedTimeline(step) = super::context::<DetailedTimeline>();
    let unit = move || state.read().unit;
    let shown = move || is_detailed(state);
    view! {
        <p class="dominant-sentence" aria-live="polite" id="detailed-sentence">
            {text(move || match shown().then(|| detailed.get()) {
                None => String::new(),
                Some(Ok(b)) => {
                    let u = unit();
                    format!("Per GPU: {:.1} {} in all", u.of(b.total), u.label())
                }
                Some(Err(e)) => format!("This configuration cannot be computed: {e}."),
            })}
        </p>
        {computed_line(state, detailed)}
        {fit_pointer(state, step)}
        {host_ram_line(state, detailed)}
        {rollout_line(state, detailed, step)}
        {term_table(state, detailed)}
    }
}

/// Whether the page shows the detailed model: the lines below are hidden
/// in lesson mode, and compute nothing there.
fn is_detailed(state: RwSignal<PageState>) -> bool {
    state.read().mode == Mode::Detailed
}

/// The swatch colour of a detailed row, by its key (the total has none).
fn colour(key: &str) -> String {
    match key {
        "params" => term_colour_hex(Term::Params),
        "grads" => term_colour_hex(Term::Grads),
        "master_weights" => term_colour_hex(Term::MasterWeights),
        "optimizer_state" => term_colour_hex(Term::OptimizerState),
        "activations_without_logits" => term_colour_hex(Term::Activations),
        "logits" => {
            let c = LOGITS_COLOUR;
            format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
        }
        _ => "transparent".into(),
    }
}

/// The line of what was computed beyond the inputs (detailed mode).
fn computed_line(
    state: RwSignal<PageState>,
    detailed: Memo<Result<DetailedBreakdown, DetailedError>>,
) -> impl IntoView {
    let shown = move || is_detailed(state);
    // What was computed beyond the inputs: micro-batch, accumulation, GPUs,
    // and which kernels priced it (the same words as the command line).
    let computed = move || {
        if !shown() || detailed.get().is_err() {
            return String::new();
        }
        let s = state.read();
        let cfg = s.detailed_config();
        let mut out = format!(
            "Computed: {}; {}.",
            crate::detailed::config::defaults::layout(&cfg),
            crate::detailed::config::defaults::kernels(&cfg, s.profile_reason())
        );
        for note in crate::detailed::config::defaults::ignored(&cfg) {
            out += &format!(" Note: {note}.");
        }
        if let Some(t) = s.detailed.trainer {
            out += &crate::from_page::trainer_words(t, &cfg);
        }
        out
    };
    view! {
        <p class="derived" id="detailed-computed" hidden=cond(move || !shown())>{text(computed)}</p>
    }
}

/// A link down to "Make it fit" when the step does not fit the GPU.
fn fit_pointer(state: RwSignal<PageState>, step: Memo<Option<StepTimeline>>) -> impl IntoView {
    let shown = move || is_detailed(state);
    // Where the verdict is, when the step does not fit the GPU: the fit
    // and its "Make it fit" rows sit under the GPU picker, far down the
    // controls.
    let overflow = move || {
        if !shown() {
            return None;
        }
        let s = state.read();
        let (gpu, u) = (s.gpu?, s.unit);
        // The peak plus the runtime overhead when it is on, as the panel
        // searches it.
        let t = step.get()?;
        let need = step_need(&s.detailed_config(), &t, s.detailed.overhead.as_ref());
        (need > gpu.bytes()).then(|| {
            format!(
                "The step needs {:.1} {l}, more than the {:.1} {l} GPU: what would make it fit ↓",
                u.of(need),
                u.of(gpu.bytes()),
                l = u.label()
            )
        })
    };
    view! {
        <p class="verdict" hidden=cond(move || overflow().is_none())>
            <a href="#make-it-fit" id="fit-pointer">{text(move || overflow().unwrap_or_default())}</a>
        </p>
    }
}

/// The host RAM per node, when anything is offloaded.
fn host_ram_line(
    state: RwSignal<PageState>,
    detailed: Memo<Result<DetailedBreakdown, DetailedError>>,
) -> impl IntoView {
    let shown = move || is_detailed(state);
    let host = move || {
        if !shown() {
            return None;
        }
        let s = state.read();
        let cfg = s.detailed_config();
        detailed.get().ok()?;
        let h = host_ram(&cfg)?;
        let u = s.unit;
        Some(format!(
            "Host RAM per node of {} GPU{}: {:.1} {} (offloaded states {:.1}, activations {:.1}; start-up load {:.1}; × {} for pinned buffers, DeepSpeed's factor).",
            h.gpus,
            if h.gpus == 1 { "" } else { "s" },
            u.of(h.total()),
            u.label(),
            u.of(h.states),
            u.of(h.activations),
            u.of(h.load),
            BUFFER_FACTOR,
        ))
    };
    view! {
        <p class="host-ram" id="host-ram" hidden=cond(move || host().is_none())>{text(move || host().unwrap_or_default())}</p>
    }
}

/// GRPO's rollout line: what one GPU generates at once and what it holds.
fn rollout_line(
    state: RwSignal<PageState>,
    detailed: Memo<Result<DetailedBreakdown, DetailedError>>,
    step: Memo<Option<StepTimeline>>,
) -> impl IntoView {
    let shown = move || is_detailed(state);
    let rollout = move || {
        if !shown() {
            return None;
        }
        let s = state.read();
        let cfg = s.detailed_config();
        if !matches!(cfg.objective, Objective::Grpo { .. }) {
            return None;
        }
        detailed.get().ok()?;
        let g = crate::detailed::memory::grpo::generation(&cfg);
        let peak = step.get()?.phase_peak(crate::detailed::Phase::Generation)?;
        let c = cfg.rollout.completion_tokens(cfg.seq);
        let u = s.unit;
        let engine = match (cfg.rollout.vllm, s.detailed.vllm_percent) {
            (Some(v), _) => format!(
                " A colocated vLLM engine holds {:.1} {l}{}.",
                u.of(v.reserved as f64),
                if v.sleep {
                    " while generating, asleep in training"
                } else {
                    " throughout"
                },
                l = u.label()
            ),
            (None, Some(_)) => " vLLM's share needs a GPU: pick one below.".into(),
            (None, None) => String::new(),
        };
        Some(format!(
            "Rollout: each GPU generates {} completions of {} tokens after {}-token prompts at once; their key/value cache reaches {:.1} {l}, and the generation phase peaks at {:.1} {l} (the step chart's first bars).{engine}",
            g.sequences,
            c,
            cfg.seq - c,
            u.of(g.cache),
            u.of(peak),
            l = u.label()
        ))
    };
    view! {
        <p class="derived" id="rollout-line" hidden=cond(move || rollout().is_none())>{text(move || rollout().unwrap_or_default())}</p>
    }
}

/// The table: one row per term with its figure and where it comes from.
fn term_table(
    state: RwSignal<PageState>,
    detailed: Memo<Result<DetailedBreakdown, DetailedError>>,
) -> impl IntoView {
    let unit = move || state.read().unit;
    let shown = move || is_detailed(state);
    let rows = DETAILED_ROWS.iter().enumerate().map(|(i, &(label, key))| {
        let figure = move || {
            if !shown() {
                return String::new();
            }
            detailed
                .get()
                .map(|b| format!("{:.1}", unit().of(detailed_rows(&b)[i].bytes)))
                .unwrap_or_default()
        };
        view! {
            <tr data-term=key>
                <th scope="row">
                    <span class="swatch" style:background-color=colour(key)></span>
                    {label}
                </th>
                <td class="gb num">{text(figure)}</td>
                <td class="formula"><span class="why">{note(key)}</span></td>
            </tr>
        }
    });
    view! {
        <table class="budget detailed-table">
            <caption>{text(move || format!("Detailed model, per GPU ({})", unit().definition()))}</caption>
            <thead>
                <tr>
                    <th scope="col">"Term"</th>
                    <th scope="col" class="num">{text(move || unit().label().into())}</th>
                    <th scope="col" class="formula">"Where it comes from"</th>
                </tr>
            </thead>
            <tbody>{rows.collect_view()}</tbody>
        </table>
    }
}

/// Where the lesson's rule and the detailed model differ, for these inputs.
#[component]
pub fn ModelDifference() -> impl IntoView {
    let DetailedBudget(detailed) = super::context::<DetailedBudget>();
    let State(state) = super::context::<State>();
    let explanation = move || {
        if state.read().mode != Mode::Detailed {
            return None;
        }
        let d: DetailedBreakdown = detailed.get().ok()?;
        let l = crate::budget::estimate(&state.read().lesson_for_detailed()).ok()?;
        let u = state.read().unit;
        let cfg = state.read().detailed_config();
        let scores = eager_cost(&cfg).unwrap_or(0.0);
        Some(format!(
            "Activations: the lesson's rule gives {:.1} {u}, the detailed model {:.1} {u} per GPU. \
             The rule's 34·L·b·s·h·2 counts Korthikanti's 34·s·b·h, which is already bytes at 16 bits, \
             twice; it leaves out the attention scores (about {:.1} {u} here with eager attention, 5·a·s²·b \
             per layer, none with flash attention) and the logits ({:.1} {u}); and it splits nothing across GPUs. \
             Both bars use the same {} parameters.",
            u.of(l.activations),
            u.of(d.activations),
            u.of(scores.max(0.0)),
            u.of(d.logits),
            grouped(state.read().architecture().params()),
            u = u.label()
        ))
    };
    view! {
        <p class="difference" id="model-difference" hidden=not(cond(move || state.read().detailed.show_lesson))>
            {text(move || explanation().unwrap_or_default())}
        </p>
    }
}
