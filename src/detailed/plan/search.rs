//! The planner's search: every layout of a model on N GPUs that fits the
//! card, ranked by step time.
//!
//! Given the reader's model, sequence length, global batch (sequences per
//! optimizer step) and GPUs, it enumerates data × tensor × pipeline
//! parallelism (tensor parallelism within a node, with sequence
//! parallelism; pipeline stages that divide the layers, 1F1B or interleaved
//! with two virtual stages; context parallelism from 32,768 tokens), ZeRO
//! stage 0–3 (ZeRO-3 across nodes also hybrid, sharded within each node
//! and replicated across them), recomputation, the
//! micro-batch, the 8-bit optimizer and optimizer offload, and under
//! Megatron with expert parallelism its all-to-all overlap; it keeps the
//! layouts whose step peak (plus the runtime overhead, when given) fits the
//! card, and ranks them by the step time of [`crate::detailed::time::steptime`]. Every
//! layout's memory is the detailed model's step peak, its time the
//! step-time model's: the search adds no figure of its own.
//!
//! ```
//! use membudget::detailed::{plan::search, preset, time::hardware::gpu, time::steptime, DetailedConfig};
//!
//! let mut cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 8192, 8);
//! cfg.attention = membudget::detailed::AttentionKernel::Flash;
//! let cluster = steptime::Cluster::new(gpu("h100-sxm").unwrap(), 8);
//! let plan = search::search(&cfg, &cluster, 8, None, &steptime::Efficiency::default());
//! assert!(!plan.rows.is_empty());
//! // Fastest first.
//! assert!(plan.rows.windows(2).all(|w| w[0].time.step_s <= w[1].time.step_s));
//! ```

use super::diff::Keep;
use super::planner;
use crate::detailed::config::{
    DetailedConfig, Framework, Optimizer, Parallelism, Profile, Recompute, Schedule,
};
use crate::detailed::memory::Overhead;
use crate::detailed::time::steptime::{step_time, Cluster, Efficiency, StepTime};

/// One layout that fits.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The configuration.
    pub cfg: DetailedConfig,
    /// What must fit on each GPU, bytes.
    pub need: f64,
    /// Its step time.
    pub time: StepTime,
}

impl Row {
    /// The flags that give this layout (add them to the model, `--gpu`,
    /// `--seq` and `--batch`).
    pub fn flags(&self) -> Vec<String> {
        layout_flags(&self.cfg)
    }
}

/// What the search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Search {
    /// Layouts that fit, fastest first.
    pub rows: Vec<Row>,
    /// Indexes into `rows` of the memory-versus-time Pareto front: each is
    /// faster than every layout that needs less memory.
    pub pareto: Vec<usize>,
    /// Layouts tried (each priced in memory and time).
    pub tried: usize,
}

/// Every flag that sets a layout, so that rerunning the CLI with them
/// gives the same configuration whatever it was given before.
pub fn layout_flags(cfg: &DetailedConfig) -> Vec<String> {
    let p = &cfg.parallel;
    let mut f = vec![
        "--dp".to_string(),
        p.dp.to_string(),
        "--tp".into(),
        p.tp.to_string(),
        "--pp".into(),
        p.pp.to_string(),
        "--zero".into(),
        p.zero.to_string(),
        "--micro-batch".into(),
        cfg.micro().to_string(),
        "--recompute".into(),
        cfg.recompute.name().into(),
        "--optimizer".into(),
        cfg.optimizer.name().into(),
    ];
    if p.vp > 1 {
        f.extend(["--vp".into(), p.vp.to_string()]);
    }
    if p.cp > 1 {
        f.extend(["--cp".into(), p.cp.to_string()]);
    }
    if p.schedule != Schedule::OneFOneB {
        f.extend(["--schedule".into(), p.schedule.name().into()]);
    }
    if p.sp {
        f.push("--sp".into());
    }
    if let Some(n) = p.dp_shard {
        f.extend(["--dp-shard".into(), n.to_string()]);
    }
    if cfg.offload.optimizer {
        f.push("--offload-optimizer".into());
    }
    if cfg.overlap.moe_a2a {
        f.push("--overlap-moe-expert-parallel-comm".into());
    }
    f
}

