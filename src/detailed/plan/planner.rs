//! What to change so that a step fits a card: each lever the model prices
//! (recomputation, flash attention, an 8-bit optimizer, a smaller
//! micro-batch with more accumulation, a higher ZeRO stage, offload, more
//! GPUs, tensor parallelism, LoRA and QLoRA, a bigger card), tried one at a
//! time and then in pairs on the reader's configuration, each with the
//! bytes it saves, the term of the budget it cuts and the compute it adds.
//!
//! The memory is the detailed model's step peak (checked against PyTorch's
//! allocations); the compute is [`crate::detailed::time::flops`]'s hardware FLOPs per GPU
//! per step. Given a card with its speeds, each change is also priced in
//! time by [`crate::detailed::time::steptime`]: GPU-seconds per token against the reader's
//! configuration, which counts what recomputation, communication, PCIe
//! transfers and the CPU's optimizer step cost, and what more GPUs give.
//!
//! ```
//! use membudget::detailed::{plan::planner::make_it_fit, preset, DetailedConfig};
//!
//! // Llama-3.1-8B at 8,192 tokens on one 80 GB card: 179 GB, a dead end.
//! let cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 8192, 1);
//! let plan = make_it_fit(&cfg, 80.0 * (1u64 << 30) as f64, None, None);
//! assert!(!plan.fits_now);
//! assert!(plan.changes.iter().any(|c| c.fits));
//! ```

use super::diff::Keep;
use crate::detailed::config::{
    ActOffload, AttentionKernel, BaseQuant, DetailedConfig, Loss, Optimizer, Precision, Profile,
    Recompute, StepOptions,
};
use crate::detailed::memory::timeline::{peak, timeline};
use crate::detailed::memory::{estimate, DetailedBreakdown, Overhead};
use crate::detailed::model::LoraTargets;
use crate::detailed::time::flops;
use crate::detailed::time::hardware::GPUS;
use crate::detailed::time::steptime::{step_time, Cluster, Efficiency};

/// What must fit on a GPU for `cfg`: the peak of a later step, plus the
/// runtime overhead when one is given; `None` when it cannot be computed.
pub fn need(cfg: &DetailedConfig, overhead: Option<&Overhead>) -> Option<f64> {
    match overhead {
        // A paged optimizer's state at the peak is outside the caching
        // allocator: no fragmentation on it, which the whole step tells.
        Some(o) if cfg.optimizer.paged() => {
            let t = timeline(cfg, &StepOptions::default()).ok()?;
            Some(t.peak_bytes() + o.for_step(cfg, &t).total())
        }
        _ => {
            let peak = peak(cfg, &StepOptions::default()).ok()?;
            Some(peak + overhead.map_or(0.0, |o| o.bytes(cfg, peak).total()))
        }
    }
}

/// One lever: its name, the flags that apply it on the command line, and
/// the configuration it gives (`None` where it does not apply).
struct Lever {
    name: String,
    cost: &'static str,
    /// Levers that differ only by their GPUs share a family ("ZeRO-3").
    family: Option<&'static str>,
    apply: fn(&DetailedConfig) -> Option<DetailedConfig>,
}

impl Lever {
    /// Whether it changes what is trained (adapters instead of the model,
    /// another optimizer), not only how: its cost says "a different".
    fn changes_training(&self) -> bool {
        self.cost.starts_with("a different") || self.cost.contains("a different optimizer")
    }
}

/// A change tried on the reader's configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// What it is, in words ("full recomputation").
    pub name: String,
    /// The configuration it gives.
    pub cfg: DetailedConfig,
    /// What must fit afterwards, bytes.
    pub need: f64,
    /// Bytes it saves against the reader's configuration.
    pub saved: f64,
    /// The budget term it cuts most (`activations`, `optimizer_state`, …),
    /// or `peak` when only the step's transients fall.
    pub term: &'static str,
    /// Whether it fits the card.
    pub fits: bool,
    /// GPUs the changed layout needs (dp × tp × pp).
    pub gpus: u64,
    /// Hardware FLOPs per token against the reader's (1.0: the same;
    /// full recomputation about 4/3).
    pub compute: f64,
    /// GPU-seconds per token against the reader's (1.0: the same; 1.33:
    /// a third more), when the card's speeds are known.
    pub time: Option<f64>,
    /// What it costs besides the bytes, in words.
    pub cost: String,
    /// It changes what is trained (LoRA, QLoRA, another optimizer), not
    /// only how.
    pub changes_training: bool,
    /// The family of a single lever that differs from its siblings only by
    /// its GPUs; `None` for pairs and for the other levers.
    pub family: Option<&'static str>,
}

