//! The pipeline stages a step's timeline walks: under 1F1B the first (the
//! embedding, p micro-batches in flight when its first backward starts) and
//! the last (one micro-batch, the logits and the loss), Narayanan et al.
//! 2021, §2.2; without a pipeline one stage that is both; under an uneven
//! split also a middle one, each with its own layers and states. Each is walked
//! from GRPO's rollout to `zero_grad`.

use super::walk::{Start, Walk};
use crate::detailed::config::parallel::StageSplit;
use crate::detailed::config::{DetailedConfig, Objective};
use crate::detailed::memory::events::StepTimeline;
use crate::detailed::memory::{grpo, states};

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
    /// Under an uneven split, its layers and its model states as a
    /// multiple of the average stage's; `None`: the even split's.
    uneven: Option<(u64, f64)>,
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
            uneven: None,
        }]
    } else if let Some(split) = par.stage_split(&cfg.arch) {
        uneven_stages(cfg, split)
    } else {
        let in_flight = cfg.stage_in_flight(0);
        vec![
            Stage {
                number: 1,
                first: true,
                last: false,
                in_flight,
                uneven: None,
            },
            Stage {
                number: par.pp,
                first: false,
                last: true,
                in_flight: 1.0,
                uneven: None,
            },
        ]
    }
}

/// The stages of an uneven split (Megatron-Core's
/// `--decoder-first/last-pipeline-num-layers`): the first, the second (the
/// middle stage with the most micro-batches in flight; the middle stages
/// hold the same layers) when there are more than two, and the last, each
/// with its own layers, model states ([`states::stage_states_scale`]) and
/// micro-batches in flight ([`Parallelism::stage_in_flight`]).
///
/// [`Parallelism::stage_in_flight`]: crate::detailed::config::Parallelism::stage_in_flight
fn uneven_stages(cfg: &DetailedConfig, split: StageSplit) -> Vec<Stage> {
    let par = &cfg.parallel;
    let mut ranks = vec![(0, split.first)];
    if par.pp > 2 {
        ranks.push((1, split.middle));
    }
    ranks.push((par.pp - 1, split.last));
    ranks
        .into_iter()
        .map(|(rank, layers)| {
            let (first, last) = (rank == 0, rank == par.pp - 1);
            Stage {
                number: rank + 1,
                first,
                last,
                in_flight: cfg.stage_in_flight(rank),
                uneven: Some((layers, states::stage_states_scale(cfg, layers, first, last))),
            }
        })
        .collect()
}

/// One step of `stage` walked from `start`: GRPO's rollout, the first
/// micro-batch and one later one, the optimizer step.
pub(super) fn walk(
    cfg: &DetailedConfig,
    start: &Start,
    stage: Stage,
    every_event: bool,
) -> StepTimeline {
    let own;
    let start = match stage.uneven {
        Some((layers, scale)) => {
            own = start.for_stage(layers, scale);
            &own
        }
        None => start,
    };
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
