//! Megatron-LM's (and Megatron-Bridge's launch scripts') arguments:
//! `megatron/training/arguments.py` at the snapshot docs/trainers.md names.
//! Defaults: no pipeline or tensor parallelism, Adam, fp32 unless
//! `--bf16`/`--fp16`, no recomputation.

use super::value::{finish, Doc, Out, ReadError, Value};

/// Megatron's defaults for what the flags leave out.
pub const DEFAULTS: &[(&str, &str, &str)] = &[
    ("--tensor-model-parallel-size", "1", "megatron/training/arguments.py: `group.add_argument('--tensor-model-parallel-size', type=int, default=1, …)`"),
    ("--pipeline-model-parallel-size", "1", "megatron/training/arguments.py: `'--pipeline-model-parallel-size', type=int, default=1`"),
    ("--recompute-granularity", "None (no recomputation)", "megatron/training/arguments.py: `'--recompute-granularity', type=str, default=None`"),
    ("--recompute-modules", "`core_attn` (under `--recompute-granularity selective`)", "megatron/core/transformer/transformer_config.py: `if self.recompute_modules is None: self.recompute_modules = [\"core_attn\"]`"),
    ("--optimizer", "adam", "megatron/training/arguments.py: `'--optimizer', type=str, default='adam'` (AdamW's decoupled decay)"),
    ("--overlap-grad-reduce", "off: `--no-overlap-grad-reduce`", "megatron/training/arguments.py: `'--overlap-grad-reduce', action='store_true', default=False` (_add_distributed_args)"),
    ("--overlap-param-gather", "off: `--no-overlap-param-gather` (with `--use-distributed-optimizer`)", "megatron/training/arguments.py: `'--overlap-param-gather', action='store_true', default=False` (_add_distributed_args)"),
    ("--tp-comm-overlap", "off: `--no-tp-comm-overlap` (with `--sequence-parallel` at tp 2 or more)", "megatron/core/model_parallel_config.py: `tp_comm_overlap: bool = False`, a store_true flag by `ArgumentGroupFactory(TransformerConfig)` (megatron/training/argument_utils.py)"),
];

/// Keys read and not priced, with the reason (`*` matches the rest of a key).
pub const IGNORED: &[(&str, &str)] = &[
    (
        "grad-reduce-in-bf16",
        "the reduction's dtype: the gradient buffer is priced in the training dtype",
    ),
    ("fp8-amax-*", "fp8 scaling history: small"),
    (
        "cross-entropy-loss-fusion",
        "Megatron's fused cross-entropy is not priced apart from its loss",
    ),
    (
        "empty-unused-memory-level",
        "cache emptying: the allocator, not the tensors",
    ),
    (
        "attention-dropout",
        "dropout 0 or not: membudget's --dropout",
    ),
    ("hidden-dropout", "dropout 0 or not: membudget's --dropout"),
    (
        "use-mcore-models",
        "Megatron-Core's models: the fused profile",
    ),
    ("attention-backend", "the fused profile's attention"),
    ("normalization", "RMSNorm or LayerNorm: the family"),
    ("disable-bias-linear", "biases: small"),
    ("apply-layernorm-1p", "no memory"),
    (
        "kv-channels",
        "heads × kv-channels = hidden in these models",
    ),
    (
        "step-batch-size-schedule",
        "a batch ramp: the largest batch is priced",
    ),
    (
        "rampup-batch-size",
        "a batch ramp: the largest batch is priced",
    ),
];

