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
//! Two implementation profiles:
//! - [`Profile::Fused`]: Megatron-style kernels, Korthikanti et al. 2022,
//!   "Reducing Activation Recomputation in Large Transformer Models", §4
//!   (Eq. 1–5), generalised to SwiGLU and grouped-query attention.
//! - [`Profile::Hf`]: stock Hugging Face `transformers` as PyTorch's autograd
//!   actually keeps it (RMSNorm's fp32 upcast, GPT-2's tanh GELU written in
//!   Python, fp32 softmax and loss), read off `transformers` 5.x and checked
//!   byte for byte against `tests/fixtures/hf_measured.tsv`.

use std::fmt;

/// Transformer family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// GPT-2: LayerNorm, GELU MLP (4h), biases, learned positions, tied
    /// embeddings.
    Gpt2,
    /// Llama: RMSNorm, SwiGLU, RoPE, grouped-query attention, untied
    /// embeddings (Qwen2.5 adds q/k/v biases and may tie).
    Llama,
}

/// A model's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Architecture {
    /// GPT-2 or Llama style.
    pub family: Family,
    /// Transformer layers, L.
    pub layers: u64,
    /// Hidden size, h.
    pub hidden: u64,
    /// Attention heads, a.
    pub heads: u64,
    /// Key/value heads (grouped-query attention); equals `heads` for MHA.
    pub kv_heads: u64,
    /// MLP inner size (4h for GPT-2; the SwiGLU intermediate size for Llama).
    pub ffn: u64,
    /// Vocabulary size, V.
    pub vocab: u64,
    /// Learned position embeddings (GPT-2's n_positions); 0 for RoPE.
    pub positions: u64,
    /// Output layer shares the input embedding.
    pub tied_embeddings: bool,
    /// Biases on the q, k, v projections (Qwen2.5).
    pub qkv_bias: bool,
}

impl Architecture {
    /// A GPT-2 style model (ffn = 4h, 1024 positions, tied embeddings).
    pub const fn gpt2(layers: u64, hidden: u64, heads: u64, vocab: u64) -> Self {
        Self {
            family: Family::Gpt2,
            layers,
            hidden,
            heads,
            kv_heads: heads,
            ffn: 4 * hidden,
            vocab,
            positions: 1024,
            tied_embeddings: true,
            qkv_bias: true,
        }
    }

    /// A Llama style model (untied embeddings, no biases).
    pub const fn llama(
        layers: u64,
        hidden: u64,
        heads: u64,
        kv_heads: u64,
        ffn: u64,
        vocab: u64,
    ) -> Self {
        Self {
            family: Family::Llama,
            layers,
            hidden,
            heads,
            kv_heads,
            ffn,
            vocab,
            positions: 0,
            tied_embeddings: false,
            qkv_bias: false,
        }
    }

    /// Width of one head, h / a.
    pub fn head_dim(&self) -> u64 {
        self.hidden / self.heads
    }

    /// Width of K (and of V): kv_heads · head_dim.
    pub fn kv_dim(&self) -> u64 {
        self.kv_heads * self.head_dim()
    }

    /// Parameters of one layer.
    fn layer_params(&self) -> u64 {
        let (h, f, kv) = (self.hidden, self.ffn, self.kv_dim());
        match self.family {
            // ln_1, c_attn (h → 3h, bias), c_proj (bias), ln_2, c_fc (bias), c_proj (bias).
            Family::Gpt2 => {
                2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * h + (h * f + f) + (f * h + h)
            }
            // q, k, v, o; gate, up, down; two RMSNorm weights.
            Family::Llama => {
                let bias = if self.qkv_bias { h + 2 * kv } else { 0 };
                h * h + 2 * h * kv + h * h + bias + 3 * h * f + 2 * h
            }
        }
    }

