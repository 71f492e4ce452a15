//! litgpt's YAML (jsonargparse arguments of `litgpt finetune_lora|
//! finetune_full|finetune_adapter`), `litgpt/finetune/lora.py` `setup` at
//! the snapshot docs/trainers.md names.

use super::common;
use super::pending::Pending;
use super::value::{finish, Doc, Out, ReadError, Value};

/// litgpt's defaults and what its code fixes.
pub const DEFAULTS: &[(&str, &str, &str)] = &[
    ("precision", "bf16-mixed on bf16 cards", "litgpt 0.5.13 `litgpt/finetune/lora.py:131`: `precision = precision or get_default_supported_precision(training=True)`; `litgpt/utils.py:377`: `return \"bf16-mixed\" if training else \"bf16-true\"`"),
    ("devices", "1", "litgpt 0.5.13 `litgpt/finetune/lora.py:54`: `devices: int | str = 1`"),
    ("(sharding, checkpointing)", "FSDP2 and every Block checkpointed on more than one device; neither on one", "litgpt 0.5.13 `litgpt/finetune/lora.py:152`: `if devices * num_nodes > 1:` → `ModelParallelStrategy(parallelize_fn=…)`; `:522` `parallelize_fn(model, device_mesh, activation_checkpointing=True)`: `checkpoint_wrapper` on each Block, `fully_shard`"),
    ("train.micro_batch_size", "4", "litgpt 0.5.13 `litgpt/args.py:17`: `micro_batch_size: int = 4`"),
    ("lora_query, lora_value", "true (key, projection, mlp, head false)", "litgpt 0.5.13 `litgpt/finetune/lora.py:59`–`61`: `lora_query: bool = True`, `lora_key: bool = False`, `lora_value: bool = True`"),
    ("lora_dropout", "0.05", "litgpt 0.5.13 `litgpt/finetune/lora.py:58`: `lora_dropout: float = 0.05`"),
    ("(modules)", "eager PyTorch", "litgpt 0.5.13 `litgpt/model.py`: eager PyTorch modules (`LLaMAMLP.forward`: `F.silu(x_fc_1) * x_fc_2`, its own `RMSNorm`, `F.scaled_dot_product_attention`), no fused kernels"),
];

/// Keys read and not priced, with the reason (`*` matches the rest of a key).
pub const IGNORED: &[(&str, &str)] = &[
    ("lora_alpha", "a scale: no memory"),
    ("eval.*", "evaluation, not the training step"),
    ("data.*", "the data: no memory"),
    ("optimizer.init_args.*", "hyperparameters: no memory"),
    ("train.learning_rate", "a hyperparameter: no memory"),
    ("train.weight_decay", "a hyperparameter: no memory"),
    ("train.beta*", "a hyperparameter: no memory"),
    ("train.max_norm", "gradient clipping: no memory"),
    ("train.tie_embeddings", "the model's own tying is priced"),
    ("out_dir", "no memory"),
    ("logger_name", "logging"),
];

/// Reads a litgpt YAML.
pub fn read(root: &Value) -> Result<Out, ReadError> {
    let mut doc = Doc::new(root);
    let mut out = Out::default();
    if let Some(c) = doc.text("checkpoint_dir")? {
        common::hub_model(&mut out, "checkpoint_dir", &c);
    }
    out.trainer_default("(modules)", "eager PyTorch", "--impl", "hf", DEFAULTS[6].2);
    let devices = doc.uint("devices")?.unwrap_or(1);
    let nodes = doc.uint("num_nodes")?.unwrap_or(1);
    out.set("devices", devices, "--nproc-per-node", devices);
    if nodes > 1 {
        out.set("num_nodes", nodes, "--nnodes", nodes);
    }
    if devices * nodes > 1 {
        // FSDP2 over every GPU, each Block checkpointed (DEFAULTS[2]).
        out.set("devices", devices, "--framework", "fsdp2");
        out.set("devices", devices, "--zero", "3");
        out.set("devices", devices, "--recompute", "full");
    } else {
        out.trainer_default(
            "(checkpointing)",
            "off",
            "--recompute",
            "none",
            DEFAULTS[2].2,
        );
    }
    match doc.uint("train.micro_batch_size")? {
        Some(n) => out.set("train.micro_batch_size", n, "--micro-batch", n),
        None => out.trainer_default(
            "train.micro_batch_size",
            "4",
            "--micro-batch",
            "4",
            DEFAULTS[3].2,
        ),
    }
    if let Some(n) = doc.uint("train.global_batch_size")? {
        out.set("train.global_batch_size", n, "--batch", n);
    }
    if let Some(n) = doc.uint("train.max_seq_length")? {
        out.set("train.max_seq_length", n, "--seq", n);
    }
    read_precision(&mut doc, &mut out)?;
    read_lora(&mut doc, &mut out)?;
    if let Some(o) = doc.text("optimizer.class_path")?.or(doc.text("optimizer")?) {
        common::optimizer(&mut out, "optimizer.class_path", &o);
    }
    finish(&mut doc, &mut out, "litgpt", IGNORED);
    Ok(out)
}

