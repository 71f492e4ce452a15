//! The host issuing the kernels: eager PyTorch runs Python, the modules'
//! hooks, the dispatcher and autograd on the CPU before each kernel, and the
//! GPU runs ahead of it only while its kernels outlast that. A step of small
//! kernels is paced by the host (He 2022, "Making Deep Learning Go Brrrr
//! From First Principles", the "Overhead" section; the reason CUDA graphs
//! and `torch.compile` exist). Priced for the "hf" profile, whose layers
//! are `transformers`' modules, from [`LAYER_STEP`]: a layer's kernels and
//! the host's time for them, measured.

use crate::detailed::config::{DetailedConfig, Profile, Recompute};

/// One Llama decoder layer's training step on the host, measured
/// (`tests/fixtures/measure_ops.py`, `tests/fixtures/ops_measured.tsv`):
/// `transformers` 5.25's `LlamaDecoderLayer` in bf16, SDPA attention, torch
/// 2.15, one CPU thread, at shapes so small (hidden 64, 8 tokens) that the
/// kernels take next to nothing. Kernels are the ATen operators that reach a
/// backend after autograd and composite operators are decomposed, views and
/// allocations left out (eager), or the calls in inductor's generated
/// wrapper, its fused kernels and the external matrix multiplies and
/// attention (compiled, one graph per layer and pass, as torchtitan and
/// `transformers` compile per block). Host time is the process's CPU time
/// for the layer's forward and backward, the median of five runs of 200.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostRow {
    /// `torch.compile`d (inductor) or eager.
    pub compiled: bool,
    /// PEFT's LoRA (rank 8) on this many of the layer's seven projections,
    /// the base frozen; 0 for full training.
    pub lora_targets: u64,
    /// Kernels in the layer's forward.
    pub forward_kernels: u64,
    /// Kernels in its backward.
    pub backward_kernels: u64,
    /// The host's microseconds for the forward and backward.
    pub host_us: f64,
}

/// The measured rows (an "Intel Xeon Processor" virtual machine's core:
/// a data-centre host CPU of its generation; a faster host shortens these
/// in proportion).
pub const LAYER_STEP: [HostRow; 6] = [
    row(false, 0, 38, 71, 1735.0),
    row(true, 0, 12, 18, 1430.0),
    row(false, 1, 42, 66, 2162.0),
    row(true, 1, 14, 17, 1213.0),
    row(false, 7, 66, 102, 3993.0),
    row(true, 7, 26, 43, 2101.0),
];

const fn row(compiled: bool, lora: u64, fwd: u64, bwd: u64, host_us: f64) -> HostRow {
    HostRow {
        compiled,
        lora_targets: lora,
        forward_kernels: fwd,
        backward_kernels: bwd,
        host_us,
    }
}

/// The host's seconds for one layer's forward and backward under `cfg`
/// (LoRA on between one and seven projections interpolated linearly
/// between the measured one and seven), and the forward's share of them
/// by its kernels.
pub fn layer_host(cfg: &DetailedConfig) -> (f64, f64) {
    let at = |lora: u64| {
        LAYER_STEP
            .iter()
            .find(|r| r.compiled == cfg.compile && r.lora_targets == lora)
            .copied()
            .expect("measured")
    };
    let (r, s) = match cfg.lora_rank.map(|_| cfg.lora_targets.count().clamp(1, 7)) {
        None => (at(0), 1e-6 * at(0).host_us),
        Some(n) => {
            let (one, all) = (at(1), at(7));
            let k = (n - 1) as f64 / 6.0;
            (one, 1e-6 * (one.host_us + k * (all.host_us - one.host_us)))
        }
    };
    let forward = r.forward_kernels as f64 / (r.forward_kernels + r.backward_kernels) as f64;
    (s, forward)
}

/// Seconds the host adds to one micro-batch on a stage holding `share` of
/// the layers, whose GPU work takes `gpu` seconds: what the host's issuing
/// of the kernels outlasts the GPU's running them, with a recomputed
/// forward issued again. None outside the "hf" profile (Megatron-Core's
/// and MPT's fused kernels are few per layer and not measured here), nor
/// with Liger's kernels (Triton's, which need a GPU to be measured).
pub fn exposed(cfg: &DetailedConfig, share: f64, gpu: f64) -> f64 {
    if cfg.profile != Profile::Hf || cfg.liger {
        return 0.0;
    }
    let (per_layer, forward) = layer_host(cfg);
    let again = if cfg.recompute == Recompute::Full {
        forward * cfg.recomputed_share()
    } else {
        0.0
    };
    let host = cfg.arch.layers as f64 * share * per_layer * (1.0 + again);
    (host - gpu).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::{exposed, layer_host, LAYER_STEP};
    use crate::detailed::config::{DetailedConfig, Profile, Recompute};
    use crate::detailed::model::{preset, LoraTargets};

    fn llama() -> DetailedConfig {
        let mut c = DetailedConfig::new(preset("llama-3.2-1b").unwrap().arch, 512, 1);
        c.profile = Profile::Hf;
        c
    }

    /// The measured figures: LoRA on every projection interpolates to
    /// the seven-target row; one target to the one-target row; compile
    /// issues fewer kernels for less host time.
    #[test]
    fn measured_rows_are_read() {
        let mut c = llama();
        assert!((layer_host(&c).0 - 1735e-6).abs() < 1e-12);
        c.lora_rank = Some(8);
        c.lora_targets = LoraTargets(LoraTargets::LAYERS);
        assert!((layer_host(&c).0 - 3993e-6).abs() < 1e-12);
        c.lora_targets = LoraTargets(LoraTargets::Q | LoraTargets::V);
        let two = 2162e-6 + (3993e-6 - 2162e-6) / 6.0;
        assert!((layer_host(&c).0 - two).abs() < 1e-12);
        c.lora_rank = None;
        c.compile = true;
        assert!((layer_host(&c).0 - 1430e-6).abs() < 1e-12);
        assert!(LAYER_STEP
            .iter()
            .all(|r| r.forward_kernels < r.backward_kernels));
    }

    /// The host shows only where it outlasts the GPU; a recomputed forward
    /// is issued again; the fused profile pays none.
    #[test]
    fn only_what_outlasts_the_gpu() {
        let mut c = llama();
        let layers = c.arch.layers as f64;
        let host = layers * 1735e-6;
        assert!((exposed(&c, 1.0, 0.0) - host).abs() < 1e-12);
        assert_eq!(exposed(&c, 1.0, host), 0.0);
        assert!((exposed(&c, 0.5, 0.0) - host / 2.0).abs() < 1e-12);
        c.recompute = Recompute::Full;
        let again = host * (1.0 + 38.0 / 109.0);
        assert!((exposed(&c, 1.0, 0.0) - again).abs() < 1e-9);
        c.profile = Profile::Fused;
        assert_eq!(exposed(&c, 1.0, 0.0), 0.0);
    }
}
