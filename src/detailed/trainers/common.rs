//! Names several trainers share: optimizers, LoRA's target modules,
//! attention kernels, and the model key.

use super::models;
use super::pending::Pending;
use super::value::{Doc, Out, ReadError};

/// An optimizer as the trainers name it (transformers' `OptimizerNames`,
/// torch's classes, bitsandbytes' classes) → `--optimizer` and, for
/// AdamW, `--adam`.
pub fn optimizer(out: &mut Out, key: &str, name: &str) {
    let n = name.rsplit('.').next().unwrap_or(name).to_ascii_lowercase();
    let (opt, adam) = match n.as_str() {
        "adamw_torch_fused" => ("adamw", Some("fused")),
        "adamw_torch" | "adamw_hf" | "adamw" | "adam" | "adamw_apex_fused" => ("adamw", None),
        "paged_adamw_32bit" | "paged_adamw" | "pagedadamw" | "pagedadamw32bit" => {
            ("paged-adamw", None)
        }
        "paged_adamw_8bit" | "pagedadamw8bit" | "paged_adam8bit" => ("paged-adam8bit", None),
        "adamw_8bit" | "adamw_bnb_8bit" | "adam8bit" | "adamw8bit" | "adamw_torch_8bit" => {
            ("adam8bit", None)
        }
        "sgd" => ("sgd", None),
        "adafactor" => ("adafactor", None),
        "lion_32bit" | "lion" => ("lion", None),
        "muon" => ("muon", None),
        _ => {
            out.ignore(
                key,
                name,
                "an optimizer membudget does not price (AdamW's bytes are kept)",
            );
            return;
        }
    };
    out.set(key, name, "--optimizer", opt);
    if let Some(a) = adam {
        out.set(key, name, "--adam", a);
    }
}

/// LoRA's target modules (`q_proj`, `wq`, `all-linear`, …) → `--lora-targets`
/// (the output layer and the embedding through the pending table).
pub fn lora_targets(out: &mut Out, key: &str, names: &[String]) {
    let mut ours: Vec<&str> = Vec::new();
    let mut outer = Vec::new();
    let mut unknown = Vec::new();
    for name in names {
        let n = name.trim().to_ascii_lowercase();
        let t = match n.as_str() {
            "all" | "all-linear" | "all_linear" => "all",
            "q_proj" | "wq" | "q" | "query" => "q",
            "k_proj" | "wk" | "k" | "key" => "k",
            "v_proj" | "wv" | "v" | "value" => "v",
            "o_proj" | "output_proj" | "wo" | "o" | "dense" => "o",
            "gate_proj" | "w1" | "gate" => "gate",
            "up_proj" | "w3" | "up" => "up",
            "down_proj" | "w2" | "down" => "down",
            "lm_head" | "output" => {
                outer.push("lm_head");
                continue;
            }
            "embed_tokens" | "embed" | "tok_embeddings" => {
                outer.push("embed");
                continue;
            }
            _ => {
                unknown.push(n.clone());
                continue;
            }
        };
        if !ours.contains(&t) {
            ours.push(t);
        }
    }
    let all = ours.contains(&"all") || ours.len() == 7;
    let shown = names.join(",");
    // The output layer and the embedding join the same list once the
    // pending row is on (a second --lora-targets would replace the first).
    if !outer.is_empty() && super::pending::lookup(Pending::LoraTargetsOuter).active {
        let mut list: Vec<&str> = if all {
            vec!["q", "k", "v", "o", "gate", "up", "down"]
        } else {
            ours
        };
        list.extend(outer);
        out.set(key, &shown, "--lora-targets", list.join(","));
        return ignore_unknown(out, key, &unknown);
    }
    let list = if all {
        "all".to_string()
    } else {
        ours.join(",")
    };
    if !list.is_empty() {
        out.set(key, &shown, "--lora-targets", &list);
    }
    for n in outer {
        out.pending(key, n, Pending::LoraTargetsOuter, format!("{list},{n}"));
    }
    ignore_unknown(out, key, &unknown);
}

fn ignore_unknown(out: &mut Out, key: &str, unknown: &[String]) {
    if !unknown.is_empty() {
        out.ignore(
            key,
            unknown.join(","),
            "modules membudget's LoRA does not know (q, k, v, o, gate, up, down)",
        );
    }
}

/// An attention implementation (`flash_attention_2`, `sdpa`, `eager`,
/// `flex_attention`) → `--attention`.
pub fn attention(out: &mut Out, key: &str, name: &str) {
    match name.to_ascii_lowercase().as_str() {
        "eager" => out.set(key, name, "--attention", "eager"),
        "flash_attention_2"
        | "flash_attention_3"
        | "sdpa"
        | "flash"
        | "flex_attention"
        | "kernels-community/vllm-flash-attn3" => out.set(key, name, "--attention", "flash"),
        _ => out.ignore(key, name, "an attention kernel membudget does not know"),
    }
}

/// A hub name or checkpoint folder → `--model PRESET`, or the unknown model.
pub fn hub_model(out: &mut Out, key: &str, name: &str) {
    match models::hub(name) {
        Some(p) => out.set(key, name, "--model", p),
        None => out.unknown(key, name),
    }
}

