//! Communication inside the model, per micro-batch on one GPU: tensor
//! (and sequence) parallelism's exposed collectives (Korthikanti et al.
//! 2022, §4.2.2), expert parallelism's all-to-alls (Megatron-Core's
//! `MoEAlltoAllTokenDispatcher`), and context parallelism's key/value ring
//! (Liu et al. 2023, "Ring Attention") or all-to-all (DeepSpeed-Ulysses,
//! Jacobs et al. 2023), as ring collectives over the links of
//! [`Rates::link`].

use super::layer::tp_gemms;
use super::rates::{all_reduce, pipelined, Rates};
use crate::detailed::config::{DetailedConfig, Framework, MoeDispatcher, Recompute};

/// A layer's tensor-parallel collectives per micro-batch, in all-reduces
/// (an all-gather and a reduce-scatter make one): two forward, two
/// backward, and what recomputation runs again. Full recomputation reruns
/// the forward's two. torchtitan's per-operator policy keeps the
/// reduce-scatters (`_c10d_functional.reduce_scatter_tensor` is on its
/// save list, `torchtitan/distributed/activation_checkpoint.py`) but not
/// the all-gathers or all-reduces, and its checkpoint wrapper recomputes
/// the whole layer (`early_stop=False`): under sequence parallelism the
/// two all-gathers (half the forward's), without it both all-reduces.
fn collectives_per_layer(cfg: &DetailedConfig) -> f64 {
    match cfg.recompute {
        Recompute::Full => 4.0 + 2.0 * cfg.recomputed_share(),
        Recompute::SelectiveOp if cfg.parallel.sp => 5.0,
        Recompute::SelectiveOp => 6.0,
        _ => 4.0,
    }
}

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
    let per_layer = collectives_per_layer(cfg);
    let ar = all_reduce(2.0 * m * h, t, r.link(t, 1));
    let megatron = cfg.framework == Framework::Megatron && cfg.overlap.tp_comm;
    if (megatron || cfg.async_tp) && cfg.parallel.sp {
        return overlapped(cfg, r, m, share, ar / 2.0, per_layer / 2.0 - 1.0);
    }
    tensor_parallel_collectives(cfg, r, m, share)
}

/// Tensor parallelism's collectives for one micro-batch of `m` tokens on
/// a stage holding `share` of the layers, seconds, hidden or not: two
/// all-reduces forward and two backward per layer, two more under full
/// recomputation.
pub(super) fn tensor_parallel_collectives(
    cfg: &DetailedConfig,
    r: &Rates,
    m: f64,
    share: f64,
) -> f64 {
    let t = cfg.parallel.tp.max(1);
    if t <= 1 {
        return 0.0;
    }
    let per_layer = collectives_per_layer(cfg);
    let layers = cfg.arch.layers as f64 * share;
    per_layer * layers * all_reduce(2.0 * m * cfg.arch.hidden as f64, t, r.link(t, 1))
}