/// Reads Megatron's flags (key without the leading `--`).
pub fn read(pairs: Vec<(String, Value)>) -> Result<Out, ReadError> {
    let mut doc = Doc::from_pairs(
        pairs
            .into_iter()
            .map(|(k, v)| (k.replace('_', "-"), v))
            .collect(),
    );
    let mut out = Out::default();
    let layers = read_shape(&mut doc, &mut out)?;
    read_experts(&mut doc, &mut out)?;
    let (mut pp, mut tp) = (None, 1);
    for (key, flag) in [
        ("micro-batch-size", "--micro-batch"),
        ("global-batch-size", "--batch"),
        ("seq-length", "--seq"),
        ("tensor-model-parallel-size", "--tp"),
        ("pipeline-model-parallel-size", "--pp"),
        ("context-parallel-size", "--cp"),
        ("expert-model-parallel-size", "--ep"),
        ("expert-tensor-parallel-size", "--etp"),
        ("virtual-pipeline-model-parallel-size", "--vp"),
        ("num-layers-per-virtual-pipeline-stage", "--vp-layers"),
    ] {
        if let Some(n) = doc.uint(key)? {
            if flag == "--vp-layers" {
                out.ignore(
                    key,
                    n,
                    "give the virtual stages with --vp (layers per stage here)",
                );
            } else {
                out.set(key, n, flag, n);
            }
            if flag == "--pp" {
                pp = Some(n);
            }
            if flag == "--tp" {
                tp = n;
            }
        }
    }
    read_pipeline_split(&mut doc, &mut out, layers, pp)?;
    let (sp, distributed) = read_switches(&mut doc, &mut out)?;
    read_overlaps(&mut doc, &mut out, tp > 1 && sp, distributed);
    read_offload(&mut doc, &mut out)?;
    read_a2a_overlap(&mut doc, &mut out);
    finish(&mut doc, &mut out, "Megatron-LM", IGNORED);
    Ok(out)
}

/// An uneven pipeline split: the first and last stages' layers as given
/// (`--decoder-first-pipeline-num-layers`, `--decoder-last-pipeline-num-layers`),
/// or as `--account-for-embedding-in-pipeline-split` and
/// `--account-for-loss-in-pipeline-split` build them: the embedding and
/// the loss each counted as a layer, (L + e + l) / pp a stage, so the
/// first (last) stage builds one layer fewer
/// (`megatron/core/transformer/transformer_block.py`,
/// `get_num_layers_to_build`).
fn read_pipeline_split(
    doc: &mut Doc,
    out: &mut Out,
    layers: Option<u64>,
    pp: Option<u64>,
) -> Result<(), ReadError> {
    for (key, flag) in [
        ("decoder-first-pipeline-num-layers", "--first-stage-layers"),
        ("decoder-last-pipeline-num-layers", "--last-stage-layers"),
    ] {
        if let Some(n) = doc.uint(key)? {
            out.set(key, n, flag, n);
        }
    }
    let embedding = doc
        .take("account-for-embedding-in-pipeline-split")
        .is_some();
    let loss = doc.take("account-for-loss-in-pipeline-split").is_some();
    let counted = u64::from(embedding) + u64::from(loss);
    let accounts = [
        (
            embedding,
            "account-for-embedding-in-pipeline-split",
            "--first-stage-layers",
        ),
        (
            loss,
            "account-for-loss-in-pipeline-split",
            "--last-stage-layers",
        ),
    ];
    for (given, key, flag) in accounts {
        if !given {
            continue;
        }
        match (layers, pp) {
            (Some(l), Some(p)) if p > 1 && (l + counted).is_multiple_of(p) => {
                out.set(key, true, flag, (l + counted) / p - 1);
            }
            _ => out.ignore(
                key,
                true,
                "needs --num-layers and --pipeline-model-parallel-size (above 1, dividing the layers with the embedding and the loss counted) in the file",
            ),
        }
    }
    Ok(())
}

