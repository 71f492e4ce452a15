//! The detailed model: training memory of a real transformer, per GPU, from
//! its architecture, precision, optimizer, attention kernel, recomputation,
//! parallelism and LoRA. The lesson's model ([`crate::budget`]) stays as
//! taught; this one is for engineers who need figures that hold.
//!
//! ```
//! use membudget::detailed::{estimate, preset, DetailedConfig};
//!
//! let llama = preset("llama-2-7b").unwrap().arch;
//! assert_eq!(llama.params(), 6_738_415_616);
//! let b = estimate(&DetailedConfig::new(llama, 2048, 1)).unwrap();
//! assert!(b.activations > b.logits);
//! ```
//!
//! One file per part, so that a formula is found where its part is:
//! - [`arch`]: the model's shape (latent attention, experts), parameter
//!   counts, LoRA's adapters;
//! - [`import`]: a Hugging Face `config.json` to a shape;
//! - [`presets`]: published models and their checked parameter counts;
//! - [`states`]: weights, gradients, master weights, optimizer state;
//! - [`activations`]: what the forward pass keeps for backward, per profile;
//! - [`parallel`]: data, tensor, sequence and pipeline parallelism, ZeRO;
//! - [`sac`]: torchtitan's per-operator selective checkpointing;
//! - [`timeline`]: live memory over one training step, and its peak;
//! - [`quant`]: a quantized frozen base (QLoRA's NF4, LLM.int8());
//! - [`offload`]: what ZeRO-Offload keeps in host memory, host RAM per node;
//! - [`overhead`]: what a GPU process uses beyond its tensors;
//! - this file: the options, the configuration, and [`estimate`], which adds
//!   the model states and the saved activations.

pub mod activations;
pub mod arch;
pub mod defaults;
pub mod flops;
pub mod fp8;
pub mod grpo;
pub mod hardware;
pub mod import;
pub mod offload;
pub mod overhead;
pub mod parallel;
pub mod planner;
pub mod presets;
pub mod quant;
pub mod sac;
pub mod search;
pub mod ssm;
pub mod states;
pub mod steptime;
pub mod timeline;
pub mod zero3;

use std::fmt;

pub use arch::{Architecture, Family, LayerParams, LoraTargets, Mla, Moe, Router};
pub use import::{import_config, ImportError, Imported, MODEL_TYPES};
pub use offload::{host_ram, HostRam};
pub use overhead::{Overhead, OverheadBytes};
pub use parallel::{CpComm, Parallelism, Schedule};
pub use presets::{preset, Preset, PRESETS};
pub use ssm::Mamba2;
pub use states::ModelStates;
pub use timeline::{
    stage_timelines, timeline, why_peak, AdamImpl, Event, Live, Moment, Phase, Step, StepOptions,
    StepTimeline,
};

/// How weights, gradients and optimizer state are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Everything fp32.
    Fp32,
    /// bf16 weights, gradients and activations with an fp32 master copy and
    /// fp32 optimizer state (Micikevicius et al. 2018; the lesson's).
    Mixed,
    /// Everything bf16, optimizer state in bf16 too (PyTorch's AdamW keeps
    /// its moments in the parameters' dtype).
    Bf16,
}

/// The optimizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Optimizer {
    /// Adam with decoupled weight decay (Loshchilov & Hutter 2019): two moments.
    AdamW,
    /// Plain SGD: no state.
    Sgd,
    /// SGD with momentum: one buffer.
    SgdMomentum,
    /// 8-bit Adam (Dettmers et al. 2022): two 1-byte moments plus one fp32
    /// absmax per 2048-value block for each.
    Adam8bit,
    /// bitsandbytes' paged AdamW (`PagedAdamW`, Dettmers et al. 2023,
    /// "QLoRA", §3 "Paged Optimizers"): AdamW's 32-bit state in CUDA unified
    /// memory, which the driver pages out to host RAM under memory pressure.
    PagedAdamW,
    /// Paged 8-bit AdamW (`PagedAdamW8bit`): 8-bit Adam's state, paged.
    PagedAdam8bit,
    /// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization
    /// Algorithms", Algorithm 2): one moment per parameter, as
    /// `lion-pytorch` and bitsandbytes keep it.
    Lion,
    /// Muon (Jordan et al. 2024; `torch.optim.Muon`) on the layers' weight
    /// matrices, one momentum buffer each, and AdamW on the rest
    /// (embeddings, output layer, norms and biases): the usual split, since
    /// Muon orthogonalizes 2-D updates only.
    Muon,
    /// Adafactor (Shazeer & Stern 2018; `torch.optim.Adafactor`): the
    /// second moment of each matrix factored into a row and a column
    /// vector, of each vector kept whole; no first moment.
    Adafactor,
}

impl Optimizer {
    /// Whether the state lives in unified memory that can page to the host.
    pub fn paged(self) -> bool {
        matches!(self, Optimizer::PagedAdamW | Optimizer::PagedAdam8bit)
    }
}

/// A frozen base stored quantized, as bitsandbytes does for QLoRA
/// (Dettmers et al. 2023) and LLM.int8() (Dettmers et al. 2022).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BaseQuant {
    /// The base in the training precision.
    None,
    /// 4-bit NormalFloat, blocks of 64, with or without double
    /// quantization of the block constants (QLoRA §3).
    Nf4 {
        /// Quantize the fp32 absmax constants to 8 bits in blocks of 256.
        double_quant: bool,
    },
    /// LLM.int8(): one int8 per weight and one fp32 scale per output row.
    Int8,
}