/// Takes the first of `keys` the file has, with its key.
pub fn first_text(doc: &mut Doc, keys: &[&str]) -> Result<Option<(String, String)>, ReadError> {
    for k in keys {
        if doc.has(k) {
            if let Some(v) = doc.text(k)? {
                return Ok(Some((k.to_string(), v)));
            }
        }
    }
    Ok(None)
}

/// Checkpointing on or off → `--recompute full|none`.
pub fn recompute(out: &mut Out, key: &str, on: bool) {
    out.set(key, on, "--recompute", if on { "full" } else { "none" });
}

/// The trainer runs transformers' own modules (TRL, axolotl,
/// LLaMA-Factory, Unsloth, FSDP-QLoRA): `--impl hf`.
pub fn transformers(out: &mut Out) {
    out.set("(a transformers model)", "", "--impl", "hf");
}

/// `torch.compile` as the file's `key` asks: `--compile` where membudget
/// prices it (full fine-tuning with the full loss or torchtune's chunked
/// loss, on whole layers or over tensor, pipeline and context parallelism,
/// `memory/check.rs`, `compiled`; measured in
/// `tests/fixtures/compile_measured.tsv`, `compile_loss_measured.tsv` and
/// `compile_tp_measured.tsv`; torchao's float8 as `compiled_float8` in
/// `memory/check.rs` admits it, `compile_fp8_measured.tsv` and
/// `compile_sac_fp8_measured.tsv`), else named as priced without it.
pub fn compile(doc: &mut Doc, out: &mut Out, key: &str) -> Result<(), ReadError> {
    let Some(on) = doc.flag(key)? else {
        return Ok(());
    };
    if !on {
        out.ignore(key, false, "off: priced without it");
        return Ok(());
    }
    let beyond = [
        "--lora-rank",
        "--ep",
        "--quant-base",
        "--objective",
        "--offload-activations",
    ]
    .into_iter()
    .map(str::to_string)
    .find(|f| out.sets(f))
    .or_else(|| float8_beyond_compile(out));
    let liger = out
        .set
        .iter()
        .any(|s| s.flag == "--impl" && s.arg == "liger");
    // torchtune's chunked loss compiled per chunk is priced
    // (`tests/fixtures/compile_loss_measured.tsv`); the fused losses not.
    let fused_loss = out
        .set
        .iter()
        .find(|s| s.flag == "--loss" && s.arg != "chunked")
        .map(|s| format!("--loss {}", s.arg));
    match beyond
        .or(liger.then(|| "--impl liger".to_string()))
        .or(fused_loss)
    {
        None => out.set(key, true, "--compile", ""),
        Some(f) => out.ignore(
            key,
            true,
            format!("torch.compile is priced for full fine-tuning with the full or chunked loss, without expert parallelism or offloaded activations, with float8 only as torchao's tensorwise and rowwise, per-operator checkpointing under torchtitan's plans ({f} here): priced as eager, an upper bound on the activations"),
        ),
    }
    Ok(())
}

/// Float8 that compile is not priced with (`memory/check.rs`,
/// `compiled_float8`): any recipe but torchao's tensorwise and rowwise,
/// Megatron's selective recomputation, and per-operator checkpointing
/// under a tensor-parallel plan not torchtitan's.
fn float8_beyond_compile(out: &Out) -> Option<String> {
    let fp8 = out.arg("--fp8")?;
    let torchao = matches!(fp8, "tensorwise" | "rowwise");
    let priced = match out.arg("--recompute") {
        Some("selective-op") => {
            torchao
                && (out.arg("--tp").is_none_or(|t| t == "1")
                    || matches!(out.arg("--tp-plan"), Some("torchtitan" | "loss-parallel")))
        }
        Some("selective") => false,
        _ => torchao,
    };
    (!priced).then(|| format!("--fp8 {fp8}"))
}

/// FSDP1's `ShardingStrategy` as the file's `key` names it (by name, in
/// either case, or by its number): `--framework fsdp1` with its sharding
/// (`torch/distributed/fsdp/api.py`, `ShardingStrategy`: FULL_SHARD = 1,
/// SHARD_GRAD_OP = 2, NO_SHARD = 3, HYBRID_SHARD = 4).
pub fn fsdp1(out: &mut Out, key: &str, strategy: &str) {
    let s = strategy.trim().to_ascii_uppercase();
    let (sharding, zero) = match s.as_str() {
        "FULL_SHARD" | "1" => ("full", "3"),
        "SHARD_GRAD_OP" | "2" => ("grad-op", "3"),
        "NO_SHARD" | "3" => ("no-shard", "0"),
        _ => {
            out.ignore(
                key,
                strategy,
                "this FSDP1 sharding (hybrid) is not priced: give --framework and --zero",
            );
            return;
        }
    };
    out.set(key, strategy, "--framework", "fsdp1");
    out.set(key, strategy, "--fsdp-sharding", sharding);
    out.set(key, strategy, "--zero", zero);
}
