//! The detailed model: training memory of a real transformer, per GPU, from
//! its architecture, precision, optimizer, attention kernel, recomputation,
//! parallelism and LoRA. The lesson's model ([`crate::budget`]) stays as
//! taught; this one is for engineers who need figures that hold.
//!
//! ```
//! use membudget::detailed::{estimate, preset, DetailedConfig};
//!
//! let llama = preset("llama-2-7b").unwrap().arch;
//! assert_eq!(llama.params(), 6_738_415_616);
//! let b = estimate(&DetailedConfig::new(llama, 2048, 1)).unwrap();
//! assert!(b.activations > b.logits);
//! ```
//!
//! One file per part, so that a formula is found where its part is:
//! - [`arch`]: the model's shape (latent attention, experts), parameter
//!   counts, LoRA's adapters;
//! - [`import`]: a Hugging Face `config.json` to a shape;
//! - [`presets`]: published models and their checked parameter counts;
//! - [`states`]: weights, gradients, master weights, optimizer state;
//! - [`activations`]: what the forward pass keeps for backward, per profile;
//! - [`parallel`]: data, tensor, sequence and pipeline parallelism, ZeRO;
//! - [`timeline`]: live memory over one training step, and its peak;
//! - [`overhead`]: what a GPU process uses beyond its tensors;
//! - this file: the options, the configuration, and [`estimate`], which adds
//!   the model states and the saved activations.

pub mod activations;
pub mod arch;
pub mod import;
pub mod overhead;
pub mod parallel;
pub mod presets;
pub mod states;
pub mod timeline;

use std::fmt;

pub use arch::{Architecture, Family, LayerParams, LoraTargets, Mla, Moe, Router};
pub use import::{import_config, ImportError, Imported, MODEL_TYPES};
pub use overhead::{Overhead, OverheadBytes};
pub use parallel::Parallelism;
pub use presets::{preset, Preset, PRESETS};
pub use states::ModelStates;
pub use timeline::{
    timeline, why_peak, AdamImpl, Event, Live, Moment, Phase, Step, StepOptions, StepTimeline,
};

/// How weights, gradients and optimizer state are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Everything fp32.
    Fp32,
    /// bf16 weights, gradients and activations with an fp32 master copy and
    /// fp32 optimizer state (Micikevicius et al. 2018; the lesson's).
    Mixed,
    /// Everything bf16, optimizer state in bf16 too (PyTorch's AdamW keeps
    /// its moments in the parameters' dtype).
    Bf16,
}

/// The optimizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimizer {
    /// Adam with decoupled weight decay (Loshchilov & Hutter 2019): two moments.
    AdamW,
    /// Plain SGD: no state.
    Sgd,
    /// SGD with momentum: one buffer.
    SgdMomentum,
    /// 8-bit Adam (Dettmers et al. 2022): two 1-byte moments plus one fp32
    /// absmax per 2048-value block for each.
    Adam8bit,
}

/// What the attention keeps for backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttentionKernel {
    /// Materialised a·s² scores (softmax output, dropout mask and output).
    Eager,
    /// FlashAttention / PyTorch SDPA (Dao et al. 2022): only Q, K, V, the
    /// output and the log-sum-exp.
    Flash,
}

/// Activation recomputation (Korthikanti et al. 2022, §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recompute {
    /// Keep everything.
    None,
    /// Recompute the attention core: the a·s² terms are not kept.
    Selective,
    /// Recompute each layer from its input.
    Full,
}

/// Whose kernels, and so which tensors autograd keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Megatron-style fused kernels, as Korthikanti et al. count.
    Fused,
    /// Stock Hugging Face `transformers`.
    Hf,
}

/// Where it runs; it changes two details of the "hf" profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// Dropout masks are `bool` (1 byte); SDPA keeps no scores even with dropout.
    Cuda,
    /// Dropout masks in the input's dtype; SDPA with dropout falls back to
    /// the math kernel, which keeps the scores.
    Cpu,
}

