//! torchtune's recipe YAML (OmegaConf), and `tune run`'s `key=value`
//! overrides. Recipes and builders as in torchtune 0.6 (`recipes/*.py`,
//! `torchtune/models/*/_model_builders.py`).

use super::common;
use super::models;
use super::pending::Pending;
use super::value::{finish, Doc, Out, ReadError, Value};

/// torchtune's defaults for keys a recipe reads with `cfg.get`.
pub const DEFAULTS: &[(&str, &str, &str)] = &[
    ("enable_activation_checkpointing", "False", "torchtune 0.6.1 `recipes/lora_finetune_single_device.py:161`: `cfg.get(\"enable_activation_checkpointing\", False)`"),
    ("enable_activation_offloading", "False", "torchtune 0.6.1 `recipes/lora_finetune_single_device.py:165`: `cfg.get(\"enable_activation_offloading\", False)`"),
    ("compile", "False", "torchtune 0.6.1 `recipes/full_finetune_distributed.py:292`: `cfg.get(\"compile\", False)`"),
    ("optimizer_in_bwd", "False", "torchtune 0.6.1 `recipes/full_finetune_distributed.py:181`: `cfg.get(\"optimizer_in_bwd\", False)`"),
    ("fsdp_reshard_after_forward", "True", "torchtune 0.6.1 `recipes/full_finetune_distributed.py:299`: `reshard_after_forward=cfg.get(\"fsdp_reshard_after_forward\", True)`"),
    ("model.apply_lora_to_mlp", "False", "torchtune 0.6.1 `torchtune/models/llama3_1/_model_builders.py:86`: `apply_lora_to_mlp: bool = False`"),
    ("model.lora_dropout", "0.0", "torchtune 0.6.1 `torchtune/models/llama3_1/_model_builders.py:90`: `lora_dropout: float = 0.0`"),
    ("tokenizer.max_seq_len", "None (untruncated)", "torchtune 0.6.1 `torchtune/models/llama3/_tokenizer.py:79`: `max_seq_len: Optional[int] = None`"),
    ("loss.num_output_chunks", "8", "torchtune 0.6.1 `torchtune/modules/loss/ce_chunked_output_loss.py:30`: `num_output_chunks: int = 8`"),
    ("model._component_ qlora_*", "NF4 base", "torchtune 0.6.1 `torchtune/models/llama3_1/_model_builders.py:251`: `qlora_llama3_1_8b = partial(lora_llama3_1_8b, quantize_base=True)`"),
    ("(LoRA adapters' dtype)", "the model's dtype", "torchtune 0.6.1 `torchtune/modules/peft/lora.py:91`–`92`: `self.lora_a = nn.Linear(...)`, `self.lora_b = nn.Linear(...)`, built under `training.set_default_dtype(self._dtype)` (`recipes/lora_finetune_single_device.py:431`, `_setup_model`)"),
];

/// Keys read and not priced, with the reason (`*` matches the rest of a key).
pub const IGNORED: &[(&str, &str)] = &[
    ("model.lora_alpha", "a scale: no memory"),
    (
        "fsdp.cpu_offload",
        "FSDP CPU offload is not priced (and the QLoRA recipe does not read this key)",
    ),
    (
        "custom_sharded_layers",
        "which layers FSDP wraps apart: not priced",
    ),
    (
        "tokenizer.*",
        "the tokenizer: no memory besides max_seq_len",
    ),
    ("checkpointer.*", "checkpoint files: no memory"),
    ("dataset.*", "the data: no memory besides packing"),
    ("optimizer.lr", "a hyperparameter: no memory"),
    ("optimizer.weight_decay", "a hyperparameter: no memory"),
    ("optimizer.betas", "a hyperparameter: no memory"),
    ("lr_scheduler.*", "the learning-rate schedule: no memory"),
    ("metric_logger.*", "logging"),
    ("profiler.*", "profiling"),
    ("log_*", "logging"),
    ("output_dir", "no memory"),
    ("device", "cuda: membudget's default"),
    ("clip_grad_norm", "gradient clipping: no memory"),
];

