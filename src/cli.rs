//! The command line: the lesson's printout (or JSON) for one configuration,
//! or, with any of the detailed flags, the detailed model's per-GPU budget.

use crate::budget::{estimate, Breakdown, Field, TrainingConfig};
use crate::detailed::config::{defaults, LoraDtype};
use crate::detailed::plan::diff::{Keep, Lever};
use crate::detailed::plan::planner::{make_it_fit_keeping, smallest_card};
use crate::detailed::plan::search;
use crate::detailed::time::hardware;
use crate::detailed::time::steptime::{step_time, Cluster, Efficiency, Parts};
use crate::detailed::{
    self, preset, ActOffload, AdamImpl, Architecture, AttentionKernel, BaseQuant, CompileScope,
    CpComm, DetailedBreakdown, DetailedConfig, Device, ExpertsImpl, Family, Fp8, Framework,
    FsdpSharding, HostRam, Implementation, LoraTargets, Loss, MoeDispatcher, Objective, Optimizer,
    Overhead, OverheadBytes, Overlap, Precision, QuantPath, Recompute, Schedule, Step, StepOptions,
    StepTimeline, TpPlan,
};
use crate::report::{
    whole, ChangeReport, DetailedParts, DetailedReport, FitReport, LessonReport, PlanReport,
    PlanRowReport, TimeRange, TimeReport, TrainingCost,
};
use crate::state::{max_detailed_seq, max_micro_batch};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{value_parser, Parser};

/// The accepted names of a choice (`--precision mixed|bf16|fp32`), listed
/// in `--help` and in the error for any other, parsed with the core's
/// `FromStr`.
fn one_of<T>(names: &'static [&'static str]) -> impl TypedValueParser<Value = T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(names).map(|s| match s.parse::<T>() {
        Ok(v) => v,
        Err(_) => unreachable!("every listed name parses"),
    })
}

/// `--recompute-modules`: Megatron's modules, `core_attn` apart (it is
/// `--recompute selective`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ModulesArg {
    /// The output-discarding modules.
    pub modules: detailed::RecomputeModules,
    /// `core_attn` was listed.
    pub core_attn: bool,
}

/// Parses `--recompute-modules`: names separated by commas or spaces, as
/// Megatron-Core spells them; `core_attn` taken apart, the rest read as
/// the address reads them ([`detailed::RecomputeModules`]'s `FromStr`).
fn parse_recompute_modules(s: &str) -> Result<ModulesArg, String> {
    let (core, rest): (Vec<&str>, Vec<&str>) = s
        .split([',', ' '])
        .filter(|n| !n.is_empty())
        .partition(|n| n.eq_ignore_ascii_case("core_attn"));
    Ok(ModulesArg {
        modules: rest.join(",").parse()?,
        core_attn: !core.is_empty(),
    })
}

/// Every preset's name, for `--model`.
fn preset_names() -> Vec<&'static str> {
    detailed::PRESETS.iter().map(|p| p.name).collect()
}

/// Prints the GPU training-memory budget.
///
/// With no flags: the lesson's example (7 B parameters, batch 4, sequence
/// 2048, hidden 4096, 32 layers, mixed precision). Any flag outside "Model
/// (lesson)" and "Output" — --model, --arch, --precision, --dp, … —
/// switches to the detailed model, per GPU.
#[derive(Parser, Debug, Default)]
#[command(name = "membudget", version, about, long_about = None, allow_negative_numbers = true, args_override_self = true)]
pub struct Args {
    /// The lesson's model.
    #[command(flatten)]
    pub lesson: LessonArgs,
    /// The detailed model's architecture.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Sequence, batch and objective.
    #[command(flatten)]
    pub training: TrainingArgs,
    /// Precision and optimizer.
    #[command(flatten)]
    pub precision: PrecisionArgs,
    /// Attention, dropout, recomputation, kernels.
    #[command(flatten)]
    pub kernels: KernelArgs,
    /// Parallelism.
    #[command(flatten)]
    pub parallel: ParallelArgs,
    /// LoRA and QLoRA.
    #[command(flatten)]
    pub finetune: FinetuneArgs,
    /// Offload to host memory.
    #[command(flatten)]
    pub offload: OffloadArgs,
    /// Runtime overhead beside the peak.
    #[command(flatten)]
    pub overhead: OverheadArgs,
    /// The card to fit on.
    #[command(flatten)]
    pub hardware: HardwareArgs,
    /// Step time, training cost and the planner.
    #[command(flatten)]
    pub time: TimeArgs,
    /// Output format.
    #[command(flatten)]
    pub output: OutputArgs,
    /// A trainer's own configuration files and the launcher.
    #[command(flatten)]
    pub from: FromArgs,
}

/// A trainer's own configuration (`--from`), and what no configuration
/// file holds: the launcher's GPU count and gradient accumulation.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "A trainer's configuration")]
pub struct FromArgs {
    /// A trainer's own configuration, read before the flags (which
    /// override it); repeatable, later files override earlier ones:
    /// torchtune, torchtitan, axolotl, LLaMA-Factory, litgpt, TRL or
    /// TrainingArguments YAML/JSON, DeepSpeed JSON, accelerate YAML, or a
    /// launch command line (torchrun, accelerate launch, tune run,
    /// Megatron's pretrain_gpt.py, FSDP-QLoRA's train.py, unsloth-cli.py).
    #[arg(long, value_name = "FILE")]
    pub from: Vec<std::path::PathBuf>,
    /// The trainer that runs it: its defaults (kernels, loss,
    /// checkpointing, adapters' dtype and dropout, sharding) before any
    /// --from file and the flags, which override them; listed with what
    /// was read ([docs/trainers.md]).
    #[arg(long, value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(crate::detailed::trainers::choice::TRAINERS))]
    pub trainer: Option<String>,
    /// GPUs per node, as torchrun names it: the data-parallel size is what
    /// tp × pp × cp leave of nproc-per-node × nnodes (unless --dp),
    /// 1–4096.
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=4096))]
    pub nproc_per_node: Option<u64>,
    /// Nodes, as torchrun names it, 1–65536 [default: 1].
    #[arg(long, value_name = "M", value_parser = value_parser!(u64).range(1..=65536))]
    pub nnodes: Option<u64>,
    /// Gradient accumulation steps: without --batch, the batch is
    /// micro-batch × N × dp, 1–2²⁰ [default: 1].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=1 << 20))]
    pub grad_accum: Option<u64>,
    /// What each `--from` file asked for, filled by [`with_from`].
    #[arg(skip)]
    pub read: Vec<FromRead>,
}

/// One `--from` file as read.
#[derive(Clone, Debug)]
pub struct FromRead {
    /// The path as given.
    pub file: String,
    /// Its settings, trainer defaults and ignored keys.
    pub reading: crate::detailed::trainers::Reading,
}

impl FromArgs {
    fn given(&self) -> bool {
        !self.from.is_empty()
            || self.nproc_per_node.is_some()
            || self.nnodes.is_some()
            || self.grad_accum.is_some()
    }
}

/// The lesson's inputs; `--batch`, `--seq`, `--hidden` and `--layers` serve
/// the detailed model too.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Model (lesson)")]
pub struct LessonArgs {
    /// Model size in billions of parameters, 0.1–1000 [default: 7].
    #[arg(long, value_name = "B")]
    pub params: Option<String>,
    /// Hidden size, 128–65536 [default: 4096; detailed: the model's].
    #[arg(long, value_name = "H")]
    pub hidden: Option<String>,
    /// Layers, 1–256 [default: 32; detailed: the model's].
    #[arg(long, value_name = "L")]
    pub layers: Option<String>,
    /// Train in plain fp32 instead of mixed precision.
    #[arg(long)]
    pub fp32: bool,
}

/// The detailed model's architecture: a preset, a config.json or a shape.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Model (detailed)")]
pub struct ModelArgs {
    /// A published model; shape flags given with it override its values.
    #[arg(long, value_name = "PRESET", value_parser = PossibleValuesParser::new(preset_names()))]
    pub model: Option<String>,
    /// A Hugging Face config.json (gpt2, llama, mistral, qwen2, qwen3,
    /// gemma2, gemma3_text, mixtral, qwen3_moe, qwen2_moe, glm4_moe, gpt_oss,
    /// deepseek_v2/v3, llama4, falcon_h1); shape flags given with it override
    /// its values.
    #[arg(long, value_name = "PATH")]
    pub config: Option<std::path::PathBuf>,
    /// A shape of your own (with --layers --hidden --heads, and --ffn for llama).
    #[arg(long, value_name = "FAMILY", value_parser = one_of::<Family>(Family::NAMES), ignore_case = true)]
    pub arch: Option<Family>,
    /// Attention heads, 1–65536.
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=1 << 16))]
    pub heads: Option<u64>,
    /// Key/value heads (grouped-query attention) [default: heads].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=1 << 16))]
    pub kv_heads: Option<u64>,
    /// MLP inner size, 1–2²⁴ [default: 4·hidden for gpt2; required for llama].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=1 << 24))]
    pub ffn: Option<u64>,
    /// Vocabulary, 1–2²⁴ [default: 50257 for gpt2, 32000 for llama].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=1 << 24))]
    pub vocab: Option<u64>,
    /// Learned position embeddings, gpt2 only (Megatron-LM's
    /// --max-position-embeddings under --position-embedding-type
    /// learned_absolute); 0: rotary positions, none learned (rope), 0–2²⁰
    /// [default: 1024 for gpt2, 0 for llama].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(0..=1 << 20))]
    pub positions: Option<u64>,
    /// An output layer of its own instead of the input embedding's
    /// (Megatron-LM's --untie-embeddings-and-output-weights) [default:
    /// tied for gpt2, untied for llama].
    #[arg(long)]
    pub untie_embeddings_and_output_weights: bool,
}

/// Sequence, batch and objective.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Training")]
pub struct TrainingArgs {
    /// Sequence length in tokens: the lesson's, 1–131072; the detailed
    /// model's, 1–1048576 (long ones with --cp) [default: 2048].
    #[arg(long, value_name = "TOKENS")]
    pub seq: Option<String>,
    /// Batch in sequences: the lesson's, 1–1024 [default: 4]; the detailed
    /// model's global batch, 1–1048576 [default: 1].
    #[arg(long, value_name = "N")]
    pub batch: Option<String>,
    /// Sequences per GPU per forward pass, 1–2²⁴ [default: batch / dp];
    /// the rest of the batch is gradient accumulation.
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=1 << 24))]
    pub micro_batch: Option<u64>,
    /// Training objective: dpo keeps a frozen reference (with LoRA the base
    /// is the reference), dpo-precomputed reads reference log-probabilities
    /// computed beforehand; grpo generates its completions first (TRL's
    /// GRPOTrainer, no KL penalty), grpo-kl adds the reference model
    /// [default: sft].
    #[arg(long, value_name = "OBJECTIVE", value_parser = one_of::<Objective>(Objective::NAMES), ignore_case = true)]
    pub objective: Option<Objective>,
    /// GRPO: tokens of each completion, the rest of --seq is the prompt
    /// (TRL's max_completion_length) [default: 512].
    #[arg(long, value_name = "TOKENS", value_parser = value_parser!(u64).range(1..=1 << 24))]
    pub completion: Option<u64>,
    /// GRPO: completions per prompt, G; --batch counts completions and must
    /// be a multiple (TRL's num_generations) [default: 8].
    #[arg(long, value_name = "G", value_parser = value_parser!(u64).range(1..=4096))]
    pub generations: Option<u64>,
    /// GRPO: generate with a vLLM engine colocated on each GPU, which takes
    /// this fraction of the card's memory (TRL's vllm_gpu_memory_utilization,
    /// 0.3 by default there), 0.05–0.95; needs --gpu or --gpu-memory.
    #[arg(long, value_name = "FRACTION")]
    pub vllm_colocate: Option<f64>,
    /// GRPO with --vllm-colocate: the engine sleeps between rollouts
    /// (vllm_enable_sleep_mode), so training runs without its reservation.
    #[arg(long)]
    pub vllm_sleep: bool,
    /// The peak of the first optimizer step (which creates the optimizer
    /// state) instead of a later one.
    #[arg(long)]
    pub first_step: bool,
}

