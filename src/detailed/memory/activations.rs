//! Activations: the bytes the forward pass keeps for backward, per layer
//! and outside the layers, for both implementation profiles, and what tensor,
//! sequence and pipeline parallelism and recomputation leave on one GPU.
//!
//! - [`Profile::Fused`]: Megatron-style kernels, Korthikanti et al. 2022,
//!   "Reducing Activation Recomputation in Large Transformer Models", §4
//!   (Eq. 1–5), generalised to SwiGLU and grouped-query attention.
//! - [`Profile::Hf`]: stock Hugging Face `transformers` as PyTorch's autograd
//!   actually keeps it (RMSNorm's fp32 upcast, GPT-2's tanh GELU written in
//!   Python, fp32 softmax and loss), read off `transformers` 5.x and checked
//!   byte for byte against `tests/fixtures/hf_measured.tsv`.

use super::bytes::act_bytes;
use crate::detailed::config::{
    AttentionKernel, DetailedConfig, Device, ExpertsImpl, Profile, Recompute,
};
use crate::detailed::model::{Family, Moe, Router};

/// Activation bytes of one layer for one micro-batch, split the way tensor
/// and sequence parallelism split them (Korthikanti §4.2).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct LayerActivations {
    /// Kept whole on every tensor-parallel rank unless sequence parallel:
    /// norm inputs and statistics, block inputs, block-output dropout masks.
    pub(crate) replicated: f64,
    /// Split across tensor-parallel ranks: Q, K, V, projections' inputs, MLP.
    pub(crate) sharded: f64,
    /// The a·s² terms (scores, their mask and dropout output), sharded;
    /// selective recomputation drops them.
    pub(crate) scores: f64,
    /// Routed experts' tensors for the layer's n·k token–expert pairs
    /// (routing assumed balanced, so the expert parallelism does not change
    /// how many pairs a GPU computes): see [`expert_bytes_on_gpu`].
    pub(crate) experts: f64,
    /// The part of `experts` that is the experts' FFN width (4·F per pair:
    /// SwiGLU's gate/up output, activation and product), which expert
    /// tensor parallelism splits; the rest is per pair at full width.
    pub(crate) experts_ffn: f64,
}

impl LayerActivations {
    fn scaled(self, w: f64) -> Self {
        Self {
            replicated: self.replicated * w,
            sharded: self.sharded * w,
            scores: self.scores * w,
            experts: self.experts * w,
            experts_ffn: self.experts_ffn * w,
        }
    }

    fn plus(self, o: Self) -> Self {
        Self {
            replicated: self.replicated + o.replicated,
            sharded: self.sharded + o.sharded,
            scores: self.scores + o.scores,
            experts: self.experts + o.experts,
            experts_ffn: self.experts_ffn + o.experts_ffn,
        }
    }
}

/// The FFN-wide part of the routed experts' bytes for n tokens: 4·F at the
/// activations' width per token–expert pair (per slot under a capacity
/// factor), in every profile below.
fn moe_ffn_bytes(cfg: &DetailedConfig, n: f64, m: Moe) -> f64 {
    let slots = n * match cfg.profile {
        Profile::Fused => m.top_k as f64 * cfg.capacity_factor.unwrap_or(1.0),
        // Llama 4 in `transformers`: every expert on every token.
        Profile::Hf if m.router == Router::Llama4 => m.experts as f64,
        Profile::Hf => m.top_k as f64,
    };
    slots * 4.0 * m.expert_ffn as f64 * act_bytes(cfg)
}