    /// Parameters of everything outside the layers.
    fn outer_params(&self) -> u64 {
        let (h, v) = (self.hidden, self.vocab);
        let output = if self.tied_embeddings { 0 } else { v * h };
        match self.family {
            Family::Gpt2 => v * h + self.positions * h + 2 * h + output,
            Family::Llama => v * h + h + output,
        }
    }

    /// Total parameters (Radford et al. 2019, GPT-2; Touvron et al. 2023,
    /// Llama 2, Table 1 and the released configs). Shared tensors count once.
    pub fn params(&self) -> u64 {
        self.layers * self.layer_params() + self.outer_params()
    }

    /// Number of parameter tensors (PyTorch's AdamW keeps a 4-byte `step`
    /// tensor for each).
    pub fn param_tensors(&self) -> u64 {
        match self.family {
            // 12 per layer (6 weights, 6 biases); wte, wpe; ln_f weight and bias.
            Family::Gpt2 => 12 * self.layers + 4 + u64::from(!self.tied_embeddings),
            // 9 per layer (+3 q/k/v biases); embedding, final norm, output.
            Family::Llama => {
                (9 + if self.qkv_bias { 3 } else { 0 }) * self.layers
                    + 2
                    + u64::from(!self.tied_embeddings)
            }
        }
    }

    /// Input and output widths of one adaptable projection.
    fn projection(&self, target: u8) -> (u64, u64) {
        let (h, kv, f) = (self.hidden, self.kv_dim(), self.ffn);
        match target {
            LoraTargets::K | LoraTargets::V => (h, kv),
            LoraTargets::GATE | LoraTargets::UP => (h, f),
            LoraTargets::DOWN => (f, h),
            _ => (h, h),
        }
    }

    /// Parameters that LoRA of rank `r` adds on `targets` (Hu et al. 2021,
    /// "LoRA", §4: A is r × in, B is out × r, per adapted projection).
    pub fn lora_params(&self, rank: u64, targets: LoraTargets) -> u64 {
        let per_layer: u64 = targets
            .iter()
            .map(|t| {
                let (i, o) = self.projection(t);
                rank * (i + o)
            })
            .sum();
        self.layers * per_layer
    }
}

/// Which projections LoRA adapts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoraTargets(pub u8);

impl LoraTargets {
    /// Query projection.
    pub const Q: u8 = 1;
    /// Key projection.
    pub const K: u8 = 2;
    /// Value projection.
    pub const V: u8 = 4;
    /// Attention output projection.
    pub const O: u8 = 8;
    /// SwiGLU gate projection (Llama only).
    pub const GATE: u8 = 16;
    /// MLP up projection (GPT-2's c_fc).
    pub const UP: u8 = 32;
    /// MLP down projection (GPT-2's c_proj).
    pub const DOWN: u8 = 64;
    const NAMES: [(&'static str, u8); 7] = [
        ("q", Self::Q),
        ("k", Self::K),
        ("v", Self::V),
        ("o", Self::O),
        ("gate", Self::GATE),
        ("up", Self::UP),
        ("down", Self::DOWN),
    ];

    /// The targets one by one.
    pub fn iter(self) -> impl Iterator<Item = u8> {
        Self::NAMES
            .into_iter()
            .map(|(_, bit)| bit)
            .filter(move |bit| self.0 & bit != 0)
    }

    /// How many projections per layer.
    pub fn count(self) -> u64 {
        u64::from(self.0.count_ones())
    }

    /// `q,v` style.
    pub fn names(self) -> String {
        let names: Vec<&str> = Self::NAMES
            .iter()
            .filter(|(_, bit)| self.0 & bit != 0)
            .map(|(n, _)| *n)
            .collect();
        names.join(",")
    }
}

impl Default for LoraTargets {
    /// q and v, as Hu et al. 2021 (§7.1) and PEFT's default for Llama.
    fn default() -> Self {
        Self(Self::Q | Self::V)
    }
}

impl std::str::FromStr for LoraTargets {
    type Err = String;
    /// `q,v`, `q,k,v,o,gate,up,down` or `all`.
    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("all") {
            return Ok(Self(127));
        }
        let mut bits = 0;
        for part in s.split(',').map(str::trim) {
            let bit = Self::NAMES
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(part))
                .map(|(_, b)| *b)
                .ok_or_else(|| {
                    format!("LoRA targets are q, k, v, o, gate, up, down or all (got '{part}')")
                })?;
            bits |= bit;
        }
        Ok(Self(bits))
    }
}

