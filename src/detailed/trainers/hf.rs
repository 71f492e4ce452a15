//! TRL's configs and Hugging Face `TrainingArguments` (a YAML or JSON of the
//! arguments, TRL's `--config`, or a TRL script's flags), with TRL's
//! `ModelConfig` (LoRA, quantization) and `ScriptArguments`.
//!
//! Defaults: transformers `training_args.py` and TRL `trl/trainer/*_config.py`
//! at the snapshot docs/trainers.md names; see [`DEFAULTS`].

use super::common;
use super::pending::Pending;
use super::value::{finish, Doc, Out, ReadError, Value};

/// Which TRL trainer reads the arguments (its config's defaults differ).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `TrainingArguments` alone (transformers' `Trainer`).
    Plain,
    /// TRL's `SFTConfig`.
    Sft,
    /// TRL's `DPOConfig`.
    Dpo,
    /// TRL's `GRPOConfig`.
    Grpo,
}

/// The defaults applied where the file is silent: (key, value, source).
pub const DEFAULTS: &[(&str, &str, &str)] = &[
    ("per_device_train_batch_size", "8", "transformers 5.25.0 `training_args.py:777`: `per_device_train_batch_size: int = field(default=8, …)`"),
    ("gradient_checkpointing", "true (TRL) / off (transformers)", "trl 1.16.0 `trl/trainer/base_config.py:62`: `gradient_checkpointing: bool = field(default=True, …)` (SFT, DPO, GRPO); transformers 5.25.0 `training_args.py:908`: `activation_checkpointing: bool | None = field(default=None, …)` (`gradient_checkpointing` its alias, line 926)"),
    ("bf16", "true unless fp16 (TRL) / false (transformers)", "trl 1.16.0 `trl/trainer/base_config.py:108`: `self.bf16 = not (self.fp16) if self.bf16 is None else self.bf16`"),
    ("max_length", "1024", "trl 1.16.0 `trl/trainer/sft_config.py:202`: `max_length: int | None = field(default=1024, …)`"),
    ("max_prompt_length", "none (prompts untruncated)", "trl 1.16.0 `trl/trainer/grpo_config.py`: no such field (older GRPOConfig: 512)"),
    ("max_completion_length", "512", "trl 1.16.0 `trl/trainer/grpo_config.py:494`: `max_completion_length: int | None = field(default=512, …)`"),
    ("num_generations", "8", "trl 1.16.0 `trl/trainer/grpo_config.py:480`: `num_generations: int | None = field(default=8, …)`"),
    ("beta", "0.0 (GRPO: no reference model)", "trl 1.16.0 `trl/trainer/grpo_config.py:681`: `beta: float = field(default=0.0, …)`"),
    ("vllm_gpu_memory_utilization", "0.3", "trl 1.16.0 `trl/trainer/grpo_config.py:656`: `vllm_gpu_memory_utilization: float = field(default=0.3, …)`"),
    ("lora_r", "16", "trl 1.16.0 `trl/trainer/model_config.py:107`: `lora_r: int = field(default=16, …)`"),
    ("use_bnb_nested_quant", "false", "trl 1.16.0 `trl/trainer/model_config.py:164`: `use_bnb_nested_quant: bool = field(default=False, …)`"),
    ("vllm_mode", "colocate", "trl 1.16.0 `trl/trainer/grpo_config.py:594`: `vllm_mode: str = field(default=\"colocate\", …)`"),
    ("lora_dropout", "0.05", "trl 1.16.0 `trl/trainer/model_config.py:115`–`116`: `lora_dropout: float = field(default=0.05, …)`"),
];

/// Keys read and not priced, with the reason (`*` matches the rest of a key).
pub const IGNORED: &[(&str, &str)] = &[
    (
        "per_device_eval_batch_size",
        "evaluation, not the training step",
    ),
    ("eval_*", "evaluation, not the training step"),
    (
        "gradient_checkpointing_kwargs.*",
        "reentrant or not: the same tensors kept at the layers' boundaries",
    ),
    (
        "torch_compile_*",
        "compile's backend and mode: torch_compile prices it",
    ),
    ("lora_alpha", "a scale: no memory"),
    ("use_rslora", "a scale: no memory"),
    (
        "deepspeed",
        "another file: give the DeepSpeed JSON with a second --from",
    ),
    (
        "fsdp_config.*",
        "FSDP options besides the version are not priced",
    ),
    ("tf32", "a matmul mode: no memory"),
    ("bnb_4bit_quant_type", "nf4 and fp4 store the same bytes"),
    (
        "bnb_4bit_compute_dtype",
        "the dequantized compute dtype: not priced apart",
    ),
    ("vllm_*", "a vLLM engine setting besides its memory share"),
    (
        "generation_batch_size",
        "the rollout's batch: generation is priced per completion",
    ),
    ("steps_per_generation", "the rollout's reuse: no memory"),
    (
        "use_reentrant",
        "reentrant or not: the same tensors kept at the layers' boundaries",
    ),
    ("trust_remote_code", "no memory"),
    ("model_revision", "no memory"),
];

