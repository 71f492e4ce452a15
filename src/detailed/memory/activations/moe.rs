//! A mixture-of-experts MLP's saved tensors, in place of the dense MLP's:
//! the router, the shared experts and the routed experts, for both
//! profiles, under a capacity factor too.

use crate::detailed::config::{DetailedConfig, ExpertsImpl, Profile};
use crate::detailed::memory::bytes::act_bytes;
use crate::detailed::model::{Moe, Router};

/// The FFN-wide part of the routed experts' bytes for n tokens: [`fused_ffn_widths`]·F at the
/// activations' width per token–expert pair (per slot under a capacity
/// factor), in every profile below.
pub(super) fn moe_ffn_bytes(cfg: &DetailedConfig, n: f64, m: Moe) -> f64 {
    let slots = n * match cfg.profile {
        Profile::Fused => m.top_k as f64 * cfg.capacity_factor.unwrap_or(1.0),
        // Llama 4 in `transformers`: every expert on every token.
        Profile::Hf if m.router == Router::Llama4 => m.experts as f64,
        Profile::Hf => m.top_k as f64,
    };
    slots * fused_ffn_widths(cfg) * m.expert_ffn as f64 * act_bytes(cfg)
}

/// The FFN-wide tensors a routed expert keeps per slot, in F: SwiGLU's
/// ([`super::fused::swiglu_kept`]: 2 under Megatron-Core's fused
/// `weighted_bias_swiglu_impl`, 3 as eager ops) and the second GEMM's
/// input, which Megatron's `moe_act` recomputation frees
/// ([`crate::detailed::config::RecomputeModules::moe_act`]).
fn fused_ffn_widths(cfg: &DetailedConfig) -> f64 {
    let act_out = if cfg.megatron_recompute_modules().moe_act {
        0.0
    } else {
        1.0
    };
    super::fused::swiglu_kept(cfg) + act_out
}

/// What a mixture-of-experts MLP keeps, in place of the dense MLP's
/// tensors, for n tokens: (router part, replicated; shared experts,
/// sharded; routed experts).
///
/// "hf" profile, read off `transformers` 5.x and checked against
/// `tests/fixtures/moe_measured.tsv`: the router's ([`hf_router`]) and the
/// experts' ([`hf_experts`]) tensors. Either way the sums run over the
/// n·k assignments, so how evenly random routing spreads them does not
/// change the bytes.
///
/// "fused" profile (Megatron-Core's grouped GEMM, `moe/experts.py`, with
/// the dense model's counting of SwiGLU): the router's fp32 logits (n·E)
/// and, per assignment, the permuted input (h), SwiGLU's [`fused_ffn_widths`] and an fp32
/// probability with its int64 index; under a capacity factor, per slot.
pub(super) fn moe_mlp(cfg: &DetailedConfig, n: f64, m: Moe) -> (f64, f64, f64) {
    let p = act_bytes(cfg);
    let h = cfg.arch.hidden as f64;
    let (e, k, f) = (m.experts as f64, m.top_k as f64, m.expert_ffn as f64);
    let nk = n * k;
    // Qwen2-MoE's gated shared expert: the product keeps the shared
    // expert's output (n·h) and the sigmoid's (n).
    let gate = if m.router == Router::Qwen2 {
        (n * h + n) * p
    } else {
        0.0
    };
    // Megatron's `shared_experts` checkpoints them whole.
    let shared = if cfg.megatron_recompute_modules().shared_experts {
        0.0
    } else {
        4.0 * n * m.shared_ffn as f64 * p + gate
    };
    match cfg.profile {
        // With a capacity factor c and padding, each expert's buffers hold
        // c·n·k/E slots whether filled or not (Megatron-Core,
        // `moe/moe_utils.py`, `get_capacity`): the expert tensors scale by c.
        Profile::Fused => {
            let slots = nk * cfg.capacity_factor.unwrap_or(1.0);
            let ffn = fused_ffn_widths(cfg) * f * p;
            (4.0 * n * e, shared, slots * (h * p + ffn + 12.0))
        }
        Profile::Hf => (hf_router(cfg, n, m), shared, hf_experts(cfg, n, m)),
    }
}

