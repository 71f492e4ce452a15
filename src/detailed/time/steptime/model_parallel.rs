//! Communication inside the model, per micro-batch on one GPU: tensor
//! (and sequence) parallelism's exposed collectives (Korthikanti et al.
//! 2022, §4.2.2), expert parallelism's all-to-alls (Megatron-Core's
//! `MoEAlltoAllTokenDispatcher`), and context parallelism's key/value ring
//! (Liu et al. 2023, "Ring Attention") or all-to-all (DeepSpeed-Ulysses,
//! Jacobs et al. 2023), as ring collectives over the links of
//! [`Rates::link`].

use super::rates::{all_reduce, Rates};
use crate::detailed::config::{DetailedConfig, Recompute};

/// Tensor parallelism's collectives for one micro-batch of `m` tokens on
/// a stage holding `share` of the layers, seconds, exposed.
pub(super) fn tensor_parallel(cfg: &DetailedConfig, r: &Rates, m: f64, share: f64) -> f64 {
    let t = cfg.parallel.tp.max(1);
    let h = cfg.arch.hidden as f64;
    // Tensor parallelism: two all-reduces forward and two backward per
    // layer (or their all-gather + reduce-scatter halves under sequence
    // parallelism), two more when full recomputation reruns the forward.
    if t <= 1 {
        return 0.0;
    }
    let per_layer = match cfg.recompute {
        Recompute::Full => 6.0,
        _ => 4.0,
    };
    let layers = cfg.arch.layers as f64 * share;
    per_layer * layers * all_reduce(2.0 * m * h, t, r.link(t, 1))
}

/// Expert parallelism's all-to-alls for one micro-batch of `m` tokens on
/// a stage holding `share` of the layers, seconds, exposed.
pub(super) fn expert_parallel(cfg: &DetailedConfig, r: &Rates, m: f64, share: f64) -> f64 {
    let (a, p) = (&cfg.arch, &cfg.parallel);
    let (t, ep) = (p.tp.max(1), p.ep.max(1));
    let moe_layers = a.moe_layers();
    // Expert parallelism: dispatch and combine all-to-alls forward and
    // backward; each token's top-k copies leave for other GPUs, (ep−1)/ep.
    if ep <= 1 || moe_layers == 0 {
        return 0.0;
    }
    // Under sequence parallelism each tensor-parallel rank routes its
    // m/t tokens (Megatron-Core's `MoEAlltoAllTokenDispatcher`).
    let k = a.moe.map_or(1, |e| e.top_k) as f64;
    let tokens = if p.sp { m / t as f64 } else { m };
    let bytes = 2.0 * tokens * k * a.hidden as f64 * (ep - 1) as f64 / ep as f64;
    4.0 * moe_layers as f64 * share * bytes / r.link(ep, t).max(1.0)
}

/// Context parallelism's exchanges for one micro-batch on a stage holding
/// `share` of the layers, seconds, the part not hidden: the ring behind
/// the attention's forward `fwd_attn` and backward `bwd_attn`, or the
/// all-to-all, exposed.
pub(super) fn context_parallel(
    cfg: &DetailedConfig,
    r: &Rates,
    share: f64,
    fwd_attn: f64,
    bwd_attn: f64,
) -> f64 {
    let p = &cfg.parallel;
    let cp = p.cp.max(1);
    if cp > 1 && p.cp_comm == crate::detailed::config::CpComm::A2a {
        all_to_all(cfg, r, share)
    } else if cp > 1 {
        ring(cfg, r, share, fwd_attn, bwd_attn)
    } else {
        0.0
    }
}

