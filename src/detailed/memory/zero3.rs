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
//!   values): `flatten(averaged_gradients).to(fp32)` is a copy of the
//!   sub-group's gradient partition before the update
//!   (`_prepare_fp32_grad_for_sub_group`).
//!
//! Measured per rank (`tests/fixtures/deepspeed_measured.tsv`,
//! `deepspeed3_heldout_measured.tsv`, `deepspeed3_gpt2_measured.tsv`: five
//! shapes, 2 and 4 processes, the default buckets and smaller ones, first
//! and later steps; `tests/deepspeed_vs_measured.rs`).

use super::events::Moment;
use super::states::{grad_bytes, param_split, weight_bytes};
use crate::detailed::config::{DetailedConfig, Framework};
use crate::detailed::model::Family;

/// `stage3_param_persistence_threshold` (`runtime/zero/config.py`).
const PERSISTENCE_THRESHOLD: f64 = 1e5;
/// `stage3_max_reuse_distance` (`runtime/zero/config.py`).
const MAX_REUSE_DISTANCE: f64 = 1e9;
/// `stage3_max_live_parameters` (`runtime/zero/config.py`).
const MAX_LIVE_PARAMETERS: f64 = 1e9;
/// `sub_group_size` (`runtime/zero/config.py`).
pub(crate) const SUB_GROUP_SIZE: f64 = 1e9;

/// One module as ZeRO-3's trace sees it: its weights (indices into the
/// weights' sizes) and the values it counts towards reuse distances.
struct Module {
    at: Moment,
    params: Vec<usize>,
    numel: f64,
}

/// One coalesced all-gather: its flat buffer's bytes, its weights not yet
/// waited for, and whether they have been copied out.
struct Group {
    bytes: f64,
    left: usize,
    waited: bool,
}

/// Where each weight is on one GPU while the trace runs.
#[derive(Clone, Copy, PartialEq)]
enum Status {
    Partitioned,
    /// All-gathered by the group with this index, not yet waited for.
    InFlight(usize),
    Gathered,
}

