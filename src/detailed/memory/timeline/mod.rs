//! Live memory over one training step, event by event, and its peak: the
//! answer to "will it fit".
//!
//! [`estimate`](fn@super::estimate) adds the model states and what the forward
//! pass saves for backward. A run runs out of memory at the *peak* of live
//! memory during a step instead, which is above that sum when backward's
//! transient buffers stack on what is still saved (the loss's gradients,
//! above all), and below it when the peak is the optimizer step, after the
//! activations are gone. This module walks one step the way PyTorch runs it —
//! forward layer by layer, the loss, backward layer by layer, the optimizer
//! step, `zero_grad` — and keeps, at each event, the live bytes by category.
//!
//! The step modelled is a *later* step by default ([`Step::Later`]): the
//! optimizer state then already lives through forward and backward, so its
//! peak is the one a run must survive (the first step's optimizer phase is
//! the same, its forward and backward lower). [`Step::First`] models the
//! first, where `optimizer.step()` creates the state.
//!
//! The events and their transients, each from the code it models:
//! - **Loss, forward** (`transformers`' `ForCausalMLMLoss`,
//!   `loss/loss_utils.py`): the output layer's logits in the model's dtype,
//!   their fp32 copy (`logits.float()`, none in fp32), and the fp32
//!   log-probabilities that `cross_entropy`'s `log_softmax` keeps for
//!   backward. The output object, and with it the logits, is dropped before
//!   backward, as the Hugging Face Trainer does (`compute_loss` returns only
//!   the loss).
//! - **Loss, backward** (PyTorch `derivatives.yaml`: `nll_loss_backward`
//!   allocates the gradient of the log-probabilities, `_log_softmax_backward_data`
//!   the gradient of the logits, both fp32, while the saved log-probabilities
//!   are still alive): 8·n·V bytes on top of everything saved. Megatron's
//!   fused vocabulary-parallel cross entropy (`tensor_parallel/cross_entropy.py`)
//!   computes the gradient in place of its saved softmax instead and only
//!   casts it to the model's dtype.
//! - **Layer backward**: the gradient of the residual stream and of the
//!   branch input (2·n·h), plus the largest of the MLP's and the attention's
//!   own activation gradients (autograd frees each node's saved tensors and
//!   its incoming gradient once the node has run: `torch/csrc/autograd/engine.cpp`,
//!   `Node::release_variables`), and the layer's recomputed activations under
//!   selective or full recomputation. The layer's weight gradients appear
//!   here (`AccumulateGrad` keeps the first gradient it gets; later ones,
//!   from later micro-batches, are added in place, so each parameter's
//!   incoming gradient is a transient of its size).
//! - **Optimizer step** (`torch/optim/adamw.py`): the first step creates the
//!   state (`zeros_like` for both moments, a 0-d `step` per tensor). The
//!   per-parameter loop (`_single_tensor_adamw`, PyTorch's default off CUDA)
//!   computes `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)`:
//!   two temporaries of the largest trained tensor. The `foreach` version
//!   (`_multi_tensor_adamw`, the CUDA default) computes
//!   `torch._foreach_sqrt(exp_avg_sqs)` for all tensors at once: one copy of
//!   every trained parameter. The fused kernels (`fused=True`, apex and
//!   Transformer Engine's FusedAdam, which Megatron uses) keep none; nor do
//!   SGD and 8-bit Adam's blockwise kernels. `zero_grad()` then frees the
//!   gradients (`set_to_none=True`, PyTorch's default since 2.0). Megatron
//!   (the `fused` profile) keeps its gradient buffers for the whole run
//!   instead, and adds each weight's gradient into them as backward
//!   produces it (a transient of that weight's size).
//! - **Micro-batches**: the second and later micro-batches start with the
//!   accumulated gradients alive; they are all alike, so the timeline shows
//!   the first and one later micro-batch.
//! - **ZeRO-3** gathers each layer's parameters before its forward and its
//!   backward and frees them after; with the next layer prefetched, two
//!   layers are gathered at a time (PyTorch FSDP's `limit_all_gathers` rate
//!   limiter allows two in-flight all-gathers; DeepSpeed prefetches by
//!   `stage3_prefetch_bucket_size`). ZeRO-2 and 3 hold a layer's full
//!   gradient until it is reduce-scattered to its shard. DeepSpeed's ZeRO-2
//!   allocates its flat gradient partition whole at its first reduction;
//!   its ZeRO-1 without `overlap_comm` keeps every whole gradient until
//!   backward ends, then reduces them into the partition.
//! - **Pipelines (1F1B)**: the first stage holds p micro-batches' activations
//!   when its first backward starts, the last stage one and the logits
//!   (Narayanan et al. 2021, §2.2); both stages are walked and the one with
//!   the higher peak is shown.
//!
//! Checked against the peak of live tensor bytes measured in PyTorch on the
//! CPU (`tests/fixtures/peak_measured.tsv`, `tests/timeline_vs_measured.rs`).
//! What only a GPU adds (the CUDA context, library workspaces, the caching
//! allocator's fragmentation) is not in these figures.
//!
//! The parts, one file each: `pieces.rs` prices what one micro-batch
//! allocates and frees, `walk.rs` walks its forward and backward and the
//! optimizer step (`optimizer.rs` prices the update's temporaries),
//! `stages.rs` picks the pipeline stages walked, `why.rs` says in words why
//! the peak differs from the sum ([`why_peak`]).