/// Reads a recipe YAML; `text` is the file, whose header comment names
/// the recipe (`tune run … full_finetune_distributed --config …`).
pub fn read(root: &Value, text: &str) -> Result<Out, ReadError> {
    let mut doc = Doc::new(root);
    let distributed = text
        .lines()
        .take_while(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
        .any(|l| l.contains("_distributed"));
    let mut out = Out::default();
    if distributed {
        // The distributed recipes shard with FSDP2's `fully_shard`
        // (torchtune/training/_distributed.py, `shard_model`).
        out.set(
            "(recipe *_distributed, header comment)",
            "",
            "--framework",
            "fsdp2",
        );
        out.set("(recipe *_distributed, header comment)", "", "--zero", "3");
    }
    let more = read_doc(&mut doc, true, distributed)?;
    out.set.extend(more.set);
    out.ignored = more.ignored;
    out.unknown_model = more.unknown_model;
    Ok(out)
}

/// Reads `tune run`'s `key=value` overrides (no defaults: the recipe's
/// file has them) for a recipe that is `distributed` or not.
pub fn read_overrides(pairs: Vec<(String, Value)>, distributed: bool) -> Result<Out, ReadError> {
    // `model=X` on a `_component_` node sets `model._component_`.
    let pairs = pairs
        .into_iter()
        .map(|(k, v)| match k.as_str() {
            "model" | "optimizer" | "loss" | "dataset" | "tokenizer" => {
                (format!("{k}._component_"), v)
            }
            _ => (k, v),
        })
        .collect();
    read_doc(&mut Doc::from_pairs(pairs), false, distributed)
}

fn read_doc(doc: &mut Doc, defaults: bool, distributed: bool) -> Result<Out, ReadError> {
    let mut out = Out::default();
    read_model(doc, &mut out, defaults)?;
    for (key, flag) in [
        ("batch_size", "--micro-batch"),
        ("gradient_accumulation_steps", "--grad-accum"),
        ("tokenizer.max_seq_len", "--seq"),
    ] {
        if doc.peek(key) == Some(&Value::Null) {
            doc.take(key);
            out.ignore(
                key,
                "null",
                "untruncated: the longest sample decides; give --seq",
            );
        } else if let Some(n) = doc.uint(key)? {
            out.set(key, n, flag, n);
        }
    }
    if defaults && !doc.has("tokenizer.max_seq_len") {
        out.ignore(
            "tokenizer.max_seq_len (absent)",
            "None",
            "untruncated in torchtune (`max_seq_len: Optional[int] = None`): give --seq",
        );
    }
    if let Some(b) = doc.flag("dataset.packed")? {
        out.ignore(
            "dataset.packed",
            b,
            "packed rows of max_seq_len tokens: --seq prices them",
        );
    }
    if let Some(d) = doc.text("dtype")? {
        // torchtune trains in pure bf16: no fp32 master
        // (torchtune/training/precision.py, `get_dtype`).
        let p = match d.as_str() {
            "bf16" | "bfloat16" | "fp16" => "bf16",
            "fp32" | "float32" => "fp32",
            _ => {
                return Err(ReadError::at(
                    "dtype",
                    format!("expected bf16 or fp32, got {d}"),
                ))
            }
        };
        out.set("dtype", &d, "--precision", p);
        if p == "bf16" && out.sets("--lora-rank") {
            out.trainer_default(
                "(LoRA adapters' dtype)",
                "the model's",
                "--lora-dtype",
                "bf16",
                DEFAULTS[10].2,
            );
        }
    }
    read_memory(doc, &mut out, distributed, defaults)?;
    common::compile(doc, &mut out, "compile")?;
    finish(doc, &mut out, "torchtune", IGNORED);
    Ok(out)
}

fn read_model(doc: &mut Doc, out: &mut Out, defaults: bool) -> Result<(), ReadError> {
    let key = "model._component_";
    let Some(c) = doc.text(key)? else {
        return Ok(());
    };
    match models::torchtune(&c) {
        Some(p) => out.set(key, &c, "--model", p),
        None => out.unknown(key, &c),
    }
    let last = c.rsplit('.').next().unwrap_or(&c).to_string();
    if models::torchtune_is_qlora(&c) {
        out.set(key, &c, "--quant-base", "nf4");
        // torchtune's QLoRA builders hold the base as torchao's NF4Tensor
        // (`modules/peft/lora.py`, `LoRALinear(quantize_base=True)`: `to_nf4`).
        out.set(key, &c, "--quant-path", "torchao");
    }
    if !(last.starts_with("lora_") || last.starts_with("qlora_")) {
        return Ok(());
    }
    if let Some(r) = doc.uint("model.lora_rank")? {
        out.set("model.lora_rank", r, "--lora-rank", r);
    }
    let mut targets = doc
        .take("model.lora_attn_modules")
        .map(|v| v.items())
        .unwrap_or_default();
    let mlp = doc.flag("model.apply_lora_to_mlp")?;
    if mlp == Some(true) {
        targets.extend(["w1", "w2", "w3"].map(String::from));
    }
    if doc.flag("model.apply_lora_to_output")? == Some(true) {
        targets.push("output".into());
    }
    if !targets.is_empty() {
        common::lora_targets(out, "model.lora_attn_modules + apply_lora_to_mlp", &targets);
    }
    if mlp.is_none() && defaults {
        out.ignore("model.apply_lora_to_mlp (default)", "False", DEFAULTS[5].2);
    }
    if let Some(v) = doc.take("model.lora_dropout") {
        out.pending("model.lora_dropout", &v, Pending::LoraDropout, &v);
    }
    Ok(())
}

fn read_memory(
    doc: &mut Doc,
    out: &mut Out,
    distributed: bool,
    defaults: bool,
) -> Result<(), ReadError> {
    match doc.flag("enable_activation_checkpointing")? {
        Some(b) => common::recompute(out, "enable_activation_checkpointing", b),
        None if defaults => {
            let key = "enable_activation_checkpointing";
            out.trainer_default(key, "False", "--recompute", "none", DEFAULTS[0].2)
        }
        None => {}
    }
    if let Some(true) = doc.flag("enable_activation_offloading")? {
        out.set(
            "enable_activation_offloading",
            true,
            "--offload-activations",
            "torchtune",
        );
    }
    if let Some(o) = doc.text("optimizer._component_")? {
        common::optimizer(out, "optimizer._component_", &o);
    }
    if let Some(true) = doc.flag("optimizer.fused")? {
        out.set("optimizer.fused", true, "--adam", "fused");
    }
    if let Some(true) = doc.flag("optimizer_in_bwd")? {
        out.pending("optimizer_in_bwd", true, Pending::OptimizerInBackward, "");
    }
    if let Some(l) = doc.text("loss._component_")? {
        if l.ends_with("CEWithChunkedOutputLoss") {
            out.pending("loss._component_", &l, Pending::Loss, "chunked");
            // `num_output_chunks: int = 8` (torchtune/modules/loss/ce_chunked_output_loss.py)
            let n = doc.uint("loss.num_output_chunks")?.unwrap_or(8);
            out.pending("loss.num_output_chunks", n, Pending::LossChunks, n);
        } else {
            out.ignore(
                "loss._component_",
                l,
                "full logits and cross-entropy: membudget's default",
            );
        }
    }
    if let Some(b) = doc.flag("fsdp_cpu_offload")? {
        match (b, distributed) {
            (true, true) => out.set("fsdp_cpu_offload", b, "--fsdp-cpu-offload", ""),
            (true, false) => out.ignore(
                "fsdp_cpu_offload",
                b,
                "a single-device recipe does not shard",
            ),
            (false, _) => out.ignore("fsdp_cpu_offload", b, "off: priced without it"),
        }
    }
    if let Some(b) = doc.flag("fsdp_reshard_after_forward")? {
        if distributed {
            out.set(
                "fsdp_reshard_after_forward",
                b,
                "--reshard-after-forward",
                b,
            );
        } else {
            out.ignore(
                "fsdp_reshard_after_forward",
                b,
                "a single-device recipe does not shard",
            );
        }
    }
    Ok(())
}
