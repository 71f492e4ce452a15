//! The "hf" profile's layer: stock Hugging Face `transformers` as PyTorch's
//! autograd keeps it, read off `transformers` 5.x and checked byte for byte
//! against `tests/fixtures/hf_measured.tsv`: GPT-2's block, the Llama
//! family's (norms, q/k norms, latent attention, each attention kernel) and
//! the CPU's math fallback.

use super::moe::{moe_ffn_bytes, moe_mlp};
use super::{gemma_rms, liger_rms, mask_bytes, rms, LayerActivations};
use crate::detailed::config::{AttentionKernel, DetailedConfig, Device};
use crate::detailed::memory::bytes::act_bytes;
use crate::detailed::model::{Family, Moe};

/// One layer's attention and MLP activations for `b` sequences in stock
/// `transformers`; `moe`: the layer's experts, if it has them.
pub(super) fn block(cfg: &DetailedConfig, b: f64, moe: Option<Moe>) -> LayerActivations {
    // PyTorch's SDPA on the CPU has no kernel with dropout and falls
    // back to its math path ([`math_fallback_block`]).
    let math_fallback =
        cfg.attention == AttentionKernel::Flash && cfg.dropout && cfg.device == Device::Cpu;
    if math_fallback {
        return math_fallback_block(cfg, b);
    }
    match cfg.arch.family {
        Family::Gpt2 => gpt2_block(cfg, b),
        Family::Llama => llama_block(cfg, b, moe),
    }
}

/// A layer for `b` sequences when PyTorch's SDPA on the CPU, which has no
/// kernel with dropout, falls back to its math path: that computes in fp32
/// and keeps q, k (repeated to all heads) and v, the softmax, the dropout
/// mask and the dropout output, all at 4 bytes, for either family.
fn math_fallback_block(cfg: &DetailedConfig, b: f64) -> LayerActivations {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let (h, f, heads) = (a.hidden as f64, a.ffn as f64, a.heads as f64);
    let n = s * b;
    let p = act_bytes(cfg);
    let nh = n * h;
    let scores_n = heads * s * s * b;
    let mask = mask_bytes(cfg);
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
    LayerActivations {
        replicated,
        sharded: 3.0 * nh * 4.0 + nh * p + mlp,
        scores: 3.0 * scores_n * 4.0,
        experts: 0.0,
        experts_ffn: 0.0,
    }
}

/// GPT-2's block (`GPT2Block`) for `b` sequences: its two LayerNorms, the
/// projections' inputs, the dropout masks, the GELU written in Python and
/// the attention of either kernel.
fn gpt2_block(cfg: &DetailedConfig, b: f64) -> LayerActivations {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let (h, f, heads) = (a.hidden as f64, a.ffn as f64, a.heads as f64);
    let n = s * b;
    let p = act_bytes(cfg);
    let nh = n * h;
    let scores_n = heads * s * s * b;
    let lse = 4.0 * heads * s * b;
    let drop = cfg.dropout;
    let mask = mask_bytes(cfg);
    // ln_1 and ln_2: input, mean and rstd (in the dtype);
    // c_attn and c_fc inputs; resid and MLP dropout masks.
    let replicated = 2.0 * (nh * p + 2.0 * n * p) + 2.0 * nh * p + 2.0 * nh * mask;
    // NewGELU in Python keeps 4 tensors of n·F; c_proj input n·F.
    let mlp = 5.0 * n * f * p;
    let (attn, scores) = if cfg.attention == AttentionKernel::Eager {
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
        experts: 0.0,
        experts_ffn: 0.0,
    }
}

