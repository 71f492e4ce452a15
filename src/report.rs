//! The command line's `--json` output as types: one documented schema
//! (`docs/json.md`, field by field), serialized by `serde_json` and read
//! back in the tests.
//!
//! Every document carries `"schema"` ([`SCHEMA`]), what it priced
//! (`"inputs"`, every setting with its default resolved) and the figures:
//! bytes as integers, GB (10⁹ bytes) as numbers.
//!
//! ```
//! use membudget::budget::{estimate, TrainingConfig};
//! use membudget::report::LessonReport;
//!
//! let cfg = TrainingConfig::default();
//! let r = LessonReport::new(&cfg, &estimate(&cfg).unwrap());
//! assert_eq!(r.bytes.activations, 73_014_444_032);
//! assert_eq!(r.parameters, 7_000_000_000);
//! assert_eq!(r.dominant, "activations");
//! ```

use crate::budget::{Breakdown, TrainingConfig};
use crate::detailed::plan::search::Search;
use crate::detailed::time::steptime::{Cluster, Efficiency, Hidden, Parts, StepTime};
use crate::detailed::{
    self, AdamImpl, Architecture, DetailedBreakdown, DetailedConfig, Event, HostRam, Offload,
    OverheadBytes, Parallelism, StepTimeline,
};
use serde::{Deserialize, Serialize};

/// The schema's version: raised when a field changes meaning or goes away
/// (fields may be added within a version).
pub const SCHEMA: u32 = 2;

/// Figures by term; under `"bytes"` integers of bytes, under `"gb"` the
/// same divided by 10⁹.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Terms<T> {
    /// Weights.
    pub params: T,
    /// Gradients.
    pub grads: T,
    /// fp32 master weights (mixed precision).
    pub master_weights: T,
    /// Optimizer state.
    pub optimizer_state: T,
    /// Everything the forward pass keeps for backward (logits included in
    /// the detailed model).
    pub activations: T,
    /// The detailed model's logits, a part of `activations`; absent in the
    /// lesson's document.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub logits: Option<T>,
    /// The sum of the five terms.
    pub total: T,
}

/// A byte count as an integer, rounded to the nearest byte (a share of a
/// model split across GPUs can be fractional).
pub fn whole(bytes: f64) -> u64 {
    bytes.round().max(0.0) as u64
}

fn terms(b: &Breakdown, logits: Option<f64>) -> (Terms<u64>, Terms<f64>) {
    let bytes = Terms {
        params: whole(b.params),
        grads: whole(b.grads),
        master_weights: whole(b.master_weights),
        optimizer_state: whole(b.optimizer_state),
        activations: whole(b.activations),
        logits: logits.map(whole),
        total: whole(b.total),
    };
    let gb = Terms {
        params: b.params / 1e9,
        grads: b.grads / 1e9,
        master_weights: b.master_weights / 1e9,
        optimizer_state: b.optimizer_state / 1e9,
        activations: b.activations / 1e9,
        logits: logits.map(|l| l / 1e9),
        total: b.total / 1e9,
    };
    (bytes, gb)
}

/// The lesson's inputs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LessonInputs {
    /// Model size in billions of parameters.
    pub params_b: f64,
    /// Sequences per step.
    pub batch: u32,
    /// Tokens per sequence.
    pub seq: u32,
    /// Hidden size.
    pub hidden: u32,
    /// Layers.
    pub layers: u32,
    /// Mixed precision (bf16 + fp32 master) or fp32.
    pub mixed_precision: bool,
}

/// `membudget --json` for the lesson's model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LessonReport {
    /// [`SCHEMA`].
    pub schema: u32,
    /// `"lesson"`.
    pub model: String,
    /// What was priced.
    pub inputs: LessonInputs,
    /// Parameters: model size × 10⁹.
    pub parameters: u64,
    /// Bytes by term.
    pub bytes: Terms<u64>,
    /// GB by term.
    pub gb: Terms<f64>,
    /// The largest term's key.
    pub dominant: String,
}

impl LessonReport {
    /// The document for `cfg` and its breakdown.
    pub fn new(cfg: &TrainingConfig, b: &Breakdown) -> Self {
        let (bytes, gb) = terms(b, None);
        Self {
            schema: SCHEMA,
            model: "lesson".into(),
            inputs: LessonInputs {
                params_b: cfg.params_b,
                batch: cfg.batch,
                seq: cfg.seq_len,
                hidden: cfg.hidden,
                layers: cfg.layers,
                mixed_precision: cfg.mixed_precision,
            },
            parameters: (cfg.params_b * 1e9).round() as u64,
            bytes,
            gb,
            dominant: b.dominant().json_key().into(),
        }
    }
}

