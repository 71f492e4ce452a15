//! What ZeRO-3 holds gathered at each moment of one step: on the first step
//! each module's weights around its use, on later steps the traced order's
//! coalesced prefetches, waits and releases (`fetch_sub_module`,
//! `release_sub_module`), each moment's bytes the largest over its modules.

use super::trace::{backward_from, Module};
use super::{MAX_LIVE_PARAMETERS, MAX_REUSE_DISTANCE};
use crate::detailed::memory::events::Moment;

/// Notes `bytes` gathered at `m`: the largest at any of its modules.
fn note(at: &mut Vec<(Moment, f64)>, m: Moment, bytes: f64) {
    match at.iter_mut().find(|(a, _)| *a == m) {
        Some((_, top)) => *top = top.max(bytes),
        None => at.push((m, bytes)),
    }
}

/// The first step, with no trace yet: the bytes gathered at each moment,
/// `wb` being a weight's bytes per value, `persistent` the bytes of all
/// persistent weights, `threshold` the persistence threshold and
/// `reduce_at` each module's bucket reduction.
pub(super) fn first_step(
    trace: &[Module],
    numel: &[f64],
    (wb, persistent): (f64, f64),
    threshold: f64,
    reduce_at: &[f64],
) -> Vec<(Moment, f64)> {
    let mut at: Vec<(Moment, f64)> = Vec::new();
    let backward_from = backward_from(trace);
    let persistent_param = |i: usize| numel[i] <= threshold;
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
        note(&mut at, m.at, kept + copies * bytes + reduce_at[k]);
    }
    // The output layer is released after its forward.
    note(&mut at, Moment::Loss, persistent);
    note(&mut at, Moment::LossBackward, persistent);
    at
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

/// What decides whether a weight is released after use: the prefix sums of
/// the values each module counts, the non-persistent weights' uses in trace
/// order (module, weight), and each module's next use of each of its
/// weights.
struct Reuse {
    prefix: Vec<f64>,
    uses: Vec<(usize, usize)>,
    next_use: Vec<Vec<Option<usize>>>,
}

impl Reuse {
    /// The reuse bookkeeping of `trace` over weights of `numel` values,
    /// those of at most `threshold` values persistent.
    fn of(trace: &[Module], numel: &[f64], threshold: f64) -> Self {
        let persistent = |i: usize| numel[i] <= threshold;
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
        Reuse {
            prefix,
            uses,
            next_use,
        }
    }
}

/// A later step's gathering while the trace runs: each weight's status,
/// the coalesced all-gathers issued, how far the prefetcher has gone, and
/// the bytes of gathered copies and of flat buffers in flight.
struct Gathering<'a> {
    numel: &'a [f64],
    /// A weight's bytes per value.
    wb: f64,
    status: Vec<Status>,
    groups: Vec<Group>,
    /// The last module each weight was prefetched for.
    fetched_for: Vec<usize>,
    /// The prefetcher's next use to look at.
    queue: usize,
    copies: f64,
    flats: f64,
    /// Values gathered or in flight (`stage3_max_live_parameters`' count).
    available: f64,
    /// `stage3_param_persistence_threshold`.
    threshold: f64,
}