/// What ZeRO-Offload / ZeRO-Infinity (or FSDP's CPU offload) keeps in host
/// memory instead of on the GPU (Ren et al. 2021, "ZeRO-Offload";
/// Rajbhandari et al. 2021, "ZeRO-Infinity").
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Offload {
    /// Optimizer state, fp32 master weights and fp32 gradients on the CPU,
    /// updated there (DeepSpeed's `offload_optimizer`, CPU Adam).
    pub optimizer: bool,
    /// The 16-bit parameters on the CPU too, fetched layer by layer
    /// (`offload_param`, ZeRO-3 only).
    pub params: bool,
    /// Saved activations on the CPU (`torch.autograd.graph.save_on_cpu`,
    /// DeepSpeed's `cpu_checkpointing` under full recomputation).
    pub activations: bool,
    /// GPUs per node, for the host memory per node.
    pub gpus_per_node: u64,
}

impl Default for Offload {
    fn default() -> Self {
        Self {
            optimizer: false,
            params: false,
            activations: false,
            gpus_per_node: 8,
        }
    }
}

/// What the step trains for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Objective {
    /// Next-token prediction (supervised fine-tuning, pre-training).
    Sft,
    /// Direct preference optimisation (Rafailov et al. 2023) as TRL's
    /// `DPOTrainer` runs it: chosen and rejected sequences in one forward.
    Dpo {
        /// Where the reference model's log-probabilities come from.
        reference: Reference,
    },
    /// Group relative policy optimisation (Shao et al. 2024, "DeepSeekMath",
    /// §4.1) as TRL's `GRPOTrainer` runs it: each step first generates the
    /// completions it trains on (the rollout, [`grpo::Rollout`]), then
    /// trains on prompt and completion with a fused LM head that keeps no
    /// logits.
    Grpo {
        /// A KL penalty against a frozen reference (`beta` > 0): the
        /// reference model on the GPUs (none with LoRA: the base with the
        /// adapters disabled). TRL's default `beta = 0` loads none.
        kl: bool,
    },
}

impl Objective {
    /// Whether a frozen reference model sits beside the policy on the GPUs
    /// (with LoRA the base with adapters disabled serves instead).
    pub fn reference_model(self) -> bool {
        matches!(
            self,
            Objective::Dpo {
                reference: Reference::Model
            } | Objective::Grpo { kl: true }
        )
    }
}

/// DPO's reference model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    /// A frozen copy of the model on the same GPUs, in the weights' 16-bit
    /// precision (TRL's `ref_model`; none with LoRA: the base with the
    /// adapters disabled is the reference).
    Model,
    /// Log-probabilities computed once before training
    /// (`precompute_ref_log_probs=True`): no reference in memory.
    Precomputed,
}

/// Float8 training of the layers' linear layers, as torchao's
/// `convert_to_float8_training` runs it (torchtitan's float8 converter:
/// every `nn.Linear` but the output layer): each matmul casts its input and
/// weight to fp8 with a dynamic scale (`hp_tensor_to_float8_dynamic`) and
/// runs `torch._scaled_mm`; backward casts the output's gradient too. See
/// [`fp8`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fp8 {
    /// No float8: the matmuls run in the precision's dtype.
    None,
    /// One scale per tensor (`Float8LinearConfig`'s default, "tensorwise").
    Tensorwise,
    /// One scale per row (the "rowwise" recipe: e4m3 throughout,
    /// power-of-2 scales).
    Rowwise,
    /// NVIDIA Transformer Engine's fp8 linear layers as Megatron-Core runs
    /// them (`--fp8-format hybrid`; `transformer_engine/pytorch/module/
    /// linear.py`): the inputs saved in fp8, the weights' fp8 copies cached
    /// across micro-batches. Modelled from the code, not measured (it needs
    /// a GPU).
    Te,
    /// Transformer Engine's MXFP8 block scaling on Blackwell
    /// (`MXFP8BlockScaling`): as [`Fp8::Te`], each value with a shared
    /// E8M0 scale per 32 (`mxfp8_tensor.py`): 1/32 byte more per value.
    /// Modelled, not measured.
    TeMxfp8,
}

/// What the attention keeps for backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttentionKernel {
    /// Materialised a·s² scores (softmax output, dropout mask and output).
    Eager,
    /// FlashAttention / PyTorch SDPA (Dao et al. 2022): only Q, K, V, the
    /// output and the log-sum-exp.
    Flash,
}

/// Activation recomputation (Korthikanti et al. 2022, §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recompute {
    /// Keep everything.
    None,
    /// Recompute the attention core: the a·s² terms are not kept.
    Selective,
    /// Recompute each layer from its input.
    Full,
    /// torchtitan's per-operator selective checkpointing: each layer keeps
    /// its input, the attention kernel's output and every other bias-free
    /// projection's output ([`sac`]).
    SelectiveOp,
}

/// Whose kernels, and so which tensors autograd keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Megatron-style fused kernels, as Korthikanti et al. count.
    Fused,
    /// Stock Hugging Face `transformers`.
    Hf,
}