/// A model with its published configuration.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    /// Short name for `--model`.
    pub name: &'static str,
    /// Its shape.
    pub arch: Architecture,
}

/// Qwen2.5: Llama's shape with q/k/v biases, embeddings tied or not.
const fn qwen(
    layers: u64,
    hidden: u64,
    heads: u64,
    kv_heads: u64,
    ffn: u64,
    vocab: u64,
    tied: bool,
) -> Architecture {
    Architecture {
        tied_embeddings: tied,
        qkv_bias: true,
        ..Architecture::llama(layers, hidden, heads, kv_heads, ffn, vocab)
    }
}

/// GPT-2's released sizes share the vocabulary.
const fn gpt2(layers: u64, hidden: u64, heads: u64) -> Architecture {
    Architecture::gpt2(layers, hidden, heads, 50257)
}

/// Published configurations (the models' `config.json`).
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "gpt2",
        arch: gpt2(12, 768, 12),
    },
    Preset {
        name: "gpt2-medium",
        arch: gpt2(24, 1024, 16),
    },
    Preset {
        name: "gpt2-large",
        arch: gpt2(36, 1280, 20),
    },
    Preset {
        name: "gpt2-xl",
        arch: gpt2(48, 1600, 25),
    },
    Preset {
        name: "llama-2-7b",
        arch: Architecture::llama(32, 4096, 32, 32, 11008, 32000),
    },
    Preset {
        name: "llama-2-13b",
        arch: Architecture::llama(40, 5120, 40, 40, 13824, 32000),
    },
    Preset {
        name: "llama-2-70b",
        arch: Architecture::llama(80, 8192, 64, 8, 28672, 32000),
    },
    Preset {
        name: "llama-3.1-8b",
        arch: Architecture::llama(32, 4096, 32, 8, 14336, 128256),
    },
    Preset {
        name: "llama-3.1-70b",
        arch: Architecture::llama(80, 8192, 64, 8, 28672, 128256),
    },
    Preset {
        name: "llama-3.1-405b",
        arch: Architecture::llama(126, 16384, 128, 8, 53248, 128256),
    },
    Preset {
        name: "mistral-7b",
        arch: Architecture::llama(32, 4096, 32, 8, 14336, 32000),
    },
    Preset {
        name: "qwen2.5-0.5b",
        arch: qwen(24, 896, 14, 2, 4864, 151936, true),
    },
    Preset {
        name: "qwen2.5-7b",
        arch: qwen(28, 3584, 28, 4, 18944, 152064, false),
    },
    Preset {
        name: "qwen2.5-72b",
        arch: qwen(80, 8192, 64, 8, 29568, 152064, false),
    },
];

/// The preset called `name` (case-insensitive).
pub fn preset(name: &str) -> Option<Preset> {
    PRESETS
        .iter()
        .copied()
        .find(|p| p.name.eq_ignore_ascii_case(name))
}

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

choices!(Family, "architecture", "gpt2" => Family::Gpt2, "llama" => Family::Llama);
choices!(Precision, "precision", "mixed" => Precision::Mixed, "bf16" => Precision::Bf16, "fp32" => Precision::Fp32);
choices!(Optimizer, "optimizer", "adamw" => Optimizer::AdamW, "sgd" => Optimizer::Sgd,
    "sgd-momentum" => Optimizer::SgdMomentum, "adam8bit" => Optimizer::Adam8bit);
