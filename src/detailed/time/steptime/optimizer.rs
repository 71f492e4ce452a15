//! The optimizer update on the GPU: a streaming kernel over the state the
//! memory model keeps there ([`crate::detailed::memory::estimate`]), at
//! the memory's sustained rate.

use super::rates::Rates;
use crate::detailed::config::DetailedConfig;
use crate::detailed::memory::DetailedBreakdown;

/// The states the update streams through, from the step's `breakdown`.
/// With the optimizer in backward (torchtune 0.6.1 `training/memory.py`,
/// `register_optim_in_bwd_hooks`: PyTorch's
/// `register_post_accumulate_grad_hook` steps each parameter and frees its
/// gradient) the memory holds one gradient at a time, but the update still
/// reads every gradient once, with the same kernels per parameter: priced
/// as the step after backward, with every gradient.
pub(super) fn streamed(
    cfg: &DetailedConfig,
    breakdown: Option<DetailedBreakdown>,
) -> Option<DetailedBreakdown> {
    if !cfg.optimizer_in_backward {
        return breakdown;
    }
    let grads = crate::detailed::memory::states::model_states(cfg).grads;
    breakdown.map(|b| DetailedBreakdown { grads, ..b })
}

/// Seconds of the optimizer update on the GPU holding `breakdown` (none
/// without one).
pub(super) fn update(breakdown: Option<DetailedBreakdown>, r: &Rates) -> f64 {
    // The optimizer update: read and write the state and master weights,
    // read the gradients, write the weights, on whatever stays on the GPU.
    match breakdown {
        Some(b) => {
            let bytes = 2.0 * (b.master_weights + b.optimizer_state) + b.grads + b.params;
            bytes / r.bytes
        }
        None => 0.0,
    }
}
