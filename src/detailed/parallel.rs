//! Parallelism: how data, tensor, sequence and pipeline parallelism and
//! ZeRO split the model states and activations across GPUs.

use super::Architecture;

/// Parallelism, per GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parallelism {
    /// Data-parallel replicas, N_d.
    pub dp: u64,
    /// ZeRO stage 0–3 (Rajbhandari et al. 2020, §5).
    pub zero: u8,
    /// Tensor-parallel degree, t (Shoeybi et al. 2019).
    pub tp: u64,
    /// Sequence parallelism with tensor parallelism (Korthikanti §4.2.2).
    pub sp: bool,
    /// Pipeline stages, p (1F1B schedule).
    pub pp: u64,
    /// Expert parallelism: routed experts spread over this many GPUs.
    pub ep: u64,
    /// Expert tensor parallelism: each expert split over this many GPUs.
    pub etp: u64,
}

impl Default for Parallelism {
    fn default() -> Self {
        Self {
            dp: 1,
            zero: 0,
            tp: 1,
            sp: false,
            pp: 1,
            ep: 1,
            etp: 1,
        }
    }
}

impl Parallelism {
    /// ZeRO's divisor for a state that stage `stage` partitions: N_d from
    /// that stage on, 1 before (Rajbhandari et al. 2020, §5.1: optimizer
    /// state from stage 1, gradients from 2, parameters from 3).
    pub fn zero_divisor(&self, stage: u8) -> f64 {
        if self.zero >= stage {
            self.dp as f64
        } else {
            1.0
        }
    }

    /// The expert-data-parallel group: GPUs holding the same experts,
    /// dp·tp / (ep·etp). Megatron-LM lays experts out as
    /// world = pp · ep · etp · edp beside world = pp · tp · dp
    /// (`megatron/core/parallel_state.py`, `initialize_model_parallel`),
    /// so the expert group is carved from data × tensor parallelism.
    pub fn expert_dp(&self) -> f64 {
        (self.dp * self.tp) as f64 / (self.ep * self.etp).max(1) as f64
    }

    /// ZeRO's divisor for the routed experts' states: the expert-data-parallel
    /// group from stage `stage` on (Megatron's distributed optimizer shards
    /// expert state over that group).
    pub fn expert_zero_divisor(&self, stage: u8) -> f64 {
        if self.zero >= stage {
            self.expert_dp()
        } else {
            1.0
        }
    }

    /// Layers on one pipeline stage, ⌈L / p⌉ (Narayanan et al. 2021).
    pub fn stage_layers(&self, arch: &Architecture) -> f64 {
        (arch.layers as f64 / self.pp as f64).ceil()
    }

    /// Divisor of the activations that only sequence parallelism splits
    /// (Korthikanti et al. 2022, §4.2.2): t with it, 1 without.
    pub fn sp_divisor(&self) -> f64 {
        if self.sp {
            self.tp as f64
        } else {
            1.0
        }
    }
}
