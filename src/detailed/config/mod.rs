//! What is asked: the options of a detailed configuration, as the command
//! line, the page's address and (next) the trainers' files set them. Plain
//! data with their names and defaults; nothing here prices anything.
//!
//! - this file: [`DetailedConfig`] and its choices (precision, optimizer,
//!   kernels, recomputation, objective, framework, offload, fp8);
//! - [`parallel`]: the parallel layout and the divisors it implies;
//! - [`step`]: which optimizer step, and AdamW's implementation;
//! - [`rollout`]: GRPO's generation settings;
//! - [`defaults`]: the defaults the page and the command line share.

pub mod defaults;
pub mod parallel;
pub mod rollout;
pub mod step;

use std::fmt;

pub use parallel::{CpComm, Parallelism, Schedule, TpPlan};
pub use rollout::{Rollout, Vllm};
pub use step::{AdamImpl, Step, StepOptions};

use crate::detailed::model::{Architecture, Family, LoraTargets, Router};

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

/// How a trainer reaches its 4-bit frozen base: which code quantizes it,
/// and what it does to the weights it leaves unquantized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantPath {
    /// bitsandbytes through transformers, then PEFT's
    /// `prepare_model_for_kbit_training` (peft 0.21, `utils/other.py`): every
    /// unquantized 16-bit parameter cast to fp32, so the residual stream
    /// computes in fp32 (the QLoRA recipe; axolotl, TRL, LLaMA-Factory).
    Peft,
    /// bitsandbytes' `Linear4bit` without that call: the unquantized weights
    /// stay in the model's dtype (Lightning's `BitsandbytesPrecision`,
    /// litgpt's `bnb.nf4` quantization).
    Bnb,
    /// torchao's `NF4Tensor` (`to_nf4`: blocks of 64, int8 scalers in
    /// blocks of 256, one factor per scaler block in the weight's dtype) as
    /// torchtune's QLoRA builders hold it; the rest in the model's dtype.
    Torchao,
    /// Answer.AI's FSDP-QLoRA (`train.py`): bitsandbytes' `Params4bit`
    /// with `quant_storage` in the model's dtype, so FSDP flattens and
    /// shards the packed codes beside the other weights; no fp32 casts.
    FsdpQlora,
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
    /// Whose activation offload, when `activations` is on.
    #[serde(default, skip_serializing_if = "ActOffload::is_default")]
    pub activations_by: ActOffload,
    /// With `activations`: only the first this many layers' go to the host
    /// (Megatron-Core's `cpu_offloading_num_layers`, the layers it hands
    /// Transformer Engine's offload context); 0 for every layer.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub activation_layers: u64,
    /// GPUs per node, for the host memory per node.
    pub gpus_per_node: u64,
}

/// serde's test for a count left out when 0.
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Whose activation offload: what goes to the host and what the host holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActOffload {
    /// `torch.autograd.graph.save_on_cpu` (DeepSpeed's `cpu_checkpointing`
    /// under full recomputation): every saved activation once, one layer
    /// in flight on the GPU. The flag's meaning before the others.
    #[default]
    SaveOnCpu,
    /// torchtune's `OffloadActivations` (torchtune 0.6.1,
    /// `training/_activation_offloading.py`): every saved tensor of 1,024
    /// bytes or more that is not a parameter is copied to the host by its
    /// pack hook, once per node that saves it (a storage saved by q, k and
    /// v goes three times, and the transposed weight views `F.linear` saves
    /// are not `nn.Parameter`s, so each step copies the layer's weights
    /// too); the output layer runs under `NoOpManager` and the loss outside
    /// the context, so their tensors stay. Measured on the CPU
    /// (`tests/fixtures/act_offload_measured.tsv`).
    Torchtune,
    /// Unsloth's offloaded gradient checkpointing
    /// (`use_gradient_checkpointing="unsloth"`;
    /// `unsloth_zoo/gradient_checkpointing.py`,
    /// `Unsloth_Offloaded_Gradient_Checkpointer`: `hidden_states.to("cpu",
    /// non_blocking=True)` saved, the layer run under `no_grad`, brought
    /// back and recomputed in backward): full recomputation, each layer's
    /// checkpointed input on the host.
    Checkpoints,
}

impl ActOffload {
    /// Every kind, in the order of [`ActOffload::NAMES`].
    pub const ALL: [ActOffload; 3] = [
        ActOffload::SaveOnCpu,
        ActOffload::Torchtune,
        ActOffload::Checkpoints,
    ];

    /// The default (serde leaves it out of the inputs).
    pub fn is_default(&self) -> bool {
        *self == ActOffload::SaveOnCpu
    }
}

impl Default for Offload {
    fn default() -> Self {
        Self {
            optimizer: false,
            params: false,
            activations: false,
            activations_by: ActOffload::SaveOnCpu,
            activation_layers: 0,
            gpus_per_node: 8,
        }
    }
}