/// The answer: whether it fits as it is, and the changes that were tried
/// (the ones that fit first, fewest GPUs and least compute first).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// What the reader's configuration needs, bytes.
    pub need: f64,
    /// It fits as it is.
    pub fits_now: bool,
    /// Single changes that save memory, and the pairs that fit where
    /// neither change fits alone; no two give the same configuration.
    pub changes: Vec<Change>,
    /// The GPUs the reader's configuration runs on: changes that need
    /// more are offered apart ([`Plan::within`], [`Plan::more_gpus`]).
    pub gpus: u64,
}

impl Plan {
    /// The changes that run on the reader's GPUs, in order.
    pub fn within(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.gpus <= self.gpus)
    }

    /// The changes that need more GPUs than the reader has, in order.
    pub fn more_gpus(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.gpus > self.gpus)
    }
}

/// The lever families that differ only by their GPUs.
const ZERO3: &str = "ZeRO-3";
const TP: &str = "tensor parallelism";
const CP: &str = "context parallelism";

/// What sharding over more GPUs costs.
const ZERO3_COST: &str = "more GPUs; weights gathered for every micro-batch";
/// What context parallelism costs.
const CP_COST: &str =
    "more GPUs; keys and values passed around a ring in every layer, behind the attention";

/// Context parallelism over `N` GPUs, from one, with ZeRO-3 over the N
/// (Megatron-Core shards the optimizer over dp × cp), where flash
/// attention and a sequence divisible by 2N allow it.
fn cp<const N: u64>(c: &DetailedConfig) -> Option<DetailedConfig> {
    (c.parallel.cp == 1
        && c.gpus() == 1
        && c.attention == AttentionKernel::Flash
        && c.seq.is_multiple_of(2 * N))
    .then(|| {
        let mut n = *c;
        n.parallel.cp = N;
        n.parallel.zero = 3;
        n
    })
}

/// What tensor parallelism costs.
const TP_COST: &str = "more GPUs on fast links (within a node); collectives in every layer";

/// ZeRO-3 over `N` data-parallel GPUs, each with the reader's micro-batch
/// (so the batch grows N-fold), from one GPU.
fn zero3<const N: u64>(c: &DetailedConfig) -> Option<DetailedConfig> {
    (c.parallel.dp == 1 && c.parallel.tp == 1 && c.parallel.pp == 1).then(|| {
        let mut n = *c;
        n.parallel.dp = N;
        n.parallel.zero = 3;
        n.batch = c.batch * N;
        n
    })
}

/// Tensor parallelism over `N` GPUs with sequence parallelism, where the
/// heads divide.
fn tp<const N: u64>(c: &DetailedConfig) -> Option<DetailedConfig> {
    (c.parallel.tp == 1 && c.arch.heads.is_multiple_of(N) && c.arch.kv_heads.is_multiple_of(N))
        .then(|| {
            let mut n = *c;
            n.parallel.tp = N;
            n.parallel.sp = true;
            n
        })
}

/// Of a family of levers that differ by their GPUs ("ZeRO-3 over 2, 4, 8…
/// GPUs"), only the fewest GPUs that fit are worth showing; when none
/// fits, the one that comes closest.
fn fewest_gpus(changes: Vec<Change>) -> Vec<Change> {
    let best = |family: &str| {
        let members = changes.iter().filter(|c| c.family == Some(family));
        members
            .clone()
            .filter(|c| c.fits)
            .min_by_key(|c| c.gpus)
            .or_else(|| members.min_by(|a, b| a.need.total_cmp(&b.need)))
            .map(|c| c.name.clone())
    };
    let keep: Vec<String> = [ZERO3, TP, CP].into_iter().filter_map(best).collect();
    changes
        .into_iter()
        .filter(|c| c.family.is_none() || keep.contains(&c.name))
        .collect()
}

/// A lever outside the families that differ only by their GPUs.
fn lever(
    name: &str,
    cost: &'static str,
    apply: fn(&DetailedConfig) -> Option<DetailedConfig>,
) -> Lever {
    Lever {
        name: name.into(),
        cost,
        family: None,
        apply,
    }
}