/// Precision and optimizer.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Precision and optimizer")]
pub struct PrecisionArgs {
    /// mixed: bf16 with an fp32 master copy (under --framework fsdp2, a
    /// bf16 MixedPrecisionPolicy over fp32 shards); bf16: pure; fp32
    /// [default: mixed].
    #[arg(long, value_name = "PRECISION", value_parser = one_of::<Precision>(Precision::NAMES), ignore_case = true)]
    pub precision: Option<Precision>,
    /// Keep gradients in fp32 (some frameworks do under mixed precision).
    #[arg(long)]
    pub grad_fp32: bool,
    /// Float8 matmuls in the layers' linear layers, priced at the card's fp8
    /// rate: torchao's tensorwise or rowwise recipe (convert_to_float8_training,
    /// the output layer left out; weights and saved activations stay as they
    /// are), or te, Transformer Engine as Megatron runs it (inputs saved in
    /// fp8, fp8 weight copies cached; modelled), te-mxfp8 its Blackwell
    /// block scaling [default: none].
    #[arg(long, value_name = "RECIPE", value_parser = one_of::<Fp8>(Fp8::NAMES), ignore_case = true)]
    pub fp8: Option<Fp8>,
    /// FP8 primary weights (Megatron-LM's --fp8-param-gather): Transformer
    /// Engine's linear weights held in fp8 with no bf16 copy, the
    /// distributed optimizer casting its fp32 main weights to fp8 after
    /// each step and gathering them in fp8 (bf16 under te-mxfp8); under
    /// --zero 3 Megatron-FSDP's fp8 shards; with LoRA the frozen base in
    /// fp8, never cast again (--zero 0, 1 or 2). Needs --fp8 te or
    /// te-mxfp8, --framework megatron and --zero 1, 2 or 3 (any but 3 with
    /// LoRA).
    #[arg(long)]
    pub fp8_param: bool,
    /// Megatron-LM's --disable-parameter-transpose-cache with --fp8-param:
    /// each fp8 weight's transpose made for its backward and dropped, not
    /// kept (Transformer Engine 1.x and ROCm's fork, as MLPerf's LoRA runs
    /// set it): one byte a weight kept instead of two, and the transposes
    /// made every micro-batch.
    #[arg(long)]
    pub disable_parameter_transpose_cache: bool,
    /// The optimizer; paged-* are bitsandbytes' paged versions [default: adamw].
    #[arg(long, value_name = "OPTIMIZER", value_parser = one_of::<Optimizer>(Optimizer::NAMES), ignore_case = true)]
    pub optimizer: Option<Optimizer>,
    /// Run the optimizer's step inside backward, one parameter at a time,
    /// each gradient freed right after (torchtune's optimizer_in_bwd,
    /// PyTorch's register_post_accumulate_grad_hook): one GPU, no gradient
    /// accumulation, no clipping; hf kernels unless --impl is given.
    #[arg(long)]
    pub optimizer_in_backward: bool,
    /// AdamW's implementation, for the optimizer step's temporaries
    /// [default: fused for --impl fused, foreach for hf on cuda, loop for hf
    /// on cpu].
    #[arg(long, value_name = "IMPL", value_parser = one_of::<AdamImpl>(AdamImpl::NAMES), ignore_case = true)]
    pub adam: Option<AdamImpl>,
}

/// Attention, dropout, recomputation and whose kernels.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Kernels and recomputation")]
pub struct KernelArgs {
    /// Attention kernel: eager keeps the a·s² scores, flash (SDPA,
    /// FlashAttention) none [default: flash].
    #[arg(long, value_name = "KERNEL", value_parser = one_of::<AttentionKernel>(AttentionKernel::NAMES), ignore_case = true)]
    pub attention: Option<AttentionKernel>,
    /// The model uses dropout (masks are kept for backward).
    #[arg(long)]
    pub dropout: bool,
    /// The model wrapped in torch.compile (inductor): AOTAutograd's
    /// partitioner recomputes the cheap pointwise ops in backward instead
    /// of saving them, and inductor fuses them; hf kernels, no dropout.
    #[arg(long)]
    pub compile: bool,
    /// What --compile wraps: model (torch.compile(model), one graph:
    /// transformers' Trainer, TRL, axolotl), layers (each decoder layer
    /// compiled, the rest eager: torchtitan's December 2024 release) or
    /// layers-loss (each layer and the loss compiled apart: torchtitan's
    /// compile.components) [default: model].
    #[arg(long, value_name = "SCOPE", value_parser = one_of::<CompileScope>(CompileScope::NAMES), ignore_case = true)]
    pub compile_scope: Option<CompileScope>,
    /// Activation recomputation; selective is Megatron's (fused kernels
    /// only), selective-op torchtitan's per-operator policy (each layer
    /// keeps its attention output and every other projection's) [default:
    /// none].
    #[arg(long, value_name = "WHAT", value_parser = one_of::<Recompute>(Recompute::NAMES), ignore_case = true)]
    pub recompute: Option<Recompute>,
    /// Megatron-Core's selective recomputation of single modules
    /// (`--recompute-granularity selective --recompute-modules ...`),
    /// comma-separated: core_attn (as --recompute selective), layernorm (the
    /// norms that are modules of their own: a MoE layer's pre-MLP norm,
    /// multi-latent attention's input norm), moe_act (the routed experts'
    /// activation), mla_up_proj (multi-latent attention's up-projections
    /// and rotary embedding), their outputs freed after use and rerun in
    /// backward; mlp (a dense layer's MLP), moe (a MoE layer's MLP, its
    /// all-to-alls again), shared_experts, checkpointed whole: their input
    /// kept, their forward rerun in backward.
    /// Fused kernels under --framework megatron.
    #[arg(long, value_name = "LIST", value_parser = parse_recompute_modules)]
    pub recompute_modules: Option<ModulesArg>,
    /// With --recompute full under --framework megatron: recompute only the
    /// first N layers of each pipeline stage's model chunk, the rest
    /// keeping everything (Megatron-Core's --recompute-method block
    /// --recompute-num-layers N) [default: 0, every layer].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=4096))]
    pub recompute_layers: Option<u64>,
    /// Whose kernels: fused (Megatron), hf (stock transformers) or liger
    /// (stock transformers with Liger's RMSNorm, SwiGLU and RoPE kernels,
    /// and its fused loss unless --loss says otherwise) [default: hf with
    /// LoRA, QLoRA, DPO or --config; fused otherwise].
    #[arg(long = "impl", value_name = "IMPL", value_parser = one_of::<Implementation>(Implementation::NAMES), ignore_case = true)]
    pub implementation: Option<Implementation>,
    /// The loss: full (the whole logits), chunked (torchtune's
    /// CEWithChunkedOutputLoss and chunked output projection), liger
    /// (LigerFusedLinearCrossEntropyLoss) or cce (Apple's Cut
    /// Cross-Entropy) [default: full; liger under --impl liger].
    #[arg(long, value_name = "LOSS", value_parser = one_of::<Loss>(Loss::NAMES), ignore_case = true)]
    pub loss: Option<Loss>,
    /// The chunked loss's chunks (torchtune's num_output_chunks), 1–4096
    /// [default: 8].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=4096))]
    pub loss_chunks: Option<u64>,
    /// Where it runs; changes dropout masks and SDPA under hf [default: cuda].
    #[arg(long, value_name = "DEVICE", value_parser = one_of::<Device>(Device::NAMES), ignore_case = true)]
    pub device: Option<Device>,
    /// Mixture of experts under hf: transformers' grouped matmul or a loop
    /// over the experts [default: grouped].
    #[arg(long, value_name = "IMPL", value_parser = one_of::<ExpertsImpl>(ExpertsImpl::NAMES), ignore_case = true)]
    pub experts_impl: Option<ExpertsImpl>,
    /// Mixture of experts under fused: Megatron's expert capacity factor
    /// with padding, 0.1–64 [default: dropless].
    #[arg(long, value_name = "C")]
    pub capacity_factor: Option<f64>,
    /// Mixture of experts under fused with --ep: Megatron-Core's token
    /// dispatcher, alltoall (`--moe-token-dispatcher-type alltoall`) or
    /// deepep (`flex` with DeepEP's kernels: a token crosses to another node
    /// once per node holding any of its experts, NVLink forwarding it
    /// there) [default: alltoall].
    #[arg(long, value_name = "NAME", value_parser = one_of::<MoeDispatcher>(MoeDispatcher::NAMES), ignore_case = true)]
    pub moe_dispatcher: Option<MoeDispatcher>,
}

/// Parallelism.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Parallelism")]
pub struct ParallelArgs {
    /// Data-parallel GPUs, 1–4096 [default: 1].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=4096))]
    pub dp: Option<u64>,
    /// Hybrid sharding (HSDP; torchtitan's data_parallel_shard_degree):
    /// ZeRO shards over groups of N data-parallel GPUs and the dp / N
    /// groups replicate, all-reducing their gradient shards; 1–4096,
    /// dividing --dp, with --zero 1–3 [default: --dp, sharding over all].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=4096))]
    pub dp_shard: Option<u64>,
    /// ZeRO stage across the data-parallel GPUs, 0–3 [default: 0].
    #[arg(long, value_name = "STAGE", value_parser = value_parser!(u8).range(0..=3))]
    pub zero: Option<u8>,
    /// Tensor-parallel degree, 1–512 [default: 1].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=512))]
    pub tp: Option<u64>,
    /// Sequence parallelism (with --tp).
    #[arg(long, overrides_with = "no_sp")]
    pub sp: bool,
    /// No sequence parallelism: undoes an earlier --sp (a plan row's change).
    #[arg(long, overrides_with = "sp")]
    pub no_sp: bool,
    /// Pipeline stages (1F1B), 1–256 [default: 1].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=256))]
    pub pp: Option<u64>,
    /// Virtual stages per pipeline GPU for the interleaved 1F1B schedule,
    /// 1–64 (layers divisible by pp × vp) [default: 1, plain 1F1B].
    #[arg(long, value_name = "V", value_parser = value_parser!(u64).range(1..=64))]
    pub vp: Option<u64>,
    /// Layers on the first pipeline stage, an uneven split (Megatron-LM's
    /// --decoder-first-pipeline-num-layers; the stages between share the
    /// rest evenly), 1–4096 [default: an even share].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=4096))]
    pub first_stage_layers: Option<u64>,
    /// Layers on the last pipeline stage, an uneven split (Megatron-LM's
    /// --decoder-last-pipeline-num-layers), 1–4096 [default: an even share].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=4096))]
    pub last_stage_layers: Option<u64>,
    /// Mixture of experts: expert-parallel GPUs (ep × etp must divide dp ×
    /// cp × tp), 1–4096 [default: 1].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=4096))]
    pub ep: Option<u64>,
    /// Mixture of experts: expert tensor-parallel degree, 1–512 [default: 1].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=512))]
    pub etp: Option<u64>,
    /// Tensor parallelism on the layers only (a DTensor plan over the
    /// decoder layers): the embedding, output layer and logits whole on
    /// every tensor-parallel GPU, not split over the vocabulary as Megatron
    /// does; with --sp, torchtitan's sequence parallelism (the projections
    /// keep their gathered inputs whole).
    #[arg(long)]
    pub tp_layers_only: bool,
    /// Tensor-parallel plan for the embedding, output layer and logits:
    /// megatron (vocabulary-parallel embedding, output layer and loss),
    /// hf (transformers' tp_plan="auto" for Llama: embedding and output
    /// layer split, logits gathered whole on every GPU; no --sp),
    /// torchtitan (embedding and output layer split, logits gathered
    /// whole; needs --sp), loss-parallel (torchtitan with loss_parallel:
    /// logits split; needs --sp), layers (= --tp-layers-only)
    /// [default: megatron].
    #[arg(long, value_name = "PLAN", value_parser = one_of::<TpPlan>(&["megatron", "hf", "torchtitan", "loss-parallel", "layers"]), ignore_case = true, conflicts_with = "tp_layers_only")]
    pub tp_plan: Option<TpPlan>,
    /// Pipeline schedule: 1f1b (with --vp, interleaved) or zb-h1 (Zero
    /// Bubble's ZB-H1: the weights' gradients fill the bubble, the same
    /// activation memory as 1F1B) [default: 1f1b].
    #[arg(long, value_name = "NAME", value_parser = one_of::<Schedule>(&["1f1b", "zb-h1"]), ignore_case = true)]
    pub schedule: Option<Schedule>,
    /// Who runs data parallelism: megatron (gradient buffers, ZeRO as its
    /// distributed optimizer), ddp (PyTorch DistributedDataParallel: its
    /// buckets are a second copy of the gradients), ddp-bucket-view
    /// (gradient_as_bucket_view=True), fsdp2 (fully_shard, with --zero 3),
    /// fsdp2-no-reshard (reshard_after_forward=False), deepspeed (ZeRO
    /// 1–3: an fp32 partition of the weights, its gradient bucket; under 3
    /// its persistent small weights, prefetching and reuse distance) or
    /// fsdp1 (FullyShardedDataParallel as accelerate wraps a model: flat
    /// parameters, use_orig_params; FULL_SHARD, or fsdp1-grad-op,
    /// fsdp1-no-shard) [default: megatron].
    #[arg(long, value_name = "NAME", value_parser = one_of::<Framework>(&["megatron", "ddp", "ddp-bucket-view", "fsdp2", "fsdp2-no-reshard", "deepspeed", "fsdp1", "fsdp1-grad-op", "fsdp1-no-shard"]), ignore_case = true)]
    pub framework: Option<Framework>,
    /// With --framework fsdp1: its ShardingStrategy, full (FULL_SHARD,
    /// --zero 3), grad-op (SHARD_GRAD_OP, --zero 3) or no-shard (NO_SHARD,
    /// --zero 0) [default: full].
    #[arg(long, value_name = "NAME", value_parser = one_of::<FsdpSharding>(&["full", "grad-op", "no-shard"]), ignore_case = true)]
    pub fsdp_sharding: Option<FsdpSharding>,
    /// With --framework ddp: `gradient_as_bucket_view=True` (as
    /// ddp-bucket-view).
    #[arg(long)]
    pub grad_as_bucket_view: bool,
    /// With --framework fsdp2: `reshard_after_forward`, given to every
    /// `fully_shard` call, the model's included; false is
    /// fsdp2-no-reshard [default: true].
    #[arg(long, value_name = "BOOL", value_parser = one_of::<bool>(&["true", "false"]))]
    pub reshard_after_forward: Option<bool>,
    /// With --framework deepspeed: its zero_optimization.reduce_bucket_size,
    /// in values, 1e3–1e10 [default: 5e8].
    #[arg(long, value_name = "VALUES")]
    pub reduce_bucket_size: Option<f64>,
    /// With --framework deepspeed --zero 3: its
    /// zero_optimization.stage3_prefetch_bucket_size, in values, 0–1e10
    /// [default: 5e7].
    #[arg(long, value_name = "VALUES")]
    pub prefetch_bucket_size: Option<f64>,
    /// With --framework deepspeed: its zero_optimization.overlap_comm.
    /// Under ZeRO-1 without it every whole gradient is kept until backward
    /// ends; under stages 1 and 2 with it the reduce bucket is doubled
    /// [default: DeepSpeed's, true at --zero 3 only].
    #[arg(long, value_name = "BOOL", value_parser = one_of::<bool>(&["true", "false"]))]
    pub overlap_comm: Option<bool>,
    /// With --framework deepspeed --zero 3: its
    /// zero_optimization.sub_group_size, in values, 0–1e10: the optimizer
    /// step copies one sub-group's gradients to fp32 at a time (0: each
    /// weight is its own sub-group, as DeepSpeed closes a sub-group once
    /// it reaches the size) [default: 1e9].
    #[arg(long, value_name = "VALUES")]
    pub sub_group_size: Option<f64>,
    /// With --framework deepspeed --zero 3: its
    /// zero_optimization.stage3_param_persistence_threshold, in values,
    /// 0–1e10: weights of at most this many values stay gathered
    /// [default: 1e5].
    #[arg(long, value_name = "VALUES")]
    pub param_persistence_threshold: Option<f64>,
    /// With --framework megatron: reduce the gradients after backward, not
    /// bucket by bucket during it (Megatron-Core's overlap_grad_reduce off;
    /// the recipes turn it on; Megatron-LM's --overlap-grad-reduce is off
    /// unless given, so --from reads a script without it as this).
    #[arg(long, overrides_with = "overlap_grad_reduce")]
    pub no_overlap_grad_reduce: bool,
    /// Megatron-LM's --overlap-grad-reduce: undoes an earlier
    /// --no-overlap-grad-reduce (a --from file's) [default: on].
    #[arg(long, overrides_with = "no_overlap_grad_reduce")]
    pub overlap_grad_reduce: bool,
    /// With --framework megatron --zero 1 or 2: gather the updated
    /// parameters before the next forward, not bucket by bucket behind it
    /// (overlap_param_gather off).
    #[arg(long, overrides_with = "overlap_param_gather")]
    pub no_overlap_param_gather: bool,
    /// Megatron-LM's --overlap-param-gather: undoes an earlier
    /// --no-overlap-param-gather [default: on].
    #[arg(long, overrides_with = "no_overlap_param_gather")]
    pub overlap_param_gather: bool,
    /// With --framework megatron --tp --sp: tensor parallelism's
    /// all-gathers and reduce-scatters exposed, not inside the matrix
    /// multiplies (Transformer Engine's tp_comm_overlap off).
    #[arg(long, overrides_with = "tp_comm_overlap")]
    pub no_tp_comm_overlap: bool,
    /// Megatron-LM's --tp-comm-overlap: undoes an earlier
    /// --no-tp-comm-overlap [default: on].
    #[arg(long, overrides_with = "no_tp_comm_overlap")]
    pub tp_comm_overlap: bool,
    /// With --framework megatron and --ep 2 or more: Megatron-Core's
    /// --overlap-moe-expert-parallel-comm (Megatron-Bridge's
    /// moe_a2a_overlap): one micro-batch's forward run beside another's
    /// backward, each one's expert all-to-alls behind the other's compute
    /// [default: off, as Megatron-Core's].
    #[arg(long, visible_alias = "moe-a2a-overlap")]
    pub overlap_moe_expert_parallel_comm: bool,
    /// Async tensor parallelism (torchtitan's
    /// compile.enable_async_tensor_parallel, with --compile, --tp and
    /// --sp under the PyTorch frameworks): the all-gathers and
    /// reduce-scatters pipelined inside the matrix multiplies they feed.
    #[arg(long)]
    pub async_tp: bool,
    /// Context parallelism: each sequence split over N GPUs, keys and
    /// values passed around a ring (flash attention; seq divisible by 2 ×
    /// cp), 1–64 [default: 1].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=64))]
    pub cp: Option<u64>,
    /// How context parallelism exchanges the sequence, as Megatron-Core's
    /// --cp-comm-type names it: p2p (ring attention, overlapped) or a2a
    /// (all-to-all, DeepSpeed-Ulysses: heads divisible by cp) [default:
    /// p2p].
    #[arg(long, value_name = "TYPE", value_parser = one_of::<CpComm>(&["p2p", "a2a"]), ignore_case = true)]
    pub cp_comm: Option<CpComm>,
}

