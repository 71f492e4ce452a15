//! `--emit FORMAT`: a configuration written as a trainer's own file
//! (DeepSpeed JSON, torchtune recipe, axolotl YAML, TRL config,
//! torchtitan TOML, Megatron-LM launch line), with only the keys the
//! readers of this room read back. What the format cannot say is refused in
//! words, never dropped: reading the file back gives the same settings
//! (`tests/trainers_props.rs`, the round trip).

use super::models;
use crate::detailed::config::{
    ActOffload, AdamImpl, BaseQuant, CompileScope, DetailedConfig, Fp8, Framework, LoraDtype, Loss,
    Optimizer, Precision, QuantPath, Recompute, TpPlan,
};
use crate::detailed::model::arch::Family;
use crate::detailed::model::presets::PRESETS;
use crate::detailed::model::LoraTargets;

/// The formats `--emit` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A DeepSpeed config JSON.
    DeepSpeed,
    /// A torchtune recipe YAML.
    Torchtune,
    /// An axolotl YAML.
    Axolotl,
    /// A TRL config YAML (SFTConfig and ModelConfig keys).
    Trl,
    /// A torchtitan TOML (2025 layout).
    Torchtitan,
    /// A Megatron-LM launch line.
    Megatron,
}

impl Target {
    /// The names `--emit` takes.
    pub const NAMES: &'static [&'static str] = &[
        "deepspeed",
        "torchtune",
        "axolotl",
        "trl",
        "torchtitan",
        "megatron",
    ];

    /// The file name's extension the readers recognise.
    pub fn extension(self) -> &'static str {
        match self {
            Target::DeepSpeed => "json",
            Target::Torchtitan => "toml",
            Target::Megatron => "sh",
            _ => "yaml",
        }
    }
}

impl std::str::FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "deepspeed" => Ok(Target::DeepSpeed),
            "torchtune" => Ok(Target::Torchtune),
            "axolotl" => Ok(Target::Axolotl),
            "trl" => Ok(Target::Trl),
            "torchtitan" => Ok(Target::Torchtitan),
            "megatron" => Ok(Target::Megatron),
            _ => Err(format!(
                "--emit must be one of: {}",
                Target::NAMES.join(", ")
            )),
        }
    }
}

/// `cfg` as `target`'s file, or what it cannot say.
pub fn emit(cfg: &DetailedConfig, target: Target) -> Result<String, String> {
    match target {
        Target::DeepSpeed => deepspeed(cfg),
        Target::Torchtune => torchtune(cfg),
        Target::Axolotl => axolotl(cfg),
        Target::Trl => trl(cfg),
        Target::Torchtitan => torchtitan(cfg),
        Target::Megatron => megatron(cfg),
    }
}

/// A refusal: `format` cannot say `what`.
fn cannot(format: &str, what: impl std::fmt::Display) -> String {
    format!("--emit {format}: {what}")
}

/// The preset `cfg` runs, by name.
fn preset(cfg: &DetailedConfig, format: &str) -> Result<&'static str, String> {
    PRESETS
        .iter()
        .find(|p| p.arch == cfg.arch)
        .map(|p| p.name)
        .ok_or_else(|| {
            cannot(
                format,
                "the model must be a preset (--model) to be named in a trainer's file",
            )
        })
}

/// Settings no trainer file of `format` holds: refused unless at their default.
fn refuse_unsaid(cfg: &DetailedConfig, format: &str, parallel: bool) -> Result<(), String> {
    let p = &cfg.parallel;
    if parallel && (p.tp > 1 || p.pp > 1 || p.cp > 1 || p.ep > 1) {
        return Err(cannot(
            format,
            "its file holds no tensor, pipeline, context or expert parallelism",
        ));
    }
    if cfg.fp8 != Fp8::None && !matches!(format, "torchtitan" | "megatron" | "axolotl") {
        return Err(cannot(format, "its file holds no fp8 recipe"));
    }
    if !matches!(cfg.objective, crate::detailed::config::Objective::Sft) {
        return Err(cannot(
            format,
            "only supervised training is written (--objective sft)",
        ));
    }
    refuse_features(cfg, format)
}

/// The trainers' memory features (issue 34) that `format`'s file does not
/// write, refused unless at their default: torchtune writes its chunked
/// loss, the optimizer in backward and LoRA's dropout, and keeps the
/// adapters in the model's dtype (`torchtune/modules/peft/lora.py`); TRL
/// writes `use_liger_kernel` and PEFT's dropout, with fp32 adapters;
/// axolotl PEFT's dropout. Adapters on the output layer or the embedding
/// are not written.
fn refuse_features(cfg: &DetailedConfig, format: &str) -> Result<(), String> {
    let (torchtune, trl) = (format == "torchtune", format == "trl");
    let liger = cfg.liger && cfg.loss == Loss::Liger;
    let loss_ok = match cfg.loss {
        Loss::Full => !cfg.liger,
        Loss::Chunked => torchtune && !cfg.liger,
        Loss::Liger => trl && liger,
        Loss::Cce => false,
    };
    if !loss_ok {
        return Err(cannot(
            format,
            "its file here writes no such loss or kernels (torchtune: --loss chunked; trl: --impl liger)",
        ));
    }
    if cfg.compile && !(torchtune || trl || format == "axolotl" || format == "torchtitan") {
        return Err(cannot(format, "its file here writes no torch.compile"));
    }
    if cfg.async_tp && format != "torchtitan" {
        return Err(cannot(
            format,
            "its file here writes no async TP (torchtitan's compile.enable_async_tensor_parallel)",
        ));
    }
    if cfg.fp8_param && format != "megatron" {
        return Err(cannot(
            format,
            "only Megatron-LM's arguments write fp8 primary weights (--fp8-param-gather)",
        ));
    }
    if cfg.optimizer_in_backward && !torchtune {
        return Err(cannot(
            format,
            "only torchtune's file writes the optimizer in backward",
        ));
    }
    if cfg.lora_rank.is_some() {
        if cfg.lora_targets.lm_head() || cfg.lora_targets.embed() {
            return Err(cannot(
                format,
                "adapters on the output layer or embedding are not written",
            ));
        }
        let model_dtype = if cfg.precision == Precision::Bf16 {
            LoraDtype::Bf16
        } else {
            LoraDtype::Fp32
        };
        match (torchtune, cfg.lora_dtype) {
            (true, d) if d != model_dtype => {
                return Err(cannot(
                    format,
                    "torchtune keeps the adapters in the model's dtype",
                ))
            }
            // Megatron-LM's arguments write no LoRA at all: refused below.
            (false, LoraDtype::Bf16) if format != "megatron" => {
                return Err(cannot(format, "PEFT keeps the adapters in fp32"))
            }
            _ => {}
        }
        if cfg.lora_dropout > 0.0 && !(torchtune || trl || format == "axolotl") {
            return Err(cannot(format, "its file here writes no LoRA dropout"));
        }
    }
    Ok(())
}

