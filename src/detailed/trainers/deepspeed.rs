//! A DeepSpeed config JSON (native, or the Hugging Face integration's with
//! `"auto"` values that TrainingArguments fill in).
//!
//! Keys: `deepspeed/runtime/config.py` and `deepspeed/runtime/zero/config.py`
//! (DeepSpeed 0.16). Defaults where the file is silent: [`DEFAULTS`].

use super::pending::Pending;
use super::value::{finish, number, Doc, Out, ReadError, Value};

/// DeepSpeed's defaults for what a file leaves out, with their source.
pub const DEFAULTS: &[(&str, &str, &str)] = &[
    ("zero_optimization.stage", "0", "deepspeed 0.19.8 `deepspeed/runtime/zero/config.py:95`: `stage: ZeroStageEnum = 0`"),
    ("zero_optimization.reduce_bucket_size", "5e8", "deepspeed 0.19.8 `deepspeed/runtime/zero/config.py:113`: `reduce_bucket_size: int = Field(pp_int(5e8), gt=0)`"),
    ("zero_optimization.stage3_prefetch_bucket_size", "5e7", "deepspeed 0.19.8 `deepspeed/runtime/zero/config.py:222`: `prefetch_bucket_size: int = Field(pp_int(5e7), ge=0, alias=\"stage3_prefetch_bucket_size\")`"),
    ("zero_optimization.offload_optimizer.device", "none", "deepspeed 0.19.8 `deepspeed/runtime/zero/offload_config.py:24`: `device: OffloadDeviceEnum = \"none\"`"),
    ("gradient_accumulation_steps", "derived (1 when nothing says otherwise)", "deepspeed 0.19.8 `deepspeed/runtime/constants.py:72`: `GRADIENT_ACCUMULATION_STEPS_DEFAULT = None`"),
    ("bf16.enabled, fp16.enabled", "false (fp32)", "deepspeed 0.19.8 `deepspeed/runtime/constants.py:98`: `BFLOAT16_ENABLED_DEFAULT = False`; `:139`: `FP16_ENABLED_DEFAULT = False`"),
];

/// Keys read and not priced, with the reason.
pub const IGNORED: &[(&str, &str)] = &[
    (
        "zero_optimization.offload_optimizer.pin_memory",
        "pinned host memory: host RAM, not the GPU's",
    ),
    (
        "zero_optimization.offload_param.pin_memory",
        "pinned host memory: host RAM, not the GPU's",
    ),
    (
        "zero_optimization.offload_optimizer.*",
        "an offload detail that does not change the GPU's bytes",
    ),
    (
        "zero_optimization.offload_param.*",
        "an offload detail that does not change the GPU's bytes",
    ),
    (
        "zero_optimization.contiguous_gradients",
        "its contiguous gradient buffer is not priced apart from the reduce bucket",
    ),
    (
        "zero_optimization.stage3_max_live_parameters",
        "not priced: the ZeRO-3 trace keeps DeepSpeed's default (1e9)",
    ),
    (
        "zero_optimization.max_live_parameters",
        "not priced: the ZeRO-3 trace keeps DeepSpeed's default (1e9)",
    ),
    (
        "zero_optimization.stage3_max_reuse_distance",
        "not priced: the ZeRO-3 trace keeps DeepSpeed's default (1e9)",
    ),
    (
        "zero_optimization.max_reuse_distance",
        "not priced: the ZeRO-3 trace keeps DeepSpeed's default (1e9)",
    ),
    (
        "zero_optimization.stage3_gather_16bit_weights_on_model_save",
        "at checkpoint saving only, not in the step",
    ),
    (
        "zero_optimization.allgather_*",
        "a ZeRO-1/2 communication detail, not priced",
    ),
    (
        "zero_optimization.reduce_scatter",
        "a communication detail, not priced",
    ),
    (
        "zero_optimization.round_robin_gradients",
        "a communication detail, not priced",
    ),
    (
        "bf16.bf16_master_weights_and_grads",
        "bf16 master weights and gradients under DeepSpeed are not priced (the fp32 master is)",
    ),
    (
        "bf16.bf16_optimizer_states",
        "bf16 optimizer states under DeepSpeed are not priced (fp32 states are)",
    ),
    (
        "torch_autocast.*",
        "torch autocast inside DeepSpeed is not priced apart from bf16 mixed precision",
    ),
    (
        "zero_force_ds_cpu_optimizer",
        "which CPU optimizer runs: host-side, not the GPU's bytes",
    ),
    ("zero_allow_untested_optimizer", "a permission, not a size"),
    ("fp16.*", "loss scaling: no memory"),
    ("bf16.*", "no memory"),
    ("optimizer.params.*", "hyperparameters: no memory"),
    ("scheduler.*", "the learning-rate schedule: no memory"),
    ("gradient_clipping", "no memory"),
    ("steps_per_print", "logging"),
    ("wall_clock_breakdown", "logging"),
    ("flops_profiler.*", "profiling"),
    ("tensorboard.*", "logging"),
    ("wandb.*", "logging"),
];

/// Reads a DeepSpeed config.
pub fn read(root: &Value) -> Result<Out, ReadError> {
    let mut doc = Doc::new(root);
    let mut out = Out::default();
    read_batch(&mut doc, &mut out)?;
    read_zero(&mut doc, &mut out)?;
    read_precision(&mut doc, &mut out)?;
    read_optimizer(&mut doc, &mut out)?;
    read_auto(&mut doc, &mut out);
    finish(&mut doc, &mut out, "DeepSpeed", IGNORED);
    Ok(out)
}

