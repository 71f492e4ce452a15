//! torchtitan's TOML, in its three layouts: `[training]` sizes and
//! `[experimental]` PP/CP (2024-12, `9dec370`), the same under
//! `torchtitan/models/llama/` (2025-03), and `[parallelism]` with
//! `local_batch_size` (2025-08). Keys: `torchtitan/config_manager.py`
//! (later `torchtitan/config/job_config.py`).

use super::common;
use super::models;
use super::pending::Pending;
use super::value::{finish, number, Doc, Out, ReadError, Value};

/// torchtitan's defaults for what a file leaves out.
pub const DEFAULTS: &[(&str, &str, &str)] = &[
    ("data_parallel_shard_degree", "-1 (every GPU the other sizes leave)", "torchtitan 0.3.0 `torchtitan/config/configs.py:124`: `data_parallel_shard_degree: int = -1` (the same in `config_manager.py`, 2024-12)"),
    ("mixed_precision_param", "bfloat16", "torchtitan 0.3.0 `torchtitan/config/configs.py:85`: `mixed_precision_param: Literal[\"bfloat16\", \"float32\"] = \"bfloat16\"`"),
    ("activation_checkpoint.mode", "selective", "torchtitan `torchtitan/config_manager.py` (2024-12, 9dec370): `'--activation_checkpoint.mode', type=str, default='selective'`"),
    ("activation_checkpoint.selective_ac_option", "2 (every other layer)", "torchtitan `torchtitan/config_manager.py` (2024-12, 9dec370): `'--activation_checkpoint.selective_ac_option', type=str, default='2'`"),
    ("model (the modules)", "eager PyTorch: --impl hf", "torchtitan 0.3.0 `torchtitan/models/llama3/model/model.py` (at b5bcd76c `models/common/decoder.py`, `feed_forward.py`): `nn.RMSNorm`, rotary as complex products, SDPA, `F.silu(w1(x)) * w3(x)`, no fused kernels"),
    ("fsdp_reshard_after_forward", "default: reshard after forward, but not under PP (`not pp_enabled`, `torchtitan/distributed/fsdp.py`), which membudget still reads as resharding (docs/steptime.md: FSDP2 under a pipeline)", "torchtitan 0.3.0 `torchtitan/config/configs.py:136`: `fsdp_reshard_after_forward: Literal[\"default\", \"always\", \"never\"] = \"default\"`"),
    ("pipeline_parallel_first/last_stage_less_layers", "1 and 1 (the embedding and the output each weigh a layer)", "torchtitan `torchtitan/config/configs.py:197` at b5bcd76c: `pipeline_parallel_first_stage_less_layers: int = 1` (and `last`), split by `_generate_llm_fqn_per_model_part` in `torchtitan/distributed/pipeline_parallel.py`"),
    ("compile.components", "[\"model\", \"loss\"] (each block and the loss compiled apart): --compile-scope layers-loss", "torchtitan 0.3.0 `torchtitan/config/configs.py`, `Compile.components: list[Literal[\"model\", \"loss\"]] = field(default_factory=lambda: [\"model\", \"loss\"])`; `apply_compile` compiles each `TransformerBlock`, `build_cross_entropy_loss` the loss"),
];

/// Keys read and not priced, with the reason (`*` matches the rest of a key).
pub const IGNORED: &[(&str, &str)] = &[
    (
        "compile.*",
        "compile's other settings (backend): compile.enable and compile.components price it",
    ),
    (
        "training.enable_cpu_offload",
        "FSDP CPU offload is not priced",
    ),
    (
        "training.mixed_precision_reduce",
        "the gradient reduction's dtype: not priced apart",
    ),
    (
        "*.pipeline_parallel_split_points",
        "where the stages split: even splits are priced",
    ),
    (
        "*.pipeline_parallel_layers_per_stage",
        "even splits are priced",
    ),
    (
        "float8.enable_fsdp_float8_all_gather",
        "fp8 all-gather: not priced apart",
    ),
    (
        "float8.precompute_float8_dynamic_scale_for_fsdp",
        "a scale: small",
    ),
    (
        "float8.force_recompute_fp8_weight_in_bwd",
        "not priced apart",
    ),
    (
        "float8.filter_fqns",
        "which linears: the layers' all are priced",
    ),
    ("model.norm_type", "the norm's kernel: no memory here"),
    ("model.tokenizer_path", "no memory"),
    ("optimizer.lr", "a hyperparameter: no memory"),
    ("optimizer.eps", "a hyperparameter: no memory"),
    ("optimizer.weight_decay", "a hyperparameter: no memory"),
    ("training.max_norm", "gradient clipping: no memory"),
    ("training.warmup_steps", "no memory"),
    ("training.steps", "no memory"),
    ("training.dataset*", "the data: no memory"),
    ("lr_scheduler.*", "no memory"),
    ("job.*", "no memory"),
    ("profiling.*", "profiling"),
    ("metrics.*", "logging"),
    ("checkpoint.*", "checkpoint files: no memory in the step"),
    ("comm.*", "timeouts: no memory"),
];

