//! LLaMA-Factory's YAML (`llamafactory-cli train F`), and its "v1" format
//! (`model`, `micro_batch_size`, `kernel_config`, `dist_config`): the
//! arguments of `src/llamafactory/hparams/*.py` on top of transformers'
//! `Seq2SeqTrainingArguments`, at the snapshot docs/trainers.md names.

use super::common;
use super::pending::Pending;
use super::value::{finish, Doc, Out, ReadError, Value};

/// LLaMA-Factory's defaults for what a file leaves out.
pub const DEFAULTS: &[(&str, &str, &str)] = &[
    ("finetuning_type", "lora", "llamafactory 0.9.5 `hparams/finetuning_args.py:464`: `finetuning_type: Literal[\"lora\", \"oft\", \"freeze\", \"full\"] = field(default=\"lora\", …)`"),
    ("lora_rank", "8", "llamafactory 0.9.5 `hparams/finetuning_args.py:77`: `lora_rank: int = field(default=8, …)`"),
    ("lora_target", "all", "llamafactory 0.9.5 `hparams/finetuning_args.py:81`: `lora_target: str = field(default=\"all\", …)`"),
    ("cutoff_len", "2048", "llamafactory 0.9.5 `hparams/data_args.py:46`: `cutoff_len: int = field(default=2048, …)`"),
    ("disable_gradient_checkpointing", "false (checkpointing on)", "llamafactory 0.9.5 `hparams/model_args.py:145`: `disable_gradient_checkpointing: bool = field(default=False, …)`"),
    ("double_quantization", "true", "llamafactory 0.9.5 `hparams/model_args.py:291`: `double_quantization: bool = field(default=True, …)`"),
    ("per_device_train_batch_size", "8", "transformers 5.25.0 `training_args.py:777`: `per_device_train_batch_size: int = field(default=8, …)`"),
    ("bf16", "trainable weights in fp32", "llamafactory 0.9.5 `model/adapter.py:51`: `if cast_trainable_params_to_fp32:` (true unless `pure_bf16`)"),
];

/// Keys read and not priced, with the reason (`*` matches the rest of a key).
pub const IGNORED: &[(&str, &str)] = &[
    ("lora_alpha", "a scale: no memory"),
    (
        "packing",
        "packed rows of cutoff_len tokens: --seq prices them",
    ),
    (
        "neat_packing",
        "packed rows of cutoff_len tokens: --seq prices them",
    ),
    (
        "use_reentrant_gc",
        "reentrant or not: the same tensors kept at the layers' boundaries",
    ),
    ("upcast_layernorm", "norm weights in fp32: small"),
    (
        "upcast_lmhead_output",
        "the logits in fp32: not priced apart",
    ),
    (
        "deepspeed",
        "another file: give the DeepSpeed JSON with a second --from",
    ),
    (
        "per_device_eval_batch_size",
        "evaluation, not the training step",
    ),
    ("quantization_method", "bnb is priced; hqq and eetq are not"),
    ("use_galore", "GaLore is not priced"),
    ("use_badam", "BAdam is not priced"),
    ("use_apollo", "APOLLO is not priced"),
    ("dist_config.*", "a distributed setting besides its name"),
    ("kernel_config.*", "a kernel setting besides its name"),
    ("model_class", "llm: the text model"),
    ("template", "no memory"),
    ("dataset", "the data: no memory"),
    ("trust_remote_code", "no memory"),
    ("stage", "sft and pt train the same step"),
];

/// Reads a LLaMA-Factory YAML.
pub fn read(root: &Value) -> Result<Out, ReadError> {
    let mut doc = Doc::new(root);
    let mut out = Out::default();
    common::transformers(&mut out);
    if let Some((k, m)) = common::first_text(&mut doc, &["model_name_or_path", "model"])? {
        common::hub_model(&mut out, &k, &m);
    }
    let v1 = doc.has("micro_batch_size");
    read_batch(&mut doc, &mut out, v1)?;
    read_method(&mut doc, &mut out, v1)?;
    read_memory(&mut doc, &mut out, v1)?;
    if let Some(s) = doc.peek("stage").and_then(Value::text) {
        if s == "dpo" {
            doc.take("stage");
            out.set("stage", "dpo", "--objective", "dpo");
        } else if !matches!(s.as_str(), "sft" | "pt") {
            doc.take("stage");
            out.ignore(
                "stage",
                &s,
                "this stage is not priced (sft, pt and dpo are)",
            );
        }
    }
    finish(&mut doc, &mut out, "LLaMA-Factory", IGNORED);
    Ok(out)
}

