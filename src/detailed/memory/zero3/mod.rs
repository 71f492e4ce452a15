//! DeepSpeed's ZeRO stage 3 (`deepspeed/runtime/zero/stage3.py`,
//! `partitioned_param_coordinator.py`, `parameter_offload.py`): which
//! gathered weights and buffers one GPU holds at each moment of a step, on
//! top of the partitions the model states count.
//!
//! - **Partitions allocated at start-up and kept**: the weights' partition,
//!   the optimizer's fp32 copy of it, and the flat gradient partition
//!   (`grad_partitions_flat_buffer`, `torch.zeros` in `__init__`, in the
//!   gradients' dtype), plus the reduce bucket (`ipg_buckets[dtype].buffer`,
//!   `reduce_bucket_size` values), all before the first step.
//! - **Persistent parameters**: a weight of fewer than
//!   `stage3_param_persistence_threshold` values (1e5; norms, biases, small
//!   projections) is gathered at its first use and kept whole
//!   (`ds_persist`), released before the optimizer step (`_pre_step`) and
//!   gathered again after it (`_post_step`).
//! - **The first step** (no trace yet) gathers each module's own weights
//!   when it runs and releases them after (`fetch_sub_module`,
//!   `release_sub_module`): one weight at a time, its all-gather output
//!   beside the whole tensor it is copied into while it arrives (2× the
//!   weight, measured).
//! - **Later steps** follow the traced order: every module's hook,
//!   containers' too, all-gathers the next `stage3_prefetch_bucket_size`
//!   values of the trace not yet gathered as one coalesced all-gather
//!   (`fetch_sub_module`). Its flat output is allocated when issued and
//!   lives until the last weight of the group is waited for (the handle
//!   stays in `__inflight_param_registry`); the first wait copies every
//!   weight of the group out of it (`AllGatherCoalescedHandle.wait`,
//!   `torch.cat`); gloo's receive buffer is a transient of the group's size
//!   when issued (measured: the whole model's twice over through forward
//!   with the default 5e7 on a small model). A weight is released after
//!   use only if the prefetcher has not passed its next use and that use is
//!   more than `stage3_max_reuse_distance` values of modules away (1e9,
//!   `__params_to_release`): a small model keeps every weight from forward
//!   to backward, a 70B one almost none.
//! - **Gradients** are copied into the bucket one weight at a time as
//!   backward produces them (`__add_grad_to_ipg_bucket`; a weight larger
//!   than the bucket keeps its own tensor); a weight that would overflow a
//!   non-empty bucket reduce-scatters it first (`__avg_scatter_grads`,
//!   DeepSpeed's default `reduce_scatter`; measured, two copies of its
//!   contents at the peak). What is left is reduced when backward ends
//!   (`independent_gradient_partition_epilogue`), the embedding still
//!   gathered (measured).
//! - **The optimizer step** runs per sub-group (`sub_group_size`, 1e9
//!   values, [`largest_sub_group`]): `flatten(averaged_gradients).to(fp32)`
//!   is a copy of the sub-group's gradient partition before the update
//!   (`_prepare_fp32_grad_for_sub_group`).
//!
//! Measured per rank (`tests/fixtures/deepspeed_measured.tsv`,
//! `deepspeed3_heldout_measured.tsv`, `deepspeed3_gpt2_measured.tsv`: five
//! shapes, 2 and 4 processes, the default buckets and smaller ones, first
//! and later steps; `tests/deepspeed_vs_measured.rs`).
//!
//! Beside stage 3, this module keeps the weights in the model's parameter
//! order that DeepSpeed's flat partitions follow at every stage
//! (`param_order`): ZeRO-1's reduction after backward without
//! `overlap_comm` ([`zero1_reduce_values`]), where ZeRO-2 allocates its
//! flat gradient partition ([`first_partition_layer`]), ZeRO-3's
//! sub-groups ([`largest_sub_group`]).
//!
//! The parts: `trace.rs` lays out the weights and the modules in the
//! order their hooks fire, and where backward's gradients overflow the
//! bucket; `gather.rs` follows what is gathered through that trace on the
//! first step and on later ones.

mod gather;
mod trace;

use super::events::Moment;
use super::states::{grad_bytes, param_split, weight_bytes};
use crate::detailed::config::{DetailedConfig, Framework};
use trace::{LayerTensors, Weights};

/// `stage3_max_reuse_distance` (`runtime/zero/config.py`).
const MAX_REUSE_DISTANCE: f64 = 1e9;
/// `stage3_max_live_parameters` (`runtime/zero/config.py`).
const MAX_LIVE_PARAMETERS: f64 = 1e9;