choices!(AttentionKernel, "attention", "eager" => AttentionKernel::Eager, "flash" => AttentionKernel::Flash);
choices!(Recompute, "recompute", "none" => Recompute::None, "selective" => Recompute::Selective,
    "full" => Recompute::Full);
choices!(Profile, "implementation", "fused" => Profile::Fused, "hf" => Profile::Hf);
choices!(Device, "device", "cuda" => Device::Cuda, "cpu" => Device::Cpu);

/// Parallelism, per GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parallelism {
    /// Data-parallel replicas, N_d.
    pub dp: u64,
    /// ZeRO stage 0–3 (Rajbhandari et al. 2020, §5).
    pub zero: u8,
    /// Tensor-parallel degree, t (Shoeybi et al. 2019).
    pub tp: u64,
    /// Sequence parallelism with tensor parallelism (Korthikanti §4.2.2).
    pub sp: bool,
    /// Pipeline stages, p (1F1B schedule).
    pub pp: u64,
}

impl Default for Parallelism {
    fn default() -> Self {
        Self {
            dp: 1,
            zero: 0,
            tp: 1,
            sp: false,
            pp: 1,
        }
    }
}

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

/// Activation bytes of one layer for one micro-batch, split the way tensor
/// and sequence parallelism split them (Korthikanti §4.2).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct LayerActivations {
    /// Kept whole on every tensor-parallel rank unless sequence parallel:
    /// norm inputs and statistics, block inputs, block-output dropout masks.
    replicated: f64,
    /// Split across tensor-parallel ranks: Q, K, V, projections' inputs, MLP.
    sharded: f64,
    /// The a·s² terms (scores, their mask and dropout output), sharded;
    /// selective recomputation drops them.
    scores: f64,
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
    if !a.hidden.is_multiple_of(a.heads) {
        return err("hidden size must be a multiple of the heads");
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

/// Bytes per activation value: 4 in fp32, 2 otherwise.
fn act_bytes(cfg: &DetailedConfig) -> f64 {
    if cfg.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    }
}