/// LoRA and QLoRA.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Fine-tuning")]
pub struct FinetuneArgs {
    /// LoRA rank (the base model is frozen), 1–hidden size.
    #[arg(long, value_name = "R", value_parser = value_parser!(u64).range(1..=1 << 20))]
    pub lora_rank: Option<u64>,
    /// Projections LoRA adapts: any of q,k,v,o,gate,up,down, or all; and
    /// beside them lm_head, embed (PEFT's adapters on the output layer and
    /// the embedding) [default: q,v].
    #[arg(long, value_name = "LIST")]
    pub lora_targets: Option<LoraTargets>,
    /// The adapters' dtype: fp32 (PEFT's default, autocast_adapter_dtype)
    /// or bf16, the model's 16-bit dtype (torchtune's LoRALinear, litgpt);
    /// their weights, gradients and AdamW state [default: fp32].
    #[arg(long, value_name = "DTYPE", value_parser = one_of::<LoraDtype>(LoraDtype::NAMES), ignore_case = true)]
    pub lora_dtype: Option<LoraDtype>,
    /// LoRA dropout probability, 0 ≤ P < 1 (PEFT's and torchtune's
    /// lora_dropout): above 0 each adapter keeps its own dropped-out input
    /// and mask [default: 0].
    #[arg(long, value_name = "P")]
    pub lora_dropout: Option<f64>,
    /// The frozen base as bitsandbytes stores it: nf4 (QLoRA, double
    /// quantization), nf4-nodq, int8; needs --lora-rank [default: none].
    #[arg(long, value_name = "FORMAT", value_parser = one_of::<BaseQuant>(BaseQuant::NAMES), ignore_case = true)]
    pub quant_base: Option<BaseQuant>,
    /// Whose code holds the 4-bit base: peft (prepare_model_for_kbit_training:
    /// the unquantized weights cast to fp32, the QLoRA recipe; axolotl, TRL,
    /// LLaMA-Factory), bnb (bitsandbytes' Linear4bit as Lightning and litgpt
    /// run it, the rest in bf16), torchao (torchtune's NF4Tensor), fsdp-qlora
    /// (Answer.AI's bf16 quant_storage, the codes sharded by FSDP); needs
    /// --quant-base [default: peft].
    #[arg(long, value_name = "PATH", value_parser = one_of::<QuantPath>(QuantPath::NAMES), ignore_case = true)]
    pub quant_path: Option<QuantPath>,
}

/// Offload to host memory.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Offload")]
pub struct OffloadArgs {
    /// With ZeRO ≥ 1: optimizer state, fp32 master and gradients on the CPU
    /// (ZeRO-Offload).
    #[arg(long, overrides_with = "no_offload_optimizer")]
    pub offload_optimizer: bool,
    /// The optimizer on the GPU: undoes an earlier --offload-optimizer (a
    /// plan row's change).
    #[arg(long, overrides_with = "offload_optimizer")]
    pub no_offload_optimizer: bool,
    /// With ZeRO-3 and --offload-optimizer: the 16-bit parameters on the CPU too.
    #[arg(long)]
    pub offload_params: bool,
    /// Saved activations on the CPU: alone or save-on-cpu
    /// (torch.autograd.graph.save_on_cpu, DeepSpeed's CPU checkpointing:
    /// each saved tensor once, one layer in flight on the GPU), torchtune
    /// (OffloadActivations: every saved tensor of 1 KB or more, once per
    /// node that saves it, the linear layers' weight views included; the
    /// output layer and the loss stay) or checkpoints (Unsloth's offloaded
    /// gradient checkpointing: with --recompute full, each layer's input).
    #[arg(long, value_name = "KIND", num_args = 0..=1, default_missing_value = "save-on-cpu", value_parser = one_of::<ActOffload>(&["save-on-cpu", "torchtune", "checkpoints"]), ignore_case = true)]
    pub offload_activations: Option<ActOffload>,
    /// Only the first N layers' saved activations on the CPU, as
    /// Megatron-Core offloads them (`--cpu-offloading-num-layers`,
    /// Transformer Engine's offload context): implies --offload-activations
    /// save-on-cpu; fewer than the model's layers, without pipeline
    /// parallelism or recomputation, as Megatron-Core allows it.
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..))]
    pub offload_layers: Option<u64>,
    /// With --framework fsdp1 or fsdp2: FSDP's CPU offload
    /// (`CPUOffload(offload_params=True)`, `CPUOffloadPolicy`): the sharded
    /// parameters, gradients and optimizer state on the host, the optimizer
    /// stepping there; the GPU holds the gathered layers only.
    #[arg(long)]
    pub fsdp_cpu_offload: bool,
    /// GPUs per node: for the host RAM per node and, with --gpu, which
    /// groups talk over NVLink, 1–72 (72: an NVL72 rack's one NVLink
    /// domain, which GB200 and GB300 are priced in whatever it says)
    /// [default: 8].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=72))]
    pub gpus_per_node: Option<u64>,
}

/// Runtime overhead beside the peak.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Runtime overhead")]
pub struct OverheadArgs {
    /// Accepted for old commands: the runtime overhead (CUDA context,
    /// workspaces, communication buffers, fragmentation) is counted by
    /// default, with the sizes below.
    #[arg(long)]
    pub overhead: bool,
    /// Judge by the tensors' peak alone: leave the runtime overhead out of
    /// the verdict, the largest micro-batch and sequence, the changes that
    /// make it fit and --plan.
    #[arg(long, conflicts_with_all = ["overhead", "expandable_segments", "cuda_context", "workspaces", "comm_buffers", "fragmentation"])]
    pub no_overhead: bool,
    /// PyTorch's allocator runs with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    /// (torchtitan's, axolotl's and Unsloth's default): the fragmentation's
    /// default is 5 % instead of 15 %.
    #[arg(long)]
    pub expandable_segments: bool,
    /// CUDA context in GB, 0–1000 [default: 0.758].
    #[arg(long, value_name = "GB")]
    pub cuda_context: Option<f64>,
    /// Library workspaces in GB, 0–1000 [default: 0.067].
    #[arg(long, value_name = "GB")]
    pub workspaces: Option<f64>,
    /// Communication buffers per parallel group in GB, 0–1000 [default: 0.268].
    #[arg(long, value_name = "GB")]
    pub comm_buffers: Option<f64>,
    /// Allocator fragmentation in percent of the peak, 0–100 [default: 15;
    /// 5 with --expandable-segments].
    #[arg(long, value_name = "PERCENT")]
    pub fragmentation: Option<f64>,
}

/// The card to fit on.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Hardware")]
pub struct HardwareArgs {
    /// A card from the table (docs/hardware.md): its memory as sold decides
    /// the verdict, and the largest micro-batch and sequence that fit are
    /// printed.
    #[arg(long, value_name = "CARD", value_parser = PossibleValuesParser::new(gpu_keys()), ignore_case = true)]
    pub gpu: Option<String>,
    /// A card of your own: its memory in GiB as sold, 1–100000 (instead of
    /// --gpu).
    #[arg(long, value_name = "GIB")]
    pub gpu_memory: Option<f64>,
}

/// Step time, what training costs, and the planner's search (with --gpu).
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Step time and planning (with --gpu)")]
pub struct TimeArgs {
    /// Search the layouts (dp × tp × pp, ZeRO, recomputation, micro-batch,
    /// 8-bit optimizer, offload, Megatron's expert all-to-all overlap) that
    /// fit --gpu over --gpus GPUs for --batch sequences per step, fastest
    /// first.
    #[arg(long)]
    pub plan: bool,
    /// What the planner leaves as it is, comma-separated: optimizer (and
    /// --optimizer-in-backward), recompute, micro-batch, zero (and
    /// --dp-shard), offload (optimizer and activations), parallelism (dp,
    /// tp, sp, pp, vp, schedule, cp, the expert all-to-all overlap),
    /// attention, precision, lora (and QLoRA,
    /// --impl), batch, vllm, loss, compile. The planner never changes
    /// --framework.
    #[arg(long, value_name = "LEVERS", value_parser = Keep::parse)]
    pub keep: Option<Keep>,
    /// GPUs for --plan, 1–65536 [default: the layout's dp × tp × pp].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=65536))]
    pub gpus: Option<u64>,
    /// Tokens to train on (1e12 or 1000000000000): prints the days,
    /// GPU-hours and, with --price, the cost.
    #[arg(long, value_name = "N")]
    pub tokens: Option<f64>,
    /// Price of one GPU-hour, in your currency, for --tokens [default: 2.00].
    #[arg(long, value_name = "PRICE")]
    pub price: Option<f64>,
    /// The network between nodes, Gbit/s per node (all its NICs), 1–100000
    /// [default: the card's reference system, e.g. 8 × 200 on A100, 8 × 400
    /// on H100].
    #[arg(long, value_name = "GBIT", value_parser = value_parser!(u64).range(1..=100_000))]
    pub network_gbit: Option<u64>,
    /// Sustained fraction of the dense peak for matrix multiplies, 0.01–1
    /// [default: 0.80 on A100, scaled by each card's measured best].
    #[arg(long, value_name = "F")]
    pub eff_matmul: Option<f64>,
    /// Sustained fraction of the dense peak for FlashAttention, 0.01–1
    /// [default: 0.50 on Ampere, 0.35 on Hopper and Blackwell].
    #[arg(long, value_name = "F")]
    pub eff_attention: Option<f64>,
    /// Sustained fraction of the memory bandwidth, 0.01–1 [default: 0.80].
    #[arg(long, value_name = "F")]
    pub eff_memory: Option<f64>,
    /// Sustained fraction of the links' bandwidth, 0.01–1 [default: 0.80].
    #[arg(long, value_name = "F")]
    pub eff_link: Option<f64>,
}