/// The dtype LoRA's adapters are kept in: their weights, gradients and
/// optimizer state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoraDtype {
    /// fp32 whatever the model's dtype: PEFT's default
    /// (`autocast_adapter_dtype=True`, `tuners/tuners_utils.py`).
    Fp32,
    /// The 16-bit weights' dtype: torchtune's `LoRALinear`
    /// (`modules/peft/lora.py`: `lora_a`, `lora_b` built in the model's
    /// dtype), litgpt's LoRA, PEFT with `autocast_adapter_dtype=False`.
    Bf16,
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
    /// completions it trains on (the rollout, [`Rollout`]), then
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
/// [`crate::detailed::memory::fp8`].
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
    /// projection's output ([`crate::detailed::memory::sac`]).
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

/// How the loss is computed from the last hidden state: what the output
/// layer and the cross entropy keep
/// ([`crate::detailed::memory::loss`] prices each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Loss {
    /// The whole logits, then the cross entropy: `transformers`'
    /// `ForCausalLMLoss`, Megatron's fused vocabulary-parallel cross entropy.
    #[default]
    Full,
    /// torchtune's `CEWithChunkedOutputLoss` with the output projection in
    /// [`DetailedConfig::loss_chunks`] chunks (`TransformerDecoder.chunked_output`).
    Chunked,
    /// Liger's `LigerFusedLinearCrossEntropyLoss` (`use_liger_kernel` in
    /// TRL, axolotl, LLaMA-Factory).
    Liger,
    /// Apple's Cut Cross-Entropy (`linear_cross_entropy`; axolotl, Unsloth).
    Cce,
}

/// What `torch.compile` ([`DetailedConfig::compile`]) wraps: one graph
/// for the whole model, or each decoder layer on its own with the rest
/// eager (the loss compiled apart or not).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompileScope {
    /// `torch.compile(model)`: the embedding, the layers, the final norm,
    /// the output layer and the loss in one forward and one backward graph
    /// (transformers' Trainer `torch_compile=True`, TRL, axolotl).
    #[default]
    Model,
    /// Each decoder layer compiled on its own, the embedding, final norm,
    /// output layer and loss eager: torchtitan's December 2024 release
    /// (`apply_compile` per `TransformerBlock`; `train.py` left the loss
    /// eager, commit e8977b007, "compiling loss function causes CUDA
    /// errors, turning off for now").
    Layers,
    /// Each decoder layer and the loss function compiled apart, the
    /// output layer eager between them: torchtitan since 2025
    /// (`compile.components = ["model", "loss"]`, `apply_compile` and
    /// `build_cross_entropy_loss`), torchtune (`training.compile_model`
    /// per layer, `training.compile_loss`).
    LayersLoss,
}

impl CompileScope {
    /// The layers are compiled one by one: what lies outside them runs
    /// eagerly or, for the loss, in a graph of its own.
    pub fn per_layer(self) -> bool {
        self != CompileScope::Model
    }
}

/// Whose kernels, and so which tensors autograd keeps, as the command line
/// and the page name them: a profile, or Liger's kernels patched into
/// stock `transformers` (`apply_liger_kernel_to_llama`: RMSNorm, SwiGLU,
/// RoPE, and its fused loss unless another is asked for).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Implementation {
    /// Megatron-style fused kernels.
    Fused,
    /// Stock Hugging Face `transformers`.
    Hf,
    /// Stock `transformers` with Liger's kernels.
    Liger,
}

impl Implementation {
    /// The kernel profile it runs under.
    pub fn profile(self) -> Profile {
        match self {
            Implementation::Fused => Profile::Fused,
            Implementation::Hf | Implementation::Liger => Profile::Hf,
        }
    }