/// Who runs data parallelism, and so which buffers it keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Framework {
    /// Megatron-LM / Megatron-Core: gradients in buffers allocated once
    /// (with the "fused" profile), ZeRO as its distributed optimizer.
    #[default]
    Megatron,
    /// PyTorch's `DistributedDataParallel`: the reducer's buckets, one flat
    /// buffer per bucket, hold a copy of every gradient for the whole run
    /// (`torch/csrc/distributed/c10d/reducer.cpp`, `initialize_buckets`);
    /// with `gradient_as_bucket_view=True` the gradients are views into
    /// them instead of a second copy (and so are never freed by
    /// `zero_grad`). The bucket size changes how many buffers, not their
    /// sum (measured, `tests/fixtures/ddp_measured.tsv`). No ZeRO.
    Ddp {
        /// `gradient_as_bucket_view=True`.
        bucket_view: bool,
    },
    /// PyTorch's FSDP2 (`fully_shard` on each layer, then the model), ZeRO-3
    /// over dp (`torch/distributed/fsdp/_fully_shard`): each all-gather
    /// fills a flat output copied out into unsharded weights; the root
    /// module (embedding, final norm, output layer) is gathered when forward
    /// starts; each layer gathers its parameters for forward and again for
    /// backward, or, with `reshard_after_forward=False`, keeps them from its
    /// forward to its backward, and so does the root (the flag given to
    /// every `fully_shard` call, the model's included). Under mixed
    /// precision, a bf16 `MixedPrecisionPolicy` over fp32 shards
    /// (`states::fsdp2_policy`).
    Fsdp2 {
        /// `reshard_after_forward=True` (the default).
        reshard_after_forward: bool,
    },
    /// DeepSpeed's ZeRO stages 1 and 2 (`deepspeed/runtime/zero/
    /// stage_1_and_2.py`): the optimizer keeps an fp32 copy of its partition
    /// of the weights whatever the precision
    /// (`single_partition_of_fp32_groups`), stage 1 reduces the gradients
    /// into partitions bucket by bucket as stage 2 does, and the first
    /// gradient of backward allocates the flat bucket they are copied into
    /// (`ipg_buffer`, `reduce_bucket_size` values in the weights' dtype),
    /// freed when the step ends. Stage 3 (`stage3.py`) as
    /// [`zero3`] walks it. Measured, `tests/fixtures/deepspeed_measured.tsv`.
    DeepSpeed {
        /// `reduce_bucket_size`, in values (DeepSpeed's default 5e8).
        reduce_bucket_size: u64,
        /// `stage3_prefetch_bucket_size`, in values (DeepSpeed's default
        /// 5e7): how far ahead stage 3 all-gathers once it has traced a step.
        prefetch_bucket_size: u64,
    },
}

impl Framework {
    /// Every framework by its name, as the command line and the address
    /// spell it.
    pub const ALL: [(&'static str, Framework); 6] = [
        ("megatron", Framework::Megatron),
        ("ddp", Framework::Ddp { bucket_view: false }),
        ("ddp-bucket-view", Framework::Ddp { bucket_view: true }),
        (
            "fsdp2",
            Framework::Fsdp2 {
                reshard_after_forward: true,
            },
        ),
        (
            "fsdp2-no-reshard",
            Framework::Fsdp2 {
                reshard_after_forward: false,
            },
        ),
        ("deepspeed", Framework::DEEPSPEED),
    ];

    /// DeepSpeed with its default buckets, 5e8 values to reduce and 5e7 to
    /// prefetch (`deepspeed/runtime/zero/config.py`, `reduce_bucket_size`,
    /// `prefetch_bucket_size`).
    pub const DEEPSPEED: Framework = Framework::DeepSpeed {
        reduce_bucket_size: 500_000_000,
        prefetch_bucket_size: 50_000_000,
    };

    /// Its name.
    pub fn name(self) -> &'static str {
        if let Framework::DeepSpeed { .. } = self {
            return "deepspeed";
        }
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("megatron", |(n, _)| n)
    }
}

impl std::str::FromStr for Framework {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                "framework must be megatron, ddp, ddp-bucket-view, fsdp2, fsdp2-no-reshard or deepspeed"
                    .to_string()
            })
    }
}

/// Where it runs; it changes two details of the "hf" profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// Dropout masks are `bool` (1 byte); SDPA keeps no scores even with dropout.
    Cuda,
    /// Dropout masks in the input's dtype; SDPA with dropout falls back to
    /// the math kernel, which keeps the scores.
    Cpu,
}

/// How `transformers` runs the routed experts (`experts_implementation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpertsImpl {
    /// One grouped matmul over tokens sorted by expert (`grouped_mm`, the
    /// default in `transformers` 5.x, `integrations/moe.py`).
    Grouped,
    /// A Python loop over the experts that received tokens (the modules'
    /// own `forward`, `experts_implementation="eager"`).
    Loop,
}

/// Implements `FromStr` (and `name()`) for a choice enum from its spellings.
macro_rules! choices {
    ($t:ty, $what:literal, $($name:literal => $v:expr),+ $(,)?) => {
        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s.to_ascii_lowercase().as_str() {
                    $($name => Ok($v),)+
                    _ => Err(format!(concat!($what, " must be one of: {}"), [$($name),+].join(", "))),
                }
            }
        }
        impl $t {
            /// Every name the command line and URL accept, in order.
            pub const NAMES: &'static [&'static str] = &[$($name),+];
            /// The name the command line and URL use.
            pub fn name(self) -> &'static str {
                $(if self == $v { return $name; })+
                unreachable!()
            }
        }
    };
}

choices!(Router, "router", "mixtral" => Router::Mixtral, "qwen" => Router::Qwen,
    "qwen2" => Router::Qwen2, "gpt-oss" => Router::GptOss, "deepseek" => Router::DeepSeek,
    "llama4" => Router::Llama4);
choices!(ExpertsImpl, "experts implementation", "grouped" => ExpertsImpl::Grouped,
    "loop" => ExpertsImpl::Loop);
choices!(Family, "architecture", "gpt2" => Family::Gpt2, "llama" => Family::Llama);
choices!(Precision, "precision", "mixed" => Precision::Mixed, "bf16" => Precision::Bf16, "fp32" => Precision::Fp32);
choices!(Optimizer, "optimizer", "adamw" => Optimizer::AdamW, "sgd" => Optimizer::Sgd,
    "sgd-momentum" => Optimizer::SgdMomentum, "adam8bit" => Optimizer::Adam8bit,
    "paged-adamw" => Optimizer::PagedAdamW, "paged-adam8bit" => Optimizer::PagedAdam8bit,
    "lion" => Optimizer::Lion, "muon" => Optimizer::Muon, "adafactor" => Optimizer::Adafactor);