/// Reads a YAML or JSON of the arguments.
pub fn read(root: &Value) -> Result<Out, ReadError> {
    let mut doc = Doc::new(root);
    let kind = detect(&doc);
    read_doc(&mut doc, kind)
}

/// Which TRL config the keys belong to.
pub fn detect(doc: &Doc) -> Kind {
    let any = |keys: &[&str]| keys.iter().any(|k| doc.has(k));
    if any(&[
        "num_generations",
        "max_completion_length",
        "use_vllm",
        "reward_funcs",
    ]) {
        Kind::Grpo
    } else if any(&["precompute_ref_log_probs", "ref_model_init_kwargs"]) {
        Kind::Dpo
    } else if any(&[
        "max_length",
        "max_seq_length",
        "packing",
        "dataset_name",
        "use_peft",
        "dataset_text_field",
    ]) {
        Kind::Sft
    } else {
        Kind::Plain
    }
}

/// Reads the arguments as `kind`'s config does.
pub fn read_doc(doc: &mut Doc, kind: Kind) -> Result<Out, ReadError> {
    let mut out = Out::default();
    common::transformers(&mut out);
    if let Some((k, m)) = common::first_text(doc, &["model_name_or_path", "model_name", "model"])? {
        common::hub_model(&mut out, &k, &m);
    }
    read_batch(doc, &mut out, kind)?;
    read_memory(doc, &mut out, kind)?;
    read_precision(doc, &mut out, kind)?;
    read_lora(doc, &mut out)?;
    if kind == Kind::Grpo {
        read_grpo(doc, &mut out)?;
    }
    if kind == Kind::Dpo {
        let pre = doc.flag("precompute_ref_log_probs")?.unwrap_or(false);
        out.set(
            "(DPOConfig)",
            "",
            "--objective",
            if pre { "dpo-precomputed" } else { "dpo" },
        );
    }
    read_parallel(doc, &mut out)?;
    common::compile(doc, &mut out, "torch_compile")?;
    finish(doc, &mut out, "TrainingArguments", IGNORED);
    Ok(out)
}

fn read_batch(doc: &mut Doc, out: &mut Out, kind: Kind) -> Result<(), ReadError> {
    let key = "per_device_train_batch_size";
    match doc.uint(key)? {
        Some(n) => out.set(key, n, "--micro-batch", n),
        None => out.trainer_default(key, "8", "--micro-batch", "8", DEFAULTS[0].2),
    }
    if let Some(n) = doc.uint("gradient_accumulation_steps")? {
        out.set("gradient_accumulation_steps", n, "--grad-accum", n);
    }
    if kind == Kind::Grpo {
        return Ok(());
    }
    let mut found = false;
    for key in ["max_length", "max_seq_length", "model_max_length"] {
        if let Some(n) = doc.uint(key)? {
            out.set(key, n, "--seq", n);
            found = true;
        }
    }
    if !found && kind != Kind::Plain {
        out.trainer_default("max_length", "1024", "--seq", "1024", DEFAULTS[3].2);
    }
    for key in ["packing", "padding_free"] {
        if let Some(b) = doc.flag(key)? {
            out.ignore(
                key,
                b,
                "rows of at most the sequence length: --seq prices the longest",
            );
        }
    }
    Ok(())
}

fn read_memory(doc: &mut Doc, out: &mut Out, kind: Kind) -> Result<(), ReadError> {
    let key = if doc.has("activation_checkpointing") {
        "activation_checkpointing"
    } else {
        "gradient_checkpointing"
    };
    match doc.flag(key)? {
        Some(b) => common::recompute(out, key, b),
        None if kind != Kind::Plain => {
            out.trainer_default(key, "true", "--recompute", "full", DEFAULTS[1].2)
        }
        None => {}
    }
    if let Some(b) = doc.flag("activation_offloading")? {
        if b {
            out.set(
                "activation_offloading",
                b,
                "--offload-activations",
                "torchtune",
            );
        }
    }
    if let Some(o) = doc.text("optim")? {
        common::optimizer(out, "optim", &o);
    }
    if let Some(a) = doc.text("attn_implementation")? {
        common::attention(out, "attn_implementation", &a);
    }
    if let Some(true) = doc.flag("use_liger_kernel")? {
        out.pending("use_liger_kernel", true, Pending::ImplLiger, "liger");
        out.pending("use_liger_kernel", true, Pending::Loss, "liger");
    }
    Ok(())
}