/// What ZeRO-3 holds gathered on one GPU, in bytes, at each moment of one
/// step: the largest at any module of that moment.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Zero3 {
    first_step: bool,
    /// All persistent weights.
    persistent: f64,
    /// The embedding's gathered weights.
    embedding: f64,
    /// What the reduction of the bucket's last gradients holds when
    /// backward ends, in bytes.
    last_reduce: f64,
    /// A layer's largest weight gradient: what backward holds of a layer's
    /// gradients at once.
    pub(crate) largest_grad: f64,
    /// Gathered weights, in-flight all-gather buffers and bucket
    /// reductions at each moment (the largest over its modules).
    at: Vec<(Moment, f64)>,
}

impl Zero3 {
    /// ZeRO-3's bookkeeping for `cfg`, `None` unless it runs DeepSpeed at
    /// stage 3.
    pub(crate) fn new(cfg: &DetailedConfig, first_step: bool) -> Option<Self> {
        let Framework::DeepSpeed {
            reduce_bucket_size,
            prefetch_bucket_size,
            param_persistence_threshold,
            ..
        } = cfg.framework
        else {
            return None;
        };
        if cfg.parallel.zero < 3 {
            return None;
        }
        let threshold = param_persistence_threshold as f64;
        let (embedding, head, layer) = param_split(cfg);
        let tensors = LayerTensors::of(cfg, layer, threshold);
        let weights = Weights::new(embedding, head, cfg.arch.layers, &tensors.matrices);
        let numel = &weights.numel;
        let trace = trace::trace(cfg, &weights, &tensors);
        let (wb, gb) = (weight_bytes(cfg), grad_bytes(cfg));
        let bucket = (reduce_bucket_size as f64, gb);
        let world = cfg.parallel.zero_divisor(3);
        let (reduce_at, last_reduce) =
            trace::bucket_reductions(&trace, numel, head == 0.0, bucket, world);
        let persistent = cfg.arch.layers as f64 * tensors.persistent * wb;
        let at = if first_step {
            gather::first_step(&trace, numel, (wb, persistent), threshold, &reduce_at)
        } else {
            let prefetch = prefetch_bucket_size as f64;
            let bytes = (wb, persistent, threshold);
            gather::later_step(&trace, numel, bytes, prefetch, &reduce_at)
        };
        Some(Zero3 {
            first_step,
            persistent,
            embedding: embedding * wb,
            last_reduce,
            largest_grad: tensors
                .matrices
                .iter()
                .copied()
                .fold(tensors.rest, f64::max)
                * gb,
            at,
        })
    }

    /// Gathered weights and ZeRO-3's own buffers at `moment`, beyond the
    /// partitions: part of the transient bytes.
    pub(crate) fn gathered(&self, moment: Moment) -> f64 {
        match moment {
            Moment::Start | Moment::End if self.first_step => 0.0,
            Moment::Start | Moment::End => self.persistent,
            Moment::GradientReduce => self.persistent + self.embedding + self.last_reduce,
            m => self
                .at
                .iter()
                .find(|(at, _)| *at == m)
                .map_or(0.0, |&(_, bytes)| bytes),
        }
    }
}

/// Each weight's values on this GPU in the model's parameter order: the
/// embedding, each layer's matrices then its norms and biases (as one), the
/// output layer (none when tied).
fn param_order(cfg: &DetailedConfig) -> Vec<f64> {
    let (embedding, head, layer) = param_split(cfg);
    let tensors = LayerTensors::of(cfg, layer, 0.0);
    let per_layer = tensors.matrices.iter().copied().chain([tensors.rest]);
    let layers = (0..cfg.arch.layers).flat_map(|_| per_layer.clone());
    std::iter::once(embedding)
        .chain(layers)
        .chain((head > 0.0).then_some(head))
        .collect()
}

/// The largest sub-group ZeRO-3's optimizer step updates at once, in
/// values of this GPU's partition: the parameters in the model's order,
/// each `ceil(numel / world)` values, closed into a sub-group once it
/// reaches `sub_group_size` (`stage3.py` 0.19.8, `_create_fp16_sub_groups`);
/// the whole partition when that is not smaller. Infinite under other
/// frameworks.
pub(crate) fn largest_sub_group(cfg: &DetailedConfig) -> f64 {
    let Framework::DeepSpeed { sub_group_size, .. } = cfg.framework else {
        return f64::INFINITY;
    };
    let limit = sub_group_size as f64;
    let world = cfg.parallel.zero_divisor(3);
    let (mut largest, mut open) = (0.0_f64, 0.0_f64);
    for n in param_order(cfg) {
        open += (n / world).ceil();
        if open >= limit {
            largest = largest.max(open);
            open = 0.0;
        }
    }
    largest.max(open)
}