/// The model's shape flags → `--arch llama|gpt2` and its sizes; the layers.
fn read_shape(doc: &mut Doc, out: &mut Out) -> Result<Option<u64>, ReadError> {
    let Some(layers) = doc.uint("num-layers")? else {
        return Ok(None);
    };
    let swiglu = doc.take("swiglu").is_some();
    out.set(
        "swiglu",
        swiglu,
        "--arch",
        if swiglu { "llama" } else { "gpt2" },
    );
    out.set("num-layers", layers, "--layers", layers);
    for (key, flag) in [
        ("hidden-size", "--hidden"),
        ("num-attention-heads", "--heads"),
        ("ffn-hidden-size", "--ffn"),
        ("vocab-size", "--vocab"),
    ] {
        if let Some(n) = doc.uint(key)? {
            out.set(key, n, flag, n);
        }
    }
    let gqa = doc.take("group-query-attention").is_some();
    if let Some(n) = doc.uint("num-query-groups")? {
        if gqa {
            out.set("num-query-groups", n, "--kv-heads", n);
        } else {
            out.ignore(
                "num-query-groups",
                n,
                "without --group-query-attention Megatron ignores it",
            );
        }
    }
    if let Some(v) = doc.take("untie-embeddings-and-output-weights") {
        if swiglu {
            out.ignore(
                "untie-embeddings-and-output-weights",
                v,
                "the shape's llama family is untied already",
            );
        } else {
            out.set(
                "untie-embeddings-and-output-weights",
                true,
                "--untie-embeddings-and-output-weights",
                "",
            );
        }
    }
    read_positions(doc, out, swiglu)?;
    Ok(Some(layers))
}

/// `--num-experts`: a mixture of experts (`megatron/training/arguments.py`:
/// `--moe-router-topk` 2 by default, `--moe-ffn-hidden-size` the dense
/// `--ffn-hidden-size` by default, `--moe-shared-expert-intermediate-size`
/// none, `--moe-layer-freq` 1, every layer, or `([0]*N+[1]*M)`, N dense
/// layers first). The command line takes an expert layout from a preset
/// or a config.json only, so a line is read as the preset with its
/// experts, router, widths, layers and hidden size (NeMo's and
/// Megatron-Bridge's Mixtral, Qwen3 and DeepSeek-V3 recipes), and refused
/// in words otherwise: read as a dense model it would price the experts
/// as one MLP. A line without a shape leaves the model to `--model`.
fn read_experts(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let Some(experts) = doc.uint("num-experts")? else {
        return Ok(());
    };
    if out.uint_arg("--layers").is_none() {
        out.ignore(
            "num-experts",
            experts,
            "the line gives no shape (--num-layers): the model's experts come from --model or --config",
        );
        return Ok(());
    }
    let mut given = |doc: &mut Doc, key: &str| -> Result<Option<u64>, ReadError> {
        let n = doc.uint(key)?;
        if let Some(n) = n {
            out.ignore(key, n, "read with --num-experts: the preset's experts");
        }
        Ok(n)
    };
    let top_k = given(doc, "moe-router-topk")?.unwrap_or(2);
    let width = given(doc, "moe-ffn-hidden-size")?;
    let shared = given(doc, "moe-shared-expert-intermediate-size")?.unwrap_or(0);
    let width = width.or(out.uint_arg("--ffn"));
    let freq = doc.text("moe-layer-freq")?;
    if let Some(f) = &freq {
        out.ignore(
            "moe-layer-freq",
            f,
            "read with --num-experts: the preset's experts",
        );
    }
    let dense = match freq.as_deref().map(|f| f.replace(' ', "")) {
        None => Some(0),
        Some(f) if f == "1" => Some(0),
        Some(f) => f
            .strip_prefix("([0]*")
            .and_then(|r| r.split_once("+[1]*"))
            .and_then(|(n, _)| n.parse().ok()),
    };
    let (layers, hidden) = (out.uint_arg("--layers"), out.uint_arg("--hidden"));
    let vocab = out.uint_arg("--vocab");
    let found = crate::detailed::model::presets::PRESETS.iter().find(|p| {
        let a = &p.arch;
        a.moe.is_some_and(|m| {
            (
                m.experts,
                m.top_k,
                Some(m.expert_ffn),
                m.shared_ffn,
                Some(m.first_dense),
            ) == (experts, top_k, width, shared, dense)
        }) && (Some(a.layers), Some(a.hidden)) == (layers, hidden)
            && vocab.is_none_or(|v| v == a.vocab)
    });
    match found {
        Some(p) => out.set("num-experts", experts, "--model", p.name),
        None => {
            return Err(ReadError::at(
                "num-experts",
                format!("{experts} experts (top-{top_k}) of this shape are no preset's: give the model with --model or --config (a mixture of experts is read from a Megatron line only as a preset)"),
            ))
        }
    }
    Ok(())
}