mod optimizer;
mod pieces;
mod stages;
mod walk;
mod why;

pub use why::why_peak;

use super::check;
use super::check::within_bytes;
use super::events::StepTimeline;
use crate::detailed::config::{
    AdamImpl, DetailedConfig, DetailedError, Device, Profile, Step, StepOptions,
};

/// Default AdamW implementation for the profile and device.
pub fn default_adam(cfg: &DetailedConfig) -> AdamImpl {
    match (cfg.profile, cfg.device) {
        (Profile::Fused, _) => AdamImpl::Fused,
        (Profile::Hf, Device::Cuda) => AdamImpl::Foreach,
        (Profile::Hf, Device::Cpu) => AdamImpl::ForLoop,
    }
}

/// The step timeline of `cfg` on one GPU: under a pipeline, the stage with
/// the higher peak ([`stage_timelines`] has both).
///
/// ```
/// use membudget::detailed::{preset, timeline, DetailedConfig, Phase, Profile, StepOptions};
///
/// let mut cfg = DetailedConfig::new(preset("gpt2").unwrap().arch, 1024, 8);
/// cfg.profile = Profile::Hf;
/// let t = timeline(&cfg, &StepOptions::default()).unwrap();
/// assert_eq!(t.peak_event().phase, Phase::Backward);
/// ```
pub fn timeline(cfg: &DetailedConfig, opts: &StepOptions) -> Result<StepTimeline, DetailedError> {
    Ok(highest(walks(cfg, opts, true)?, opts))
}

/// The step's peak alone, in bytes: [`timeline`]'s walk keeping only the
/// highest event of each stage, for the planner, which prices hundreds of
/// configurations and reads nothing else (the same figure, without
/// storing a thousand events to read one).
pub fn peak(cfg: &DetailedConfig, opts: &StepOptions) -> Result<f64, DetailedError> {
    Ok(highest(walks(cfg, opts, false)?, opts).peak_bytes())
}

/// The timeline of the stage with the higher peak (the first of equals).
fn highest(stages: Vec<StepTimeline>, opts: &StepOptions) -> StepTimeline {
    let mut best: Option<StepTimeline> = None;
    for t in stages {
        if best
            .as_ref()
            .is_none_or(|b| t.peak_bytes() > b.peak_bytes())
        {
            best = Some(t);
        }
    }
    best.unwrap_or(StepTimeline {
        events: Vec::new(),
        peak: 0,
        stage: 1,
        first_step: opts.step == Step::First,
        bucket: 0.0,
        engine: 0.0,
        loss: crate::detailed::config::Loss::Full,
    })
}

/// The step timelines of the first pipeline stage (the embedding, p
/// micro-batches in flight) and of the last (the logits and the loss), in
/// that order; one timeline without a pipeline. The stages between hold
/// less than the first.
pub fn stage_timelines(
    cfg: &DetailedConfig,
    opts: &StepOptions,
) -> Result<Vec<StepTimeline>, DetailedError> {
    walks(cfg, opts, true)
}