/// Whether the micro-batch, accumulation and dp give the batch exactly.
fn accumulation(cfg: &DetailedConfig, format: &str) -> Result<u64, String> {
    if cfg.effective_batch() != cfg.batch {
        return Err(cannot(
            format,
            format!(
                "the batch {} is not micro-batch × accumulation × dp",
                cfg.batch
            ),
        ));
    }
    Ok(cfg.accumulation_steps())
}

/// transformers' `optim` names.
fn hf_optim(cfg: &DetailedConfig, format: &str) -> Result<&'static str, String> {
    Ok(match (cfg.optimizer, cfg_adam(cfg)) {
        (Optimizer::AdamW, Some(AdamImpl::Fused)) => "adamw_torch_fused",
        (Optimizer::AdamW, _) => "adamw_torch",
        (Optimizer::PagedAdamW, _) => "paged_adamw_32bit",
        (Optimizer::PagedAdam8bit, _) => "paged_adamw_8bit",
        (Optimizer::Adam8bit, _) => "adamw_bnb_8bit",
        (Optimizer::Sgd, _) => "sgd",
        (Optimizer::Adafactor, _) => "adafactor",
        (o, _) => {
            return Err(cannot(
                format,
                format!("no optimizer named for {}", o.name()),
            ))
        }
    })
}

/// AdamW's implementation is a step option, not part of `cfg`: the
/// emitters write the default.
fn cfg_adam(_cfg: &DetailedConfig) -> Option<AdamImpl> {
    None
}

/// LoRA's targets as module names (`q_proj`, …).
fn modules(t: LoraTargets, names: [&str; 7]) -> Vec<String> {
    let bits = [
        LoraTargets::Q,
        LoraTargets::K,
        LoraTargets::V,
        LoraTargets::O,
        LoraTargets::GATE,
        LoraTargets::UP,
        LoraTargets::DOWN,
    ];
    bits.iter()
        .zip(names)
        .filter(|(b, _)| t.0 & **b != 0)
        .map(|(_, n)| n.to_string())
        .collect()
}

const HF_MODULES: [&str; 7] = [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
];