    /// The implementation `cfg` runs.
    pub fn of(cfg: &DetailedConfig) -> Self {
        match (cfg.profile, cfg.liger) {
            (Profile::Fused, _) => Implementation::Fused,
            (Profile::Hf, false) => Implementation::Hf,
            (Profile::Hf, true) => Implementation::Liger,
        }
    }
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
    /// PyTorch's FSDP1 (`torch.distributed.fsdp.FullyShardedDataParallel`)
    /// as accelerate and the FSDP-QLoRA trainers wrap a model: one flat
    /// parameter per decoder layer and one for the rest (the root unit),
    /// `use_orig_params=True`, backward prefetch `BACKWARD_PRE`
    /// (`torch/distributed/fsdp/_flat_param.py`, `_runtime_utils.py`,
    /// torch 2.15). Measured, `tests/fixtures/fsdp1_measured.tsv`.
    Fsdp1 {
        /// The sharding strategy.
        sharding: FsdpSharding,
    },
    /// DeepSpeed's ZeRO stages 1 and 2 (`deepspeed/runtime/zero/
    /// stage_1_and_2.py`, 0.19.8): the optimizer keeps an fp32 copy of its
    /// partition of the weights whatever the precision
    /// (`single_partition_of_fp32_groups`), and the first gradient of
    /// backward allocates the flat bucket they are copied into
    /// (`ipg_buckets`, `reduce_bucket_size` values in the weights' dtype;
    /// two of them with `overlap_comm`, `setup_buckets`), freed when the
    /// step ends. Stage 2, and stage 1 with `overlap_comm`, reduce the
    /// gradients into partitions bucket by bucket as backward produces
    /// them (`process_gradients`); stage 1 without it keeps every whole
    /// gradient until backward ends (`reduce_gradients`). Stage 3
    /// (`stage3.py`) as [`crate::detailed::memory::zero3`] walks it.
    /// Measured, `tests/fixtures/deepspeed_measured.tsv`,
    /// `deepspeed_settings_measured.tsv`.
    DeepSpeed {
        /// `reduce_bucket_size`, in values (DeepSpeed's default 5e8).
        reduce_bucket_size: u64,
        /// `stage3_prefetch_bucket_size`, in values (DeepSpeed's default
        /// 5e7): how far ahead stage 3 all-gathers once it has traced a step.
        prefetch_bucket_size: u64,
        /// `overlap_comm`; `None` for DeepSpeed's own default, true at
        /// stage 3 only (`runtime/zero/config.py`, `overlap_comm_valid`).
        overlap_comm: Option<bool>,
        /// `sub_group_size`, in values (DeepSpeed's default 1e9): stage 3
        /// updates its partition in sub-groups of parameters this large.
        sub_group_size: u64,
        /// `stage3_param_persistence_threshold`, in values (DeepSpeed's
        /// default 1e5): stage 3 keeps a weight of at most this many values
        /// gathered.
        param_persistence_threshold: u64,
    },
}

/// FSDP1's `ShardingStrategy` (`torch/distributed/fsdp/api.py`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsdpSharding {
    /// `FULL_SHARD`: parameters, gradients and optimizer state sharded;
    /// each layer's flat parameter freed after its forward and gathered
    /// again for its backward (the root's kept, `_post_forward_reshard`).
    Full,
    /// `SHARD_GRAD_OP`: the same, but the gathered parameters are kept
    /// from forward to the end of backward.
    GradOp,
    /// `NO_SHARD`: nothing sharded, the gradients all-reduced (DDP's
    /// algorithm over flat parameters, no bucket copy).
    NoShard,
}