/// The model's shape as priced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapeInputs {
    /// The preset it equals, if any.
    pub preset: Option<String>,
    /// `gpt2` or `llama`.
    pub family: String,
    /// Layers.
    pub layers: u64,
    /// Hidden size.
    pub hidden: u64,
    /// Attention heads.
    pub heads: u64,
    /// Key/value heads.
    pub kv_heads: u64,
    /// MLP inner size.
    pub ffn: u64,
    /// Vocabulary.
    pub vocab: u64,
    /// Routed experts, if a mixture of experts.
    pub experts: Option<u64>,
    /// Experts per token.
    pub top_k: Option<u64>,
    /// A hybrid's Mamba-2 heads per layer, if it has the mixer.
    #[serde(default)]
    pub mamba_heads: Option<u64>,
    /// Its state size per group.
    #[serde(default)]
    pub mamba_state: Option<u64>,
}

/// Every setting the detailed model priced, defaults resolved: the names
/// are the command line's values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DetailedInputs {
    /// The model.
    pub shape: ShapeInputs,
    /// Tokens per sequence.
    pub seq: u64,
    /// Global batch in sequences.
    pub batch: u64,
    /// Sequences per GPU per forward pass, as priced.
    pub micro_batch: u64,
    /// `mixed`, `bf16` or `fp32`.
    pub precision: String,
    /// Gradients in fp32.
    pub grad_fp32: bool,
    /// FP8 primary weights (`--fp8-param`); written only when on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fp8_param: bool,
    /// Its transposes made per use (`--disable-parameter-transpose-cache`);
    /// written only when on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_parameter_transpose_cache: bool,
    /// The optimizer.
    pub optimizer: String,
    /// The optimizer's step in backward (`--optimizer-in-backward`);
    /// written only when on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optimizer_in_backward: bool,
    /// `eager` or `flash`.
    pub attention: String,
    /// Dropout on.
    pub dropout: bool,
    /// `none`, `selective` or `full`.
    pub recompute: String,
    /// Megatron-Core's recomputed modules beside `recompute`
    /// (`--recompute-modules`), when any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recompute_modules: Vec<String>,
    /// Megatron-Core's block method: the first layers of each model chunk
    /// recomputed (`--recompute-layers`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recompute_layers: Option<u64>,
    /// The kernel profile, `fused` or `hf`.
    pub profile: String,
    /// Why this profile: `"chosen"`, or the default's reason.
    pub profile_reason: String,
    /// Liger's RMSNorm, SwiGLU and RoPE kernels (`--impl liger`, under the
    /// `hf` profile); left out when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub liger_kernels: bool,
    /// The model under torch.compile (`--compile`); written only when on.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub compile: bool,
    /// What torch.compile wraps, `layers` or `layers-loss`; left out for
    /// the whole model (`model`) and without compile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_scope: Option<String>,
    /// The loss: `full`, `chunked`, `liger` or `cce`.
    #[serde(default)]
    pub loss: String,
    /// The chunked loss's chunks (only under `chunked`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_chunks: Option<u64>,
    /// `cuda` or `cpu`.
    pub device: String,
    /// Parallel degrees.
    pub parallel: Parallelism,
    /// Who runs data parallelism: `megatron`, `ddp`, `ddp-bucket-view`,
    /// `fsdp2`, `fsdp2-no-reshard` or `deepspeed`.
    #[serde(default)]
    pub framework: String,
    /// Megatron-Core's communication overlaps that are off, as
    /// `grad_reduce`, `param_gather`, `tp_comm` (only under `megatron`;
    /// left out when all three are on, the default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlaps_off: Vec<String>,
    /// Megatron-Core's overlaps that are off by default and on here:
    /// `moe_a2a` (`overlap_moe_expert_parallel_comm`; only under
    /// `megatron`; left out when none is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlaps_on: Vec<String>,
    /// DeepSpeed's `reduce_bucket_size` in values (only under `deepspeed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_bucket_size: Option<u64>,
    /// DeepSpeed's `stage3_prefetch_bucket_size` in values (only under
    /// `deepspeed` at ZeRO stage 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch_bucket_size: Option<u64>,
    /// DeepSpeed's `overlap_comm` as it runs: as set, or DeepSpeed's
    /// default, true at ZeRO stage 3 only (only under `deepspeed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_comm: Option<bool>,
    /// DeepSpeed's `sub_group_size` in values (only under `deepspeed` at
    /// ZeRO stage 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_group_size: Option<u64>,
    /// DeepSpeed's `stage3_param_persistence_threshold` in values (only
    /// under `deepspeed` at ZeRO stage 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param_persistence_threshold: Option<u64>,
    /// Experts' implementation (`grouped` or `loop`).
    pub experts_impl: String,
    /// Megatron's capacity factor, if any.
    pub capacity_factor: Option<f64>,
    /// Megatron-Core's token dispatcher when it is not `alltoall`
    /// (`deepep`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe_dispatcher: Option<String>,
    /// LoRA rank, if any.
    pub lora_rank: Option<u64>,
    /// LoRA's target projections.
    pub lora_targets: String,
    /// The adapters' dtype, `fp32` or `bf16`; written with LoRA only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora_dtype: Option<String>,
    /// LoRA dropout; written when above 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora_dropout: Option<f64>,
    /// The frozen base's storage (`none`, `nf4`, `nf4-nodq`, `int8`).
    pub quant_base: String,
    /// Whose code holds the quantized base (`bnb`, `torchao`,
    /// `fsdp-qlora`); absent for PEFT's path (the default) or no base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quant_path: Option<String>,
    /// Offload.
    pub offload: Offload,
    /// `sft`, `dpo`, `dpo-precomputed`, `grpo` or `grpo-kl`.
    pub objective: String,
    /// GRPO only: the rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutReport>,
    /// `first` or `later` optimizer step.
    pub step: String,
    /// AdamW's implementation for the peak (`loop`, `foreach`, `fused`).
    pub adam: String,
    /// With `--from`: what each trainer's file set and what it ignored,
    /// file by file in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub from: Vec<FromReport>,
    /// With `--keep`: the levers the planner leaves as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keep: Vec<String>,
}