/// A lever of `family`, whose members differ only by their GPUs.
fn in_family(
    family: &'static str,
    name: &str,
    cost: &'static str,
    apply: fn(&DetailedConfig) -> Option<DetailedConfig>,
) -> Lever {
    Lever {
        family: Some(family),
        ..lever(name, cost, apply)
    }
}

/// Every lever, in the order the planner tries them (and lists its pairs).
fn levers() -> Vec<Lever> {
    let mut all = vec![rollout_lever(), attention_lever()];
    all.extend(recomputation_levers());
    all.extend(optimizer_levers());
    all.push(micro_batch_lever());
    all.push(zero_stage_lever());
    all.push(offload_lever());
    all.extend(more_gpus_levers());
    all.extend(adapter_levers());
    all.extend(feature_levers());
    all
}

/// GRPO with a colocated vLLM engine: letting it sleep through training.
fn rollout_lever() -> Lever {
    lever(
        "vLLM asleep during training",
        "the engine's weights re-loaded and its cache rebuilt for every rollout (TRL's vllm_enable_sleep_mode)",
        |c| {
            let v = c.rollout.vllm.filter(|v| !v.sleep)?;
            let mut to = *c;
            to.rollout.vllm = Some(crate::detailed::config::Vllm { sleep: true, ..v });
            Some(to)
        },
    )
}

/// Flash attention in place of eager attention's s² scores.
fn attention_lever() -> Lever {
    lever(
        "flash attention",
        "none: a faster kernel (Dao et al. 2022)",
        |c| {
            (c.attention == AttentionKernel::Eager).then_some(DetailedConfig {
                attention: AttentionKernel::Flash,
                ..*c
            })
        },
    )
}

/// Recomputation, from the least to the most: Megatron's selective
/// recomputation, torchtitan's per-operator checkpointing, full.
fn recomputation_levers() -> Vec<Lever> {
    vec![
        lever(
            "selective recomputation",
            "recomputes the attention scores in backward",
            |c| {
                (c.recompute == Recompute::None
                    && c.attention == AttentionKernel::Eager
                    && c.profile == Profile::Fused)
                    .then_some(DetailedConfig {
                        recompute: Recompute::Selective,
                        ..*c
                    })
            },
        ),
        lever(
            "per-operator checkpointing",
            "recomputes every other projection and the memory-bound kernels in backward (torchtitan's selective op policy)",
            |c| {
                (c.recompute == Recompute::None
                    && c.profile == Profile::Hf
                    && crate::detailed::memory::sac::unsupported(c).is_none())
                .then_some(DetailedConfig {
                    recompute: Recompute::SelectiveOp,
                    ..*c
                })
            },
        ),
        lever(
            "full recomputation",
            "recomputes every layer's forward in backward",
            |c| {
                (c.recompute != Recompute::Full).then_some(DetailedConfig {
                    recompute: Recompute::Full,
                    ..*c
                })
            },
        ),
    ]
}

/// A smaller optimizer state: 8-bit AdamW, or Adafactor in its place.
fn optimizer_levers() -> Vec<Lever> {
    vec![
        lever(
            "8-bit AdamW",
            "8-bit moments (Dettmers et al. 2022: quality kept on their benchmarks)",
            |c| {
                (c.optimizer == Optimizer::AdamW).then_some(DetailedConfig {
                    optimizer: Optimizer::Adam8bit,
                    ..*c
                })
            },
        ),
        lever(
            "Adafactor instead of AdamW",
            "no first moment and a factored second one (Shazeer & Stern 2018): a different optimizer",
            |c| {
                (c.optimizer == Optimizer::AdamW
                    && c.lora_rank.is_none()
                    && c.arch.layer_matrices().is_some())
                .then_some(DetailedConfig {
                    optimizer: Optimizer::Adafactor,
                    ..*c
                })
            },
        ),
    ]
}

/// Half the micro-batch, with twice the gradient accumulation.
fn micro_batch_lever() -> Lever {
    lever(
        "half the micro-batch, twice the accumulation",
        "smaller matrix multiplies, twice the passes per step",
        |c| {
            let m = c.micro();
            (m > 1).then_some(DetailedConfig {
                micro_batch: Some(m / 2),
                ..*c
            })
        },
    )
}

