//! Runtime overhead: GPU memory a training process uses beyond its tensors,
//! which no model of the tensors predicts exactly. Shown beside the peak,
//! as its own band, with defaults from cited measurements that a reader can
//! change; the verdict, the largest micro-batch and sequence, *Make it fit*
//! and `--plan` count it unless it is turned off (`--no-overhead`, `oh=0`).
//!
//! What each figure is, as a trainer's log prints them:
//! `torch.cuda.max_memory_allocated` is the tensors' peak (the timeline's,
//! less bitsandbytes' paged state, which is outside PyTorch's allocator);
//! `torch.cuda.max_memory_reserved` is that plus what the caching allocator
//! holds and cannot hand out (its fragmentation); the card (and
//! `nvidia-smi`) holds that plus the CUDA context, the libraries'
//! workspaces and the communication buffers, which are outside the caching
//! allocator.

use super::events::StepTimeline;
use super::paged::paged_at_peak;
use crate::detailed::config::DetailedConfig;

/// 2²⁰ bytes, in GB.
const MIB_GB: f64 = 1_048_576.0 / 1e9;

/// The reader's runtime overhead settings, in GB (10⁹ bytes) and percent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overhead {
    /// The CUDA context: kernels and driver state, created by the first
    /// CUDA call. Default 723 MiB: `torch.randn(1).cuda()` took a process
    /// from 0 to 723 MiB (PyTorch forums, "What is the reason for
    /// pytorch's GPU memory floor?"); it depends on the CUDA version, lazy
    /// module loading and the GPU.
    pub cuda_context_gb: f64,
    /// Library workspaces. Default 64 MiB: cuBLAS's and cuBLASLt's 32 MiB
    /// each on Hopper (PyTorch #120925, after the cuBLAS API reference's
    /// recommended workspace for Hopper).
    pub workspaces_gb: f64,
    /// Communication buffers per process group. Default 256 MiB: NCCL's
    /// `NCCL_BUFFSIZE` of 4 MiB per channel and direction, 32 channels
    /// (NCCL's environment variables documentation), for each of the data-,
    /// tensor- and pipeline-parallel groups that has more than one GPU.
    pub communication_gb: f64,
    /// The caching allocator's fragmentation, in percent of the peak.
    /// Default [`FRAGMENTATION_PERCENT`] (15 %), or
    /// [`EXPANDABLE_FRAGMENTATION_PERCENT`] (5 %) with
    /// `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`.
    pub fragmentation_percent: f64,
}

/// Fragmentation of PyTorch's caching allocator as it ships (fixed-size
/// segments from `cudaMalloc`), in percent of the tensors' peak: 15 %, the
/// average fragmentation GMLake removed from it over eight LLMs trained on
/// A100-80GB (Guo et al., "GMLake", ASPLOS 2024; up to 33 %). Checked
/// against real GPUs (issue 38): over held-out peaks that trainers measured
/// on real GPUs and published, the tensors' peak alone is a median 11 %
/// below PyTorch's reserved memory, and the peak plus this band a median
/// 2.6 % above it: a slightly cautious band, as a verdict wants.
pub const FRAGMENTATION_PERCENT: f64 = 15.0;

/// Fragmentation with `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`,
/// in percent of the peak: 5 %. With expandable segments the allocator
/// maps physical memory into one growing virtual segment in 2 MiB pages
/// instead of allocating new fixed segments (PyTorch's "CUDA semantics"
/// notes, *Optimizing memory usage with `PYTORCH_CUDA_ALLOC_CONF`*;
/// pytorch/pytorch#96995, "Expandable blocks in allocator"), so what it
/// reserves beyond the tensors is mostly freed blocks in the middle of the
/// segment that a later request does not fit. Published figures show the
/// setting removing most of the band: torchtune's Llama-3-8B QLoRA recipe
/// on an A100 reserved 16.39 GiB as shipped, 10.83 GiB with expandable
/// segments (meta-pytorch/torchtune#1185); a Qwen2.5-7B run reserved
/// 96.6 GB instead of 127.0 GB (nvidia-cosmos/cosmos-rl#388). The 5 % is a
/// cautious bound from those, not a measurement of our own (no GPU here):
/// torchtitan, axolotl, Unsloth and llm-foundry turn the setting on by
/// default.
pub const EXPANDABLE_FRAGMENTATION_PERCENT: f64 = 5.0;

impl Default for Overhead {
    fn default() -> Self {
        Self {
            cuda_context_gb: 723.0 * MIB_GB,
            workspaces_gb: 64.0 * MIB_GB,
            communication_gb: 256.0 * MIB_GB,
            fragmentation_percent: FRAGMENTATION_PERCENT,
        }
    }
}

/// The overhead in bytes, by source.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OverheadBytes {
    /// CUDA context.
    pub cuda_context: f64,
    /// Library workspaces.
    pub workspaces: f64,
    /// Communication buffers.
    pub communication: f64,
    /// Fragmentation.
    pub fragmentation: f64,
}

impl OverheadBytes {
    /// All of it.
    pub fn total(&self) -> f64 {
        self.cuda_context + self.workspaces + self.communication + self.fragmentation
    }

    /// What a trainer's log prints for a step whose tensors peak at `peak`
    /// bytes, `paged` of them in bitsandbytes' unified memory:
    /// (`torch.cuda.max_memory_allocated`, `max_memory_reserved`). The
    /// first is the tensors PyTorch's caching allocator handed out
    /// (`torch/cuda/memory.py`, `memory_stats`' `allocated_bytes.all.peak`),
    /// the second what it holds from CUDA, its fragmentation included
    /// (`reserved_bytes.all.peak`); neither counts the CUDA context, the
    /// libraries' workspaces or NCCL's buffers, which are allocated outside it.
    pub fn pytorch_figures(&self, peak: f64, paged: f64) -> (f64, f64) {
        let allocated = peak - paged;
        (allocated, allocated + self.fragmentation)
    }
}