/// What `--from FILE` read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FromReport {
    /// The path as given.
    pub file: String,
    /// The format it was read as (`DeepSpeed JSON`, …).
    pub format: String,
    /// Settings in order: each key, its value, the flag it became; a
    /// trainer default also names its source.
    pub set: Vec<FromSet>,
    /// Keys read and not priced, with the reason.
    pub ignored: Vec<FromIgnored>,
}

/// One key a file set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FromSet {
    /// The key path.
    pub key: String,
    /// Its value as written (the trainer's default when absent).
    pub value: String,
    /// The flag and its value (`--micro-batch 2`).
    pub flag: String,
    /// For a trainer default: where the trainer sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_from: Option<String>,
}

/// One key read and not priced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FromIgnored {
    /// The key path.
    pub key: String,
    /// Its value as written.
    pub value: String,
    /// Why.
    pub reason: String,
}

/// GRPO's rollout as priced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RolloutReport {
    /// Completion tokens (of the sequence; the rest is the prompt).
    pub completion: u64,
    /// Completions per prompt.
    pub generations: u64,
    /// Sequences one GPU generates at once.
    pub sequences_per_gpu: u64,
    /// The key/value cache at the last token, bytes.
    pub kv_cache: f64,
    /// The generation phase's peak, bytes.
    pub peak: f64,
    /// A colocated vLLM engine's reservation, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vllm_reserved: Option<u64>,
    /// Whether that engine sleeps during training.
    #[serde(default)]
    pub vllm_sleep: bool,
}

/// What the configuration means beyond its inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Computed {
    /// Gradient-accumulation steps: batch / (micro-batch × dp).
    pub accumulation_steps: u64,
    /// Sequences one optimizer step trains on.
    pub effective_batch: u64,
    /// GPUs the layout needs: dp × tp × pp.
    pub gpus: u64,
    /// Options that change nothing under the profile, and why.
    pub ignored: Vec<String>,
}

/// Live bytes at one event of the step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventReport {
    /// `forward`, `backward` or `optimizer`.
    pub phase: String,
    /// 1-based micro-batch.
    pub micro_batch: u64,
    /// What happens (`layer 3 backward`).
    pub event: String,
    /// Weights.
    pub params: u64,
    /// Gradients.
    pub grads: u64,
    /// Master weights.
    pub master_weights: u64,
    /// Optimizer state.
    pub optimizer_state: u64,
    /// Saved activations.
    pub activations: u64,
    /// Temporaries.
    pub transient: u64,
    /// Their sum.
    pub total: u64,
}

/// The runtime overhead beside the peak, bytes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct OverheadReport {
    /// CUDA context.
    pub cuda_context: u64,
    /// Library workspaces.
    pub workspaces: u64,
    /// Communication buffers.
    pub communication: u64,
    /// Allocator fragmentation.
    pub fragmentation: u64,
    /// Their sum.
    pub total: u64,
}

/// Host RAM per node with offload, bytes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostRamReport {
    /// Offloaded model states.
    pub states: u64,
    /// Offloaded activations.
    pub activations: u64,
    /// Start-up load.
    pub load: u64,
    /// The larger of states + activations and the load, × the pinned-buffer factor.
    pub total: u64,
}