/// The next ZeRO stage, where the data-parallel GPUs do not shard
/// everything yet.
fn zero_stage_lever() -> Lever {
    lever(
        "the next ZeRO stage",
        "more communication between the data-parallel GPUs",
        |c| {
            (c.parallel.dp > 1 && c.parallel.zero < 3).then(|| {
                let mut n = *c;
                n.parallel.zero += 1;
                n
            })
        },
    )
}

/// The optimizer's state and step moved to the CPU (ZeRO-Offload).
fn offload_lever() -> Lever {
    lever(
        "optimizer offloaded to the CPU (ZeRO-Offload)",
        "the optimizer step on the CPU; gradients and weights cross PCIe every step",
        |c| {
            (!c.offload.optimizer && c.lora_rank.is_none()).then(|| {
                let mut n = *c;
                n.offload.optimizer = true;
                n.parallel.zero = n.parallel.zero.max(1);
                n
            })
        },
    )
}

/// More GPUs, in families that differ only by their count: ZeRO-3 over
/// data-parallel GPUs, tensor parallelism (with sequence parallelism),
/// context parallelism; [`fewest_gpus`] keeps one of each.
fn more_gpus_levers() -> Vec<Lever> {
    vec![
        in_family(ZERO3, "ZeRO-3 over 2 GPUs", ZERO3_COST, zero3::<2>),
        in_family(ZERO3, "ZeRO-3 over 4 GPUs", ZERO3_COST, zero3::<4>),
        in_family(ZERO3, "ZeRO-3 over 8 GPUs", ZERO3_COST, zero3::<8>),
        in_family(ZERO3, "ZeRO-3 over 16 GPUs", ZERO3_COST, zero3::<16>),
        in_family(ZERO3, "ZeRO-3 over 64 GPUs", ZERO3_COST, zero3::<64>),
        in_family(
            TP,
            "tensor parallelism over 2 GPUs, with sequence parallelism",
            TP_COST,
            tp::<2>,
        ),
        in_family(
            TP,
            "tensor parallelism over 4 GPUs, with sequence parallelism",
            TP_COST,
            tp::<4>,
        ),
        in_family(
            TP,
            "tensor parallelism over 8 GPUs, with sequence parallelism",
            TP_COST,
            tp::<8>,
        ),
        in_family(
            CP,
            "context parallelism over 2 GPUs, ZeRO-3 over them",
            CP_COST,
            cp::<2>,
        ),
        in_family(
            CP,
            "context parallelism over 4 GPUs, ZeRO-3 over them",
            CP_COST,
            cp::<4>,
        ),
        in_family(
            CP,
            "context parallelism over 8 GPUs, ZeRO-3 over them",
            CP_COST,
            cp::<8>,
        ),
    ]
}

/// A different task: LoRA's adapters on a frozen base, and QLoRA's base
/// quantized to NF4.
fn adapter_levers() -> Vec<Lever> {
    vec![
        lever(
            "LoRA (rank 16, every projection) instead of full fine-tuning",
            "a different task: adapters are trained, the base is frozen",
            |c| {
                (c.lora_rank.is_none() && c.arch.moe.is_none()).then_some(DetailedConfig {
                    lora_rank: Some(16),
                    lora_targets: LoraTargets(127),
                    profile: Profile::Hf,
                    ..*c
                })
            },
        ),
        lever(
            "QLoRA: the frozen base in NF4",
            "a different task, and the base dequantized in every layer",
            |c| {
                (c.base_quant == BaseQuant::None && c.arch.moe.is_none()).then(|| {
                    let mut n = *c;
                    n.lora_rank = n.lora_rank.or(Some(16));
                    if c.lora_rank.is_none() {
                        n.lora_targets = LoraTargets(127);
                    }
                    n.base_quant = BaseQuant::Nf4 { double_quant: true };
                    n.profile = Profile::Hf;
                    if n.precision == Precision::Fp32 {
                        n.precision = Precision::Bf16;
                    }
                    n
                })
            },
        ),
    ]
}