/// How `transformers` runs the routed experts (`experts_implementation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpertsImpl {
    /// One grouped matmul over tokens sorted by expert (`grouped_mm`, the
    /// default in `transformers` 5.x, `integrations/moe.py`).
    Grouped,
    /// A Python loop over the experts that received tokens (the modules'
    /// own `forward`, `experts_implementation="eager"`).
    Loop,
}

/// Implements `FromStr` (and `name()`) for a choice enum from its spellings.
macro_rules! choices {
    ($t:ty, $what:literal, $($name:literal => $v:expr),+ $(,)?) => {
        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s.to_ascii_lowercase().as_str() {
                    $($name => Ok($v),)+
                    _ => Err(format!(concat!($what, " must be one of: {}"), [$($name),+].join(", "))),
                }
            }
        }
        impl $t {
            /// The name the command line and URL use.
            pub fn name(self) -> &'static str {
                $(if self == $v { return $name; })+
                unreachable!()
            }
        }
    };
}

choices!(Router, "router", "mixtral" => Router::Mixtral, "qwen" => Router::Qwen,
    "deepseek" => Router::DeepSeek);
choices!(ExpertsImpl, "experts implementation", "grouped" => ExpertsImpl::Grouped,
    "loop" => ExpertsImpl::Loop);
choices!(Family, "architecture", "gpt2" => Family::Gpt2, "llama" => Family::Llama);
choices!(Precision, "precision", "mixed" => Precision::Mixed, "bf16" => Precision::Bf16, "fp32" => Precision::Fp32);
choices!(Optimizer, "optimizer", "adamw" => Optimizer::AdamW, "sgd" => Optimizer::Sgd,
    "sgd-momentum" => Optimizer::SgdMomentum, "adam8bit" => Optimizer::Adam8bit);
choices!(AttentionKernel, "attention", "eager" => AttentionKernel::Eager, "flash" => AttentionKernel::Flash);
choices!(Recompute, "recompute", "none" => Recompute::None, "selective" => Recompute::Selective,
    "full" => Recompute::Full);
choices!(Profile, "implementation", "fused" => Profile::Fused, "hf" => Profile::Hf);
choices!(Device, "device", "cuda" => Device::Cuda, "cpu" => Device::Cpu);
choices!(AdamImpl, "AdamW implementation", "loop" => AdamImpl::ForLoop,
    "foreach" => AdamImpl::Foreach, "fused" => AdamImpl::Fused);

/// Everything the detailed model needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetailedConfig {
    /// The model.
    pub arch: Architecture,
    /// Sequence length, s.
    pub seq: u64,
    /// Global batch, sequences per optimizer step.
    pub batch: u64,
    /// Sequences per GPU per forward pass; `None`: batch / dp.
    pub micro_batch: Option<u64>,
    /// Storage precision.
    pub precision: Precision,
    /// Keep gradients in fp32 under mixed or bf16 precision.
    pub fp32_grads: bool,
    /// The optimizer.
    pub optimizer: Optimizer,
    /// Attention kernel.
    pub attention: AttentionKernel,
    /// Dropout in the model (attention, residual, embedding).
    pub dropout: bool,
    /// Recomputation.
    pub recompute: Recompute,
    /// Kernel profile.
    pub profile: Profile,
    /// Device (details of the "hf" profile).
    pub device: Device,
    /// Parallelism.
    pub parallel: Parallelism,
    /// LoRA rank (base frozen), if any.
    pub lora_rank: Option<u64>,
    /// The projections LoRA adapts.
    pub lora_targets: LoraTargets,
    /// How the routed experts run (mixture of experts, "hf" profile).
    pub experts_impl: ExpertsImpl,
    /// Megatron's expert capacity factor with padding to capacity
    /// (`--moe-expert-capacity-factor` with `--moe-pad-expert-input-to-capacity`),
    /// "fused" profile: every expert holds c·n·k/E token slots. `None`:
    /// dropless, as Megatron's default.
    pub capacity_factor: Option<f64>,
}