/// Whether the step fits a card, with `--gpu` or `--gpu-memory`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    /// The card.
    pub gpu: String,
    /// Its memory, bytes.
    pub capacity: u64,
    /// What must fit: the step's peak, plus the runtime overhead unless
    /// `--no-overhead`.
    pub need: u64,
    /// `need` ≤ `capacity`.
    pub fits: bool,
    /// The largest micro-batch per GPU that fits (with the same
    /// accumulation steps), if any.
    pub max_micro_batch: Option<u64>,
    /// The largest sequence length that fits, if any.
    pub max_seq: Option<u64>,
    /// When it does not fit: the changes tried, those that fit first.
    pub changes: Vec<ChangeReport>,
    /// The smallest card of the table it fits on as it is, if any.
    pub card: Option<String>,
    /// Of `need`, bitsandbytes' paged optimizer state (CUDA unified
    /// memory), bytes: 0 without a paged optimizer.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub paged: u64,
    /// What must fit without the allocator's fragmentation band
    /// ([`crate::detailed::memory::overhead::edge_need`]), bytes, when the
    /// step does not fit with it and fits without: it may run at the
    /// card's edge; 0 otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub edge: u64,
}

/// Whether a byte count is 0 (left out of the JSON).
fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// One change [`crate::detailed::plan::planner::make_it_fit`] tried.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangeReport {
    /// What it is.
    pub change: String,
    /// The flags that apply it, to add to the command.
    pub flags: Vec<String>,
    /// What must fit afterwards, bytes.
    pub need: u64,
    /// Bytes saved (negative: more).
    pub saved: i64,
    /// The budget term it cuts most, or `peak`.
    pub term: String,
    /// It fits the card.
    pub fits: bool,
    /// GPUs the layout needs.
    pub gpus: u64,
    /// Hardware FLOPs per token against now.
    pub compute: f64,
    /// GPU-seconds per token against now, with `--gpu` a card of the table.
    pub time: Option<f64>,
    /// What else it costs, in words.
    pub cost: String,
    /// It needs more GPUs than the configuration has: offered apart.
    pub more_gpus: bool,
    /// With `--tokens` on a card of the table: what training on them takes
    /// with this change.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub training: Option<TrainingCost>,
}

/// One optimizer step's time on a card of the table (`--gpu`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeReport {
    /// The card's key.
    pub gpu: String,
    /// GPUs per node.
    pub gpus_per_node: u64,
    /// Seconds per optimizer step.
    pub step_s: f64,
    /// Tokens trained per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Model TFLOPS per GPU.
    pub model_tflops_per_gpu: f64,
    /// Hardware TFLOPS per GPU (recomputation counted).
    pub hardware_tflops_per_gpu: f64,
    /// Model FLOPs utilisation.
    pub mfu: f64,
    /// Hardware FLOPs utilisation.
    pub hfu: f64,
    /// Seconds per step by part.
    pub parts: Parts,
    /// Seconds per step of communication hidden behind compute, not in
    /// `parts` (Megatron-Core's overlaps, the data-parallel buckets).
    #[serde(default)]
    pub hidden: Hidden,
    /// The efficiencies used.
    pub efficiency: Efficiency,
    /// With `--tokens`: what training on them takes.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub training: Option<TrainingCost>,
    /// The range the step-time model's validation supports for this card
    /// and framework (docs/steptime.md).
    pub range: TimeRange,
}

/// The range of each time figure that the step-time model's validation
/// against published throughputs supports
/// ([`crate::detailed::time::validation`]): each pair is the lowest and the
/// highest; all `null` where no published row ran on the card.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeRange {
    /// Which validation ("the validation on H100 SXM"), or why there is
    /// none ("not validated on this card: …").
    pub basis: String,
    /// Its sources' names ("MPT, IBM").
    pub names: String,
    /// The sources whose rows it rests on (docs/steptime.md's keys).
    pub sources: Vec<String>,
    /// Their rows.
    pub rows: usize,
    /// The lowest and highest error of those rows (predicted rate over
    /// measured, less one).
    pub error: Option<[f64; 2]>,
    /// Seconds per optimizer step.
    pub step_s: Option<[f64; 2]>,
    /// Tokens per second per GPU.
    pub tokens_per_s_per_gpu: Option<[f64; 2]>,
    /// Model FLOPs utilisation.
    pub mfu: Option<[f64; 2]>,
    /// Hardware FLOPs utilisation.
    pub hfu: Option<[f64; 2]>,
    /// With `--tokens`: wall-clock days.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub days: Option<[f64; 2]>,
    /// With `--tokens`: the cost.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cost: Option<[f64; 2]>,
}