/// The trainers' memory features (issue 34), each priced in time by the
/// step-time model like any lever: the chunked loss's summed output-layer
/// gradients ([`crate::detailed::time::steptime`]'s compute), offloading's
/// PCIe traffic beyond the compute it hides behind (its offload part),
/// compile's fused memory-bound kernels (its kernels), and the optimizer in
/// backward, which moves the same bytes per parameter as the step after
/// backward: no time, two things it forbids.
fn feature_levers() -> Vec<Lever> {
    vec![
        lever(
            "torchtune's chunked loss (8 chunks)",
            "the output layer's weight gradient summed over the chunks (CEWithChunkedOutputLoss)",
            |c| {
                (c.loss == Loss::Full && c.profile == Profile::Hf).then_some(DetailedConfig {
                    loss: Loss::Chunked,
                    loss_chunks: crate::detailed::config::LOSS_CHUNKS,
                    ..*c
                })
            },
        ),
        lever(
            "activations offloaded to the CPU (torchtune)",
            "each checkpoint crosses PCIe twice per micro-batch, on a side stream behind the compute (torchtune's OffloadActivations)",
            |c| {
                (c.recompute == Recompute::Full && !c.offload.activations).then(|| {
                    let mut n = *c;
                    n.offload.activations = true;
                    n.offload.activations_by = ActOffload::Torchtune;
                    n
                })
            },
        ),
        lever(
            "the first half of the layers' activations on the host (Megatron-Core)",
            "those layers' saved activations cross the host link out and back each micro-batch, behind the compute (Megatron-Core's cpu_offloading_num_layers, as NVIDIA's Llama 3 70B recipe on GB200 runs 40 of 80)",
            // Where Megatron-Core refuses it (recomputation, a pipeline),
            // the check refuses the row ([`crate::detailed::memory::check`]).
            |c| {
                let free = c.megatron_kernels() && !c.offload.activations && c.arch.layers >= 2;
                free.then(|| {
                    let mut n = *c;
                    n.offload.activations = true;
                    n.offload.activation_layers = c.arch.layers / 2;
                    n
                })
            },
        ),
        lever(
            "the optimizer step in backward",
            "no gradient accumulation and no gradient clipping (torchtune's optimizer_in_bwd)",
            |c| {
                (!c.optimizer_in_backward && c.accumulation_steps() == 1).then_some(
                    DetailedConfig {
                        optimizer_in_backward: true,
                        ..*c
                    },
                )
            },
        ),
        lever(
            "torch.compile",
            "a compile at start-up; inductor fuses the memory-bound kernels, and saves what its partitioner chooses",
            |c| {
                (!c.compile && c.profile == Profile::Hf).then_some(DetailedConfig {
                    compile: true,
                    ..*c
                })
            },
        ),
    ]
}

/// The command-line flags that turn `from` into `to`: see
/// [`super::diff::changes`], the one function every row's text comes from.
pub use super::diff::changes as flags;

/// The budget term that falls most from `a` to `b`, or `peak` when none
/// falls by more than a megabyte (the step's transients did).
fn term_cut(a: &DetailedBreakdown, b: &DetailedBreakdown) -> &'static str {
    [
        ("params", a.params - b.params),
        ("grads", a.grads - b.grads),
        ("master_weights", a.master_weights - b.master_weights),
        ("optimizer_state", a.optimizer_state - b.optimizer_state),
        ("activations", a.activations - b.activations),
    ]
    .into_iter()
    .filter(|(_, d)| *d > 1e6)
    .max_by(|x, y| x.1.total_cmp(&y.1))
    .map_or("peak", |(t, _)| t)
}

/// Hardware FLOPs per token of `cfg`: what recomputation adds.
fn flops_per_token(cfg: &DetailedConfig) -> f64 {
    let f = flops::step_flops(cfg);
    f.hardware / f.tokens
}

/// GPU-seconds per token of `cfg` on `cluster`.
fn gpu_seconds_per_token(cfg: &DetailedConfig, (cluster, eff): (&Cluster, &Efficiency)) -> f64 {
    1.0 / step_time(cfg, cluster, eff).tokens_per_s_per_gpu
}

/// Tries every lever on `cfg`, then every pair of levers that do not fit
/// alone, for a card of `capacity` bytes, priced in time on a cluster
/// with its efficiencies when given; see the module's documentation.
pub fn make_it_fit(
    cfg: &DetailedConfig,
    capacity: f64,
    overhead: Option<&Overhead>,
    cluster: Option<(&Cluster, &Efficiency)>,
) -> Plan {
    make_it_fit_keeping(cfg, capacity, overhead, cluster, Keep::NONE)
}

