//! The "fused" profile's layer: Megatron-style kernels, Korthikanti et al.
//! 2022, §4.1 (34·s·b·h + 5·a·s²·b at 16 bits, term by term), generalised
//! to SwiGLU, grouped-query attention, experts and fp8.

use super::moe::{moe_ffn_bytes, moe_mlp};
use super::LayerActivations;
use crate::detailed::config::{AttentionKernel, DetailedConfig};
use crate::detailed::memory::bytes::act_bytes;
use crate::detailed::model::{Family, Moe};

/// One layer's attention and MLP activations for `b` sequences with
/// Megatron-style kernels; `moe`: the layer's experts, if it has them.
/// Korthikanti §4.1: 34·s·b·h + 5·a·s²·b at 16 bits, term by term.
pub(super) fn block(cfg: &DetailedConfig, b: f64, moe: Option<Moe>) -> LayerActivations {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let h = a.hidden as f64;
    let kvd = a.kv_dim() as f64;
    let n = s * b;
    let p = act_bytes(cfg);
    let nh = n * h;
    let mask = if cfg.dropout { 1.0 } else { 0.0 };
    // Transformer Engine's fp8 saves the linear layers' inputs at
    // one byte ([`crate::detailed::memory::fp8::te_bytes_per_value`]): the
    // QKV and MLP inputs, the out-projection's and the second MLP linear's.
    let li = crate::detailed::memory::fp8::te_bytes_per_value(cfg).unwrap_or(p);
    // Two norm inputs, QKV input, MLP input, two output dropout masks.
    // Megatron's `layernorm` recomputation frees the output of each norm
    // that is a module of its own: a MoE layer's pre-MLP norm (the MLP
    // input) and multi-latent attention's input norm (the QKV input)
    // ([`crate::detailed::config::RecomputeModules::layernorm`]).
    let rm = cfg.megatron_recompute_modules();
    let norms = if rm.layernorm {
        f64::from(u8::from(moe.is_some()) + u8::from(a.mla.is_some()))
    } else {
        0.0
    };
    // Megatron's `mlp` checkpoints a dense layer's MLP whole: its fused
    // norm's output (the MLP input) goes with it; the checkpoint keeps the
    // norm's input, already counted. `moe` checkpoints a MoE layer's MLP,
    // whose input (the pre-MLP norm's output) it keeps.
    let whole = match moe {
        Some(_) => rm.moe,
        None => rm.mlp,
    };
    let discarded = norms + f64::from(u8::from(whole && moe.is_none()));
    let replicated = 2.0 * nh * p + (2.0 - discarded) * nh * li + 2.0 * nh * mask;
    // Q, K and V at their own widths, and the out-projection's input
    // (Korthikanti's h, h, h and h when a·d = h without grouping).
    let (qd, vd, od) = (a.q_dim() as f64, a.v_dim() as f64, a.o_dim() as f64);
    // Megatron's `mla_up_proj` recomputation frees the query, key and
    // value once the attention core has run
    // ([`crate::detailed::config::RecomputeModules::mla_up_proj`]).
    let up_freed = cfg.megatron_recompute_modules().mla_up_proj && a.mla.is_some();
    let qkv = if up_freed {
        0.0
    } else {
        n * (qd + kvd + vd) * p
    } + n * od * li;
    let (router, mlp, experts) = match moe {
        _ if whole => (0.0, 0.0, 0.0),
        Some(m) => moe_mlp(cfg, n, m),
        None => dense_mlp(cfg, n, li),
    };
    let (attn_extra, scores) = attention(cfg, b);
    LayerActivations {
        replicated: replicated + router,
        sharded: qkv + mlp + attn_extra,
        scores: scores + te_attention_output(n, od, li, p),
        experts,
        experts_ffn: moe
            .filter(|_| !whole)
            .map_or(0.0, |m| moe_ffn_bytes(cfg, n, m)),
    }
}

/// Under Transformer Engine's fp8 the attention's output is kept twice:
/// the attention saves it in 16 bits for its own backward (`FusedAttnFunc`
/// saves `q, k, v, out_f16`, `attention/dot_product_attention/backends.py`,
/// TransformerEngine d0067d0) and the out-projection its fp8 cast for the
/// weight's gradient (`linear.py`: `saved_inputmat`, the quantized
/// input), the `od · li` already counted. Without fp8 they are one tensor.
/// Recomputing the attention core (`--recompute selective`, Megatron's
/// `core_attn`) reruns the attention in backward, so its 16-bit copy goes
/// with the scores.
fn te_attention_output(n: f64, od: f64, li: f64, p: f64) -> f64 {
    if li < p {
        n * od * p
    } else {
        0.0
    }
}

/// A dense MLP's saved tensors for n tokens, as [`moe_mlp`] gives an
/// experts' MLP's: (router part: none; sharded; routed experts: none).
/// `li`: bytes per value of a linear layer's saved input.
fn dense_mlp(cfg: &DetailedConfig, n: f64, li: f64) -> (f64, f64, f64) {
    let f = cfg.arch.ffn as f64;
    let p = act_bytes(cfg);
    match cfg.arch.family {
        // GELU input and second linear input.
        Family::Gpt2 => (0.0, n * f * p + n * f * li, 0.0),
        // The gate/up output (the SiLU's input), then the SiLU's output
        // and the product when SwiGLU runs as eager ops; the down
        // projection's input ([`swiglu_kept`]).
        Family::Llama => (0.0, swiglu_kept(cfg) * n * f * p + n * f * li, 0.0),
    }
}

/// The FFN-wide tensors SwiGLU keeps per token, in F, besides the down
/// projection's input. Megatron-Core's fused SwiGLU (`bias_swiglu_impl`,
/// on by default: Megatron-LM's `--no-bias-swiglu-fusion` turns it off,
/// Megatron-Bridge's GPT, Llama, GPT-OSS and DeepSeek providers set `bias_activation_fusion=True`) saves its
/// input alone, the gate and up outputs (2F), and recomputes the SiLU in
/// backward (`SwiGLUFunction.forward`: `ctx.save_for_backward(input)`,
/// `megatron/core/fusions/fused_bias_swiglu.py` at d98e8a64). As eager ops
/// (`F.silu(gate) * up`, torchtitan's and litgpt's) the SiLU's output is
/// saved too, by the product: 3F.
pub(super) fn swiglu_kept(cfg: &DetailedConfig) -> f64 {
    if cfg.megatron_kernels() {
        2.0
    } else {
        3.0
    }
}

/// What the attention kernel keeps for `b` sequences besides Q, K, V and
/// the out-projection's input: (sharded, the a·s² scores).
fn attention(cfg: &DetailedConfig, b: f64) -> (f64, f64) {
    let s = cfg.seq as f64;
    let heads = cfg.arch.heads as f64;
    let p = act_bytes(cfg);
    let scores_n = heads * s * s * b;
    let lse = 4.0 * heads * s * b;
    match cfg.attention {
        // Softmax output, dropout mask (1 byte) and dropout output.
        AttentionKernel::Eager => (
            0.0,
            scores_n * p
                + if cfg.dropout {
                    scores_n * (1.0 + p)
                } else {
                    0.0
                },
        ),
        // Log-sum-exp; the output is the out-projection input.
        AttentionKernel::Flash => (lse, 0.0),
    }
}