/// Where the first GPU's flat gradient partition is allocated under
/// DeepSpeed's stages 2 (and 1 with `overlap_comm`), which reduce as
/// backward goes: at the first reduction holding a weight of it
/// (`copy_grads_in_partition`, `grads_in_partition`, allocated whole). Its
/// partition is the first `1/N` of the weights in the model's order, so
/// its first gradient is that of the last weight it reaches: in layer `j`
/// (`Some(j)`), or the embedding, reduced when backward ends (`None`).
/// Priced for that GPU, whose partition comes latest: the smallest peak
/// over the ranks (measured, `deepspeed_heldout39_measured.tsv`).
pub(crate) fn first_partition_layer(cfg: &DetailedConfig) -> Option<u64> {
    let params = param_order(cfg);
    let total: f64 = params.iter().sum();
    let partition = (total / cfg.parallel.zero_divisor(2)).ceil();
    let head = u64::from(param_split(cfg).1 > 0.0);
    let per_layer = (params.len() as u64 - 1 - head) / cfg.arch.layers.max(1);
    // The index of the last weight that starts inside the partition.
    let mut offset = 0.0;
    let mut last = 0;
    for (k, n) in params.iter().enumerate() {
        if offset < partition {
            last = k;
        }
        offset += n;
    }
    (last > 0).then(|| ((last as u64 - 1) / per_layer.max(1)).min(cfg.arch.layers - 1))
}