/// Reads a torchtitan TOML.
pub fn read(root: &Value) -> Result<Out, ReadError> {
    let mut doc = Doc::new(root);
    let mut out = Out::default();
    let name = doc.text("model.name")?.unwrap_or_default();
    if let Some(f) = doc.text("model.flavor")? {
        match models::torchtitan(&name, &f) {
            Some(p) => out.set(
                "model.name + model.flavor",
                format!("{name} {f}"),
                "--model",
                p,
            ),
            None => out.unknown("model.name + model.flavor", &format!("{name} {f}")),
        }
    }
    // torchtitan's modules are eager PyTorch, not fused kernels.
    out.trainer_default(
        "model (the modules)",
        "eager PyTorch",
        "--impl",
        "hf",
        DEFAULTS[5].2,
    );
    for (keys, flag) in [
        (
            &["training.local_batch_size", "training.batch_size"][..],
            "--micro-batch",
        ),
        (&["training.global_batch_size"][..], "--batch"),
        (&["training.seq_len"][..], "--seq"),
    ] {
        for key in keys {
            // `global_batch_size = -1` (the 2025 default): local batch × dp.
            if doc.peek(key).and_then(Value::text).as_deref() == Some("-1") {
                doc.take(key);
                out.ignore(
                    key,
                    -1,
                    "−1: the local batch × the data-parallel size, no accumulation",
                );
                continue;
            }
            if let Some(n) = doc.uint(key)? {
                if !(flag == "--batch" && n == 0) {
                    out.set(key, n, flag, n);
                }
            }
        }
    }
    read_parallel(&mut doc, &mut out)?;
    read_precision(&mut doc, &mut out)?;
    read_checkpointing(&mut doc, &mut out)?;
    read_optimizer(&mut doc, &mut out)?;
    read_async_tp(&mut doc, &mut out)?;
    common::compile(&mut doc, &mut out, "compile.enable")?;
    common::compile(&mut doc, &mut out, "training.compile")?;
    read_compile_scope(&mut doc, &mut out);
    finish(&mut doc, &mut out, "torchtitan", IGNORED);
    Ok(out)
}

/// What torchtitan compiles (`compile.components`, default `["model",
/// "loss"]`, DEFAULTS[7]): each block and the loss apart (`--compile-scope
/// layers-loss`), or the blocks alone (`layers`). A file without the
/// `[compile]` section (`training.compile`, 2024-12 to 2025-08) gets the
/// default too, though releases from 2024-12-18 to 2025-04-02 left the loss
/// eager (`--compile-scope layers`).
fn read_compile_scope(doc: &mut Doc, out: &mut Out) {
    let key = "compile.components";
    let Some(v) = doc.take(key) else {
        let on = out.sets("--compile");
        if on {
            out.trainer_default(
                key,
                "[\"model\", \"loss\"]",
                "--compile-scope",
                "layers-loss",
                DEFAULTS[7].2,
            );
        }
        return;
    };
    let items = v.items();
    let has = |c: &str| items.iter().any(|i| i == c);
    match (has("model"), has("loss")) {
        (true, true) => out.set(key, &v, "--compile-scope", "layers-loss"),
        (true, false) => out.set(key, &v, "--compile-scope", "layers"),
        _ => out.ignore(
            key,
            &v,
            "the loss compiled without the model: not priced apart (priced eager)",
        ),
    }
}