/// All-to-all context parallelism, seconds, exposed.
fn all_to_all(cfg: &DetailedConfig, r: &Rates, share: f64) -> f64 {
    let a = &cfg.arch;
    let (t, cp) = (cfg.parallel.tp.max(1), cfg.parallel.cp.max(1));
    // All-to-all (DeepSpeed-Ulysses, Jacobs et al. 2023, §3.2): the
    // queries, keys, values and the output each cross once forward and
    // their gradients once backward, (cp − 1)/cp of this GPU's share of
    // each, exposed.
    let local = (cfg.sequences() * cfg.seq) as f64 / cp as f64;
    let bytes = local * 2.0 * (2.0 * a.q_dim() as f64 + 2.0 * a.kv_dim() as f64) / t as f64
        * (cp - 1) as f64
        / cp as f64;
    a.layers as f64 * share * 2.0 * bytes / r.link(cp, t)
}

/// Ring context parallelism, seconds, the part the attention's forward
/// `fwd_attn` and backward `bwd_attn` (the stage's) do not hide.
fn ring(cfg: &DetailedConfig, r: &Rates, share: f64, fwd_attn: f64, bwd_attn: f64) -> f64 {
    let a = &cfg.arch;
    let (t, cp) = (cfg.parallel.tp.max(1), cfg.parallel.cp.max(1));
    // Context parallelism: each layer passes the keys and values of the
    // other cp − 1 chunks around the ring (the heads split by t) forward,
    // and again with their gradients backward, overlapped with the
    // attention on the chunk in hand (Liu et al. 2023, "Ring Attention",
    // §3; Megatron-Core's `AttnFuncWithCPAndKVP2P`).
    let kv = 2.0 * (cfg.sequences() * cfg.seq) as f64 * a.kv_dim() as f64 * 2.0 / t as f64
        * (cp - 1) as f64
        / cp as f64;
    let bw = r.link(cp, t);
    let layers = a.layers as f64 * share;
    let attn_fwd = fwd_attn / layers.max(1.0);
    let attn_bwd = bwd_attn / layers.max(1.0);
    layers * ((kv / bw - attn_fwd).max(0.0) + (2.0 * kv / bw - attn_bwd).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{at, llama};
    use super::super::{step_time, Cluster, Efficiency};
    use crate::detailed::time::hardware::gpu;

    /// Tensor parallelism inside a node splits the compute and adds its
    /// all-reduces; across nodes it is slower than inside.
    #[test]
    fn tensor_parallel_inside_and_across_nodes() {
        let mut c = llama(4096, 8);
        c.micro_batch = Some(1);
        let one = at(&c);
        c.parallel.tp = 8;
        let inside = at(&c);
        assert!(inside.parts.tensor_parallel > 0.0);
        assert!(inside.parts.matmul < one.parts.matmul / 6.0);
        let across = step_time(
            &c,
            &Cluster::new(gpu("a100-80gb").unwrap(), 4),
            &Efficiency::default(),
        );
        // Four members a node: four 25 GB/s NICs against 300 GB/s NVLink.
        assert!((across.parts.tensor_parallel / inside.parts.tensor_parallel - 3.0).abs() < 1e-9);
    }

    /// All-to-all context parallelism is exposed, the ring hides behind
    /// attention at long sequences; both grow with cp's exchanges, and
    /// across nodes the all-to-all is slower than inside one.
    #[test]
    fn context_parallel_exchanges() {
        use crate::detailed::CpComm;
        let mut c = llama(131072, 8);
        c.micro_batch = Some(1);
        c.parallel.cp = 8;
        let ring = at(&c);
        c.parallel.cp_comm = CpComm::A2a;
        let inside = at(&c);
        assert!(inside.parts.context_parallel > ring.parts.context_parallel);
        // Four GPUs a node: the eight-GPU exchange crosses nodes.
        let across = step_time(
            &c,
            &Cluster::new(gpu("a100-80gb").unwrap(), 4),
            &Efficiency::default(),
        );
        // Four 25 GB/s NICs against 300 GB/s NVLink.
        assert!((across.parts.context_parallel / inside.parts.context_parallel - 3.0).abs() < 1e-9);
        // The ring's fp32 merging of partial outputs is gone.
        assert!(inside.parts.memory_bound < ring.parts.memory_bound);
    }
}
