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
    ("--optimizer", "adam", "megatron/training/arguments.py: `'--optimizer', type=str, default='adam'` (AdamW's decoupled decay)"),
];

/// Keys read and not priced, with the reason (`*` matches the rest of a key).
pub const IGNORED: &[(&str, &str)] = &[
    (
        "overlap-grad-reduce",
        "overlapping communication: time, not memory here",
    ),
    (
        "overlap-param-gather",
        "overlapping communication: time, not memory here",
    ),
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
        "max-position-embeddings",
        "positions by RoPE: no parameters",
    ),
    (
        "position-embedding-type",
        "RoPE or learned: the shape reads the family",
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
    let mut pp = None;
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
        }
    }
    read_pipeline_split(&mut doc, &mut out, layers, pp)?;
    read_switches(&mut doc, &mut out)?;
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
        out.ignore(
            "untie-embeddings-and-output-weights",
            v,
            "the shape's llama family is untied already",
        );
    }
    Ok(Some(layers))
}

fn read_switches(doc: &mut Doc, out: &mut Out) -> Result<(), ReadError> {
    let on = |doc: &mut Doc, k: &str| doc.take(k).is_some();
    if on(doc, "bf16") || on(doc, "fp16") {
        // Megatron keeps fp32 main parameters and Adam states
        // (megatron/core/optimizer/optimizer.py, Float16OptimizerWithFloat16Params).
        out.set("bf16", true, "--precision", "mixed");
    } else {
        out.trainer_default(
            "bf16",
            "false",
            "--precision",
            "fp32",
            "megatron/training/arguments.py: `'--bf16', action='store_true'` (fp32 without it)",
        );
    }
    if on(doc, "sequence-parallel") {
        out.set("sequence-parallel", true, "--sp", "");
    }
    if on(doc, "use-distributed-optimizer") {
        out.set("use-distributed-optimizer", true, "--zero", "1");
    }
    if let Some(f) = doc.text("fp8-format")? {
        out.set("fp8-format", &f, "--fp8", "te");
    }
    // FP8 primary weights (`--fp8-param-gather`, store_true).
    if on(doc, "fp8-param-gather") {
        out.set("fp8-param-gather", true, "--fp8-param", "");
    }
    if let Some(g) = doc.text("recompute-granularity")? {
        let r = if g == "full" { "full" } else { "selective" };
        out.set("recompute-granularity", &g, "--recompute", r);
    }
    for k in ["recompute-method", "recompute-num-layers"] {
        if let Some(v) = doc.take(k) {
            out.ignore(k, v, "which layers recompute: every layer is priced");
        }
    }
    if let Some(o) = doc.text("optimizer")? {
        let opt = if o == "sgd" { "sgd" } else { "adamw" };
        out.set("optimizer", &o, "--optimizer", opt);
    }
    if let Some(n) = doc.take("moe-expert-capacity-factor") {
        let v = n.text().unwrap_or_default();
        out.set("moe-expert-capacity-factor", &v, "--capacity-factor", &v);
    }
    if on(doc, "overlap-param-gather-with-optimizer-step") {
        out.ignore(
            "overlap-param-gather-with-optimizer-step",
            true,
            "time, not memory",
        );
    }
    Ok(())
}