fn yaml_list(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

/// A DeepSpeed config: batch, ZeRO, offload, precision and optimizer (the
/// model, sequence and checkpointing are the training script's).
fn deepspeed(cfg: &DetailedConfig) -> Result<String, String> {
    let f = "deepspeed";
    refuse_unsaid(cfg, f, true)?;
    let Framework::DeepSpeed {
        reduce_bucket_size,
        prefetch_bucket_size,
        overlap_comm,
        sub_group_size,
        param_persistence_threshold,
    } = cfg.framework
    else {
        return Err(cannot(
            f,
            "the framework must be deepspeed (--framework deepspeed)",
        ));
    };
    if cfg.lora_rank.is_some() || cfg.base_quant != BaseQuant::None {
        return Err(cannot(
            f,
            "LoRA and a quantized base belong to the training script, not the DeepSpeed config",
        ));
    }
    let accum = accumulation(cfg, f)?;
    let precision = match cfg.precision {
        Precision::Mixed => "\n  \"bf16\": {\"enabled\": true},",
        Precision::Fp32 => "",
        Precision::Bf16 => {
            return Err(cannot(
                f,
                "DeepSpeed keeps an fp32 master copy: pure bf16 is not written",
            ))
        }
    };
    let optimizer = match cfg.optimizer {
        Optimizer::AdamW => "AdamW",
        Optimizer::Lion => "Lion",
        o => {
            return Err(cannot(
                f,
                format!(
                    "DeepSpeed's optimizer block names AdamW or Lion, not {}",
                    o.name()
                ),
            ))
        }
    };
    let z = cfg.parallel.zero;
    let mut zero = format!("    \"stage\": {z},\n    \"reduce_bucket_size\": {reduce_bucket_size}");
    if z == 3 {
        zero += &format!(",\n    \"stage3_prefetch_bucket_size\": {prefetch_bucket_size},\n    \"sub_group_size\": {sub_group_size},\n    \"stage3_param_persistence_threshold\": {param_persistence_threshold}");
    }
    if let Some(on) = overlap_comm {
        zero += &format!(",\n    \"overlap_comm\": {on}");
    }
    if cfg.offload.optimizer {
        zero += ",\n    \"offload_optimizer\": {\"device\": \"cpu\"}";
    }
    if cfg.offload.params {
        zero += ",\n    \"offload_param\": {\"device\": \"cpu\"}";
    }
    Ok(format!(
        "{{\n  \"train_micro_batch_size_per_gpu\": {},\n  \"gradient_accumulation_steps\": {accum},{precision}\n  \"optimizer\": {{\"type\": \"{optimizer}\"}},\n  \"zero_optimization\": {{\n{zero}\n  }}\n}}\n",
        cfg.micro()
    ))
}

/// torchtune's builder for a preset (`torchtune.models.llama3_1.lora_llama3_1_8b`).
fn torchtune_builder(name: &str, prefix: &str) -> Option<String> {
    let (family, size) = name.rsplit_once('-')?;
    let module = match family {
        "llama-2" => "llama2",
        "llama-3.1" => "llama3_1",
        "llama-3.2" => "llama3_2",
        "qwen2.5" => "qwen2_5",
        "qwen3" => "qwen3",
        "mistral" => "mistral",
        _ => return None,
    };
    let size = size.replace('.', "_");
    let component = format!("torchtune.models.{module}.{prefix}{module}_{size}");
    (models::torchtune(&component) == Some(name)).then_some(component)
}

/// A torchtune recipe.
fn torchtune(cfg: &DetailedConfig) -> Result<String, String> {
    let f = "torchtune";
    refuse_unsaid(cfg, f, true)?;
    let name = preset(cfg, f)?;
    let distributed = match cfg.framework {
        Framework::Fsdp2 {
            reshard_after_forward,
        } if cfg.parallel.zero == 3 => Some(reshard_after_forward),
        _ if cfg.parallel.dp == 1 && cfg.parallel.zero == 0 => None,
        _ => {
            return Err(cannot(
                f,
                "torchtune runs on one GPU or shards with FSDP2 (--framework fsdp2 --zero 3)",
            ))
        }
    };
    let prefix =
        match (cfg.lora_rank, cfg.base_quant) {
            (None, BaseQuant::None) => "",
            (Some(_), BaseQuant::None) => "lora_",
            (Some(_), BaseQuant::Nf4 { double_quant: true })
                if cfg.quant_path == QuantPath::Torchao =>
            {
                "qlora_"
            }
            (Some(_), BaseQuant::Nf4 { double_quant: true }) => return Err(cannot(
                f,
                "torchtune's QLoRA holds its base as torchao's NF4Tensor (--quant-path torchao)",
            )),
            _ => {
                return Err(cannot(
                    f,
                    "torchtune's quantized base is NF4 (--quant-base nf4)",
                ))
            }
        };
    let component = torchtune_builder(name, prefix)
        .ok_or_else(|| cannot(f, format!("no torchtune builder for {name}")))?;
    let dtype = match cfg.precision {
        Precision::Bf16 => "bf16",
        Precision::Fp32 => "fp32",
        Precision::Mixed => {
            return Err(cannot(
                f,
                "torchtune trains in pure bf16 or fp32 (--precision bf16|fp32)",
            ))
        }
    };
    let optimizer = match cfg.optimizer {
        Optimizer::AdamW => "torch.optim.AdamW",
        Optimizer::PagedAdamW => "bitsandbytes.optim.PagedAdamW",
        Optimizer::PagedAdam8bit => "bitsandbytes.optim.PagedAdamW8bit",
        Optimizer::Adam8bit => "bitsandbytes.optim.AdamW8bit",
        o => {
            return Err(cannot(
                f,
                format!("no torchtune optimizer written for {}", o.name()),
            ))
        }
    };
    let recipe = match (cfg.lora_rank.is_some(), distributed.is_some()) {
        (true, true) => "lora_finetune_distributed",
        (true, false) => "lora_finetune_single_device",
        (false, true) => "full_finetune_distributed",
        (false, false) => "full_finetune_single_device",
    };
    let mut out = format!("# Written by membudget --emit torchtune. Run: tune run {recipe} --config THIS_FILE\nmodel:\n  _component_: {component}\n");
    out += &torchtune_lora(cfg, f)?;
    out += &format!(
        "tokenizer:\n  max_seq_len: {}\nbatch_size: {}\ngradient_accumulation_steps: {}\n",
        cfg.seq,
        cfg.micro(),
        accumulation(cfg, f)?
    );
    out += &format!("optimizer:\n  _component_: {optimizer}\ndtype: {dtype}\n");
    out += &format!(
        "enable_activation_checkpointing: {}\n",
        recompute_on(cfg, f)?
    );
    out += &format!(
        "enable_activation_offloading: {}\n",
        offloaded_by(cfg, f, ActOffload::Torchtune)?
    );
    if let Some(r) = distributed {
        out += &format!("fsdp_reshard_after_forward: {r}\n");
    }
    if cfg.optimizer_in_backward {
        out += "optimizer_in_bwd: true\n";
    }
    if cfg.compile {
        out += "compile: true\n";
    }
    if cfg.loss == Loss::Chunked {
        out += &format!(
            "loss:\n  _component_: torchtune.modules.loss.CEWithChunkedOutputLoss\n  num_output_chunks: {}\n",
            cfg.loss_chunks
        );
    }
    Ok(out)
}

fn torchtune_lora(cfg: &DetailedConfig, f: &str) -> Result<String, String> {
    let Some(r) = cfg.lora_rank else {
        return Ok(String::new());
    };
    let t = cfg.lora_targets;
    let mlp = t.0 & (LoraTargets::GATE | LoraTargets::UP | LoraTargets::DOWN);
    if mlp != 0 && mlp != LoraTargets::GATE | LoraTargets::UP | LoraTargets::DOWN {
        return Err(cannot(
            f,
            "torchtune adapts the MLP's three projections together (apply_lora_to_mlp)",
        ));
    }
    let attn = modules(
        LoraTargets(t.0 & 15),
        ["q_proj", "k_proj", "v_proj", "output_proj", "", "", ""],
    );
    Ok(format!(
        "  lora_attn_modules: {}\n  apply_lora_to_mlp: {}\n  lora_rank: {r}\n  lora_dropout: {}\n",
        yaml_list(&attn),
        mlp != 0,
        cfg.lora_dropout
    ))
}

/// Whether activations are offloaded, by `way`, the only one `format`
/// writes; another way is refused.
fn offloaded_by(cfg: &DetailedConfig, format: &str, way: ActOffload) -> Result<bool, String> {
    match (cfg.offload.activations, cfg.offload.activations_by) {
        (false, _) => Ok(false),
        (true, by) if by == way => Ok(true),
        _ => Err(cannot(
            format,
            "its activation offloading is torchtune's OffloadActivations (--offload-activations torchtune)",
        )),
    }
}

/// Full recomputation or none: what the trainers' switches say.
fn recompute_on(cfg: &DetailedConfig, f: &str) -> Result<bool, String> {
    match cfg.recompute {
        Recompute::Full => Ok(true),
        Recompute::None => Ok(false),
        r => Err(cannot(
            f,
            format!(
                "its checkpointing switch is all or nothing, not {}",
                r.name()
            ),
        )),
    }
}

/// The Hugging Face hub checkpoint of each preset, as `transformers` (and so
/// TRL and axolotl) loads it by name, a line each (preset, space,
/// checkpoint: one string, which the page's wasm holds in fewer bytes than
/// a table of pairs); [`super::models::hub`] reads each back to its
/// preset. Presets with no such checkpoint are missing: Nemotron-4 (NVIDIA
/// published it for NeMo alone) and GPT-3 (never released).
const HUB: &str = "\
gpt2 openai-community/gpt2
gpt2-medium openai-community/gpt2-medium
gpt2-large openai-community/gpt2-large
gpt2-xl openai-community/gpt2-xl
llama-2-7b meta-llama/Llama-2-7b-hf
llama-2-13b meta-llama/Llama-2-13b-hf
llama-2-70b meta-llama/Llama-2-70b-hf
llama-3.1-8b meta-llama/Llama-3.1-8B
llama-3.1-70b meta-llama/Llama-3.1-70B
llama-3.1-405b meta-llama/Llama-3.1-405B
llama-3.2-1b meta-llama/Llama-3.2-1B
llama-3.2-3b meta-llama/Llama-3.2-3B
mistral-7b mistralai/Mistral-7B-v0.1
qwen2.5-0.5b Qwen/Qwen2.5-0.5B
qwen2.5-1.5b Qwen/Qwen2.5-1.5B
qwen2.5-3b Qwen/Qwen2.5-3B
qwen2.5-7b Qwen/Qwen2.5-7B
qwen2.5-14b Qwen/Qwen2.5-14B
qwen2.5-32b Qwen/Qwen2.5-32B
qwen2.5-72b Qwen/Qwen2.5-72B
qwen3-0.6b Qwen/Qwen3-0.6B
qwen3-1.7b Qwen/Qwen3-1.7B
qwen3-4b Qwen/Qwen3-4B
qwen3-8b Qwen/Qwen3-8B
qwen3-14b Qwen/Qwen3-14B
qwen3-32b Qwen/Qwen3-32B
tinyllama-1.1b TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T
mixtral-8x7b mistralai/Mixtral-8x7B-v0.1
mixtral-8x22b mistralai/Mixtral-8x22B-v0.1
qwen3-30b-a3b Qwen/Qwen3-30B-A3B
qwen3-235b-a22b Qwen/Qwen3-235B-A22B
glm-4.5-air zai-org/GLM-4.5-Air
gpt-oss-20b openai/gpt-oss-20b
gpt-oss-120b openai/gpt-oss-120b
llama-4-scout meta-llama/Llama-4-Scout-17B-16E
llama-4-maverick meta-llama/Llama-4-Maverick-17B-128E
deepseek-v3 deepseek-ai/DeepSeek-V3-Base
falcon-h1-7b tiiuae/Falcon-H1-7B-Base
falcon-h1-34b tiiuae/Falcon-H1-34B-Base";

/// The presets' hub checkpoints, [`HUB`]'s lines as (preset, checkpoint).
pub fn hub_checkpoints() -> impl Iterator<Item = (&'static str, &'static str)> {
    HUB.lines().filter_map(|l| l.split_once(' '))
}

/// The hub checkpoint `cfg`'s preset names, for `format`'s file (a
/// `transformers` loader), or why there is none.
fn hub(cfg: &DetailedConfig, format: &str) -> Result<&'static str, String> {
    let name = preset(cfg, format)?;
    hub_checkpoints()
        .find(|(p, _)| *p == name)
        .map(|(_, h)| h)
        .ok_or_else(|| {
            cannot(
                format,
                format!("{name} has no checkpoint that transformers loads (emit megatron)"),
            )
        })
}