/// Transformer Engine's tensor-parallel overlap (`tp_comm_overlap`,
/// userbuffers; Megatron-Core passes `ub_overlap_ag`, `ub_overlap_rs`,
/// `ub_bulk_wgrad`, `ub_bulk_dgrad` to TE's linear layers,
/// `megatron/core/extensions/transformer_engine.py`, and the recipes set
/// `tp_comm_overlap=True`), seconds for one micro-batch of `m` tokens on a
/// stage holding `share` of the layers: each all-gather or reduce-scatter
/// of `half` seconds runs inside the matrix multiply beside it
/// ([`tp_gemms`]). Forward (`forwards` times: 1, or 2 when full
/// recomputation reruns it), each GEMM is split into t chunks pipelined
/// with the ring's steps: an all-gather's first chunk is the GPU's own,
/// so it shows what outlasts the other t − 1 chunks; a reduce-scatter's
/// last chunk's step shows ([`pipelined`]). Backward, the row-parallel
/// projections' output gradients are all-gathered inside their
/// input-gradient GEMMs (pipelined), the column-parallel ones' input
/// gradients reduce-scattered behind their weight-gradient GEMMs
/// (`ub_bulk_dgrad`: the whole collective beside the whole GEMM). A MoE
/// layer's experts have no TE overlap: their collectives stay exposed.
///
/// Async TP under the PyTorch frameworks (`--async-tp`, torchtitan's
/// `enable_async_tensor_parallel`) is priced by the same mechanism:
/// inductor's micro-pipeline pass replaces each all-gather → matmul with
/// `fused_all_gather_matmul` and each matmul → reduce-scatter with
/// `fused_matmul_reduce_scatter` (`torch/_inductor/fx_passes/micro_pipeline_tp.py`,
/// `torch/distributed/_symmetric_memory/__init__.py`: the GEMM split into
/// one chunk per rank, each chunk's transfer behind the previous chunk's
/// product), in the forward graph and in the backward graph alike; what
/// a collective cannot hide (the part longer than the GEMM beside it)
/// stays exposed. Backward, the column-parallel input gradient's
/// reduce-scatter is not fused: its input is a sum of matmuls (q, k and
/// v's input gradients added, gate and up's), and the pass fuses a
/// reduce-scatter only when a lone `mm` or `_scaled_mm` (through a
/// reshape) produces its input (`_find_producer_matmul`,
/// `micro_pipeline_tp.py`), so it stays a plain collective, exposed
/// whole. The fused reduce-scatters' own summing is priced apart
/// ([`async_tp_reductions`]).
fn overlapped(
    cfg: &DetailedConfig,
    r: &Rates,
    m: f64,
    share: f64,
    half: f64,
    forwards: f64,
) -> f64 {
    let t = cfg.parallel.tp.max(1) as f64;
    let [qkv, out, up, down] = tp_gemms(cfg, m, r);
    let gather = |g: f64| (half - g * (t - 1.0) / t).max(0.0);
    // Backward's reduce-scatter of a column-parallel input gradient: TE's
    // bulk overlap beside the weight-gradient GEMM, or, under async TP, a
    // plain collective (a sum of matmuls feeds it: not fused).
    let scatter = |g: f64| {
        if cfg.async_tp {
            half
        } else {
            (half - g).max(0.0)
        }
    };
    let attn_fwd = gather(qkv) + pipelined(half, out, t);
    let attn_bwd = scatter(qkv) + gather(out);
    let (mlp_fwd, mlp_bwd) = (
        gather(up) + pipelined(half, down, t),
        scatter(up) + gather(down),
    );
    let a = &cfg.arch;
    let moe = a.moe_layers() as f64;
    let dense = a.layers as f64 - moe;
    let attention = forwards * attn_fwd + attn_bwd;
    let mlp = forwards * mlp_fwd + mlp_bwd;
    share * (a.layers as f64 * attention + dense * mlp + moe * (forwards + 1.0) * 2.0 * half)
}

/// Async TP's reductions for one micro-batch of `m` tokens on a stage
/// holding `share` of the layers, seconds of memory-bound work: each fused
/// matmul → reduce-scatter computes every rank's chunk of the product,
/// sends it to its owner, and then sums the t partials it received in one
/// kernel on the compute stream (`_fused_matmul_reduce_scatter_impl`,
/// `torch/distributed/_symmetric_memory/__init__.py`: `stacked_partials`,
/// then `reduce_fn` = `torch.sum(dim=0)`), reading the whole m × h
/// product in 16 bits and writing its 1/t share; NCCL's reduce-scatter
/// sums inside the collective. Two a dense layer's forward (the
/// attention's output projection and the MLP's down projection), one a
/// MoE layer's (its experts' collectives are not fused), again when full
/// recomputation reruns the forward (torchtitan's per-operator policy
/// keeps the reduce-scatters' outputs). None without `--async-tp`.
pub(super) fn async_tp_reductions(cfg: &DetailedConfig, r: &Rates, m: f64, share: f64) -> f64 {
    let t = cfg.parallel.tp.max(1) as f64;
    if !cfg.async_tp || !cfg.parallel.sp || t <= 1.0 {
        return 0.0;
    }
    let a = &cfg.arch;
    let forwards = if cfg.recompute == Recompute::Full {
        1.0 + cfg.recomputed_share()
    } else {
        1.0
    };
    let moe = a.moe_layers() as f64;
    let fused = 2.0 * (a.layers as f64 - moe) + moe;
    let bytes = 2.0 * m * a.hidden as f64 * (1.0 + 1.0 / t);
    share * forwards * fused * bytes / r.bytes
}