fn read_batch(doc: &mut Doc, out: &mut Out, v1: bool) -> Result<(), ReadError> {
    let key = if v1 {
        "micro_batch_size"
    } else {
        "per_device_train_batch_size"
    };
    match doc.uint(key)? {
        Some(n) => out.set(key, n, "--micro-batch", n),
        None if !v1 => out.trainer_default(key, "8", "--micro-batch", "8", DEFAULTS[6].2),
        None => {}
    }
    if let Some(n) = doc.uint("gradient_accumulation_steps")? {
        out.set("gradient_accumulation_steps", n, "--grad-accum", n);
    }
    match doc.uint("cutoff_len")? {
        Some(n) => out.set("cutoff_len", n, "--seq", n),
        None => out.trainer_default("cutoff_len", "2048", "--seq", "2048", DEFAULTS[3].2),
    }
    Ok(())
}

fn read_method(doc: &mut Doc, out: &mut Out, v1: bool) -> Result<(), ReadError> {
    let kind = doc.text("finetuning_type")?;
    let lora = match kind.as_deref() {
        Some("lora") => true,
        None => !v1,
        Some("full") => false,
        Some(k) => {
            out.ignore(
                "finetuning_type",
                k,
                "freeze and OFT tuning are not priced (full and LoRA are)",
            );
            false
        }
    };
    if lora {
        match doc.uint("lora_rank")? {
            Some(r) => out.set("lora_rank", r, "--lora-rank", r),
            None => out.trainer_default("lora_rank", "8", "--lora-rank", "8", DEFAULTS[1].2),
        }
        match doc.take("lora_target") {
            Some(v) => common::lora_targets(out, "lora_target", &v.items()),
            None => {
                out.trainer_default("lora_target", "all", "--lora-targets", "all", DEFAULTS[2].2)
            }
        }
        if let Some(v) = doc.take("lora_dropout") {
            out.pending("lora_dropout", &v, Pending::LoraDropout, &v);
        }
    }
    let dq = doc.flag("double_quantization")?.unwrap_or(true);
    match doc.uint("quantization_bit")? {
        Some(4) => out.set(
            "quantization_bit",
            4,
            "--quant-base",
            if dq { "nf4" } else { "nf4-nodq" },
        ),
        Some(8) => out.set("quantization_bit", 8, "--quant-base", "int8"),
        Some(b) => out.ignore(
            "quantization_bit",
            b,
            "only bitsandbytes' 4 and 8 bits are priced",
        ),
        None => {}
    }
    if let Some(q) = doc.take("quant_config") {
        if q != Value::Null {
            out.ignore(
                "quant_config",
                q,
                "the v1 quantization config is not read yet",
            );
        }
    }
    Ok(())
}

fn read_memory(doc: &mut Doc, out: &mut Out, v1: bool) -> Result<(), ReadError> {
    let key = "disable_gradient_checkpointing";
    match doc.flag(key)? {
        Some(true) => out.set(key, true, "--recompute", "none"),
        Some(false) => out.set(key, false, "--recompute", "full"),
        None if !v1 => out.trainer_default(key, "false", "--recompute", "full", DEFAULTS[4].2),
        None => {}
    }
    if let Some(true) = doc.flag("use_unsloth_gc")? {
        out.set(
            "use_unsloth_gc",
            true,
            "--offload-activations",
            "checkpoints",
        );
    }
    let pure = doc.flag("pure_bf16")? == Some(true);
    if pure {
        out.set("pure_bf16", true, "--precision", "bf16");
    }
    for key in ["bf16", "fp16"] {
        if let Some(b) = doc.flag(key)? {
            if b && !pure {
                // Trainable weights cast to fp32 unless pure_bf16 (DEFAULTS[7]).
                out.set(key, b, "--precision", "mixed");
            } else if !b {
                out.ignore(key, b, "off");
            }
        }
    }
    if let Some(o) = doc.text("optim")? {
        common::optimizer(out, "optim", &o);
    }
    if let Some(f) = doc.text("flash_attn")? {
        let a = if f == "disabled" { "eager" } else { "flash" };
        out.set("flash_attn", &f, "--attention", a);
    }
    let liger = doc.flag("enable_liger_kernel")? == Some(true)
        || doc
            .text("kernel_config.name")?
            .is_some_and(|n| n.contains("liger"));
    if liger {
        out.pending("enable_liger_kernel", true, Pending::ImplLiger, "liger");
        out.pending("enable_liger_kernel", true, Pending::Loss, "liger");
    }
    if let Some(n) = doc.text("dist_config.name")? {
        if n == "fsdp2" {
            out.set("dist_config.name", &n, "--framework", "fsdp2");
            out.set("dist_config.name", &n, "--zero", "3");
        } else {
            out.ignore(
                "dist_config.name",
                n,
                "a distributed backend not priced from this key",
            );
        }
    }
    Ok(())
}
