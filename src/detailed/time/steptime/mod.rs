//! The time of one optimizer step on one GPU, from the work the memory
//! model already counts ([`flops`](super::flops)) and the card's data sheet
//! ([`hardware`](super::hardware)).
//!
//! Every operation is priced from first principles, with a handful of
//! efficiencies ([`Efficiency`]) that are the same for every model and
//! configuration:
//!
//! - **matrix multiplies** (Williams et al. 2009, "Roofline"): an
//!   m × k by k × n product does 2·m·k·n operations and moves
//!   2·(m·k + k·n + m·n) bytes. Its time is the operations at the tensor
//!   cores' sustained rate **plus** the bytes at the memory's, the roofline
//!   without overlap: the loads before a tile's first multiply and the
//!   stores after its last do not hide behind it. This is the kernel
//!   efficiency by matrix size: narrow layers (k or n of a few hundred, or
//!   split by tensor parallelism) pay for their bytes, wide ones do not.
//!   Backward is two such products per weight (the input's gradient and the
//!   weight's), the same operations and bytes each.
//! - **attention**: FlashAttention's causal kernels skip the masked half of
//!   the scores, so they run half of the 4·s·q operations per token that the
//!   FLOP conventions count, at their own sustained rate; backward is 2.5×
//!   the forward's operations (five products for two, Dao 2023, §3.1.2).
//!   Eager attention runs the full products at the matrix rate and moves
//!   the a·s² scores through memory (softmax, dropout) forward and back.
//! - **memory-bound kernels** (norms, residual adds, the MLP's activation,
//!   rotary embeddings, dropout, cross-entropy): the bytes each reads and
//!   writes at the memory's sustained rate, backward twice the forward.
//! - **communication**: ring collectives (Patarasuk & Yuan 2009: an
//!   all-reduce moves 2·(n−1)/n of the buffer per GPU, an all-gather or
//!   reduce-scatter (n−1)/n) over NVLink when the group sits in one node,
//!   else over each GPU's share of the network. Tensor-parallel
//!   all-reduces (or the all-gather + reduce-scatter pairs of sequence
//!   parallelism, the same bytes) are exposed, as Megatron-LM ran them
//!   (Korthikanti et al. 2022, §4.2.2), or under Megatron-Core with
//!   sequence parallelism run inside the GEMMs beside them (Transformer
//!   Engine's `tp_comm_overlap`); data-parallel gradient reduction
//!   overlaps the last micro-batch's backward (PyTorch DDP's buckets,
//!   Li et al. 2020, §3.2.3; Megatron-Core's `overlap_grad_reduce`
//!   buckets, the last one exposed, and `overlap_param_gather` behind the
//!   next forward); ZeRO-3 / FSDP gathers each micro-batch's
//!   parameters and reduces its gradients behind that micro-batch's compute
//!   (Zhao et al. 2023, §3.3, prefetching); expert all-to-alls are exposed,
//!   or under Megatron-Core's combined 1F1B schedule run behind another
//!   micro-batch's attention and experts (`overlap_moe_expert_parallel_comm`).
//!   What hides is not free: the compute beside a collective runs 18.9 %
//!   slower, the average Lee et al. 2025 measured (`contention`).
//! - **pipeline**: the 1F1B schedule's (p−1)/v bubble of the slowest
//!   stage's forward and backward (Narayanan et al. 2021, §2.2, Eq. 1 and
//!   §2.2.2), and the stage-to-stage sends of each micro-batch.
//! - **the host**: eager PyTorch issues each kernel after Python, the
//!   hooks, the dispatcher and autograd have run on the CPU; where that
//!   outlasts the GPU's work on a micro-batch, the difference shows
//!   ([`host`], measured per layer).
//! - **optimizer and offload**: the update reads and writes the GPU's
//!   optimizer state, master weights and gradients once; offloaded to the
//!   host it moves gradients down and weights up over PCIe and runs at the
//!   host memory's rate.
//!
//! A file per part of the step, each priced by a function named for it and
//! summed by [`step_time`]:
//! - `rates`: the card's sustained rates, its links ([`Cluster`]), and the
//!   roofline's and the ring's prices every part is built from;
//! - `efficiency`: the sustained fractions ([`Efficiency`]);
//! - `layer` and `kernels`: one layer's forward (projections, MLP and
//!   experts, attention, Mamba-2 mixer; memory-bound kernels, fp8 casts);
//! - `compute`: a micro-batch's forward, backward, loss, DPO's reference
//!   and recomputation;
//! - `model_parallel`: tensor, expert and context parallelism's exchanges;
//! - `data_parallel`: ZeRO / FSDP / DDP's gathers and reductions;
//! - `contention`: the compute the hidden collectives slow;
//! - `pipeline`: the sends and the bubble;
//! - `optimizer` and `offload`: the update on the GPU, and on the host;
//! - `generation`: GRPO's rollout;
//! - `host`: the host's issuing of eager PyTorch's kernels;
//! - `parts`: where the time goes ([`Parts`]) and what the step achieves
//!   ([`StepTime`]).
//!
//! ```
//! use membudget::detailed::{preset, time::hardware::gpu, time::steptime, DetailedConfig};
//!
//! let cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 4096, 8);
//! let t = steptime::step_time(&cfg, &steptime::Cluster::new(gpu("h100-sxm").unwrap(), 8),
//!     &steptime::Efficiency::default());
//! assert!(t.mfu > 0.2 && t.mfu < 0.8, "{}", t.mfu);
//! ```

