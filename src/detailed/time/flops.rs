//! Floating-point operations of a training step, from the same layer
//! inventory the memory model counts parameters from ([`Architecture`]).
//!
//! Matrix multiplies only, two operations per multiply-add: norms,
//! activations, softmax and residual adds are left out, as every published
//! convention does. Per token, forward:
//!
//! - each weight matrix: 2 × its size (QKV with grouped-query heads, the
//!   output projection, the MLP with gating, latent attention's
//!   projections, the router, the top-k routed and the shared experts);
//! - attention: 2·s·q for the scores and 2·s·q for the values, over the
//!   whole sequence (causal masking not subtracted, as PaLM and Megatron
//!   count it);
//! - the logits: 2·h·V.
//!
//! Backward is twice the forward (the gradients of the inputs and of the
//! weights), but for LoRA's frozen weights, whose backward is the input's
//! gradient alone: no weight-gradient product runs (2N of the frozen
//! weights, not 4N). The adapters run 6 operations per weight a token
//! meets (A and B forward, both gradients of each backward; Hu et al.
//! 2021, §4). Two conventions:
//!
//! - **model FLOPs** (MFU): forward + backward, 3× the forward, whatever
//!   is recomputed — PaLM's appendix B (Chowdhery et al. 2022: 6N + 12·L·H·Q·T
//!   per token) and Megatron-LM's `num_floating_point_operations`
//!   (`megatron/training/training.py`), which this equals term by term.
//!   Under LoRA, the work the trained model needs: 4N of the frozen
//!   weights and 6N of the adapters, as LitGPT's `estimate_flops`
//!   (`litgpt/utils.py`: "forward + backward" for frozen parameters,
//!   "forward + backward + gradients" for trainable ones) and NeMo
//!   Automodel's LoRA MFU ((1 + 1 + trainable ratio) / 3 of 6N, PR #786)
//!   count it;
//! - **hardware FLOPs** (HFU): plus what recomputation runs again — full
//!   recomputation one more forward of every layer (not of the logits),
//!   selective the attention's score and value products (Korthikanti et
//!   al. 2022, §5); under LoRA, full recomputation reruns the adapters'
//!   forward too. With full recomputation this is Narayanan et al. 2021's
//!   96·B·s·l·h²·(1 + s/6h + V/16lh) for GPT models, exactly.
//!
//! ```
//! use membudget::detailed::{time::flops::step_flops, preset, DetailedConfig};
//!
//! let cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 8192, 1);
//! let f = step_flops(&cfg);
//! // Per token: 6 × the 7.5 B weights a token meets (the embedding is a
//! // lookup) and 12·L·s·q for attention over 8,192 tokens.
//! let per_token = 6.0 * 7.50e9 + 12.0 * 32.0 * 8192.0 * 4096.0;
//! assert!((f.model / 8192.0 / per_token - 1.0).abs() < 0.01);
//! assert_eq!(f.hardware, f.model); // nothing recomputed
//! ```

use crate::detailed::config::{DetailedConfig, Recompute};
use crate::detailed::model::{Architecture, Family, Mamba2};

/// Forward operations per token of one layer, split by what recomputation
/// repeats.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerFlops {
    /// Weight matrices: 2 × the weights a token passes through.
    pub weights: f64,
    /// The attention's score and value products over a sequence.
    pub attention: f64,
    /// A hybrid layer's state-space scan and convolution
    /// ([`scan_flops`]).
    pub scan: f64,
}

impl LayerFlops {
    /// Their sum.
    pub fn total(&self) -> f64 {
        self.weights + self.attention + self.scan
    }
}