/// The routed experts' saved bytes on one GPU, of a layer's `experts` for
/// the micro-batch's n tokens (`ffn` of them FFN-wide), as Megatron-Core
/// runs them (`moe/token_dispatcher.py`, `MoEAlltoAllTokenDispatcher`):
/// under sequence parallelism each tensor-parallel rank routes its n/t
/// tokens; the all-to-all over the expert-parallel group leaves each GPU
/// as many token–expert pairs as it sent (balanced routing); with expert
/// tensor parallelism e the pairs are gathered over the e ranks that split
/// each expert, whose FFN width they divide. So the per-pair tensors at full
/// width scale by e/t and the FFN-wide ones by 1/t, whatever e.
pub(crate) fn expert_bytes_on_gpu(
    par: &crate::detailed::config::Parallelism,
    experts: f64,
    ffn: f64,
) -> f64 {
    let tokens = if par.sp { par.tp.max(1) as f64 } else { 1.0 };
    ((experts - ffn) * par.etp.max(1) as f64 + ffn) / tokens
}

/// What a mixture-of-experts MLP keeps, in place of the dense MLP's
/// tensors, for n tokens: (router part, replicated; shared experts,
/// sharded; routed experts).
///
/// "hf" profile, read off `transformers` 5.x and checked against
/// `tests/fixtures/moe_measured.tsv`: the router keeps its fp32 softmax
/// (n·E), the top-k indices (int64) and, renormalising, the sum (n) and the
/// fp32 top-k values (n·k). The grouped experts (`grouped_mm_experts_forward`)
/// keep, per token–expert pair: two int64 gather indices and the int64
/// inverse permutation, the sorted input (h), the gate/up output (2F), the
/// SiLU output and the product (F each), the down output (h) and the
/// routing weight (fp32 for Mixtral, the dtype for Qwen3), plus one int32
/// offset per expert. The per-expert loop keeps the `torch.where` pair of
/// int64 indices, the input, the down output and the `index_add_` source
/// (h each), the same 4F and the weight. Either way the sums run over the
/// n·k assignments, so how evenly random routing spreads them does not
/// change the bytes.
///
/// "fused" profile (Megatron-Core's grouped GEMM, `moe/experts.py`, with
/// the dense model's counting of SwiGLU): the router's fp32 logits (n·E)
/// and, per assignment, the permuted input (h), 4F of SwiGLU and an fp32
/// probability with its int64 index; under a capacity factor, per slot.
fn moe_mlp(cfg: &DetailedConfig, n: f64, m: Moe) -> (f64, f64, f64) {
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
    let shared = 4.0 * n * m.shared_ffn as f64 * p + gate;
    match cfg.profile {
        // With a capacity factor c and padding, each expert's buffers hold
        // c·n·k/E slots whether filled or not (Megatron-Core,
        // `moe/moe_utils.py`, `get_capacity`): the expert tensors scale by c.
        Profile::Fused => {
            let slots = nk * cfg.capacity_factor.unwrap_or(1.0);
            (4.0 * n * e, shared, slots * (h * p + 4.0 * f * p + 12.0))
        }
        Profile::Hf => {
            // Renormalising the top-k weights keeps their sum (n) and the
            // divided weights (n·k, fp32).
            let renorm = if m.normalized {
                4.0 * n + 4.0 * nk
            } else {
                0.0
            };
            let router = match m.router {
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
                    let weight_copy = if super::states::router_values_fp32(cfg) > 0.0 {
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
            };
            let weight = if matches!(m.router, Router::Qwen | Router::Qwen2 | Router::GptOss) {
                p
            } else {
                4.0
            };
            let experts = match (cfg.experts_impl, m.router) {
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
                (ExpertsImpl::Loop, Router::GptOss) => {
                    nk * (16.0 + weight + 3.0 * h * p + 7.0 * f * p)
                }
                (ExpertsImpl::Grouped, _) => {
                    nk * (24.0 + weight + 2.0 * h * p + 4.0 * f * p) + 4.0 * e
                }
                (ExpertsImpl::Loop, _) => nk * (16.0 + weight + 3.0 * h * p + 4.0 * f * p),
            };
            (router, shared, experts)
        }
    }
}

/// RMSNorm as `transformers` writes it, over n rows of width w: the fp32
/// input, the fp32 reciprocal root per row, the normalised output in the
/// dtype.
fn rms(n: f64, w: f64, p: f64) -> f64 {
    4.0 * n * w + 4.0 * n + n * w * p
}

/// Gemma's RMSNorm (`Gemma2RMSNorm`: `_norm(x.float()) * (1.0 +
/// self.weight.float())`): the fp32 input, the reciprocal root, the fp32
/// `1 + w` and the fp32 normalised values, all kept; measured in
/// `tests/fixtures/gemma_measured.tsv`.
fn gemma_rms(n: f64, w: f64) -> f64 {
    8.0 * n * w + 4.0 * n + 4.0 * w
}

/// Whether the PEFT LoRA model of [`peft_layer`] applies: the "hf"
/// profile, LoRA, a plain Llama-family layer (no experts, latent attention,
/// Gemma norms or Mamba-2 mixer). A hybrid's layer under LoRA is priced as
/// the trained layer keeps it, an upper bound: a frozen projection keeps
/// no input for its weight.
fn peft_llama(cfg: &DetailedConfig) -> bool {
    let a = &cfg.arch;
    super::states::peft(cfg)
        && a.family == Family::Llama
        && a.moe.is_none()
        && a.mla.is_none()
        && a.ssm.is_none()
        && !a.sandwich_norms
}

/// One layer under PEFT's LoRA with the base frozen, for n tokens; `first`:
/// the first layer, whose input does not require grad (the embedding is
/// frozen). Read off `transformers` 5.x and PEFT, and checked against
/// `tests/fixtures/lora_measured.tsv`:
/// - frozen projections save nothing for their weights, so no projection
///   input is kept for the base; RMSNorm's weight is frozen, so it keeps its
///   fp32 input and reciprocal root but not its output;
/// - each adapter keeps its input in fp32 for A's gradient (a copy per
///   adapter in a 16-bit model, `_cast_input_dtype`; in fp32 the one input
///   tensor its group shares) and A's r-wide fp32 output for B's;
/// - the MLP keeps the gate output, the SiLU output and the up output, not
///   the down projection's input; attention keeps what it keeps in full
///   fine-tuning, less eager attention's output-projection input;
/// - nothing before the first adapter requires grad: in the first layer the
///   input norm keeps nothing, nor attention unless q, k or v is adapted,
///   nor the next norm and the MLP unless an adapter came before them.
fn peft_layer(cfg: &DetailedConfig, n: f64, first: bool) -> LayerActivations {
    use crate::detailed::model::LoraTargets as T;
    let a = &cfg.arch;
    let p = act_bytes(cfg);
    let (h, f) = (a.hidden as f64, a.ffn as f64);
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
    let r = cfg.lora_rank.unwrap_or(0) as f64;
    let t = cfg.lora_targets;
    let has = |bit: u8| t.0 & bit != 0;
    let count = |bits: u8| u64::from((t.0 & bits).count_ones()) as f64;
    let frozen_rms = |w: f64, rows: f64| 4.0 * rows * w + 4.0 * rows;

    let rg_in = !first;
    let rg_attn = rg_in || has(T::Q) || has(T::K) || has(T::V);
    let rg_mid = rg_attn || has(T::O);
    let mut replicated = 0.0;
    if rg_in {
        replicated += frozen_rms(h, n);
    }
    if rg_mid {
        replicated += frozen_rms(h, n);
    }
    let fp32 = p == 4.0;
    let eager = cfg.attention == AttentionKernel::Eager;
    let mut adapters = count(127) * n * r * 4.0;
    for (bits, width) in [
        (T::Q | T::K | T::V, h),
        (T::O, od),
        (T::GATE | T::UP, h),
        (T::DOWN, f),
    ] {
        let k = count(bits);
        // In fp32 the output projection's input is SDPA's own saved output.
        let shared_with_sdpa = bits == T::O && fp32 && !eager && rg_attn;
        if k > 0.0 && !shared_with_sdpa {
            adapters += n * width * 4.0 * if fp32 { 1.0 } else { k };
        }
    }
    let qk_norm = if a.qk_norm && rg_attn {
        frozen_rms(qd / heads, n * heads)
            + frozen_rms(kd / a.kv_heads as f64, n * a.kv_heads as f64)
    } else {
        0.0
    };
    let drop = cfg.dropout;
    let mask = mask_bytes(cfg);
    // Which of q, k, v require grad: all after the first layer; in it, the
    // adapted ones. A matmul keeps an operand only for the other's gradient.
    let (q_rg, k_rg, v_rg) = if first {
        (has(T::Q), has(T::K), has(T::V))
    } else {
        (true, true, true)
    };
    let (attn, scores) = if !rg_attn {
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
    };
    let mlp = if rg_mid || has(T::GATE) || has(T::UP) {
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

/// One layer's activations for `b` sequences, averaged over the layers
/// (dense layers and mixture-of-experts layers differ; under PEFT's LoRA
/// the first layer does too).
pub(crate) fn layer_activations(cfg: &DetailedConfig, b: f64) -> LayerActivations {
    let a = &cfg.arch;
    if peft_llama(cfg) {
        let n = cfg.seq as f64 * b;
        let l = a.layers as f64;
        return peft_layer(cfg, n, true)
            .scaled(1.0 / l)
            .plus(peft_layer(cfg, n, false).scaled((l - 1.0) / l));
    }
    let moe = a.moe_layers();
    if moe == 0 {
        return layer_activations_of(cfg, b, false);
    }
    let l = a.layers as f64;
    let dense = (a.layers - moe) as f64 / l;
    layer_activations_of(cfg, b, false)
        .scaled(dense)
        .plus(layer_activations_of(cfg, b, true).scaled(moe as f64 / l))
}

/// Bytes per value of a dropout mask in the "hf" profile: none without
/// dropout, `bool` on CUDA, the input's dtype on the CPU.
fn mask_bytes(cfg: &DetailedConfig) -> f64 {
    match (cfg.dropout, cfg.device) {
        (false, _) => 0.0,
        (true, Device::Cuda) => 1.0,
        (true, Device::Cpu) => act_bytes(cfg),
    }
}

/// One layer's activations for `b` sequences; `moe_layer`: a
/// mixture-of-experts layer. A hybrid layer adds its Mamba-2 mixer's
/// ([`super::mixer::saved`]).
fn layer_activations_of(cfg: &DetailedConfig, b: f64, moe_layer: bool) -> LayerActivations {
    let block = block_activations_of(cfg, b, moe_layer);
    match cfg.arch.ssm {
        Some(m) => {
            let (replicated, sharded) = super::mixer::saved(cfg, m, b);
            LayerActivations {
                replicated: block.replicated + replicated,
                sharded: block.sharded + sharded,
                ..block
            }
        }
        None => block,
    }
}

/// One layer's attention and MLP activations for `b` sequences.
fn block_activations_of(cfg: &DetailedConfig, b: f64, moe_layer: bool) -> LayerActivations {
    let a = &cfg.arch;
    let moe = a.moe.filter(|_| moe_layer);
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
            // Transformer Engine's fp8 saves the linear layers' inputs at
            // one byte ([`super::fp8::te_bytes_per_value`]): the QKV and
            // MLP inputs, the out-projection's and the second MLP linear's.
            let li = super::fp8::te_bytes_per_value(cfg).unwrap_or(p);
            // Two norm inputs, QKV input, MLP input, two output dropout masks.
            let replicated = 2.0 * nh * p + 2.0 * nh * li + 2.0 * nh * mask;
            // Q and K, V, out-projection input.
            let qkv = nh * p + 2.0 * n * kvd * p + nh * li;
            let (router, mlp, experts) = match (a.family, moe) {
                (_, Some(m)) => moe_mlp(cfg, n, m),
                // GELU input and second linear input.
                (Family::Gpt2, _) => (0.0, n * f * p + n * f * li, 0.0),
                // Gate out (SiLU input), SiLU out, up out, down input.
                (Family::Llama, _) => (0.0, 3.0 * n * f * p + n * f * li, 0.0),
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
                replicated: replicated + router,
                sharded: qkv + mlp + attn_extra,
                scores,
                experts,
                experts_ffn: moe.map_or(0.0, |m| moe_ffn_bytes(cfg, n, m)),
            }
        }
        Profile::Hf => {
            let mask = mask_bytes(cfg);
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
                    experts: 0.0,
                    experts_ffn: 0.0,
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
                        experts: 0.0,
                        experts_ffn: 0.0,
                    }
                }
                Family::Llama => {
                    // RMSNorm upcasts: fp32 input, fp32 rsqrt per token, the
                    // normalised output in the dtype; ×2 (×4 with sandwich
                    // norms), plus the two projection inputs (q/k/v and
                    // gate/up, or the router's and experts' input).
                    // gpt-oss's RMSNorm multiplies its weight into the fp32
                    // normalised values (`(self.weight * hidden_states)
                    // .to(input_dtype)`), keeping those at 4 bytes.
                    let norms = if a.sandwich_norms {
                        4.0 * gemma_rms(n, h)
                    } else if a.attention_sinks {
                        2.0 * rms(n, h, 4.0)
                    } else {
                        2.0 * rms(n, h, p)
                    };
                    let replicated = norms + 2.0 * nh * p;
                    let (qd, kd, vd, od) = (
                        a.q_dim() as f64,
                        a.kv_dim() as f64,
                        a.v_dim() as f64,
                        a.o_dim() as f64,
                    );
                    // Llama 4: weightless per-head q/k norms on the rotary
                    // layers (fp32 input and reciprocal root; their output
                    // is the attention's input), and on the others (every
                    // fourth, `no_rope_layer_interval`) the query scales'
                    // fp32 row per position: averaged over the layers.
                    let llama4 = a.llama4();
                    let qk_norm = if llama4 {
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
                        rms(n * heads, qd / heads, p)
                            + rms(n * a.kv_heads as f64, kd / a.kv_heads as f64, p)
                    } else {
                        0.0
                    };
                    // Latent attention (`DeepseekV3Attention`): each latent's
                    // RMSNorm and the up-projection's input (its output). The
                    // kv norm's fp32 input is a view of the whole compressed
                    // kv (latent and rotary part) when the model is fp32,
                    // a copy of the latent alone otherwise.
                    let latent = a.mla.map_or(0.0, |m| {
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
                    });
                    // PyTorch's CPU SDPA has no kernel for a value width
                    // unlike the query's: its math path runs in fp32 and
                    // keeps q, kᵀ, the softmax and v at 4 bytes.
                    let mla_math = a.mla.is_some_and(|m| m.v_dim != m.nope_dim + m.rope_dim)
                        && !eager
                        && cfg.device == Device::Cpu;
                    let (router, mlp, experts) = match moe {
                        Some(m) => moe_mlp(cfg, n, m),
                        None => (0.0, 4.0 * n * f * p, 0.0),
                    };
                    let (attn, scores) = if mla_math {
                        (4.0 * n * (qd + kd + vd) + n * od * p, 4.0 * scores_n)
                    } else if eager && a.attention_sinks {
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
                    } else if eager && llama4 {
                        // Llama 4's eager attention runs its softmax in the
                        // dtype (`eager_attention_forward`, "doesn't cast
                        // attn weights to fp32"): one copy of the scores.
                        let dropout = if drop { scores_n * (mask + p) } else { 0.0 };
                        (
                            (2.0 * qd + qd * vd / kd + od) * n * p,
                            scores_n * p + dropout,
                        )
                    } else if eager {
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
                    };
                    LayerActivations {
                        replicated: replicated + router,
                        sharded: attn + mlp + qk_norm + latent,
                        scores,
                        experts,
                        experts_ffn: moe.map_or(0.0, |m| moe_ffn_bytes(cfg, n, m)),
                    }
                }
            }
        }
    }
}