mod compute;
mod contention;
mod data_parallel;
mod efficiency;
mod generation;
pub mod host;
mod kernels;
mod layer;
mod model_parallel;
mod offload;
mod optimizer;
mod parts;
mod pipeline;
mod rates;

pub use efficiency::{Efficiency, FLASH_ATTENTION_2, MATMUL_MAMF};
pub use offload::HOST_GBPS_PER_GPU;
pub use parts::{Hidden, Parts, StepTime};
pub use rates::Cluster;

use crate::detailed::config::DetailedConfig;
use data_parallel::Weights;
use rates::Rates;

/// Tokens one GPU runs per micro-batch: its share of each sequence under
/// context parallelism, whose queries meet every key (the attention's
/// length stays the sequence's).
fn tokens(cfg: &DetailedConfig) -> f64 {
    let cp = cfg.parallel.cp.max(1);
    (cfg.sequences() * cfg.seq) as f64 / cp as f64
}

/// The pipeline stage that sets the pace, one micro-batch's compute on it
/// and its share of the layers. Evenly split, the last (1/p of the layers,
/// and the logits and the loss). Under an uneven split the slower of the
/// last (its own layers, the loss) and the stage with the most layers of
/// the others (the first or a middle one): every stage runs each
/// micro-batch in turn, so the slowest sets the pipeline's pace
/// (Narayanan et al. 2021, §2.2: a 1F1B pipeline's step is
/// (m + (p − 1)/v) times one stage's forward and backward, the stages
/// alike; unlike they wait on the slowest).
fn pacing_stage(cfg: &DetailedConfig, r: &Rates, m: f64) -> (compute::Compute, f64) {
    let p = &cfg.parallel;
    let Some(split) = p.stage_split(&cfg.arch) else {
        let share = 1.0 / p.pp.max(1) as f64;
        return (compute::micro_batch(cfg, r, m, share, true), share);
    };
    let layers = cfg.arch.layers as f64;
    let last_share = split.last as f64 / layers;
    let other_share = split.first.max(split.middle) as f64 / layers;
    let last = compute::micro_batch(cfg, r, m, last_share, true);
    let other = compute::micro_batch(cfg, r, m, other_share, false);
    let total = |c: &compute::Compute| c.matmul + c.attention + c.memory_bound;
    if total(&other) > total(&last) {
        (other, other_share)
    } else {
        (last, last_share)
    }
}