/// `--position-embedding-type` (Megatron-LM's default `learned_absolute`,
/// `arguments.py`; the older `--use-rotary-position-embeddings` says
/// `rope`) → `--positions 0` for the gpt2 shape under rope; learned
/// positions are `--max-position-embeddings` rows (GPT-3 175B's 2,048),
/// the gpt2 shape's 1,024 without it. A llama shape's are rotary.
fn read_positions(doc: &mut Doc, out: &mut Out, swiglu: bool) -> Result<(), ReadError> {
    let kind = doc.text("position-embedding-type")?;
    let rotary = doc.take("use-rotary-position-embeddings");
    let max = doc.uint("max-position-embeddings")?;
    if swiglu {
        let why = "the llama shape's positions are rotary: no parameters";
        if let Some(k) = kind {
            out.ignore("position-embedding-type", k, why);
        }
        if let Some(v) = rotary {
            out.ignore("use-rotary-position-embeddings", v, why);
        }
        if let Some(n) = max {
            out.ignore("max-position-embeddings", n, why);
        }
        return Ok(());
    }
    match (kind.as_deref(), rotary) {
        (Some("rope"), _) => out.set("position-embedding-type", "rope", "--positions", 0),
        (None, Some(_)) => out.set("use-rotary-position-embeddings", true, "--positions", 0),
        (None | Some("learned_absolute"), _) => {
            if let Some(n) = max {
                out.set("max-position-embeddings", n, "--positions", n);
            }
            return Ok(());
        }
        (Some(k), _) => out.ignore(
            "position-embedding-type",
            k,
            "membudget's gpt2 shape has learned_absolute or rope positions",
        ),
    }
    if let Some(n) = max {
        out.ignore(
            "max-position-embeddings",
            n,
            "no learned positions: no parameters",
        );
    }
    Ok(())
}

/// The switches; returns whether the file asks for sequence parallelism
/// and the distributed optimizer (which the overlaps need).
fn read_switches(doc: &mut Doc, out: &mut Out) -> Result<(bool, bool), ReadError> {
    let on = |doc: &mut Doc, k: &str| doc.take(k).is_some();
    // Megatron keeps fp32 main parameters and Adam states under either
    // (megatron/core/optimizer/optimizer.py, Float16OptimizerWithFloat16Params).
    if let Some(k) = ["bf16", "fp16"].into_iter().find(|k| on(doc, k)) {
        out.set(k, true, "--precision", "mixed");
    } else {
        out.trainer_default(
            "bf16",
            "false",
            "--precision",
            "fp32",
            "megatron/training/arguments.py: `'--bf16', action='store_true'` (fp32 without it)",
        );
    }
    let sp = on(doc, "sequence-parallel");
    if sp {
        out.set("sequence-parallel", true, "--sp", "");
    }
    let distributed = on(doc, "use-distributed-optimizer");
    if distributed {
        out.set("use-distributed-optimizer", true, "--zero", "1");
    }
    if let Some(f) = doc.text("fp8-format")? {
        out.set("fp8-format", &f, "--fp8", "te");
    }
    // FP8 primary weights (`--fp8-param-gather`, store_true).
    if on(doc, "fp8-param-gather") {
        out.set("fp8-param-gather", true, "--fp8-param", "");
    }
    // Its transposes made per use (store_true).
    if on(doc, "disable-parameter-transpose-cache") {
        out.set(
            "disable-parameter-transpose-cache",
            true,
            "--disable-parameter-transpose-cache",
            "",
        );
    }
    read_recompute(doc, out)?;
    read_recompute_layers(doc, out)?;
    if let Some(o) = doc.text("optimizer")? {
        let opt = if o == "sgd" { "sgd" } else { "adamw" };
        out.set("optimizer", &o, "--optimizer", opt);
    }
    if let Some(n) = doc.take("moe-expert-capacity-factor") {
        let v = n.text().unwrap_or_default();
        out.set("moe-expert-capacity-factor", &v, "--capacity-factor", &v);
    }
    read_dispatcher(doc, out)?;
    if on(doc, "overlap-param-gather-with-optimizer-step") {
        out.ignore(
            "overlap-param-gather-with-optimizer-step",
            true,
            "time, not memory",
        );
    }
    Ok((sp, distributed))
}

