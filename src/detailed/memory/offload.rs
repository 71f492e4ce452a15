//! Offload: what ZeRO-Offload / ZeRO-Infinity keep in host memory instead
//! of on the GPU, and the host RAM a node needs for it.
//!
//! DeepSpeed's own estimators (`deepspeed/runtime/zero/stage_1_and_2.py`,
//! `estimate_zero2_model_states_mem_needs`; `stage3.py`,
//! `estimate_zero3_model_states_mem_needs`, DeepSpeed 0.19) are reproduced
//! exactly in [`deepspeed_zero2`] and [`deepspeed_zero3`];
//! `tests/offload_vs_deepspeed.rs` checks them to the byte against DeepSpeed
//! itself run over 192 settings (`tests/fixtures/deepspeed_estimates.tsv`). The model's own figure
//! ([`host_ram`]) follows the same accounting — per offloaded parameter the
//! fp32 master (4 bytes), Adam's two moments (8), the fp32 gradient that
//! CPU Adam reads (4) and, with `offload_param`, the 16-bit weight (2);
//! DeepSpeed's `additional_buffer_factor` of 1.5 for pinned buffers and
//! fragmentation; and at start-up, without ZeRO-3's `zero.Init`, every
//! process loading the whole model in fp32 — and goes beyond it in three
//! ways: the optimizer, precision and LoRA chosen (not only mixed-precision
//! Adam on the full model), tensor and pipeline parallelism, and offloaded
//! activations. Where DeepSpeed's ZeRO-2 estimator counts the host memory of
//! every node as if it held all N GPUs' partitions (`total_params ·
//! max(4·total_gpus, 16)`), this model divides the partitions among the
//! nodes, as ZeRO does.

use super::activations;
use super::states::{self, trained_params};
use crate::detailed::config::{DetailedConfig, Objective, Reference};

/// DeepSpeed's ZeRO-2 estimate, bytes: (per CPU, per GPU).
pub fn deepspeed_zero2(
    total_params: u64,
    gpus_per_node: u64,
    nodes: u64,
    cpu_offload: bool,
    additional_buffer_factor: f64,
) -> (u64, u64) {
    let total_gpus = (nodes * gpus_per_node) as f64;
    let p = total_params as f64;
    let (cpu, gpu) = if cpu_offload {
        (
            p * (4.0 * total_gpus).max(16.0) * additional_buffer_factor,
            2.0 * p,
        )
    } else {
        (
            p * 4.0 * gpus_per_node as f64 * additional_buffer_factor,
            2.0 * p + (18.0 * p / total_gpus).trunc(),
        )
    };
    (cpu as u64, gpu as u64)
}

/// DeepSpeed's ZeRO-3 estimate, bytes: (per CPU, per GPU, largest layer).
#[allow(clippy::too_many_arguments)]
pub fn deepspeed_zero3(
    total_params: u64,
    largest_layer_params: u64,
    gpus_per_node: u64,
    nodes: u64,
    cpu_offload: bool,
    cpu_offload_params: bool,
    zero_init: bool,
    additional_buffer_factor: f64,
) -> (u64, u64, u64) {
    let total_gpus = (nodes * gpus_per_node) as f64;
    let gpus_factor = 1.0 / nodes as f64;
    let p = total_params as f64;
    let largest = 4 * largest_layer_params;
    let per_node = 4.0 * gpus_per_node as f64;
    let f = additional_buffer_factor;
    let (cpu, gpu) = if cpu_offload {
        if cpu_offload_params {
            let cpu = if zero_init {
                p * 18.0 * gpus_factor * f
            } else {
                p * per_node.max(18.0 * gpus_factor) * f
            };
            (cpu, largest as f64)
        } else {
            let cpu = if zero_init {
                p * 16.0 * gpus_factor * f
            } else {
                p * per_node.max(16.0 * gpus_factor) * f
            };
            (cpu, largest as f64 + (2.0 * p / total_gpus).trunc())
        }
    } else {
        let cpu = if zero_init {
            largest_layer_params as f64 * per_node * f
        } else {
            p * per_node * f
        };
        (cpu, largest as f64 + (18.0 * p / total_gpus).trunc())
    };
    (cpu as u64, gpu as u64, largest)
}

/// DeepSpeed's `additional_buffer_factor`: pinned buffers and
/// fragmentation on the host, 1.5 by default.
pub const BUFFER_FACTOR: f64 = 1.5;

/// Host memory one node needs, bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HostRam {
    /// Model states the node's GPUs keep on the host.
    pub states: f64,
    /// Offloaded activations of the node's GPUs.
    pub activations: f64,
    /// Start-up: without `zero.Init` every process loads the whole model in
    /// fp32 before partitioning it (DeepSpeed's `4 · gpus_per_node` term).
    pub load: f64,
    /// The node's GPUs that run: `--gpus-per-node`, or the run's GPUs when
    /// fewer.
    pub gpus: u64,
}

impl HostRam {
    /// What the node must have: the larger of training and start-up, times
    /// the buffer factor.
    pub fn total(&self) -> f64 {
        (self.states + self.activations).max(self.load) * BUFFER_FACTOR
    }
}

/// Host bytes of the model states one GPU offloads (before the buffer
/// factor): fp32 master, optimizer state and fp32 gradient partition with
/// the optimizer; the 16-bit weights with the parameters.
pub(crate) fn host_states_per_gpu(cfg: &DetailedConfig) -> f64 {
    let o = &cfg.offload;
    if !o.optimizer {
        return 0.0;
    }
    let par = &cfg.parallel;
    let on_gpu = states::model_states_on_gpu(cfg, false);
    let split = (par.tp * par.pp) as f64;
    let grads_fp32 = trained_params(cfg) / split * 4.0 / par.zero_divisor(1);
    let params = if o.params { on_gpu.params } else { 0.0 };
    on_gpu.master_weights + on_gpu.optimizer_state + grads_fp32 + params
}