/// `"auto"` values left: filled from another file.
fn read_auto(doc: &mut Doc, out: &mut Out) {
    for (key, v) in doc.rest() {
        if v.is_auto() {
            out.ignore(&key, v, "\"auto\": the Hugging Face Trainer fills it from TrainingArguments (give that file with --from too)");
        } else {
            // Not auto: back to the table's reasons.
            let mut one = Doc::from_pairs(vec![(key, v)]);
            finish(&mut one, out, "DeepSpeed", IGNORED);
        }
    }
}

/// A key whose value is `"auto"` is listed as such and not read.
fn skip_auto(doc: &mut Doc, out: &mut Out, key: &str) -> bool {
    if doc.peek(key).is_some_and(Value::is_auto) {
        let v = doc.take(key).unwrap_or(Value::Null);
        out.ignore(key, v, "\"auto\": the Hugging Face Trainer fills it from TrainingArguments (give that file with --from too)");
        return true;
    }
    false
}

fn read_batch(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    for (key, flag) in [
        ("train_micro_batch_size_per_gpu", "--micro-batch"),
        ("gradient_accumulation_steps", "--grad-accum"),
        ("train_batch_size", "--batch"),
    ] {
        if skip_auto(doc, out, key) {
            continue;
        }
        if let Some(n) = doc.uint(key)? {
            out.set(key, n, flag, n);
        }
    }
    Ok(())
}

fn read_zero(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    out.set("(a DeepSpeed config)", "", "--framework", "deepspeed");
    let stage = "zero_optimization.stage";
    if !skip_auto(doc, out, stage) {
        match doc.uint(stage)? {
            Some(s @ 0..=3) => out.set(stage, s, "--zero", s),
            Some(s) => {
                return Err(ReadError::at(
                    stage,
                    format!("ZeRO stages are 0 to 3, got {s}"),
                ))
            }
            None => out.trainer_default(stage, "0", "--zero", "0", DEFAULTS[0].2),
        }
    }
    for (key, flag) in [
        (
            "zero_optimization.offload_optimizer.device",
            "--offload-optimizer",
        ),
        ("zero_optimization.offload_param.device", "--offload-params"),
    ] {
        if let Some(dev) = doc.text(key)? {
            match dev.to_ascii_lowercase().as_str() {
                "cpu" | "nvme" => out.set(key, &dev, flag, ""),
                "none" => out.ignore(key, &dev, "no offload"),
                _ => {
                    return Err(ReadError::at(
                        key,
                        format!("expected cpu, nvme or none, got {dev}"),
                    ))
                }
            }
        }
    }
    for (key, flag) in [
        (
            "zero_optimization.reduce_bucket_size",
            "--reduce-bucket-size",
        ),
        (
            "zero_optimization.stage3_prefetch_bucket_size",
            "--prefetch-bucket-size",
        ),
        (
            "zero_optimization.prefetch_bucket_size",
            "--prefetch-bucket-size",
        ),
    ] {
        if !skip_auto(doc, out, key) {
            bucket(doc, out, key, flag)?;
        }
    }
    pending_numbers(doc, out)
}

fn bucket(doc: &mut Doc, out: &mut Out, key: &str, flag: &'static str) -> Result<(), ReadError> {
    if let Some(v) = doc.take(key) {
        let n =
            v.text().as_deref().and_then(number).ok_or_else(|| {
                ReadError::at(key, format!("expected a number of values, got {v}"))
            })?;
        out.set(key, &v, flag, n);
    }
    Ok(())
}

/// The keys other work is adding (the pending table).
fn pending_numbers(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    for (key, what) in [
        ("zero_optimization.sub_group_size", Pending::SubGroupSize),
        (
            "zero_optimization.stage3_param_persistence_threshold",
            Pending::ParamPersistenceThreshold,
        ),
        (
            "zero_optimization.param_persistence_threshold",
            Pending::ParamPersistenceThreshold,
        ),
    ] {
        if skip_auto(doc, out, key) {
            continue;
        }
        if let Some(v) = doc.take(key) {
            let n = v
                .text()
                .as_deref()
                .and_then(number)
                .ok_or_else(|| ReadError::at(key, format!("expected a number, got {v}")))?;
            out.pending(key, &v, what, n);
        }
    }
    let key = "zero_optimization.overlap_comm";
    if !skip_auto(doc, out, key) {
        if let Some(b) = doc.flag(key)? {
            out.pending(key, b, Pending::OverlapComm, b);
        }
    }
    Ok(())
}

fn read_precision(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    for key in ["bf16.enabled", "fp16.enabled"] {
        if skip_auto(doc, out, key) {
            continue;
        }
        match doc.flag(key)? {
            // DeepSpeed keeps an fp32 master copy and fp32 Adam states
            // under bf16 and fp16 (runtime/bf16_optimizer.py,
            // runtime/fp16/fused_optimizer.py).
            Some(true) => out.set(key, true, "--precision", "mixed"),
            Some(false) => out.ignore(key, false, "off"),
            None => {}
        }
    }
    if !out.has("--precision") && !doc.has("bf16.enabled") && !doc.has("fp16.enabled") {
        // Neither: DeepSpeed trains in fp32.
        out.trainer_default(
            "bf16.enabled",
            "false",
            "--precision",
            "fp32",
            DEFAULTS[5].2,
        );
    }
    Ok(())
}

fn read_optimizer(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let key = "optimizer.type";
    if let Some(t) = doc.text(key)? {
        match t.to_ascii_lowercase().as_str() {
            "adam" | "adamw" | "cpuadam" | "fusedadam" => out.set(key, &t, "--optimizer", "adamw"),
            "lion" => out.set(key, &t, "--optimizer", "lion"),
            _ => out.ignore(
                key,
                &t,
                "an optimizer membudget does not price under DeepSpeed",
            ),
        }
    }
    Ok(())
}