/// Bytes outside the layers for `b` sequences.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct OuterActivations {
    /// Before the first layer (first pipeline stage): embedding dropout
    /// mask, position ids.
    pub(crate) embedding: f64,
    /// After the last layer (last stage): final norm, output-layer input,
    /// loss bookkeeping.
    pub(crate) head: f64,
    /// Of `head`, the final norm's tensors: what a DTensor plan's sequence
    /// parallelism splits (the output layer's input it gathers whole).
    pub(crate) head_norm: f64,
    /// The loss's fp32 log-probabilities, 4·s·b·V (Korthikanti §4.3).
    pub(crate) logits: f64,
}

pub(crate) fn outer_activations(cfg: &DetailedConfig, b: f64) -> OuterActivations {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let n = s * b;
    let h = a.hidden as f64;
    let p = act_bytes(cfg);
    let logits = 4.0 * n * a.vocab as f64;
    let (embedding, head, head_norm) = match cfg.profile {
        // Embedding dropout mask; final norm input, output-layer input.
        Profile::Fused => (
            if cfg.dropout { n * h } else { 0.0 },
            2.0 * n * h * p,
            n * h * p,
        ),
        Profile::Hf => {
            let mask = mask_bytes(cfg);
            // Labels (int64) and the loss's fp32 total weight.
            let loss = 8.0 * n + 4.0;
            match a.family {
                // Position ids (int64, one row) and embedding dropout mask;
                // ln_f input and statistics, lm_head input.
                Family::Gpt2 => (
                    8.0 * s + n * h * mask,
                    (n * h * p + 2.0 * n * p) + n * h * p + loss,
                    n * h * p + 2.0 * n * p,
                ),
                // RoPE cos and sin (shared by all layers); final RMSNorm,
                // lm_head input.
                Family::Llama => {
                    // Latent attention rotates only the rope part.
                    // GLM-4.5 rotates half of each head; gpt-oss keeps cos
                    // and sin of half a head (it rotates the halves).
                    let width = if a.attention_sinks {
                        a.head_dim() / 2
                    } else {
                        a.mla.map_or(a.rotary_width(), |m| m.rope_dim)
                    };
                    // Llama 4 keeps its complex rotary table (complex64,
                    // s × d/2: 4·s·d bytes) for the rotary layers.
                    let rope = if a.llama4() {
                        4.0 * s * a.head_dim() as f64
                    } else {
                        2.0 * s * width as f64 * p
                    };
                    // gpt-oss's final norm keeps its fp32 normalised values.
                    let norm = if a.sandwich_norms {
                        gemma_rms(n, h)
                    } else if a.attention_sinks {
                        rms(n, h, 4.0)
                    } else {
                        rms(n, h, p)
                    };
                    // PEFT's LoRA: the final norm and the output layer are
                    // frozen; the norm keeps its fp32 input and reciprocal
                    // root, the output layer nothing.
                    let grpo = matches!(
                        cfg.objective,
                        crate::detailed::config::Objective::Grpo { .. }
                    );
                    if peft_llama(cfg) {
                        let norm = 4.0 * n * h + 4.0 * n;
                        let (head, logits) = if grpo {
                            (super::grpo::head(cfg).saved, 0.0)
                        } else {
                            (loss, logits)
                        };
                        return OuterActivations {
                            embedding: rope,
                            head: norm + head,
                            head_norm: norm,
                            logits,
                        };
                    }
                    // Gemma 2's final soft cap keeps its tanh's output.
                    let softcap = if a.softcap {
                        n * a.vocab as f64 * p
                    } else {
                        0.0
                    };
                    // GRPO's fused head keeps no logits (`super::grpo`).
                    if grpo {
                        return OuterActivations {
                            embedding: rope,
                            head: norm + super::grpo::head(cfg).saved,
                            head_norm: norm,
                            logits: 0.0,
                        };
                    }
                    (rope, norm + n * h * p + loss + softcap, norm)
                }
            }
        }
    };
    OuterActivations {
        embedding,
        head,
        head_norm,
        logits,
    }
}