impl DetailedConfig {
    /// Mixed precision AdamW, eager attention with dropout, no
    /// recomputation, fused kernels on CUDA, one GPU.
    pub fn new(arch: Architecture, seq: u64, batch: u64) -> Self {
        Self {
            arch,
            seq,
            batch,
            micro_batch: None,
            precision: Precision::Mixed,
            fp32_grads: false,
            optimizer: Optimizer::AdamW,
            attention: AttentionKernel::Eager,
            dropout: true,
            recompute: Recompute::None,
            profile: Profile::Fused,
            device: Device::Cuda,
            parallel: Parallelism::default(),
            lora_rank: None,
            lora_targets: LoraTargets::default(),
            experts_impl: ExpertsImpl::Grouped,
            capacity_factor: None,
        }
    }

    /// Sequences in one forward pass on one GPU.
    pub fn micro(&self) -> u64 {
        self.micro_batch
            .unwrap_or(self.batch / self.parallel.dp.max(1))
            .max(1)
    }
}

/// What is wrong with a detailed configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetailedError(pub String);

impl fmt::Display for DetailedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DetailedError {}

/// The budget per GPU, in bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetailedBreakdown {
    /// Weights.
    pub params: f64,
    /// Gradients.
    pub grads: f64,
    /// fp32 master weights (mixed precision).
    pub master_weights: f64,
    /// Optimizer state.
    pub optimizer_state: f64,
    /// Everything the forward pass keeps for backward, logits included.
    pub activations: f64,
    /// The part of `activations` that is the output layer's logits and loss.
    pub logits: f64,
    /// Sum of the first five.
    pub total: f64,
}

impl DetailedBreakdown {
    /// The same figures as the lesson's five terms (logits inside the
    /// activations), to reuse its dominant term, shares and printout.
    pub fn terms(&self) -> crate::budget::Breakdown {
        crate::budget::Breakdown {
            params: self.params,
            grads: self.grads,
            master_weights: self.master_weights,
            optimizer_state: self.optimizer_state,
            activations: self.activations,
            total: self.total,
        }
    }
}

fn check(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    let err = |m: &str| Err(DetailedError(m.to_string()));
    if a.layers == 0 || a.hidden == 0 || a.heads == 0 || a.vocab == 0 || a.ffn == 0 {
        return err("layers, hidden size, heads, FFN size and vocabulary must be at least 1");
    }
    if a.hidden > 1 << 20
        || a.ffn > 1 << 24
        || a.vocab > 1 << 24
        || a.heads > a.hidden
        || a.layers > 1 << 12
    {
        return err("sizes beyond any real model: hidden ≤ 2²⁰, FFN and vocabulary ≤ 2²⁴, heads ≤ hidden, layers ≤ 4096");
    }
    if cfg.seq > 1 << 24 || cfg.batch > 1 << 24 || cfg.lora_rank.is_some_and(|r| r > a.hidden) {
        return err("sequence and batch must be at most 2²⁴, LoRA rank at most the hidden size");
    }
    if cfg.lora_rank.is_some() {
        if cfg.lora_targets.count() == 0 {
            return err("LoRA needs at least one target projection");
        }
        if a.family == Family::Gpt2 && cfg.lora_targets.0 & LoraTargets::GATE != 0 {
            return err("GPT-2 has no gate projection");
        }
    }
    if a.kv_heads == 0 || !a.heads.is_multiple_of(a.kv_heads) {
        return err("kv heads must divide the attention heads");
    }
    if a.head_width == 0 && !a.hidden.is_multiple_of(a.heads) {
        return err("hidden size must be a multiple of the heads (or give the head width)");
    }
    if a.head_width > 1 << 12 {
        return err("head width must be at most 4096");
    }
    if a.family == Family::Gpt2 && (a.moe.is_some() || a.mla.is_some() || a.sandwich_norms) {
        return err("experts, latent attention and sandwich norms need the Llama family");
    }
    if let Some(m) = a.mla {
        let dims = [m.kv_rank, m.rope_dim, m.nope_dim, m.v_dim];
        if dims.contains(&0) || dims.iter().chain([&m.q_rank]).any(|&d| d > 1 << 16) {
            return err("latent attention needs kv rank, rope, nope and value dims from 1 to 65536 (query rank 0 to 65536)");
        }
    }
    if let Some(m) = a.moe {
        if m.experts == 0 || m.top_k == 0 || m.top_k > m.experts || m.experts > 1 << 12 {
            return err("experts must be 1 to 4096 and top-k from 1 to the experts");
        }
        if m.expert_ffn == 0 || m.expert_ffn > 1 << 20 || m.shared_ffn > 1 << 20 {
            return err("expert FFN must be 1 to 2²⁰ (shared FFN up to 2²⁰)");
        }
        if m.first_dense >= a.layers {
            return err("dense layers before the first MoE layer must be fewer than the layers");
        }
        if !m.experts.is_multiple_of(p.ep) {
            return err("expert parallelism must divide the experts");
        }
        if cfg.lora_rank.is_some()
            && cfg.lora_targets.0 & (LoraTargets::GATE | LoraTargets::UP | LoraTargets::DOWN) != 0
        {
            return err(
                "LoRA on experts' MLPs is not modelled: choose attention targets (q, k, v, o)",
            );
        }
    }
    if cfg
        .capacity_factor
        .is_some_and(|c| !(c.is_finite() && (0.1..=64.0).contains(&c)))
    {
        return err("capacity factor must be from 0.1 to 64");
    }
    if p.ep == 0 || p.etp == 0 {
        return err("ep and etp must be at least 1");
    }
    if (p.ep > 1 || p.etp > 1) && a.moe.is_none() {
        return err("expert parallelism needs a mixture-of-experts model");
    }
    if !(p.dp * p.tp).is_multiple_of(p.ep * p.etp) {
        return err("ep × etp must divide dp × tp (experts are laid out over the data- and tensor-parallel GPUs)");
    }
    if cfg.seq == 0 || cfg.batch == 0 || cfg.micro_batch == Some(0) {
        return err("sequence length, batch and micro-batch must be at least 1");
    }
    if p.dp == 0 || p.tp == 0 || p.pp == 0 {
        return err("dp, tp and pp must be at least 1");
    }
    if p.zero > 3 {
        return err("ZeRO stage must be 0, 1, 2 or 3");
    }
    if !a.heads.is_multiple_of(p.tp) {
        return err("tensor parallelism must divide the attention heads");
    }
    if p.pp > a.layers {
        return err("pipeline stages cannot exceed the layers");
    }
    if !cfg.batch.is_multiple_of(cfg.micro() * p.dp) {
        return err("batch must be a multiple of micro-batch × dp");
    }
    Ok(())
}