/// Default price of a GPU-hour for `--tokens`.
pub const DEFAULT_PRICE: f64 = 2.0;

impl TimeArgs {
    fn given(&self) -> bool {
        self.plan
            || self.gpus.is_some()
            || self.network_gbit.is_some()
            || self.tokens.is_some()
            || self.price.is_some()
            || self.eff_matmul.is_some()
            || self.eff_attention.is_some()
            || self.eff_memory.is_some()
            || self.eff_link.is_some()
    }

    /// The efficiencies asked for on `gpu` (its defaults where not given),
    /// checked.
    pub fn efficiency(&self, gpu: Option<&hardware::Gpu>) -> Result<Efficiency, CliError> {
        let d = gpu.map_or_else(Efficiency::default, Efficiency::for_gpu);
        let pick = |v: Option<f64>, name: &str, default: f64| -> Result<f64, CliError> {
            match v {
                None => Ok(default),
                Some(x) if x.is_finite() && (0.01..=1.0).contains(&x) => Ok(x),
                Some(x) => Err(format!("--{name} must be 0.01 to 1 (got {x})")),
            }
        };
        let attention = pick(self.eff_attention, "eff-attention", d.attention_forward)?;
        Ok(Efficiency {
            matmul: pick(self.eff_matmul, "eff-matmul", d.matmul)?,
            attention_forward: attention,
            attention_backward: attention,
            memory: pick(self.eff_memory, "eff-memory", d.memory)?,
            link: pick(self.eff_link, "eff-link", d.link)?,
        })
    }

    /// `--price`, checked: the price of a GPU-hour [default: 2.00].
    fn checked_price(&self) -> Result<f64, CliError> {
        match self.price {
            Some(p) if p.is_finite() && (0.0..=1e6).contains(&p) => Ok(p),
            Some(p) => Err(format!("--price must be 0 to 1000000 (got {p})")),
            None => Ok(DEFAULT_PRICE),
        }
    }

    /// `--tokens`, checked: the tokens to train on, if given.
    fn checked_tokens(&self) -> Result<Option<f64>, CliError> {
        match self.tokens {
            Some(n) if n.is_finite() && (1.0..=1e18).contains(&n) => Ok(Some(n)),
            Some(n) => Err(format!("--tokens must be 1 to 1e18 (got {n})")),
            None => Ok(None),
        }
    }
}

/// Every card's key, for `--gpu`.
fn gpu_keys() -> Vec<&'static str> {
    hardware::GPUS.iter().map(|g| g.key).collect()
}

/// Output format.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Output")]
pub struct OutputArgs {
    /// Print JSON (schema in docs/json.md): what was priced, the bytes and
    /// GB by term, and for the detailed model the step's peak and timeline.
    #[arg(long)]
    pub json: bool,
    /// Print the configuration as a trainer's own file instead of its
    /// budget: deepspeed (JSON), torchtune (recipe), axolotl, trl (YAML),
    /// torchtitan (TOML) or megatron (a launch line); what the format
    /// cannot say is refused. `--from` reads it back.
    #[arg(long, value_name = "FORMAT", value_parser = PossibleValuesParser::new(crate::detailed::trainers::emit::Target::NAMES), ignore_case = true)]
    pub emit: Option<String>,
}

impl OverheadArgs {
    /// Whether any runtime overhead flag was given.
    fn given(&self) -> bool {
        self.overhead
            || self.no_overhead
            || self.expandable_segments
            || self.cuda_context.is_some()
            || self.workspaces.is_some()
            || self.comm_buffers.is_some()
            || self.fragmentation.is_some()
    }
}

/// What the command found wrong.
pub type CliError = String;

impl Args {
    /// Whether any flag of the detailed model was given.
    pub fn is_detailed(&self) -> bool {
        let (m, t, p, k, par, f, o) = (
            &self.model,
            &self.training,
            &self.precision,
            &self.kernels,
            &self.parallel,
            &self.finetune,
            &self.offload,
        );
        m.model.is_some()
            || m.config.is_some()
            || m.arch.is_some()
            || m.heads.is_some()
            || m.kv_heads.is_some()
            || m.ffn.is_some()
            || m.vocab.is_some()
            || m.positions.is_some()
            || m.untie_embeddings_and_output_weights
            || t.micro_batch.is_some()
            || t.objective.is_some()
            || t.completion.is_some()
            || t.generations.is_some()
            || t.vllm_colocate.is_some()
            || t.first_step
            || p.precision.is_some()
            || p.grad_fp32
            || p.fp8.is_some()
            || p.fp8_param
            || p.disable_parameter_transpose_cache
            || p.optimizer.is_some()
            || p.optimizer_in_backward
            || p.adam.is_some()
            || k.attention.is_some()
            || k.dropout
            || k.compile
            || k.compile_scope.is_some()
            || k.recompute.is_some()
            || k.recompute_modules.is_some()
            || k.recompute_layers.is_some()
            || k.implementation.is_some()
            || k.loss.is_some()
            || k.loss_chunks.is_some()
            || k.device.is_some()
            || k.experts_impl.is_some()
            || k.capacity_factor.is_some()
            || k.moe_dispatcher.is_some()
            || par.dp.is_some()
            || par.zero.is_some()
            || par.tp.is_some()
            || par.sp
            || par.pp.is_some()
            || par.vp.is_some()
            || par.ep.is_some()
            || par.etp.is_some()
            || par.cp.is_some()
            || par.cp_comm.is_some()
            || par.framework.is_some()
            || par.no_overlap_grad_reduce
            || par.no_overlap_param_gather
            || par.no_tp_comm_overlap
            || par.overlap_grad_reduce
            || par.overlap_param_gather
            || par.tp_comm_overlap
            || par.overlap_moe_expert_parallel_comm
            || par.grad_as_bucket_view
            || par.reshard_after_forward.is_some()
            || par.fsdp_sharding.is_some()
            || par.reduce_bucket_size.is_some()
            || par.prefetch_bucket_size.is_some()
            || par.overlap_comm.is_some()
            || par.sub_group_size.is_some()
            || par.param_persistence_threshold.is_some()
            || par.schedule.is_some()
            || par.tp_layers_only
            || par.tp_plan.is_some()
            || par.dp_shard.is_some()
            || f.lora_rank.is_some()
            || f.lora_targets.is_some()
            || f.lora_dtype.is_some()
            || f.lora_dropout.is_some()
            || f.quant_base.is_some()
            || f.quant_path.is_some()
            || o.offload_optimizer
            || o.offload_params
            || o.offload_activations.is_some()
            || o.offload_layers.is_some()
            || o.fsdp_cpu_offload
            || o.gpus_per_node.is_some()
            || self.overhead.given()
            || self.hardware.gpu.is_some()
            || self.hardware.gpu_memory.is_some()
            || self.time.given()
            || self.from.given()
            || self.output.emit.is_some()
    }

    /// The card of the table named by `--gpu`, in nodes of
    /// `--gpus-per-node`: what the step time needs.
    pub fn cluster(&self) -> Option<Cluster> {
        let mut g = hardware::gpu(self.hardware.gpu.as_deref()?)?;
        let per_node = self.gpus_per_node().unwrap_or(8);
        if let Some(gbit) = self.time.network_gbit {
            // Gbit/s per node to GB/s per GPU: its share of the node's NICs.
            g.inter_node_gbps = gbit as f64 / 8.0 / per_node as f64;
        }
        Some(Cluster::new(g, per_node))
    }

    /// The card to fit on, if one was named: (its name, memory in bytes).
    pub fn card(&self) -> Result<Option<(String, f64)>, CliError> {
        let h = &self.hardware;
        match (&h.gpu, h.gpu_memory) {
            (Some(_), Some(_)) => Err("give --gpu or --gpu-memory, not both".into()),
            (Some(key), None) => {
                let g = hardware::gpu(key).ok_or_else(|| format!("unknown --gpu '{key}'"))?;
                Ok(Some((g.name.to_string(), g.memory_bytes())))
            }
            (None, Some(gib)) if gib.is_finite() && (1.0..=100_000.0).contains(&gib) => Ok(Some((
                format!("a {gib} GiB card"),
                gib * (1u64 << 30) as f64,
            ))),
            (None, Some(gib)) => Err(format!("--gpu-memory must be 1 to 100000 GiB (got {gib})")),
            (None, None) => Ok(None),
        }
    }

    /// The runtime overhead these flags ask for, checked: the defaults
    /// (with expandable segments' fragmentation when asked) and the sizes
    /// given, or `None` with `--no-overhead`.
    pub fn overhead_settings(&self) -> Result<Option<Overhead>, CliError> {
        let a = &self.overhead;
        if a.no_overhead {
            return Ok(None);
        }
        let d = if a.expandable_segments {
            Overhead::expandable_segments()
        } else {
            Overhead::default()
        };
        let o = Overhead {
            cuda_context_gb: a.cuda_context.unwrap_or(d.cuda_context_gb),
            workspaces_gb: a.workspaces.unwrap_or(d.workspaces_gb),
            communication_gb: a.comm_buffers.unwrap_or(d.communication_gb),
            fragmentation_percent: a.fragmentation.unwrap_or(d.fragmentation_percent),
        };
        if !o.is_valid() {
            return Err(format!(
                "overhead sizes must be numbers from 0 to {} GB and the fragmentation from 0 to {} %",
                Overhead::MAX_GB,
                Overhead::MAX_PERCENT
            ));
        }
        Ok(Some(o))
    }

    /// What the step timeline models beyond the configuration.
    pub fn step_options(&self) -> StepOptions {
        StepOptions {
            step: if self.training.first_step {
                Step::First
            } else {
                Step::Later
            },
            adam: self.precision.adam,
        }
    }

    /// The lesson configuration these flags describe.
    pub fn config(&self) -> Result<TrainingConfig, CliError> {
        let l = &self.lesson;
        let mut cfg = TrainingConfig {
            mixed_precision: !l.fp32,
            ..TrainingConfig::default()
        };
        for (field, text) in [
            (Field::ModelSize, &l.params),
            (Field::Batch, &self.training.batch),
            (Field::SeqLen, &self.training.seq),
            (Field::Hidden, &l.hidden),
            (Field::Layers, &l.layers),
        ] {
            if let Some(text) = text {
                let v = field.parse(text).map_err(|e| e.to_string())?;
                cfg = cfg.with(field, v).map_err(|e| e.to_string())?;
            }
        }
        Ok(cfg)
    }

    /// The architecture these flags name, and whether it came from a
    /// config.json.
    fn architecture(
        &self,
        layers: Option<u64>,
        hidden: Option<u64>,
    ) -> Result<(Architecture, bool), CliError> {
        let m = &self.model;
        let mut arch =
            match (&m.model, &m.config, m.arch) {
                (Some(_), Some(_), _) => return Err("give --model or --config, not both".into()),
                (None, Some(path), _) => {
                    let json = std::fs::read_to_string(path)
                        .map_err(|e| format!("--config {}: {e}", path.display()))?;
                    let imported = detailed::import_config(&json)
                        .map_err(|e| format!("--config {}: {e}", path.display()))?;
                    // What was read but not used, as the page says it.
                    for note in &imported.notes {
                        eprintln!("note: --config {}: {note}", path.display());
                    }
                    imported.arch
                }
                (Some(name), None, _) => preset(name)
                    .map(|p| p.arch)
                    .ok_or_else(|| format!("unknown model '{name}'"))?,
                (None, None, Some(family)) => {
                    let (l, h) = (
                        layers.ok_or("--layers is required with --arch")?,
                        hidden.ok_or("--hidden is required with --arch")?,
                    );
                    let heads = m.heads.ok_or("--heads is required with --arch")?;
                    match family {
                        Family::Gpt2 => Architecture::gpt2(l, h, heads, m.vocab.unwrap_or(50257)),
                        Family::Llama => Architecture::llama(
                            l,
                            h,
                            heads,
                            m.kv_heads.unwrap_or(heads),
                            m.ffn.ok_or("--ffn is required with --arch llama")?,
                            m.vocab.unwrap_or(32000),
                        ),
                    }
                }
                (None, None, None) => return Err(
                    "the detailed model needs --model PRESET, --config PATH or --arch gpt2|llama"
                        .into(),
                ),
            };
        // Shape flags override a preset.
        if let Some(l) = layers {
            arch.layers = l;
        }
        if let Some(h) = hidden {
            arch.hidden = h;
            if arch.family == Family::Gpt2 && m.ffn.is_none() {
                arch.ffn = 4 * h;
            }
        }
        if let Some(v) = m.heads {
            // GPT-2 has no grouped-query attention; an MHA preset stays MHA.
            if arch.family == Family::Gpt2 || arch.kv_heads == arch.heads {
                arch.kv_heads = v;
            }
            arch.heads = v;
        }
        if let Some(v) = m.kv_heads {
            arch.kv_heads = v;
        }
        if let Some(v) = m.ffn {
            arch.ffn = v;
        }
        if let Some(v) = m.vocab {
            arch.vocab = v;
        }
        if let Some(v) = m.positions {
            arch.positions = v;
        }
        if m.untie_embeddings_and_output_weights {
            arch.tied_embeddings = false;
        }
        Ok((arch, m.config.is_some()))
    }