/// Async tensor parallelism: `compile.enable_async_tensor_parallel`
/// (torchtitan 0.3.0 `torchtitan/config/configs.py`, `CompileConfig`),
/// `parallelism.enable_async_tensor_parallel` in 2025's files (820504e,
/// the async-TP benchmark's, `torchtitan/config_manager.py`,
/// `Parallelism`), or `experimental.enable_async_tensor_parallel` in
/// 2024's (9dec370).
fn read_async_tp(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    for key in [
        "compile.enable_async_tensor_parallel",
        "parallelism.enable_async_tensor_parallel",
        "experimental.enable_async_tensor_parallel",
    ] {
        match doc.flag(key)? {
            Some(true) => out.set(key, true, "--async-tp", ""),
            Some(false) => out.ignore(key, false, "off: priced without it"),
            None => {}
        }
    }
    Ok(())
}

/// A size from `[parallelism]`, `[training]` or `[experimental]`, whichever has it.
fn size(doc: &mut Doc, name: &str) -> Result<Option<(String, i64)>, ReadError> {
    for section in ["parallelism", "training", "experimental"] {
        let key = format!("{section}.{name}");
        if let Some(v) = doc.take(&key) {
            let n = v
                .text()
                .as_deref()
                .and_then(number)
                .filter(|x| x.fract() == 0.0 && *x >= -1.0 && *x < 1e6)
                .ok_or_else(|| {
                    ReadError::at(&key, format!("expected a whole number or -1, got {v}"))
                })?;
            return Ok(Some((key, n as i64)));
        }
    }
    Ok(None)
}

/// torchtitan's TP plan (`apply_tp` in parallelize_llama) for `n` GPUs:
/// the embedding and output layer split, sequence parallelism on, the
/// logits split under loss parallelism unless `disable_loss_parallel`.
fn tp_plan(out: &mut Out, key: &str, n: i64, no_loss_parallel: Option<(&str, bool)>) {
    match no_loss_parallel {
        Some((k, true)) => out.set(k, true, "--tp-plan", "torchtitan"),
        Some((k, false)) => out.set(k, false, "--tp-plan", "loss-parallel"),
        None => out.set(key, n, "--tp-plan", "loss-parallel"),
    }
    out.set(key, n, "--sp", "");
}

fn read_parallel(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    // Loss parallelism is on unless disabled (`disable_loss_parallel:
    // bool = False`, `[parallelism]`, `training.` before 2025).
    let mut no_loss_parallel = None;
    for key in [
        "parallelism.disable_loss_parallel",
        "training.disable_loss_parallel",
    ] {
        if let Some(b) = doc.flag(key)? {
            no_loss_parallel = Some((key, b));
        }
    }
    for (name, flag) in [
        ("tensor_parallel_degree", "--tp"),
        ("pipeline_parallel_degree", "--pp"),
        ("context_parallel_degree", "--cp"),
        ("expert_parallel_degree", "--ep"),
    ] {
        if let Some((key, n)) = size(doc, name)? {
            if n < 1 {
                return Err(ReadError::at(&key, format!("expected 1 or more, got {n}")));
            }
            out.set(&key, n, flag, n);
            if flag == "--tp" && n > 1 {
                tp_plan(out, &key, n, no_loss_parallel.take());
            }
        }
    }
    if let Some((k, b)) = no_loss_parallel {
        out.ignore(k, b, "loss parallelism acts with tensor parallelism only");
    }
    let replicate = size(doc, "data_parallel_replicate_degree")?;
    let shard = size(doc, "data_parallel_shard_degree")?;
    // FSDP2 over the shard group (torchtitan/parallelisms/parallelize_llama.py, `apply_fsdp`).
    match &shard {
        Some((key, n)) if *n == 1 => out.ignore(key, n, "no sharding: plain data parallelism"),
        Some((key, n)) => {
            out.set(key, n, "--framework", "fsdp2");
            out.set(key, n, "--zero", "3");
            if *n > 1 && replicate.as_ref().is_some_and(|(_, r)| *r > 1) {
                out.set(key, n, "--dp-shard", n);
            }
        }
        None => {
            out.trainer_default(
                "training.data_parallel_shard_degree",
                "-1",
                "--framework",
                "fsdp2",
                DEFAULTS[0].2,
            );
            out.trainer_default(
                "training.data_parallel_shard_degree",
                "-1",
                "--zero",
                "3",
                DEFAULTS[0].2,
            );
        }
    }
    if let Some((key, r)) = replicate {
        out.ignore(
            &key,
            r,
            "replicas: the data-parallel size is what --nproc-per-node leaves",
        );
    }
    for key in [
        "parallelism.fsdp_reshard_after_forward",
        "training.fsdp_reshard_after_forward",
    ] {
        if let Some(v) = doc.text(key)? {
            let b = v != "never";
            out.set(key, &v, "--reshard-after-forward", b);
        }
    }
    read_schedule(doc, out)?;
    pipeline_split(out);
    pipeline_batches(doc, out)
}

