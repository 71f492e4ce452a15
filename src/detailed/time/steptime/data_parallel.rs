//! Data parallelism's communication: ZeRO-3 / FSDP's gathers and
//! reduce-scatters per micro-batch, hidden behind its compute (Zhao et al.
//! 2023, §3.3), with FSDP2's copies in and out of its collectives; the
//! gradients' reduction once per step behind the last micro-batch's
//! backward (PyTorch DDP's buckets, Li et al. 2020, §3.2.3), ZeRO-1/2's
//! gather of the updated parameters, and hybrid sharding's all-reduce
//! across replicas (PyTorch FSDP's `HYBRID_SHARD`); ring collectives
//! (Patarasuk & Yuan 2009) over the links of [`Rates::link`].

use super::rates::{all_reduce, pipelined, Rates};
use super::Parts;
use crate::detailed::config::{DetailedConfig, Fp8, Framework, Precision};

/// The weights one GPU holds and trains, as counts and bytes.
pub(super) struct Weights {
    /// Parameters this GPU holds (its stage and tensor shard).
    pub n_params: f64,
    /// Their bytes, 16-bit (32 in fp32).
    pub param_bytes: f64,
    /// The trained weights' bytes, whose gradients are reduced: LoRA's
    /// adapters, or every parameter.
    pub trainable_bytes: f64,
    /// The bytes ZeRO-1/2's gather of the updated parameters moves: the
    /// trained weights', less one byte per fp8 weight under
    /// `--fp8-param` with Transformer Engine's per-tensor recipe
    /// ([`fp8_gather_saving`]).
    pub gather_bytes: f64,
}

/// Bytes per GPU that `--fp8-param` takes off the distributed optimizer's
/// parameter all-gather: one per weight of the layers' linear layers, on
/// the same share as [`Weights::n_params`]. Megatron-Core puts the fp8
/// weights in a uint8 parameter buffer of their own
/// (`group_params_for_buffers`: `param_dtype = torch.uint8`,
/// `param_and_grad_buffer.py`, Megatron-LM d98e8a64), whose buckets the
/// all-gather moves as they are, one byte a weight ("perform the param
/// all-gather in fp8", `--fp8-param-gather`'s help). Under MXFP8 nothing
/// is taken off: its weights are gathered in bf16 through the gradient
/// buffer (`shared_buffer`, `param_data` a bf16 view of it, with
/// `--reuse-grad-buf-for-mxfp8-param-ag`, which MXFP8 weights need) and
/// cast to MXFP8 after the gather (`_post_param_sync`,
/// `copy_tensors_to_quantized_params`).
fn fp8_gather_saving(cfg: &DetailedConfig) -> f64 {
    if !cfg.fp8_param || cfg.fp8 != Fp8::Te || cfg.lora_rank.is_some() {
        return 0.0;
    }
    let (a, p) = (&cfg.arch, &cfg.parallel);
    let split = a.layers_param_split();
    (split.dense + split.experts) as f64 / (p.tp.max(1) * p.pp.max(1)) as f64
}

impl Weights {
    /// `cfg`'s weights on one GPU.
    pub fn new(cfg: &DetailedConfig) -> Self {
        let (a, p) = (&cfg.arch, &cfg.parallel);
        let (t, pp) = (p.tp.max(1), p.pp.max(1));
        // Parameters this GPU holds (its stage and tensor shard), 16-bit.
        let n_params = a.params() as f64 / (t * pp) as f64;
        let param_bytes = match cfg.precision {
            Precision::Fp32 => 4.0,
            _ => 2.0,
        } * n_params;
        let trainable_bytes = if cfg.lora_rank.is_some() {
            2.0 * a.lora_params(cfg.lora_rank.unwrap_or(0), cfg.lora_targets) as f64
                / (t * pp) as f64
        } else {
            param_bytes
        };
        Self {
            n_params,
            param_bytes,
            trainable_bytes,
            gather_bytes: trainable_bytes - fp8_gather_saving(cfg),
        }
    }
}

