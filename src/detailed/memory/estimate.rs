//! The step at rest: the model states plus the saved activations, per GPU
//! (the figures the lesson's table has, for a real model).

use super::activations;
use super::check::{check, within_bytes};
use super::states::{self, ModelStates};
use crate::detailed::config::parallel::StageSplit;
use crate::detailed::config::{DetailedConfig, DetailedError};

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

/// The per-GPU budget for `cfg`: model states ([`states`]) plus the saved
/// activations ([`activations`]). With a 1F1B pipeline the first stage
/// holds p micro-batches of its L/p layers, the last stage one plus the
/// logits, and the larger of the two is reported (Narayanan et al. 2021);
/// under an uneven split the stage with the highest total of
/// [`stage_estimates`].
pub fn estimate(cfg: &DetailedConfig) -> Result<DetailedBreakdown, DetailedError> {
    check(cfg)?;
    let par = &cfg.parallel;
    let (states, saved) = states_and_saved(cfg);
    if let Some(split) = par.stage_split(&cfg.arch) {
        let stages = uneven_stages(cfg, split, states, &saved);
        let mut highest = stages[0].1;
        for &(_, b) in &stages[1..] {
            if b.total > highest.total {
                highest = b;
            }
        }
        within_bytes(cfg, highest.total)?;
        return Ok(highest);
    }
    let ModelStates {
        params,
        grads,
        master_weights,
        optimizer_state,
    } = states;
    let (activations, logits) = if par.pp == 1 {
        (
            cfg.arch.layers as f64 * saved.per_layer + saved.embedding + saved.head + saved.logits,
            saved.logits,
        )
    } else {
        let layers = par.stage_layers(&cfg.arch);
        let in_flight = cfg.stage_in_flight(0);
        let first = layers * in_flight * saved.per_layer + saved.embedding;
        let last = layers * saved.per_layer + saved.head + saved.logits;
        if first >= last {
            (first, 0.0)
        } else {
            (last, saved.logits)
        }
    };
    let total = params + grads + master_weights + optimizer_state + activations;
    within_bytes(cfg, total)?;
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

/// Each pipeline stage's budget by rank (0-based) under an uneven split
/// (the first, the second and the last: the middle stages hold the same
/// layers, the second the most micro-batches of them); otherwise the one
/// [`estimate`] reports.
pub fn stage_estimates(
    cfg: &DetailedConfig,
) -> Result<Vec<(u64, DetailedBreakdown)>, DetailedError> {
    let b = estimate(cfg)?;
    Ok(match cfg.parallel.stage_split(&cfg.arch) {
        Some(split) => {
            let (states, saved) = states_and_saved(cfg);
            uneven_stages(cfg, split, states, &saved)
        }
        None => vec![(0, b)],
    })
}

/// The model states on one GPU (the average stage's under a pipeline) and
/// one micro-batch's saved activations, as the step at rest holds them.
fn states_and_saved(cfg: &DetailedConfig) -> (ModelStates, activations::Saved) {
    let mut states = states::model_states(cfg);
    // The optimizer in backward frees each gradient in its parameter's
    // hook: no step holds them all (the timeline has the one stepped).
    if cfg.optimizer_in_backward {
        states.grads = 0.0;
    }
    let saved = activations::saved(cfg);
    // Megatron-Core's block method: the first layers of each chunk keep
    // their input, the rest everything ([`DetailedConfig::recomputes_layer`]).
    let saved = if cfg.block_recompute() {
        let share = cfg.recomputed_share();
        activations::Saved {
            per_layer: share * saved.per_layer + (1.0 - share) * saved.per_layer_full,
            ..saved
        }
    } else {
        saved
    };
    let saved = if cfg.offload.activations {
        // The layers not offloaded and one in flight on the GPU; the rest
        // on the host.
        let stage = cfg.parallel.stage_layers(&cfg.arch);
        activations::Saved {
            per_layer: saved.per_layer * cfg.resident_layers() / stage,
            ..saved
        }
    } else {
        saved
    };
    (states, saved)
}

/// Under an uneven pipeline split, each stage's states and saved
/// activations, by rank: the first (the embedding's input, its layers
/// of the micro-batches in flight), a middle one (the second: the most in
/// flight of the stages holding the middle's layers) and the last (the
/// output layer's input and the logits), each with its own layers, model
/// states ([`states::stage_states_scale`]) and micro-batches in flight
/// ([`Parallelism::stage_in_flight`]: Megatron-Core's warm-up per rank).
///
/// [`Parallelism::stage_in_flight`]: crate::detailed::config::Parallelism::stage_in_flight
fn uneven_stages(
    cfg: &DetailedConfig,
    split: StageSplit,
    states: ModelStates,
    saved: &activations::Saved,
) -> Vec<(u64, DetailedBreakdown)> {
    let par = &cfg.parallel;
    let mut ranks = vec![(0, split.first)];
    if par.pp > 2 {
        ranks.push((1, split.middle));
    }
    ranks.push((par.pp - 1, split.last));
    let stage = |(rank, layers): (u64, u64)| {
        let (first, last) = (rank == 0, rank == par.pp - 1);
        let k = states::stage_states_scale(cfg, layers, first, last);
        let layers = layers as f64 * cfg.stage_in_flight(rank) * saved.per_layer;
        let (outer, logits) = match (first, last) {
            (true, _) => (saved.embedding, 0.0),
            (_, true) => (saved.head + saved.logits, saved.logits),
            _ => (0.0, 0.0),
        };
        let activations = layers + outer;
        let (params, grads) = (states.params * k, states.grads * k);
        let (master_weights, optimizer_state) =
            (states.master_weights * k, states.optimizer_state * k);
        DetailedBreakdown {
            params,
            grads,
            master_weights,
            optimizer_state,
            activations,
            logits,
            total: params + grads + master_weights + optimizer_state + activations,
        }
    };
    ranks.into_iter().map(|r| (r.0, stage(r))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::preset;

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

#[cfg(test)]
mod objective_tests {
    use super::*;
    use crate::detailed::config::{BaseQuant, Framework, Objective, Reference, StepOptions};
    use crate::detailed::preset;
    use crate::detailed::{timeline, Moment};

    /// Hybrid sharding's group must divide dp, shard something, and is
    /// PyTorch's: each refused with its reason.
    #[test]
    fn hybrid_sharding_is_checked() {
        let mut cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 1024, 16);
        cfg.parallel.dp = 16;
        cfg.parallel.zero = 3;
        cfg.parallel.dp_shard = Some(8);
        assert!(estimate(&cfg).is_ok());
        cfg.parallel.dp_shard = Some(6);
        assert!(estimate(&cfg).unwrap_err().to_string().contains("divide"));
        cfg.parallel.dp_shard = Some(8);
        cfg.parallel.zero = 0;
        assert!(estimate(&cfg).unwrap_err().to_string().contains("--zero"));
        cfg.parallel.zero = 3;
        cfg.framework = Framework::DEEPSPEED;
        assert!(estimate(&cfg)
            .unwrap_err()
            .to_string()
            .contains("DeepSpeed"));
    }

    /// TRL's DPO: chosen and rejected in one forward (twice the sequences),
    /// a frozen reference beside the policy unless LoRA or precomputed.
    #[test]
    fn dpo_doubles_the_sequences_and_adds_the_reference() {
        let arch = preset("llama-2-7b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 1024, 8);
        cfg.parallel.dp = 8;
        cfg.parallel.zero = 3;
        let sft = estimate(&cfg).unwrap();
        cfg.objective = Objective::Dpo {
            reference: Reference::Model,
        };
        let dpo = estimate(&cfg).unwrap();
        assert_eq!(dpo.logits, 2.0 * sft.logits);
        assert!((dpo.activations / sft.activations - 2.0).abs() < 1e-9);
        // The reference: 2 bytes per parameter, partitioned by ZeRO-3 like the policy.
        assert_eq!(dpo.params - sft.params, arch.params() as f64 * 2.0 / 8.0);
        assert_eq!(dpo.optimizer_state, sft.optimizer_state);
        let t = timeline(&cfg, &StepOptions::default()).unwrap();
        let reference = t
            .events
            .iter()
            .find(|e| e.moment == Moment::ReferenceForward)
            .expect("a reference forward");
        // Logits of 2 × 1 sequences in bf16 and one sequence's fp32 log-softmax.
        assert_eq!(
            reference.live.transient,
            2048.0 * 32000.0 * 2.0 + 1024.0 * 32000.0 * 4.0
        );
        // Precomputed log-probabilities: no reference, no reference forward.
        cfg.objective = Objective::Dpo {
            reference: Reference::Precomputed,
        };
        assert_eq!(estimate(&cfg).unwrap().params, sft.params);
        // LoRA: the base with adapters off is the reference.
        cfg.lora_rank = Some(16);
        cfg.objective = Objective::Dpo {
            reference: Reference::Model,
        };
        let lora_dpo = estimate(&cfg).unwrap();
        cfg.objective = Objective::Sft;
        assert_eq!(lora_dpo.params, estimate(&cfg).unwrap().params);
    }

    #[test]
    fn bad_fine_tuning_combinations_name_the_conflict() {
        let arch = preset("llama-3.1-8b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 1024, 1);
        cfg.base_quant = BaseQuant::Nf4 { double_quant: true };
        assert!(estimate(&cfg).unwrap_err().0.contains("QLoRA needs LoRA"));
        cfg.lora_rank = Some(16);
        assert!(estimate(&cfg).is_ok());
        cfg.offload.optimizer = true;
        assert!(estimate(&cfg).unwrap_err().0.contains("needs ZeRO"));
        cfg.base_quant = BaseQuant::None;
        cfg.offload.optimizer = false;
        cfg.offload.params = true;
        cfg.parallel.zero = 2;
        assert!(estimate(&cfg).unwrap_err().0.contains("ZeRO-3"));
    }
}