impl TimeRange {
    /// The range of `t` (and of `training`) for `cfg` on the card `card`.
    pub fn new(
        cfg: &DetailedConfig,
        card: &str,
        t: &StepTime,
        training: Option<&TrainingCost>,
    ) -> Self {
        let pair = |(lo, hi): (f64, f64)| [lo, hi];
        match crate::detailed::time::validation::range(cfg, card) {
            Ok(r) => Self {
                basis: r.basis.clone(),
                names: r.names.clone(),
                sources: r.sources.iter().map(|s| s.to_string()).collect(),
                rows: r.rows,
                error: Some([r.lowest, r.highest]),
                step_s: Some(pair(r.time(t.step_s))),
                tokens_per_s_per_gpu: Some(pair(r.rate(t.tokens_per_s_per_gpu))),
                mfu: Some(pair(r.rate(t.mfu))),
                hfu: Some(pair(r.rate(t.hfu))),
                days: training.map(|c| pair(r.time(c.days))),
                cost: training.map(|c| pair(r.time(c.cost))),
            },
            Err(why) => Self {
                basis: why,
                names: String::new(),
                sources: Vec::new(),
                rows: 0,
                error: None,
                step_s: None,
                tokens_per_s_per_gpu: None,
                mfu: None,
                hfu: None,
                days: None,
                cost: None,
            },
        }
    }
}

impl TimeReport {
    /// The report of `t` for `cfg` on `cluster`.
    pub fn new(
        cfg: &DetailedConfig,
        cluster: &Cluster,
        eff: &Efficiency,
        t: &StepTime,
        training: Option<TrainingCost>,
    ) -> Self {
        Self {
            range: TimeRange::new(cfg, cluster.gpu.key, t, training.as_ref()),
            gpu: cluster.gpu.key.into(),
            gpus_per_node: cluster.gpus_per_node,
            step_s: t.step_s,
            tokens_per_s_per_gpu: t.tokens_per_s_per_gpu,
            model_tflops_per_gpu: t.model_tflops_per_gpu,
            hardware_tflops_per_gpu: t.hardware_tflops_per_gpu,
            mfu: t.mfu,
            hfu: t.hfu,
            parts: t.parts,
            hidden: t.parts.hidden,
            efficiency: *eff,
            training,
        }
    }
}

/// What training on a token budget takes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingCost {
    /// Tokens to train on.
    pub tokens: f64,
    /// GPUs.
    pub gpus: u64,
    /// Wall-clock days.
    pub days: f64,
    /// GPU-hours.
    pub gpu_hours: f64,
    /// Price of a GPU-hour.
    pub price_per_gpu_hour: f64,
    /// GPU-hours × price.
    pub cost: f64,
}

impl TrainingCost {
    /// Training on `tokens` at `t`'s rate on `gpus` GPUs.
    pub fn new(tokens: f64, gpus: u64, t: &StepTime, price: f64) -> Self {
        Self::at_rate(tokens, gpus, t.tokens_per_s_per_gpu, price)
    }

    /// Training on `tokens` at `tokens_per_s_per_gpu` on `gpus` GPUs.
    pub fn at_rate(tokens: f64, gpus: u64, tokens_per_s_per_gpu: f64, price: f64) -> Self {
        let gpu_hours = tokens / tokens_per_s_per_gpu / 3600.0;
        Self {
            tokens,
            gpus,
            days: gpu_hours / gpus as f64 / 24.0,
            gpu_hours,
            price_per_gpu_hour: price,
            cost: gpu_hours * price,
        }
    }
}

/// One layout of `--plan`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanRowReport {
    /// The flags that give it (with the model, --gpu, --seq and --batch).
    pub flags: Vec<String>,
    /// The flags it changes, added to the command as given: every setting
    /// that differs from it, and only those.
    pub changes: Vec<String>,
    /// What must fit per GPU: the step's peak plus the runtime overhead
    /// (unless `--no-overhead`).
    pub peak: u64,
    /// Seconds per optimizer step.
    pub step_s: f64,
    /// Tokens per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs utilisation.
    pub mfu: f64,
    /// Hardware FLOPs utilisation.
    pub hfu: f64,
    /// On the memory-versus-time Pareto front.
    pub pareto: bool,
    /// Seconds per step by part.
    pub parts: Parts,
    /// With `--tokens`: what training on them takes with this layout.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub training: Option<TrainingCost>,
}

/// `--plan`: what was searched and the layouts that fit, fastest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanReport {
    /// GPUs searched over.
    pub gpus: u64,
    /// Layouts tried.
    pub tried: u64,
    /// Those that fit, fastest first.
    pub rows: Vec<PlanRowReport>,
}

impl PlanReport {
    /// The report of a search from `from` over `gpus`.
    pub fn new(from: &DetailedConfig, gpus: u64, s: &Search) -> Self {
        Self {
            gpus,
            tried: s.tried as u64,
            rows: s
                .rows
                .iter()
                .enumerate()
                .map(|(i, r)| PlanRowReport {
                    flags: r.flags(),
                    changes: crate::detailed::plan::diff::changes(from, &r.cfg),
                    peak: whole(r.need),
                    step_s: r.time.step_s,
                    tokens_per_s_per_gpu: r.time.tokens_per_s_per_gpu,
                    mfu: r.time.mfu,
                    hfu: r.time.hfu,
                    pareto: s.pareto.contains(&i),
                    parts: r.time.parts,
                    training: None,
                })
                .collect(),
        }
    }
}