/// ZeRO-3 / FSDP, per micro-batch: FSDP2's copies added to `micro`'s
/// memory-bound kernels, and the gathers and reduce-scatter its compute
/// (copies included) does not hide set as its data-parallel time.
pub(super) fn sharded(cfg: &DetailedConfig, r: &Rates, w: &Weights, micro: &mut Parts) {
    let p = &cfg.parallel;
    let t = p.tp.max(1);
    let lora = cfg.lora_rank.is_some();
    // Gradients are reduced, and ZeRO shards, over dp × cp GPUs; under
    // hybrid sharding ZeRO shards over groups of `shard` GPUs and the
    // `replicas` groups all-reduce their gradient shards (PyTorch FSDP's
    // `HYBRID_SHARD`: reduce-scatter in the group, then all-reduce across
    // groups on its own stream, `_post_backward_hook`).
    let shard = p.shard_group();
    let shard_bw = r.link(shard, t);
    // ZeRO-3 / FSDP: gather the parameters for forward and again for
    // backward, reduce-scatter the gradients, per micro-batch, hidden
    // behind that micro-batch's compute.
    if p.zero < 3 || shard <= 1 {
        return;
    }
    let frac = (shard - 1) as f64 / shard as f64;
    let gathers = match cfg.framework.fsdp_reshard() {
        Some(false) => 1.0,
        _ => 2.0,
    };
    // FSDP2 under mixed precision reduce-scatters in fp32
    // (`MixedPrecisionPolicy(reduce_dtype=fp32)`, `states::fsdp2_policy`).
    let fsdp2 = matches!(
        cfg.framework,
        crate::detailed::config::Framework::Fsdp2 { .. }
    );
    let reduce_bytes = if fsdp2 && cfg.precision == Precision::Mixed && !lora {
        2.0 * w.trainable_bytes
    } else {
        w.trainable_bytes
    };
    let comm = frac * (gathers * w.param_bytes + reduce_bytes) / shard_bw;
    // FSDP2 copies on the compute stream: each all-gather's flat output
    // out into the unsharded weights (read and write,
    // `FSDPParamGroup.wait_for_unshard`, `foreach_all_gather_copy_out`),
    // and the unsharded gradients into the reduce-scatter's flat input
    // in the reduce dtype (`foreach_reduce`, copy-in before the
    // reduce-scatter stream waits on the compute stream). FSDP1 and
    // Megatron gather into and reduce from flat buffers the weights and
    // gradients are views of: no copies.
    if fsdp2 {
        let copies = gathers * 2.0 * w.param_bytes + w.trainable_bytes + reduce_bytes;
        micro.memory_bound += copies / r.bytes;
    }
    let with_copies = micro.matmul + micro.attention + micro.memory_bound;
    micro.data_parallel = (comm - with_copies).max(0.0);
    micro.hidden.data_parallel = comm - micro.data_parallel;
}

/// Hybrid sharding's all-reduce of each group's gradient shard across
/// the replicas, seconds.
fn across_replicas(cfg: &DetailedConfig, r: &Rates, w: &Weights) -> f64 {
    let p = &cfg.parallel;
    let t = p.tp.max(1);
    let (shard, replicas) = (p.shard_group(), p.replicas());
    // Hybrid sharding's all-reduce of each group's gradient shard across
    // the replicas: its own stream, behind the last micro-batch's backward.
    if replicas > 1 && p.zero >= 1 {
        all_reduce(
            w.trainable_bytes / shard as f64,
            replicas,
            r.link(replicas, t * shard),
        )
    } else {
        0.0
    }
}