/// The expert all-to-all overlap's settings worth trying on `mesh`: also on
/// (Megatron-Core's combined 1F1B schedule) under Megatron where its
/// experts are spread over GPUs and Megatron-Core takes it (no pipeline, or
/// interleaved: the one refusal of the check that depends on the layout,
/// [`crate::detailed::memory::check`], read here so that the layouts tried
/// are the ones Megatron-Core runs); as given otherwise. The search never
/// turns it off.
fn a2a_overlaps(mesh: &DetailedConfig) -> &'static [bool] {
    let p = &mesh.parallel;
    let takes = mesh.framework == Framework::Megatron && p.ep > 1 && (p.pp == 1 || p.vp > 1);
    if mesh.overlap.moe_a2a {
        &[true]
    } else if takes {
        &[false, true]
    } else {
        &[false]
    }
}

/// Powers of two up to `n`, and `n`.
fn powers_up_to(n: u64) -> Vec<u64> {
    let mut v: Vec<u64> = std::iter::successors(Some(1u64), |x| x.checked_mul(2))
        .take_while(|&x| x <= n)
        .collect();
    if v.last() != Some(&n) && n > 0 {
        v.push(n);
    }
    v
}

/// The layouts of `cfg`'s model over `gpus` GPUs (see the module's
/// documentation); `cfg.batch` is the global batch in sequences.
pub fn layouts(cfg: &DetailedConfig, gpus: u64, gpus_per_node: u64) -> Vec<DetailedConfig> {
    let a = &cfg.arch;
    let mut out = Vec::new();
    let recomputes = recomputes(cfg);
    let optimizers = optimizers(cfg);
    let cps = context_parallel_sizes(cfg, gpus);
    for (tp, cp) in powers_up_to(gpus.min(gpus_per_node).min(64))
        .into_iter()
        .flat_map(|tp| cps.iter().map(move |&cp| (tp, cp)))
    {
        if !gpus.is_multiple_of(tp * cp)
            || !a.heads.is_multiple_of(tp)
            || !a.kv_heads.is_multiple_of(tp)
        {
            continue;
        }
        for pp in powers_up_to(gpus / tp / cp) {
            if !(gpus / tp / cp).is_multiple_of(pp) || !a.layers.is_multiple_of(pp) {
                continue;
            }
            let dp = gpus / tp / cp / pp;
            if dp == 0 || !cfg.batch.is_multiple_of(dp) {
                continue;
            }
            let per_replica = cfg.batch / dp;
            for &(vp, schedule) in &schedules(a.layers, pp) {
                for micro in powers_up_to(per_replica) {
                    if !per_replica.is_multiple_of(micro) {
                        continue;
                    }
                    let hybrid = hybrid_shard(dp, tp, cp, gpus_per_node);
                    for (zero, dp_shard) in zero_stages(dp, cp)
                        .iter()
                        .map(|&z| (z, None))
                        .chain(hybrid.map(|s| (3u8, Some(s))))
                    {
                        let mut mesh = *cfg;
                        mesh.parallel = Parallelism {
                            dp,
                            tp,
                            pp,
                            vp,
                            cp,
                            schedule,
                            sp: tp > 1,
                            zero,
                            dp_shard,
                            // An uneven split holds for its own stages only.
                            first_stage_layers: cfg
                                .parallel
                                .first_stage_layers
                                .filter(|_| pp == cfg.parallel.pp),
                            last_stage_layers: cfg
                                .parallel
                                .last_stage_layers
                                .filter(|_| pp == cfg.parallel.pp),
                            ..cfg.parallel
                        };
                        mesh.micro_batch = Some(micro);
                        mesh.offload.gpus_per_node = gpus_per_node;
                        push_step_settings(&mut out, &mesh, &recomputes, &optimizers);
                    }
                }
            }
        }
    }
    out
}

/// The recomputations worth trying: Megatron's selective recomputation
/// only where it drops something (eager attention's scores, fused
/// kernels); torchtitan's per-operator checkpointing for eager PyTorch
/// (layouts it does not cover are refused by `estimate` and left out).
fn recomputes(cfg: &DetailedConfig) -> Vec<Recompute> {
    [
        Recompute::None,
        Recompute::Selective,
        Recompute::SelectiveOp,
        Recompute::Full,
    ]
    .into_iter()
    .filter(|r| match r {
        Recompute::Selective => {
            cfg.attention == crate::detailed::config::AttentionKernel::Eager
                && cfg.profile == Profile::Fused
        }
        Recompute::SelectiveOp => cfg.profile == Profile::Hf,
        _ => true,
    })
    .collect()
}

