//! What hiding a collective costs: the compute beside it runs slower
//! ([`slowdown`]).

use super::parts::Hidden;

/// How much slower computation runs while a collective overlaps it: 18.9 %,
/// the average "computational slowdown" Lee et al. measured when GPT and
/// LLaMA training overlapped computation with communication on four A100s,
/// H100s, MI250s and MI210s, against the same compute with no
/// communication beside it (maximum 40.0 %): the collectives' kernels take
/// streaming multiprocessors and memory bandwidth from the compute's
/// (Lee, Oh, Kim, Go, Park and Mahajan 2025, "Characterizing
/// Compute-Communication Overlap in GPU-Accelerated Distributed Deep
/// Learning: Performance and Power Implications", arXiv:2507.03114,
/// abstract). One measured average for every card and collective.
pub const OVERLAP_SLOWDOWN: f64 = 0.189;

/// The time the hidden collectives add to the step by slowing the compute
/// beside them, seconds: for the `h` seconds a collective runs behind
/// compute, that compute runs at 1 / (1 + s) of its rate, so it does
/// h / (1 + s) seconds of its work and leaves h · s / (1 + s) to run after.
/// Exact where the collective ends before the compute beside it (what the
/// model calls hidden); where a collective outlasts its compute, the part
/// of the slowdown its exposed tail covers is counted too, an upper bound.
/// Tensor parallelism's collectives inside the GEMMs, data parallelism's
/// gathers and reductions, and expert parallelism's overlapped all-to-alls
/// count alike; context parallelism's ring behind the attention and the
/// pipeline's sends are not counted.
pub(super) fn slowdown(hidden: &Hidden) -> f64 {
    let h = hidden.tensor_parallel + hidden.data_parallel + hidden.expert_parallel;
    h * OVERLAP_SLOWDOWN / (1.0 + OVERLAP_SLOWDOWN)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{at, llama};
    use super::*;

    /// Nothing hidden, nothing slowed: one GPU.
    #[test]
    fn one_gpu_pays_nothing() {
        let t = at(&llama(4096, 8));
        assert_eq!(t.parts.overlap_slowdown, 0.0);
    }

    /// Six seconds behind compute leave 6 · 0.189 / 1.189 s of it to run
    /// after, whichever collective hid.
    #[test]
    fn hidden_seconds_slow_the_compute_beside_them() {
        let h = Hidden {
            tensor_parallel: 1.0,
            data_parallel: 2.0,
            expert_parallel: 3.0,
        };
        assert!((slowdown(&h) - 6.0 * 0.189 / 1.189).abs() < 1e-12);
    }

    /// FSDP over eight A100s: the step is the compute, the exposed
    /// collectives and 0.189 / 1.189 of the hidden ones, and the step's
    /// parts add up to it.
    #[test]
    fn fsdp_pays_for_what_it_hides() {
        let mut c = llama(4096, 64);
        c.parallel.dp = 8;
        c.parallel.zero = 3;
        let t = at(&c);
        let p = t.parts;
        assert!(p.hidden.data_parallel > 0.0);
        assert!((p.overlap_slowdown - p.hidden.data_parallel * 0.189 / 1.189).abs() < 1e-12);
        assert!((p.total() - t.step_s).abs() < 1e-12);
    }
}