impl Framework {
    /// Every framework by its name, as the command line and the address
    /// spell it.
    pub const ALL: [(&'static str, Framework); 9] = [
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
        (
            "fsdp1",
            Framework::Fsdp1 {
                sharding: FsdpSharding::Full,
            },
        ),
        (
            "fsdp1-grad-op",
            Framework::Fsdp1 {
                sharding: FsdpSharding::GradOp,
            },
        ),
        (
            "fsdp1-no-shard",
            Framework::Fsdp1 {
                sharding: FsdpSharding::NoShard,
            },
        ),
    ];

    /// A sharded FSDP (FSDP2, or FSDP1 sharding): whether each layer's
    /// gathered parameters are freed after its forward (FSDP2's
    /// `reshard_after_forward`, FSDP1's `FULL_SHARD`); `None` for the
    /// other frameworks and FSDP1's `NO_SHARD`.
    pub fn fsdp_reshard(self) -> Option<bool> {
        match self {
            Framework::Fsdp2 {
                reshard_after_forward,
            } => Some(reshard_after_forward),
            Framework::Fsdp1 {
                sharding: FsdpSharding::Full,
            } => Some(true),
            Framework::Fsdp1 {
                sharding: FsdpSharding::GradOp,
            } => Some(false),
            _ => None,
        }
    }

    /// DeepSpeed with its defaults: buckets of 5e8 values to reduce and 5e7
    /// to prefetch, `overlap_comm` per stage, sub-groups of 1e9 values,
    /// weights of at most 1e5 values persistent
    /// (`deepspeed/runtime/zero/config.py`, `reduce_bucket_size`,
    /// `prefetch_bucket_size`, `overlap_comm`, `sub_group_size`,
    /// `param_persistence_threshold`).
    pub const DEEPSPEED: Framework = Framework::DeepSpeed {
        reduce_bucket_size: 500_000_000,
        prefetch_bucket_size: 50_000_000,
        overlap_comm: None,
        sub_group_size: 1_000_000_000,
        param_persistence_threshold: 100_000,
    };

    /// Whether DeepSpeed runs with `overlap_comm` at ZeRO stage `zero`: as
    /// set, or DeepSpeed's default, true at stage 3 only
    /// (`runtime/zero/config.py`, `overlap_comm_valid`). False under other
    /// frameworks.
    pub fn overlap_comm(self, zero: u8) -> bool {
        match self {
            Framework::DeepSpeed { overlap_comm, .. } => overlap_comm.unwrap_or(zero == 3),
            _ => false,
        }
    }

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
                "framework must be megatron, ddp, ddp-bucket-view, fsdp2, fsdp2-no-reshard, deepspeed, fsdp1, fsdp1-grad-op or fsdp1-no-shard"
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

/// How Megatron-Core moves the routed tokens to their experts' GPUs and
/// back (`moe_token_dispatcher_type`, `moe_flex_dispatcher_backend`,
/// `megatron/core/transformer/transformer_config.py`). Only the bytes
/// that cross between nodes differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoeDispatcher {
    /// `alltoall`: each of a token's top-k copies goes to its expert's GPU
    /// (NCCL's pairwise sends), so a token with experts on three other
    /// GPUs of one remote node crosses the network three times.
    AllToAll,
    /// `flex` with DeepEP's kernels (`moe_flex_dispatcher_backend =
    /// "deepep"`): a token crosses the network once per remote node that
    /// holds any of its experts, to the GPU of the same local index, and
    /// NVLink forwards it there (DeepEP `deep_ep/buffer.py`,
    /// `get_dispatch_layout`: `num_tokens_per_rdma_rank`, "the number of
    /// tokens to be sent to each RDMA rank (with the same GPU index)";
    /// DeepSeek-AI 2024, DeepSeek-V3 technical report, §3.2.2); the
    /// combine returns the same way.
    DeepEp,
}

/// Megatron-Core's output-discarding recomputation of single modules
/// (`--recompute-granularity selective --recompute-modules ...`,
/// `recompute_modules` in `megatron/core/transformer/transformer_config.py`
/// at d98e8a64: "\"moe_act\", \"layernorm\" ... use output-discarding
/// checkpointing"): the module's output is freed once its consumer has
/// saved it (`CheckpointWithoutOutput.discard_output_and_register_recompute`,
/// `megatron/core/tensor_parallel/random.py`) and the module runs again
/// before the consumer's backward. `core_attn` is [`Recompute::Selective`].
/// `mlp`, `moe` and `shared_experts` checkpoint a whole module instead
/// (`tensor_parallel.checkpoint`, or `te_checkpoint` under fp8): it keeps
/// its input alone and runs its forward again before its backward.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecomputeModules {
    /// `layernorm`: the norms that are modules of their own
    /// (`TransformerLayer.recompute_input_layernorm` and
    /// `recompute_pre_mlp_layernorm`, `transformer_layer.py`, only where the
    /// norm is not an `IdentityOp`): with Transformer Engine's layer specs
    /// (`gpt_layer_specs.py`) the pre-MLP norm of a MoE layer and the input
    /// norm of multi-latent attention; a dense layer's norms are fused into
    /// `LayerNormLinear` and nothing changes there.
    pub layernorm: bool,
    /// `moe_act`: the routed experts' activation (`TEGroupedMLP`,
    /// `moe/experts.py`: `activation_checkpoint.checkpoint(bias_act_func,
    /// ...)`, discarded after `linear_fc2` saves its input; under fp8
    /// `set_save_original_input(self.linear_fc2)` makes that input the
    /// 16-bit one, discarded too).
    pub moe_act: bool,
    /// `mla_up_proj`: multi-latent attention's up-projections and rotary
    /// embedding (`MLASelfAttention.qkv_up_checkpoint`,
    /// `multi_latent_attention.py`: `qkv_up_proj_and_rope_apply` under
    /// `CheckpointWithoutOutput`, its query, key and value discarded after
    /// the attention core has run and rebuilt from the latents before its
    /// backward).
    pub mla_up_proj: bool,
    /// `mlp`: a dense layer's MLP, its norm fused in (`TransformerLayer`,
    /// `transformer_layer.py`: `recompute_mlp` only `if not
    /// self.is_moe_layer`), checkpointed whole.
    pub mlp: bool,
    /// `moe`: a MoE layer's MLP (`MoELayer`, `moe/moe_layer.py`:
    /// `moe_layer_recompute`), its router, dispatch, shared and routed
    /// experts and combine checkpointed whole: the all-to-alls run again.
    pub moe: bool,
    /// `shared_experts`: the shared experts (`MoELayer`:
    /// `shared_experts_recompute`) checkpointed whole.
    pub shared_experts: bool,
}

impl RecomputeModules {
    /// Megatron's names, as `--recompute-modules` lists them.
    pub const NAMES: [&'static str; 6] = [
        "layernorm",
        "moe_act",
        "mla_up_proj",
        "mlp",
        "moe",
        "shared_experts",
    ];

    /// Whether any module is recomputed.
    pub fn any(self) -> bool {
        self.flags().iter().any(|on| *on)
    }

    /// Each module's switch, in [`RecomputeModules::NAMES`]' order.
    fn flags(self) -> [bool; 6] {
        [
            self.layernorm,
            self.moe_act,
            self.mla_up_proj,
            self.mlp,
            self.moe,
            self.shared_experts,
        ]
    }