    /// The detailed configuration these flags describe, and why its kernel
    /// profile (`"chosen"`, or the default's reason).
    pub fn detailed_config(&self) -> Result<(DetailedConfig, &'static str), CliError> {
        self.refuse_lesson_flags()?;
        // Sizes in the detailed model use its ranges (the lesson's, but a
        // sequence to 2²⁰) and the lesson's messages.
        let layers = size(Field::Layers, self.lesson.layers.as_deref())?;
        let hidden = size(Field::Hidden, self.lesson.hidden.as_deref())?;
        let seq = size(Field::SeqLen, self.training.seq.as_deref())?.unwrap_or(defaults::SEQ);
        let batch = self.read_batch()?;
        let (arch, imported) = self.architecture(layers, hidden)?;
        let mut cfg = DetailedConfig::new(arch, seq, batch);
        self.read_precision(&mut cfg);
        self.read_kernels(&mut cfg);
        self.read_parallelism(&mut cfg)?;
        self.read_offload(&mut cfg);
        self.read_training(&mut cfg)?;
        self.read_finetuning(&mut cfg)?;
        self.read_loss(&mut cfg)?;
        self.read_recompute_modules(&mut cfg)?;
        let (profile, reason) = match self.kernels.implementation {
            Some(chosen) => (chosen.profile(), "chosen"),
            None => defaults::profile(&cfg, imported),
        };
        cfg.profile = profile;
        self.check_accumulation(&cfg)?;
        if cfg.micro_batch.is_none() && !batch.is_multiple_of(cfg.parallel.dp) {
            return Err(format!(
                "--batch ({batch}) must be a multiple of --dp ({}), or give --micro-batch",
                cfg.parallel.dp
            ));
        }
        Ok((cfg, reason))
    }

    /// `--grad-accum` with `--batch` and `--micro-batch`: the three agree
    /// (as DeepSpeed asserts train_batch_size = micro × accumulation × dp).
    fn check_accumulation(&self, cfg: &DetailedConfig) -> Result<(), CliError> {
        if let (Some(accum), Some(_), Some(micro)) = (
            self.from.grad_accum,
            self.training.batch.as_ref(),
            cfg.micro_batch,
        ) {
            let want = micro * accum * cfg.parallel.dp;
            if want != cfg.batch {
                return Err(format!(
                    "--batch {} is not --micro-batch {micro} × --grad-accum {accum} × dp {} = {want}",
                    cfg.batch, cfg.parallel.dp
                ));
            }
        }
        Ok(())
    }

    /// Refuses the lesson's own flags, `--params` and `--fp32`, which the
    /// detailed model has no use for.
    fn refuse_lesson_flags(&self) -> Result<(), CliError> {
        if self.lesson.params.is_some() {
            return Err("--params is the lesson model's; the detailed model counts parameters from the architecture".into());
        }
        if self.lesson.fp32 {
            return Err("use --precision fp32 with the detailed model".into());
        }
        Ok(())
    }

    /// `--batch`, the global batch in sequences, checked; without it one
    /// micro-batch per data-parallel GPU.
    fn read_batch(&self) -> Result<u64, CliError> {
        let t = &self.training;
        Ok(match t.batch.as_deref() {
            // One micro-batch per data-parallel GPU: no accumulation. GRPO's
            // micro-batch defaults to one prompt's completions (TRL's
            // defaults: 8 per device, 8 per prompt).
            None => {
                let grpo = matches!(t.objective, Some(Objective::Grpo { .. }));
                let micro = match t.generations {
                    _ if !grpo => defaults::MICRO_BATCH,
                    Some(g) => g,
                    None => detailed::config::Rollout::default().generations,
                };
                t.micro_batch.unwrap_or(micro)
                    * self.from.grad_accum.unwrap_or(1)
                    * self.data_parallel()?
            }
            Some(t) => t
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|&b| (1..=1 << 20).contains(&b))
                .ok_or_else(|| {
                    format!(
                        "--batch must be a whole number from 1 to {} (got {t})",
                        1 << 20
                    )
                })?,
        })
    }

    /// The precision and optimizer flags: `--precision`, `--grad-fp32`,
    /// `--fp8`, `--fp8-param`, `--optimizer`, `--optimizer-in-backward`.
    fn read_precision(&self, cfg: &mut DetailedConfig) {
        let p = &self.precision;
        cfg.precision = p.precision.unwrap_or(Precision::Mixed);
        cfg.fp32_grads = p.grad_fp32;
        cfg.fp8 = p.fp8.unwrap_or(Fp8::None);
        cfg.fp8_param = p.fp8_param;
        cfg.no_transpose_cache = p.disable_parameter_transpose_cache;
        cfg.optimizer = p.optimizer.unwrap_or(Optimizer::AdamW);
        cfg.optimizer_in_backward = p.optimizer_in_backward;
    }

    /// The kernel flags but `--impl` (whose default looks at the whole
    /// configuration): attention, dropout, recomputation, device, experts.
    fn read_kernels(&self, cfg: &mut DetailedConfig) {
        let k = &self.kernels;
        cfg.attention = k.attention.unwrap_or(defaults::ATTENTION);
        cfg.dropout = k.dropout || defaults::DROPOUT;
        cfg.compile = k.compile;
        cfg.compile_scope = k.compile_scope.unwrap_or_default();
        cfg.recompute = k.recompute.unwrap_or_else(|| {
            defaults::recompute(self.training.objective.unwrap_or(Objective::Sft))
        });
        cfg.device = k.device.unwrap_or(Device::Cuda);
        if let Some(i) = k.experts_impl {
            cfg.experts_impl = i;
        }
        cfg.capacity_factor = k.capacity_factor;
        if let Some(d) = k.moe_dispatcher {
            cfg.moe_dispatcher = d;
        }
    }

    /// `--recompute-modules`: its output-discarding modules, and
    /// `core_attn` as selective recomputation (refused beside another
    /// `--recompute`).
    fn read_recompute_modules(&self, cfg: &mut DetailedConfig) -> Result<(), CliError> {
        cfg.recompute_layers = self.kernels.recompute_layers.unwrap_or(0);
        let Some(arg) = self.kernels.recompute_modules else {
            return Ok(());
        };
        cfg.recompute_modules = arg.modules;
        if arg.core_attn {
            match self.kernels.recompute {
                None | Some(Recompute::Selective) => cfg.recompute = Recompute::Selective,
                Some(r) => {
                    return Err(format!(
                        "--recompute-modules core_attn is --recompute selective, not {}",
                        r.name()
                    ))
                }
            }
        }
        Ok(())
    }

    /// `--impl liger`, `--loss` and `--loss-chunks`: Liger's kernels bring
    /// its fused loss unless another is asked for.
    fn read_loss(&self, cfg: &mut DetailedConfig) -> Result<(), CliError> {
        let k = &self.kernels;
        cfg.liger = k.implementation == Some(Implementation::Liger);
        cfg.loss = k
            .loss
            .unwrap_or(if cfg.liger { Loss::Liger } else { Loss::Full });
        if let Some(n) = k.loss_chunks {
            if cfg.loss != Loss::Chunked {
                return Err(
                    "--loss-chunks sets the chunked loss's chunks: give --loss chunked".into(),
                );
            }
            cfg.loss_chunks = n;
        }
        Ok(())
    }

    /// The parallelism flags: the degrees, the schedule and the framework,
    /// checked.
    fn read_parallelism(&self, cfg: &mut DetailedConfig) -> Result<(), CliError> {
        let par = &self.parallel;
        cfg.parallel.dp = self.data_parallel()?;
        cfg.parallel.zero = par.zero.unwrap_or(0);
        cfg.parallel.tp = par.tp.unwrap_or(1);
        cfg.parallel.sp = par.sp;
        cfg.parallel.pp = par.pp.unwrap_or(1);
        cfg.parallel.vp = par.vp.unwrap_or(1);
        cfg.parallel.ep = par.ep.unwrap_or(1);
        cfg.parallel.etp = par.etp.unwrap_or(1);
        cfg.parallel.cp = par.cp.unwrap_or(1);
        cfg.parallel.cp_comm = par.cp_comm.unwrap_or_default();
        cfg.framework = self.read_framework()?;
        cfg.overlap = self.read_overlap(cfg.framework)?;
        cfg.async_tp = par.async_tp;
        cfg.parallel.schedule = par.schedule.unwrap_or_default();
        cfg.parallel.tp_layers_only = par.tp_layers_only;
        if let Some(plan) = par.tp_plan {
            cfg.parallel.set_plan(plan);
        }
        cfg.parallel.dp_shard = par.dp_shard;
        cfg.parallel.first_stage_layers = par.first_stage_layers;
        cfg.parallel.last_stage_layers = par.last_stage_layers;
        Ok(())
    }

    /// Megatron-Core's overlaps, on unless `--no-overlap-grad-reduce`,
    /// `--no-overlap-param-gather` or `--no-tp-comm-overlap`, and the
    /// expert all-to-all's off unless `--overlap-moe-expert-parallel-comm`
    /// (Megatron only).
    fn read_overlap(&self, framework: Framework) -> Result<Overlap, CliError> {
        let par = &self.parallel;
        let megatron_only = [
            (par.no_overlap_grad_reduce, "--no-overlap-grad-reduce"),
            (par.no_overlap_param_gather, "--no-overlap-param-gather"),
            (par.no_tp_comm_overlap, "--no-tp-comm-overlap"),
            (
                par.overlap_moe_expert_parallel_comm,
                "--overlap-moe-expert-parallel-comm",
            ),
        ];
        if framework != Framework::Megatron {
            if let Some(&(_, flag)) = megatron_only.iter().find(|(given, _)| *given) {
                return Err(format!("{flag} needs --framework megatron"));
            }
        }
        Ok(Overlap {
            grad_reduce: !par.no_overlap_grad_reduce,
            param_gather: !par.no_overlap_param_gather,
            tp_comm: !par.no_tp_comm_overlap,
            moe_a2a: par.overlap_moe_expert_parallel_comm,
        })
    }

    /// `--framework` with its own flags (`--grad-as-bucket-view`,
    /// `--reshard-after-forward`, DeepSpeed's bucket sizes), checked.
    fn read_framework(&self) -> Result<Framework, CliError> {
        let par = &self.parallel;
        let mut framework = match (
            par.framework.unwrap_or_default(),
            par.grad_as_bucket_view,
            par.reshard_after_forward,
        ) {
            (f, false, None) => f,
            (Framework::Ddp { .. }, true, None) => Framework::Ddp { bucket_view: true },
            (Framework::Fsdp2 { .. }, false, Some(r)) => Framework::Fsdp2 {
                reshard_after_forward: r,
            },
            (_, true, _) => return Err("--grad-as-bucket-view needs --framework ddp".into()),
            _ => return Err("--reshard-after-forward needs --framework fsdp2".into()),
        };
        if self.offload.fsdp_cpu_offload
            && !matches!(framework, Framework::Fsdp1 { .. } | Framework::Fsdp2 { .. })
        {
            return Err("--fsdp-cpu-offload needs --framework fsdp1 or fsdp2 (DeepSpeed and Megatron offload with --offload-optimizer, --offload-params)".into());
        }
        match (framework, par.fsdp_sharding) {
            (_, None) => {}
            (Framework::Fsdp1 { .. }, Some(sharding)) => framework = Framework::Fsdp1 { sharding },
            _ => return Err("--fsdp-sharding needs --framework fsdp1".into()),
        }
        if self.offload.fsdp_cpu_offload
            && framework.fsdp_reshard().is_none()
            && matches!(framework, Framework::Fsdp1 { .. })
        {
            return Err("--fsdp-cpu-offload with FSDP1's NO_SHARD is not modelled (FSDP1 runs it, keeping the whole flat parameters on the host): choose --fsdp-sharding full or grad-op".into());
        }
        if let Framework::DeepSpeed { .. } = framework {
            self.read_deepspeed(&mut framework)?;
        } else if let Some(flag) = [
            (par.reduce_bucket_size.is_some(), "--reduce-bucket-size"),
            (par.prefetch_bucket_size.is_some(), "--prefetch-bucket-size"),
            (par.overlap_comm.is_some(), "--overlap-comm"),
            (par.sub_group_size.is_some(), "--sub-group-size"),
            (
                par.param_persistence_threshold.is_some(),
                "--param-persistence-threshold",
            ),
        ]
        .iter()
        .find_map(|&(given, flag)| given.then_some(flag))
        {
            return Err(format!("{flag} needs --framework deepspeed"));
        }
        Ok(framework)
    }

    /// DeepSpeed's own flags: its bucket sizes, `overlap_comm`, ZeRO-3's
    /// sub-groups and persistence threshold, each checked.
    fn read_deepspeed(&self, framework: &mut Framework) -> Result<(), CliError> {
        let par = &self.parallel;
        let Framework::DeepSpeed {
            reduce_bucket_size,
            prefetch_bucket_size,
            overlap_comm,
            sub_group_size,
            param_persistence_threshold,
        } = framework
        else {
            return Ok(());
        };
        let values = |given: Option<f64>, flag: &str, low: f64, into: &mut u64| {
            if let Some(v) = given {
                if !(low..=1e10).contains(&v) {
                    return Err(format!(
                        "--{flag} must be {} to 1e10 values (got {v})",
                        if low == 0.0 { "0" } else { "1e3" }
                    ));
                }
                *into = v.round() as u64;
            }
            Ok(())
        };
        values(
            par.reduce_bucket_size,
            "reduce-bucket-size",
            1e3,
            reduce_bucket_size,
        )?;
        values(
            par.prefetch_bucket_size,
            "prefetch-bucket-size",
            0.0,
            prefetch_bucket_size,
        )?;
        values(par.sub_group_size, "sub-group-size", 0.0, sub_group_size)?;
        values(
            par.param_persistence_threshold,
            "param-persistence-threshold",
            0.0,
            param_persistence_threshold,
        )?;
        *overlap_comm = par.overlap_comm;
        Ok(())
    }

    /// The offload flags: optimizer, parameters, activations, GPUs per node.
    fn read_offload(&self, cfg: &mut DetailedConfig) {
        let o = &self.offload;
        cfg.offload.optimizer = o.offload_optimizer;
        cfg.offload.params = o.offload_params;
        cfg.offload.activations = o.offload_activations.is_some() || o.offload_layers.is_some();
        cfg.offload.activations_by = o.offload_activations.unwrap_or_default();
        cfg.offload.activation_layers = o.offload_layers.unwrap_or(0);
        // FSDP's CPU offload moves the parameters' shards, their gradients
        // and the optimizer state to the host together: ZeRO-Infinity's
        // parameters and optimizer offload, over FSDP's shards.
        if o.fsdp_cpu_offload {
            cfg.offload.optimizer = true;
            cfg.offload.params = true;
        }
        if let Some(n) = self.gpus_per_node() {
            cfg.offload.gpus_per_node = n;
        }
    }

    /// `--gpus-per-node`, else torchrun's `--nproc-per-node` (up to 72).
    fn gpus_per_node(&self) -> Option<u64> {
        self.offload
            .gpus_per_node
            .or(self.from.nproc_per_node.filter(|&n| n <= 72))
    }

    /// The data-parallel size: `--dp`, else what tp × pp × cp leave of
    /// torchrun's `--nproc-per-node` × `--nnodes` (PyTorch's and Megatron's
    /// world = dp × tp × pp × cp), else 1.
    fn data_parallel(&self) -> Result<u64, CliError> {
        let par = &self.parallel;
        let f = &self.from;
        if let Some(dp) = par.dp {
            return Ok(dp);
        }
        let Some(nproc) = f.nproc_per_node else {
            if f.nnodes.is_some() {
                return Err("--nnodes needs --nproc-per-node".into());
            }
            return Ok(1);
        };
        let world = nproc * f.nnodes.unwrap_or(1);
        let model = par.tp.unwrap_or(1) * par.pp.unwrap_or(1) * par.cp.unwrap_or(1);
        if !world.is_multiple_of(model) || world < model {
            return Err(format!(
                "--nproc-per-node × --nnodes = {world} GPUs do not split into tp × pp × cp = {model}"
            ));
        }
        match world / model {
            dp @ 1..=4096 => Ok(dp),
            dp => Err(format!(
                "the data-parallel size {dp} left by --nproc-per-node × --nnodes must be 1 to 4096"
            )),
        }
    }

    /// The training flags: `--micro-batch`, `--objective` and GRPO's
    /// rollout (`--completion`, `--generations`, the vLLM engine), checked.
    fn read_training(&self, cfg: &mut DetailedConfig) -> Result<(), CliError> {
        let t = &self.training;
        cfg.micro_batch = t.micro_batch;
        if let Some(obj) = t.objective {
            cfg.objective = obj;
        }
        if (t.completion.is_some() || t.generations.is_some())
            && !matches!(cfg.objective, Objective::Grpo { .. })
        {
            return Err("--completion and --generations need --objective grpo or grpo-kl".into());
        }
        if let Some(c) = t.completion {
            cfg.rollout.completion = c;
        }
        if let Some(g) = t.generations {
            cfg.rollout.generations = g;
        }
        if t.vllm_sleep && t.vllm_colocate.is_none() {
            return Err("--vllm-sleep needs --vllm-colocate".into());
        }
        if let Some(f) = t.vllm_colocate {
            cfg.rollout.vllm = Some(self.read_vllm(cfg.objective, f)?);
        }
        Ok(())
    }

    /// `--vllm-colocate FRACTION` (and `--vllm-sleep`) under `objective`:
    /// the engine's share of the card, checked.
    fn read_vllm(
        &self,
        objective: Objective,
        fraction: f64,
    ) -> Result<detailed::config::Vllm, CliError> {
        if !matches!(objective, Objective::Grpo { .. }) {
            return Err("--vllm-colocate needs --objective grpo or grpo-kl".into());
        }
        if !(fraction.is_finite() && (0.05..=0.95).contains(&fraction)) {
            return Err(format!(
                "--vllm-colocate must be a fraction from 0.05 to 0.95 (got {fraction})"
            ));
        }
        let (_, capacity) = self
            .card()?
            .ok_or("--vllm-colocate takes a fraction of the card: give --gpu or --gpu-memory")?;
        Ok(detailed::config::Vllm {
            reserved: (fraction * capacity) as u64,
            sleep: self.training.vllm_sleep,
        })
    }

    /// The fine-tuning flags: `--quant-base`, `--lora-rank`,
    /// `--lora-targets`, `--lora-dtype`, `--lora-dropout`, checked.
    fn read_finetuning(&self, cfg: &mut DetailedConfig) -> Result<(), CliError> {
        let f = &self.finetune;
        if let Some(q) = f.quant_base {
            cfg.base_quant = q;
        }
        if let Some(path) = f.quant_path {
            if cfg.base_quant == BaseQuant::None {
                return Err("--quant-path needs --quant-base (a quantized base)".into());
            }
            cfg.quant_path = path;
        }
        cfg.lora_rank = f.lora_rank;
        if let Some(targets) = f.lora_targets {
            if f.lora_rank.is_none() {
                return Err("--lora-targets needs --lora-rank".into());
            }
            cfg.lora_targets = targets;
        }
        if (f.lora_dtype.is_some() || f.lora_dropout.is_some()) && f.lora_rank.is_none() {
            return Err("--lora-dtype and --lora-dropout need --lora-rank".into());
        }
        cfg.lora_dtype = f.lora_dtype.unwrap_or(LoraDtype::Fp32);
        cfg.lora_dropout = f.lora_dropout.unwrap_or(0.0);
        Ok(())
    }
}