/// `--recompute-granularity` and, under `selective`, `--recompute-modules`
/// (`megatron/core/transformer/transformer_config.py` at d98e8a64: default
/// `["core_attn"]`): `core_attn` is `--recompute selective`, `layernorm`,
/// `moe_act`, `mla_up_proj`, `mlp`, `moe` and `shared_experts` are priced
/// ([`crate::detailed::config::RecomputeModules`]), the others (the gated
/// delta-net's and hyper-connections') are read as kept, saying so.
fn read_recompute(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let key = "recompute-modules";
    let modules = doc.take(key).map(|v| v.items());
    let granularity = doc.text("recompute-granularity")?;
    match granularity.as_deref() {
        Some("full") => {
            out.set("recompute-granularity", "full", "--recompute", "full");
            if let Some(m) = modules {
                out.ignore(key, m.join(" "), "full recomputation reruns every module");
            }
        }
        Some(g) => {
            let list = modules.unwrap_or_else(|| vec!["core_attn".into()]);
            if list.iter().any(|m| m == "core_attn") {
                out.set("recompute-granularity", g, "--recompute", "selective");
            }
            let mut priced = crate::detailed::config::RecomputeModules::default();
            for m in list.iter().filter(|m| *m != "core_attn") {
                if !priced.add(m) {
                    out.ignore(key, m, "priced as kept: of Megatron's modules core_attn, layernorm, moe_act, mla_up_proj, mlp, moe and shared_experts are modelled (the gated delta-net's and hyper-connections' have no layer here)");
                }
            }
            if priced.any() {
                out.set(
                    key,
                    list.join(" "),
                    "--recompute-modules",
                    priced.names().join(","),
                );
            }
        }
        None => {
            if let Some(m) = modules {
                out.ignore(
                    key,
                    m.join(" "),
                    "without --recompute-granularity selective Megatron recomputes none of them",
                );
            }
        }
    }
    Ok(())
}

/// `--recompute-method` and `--recompute-num-layers` beside full
/// recomputation: the block method's count is `--recompute-layers`; the
/// uniform method of one layer a unit is every layer's input kept, as
/// priced; of more, fewer inputs kept and more recomputed at once, read as
/// one layer a unit, saying so.
fn read_recompute_layers(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let method = doc.text("recompute-method")?;
    let layers = doc.take("recompute-num-layers");
    let full = out.arg("--recompute") == Some("full");
    match (method.as_deref(), layers) {
        (Some("block"), Some(n)) if full => {
            let n = n.text().unwrap_or_default();
            out.set("recompute-num-layers", &n, "--recompute-layers", &n);
        }
        (Some("uniform"), Some(n)) if full && n.text().as_deref() == Some("1") => {}
        (m, n) => {
            if let Some(m) = m {
                out.ignore("recompute-method", m, "priced as every layer's input kept (--recompute-method uniform --recompute-num-layers 1)");
            }
            if let Some(n) = n {
                out.ignore("recompute-num-layers", n, "priced as every layer's input kept (--recompute-method uniform --recompute-num-layers 1)");
            }
        }
    }
    Ok(())
}

/// The MoE token dispatcher (`--moe-token-dispatcher-type`, with `flex`
/// its `--moe-flex-dispatcher-backend`, "deepep" by default, or the older
/// `--moe-enable-deepep`; `megatron/core/transformer/transformer_config.py`
/// at d98e8a64): `alltoall` and DeepEP are priced; the others are read as
/// the all-to-all, saying so.
fn read_dispatcher(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let kind = doc.text("moe-token-dispatcher-type")?;
    let backend = doc.text("moe-flex-dispatcher-backend")?;
    let deepep = doc.take("moe-enable-deepep").is_some();
    let key = "moe-token-dispatcher-type";
    match kind.as_deref() {
        Some("flex") if deepep || backend.as_deref().unwrap_or("deepep") == "deepep" => {
            out.set(key, "flex (deepep)", "--moe-dispatcher", "deepep");
        }
        Some("flex") => out.ignore(
            "moe-flex-dispatcher-backend",
            backend.unwrap_or_default(),
            "priced as the all-to-all: only DeepEP's forwarding between nodes is modelled",
        ),
        Some("alltoall") => out.set(key, "alltoall", "--moe-dispatcher", "alltoall"),
        Some(other) => out.ignore(key, other, "priced as the all-to-all"),
        None => {}
    }
    Ok(())
}