/// A TRL config (SFTConfig and ModelConfig keys), as `trl sft --config` reads it.
fn trl(cfg: &DetailedConfig) -> Result<String, String> {
    let f = "trl";
    refuse_unsaid(cfg, f, true)?;
    if cfg.parallel.zero > 0
        || !matches!(cfg.framework, Framework::Megatron | Framework::Ddp { .. })
    {
        return Err(cannot(
            f,
            "ZeRO and FSDP live in the DeepSpeed or accelerate file: emit deepspeed for them",
        ));
    }
    let name = hub(cfg, f)?;
    let mut out = format!("# Written by membudget --emit trl. Run: trl sft --config THIS_FILE\nmodel_name_or_path: {name}\n");
    out += &format!(
        "per_device_train_batch_size: {}\ngradient_accumulation_steps: {}\nmax_length: {}\n",
        cfg.micro(),
        accumulation(cfg, f)?,
        cfg.seq
    );
    out += &format!(
        "gradient_checkpointing: {}\noptim: {}\n",
        recompute_on(cfg, f)?,
        hf_optim(cfg, f)?
    );
    out += match cfg.precision {
        Precision::Mixed => "bf16: true\n",
        Precision::Bf16 => "bf16: true\ndtype: bfloat16\n",
        Precision::Fp32 => "bf16: false\n",
    };
    if offloaded_by(cfg, f, ActOffload::Torchtune)? {
        out += "activation_offloading: true\n";
    }
    if cfg.liger {
        out += "use_liger_kernel: true\n";
    }
    if cfg.compile {
        out += "torch_compile: true\n";
    }
    if let Some(r) = cfg.lora_rank {
        out += &format!(
            "use_peft: true\nlora_r: {r}\nlora_target_modules: {}\nlora_dropout: {}\n",
            yaml_list(&modules(cfg.lora_targets, HF_MODULES)),
            cfg.lora_dropout
        );
    }
    peft_path(cfg, "TRL")?;
    out += match cfg.base_quant {
        BaseQuant::None => "",
        BaseQuant::Nf4 { double_quant: true } => "load_in_4bit: true\nuse_bnb_nested_quant: true\n",
        BaseQuant::Nf4 {
            double_quant: false,
        } => "load_in_4bit: true\n",
        BaseQuant::Int8 => "load_in_8bit: true\n",
    };
    Ok(out)
}