/// DeepSpeed's ZeRO-1 without `overlap_comm`, after backward
/// (`stage_1_and_2.py` 0.19.8, `reduce_gradients`): the gradient values
/// held, whole and in the flat partition, when the partition is allocated.
/// The whole gradients are taken in the model's order; each is copied into
/// the bucket and its own tensor freed, a bucket that would overflow
/// reduced first (`reduce_independent_p_g_buckets_and_remove_grads`); one
/// larger than the bucket is reduced in its own tensor, which stage 1 frees
/// only if it falls in this GPU's partition. The first reduction holding a
/// weight of the partition allocates it whole (`copy_grads_in_partition`,
/// `grads_in_partition`). Priced for the last GPU, whose partition comes
/// last and so is allocated last: the smallest peak over the ranks (the
/// first GPU allocates its partition beside every whole gradient).
pub(crate) fn zero1_reduce_values(cfg: &DetailedConfig) -> f64 {
    let Framework::DeepSpeed {
        reduce_bucket_size, ..
    } = cfg.framework
    else {
        return 0.0;
    };
    let bucket = reduce_bucket_size as f64;
    let params = param_order(cfg);
    let total: f64 = params.iter().sum();
    let world = cfg.parallel.zero_divisor(1);
    let partition = (total / world).ceil();
    let starts = total - partition;
    let mut whole = total;
    let mut held: Vec<(f64, bool)> = Vec::new();
    let (mut elements, mut offset) = (0.0, 0.0);
    let mut allocated = false;
    let mut peak = whole;
    // Reduces the bucket: allocates the partition at the first weight of
    // it, frees an oversized gradient of the partition once copied.
    let mut reduce = |held: &mut Vec<(f64, bool)>, whole: &mut f64| {
        for (n, mine) in held.drain(..) {
            if mine && !allocated {
                allocated = true;
                peak = peak.max(*whole + partition);
            }
            if mine && n > bucket {
                *whole -= n;
            }
        }
    };
    for n in params {
        if elements + n > bucket {
            reduce(&mut held, &mut whole);
            elements = 0.0;
        }
        if n <= bucket {
            whole -= n;
        }
        held.push((n, offset + n > starts));
        elements += n;
        offset += n;
    }
    reduce(&mut held, &mut whole);
    peak
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::memory::check::check;
    use crate::detailed::{preset, timeline, Step, StepOptions};

    fn zero3(model: &str, dp: u64) -> DetailedConfig {
        let mut cfg = DetailedConfig::new(preset(model).unwrap().arch, 4096, dp);
        cfg.micro_batch = Some(1);
        cfg.parallel.dp = dp;
        cfg.parallel.zero = 3;
        cfg.framework = Framework::DEEPSPEED;
        cfg
    }

    /// The reuse distance decides what a later step keeps from forward to
    /// backward: GPT-2's 124M weights all, Llama 3.1 70B's (856M a layer,
    /// its 1.05B output layer twice already over 1e9) only the output
    /// layer, with what the prefetcher holds ahead (capped by
    /// `stage3_max_live_parameters`, 1e9 values).
    #[test]
    fn reuse_distance_keeps_a_small_model_and_releases_a_large_one() {
        let at_loss = |cfg: &DetailedConfig| {
            let z = Zero3::new(cfg, false).unwrap();
            z.gathered(Moment::Loss) / (cfg.arch.params() as f64 * weight_bytes(cfg))
        };
        let small = at_loss(&zero3("gpt2", 2));
        assert!(small > 0.99, "{small}");
        let large = zero3("llama-3.1-70b", 8);
        let head = large.arch.head_params() as f64 / large.arch.params() as f64;
        let held = at_loss(&large);
        assert!(
            held > head && held < head + 1.3e9 / large.arch.params() as f64,
            "{held}"
        );
    }

    /// The first step gathers one weight at a time: nothing is kept between
    /// layers, and the step's peak is never above a later step's.
    #[test]
    fn first_step_gathers_one_weight_at_a_time() {
        let cfg = zero3("llama-3.1-8b", 8);
        let z = Zero3::new(&cfg, true).unwrap();
        let layer_forward = |i| z.gathered(Moment::LayerForward(i));
        let per_layer = layer_forward(2) - layer_forward(1);
        // Only the layer's persistent weights accumulate (its norms).
        assert!(per_layer > 0.0 && per_layer < 1e5 * 2.0 * 4.0);
        let first = StepOptions {
            step: Step::First,
            ..StepOptions::default()
        };
        let t1 = timeline(&cfg, &first).unwrap();
        let t2 = timeline(&cfg, &StepOptions::default()).unwrap();
        assert!(t1.peak_bytes() <= t2.peak_bytes());
    }

    /// No prefetch (`stage3_prefetch_bucket_size` 0): no flat buffers in
    /// flight ahead, so a later step gathers less than with the default.
    #[test]
    fn prefetching_costs_its_buffers() {
        let mut cfg = zero3("llama-3.2-1b", 4);
        let with = Zero3::new(&cfg, false).unwrap();
        cfg.framework = Framework::DeepSpeed {
            reduce_bucket_size: 500_000_000,
            prefetch_bucket_size: 0,
            overlap_comm: None,
            sub_group_size: 1_000_000_000,
            param_persistence_threshold: 100_000,
        };
        let without = Zero3::new(&cfg, false).unwrap();
        let at = Moment::LayerForward(3);
        assert!(without.gathered(at) < with.gathered(at));
        // At least the default's 5e7 values in flight, bf16.
        assert!(with.gathered(at) - without.gathered(at) >= 5e7 * 2.0);
    }

    /// `sub_group_size: 0` (axolotl's `zero3_bf16_cpuoffload_all.json`)
    /// closes a sub-group after every weight (`_create_fp16_sub_groups`:
    /// `local_sub_group_size >= sub_group_size` holds at once): the largest
    /// sub-group is the largest weight's partition, here Llama-3.2-1B's
    /// tied embedding over 4 GPUs.
    #[test]
    fn sub_group_size_zero_is_one_weight_a_group() {
        let mut cfg = zero3("llama-3.2-1b", 4);
        cfg.framework = Framework::DeepSpeed {
            reduce_bucket_size: 500_000_000,
            prefetch_bucket_size: 50_000_000,
            overlap_comm: None,
            sub_group_size: 0,
            param_persistence_threshold: 100_000,
        };
        assert_eq!(
            largest_sub_group(&cfg),
            (128_256.0 * 2048.0 / 4.0_f64).ceil()
        );
        assert!(check(&cfg).is_ok());
    }

    /// ZeRO-Infinity's CPU offload under DeepSpeed's ZeRO-3 (modelled from
    /// `stage3.py` 0.19.8: with `offload_optimizer` the fp32 partition,
    /// the moments and the gradient partition live in pinned host memory
    /// and CPU Adam steps there; with `offload_param` the 16-bit partition
    /// too, gathered into the same full-size buffers as without it). The
    /// GPU keeps the gathered weights, the reduce bucket and the
    /// activations: its peak falls by the states it no longer holds.
    #[test]
    fn offload_moves_the_partitions_not_the_gathered_weights() {
        let base = zero3("llama-3.1-8b", 8);
        let peak = |c: &DetailedConfig| timeline(c, &StepOptions::default()).unwrap().peak_bytes();
        let mut opt = base;
        opt.offload.optimizer = true;
        let mut all = opt;
        all.offload.params = true;
        for c in [&opt, &all] {
            assert!(check(c).is_ok());
        }
        let n = base.arch.params() as f64 / 8.0;
        // fp32 master, two moments and the 16-bit gradient partition.
        let saved = peak(&base) - peak(&opt);
        assert!(saved > 12.0 * n && saved < 16.5 * n, "{saved}");
        // Then the 16-bit partition.
        let more = peak(&opt) - peak(&all);
        assert!((more - 2.0 * n).abs() < 0.01 * n, "{more}");
        let gathered = |c: &DetailedConfig| Zero3::new(c, false).unwrap().gathered(Moment::Loss);
        assert_eq!(gathered(&base), gathered(&all));
    }
}
