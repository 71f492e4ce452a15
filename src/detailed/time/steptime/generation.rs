//! GRPO's rollout ([`crate::detailed::memory::grpo`]): the prompts'
//! prefill, the decoding one token at a time (the roofline of Williams et
//! al. 2009; Pope et al. 2022), and the reference's scoring with a KL
//! penalty.

use super::compute::Forward;
use super::rates::Rates;
use crate::detailed::config::{DetailedConfig, Objective};

/// GRPO's rollout on one GPU, seconds: none for other objectives;
/// `forward` is one micro-batch's forward on the stage.
pub(super) fn generation(cfg: &DetailedConfig, r: &Rates, forward: &Forward) -> f64 {
    if matches!(cfg.objective, Objective::Grpo { .. }) {
        generation_time(cfg, r, forward.mm + forward.attn + forward.mem)
    } else {
        0.0
    }
}

/// GRPO's rollout on one GPU ([`crate::detailed::memory::grpo`]), seconds:
/// the prefill of the generation batch's prompts at the matrix rate (2
/// FLOPs per active parameter per token, Kaplan et al. 2020, §2.1), then
/// one decoding step per completion token, each bound by the larger of
/// reading the weights and the key/value cache so far from memory and its
/// 2 FLOPs per active parameter per sequence (the roofline of Williams et
/// al. 2009; decoding at small batch is memory-bound, Pope et al. 2022,
/// §2); with a KL penalty, the reference's forward over every micro-batch
/// (one micro-batch's forward seconds: `micro_forward`).
fn generation_time(cfg: &DetailedConfig, r: &Rates, micro_forward: f64) -> f64 {
    let a = &cfg.arch;
    let g = crate::detailed::memory::grpo::generation(cfg);
    let b = g.sequences as f64;
    let c = cfg.rollout.completion_tokens(cfg.seq) as f64;
    let prompt = cfg.seq as f64 - c;
    let active = a.active_params() as f64;
    let weights = a.params() as f64 * crate::detailed::memory::states::weight_bytes(cfg);
    let prefill = 2.0 * active * b * prompt / r.flops;
    let avg_cache = crate::detailed::memory::grpo::kv_cache(cfg, b, prompt + c / 2.0);
    let token = ((weights + avg_cache) / r.bytes).max(2.0 * active * b / r.flops);
    let reference = if cfg.objective == (Objective::Grpo { kl: true }) {
        micro_forward * cfg.accumulation_steps() as f64
    } else {
        0.0
    };
    prefill + c * token + reference
}