choices!(BaseQuant, "quantized base", "none" => BaseQuant::None,
    "nf4" => BaseQuant::Nf4 { double_quant: true }, "nf4-nodq" => BaseQuant::Nf4 { double_quant: false },
    "int8" => BaseQuant::Int8);
choices!(Objective, "objective", "sft" => Objective::Sft,
    "dpo" => Objective::Dpo { reference: Reference::Model },
    "dpo-precomputed" => Objective::Dpo { reference: Reference::Precomputed },
    "grpo" => Objective::Grpo { kl: false }, "grpo-kl" => Objective::Grpo { kl: true });
choices!(Fp8, "fp8 recipe", "none" => Fp8::None, "tensorwise" => Fp8::Tensorwise,
    "rowwise" => Fp8::Rowwise, "te" => Fp8::Te, "te-mxfp8" => Fp8::TeMxfp8);
choices!(AttentionKernel, "attention", "eager" => AttentionKernel::Eager, "flash" => AttentionKernel::Flash);
choices!(Recompute, "recompute", "none" => Recompute::None, "selective" => Recompute::Selective,
    "selective-op" => Recompute::SelectiveOp, "full" => Recompute::Full);
choices!(Profile, "implementation", "fused" => Profile::Fused, "hf" => Profile::Hf);
choices!(Device, "device", "cuda" => Device::Cuda, "cpu" => Device::Cpu);
choices!(AdamImpl, "AdamW implementation", "loop" => AdamImpl::ForLoop,
    "foreach" => AdamImpl::Foreach, "fused" => AdamImpl::Fused);

/// Everything the detailed model needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetailedConfig {
    /// The model.
    pub arch: Architecture,
    /// Sequence length, s.
    pub seq: u64,
    /// Global batch, sequences per optimizer step.
    pub batch: u64,
    /// Sequences per GPU per forward pass; `None`: batch / dp.
    pub micro_batch: Option<u64>,
    /// Storage precision.
    pub precision: Precision,
    /// Float8 matmuls in the layers (torchao).
    pub fp8: Fp8,
    /// Keep gradients in fp32 under mixed or bf16 precision.
    pub fp32_grads: bool,
    /// The optimizer.
    pub optimizer: Optimizer,
    /// Attention kernel.
    pub attention: AttentionKernel,
    /// Dropout in the model (attention, residual, embedding).
    pub dropout: bool,
    /// Recomputation.
    pub recompute: Recompute,
    /// Kernel profile.
    pub profile: Profile,
    /// Device (details of the "hf" profile).
    pub device: Device,
    /// Parallelism.
    pub parallel: Parallelism,
    /// LoRA rank (base frozen), if any.
    pub lora_rank: Option<u64>,
    /// The projections LoRA adapts.
    pub lora_targets: LoraTargets,
    /// How the routed experts run (mixture of experts, "hf" profile).
    pub experts_impl: ExpertsImpl,
    /// A quantized frozen base (QLoRA): needs LoRA.
    pub base_quant: BaseQuant,
    /// What lives in host memory instead.
    pub offload: Offload,
    /// Supervised, DPO or GRPO.
    pub objective: Objective,
    /// GRPO's generation: completion length and completions per prompt.
    pub rollout: grpo::Rollout,
    /// Who runs data parallelism.
    pub framework: Framework,
    /// Megatron's expert capacity factor with padding to capacity
    /// (`--moe-expert-capacity-factor` with `--moe-pad-expert-input-to-capacity`),
    /// "fused" profile: every expert holds c·n·k/E token slots. `None`:
    /// dropless, as Megatron's default.
    pub capacity_factor: Option<f64>,
}

impl DetailedConfig {
    /// Mixed precision AdamW, eager attention with dropout, no
    /// recomputation, fused kernels on CUDA, one GPU.
    pub fn new(arch: Architecture, seq: u64, batch: u64) -> Self {
        Self {
            arch,
            seq,
            batch,
            micro_batch: None,
            precision: Precision::Mixed,
            fp8: Fp8::None,
            fp32_grads: false,
            optimizer: Optimizer::AdamW,
            attention: AttentionKernel::Eager,
            dropout: true,
            recompute: Recompute::None,
            profile: Profile::Fused,
            device: Device::Cuda,
            parallel: Parallelism::default(),
            lora_rank: None,
            lora_targets: LoraTargets::default(),
            experts_impl: ExpertsImpl::Grouped,
            capacity_factor: None,
            base_quant: BaseQuant::None,
            offload: Offload::default(),
            objective: Objective::Sft,
            rollout: grpo::Rollout::default(),
            framework: Framework::Megatron,
        }
    }

    /// Forward and backward passes per optimizer step on one GPU (gradient
    /// accumulation): batch / (micro-batch × dp), at least 1.
    pub fn accumulation_steps(&self) -> u64 {
        (self.batch / (self.micro() * self.parallel.dp.max(1))).max(1)
    }

    /// Sequences one optimizer step trains on: micro-batch × accumulation
    /// steps × dp (the batch asked for, rounded down to what divides).
    pub fn effective_batch(&self) -> u64 {
        self.micro() * self.accumulation_steps() * self.parallel.dp.max(1)
    }

    /// GPUs the layout needs: dp × tp × pp × cp (experts share them: ep ×
    /// etp divides dp × cp × tp).
    pub fn gpus(&self) -> u64 {
        let p = &self.parallel;
        p.dp.max(1) * p.tp.max(1) * p.pp.max(1) * p.cp.max(1)
    }