/// Multiply-add operands a token meets in one layer's weights (`moe`: a
/// mixture-of-experts layer): the layer's parameters less norms and biases,
/// routed experts counted top-k times instead of E.
pub fn layer_matmul_weights(arch: &Architecture, moe: bool) -> f64 {
    let (h, f) = (arch.hidden as f64, arch.ffn as f64);
    let attention = match arch.mla {
        Some(m) => {
            let heads = arch.heads as f64;
            let qk = (m.nope_dim + m.rope_dim) as f64;
            let q = if m.q_rank > 0 {
                h * m.q_rank as f64 + m.q_rank as f64 * heads * qk
            } else {
                h * heads * qk
            };
            q + h * (m.kv_rank + m.rope_dim) as f64
                + m.kv_rank as f64 * heads * (m.nope_dim + m.v_dim) as f64
                + heads * m.v_dim as f64 * h
        }
        None => {
            let (q, kv) = (arch.q_dim() as f64, arch.kv_dim() as f64);
            h * q + 2.0 * h * kv + q * h
        }
    };
    // A Mamba-2 mixer's input and output projections (Falcon-H1).
    let ssm = arch
        .ssm
        .map_or(0.0, |m| h * m.in_width() as f64 + m.inner() as f64 * h);
    let mlp = match (arch.family, arch.moe.filter(|_| moe)) {
        (Family::Gpt2, _) => 2.0 * h * f,
        (Family::Llama, None) => 3.0 * h * f,
        (Family::Llama, Some(m)) => {
            h * m.experts as f64
                + m.top_k as f64 * 3.0 * h * m.expert_ffn as f64
                + 3.0 * h * m.shared_ffn as f64
        }
    };
    attention + ssm + mlp
}

/// Forward operations per token of one layer over a sequence of `seq`.
pub fn layer_flops(arch: &Architecture, seq: u64, moe: bool) -> LayerFlops {
    let s = seq as f64;
    // QKᵀ over the query/key width, then the probabilities times V over
    // the value width.
    let attention = 2.0 * s * arch.q_dim() as f64 + 2.0 * s * arch.o_dim() as f64;
    LayerFlops {
        weights: 2.0 * layer_matmul_weights(arch, moe),
        attention,
        scan: arch.ssm.map_or(0.0, |m| scan_flops(m, seq)),
    }
}

/// Forward operations per token of the whole model: every layer and the
/// logits.
pub fn forward_per_token(arch: &Architecture, seq: u64) -> (f64, LayerFlops) {
    let moe = arch.moe_layers();
    let dense = arch.layers - moe;
    let (d, m) = (layer_flops(arch, seq, false), layer_flops(arch, seq, true));
    let layers = LayerFlops {
        weights: dense as f64 * d.weights + moe as f64 * m.weights,
        attention: arch.layers as f64 * d.attention,
        scan: arch.layers as f64 * d.scan,
    };
    let logits = 2.0 * arch.hidden as f64 * arch.vocab as f64;
    (logits, layers)
}

/// A step's operations on the whole model (all GPUs together).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepFlops {
    /// Model FLOPs: 3 × forward (MFU's numerator); under LoRA 2 × the
    /// frozen weights' forward and 3 × the rest's.
    pub model: f64,
    /// Hardware FLOPs: model FLOPs plus recomputation (HFU's).
    pub hardware: f64,
    /// Of `hardware`, the products of the base model's weights and the
    /// logits, forward, backward and recomputed: the products the step
    /// time's `matmul` part prices (the adapters' are left out of it).
    pub matmul: f64,
    /// Tokens the step trains on.
    pub tokens: f64,
}

/// Forward operations per token of LoRA's adapters: 2 per adapter weight
/// a token meets (A then B on every adapted projection and the output
/// layer; the embedding's A is a lookup, its B a product), 0 without LoRA.
pub fn adapter_forward_per_token(cfg: &DetailedConfig) -> f64 {
    let Some(rank) = cfg.lora_rank else {
        return 0.0;
    };
    let a = &cfg.arch;
    let lookup = if cfg.lora_targets.embed() {
        rank * a.vocab
    } else {
        0
    };
    2.0 * a.lora_params(rank, cfg.lora_targets).saturating_sub(lookup) as f64
}

/// The operations of one optimizer step of `cfg`: every sequence of the
/// batch the step trains on ([`DetailedConfig::effective_batch`]; DPO's
/// chosen and rejected sequences both), across all GPUs.
pub fn step_flops(cfg: &DetailedConfig) -> StepFlops {
    let tokens =
        (cfg.effective_batch() * cfg.seq) as f64 * cfg.sequences() as f64 / cfg.micro() as f64;
    let (logits, layers) = forward_per_token(&cfg.arch, cfg.seq);
    // Backward's products per weight: the input's gradient and the
    // weight's, or the input's alone for LoRA's frozen base.
    let backward = if cfg.lora_rank.is_some() { 1.0 } else { 2.0 };
    let weights = logits + layers.weights;
    let adapters = adapter_forward_per_token(cfg);
    let model = (1.0 + backward) * weights + 3.0 * (layers.attention + layers.scan + adapters);
    let (recompute_weights, recompute_rest) = recomputed(cfg, &layers);
    let recompute_adapters = match cfg.recompute {
        Recompute::Full => adapters * cfg.recomputed_share(),
        _ => 0.0,
    };
    StepFlops {
        model: model * tokens,
        hardware: (model + recompute_weights + recompute_rest + recompute_adapters) * tokens,
        matmul: ((1.0 + backward) * weights + recompute_weights) * tokens,
        tokens,
    }
}