    /// The modules' names, in Megatron's order.
    pub fn names(self) -> Vec<&'static str> {
        self.flags()
            .iter()
            .zip(Self::NAMES)
            .filter(|(on, _)| **on)
            .map(|(_, n)| n)
            .collect()
    }

    /// Turns on the module named `name`; `false` for a name it does not
    /// price (`core_attn` among them: it is [`Recompute::Selective`]).
    pub fn add(&mut self, name: &str) -> bool {
        match name {
            "layernorm" => self.layernorm = true,
            "moe_act" => self.moe_act = true,
            "mla_up_proj" => self.mla_up_proj = true,
            "mlp" => self.mlp = true,
            "moe" => self.moe = true,
            "shared_experts" => self.shared_experts = true,
            _ => return false,
        }
        true
    }
}

/// A comma-separated list of the modules' names (the address's `rmods`,
/// `--recompute-modules` without `core_attn`), empty for none; a name not
/// priced is refused by name.
impl std::str::FromStr for RecomputeModules {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut m = Self::default();
        for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            if !m.add(&name.to_ascii_lowercase()) {
                return Err(format!(
                    "'{name}' is not priced; the modules are {} (core_attn is selective recomputation)",
                    Self::NAMES.join(", ")
                ));
            }
        }
        Ok(m)
    }
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
choices!(MoeDispatcher, "token dispatcher", "alltoall" => MoeDispatcher::AllToAll,
    "deepep" => MoeDispatcher::DeepEp);
choices!(Family, "architecture", "gpt2" => Family::Gpt2, "llama" => Family::Llama);
choices!(Precision, "precision", "mixed" => Precision::Mixed, "bf16" => Precision::Bf16, "fp32" => Precision::Fp32);
choices!(Optimizer, "optimizer", "adamw" => Optimizer::AdamW, "sgd" => Optimizer::Sgd,
    "sgd-momentum" => Optimizer::SgdMomentum, "adam8bit" => Optimizer::Adam8bit,
    "paged-adamw" => Optimizer::PagedAdamW, "paged-adam8bit" => Optimizer::PagedAdam8bit,
    "lion" => Optimizer::Lion, "muon" => Optimizer::Muon, "adafactor" => Optimizer::Adafactor);
choices!(BaseQuant, "quantized base", "none" => BaseQuant::None,
    "nf4" => BaseQuant::Nf4 { double_quant: true }, "nf4-nodq" => BaseQuant::Nf4 { double_quant: false },
    "int8" => BaseQuant::Int8);
choices!(ActOffload, "activation offload", "save-on-cpu" => ActOffload::SaveOnCpu,
    "torchtune" => ActOffload::Torchtune, "checkpoints" => ActOffload::Checkpoints);
choices!(FsdpSharding, "FSDP sharding", "full" => FsdpSharding::Full,
    "grad-op" => FsdpSharding::GradOp, "no-shard" => FsdpSharding::NoShard);
choices!(QuantPath, "quantization path", "peft" => QuantPath::Peft, "bnb" => QuantPath::Bnb,
    "torchao" => QuantPath::Torchao, "fsdp-qlora" => QuantPath::FsdpQlora);
choices!(Objective, "objective", "sft" => Objective::Sft,
    "dpo" => Objective::Dpo { reference: Reference::Model },
    "dpo-precomputed" => Objective::Dpo { reference: Reference::Precomputed },
    "grpo" => Objective::Grpo { kl: false }, "grpo-kl" => Objective::Grpo { kl: true });
choices!(LoraDtype, "LoRA adapter dtype", "fp32" => LoraDtype::Fp32, "bf16" => LoraDtype::Bf16);
choices!(Fp8, "fp8 recipe", "none" => Fp8::None, "tensorwise" => Fp8::Tensorwise,
    "rowwise" => Fp8::Rowwise, "te" => Fp8::Te, "te-mxfp8" => Fp8::TeMxfp8);
choices!(AttentionKernel, "attention", "eager" => AttentionKernel::Eager, "flash" => AttentionKernel::Flash);
choices!(Recompute, "recompute", "none" => Recompute::None, "selective" => Recompute::Selective,
    "selective-op" => Recompute::SelectiveOp, "full" => Recompute::Full);
choices!(Profile, "implementation", "fused" => Profile::Fused, "hf" => Profile::Hf);
choices!(Implementation, "implementation", "fused" => Implementation::Fused,
    "hf" => Implementation::Hf, "liger" => Implementation::Liger);
choices!(Loss, "loss", "full" => Loss::Full, "chunked" => Loss::Chunked, "liger" => Loss::Liger,
    "cce" => Loss::Cce);
