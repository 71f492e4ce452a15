//! `--trainer NAME`: what a trainer runs when its file says nothing — its
//! kernels, loss, checkpointing, adapters' dtype and dropout, sharding —
//! as flags placed before any `--from` file and the user's own flags,
//! which override them. Each default cites the trainer's code (the same
//! sources as the readers' tables, [docs/trainers.md]).

use super::value::Out;
use super::{hf, litgpt, torchtune, Format, Reading};

/// The trainers `--trainer` names.
pub const TRAINERS: [&str; 9] = [
    "hf",
    "trl",
    "torchtune",
    "torchtitan",
    "axolotl",
    "unsloth",
    "litgpt",
    "megatron",
    "deepspeed",
];

/// A trainer by its name, one of [`TRAINERS`] (the address's `trainer=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trainer(pub &'static str);

impl std::str::FromStr for Trainer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        TRAINERS
            .iter()
            .find(|t| **t == s)
            .map(|t| Trainer(t))
            .ok_or_else(|| "trainer must be one of --trainer's names".into())
    }
}

/// When a default applies.
#[derive(Clone, Copy, PartialEq)]
enum When {
    Always,
    /// With LoRA.
    Lora,
    /// With LoRA in bf16.
    LoraBf16,
}

/// Stock modules: what a Hugging Face model runs in these trainers.
const HF_MODULES: &str =
    "the trainer runs the model's transformers modules (stock kernels, the full loss)";
const TORCHTUNE_RECIPES: &str = "torchtune 0.6.1 `recipes/configs/llama3_1/8B_full_single_device.yaml` and its kin: `dtype: bf16`, `loss: _component_: torchtune.modules.loss.CEWithChunkedOutputLoss`";
/// torchtitan's Llama is eager PyTorch modules (`torchtitan/models/llama3/model/model.py`, later
/// `models/common/`:
/// `nn.RMSNorm`, complex rotary products, SDPA, `F.silu(w1(x)) * w3(x)`), not
/// fused kernels: the "hf" profile, as its published rows are priced.
const TORCHTITAN_MODULES: &str = "torchtitan 0.3.0 `torchtitan/models/llama3/model/model.py` (at b5bcd76c `models/common/decoder.py`, `feed_forward.py`): eager PyTorch modules (nn.RMSNorm, rotary as complex products, SDPA, SwiGLU as F.silu(w1(x)) * w3(x)), no fused kernels";
const TORCHTITAN_TP: &str = "torchtitan 0.3.0 `torchtitan/models/llama3/infra/parallelize.py`, `apply_tp`: DTensor's plan with sequence parallelism over the layers, the embedding and output layer split over the vocabulary, the loss parallel unless `disable_loss_parallel` (`parallelism.disable_loss_parallel = False`)";
const TORCHTITAN: &str = "torchtitan 0.3.0 `torchtitan/config/job_config.py`: `Parallelism.data_parallel_shard_degree = -1` (FSDP2 over every GPU, `fully_shard` in `parallelize_llama`), `Training.mixed_precision_param = \"bfloat16\"`, `mixed_precision_reduce = \"float32\"`";
/// What `--compile` wraps in torchtitan: each layer, and the loss apart.
const TORCHTITAN_COMPILE: &str = "torchtitan 0.3.0 `torchtitan/config/job_config.py`, `Compile.components = [\"model\", \"loss\"]`: `apply_compile` compiles each `TransformerBlock`, `build_cross_entropy_loss` the loss function apart (the output layer eager between them)";
const UNSLOTH: &str = "unsloth `unsloth-cli.py`: `--use_gradient_checkpointing` default `\"unsloth\"`: every layer checkpointed, its input offloaded to the host";
const MEGATRON: &str = "Megatron-LM: fused kernels (`--use-flash-attn`, fused RMSNorm/SwiGLU, the fused cross-entropy)";
const DEEPSPEED: &str =
    "DeepSpeed: the engine runs data parallelism with ZeRO (`deepspeed.initialize`)";