/// TRL and axolotl load a quantized base with transformers and prepare it
/// with PEFT's `prepare_model_for_kbit_training` (TRL's `SFTTrainer`
/// `_prepare_peft_model`, axolotl's model loader): the `peft` path only.
fn peft_path(cfg: &DetailedConfig, f: &str) -> Result<(), String> {
    if cfg.base_quant != BaseQuant::None && cfg.quant_path != QuantPath::Peft {
        return Err(cannot(
            f,
            format!("{f} prepares its quantized base with PEFT's prepare_model_for_kbit_training (--quant-path peft)"),
        ));
    }
    Ok(())
}

/// An axolotl YAML.
fn axolotl(cfg: &DetailedConfig) -> Result<String, String> {
    let f = "axolotl";
    refuse_unsaid(cfg, f, false)?;
    let p = &cfg.parallel;
    if p.pp > 1 || p.ep > 1 {
        return Err(cannot(
            f,
            "its file holds no pipeline or expert parallelism",
        ));
    }
    let name = hub(cfg, f)?;
    let mut out = format!(
        "# Written by membudget --emit axolotl. Run: axolotl train THIS_FILE\nbase_model: {name}\n"
    );
    out += &format!(
        "micro_batch_size: {}\ngradient_accumulation_steps: {}\nsequence_len: {}\n",
        cfg.micro(),
        accumulation(cfg, f)?,
        cfg.seq
    );
    let on = recompute_on(cfg, f)?;
    out += &match (cfg.offload.activations, cfg.offload.activations_by) {
        (false, _) => format!("gradient_checkpointing: {on}\n"),
        (true, ActOffload::Checkpoints) => "gradient_checkpointing: offload\n".to_string(),
        (true, ActOffload::Torchtune) => {
            format!("gradient_checkpointing: {on}\nactivation_offloading: true\n")
        }
        (true, ActOffload::SaveOnCpu) => {
            return Err(cannot(
                f,
                "axolotl offloads checkpoints (--offload-activations checkpoints) or as torchtune does (torchtune)",
            ))
        }
    };
    out += &format!("optimizer: {}\n", hf_optim(cfg, f)?);
    if cfg.compile {
        out += "torch_compile: true\n";
    }
    out +=
        match cfg.precision {
            Precision::Bf16 => "bf16: true\n",
            Precision::Fp32 => "bf16: false\n",
            Precision::Mixed => return Err(cannot(
                f,
                "axolotl loads the weights in bf16 or fp32 (--precision bf16|fp32), no fp32 master",
            )),
        };
    if let Some(r) = cfg.lora_rank {
        let adapter = if cfg.base_quant == BaseQuant::None {
            "lora"
        } else {
            "qlora"
        };
        out += &format!(
            "adapter: {adapter}\nlora_r: {r}\nlora_target_modules: {}\nlora_dropout: {}\n",
            yaml_list(&modules(cfg.lora_targets, HF_MODULES)),
            cfg.lora_dropout
        );
    }
    peft_path(cfg, f)?;
    out += match cfg.base_quant {
        BaseQuant::None => "",
        BaseQuant::Nf4 { double_quant: true } => "load_in_4bit: true\n",
        BaseQuant::Int8 => "load_in_8bit: true\n",
        BaseQuant::Nf4 {
            double_quant: false,
        } => {
            return Err(cannot(
                f,
                "axolotl's 4-bit base is double-quantized (--quant-base nf4)",
            ))
        }
    };
    out += &axolotl_parallel(cfg, f)?;
    Ok(out)
}

fn axolotl_parallel(cfg: &DetailedConfig, f: &str) -> Result<String, String> {
    let p = &cfg.parallel;
    let mut out = String::new();
    if cfg.fp8 == Fp8::Tensorwise {
        out += "fp8: true\n";
    } else if cfg.fp8 != Fp8::None {
        return Err(cannot(f, "axolotl's fp8 is torchao's tensorwise recipe"));
    }
    match cfg.framework {
        Framework::Fsdp2 { reshard_after_forward } if p.zero == 3 => {
            out += &format!("fsdp_version: 2\nfsdp_config:\n  reshard_after_forward: {reshard_after_forward}\n");
        }
        _ if p.zero == 0 && matches!(cfg.framework, Framework::Megatron | Framework::Ddp { .. }) => {}
        _ => return Err(cannot(f, "ZeRO under DeepSpeed lives in its JSON (emit deepspeed); axolotl's own sharding is FSDP2 (--framework fsdp2 --zero 3)")),
    }
    if p.cp > 1 {
        out += &format!("context_parallel_size: {}\n", p.cp);
    }
    if p.tp > 1 {
        out += &format!("tensor_parallel_size: {}\n", p.tp);
    }
    if let Some(n) = p.dp_shard {
        out += &format!("dp_shard_size: {n}\n");
    }
    Ok(out)
}