/// Expert parallelism's all-to-alls for one micro-batch of `m` tokens on
/// a stage holding `share` of the layers, seconds: (exposed, all). Four a
/// MoE layer, and the forward's two again when Megatron's `moe`
/// recomputation reruns the layer. Exposed whole, unless Megatron-Core's
/// all-to-all overlap pairs the micro-batches ([`combined`]).
pub(super) fn expert_parallel(cfg: &DetailedConfig, r: &Rates, m: f64, share: f64) -> (f64, f64) {
    let layers = cfg.arch.moe_layers() as f64 * share;
    let one_way = all_to_all_one_way(cfg, r, m);
    let passes = if cfg.megatron_recompute_modules().moe {
        6.0
    } else {
        4.0
    };
    let all = passes * layers * one_way;
    if cfg.framework != Framework::Megatron || !cfg.overlap.moe_a2a {
        return (all, all);
    }
    (layers * combined(cfg, r, m, one_way), all)
}

/// One MoE layer's exposed all-to-alls per micro-batch under Megatron-Core's
/// combined 1F1B schedule (`overlap_moe_expert_parallel_comm`), each of its
/// four `a` seconds: [`paired`] where a forward layer runs beside another
/// micro-batch's backward layer, all four where a pass runs alone. The
/// schedule leaves unpaired the first micro-batch's forward and the last's
/// backward without a pipeline (`combined_1f1b_schedule_for_no_pipelining`),
/// and under interleaving the first stage's warm-up forwards and as many
/// cool-down backwards, 2·(p − 1) + (v − 1)·p + 1 of its m·v passes
/// (`get_pp_rank_microbatches`, `pipeline_parallel/schedules.py`: one more
/// warm-up micro-batch "when enabling overlap_moe_expert_parallel_comm").
fn combined(cfg: &DetailedConfig, r: &Rates, m: f64, a: f64) -> f64 {
    let paired = paired(&super::layer::moe_halves(cfg, m, r), a);
    let p = &cfg.parallel;
    let micro = cfg.accumulation_steps().max(1) as f64;
    let (passes, unpaired) = if p.pp > 1 {
        let (pp, vp) = (p.pp as f64, p.vp.max(1) as f64);
        (micro * vp, 2.0 * (pp - 1.0) + (vp - 1.0) * pp + 1.0)
    } else {
        (micro, 1.0)
    };
    let alone = unpaired.min(passes) / passes;
    alone * 4.0 * a + (1.0 - alone) * paired
}

/// The all-to-alls that show when one micro-batch's forward layer runs
/// beside another's backward layer, each all-to-all `a` seconds, the
/// compute `h`: two streams, each in its order, each operation waiting
/// for what it reads (`TransformerLayerSchedulePlan.run`,
/// `models/common/model_chunk_schedule_plan.py`, Megatron-LM d98e8a64:
/// "comm_stream: combine_bwd | dispatch_fwd->dispatch_bwd | combine_fwd;
/// comp_stream: pre_dispatch_fwd | mlp_bwd->mlp_bwd_dw->mlp_fwd |
/// pre_dispatch_bwd"). The experts' backward needs the combine's
/// gradient; the forward's dispatch the attention's forward; the
/// backward's dispatch the experts' input gradient (`delay_wgrad_compute`
/// runs the weights' gradient, half the experts' backward, after it); the
/// experts' forward the dispatch; the forward's combine the experts'
/// forward; the attention's backward the backward's dispatch. What the
/// pair takes beyond its compute shows.
fn paired(h: &super::layer::MoeHalves, a: f64) -> f64 {
    let (dgrad, wgrad) = (h.mlp_backward / 2.0, h.mlp_backward / 2.0);
    let combine_bwd = a;
    let pre_fwd = h.pre_forward;
    let dgrad_end = pre_fwd.max(combine_bwd) + dgrad;
    let dispatch_fwd = combine_bwd.max(pre_fwd) + a;
    let dispatch_bwd = dispatch_fwd.max(dgrad_end) + a;
    let mlp_fwd = (dgrad_end + wgrad).max(dispatch_fwd) + h.mlp_forward;
    let combine_fwd = dispatch_bwd.max(mlp_fwd) + a;
    let pre_bwd = mlp_fwd.max(dispatch_bwd) + h.pre_backward;
    let compute = h.pre_forward + h.mlp_backward + h.mlp_forward + h.pre_backward;
    combine_fwd.max(pre_bwd) - compute
}