impl ChangeReport {
    /// The report of a planner's change to `from`.
    pub fn new(from: &DetailedConfig, c: &crate::detailed::plan::planner::Change) -> Self {
        Self {
            change: c.name.clone(),
            flags: crate::detailed::plan::planner::flags(from, &c.cfg),
            need: whole(c.need),
            saved: c.saved.round() as i64,
            term: c.term.into(),
            fits: c.fits,
            gpus: c.gpus,
            compute: c.compute,
            time: c.time,
            cost: c.cost.clone(),
            more_gpus: c.gpus > from.gpus(),
            training: None,
        }
    }
}

/// `membudget --json` for the detailed model, per GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DetailedReport {
    /// [`SCHEMA`].
    pub schema: u32,
    /// `"detailed"`.
    pub model: String,
    /// What was priced.
    pub inputs: DetailedInputs,
    /// Parameters of the whole model.
    pub parameters: u64,
    /// Parameters active per token (mixture of experts), if different.
    pub active_parameters: Option<u64>,
    /// Derived from the inputs.
    pub computed: Computed,
    /// Bytes by term, per GPU.
    pub bytes: Terms<u64>,
    /// GB by term, per GPU.
    pub gb: Terms<f64>,
    /// The largest term's key.
    pub dominant: String,
    /// The step's peak of live bytes.
    pub peak: u64,
    /// Its phase.
    pub peak_phase: String,
    /// Its event.
    pub peak_event: String,
    /// With a paged optimizer: the part of `peak` that is bitsandbytes'
    /// paged state, in CUDA unified memory: on the card, not in
    /// `torch.cuda.max_memory_allocated`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub peak_paged_state: Option<u64>,
    /// With a paged optimizer: `peak` less the paged state, what
    /// PyTorch's allocator (and a trainer's log) reports.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub peak_allocated_by_pytorch: Option<u64>,
    /// `first` or `later`.
    pub step: String,
    /// The pipeline stage shown, 1-based: the one with the higher peak (1
    /// without a pipeline).
    #[serde(default)]
    pub stage: u64,
    /// Every event of the step.
    pub timeline: Vec<EventReport>,
    /// The runtime overhead, unless `--no-overhead`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub overhead: Option<OverheadReport>,
    /// Peak plus overhead, unless `--no-overhead`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub peak_with_overhead: Option<u64>,
    /// What `torch.cuda.max_memory_reserved` would print: the tensors'
    /// peak as PyTorch allocates it plus the fragmentation, unless
    /// `--no-overhead`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub peak_reserved_by_pytorch: Option<u64>,
    /// Host RAM per node, with offload.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub host_ram: Option<HostRamReport>,
    /// The verdict on a card, with `--gpu` or `--gpu-memory`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub fit: Option<FitReport>,
    /// The step's time, with `--gpu` a card of the table.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub time: Option<TimeReport>,
    /// With `--plan`: the layouts that fit, fastest first.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub plan: Option<PlanReport>,
}

/// What the detailed document needs beyond the configuration.
pub struct DetailedParts<'a> {
    /// The budget.
    pub breakdown: &'a DetailedBreakdown,
    /// The step.
    pub timeline: &'a StepTimeline,
    /// Overhead, if asked for.
    pub overhead: Option<&'a OverheadBytes>,
    /// Host RAM, with offload.
    pub host: Option<&'a HostRam>,
    /// Why the profile: `"chosen"` or the default's reason.
    pub profile_reason: &'a str,
    /// AdamW's implementation in force.
    pub adam: AdamImpl,
    /// The verdict on a card, if one was named.
    pub fit: Option<FitReport>,
    /// The step's time, with a card of the table.
    pub time: Option<TimeReport>,
    /// With `--plan`.
    pub plan: Option<PlanReport>,
}

/// The paged optimizer state live at `t`'s peak, with a paged optimizer.
fn paged(cfg: &DetailedConfig, t: &StepTimeline) -> Option<f64> {
    cfg.optimizer.paged().then(|| {
        crate::detailed::memory::paged::paged_at_peak(cfg, t.peak_event().live.optimizer_state)
    })
}

