//! The optimizer update on the GPU: a streaming kernel over the state the
//! memory model keeps there ([`crate::detailed::memory::estimate`]), at
//! the memory's sustained rate.

use super::rates::Rates;
use crate::detailed::memory::DetailedBreakdown;

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