/// The optimizers worth trying: AdamW and its 8-bit moments, or the
/// reader's other optimizer alone.
fn optimizers(cfg: &DetailedConfig) -> Vec<Optimizer> {
    if cfg.optimizer == Optimizer::AdamW {
        vec![Optimizer::AdamW, Optimizer::Adam8bit]
    } else {
        vec![cfg.optimizer]
    }
}

/// Context parallelism for long sequences (32,768 tokens and more), with
/// flash attention and 2·cp dividing the sequence, as Megatron-Core
/// needs; 1 (none) always.
fn context_parallel_sizes(cfg: &DetailedConfig, gpus: u64) -> Vec<u64> {
    powers_up_to(gpus.min(64))
        .into_iter()
        .filter(|&cp| {
            cp == 1
                || (cfg.seq >= 32768
                    && cfg.attention == crate::detailed::config::AttentionKernel::Flash
                    && cfg.seq.is_multiple_of(2 * cp))
        })
        .collect()
}

/// The pipeline schedules over `pp` stages of `layers` layers, as (virtual
/// stages, schedule): 1F1B, interleaved with two virtual stages, and ZB-H1.
fn schedules(layers: u64, pp: u64) -> Vec<(u64, Schedule)> {
    let mut v = vec![(1, Schedule::OneFOneB)];
    if pp > 1 {
        if layers.is_multiple_of(pp * 2) {
            v.push((2, Schedule::OneFOneB));
        }
        v.push((1, Schedule::ZbH1));
    }
    v
}

/// The ZeRO stages over `dp` replicas of `cp` GPUs each (tensor and
/// pipeline parallelism apart).
fn zero_stages(dp: u64, cp: u64) -> &'static [u8] {
    // On one replica a ZeRO stage only matters as the
    // way to offload the optimizer (ZeRO-Offload).
    // With context parallelism ZeRO shards over dp × cp.
    if dp * cp > 1 {
        &[0, 1, 2, 3]
    } else {
        &[0, 1]
    }
}

/// Hybrid sharding's group for ZeRO-3 over `dp` replicas of `tp` × `cp`
/// GPUs, where it applies: the GPUs of a node.
fn hybrid_shard(dp: u64, tp: u64, cp: u64, gpus_per_node: u64) -> Option<u64> {
    // ZeRO-3 across nodes may shard within each node and
    // replicate across them instead (hybrid sharding): the
    // gathers stay on NVLink, the network carries one
    // all-reduce of the gradient shards per step.
    let node_shard = gpus_per_node / (tp * cp);
    (node_shard >= 2 && node_shard < dp && dp.is_multiple_of(node_shard)).then_some(node_shard)
}

/// Pushes onto `out` the layouts of one parallel mesh and micro-batch
/// (`mesh`) with every recomputation, expert all-to-all overlap
/// ([`a2a_overlaps`]), optimizer and optimizer offload that applies: on
/// one replica a ZeRO stage only with the offload it is there
/// for (see [`zero_stages`]).
fn push_step_settings(
    out: &mut Vec<DetailedConfig>,
    mesh: &DetailedConfig,
    recomputes: &[Recompute],
    optimizers: &[Optimizer],
) {
    let p = &mesh.parallel;
    for (&recompute, &a2a) in recomputes
        .iter()
        .flat_map(|r| a2a_overlaps(mesh).iter().map(move |o| (r, o)))
    {
        for &optimizer in optimizers {
            for offload in [false, true] {
                // 8-bit moments are a GPU kernel's (bitsandbytes):
                // not offloaded.
                if (offload
                    && (p.zero == 0
                        || mesh.lora_rank.is_some()
                        || optimizer == Optimizer::Adam8bit))
                    || (p.dp * p.cp == 1 && p.zero > 0 && !offload)
                {
                    continue;
                }
                let mut c = *mesh;
                c.recompute = recompute;
                // Megatron's block method keeps its count where the layout
                // still holds it, and goes with full recomputation.
                #[cfg(not(target_arch = "wasm32"))]
                {
                    let chunk = c.chunk_layers(c.parallel.stage_layers(&c.arch) as u64);
                    c.recompute_layers = match recompute {
                        Recompute::Full => mesh.recompute_layers.min(chunk),
                        _ => 0,
                    };
                }
                c.optimizer = optimizer;
                c.offload.optimizer = offload;
                c.overlap.moe_a2a = a2a;
                out.push(c);
            }
        }
    }
}