/// The time of one optimizer step of `cfg` on `cluster`'s GPUs: one
/// micro-batch's compute and exposed collectives, ZeRO-3 / FSDP's per
/// micro-batch, times the micro-batches, then the bubble, the gradients'
/// reduction, the optimizer, offload and GRPO's rollout once per step.
pub fn step_time(cfg: &DetailedConfig, cluster: &Cluster, eff: &Efficiency) -> StepTime {
    let r = Rates::new(cfg, cluster, eff);
    let m = tokens(cfg);
    let (c, share) = pacing_stage(cfg, &r, m);
    let (expert_parallel, all_to_alls) = model_parallel::expert_parallel(cfg, &r, m, share);
    let mut micro = Parts {
        matmul: c.matmul,
        attention: c.attention,
        memory_bound: c.memory_bound + model_parallel::async_tp_reductions(cfg, &r, m, share),
        tensor_parallel: model_parallel::tensor_parallel(cfg, &r, m, share),
        hidden: parts::Hidden {
            tensor_parallel: model_parallel::tensor_parallel_collectives(cfg, &r, m, share)
                - model_parallel::tensor_parallel(cfg, &r, m, share),
            data_parallel: 0.0,
            expert_parallel: all_to_alls - expert_parallel,
        },
        expert_parallel,
        context_parallel: model_parallel::context_parallel(
            cfg,
            &r,
            share,
            c.forward.attn,
            c.backward_attention,
        ),
        pipeline_sends: pipeline::sends(cfg, &r, m),
        ..Parts::default()
    };
    let compute = micro.matmul + micro.attention + micro.memory_bound;
    micro.host = host::exposed(cfg, share, compute);
    let weights = Weights::new(cfg);
    data_parallel::sharded(cfg, &r, &weights, &mut micro);
    let acc = cfg.accumulation_steps() as f64;
    let mut step = micro.scaled(acc);
    step.bubble = pipeline::bubble(cfg, &micro, compute, &c);
    let (exposed, all) = data_parallel::per_step(cfg, &r, &weights, compute);
    step.data_parallel += exposed;
    step.hidden.data_parallel += all - exposed;
    let breakdown = crate::detailed::memory::estimate(cfg).ok();
    step.optimizer = optimizer::update(optimizer::streamed(cfg, breakdown), &r);
    step.offload = offload::offload(cfg, &r, &weights, acc, compute);
    step.generation = generation::generation(cfg, &r, &c.forward);
    step.overlap_slowdown = contention::slowdown(&step.hidden);
    StepTime::of(cfg, step, r.peak)
}

#[cfg(test)]
mod testing {
    //! What the parts' tests share: a step on eight A100s at the default
    //! efficiencies, and Llama 3.1 8B under flash attention.

    use super::{step_time, Cluster, Efficiency, StepTime};
    use crate::detailed::config::{AttentionKernel, DetailedConfig};
    use crate::detailed::preset;
    use crate::detailed::time::hardware::gpu;

    /// `cfg`'s step on A100s, eight a node.
    pub(super) fn at(cfg: &DetailedConfig) -> StepTime {
        step_time(
            cfg,
            &Cluster::new(gpu("a100-80gb").unwrap(), 8),
            &Efficiency::default(),
        )
    }

    /// Llama 3.1 8B at `seq` × `batch`, flash attention, no dropout.
    pub(super) fn llama(seq: u64, batch: u64) -> DetailedConfig {
        model("llama-3.1-8b", seq, batch)
    }

    /// The preset `name` at `seq` × `batch`, flash attention, no dropout.
    pub(super) fn model(name: &str, seq: u64, batch: u64) -> DetailedConfig {
        let mut c = DetailedConfig::new(preset(name).unwrap().arch, seq, batch);
        c.attention = AttentionKernel::Flash;
        c.dropout = false;
        c
    }

    /// One micro-batch of `m` tokens of `cfg` on H100s with the
    /// stage's whole layers and the head, and the rates it ran at.
    pub(super) fn h100_micro_batch(
        cfg: &DetailedConfig,
        m: f64,
    ) -> (super::compute::Compute, super::rates::Rates) {
        let cluster = Cluster::new(gpu("h100-sxm").unwrap(), 8);
        let r = super::rates::Rates::new(cfg, &cluster, &Efficiency::default());
        (super::compute::micro_batch(cfg, &r, m, 1.0, true), r)
    }
}

#[cfg(test)]
mod tests {
    use super::{step_time, Cluster, Efficiency};
    use crate::detailed::config::DetailedConfig;
    use crate::detailed::preset;

    /// Whatever the configuration, the figures are finite and positive.
    #[test]
    fn figures_are_finite() {
        for name in ["gpt2", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"] {
            let Some(p) = preset(name) else { continue };
            let mut c = DetailedConfig::new(p.arch, 1, 1);
            for card in crate::detailed::time::hardware::GPUS.iter() {
                for gpn in [1, 8] {
                    c.parallel.dp = 2;
                    c.parallel.zero = 3;
                    let t = step_time(&c, &Cluster::new(*card, gpn), &Efficiency::default());
                    assert!(
                        t.step_s.is_finite() && t.step_s > 0.0,
                        "{name} {}",
                        card.key
                    );
                    assert!(t.mfu.is_finite() && t.mfu > 0.0 && t.mfu < 1.0);
                }
            }
        }
    }
}