/// [`make_it_fit`] with the levers `keep` holds left alone: a change
/// (or pair) that would move one of them is not tried.
pub fn make_it_fit_keeping(
    cfg: &DetailedConfig,
    capacity: f64,
    overhead: Option<&Overhead>,
    cluster: Option<(&Cluster, &Efficiency)>,
    keep: Keep,
) -> Plan {
    let now = need(cfg, overhead).unwrap_or(f64::INFINITY);
    let before = estimate(cfg).ok();
    let base_flops = flops_per_token(cfg);
    let base_time = cluster.map(|c| gpu_seconds_per_token(cfg, c));
    let levers = levers();
    let change = |names: Vec<&Lever>, to: DetailedConfig| -> Option<Change> {
        keep.allows(cfg, &to).then_some(())?;
        let need = need(&to, overhead)?;
        let after = estimate(&to).ok()?;
        Some(Change {
            name: names
                .iter()
                .map(|l| l.name.as_str())
                .collect::<Vec<_>>()
                .join(" + "),
            cfg: to,
            need,
            saved: now - need,
            term: before.as_ref().map_or("peak", |b| term_cut(b, &after)),
            fits: need <= capacity,
            gpus: to.gpus(),
            compute: flops_per_token(&to) / base_flops,
            time: cluster
                .zip(base_time)
                .map(|(c, t)| gpu_seconds_per_token(&to, c) / t),
            cost: names.iter().map(|l| l.cost).collect::<Vec<_>>().join("; "),
            changes_training: names.iter().any(|l| l.changes_training()),
            family: match names[..] {
                [one] => one.family,
                _ => None,
            },
        })
    };
    let mut changes: Vec<Change> = levers
        .iter()
        .filter_map(|l| change(vec![l], (l.apply)(cfg)?))
        .filter(|c| c.saved > 0.0)
        .collect();
    // Pairs that fit where neither change fits alone.
    let fits_alone = |l: &Lever| changes.iter().any(|c| c.fits && c.name == l.name);
    let mut pairs = Vec::new();
    for (i, a) in levers.iter().enumerate() {
        for b in &levers[i + 1..] {
            if fits_alone(a) || fits_alone(b) {
                continue;
            }
            let Some(to) = (a.apply)(cfg).and_then(|c| (b.apply)(&c)) else {
                continue;
            };
            if let Some(c) = change(vec![a, b], to).filter(|c| c.fits && c.saved > 0.0) {
                pairs.push(c);
            }
        }
    }
    changes.extend(pairs);
    let mut changes = fewest_gpus(changes);
    super::sort_stably(&mut changes, rank);
    // Two ways to one configuration read the same: the first is kept.
    let mut seen: Vec<DetailedConfig> = Vec::new();
    changes.retain(|c| {
        let new = !seen.contains(&c.cfg);
        seen.push(c.cfg);
        new
    });
    Plan {
        need: now,
        fits_now: now <= capacity,
        changes,
        gpus: cfg.gpus(),
    }
}

/// The order of the changes: those that fit first; then fewer GPUs, the
/// same training before a different one, less time (or compute), more
/// room.
fn rank(x: &Change, y: &Change) -> std::cmp::Ordering {
    y.fits
        .cmp(&x.fits)
        .then(x.gpus.cmp(&y.gpus))
        .then(x.changes_training.cmp(&y.changes_training))
        .then(
            x.time
                .unwrap_or(x.compute)
                .total_cmp(&y.time.unwrap_or(y.compute)),
        )
        .then(x.need.total_cmp(&y.need))
}

