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
    // Megatron's `mlp` checkpoints a dense layer's MLP whole: its fused
    // norm's output (the MLP input) goes with it; the checkpoint keeps the
    // norm's input, already counted. `moe` checkpoints a MoE layer's MLP,
    // whose input (the pre-MLP norm's output) it keeps.
    let whole = match moe {
        Some(_) => rm.moe,
        None => rm.mlp,
    };
    let qkv_gone = rm.layernorm && a.mla.is_some();
    let mlp_gone = (rm.layernorm && moe.is_some()) || (whole && moe.is_none());
    let kept = kept_inputs(cfg, moe.is_some(), li, p);
    let gone = |input: f64, freed: bool| if freed { 0.0 } else { input };
    let replicated =
        2.0 * nh * p + (gone(kept.qkv, qkv_gone) + gone(kept.mlp, mlp_gone)) * nh + 2.0 * nh * mask;
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
    } + n * od * kept.out;
    let (router, mlp, experts) = match moe {
        _ if whole => (0.0, 0.0, 0.0),
        Some(m) => moe_mlp(cfg, n, m),
        None => dense_mlp(cfg, n, kept.down),
    };
    let (attn_extra, scores) = attention(cfg, b);
    LayerActivations {
        replicated: replicated + router,
        sharded: qkv + mlp + attn_extra,
        scores: scores + te_attention_output(n, od, kept.out, p),
        experts,
        experts_ffn: moe
            .filter(|_| !whole)
            .map_or(0.0, |m| moe_ffn_bytes(cfg, n, m)),
    }
}

/// Bytes per value at which a layer keeps its linear layers' inputs for
/// their weights' gradients: the QKV projection's and the MLP's first
/// (the norms' outputs), the out-projection's and the down projection's.
struct KeptInputs {
    qkv: f64,
    mlp: f64,
    out: f64,
    down: f64,
}

/// In full training every linear layer keeps its input, at `li` bytes a
/// value (one under Transformer Engine's fp8). Under LoRA with Megatron's
/// kernels the base is frozen, and a frozen layer keeps none: Transformer
/// Engine saves a linear layer's input only when its weight requires grad
/// (`backward_needs_input = is_grad_enabled and weight.requires_grad`,
/// `module/linear.py`; `ln_out_to_save if weight.requires_grad`,
/// `module/layernorm_linear.py`, TransformerEngine d0067d0). The adapter
/// keeps it instead, in 16 bits, where one reads it: Megatron-Bridge's
/// `LoRALinear` feeds the base layer's input (the norm's output, returned
/// by `return_layernorm_output`) to a `ParallelLinearAdapter` of
/// Megatron-Core's own `ColumnParallelLinear`/`RowParallelLinear`, outside
/// Transformer Engine's fp8 (`peft/lora_layers.py`, `peft/utils.py`,
/// Megatron-Bridge 067f987df). The out-projection's input is the
/// attention's output, which the attention keeps in 16 bits whatever the
/// projection does. Dense layers without latent attention; a mixture of
/// experts or latent attention under LoRA keeps full training's (an upper
/// bound).
fn kept_inputs(cfg: &DetailedConfig, moe: bool, li: f64, p: f64) -> KeptInputs {
    use crate::detailed::model::LoraTargets as T;
    if cfg.lora_rank.is_none() || moe || cfg.arch.mla.is_some() {
        return KeptInputs {
            qkv: li,
            mlp: li,
            out: li,
            down: li,
        };
    }
    let adapted = |bits: u16| if cfg.lora_targets.any(bits) { p } else { 0.0 };
    KeptInputs {
        qkv: adapted(T::Q | T::K | T::V),
        mlp: adapted(T::GATE | T::UP),
        out: p,
        down: adapted(T::DOWN),
    }
}

/// Under Transformer Engine's fp8 the attention's output is kept twice:
/// the attention saves it in 16 bits for its own backward (`FusedAttnFunc`
/// saves `q, k, v, out_f16`, `attention/dot_product_attention/backends.py`,
/// TransformerEngine d0067d0) and the out-projection its fp8 cast for the
/// weight's gradient (`linear.py`: `saved_inputmat`, the quantized
/// input), the `od · out` already counted (`out`: [`KeptInputs::out`]).
/// Without fp8 they are one tensor; under LoRA the frozen projection keeps
/// no copy and `out` is the attention's own 16 bits. Recomputing the
/// attention core (`--recompute selective`, Megatron's `core_attn`) reruns
/// the attention in backward, so its 16-bit copy goes with the scores.
fn te_attention_output(n: f64, od: f64, out: f64, p: f64) -> f64 {
    if out < p {
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

#[cfg(test)]
mod tests {
    use super::block;
    use crate::detailed::config::{DetailedConfig, Fp8, Profile};
    use crate::detailed::model::preset;

    fn llama_8b() -> DetailedConfig {
        let mut c = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 4096, 1);
        c.profile = Profile::Fused;
        c
    }

    /// Under LoRA with Megatron's kernels the frozen layers keep no input
    /// for their weights: on q and v, a Llama 3.1 8B layer of 4,096 tokens
    /// keeps the QKV input (for the adapters) and the attention's output,
    /// but not the MLP's input (h) nor the down projection's (F) that full
    /// training keeps; adapting gate, up and down brings them back.
    #[test]
    fn frozen_layers_keep_no_input_for_their_weights() {
        let full = llama_8b();
        let mut lora = full;
        lora.lora_rank = Some(16);
        let total = |c: &DetailedConfig| {
            let l = block(c, 1.0, None);
            l.replicated + l.sharded + l.scores
        };
        let n = 4096.0;
        let (h, f) = (4096.0, 14336.0);
        assert_eq!(total(&full) - total(&lora), n * (h + f) * 2.0);
        lora.lora_targets = "all".parse().unwrap();
        assert_eq!(total(&full), total(&lora));
        // Under Transformer Engine's fp8 the adapted inputs are the
        // adapters' 16-bit copies, the frozen projections' fp8 copies gone:
        // the attention's output once (16 bits), not beside an fp8 copy.
        let mut te = full;
        te.fp8 = Fp8::Te;
        let mut te_lora = te;
        te_lora.lora_rank = Some(16);
        te_lora.lora_targets = "all".parse().unwrap();
        let od = 4096.0;
        let want = n * (2.0 * h + f) * (2.0 - 1.0) - n * od * 1.0;
        assert_eq!(total(&te_lora) - total(&te), want);
    }
}
