//! What the forward pass keeps outside the layers: before the first (the
//! embedding's dropout mask, position ids, RoPE's tables) and after the
//! last (the final norm, the output layer's input, the loss and its
//! logits), per profile.

use super::peft::peft_llama;
use super::{gemma_rms, liger_rms, mask_bytes, rms};
use crate::detailed::config::{CompileScope, DetailedConfig, Loss, Objective, Profile};
use crate::detailed::memory::bytes::act_bytes;
use crate::detailed::memory::grpo;
use crate::detailed::memory::loss::loss_bytes;
use crate::detailed::model::Family;

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

/// What the forward pass keeps outside the layers for `b` sequences, per
/// profile and family.
pub(crate) fn outer_activations(cfg: &DetailedConfig, b: f64) -> OuterActivations {
    match (cfg.profile, cfg.arch.family) {
        // The chunked loss under compile: torchtune compiles each layer and
        // the loss's per-chunk cross-entropy, the rest runs eagerly
        // (`crate::detailed::memory::loss`).
        // The whole model compiled; or its layers, with the loss compiled
        // apart after the eager output layer.
        (Profile::Hf, _) if cfg.compile && cfg.loss == Loss::Full => match cfg.compile_scope {
            CompileScope::Model => super::compiled::outer(cfg, b),
            CompileScope::LayersLoss => separate_loss(cfg, b),
            CompileScope::Layers => hf_llama(cfg, b),
        },
        (Profile::Fused, _) => fused(cfg, b),
        (Profile::Hf, Family::Gpt2) => hf_gpt2(cfg, b),
        (Profile::Hf, Family::Llama) => hf_llama(cfg, b),
    }
}

/// The loss's fp32 log-probabilities for n tokens, 4·s·b·V (Korthikanti
/// §4.3).
fn logits(cfg: &DetailedConfig, n: f64) -> f64 {
    4.0 * n * cfg.arch.vocab as f64
}

/// Labels (int64) and the loss's fp32 total weight, for n tokens, in stock
/// `transformers`.
fn hf_loss(n: f64) -> f64 {
    8.0 * n + 4.0
}

/// Megatron-style kernels: the embedding dropout mask; the final norm's
/// input, the output layer's input.
fn fused(cfg: &DetailedConfig, b: f64) -> OuterActivations {
    let n = cfg.seq as f64 * b;
    let h = cfg.arch.hidden as f64;
    let p = act_bytes(cfg);
    OuterActivations {
        embedding: if cfg.dropout { n * h } else { 0.0 },
        head: 2.0 * n * h * p,
        head_norm: n * h * p,
        logits: logits(cfg, n),
    }
}

/// GPT-2 in stock `transformers`: position ids (int64, one row) and the
/// embedding dropout mask; `ln_f`'s input and statistics, `lm_head`'s
/// input, the loss's bookkeeping.
fn hf_gpt2(cfg: &DetailedConfig, b: f64) -> OuterActivations {
    let s = cfg.seq as f64;
    let n = s * b;
    let h = cfg.arch.hidden as f64;
    let p = act_bytes(cfg);
    let mask = mask_bytes(cfg);
    OuterActivations {
        embedding: 8.0 * s + n * h * mask,
        head: (n * h * p + 2.0 * n * p) + n * h * p + hf_loss(n),
        head_norm: n * h * p + 2.0 * n * p,
        logits: logits(cfg, n),
    }
}

/// A Llama-family model in stock `transformers`: RoPE's cos and sin
/// (shared by all layers); the final RMSNorm, `lm_head`'s input and the
/// loss's bookkeeping, or what PEFT's LoRA or GRPO's fused head keep
/// instead.
fn hf_llama(cfg: &DetailedConfig, b: f64) -> OuterActivations {
    let a = &cfg.arch;
    let n = cfg.seq as f64 * b;
    let h = a.hidden as f64;
    let p = act_bytes(cfg);
    let logits = logits(cfg, n);
    let loss = hf_loss(n);
    let rope = rope_tables(cfg);
    let norm = final_norm(cfg, n);
    // A loss without the full logits (`crate::detailed::memory::loss`).
    if let Some(l) = loss_bytes(cfg, n) {
        let norm = if peft_llama(cfg) && !cfg.liger {
            4.0 * n * h + 4.0 * n
        } else {
            norm
        };
        return OuterActivations {
            embedding: rope,
            head: norm + l.head + loss,
            head_norm: norm,
            logits: l.logits,
        };
    }
    // PEFT's LoRA: the final norm and the output layer are
    // frozen; the norm keeps its fp32 input and reciprocal
    // root, the output layer nothing.
    let grpo_head = matches!(cfg.objective, Objective::Grpo { .. });
    if peft_llama(cfg) {
        let norm = 4.0 * n * h + 4.0 * n;
        let (head, logits) = if grpo_head {
            (grpo::head(cfg).saved, 0.0)
        } else {
            (loss, logits)
        };
        let (embed, lm_head) = super::peft::outer_adapters(cfg, n);
        return OuterActivations {
            embedding: rope + embed,
            head: norm + head + lm_head,
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
    // GRPO's fused head keeps no logits (`crate::detailed::memory::grpo`).
    if grpo_head {
        return OuterActivations {
            embedding: rope,
            head: norm + grpo::head(cfg).saved,
            head_norm: norm,
            logits: 0.0,
        };
    }
    OuterActivations {
        embedding: rope,
        head: norm + n * h * p + loss + softcap,
        head_norm: norm,
        logits,
    }
}

/// Llama's layers compiled one by one and the full loss compiled apart
/// ([`CompileScope::LayersLoss`]): the final norm and the output layer
/// keep what they keep eagerly (the rotary tables, read by every compiled
/// layer, too); the compiled cross entropy saves its input, the logits in
/// the dtype, and two fp32 values a token (the row maximum and the
/// log-sum-exp), not fp32 log-probabilities (measured,
/// `tests/fixtures/compile_loss_measured.tsv`, torchtitan's rows).
fn separate_loss(cfg: &DetailedConfig, b: f64) -> OuterActivations {
    let n = cfg.seq as f64 * b;
    let eager = hf_llama(cfg, b);
    OuterActivations {
        head: eager.head + 8.0 * n,
        logits: n * cfg.arch.vocab as f64 * act_bytes(cfg),
        ..eager
    }
}

/// RoPE's cos and sin tables, shared by all layers, in the dtype.
fn rope_tables(cfg: &DetailedConfig) -> f64 {
    let a = &cfg.arch;
    let s = cfg.seq as f64;
    let p = act_bytes(cfg);
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
    if a.llama4() {
        4.0 * s * a.head_dim() as f64
    } else {
        2.0 * s * width as f64 * p
    }
}

/// The final RMSNorm over n tokens (Gemma's with sandwich norms).
fn final_norm(cfg: &DetailedConfig, n: f64) -> f64 {
    let a = &cfg.arch;
    let h = a.hidden as f64;
    // gpt-oss's final norm keeps its fp32 normalised values.
    if cfg.liger {
        liger_rms(n, h, act_bytes(cfg))
    } else if a.sandwich_norms {
        gemma_rms(n, h)
    } else if a.attention_sinks {
        rms(n, h, 4.0)
    } else {
        rms(n, h, act_bytes(cfg))
    }
}