/// Searches the layouts of `cfg` over `gpus` GPUs of `cluster` for those
/// that fit the card, fastest first.
pub fn search(
    cfg: &DetailedConfig,
    cluster: &Cluster,
    gpus: u64,
    overhead: Option<&Overhead>,
    eff: &Efficiency,
) -> Search {
    search_keeping(cfg, cluster, gpus, overhead, eff, Keep::NONE)
}

/// [`search`] over the layouts that leave the levers `keep` holds as
/// `cfg` has them.
pub fn search_keeping(
    cfg: &DetailedConfig,
    cluster: &Cluster,
    gpus: u64,
    overhead: Option<&Overhead>,
    eff: &Efficiency,
    keep: Keep,
) -> Search {
    let capacity = cluster.gpu.memory_bytes();
    let mut candidates = layouts(cfg, gpus, cluster.gpus_per_node);
    candidates.retain(|c| keep.allows(cfg, c));
    let tried = candidates.len();
    let mut rows: Vec<Row> = candidates
        .into_iter()
        .filter_map(|c| {
            let need = planner::need(&c, overhead)?;
            (need <= capacity).then(|| Row {
                time: step_time(&c, cluster, eff),
                cfg: c,
                need,
            })
        })
        .collect();
    super::sort_stably(&mut rows, |a, b| {
        a.time
            .step_s
            .total_cmp(&b.time.step_s)
            .then(a.need.total_cmp(&b.need))
    });
    let mut pareto = Vec::new();
    let mut least = f64::INFINITY;
    for (i, r) in rows.iter().enumerate() {
        if r.need < least {
            pareto.push(i);
            least = r.need;
        }
    }
    Search {
        rows,
        pareto,
        tried,
    }
}

