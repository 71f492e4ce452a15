//! Pipeline parallelism: each micro-batch's stage-to-stage sends, and the
//! schedule's bubble: 1F1B's and the interleaved schedule's (p−1)/v of a
//! stage's forward and backward (Narayanan et al. 2021, §2.2, Eq. 1 and
//! §2.2.2), or ZB-H1's, with the weights' gradients filling it (Qi et al.
//! 2024, "Zero Bubble Pipeline Parallelism", §3.1).

use super::compute::Compute;
use super::rates::Rates;
use super::Parts;
use crate::detailed::config::DetailedConfig;

/// The sends of one micro-batch of `m` tokens per GPU, seconds.
pub(super) fn sends(cfg: &DetailedConfig, r: &Rates, m: f64) -> f64 {
    let p = &cfg.parallel;
    let (dp, t, pp, vp, cp) = (
        p.dp.max(1),
        p.tp.max(1),
        p.pp.max(1),
        p.vp.max(1),
        p.cp.max(1),
    );
    // Pipeline: each micro-batch's activations leave every model chunk
    // forward and their gradients come back backward, v chunks per GPU
    // (scattered over the tensor-parallel ranks under SP).
    if pp <= 1 {
        return 0.0;
    }
    let bytes = 2.0 * m * cfg.arch.hidden as f64 / if p.sp { t as f64 } else { 1.0 };
    2.0 * vp as f64 * bytes / r.link(pp, t * dp * cp)
}

/// The bubble, seconds per step: of the stage's work per micro-batch, its
/// `compute` (`c`, before FSDP2's copies) and the exposed model-parallel
/// collectives of `micro`.
pub(super) fn bubble(cfg: &DetailedConfig, micro: &Parts, compute: f64, c: &Compute) -> f64 {
    let p = &cfg.parallel;
    let (pp, vp) = (p.pp.max(1), p.vp.max(1));
    let lora = cfg.lora_rank.is_some();
    let bubble = (pp - 1) as f64 / vp as f64;
    let stage = compute + micro.tensor_parallel + micro.expert_parallel + micro.context_parallel;
    match p.schedule {
        // (p − 1)(T_F + T_B − T_W): W, the weights' gradients (one of the
        // backward's two products per weight), fills the bubble.
        crate::detailed::config::parallel::Schedule::ZbH1 if !lora => {
            let weights = c.forward.mm + c.logits;
            (pp - 1) as f64 * (stage - 2.0 * weights).max(0.0)
        }
        _ => bubble * stage,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{at, llama};
    use crate::detailed::config::DetailedConfig;
    use crate::detailed::preset;

    /// The pipeline's bubble is (p−1)/v micro-batches of the stage's work
    /// (Narayanan et al. 2021, §2.2.1–2.2.2).
    #[test]
    fn bubble_is_p_minus_one_over_v() {
        let mut c = llama(2048, 16);
        c.micro_batch = Some(1);
        c.parallel.pp = 4;
        let one = at(&c);
        c.parallel.vp = 2;
        let two = at(&c);
        let per_micro =
            (one.parts.total() - one.parts.bubble - one.parts.optimizer - one.parts.pipeline_sends)
                / 16.0;
        assert!((one.parts.bubble / per_micro - 3.0).abs() < 1e-9);
        assert!((two.parts.bubble / one.parts.bubble - 0.5).abs() < 1e-9);
    }

    /// ZB-H1 fills the bubble with the weights' gradients: about a third of
    /// 1F1B's when forward, input-gradient and weight-gradient take alike
    /// (Qi et al. 2024, §3.1), with the same peak memory.
    #[test]
    fn zero_bubble_cuts_the_bubble_not_the_memory() {
        let mut c = llama(2048, 32);
        c.arch = preset("llama-3.1-70b").unwrap().arch;
        c.micro_batch = Some(1);
        c.parallel.pp = 4;
        c.parallel.tp = 8;
        c.parallel.sp = true;
        let one = at(&c);
        c.parallel.schedule = crate::detailed::Schedule::ZbH1;
        let zb = at(&c);
        let ratio = zb.parts.bubble / one.parts.bubble;
        assert!(ratio > 0.3 && ratio < 0.5, "{ratio}");
        assert!(zb.step_s < one.step_s);
        let peak = |c: &DetailedConfig| {
            crate::detailed::memory::timeline(c, &Default::default())
                .unwrap()
                .peak_bytes()
        };
        let mut d = c;
        d.parallel.schedule = crate::detailed::Schedule::OneFOneB;
        assert_eq!(peak(&c), peak(&d));
        // Not with virtual stages.
        c.parallel.vp = 2;
        assert!(crate::detailed::estimate(&c).is_err());
    }
}