fn read_precision(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let p = doc.text("precision")?;
    let flag = match p.as_deref() {
        Some("bf16-true" | "16-true") => "bf16",
        Some("bf16-mixed" | "16-mixed") => "mixed",
        Some("32-true") => "fp32",
        Some(other) => {
            return Err(ReadError::at(
                "precision",
                format!("expected bf16-true, bf16-mixed, 16-mixed or 32-true, got {other}"),
            ))
        }
        None => {
            out.trainer_default(
                "precision",
                "bf16-mixed",
                "--precision",
                "mixed",
                DEFAULTS[0].2,
            );
            return Ok(());
        }
    };
    out.set("precision", p.unwrap_or_default(), "--precision", flag);
    let quantize = doc.text("quantize")?;
    match quantize.as_deref() {
        Some("bnb.nf4" | "bnb.fp4") => out.set("quantize", "bnb.nf4", "--quant-base", "nf4-nodq"),
        Some(q @ ("bnb.nf4-dq" | "bnb.fp4-dq")) => out.set("quantize", q, "--quant-base", "nf4"),
        Some("bnb.int8-training" | "bnb.int8") => {
            out.set("quantize", "bnb.int8-training", "--quant-base", "int8")
        }
        Some(q) => out.ignore("quantize", q, "a quantization membudget does not price"),
        None => {}
    }
    // litgpt quantizes through Lightning's `BitsandbytesPrecision`
    // (`lightning/fabric/plugins/precision/bitsandbytes.py`): bitsandbytes'
    // layers in place of `nn.Linear`, the other weights left in the
    // training dtype (no `prepare_model_for_kbit_training`).
    if let Some(q) = quantize.filter(|q| q.starts_with("bnb.")) {
        out.set("quantize", q, "--quant-path", "bnb");
    }
    Ok(())
}

/// Where litgpt keeps the adapters in the model's dtype.
const LORA_DTYPE: &str = "litgpt 0.5.13 `litgpt/lora.py`, `LoRALinear.__init__`: `self.lora_A = nn.Parameter(torch.empty((r, in_features)))`, created under `fabric.init_module()` in the precision's dtype (`litgpt/finetune/lora.py`, `setup`)";

fn read_lora(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let Some(r) = doc.uint("lora_r")? else {
        return Ok(());
    };
    out.set("lora_r", r, "--lora-rank", r);
    // Adapters are created in the precision's dtype: bf16 under bf16-true.
    if out
        .set
        .iter()
        .any(|s| s.flag == "--precision" && s.arg == "bf16")
    {
        out.trainer_default(
            "(LoRA adapters' dtype)",
            "the model's",
            "--lora-dtype",
            "bf16",
            LORA_DTYPE,
        );
    }
    // litgpt's defaults: query and value on, the rest off
    // (litgpt/finetune/lora.py `setup`: `lora_query: bool = True`, `lora_key: bool = False`, `lora_value: bool = True`, …).
    let mut targets = Vec::new();
    let mut keys = Vec::new();
    for (key, modules, default) in [
        ("lora_query", &["q"][..], true),
        ("lora_key", &["k"][..], false),
        ("lora_value", &["v"][..], true),
        ("lora_projection", &["o"][..], false),
        ("lora_mlp", &["gate", "up", "down"][..], false),
        ("lora_head", &["lm_head"][..], false),
    ] {
        if doc.flag(key)?.unwrap_or(default) {
            targets.extend(modules.iter().map(|m| m.to_string()));
            keys.push(key);
        }
    }
    common::lora_targets(out, &keys.join("+"), &targets);
    match doc.take("lora_dropout") {
        Some(v) => out.pending("lora_dropout", &v, Pending::LoraDropout, &v),
        None => out.trainer_default(
            "lora_dropout",
            "0.05",
            "--lora-dropout",
            "0.05",
            DEFAULTS[5].2,
        ),
    }
    Ok(())
}