impl DetailedReport {
    /// The document for `cfg`.
    pub fn new(cfg: &DetailedConfig, parts: &DetailedParts<'_>) -> Self {
        let a = &cfg.arch;
        let b = parts.breakdown;
        let t = parts.timeline;
        let (bytes, gb) = terms(&b.terms(), Some(b.logits));
        let peak = t.peak_event();
        Self {
            schema: SCHEMA,
            model: "detailed".into(),
            inputs: DetailedInputs::new(cfg, parts),
            parameters: a.params(),
            active_parameters: a.moe.map(|_| a.active_params()),
            computed: Computed::new(cfg),
            bytes,
            gb,
            dominant: b.terms().dominant().json_key().into(),
            peak: whole(t.peak_bytes()),
            peak_phase: peak.phase.name().into(),
            peak_event: peak.moment.label(),
            peak_paged_state: paged(cfg, t).map(whole),
            peak_allocated_by_pytorch: paged(cfg, t).map(|p| whole(t.peak_bytes() - p)),
            step: step_name(t).into(),
            stage: t.stage,
            timeline: t.events.iter().map(EventReport::new).collect(),
            overhead: parts.overhead.map(OverheadReport::new),
            peak_with_overhead: parts.overhead.map(|o| whole(t.peak_bytes() + o.total())),
            peak_reserved_by_pytorch: parts.overhead.map(|o| {
                whole(
                    o.pytorch_figures(t.peak_bytes(), paged(cfg, t).unwrap_or(0.0))
                        .1,
                )
            }),
            host_ram: parts.host.map(HostRamReport::new),
            fit: parts.fit.clone(),
            time: parts.time.clone(),
            plan: parts.plan.clone(),
        }
    }
}

/// Megatron-Core's overlaps off by default that are on, by their field
/// names (none outside the Megatron framework).
fn overlaps_on(cfg: &DetailedConfig) -> Vec<String> {
    let on = cfg.framework == crate::detailed::Framework::Megatron && cfg.overlap.moe_a2a;
    on.then(|| "moe_a2a".to_string()).into_iter().collect()
}

/// Megatron-Core's overlaps that are off, by their field names (none
/// outside the Megatron framework, where they do not run).
fn overlaps_off(cfg: &DetailedConfig) -> Vec<String> {
    let o = cfg.overlap;
    let all = [
        (o.grad_reduce, "grad_reduce"),
        (o.param_gather, "param_gather"),
        (o.tp_comm, "tp_comm"),
    ];
    all.iter()
        .filter(|(on, _)| cfg.framework == crate::detailed::Framework::Megatron && !on)
        .map(|(_, name)| name.to_string())
        .collect()
}

/// `first` or `later`: the optimizer step the timeline shows.
fn step_name(t: &StepTimeline) -> &'static str {
    if t.first_step {
        "first"
    } else {
        "later"
    }
}

impl DetailedInputs {
    /// Every setting of `cfg`, defaults resolved, with the profile's reason
    /// and AdamW's implementation from `parts`.
    fn new(cfg: &DetailedConfig, parts: &DetailedParts<'_>) -> Self {
        let p = &cfg.parallel;
        Self {
            shape: ShapeInputs::new(&cfg.arch),
            seq: cfg.seq,
            batch: cfg.batch,
            micro_batch: cfg.micro(),
            precision: cfg.precision.name().into(),
            grad_fp32: cfg.fp32_grads,
            fp8_param: cfg.fp8_param,
            disable_parameter_transpose_cache: cfg.no_transpose_cache,
            optimizer: cfg.optimizer.name().into(),
            optimizer_in_backward: cfg.optimizer_in_backward,
            attention: cfg.attention.name().into(),
            dropout: cfg.dropout,
            recompute: cfg.recompute.name().into(),
            recompute_modules: cfg
                .recompute_modules
                .names()
                .into_iter()
                .map(String::from)
                .collect(),
            recompute_layers: (cfg.recompute_layers > 0).then_some(cfg.recompute_layers),
            profile: cfg.profile.name().into(),
            profile_reason: parts.profile_reason.into(),
            liger_kernels: cfg.liger,
            compile: cfg.compile,
            compile_scope: (cfg.compile && cfg.compile_scope.per_layer())
                .then(|| cfg.compile_scope.name().to_string()),
            loss: cfg.loss.name().into(),
            loss_chunks: (cfg.loss == crate::detailed::Loss::Chunked).then_some(cfg.loss_chunks),
            device: cfg.device.name().into(),
            parallel: *p,
            framework: cfg.framework.name().into(),
            overlaps_off: overlaps_off(cfg),
            overlaps_on: overlaps_on(cfg),
            reduce_bucket_size: match cfg.framework {
                crate::detailed::Framework::DeepSpeed {
                    reduce_bucket_size, ..
                } => Some(reduce_bucket_size),
                _ => None,
            },
            prefetch_bucket_size: match cfg.framework {
                crate::detailed::Framework::DeepSpeed {
                    prefetch_bucket_size,
                    ..
                } if p.zero == 3 => Some(prefetch_bucket_size),
                _ => None,
            },
            overlap_comm: matches!(cfg.framework, crate::detailed::Framework::DeepSpeed { .. })
                .then(|| cfg.framework.overlap_comm(p.zero)),
            sub_group_size: match cfg.framework {
                crate::detailed::Framework::DeepSpeed { sub_group_size, .. } if p.zero == 3 => {
                    Some(sub_group_size)
                }
                _ => None,
            },
            param_persistence_threshold: match cfg.framework {
                crate::detailed::Framework::DeepSpeed {
                    param_persistence_threshold,
                    ..
                } if p.zero == 3 => Some(param_persistence_threshold),
                _ => None,
            },
            experts_impl: cfg.experts_impl.name().into(),
            capacity_factor: cfg.capacity_factor,
            moe_dispatcher: (cfg.moe_dispatcher != crate::detailed::MoeDispatcher::AllToAll)
                .then(|| cfg.moe_dispatcher.name().into()),
            lora_rank: cfg.lora_rank,
            lora_targets: cfg.lora_targets.names(),
            lora_dtype: (cfg.lora_rank.is_some()
                && cfg.lora_dtype != crate::detailed::config::LoraDtype::Fp32)
                .then(|| cfg.lora_dtype.name().into()),
            lora_dropout: (cfg.lora_dropout > 0.0).then_some(cfg.lora_dropout),
            quant_base: cfg.base_quant.name().into(),
            quant_path: (cfg.base_quant != crate::detailed::BaseQuant::None
                && cfg.quant_path != crate::detailed::QuantPath::Peft)
                .then(|| cfg.quant_path.name().into()),
            offload: cfg.offload,
            objective: cfg.objective.name().into(),
            rollout: matches!(cfg.objective, crate::detailed::Objective::Grpo { .. })
                .then(|| RolloutReport::new(cfg, parts.timeline)),
            step: step_name(parts.timeline).into(),
            adam: parts.adam.name().into(),
            from: Vec::new(),
            keep: Vec::new(),
        }
    }
}