choices!(CompileScope, "compile scope", "model" => CompileScope::Model,
    "layers" => CompileScope::Layers, "layers-loss" => CompileScope::LayersLoss);
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
    /// FP8 primary weights: Transformer Engine's linear layers hold their
    /// weights as fp8 tensors and no 16-bit copy, the distributed
    /// optimizer casting its fp32 main weights to fp8 after each step and
    /// gathering them in fp8 (Megatron-LM's `--fp8-param-gather`,
    /// Megatron-Core's `fp8_param`, TE's `fp8_model_init`). See
    /// [`crate::detailed::memory::fp8::te_weights_16bit_dropped`].
    pub fp8_param: bool,
    /// Megatron-LM's `--disable-parameter-transpose-cache` beside
    /// [`DetailedConfig::fp8_param`]: Megatron-Core then passes
    /// `is_first_microbatch=None` to Transformer Engine
    /// (`megatron/core/extensions/transformer_engine.py`), whose fp8
    /// parameters of the 1.x releases and ROCm's fork make each transpose
    /// for its use and do not keep it. See
    /// [`crate::detailed::memory::fp8::te_weight_workspace`].
    #[cfg(not(target_arch = "wasm32"))]
    pub no_transpose_cache: bool,
    /// Keep gradients in fp32 under mixed or bf16 precision.
    pub fp32_grads: bool,
    /// The optimizer.
    pub optimizer: Optimizer,
    /// The optimizer's step run inside backward, one parameter at a time
    /// as its gradient is ready, the gradient freed at once (torchtune's
    /// `optimizer_in_bwd`: `training/memory.py`,
    /// `register_optim_in_bwd_hooks`, PyTorch's
    /// `register_post_accumulate_grad_hook`). No gradient accumulation, no
    /// clipping.
    pub optimizer_in_backward: bool,
    /// Attention kernel.
    pub attention: AttentionKernel,
    /// Dropout in the model (attention, residual, embedding).
    pub dropout: bool,
    /// Recomputation.
    pub recompute: Recompute,
    /// Megatron-Core's output-discarding recomputation of single modules
    /// beside [`DetailedConfig::recompute`] ("fused" profile).
    pub recompute_modules: RecomputeModules,
    /// Full recomputation of only the first this many layers of each
    /// pipeline stage's model chunk, the rest keeping everything
    /// (Megatron-Core's `--recompute-method block --recompute-num-layers`,
    /// `TransformerBlock._checkpointed_forward`); 0: every layer.
    #[cfg(not(target_arch = "wasm32"))]
    pub recompute_layers: u64,
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
    /// The dtype of LoRA's adapters.
    pub lora_dtype: LoraDtype,
    /// LoRA's dropout probability on the adapters' input (PEFT's
    /// `lora_dropout`, torchtune's `lora_dropout`): above 0, each adapter
    /// keeps its own dropped-out input and mask.
    pub lora_dropout: f64,
    /// How the routed experts run (mixture of experts, "hf" profile).
    pub experts_impl: ExpertsImpl,
    /// A quantized frozen base (QLoRA): needs LoRA.
    pub base_quant: BaseQuant,
    /// Which trainer's code holds the 4-bit base ([`QuantPath`]).
    pub quant_path: QuantPath,
    /// What lives in host memory instead.
    pub offload: Offload,
    /// Supervised, DPO or GRPO.
    pub objective: Objective,
    /// GRPO's generation: completion length and completions per prompt.
    pub rollout: Rollout,
    /// Who runs data parallelism.
    pub framework: Framework,
    /// Megatron's expert capacity factor with padding to capacity
    /// (`--moe-expert-capacity-factor` with `--moe-pad-expert-input-to-capacity`),
    /// "fused" profile: every expert holds c·n·k/E token slots. `None`:
    /// dropless, as Megatron's default.
    pub capacity_factor: Option<f64>,
    /// How Megatron-Core's expert parallelism moves the tokens
    /// ([`MoeDispatcher`]).
    pub moe_dispatcher: MoeDispatcher,
    /// How the loss is computed from the last hidden state.
    pub loss: Loss,
    /// [`Loss::Chunked`]'s chunks (torchtune's `num_output_chunks`, 8 by
    /// default in `CEWithChunkedOutputLoss`).
    pub loss_chunks: u64,
    /// Liger's RMSNorm, SwiGLU and RoPE kernels in place of stock
    /// `transformers`' ("hf" profile).
    pub liger: bool,
    /// The model wrapped in `torch.compile` (TorchDynamo, AOTAutograd's
    /// min-cut partitioner, inductor), "hf" profile: what a layer saves and
    /// its memory-bound kernels change.
    pub compile: bool,
    /// What `compile` wraps.
    pub compile_scope: CompileScope,
    /// Megatron-Core's communication overlaps (`--framework megatron`).
    pub overlap: Overlap,
    /// Async tensor parallelism under the PyTorch frameworks (torchtitan's
    /// `compile.enable_async_tensor_parallel`: inductor's micro-pipelined
    /// TP, `torch._inductor.config._micro_pipeline_tp`, over symmetric
    /// memory): tensor parallelism's all-gathers and reduce-scatters run
    /// chunk by chunk inside the matrix multiplies they feed, as
    /// Transformer Engine's `tp_comm_overlap` does under Megatron. Needs
    /// `compile` and sequence parallelism.
    pub async_tp: bool,
}