/// A Llama-family layer for `b` sequences (`LlamaDecoderLayer` and its
/// kin): norms, the projections' inputs, the MLP (dense or experts), q/k
/// norms, latent attention's extras and the attention kernel's tensors.
fn llama_block(cfg: &DetailedConfig, b: f64, moe: Option<Moe>) -> LayerActivations {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let (h, f) = (a.hidden as f64, a.ffn as f64);
    let n = s * b;
    let p = act_bytes(cfg);
    let nh = n * h;
    // The norms, plus the two projection inputs (q/k/v and gate/up, or
    // the router's and experts' input).
    let replicated = llama_norms(cfg, n) + 2.0 * nh * p;
    let qk_norm = qk_norms(cfg, b);
    let latent = latent_attention(cfg, n);
    // Liger's SwiGLU (`ops/swiglu.py`, `LigerSiLUMulFunction`) keeps the
    // gate's and the up projection's outputs and writes the product, which
    // the down projection keeps: three n·F where stock `transformers`
    // keeps four (the SiLU's output too).
    let dense = if cfg.liger { 3.0 } else { 4.0 };
    let (router, mlp, experts) = match moe {
        Some(m) => moe_mlp(cfg, n, m),
        None => (0.0, dense * n * f * p, 0.0),
    };
    let (attn, scores) = llama_attention(cfg, b);
    LayerActivations {
        replicated: replicated + router,
        sharded: attn + mlp + qk_norm + latent,
        scores,
        experts,
        experts_ffn: moe.map_or(0.0, |m| moe_ffn_bytes(cfg, n, m)),
    }
}

/// A Llama-family layer's RMSNorms over n tokens. RMSNorm upcasts: fp32
/// input, fp32 rsqrt per token, the normalised output in the dtype; ×2 (×4
/// with sandwich norms). gpt-oss's RMSNorm multiplies its weight into the
/// fp32 normalised values (`(self.weight * hidden_states)
/// .to(input_dtype)`), keeping those at 4 bytes.
fn llama_norms(cfg: &DetailedConfig, n: f64) -> f64 {
    let a = &cfg.arch;
    let h = a.hidden as f64;
    let p = act_bytes(cfg);
    if cfg.liger {
        // Liger's RoPE (`ops/rope.py`, `LigerRopeFunction`) rotates q and k
        // in place and keeps cos and sin, as the stock rotation does: the
        // saved tensors do not change.
        2.0 * liger_rms(n, h, p)
    } else if a.sandwich_norms {
        4.0 * gemma_rms(n, h)
    } else if a.attention_sinks {
        2.0 * rms(n, h, 4.0)
    } else {
        2.0 * rms(n, h, p)
    }
}

/// The per-head query and key norms for `b` sequences: RMSNorm's (Gemma's
/// with sandwich norms), or Llama 4's below; none without q/k norms.
fn qk_norms(cfg: &DetailedConfig, b: f64) -> f64 {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let heads = a.heads as f64;
    let n = s * b;
    let p = act_bytes(cfg);
    let (qd, kd) = (a.q_dim() as f64, a.kv_dim() as f64);
    // Llama 4: weightless per-head q/k norms on the rotary
    // layers (fp32 input and reciprocal root; their output
    // is the attention's input), and on the others (every
    // fourth, `no_rope_layer_interval`) the query scales'
    // fp32 row per position: averaged over the layers.
    if a.llama4() {
        let nope = (a.layers / 4) as f64 / a.layers as f64;
        let norms = if a.qk_norm {
            4.0 * n * (qd + kd) + 4.0 * n * (heads + a.kv_heads as f64)
        } else {
            0.0
        };
        (1.0 - nope) * norms + nope * 4.0 * s
    } else if a.qk_norm && a.sandwich_norms {
        let hd = qd / heads;
        gemma_rms(n * heads, hd) + gemma_rms(n * a.kv_heads as f64, hd)
    } else if a.qk_norm {
        rms(n * heads, qd / heads, p) + rms(n * a.kv_heads as f64, kd / a.kv_heads as f64, p)
    } else {
        0.0
    }
}

/// Latent attention's extras over n tokens (`DeepseekV3Attention`): each
/// latent's RMSNorm and the up-projection's input (its output). The kv
/// norm's fp32 input is a view of the whole compressed kv (latent and
/// rotary part) when the model is fp32, a copy of the latent alone
/// otherwise. None without latent attention.
fn latent_attention(cfg: &DetailedConfig, n: f64) -> f64 {
    let p = act_bytes(cfg);
    cfg.arch.mla.map_or(0.0, |m| {
        let (qr, kvr) = (m.q_rank as f64, m.kv_rank as f64);
        let q = if m.q_rank > 0 {
            rms(n, qr, p) + n * qr * p
        } else {
            0.0
        };
        let rope_view = if p == 4.0 {
            4.0 * n * m.rope_dim as f64
        } else {
            0.0
        };
        q + rms(n, kvr, p) + rope_view + n * kvr * p
    })
}