fn read_precision(doc: &mut Doc, out: &mut Out, kind: Kind) -> Result<(), ReadError> {
    let bf16 = doc.flag("bf16")?;
    let fp16 = doc.flag("fp16")?;
    let dtype = common::first_text(doc, &["torch_dtype", "dtype"])?;
    let pure = dtype
        .as_ref()
        .is_some_and(|(_, d)| matches!(d.as_str(), "bfloat16" | "bf16" | "float16" | "fp16"));
    let amp = match (bf16, fp16) {
        (Some(true), _) | (_, Some(true)) => true,
        (None, None) if kind != Kind::Plain => {
            if !pure {
                out.trainer_default("bf16", "true", "--precision", "mixed", DEFAULTS[2].2);
            }
            true
        }
        _ => false,
    };
    if pure {
        // Weights loaded in 16 bits: the optimizer's states follow them
        // and no fp32 master exists (the Trainer's autocast keeps none).
        let (k, d) = dtype.unwrap_or_default();
        out.set(&k, d, "--precision", "bf16");
    } else if let Some((k, d)) = dtype {
        out.ignore(
            &k,
            d,
            "the weights' load dtype: fp32 weights train as --precision says",
        );
    }
    if !pure && (bf16.is_some() || fp16.is_some()) {
        let (k, v) = if bf16.is_some() {
            ("bf16", bf16)
        } else {
            ("fp16", fp16)
        };
        out.set(
            k,
            v.unwrap_or(false),
            "--precision",
            if amp { "mixed" } else { "fp32" },
        );
    } else if pure {
        for (k, v) in [("bf16", bf16), ("fp16", fp16)] {
            if let Some(v) = v {
                out.ignore(
                    k,
                    v,
                    "autocast over 16-bit weights: priced as --precision bf16",
                );
            }
        }
    }
    Ok(())
}

fn read_lora(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let peft = doc.flag("use_peft")?.unwrap_or(false);
    if !peft {
        for k in ["lora_r", "lora_target_modules", "lora_dropout"] {
            if let Some(v) = doc.take(k) {
                out.ignore(k, v, "LoRA is off (use_peft is not set)");
            }
        }
    } else {
        match doc.uint("lora_r")? {
            Some(r) => out.set("lora_r", r, "--lora-rank", r),
            None => out.trainer_default("lora_r", "16", "--lora-rank", "16", DEFAULTS[9].2),
        }
        if let Some(v) = doc.take("lora_target_modules") {
            common::lora_targets(out, "lora_target_modules", &v.items());
        }
        match doc.take("lora_dropout") {
            Some(v) => out.pending("lora_dropout", &v, Pending::LoraDropout, &v),
            None => out.trainer_default(
                "lora_dropout",
                "0.05",
                "--lora-dropout",
                "0.05",
                DEFAULTS[12].2,
            ),
        }
    }
    let nested = doc.flag("use_bnb_nested_quant")?.unwrap_or(false);
    if let Some(true) = doc.flag("load_in_4bit")? {
        out.set(
            "load_in_4bit",
            true,
            "--quant-base",
            if nested { "nf4" } else { "nf4-nodq" },
        );
    }
    if let Some(true) = doc.flag("load_in_8bit")? {
        out.set("load_in_8bit", true, "--quant-base", "int8");
    }
    Ok(())
}

fn read_grpo(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let beta = match doc.take("beta") {
        Some(v) => v
            .text()
            .as_deref()
            .and_then(super::value::number)
            .ok_or_else(|| ReadError::at("beta", format!("expected a number, got {v}")))?,
        None => 0.0,
    };
    out.set(
        "beta",
        beta,
        "--objective",
        if beta > 0.0 { "grpo-kl" } else { "grpo" },
    );
    let c = match doc.uint("max_completion_length")? {
        Some(c) => {
            out.set("max_completion_length", c, "--completion", c);
            c
        }
        None => {
            let d = DEFAULTS[5].2;
            out.trainer_default("max_completion_length", "512", "--completion", "512", d);
            512
        }
    };
    match doc.uint("max_prompt_length")? {
        Some(p) => out.set(
            "max_prompt_length + max_completion_length",
            p + c,
            "--seq",
            p + c,
        ),
        None => out.ignore(
            "max_prompt_length (absent)",
            "none",
            "prompts untruncated (trl 1.16.0): give --seq as prompt + completion",
        ),
    }
    match doc.uint("num_generations")? {
        Some(g) => out.set("num_generations", g, "--generations", g),
        None => out.trainer_default("num_generations", "8", "--generations", "8", DEFAULTS[6].2),
    }
    if let Some(true) = doc.flag("use_vllm")? {
        // TRL 1.16.0's default mode is colocate (grpo_config.py:594).
        let mode = doc.text("vllm_mode")?.unwrap_or_else(|| "colocate".into());
        let share = doc
            .take("vllm_gpu_memory_utilization")
            .and_then(|v| v.text())
            .unwrap_or_else(|| "0.3".into());
        if mode == "colocate" {
            out.set("use_vllm + vllm_mode", &mode, "--vllm-colocate", share);
        } else {
            out.ignore(
                "vllm_mode",
                mode,
                "generation on a separate vLLM server: not on the training GPUs",
            );
        }
    }
    Ok(())
}

fn read_parallel(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    if let Some(v) = doc.take("fsdp") {
        let version = doc
            .uint("fsdp_config.fsdp_version")?
            .or(doc.uint("fsdp_config.version")?);
        let on = !v.items().is_empty() && v.text().as_deref() != Some("false");
        if on && version == Some(2) {
            out.set("fsdp", &v, "--framework", "fsdp2");
            out.set("fsdp", &v, "--zero", "3");
        } else if on {
            out.ignore("fsdp", v, "FSDP1 is not priced (FSDP2 is: fsdp_version 2)");
        }
    }
    Ok(())
}