/// Megatron-LM's three communication overlaps, each off unless its flag is
/// given (membudget's own default, all on, is NVIDIA's recipes'): the
/// gradients' reduction always; the parameters' gather only with the
/// distributed optimizer, the tensor-parallel overlap only with tensor
/// parallelism and `--sequence-parallel` (`tp_sp`), where Megatron-LM
/// takes them (`validate_args`, arguments.py at d98e8a64: lines 1024–1029
/// and 1441–1442; it turns sequence parallelism off at tp 1, lines
/// 1433–1439). Where one does not apply, nothing is set: it moves no
/// figure, and a flag Megatron-LM would refuse is ignored with why.
fn read_overlaps(doc: &mut Doc, out: &mut Out, tp_sp: bool, distributed: bool) {
    let overlaps = [
        (
            "overlap-grad-reduce",
            ["--overlap-grad-reduce", "--no-overlap-grad-reduce"],
            true,
        ),
        (
            "overlap-param-gather",
            ["--overlap-param-gather", "--no-overlap-param-gather"],
            distributed,
        ),
        (
            "tp-comm-overlap",
            ["--tp-comm-overlap", "--no-tp-comm-overlap"],
            tp_sp,
        ),
    ];
    for (key, [on, off], applies) in overlaps {
        match (doc.take(key).is_some(), applies) {
            (true, true) => out.set(key, true, on, ""),
            (true, false) => out.ignore(key, true, NOT_TAKEN),
            (false, true) => {
                let source = DEFAULTS.iter().find(|d| d.0 == on).map_or("", |d| d.2);
                out.trainer_default(key, "false", off, "", source);
            }
            (false, false) => {}
        }
    }
}

/// Megatron-Core's CPU offloading: `--cpu-offloading-num-layers N` (N > 0
/// turns `cpu_offloading` on, `validate_args` in
/// `megatron/training/arguments.py`) hands the first N layers' saved
/// activations to Transformer Engine's offload context; 0 is the default,
/// none.
fn read_offload(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let key = "cpu-offloading-num-layers";
    match doc.uint(key)? {
        Some(0) => out.ignore(key, 0, "no layer offloaded (the default)"),
        Some(n) => out.set(key, n, "--offload-layers", n),
        None => {}
    }
    Ok(())
}

/// Megatron-Core's expert all-to-all overlap,
/// `--overlap-moe-expert-parallel-comm` (off unless given), and
/// `--delay-wgrad-compute`, which splits the weights' gradients off for it
/// to schedule: the combined schedule's phases count them beside the
/// all-to-alls already ([`crate::detailed::time::steptime`]).
fn read_a2a_overlap(doc: &mut Doc, out: &mut Out) {
    let key = "overlap-moe-expert-parallel-comm";
    if doc.take(key).is_some() {
        out.set(key, true, "--overlap-moe-expert-parallel-comm", "");
    }
    if doc.take("delay-wgrad-compute").is_some() {
        out.ignore(
            "delay-wgrad-compute",
            true,
            "time only, and priced with --overlap-moe-expert-parallel-comm: the weights' gradients run among the experts' backward",
        );
    }
}

/// Why an overlap's flag where it does not apply is ignored.
const NOT_TAKEN: &str = "Megatron-LM refuses it here: --overlap-param-gather needs --use-distributed-optimizer, --tp-comm-overlap --sequence-parallel with --tensor-model-parallel-size above 1 (validate_args)";