/// Each stage's walk, with every event or only the highest.
fn walks(
    cfg: &DetailedConfig,
    opts: &StepOptions,
    every_event: bool,
) -> Result<Vec<StepTimeline>, DetailedError> {
    check(cfg)?;
    let start = walk::Start::new(cfg, opts);
    let walked: Vec<StepTimeline> = stages::stages(cfg)
        .into_iter()
        .map(|stage| stages::walk(cfg, &start, stage, every_event))
        .collect();
    for t in &walked {
        within_bytes(cfg, t.peak_bytes())?;
    }
    Ok(walked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::config::AttentionKernel;
    use crate::detailed::memory::events::{Moment, Phase};
    use crate::detailed::{Framework, PRESETS};

    /// The planner's peak-only walk gives the full walk's peak to the bit,
    /// and its event: every preset, pipelines, frameworks, first steps.
    #[test]
    fn the_peak_alone_is_the_timelines_peak() {
        let mut walked = 0;
        for p in PRESETS {
            let mut cfg = DetailedConfig::new(p.arch, 2048, 16);
            cfg.attention = AttentionKernel::Flash;
            for (pp, zero, framework, step) in [
                (1, 0, Framework::Megatron, Step::Later),
                (2, 1, Framework::Megatron, Step::First),
                (
                    1,
                    3,
                    Framework::Fsdp2 {
                        reshard_after_forward: true,
                    },
                    Step::Later,
                ),
                (1, 3, Framework::DEEPSPEED, Step::First),
            ] {
                cfg.parallel.pp = pp;
                cfg.parallel.dp = 2;
                cfg.parallel.zero = zero;
                cfg.framework = framework;
                let opts = StepOptions { step, adam: None };
                let Ok(t) = timeline(&cfg, &opts) else {
                    continue;
                };
                assert_eq!(peak(&cfg, &opts).unwrap(), t.peak_bytes(), "{}", p.name);
                walked += 1;
            }
        }
        assert!(walked > 60, "{walked}");
    }

    /// Megatron-Core's block method (`--recompute-layers k`): the step at
    /// rest keeps k layers' inputs and the rest whole, k L-th of full
    /// recomputation's reruns; the timeline's peak lies between none and
    /// full, k equal to a stage's layers is full, and under a virtual
    /// pipeline the count is per chunk. Its time reruns k / L of the
    /// forward.
    #[test]
    #[cfg(not(target_arch = "wasm32"))]
    fn block_recomputation_keeps_the_rest_whole() {
        use crate::detailed::config::Recompute;
        use crate::detailed::time::hardware::gpu;
        use crate::detailed::time::steptime::{step_time, Cluster, Efficiency};
        let mut cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 4096, 8);
        cfg.attention = AttentionKernel::Flash;
        cfg.dropout = false;
        cfg.micro_batch = Some(1);
        let at = |recompute, layers| {
            let c = DetailedConfig {
                recompute,
                recompute_layers: layers,
                ..cfg
            };
            let b = estimate(&c).unwrap();
            let p = timeline(&c, &StepOptions::default()).unwrap().peak_bytes();
            let h100 = gpu("h100-sxm").unwrap();
            let t = step_time(&c, &Cluster::new(h100, 8), &Efficiency::for_gpu(&h100));
            (b.activations, p, t.step_s)
        };
        let none = at(Recompute::None, 0);
        let full = at(Recompute::Full, 0);
        let block = at(Recompute::Full, 8);
        assert_eq!(at(Recompute::Full, 32), full);
        // 8 of 32 layers keep their input, 24 keep everything (the
        // embedding's and the head's bytes are alike in all three).
        let mixed = (8.0 * full.0 + 24.0 * none.0) / 32.0;
        assert!((mixed - block.0).abs() < 1.0, "{mixed} {}", block.0);
        assert!(
            none.1 > block.1 && block.1 > full.1,
            "{none:?} {block:?} {full:?}"
        );
        assert!(none.2 < block.2 && block.2 < full.2);
        // A quarter of full recomputation's extra time, within rounding.
        let quarter = (block.2 - none.2) / (full.2 - none.2);
        assert!((quarter - 0.25).abs() < 0.02, "{quarter}");
        // Two virtual chunks of 16 layers a stage: 4 a chunk is 8 a stage.
        cfg.parallel.pp = 2;
        cfg.parallel.vp = 2;
        cfg.batch = 16;
        let chunked = DetailedConfig {
            recompute: Recompute::Full,
            recompute_layers: 4,
            ..cfg
        };
        assert!((chunked.recomputed_share() - 0.5).abs() < 1e-12);
        assert!((0..16)
            .filter(|&i| chunked.recomputes_layer(i, 16))
            .eq([0, 1, 2, 3, 8, 9, 10, 11]));
        // Refused in words: without full recomputation, past a chunk's
        // layers, outside Megatron.
        let refused = |c: DetailedConfig, says: &str| {
            let e = estimate(&c).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        };
        refused(
            DetailedConfig {
                recompute: Recompute::Selective,
                ..chunked
            },
            "--recompute full",
        );
        refused(
            DetailedConfig {
                recompute_layers: 9,
                ..chunked
            },
            "the 8 layers",
        );
        refused(
            DetailedConfig {
                framework: Framework::Ddp { bucket_view: true },
                ..chunked
            },
            "--framework megatron",
        );
    }

    /// Under a pipeline both end stages are walked, the first holding the
    /// micro-batches in flight, the last the loss; `timeline` is the one
    /// with the higher peak.
    #[test]
    fn both_end_stages_are_walked() {
        let mut cfg = DetailedConfig::new(
            crate::detailed::preset("llama-3.1-70b").unwrap().arch,
            4096,
            16,
        );
        cfg.micro_batch = Some(1);
        cfg.parallel.tp = 8;
        cfg.parallel.sp = true;
        cfg.parallel.pp = 4;
        let all = stage_timelines(&cfg, &StepOptions::default()).unwrap();
        assert_eq!(all.iter().map(|t| t.stage).collect::<Vec<_>>(), [1, 4]);
        assert!(all[1].events.iter().any(|e| e.moment == Moment::Loss));
        assert!(!all[0].events.iter().any(|e| e.moment == Moment::Loss));
        let worst = timeline(&cfg, &StepOptions::default()).unwrap();
        let top = all.iter().map(StepTimeline::peak_bytes).fold(0.0, f64::max);
        assert_eq!(worst.peak_bytes(), top);
        cfg.parallel.pp = 1;
        assert_eq!(
            stage_timelines(&cfg, &StepOptions::default())
                .unwrap()
                .len(),
            1
        );
    }
    use crate::detailed::{estimate, preset, Precision};

    fn gb(b: f64) -> String {
        format!("{:.1} GB", b / 1e9)
    }

    #[test]
    fn a_later_step_peaks_below_the_sum_when_the_optimizer_dominates() {
        // Llama-2-7B, seq 2048, batch 1, flash, mixed, AdamW one tensor at
        // a time: the gradients (freed by zero_grad in PyTorch) are not live
        // during forward, the activations not during the update, so the
        // "hf" step peaks at the update, below the sum.
        let arch = preset("llama-2-7b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 2048, 1);
        cfg.attention = AttentionKernel::Flash;
        cfg.profile = Profile::Hf;
        let opts = StepOptions {
            adam: Some(AdamImpl::ForLoop),
            ..StepOptions::default()
        };
        let t = timeline(&cfg, &opts).unwrap();
        let sum = estimate(&cfg).unwrap().total;
        assert!(t.peak_bytes() < sum, "{} vs {sum}", t.peak_bytes());
        assert_eq!(t.peak_event().phase, Phase::Optimizer);
        let why = why_peak(&t, sum, gb);
        assert!(why.contains("below the sum"), "{why}");
        assert!(why.contains("optimizer step"), "{why}");
    }

    #[test]
    fn long_sequences_peak_in_backward_above_the_sum() {
        let arch = preset("llama-3.1-8b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 8192, 4);
        cfg.profile = Profile::Hf;
        cfg.attention = AttentionKernel::Flash;
        let t = timeline(&cfg, &StepOptions::default()).unwrap();
        let sum = estimate(&cfg).unwrap().total;
        assert!(t.peak_bytes() > sum);
        assert_eq!(t.peak_event().phase, Phase::Backward);
        assert!(why_peak(&t, sum, gb).contains("above the sum"));
    }

    #[test]
    fn live_bytes_never_negative_and_states_match_the_breakdown() {
        for name in ["gpt2", "llama-2-7b", "qwen2.5-0.5b"] {
            let arch = preset(name).unwrap().arch;
            for (pp, zero, micro) in [(1, 0, 1), (2, 1, 2), (1, 3, 1)] {
                let mut cfg = DetailedConfig::new(arch, 1024, 8 * micro);
                cfg.micro_batch = Some(micro);
                cfg.parallel.dp = 4;
                cfg.parallel.zero = zero;
                cfg.parallel.pp = pp;
                cfg.precision = Precision::Bf16;
                let b = estimate(&cfg).unwrap();
                let t = timeline(&cfg, &StepOptions::default()).unwrap();
                for e in &t.events {
                    let l = &e.live;
                    for v in [
                        l.params,
                        l.grads,
                        l.optimizer_state,
                        l.activations,
                        l.transient,
                    ] {
                        assert!(v >= -1e-3, "{name}: {e:?}");
                    }
                    assert_eq!(l.params, b.params);
                }
                let update = t
                    .events
                    .iter()
                    .find(|e| e.moment == Moment::OptimizerUpdate)
                    .unwrap();
                assert_eq!(update.live.grads, b.grads, "{name}");
                assert_eq!(update.live.optimizer_state, b.optimizer_state, "{name}");
            }
        }
    }
}