/// The pipeline's schedule: 1F1B, ZB-H1, or interleaved as `--vp 2`.
fn read_schedule(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    for key in [
        "experimental.pipeline_parallel_schedule",
        "parallelism.pipeline_parallel_schedule",
    ] {
        if let Some(s) = doc.text(key)? {
            match s.as_str() {
                "1F1B" | "1f1b" => out.set(key, &s, "--schedule", "1f1b"),
                // Two stages a GPU unless `pipeline_parallel_layers_per_stage`
                // says otherwise (`_get_num_virtual_stages`).
                "Interleaved1F1B" if !doc.has("parallelism.pipeline_parallel_layers_per_stage") => {
                    out.set(key, &s, "--schedule", "1f1b");
                    out.set(key, &s, "--vp", 2);
                }
                "ZBH1" | "ZeroBubble" => out.set(key, &s, "--schedule", "zb-h1"),
                _ => out.ignore(
                    key,
                    s,
                    "a schedule membudget does not price (1F1B, interleaved with --vp, ZB-H1)",
                ),
            }
        }
    }
    Ok(())
}

/// Under pipeline parallelism torchtitan's local batch is split into the
/// pipeline's micro-batches: `pipeline_parallel_microbatches` of them
/// (2024-12 and 2025-03, default the pipeline degree: `pipeline_llama`,
/// `n_microbatches = parallel_dims.pp` when unset) or micro-batches of
/// `pipeline_parallel_microbatch_size` (2025-08, default 1): the local
/// batch becomes `--micro-batch` × `--grad-accum`.
fn pipeline_batches(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let pp = out.uint_arg("--pp").unwrap_or(1);
    let mut count = None;
    for key in [
        "experimental.pipeline_parallel_microbatches",
        "parallelism.pipeline_parallel_microbatches",
    ] {
        if let Some(n) = doc.uint(key)? {
            count = Some((key, n));
        }
    }
    let size = doc.uint("parallelism.pipeline_parallel_microbatch_size")?;
    let Some(local) = out.set.iter().position(|s| s.flag == "--micro-batch") else {
        return Ok(());
    };
    let batch: u64 = out.set[local].arg.parse().unwrap_or(0);
    if pp < 2 || batch == 0 {
        return Ok(());
    }
    let layout_2025 = doc.has("parallelism.pipeline_parallel_degree");
    let (key, micro) = match (count, size) {
        (Some((key, n)), _) if n > 0 => (key.to_string(), batch / n),
        (_, Some(m)) if m > 0 => ("parallelism.pipeline_parallel_microbatch_size".into(), m),
        _ if layout_2025 => ("pipeline_parallel_microbatch_size (unset: 1)".into(), 1),
        _ => (
            format!("pipeline_parallel_microbatches (unset: the pipeline degree, {pp})"),
            batch / pp,
        ),
    };
    if micro == 0 || !batch.is_multiple_of(micro) {
        return Err(ReadError::at(
            &key,
            format!("the local batch {batch} does not split into micro-batches of {micro}"),
        ));
    }
    out.set[local].arg = micro.to_string();
    out.set[local].key += &format!(" ÷ {key}");
    out.set(&key, batch / micro, "--grad-accum", batch / micro);
    Ok(())
}

/// Each pipeline GPU's layers as torchtitan splits them
/// (`torchtitan/distributed/pipeline_parallel.py` at b5bcd76c,
/// `_generate_llm_fqn_per_model_part`): the embedding and the output each
/// weigh one layer (`pipeline_parallel_first/last_stage_less_layers = 1`),
/// the weighted count is shared over the `pp` × `vp` stages with the
/// remainder on the first stages, and GPU r runs stages r, r + pp, ….
/// Empty for a single GPU or a model that is not a preset.
pub fn torchtitan_split(layers: u64, pp: u64, vp: u64) -> Vec<u64> {
    let stages = pp * vp;
    let weighted = layers + 2;
    if pp < 2 || stages > weighted {
        return Vec::new();
    }
    let (per, extra) = (weighted / stages, weighted % stages);
    let stage =
        |i: u64| per + u64::from(i < extra) - u64::from(i == 0) - u64::from(i == stages - 1);
    (0..pp)
        .map(|r| (0..vp).map(|v| stage(r + v * pp)).sum())
        .collect()
}