/// Megatron-Core's communication overlaps, each as NVIDIA's recipes set it
/// (NeMo / Megatron-Bridge's performance recipes turn all three on;
/// Megatron-Core's own defaults are off:
/// `megatron/core/distributed/distributed_data_parallel_config.py`,
/// `megatron/core/model_parallel_config.py`, Megatron-LM d98e8a64). Only
/// `Framework::Megatron` reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// `overlap_grad_reduce`: each gradient bucket (`bucket_size`,
    /// max(40M, 1M × dp) parameters, `DistributedDataParallel.__init__`)
    /// is reduced as soon as backward fills it; off, one bucket reduced
    /// after backward.
    pub grad_reduce: bool,
    /// `overlap_param_gather` (distributed optimizer, `--zero 1`/`2`): each
    /// bucket's updated parameters gathered behind the next forward.
    pub param_gather: bool,
    /// `tp_comm_overlap` (Transformer Engine's userbuffers, with sequence
    /// parallelism): tensor parallelism's all-gathers and reduce-scatters
    /// run inside the matrix multiplies beside them.
    pub tp_comm: bool,
    /// `overlap_moe_expert_parallel_comm` (Megatron-Bridge's
    /// `moe_a2a_overlap`, with `delay_wgrad_compute`): the combined 1F1B
    /// schedule runs one micro-batch's forward beside another's backward
    /// layer by layer, each one's expert all-to-alls behind the other's
    /// compute (`combined_1f1b.py`, `TransformerLayerSchedulePlan.run` in
    /// `models/common/model_chunk_schedule_plan.py`, Megatron-LM
    /// d98e8a64). Off by default in Megatron-Core and in the recipes; some
    /// turn it on.
    pub moe_a2a: bool,
}

impl Default for Overlap {
    /// The three on, as the recipes run Megatron-Core; the expert
    /// all-to-all's off, as Megatron-Core's default.
    fn default() -> Self {
        Self {
            grad_reduce: true,
            param_gather: true,
            tp_comm: true,
            moe_a2a: false,
        }
    }
}

impl Overlap {
    /// None of them: Megatron-LM before Megatron-Core (2021–22, the code
    /// of Narayanan et al. 2021 and Korthikanti et al. 2022, whose
    /// `train_step` reduces the gradients after `forward_backward_func`).
    pub const NONE: Overlap = Overlap {
        grad_reduce: false,
        param_gather: false,
        tp_comm: false,
        moe_a2a: false,
    };
}

/// torchtune's default chunks (`CEWithChunkedOutputLoss(num_output_chunks=8)`,
/// `torchtune/modules/loss/ce_chunked_output_loss.py`, 0.6.1).
pub const LOSS_CHUNKS: u64 = 8;

