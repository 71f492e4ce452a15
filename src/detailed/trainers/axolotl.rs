//! axolotl's YAML (`axolotl train F`): keys and defaults of
//! `src/axolotl/utils/schemas/config.py` (`AxolotlInputConfig`) at the
//! snapshot docs/trainers.md names.

use super::common;
use super::models;
use super::pending::Pending;
use super::value::{finish, Doc, Out, ReadError, Value};

/// axolotl's defaults for what a file leaves out.
pub const DEFAULTS: &[(&str, &str, &str)] = &[
    ("micro_batch_size", "1", "axolotl 0.19.0 `utils/schemas/training.py:77`: `micro_batch_size: int | None = Field(default=1, …)`"),
    ("sequence_len", "512", "axolotl 0.19.0 `utils/schemas/config.py:671`: `sequence_len: int = Field(default=512, …)`"),
    ("gradient_checkpointing", "false", "axolotl 0.19.0 `utils/schemas/config.py:606`: `gradient_checkpointing: Literal[\"offload\", \"offload_disk\"] | bool | None = Field(default=False, …)`"),
    ("optimizer", "adamw_torch_fused", "axolotl 0.19.0 `utils/schemas/training.py:122`: `optimizer: … = Field(default=\"adamw_torch_fused\", …)`"),
    ("bf16", "weights loaded in bf16", "axolotl 0.19.0 `utils/config/__init__.py:198`: `if cfg.bf16 or cfg.bfloat16: cfg.torch_dtype = torch.bfloat16`"),
    ("load_in_4bit", "double quantization", "axolotl 0.19.0 `loaders/model.py:807`: `\"bnb_4bit_use_double_quant\": True`"),
    ("bf16, fp16 (absent or false)", "fp32 weights (fp16 with load_in_8bit)", "axolotl 0.19.0 `utils/config/__init__.py:200`–`203`: `elif cfg.load_in_8bit or cfg.fp16 or cfg.float16: cfg.torch_dtype = torch.float16`, `else: cfg.torch_dtype = torch.float32`"),
];

/// Keys read and not priced, with the reason (`*` matches the rest of a key).
pub const IGNORED: &[(&str, &str)] = &[
    (
        "sample_packing",
        "packed rows of sequence_len tokens: --seq prices them",
    ),
    (
        "pad_to_sequence_len",
        "rows padded to sequence_len: --seq prices them",
    ),
    (
        "min_sample_len",
        "the shortest sample: the longest is priced",
    ),
    (
        "gradient_checkpointing_kwargs.*",
        "reentrant or not: the same tensors kept at the layers' boundaries",
    ),
    (
        "flex_attn_compile_kwargs.*",
        "flex attention's compile options: flex attention is not priced",
    ),
    ("tiled_mlp", "the tiled MLP is not priced"),
    ("lora_alpha", "a scale: no memory"),
    ("tf32", "a matmul mode: no memory"),
    (
        "fp8_enable_fsdp_float8_all_gather",
        "fp8 all-gather: not priced apart",
    ),
    (
        "fsdp_config.*",
        "an FSDP setting that does not change the bytes priced",
    ),
    (
        "deepspeed",
        "another file: give the DeepSpeed JSON with a second --from",
    ),
    (
        "liger_layer_norm",
        "Liger's LayerNorm: Llama-likes have none",
    ),
    ("strict", "no memory"),
    ("datasets", "the data: no memory"),
    ("special_tokens.*", "no memory"),
    ("wandb_*", "logging"),
    ("output_dir", "no memory"),
];