/// A torchtitan TOML (the 2025 `[parallelism]` layout).
fn torchtitan(cfg: &DetailedConfig) -> Result<String, String> {
    let f = "torchtitan";
    refuse_unsaid(cfg, f, false)?;
    let name = preset(cfg, f)?;
    let flavor = name
        .strip_prefix("llama-3.1-")
        .map(str::to_ascii_uppercase)
        .ok_or_else(|| {
            cannot(
                f,
                "torchtitan's llama3 flavours are Llama 3.1 8B, 70B and 405B",
            )
        })?;
    if cfg.lora_rank.is_some() || cfg.base_quant != BaseQuant::None || cfg.offload.activations {
        return Err(cannot(
            f,
            "torchtitan trains the whole model, without offload",
        ));
    }
    let p = &cfg.parallel;
    let Framework::Fsdp2 {
        reshard_after_forward,
    } = cfg.framework
    else {
        return Err(cannot(
            f,
            "torchtitan shards with FSDP2 (--framework fsdp2 --zero 3)",
        ));
    };
    let tt_plan = matches!(p.plan(), TpPlan::Torchtitan | TpPlan::LossParallel);
    if p.zero != 3 || p.ep > 1 || p.vp > 1 || (p.tp > 1 && !(p.sp && tt_plan)) {
        return Err(cannot(f, "torchtitan runs FSDP2 (--zero 3), its tensor-parallel plan with sequence parallelism (--tp-plan loss-parallel|torchtitan --sp), no interleaving or experts here"));
    }
    let mp = match cfg.precision {
        Precision::Mixed => "bfloat16",
        Precision::Fp32 => "float32",
        Precision::Bf16 => {
            return Err(cannot(
                f,
                "torchtitan keeps fp32 shards under a bf16 policy (--precision mixed)",
            ))
        }
    };
    let ac = match cfg.recompute {
        Recompute::None => "mode = \"none\"",
        Recompute::Full => "mode = \"full\"",
        Recompute::SelectiveOp => "mode = \"selective\"\nselective_ac_option = \"op\"",
        Recompute::Selective => {
            return Err(cannot(
                f,
                "Megatron's selective recomputation is not torchtitan's",
            ))
        }
    };
    let shard = p.dp_shard.map_or("-1".to_string(), |n| n.to_string());
    let replicate = p.dp_shard.map_or(1, |n| p.dp / n.max(1));
    let (local, microbatch) = torchtitan_pipeline(cfg).map_err(|why| cannot(f, why))?;
    let mut out = format!("# Written by membudget --emit torchtitan.\n[model]\nname = \"llama3\"\nflavor = \"{flavor}\"\n\n");
    out += &format!("[training]\nlocal_batch_size = {local}\nglobal_batch_size = {}\nseq_len = {}\nmixed_precision_param = \"{mp}\"\n\n", cfg.batch, cfg.seq);
    out += &format!("[parallelism]\ndata_parallel_replicate_degree = {replicate}\ndata_parallel_shard_degree = {shard}\ntensor_parallel_degree = {}\npipeline_parallel_degree = {}\n{microbatch}context_parallel_degree = {}\nfsdp_reshard_after_forward = \"{}\"\ndisable_loss_parallel = {}\n\n", p.tp, p.pp, p.cp, if reshard_after_forward { "always" } else { "never" }, p.tp > 1 && p.plan() == TpPlan::Torchtitan);
    out += &format!("[activation_checkpoint]\n{ac}\n\n[optimizer]\nname = \"AdamW\"\n");
    out += &torchtitan_compile(cfg).map_err(|why| cannot(f, why))?;
    if cfg.optimizer != Optimizer::AdamW {
        return Err(cannot(f, "torchtitan's optimizer here is AdamW"));
    }
    match cfg.fp8 {
        Fp8::None => {}
        Fp8::Tensorwise => out += "\n[float8]\nenable_float8_linear = true\n",
        Fp8::Rowwise => {
            out += "\n[float8]\nenable_float8_linear = true\nrecipe_name = \"rowwise\"\n"
        }
        _ => {
            return Err(cannot(
                f,
                "torchtitan's float8 is torchao's tensorwise or rowwise",
            ))
        }
    }
    Ok(out)
}

/// torchtitan's `[compile]` section: `enable` with the components
/// (`--compile-scope`) and async TP, which it runs only under compile.
fn torchtitan_compile(cfg: &DetailedConfig) -> Result<String, &'static str> {
    let mut out = String::new();
    if cfg.async_tp && !cfg.compile {
        // torchtitan's async TP needs its compile (`CompileConfig.__post_init__`).
        return Err("torchtitan runs async TP under torch.compile only (CompileConfig.__post_init__): add --compile");
    }
    if cfg.compile {
        // torchtitan compiles block by block: the whole model in one graph
        // is not one of its `compile.components`.
        let components = match cfg.compile_scope {
            CompileScope::LayersLoss => "[\"model\", \"loss\"]",
            CompileScope::Layers => "[\"model\"]",
            CompileScope::Model => {
                return Err("torchtitan compiles each block, not the whole model in one graph: use --compile-scope layers-loss (its default) or layers")
            }
        };
        out += &format!("\n[compile]\nenable = true\ncomponents = {components}\n");
        if cfg.async_tp {
            out += "enable_async_tensor_parallel = true\n";
        }
    }
    Ok(out)
}