    /// What one GPU's activations see: under context parallelism each GPU
    /// holds seq / cp tokens of every sequence, and with flash attention
    /// (which context parallelism needs) every saved tensor is per token.
    pub fn context_local(&self) -> Self {
        let mut c = *self;
        c.seq = (self.seq / self.parallel.cp.max(1)).max(1);
        c
    }

    /// Sequences in one forward pass on one GPU.
    pub fn micro(&self) -> u64 {
        self.micro_batch
            .unwrap_or(self.batch / self.parallel.dp.max(1))
            .max(1)
    }

    /// Sequences the model runs per micro-batch: DPO concatenates each
    /// pair's chosen and rejected sequences into one forward (TRL,
    /// `DPOTrainer.concatenated_forward`), so twice the micro-batch.
    pub fn sequences(&self) -> u64 {
        match self.objective {
            Objective::Sft | Objective::Grpo { .. } => self.micro(),
            Objective::Dpo { .. } => 2 * self.micro(),
        }
    }
}

/// What is wrong with a detailed configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetailedError(pub String);

impl fmt::Display for DetailedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DetailedError {}

/// The budget per GPU, in bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetailedBreakdown {
    /// Weights.
    pub params: f64,
    /// Gradients.
    pub grads: f64,
    /// fp32 master weights (mixed precision).
    pub master_weights: f64,
    /// Optimizer state.
    pub optimizer_state: f64,
    /// Everything the forward pass keeps for backward, logits included.
    pub activations: f64,
    /// The part of `activations` that is the output layer's logits and loss.
    pub logits: f64,
    /// Sum of the first five.
    pub total: f64,
}

impl DetailedBreakdown {
    /// The same figures as the lesson's five terms (logits inside the
    /// activations), to reuse its dominant term, shares and printout.
    pub fn terms(&self) -> crate::budget::Breakdown {
        crate::budget::Breakdown {
            params: self.params,
            grads: self.grads,
            master_weights: self.master_weights,
            optimizer_state: self.optimizer_state,
            activations: self.activations,
            total: self.total,
        }
    }
}