/// The per-GPU budget for `cfg`: model states ([`states`]) plus the saved
/// activations ([`activations`]). With a 1F1B pipeline the first stage
/// holds p micro-batches of its L/p layers, the last stage one plus the
/// logits, and the larger of the two is reported (Narayanan et al. 2021).
pub fn estimate(cfg: &DetailedConfig) -> Result<DetailedBreakdown, DetailedError> {
    check(cfg)?;
    let par = &cfg.parallel;
    let ModelStates {
        params,
        grads,
        master_weights,
        optimizer_state,
    } = states::model_states(cfg);
    let saved = activations::saved(cfg);
    let (activations, logits) = if par.pp == 1 {
        (
            cfg.arch.layers as f64 * saved.per_layer + saved.embedding + saved.head + saved.logits,
            saved.logits,
        )
    } else {
        let layers = par.stage_layers(&cfg.arch);
        let first = layers * par.pp as f64 * saved.per_layer + saved.embedding;
        let last = layers * saved.per_layer + saved.head + saved.logits;
        if first >= last {
            (first, 0.0)
        } else {
            (last, saved.logits)
        }
    };
    let total = params + grads + master_weights + optimizer_state + activations;
    Ok(DetailedBreakdown {
        params,
        grads,
        master_weights,
        optimizer_state,
        activations,
        logits,
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_configs_are_refused() {
        let arch = preset("gpt2").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 1024, 8);
        cfg.parallel.tp = 5;
        assert!(estimate(&cfg)
            .unwrap_err()
            .to_string()
            .contains("tensor parallelism"));
        cfg.parallel.tp = 1;
        cfg.parallel.dp = 3;
        assert!(estimate(&cfg).is_err());
        cfg.parallel.dp = 1;
        cfg.parallel.zero = 4;
        assert!(estimate(&cfg).is_err());
    }
}
