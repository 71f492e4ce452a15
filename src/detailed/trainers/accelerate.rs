//! accelerate's config YAML (`accelerate config`, `--config_file`):
//! `accelerate/commands/config/config_args.py` and `utils/dataclasses.py`
//! at the snapshot docs/trainers.md names.

use super::value::{finish, Doc, Out, ReadError, Value};

/// accelerate's defaults for what a file leaves out.
pub const DEFAULTS: &[(&str, &str, &str)] = &[
    ("fsdp_config.fsdp_version", "1", "accelerate 1.16.0 `accelerate/utils/dataclasses.py:1538`: `fsdp_version: int = field(default=None, …)`, \"Defaults to 1\""),
    ("num_machines", "1", "accelerate 1.16.0 `accelerate/commands/config/config_args.py:182`: `num_machines: int = 1`"),
];

/// Keys read and not priced, with the reason (`*` matches the rest of a key).
pub const IGNORED: &[(&str, &str)] = &[
    (
        "fsdp_config.fsdp_cpu_ram_efficient_loading",
        "how the weights are loaded: before the step",
    ),
    (
        "fsdp_config.*",
        "an FSDP setting that does not change the bytes priced",
    ),
    (
        "deepspeed_config.zero3_init_flag",
        "how the weights are created: before the step",
    ),
    (
        "deepspeed_config.deepspeed_config_file",
        "another file: give the DeepSpeed JSON with a second --from",
    ),
    (
        "deepspeed_config.*",
        "a DeepSpeed setting that does not change the bytes priced",
    ),
    ("downcast_bf16", "TPU only"),
    ("tpu_*", "TPU only"),
    ("machine_rank", "no memory"),
    ("main_training_function", "no memory"),
    ("rdzv_backend", "no memory"),
    ("same_network", "no memory"),
    ("compute_environment", "no memory"),
    ("debug", "no memory"),
    ("use_cpu", "no memory"),
    ("enable_cpu_affinity", "no memory"),
    ("gpu_ids", "which GPUs: num_processes counts them"),
];

/// Reads an accelerate config.
pub fn read(root: &Value) -> Result<Out, ReadError> {
    let mut doc = Doc::new(root);
    let mut out = Out::default();
    let machines = doc.uint("num_machines")?.unwrap_or(1).max(1);
    if let Some(n) = doc.uint("num_processes")? {
        if n % machines != 0 {
            return Err(ReadError::at(
                "num_processes",
                format!("{n} processes do not split over {machines} machines"),
            ));
        }
        out.set("num_processes", n, "--nproc-per-node", n / machines);
        if machines > 1 {
            out.set("num_machines", machines, "--nnodes", machines);
        }
    }
    if let Some(p) = doc.text("mixed_precision")? {
        match p.as_str() {
            "bf16" | "fp16" | "fp8" => out.set("mixed_precision", &p, "--precision", "mixed"),
            "no" => out.set("mixed_precision", &p, "--precision", "fp32"),
            _ => {
                return Err(ReadError::at(
                    "mixed_precision",
                    format!("expected no, fp16, bf16 or fp8, got {p}"),
                ))
            }
        }
    }
    match doc.text("distributed_type")?.as_deref() {
        Some("FSDP") => read_fsdp(&mut doc, &mut out)?,
        Some("DEEPSPEED") => read_deepspeed(&mut doc, &mut out)?,
        Some("MULTI_GPU") => out.set("distributed_type", "MULTI_GPU", "--framework", "ddp"),
        Some(t) => out.ignore("distributed_type", t, "no data parallelism over GPUs"),
        None => {}
    }
    finish(&mut doc, &mut out, "accelerate", IGNORED);
    Ok(out)
}

fn read_fsdp(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let version = doc.uint("fsdp_config.fsdp_version")?;
    if version == Some(2) {
        out.set("fsdp_config.fsdp_version", 2, "--framework", "fsdp2");
        out.set("fsdp_config.fsdp_version", 2, "--zero", "3");
        if let Some(b) = doc.flag("fsdp_config.fsdp_reshard_after_forward")? {
            out.set(
                "fsdp_config.fsdp_reshard_after_forward",
                b,
                "--reshard-after-forward",
                b,
            );
        }
    } else {
        let key = "fsdp_config.fsdp_sharding_strategy";
        let s = doc.text(key)?.unwrap_or_else(|| "FULL_SHARD".into());
        super::common::fsdp1(out, key, &s);
    }
    if let Some(true) = doc.flag("fsdp_config.fsdp_offload_params")? {
        out.set(
            "fsdp_config.fsdp_offload_params",
            true,
            "--fsdp-cpu-offload",
            "",
        );
    }
    if let Some(b) = doc.flag("fsdp_config.fsdp_activation_checkpointing")? {
        super::common::recompute(out, "fsdp_config.fsdp_activation_checkpointing", b);
    }
    Ok(())
}

fn read_deepspeed(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    out.set("distributed_type", "DEEPSPEED", "--framework", "deepspeed");
    if let Some(z) = doc.uint("deepspeed_config.zero_stage")? {
        if z > 3 {
            return Err(ReadError::at(
                "deepspeed_config.zero_stage",
                format!("ZeRO stages are 0 to 3, got {z}"),
            ));
        }
        out.set("deepspeed_config.zero_stage", z, "--zero", z);
    }
    for (key, flag) in [
        (
            "deepspeed_config.offload_optimizer_device",
            "--offload-optimizer",
        ),
        ("deepspeed_config.offload_param_device", "--offload-params"),
    ] {
        match doc.text(key)?.as_deref() {
            Some(d @ ("cpu" | "nvme")) => out.set(key, d, flag, ""),
            Some(d) => out.ignore(key, d, "no offload"),
            None => {}
        }
    }
    Ok(())
}