impl Overhead {
    /// The defaults with `expandable_segments:True`: the fragmentation
    /// [`EXPANDABLE_FRAGMENTATION_PERCENT`], the rest unchanged.
    pub fn expandable_segments() -> Self {
        Self {
            fragmentation_percent: EXPANDABLE_FRAGMENTATION_PERCENT,
            ..Self::default()
        }
    }

    /// Largest size a reader may set, in GB.
    pub const MAX_GB: f64 = 1000.0;
    /// Largest fragmentation a reader may set, in percent.
    pub const MAX_PERCENT: f64 = 100.0;

    /// Whether every setting is a number in range (sizes 0–1000 GB,
    /// fragmentation 0–100 %).
    pub fn is_valid(&self) -> bool {
        let size = |v: f64| (0.0..=Self::MAX_GB).contains(&v);
        size(self.cuda_context_gb)
            && size(self.workspaces_gb)
            && size(self.communication_gb)
            && (0.0..=Self::MAX_PERCENT).contains(&self.fragmentation_percent)
    }

    /// The overhead for the step `t` of `cfg`: the fragmentation on the
    /// bytes PyTorch's caching allocator holds at the peak, which leaves out
    /// bitsandbytes' paged optimizer state (CUDA unified memory from
    /// `cudaMallocManaged`, never split into the allocator's blocks).
    pub fn for_step(&self, cfg: &DetailedConfig, t: &StepTimeline) -> OverheadBytes {
        let paged = if cfg.optimizer.paged() {
            paged_at_peak(cfg, t.peak_event().live.optimizer_state)
        } else {
            0.0
        };
        self.bytes(cfg, t.peak_bytes() - paged)
    }

    /// The overhead for `cfg` on one GPU whose caching allocator peaks at
    /// `peak` bytes (the step's peak, less any paged state: [`Self::for_step`]).
    pub fn bytes(&self, cfg: &DetailedConfig, peak: f64) -> OverheadBytes {
        let p = &cfg.parallel;
        let groups = [p.dp, p.tp, p.pp].iter().filter(|&&n| n > 1).count() as f64;
        OverheadBytes {
            cuda_context: self.cuda_context_gb * 1e9,
            workspaces: self.workspaces_gb * 1e9,
            communication: groups * self.communication_gb * 1e9,
            fragmentation: self.fragmentation_percent / 100.0 * peak,
        }
    }
}

/// What must fit on the card for the step `t` of `cfg`: its peak plus
/// the runtime overhead, when one is counted.
pub fn step_need(cfg: &DetailedConfig, t: &StepTimeline, overhead: Option<&Overhead>) -> f64 {
    t.peak_bytes() + overhead.map_or(0.0, |o| o.for_step(cfg, t).total())
}

/// What the step of `t` needs without the caching allocator's
/// fragmentation band (its peak and the overhead outside the allocator:
/// CUDA context, workspaces, communication buffers), when that fits in
/// `capacity` and the need with the band does not; `None` otherwise.
/// PyTorch's caching allocator frees its cached blocks and retries an
/// allocation that failed before it gives up (`release_cached_blocks` in
/// `c10/cuda/CUDACachingAllocator.cpp`; `num_alloc_retries` in
/// `torch.cuda.memory_stats`), so such a step can run at the card's edge,
/// slower: 49 of 278 published runs read so (docs/validation.md,
/// "Published runs fit their cards").
pub fn edge_need(
    cfg: &DetailedConfig,
    t: &StepTimeline,
    overhead: Option<&Overhead>,
    capacity: f64,
) -> Option<f64> {
    let bytes = overhead?.for_step(cfg, t);
    let with_band = t.peak_bytes() + bytes.total();
    let without = with_band - bytes.fragmentation;
    (with_band > capacity && without <= capacity).then_some(without)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::preset;

    #[test]
    fn defaults_add_up_from_their_sources() {
        let mut cfg = DetailedConfig::new(preset("gpt2").unwrap().arch, 1024, 8);
        let o = Overhead::default();
        assert!(o.is_valid());
        let one = o.bytes(&cfg, 10e9);
        assert_eq!(one.communication, 0.0, "one GPU talks to no one");
        assert_eq!(one.fragmentation, 1.5e9);
        assert_eq!(one.total(), (723 + 64) as f64 * 1_048_576.0 + 1.5e9);
        cfg.parallel.dp = 8;
        assert_eq!(o.bytes(&cfg, 10e9).communication, 256.0 * 1_048_576.0);
        cfg.parallel.tp = 4;
        assert_eq!(o.bytes(&cfg, 10e9).communication, 512.0 * 1_048_576.0);
    }

    #[test]
    fn bad_settings_are_invalid() {
        for bad in [
            Overhead {
                cuda_context_gb: -1.0,
                ..Overhead::default()
            },
            Overhead {
                workspaces_gb: f64::NAN,
                ..Overhead::default()
            },
            Overhead {
                fragmentation_percent: 150.0,
                ..Overhead::default()
            },
            Overhead {
                communication_gb: f64::INFINITY,
                ..Overhead::default()
            },
        ] {
            assert!(!bad.is_valid(), "{bad:?}");
        }
    }
}