/// Each trainer's defaults: (trainer, when, flag, value, source); the
/// sources in the page's wasm are empty ([`cite`]).
const TABLE: [(&str, When, &str, &str, &str); 23] = [
    ("hf", When::Always, "--impl", "hf", cite(HF_MODULES)),
    ("trl", When::Always, "--impl", "hf", cite(HF_MODULES)),
    (
        "trl",
        When::Always,
        "--recompute",
        "full",
        cite(hf::DEFAULTS[1].2),
    ),
    (
        "trl",
        When::Lora,
        "--lora-dropout",
        "0.05",
        cite(hf::DEFAULTS[12].2),
    ),
    (
        "torchtune",
        When::Always,
        "--impl",
        "hf",
        cite(TORCHTUNE_RECIPES),
    ),
    (
        "torchtune",
        When::Always,
        "--precision",
        "bf16",
        cite(TORCHTUNE_RECIPES),
    ),
    (
        "torchtune",
        When::Always,
        "--loss",
        "chunked",
        cite(TORCHTUNE_RECIPES),
    ),
    (
        "torchtune",
        When::LoraBf16,
        "--lora-dtype",
        "bf16",
        cite(torchtune::DEFAULTS[10].2),
    ),
    (
        "torchtitan",
        When::Always,
        "--framework",
        "fsdp2",
        cite(TORCHTITAN),
    ),
    ("torchtitan", When::Always, "--zero", "3", cite(TORCHTITAN)),
    (
        "torchtitan",
        When::Always,
        "--compile-scope",
        "layers-loss",
        cite(TORCHTITAN_COMPILE),
    ),
    (
        "torchtitan",
        When::Always,
        "--impl",
        "hf",
        cite(TORCHTITAN_MODULES),
    ),
    (
        "torchtitan",
        When::Always,
        "--tp-plan",
        "loss-parallel",
        cite(TORCHTITAN_TP),
    ),
    (
        "torchtitan",
        When::Always,
        "--precision",
        "mixed",
        cite(TORCHTITAN),
    ),
    ("axolotl", When::Always, "--impl", "hf", cite(HF_MODULES)),
    ("unsloth", When::Always, "--impl", "hf", cite(HF_MODULES)),
    (
        "unsloth",
        When::Always,
        "--recompute",
        "full",
        cite(UNSLOTH),
    ),
    (
        "unsloth",
        When::Always,
        "--offload-activations",
        "checkpoints",
        cite(UNSLOTH),
    ),
    (
        "litgpt",
        When::Always,
        "--impl",
        "hf",
        cite(litgpt::DEFAULTS[6].2),
    ),
    (
        "litgpt",
        When::Always,
        "--precision",
        "mixed",
        cite(litgpt::DEFAULTS[0].2),
    ),
    (
        "litgpt",
        When::Lora,
        "--lora-dropout",
        "0.05",
        cite(litgpt::DEFAULTS[5].2),
    ),
    ("megatron", When::Always, "--impl", "fused", cite(MEGATRON)),
    (
        "deepspeed",
        When::Always,
        "--framework",
        "deepspeed",
        cite(DEEPSPEED),
    ),
];

/// A default's source: the command line and its JSON name it
/// (`from.default_from`); the page never shows it, so its wasm holds none
/// (1.1 KB of citations, gzip, measured).
const fn cite(source: &'static str) -> &'static str {
    if cfg!(target_arch = "wasm32") {
        ""
    } else {
        source
    }
}

/// `trainer`'s defaults as a reading, for a run with LoRA or not whose
/// precision ends up bf16 or not; `None` for a name not in [`TRAINERS`].
pub fn defaults(trainer: &str, lora: bool, bf16: bool) -> Option<Reading> {
    if !TRAINERS.contains(&trainer) {
        return None;
    }
    let mut out = Out::default();
    for (name, when, flag, arg, source) in TABLE {
        let applies = match when {
            When::Always => true,
            When::Lora => lora,
            When::LoraBf16 => lora && bf16,
        };
        if name == trainer && applies {
            out.trainer_default(&format!("({trainer})"), arg, flag, arg, source);
        }
    }
    Some(Reading {
        format: Format::TrainerDefaults,
        out,
    })
}

/// How `trainer` holds a 4-bit base, with its source: applied by
/// `--trainer` when a quantized base is asked for (`--quant-base`).
/// torchtune's QLoRA builders quantize with torchao (`LoRALinear(
/// quantize_base=True)`: `to_nf4`), litgpt with Lightning's
/// `BitsandbytesPrecision` (no `prepare_model_for_kbit_training`); the
/// Hugging Face trainers run PEFT's path, the default.
pub fn quant_path(trainer: &str) -> Option<(&'static str, &'static str)> {
    match trainer {
        "torchtune" => Some(("torchao", "torchtune 0.6.1 `modules/peft/lora.py`: `to_nf4(linear.weight)` when `quantize_base`")),
        "litgpt" => Some(("bnb", "litgpt `finetune/lora.py`: `BitsandbytesPrecision(mode, dtype)` (`lightning/fabric/plugins/precision/bitsandbytes.py`)")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every trainer has a default; torchtune's adapters follow bf16 only
    /// with LoRA; an unknown name has none.
    #[test]
    fn each_trainer_has_its_defaults() {
        for t in TRAINERS {
            assert!(
                !defaults(t, false, false).unwrap().out.set.is_empty(),
                "{t}"
            );
        }
        let flags = |lora, bf16| -> Vec<String> {
            defaults("torchtune", lora, bf16).unwrap().flags().collect()
        };
        assert!(!flags(false, true).contains(&"--lora-dtype".to_string()));
        assert!(flags(true, true).contains(&"--lora-dtype".to_string()));
        assert!(!flags(true, false).contains(&"--lora-dtype".to_string()));
        assert!(defaults("nemo", false, false).is_none());
    }
}
