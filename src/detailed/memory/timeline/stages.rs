//! The pipeline stages a step's timeline walks: under 1F1B the first (the
//! embedding, p micro-batches in flight when its first backward starts) and
//! the last (one micro-batch, the logits and the loss), Narayanan et al.
//! 2021, §2.2; without a pipeline one stage that is both. Each is walked
//! from GRPO's rollout to `zero_grad`.

use super::walk::{Start, Walk};
use crate::detailed::config::{DetailedConfig, Objective};
use crate::detailed::memory::events::StepTimeline;
use crate::detailed::memory::grpo;

/// One pipeline stage as the walk sees it.
pub(super) struct Stage {
    /// Its number, 1-based.
    number: u64,
    /// It holds the embedding.
    first: bool,
    /// It holds the output layer and the loss.
    last: bool,
    /// Micro-batches whose activations are alive when its first backward
    /// starts.
    in_flight: f64,
}

/// The stages walked: the first and the last under a pipeline, in that
/// order, else the one stage.
pub(super) fn stages(cfg: &DetailedConfig) -> Vec<Stage> {
    let par = &cfg.parallel;
    // Pipelines: the first stage (embedding, p micro-batches in flight) and
    // the last (loss, one); one stage is both without a pipeline.
    if par.pp == 1 {
        vec![Stage {
            number: 1,
            first: true,
            last: true,
            in_flight: 1.0,
        }]
    } else {
        let in_flight = par.first_stage_in_flight(cfg.accumulation_steps());
        vec![
            Stage {
                number: 1,
                first: true,
                last: false,
                in_flight,
            },
            Stage {
                number: par.pp,
                first: false,
                last: true,
                in_flight: 1.0,
            },
        ]
    }
}

/// One step of `stage` walked from `start`: GRPO's rollout, the first
/// micro-batch and one later one, the optimizer step.
pub(super) fn walk(
    cfg: &DetailedConfig,
    start: &Start,
    stage: Stage,
    every_event: bool,
) -> StepTimeline {
    let mut walk = Walk::new(cfg, start, every_event);
    if matches!(cfg.objective, Objective::Grpo { .. }) {
        walk.generation();
        walk.engine = grpo::engine_during_training(cfg);
    }
    let (first, last, in_flight) = (stage.first, stage.last, stage.in_flight);
    walk.micro_batch(start.stage_layers, first, last, in_flight);
    if start.micro_batches > 1 {
        walk.micro_batch = 2;
        walk.micro_batch(start.stage_layers, first, last, in_flight);
    }
    walk.optimizer_step(start);
    walk.finish(stage.number, start)
}
