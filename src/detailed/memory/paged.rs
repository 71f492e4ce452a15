//! bitsandbytes' paged optimizer state: which of it lives in CUDA unified
//! memory, and so which figure a trainer's log shows.
//!
//! Modelled from bitsandbytes' source, not measured (paged memory needs
//! CUDA; this project measures on the CPU, where bitsandbytes falls back to
//! ordinary tensors). `bitsandbytes/optim/optimizer.py`,
//! `Optimizer8bit.get_state_buffer`: a paged optimizer allocates a
//! parameter's state with `F.get_paged` (`bitsandbytes/functional.py`:
//! `cget_managed_ptr`, a `cudaMallocManaged` buffer) when the parameter has
//! at least 1e5 values, else with `torch.zeros_like`; `Optimizer2State.
//! init_state` allocates the 8-bit blocks' `absmax` with `torch.zeros`.
//! Unified memory is outside PyTorch's caching allocator, so
//! `torch.cuda.max_memory_allocated` (and `memory_reserved`, and
//! torchtune's `get_memory_stats`: `peak_memory_alloc`,
//! `peak_memory_reserved`, `peak_memory_active`, `training/memory.py`)
//! never count it; but its pages stay on the card until memory pressure
//! makes the driver evict them to the host, so the card holds it.

use crate::detailed::config::{DetailedConfig, Optimizer};
use crate::detailed::model::Architecture;

/// bitsandbytes pages a state buffer only for a parameter of at least this
/// many values (`get_state_buffer`: `p.numel() < 1e5` stays a torch tensor).
const PAGED_MIN_VALUES: f64 = 1e5;

/// The share of `cfg`'s optimizer state that bitsandbytes places in unified
/// memory: 0 unless the optimizer is paged; else the moments (not 8-bit
/// Adam's absmax) of the trained tensors of at least 1e5 values on one GPU.
pub fn paged_share(cfg: &DetailedConfig) -> f64 {
    let moments = match cfg.optimizer {
        Optimizer::PagedAdamW => 1.0,
        // Two 1-byte moments of the 2 + 8/2048 bytes per value.
        Optimizer::PagedAdam8bit => 2.0 / (2.0 + 2.0 * 4.0 / 2048.0),
        _ => return 0.0,
    };
    let (paged, all) = trained_tensor_values(cfg);
    if all > 0.0 {
        moments * paged / all
    } else {
        0.0
    }
}

/// Values of the trained tensors on one GPU: (in tensors large enough to
/// be paged, in all). LoRA's adapters: A is r × in, B out × r. The whole
/// model: each layer's matrices (split by tp) and the outer ones; what
/// `layer_matrices` cannot list (experts, latent attention) counted as
/// large, the norms and biases as small.
fn trained_tensor_values(cfg: &DetailedConfig) -> (f64, f64) {
    let a: &Architecture = &cfg.arch;
    let layers = a.layers as f64;
    let tp = cfg.parallel.tp as f64;
    let large = |v: f64| if v >= PAGED_MIN_VALUES { v } else { 0.0 };
    if let Some(r) = cfg.lora_rank {
        let per_layer = cfg.lora_targets.iter().fold((0.0, 0.0), |(p, all), t| {
            let (i, o) = a.projection(t);
            let (ra, rb) = ((r * i) as f64, (r * o) as f64);
            (p + large(ra) + large(rb), all + ra + rb)
        });
        // The output layer's and the embedding's: one r × h (or h × r)
        // and one V-wide tensor each.
        let outer = cfg.lora_targets.lm_head() as u64 + cfg.lora_targets.embed() as u64;
        let (small, wide) = ((r * a.hidden) as f64, (r * a.vocab) as f64);
        let outer_paged = outer as f64 * (large(small) + large(wide));
        let outer_all = outer as f64 * (small + wide);
        return (
            layers * per_layer.0 + outer_paged,
            layers * per_layer.1 + outer_all,
        );
    }
    // Each tensor as one GPU holds it decides; counted whole.
    let all = a.params() as f64;
    let split = |(r, c): (u64, u64), by: f64| large((r * c) as f64 / by) * by;
    // The embedding's table first (shared when tied), then the output
    // layer's (`Architecture::outer_matrices`), each split as the
    // tensor-parallel plan splits it.
    let par = &cfg.parallel;
    let outer: f64 = a
        .outer_matrices()
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            let by = match i {
                0 => super::states::embedding_divisor(cfg),
                // GPT-2's position table as before the plans: with the
                // output layer's divisor.
                _ => par.head_divisor(),
            };
            split(m, by)
        })
        .sum();
    let inner = match a.layer_matrices() {
        Some(m) => layers * m.into_iter().map(|m| split(m, tp)).sum::<f64>(),
        None => {
            let l = a.layers_param_split();
            (l.dense + l.experts) as f64
        }
    };
    ((outer + inner).min(all), all)
}

/// The bytes of paged state live at the peak of `cfg`'s timeline, whose
/// peak event holds `state_at_peak` bytes of optimizer state: not in
/// PyTorch's allocator's figures, but on the card.
pub fn paged_at_peak(cfg: &DetailedConfig, state_at_peak: f64) -> f64 {
    state_at_peak * paged_share(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::model::LoraTargets;
    use crate::detailed::preset;

    /// A full model's state is paged but for the norms; QLoRA's rank-16
    /// adapters on an 8B model are half below 1e5 values (A of q is
    /// 16 × 4096 = 65,536), so only the MLP's wider ones are paged; the
    /// 8-bit absmax never is; other optimizers page nothing.
    #[test]
    fn which_state_is_paged() {
        let arch = preset("llama-3.1-8b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 2048, 1);
        cfg.optimizer = Optimizer::PagedAdamW;
        let full = paged_share(&cfg);
        assert!(full > 0.999 && full < 1.0, "{full}");
        cfg.optimizer = Optimizer::PagedAdam8bit;
        assert!(paged_share(&cfg) < full);
        cfg.lora_rank = Some(16);
        cfg.lora_targets = LoraTargets(127);
        // Per layer, paged: gate, up and down's B or A over ffn 14336
        // (229,376 values each); not: q, k, v, o, and their other halves.
        let (paged, all) = trained_tensor_values(&cfg);
        let per_layer = 3.0 * 16.0 * 14336.0;
        assert_eq!(paged, 32.0 * per_layer);
        // Of 1,310,720 adapter values per layer, 688,128 (52.5 %).
        assert_eq!(all, 32.0 * 1_310_720.0);
        cfg.optimizer = Optimizer::AdamW;
        assert_eq!(paged_share(&cfg), 0.0);
    }
}