/// Saved activations on one GPU for one micro-batch, as recomputation and
/// tensor and sequence parallelism leave them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Saved {
    /// One layer, LoRA's intermediates included.
    pub(crate) per_layer: f64,
    /// One layer as the forward pass without recomputation keeps it: what
    /// recomputation materialises again during that layer's backward.
    pub(crate) per_layer_full: f64,
    /// Before the first layer (first pipeline stage).
    pub(crate) embedding: f64,
    /// After the last layer (last stage), the logits excepted.
    pub(crate) head: f64,
    /// The loss's fp32 log-probabilities (last stage).
    pub(crate) logits: f64,
}

/// Bytes of saved activations one GPU moves to the host with activation
/// offload: every layer's (`save_on_cpu` packs each saved tensor into pinned
/// host memory; DeepSpeed's `cpu_checkpointing` moves the checkpoints); the
/// GPU keeps the layer in flight, copied back for its backward.
pub(crate) fn offloaded(cfg: &DetailedConfig) -> f64 {
    let s = saved(cfg);
    // The first pipeline stage holds the micro-batches in flight.
    let in_flight = cfg.parallel.first_stage_in_flight(cfg.accumulation_steps());
    cfg.parallel.stage_layers(&cfg.arch) * in_flight * s.per_layer
}