/// Data parallelism once per step, seconds: the part the last
/// micro-batch's backward (two thirds of its `compute`) does not hide, and
/// the collectives' whole time.
pub(super) fn per_step(cfg: &DetailedConfig, r: &Rates, w: &Weights, compute: f64) -> (f64, f64) {
    let p = &cfg.parallel;
    let t = p.tp.max(1);
    let dp = p.data_group();
    let shard = p.shard_group();
    let shard_bw = r.link(shard, t);
    let cross = across_replicas(cfg, r, w);
    let trainable_bytes = w.trainable_bytes;
    // ZeRO 0–2 and DDP: reduce the gradients once per step, overlapped with
    // the last micro-batch's backward; ZeRO-1/2 then gather the updated
    // parameters before the next forward (in the shard group).
    let backward = compute * (2.0 / 3.0);
    if p.zero < 3 && dp > 1 && cfg.framework == Framework::Megatron && p.replicas() <= 1 {
        megatron(cfg, r, w, compute)
    } else if p.zero < 3 && dp > 1 {
        let reduce = if p.replicas() > 1 {
            0.5 * all_reduce(trainable_bytes, shard, shard_bw) + cross
        } else {
            all_reduce(trainable_bytes, dp, r.link(dp, t))
        };
        let mut exposed = (reduce - backward).max(0.0);
        let mut all = reduce;
        if p.zero >= 1 {
            let gather = 0.5 * all_reduce(w.gather_bytes, shard, shard_bw);
            exposed += gather;
            all += gather;
        }
        (exposed, all)
    } else if p.zero >= 3 {
        ((cross - backward).max(0.0), cross)
    } else {
        (0.0, 0.0)
    }
}

/// Megatron-Core's gradient buckets on one GPU: `bucket_size` parameters
/// each, max(40,000,000, 1,000,000 × dp) by default
/// (`DistributedDataParallel.__init__`,
/// `megatron/core/distributed/distributed_data_parallel.py`, Megatron-LM
/// d98e8a64), one bucket for all when `overlap_grad_reduce` is off.
fn megatron_buckets(cfg: &DetailedConfig, w: &Weights) -> f64 {
    let dp = cfg.parallel.data_group() as f64;
    let bucket = (1e6 * dp).max(4e7);
    if cfg.overlap.grad_reduce {
        (w.trainable_bytes / (w.param_bytes / w.n_params.max(1.0)) / bucket)
            .ceil()
            .max(1.0)
    } else {
        1.0
    }
}