/// The router's saved tensors in stock `transformers` for n tokens: its
/// fp32 softmax (n·E), the top-k indices (int64) and, renormalising, the
/// sum (n) and the fp32 top-k values (n·k); per router as below.
fn hf_router(cfg: &DetailedConfig, n: f64, m: Moe) -> f64 {
    let p = act_bytes(cfg);
    let h = cfg.arch.hidden as f64;
    let (e, k) = (m.experts as f64, m.top_k as f64);
    let nk = n * k;
    // Renormalising the top-k weights keeps their sum (n) and the
    // divided weights (n·k, fp32).
    let renorm = if m.normalized {
        4.0 * n + 4.0 * nk
    } else {
        0.0
    };
    match m.router {
        Router::Mixtral | Router::Qwen | Router::Qwen2 => 4.0 * n * e + 8.0 * nk + renorm,
        // gpt-oss: the top-k indices and the softmax over the k
        // biased logits, in the dtype.
        Router::GptOss => 8.0 * nk + nk * p,
        // `DeepseekV3TopkRouter`: fp32 copies of the input and the
        // weight when the model is not fp32 (`.type(torch.float32)`),
        // the sigmoid scores (n·E), then as above. Its group choice
        // and expert mask are saved too, but by nodes whose outputs
        // only pick indices: they are freed before forward ends.
        Router::DeepSeek => {
            // The weight is already fp32 where `transformers` keeps
            // it so (a pure 16-bit model, stock profile): no copy.
            let weight_copy = if crate::detailed::memory::states::router_values_fp32(cfg) > 0.0 {
                0.0
            } else {
                4.0 * e * h
            };
            let upcast = if p == 4.0 {
                0.0
            } else {
                4.0 * n * h + weight_copy
            };
            upcast + 4.0 * n * e + 8.0 * nk + renorm
        }
        // `Llama4Router`: the scatter's int64 top-k index, the fp32
        // sigmoid of the scattered scores (n·E), and their
        // transposed copy in the dtype (E·n), the product's other
        // factor (measured, `tests/fixtures/moe_measured.tsv`).
        Router::Llama4 => 8.0 * nk + 4.0 * n * e + e * n * p,
    }
}

/// The routed experts' saved tensors in stock `transformers` for n
/// tokens. The grouped experts (`grouped_mm_experts_forward`) keep, per
/// token–expert pair: two int64 gather indices and the int64 inverse
/// permutation, the sorted input (h), the gate/up output (2F), the SiLU
/// output and the product (F each), the down output (h) and the routing
/// weight (fp32 for Mixtral, the dtype for Qwen3), plus one int32 offset
/// per expert. The per-expert loop keeps the `torch.where` pair of int64
/// indices, the input, the down output and the `index_add_` source (h
/// each), the same 4F and the weight.
fn hf_experts(cfg: &DetailedConfig, n: f64, m: Moe) -> f64 {
    let p = act_bytes(cfg);
    let h = cfg.arch.hidden as f64;
    let (e, k, f) = (m.experts as f64, m.top_k as f64, m.expert_ffn as f64);
    let nk = n * k;
    let weight = if matches!(m.router, Router::Qwen | Router::Qwen2 | Router::GptOss) {
        p
    } else {
        4.0
    };
    match (cfg.experts_impl, m.router) {
        // Llama 4: every expert on every token (`Llama4TextMoe`):
        // the repeated input and its scaled copy (h each), then
        // the bmm's gate/up output (2F), the SiLU output and the
        // product (F each), per token–expert pair of all n·E;
        // either experts implementation (its own bmm).
        (_, Router::Llama4) => e * n * (2.0 * h * p + 4.0 * f * p),
        // gpt-oss's clamped SwiGLU keeps 7F per pair where SwiGLU
        // keeps 4F: the gate/up output (2F, the clamps' input), the
        // clamped gate, σ(α·gate), the gated value, up + 1 and the
        // product (F each); grouped, the biases' gather keeps one
        // more int64 index per pair.
        (ExpertsImpl::Grouped, Router::GptOss) => {
            nk * (32.0 + weight + 2.0 * h * p + 7.0 * f * p) + 4.0 * e
        }
        (ExpertsImpl::Loop, Router::GptOss) => nk * (16.0 + weight + 3.0 * h * p + 7.0 * f * p),
        (ExpertsImpl::Grouped, _) => nk * (24.0 + weight + 2.0 * h * p + 4.0 * f * p) + 4.0 * e,
        (ExpertsImpl::Loop, _) => nk * (16.0 + weight + 3.0 * h * p + 4.0 * f * p),
    }
}