/// One layer's activations for `b` sequences.
fn layer_activations(cfg: &DetailedConfig, b: f64) -> LayerActivations {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let (h, f, heads) = (a.hidden as f64, a.ffn as f64, a.heads as f64);
    let kvd = a.kv_dim() as f64;
    let n = s * b;
    let p = act_bytes(cfg);
    let nh = n * h;
    let scores_n = heads * s * s * b;
    let lse = 4.0 * heads * s * b;
    let drop = cfg.dropout;
    match cfg.profile {
        // Korthikanti §4.1: 34·s·b·h + 5·a·s²·b at 16 bits, term by term.
        Profile::Fused => {
            let mask = if drop { 1.0 } else { 0.0 };
            // Two norm inputs, QKV input, MLP input, two output dropout masks.
            let replicated = 4.0 * nh * p + 2.0 * nh * mask;
            // Q and K, V, out-projection input.
            let qkv = nh * p + 2.0 * n * kvd * p + nh * p;
            let mlp = match a.family {
                // GELU input and second linear input.
                Family::Gpt2 => 2.0 * n * f * p,
                // Gate out (SiLU input), SiLU out, up out, down input.
                Family::Llama => 4.0 * n * f * p,
            };
            let (attn_extra, scores) = match cfg.attention {
                // Softmax output, dropout mask (1 byte) and dropout output.
                AttentionKernel::Eager => (
                    0.0,
                    scores_n * p + if drop { scores_n * (1.0 + p) } else { 0.0 },
                ),
                // Log-sum-exp; the output is the out-projection input.
                AttentionKernel::Flash => (lse, 0.0),
            };
            LayerActivations {
                replicated,
                sharded: qkv + mlp + attn_extra,
                scores,
            }
        }
        Profile::Hf => {
            let mask = match (drop, cfg.device) {
                (false, _) => 0.0,
                (true, Device::Cuda) => 1.0,
                (true, Device::Cpu) => p,
            };
            // PyTorch's SDPA on the CPU has no kernel with dropout and falls
            // back to its math path, which computes in fp32: it keeps q, k
            // (repeated to all heads) and v, the softmax, the dropout mask
            // and the dropout output, all at 4 bytes, for either family.
            let math_fallback =
                cfg.attention == AttentionKernel::Flash && drop && cfg.device == Device::Cpu;
            if math_fallback {
                let (replicated, mlp) = match a.family {
                    Family::Gpt2 => (
                        2.0 * (nh * p + 2.0 * n * p) + 2.0 * nh * p + 2.0 * nh * mask,
                        5.0 * n * f * p,
                    ),
                    Family::Llama => (
                        2.0 * (4.0 * nh + 4.0 * n + nh * p) + 2.0 * nh * p,
                        4.0 * n * f * p,
                    ),
                };
                return LayerActivations {
                    replicated,
                    sharded: 3.0 * nh * 4.0 + nh * p + mlp,
                    scores: 3.0 * scores_n * 4.0,
                };
            }
            let eager = cfg.attention == AttentionKernel::Eager;
            match a.family {
                Family::Gpt2 => {
                    // ln_1 and ln_2: input, mean and rstd (in the dtype);
                    // c_attn and c_fc inputs; resid and MLP dropout masks.
                    let replicated = 2.0 * (nh * p + 2.0 * n * p) + 2.0 * nh * p + 2.0 * nh * mask;
                    // NewGELU in Python keeps 4 tensors of n·F; c_proj input n·F.
                    let mlp = 5.0 * n * f * p;
                    let (attn, scores) = if eager {
                        // q, kᵀ, v copies and c_proj input; softmax, mask, dropout out.
                        // With one sequence, matmul folds q's heads into the
                        // batch as a view, so it keeps the whole fused qkv
                        // output (3·n·h) instead of a copy of q.
                        let q = if b == 1.0 { 3.0 * nh * p } else { nh * p };
                        let scores = scores_n * p + if drop { scores_n * (mask + p) } else { 0.0 };
                        (q + 3.0 * nh * p, scores)
                    } else {
                        // q copy, the fused qkv storage, output (= c_proj
                        // input), one more n·h copy, log-sum-exp.
                        (6.0 * nh * p + lse, 0.0)
                    };
                    LayerActivations {
                        replicated,
                        sharded: attn + mlp,
                        scores,
                    }
                }
                Family::Llama => {
                    // RMSNorm upcasts: fp32 input, fp32 rsqrt per token, the
                    // normalised output in the dtype; ×2, plus the two
                    // projection inputs (q/k/v and gate/up).
                    let rms = 4.0 * nh + 4.0 * n + nh * p;
                    let replicated = 2.0 * rms + 2.0 * nh * p;
                    let mlp = 4.0 * n * f * p;
                    let (attn, scores) = if eager {
                        // q, repeated k and v (a heads each), o_proj input.
                        // Softmax runs in fp32; its output is cast back
                        // (a second copy) unless dropout or fp32.
                        let cast = if p != 4.0 && !drop { scores_n * p } else { 0.0 };
                        let dropout = if drop { scores_n * (mask + p) } else { 0.0 };
                        (4.0 * nh * p, 4.0 * scores_n + cast + dropout)
                    } else {
                        // q, k and v at their own widths, output (= o_proj
                        // input), log-sum-exp.
                        (2.0 * nh * p + 2.0 * n * kvd * p + lse, 0.0)
                    };
                    LayerActivations {
                        replicated,
                        sharded: attn + mlp,
                        scores,
                    }
                }
            }
        }
    }
}

/// Bytes outside the layers for `b` sequences.
#[derive(Clone, Copy, Debug, PartialEq)]
struct OuterActivations {
    /// Before the first layer (first pipeline stage): embedding dropout
    /// mask, position ids.
    embedding: f64,
    /// After the last layer (last stage): final norm, output-layer input,
    /// loss bookkeeping.
    head: f64,
    /// The loss's fp32 log-probabilities, 4·s·b·V (Korthikanti §4.3).
    logits: f64,
}