impl ShapeInputs {
    /// The shape of `a`, with the preset it equals if any.
    fn new(a: &Architecture) -> Self {
        Self {
            preset: detailed::PRESETS
                .iter()
                .find(|x| x.arch == *a)
                .map(|x| x.name.to_string()),
            family: a.family.name().into(),
            layers: a.layers,
            hidden: a.hidden,
            heads: a.heads,
            kv_heads: a.kv_heads,
            ffn: a.ffn,
            vocab: a.vocab,
            experts: a.moe.map(|m| m.experts),
            top_k: a.moe.map(|m| m.top_k),
            mamba_heads: a.ssm.map(|m| m.heads),
            mamba_state: a.ssm.map(|m| m.state),
        }
    }
}

impl RolloutReport {
    /// GRPO's rollout under `cfg`, its generation phase's peak read from
    /// `t`.
    fn new(cfg: &DetailedConfig, t: &StepTimeline) -> Self {
        let g = crate::detailed::memory::grpo::generation(cfg);
        Self {
            completion: cfg.rollout.completion_tokens(cfg.seq),
            generations: cfg.rollout.generations,
            sequences_per_gpu: g.sequences,
            kv_cache: g.cache,
            peak: t
                .phase_peak(crate::detailed::Phase::Generation)
                .unwrap_or(0.0),
            vllm_reserved: cfg.rollout.vllm.map(|v| v.reserved),
            vllm_sleep: cfg.rollout.vllm.is_some_and(|v| v.sleep),
        }
    }
}

impl Computed {
    /// What `cfg` means beyond its inputs.
    fn new(cfg: &DetailedConfig) -> Self {
        Self {
            accumulation_steps: cfg.accumulation_steps(),
            effective_batch: cfg.effective_batch(),
            gpus: cfg.gpus(),
            ignored: detailed::config::defaults::ignored(cfg)
                .into_iter()
                .map(String::from)
                .collect(),
        }
    }
}

impl EventReport {
    /// The live bytes at `e`, rounded to whole bytes.
    fn new(e: &Event) -> Self {
        let l = &e.live;
        Self {
            phase: e.phase.name().into(),
            micro_batch: e.micro_batch,
            event: e.moment.label(),
            params: whole(l.params),
            grads: whole(l.grads),
            master_weights: whole(l.master_weights),
            optimizer_state: whole(l.optimizer_state),
            activations: whole(l.activations),
            transient: whole(l.transient),
            total: whole(l.total()),
        }
    }
}

impl OverheadReport {
    /// The overhead `o`, rounded to whole bytes.
    fn new(o: &OverheadBytes) -> Self {
        Self {
            cuda_context: whole(o.cuda_context),
            workspaces: whole(o.workspaces),
            communication: whole(o.communication),
            fragmentation: whole(o.fragmentation),
            total: whole(o.total()),
        }
    }
}

impl HostRamReport {
    /// The host RAM `h`, rounded to whole bytes.
    fn new(h: &HostRam) -> Self {
        Self {
            states: whole(h.states),
            activations: whole(h.activations),
            load: whole(h.load),
            total: whole(h.total()),
        }
    }
}
