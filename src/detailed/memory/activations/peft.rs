//! A layer under PEFT's LoRA with its base frozen, in stock `transformers`:
//! what the frozen base still keeps, the adapters' extras, and what the
//! first layer keeps when nothing before it requires grad.

use super::{mask_bytes, LayerActivations};
use crate::detailed::config::{AttentionKernel, DetailedConfig, Device};
use crate::detailed::memory::bytes::act_bytes;
use crate::detailed::memory::states::fp32_adapters;
use crate::detailed::model::{Family, LoraTargets as T};

/// Whether the PEFT LoRA model of [`peft_layer`] applies: the "hf"
/// profile, LoRA, a plain Llama-family layer (no experts, latent attention,
/// Gemma norms or Mamba-2 mixer). A hybrid's layer under LoRA is priced as
/// the trained layer keeps it, an upper bound: a frozen projection keeps
/// no input for its weight.
pub(super) fn peft_llama(cfg: &DetailedConfig) -> bool {
    let a = &cfg.arch;
    crate::detailed::memory::states::peft(cfg)
        && a.family == Family::Llama
        && a.moe.is_none()
        && a.mla.is_none()
        && a.ssm.is_none()
        && !a.sandwich_norms
}

/// A frozen RMSNorm over `rows` rows of width w: its weight needs no
/// gradient, so it keeps its fp32 input and reciprocal root, not its
/// output.
fn frozen_rms(w: f64, rows: f64) -> f64 {
    4.0 * rows * w + 4.0 * rows
}

/// One layer under PEFT's LoRA with the base frozen, for n tokens; `first`:
/// the first layer, whose input does not require grad (the embedding is
/// frozen). Read off `transformers` 5.x and PEFT, and checked against
/// `tests/fixtures/lora_measured.tsv`:
/// - frozen projections save nothing for their weights, so no projection
///   input is kept for the base; RMSNorm's weight is frozen, so it keeps its
///   fp32 input and reciprocal root but not its output;
/// - each adapter keeps its input in fp32 for A's gradient and A's r-wide
///   fp32 output for B's ([`adapters`]);
/// - the MLP keeps the gate output, the SiLU output and the up output, not
///   the down projection's input; attention keeps what it keeps in full
///   fine-tuning, less eager attention's output-projection input
///   ([`attention`]);
/// - nothing before the first adapter requires grad: in the first layer the
///   input norm keeps nothing, nor attention unless q, k or v is adapted,
///   nor the next norm and the MLP unless an adapter came before them.
pub(super) fn peft_layer(cfg: &DetailedConfig, n: f64, first: bool) -> LayerActivations {
    let a = &cfg.arch;
    let p = act_bytes(cfg);
    let (h, f) = (a.hidden as f64, a.ffn as f64);
    let (qd, kd) = (a.q_dim() as f64, a.kv_dim() as f64);
    let heads = a.heads as f64;
    let rg_in = !first;
    let rg_attn = rg_in
        || cfg.lora_targets.any(T::Q)
        || cfg.lora_targets.any(T::K)
        || cfg.lora_targets.any(T::V);
    let rg_mid = rg_attn || cfg.lora_targets.any(T::O);
    let mut replicated = 0.0;
    if rg_in {
        replicated += frozen_rms(h, n);
    }
    if rg_mid {
        replicated += frozen_rms(h, n);
    }
    let rg_down = rg_mid || cfg.lora_targets.any(T::GATE) || cfg.lora_targets.any(T::UP);
    let adapters = adapters(cfg, n, [rg_in, rg_attn, rg_mid, rg_down]);
    let qk_norm = if a.qk_norm && rg_attn {
        frozen_rms(qd / heads, n * heads)
            + frozen_rms(kd / a.kv_heads as f64, n * a.kv_heads as f64)
    } else {
        0.0
    };
    let (attn, scores) = attention(cfg, n, first, rg_attn);
    let mlp = if rg_mid || cfg.lora_targets.any(T::GATE) || cfg.lora_targets.any(T::UP) {
        3.0 * n * f * p
    } else {
        0.0
    };
    LayerActivations {
        replicated,
        sharded: attn + qk_norm + mlp + adapters,
        scores,
        experts: 0.0,
        experts_ffn: 0.0,
    }
}