/// Attention's saved tensors in a Llama-family layer for `b` sequences:
/// (sharded, the a·s² scores), per kernel: SDPA's math path for latent
/// attention on the CPU, eager ([`eager_attention`]), or SDPA's fused
/// kernels.
fn llama_attention(cfg: &DetailedConfig, b: f64) -> (f64, f64) {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let heads = a.heads as f64;
    let n = s * b;
    let p = act_bytes(cfg);
    let scores_n = heads * s * s * b;
    let lse = 4.0 * heads * s * b;
    let eager = cfg.attention == AttentionKernel::Eager;
    let (qd, kd, vd, od) = (
        a.q_dim() as f64,
        a.kv_dim() as f64,
        a.v_dim() as f64,
        a.o_dim() as f64,
    );
    // PyTorch's CPU SDPA has no kernel for a value width
    // unlike the query's: its math path runs in fp32 and
    // keeps q, kᵀ, the softmax and v at 4 bytes.
    let mla_math = a.mla.is_some_and(|m| m.v_dim != m.nope_dim + m.rope_dim)
        && !eager
        && cfg.device == Device::Cpu;
    if mla_math {
        (4.0 * n * (qd + kd + vd) + n * od * p, 4.0 * scores_n)
    } else if eager {
        eager_attention(cfg, b)
    } else {
        // q, k and v at their own widths, output (= o_proj
        // input), log-sum-exp. SDPA writes its output in
        // the query's layout (measured on the CPU; CUDA's
        // flash kernel allocates it `empty_like(q)`): a
        // partly rotated query is concatenated back into a
        // (b, a, s, d) tensor, so the output's transpose for
        // o_proj is a copy, kept beside it (GLM-4.5).
        let copy = if a.rotary_width() < a.head_dim() {
            od * n * p
        } else {
            0.0
        };
        ((qd + kd + vd + od) * n * p + copy + lse, 0.0)
    }
}

/// Eager attention's saved tensors in a Llama-family layer for `b`
/// sequences (`eager_attention_forward`): (sharded, the a·s² scores), for
/// gpt-oss's sinks, Llama 4's softmax in the dtype, or the rest.
fn eager_attention(cfg: &DetailedConfig, b: f64) -> (f64, f64) {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let heads = a.heads as f64;
    let n = s * b;
    let p = act_bytes(cfg);
    let scores_n = heads * s * s * b;
    let drop = cfg.dropout;
    let mask = mask_bytes(cfg);
    let (qd, kd, vd, od) = (
        a.q_dim() as f64,
        a.kv_dim() as f64,
        a.v_dim() as f64,
        a.o_dim() as f64,
    );
    if a.attention_sinks {
        // gpt-oss's eager attention: the scores with a sink
        // column (s + 1), less their row maximum (whose
        // int64 index is kept), softmax in the dtype; q,
        // repeated k and v, o_proj input.
        let rows = scores_n / s;
        let v_rep = qd * vd / kd;
        (
            (2.0 * qd + v_rep + od) * n * p,
            rows * (s + 1.0) * p + 8.0 * rows,
        )
    } else if a.llama4() {
        // Llama 4's eager attention runs its softmax in the
        // dtype (`eager_attention_forward`, "doesn't cast
        // attn weights to fp32"): one copy of the scores.
        let dropout = if drop { scores_n * (mask + p) } else { 0.0 };
        (
            (2.0 * qd + qd * vd / kd + od) * n * p,
            scores_n * p + dropout,
        )
    } else {
        // q, repeated k and v (a heads each), o_proj input.
        // Softmax runs in fp32; its output is cast back
        // (a second copy) unless dropout or fp32.
        let cast = if p != 4.0 && !drop { scores_n * p } else { 0.0 };
        let dropout = if drop { scores_n * (mask + p) } else { 0.0 };
        let v_rep = if a.mla.is_some() { vd } else { qd * vd / kd };
        // Gemma 2's soft cap keeps its tanh's output.
        let softcap = if a.softcap { scores_n * p } else { 0.0 };
        (
            (2.0 * qd + v_rep + od) * n * p,
            4.0 * scores_n + cast + dropout + softcap,
        )
    }
}