/// A size flag of the detailed model (`--layers`, `--hidden`, `--seq`),
/// read with the lesson's ranges and messages.
fn size(field: Field, text: Option<&str>) -> Result<Option<u64>, CliError> {
    text.map(|t| {
        field
            .parse_in(t, crate::number::std_to_f64, true)
            .map(|v| v as u64)
            .map_err(|e| e.to_string())
    })
    .transpose()
}

/// The lesson's six lines, then the dominant term and its share.
pub fn render_text(b: &Breakdown) -> String {
    b.lesson_table() + &dominant_line(b)
}

/// `dominant: activations_gb (73.0 of 185.0 GB, 39 %)`.
fn dominant_line(b: &Breakdown) -> String {
    let d = b.dominant();
    format!(
        "dominant: {} ({:.1} of {:.1} GB, {:.0} %)\n",
        d.lesson_key(),
        b.gb(d),
        b.total_gb(),
        b.share(d) * 100.0
    )
}

/// A description line, the lesson's layout of rows (logits indented under
/// activations), the dominant term, and the peak of one step with its phase
/// and event.
pub fn render_detailed(
    cfg: &DetailedConfig,
    profile_reason: &str,
    b: &DetailedBreakdown,
    t: &StepTimeline,
    overhead: Option<&OverheadBytes>,
    fit: Option<&FitReport>,
) -> String {
    let mut out = description_line(cfg);
    // Under it, the architecture's notes: a hybrid's mixer, then the experts.
    out += &hybrid_line(cfg).unwrap_or_default();
    out += &experts_line(cfg).unwrap_or_default();
    out += &figure_lines(b);
    out += &computed_lines(cfg, profile_reason);
    out += &dominant_line(&b.terms());
    out += &peak_lines(b, t);
    if cfg.optimizer.paged() {
        out += &paged_line(cfg, t);
    }
    if cfg.optimizer_in_backward {
        out += "# optimizer in backward: each parameter stepped as its gradient is ready, the gradient freed at once; \
                it forbids gradient accumulation and gradient clipping (torchtune refuses both)\n";
    }
    if matches!(cfg.objective, Objective::Grpo { .. }) {
        out += &rollout_lines(cfg, t);
    }
    if cfg.parallel.pp > 1 {
        out += &format!(
            "# shown: pipeline stage {} of {} (the higher peak); its {} GPUs are alike\n",
            t.stage,
            cfg.parallel.pp,
            cfg.gpus() / cfg.parallel.pp
        );
    }
    if let Some(h) = detailed::host_ram(cfg) {
        out += &host_ram_line(&h);
    }
    if let Some(o) = overhead {
        out += &overhead_lines(cfg, o, t);
    }
    if let Some(f) = fit {
        out += &fit_lines(f);
    }
    out
}

/// `# detailed, per GPU: …`: the shape, sequence, micro-batch, precision,
/// kernels and layout priced.
fn description_line(cfg: &DetailedConfig) -> String {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    format!(
        "# detailed, per GPU: {} L{} h{} a{} kv{} ffn{} V{}, {} parameters; seq {}, micro-batch {}; \
         {}, {}{}, {} attention{}, recompute {}, {} kernels{}; dp {} (ZeRO {}), tp {}{}, pp {}{}\n",
        a.family.name(),
        a.layers,
        a.hidden,
        a.heads,
        a.kv_heads,
        a.ffn,
        a.vocab,
        a.params(),
        cfg.seq,
        cfg.micro(),
        cfg.precision.name(),
        cfg.optimizer.name(),
        if cfg.optimizer_in_backward {
            " in backward"
        } else {
            ""
        },
        cfg.attention.name(),
        if cfg.dropout { ", dropout" } else { "" },
        cfg.recompute.name(),
        if cfg.compile {
            format!("{} (torch.compile)", Implementation::of(cfg).name())
        } else {
            Implementation::of(cfg).name().to_string()
        },
        loss_words(cfg),
        p.dp,
        p.zero,
        p.tp,
        if p.sp { " with SP" } else { "" },
        p.pp,
        cfg.lora_rank.map_or(String::new(), |r| format!(
            ", LoRA rank {r} on {}{}{}",
            cfg.lora_targets.names(),
            if cfg.lora_dtype == LoraDtype::Bf16 { ", bf16 adapters" } else { "" },
            if cfg.lora_dropout > 0.0 { format!(", dropout {}", cfg.lora_dropout) } else { String::new() }
        )),
    )
}

/// The loss in the description line, if it is not the full loss: `, the
/// chunked loss (8 chunks)`, `, Liger's fused loss`, `, Cut Cross-Entropy`.
fn loss_words(cfg: &DetailedConfig) -> String {
    match cfg.loss {
        Loss::Full => String::new(),
        Loss::Chunked => format!(", the chunked loss ({} chunks)", cfg.loss_chunks),
        Loss::Liger => ", Liger's fused loss".into(),
        Loss::Cce => ", Cut Cross-Entropy".into(),
    }
}

/// `# experts: …` for a mixture of experts: its routing, widths, active
/// parameters and expert parallelism.
fn experts_line(cfg: &DetailedConfig) -> Option<String> {
    let a = &cfg.arch;
    let p = &cfg.parallel;
    let m = a.moe?;
    Some(format!(
        "# experts: {} routed (top-{}, width {}), shared width {}, {} dense layers first; \
         {} active parameters per token; ep {}, etp {}\n",
        m.experts,
        m.top_k,
        m.expert_ffn,
        m.shared_ffn,
        m.first_dense,
        a.active_params(),
        p.ep,
        p.etp
    ))
}

/// `# hybrid: …` for a model with a Mamba-2 mixer: its shape and
/// parameters.
fn hybrid_line(cfg: &DetailedConfig) -> Option<String> {
    let a = &cfg.arch;
    let m = a.ssm?;
    Some(format!(
        "# hybrid: a Mamba-2 mixer beside the attention in every layer: {} heads of {}, {} group{} of state {}, conv {}, chunk {}{}; {} of its parameters\n",
        m.heads,
        m.head_dim,
        m.groups,
        if m.groups == 1 { "" } else { "s" },
        m.state,
        m.conv,
        m.chunk,
        if m.gated_norm { ", gated norm" } else { "" },
        a.layers * m.params(a.hidden),
    ))
}

/// The budget's rows in the lesson's layout, logits indented under
/// activations.
fn figure_lines(b: &DetailedBreakdown) -> String {
    let mut out = String::new();
    for (key, bytes) in crate::export::detailed_figures(b) {
        let label = match key {
            "logits" => "  of which logits_gb".to_string(),
            _ => format!("{key}_gb"),
        };
        out += &format!("{label:20} {:8.1} GB\n", bytes / 1e9);
    }
    out
}