/// One MoE layer's all-to-all one way (the dispatch, the combine, or
/// either's gradient) for one micro-batch of `m` tokens, seconds.
fn all_to_all_one_way(cfg: &DetailedConfig, r: &Rates, m: f64) -> f64 {
    let (a, p) = (&cfg.arch, &cfg.parallel);
    let (t, ep) = (p.tp.max(1), p.ep.max(1));
    // Expert parallelism: dispatch and combine all-to-alls forward and
    // backward; each token's top-k copies leave for other GPUs, (ep−1)/ep.
    if ep <= 1 || a.moe_layers() == 0 {
        return 0.0;
    }
    // Under sequence parallelism each tensor-parallel rank routes its
    // m/t tokens (Megatron-Core's `MoEAlltoAllTokenDispatcher`).
    let k = a.moe.map_or(1, |e| e.top_k) as f64;
    let tokens = if p.sp { m / t as f64 } else { m };
    let token_bytes = 2.0 * tokens * a.hidden as f64;
    // The expert-parallel group's stride in the rank order is the expert
    // tensor-parallel degree, not the attention's: Megatron-Core's MoE
    // parallel folding generates the MoE groups as etp-ep-dp-pp
    // ("MoE Parallel Folding", megatron/core/transformer/moe/README.md,
    // Megatron-LM 022bcb5afe), so EP 8 with ETP 1 stays in a node of 8
    // whatever the attention's TP.
    let stride = p.etp.max(1);
    match (cfg.moe_dispatcher, a.moe) {
        (MoeDispatcher::DeepEp, Some(e)) => {
            let local = r.local_members(ep, stride);
            let remote = remote_nodes(e.experts, e.top_k, ep.div_ceil(local));
            let forwarded = token_bytes * k * (local - 1) as f64 / local as f64;
            r.split_exchange(forwarded, token_bytes * remote)
        }
        _ => r.all_to_all(token_bytes * k * (ep - 1) as f64 / ep as f64, ep, stride),
    }
}