/// Forward operations per token that recomputation runs again: of the
/// weights, and of the rest (attention, scan).
fn recomputed(cfg: &DetailedConfig, layers: &LayerFlops) -> (f64, f64) {
    // Megatron's `mla_up_proj`: multi-latent attention's up-projections in
    // every layer, beside none or the attention core.
    let up = if cfg.megatron_recompute_modules().mla_up_proj {
        let weights: f64 = cfg
            .arch
            .mla_up_projections()
            .iter()
            .map(|(k, n)| k * n)
            .sum();
        2.0 * cfg.arch.layers as f64 * weights
    } else {
        0.0
    };
    match cfg.recompute {
        Recompute::None => (up, 0.0),
        Recompute::Selective => (up, layers.attention),
        // Megatron-Core's block method: its share of the layers.
        Recompute::Full => {
            let k = cfg.recomputed_share();
            (k * layers.weights, k * (layers.attention + layers.scan))
        }
        // The even-numbered bias-free projections, and under eager
        // attention its products (dense layers only, `super::sac`).
        Recompute::SelectiveOp => (
            cfg.arch.layers as f64
                * 2.0
                * crate::detailed::memory::sac::recomputed_weights(&cfg.arch),
            match cfg.attention {
                crate::detailed::config::AttentionKernel::Eager => layers.attention,
                crate::detailed::config::AttentionKernel::Flash => 0.0,
            },
        ),
    }
}