fn check(cfg: &DetailedConfig) -> Result<(), DetailedError> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    let err = |m: &str| Err(DetailedError(m.to_string()));
    if a.layers == 0 || a.hidden == 0 || a.heads == 0 || a.vocab == 0 || a.ffn == 0 {
        return err("layers, hidden size, heads, FFN size and vocabulary must be at least 1");
    }
    if a.hidden > 1 << 20
        || a.ffn > 1 << 24
        || a.vocab > 1 << 24
        || a.heads > a.hidden
        || a.layers > 1 << 12
    {
        return err("sizes beyond any real model: hidden ≤ 2²⁰, FFN and vocabulary ≤ 2²⁴, heads ≤ hidden, layers ≤ 4096");
    }
    if cfg.seq > 1 << 24 || cfg.batch > 1 << 24 || cfg.lora_rank.is_some_and(|r| r > a.hidden) {
        return err("sequence and batch must be at most 2²⁴, LoRA rank at most the hidden size");
    }
    if cfg.lora_rank.is_some() {
        if cfg.lora_targets.count() == 0 {
            return err("LoRA needs at least one target projection");
        }
        if a.family == Family::Gpt2 && cfg.lora_targets.0 & LoraTargets::GATE != 0 {
            return err("GPT-2 has no gate projection");
        }
    }
    if matches!(cfg.optimizer, Optimizer::Muon | Optimizer::Adafactor) {
        if a.layer_matrices().is_none() {
            return err("Muon and Adafactor are modelled for dense models without latent attention (the experts' 3-D tensors and MLA's matrices are not enumerated yet)");
        }
        if cfg.lora_rank.is_some() {
            return err("Muon and Adafactor with LoRA are not modelled: choose AdamW, Lion or 8-bit Adam for adapters");
        }
    }
    if cfg.fp8 != Fp8::None && cfg.precision == Precision::Fp32 {
        return err("float8 matmuls cast 16-bit activations (torchtitan trains them under bf16 compute): choose mixed or bf16 precision");
    }
    if matches!(cfg.fp8, Fp8::Te | Fp8::TeMxfp8) && cfg.profile != Profile::Fused {
        return err("Transformer Engine's fp8 is Megatron-Core's (the fused kernels): choose --impl fused, or torchao's tensorwise or rowwise recipe for stock transformers");
    }
    if let Objective::Grpo { .. } = cfg.objective {
        let r = &cfg.rollout;
        if r.completion == 0
            || r.completion > 1 << 24
            || r.generations == 0
            || r.generations > 1 << 12
        {
            return err(
                "GRPO needs a completion of 1 to 2²⁴ tokens and 1 to 4096 completions per prompt",
            );
        }
        if a.family != Family::Llama {
            return err(
                "GRPO is modelled for the Llama family (TRL's fused LM head was measured on it)",
            );
        }
        if a.ssm.is_some() {
            return err("GRPO on a hybrid (Mamba-2) model is not modelled: its rollout keeps a recurrent state beside the key/value cache");
        }
        if let Some(v) = r.vllm {
            let weights = grpo::engine_weights(cfg);
            if (v.reserved as f64) <= weights {
                return Err(DetailedError(format!(
                    "the colocated vLLM engine's {:.1} GB cannot hold its own copy of the weights ({:.1} GB): give it a larger fraction of the card",
                    v.reserved as f64 / 1e9,
                    weights / 1e9
                )));
            }
        }
        if !cfg.effective_batch().is_multiple_of(r.generations) {
            return Err(DetailedError(format!(
                "GRPO's batch counts completions: {} sequences per step is not a multiple of {} completions per prompt (change the batch or the completions per prompt)",
                cfg.effective_batch(),
                r.generations
            )));
        }
        if p.tp > 1 || p.pp > 1 || p.cp > 1 {
            return err("TRL's GRPOTrainer trains with data parallelism, ZeRO and FSDP: set tp, pp and cp to 1");
        }
        if matches!(cfg.framework, Framework::DeepSpeed { .. }) && p.zero == 3 {
            return err("GRPO under DeepSpeed's ZeRO-3 is not modelled: choose FSDP2 or the megatron framework's ZeRO-3");
        }
    }
    if cfg.recompute == Recompute::SelectiveOp {
        if let Some(why) = sac::unsupported(cfg) {
            return err(why);
        }
    }
    if p.vp == 0 || p.vp > 64 {
        return err("virtual pipeline stages must be 1 to 64");
    }
    if p.vp > 1 && (p.pp < 2 || !a.layers.is_multiple_of(p.pp * p.vp)) {
        return err("the interleaved schedule (virtual stages above 1) needs pipeline stages and layers divisible by stages × virtual stages");
    }
    if a.kv_heads == 0 || !a.heads.is_multiple_of(a.kv_heads) {
        return err("kv heads must divide the attention heads");
    }
    if a.head_width == 0 && !a.hidden.is_multiple_of(a.heads) {
        return err("hidden size must be a multiple of the heads (or give the head width)");
    }
    if a.head_width > 1 << 12 {
        return err("head width must be at most 4096");
    }
    if a.family == Family::Gpt2
        && (a.moe.is_some() || a.mla.is_some() || a.sandwich_norms || a.ssm.is_some())
    {
        return err(
            "experts, latent attention, sandwich norms and Mamba-2 mixers need the Llama family",
        );
    }
    if let Some(m) = a.ssm {
        let dims = [m.heads, m.head_dim, m.groups, m.state, m.conv, m.chunk];
        if dims.contains(&0)
            || dims.iter().any(|&d| d > 1 << 16)
            || !m.heads.is_multiple_of(m.groups)
        {
            return err("a Mamba-2 mixer needs heads, head width, groups, state, conv and chunk from 1 to 65536, the groups dividing the heads");
        }
        if p.cp > 1 {
            return err("context parallelism splits attention's sequence; a Mamba-2 scan across GPUs is not modelled: set cp to 1");
        }
        // `FalconH1ForCausalLM._tp_plan` names only `lm_head`: transformers
        // does not shard its layers; Megatron-Bridge's Falcon-H1 does.
        if p.tp > 1 && cfg.profile == Profile::Hf {
            return err("transformers has no tensor-parallel plan for Falcon-H1's layers (only its output layer): set tp to 1, or choose the fused kernels (Megatron-Bridge shards them)");
        }
        if a.moe.is_some() || a.mla.is_some() {
            return err("a Mamba-2 mixer beside experts or latent attention is not modelled");
        }
    }
    if let Some(m) = a.mla {
        let dims = [m.kv_rank, m.rope_dim, m.nope_dim, m.v_dim];
        if dims.contains(&0) || dims.iter().chain([&m.q_rank]).any(|&d| d > 1 << 16) {
            return err("latent attention needs kv rank, rope, nope and value dims from 1 to 65536 (query rank 0 to 65536)");
        }
    }
    if let Some(m) = a.moe {
        if m.experts == 0 || m.top_k == 0 || m.top_k > m.experts || m.experts > 1 << 12 {
            return err("experts must be 1 to 4096 and top-k from 1 to the experts");
        }
        if m.expert_ffn == 0 || m.expert_ffn > 1 << 20 || m.shared_ffn > 1 << 20 {
            return err("expert FFN must be 1 to 2²⁰ (shared FFN up to 2²⁰)");
        }
        if m.first_dense >= a.layers {
            return err("dense layers before the first MoE layer must be fewer than the layers");
        }
        if !m.experts.is_multiple_of(p.ep) {
            return err("expert parallelism must divide the experts");
        }
        if cfg.lora_rank.is_some()
            && cfg.lora_targets.0 & (LoraTargets::GATE | LoraTargets::UP | LoraTargets::DOWN) != 0
        {
            return err(
                "LoRA on experts' MLPs is not modelled: choose attention targets (q, k, v, o)",
            );
        }
    }
    if cfg
        .capacity_factor
        .is_some_and(|c| !(c.is_finite() && (0.1..=64.0).contains(&c)))
    {
        return err("capacity factor must be from 0.1 to 64");
    }
    if cfg.base_quant != BaseQuant::None {
        if cfg.lora_rank.is_none() {
            return err("a quantized base is frozen: QLoRA needs LoRA (a LoRA rank); full fine-tuning of a 4- or 8-bit base is not a thing bitsandbytes does");
        }
        if a.moe.is_some() {
            return err("a quantized base with mixture of experts is not modelled (bitsandbytes does not quantize fused expert tensors)");
        }
        if cfg.precision == Precision::Fp32 {
            return err("a quantized base computes in 16 bits: choose mixed or bf16 precision");
        }
    }
    let o = &cfg.offload;
    if (o.optimizer || o.params) && p.zero == 0 {
        return err(
            "offloading the optimizer or the parameters needs ZeRO (stage 1–3): it is ZeRO-Offload",
        );
    }
    if o.params && (p.zero < 3 || !o.optimizer) {
        return err("offloading the parameters needs ZeRO-3 and the optimizer offloaded too (DeepSpeed's offload_param)");
    }
    if o.optimizer && (cfg.optimizer.paged() || cfg.base_quant != BaseQuant::None) {
        return err("paged optimizers and quantized bases are bitsandbytes' own: DeepSpeed's CPU offload does not run them");
    }
    if o.gpus_per_node == 0 || o.gpus_per_node > 64 {
        return err("GPUs per node must be 1 to 64");
    }
    if p.ep == 0 || p.etp == 0 {
        return err("ep and etp must be at least 1");
    }
    if (p.ep > 1 || p.etp > 1) && a.moe.is_none() {
        return err("expert parallelism needs a mixture-of-experts model");
    }
    if !(p.data_group() * p.tp).is_multiple_of(p.ep * p.etp) {
        return err("ep × etp must divide dp × cp × tp (experts are laid out over the data-, context- and tensor-parallel GPUs)");
    }
    if matches!(cfg.framework, Framework::Fsdp2 { .. }) && p.zero != 3 {
        return err(
            "FSDP2 shards parameters, gradients and optimizer state: it is ZeRO-3 (--zero 3)",
        );
    }
    if let Framework::DeepSpeed {
        reduce_bucket_size,
        prefetch_bucket_size,
    } = cfg.framework
    {
        if !(1..=3).contains(&p.zero) {
            return err("DeepSpeed runs ZeRO stages 1 to 3 (--zero 1, 2 or 3)");
        }
        if !(1_000..=10_000_000_000).contains(&reduce_bucket_size) {
            return err("DeepSpeed's reduce bucket must be 1e3 to 1e10 values");
        }
        if prefetch_bucket_size > 10_000_000_000 {
            return err("DeepSpeed's prefetch bucket must be 0 to 1e10 values");
        }
        if p.zero == 3 {
            // DeepSpeed's pipeline engine runs ZeRO stage 1 at most
            // (`runtime/pipe/engine.py`: "ZeRO-2 and ZeRO-3 are incompatible
            // with pipeline parallelism").
            if p.pp > 1 {
                return err("DeepSpeed's ZeRO-3 does not run with pipeline parallelism (its pipeline engine takes stage 1 at most)");
            }
            if o.params || o.optimizer || o.activations {
                return err("DeepSpeed's ZeRO-3 is modelled without offload here: choose the megatron framework for offloaded figures");
            }
            if cfg.lora_rank.is_some() || cfg.base_quant != BaseQuant::None {
                return err("DeepSpeed's ZeRO-3 is modelled for full training: LoRA and quantized bases are not");
            }
            if cfg.objective.reference_model() {
                return err(
                    "DeepSpeed's ZeRO-3 is modelled without a reference model (DPO, GRPO with KL)",
                );
            }
        }
    }
    if matches!(cfg.framework, Framework::Ddp { .. }) && p.zero > 0 {
        return err("DistributedDataParallel shards nothing: ZeRO needs the Megatron framework (its distributed optimizer) here");
    }
    if p.schedule == parallel::Schedule::ZbH1 && p.vp > 1 {
        return err("ZB-H1 is a schedule of its own: give it without virtual stages (--vp 1)");
    }
    if p.cp == 0 || p.cp > 64 {
        return err("context parallelism must be 1 to 64");
    }
    // Megatron-Core splits each sequence into 2·cp chunks (two per GPU, to
    // balance the causal mask) and runs context parallelism through
    // Transformer Engine's fused (flash) attention only.
    if p.cp > 1 && !cfg.seq.is_multiple_of(2 * p.cp) {
        return err("context parallelism needs a sequence length divisible by 2 × cp");
    }
    // Transformer Engine's all-to-all gives each GPU heads / cp of the
    // heads, the key/value heads included (`AttnFuncWithCPAndQKVOA2A`).
    if p.cp > 1
        && p.cp_comm == parallel::CpComm::A2a
        && (!(a.heads / p.tp.max(1)).is_multiple_of(p.cp)
            || !(a.kv_heads / p.tp.max(1)).is_multiple_of(p.cp))
    {
        return err("all-to-all context parallelism (a2a) needs the attention and key/value heads per tensor-parallel GPU divisible by cp");
    }
    if p.cp > 1 && cfg.attention != AttentionKernel::Flash {
        return err(
            "context parallelism needs flash attention (ring attention runs in the fused kernel)",
        );
    }
    // Megatron-LM's arguments.py: "When using MoE and tensor parallelism,
    // sequence parallelism must be used."
    if a.moe.is_some() && p.tp > 1 && !p.sp {
        return err("a mixture of experts with tensor parallelism needs sequence parallelism on (--sp), as Megatron-LM requires");
    }
    if cfg.seq == 0 || cfg.batch == 0 || cfg.micro_batch == Some(0) {
        return err("sequence length, batch and micro-batch must be at least 1");
    }
    if p.dp == 0 || p.tp == 0 || p.pp == 0 {
        return err("dp, tp and pp must be at least 1");
    }
    if p.zero > 3 {
        return err("ZeRO stage must be 0, 1, 2 or 3");
    }
    if let Some(n) = p.dp_shard {
        if n == 0 || !p.dp.is_multiple_of(n) {
            return err("the shard group (--dp-shard) must divide the data-parallel GPUs");
        }
        if p.zero == 0 && n < p.dp {
            return err("hybrid sharding (--dp-shard) shards ZeRO's states: give --zero 1, 2 or 3");
        }
        if matches!(cfg.framework, Framework::DeepSpeed { .. }) && n < p.dp {
            return err("hybrid sharding (--dp-shard) is PyTorch FSDP's; DeepSpeed's ZeRO++ partitions differently and is not modelled");
        }
    }
    if !a.heads.is_multiple_of(p.tp) {
        return err("tensor parallelism must divide the attention heads");
    }
    if p.pp > a.layers {
        return err("pipeline stages cannot exceed the layers");
    }
    if !cfg.batch.is_multiple_of(cfg.micro() * p.dp) {
        return err("batch must be a multiple of micro-batch × dp");
    }
    Ok(())
}

