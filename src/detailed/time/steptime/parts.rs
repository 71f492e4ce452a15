//! Where a step's time goes ([`Parts`]) and what the step achieves per GPU
//! ([`StepTime`]): tokens per second, and model and hardware FLOPs per
//! second and utilisation (PaLM's convention) from
//! [`crate::detailed::time::flops`]'s counts.

use crate::detailed::config::DetailedConfig;
use crate::detailed::time::flops::step_flops;

/// Where a step's time goes, seconds per optimizer step on one GPU (the
/// slowest pipeline stage).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Parts {
    /// Matrix multiplies (weights and logits), recomputation included.
    pub matmul: f64,
    /// The attention's score and value products.
    pub attention: f64,
    /// Memory-bound kernels: norms, activations, residuals, softmax, loss.
    pub memory_bound: f64,
    /// Tensor-parallel collectives (exposed).
    pub tensor_parallel: f64,
    /// Data-parallel / ZeRO / FSDP collectives, the part not hidden.
    pub data_parallel: f64,
    /// Expert-parallel all-to-alls (exposed).
    pub expert_parallel: f64,
    /// Context parallelism's key/value ring, the part the attention does
    /// not hide.
    #[serde(default)]
    pub context_parallel: f64,
    /// Pipeline stage-to-stage sends.
    pub pipeline_sends: f64,
    /// The pipeline's fill and drain.
    pub bubble: f64,
    /// The optimizer update on the GPU.
    pub optimizer: f64,
    /// Offload: PCIe transfers and the host's optimizer step, not hidden.
    pub offload: f64,
    /// GRPO's rollout: the prompts' prefill and the decoding, one token at
    /// a time, and the reference's scoring with a KL penalty.
    #[serde(default)]
    pub generation: f64,
    /// The host issuing eager PyTorch's kernels slower than the GPU runs
    /// them: the part the GPU's work does not hide ([`super::host`]).
    #[serde(default)]
    pub host: f64,
    /// Compute slowed by the collectives hidden behind it: their kernels
    /// take streaming multiprocessors and memory bandwidth from it
    /// ([`super::contention`]).
    #[serde(default)]
    pub overlap_slowdown: f64,
    /// Collectives that ran behind compute, beside the exposed parts above
    /// and not in the step's total (the JSON shows it as `time.hidden`, so
    /// that `time.parts` adds up to the step); what they cost the compute
    /// beside them is [`Parts::overlap_slowdown`].
    #[serde(skip)]
    pub hidden: Hidden,
}

/// Communication hidden behind compute, seconds per optimizer step on one
/// GPU: what the overlaps saved ([`Parts::tensor_parallel`] and
/// [`Parts::data_parallel`] are what they did not hide).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Hidden {
    /// Tensor parallelism's collectives inside the GEMMs beside them
    /// (Transformer Engine's `tp_comm_overlap`).
    pub tensor_parallel: f64,
    /// Data parallelism's gathers and reductions behind backward and
    /// forward (buckets, ZeRO-3 / FSDP's prefetch, Megatron-Core's
    /// `overlap_grad_reduce` and `overlap_param_gather`).
    pub data_parallel: f64,
    /// Expert parallelism's all-to-alls behind another micro-batch's
    /// compute (Megatron-Core's `overlap_moe_expert_parallel_comm`).
    pub expert_parallel: f64,
}

impl Parts {
    /// Their sum: the step.
    pub fn total(&self) -> f64 {
        self.matmul
            + self.attention
            + self.memory_bound
            + self.tensor_parallel
            + self.data_parallel
            + self.expert_parallel
            + self.context_parallel
            + self.pipeline_sends
            + self.bubble
            + self.optimizer
            + self.offload
            + self.generation
            + self.host
            + self.overlap_slowdown
    }

    /// Each part with its name, in the order above.
    pub fn named(&self) -> [(&'static str, f64); 14] {
        [
            ("matmul", self.matmul),
            ("attention", self.attention),
            ("memory-bound", self.memory_bound),
            ("tensor parallel", self.tensor_parallel),
            ("data parallel", self.data_parallel),
            ("expert parallel", self.expert_parallel),
            ("context parallel", self.context_parallel),
            ("pipeline sends", self.pipeline_sends),
            ("bubble", self.bubble),
            ("optimizer", self.optimizer),
            ("offload", self.offload),
            ("generation", self.generation),
            ("host overhead", self.host),
            ("overlap slowdown", self.overlap_slowdown),
        ]
    }

    /// The largest part's name.
    pub fn dominant(&self) -> &'static str {
        self.named()
            .into_iter()
            .fold(("matmul", f64::MIN), |a, b| if b.1 > a.1 { b } else { a })
            .0
    }

    /// Every part times `k`: a micro-batch's parts times the step's
    /// micro-batches.
    pub(super) fn scaled(self, k: f64) -> Self {
        Self {
            matmul: self.matmul * k,
            attention: self.attention * k,
            memory_bound: self.memory_bound * k,
            tensor_parallel: self.tensor_parallel * k,
            data_parallel: self.data_parallel * k,
            expert_parallel: self.expert_parallel * k,
            context_parallel: self.context_parallel * k,
            pipeline_sends: self.pipeline_sends * k,
            bubble: self.bubble * k,
            optimizer: self.optimizer * k,
            offload: self.offload * k,
            generation: self.generation * k,
            host: self.host * k,
            overlap_slowdown: self.overlap_slowdown * k,
            hidden: Hidden {
                tensor_parallel: self.hidden.tensor_parallel * k,
                data_parallel: self.hidden.data_parallel * k,
                expert_parallel: self.hidden.expert_parallel * k,
            },
        }
    }
}

/// One optimizer step's time and what it achieves per GPU.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepTime {
    /// Seconds per optimizer step.
    pub step_s: f64,
    /// Tokens trained per second per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Model FLOPs per second per GPU, in TFLOPS (PaLM's convention).
    pub model_tflops_per_gpu: f64,
    /// Hardware FLOPs per second per GPU (recomputation counted).
    pub hardware_tflops_per_gpu: f64,
    /// Model FLOPs utilisation: model TFLOPS over the card's dense peak.
    pub mfu: f64,
    /// Hardware FLOPs utilisation.
    pub hfu: f64,
    /// Where the time goes.
    pub parts: Parts,
}

impl StepTime {
    /// The step of `cfg` whose time goes to `step`, on cards of dense
    /// `peak` FLOP/s.
    pub(super) fn of(cfg: &DetailedConfig, step: Parts, peak: f64) -> Self {
        let step_s = step.total();
        let flops = step_flops(cfg);
        let gpus = cfg.gpus() as f64;
        let model = flops.model / step_s / gpus;
        let hardware = flops.hardware / step_s / gpus;
        StepTime {
            step_s,
            tokens_per_s_per_gpu: flops.tokens / step_s / gpus,
            model_tflops_per_gpu: model / 1e12,
            hardware_tflops_per_gpu: hardware / 1e12,
            mfu: model / peak,
            hfu: hardware / peak,
            parts: step,
        }
    }
}