fn outer_activations(cfg: &DetailedConfig, b: f64) -> OuterActivations {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let n = s * b;
    let h = a.hidden as f64;
    let p = act_bytes(cfg);
    let logits = 4.0 * n * a.vocab as f64;
    let (embedding, head) = match cfg.profile {
        // Embedding dropout mask; final norm input, output-layer input.
        Profile::Fused => (if cfg.dropout { n * h } else { 0.0 }, 2.0 * n * h * p),
        Profile::Hf => {
            let mask = match (cfg.dropout, cfg.device) {
                (false, _) => 0.0,
                (true, Device::Cuda) => 1.0,
                (true, Device::Cpu) => p,
            };
            // Labels (int64) and the loss's fp32 total weight.
            let loss = 8.0 * n + 4.0;
            match a.family {
                // Position ids (int64, one row) and embedding dropout mask;
                // ln_f input and statistics, lm_head input.
                Family::Gpt2 => (
                    8.0 * s + n * h * mask,
                    (n * h * p + 2.0 * n * p) + n * h * p + loss,
                ),
                // RoPE cos and sin (shared by all layers); final RMSNorm,
                // lm_head input.
                Family::Llama => {
                    let rope = 2.0 * s * a.head_dim() as f64 * p;
                    let rms = 4.0 * n * h + 4.0 * n + n * h * p;
                    (rope, rms + n * h * p + loss)
                }
            }
        }
    };
    OuterActivations {
        embedding,
        head,
        logits,
    }
}