/// *Faster and still fits*: the step time of `cfg` now, and the layouts
/// over its own GPUs and batch that fit and are at least 1 % faster,
/// fastest first, at most `n`. Only with the reader's optimizer: another
/// one changes the training (8-bit moments) for memory, not speed.
pub fn faster(
    cfg: &DetailedConfig,
    cluster: &Cluster,
    overhead: Option<&Overhead>,
    eff: &Efficiency,
    keep: Keep,
    n: usize,
) -> (f64, Vec<Row>) {
    let now = step_time(cfg, cluster, eff).step_s;
    let rows = search_keeping(cfg, cluster, cfg.gpus(), overhead, eff, keep)
        .rows
        .into_iter()
        .filter(|r| r.time.step_s < 0.99 * now && r.cfg.optimizer == cfg.optimizer)
        .take(n)
        .collect();
    (now, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::time::hardware::gpu;
    use crate::detailed::{preset, AttentionKernel};

    fn cluster() -> Cluster {
        Cluster::new(gpu("h100-sxm").unwrap(), 8)
    }

    fn llama8b(seq: u64, batch: u64) -> DetailedConfig {
        DetailedConfig {
            attention: AttentionKernel::Flash,
            dropout: false,
            ..DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, seq, batch)
        }
    }

    /// Megatron-Core's expert all-to-all overlap is a layout the search
    /// tries where Megatron-Core takes it: Qwen3-30B-A3B over two nodes of
    /// H100s (EP 16) runs fastest with it, the row names its flag; held
    /// with the layout (`--keep parallelism`), no row turns it on; and no
    /// pipeline without interleaving carries it.
    #[test]
    fn the_a2a_overlap_is_searched_where_megatron_takes_it() {
        let mut cfg = DetailedConfig::new(preset("qwen3-30b-a3b").unwrap().arch, 4096, 64);
        cfg.attention = AttentionKernel::Flash;
        cfg.micro_batch = Some(1);
        cfg.parallel.dp = 16;
        cfg.parallel.ep = 16;
        let eff = Efficiency::default();
        let plan = search(&cfg, &cluster(), 16, None, &eff);
        let best = &plan.rows[0];
        assert!(best.cfg.overlap.moe_a2a);
        assert!(best
            .flags()
            .contains(&"--overlap-moe-expert-parallel-comm".to_string()));
        assert!(super::super::diff::changes(&cfg, &best.cfg)
            .contains(&"--overlap-moe-expert-parallel-comm".to_string()));
        assert!(plan
            .rows
            .iter()
            .all(|r| !r.cfg.overlap.moe_a2a || r.cfg.parallel.pp == 1 || r.cfg.parallel.vp > 1));
        let kept = search_keeping(
            &cfg,
            &cluster(),
            16,
            None,
            &eff,
            Keep::NONE.with(super::super::diff::Lever::Parallelism),
        );
        assert!(!kept.rows.is_empty());
        assert!(kept.rows.iter().all(|r| !r.cfg.overlap.moe_a2a));
    }

    /// Brute force on a small space: every layout that fits is a row, and
    /// no row is slower than one after it.
    #[test]
    fn rows_are_every_layout_that_fits() {
        let cfg = llama8b(4096, 16);
        let plan = search(&cfg, &cluster(), 8, None, &Efficiency::default());
        let cap = cluster().gpu.memory_bytes();
        let fitting = layouts(&cfg, 8, 8)
            .into_iter()
            .filter(|c| planner::need(c, None).is_some_and(|n| n <= cap))
            .count();
        assert_eq!(plan.rows.len(), fitting);
        assert!(plan.tried > plan.rows.len() && fitting > 10);
        for r in &plan.rows {
            assert_eq!(r.cfg.gpus(), 8);
            assert_eq!(r.cfg.effective_batch(), 16);
        }
        // The Pareto front: each member needs less than every faster row.
        for &i in &plan.pareto {
            assert!(plan.rows[..i].iter().all(|r| r.need > plan.rows[i].need));
        }
        assert_eq!(plan.pareto[0], 0);
    }

    /// Across nodes on a slow network, ZeRO-3 sharded within each node and
    /// replicated across them (hybrid sharding) beats sharding over every
    /// GPU: its gathers stay on NVLink. Its flags rerun to it.
    #[test]
    fn hybrid_sharding_wins_over_a_slow_network() {
        // Short sequences, one per GPU: little compute to hide gathers.
        let cfg = llama8b(1024, 32);
        let mut slow = gpu("a100-80gb").unwrap();
        slow.inter_node_gbps = 50.0 / 8.0; // 400 Gbit/s a node of 8
        let plan = search(
            &cfg,
            &Cluster::new(slow, 8),
            32,
            None,
            &Efficiency::default(),
        );
        let best_zero3 = |hybrid: bool| {
            plan.rows
                .iter()
                .find(|r| {
                    r.cfg.parallel.zero == 3
                        && r.cfg.parallel.tp == 1
                        && r.cfg.parallel.pp == 1
                        && r.cfg.parallel.dp_shard.is_some() == hybrid
                })
                .map(|r| r.time.step_s)
                .unwrap()
        };
        assert!(best_zero3(true) < best_zero3(false));
        // Without tensor parallelism a node holds eight shards (with it,
        // tp × shard = 8).
        let row = plan
            .rows
            .iter()
            .find(|r| r.cfg.parallel.dp_shard.is_some() && r.cfg.parallel.tp == 1)
            .unwrap();
        assert_eq!(row.cfg.parallel.dp_shard, Some(8));
        let flags = row.flags();
        let i = flags.iter().position(|f| f == "--dp-shard").unwrap();
        assert_eq!(flags[i + 1], "8");
        // From it back to sharding over all of dp: the change names dp.
        let mut whole = row.cfg;
        whole.parallel.dp_shard = None;
        let change = planner::flags(&row.cfg, &whole);
        assert_eq!(
            change,
            ["--dp-shard".to_string(), whole.parallel.dp.to_string()]
        );
    }

    /// The issue's dead end, Llama-3.1-8B at 8,192 tokens, has layouts on
    /// one 80 GB card, and each row's flags give its configuration back.
    #[test]
    fn one_card_dead_end_has_layouts() {
        let cfg = llama8b(8192, 1);
        let plan = search(&cfg, &cluster(), 1, None, &Efficiency::default());
        assert!(!plan.rows.is_empty());
        // 16 bytes a parameter of states do not fit 80 GB with 8 B
        // parameters: every row offloads the optimizer.
        assert!(plan.rows.iter().all(|r| r.cfg.offload.optimizer));
        // Fastest keeps the activations (flash attention, 67 GB); the
        // Pareto front adds full recomputation, slower and smaller.
        assert_eq!(plan.rows[0].cfg.recompute, Recompute::None);
        let front: Vec<&Row> = plan.pareto.iter().map(|&i| &plan.rows[i]).collect();
        assert_eq!(front.len(), 2);
        assert_eq!(front[1].cfg.recompute, Recompute::Full);
        assert!(front[1].need < 0.5 * front[0].need);
    }
}