/// What ZeRO-3 holds gathered on one GPU, in bytes, at each moment of one
/// step: the largest at any module of that moment.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Zero3 {
    first_step: bool,
    /// All persistent weights.
    persistent: f64,
    /// The embedding's gathered weights.
    embedding: f64,
    /// Gradient bytes reduced when backward ends.
    last_bucket: f64,
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
        } = cfg.framework
        else {
            return None;
        };
        if cfg.parallel.zero < 3 {
            return None;
        }
        let a = &cfg.arch;
        let tp = cfg.parallel.tp as f64;
        let (embedding, head, layer) = param_split(cfg);
        // A layer's weights as tensors (`ds_numel` on this GPU), each its
        // own module (`nn.Linear`); what the matrices leave is norms and
        // biases, each below the threshold. Mixture of experts and latent
        // attention: the layer as one module of one weight (an upper bound
        // on what is gathered at once).
        let matrices: Vec<f64> = a
            .layer_matrices()
            .map(|m| m.iter().map(|&(r, c)| (r * c) as f64 / tp).collect())
            .unwrap_or_else(|| vec![layer]);
        let rest = (layer - matrices.iter().sum::<f64>()).max(0.0);
        let persistent_layer = matrices
            .iter()
            .filter(|n| **n < PERSISTENCE_THRESHOLD)
            .sum::<f64>()
            + rest;

        // The weights: the embedding, each layer's matrices, the output
        // layer (the embedding's own when tied).
        let mut numel = vec![embedding];
        let layer_params: Vec<Vec<usize>> = (0..a.layers)
            .map(|_| {
                matrices
                    .iter()
                    .map(|&n| {
                        numel.push(n);
                        numel.len() - 1
                    })
                    .collect()
            })
            .collect();
        let head_param = if head > 0.0 {
            numel.push(head);
            numel.len() - 1
        } else {
            0
        };
        let persistent_param = |i: usize| numel[i] < PERSISTENCE_THRESHOLD;

        // The trace: forward, then backward in reverse (as the backward
        // hooks fire, measured: down, up, gate, o, v, k, q). Norms are
        // modules of persistent weights only: they count towards reuse
        // distances.
        let module = |at, params: Vec<usize>, extra: f64| Module {
            numel: params.iter().map(|&i| numel[i]).sum::<f64>() + extra,
            at,
            params,
        };
        // Containers (the model, each layer, its attention and MLP) have
        // no weights of their own but prefetch when their hooks run.
        let container = |at| module(at, vec![], 0.0);
        let mut trace = vec![
            container(Moment::Start),
            container(Moment::Start),
            module(Moment::Start, vec![0], 0.0),
        ];
        // The attention's matrices come first: Llama's q, k, v, o; GPT-2's
        // c_attn, c_proj.
        let attention = match a.family {
            Family::Llama => 4,
            Family::Gpt2 => 2,
        };
        let (attention, mlp) = (attention.min(matrices.len()), matrices.len());
        for (i, ps) in layer_params.iter().enumerate() {
            let at = Moment::LayerForward(i as u64);
            trace.push(container(at));
            trace.push(module(at, vec![], rest / 2.0));
            trace.push(container(at));
            trace.extend(ps[..attention].iter().map(|&p| module(at, vec![p], 0.0)));
            trace.push(module(at, vec![], rest / 2.0));
            trace.push(container(at));
            trace.extend(ps[attention..mlp].iter().map(|&p| module(at, vec![p], 0.0)));
        }
        // The output layer is gathered after the final norm, before the
        // logits exist.
        trace.push(module(Moment::OutputGather, vec![], 0.0));
        trace.push(module(Moment::OutputGather, vec![head_param], 0.0));
        trace.push(module(Moment::HeadBackward, vec![head_param], 0.0));
        trace.push(module(
            Moment::NormBackward,
            vec![],
            a.final_norm_params() as f64,
        ));
        for (i, ps) in layer_params.iter().enumerate().rev() {
            let at = Moment::LayerBackward(i as u64);
            trace.push(container(at));
            trace.push(container(at));
            trace.extend(
                ps[attention..mlp]
                    .iter()
                    .rev()
                    .map(|&p| module(at, vec![p], 0.0)),
            );
            trace.push(module(at, vec![], rest / 2.0));
            trace.push(container(at));
            trace.extend(
                ps[..attention]
                    .iter()
                    .rev()
                    .map(|&p| module(at, vec![p], 0.0)),
            );
            trace.push(module(at, vec![], rest / 2.0));
        }
        trace.push(module(Moment::EmbeddingBackward, vec![0], 0.0));

        let backward_from = backward_from(&trace);
        let (wb, gb) = (weight_bytes(cfg), grad_bytes(cfg));
        // Gradients: copied into the bucket as backward produces them; a
        // weight that would overflow a non-empty bucket reduces it first
        // (`__add_grad_to_ipg_bucket`), two copies of its contents at the
        // peak (measured).
        let bucket = reduce_bucket_size as f64;
        let mut held = 0.0_f64;
        let mut reduce_at = vec![0.0_f64; trace.len()];
        for (k, m) in trace.iter().enumerate().skip(backward_from) {
            let norms = (m.params.is_empty() && m.numel > 0.0).then_some(m.numel);
            // A tied table's gradient is ready once, after the embedding's
            // backward has added its share.
            let tied = m.at == Moment::HeadBackward && head == 0.0;
            let grads = m.params.iter().filter(|_| !tied).map(|&i| numel[i]);
            for n in grads.chain(norms) {
                if held > 0.0 && held + n > bucket {
                    reduce_at[k] = reduce_at[k].max(2.0 * held * gb);
                    held = 0.0;
                }
                held += n;
            }
        }

        let persistent = a.layers as f64 * persistent_layer * wb;
        let mut at: Vec<(Moment, f64)> = Vec::new();
        let mut note = |m: Moment, bytes: f64| match at.iter_mut().find(|(a, _)| *a == m) {
            Some((_, top)) => *top = top.max(bytes),
            None => at.push((m, bytes)),
        };
        if first_step {
            // No trace yet: each module's weights gathered when it runs
            // (in forward the all-gather output beside the copy, 2×; in
            // backward the output is freed before the gradients exist) and
            // released after; persistent ones kept from their first use.
            let mut kept = 0.0;
            for (k, m) in trace.iter().enumerate() {
                let (small, big): (Vec<usize>, Vec<usize>) =
                    m.params.iter().partition(|&&i| persistent_param(i));
                if k < backward_from {
                    kept += small.iter().map(|&i| numel[i] * wb).sum::<f64>();
                    if m.params.is_empty() {
                        kept += m.numel * wb;
                    }
                }
                let bytes: f64 = big.iter().map(|&i| numel[i] * wb).sum();
                let copies = if k < backward_from { 2.0 } else { 1.0 };
                note(m.at, kept + copies * bytes + reduce_at[k]);
            }
            // The output layer is released after its forward.
            note(Moment::Loss, persistent);
            note(Moment::LossBackward, persistent);
        } else {
            simulate(
                &trace,
                &numel,
                (wb, persistent),
                prefetch_bucket_size as f64,
                &reduce_at,
                &mut note,
            );
        }
        Some(Zero3 {
            first_step,
            persistent,
            embedding: embedding * wb,
            last_bucket: held * gb,
            largest_grad: matrices.iter().copied().fold(rest, f64::max) * gb,
            at,
        })
    }

    /// Gathered weights and ZeRO-3's own buffers at `moment`, beyond the
    /// partitions: part of the transient bytes.
    pub(crate) fn gathered(&self, moment: Moment) -> f64 {
        match moment {
            Moment::Start | Moment::End if self.first_step => 0.0,
            Moment::Start | Moment::End => self.persistent,
            Moment::GradientReduce => self.persistent + self.embedding + 2.0 * self.last_bucket,
            m => self
                .at
                .iter()
                .find(|(at, _)| *at == m)
                .map_or(0.0, |&(_, bytes)| bytes),
        }
    }
}