/// A Megatron-LM launch line (`torchrun … pretrain_gpt.py …`).
fn megatron(cfg: &DetailedConfig) -> Result<String, String> {
    let f = "megatron";
    refuse_unsaid(cfg, f, false)?;
    let a = &cfg.arch;
    if a.moe.is_some() || a.mla.is_some() || a.ssm.is_some() {
        return Err(cannot(
            f,
            "only dense models are written (no experts, latent attention or Mamba)",
        ));
    }
    let p = &cfg.parallel;
    if !matches!(cfg.framework, Framework::Megatron) || p.zero > 1 || p.ep > 1 {
        return Err(cannot(
            f,
            "Megatron runs its own framework with ZeRO 0 or 1 (the distributed optimizer)",
        ));
    }
    if cfg.lora_rank.is_some()
        || cfg.base_quant != BaseQuant::None
        || cfg.offload.optimizer
        || cfg.offload.params
        || (cfg.offload.activations && cfg.offload.activation_layers == 0)
    {
        return Err(cannot(
            f,
            "pretrain_gpt.py trains the whole model, without offload but its first layers' activations (--offload-layers)",
        ));
    }
    // What the reader builds from the shape flags must be this model.
    let shaped = match a.family {
        Family::Llama => crate::detailed::model::Architecture::llama(
            a.layers, a.hidden, a.heads, a.kv_heads, a.ffn, a.vocab,
        ),
        // The reader's gpt2 shape with what Megatron's flags say of it:
        // grouped queries, untied embeddings, rotary or learned positions.
        Family::Gpt2 => crate::detailed::model::Architecture {
            kv_heads: a.kv_heads,
            tied_embeddings: a.tied_embeddings,
            positions: a.positions,
            ..crate::detailed::model::Architecture::gpt2(a.layers, a.hidden, a.heads, a.vocab)
        },
    };
    if shaped != *a {
        return Err(cannot(f, "Megatron's shape flags written here do not say all of this model (tied embeddings, biases, norms): give the shape with --arch"));
    }
    let world = cfg.gpus();
    let (nproc, nodes) = if world <= 8 {
        (world, 1)
    } else if world.is_multiple_of(8) {
        (8, world / 8)
    } else {
        return Err(cannot(f, format!("{world} GPUs are not whole nodes of 8")));
    };
    let mut out = format!("# Written by membudget --emit megatron.\ntorchrun --nproc_per_node {nproc} --nnodes {nodes} pretrain_gpt.py \\\n");
    out += &format!("    --num-layers {} --hidden-size {} --num-attention-heads {} --ffn-hidden-size {} --vocab-size {} \\\n", a.layers, a.hidden, a.heads, a.ffn, a.vocab);
    out += &shape_flags(a, cfg.seq);
    out += &format!(
        "    --micro-batch-size {} --global-batch-size {} --seq-length {} \\\n",
        cfg.micro(),
        cfg.batch,
        cfg.seq
    );
    out += &format!("    --tensor-model-parallel-size {} --pipeline-model-parallel-size {} --context-parallel-size {}", p.tp, p.pp, p.cp);
    if p.vp > 1 {
        out += &format!(" --virtual-pipeline-model-parallel-size {}", p.vp);
    }
    out += &megatron_pipeline_split(cfg, f)?;
    out += &megatron_switches(cfg, f)?;
    Ok(out + "\n")
}

/// The shape's flags beyond its sizes, where not Megatron-LM's defaults
/// (LayerNorm, biases, learned positions, tied embeddings, as GPT-2):
/// a llama shape's SwiGLU, RMSNorm, no biases, grouped queries, rotary
/// positions and untied output layer, as NVIDIA's Llama 3 scripts write
/// them (`examples/llama/train_llama3_8b_h100_fp8.sh`); a gpt2 shape's
/// grouped queries, untied embeddings and rotary positions where it has
/// them; and the positions Megatron-LM requires (`validate_args` checks
/// `max_position_embeddings` beside the layers, hidden size and heads): a
/// learned table's rows, or under rotary positions the sequence.
fn shape_flags(a: &crate::detailed::model::Architecture, seq: u64) -> String {
    let llama = a.family == Family::Llama;
    let rows = a.learned_positions();
    let mut s = String::new();
    if llama {
        s += " --swiglu --normalization RMSNorm --disable-bias-linear";
    }
    if llama || a.kv_heads != a.heads {
        s += &format!(" --group-query-attention --num-query-groups {}", a.kv_heads);
    }
    if llama || !a.tied_embeddings {
        s += " --untie-embeddings-and-output-weights";
    }
    if rows.is_none() {
        s += " --position-embedding-type rope";
    }
    let rows = rows.unwrap_or(seq);
    format!("   {s} --max-position-embeddings {rows} \\\n")
}

/// An uneven pipeline split as Megatron-LM takes it: the first and last
/// stages' layers (`--decoder-first/last-pipeline-num-layers`), or, where
/// the interleaved schedule's chunks cannot divide them (Megatron-Core's
/// `get_num_layers_to_build` asserts each stage's layers divide by the
/// virtual stages), the same split as `--account-for-embedding-in-pipeline-split`
/// / `--account-for-loss-in-pipeline-split` build it: one layer fewer
/// than (L + e + l) / pp on the first / last stage.
fn megatron_pipeline_split(cfg: &DetailedConfig, f: &str) -> Result<String, String> {
    let p = &cfg.parallel;
    let Some(split) = p.stage_split(&cfg.arch) else {
        return Ok(String::new());
    };
    let given = [
        (p.first_stage_layers, "first", "embedding"),
        (p.last_stage_layers, "last", "loss"),
    ];
    let divides = given
        .iter()
        .all(|(n, ..)| n.is_none_or(|n| n.is_multiple_of(p.vp)));
    if divides {
        let flags = given.iter().filter_map(|(n, which, _)| {
            n.map(|n| format!(" --decoder-{which}-pipeline-num-layers {n}"))
        });
        return Ok(flags.collect());
    }
    let counted = given.iter().filter(|(n, ..)| n.is_some()).count() as u64;
    let per = (cfg.arch.layers + counted) / p.pp;
    let accounted = (cfg.arch.layers + counted).is_multiple_of(p.pp)
        && split.middle == per
        && given.iter().all(|(n, ..)| n.is_none_or(|n| n + 1 == per));
    if !accounted {
        return Err(cannot(f, "under the interleaved schedule Megatron-LM needs each stage's layers to divide by the virtual stages, or one fewer on the first and last stages (--account-for-embedding/loss-in-pipeline-split)"));
    }
    let flags = given
        .iter()
        .filter_map(|(n, _, part)| n.map(|_| format!(" --account-for-{part}-in-pipeline-split")));
    Ok(flags.collect())
}