/// `peak_gb` and where the peak falls: its phase, event and step, against
/// the budget's total.
fn peak_lines(b: &DetailedBreakdown, t: &StepTimeline) -> String {
    let peak = t.peak_event();
    let mut out = format!("{:20} {:8.1} GB\n", "peak_gb", t.peak_bytes() / 1e9);
    out += &format!(
        "peak: {} phase, {}{} ({} step; {:+.0} % of total_gb)\n",
        peak.phase.name(),
        peak.moment.label(),
        if peak.micro_batch > 1 {
            ", a later micro-batch"
        } else {
            ""
        },
        if t.first_step { "first" } else { "later" },
        (t.peak_bytes() / b.total - 1.0) * 100.0
    );
    out
}

/// `# paged optimizer state: …`: the part of the peak in CUDA unified
/// memory, which PyTorch's figures (and so a trainer's log) leave out.
fn paged_line(cfg: &DetailedConfig, t: &StepTimeline) -> String {
    let paged = detailed::memory::paged::paged_at_peak(cfg, t.peak_event().live.optimizer_state);
    format!(
        "# paged optimizer state: {:.1} GB of the peak in CUDA unified memory (bitsandbytes, tensors of ≥ 1e5 values): \
         on the card until memory pressure pages it to the host, but not in torch.cuda.max_memory_allocated; \
         allocated by PyTorch {:.1} GB (what torchtune's peak_memory_alloc/_active and other trainers' logs show), \
         on the card {:.1} GB (the tensors', before the runtime overhead)\n",
        paged / 1e9,
        (t.peak_bytes() - paged) / 1e9,
        t.peak_bytes() / 1e9
    )
}

/// GRPO's generation: the colocated vLLM engine, if any, then the
/// rollout's completions, key/value cache and peak.
fn rollout_lines(cfg: &DetailedConfig, t: &StepTimeline) -> String {
    let g = detailed::memory::grpo::generation(cfg);
    let mut out = String::new();
    if let Some(v) = cfg.rollout.vllm {
        let weights = detailed::memory::grpo::engine_weights(cfg);
        let room = v.reserved as f64 - weights;
        out += &format!(
            "vllm: a colocated engine reserves {:.1} GB{}: its weights {:.1} GB, {:.1} GB of room for a cache of {:.1} GB{}\n",
            v.reserved as f64 / 1e9,
            if v.sleep { " while generating (asleep during training)" } else { " through the whole step" },
            weights / 1e9,
            room / 1e9,
            g.cache / 1e9,
            if g.cache > room { " (it runs fewer sequences at once)" } else { "" }
        );
    }
    let c = cfg.rollout.completion_tokens(cfg.seq);
    let prompts = cfg.effective_batch() / cfg.rollout.generations;
    let prompts = format!("{prompts} prompt{}", if prompts == 1 { "" } else { "s" });
    out += &format!(
        "rollout: {} completions of {} tokens after {}-token prompts generated at once per GPU \
         ({} × {} completions per step); key/value cache {:.1} GB; generation phase peaks at {:.1} GB\n",
        g.sequences,
        c,
        cfg.seq - c,
        prompts,
        cfg.rollout.generations,
        g.cache / 1e9,
        t.phase_peak(detailed::Phase::Generation).unwrap_or(0.0) / 1e9
    );
    out
}

/// `host_ram_gb`: host memory per node with offload, by what fills it.
fn host_ram_line(h: &HostRam) -> String {
    let gpus_count = |n: u64| format!("{n} GPU{}", if n == 1 { "" } else { "s" });
    format!(
        "{:20} {:8.1} GB per node of {} (offloaded states {:.1}, activations {:.1}, start-up load {:.1}; × {} for pinned buffers)\n",
        "host_ram_gb",
        h.total() / 1e9,
        gpus_count(h.gpus),
        h.states / 1e9,
        h.activations / 1e9,
        h.load / 1e9,
        detailed::memory::offload::BUFFER_FACTOR,
    )
}

/// The paged optimizer state at `t`'s peak (0 without a paged optimizer).
fn paged_at_peak(cfg: &DetailedConfig, t: &StepTimeline) -> f64 {
    if cfg.optimizer.paged() {
        detailed::memory::paged::paged_at_peak(cfg, t.peak_event().live.optimizer_state)
    } else {
        0.0
    }
}

/// `overhead_gb` by part, then the peak with it, then which figure a
/// trainer's log prints beside the card's.
fn overhead_lines(cfg: &DetailedConfig, o: &OverheadBytes, t: &StepTimeline) -> String {
    let mut out = format!(
        "{:20} {:8.1} GB (CUDA context {:.2}, workspaces {:.2}, communication {:.2}, fragmentation {:.2})\n",
        "overhead_gb",
        o.total() / 1e9,
        o.cuda_context / 1e9,
        o.workspaces / 1e9,
        o.communication / 1e9,
        o.fragmentation / 1e9,
    );
    out += &format!(
        "{:20} {:8.1} GB\n",
        "peak_with_overhead_gb",
        (t.peak_bytes() + o.total()) / 1e9
    );
    let paged = paged_at_peak(cfg, t);
    let (allocated, reserved) = o.pytorch_figures(t.peak_bytes(), paged);
    out += &format!(
        "# a trainer's log prints torch.cuda.max_memory_allocated {:.1} GB (the tensors' peak) and max_memory_reserved {:.1} GB \
         (+ fragmentation); the card holds {:.1} GB (+ CUDA context, workspaces, communication buffers{}: nvidia-smi's figure, the verdict's)\n",
        allocated / 1e9,
        reserved / 1e9,
        (t.peak_bytes() + o.total()) / 1e9,
        if paged > 0.0 { ", paged optimizer state" } else { "" }
    );
    out
}

/// When a step that does not fit would fit with its paged optimizer state
/// on the host: bitsandbytes' unified memory is paged out under memory
/// pressure (`bitsandbytes/optim/optimizer.py`, `get_state_buffer`), so
/// the step runs, slower.
fn paged_spill(f: &FitReport) -> String {
    if f.paged == 0 || f.need - f.paged > f.capacity {
        return String::new();
    }
    format!(
        "; without its {:.1} GB of paged optimizer state it needs {:.1} GB, so it runs once that state spills to host memory (slower: each step pages it over PCIe)",
        f.paged as f64 / 1e9,
        (f.need - f.paged) as f64 / 1e9
    )
}

/// When a step that does not fit would fit without the allocator's
/// fragmentation band ([`FitReport::edge`]): it may run at the card's
/// edge.
fn at_the_edge(f: &FitReport) -> String {
    if f.edge == 0 {
        return String::new();
    }
    format!(
        "; without the allocator's fragmentation band it needs {:.1} GB, so it may run at the card's edge (PyTorch's allocator frees its cache and retries; slower), as published runs tuned to their cards do (docs/validation.md)",
        f.edge as f64 / 1e9
    )
}

/// The verdict on a card and what fits it, as the page says it.
fn fit_lines(f: &FitReport) -> String {
    let gb = |b: u64| b as f64 / 1e9;
    let verdict = if f.fits {
        format!(
            "fits: the step needs {:.1} GB of its {:.1} GB ({:.1} GB to spare)",
            gb(f.need),
            gb(f.capacity),
            gb(f.capacity - f.need)
        )
    } else {
        format!(
            "does not fit by {:.1} GB: the step needs {:.1} GB, the card has {:.1} GB{}",
            gb(f.need - f.capacity),
            gb(f.need),
            gb(f.capacity),
            paged_spill(f) + &at_the_edge(f)
        )
    };
    let or_none = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
    let mut out = format!(
        "gpu: {}, {verdict}\nlargest micro-batch that fits: {} (same accumulation steps); largest sequence: {}\n",
        f.gpu,
        or_none(f.max_micro_batch),
        or_none(f.max_seq)
    );
    let (within, more): (Vec<&ChangeReport>, Vec<&ChangeReport>) =
        f.changes.iter().partition(|c| !c.more_gpus);
    if !within.is_empty() {
        out += "to make it fit (each change priced by the model; add its flags to rerun it):\n";
    }
    out += &change_lines(&within);
    if !more.is_empty() {
        out += "with more GPUs than it has now:\n";
    }
    out += &change_lines(&more);
    if let Some(card) = &f.card {
        out += &format!("as it is, it fits a {card} of the table\n");
    }
    out
}

/// Changes the text lists of each kind (JSON has them all).
const CHANGES_SHOWN: usize = 6;

/// The first [`CHANGES_SHOWN`] of `changes`: what each needs, saves and
/// costs (with its days and cost on `--tokens`), its flags, its cost in
/// words.
fn change_lines(changes: &[&ChangeReport]) -> String {
    let gb = |b: u64| b as f64 / 1e9;
    let mut out = String::new();
    for c in changes.iter().take(CHANGES_SHOWN) {
        let time = c.time.map_or(String::new(), |t| {
            format!(", GPU-time per token {:+.1} %", 100.0 * (t - 1.0))
        });
        let days = c.training.as_ref().map_or(String::new(), training_words);
        out += &format!(
            "  {} {:>6.1} GB, saves {:.1} GB of {}; {} GPU{}, compute ×{:.2}{time}{days}: {}\n      {}\n      cost: {}\n",
            if c.fits { "fits" } else { "    " },
            gb(c.need),
            c.saved as f64 / 1e9,
            c.term,
            c.gpus,
            if c.gpus == 1 { "" } else { "s" },
            c.compute,
            c.change,
            c.flags.join(" "),
            c.cost,
        );
    }
    out
}

/// A token budget's days and cost, as a row's clause.
fn training_words(t: &TrainingCost) -> String {
    format!(
        ", {:.1} days, {} at {:.2} per GPU-hour",
        t.days,
        grouped(t.cost),
        t.price_per_gpu_hour
    )
}

/// What the configuration means beyond its flags: the micro-batch,
/// accumulation steps and GPUs priced, which kernels priced it and why, and
/// any option that changed nothing.
fn computed_lines(cfg: &DetailedConfig, profile_reason: &str) -> String {
    let mut out = format!("# computed: {}\n", defaults::layout(cfg));
    out += &format!("# {}", defaults::kernels(cfg, profile_reason));
    out += if profile_reason == "chosen" {
        "\n"
    } else {
        " (--impl to choose)\n"
    };
    for note in defaults::ignored(cfg) {
        out += &format!("# note: {note}\n");
    }
    out
}

/// Runs the command for parsed flags: the text to print, or the error.
pub fn run(args: &Args) -> Result<String, CliError> {
    if args.is_detailed() {
        return run_detailed(args);
    }
    run_lesson(args)
}

/// The lesson's printout (or JSON) for its flags.
fn run_lesson(args: &Args) -> Result<String, CliError> {
    let cfg = args.config()?;
    let b = estimate(&cfg).map_err(|e| e.to_string())?;
    Ok(if args.output.json {
        json(&LessonReport::new(&cfg, &b))
    } else {
        render_text(&b)
    })
}

/// The detailed model's printout (or JSON) for its flags.
fn run_detailed(args: &Args) -> Result<String, CliError> {
    let read = &args.from.read;
    if let Some(format) = &args.output.emit {
        use crate::detailed::trainers::emit;
        let (cfg, _) = args
            .detailed_config()
            .map_err(|e| crate::from::explain(e, read))?;
        // Priced first: a configuration the model refuses is not written.
        detailed::estimate(&cfg).map_err(|e| e.to_string())?;
        return emit::emit(&cfg, format.parse()?);
    }
    let priced = DetailedRun::new(args).map_err(|e| crate::from::explain(e, read))?;
    // A learned position table shorter than the sequence: priced as given,
    // but no trainer runs it (`state::max_detailed_seq` stops at the table).
    let seq = priced.cfg.seq;
    if let Some(rows) = priced.cfg.arch.learned_positions().filter(|&p| seq > p) {
        eprintln!(
            "note: the model has {} learned positions, fewer than the {}-token sequence: transformers and Megatron-LM run none longer (priced as given; --seq {rows} fits the table)",
            crate::number::grouped(rows),
            crate::number::grouped(seq),
        );
    }
    Ok(if args.output.json {
        priced.into_json(read)
    } else {
        crate::from::text(read) + &priced.text()
    })
}

/// What the detailed model prints for one command: the configuration's
/// budget and step, and the card's verdict, step time and plan when asked.
struct DetailedRun {
    /// The configuration priced.
    cfg: DetailedConfig,
    /// Why its kernel profile: `"chosen"`, or the default's reason.
    reason: &'static str,
    /// The budget by term.
    breakdown: DetailedBreakdown,
    /// The step's events and peak.
    timeline: StepTimeline,
    /// The runtime overhead, if asked for.
    overhead: Option<OverheadBytes>,
    /// `--adam`, if given.
    adam: Option<AdamImpl>,
    /// The verdict on `--gpu` or `--gpu-memory`.
    fit: Option<FitReport>,
    /// The step's time on `--gpu`.
    time: Option<TimeReport>,
    /// `--plan`'s layouts.
    plan: Option<PlanReport>,
    /// `--keep`'s levers.
    keep: Keep,
}