/// Megatron-Core's data parallelism once per step, seconds exposed: the
/// gradients reduced bucket by bucket as the last micro-batch's backward
/// fills them (`overlap_grad_reduce`: `_ParamAndGradBucketGroup.start_grad_sync`
/// from each parameter's backward hook, `param_and_grad_buffer.py`), all
/// at once after backward without it (`finalize_model_grads`); under the
/// distributed optimizer (`--zero` 1 or 2) a reduce-scatter, then the
/// updated parameters all-gathered bucket by bucket ahead of the next
/// forward (`overlap_param_gather`: `start_param_sync` from forward
/// pre-hooks, `distributed_data_parallel.py`), or before it without.
/// The last bucket's reduction and the first bucket's gather never hide
/// ([`pipelined`]). Under `--fp8-param` the gather moves
/// [`Weights::gather_bytes`].
fn megatron(cfg: &DetailedConfig, r: &Rates, w: &Weights, compute: f64) -> (f64, f64) {
    let p = &cfg.parallel;
    let dp = p.data_group();
    let link = r.link(dp, p.tp.max(1));
    let ar = all_reduce(w.trainable_bytes, dp, link);
    let n = megatron_buckets(cfg, w);
    let (backward, forward) = (compute * 2.0 / 3.0, compute / 3.0);
    if p.zero == 0 {
        return (pipelined(ar, backward, n), ar);
    }
    let half = 0.5 * ar;
    let all_gather = 0.5 * all_reduce(w.gather_bytes, dp, link);
    let gather = if cfg.overlap.param_gather {
        pipelined(all_gather, forward, n)
    } else {
        all_gather
    };
    (pipelined(half, backward, n) + gather, half + all_gather)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{at, llama};
    use super::super::{step_time, Cluster, Efficiency};
    use crate::detailed::config::Precision;
    use crate::detailed::time::hardware::gpu;

    /// FSDP2 copies on the compute stream, per micro-batch: each gather's
    /// output out into the weights (read and write, twice with
    /// resharding after forward) and the bf16 gradients into the fp32
    /// reduce-scatter input; the flat buffers of Megatron's ZeRO-3 copy
    /// nothing. The time is those bytes at the memory's rate.
    #[test]
    fn fsdp2_copies_in_and_out_of_its_collectives() {
        let mut c = llama(4096, 64);
        c.micro_batch = Some(1);
        c.parallel.dp = 64;
        c.parallel.zero = 3;
        c.precision = Precision::Mixed;
        let flat = at(&c);
        c.framework = crate::detailed::Framework::Fsdp2 {
            reshard_after_forward: true,
        };
        let fsdp2 = at(&c);
        let p = c.arch.params() as f64;
        let bytes = 2.0 * 2.0 * 2.0 * p + 2.0 * p + 4.0 * p;
        let rate = gpu("a100-80gb").unwrap().memory_gbps * 1e9 * 0.8;
        let extra = fsdp2.parts.memory_bound - flat.parts.memory_bound;
        assert!((extra / (bytes / rate) - 1.0).abs() < 1e-9, "{extra}");
        // Kept from forward to backward: one gather, one copy-out.
        c.framework = crate::detailed::Framework::Fsdp2 {
            reshard_after_forward: false,
        };
        let kept = at(&c).parts.memory_bound - flat.parts.memory_bound;
        assert!(
            (kept / ((bytes - 4.0 * p) / rate) - 1.0).abs() < 1e-9,
            "{kept}"
        );
    }

    /// Megatron's gradient buckets over 64 A100s in 8 nodes: without
    /// `overlap_grad_reduce` the whole all-reduce follows backward; with it
    /// the buckets of max(40M, 1M × 64) = 64M parameters are reduced as
    /// the last backward fills them, and what shows is
    /// max(one bucket, all − the backward beside the other buckets).
    /// Under the distributed optimizer a reduce-scatter and an all-gather
    /// (half an all-reduce each), the gather behind the next forward.
    #[test]
    fn megatron_reduces_bucket_by_bucket() {
        use crate::detailed::config::{Framework, Overlap};
        let mut c = llama(4096, 64);
        c.micro_batch = Some(1);
        c.parallel.dp = 64;
        let on = at(&c);
        c.overlap = Overlap::NONE;
        let off = at(&c);
        let n = (c.arch.params() as f64 / 64e6).ceil();
        let compute = on.parts.matmul + on.parts.attention + on.parts.memory_bound;
        let all = off.parts.data_parallel;
        let want = (all / n).max(all - compute * 2.0 / 3.0 * (n - 1.0) / n);
        assert!(n > 100.0 && all > 0.0);
        assert!((on.parts.data_parallel / want - 1.0).abs() < 1e-9);
        // PyTorch DDP hides the whole reduction behind the last backward.
        c.framework = Framework::Ddp { bucket_view: false };
        assert_eq!(
            at(&c).parts.data_parallel,
            (all - compute * 2.0 / 3.0).max(0.0)
        );
        // The distributed optimizer: reduce-scatter, then all-gather.
        c.framework = Framework::Megatron;
        c.parallel.zero = 1;
        let zero1_off = at(&c).parts.data_parallel;
        assert!((zero1_off / all - 1.0).abs() < 1e-9);
        c.overlap = Overlap::default();
        let half = all / 2.0;
        let gather = (half / n).max(half - compute / 3.0 * (n - 1.0) / n);
        let reduce = (half / n).max(half - compute * 2.0 / 3.0 * (n - 1.0) / n);
        let zero1 = at(&c).parts.data_parallel;
        assert!((zero1 / (gather + reduce) - 1.0).abs() < 1e-9, "{zero1}");
    }

    /// `--fp8-param` under the distributed optimizer, Llama 3.1 8B on 8
    /// A100s in one node, no overlap: the reduce-scatter moves the bf16
    /// gradients, 2 · 8,030,261,248 bytes, as before; the all-gather
    /// 2 · 8,030,261,248 − 6,979,321,856 = 9,081,200,640 bytes (one byte
    /// per linear weight of the layers, two for the rest), so the
    /// data-parallel time goes from 2B to B + G over the same link. Under
    /// MXFP8 the gather stays bf16.
    #[test]
    fn fp8_param_gathers_one_byte_per_fp8_weight() {
        use crate::detailed::config::{Fp8, Overlap};
        let mut c = llama(8192, 64);
        c.micro_batch = Some(1);
        c.parallel.dp = 8;
        c.parallel.zero = 1;
        c.overlap = Overlap::NONE;
        c.fp8 = Fp8::Te;
        let off = at(&c).parts.data_parallel;
        c.fp8_param = true;
        let w = super::Weights::new(&c);
        assert_eq!(w.trainable_bytes, 16_060_522_496.0);
        assert_eq!(w.gather_bytes, 9_081_200_640.0);
        let on = at(&c).parts.data_parallel;
        let (b, g) = (w.trainable_bytes, w.gather_bytes);
        assert!((on / off - (b + g) / (2.0 * b)).abs() < 1e-12, "{on} {off}");
        // 7/8 of the 6,979,321,856 bytes saved, over the node's link.
        let link = 1.75 * b / off;
        assert!((off - on - 0.875 * 6_979_321_856.0 / link).abs() < 1e-9 * off);
        c.fp8 = Fp8::TeMxfp8;
        assert_eq!(super::Weights::new(&c).gather_bytes, b);
        assert_eq!(at(&c).parts.data_parallel, off);
    }

    /// Hybrid sharding: FSDP inside each node of 8, the nodes all-reducing
    /// their gradient shards. Over a slow network the all-reduce outlasts
    /// the backward and shows; with one shard group it is plain ZeRO-3.
    #[test]
    fn hybrid_sharding_all_reduces_across_nodes() {
        // One micro-batch per step: its backward is the step's.
        let mut c = llama(4096, 128);
        c.micro_batch = Some(1);
        c.parallel.dp = 128;
        c.parallel.zero = 3;
        let whole = at(&c);
        c.parallel.dp_shard = Some(128);
        assert_eq!(at(&c), whole);
        c.parallel.dp_shard = Some(8);
        let fast = at(&c);
        let mut slow_net = gpu("a100-80gb").unwrap();
        slow_net.inter_node_gbps = 1.0;
        let slow = step_time(&c, &Cluster::new(slow_net, 8), &Efficiency::default());
        assert_eq!(fast.parts.matmul, slow.parts.matmul);
        // 8B's 2-byte gradients over 8 shards, ring all-reduce over 16
        // nodes at 0.8 GB/s per GPU, less a backward of the model's own.
        let params = c.arch.params() as f64;
        let cross = 2.0 * 15.0 / 16.0 * (2.0 * params / 8.0) / 0.8e9;
        let compute = fast.parts.matmul + fast.parts.attention + fast.parts.memory_bound;
        let exposed = cross - compute * 2.0 / 3.0;
        assert!(exposed > 1.0, "{exposed}");
        assert!((slow.parts.data_parallel - exposed).abs() < 1e-9 * exposed);
        // The states are sharded over 8, as on 8 GPUs.
        let shard8 = crate::detailed::estimate(&c).unwrap();
        c.parallel.dp = 8;
        c.parallel.dp_shard = None;
        c.batch = 8;
        let eight = crate::detailed::estimate(&c).unwrap();
        assert_eq!(shard8.optimizer_state, eight.optimizer_state);
        assert_eq!(shard8.params, eight.params);
    }
}