/// The adapters' saved tensors in one layer for n tokens; `rg`: whether the
/// input of each group of projections requires grad (q, k, v; o; gate, up;
/// down), attention requiring grad when o's does. Each adapter keeps A's r-wide output for B's
/// gradient, and its input for A's, in the adapters' dtype (PEFT's
/// `Linear.forward`: `x = self._cast_input_dtype(x, lora_A.weight.dtype)`,
/// then `lora_B(lora_A(dropout(x)))`; torchtune's `LoRALinear.forward`:
/// `self.lora_a(self.dropout(x))`):
/// - fp32 adapters in a 16-bit model: a cast copy of the input per adapter;
/// - adapters in the model's dtype: the one input tensor its group of
///   projections shares (no copy; the output projection's, under SDPA,
///   is SDPA's own saved output);
/// - with LoRA dropout (p > 0), each adapter's own dropped-out input and,
///   where that input requires grad, its mask (`native_dropout`: bool on
///   CUDA; on the CPU `input * noise`, the noise in the input's dtype; a
///   first layer's q, k and v inputs need no grad, measured) instead.
fn adapters(cfg: &DetailedConfig, n: f64, rg: [bool; 4]) -> f64 {
    let rg_attn = rg[1];
    let a = &cfg.arch;
    let p = act_bytes(cfg);
    let (h, f) = (a.hidden as f64, a.ffn as f64);
    let od = a.o_dim() as f64;
    let r = cfg.lora_rank.unwrap_or(0) as f64;
    let t = cfg.lora_targets;
    let count = |bits: u16| u64::from((t.0 & bits).count_ones()) as f64;
    let ab = if fp32_adapters(cfg) { 4.0 } else { p };
    let same_dtype = ab == p;
    let dropout = cfg.lora_dropout > 0.0;
    let mask = match cfg.device {
        Device::Cuda => 1.0,
        Device::Cpu => ab,
    };
    let eager = cfg.attention == AttentionKernel::Eager;
    let mut adapters = count(127) * n * r * ab;
    for ((bits, width), rg) in [
        (T::Q | T::K | T::V, h),
        (T::O, od),
        (T::GATE | T::UP, h),
        (T::DOWN, f),
    ]
    .into_iter()
    .zip(rg)
    {
        let k = count(bits);
        let mask = if rg { mask } else { 0.0 };
        // The output projection's input is SDPA's own saved output.
        let shared_with_sdpa = bits == T::O && same_dtype && !eager && rg_attn;
        adapters += if k == 0.0 {
            0.0
        } else if dropout {
            k * n * width * (ab + mask)
        } else if shared_with_sdpa {
            0.0
        } else if same_dtype {
            n * width * ab
        } else {
            k * n * width * ab
        };
    }
    adapters
}

/// The adapters outside the layers for n tokens: (the embedding's, the
/// output layer's). PEFT's `Embedding` keeps A's r-wide lookup
/// (`after_A = self._embed(x, lora_embedding_A.T)`) for B's gradient;
/// its `Linear` on the output layer keeps what a layer's adapter keeps
/// ([`adapters`]' rules): its input (the final norm's output, a cast copy
/// with fp32 adapters in a 16-bit model; with dropout its own dropped-out
/// copy and mask) and A's output.
pub(super) fn outer_adapters(cfg: &DetailedConfig, n: f64) -> (f64, f64) {
    let p = act_bytes(cfg);
    let h = cfg.arch.hidden as f64;
    let r = cfg.lora_rank.unwrap_or(0) as f64;
    let ab = if fp32_adapters(cfg) { 4.0 } else { p };
    let t = cfg.lora_targets;
    let embed = if t.embed() { n * r * ab } else { 0.0 };
    let lm_head = if !t.lm_head() {
        0.0
    } else if cfg.lora_dropout > 0.0 {
        let mask = match cfg.device {
            Device::Cuda => 1.0,
            Device::Cpu => ab,
        };
        n * h * (ab + mask) + n * r * ab
    } else {
        n * h * ab + n * r * ab
    };
    (embed, lm_head)
}

/// Attention's saved tensors under the frozen base, for n tokens:
/// (sharded, the a·s² scores); nothing unless it requires grad
/// (`rg_attn`). Eager attention keeps no output-projection input, and of
/// q, k and v only what another operand's gradient needs.
fn attention(cfg: &DetailedConfig, n: f64, first: bool, rg_attn: bool) -> (f64, f64) {
    let a = &cfg.arch;
    let p = act_bytes(cfg);
    let (qd, kd, vd, od) = (
        a.q_dim() as f64,
        a.kv_dim() as f64,
        a.v_dim() as f64,
        a.o_dim() as f64,
    );
    let heads = a.heads as f64;
    let s = cfg.seq as f64;
    let b = n / s;
    let scores_n = heads * s * s * b;
    let eager = cfg.attention == AttentionKernel::Eager;
    let drop = cfg.dropout;
    let mask = mask_bytes(cfg);
    // Which of q, k, v require grad: all after the first layer; in it, the
    // adapted ones. A matmul keeps an operand only for the other's gradient.
    let (q_rg, k_rg, v_rg) = if first {
        (
            cfg.lora_targets.any(T::Q),
            cfg.lora_targets.any(T::K),
            cfg.lora_targets.any(T::V),
        )
    } else {
        (true, true, true)
    };
    if !rg_attn {
        (0.0, 0.0)
    } else if eager {
        let cast = if p != 4.0 && !drop { scores_n * p } else { 0.0 };
        let dropout = if drop { scores_n * (mask + p) } else { 0.0 };
        let scores_rg = q_rg || k_rg;
        let q = if k_rg { qd } else { 0.0 };
        let k = if q_rg { qd } else { 0.0 };
        let v = if scores_rg { qd * vd / kd } else { 0.0 };
        let kept = if scores_rg {
            4.0 * scores_n + cast + dropout
        } else if v_rg {
            scores_n * p
        } else {
            0.0
        };
        ((q + k + v) * n * p, kept)
    } else {
        ((qd + kd + vd + od) * n * p + 4.0 * heads * s * b, 0.0)
    }
}