fn megatron_switches(cfg: &DetailedConfig, f: &str) -> Result<String, String> {
    let mut out = String::new();
    if cfg.parallel.sp {
        out += " --sequence-parallel";
    }
    if cfg.parallel.zero == 1 {
        out += " --use-distributed-optimizer";
    }
    match cfg.precision {
        Precision::Mixed => out += " --bf16",
        Precision::Fp32 => {}
        Precision::Bf16 => {
            return Err(cannot(
                f,
                "Megatron keeps fp32 main weights: pure bf16 is not written",
            ))
        }
    }
    // Megatron's modules: core_attn is the selective recomputation.
    let modules = cfg.megatron_recompute_modules().names().join(" ");
    match cfg.recompute {
        Recompute::None if modules.is_empty() => {}
        Recompute::None => {
            out += &format!(" --recompute-granularity selective --recompute-modules {modules}")
        }
        // Megatron-Core needs a method and a count beside full
        // (`TransformerConfig.__post_init__`): every layer is uniform units
        // of one layer; the block method its first layers of each chunk.
        Recompute::Full => match cfg.block_layers() {
            0 => out +=
                " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
            n => {
                out += &format!(
                " --recompute-granularity full --recompute-method block --recompute-num-layers {n}"
            )
            }
        },
        Recompute::Selective if modules.is_empty() => out += " --recompute-granularity selective",
        Recompute::Selective => {
            out += &format!(
                " --recompute-granularity selective --recompute-modules core_attn {modules}"
            )
        }
        Recompute::SelectiveOp => {
            return Err(cannot(
                f,
                "torchtitan's per-operator policy is not Megatron's",
            ))
        }
    }
    if cfg.offload.activation_layers > 0 {
        out += &format!(
            " --cpu-offloading-num-layers {}",
            cfg.offload.activation_layers
        );
    }
    match cfg.fp8 {
        Fp8::None => {}
        Fp8::Te => out += " --fp8-format hybrid",
        _ => {
            return Err(cannot(
                f,
                "Megatron's fp8 is Transformer Engine's (--fp8 te)",
            ))
        }
    }
    // FP8 primary weights: `--fp8-param-gather` (`megatron/training/arguments.py`).
    if cfg.fp8_param {
        out += " --fp8-param-gather";
    }
    if cfg.transposes_per_use() {
        out += " --disable-parameter-transpose-cache";
    }
    match cfg.optimizer {
        Optimizer::AdamW => {}
        Optimizer::Sgd => out += " --optimizer sgd",
        o => {
            return Err(cannot(
                f,
                format!("Megatron's optimizers are Adam and SGD, not {}", o.name()),
            ))
        }
    }
    Ok(out + &megatron_overlaps(cfg, f)?)
}

/// Megatron-Core's overlaps as Megatron-LM's flags, which are off unless
/// given (`megatron/training/arguments.py` at d98e8a64): each written when
/// on and where Megatron-LM takes it, `--overlap-param-gather` with the
/// distributed optimizer and `--overlap-grad-reduce` (`validate_args`
/// asserts both), `--tp-comm-overlap` with `--sequence-parallel` at tp 2
/// or more (it asserts sequence parallelism, which it turns off at tp 1).
/// The expert all-to-all overlap needs experts, which this writer leaves
/// out.
/// `--from` reads an absent one as off where it applies
/// ([`super::megatron`]).
fn megatron_overlaps(cfg: &DetailedConfig, f: &str) -> Result<String, String> {
    let (o, p) = (cfg.overlap, &cfg.parallel);
    let mut out = String::new();
    if o.grad_reduce {
        out += " --overlap-grad-reduce";
    }
    if o.param_gather && p.zero == 1 {
        if !o.grad_reduce {
            return Err(cannot(f, "Megatron-LM takes --overlap-param-gather only with --overlap-grad-reduce: give --no-overlap-param-gather too"));
        }
        out += " --overlap-param-gather";
    }
    if o.tp_comm && p.sp && p.tp > 1 {
        out += " --tp-comm-overlap";
    }
    Ok(out)
}

/// torchtitan's local batch and, under pipeline parallelism, its
/// `pipeline_parallel_microbatch_size` line: the local batch is the
/// micro-batch times the accumulation steps, split into micro-batches of
/// that size (`torchtitan/distributed/pipeline_parallel.py`). The stages'
/// layers must be torchtitan's own split
/// ([`super::torchtitan::torchtitan_split`]), which its file does not write.
fn torchtitan_pipeline(cfg: &DetailedConfig) -> Result<(u64, String), &'static str> {
    let p = &cfg.parallel;
    if p.pp < 2 {
        return Ok((cfg.micro(), String::new()));
    }
    let counts = super::torchtitan::torchtitan_split(cfg.arch.layers, p.pp, p.vp);
    let (first, last) = (counts.first().copied(), counts.last().copied());
    let even = counts.iter().all(|&c| Some(c) == first);
    let given = (p.first_stage_layers, p.last_stage_layers);
    if counts.is_empty() || (even && given != (None, None)) || (!even && given != (first, last)) {
        return Err("torchtitan splits the layers over the stages itself (the embedding and the output each weigh a layer): give its split, or none where it is even");
    }
    let local = cfg.micro() * cfg.accumulation_steps();
    Ok((
        local,
        format!("pipeline_parallel_microbatch_size = {}\n", cfg.micro()),
    ))
}