/// What one micro-batch's forward pass keeps on one GPU.
///
/// Korthikanti et al. 2022, §4.2: tensor parallelism divides the sharded
/// terms by t, sequence parallelism the rest too; §5: full recomputation
/// keeps only each layer's input (2·s·b·h at 16 bits), selective drops the
/// a·s² terms.
///
/// Context parallelism: each GPU keeps its seq / cp tokens' tensors
/// ([`DetailedConfig::context_local`]).
pub(crate) fn saved(cfg: &DetailedConfig) -> Saved {
    let local = cfg.context_local();
    let cfg = &local;
    let par = &cfg.parallel;
    let tp = par.tp as f64;
    let sp_div = par.sp_divisor();
    let micro = cfg.sequences() as f64;
    let layer = layer_activations(cfg, micro);
    let p = act_bytes(cfg);
    let kept = |scores: bool| {
        let scores = if scores { layer.scores } else { 0.0 };
        (layer.sharded + scores) / tp
            + layer.replicated / sp_div
            + expert_bytes_on_gpu(par, layer.experts, layer.experts_ffn)
    };
    // A DTensor plan with sequence parallelism gathers the attention's and
    // the MLP's inputs (`PrepareModuleInput`, Shard(1) to Replicate) and the
    // column-wise projections save the gathered input whole, where Megatron
    // saves its shard and gathers it again in backward (Korthikanti et al.
    // 2022, §4.2.2): two n·h inputs a layer stay unsplit (measured,
    // `tests/fixtures/tp_sp_measured.tsv`).
    let gathered = if par.sp && par.tp_layers_only && par.tp > 1 {
        2.0 * cfg.seq as f64 * micro * cfg.arch.hidden as f64 * p * (1.0 - 1.0 / sp_div)
    } else {
        0.0
    };
    let input = cfg.seq as f64 * micro * cfg.arch.hidden as f64 * p / sp_div;
    let layer_bytes = match cfg.recompute {
        Recompute::Full => input,
        // The cache of torchtitan's per-operator policy beside the input
        // (tensor parallelism refused, `super::sac::unsupported`).
        Recompute::SelectiveOp => input + super::sac::cached_bytes(cfg, cfg.seq as f64 * micro, p),
        Recompute::Selective => kept(false) + gathered,
        Recompute::None => kept(true) + gathered,
    };
    // LoRA keeps each adapter's r-wide intermediate (its input is the
    // projection's, already kept).
    let lora = if peft_llama(cfg) {
        // Counted in the layer (`peft_layer`).
        0.0
    } else {
        cfg.lora_rank.map_or(0.0, |r| {
            cfg.lora_targets.count() as f64 * cfg.seq as f64 * micro * r as f64 * p
        })
    };
    let outer = outer_activations(cfg, micro);
    Saved {
        per_layer: layer_bytes + lora,
        per_layer_full: kept(true) + gathered + lora,
        // A DTensor plan's sequence parallelism covers the decoder layers
        // and the final norm: the position embeddings before them and the
        // output layer's gathered input after them stay whole (measured).
        embedding: if par.tp_layers_only {
            outer.embedding
        } else {
            outer.embedding / sp_div
        },
        head: if par.tp_layers_only {
            outer.head - outer.head_norm + outer.head_norm / sp_div
        } else {
            outer.head / sp_div
        },
        logits: outer.logits / par.outer_divisor(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::{estimate, preset, Architecture};

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

    /// Issue 24, item 6: Qwen3-30B-A3B at 8,192 tokens. Under sequence
    /// parallelism each rank routes n/t tokens, so the experts' tensors
    /// shrink by t whatever the expert parallelism; expert tensor
    /// parallelism gathers the pairs back at full width and splits only the
    /// FFN-wide ones; tensor parallelism without SP is refused.
    #[test]
    fn experts_under_tensor_and_sequence_parallelism() {
        let arch = preset("qwen3-30b-a3b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 8192, 1);
        cfg.attention = AttentionKernel::Flash;
        cfg.dropout = false;
        let act = |f: &dyn Fn(&mut DetailedConfig)| {
            let mut c = cfg;
            f(&mut c);
            estimate(&c).map(|b| (b.activations / 1e8).round() / 10.0)
        };
        assert_eq!(act(&|_| {}), Ok(48.0));
        let tp8 = act(&|c| {
            c.parallel.tp = 8;
            c.parallel.sp = true;
        });
        assert_eq!(tp8, Ok(6.0));
        assert_eq!(
            act(&|c| {
                c.parallel.tp = 8;
                c.parallel.sp = true;
                c.parallel.ep = 8;
            }),
            tp8
        );
        assert_eq!(
            act(&|c| {
                c.parallel.tp = 8;
                c.parallel.sp = true;
                c.parallel.etp = 8;
            }),
            Ok(17.3)
        );
        assert!(act(&|c| c.parallel.tp = 8).is_err());
        // Term by term: the full-width part scales by e/t, the FFN part by 1/t.
        let par = crate::detailed::Parallelism {
            tp: 4,
            sp: true,
            etp: 2,
            ..Default::default()
        };
        assert_eq!(
            expert_bytes_on_gpu(&par, 10.0, 6.0),
            (4.0 * 2.0 + 6.0) / 4.0
        );
    }

    #[test]
    fn capacity_factor_scales_the_fused_expert_tensors() {
        let arch = crate::detailed::preset("mixtral-8x7b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 4096, 1);
        let m = arch.moe.unwrap();
        let dropless = moe_mlp(&cfg, 4096.0, m);
        cfg.capacity_factor = Some(1.25);
        let padded = moe_mlp(&cfg, 4096.0, m);
        assert_eq!(padded.2, dropless.2 * 1.25);
        assert_eq!((padded.0, padded.1), (dropless.0, dropless.1));
        // Per slot: h and 4F at 2 bytes, an fp32 weight and an int64 index.
        assert_eq!(
            dropless.2,
            4096.0 * 2.0 * (4096.0 * 2.0 + 4.0 * 14336.0 * 2.0 + 12.0)
        );
        cfg.capacity_factor = Some(f64::NAN);
        assert!(estimate(&cfg).is_err());
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
}