/// Index of the first backward module: the output layer's backward.
fn backward_from(trace: &[Module]) -> usize {
    trace
        .iter()
        .position(|m| m.at == Moment::HeadBackward)
        .unwrap_or(trace.len())
}

/// A later step, traced: `fetch_sub_module` waits for the module's
/// weights (all-gathering those not yet in flight), then prefetches the
/// trace's next weights until `prefetch` values are in flight (or
/// `stage3_max_live_parameters` are gathered), as one coalesced all-gather
/// whose flat buffer lives until its last weight is waited for;
/// `release_sub_module` frees a weight unless the prefetcher has already
/// passed its next use or that use comes within `stage3_max_reuse_distance`
/// values (`__params_to_release`). Persistent weights stay gathered.
fn simulate(
    trace: &[Module],
    numel: &[f64],
    (wb, persistent_bytes): (f64, f64),
    prefetch: f64,
    reduce_at: &[f64],
    note: &mut impl FnMut(Moment, f64),
) {
    let persistent = |i: usize| numel[i] < PERSISTENCE_THRESHOLD;
    // Prefix sums of the values each module counts, and each use's next.
    let mut prefix = vec![0.0];
    for m in trace {
        prefix.push(prefix.last().unwrap() + m.numel);
    }
    let uses: Vec<(usize, usize)> = trace
        .iter()
        .enumerate()
        .flat_map(|(k, m)| m.params.iter().map(move |&p| (k, p)))
        .filter(|&(_, p)| !persistent(p))
        .collect();
    // Each module's next use of each of its weights, from the end back.
    let mut seen: Vec<Option<usize>> = vec![None; numel.len()];
    let mut next_use: Vec<Vec<Option<usize>>> = vec![Vec::new(); trace.len()];
    for (k, m) in trace.iter().enumerate().rev() {
        next_use[k] = m.params.iter().map(|&p| seen[p]).collect();
        for &p in &m.params {
            seen[p] = Some(k);
        }
    }
    let backward = backward_from(trace);
    let mut status = vec![Status::Partitioned; numel.len()];
    let mut groups: Vec<Group> = Vec::new();
    let mut fetched_for = vec![0usize; numel.len()];
    let mut queue = 0usize;
    let (mut copies, mut flats, mut available) = (0.0_f64, 0.0_f64, 0.0_f64);
    // Issues one coalesced all-gather: its flat output now, beside the
    // collective's own buffer of that size while it runs (measured).
    let issue = |params: &[usize],
                 status: &mut [Status],
                 groups: &mut Vec<Group>,
                 flats: &mut f64,
                 peak: &mut f64,
                 copies: f64| {
        let values: f64 = params.iter().map(|&p| numel[p]).sum();
        let bytes = values * wb;
        groups.push(Group {
            bytes,
            left: params.len(),
            waited: false,
        });
        for &p in params {
            status[p] = Status::InFlight(groups.len() - 1);
        }
        *flats += bytes;
        *peak = peak.max(copies + *flats + bytes);
        values
    };
    for (k, m) in trace.iter().enumerate() {
        // This module's weights not yet in flight: gathered now.
        let missing: Vec<usize> = m
            .params
            .iter()
            .copied()
            .filter(|&p| !persistent(p) && status[p] == Status::Partitioned)
            .collect();
        let mut peak = 0.0_f64;
        if !missing.is_empty() {
            available += issue(
                &missing,
                &mut status,
                &mut groups,
                &mut flats,
                &mut peak,
                copies,
            );
        }
        // Waiting: the first wait on a group copies every weight of it out
        // of the flat buffer (`torch.cat`); the flat buffer goes with the
        // group's last weight waited for.
        for &p in &m.params {
            if let Status::InFlight(g) = status[p] {
                let group = &mut groups[g];
                if !group.waited {
                    group.waited = true;
                    copies += group.bytes;
                }
                status[p] = Status::Gathered;
                group.left -= 1;
                if group.left == 0 {
                    flats -= group.bytes;
                }
            }
        }
        peak = peak.max(copies + flats);
        // Prefetch: the queue's uses after this module.
        queue = queue.max(uses.partition_point(|&(j, _)| j <= k));
        let budget = prefetch.min(MAX_LIVE_PARAMETERS - available);
        let (mut group, mut values) = (Vec::new(), 0.0);
        while prefetch > 0.0 && queue < uses.len() && values < budget {
            let (j, p) = uses[queue];
            queue += 1;
            fetched_for[p] = fetched_for[p].max(j);
            if status[p] == Status::Partitioned && !group.contains(&p) {
                group.push(p);
                values += numel[p];
            }
        }
        if !group.is_empty() {
            available += issue(
                &group,
                &mut status,
                &mut groups,
                &mut flats,
                &mut peak,
                copies,
            );
        }
        // A gathering module's all-gather output beside its copies counts
        // in forward; in backward it is freed before the gradients exist.
        let forward = !matches!(
            m.at,
            Moment::HeadBackward | Moment::LayerBackward(_) | Moment::EmbeddingBackward
        );
        let now = if forward { peak } else { copies + flats };
        note(m.at, persistent_bytes + now + reduce_at[k]);
        // Release.
        for (&p, next) in m.params.iter().zip(&next_use[k]) {
            if persistent(p) || status[p] != Status::Gathered || fetched_for[p] > k {
                continue;
            }
            let kept = next.is_some_and(|n| prefix[n] - prefix[k + 1] < MAX_REUSE_DISTANCE);
            if !kept {
                status[p] = Status::Partitioned;
                copies -= numel[p] * wb;
                available -= numel[p];
            }
        }
        // The loss runs once the output layer's forward has released.
        if k + 1 == backward {
            note(Moment::Loss, persistent_bytes + copies + flats);
            note(Moment::LossBackward, persistent_bytes + copies + flats);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        };
        let without = Zero3::new(&cfg, false).unwrap();
        let at = Moment::LayerForward(3);
        assert!(without.gathered(at) < with.gathered(at));
        // At least the default's 5e7 values in flight, bf16.
        assert!(with.gathered(at) - without.gathered(at) >= 5e7 * 2.0);
    }
}