/// The per-GPU budget for `cfg`: model states ([`states`]) plus the saved
/// activations ([`activations`]). With a 1F1B pipeline the first stage
/// holds p micro-batches of its L/p layers, the last stage one plus the
/// logits, and the larger of the two is reported (Narayanan et al. 2021).
pub fn estimate(cfg: &DetailedConfig) -> Result<DetailedBreakdown, DetailedError> {
    check(cfg)?;
    let par = &cfg.parallel;
    let ModelStates {
        params,
        grads,
        master_weights,
        optimizer_state,
    } = states::model_states(cfg);
    let saved = activations::saved(cfg);
    let saved = if cfg.offload.activations {
        // One layer in flight on the GPU; the rest on the host.
        activations::Saved {
            per_layer: saved.per_layer / par.stage_layers(&cfg.arch),
            ..saved
        }
    } else {
        saved
    };
    let (activations, logits) = if par.pp == 1 {
        (
            cfg.arch.layers as f64 * saved.per_layer + saved.embedding + saved.head + saved.logits,
            saved.logits,
        )
    } else {
        let layers = par.stage_layers(&cfg.arch);
        let in_flight = par.first_stage_in_flight(cfg.accumulation_steps());
        let first = layers * in_flight * saved.per_layer + saved.embedding;
        let last = layers * saved.per_layer + saved.head + saved.logits;
        if first >= last {
            (first, 0.0)
        } else {
            (last, saved.logits)
        }
    };
    let total = params + grads + master_weights + optimizer_state + activations;
    Ok(DetailedBreakdown {
        params,
        grads,
        master_weights,
        optimizer_state,
        activations,
        logits,
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_configs_are_refused() {
        let arch = preset("gpt2").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 1024, 8);
        cfg.parallel.tp = 5;
        assert!(estimate(&cfg)
            .unwrap_err()
            .to_string()
            .contains("tensor parallelism"));
        cfg.parallel.tp = 1;
        cfg.parallel.dp = 3;
        assert!(estimate(&cfg).is_err());
        cfg.parallel.dp = 1;
        cfg.parallel.zero = 4;
        assert!(estimate(&cfg).is_err());
    }
}

#[cfg(test)]
mod objective_tests {
    use super::*;

    /// Hybrid sharding's group must divide dp, shard something, and is
    /// PyTorch's: each refused with its reason.
    #[test]
    fn hybrid_sharding_is_checked() {
        let mut cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 1024, 16);
        cfg.parallel.dp = 16;
        cfg.parallel.zero = 3;
        cfg.parallel.dp_shard = Some(8);
        assert!(estimate(&cfg).is_ok());
        cfg.parallel.dp_shard = Some(6);
        assert!(estimate(&cfg).unwrap_err().to_string().contains("divide"));
        cfg.parallel.dp_shard = Some(8);
        cfg.parallel.zero = 0;
        assert!(estimate(&cfg).unwrap_err().to_string().contains("--zero"));
        cfg.parallel.zero = 3;
        cfg.framework = Framework::DEEPSPEED;
        assert!(estimate(&cfg)
            .unwrap_err()
            .to_string()
            .contains("DeepSpeed"));
    }

    /// TRL's DPO: chosen and rejected in one forward (twice the sequences),
    /// a frozen reference beside the policy unless LoRA or precomputed.
    #[test]
    fn dpo_doubles_the_sequences_and_adds_the_reference() {
        let arch = preset("llama-2-7b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 1024, 8);
        cfg.parallel.dp = 8;
        cfg.parallel.zero = 3;
        let sft = estimate(&cfg).unwrap();
        cfg.objective = Objective::Dpo {
            reference: Reference::Model,
        };
        let dpo = estimate(&cfg).unwrap();
        assert_eq!(dpo.logits, 2.0 * sft.logits);
        assert!((dpo.activations / sft.activations - 2.0).abs() < 1e-9);
        // The reference: 2 bytes per parameter, partitioned by ZeRO-3 like the policy.
        assert_eq!(dpo.params - sft.params, arch.params() as f64 * 2.0 / 8.0);
        assert_eq!(dpo.optimizer_state, sft.optimizer_state);
        let t = timeline(&cfg, &StepOptions::default()).unwrap();
        let reference = t
            .events
            .iter()
            .find(|e| e.moment == Moment::ReferenceForward)
            .expect("a reference forward");
        // Logits of 2 × 1 sequences in bf16 and one sequence's fp32 log-softmax.
        assert_eq!(
            reference.live.transient,
            2048.0 * 32000.0 * 2.0 + 1024.0 * 32000.0 * 4.0
        );
        // Precomputed log-probabilities: no reference, no reference forward.
        cfg.objective = Objective::Dpo {
            reference: Reference::Precomputed,
        };
        assert_eq!(estimate(&cfg).unwrap().params, sft.params);
        // LoRA: the base with adapters off is the reference.
        cfg.lora_rank = Some(16);
        cfg.objective = Objective::Dpo {
            reference: Reference::Model,
        };
        let lora_dpo = estimate(&cfg).unwrap();
        cfg.objective = Objective::Sft;
        assert_eq!(lora_dpo.params, estimate(&cfg).unwrap().params);
    }

    #[test]
    fn bad_fine_tuning_combinations_name_the_conflict() {
        let arch = preset("llama-3.1-8b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 1024, 1);
        cfg.base_quant = BaseQuant::Nf4 { double_quant: true };
        assert!(estimate(&cfg).unwrap_err().0.contains("QLoRA needs LoRA"));
        cfg.lora_rank = Some(16);
        assert!(estimate(&cfg).is_ok());
        cfg.offload.optimizer = true;
        assert!(estimate(&cfg).unwrap_err().0.contains("needs ZeRO"));
        cfg.base_quant = BaseQuant::None;
        cfg.offload.optimizer = false;
        cfg.offload.params = true;
        cfg.parallel.zero = 2;
        assert!(estimate(&cfg).unwrap_err().0.contains("ZeRO-3"));
    }
}