/// Host RAM per node for `cfg`, when anything is offloaded (checked config).
pub fn host_ram(cfg: &DetailedConfig) -> Option<HostRam> {
    let o = &cfg.offload;
    if !(o.optimizer || o.params || o.activations) {
        return None;
    }
    // A node runs its GPUs' processes, and no more than the run has: one
    // GPU's run holds one GPU's share of the host, not eight.
    let gpus = o.gpus_per_node.min(cfg.gpus());
    let gpn = gpus as f64;
    let acts = if o.activations {
        activations::offloaded(cfg)
    } else {
        0.0
    };
    let zero_init = cfg.parallel.zero >= 3;
    let mut n = cfg.arch.params() as f64;
    if cfg.objective
        == (Objective::Dpo {
            reference: Reference::Model,
        })
        && cfg.lora_rank.is_none()
    {
        n *= 2.0;
    }
    let load = if zero_init || !o.optimizer {
        0.0
    } else {
        4.0 * n * gpn
    };
    Some(HostRam {
        states: host_states_per_gpu(cfg) * gpn,
        activations: acts * gpn,
        load,
        gpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::{estimate, preset, timeline, Moment, Offload, StepOptions};

    #[test]
    fn activation_offload_keeps_one_layer_on_the_gpu() {
        let arch = preset("llama-3.1-8b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 8192, 1);
        let on = estimate(&cfg).unwrap();
        let per_layer = (on.activations - on.logits) / 32.0; // roughly: head and rope aside
        cfg.offload = Offload {
            activations: true,
            gpus_per_node: 4,
            ..Offload::default()
        };
        let off = estimate(&cfg).unwrap();
        assert!(off.activations < on.activations / 8.0);
        assert!(off.activations > per_layer * 0.9);
        let host = host_ram(&cfg).unwrap();
        assert_eq!(host.states, 0.0);
        // One GPU runs: the node holds its share, not four GPUs'.
        assert_eq!(host.gpus, 1);
        assert!((host.activations - (on.activations - off.activations)).abs() < per_layer * 1.01);
        // Nothing offloaded: no host figure.
        cfg.offload.activations = false;
        assert!(host_ram(&cfg).is_none());
        // The timeline holds one layer at a time too.
        cfg.offload.activations = true;
        let t = timeline(&cfg, &StepOptions::default()).unwrap();
        let most = most_activations(&t);
        assert!(most < on.activations / 4.0, "{most}");
        assert!(t
            .events
            .iter()
            .all(|e| e.moment != Moment::ReferenceForward));
    }

    /// Megatron-Core's offload of its first layers, on NVIDIA's Llama 3
    /// 70B recipe for GB200 (Megatron-FSDP over 64 GPUs, micro-batch 2 of
    /// 8,192 tokens, FP8, `cpu_offloading_num_layers=40` of 80): the GPU
    /// keeps the 40 layers not offloaded and one in flight, the host the
    /// 40; the timeline's live activations agree with the estimate; the
    /// card holds the tensors' peak with it and not without.
    #[test]
    fn megatron_offloads_its_first_layers() {
        use crate::detailed::config::{ActOffload, AttentionKernel, Fp8, Recompute};
        let arch = preset("llama-3.1-70b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 8192, 128);
        cfg.attention = AttentionKernel::Flash;
        cfg.dropout = false;
        cfg.micro_batch = Some(2);
        cfg.parallel.dp = 64;
        cfg.parallel.zero = 3;
        cfg.fp8 = Fp8::Te;
        cfg.fp8_param = true;
        let all = estimate(&cfg).unwrap();
        cfg.offload.activations = true;
        cfg.offload.activation_layers = 40;
        let part = estimate(&cfg).unwrap();
        let layer = (all.activations - part.activations) / 39.0;
        assert!(layer > 3.0e9 && layer < 4.5e9, "{layer}");
        let outside = all.activations - 80.0 * layer;
        assert!((part.activations - 41.0 * layer - outside).abs() < 1e3);
        let host = host_ram(&cfg).unwrap();
        let per_gpu = host.activations / host.gpus as f64;
        assert!((per_gpu - 40.0 * layer).abs() < 1e3, "{per_gpu}");
        let t = timeline(&cfg, &StepOptions::default()).unwrap();
        let most = most_activations(&t);
        assert!(
            most <= part.activations * 1.001 && most > 0.9 * part.activations,
            "{most}"
        );
        let card = 186.0 * (1u64 << 30) as f64;
        let peak = t.events[t.peak].live.total();
        assert!(peak < card && all.total > card, "{peak}");
        // Megatron-Core's own limits: fewer layers than the model's, no
        // pipeline, no recomputation, its own offload.
        for bad in [
            |c: &mut DetailedConfig| c.offload.activation_layers = 80,
            |c: &mut DetailedConfig| c.parallel.pp = 2,
            |c: &mut DetailedConfig| c.recompute = Recompute::Selective,
            |c: &mut DetailedConfig| c.offload.activations_by = ActOffload::Torchtune,
        ] {
            let mut c = cfg;
            bad(&mut c);
            assert!(estimate(&c).is_err());
        }
    }

    /// The most activations live at any moment of a step.
    fn most_activations(t: &crate::detailed::StepTimeline) -> f64 {
        t.events
            .iter()
            .map(|e| e.live.activations)
            .fold(0.0, f64::max)
    }
}
