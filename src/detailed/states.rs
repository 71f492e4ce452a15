//! Model states: weights, gradients, the fp32 master copy and the optimizer's
//! state, per GPU, and the per-value byte widths the step timeline reuses.
//!
//! Per GPU they follow Rajbhandari et al. 2020 ("ZeRO", §5.1, Fig. 1):
//! weights, gradients and optimizer state (with the fp32 master copy, K = 12
//! for mixed-precision Adam) divided by N_d from stages 3, 2 and 1 on; tensor
//! and pipeline parallelism split the model first (Shoeybi et al. 2019;
//! Narayanan et al. 2021).

use super::{DetailedConfig, Optimizer, Precision, Profile};

/// Bytes of the model states on one GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelStates {
    /// Weights (the frozen base and LoRA's adapters included).
    pub params: f64,
    /// Gradients of what is trained.
    pub grads: f64,
    /// fp32 master weights (mixed precision).
    pub master_weights: f64,
    /// Optimizer state.
    pub optimizer_state: f64,
}

/// Bytes per weight: 4 in fp32, 2 otherwise.
pub(super) fn weight_bytes(cfg: &DetailedConfig) -> f64 {
    if cfg.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    }
}

/// Bytes per gradient value: 4 in fp32 or with fp32 gradients, 2 otherwise.
pub(super) fn grad_bytes(cfg: &DetailedConfig) -> f64 {
    if cfg.precision == Precision::Fp32 || cfg.fp32_grads {
        4.0
    } else {
        2.0
    }
}

/// Bytes per value of the tensors the optimizer updates: the fp32 master
/// under mixed precision, else the weights themselves.
pub(super) fn update_bytes(cfg: &DetailedConfig) -> f64 {
    if cfg.precision == Precision::Bf16 {
        2.0
    } else {
        4.0
    }
}

/// Optimizer-state bytes per trained parameter.
///
/// AdamW keeps two moments (Loshchilov & Hutter 2019), in the parameters'
/// dtype in PyTorch (`torch.optim.AdamW` creates them with `zeros_like`), so
/// in bf16 under pure bf16 and fp32 otherwise; SGD with momentum one buffer;
/// 8-bit Adam two 1-byte moments plus an fp32 absmax per 2048-value block
/// each (Dettmers et al. 2022, §2).
fn state_bytes(cfg: &DetailedConfig) -> f64 {
    match (cfg.optimizer, cfg.precision) {
        (Optimizer::AdamW, Precision::Bf16) => 4.0,
        (Optimizer::AdamW, _) => 8.0,
        (Optimizer::Sgd, _) => 0.0,
        (Optimizer::SgdMomentum, Precision::Bf16) => 2.0,
        (Optimizer::SgdMomentum, _) => 4.0,
        (Optimizer::Adam8bit, _) => 2.0 + 2.0 * 4.0 / 2048.0,
    }
}

/// Parameters that are trained: LoRA's adapters, or the whole model.
pub(super) fn trained_params(cfg: &DetailedConfig) -> f64 {
    match cfg.lora_rank {
        Some(r) => cfg.arch.lora_params(r, cfg.lora_targets) as f64,
        None => cfg.arch.params() as f64,
    }
}

/// Tensors that are trained (PyTorch's AdamW keeps a 0-d fp32 `step` for
/// each, `torch/optim/adamw.py`, `_init_group`).
pub(super) fn trained_tensors(cfg: &DetailedConfig) -> u64 {
    match cfg.lora_rank {
        Some(_) => 2 * cfg.lora_targets.count() * cfg.arch.layers,
        None => cfg.arch.param_tensors(),
    }
}

/// Whether the optimizer keeps PyTorch's per-tensor `step` counters.
pub(super) fn keeps_step_tensors(cfg: &DetailedConfig) -> bool {
    cfg.profile == Profile::Hf && cfg.optimizer == Optimizer::AdamW
}

/// The model states on one GPU for `cfg` (checked).
pub(super) fn model_states(cfg: &DetailedConfig) -> ModelStates {
    let par = &cfg.parallel;
    let n_all = cfg.arch.params() as f64;
    let n_trained = trained_params(cfg);
    let n_total = if cfg.lora_rank.is_some() {
        n_all + n_trained
    } else {
        n_all
    };
    let master_bytes = if cfg.precision == Precision::Mixed {
        4.0
    } else {
        0.0
    };
    let step_tensors = if keeps_step_tensors(cfg) {
        4.0 * trained_tensors(cfg) as f64
    } else {
        0.0
    };
    let split = (par.tp * par.pp) as f64;
    ModelStates {
        params: n_total * weight_bytes(cfg) / split / par.zero_divisor(3),
        grads: n_trained * grad_bytes(cfg) / split / par.zero_divisor(2),
        master_weights: n_trained * master_bytes / split / par.zero_divisor(1),
        optimizer_state: (n_trained * state_bytes(cfg) + step_tensors)
            / split
            / par.zero_divisor(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::{estimate, preset, Architecture, LoraTargets};

    #[test]
    fn zero_stages_match_the_paper() {
        // Rajbhandari et al. 2020, Fig. 1: Ψ = 7.5 B, K = 12, N_d = 64 → 120,
        // 31.4, 16.6, 1.9 GB per GPU of model states.
        let arch = Architecture::llama(32, 4096, 32, 32, 11008, 32000);
        let psi = 7.5e9;
        let mut cfg = DetailedConfig::new(arch, 2048, 64);
        cfg.parallel.dp = 64;
        for (stage, want) in [(0u8, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)] {
            cfg.parallel.zero = stage;
            let b = estimate(&cfg).unwrap();
            let states = b.params + b.grads + b.master_weights + b.optimizer_state;
            let per_psi = states / arch.params() as f64;
            let gb = per_psi * psi / 1e9;
            assert!((gb - want).abs() < 0.05, "stage {stage}: {gb}");
        }
    }

    #[test]
    fn lora_freezes_the_base() {
        let arch = preset("llama-2-7b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 2048, 1);
        cfg.lora_rank = Some(8);
        let b = estimate(&cfg).unwrap();
        let lora = arch.lora_params(8, LoraTargets::default()) as f64; // 32 · 8 · (8192 + 8192)
        assert_eq!(lora, 4_194_304.0);
        // All seven projections of Llama-2-7B at rank 8: 32 · 8 · (4 · 8192 + 3 · 15104).
        let all: LoraTargets = "all".parse().unwrap();
        assert_eq!(arch.lora_params(8, all), 32 * 8 * (4 * 8192 + 3 * 15104));
        assert_eq!(
            "q,v".parse::<LoraTargets>().unwrap(),
            LoraTargets::default()
        );
        assert!("q,x".parse::<LoraTargets>().is_err());
        assert_eq!(b.grads, lora * 2.0);
        assert_eq!(b.optimizer_state, lora * 8.0);
        assert_eq!(b.params, (arch.params() as f64 + lora) * 2.0);
    }
}