/// The per-GPU budget for `cfg`.
///
/// Model states per GPU follow Rajbhandari et al. 2020 ("ZeRO", §5.1, Fig. 1):
/// weights, gradients and optimizer state (with the fp32 master copy, K = 12
/// for mixed-precision Adam) divided by N_d from stages 3, 2 and 1 on; tensor
/// and pipeline parallelism split the model first (Shoeybi et al. 2019;
/// Narayanan et al. 2021). Activations per GPU follow Korthikanti et al.
/// 2022, §4.2: tensor parallelism divides the sharded terms by t, sequence
/// parallelism the rest too; with a 1F1B pipeline the first stage holds p
/// micro-batches of its L/p layers, the last stage one plus the logits, and
/// the larger of the two is reported.
pub fn estimate(cfg: &DetailedConfig) -> Result<DetailedBreakdown, DetailedError> {
    check(cfg)?;
    let a = &cfg.arch;
    let par = &cfg.parallel;
    let (tp, pp, dp) = (par.tp as f64, par.pp as f64, par.dp as f64);

    // Model states.
    let n_all = a.params() as f64;
    let n_trainable = match cfg.lora_rank {
        Some(r) => a.lora_params(r, cfg.lora_targets) as f64,
        None => n_all,
    };
    let n_total = n_all
        + if cfg.lora_rank.is_some() {
            n_trainable
        } else {
            0.0
        };
    let weight_bytes = if cfg.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    let grad_bytes = if cfg.precision == Precision::Fp32 || cfg.fp32_grads {
        4.0
    } else {
        2.0
    };
    let master_bytes = if cfg.precision == Precision::Mixed {
        4.0
    } else {
        0.0
    };
    let state_bytes = match (cfg.optimizer, cfg.precision) {
        (Optimizer::AdamW, Precision::Bf16) => 4.0,
        (Optimizer::AdamW, _) => 8.0,
        (Optimizer::Sgd, _) => 0.0,
        (Optimizer::SgdMomentum, Precision::Bf16) => 2.0,
        (Optimizer::SgdMomentum, _) => 4.0,
        (Optimizer::Adam8bit, _) => 2.0 + 2.0 * 4.0 / 2048.0,
    };
    // PyTorch's AdamW keeps a 0-d fp32 `step` per parameter tensor.
    let step_tensors = if cfg.profile == Profile::Hf && cfg.optimizer == Optimizer::AdamW {
        let tensors = match cfg.lora_rank {
            Some(_) => 2 * cfg.lora_targets.count() * a.layers,
            None => a.param_tensors(),
        };
        4.0 * tensors as f64
    } else {
        0.0
    };
    let split = tp * pp;
    let zero_div = |stage: u8| if par.zero >= stage { dp } else { 1.0 };
    let params = n_total * weight_bytes / split / zero_div(3);
    let grads = n_trainable * grad_bytes / split / zero_div(2);
    let master_weights = n_trainable * master_bytes / split / zero_div(1);
    let optimizer_state = (n_trainable * state_bytes + step_tensors) / split / zero_div(1);

    // Activations.
    let micro = cfg.micro() as f64;
    let layer = layer_activations(cfg, micro);
    let p = act_bytes(cfg);
    let layer_bytes = match cfg.recompute {
        // Only the layer input is kept (Korthikanti §5: 2·s·b·h at 16 bits).
        Recompute::Full => {
            let input = cfg.seq as f64 * micro * a.hidden as f64 * p;
            if par.sp {
                input / tp
            } else {
                input
            }
        }
        _ => {
            let scores = if cfg.recompute == Recompute::Selective {
                0.0
            } else {
                layer.scores
            };
            let sharded = (layer.sharded + scores) / tp;
            let replicated = if par.sp {
                layer.replicated / tp
            } else {
                layer.replicated
            };
            sharded + replicated
        }
    };
    // LoRA keeps each adapter's r-wide intermediate (its input is the
    // projection's, already kept).
    let lora = cfg.lora_rank.map_or(0.0, |r| {
        cfg.lora_targets.count() as f64 * cfg.seq as f64 * micro * r as f64 * p
    });
    let per_layer = layer_bytes + lora;
    let outer = outer_activations(cfg, micro);
    let sp_div = if par.sp { tp } else { 1.0 };
    let (embedding, head, logits) = (
        outer.embedding / sp_div,
        outer.head / sp_div,
        outer.logits / tp,
    );
    let (activations, logits) = if par.pp == 1 {
        (
            a.layers as f64 * per_layer + embedding + head + logits,
            logits,
        )
    } else {
        let layers_per_stage = (a.layers as f64 / pp).ceil();
        let first = layers_per_stage * pp * per_layer + embedding;
        let last = layers_per_stage * per_layer + head + logits;
        if first >= last {
            (first, 0.0)
        } else {
            (last, logits)
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
    fn parameter_counts_match_published_vectors() {
        // VECTORS.md, "Parameter counts from architecture".
        let cases = [
            ("gpt2", 124_439_808u64),
            ("gpt2-xl", 1_557_611_200),
            ("llama-2-7b", 6_738_415_616),
            ("llama-3.1-8b", 8_030_261_248),
        ];
        for (name, want) in cases {
            assert_eq!(preset(name).unwrap().arch.params(), want, "{name}");
        }
        // Published sizes of the others, to 1 %.
        let rough = [
            ("gpt2-medium", 355e6),
            ("gpt2-large", 774e6),
            ("llama-2-13b", 13.0e9),
            ("llama-2-70b", 69.0e9),
            ("llama-3.1-70b", 70.6e9),
            ("llama-3.1-405b", 405.9e9),
            ("mistral-7b", 7.24e9),
            ("qwen2.5-0.5b", 0.494e9),
            ("qwen2.5-7b", 7.62e9),
            ("qwen2.5-72b", 72.7e9),
        ];
        for (name, want) in rough {
            let got = preset(name).unwrap().arch.params() as f64;
            assert!((got / want - 1.0).abs() < 0.01, "{name}: {got}");
        }
    }

    #[test]
    fn gpt3_layer_matches_korthikanti() {
        // VECTORS.md: GPT-3 175B, s 2048, h 12288, a 96, b 1: 2,868,903,936
        // bytes per layer; selective recompute removes 70.2 % of it.
        let arch = Architecture::gpt2(96, 12288, 96, 50257);
        let cfg = DetailedConfig::new(arch, 2048, 1);
        let l = layer_activations(&cfg, 1.0);
        let full = l.replicated + l.sharded + l.scores;
        assert_eq!(full, 2_868_903_936.0);
        assert!(
            (l.scores / full - 0.702).abs() < 0.0005,
            "{}",
            l.scores / full
        );
    }

    #[test]
    fn tensor_and_sequence_parallel_follow_korthikanti() {
        // s·b·h·(10 + 24/t + 5·a·s/(h·t)) without SP; /t with SP.
        let arch = Architecture::gpt2(96, 12288, 96, 50257);
        let mut cfg = DetailedConfig::new(arch, 2048, 1);
        cfg.parallel.tp = 8;
        let sbh = 2048.0 * 12288.0;
        let a_s_h = 96.0 * 2048.0 / 12288.0;
        let layer = |cfg: &DetailedConfig| {
            let l = layer_activations(cfg, 1.0);
            let t = cfg.parallel.tp as f64;
            let rep = if cfg.parallel.sp {
                l.replicated / t
            } else {
                l.replicated
            };
            rep + (l.sharded + l.scores) / t
        };
        assert_eq!(layer(&cfg), sbh * (10.0 + 24.0 / 8.0 + 5.0 * a_s_h / 8.0));
        cfg.parallel.sp = true;
        assert_eq!(layer(&cfg), sbh / 8.0 * (34.0 + 5.0 * a_s_h));
    }

    #[test]
    fn zero_stages_match_the_paper() {
        // Rajbhandari et al. 2020, Fig. 1: Ψ = 7.5 B, K = 12, N_d = 64 → 120,
        // 31.4, 16.6, 1.9 GB per GPU of model states.
        let arch = Architecture::llama(32, 4096, 32, 32, 11008, 32000);
        let psi = 7.5e9;
        let mut cfg = DetailedConfig::new(arch, 2048, 64);
        cfg.parallel.dp = 64;
        for (stage, want) in [(0u8, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)] {
            cfg.parallel.zero = stage;
            let b = estimate(&cfg).unwrap();
            let states = b.params + b.grads + b.master_weights + b.optimizer_state;
            let per_psi = states / arch.params() as f64;
            let gb = per_psi * psi / 1e9;
            assert!((gb - want).abs() < 0.05, "stage {stage}: {gb}");
        }
    }

    #[test]
    fn lora_freezes_the_base() {
        let arch = preset("llama-2-7b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 2048, 1);
        cfg.lora_rank = Some(8);
        let b = estimate(&cfg).unwrap();
        let lora = arch.lora_params(8, LoraTargets::default()) as f64; // 32 · 8 · (8192 + 8192)
        assert_eq!(lora, 4_194_304.0);
        // All seven projections of Llama-2-7B at rank 8: 32 · 8 · (4 · 8192 + 3 · 15104).
        let all: LoraTargets = "all".parse().unwrap();
        assert_eq!(arch.lora_params(8, all), 32 * 8 * (4 * 8192 + 3 * 15104));
        assert_eq!(
            "q,v".parse::<LoraTargets>().unwrap(),
            LoraTargets::default()
        );
        assert!("q,x".parse::<LoraTargets>().is_err());
        assert_eq!(b.grads, lora * 2.0);
        assert_eq!(b.optimizer_state, lora * 8.0);
        assert_eq!(b.params, (arch.params() as f64 + lora) * 2.0);
    }

    #[test]
    fn flash_attention_removes_the_s_squared_term() {
        let arch = preset("llama-3.1-8b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 8192, 1);
        let eager = estimate(&cfg).unwrap().activations;
        cfg.attention = AttentionKernel::Flash;
        let flash = estimate(&cfg).unwrap().activations;
        assert!(flash < eager / 3.0, "{flash} vs {eager}");
    }

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