/// Reads an axolotl YAML.
pub fn read(root: &Value) -> Result<Out, ReadError> {
    let mut doc = Doc::new(root);
    let mut out = Out::default();
    common::transformers(&mut out);
    if let Some(m) = doc.text("base_model")? {
        match models::hub(&m) {
            Some(p) => out.set("base_model", &m, "--model", p),
            None => out.unknown("base_model", &m),
        }
    }
    for (key, flag, default) in [
        ("micro_batch_size", "--micro-batch", Some(0)),
        ("gradient_accumulation_steps", "--grad-accum", None),
        ("sequence_len", "--seq", Some(1)),
        ("context_parallel_size", "--cp", None),
        ("tensor_parallel_size", "--tp", None),
        ("dp_shard_size", "--dp-shard", None),
    ] {
        match (doc.uint(key)?, default) {
            (Some(n), _) => out.set(key, n, flag, n),
            (None, Some(i)) => {
                out.trainer_default(key, DEFAULTS[i].1, flag, DEFAULTS[i].1, DEFAULTS[i].2)
            }
            (None, None) => {}
        }
    }
    read_memory(&mut doc, &mut out)?;
    read_kernels(&mut doc, &mut out)?;
    read_lora(&mut doc, &mut out)?;
    read_precision(&mut doc, &mut out)?;
    read_fsdp(&mut doc, &mut out)?;
    common::compile(&mut doc, &mut out, "torch_compile")?;
    finish(&mut doc, &mut out, "axolotl", IGNORED);
    Ok(out)
}

fn read_memory(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let key = "gradient_checkpointing";
    match doc.text(key)?.as_deref() {
        Some("offload") => {
            out.set(key, "offload", "--recompute", "full");
            out.set(key, "offload", "--offload-activations", "checkpoints");
        }
        Some("offload_disk") => {
            out.set(key, "offload_disk", "--recompute", "full");
            out.ignore(
                key,
                "offload_disk",
                "checkpoints on disk: priced as on the GPU",
            );
        }
        Some(v) => common::recompute(out, key, super::value::boolean(v).unwrap_or(false)),
        None => out.trainer_default(key, "false", "--recompute", "none", DEFAULTS[2].2),
    }
    let key = "activation_offloading";
    match doc.text(key)?.as_deref() {
        Some("true" | "legacy" | "True") => {
            out.set(key, "true", "--offload-activations", "torchtune")
        }
        Some(v @ ("disk" | "hidden_states")) => {
            out.ignore(key, v, "this activation offloading is not priced")
        }
        Some(v) => out.ignore(key, v, "off"),
        None => {}
    }
    match doc.text("optimizer")? {
        Some(o) => common::optimizer(out, "optimizer", &o),
        None => {
            out.trainer_default(
                "optimizer",
                "adamw_torch_fused",
                "--optimizer",
                "adamw",
                DEFAULTS[3].2,
            );
            out.trainer_default(
                "optimizer",
                "adamw_torch_fused",
                "--adam",
                "fused",
                DEFAULTS[3].2,
            );
        }
    }
    Ok(())
}

fn read_kernels(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    if let Some(a) = doc.text("attn_implementation")? {
        common::attention(out, "attn_implementation", &a);
    }
    for key in ["flash_attention", "sdp_attention", "flex_attention"] {
        if let Some(true) = doc.flag(key)? {
            out.set(key, true, "--attention", "flash");
        }
    }
    let plugins = doc.take("plugins").map(|v| v.items()).unwrap_or_default();
    for p in &plugins {
        if p.ends_with("CutCrossEntropyPlugin") {
            out.pending("plugins", p, Pending::Loss, "cce");
        } else if !p.ends_with("LigerPlugin") {
            out.ignore("plugins", p, "a plugin membudget does not price");
        }
    }
    let liger = plugins.iter().any(|p| p.ends_with("LigerPlugin"));
    for key in ["liger_rope", "liger_rms_norm", "liger_glu_activation"] {
        if let Some(true) = doc.flag(key)? {
            if liger {
                out.pending(key, true, Pending::ImplLiger, "liger");
            } else {
                out.ignore(key, true, "without LigerPlugin axolotl does not apply it");
            }
        }
    }
    if let Some(true) = doc.flag("liger_fused_linear_cross_entropy")? {
        out.pending(
            "liger_fused_linear_cross_entropy",
            true,
            Pending::Loss,
            "liger",
        );
    }
    Ok(())
}