/// Forward operations per token of one mixer over a sequence of `seq`,
/// beyond its two projections (which [`step_flops`] counts as weights):
/// the depthwise convolution (2·K per channel) and the SSD scan's matrix
/// products chunk by chunk (Dao & Gu 2024, §6): C·Bᵀ within a chunk
/// (2·Q·G·N), its product with x (2·Q·d), the chunk states Bᵀ·x and their
/// output C·h (2·N·d each). Megatron-LM's `mamba_layer_flops` estimates the
/// scan as 7·d·N instead (5.5 M per token for Falcon-H1-7B against these
/// 4.9 M, beside its projections' 60 M).
pub fn scan_flops(m: Mamba2, seq: u64) -> f64 {
    let q = m.chunk.min(seq.max(1)) as f64;
    let (d, g, n) = (m.inner() as f64, m.groups as f64, m.state as f64);
    2.0 * m.conv as f64 * m.conv_dim() as f64 + 2.0 * q * g * n + 2.0 * q * d + 4.0 * n * d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::preset;

    /// Narayanan et al. 2021 (SC21), Appendix, Eq. (3): with full
    /// recomputation a GPT step is 96·B·s·l·h²·(1 + s/6h + V/16lh), on each
    /// of Table 1's shapes.
    #[test]
    fn hardware_flops_are_narayanans_formula() {
        // (layers, hidden, heads, batch) from Table 1; s 2048, V 51200.
        for (l, h, a, b) in [
            (24u64, 2304u64, 24u64, 512u64),
            (30, 3072, 32, 512),
            (36, 4096, 32, 512),
            (40, 6144, 48, 1024),
            (48, 8192, 64, 1536),
            (60, 10240, 80, 1792),
            (80, 12288, 96, 2304),
            (96, 16384, 128, 2160),
            (105, 20480, 128, 2520),
            (128, 25600, 160, 3072),
        ] {
            let (s, v) = (2048.0, 51200.0);
            let mut cfg = DetailedConfig::new(Architecture::gpt2(l, h, a, 51200), 2048, b);
            cfg.recompute = Recompute::Full;
            let (lf, hf, bf) = (l as f64, h as f64, b as f64);
            let want = 96.0 * bf * s * lf * hf * hf * (1.0 + s / (6.0 * hf) + v / (16.0 * lf * hf));
            let got = step_flops(&cfg).hardware;
            assert!(
                (got / want - 1.0).abs() < 1e-12,
                "l{l} h{h}: {got} vs {want}"
            );
        }
    }

    /// Megatron-LM's `num_floating_point_operations` (training.py): 12·B·s·l·h²
    /// × ((1 + g/a + s/h)·q/h + f/h·(3/2 for SwiGLU)·k + shared/h·3/2 +
    /// V/(2lh)), with grouped-query heads, SwiGLU and experts.
    #[test]
    fn model_flops_are_megatrons_formula() {
        for name in [
            "llama-3.1-8b",
            "llama-3.1-70b",
            "llama-2-7b",
            "qwen2.5-7b",
            "mixtral-8x7b",
        ] {
            let arch = preset(name).unwrap().arch;
            let (s, b) = (4096.0, 8.0);
            let cfg = DetailedConfig::new(arch, 4096, 8);
            let (h, l, a, g) = (
                arch.hidden as f64,
                arch.layers as f64,
                arch.heads as f64,
                arch.kv_heads as f64,
            );
            let q = arch.q_dim() as f64;
            let (ffn, k) = match arch.moe {
                Some(m) => (m.expert_ffn as f64, m.top_k as f64),
                None => (arch.ffn as f64, 1.0),
            };
            let v = arch.vocab as f64;
            let mut want = 12.0
                * b
                * s
                * l
                * h
                * h
                * ((1.0 + g / a + s / h) * q / h + ffn / h * 1.5 * k + v / (2.0 * l * h));
            // Megatron leaves the router's h·E out; we count it.
            if let Some(m) = arch.moe {
                want += 6.0 * b * s * l * h * m.experts as f64;
            }
            let got = step_flops(&cfg).model;
            assert!((got / want - 1.0).abs() < 1e-12, "{name}: {got} vs {want}");
        }
    }

    /// PaLM, appendix B: 6N + 12·L·H·Q·T per token, N the parameters, for a
    /// model whose only parameters are matrices and whose embedding is the
    /// output layer (tied): GPT-2's shape without its biases and norms.
    #[test]
    fn model_flops_are_palms_for_tied_weights() {
        let arch = preset("gpt2-xl").unwrap().arch;
        let cfg = DetailedConfig::new(arch, 1024, 1);
        let (h, l, f) = (arch.hidden as f64, arch.layers as f64, arch.ffn as f64);
        let n = l * (4.0 * h * h + 2.0 * h * f) + h * arch.vocab as f64;
        let want =
            (6.0 * n + 12.0 * l * arch.heads as f64 * arch.head_dim() as f64 * 1024.0) * 1024.0;
        assert!((step_flops(&cfg).model / want - 1.0).abs() < 1e-12);
    }

    /// Selective recomputation repeats only the attention products, full
    /// every layer's forward: HFU ≥ MFU, ordered.
    #[test]
    fn recomputation_adds_hardware_flops_only() {
        let mut cfg = DetailedConfig::new(preset("llama-2-7b").unwrap().arch, 4096, 4);
        let none = step_flops(&cfg);
        cfg.recompute = Recompute::Selective;
        let selective = step_flops(&cfg);
        cfg.recompute = Recompute::Full;
        let full = step_flops(&cfg);
        assert_eq!((none.model, selective.model), (full.model, full.model));
        assert!(none.hardware < selective.hardware && selective.hardware < full.hardware);
        // Full recomputation: about a third more (the logits are not redone).
        assert!((full.hardware / full.model - 4.0 / 3.0).abs() < 0.02);
        // torchtitan's per-operator policy: k, o and up again, 2 operations
        // per weight per token, in every layer (Llama-2-7B: 4096² each for
        // k and o, 4096 × 11008 for up); eager attention's products too.
        cfg.recompute = Recompute::SelectiveOp;
        let op = step_flops(&cfg);
        let per_token = 32.0 * 2.0 * (2.0 * 4096.0 * 4096.0 + 4096.0 * 11008.0);
        let eager = cfg.attention == crate::detailed::AttentionKernel::Eager;
        let attention = if eager {
            forward_per_token(&cfg.arch, 4096).1.attention
        } else {
            0.0
        };
        let want = (per_token + attention) * op.tokens;
        assert!(((op.hardware - op.model) / want - 1.0).abs() < 1e-12);
        assert_eq!(op.model, full.model);
    }
}