/// torchtitan's split ([`torchtitan_split`]) as `--first-stage-layers` and
/// `--last-stage-layers` where it is of that form (the GPUs between alike),
/// named as priced even where it is not.
fn pipeline_split(out: &mut Out) {
    let Some(layers) = out
        .arg("--model")
        .and_then(crate::detailed::model::presets::preset)
        .map(|p| p.arch.layers)
    else {
        return;
    };
    let (pp, vp) = (
        out.uint_arg("--pp").unwrap_or(1),
        out.uint_arg("--vp").unwrap_or(1),
    );
    let counts = torchtitan_split(layers, pp, vp);
    let Some((&first, rest)) = counts.split_first() else {
        return;
    };
    let (&last, middle) = rest.split_last().unwrap_or((&first, &[]));
    let even = counts.iter().all(|&c| c == first);
    let key = "pipeline_parallel_first/last_stage_less_layers";
    let value = format!("1 and 1: layers per GPU {counts:?}");
    if even {
        return;
    }
    if middle.iter().all(|&m| Some(&m) == middle.first()) {
        for (flag, n) in [
            ("--first-stage-layers", first),
            ("--last-stage-layers", last),
        ] {
            out.trainer_default(key, &value, flag, &n.to_string(), DEFAULTS[6].2);
        }
    } else {
        out.ignore(
            key,
            value,
            "the GPUs between the first and the last differ: priced as an even split",
        );
    }
}

fn read_precision(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let key = "training.mixed_precision_param";
    match doc.text(key)?.as_deref() {
        Some("float32") => out.set(key, "float32", "--precision", "fp32"),
        Some(p) => out.set(key, p, "--precision", "mixed"),
        None => out.trainer_default(key, "bfloat16", "--precision", "mixed", DEFAULTS[1].2),
    }
    let converters = doc
        .take("model.converters")
        .map(|v| v.items())
        .unwrap_or_default();
    let linear = doc.flag("float8.enable_float8_linear")?.unwrap_or(false);
    if linear || converters.iter().any(|c| c == "float8") {
        let recipe = doc.text("float8.recipe_name")?.unwrap_or_default();
        let r = if recipe == "rowwise" {
            "rowwise"
        } else {
            "tensorwise"
        };
        out.set(
            "float8",
            if linear {
                "enable_float8_linear"
            } else {
                "converters"
            },
            "--fp8",
            r,
        );
    }
    Ok(())
}

fn read_checkpointing(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let key = "activation_checkpoint.mode";
    let mode = doc.text(key)?;
    let option = doc.text("activation_checkpoint.selective_ac_option")?;
    let (m, o, default) = match (&mode, &option) {
        (Some(m), o) => (m.clone(), o.clone().unwrap_or_else(|| "2".into()), false),
        (None, o) => (
            "selective".to_string(),
            o.clone().unwrap_or_else(|| "2".into()),
            true,
        ),
    };
    let flag = match (m.as_str(), o.as_str()) {
        ("none", _) => Some("none"),
        ("full", _) | ("selective", "1") => Some("full"),
        ("selective", "op") => Some("selective-op"),
        _ => None,
    };
    match (flag, default) {
        (Some(f), false) => out.set(key, format!("{m} {o}"), "--recompute", f),
        (Some(f), true) => out.trainer_default(key, "selective", "--recompute", f, DEFAULTS[2].2),
        (None, _) => out.ignore(
            key,
            format!("{m} {o}"),
            "checkpointing every Nth layer is not priced (every layer or none is)",
        ),
    }
    Ok(())
}

fn read_optimizer(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    if let Some(n) = doc.text("optimizer.name")? {
        super::common::optimizer(out, "optimizer.name", &n);
    }
    if let Some(true) = doc.flag("optimizer.fused")? {
        out.set("optimizer.fused", true, "--adam", "fused");
    }
    if let Some(i) = doc.text("optimizer.implementation")? {
        let a = match i.as_str() {
            "fused" => "fused",
            "foreach" => "foreach",
            _ => "loop",
        };
        out.set("optimizer.implementation", &i, "--adam", a);
    }
    if let Some(true) = doc.flag("optimizer.early_step_in_backward")? {
        out.pending(
            "optimizer.early_step_in_backward",
            true,
            Pending::OptimizerInBackward,
            "",
        );
    }
    Ok(())
}