/// The remote nodes a token's `k` experts of `experts` lie on, on
/// average, when the expert group spans `nodes` nodes holding an equal
/// share of the experts each and the router picks `k` distinct experts
/// evenly (as Megatron-Bridge's benchmarks force it,
/// `moe_router_force_load_balancing`): each other node is missed with the
/// chance C(E − E/N, k) / C(E, k) that none of the `k` falls on it.
pub(super) fn remote_nodes(experts: u64, k: u64, nodes: u64) -> f64 {
    if nodes <= 1 {
        return 0.0;
    }
    let (e, per_node) = (experts as f64, (experts / nodes) as f64);
    let missed: f64 = (0..k.min(experts))
        .map(|i| ((e - per_node - i as f64) / (e - i as f64)).max(0.0))
        .product();
    (nodes - 1) as f64 * (1.0 - missed)
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
    use super::{paired, remote_nodes};
    use crate::detailed::config::{DetailedConfig, MoeDispatcher};
    use crate::detailed::preset;
    use crate::detailed::time::hardware::gpu;

    /// A token's 8 of 128 experts over four nodes of 32 reach 2.72 other
    /// nodes on average, 3·(1 − C(96, 8)/C(128, 8)); over one node none,
    /// and 8 of 8 experts over two nodes always the other one.
    #[test]
    fn remote_nodes_of_a_token() {
        assert!((remote_nodes(128, 8, 4) - 2.721_758_193).abs() < 1e-8);
        assert_eq!(remote_nodes(128, 8, 1), 0.0);
        assert!((remote_nodes(8, 8, 2) - 1.0).abs() < 1e-12);
    }

    /// DeepEP sends a token once to each remote node holding its experts,
    /// the all-to-all once per expert: across four nodes of H100s (the
    /// NIC the bound) the expert-parallel time is 2.72 / 6 of the
    /// all-to-all's (6 = 8 experts × 24 of 32 GPUs elsewhere); inside one
    /// node the two are the same.
    #[test]
    fn deepep_crosses_once_per_node() {
        let ep_time = |ep: u64, dispatcher| {
            let mut c = DetailedConfig::new(preset("qwen3-30b-a3b").unwrap().arch, 4096, 64);
            c.micro_batch = Some(1);
            c.parallel.dp = 32;
            c.parallel.ep = ep;
            c.moe_dispatcher = dispatcher;
            let card = gpu("h100-sxm").unwrap();
            step_time(&c, &Cluster::new(card, 8), &Efficiency::for_gpu(&card))
                .parts
                .expert_parallel
        };
        let (a2a, deepep) = (
            ep_time(32, MoeDispatcher::AllToAll),
            ep_time(32, MoeDispatcher::DeepEp),
        );
        assert!((deepep / a2a - remote_nodes(128, 8, 4) / 6.0).abs() < 1e-9);
        let inside = (
            ep_time(8, MoeDispatcher::AllToAll),
            ep_time(8, MoeDispatcher::DeepEp),
        );
        assert!(inside.0 > 0.0 && (inside.1 / inside.0 - 1.0).abs() < 1e-12);
    }

    /// Megatron-Core's combined schedule, one pair of layers: nothing
    /// shows without all-to-alls, all four with no compute beside them,
    /// none behind ample compute; in between, the dependencies: with the
    /// attention's forward and backward 1, the experts' forward 2 and
    /// backward 4 (input and weight gradients 2 each) and each all-to-all
    /// 3, the backward's combine ends at 3 (the experts' backward starts
    /// then), the input gradient at 5, the forward's dispatch at 6, the
    /// weight gradient at 7, the backward's dispatch and the experts'
    /// forward at 9, the attention's backward at 10, the forward's combine
    /// at 12: 12 less 8 of compute, 4 show.
    #[test]
    fn the_combined_schedule_hides_what_its_order_allows() {
        use super::super::layer::MoeHalves;
        let h = |pre: f64, mlp: f64| MoeHalves {
            pre_forward: pre,
            mlp_forward: mlp,
            pre_backward: pre,
            mlp_backward: 2.0 * mlp,
        };
        assert_eq!(paired(&h(1.0, 2.0), 0.0), 0.0);
        assert_eq!(paired(&h(0.0, 0.0), 3.0), 12.0);
        assert_eq!(paired(&h(10.0, 10.0), 3.0), 0.0);
        assert_eq!(paired(&h(1.0, 2.0), 3.0), 4.0);
    }

    /// The overlap's step: Qwen3-30B-A3B over 16 H100s (EP 16, two
    /// nodes) hides part of its all-to-alls, says how much in `hidden`,
    /// and the exposed and hidden parts add up to the all-to-alls without
    /// it; the first micro-batch's forward and the last's backward stay
    /// exposed (one of 8 micro-batches).
    #[test]
    fn a2a_overlap_hides_behind_the_other_micro_batch() {
        let mut c = DetailedConfig::new(preset("qwen3-30b-a3b").unwrap().arch, 4096, 128);
        c.attention = crate::detailed::AttentionKernel::Flash;
        c.micro_batch = Some(1);
        c.parallel.dp = 16;
        c.parallel.ep = 16;
        let card = gpu("h100-sxm").unwrap();
        let time =
            |c: &DetailedConfig| step_time(c, &Cluster::new(card, 8), &Efficiency::for_gpu(&card));
        let off = time(&c);
        c.overlap.moe_a2a = true;
        let on = time(&c);
        assert_eq!(off.parts.hidden.expert_parallel, 0.0);
        let all = off.parts.expert_parallel;
        let (shown, hidden) = (on.parts.expert_parallel, on.parts.hidden.expert_parallel);
        assert!(
            hidden > 0.0 && shown >= all / 8.0 - 1e-12,
            "{shown} {hidden} {all}"
        );
        assert!((shown + hidden - all).abs() < 1e-9 * all);
        assert!(on.step_s < off.step_s);
    }

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

    /// Transformer Engine's overlap under Megatron with sequence
    /// parallelism: at tp 2 on A100s every all-gather and backward
    /// reduce-scatter of Llama 3.1 8B fits inside the GEMM beside it (each
    /// collective at most a quarter of its GEMM), and what shows is the
    /// last chunk of each forward reduce-scatter: half a reduce-scatter,
    /// twice a layer, against eight whole ones exposed. Without sequence
    /// parallelism, with the overlap off, or under another framework,
    /// nothing hides.
    #[test]
    fn tp_comm_overlap_hides_inside_the_gemms() {
        use crate::detailed::config::{Framework, Overlap};
        let mut c = llama(8192, 8);
        c.micro_batch = Some(1);
        c.parallel.tp = 2;
        c.parallel.sp = true;
        let on = at(&c).parts.tensor_parallel;
        c.overlap = Overlap::NONE;
        let off = at(&c).parts.tensor_parallel;
        assert!((on * 8.0 / off - 1.0).abs() < 1e-9, "{on} {off}");
        c.overlap = Overlap::default();
        c.parallel.sp = false;
        assert_eq!(at(&c).parts.tensor_parallel, off);
        c.parallel.sp = true;
        c.framework = Framework::Fsdp2 {
            reshard_after_forward: true,
        };
        assert_eq!(at(&c).parts.tensor_parallel, off);
    }

    /// Async TP under FSDP2 (torchtitan's `enable_async_tensor_parallel`),
    /// on the same layout as above: forward as Transformer Engine's (every
    /// all-gather inside its GEMM, the last of t = 2 chunks of each
    /// reduce-scatter shows: half of a half), and backward the
    /// row-parallel output gradients' all-gathers inside their GEMMs but
    /// the column-parallel input gradients' reduce-scatters whole (a sum
    /// of matmuls feeds each: not fused): three halves a layer exposed
    /// against eight. What shows plus what hides is every collective. The
    /// two fused reduce-scatters a layer sum their partials in a kernel of
    /// their own: m·h 16-bit values read and m·h/t written, memory-bound
    /// time added. Without `--async-tp`, or without sequence parallelism,
    /// nothing hides.
    #[test]
    fn async_tp_pipelines_the_collectives_under_fsdp2() {
        use crate::detailed::config::Framework;
        let mut c = llama(8192, 8);
        c.micro_batch = Some(1);
        (c.parallel.tp, c.parallel.sp, c.parallel.zero) = (2, true, 3);
        c.framework = Framework::Fsdp2 {
            reshard_after_forward: true,
        };
        let off = at(&c);
        assert_eq!(off.parts.hidden.tensor_parallel, 0.0);
        c.async_tp = true;
        let on = at(&c);
        let exposed = on.parts.tensor_parallel;
        assert!(
            (exposed * 8.0 / 3.0 / off.parts.tensor_parallel - 1.0).abs() < 1e-9,
            "{exposed} {off:?}"
        );
        let all = exposed + on.parts.hidden.tensor_parallel;
        assert!((all / off.parts.tensor_parallel - 1.0).abs() < 1e-12);
        assert!(on.step_s < off.step_s);
        assert_eq!(on.parts.matmul, off.parts.matmul);
        // Eight micro-batches of 8,192 tokens, 32 layers, two reductions
        // a layer, each 2·8192·4096·(1 + 1/2) bytes at 80 % of the A100's
        // 2,039 GB/s.
        let bytes = 8.0 * 32.0 * 2.0 * 2.0 * 8192.0 * 4096.0 * 1.5;
        let added = on.parts.memory_bound - off.parts.memory_bound;
        assert!(
            (added / (bytes / (2039e9 * 0.8)) - 1.0).abs() < 1e-9,
            "{added}"
        );
        c.parallel.sp = false;
        let no_sp = at(&c);
        assert_eq!(no_sp.parts.hidden.tensor_parallel, 0.0);
        c.async_tp = false;
        assert_eq!(at(&c).parts.memory_bound, no_sp.parts.memory_bound);
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