impl Gathering<'_> {
    /// Issues one coalesced all-gather: its flat output now, beside the
    /// collective's own buffer of that size while it runs (measured);
    /// `peak` is raised to what that holds.
    fn issue(&mut self, params: &[usize], peak: &mut f64) {
        let values: f64 = params.iter().map(|&p| self.numel[p]).sum();
        let bytes = values * self.wb;
        self.groups.push(Group {
            bytes,
            left: params.len(),
            waited: false,
        });
        for &p in params {
            self.status[p] = Status::InFlight(self.groups.len() - 1);
        }
        self.flats += bytes;
        *peak = peak.max(self.copies + self.flats + bytes);
        self.available += values;
    }

    /// This module's weights not yet in flight: gathered now.
    fn fetch(&mut self, params: &[usize], peak: &mut f64) {
        let missing: Vec<usize> = params
            .iter()
            .copied()
            .filter(|&p| !self.persistent(p) && self.status[p] == Status::Partitioned)
            .collect();
        if !missing.is_empty() {
            self.issue(&missing, peak);
        }
    }

    /// Waiting: the first wait on a group copies every weight of it out
    /// of the flat buffer (`torch.cat`); the flat buffer goes with the
    /// group's last weight waited for.
    fn wait(&mut self, params: &[usize]) {
        for &p in params {
            if let Status::InFlight(g) = self.status[p] {
                let group = &mut self.groups[g];
                if !group.waited {
                    group.waited = true;
                    self.copies += group.bytes;
                }
                self.status[p] = Status::Gathered;
                group.left -= 1;
                if group.left == 0 {
                    self.flats -= group.bytes;
                }
            }
        }
    }

    /// Prefetch after module `k`: the queue's uses after it, up to
    /// `prefetch` values (or `stage3_max_live_parameters` gathered), as one
    /// coalesced all-gather.
    fn prefetch(&mut self, uses: &[(usize, usize)], k: usize, prefetch: f64, peak: &mut f64) {
        // Prefetch: the queue's uses after this module.
        self.queue = self.queue.max(uses.partition_point(|&(j, _)| j <= k));
        let budget = prefetch.min(MAX_LIVE_PARAMETERS - self.available);
        let (mut group, mut values) = (Vec::new(), 0.0);
        while prefetch > 0.0 && self.queue < uses.len() && values < budget {
            let (j, p) = uses[self.queue];
            self.queue += 1;
            self.fetched_for[p] = self.fetched_for[p].max(j);
            if self.status[p] == Status::Partitioned && !group.contains(&p) {
                group.push(p);
                values += self.numel[p];
            }
        }
        if !group.is_empty() {
            self.issue(&group, peak);
        }
    }

    /// Release after module `k` of its weights `params`: each unless
    /// persistent, prefetched past this use, or used again within
    /// `stage3_max_reuse_distance` values.
    fn release(&mut self, params: &[usize], reuse: &Reuse, k: usize) {
        for (&p, next) in params.iter().zip(&reuse.next_use[k]) {
            if self.persistent(p) || self.status[p] != Status::Gathered || self.fetched_for[p] > k {
                continue;
            }
            let kept =
                next.is_some_and(|n| reuse.prefix[n] - reuse.prefix[k + 1] < MAX_REUSE_DISTANCE);
            if !kept {
                self.status[p] = Status::Partitioned;
                self.copies -= self.numel[p] * self.wb;
                self.available -= self.numel[p];
            }
        }
    }

    /// Whether weight `p` is persistent (kept gathered).
    fn persistent(&self, p: usize) -> bool {
        self.numel[p] <= self.threshold
    }
}

/// A later step, traced: `fetch_sub_module` waits for the module's
/// weights (all-gathering those not yet in flight), then prefetches the
/// trace's next weights until `prefetch` values are in flight (or
/// `stage3_max_live_parameters` are gathered), as one coalesced all-gather
/// whose flat buffer lives until its last weight is waited for;
/// `release_sub_module` frees a weight unless the prefetcher has already
/// passed its next use or that use comes within `stage3_max_reuse_distance`
/// values (`__params_to_release`). Persistent weights stay gathered.
/// Returns the bytes gathered at each moment, `wb` being a weight's bytes
/// per value, `persistent_bytes` those of all persistent weights,
/// `threshold` the persistence threshold and `reduce_at` each module's
/// bucket reduction.
pub(super) fn later_step(
    trace: &[Module],
    numel: &[f64],
    (wb, persistent_bytes, threshold): (f64, f64, f64),
    prefetch: f64,
    reduce_at: &[f64],
) -> Vec<(Moment, f64)> {
    let mut at: Vec<(Moment, f64)> = Vec::new();
    let reuse = Reuse::of(trace, numel, threshold);
    let backward = backward_from(trace);
    let mut g = Gathering {
        numel,
        wb,
        status: vec![Status::Partitioned; numel.len()],
        groups: Vec::new(),
        fetched_for: vec![0usize; numel.len()],
        queue: 0usize,
        copies: 0.0_f64,
        flats: 0.0_f64,
        available: 0.0_f64,
        threshold,
    };
    for (k, m) in trace.iter().enumerate() {
        let mut peak = 0.0_f64;
        g.fetch(&m.params, &mut peak);
        g.wait(&m.params);
        peak = peak.max(g.copies + g.flats);
        g.prefetch(&reuse.uses, k, prefetch, &mut peak);
        // A gathering module's all-gather output beside its copies counts
        // in forward; in backward it is freed before the gradients exist.
        let forward = !matches!(
            m.at,
            Moment::HeadBackward | Moment::LayerBackward(_) | Moment::EmbeddingBackward
        );
        let now = if forward { peak } else { g.copies + g.flats };
        note(&mut at, m.at, persistent_bytes + now + reduce_at[k]);
        // Release.
        g.release(&m.params, &reuse, k);
        // The loss runs once the output layer's forward has released.
        if k + 1 == backward {
            note(&mut at, Moment::Loss, persistent_bytes + g.copies + g.flats);
            note(
                &mut at,
                Moment::LossBackward,
                persistent_bytes + g.copies + g.flats,
            );
        }
    }
    at
}