/// The smallest card of the table (`hardware::GPUS`) that holds `need`
/// bytes, if any. Apart from [`make_it_fit`] so that the page, which names
/// cards by their memory, does not ship the table's citations.
pub fn smallest_card(need: f64) -> Option<&'static str> {
    GPUS.iter()
        .filter(|g| g.memory_bytes() >= need)
        .min_by(|a, b| a.memory_gib.total_cmp(&b.memory_gib))
        .map(|g| g.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::{preset, timeline};

    const H100: f64 = 80.0 * (1u64 << 30) as f64;

    fn dead_end() -> DetailedConfig {
        DetailedConfig {
            attention: AttentionKernel::Flash,
            dropout: false,
            ..DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 8192, 1)
        }
    }

    /// Every change's figures are the model's own for the configuration it
    /// names: the need is that configuration's peak, the saving against
    /// the reader's.
    #[test]
    fn each_change_is_priced_by_the_model() {
        let cfg = dead_end();
        let plan = make_it_fit(&cfg, H100, None, None);
        assert!(!plan.fits_now);
        assert!(!plan.changes.is_empty());
        for c in &plan.changes {
            let peak = timeline(&c.cfg, &StepOptions::default())
                .unwrap()
                .peak_bytes();
            assert_eq!(c.need, peak, "{}", c.name);
            assert_eq!(c.saved, plan.need - peak, "{}", c.name);
            assert_eq!(c.fits, peak <= H100, "{}", c.name);
        }
        // Fitting ones first.
        let first_miss = plan
            .changes
            .iter()
            .position(|c| !c.fits)
            .unwrap_or(plan.changes.len());
        assert!(plan.changes[first_miss..].iter().all(|c| !c.fits));
    }

    /// Brute force over the same levers: a single change fits exactly when
    /// the planner says so, and a pair is listed exactly when it fits and
    /// neither of its changes does alone.
    /// GRPO with a colocated vLLM engine holding 60 % of the card through
    /// training: letting it sleep between rollouts is the change that makes
    /// it fit, and its flag says so.
    #[test]
    fn a_sleeping_vllm_engine_makes_grpo_fit() {
        let mut cfg = DetailedConfig::new(preset("qwen3-8b").unwrap().arch, 4608, 8);
        cfg.attention = AttentionKernel::Flash;
        cfg.dropout = false;
        cfg.profile = crate::detailed::Profile::Hf;
        cfg.recompute = crate::detailed::Recompute::Full;
        cfg.lora_rank = Some(16);
        cfg.objective = crate::detailed::Objective::Grpo { kl: false };
        cfg.rollout.completion = 4096;
        cfg.rollout.vllm = Some(crate::detailed::config::Vllm {
            reserved: (0.6 * H100) as u64,
            sleep: false,
        });
        let plan = make_it_fit(&cfg, H100, None, None);
        assert!(!plan.fits_now);
        let sleep = plan
            .changes
            .iter()
            .find(|c| c.name == "vLLM asleep during training")
            .expect("the sleep lever");
        assert!(sleep.fits);
        assert_eq!(flags(&cfg, &sleep.cfg), ["--vllm-sleep"]);
    }

    #[test]
    fn matches_brute_force_on_small_spaces() {
        for (seq, cap) in [
            (2048, H100),
            (8192, H100),
            (8192, 4.0 * H100),
            (1024, 0.25 * H100),
        ] {
            let cfg = DetailedConfig { seq, ..dead_end() };
            let plan = make_it_fit(&cfg, cap, None, None);
            let brute: Vec<String> = levers()
                .iter()
                .filter_map(|l| (l.apply)(&cfg).map(|to| (l, to)))
                .filter(|(_, to)| need(to, None).is_some_and(|n| n <= cap))
                .map(|(l, _)| l.name.clone())
                .collect();
            let singles: Vec<String> = plan
                .changes
                .iter()
                .filter(|c| c.fits && !c.name.contains(" + "))
                .map(|c| c.name.clone())
                .collect();
            // Of the GPU families, only the fewest GPUs that fit are kept.
            fn gpus_of(name: &str) -> Option<(&str, u64)> {
                let (family, rest) = name.split_once(" over ")?;
                Some((family, rest.split(' ').next()?.parse().ok()?))
            }
            let kept: Vec<String> = brute
                .iter()
                .filter(|n| match gpus_of(n) {
                    None => true,
                    Some((f, g)) => !brute
                        .iter()
                        .any(|m| gpus_of(m).is_some_and(|(f2, g2)| f2 == f && g2 < g)),
                })
                .cloned()
                .collect();
            let (mut a, mut b) = (kept, singles);
            a.sort();
            b.sort();
            assert_eq!(a, b, "seq {seq}, {cap}");
            let all = levers();
            let alone = |l: &Lever| brute.contains(&l.name);
            let mut brute_pairs = Vec::new();
            for (i, x) in all.iter().enumerate() {
                for y in &all[i + 1..] {
                    let to = (x.apply)(&cfg).and_then(|c| (y.apply)(&c));
                    let now = need(&cfg, None).unwrap();
                    let fits = to
                        .and_then(|t| need(&t, None))
                        .is_some_and(|n| n <= cap && n < now);
                    if !alone(x) && !alone(y) && fits {
                        brute_pairs.push(format!("{} + {}", x.name, y.name));
                    }
                }
            }
            let mut pairs: Vec<String> = plan
                .changes
                .iter()
                .filter(|c| c.name.contains(" + "))
                .map(|c| c.name.clone())
                .collect();
            brute_pairs.sort();
            pairs.sort();
            assert_eq!(pairs, brute_pairs, "seq {seq}, {cap}");
        }
    }

    /// The issue's dead end: Llama-3.1-8B, 8,192 tokens, one 80 GB H100.
    /// Full recomputation alone does not fit (the states stay at 128 GB);
    /// ZeRO-3 over 8 GPUs does, and so do LoRA and QLoRA.
    #[test]
    fn the_dead_end_gets_ways_out() {
        let plan = make_it_fit(&dead_end(), H100, None, None);
        let find = |name: &str| plan.changes.iter().find(|c| c.name == name);
        let full = find("full recomputation").unwrap();
        assert!(!full.fits && full.term == "activations");
        assert!((full.compute - 4.0 / 3.0).abs() < 0.05, "{}", full.compute);
        // ZeRO-3 over the fewest GPUs that fit, and half as many would not.
        let zero3 = plan
            .changes
            .iter()
            .find(|c| c.name.starts_with("ZeRO-3 over "))
            .unwrap();
        assert!(zero3.fits && zero3.term == "optimizer_state");
        let half = zero3.gpus / 2;
        let mut fewer = dead_end();
        fewer.parallel.dp = half;
        fewer.parallel.zero = 3;
        fewer.batch = half;
        assert!(need(&fewer, None).unwrap() > H100, "{} GPUs", half);
        // LoRA alone keeps 8,192 tokens of stock-transformers activations:
        // 106.6 GB, over the card.
        let lora = find("LoRA (rank 16, every projection) instead of full fine-tuning").unwrap();
        assert!(!lora.fits && lora.need > 100e9);
        // With full recomputation it fits one card: a pair.
        let pair = find(
            "full recomputation + LoRA (rank 16, every projection) instead of full fine-tuning",
        )
        .unwrap();
        assert!(pair.fits && pair.gpus == 1 && pair.need < 35e9);
        // 179 GB: only a 180 GiB card of the table holds it as it is.
        assert_eq!(smallest_card(plan.need), Some("B200 (HGX)"));
        assert!(plan.changes[0].fits && plan.changes[0].gpus == 1);
    }

    /// Megatron-Core's offload of the first half of the layers, as NVIDIA's
    /// Llama 3 70B recipe on GB200 runs it (Megatron-FSDP, micro-batch 2
    /// of 8,192 tokens, FP8): offered to Megatron's fused kernels without
    /// recomputation or a pipeline, 40 of 80 layers, saving 39 layers'
    /// activations; not offered where Megatron refuses it.
    #[test]
    fn megatron_offers_its_first_half_of_layers_offloaded() {
        let name = "the first half of the layers' activations on the host (Megatron-Core)";
        let mut c = DetailedConfig::new(preset("llama-3.1-70b").unwrap().arch, 8192, 128);
        c.attention = AttentionKernel::Flash;
        c.dropout = false;
        c.micro_batch = Some(2);
        c.parallel.dp = 64;
        c.parallel.zero = 3;
        c.fp8 = crate::detailed::config::Fp8::Te;
        c.fp8_param = true;
        let gb200 = 186.0 * (1u64 << 30) as f64;
        let plan = make_it_fit(&c, gb200, None, None);
        let row = plan.changes.iter().find(|r| r.name == name).unwrap();
        assert_eq!(row.cfg.offload.activation_layers, 40);
        assert!(row.cfg.offload.activations && row.term == "activations");
        assert_eq!(
            flags(&c, &row.cfg),
            [
                "--offload-activations",
                "save-on-cpu",
                "--offload-layers",
                "40"
            ]
        );
        // Alone it fits the GB200 by the step's peak: NVIDIA's recipe.
        assert!(row.fits, "{}", row.need);
        for refused in [
            |c: &mut DetailedConfig| c.recompute = Recompute::Full,
            |c: &mut DetailedConfig| c.parallel.pp = 2,
            |c: &mut DetailedConfig| c.profile = Profile::Hf,
        ] {
            let mut d = c;
            refused(&mut d);
            let plan = make_it_fit(&d, gb200, None, None);
            assert!(plan.changes.iter().all(|r| !r.name.contains(name)));
        }
    }
}
