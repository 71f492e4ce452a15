//! Offload to the host, seconds per step, the part not hidden: ZeRO-Offload's
//! gradients down and weights up over PCIe and the host's optimizer step at
//! the host memory's rate ([`HOST_GBPS_PER_GPU`]), ZeRO-Infinity's weight
//! fetches, and activations moved out and back.

use super::data_parallel::Weights;
use super::rates::Rates;
use crate::detailed::config::{DetailedConfig, Optimizer};

/// Host memory bandwidth per GPU for an offloaded optimizer step: a DGX
/// A100's two AMD EPYC 7742, eight DDR4-3200 channels each (25.6 GB/s per
/// channel, JEDEC JESD79-4), 409.6 GB/s shared by eight GPUs.
pub const HOST_GBPS_PER_GPU: f64 = 51.2;

/// Offload's seconds per step, not hidden: the optimizer's, the weights'
/// and the activations' (behind each micro-batch's `compute`, `acc` of
/// them).
pub(super) fn offload(cfg: &DetailedConfig, r: &Rates, w: &Weights, acc: f64, compute: f64) -> f64 {
    let mut offload = 0.0;
    if cfg.offload.optimizer {
        offload += optimizer_on_host(cfg, r, w);
    }
    if cfg.offload.params {
        // ZeRO-Infinity fetches each micro-batch's weights twice.
        let pcie = r.pcie();
        offload += acc * ((2.0 * w.param_bytes / pcie) - compute).max(0.0);
    }
    if cfg.offload.activations {
        // What one micro-batch copies to the host in forward and back in
        // backward, behind its compute (`save_on_cpu`, torchtune's packs,
        // Unsloth's checkpoints, Megatron-Core's first layers; torchtune
        // and Transformer Engine on their own streams).
        let in_flight = cfg.stage_in_flight(0);
        let moved = crate::detailed::memory::activations::offloaded(cfg) / in_flight;
        offload += acc * (2.0 * moved / r.pcie() - compute).max(0.0);
    }
    offload
}

/// ZeRO-Offload's optimizer step, seconds: the transfers over PCIe and
/// the update in the host's memory.
fn optimizer_on_host(cfg: &DetailedConfig, r: &Rates, w: &Weights) -> f64 {
    let p = &cfg.parallel;
    let shard = p.shard_group();
    // Gradients down, weights up over PCIe; Adam on the host reads and
    // writes fp32 weights and two moments and reads the gradient.
    let local = w.n_params / if p.zero >= 1 { shard as f64 } else { 1.0 };
    let pcie = r.pcie();
    let host = r.host();
    let state = match cfg.optimizer {
        Optimizer::Sgd => 4.0,
        _ => 12.0,
    };
    4.0 * local / pcie + (2.0 * state + 4.0) * local / host
}