fn read_lora(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let adapter = doc.text("adapter")?;
    if let Some(a) = &adapter {
        if !matches!(a.as_str(), "lora" | "qlora") {
            return Err(ReadError::at(
                "adapter",
                format!("expected lora or qlora, got {a}"),
            ));
        }
        if let Some(r) = doc.uint("lora_r")? {
            out.set("lora_r", r, "--lora-rank", r);
        }
        if let Some(true) = doc.flag("lora_target_linear")? {
            out.set("lora_target_linear", true, "--lora-targets", "all");
        }
        if let Some(v) = doc.take("lora_target_modules") {
            common::lora_targets(out, "lora_target_modules", &v.items());
        }
        if let Some(v) = doc.take("lora_dropout") {
            out.pending("lora_dropout", &v, Pending::LoraDropout, &v);
        }
    }
    // bitsandbytes 4-bit with double quantization (DEFAULTS[5]).
    if let Some(true) = doc.flag("load_in_4bit")? {
        out.set("load_in_4bit", true, "--quant-base", "nf4");
    }
    if let Some(true) = doc.flag("load_in_8bit")? {
        out.set("load_in_8bit", true, "--quant-base", "int8");
    }
    Ok(())
}

fn read_precision(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    // bf16 (or auto, bf16 where the card has it) loads the weights in
    // bf16 (DEFAULTS[4]): the Trainer's autocast then keeps no fp32 master
    // and AdamW's states follow the bf16 weights; `bfloat16`/`float16` are
    // axolotl's "no AMP" spellings of the same; fp16 loads them in fp16.
    let mut sixteen = false;
    for key in ["bfloat16", "float16", "bf16", "fp16"] {
        match doc.text(key)?.as_deref() {
            Some(v) if v == "auto" || super::value::boolean(v) == Some(true) => {
                if !sixteen {
                    out.set(key, v, "--precision", "bf16");
                }
                sixteen = true;
            }
            Some(v) => out.ignore(key, v, "off"),
            None => {}
        }
    }
    let fp8 = doc.flag("fp8")? == Some(true);
    if !sixteen && fp8 {
        // `fp8: true` sets ACCELERATE_MIXED_PRECISION=fp8 (axolotl 0.19.0
        // `utils/trainer.py`, `setup_trainer_env`), under which accelerate
        // autocasts to bf16 around the fp32 weights (accelerate 1.16.0
        // `utils/modeling.py`, `get_mixed_precision_context_manager`:
        // `mixed_precision in ["bf16", "fp8"]` → `torch.autocast(dtype=torch.bfloat16)`).
        out.set("fp8", true, "--precision", "mixed");
    } else if !sixteen {
        let int8 = out
            .set
            .iter()
            .any(|s| s.flag == "--quant-base" && s.arg == "int8");
        let (key, arg) = if int8 {
            ("load_in_8bit", "bf16")
        } else {
            ("bf16", "fp32")
        };
        out.trainer_default(key, "(no 16-bit flag)", "--precision", arg, DEFAULTS[6].2);
    }
    if fp8 {
        // torchao's float8 training, tensorwise (axolotl's `fp8: true`).
        out.set("fp8", true, "--fp8", "tensorwise");
    }
    Ok(())
}

fn read_fsdp(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let version = doc
        .uint("fsdp_version")?
        .or(doc.uint("fsdp_config.fsdp_version")?);
    let fsdp1 = doc.take("fsdp");
    if version == Some(2) {
        out.set("fsdp_version", 2, "--framework", "fsdp2");
        out.set("fsdp_version", 2, "--zero", "3");
        if let Some(b) = doc.flag("fsdp_config.reshard_after_forward")? {
            out.set(
                "fsdp_config.reshard_after_forward",
                b,
                "--reshard-after-forward",
                b,
            );
        }
    } else if let Some(v) = fsdp1 {
        out.ignore(
            "fsdp",
            v,
            "FSDP1 sharding is not priced (FSDP2 is: fsdp_version 2)",
        );
    }
    for key in [
        "fsdp_config.activation_checkpointing",
        "fsdp_config.fsdp_activation_checkpointing",
    ] {
        if let Some(b) = doc.flag(key)? {
            if b || !out.has("--recompute")
                || out
                    .set
                    .iter()
                    .any(|s| s.flag == "--recompute" && s.default_from.is_some())
            {
                common::recompute(out, key, b);
            }
        }
    }
    for key in [
        "fsdp_config.offload_params",
        "fsdp_config.fsdp_offload_params",
    ] {
        if let Some(b) = doc.flag(key)? {
            out.ignore(
                key,
                b,
                if b {
                    "FSDP CPU offload is not priced"
                } else {
                    "off"
                },
            );
        }
    }
    Ok(())
}