/// Settings only the command line gives (`--recompute-layers`,
/// `--disable-parameter-transpose-cache`): the page has no control or
/// address key for them, so its configurations never hold them, and its
/// wasm leaves their fields and code out (`cfg(target_arch = "wasm32")`:
/// 1.4 KB of the page, gzip, measured on 2026-12-07).
pub const COMMAND_LINE_ONLY: bool = !cfg!(target_arch = "wasm32");

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
            fp8_param: false,
            #[cfg(not(target_arch = "wasm32"))]
            no_transpose_cache: false,
            fp32_grads: false,
            optimizer: Optimizer::AdamW,
            optimizer_in_backward: false,
            attention: AttentionKernel::Eager,
            dropout: true,
            recompute: Recompute::None,
            recompute_modules: RecomputeModules::default(),
            #[cfg(not(target_arch = "wasm32"))]
            recompute_layers: 0,
            profile: Profile::Fused,
            device: Device::Cuda,
            parallel: Parallelism::default(),
            lora_rank: None,
            lora_targets: LoraTargets::default(),
            lora_dtype: LoraDtype::Fp32,
            lora_dropout: 0.0,
            experts_impl: ExpertsImpl::Grouped,
            capacity_factor: None,
            moe_dispatcher: MoeDispatcher::AllToAll,
            base_quant: BaseQuant::None,
            quant_path: QuantPath::Peft,
            offload: Offload::default(),
            objective: Objective::Sft,
            rollout: Rollout::default(),
            framework: Framework::Megatron,
            loss: Loss::Full,
            loss_chunks: LOSS_CHUNKS,
            liger: false,
            compile: false,
            compile_scope: CompileScope::Model,
            overlap: Overlap::default(),
            async_tp: false,
        }
    }

    /// Micro-batches whose activations pipeline rank `rank` holds at its
    /// peak ([`Parallelism::stage_in_flight`] for this step's
    /// micro-batches), and one more virtual stage's under Megatron-Core's
    /// all-to-all overlap with interleaving, which schedules "one extra
    /// micro-batch forward step before the 1f1b stages"
    /// (`get_pp_rank_microbatches`, `pipeline_parallel/schedules.py`,
    /// Megatron-LM d98e8a64): 1/v of a micro-batch of the stage's layers.
    pub fn stage_in_flight(&self, rank: u64) -> f64 {
        let p = &self.parallel;
        let extra = if self.framework == Framework::Megatron
            && self.overlap.moe_a2a
            && p.pp > 1
            && p.vp > 1
        {
            1.0 / p.vp as f64
        } else {
            0.0
        };
        let m = self.accumulation_steps();
        let base = if rank == 0 {
            p.first_stage_in_flight(m)
        } else {
            p.stage_in_flight(rank, m)
        };
        base + extra
    }

    /// Of `stage` layers walked in order (a pipeline stage's, its virtual
    /// chunks one after another), whether layer `i` is recomputed whole:
    /// every layer under full recomputation, or, with
    /// [`DetailedConfig::recompute_layers`], the first that many of each
    /// model chunk (Megatron-Core's block method).
    pub fn recomputes_layer(&self, i: u64, stage: u64) -> bool {
        if self.recompute != Recompute::Full {
            return false;
        }
        let n = self.block_layers();
        n == 0 || i % self.chunk_layers(stage) < n
    }

    /// The layers of one model chunk of a stage of `stage` layers: the
    /// stage's over its virtual stages, the unit Megatron-Core's block
    /// method counts in.
    pub fn chunk_layers(&self, stage: u64) -> u64 {
        (stage / self.parallel.vp.max(1)).max(1)
    }

    /// Megatron-Core's block method in force: full recomputation of only
    /// the first [`DetailedConfig::block_layers`] of each chunk.
    pub fn block_recompute(&self) -> bool {
        self.recompute == Recompute::Full && self.block_layers() > 0
    }

    /// [`DetailedConfig::recompute_layers`], 0 (every layer) on the page.
    pub fn block_layers(&self) -> u64 {
        #[cfg(not(target_arch = "wasm32"))]
        return self.recompute_layers;
        #[cfg(target_arch = "wasm32")]
        0
    }

    /// `--disable-parameter-transpose-cache` beside `--fp8-param`: the fp8
    /// weights' transposes made per use (a command-line setting,
    /// [`COMMAND_LINE_ONLY`]).
    pub fn transposes_per_use(&self) -> bool {
        #[cfg(not(target_arch = "wasm32"))]
        return self.fp8_param && self.no_transpose_cache;
        #[cfg(target_arch = "wasm32")]
        false
    }

    /// The share of a stage's layers recomputed whole
    /// ([`DetailedConfig::recomputes_layer`] over the stage): 1 under full
    /// recomputation of every layer, 0 without it.
    pub fn recomputed_share(&self) -> f64 {
        if self.recompute != Recompute::Full {
            return 0.0;
        }
        if !self.block_recompute() {
            return 1.0;
        }
        let stage = self.parallel.stage_layers(&self.arch).max(1.0) as u64;
        let recomputed = (0..stage)
            .filter(|&i| self.recomputes_layer(i, stage))
            .count();
        recomputed as f64 / stage as f64
    }

    /// The layers of a pipeline stage whose saved activations go to the
    /// host: none without activation offload; Megatron-Core's first
    /// `cpu_offloading_num_layers` (Transformer Engine's
    /// `AsyncDoubleBufferGroupOffloadHandler` offloads the layer groups
    /// below `num_offload_group`, `transformer_engine/pytorch/cpu_offload.py`);
    /// else every one.
    pub fn offloaded_layers(&self) -> u64 {
        if !self.offload.activations {
            return 0;
        }
        let stage = self.parallel.stage_layers(&self.arch) as u64;
        match self.offload.activation_layers {
            0 => stage,
            n => n.min(stage),
        }
    }

    /// The layers a micro-batch's saved activations keep on the GPU after
    /// its forward: those not offloaded, and one offloaded layer in flight
    /// (copied out while the next runs, back before its backward).
    pub fn resident_layers(&self) -> f64 {
        let stage = self.parallel.stage_layers(&self.arch);
        match self.offloaded_layers() {
            0 => stage,
            n => stage - n as f64 + 1.0,
        }
    }

    /// Megatron-Core as it runs: its fused kernels under `--framework
    /// megatron`.
    pub fn megatron_kernels(&self) -> bool {
        self.profile == Profile::Fused && self.framework == Framework::Megatron
    }

    /// The [`RecomputeModules`] that take effect: Megatron-Core's, so only
    /// under Megatron's fused kernels, and none under full recomputation
    /// (which reruns every module already).
    pub fn megatron_recompute_modules(&self) -> RecomputeModules {
        if self.megatron_kernels()
            && matches!(self.recompute, Recompute::None | Recompute::Selective)
        {
            self.recompute_modules
        } else {
            RecomputeModules::default()
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