impl DetailedRun {
    /// Prices the flags' configuration, checking them in the order the
    /// errors are reported.
    fn new(args: &Args) -> Result<Self, CliError> {
        let (cfg, reason) = args.detailed_config()?;
        let breakdown = detailed::estimate(&cfg).map_err(|e| e.to_string())?;
        let opts = args.step_options();
        let timeline = detailed::timeline(&cfg, &opts).map_err(|e| e.to_string())?;
        let settings = args.overhead_settings()?;
        let overhead = settings.map(|o| o.for_step(&cfg, &timeline));
        let cluster = args.cluster();
        let eff = args.time.efficiency(cluster.as_ref().map(|c| &c.gpu))?;
        check_card_speeds(args, &cfg, cluster.as_ref())?;
        let need = timeline.peak_bytes() + overhead.as_ref().map_or(0.0, |o| o.total());
        let timed = cluster.as_ref().map(|c| (c, &eff));
        let price = args.time.checked_price()?;
        let tokens = args.time.checked_tokens()?;
        let ask = Ask {
            overhead: settings.as_ref(),
            timed,
            keep: args.time.keep.unwrap_or_default(),
            tokens,
            price,
        };
        let fit = args
            .card()?
            .map(|(gpu, capacity)| fit_report(&cfg, gpu, capacity, need, &ask))
            .map(|f| FitReport {
                paged: whole(detailed::memory::paged::paged_at_peak(
                    &cfg,
                    timeline.peak_event().live.optimizer_state,
                )),
                edge: detailed::memory::overhead::edge_need(
                    &cfg,
                    &timeline,
                    settings.as_ref(),
                    f.capacity as f64,
                )
                .map_or(0, whole),
                ..f
            });
        let time = cluster
            .as_ref()
            .map(|c| time_report(&cfg, c, &eff, tokens, price));
        let plan = cluster
            .as_ref()
            .filter(|_| args.time.plan)
            .map(|c| plan_report(&cfg, c, args.time.gpus, &ask));
        Ok(Self {
            cfg,
            reason,
            breakdown,
            timeline,
            overhead,
            adam: opts.adam,
            fit,
            time,
            plan,
            keep: args.time.keep.unwrap_or_default(),
        })
    }

    /// The JSON document (docs/json.md).
    fn into_json(self, read: &[FromRead]) -> String {
        let host = detailed::host_ram(&self.cfg);
        let parts = DetailedParts {
            breakdown: &self.breakdown,
            timeline: &self.timeline,
            overhead: self.overhead.as_ref(),
            host: host.as_ref(),
            profile_reason: self.reason,
            adam: self
                .adam
                .unwrap_or_else(|| detailed::memory::timeline::default_adam(&self.cfg)),
            fit: self.fit,
            time: self.time,
            plan: self.plan,
        };
        let mut doc = DetailedReport::new(&self.cfg, &parts);
        doc.inputs.from = crate::from::report(read);
        doc.inputs.keep = Lever::ALL
            .into_iter()
            .filter(|&l| self.keep.holds(l))
            .map(|l| l.name().to_string())
            .collect();
        json(&doc)
    }

    /// The printout: the budget, then the step's time; with `--plan`, the
    /// plan first and the configuration as given after it.
    fn text(&self) -> String {
        let cfg = &self.cfg;
        let mut out = self.plan.as_ref().map_or(String::new(), |plan| {
            plan_lines(cfg, plan)
                + "\nthe configuration as given (the plan's rows change it by their flags):\n"
        });
        out += &render_detailed(
            cfg,
            self.reason,
            &self.breakdown,
            &self.timeline,
            self.overhead.as_ref(),
            self.fit.as_ref(),
        );
        if let Some(time) = &self.time {
            if self.fit.as_ref().is_some_and(|f| !f.fits) {
                out += "(the step does not fit the card: its time below is what it would take if it did)\n";
            }
            out += &time_lines(time, cfg.gpus());
        }
        out
    }
}

/// Refuses what the card cannot run or time: fp8 on a card without its
/// tensor cores, and step time, `--tokens` or `--plan` without a card of
/// the table.
fn check_card_speeds(
    args: &Args,
    cfg: &DetailedConfig,
    cluster: Option<&Cluster>,
) -> Result<(), CliError> {
    if let Some(c) = cluster.filter(|_| detailed::memory::fp8::enabled(cfg)) {
        if !detailed::time::hardware::fp8_runs_on(cfg, &c.gpu) {
            return Err(format!(
                "--fp8 {} needs {}: the {} has none",
                cfg.fp8.name(),
                if cfg.fp8 == Fp8::TeMxfp8 {
                    "Blackwell's MXFP8 tensor cores (B200, GB200, B300, GB300)"
                } else {
                    "fp8 tensor cores (H100, H200, B200, L40S, RTX 4090, MI300X)"
                },
                c.gpu.name
            ));
        }
    }
    if args.time.given() && cluster.is_none() {
        return Err(
            "step time, --tokens and --plan need --gpu CARD: a card of the table, whose speeds are known"
                .into(),
        );
    }
    Ok(())
}

/// What the planner is asked besides the configuration: the runtime
/// overhead, the card's speeds, the levers held, and the token budget.
struct Ask<'a> {
    overhead: Option<&'a Overhead>,
    timed: Option<(&'a Cluster, &'a Efficiency)>,
    keep: Keep,
    tokens: Option<f64>,
    price: f64,
}

impl Ask<'_> {
    /// What training on the token budget takes at `tokens_per_s_per_gpu`
    /// on `gpus` GPUs, with `--tokens`.
    fn training(&self, gpus: u64, tokens_per_s_per_gpu: f64) -> Option<TrainingCost> {
        self.tokens
            .map(|n| TrainingCost::at_rate(n, gpus, tokens_per_s_per_gpu, self.price))
    }
}

/// The verdict on a card of `capacity` bytes for a step that needs `need`,
/// and when it does not fit, the planner's changes (with days and cost on
/// the token budget, when the card's speeds and `--tokens` are given).
fn fit_report(cfg: &DetailedConfig, gpu: String, capacity: f64, need: f64, ask: &Ask) -> FitReport {
    let plan = (need > capacity)
        .then(|| make_it_fit_keeping(cfg, capacity, ask.overhead, ask.timed, ask.keep));
    let rate_now = ask
        .timed
        .map(|(c, e)| step_time(cfg, c, e).tokens_per_s_per_gpu);
    FitReport {
        gpu,
        capacity: whole(capacity),
        need: whole(need),
        fits: need <= capacity,
        max_micro_batch: max_micro_batch(cfg, capacity, ask.overhead),
        max_seq: max_detailed_seq(cfg, capacity, ask.overhead),
        changes: plan.as_ref().map_or(Vec::new(), |p| {
            p.changes
                .iter()
                .map(|c| ChangeReport {
                    training: rate_now
                        .zip(c.time)
                        .and_then(|(r, t)| ask.training(c.gpus, r / t)),
                    ..ChangeReport::new(cfg, c)
                })
                .collect()
        }),
        card: plan.and_then(|p| smallest_card(p.need).map(String::from)),
        paged: 0,
        edge: 0,
    }
}

/// The step's time on `cluster` and, with `--tokens`, what training on
/// them takes at `price` per GPU-hour.
fn time_report(
    cfg: &DetailedConfig,
    cluster: &Cluster,
    eff: &Efficiency,
    tokens: Option<f64>,
    price: f64,
) -> TimeReport {
    let st = step_time(cfg, cluster, eff);
    let training = tokens.map(|n| TrainingCost::new(n, cfg.gpus(), &st, price));
    TimeReport::new(cfg, cluster, eff, &st, training)
}

/// `--plan`: the layouts that fit over `gpus` GPUs (the configuration's
/// own by default), fastest first, each with the flags it changes and,
/// with `--tokens`, its days and cost.
fn plan_report(
    cfg: &DetailedConfig,
    cluster: &Cluster,
    gpus: Option<u64>,
    ask: &Ask,
) -> PlanReport {
    let gpus = gpus.unwrap_or(cfg.gpus());
    let eff = ask.timed.map_or_else(Efficiency::default, |(_, e)| *e);
    let found = search::search_keeping(cfg, cluster, gpus, ask.overhead, &eff, ask.keep);
    let mut report = PlanReport::new(cfg, gpus, &found);
    for r in &mut report.rows {
        r.training = ask.training(gpus, r.tokens_per_s_per_gpu);
    }
    report
}

/// A count with thousands separators.
fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Where a step's time goes, largest first, as "matmul 71 %, …".
fn parts_line(p: &Parts) -> String {
    let total = p.total();
    let mut named: Vec<(&str, f64)> = p
        .named()
        .into_iter()
        .filter(|(_, v)| *v >= 0.005 * total)
        .collect();
    named.sort_by(|a, b| b.1.total_cmp(&a.1));
    named
        .iter()
        .map(|(n, v)| format!("{n} {:.0} %", 100.0 * v / total))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The step's time, its range by the validation and, with --tokens, what
/// training takes.
fn time_lines(t: &TimeReport, gpus: u64) -> String {
    let mut out = format!(
        "time on {} ({} per node): step {:.3} s; {} tokens/s per GPU; {:.0} model TFLOPS per GPU (MFU {:.1} %), {:.0} hardware (HFU {:.1} %)\n",
        t.gpu,
        t.gpus_per_node,
        t.step_s,
        grouped(t.tokens_per_s_per_gpu),
        t.model_tflops_per_gpu,
        100.0 * t.mfu,
        t.hardware_tflops_per_gpu,
        100.0 * t.hfu
    );
    out += &range_line(&t.range);
    out += &format!("  where it goes: {}\n", parts_line(&t.parts));
    if let Some(c) = &t.training {
        let (days, cost) = match (t.range.days, t.range.cost) {
            (Some([d0, d1]), Some([c0, c1])) => (
                format!(" ({d0:.1}–{d1:.1} by {})", t.range.basis),
                format!(" ({}–{})", grouped(c0), grouped(c1)),
            ),
            // The basis is the reason: "not validated on this card: …".
            _ => (
                format!(" ({})", t.range.basis.split(':').next().unwrap_or_default()),
                String::new(),
            ),
        };
        out += &format!(
            "  {:.3e} tokens: {:.1} days{days} on {} GPU{}, {} GPU-hours, {}{cost} at {:.2} per GPU-hour\n",
            c.tokens,
            c.days,
            gpus,
            if gpus == 1 { "" } else { "s" },
            grouped(c.gpu_hours),
            grouped(c.cost),
            c.price_per_gpu_hour
        );
    }
    out
}

/// The step's figures as the validation bounds them, or why it does not.
fn range_line(r: &TimeRange) -> String {
    let (Some([e0, e1]), Some([s0, s1]), Some([t0, t1]), Some([m0, m1]), Some([h0, h1])) =
        (r.error, r.step_s, r.tokens_per_s_per_gpu, r.mfu, r.hfu)
    else {
        return format!("  range: {}\n", r.basis);
    };
    format!(
        "  range by {} ({}: {} rows, errors {:+.1} % to {:+.1} %): step {s0:.3}–{s1:.3} s; {}–{} tokens/s per GPU; MFU {:.1}–{:.1} %, HFU {:.1}–{:.1} %\n",
        r.basis,
        r.names,
        r.rows,
        100.0 * e0,
        100.0 * e1,
        grouped(t0),
        grouped(t1),
        100.0 * m0,
        100.0 * m1,
        100.0 * h0,
        100.0 * h1
    )
}

/// Layouts `--plan` lists in text (JSON has them all).
const PLAN_SHOWN: usize = 10;

/// `--plan`'s fastest layouts and its memory-versus-time front.
fn plan_lines(cfg: &DetailedConfig, p: &PlanReport) -> String {
    let mut out = format!(
        "plan: {} GPU{}, {} sequences of {} tokens per step: {} layouts tried, {} fit",
        p.gpus,
        if p.gpus == 1 { "" } else { "s" },
        cfg.batch,
        cfg.seq,
        p.tried,
        p.rows.len()
    );
    if p.rows.is_empty() {
        out += "; none fits: more GPUs, a bigger card, or LoRA/QLoRA (see the changes above)\n";
        return out;
    }
    out += "; fastest first, each row's flags changing the configuration as given:\n";
    let budget = p.rows.first().and_then(|r| r.training.as_ref());
    let row = |r: &PlanRowReport| {
        let days = r.training.as_ref().map_or(String::new(), |t| {
            format!(" {:>8.1} {:>12}", t.days, grouped(t.cost))
        });
        format!(
            "  {:>9.3} s {:>12} {:>5.1} % {:>7.1} GB{days}{}  {}\n",
            r.step_s,
            grouped(r.tokens_per_s_per_gpu),
            100.0 * r.mfu,
            r.peak as f64 / 1e9,
            if r.pareto { " *" } else { "  " },
            if r.changes.is_empty() {
                "(as given)".to_string()
            } else {
                r.changes.join(" ")
            }
        )
    };
    // Column headers end over their figures; "changes" over the flags.
    out += &format!(
        "       step   tokens/s/GPU    MFU    peak{}       changes\n",
        budget.map_or(String::new(), |t| format!(
            "        days {:>12}",
            format!("cost at {:.2}", t.price_per_gpu_hour)
        ))
    );
    for r in p.rows.iter().take(PLAN_SHOWN) {
        out += &row(r);
    }
    let front: Vec<&PlanRowReport> = p.rows.iter().filter(|r| r.pareto).collect();
    out += &format!(
        "memory-versus-time front (*: faster than every layout that needs less), {} layouts:\n",
        front.len()
    );
    for r in front.iter().take(PLAN_SHOWN) {
        out += &row(r);
    }
    out
}

/// A document as pretty JSON with a final newline.
fn json(doc: &impl serde::Serialize) -> String {
    // Our reports are plain structs of numbers and strings: they always serialize.
    serde_json::to_string_pretty(doc).unwrap_or_default() + "\n"
}
