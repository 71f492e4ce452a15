//! Launch command lines (`torchrun …`, `accelerate launch …`, `tune run …`,
//! `python script.py …`) and the scripts whose flags are their
//! configuration: FSDP-QLoRA's `train.py`, `unsloth-cli.py` (and Unsloth's
//! calls' keyword arguments), TRL's scripts, Megatron-LM's `pretrain_gpt.py`.

use super::common;
use super::hf::{self, Kind};
use super::megatron;
use super::pending::Pending;
use super::torchtune;
use super::value::{finish, Doc, Out, ReadError, Value};

/// FSDP-QLoRA's `train.py` defaults (`def main(…)` at 4cd6923), used where
/// its flags are silent.
pub const FSDP_QLORA_DEFAULTS: &[(&str, &str, &str)] = &[
    (
        "train_type",
        "qlora",
        "train.py `main`: `train_type: str = \"qlora\"`",
    ),
    ("batch_size", "1", "train.py `main`: `batch_size: int = 1`"),
    (
        "context_length",
        "512",
        "train.py `main`: `context_length: int = 512`",
    ),
    (
        "use_gradient_checkpointing",
        "True",
        "train.py `main`: `use_gradient_checkpointing: bool_arg = True`",
    ),
    (
        "use_cpu_offload",
        "True",
        "train.py `main`: `use_cpu_offload: bool_arg = True`",
    ),
    (
        "precision",
        "bf16",
        "train.py `main`: `precision: str = \"bf16\"`",
    ),
    ("lora_rank", "64", "train.py `main`: `lora_rank: int = 64`"),
    (
        "lora_target_modules",
        "all",
        "train.py `main`: `lora_target_modules: str = \"all\"` = k, q, v, up, down, gate",
    ),
    (
        "sharding_strategy",
        "full_shard",
        "train.py `main`: `sharding_strategy: str = \"full_shard\"`",
    ),
];

/// Reads a command line's words.
pub fn read(words: &[String]) -> Result<Out, ReadError> {
    let mut out = Out::default();
    let mut i = 0;
    // The launcher and its own flags, up to the script.
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    while i < words.len() && w(i).contains('=') && !w(i).starts_with('-') {
        i += 1; // VAR=value before the command
    }
    let first = base(w(i));
    if first == "accelerate" && w(i + 1) == "launch" {
        i += 2;
    } else if first == "tune" && w(i + 1) == "run" {
        return read_tune(&words[i + 2..]);
    } else if matches!(first, "torchrun" | "deepspeed" | "python" | "python3")
        || first.starts_with("python")
    {
        i += 1;
        if w(i) == "-m" && w(i + 1).contains("torch.distributed") {
            i += 2;
        }
    } else if first == "trl" {
        let kind = trl_kind(w(i + 1));
        let pairs = flags(&words[(i + 2).min(words.len())..])?;
        return hf::read_doc(&mut Doc::from_pairs(pairs), kind);
    }
    let start = i;
    while i < words.len() && words[i].starts_with('-') {
        i += 1;
        if i < words.len()
            && !words[i].starts_with('-')
            && !words[i - 1].contains('=')
            && !is_script(&words[i])
        {
            i += 1;
        }
    }
    let launcher = flags(&words[start..i])?;
    read_launcher(&mut out, launcher)?;
    let script = w(i).to_string();
    let rest = flags(&words[(i + 1).min(words.len())..])?;
    read_script(&mut out, &script, rest)?;
    Ok(out)
}

fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_script(word: &str) -> bool {
    word.ends_with(".py") || word.ends_with(".sh")
}

fn trl_kind(name: &str) -> Kind {
    let n = base(name);
    if n.starts_with("grpo") {
        Kind::Grpo
    } else if n.starts_with("dpo") {
        Kind::Dpo
    } else {
        Kind::Sft
    }
}

/// `--key value`, `--key=value`, a switch, or a list of words
/// (`--lora_target_modules q_proj v_proj`), into (key, value) pairs.
pub fn flags(words: &[String]) -> Result<Vec<(String, Value)>, ReadError> {
    let mut pairs: Vec<(String, Value)> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        let Some(flag) = word.strip_prefix("--").or_else(|| {
            word.strip_prefix('-')
                .filter(|f| f.len() > 1 && !f.starts_with(|c: char| c.is_ascii_digit()))
        }) else {
            return Err(ReadError::at(word, "expected a --flag here"));
        };
        i += 1;
        if let Some((k, v)) = flag.split_once('=') {
            pairs.push((k.to_string(), Value::Str(v.to_string())));
            continue;
        }
        let mut values = Vec::new();
        while i < words.len()
            && !(words[i].starts_with("--")
                || (words[i].starts_with('-')
                    && words[i].len() > 1
                    && !words[i][1..].starts_with(|c: char| c.is_ascii_digit() || c == '.')))
        {
            values.push(Value::Str(words[i].trim_end_matches(',').to_string()));
            i += 1;
        }
        let v = match values.len() {
            0 => Value::Bool(true),
            1 => values.remove(0),
            _ => Value::List(values),
        };
        pairs.push((flag.to_string(), v));
    }
    Ok(pairs)
}

/// torchrun's and accelerate's own flags: the GPU count.
fn read_launcher(out: &mut Out, pairs: Vec<(String, Value)>) -> Result<(), ReadError> {
    let mut doc = Doc::from_pairs(
        pairs
            .into_iter()
            .map(|(k, v)| (k.replace('-', "_"), v))
            .collect(),
    );
    let machines = doc.uint("num_machines")?.or(doc.uint("nnodes")?);
    // deepspeed's launcher names it --num_gpus.
    if let Some(n) = doc.uint("num_gpus")? {
        out.set("num_gpus", n, "--nproc-per-node", n);
    }
    if let Some(n) = doc.uint("nproc_per_node")? {
        out.set("nproc_per_node", n, "--nproc-per-node", n);
    }
    if let Some(total) = doc.uint("num_processes")? {
        let m = machines.unwrap_or(1).max(1);
        out.set("num_processes", total, "--nproc-per-node", total / m);
    }
    if let Some(m) = machines {
        out.set("nnodes", m, "--nnodes", m);
    }
    if let Some(f) = doc.text("config_file")? {
        out.ignore(
            "config_file",
            f,
            "another file: give the accelerate config with a second --from",
        );
    }
    finish(
        &mut doc,
        out,
        "the launcher",
        &[("*", "a launcher setting: no memory")],
    );
    Ok(())
}

fn read_script(out: &mut Out, script: &str, pairs: Vec<(String, Value)>) -> Result<(), ReadError> {
    let name = base(script);
    let more = match name {
        "pretrain_gpt.py" | "pretrain_bert.py" | "pretrain_t5.py" | "pretrain_mamba.py" => {
            megatron::read(pairs)?
        }
        "unsloth-cli.py" => unsloth(&mut Doc::from_pairs(pairs), false)?,
        "train.py" if pairs.iter().any(|(k, _)| fsdp_qlora_key(k)) => {
            fsdp_qlora(&mut Doc::from_pairs(pairs))?
        }
        "train.py" => fsdp_qlora(&mut Doc::from_pairs(pairs))?,
        "" => return Err(ReadError::at("", "no script in this command line")),
        n => hf::read_doc(&mut Doc::from_pairs(pairs), trl_kind(n))?,
    };
    out.set.extend(more.set);
    out.ignored.extend(more.ignored);
    out.unknown_model = more.unknown_model;
    Ok(())
}

fn fsdp_qlora_key(k: &str) -> bool {
    matches!(
        k,
        "train_type" | "context_length" | "sharding_strategy" | "use_cpu_offload"
    )
}

/// `tune run [--nproc_per_node N] RECIPE --config F key=value …`.
fn read_tune(words: &[String]) -> Result<Out, ReadError> {
    let mut out = Out::default();
    let mut overrides = Vec::new();
    let mut distributed = false;
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if let Some(flag) = w.strip_prefix("--") {
            let v = words.get(i + 1).cloned().unwrap_or_default();
            match flag {
                "nproc_per_node" | "nproc-per-node" => {
                    let n = super::value::uint_of(flag, &Value::Str(v.clone()))?;
                    out.set(flag, n, "--nproc-per-node", n);
                }
                "nnodes" => {
                    let n = super::value::uint_of(flag, &Value::Str(v.clone()))?;
                    out.set(flag, n, "--nnodes", n);
                }
                "config" => out.ignore(
                    "--config",
                    v,
                    "another file: give the recipe's YAML with --from first",
                ),
                _ => out.ignore(flag, v, "a launcher setting: no memory"),
            }
            i += 2;
        } else if let Some((k, v)) = w.split_once('=') {
            let k = k.trim_start_matches('~');
            overrides.push((k.to_string(), Value::Str(v.to_string())));
            i += 1;
        } else {
            distributed |= w.contains("_distributed");
            out.ignore(
                "recipe",
                w,
                "the recipe: its --config file and the overrides say what it runs",
            );
            i += 1;
        }
    }
    if distributed {
        // The distributed recipes shard with FSDP2's `fully_shard`
        // (torchtune/training/_distributed.py, `shard_model`).
        out.set("recipe", "*_distributed", "--framework", "fsdp2");
        out.set("recipe", "*_distributed", "--zero", "3");
    }
    let more = torchtune::read_overrides(overrides, distributed)?;
    out.set.extend(more.set);
    out.ignored.extend(more.ignored);
    out.unknown_model = more.unknown_model;
    Ok(out)
}

/// FSDP-QLoRA's `train.py` flags, its defaults where silent.
pub fn fsdp_qlora(doc: &mut Doc) -> Result<Out, ReadError> {
    let mut out = Out::default();
    common::transformers(&mut out);
    let d = |k: &str| {
        FSDP_QLORA_DEFAULTS
            .iter()
            .find(|(n, ..)| *n == k)
            .copied()
            .unwrap_or((" ", "", ""))
    };
    let text = |doc: &mut Doc,
                out: &mut Out,
                k: &'static str,
                flag: &'static str,
                map: &dyn Fn(&str) -> Option<String>|
     -> Result<Option<String>, ReadError> {
        let (value, default) = match doc.text(k)? {
            Some(v) => (v, false),
            None if !d(k).1.is_empty() => (d(k).1.to_string(), true),
            None => return Ok(None),
        };
        if let Some(arg) = map(&value) {
            if default {
                out.trainer_default(k, d(k).1, flag, &arg, d(k).2);
            } else {
                out.set(k, &value, flag, arg);
            }
        }
        Ok(Some(value))
    };
    if let Some(m) = doc.text("model_name")? {
        common::hub_model(&mut out, "model_name", &m);
    }
    let num = |v: &str| super::value::number(v).map(|x| (x as u64).to_string());
    text(doc, &mut out, "batch_size", "--micro-batch", &num)?;
    text(doc, &mut out, "context_length", "--seq", &num)?;
    if let Some(n) = doc.uint("gradient_accumulation_steps")? {
        out.set("gradient_accumulation_steps", n, "--grad-accum", n);
    }
    let boolean =
        |v: &str| super::value::boolean(v).map(|b| if b { "full" } else { "none" }.to_string());
    text(
        doc,
        &mut out,
        "use_gradient_checkpointing",
        "--recompute",
        &boolean,
    )?;
    let precision = |v: &str| match v {
        "bf16" => Some("bf16".into()),
        "fp32" => Some("fp32".into()),
        p if p.ends_with("autocast") => Some("mixed".into()),
        _ => None,
    };
    text(doc, &mut out, "precision", "--precision", &precision)?;
    let train_type = text(doc, &mut out, "train_type", "--quant-base", &|t: &str| {
        matches!(t, "qlora" | "custom_qlora" | "bnb_dora" | "bnb_llama_pro")
            .then(|| "nf4".to_string())
    })?;
    // train.py quantizes with bitsandbytes' `Linear4bit(quant_storage=
    // torch_dtype)` so that FSDP flattens the codes with the other weights:
    // the 4-bit base it read is held the FSDP-QLoRA way.
    if let Some(quant) = out.set.last().filter(|s| s.flag == "--quant-base").cloned() {
        out.set.push(super::value::Set {
            flag: "--quant-path",
            arg: "fsdp-qlora".into(),
            ..quant
        });
    }
    fsdp_qlora_rest(doc, &mut out, train_type.as_deref().unwrap_or("qlora"))?;
    Ok(out)
}

fn fsdp_qlora_rest(doc: &mut Doc, out: &mut Out, train_type: &str) -> Result<(), ReadError> {
    let d = |k: &str| {
        FSDP_QLORA_DEFAULTS
            .iter()
            .find(|(n, ..)| *n == k)
            .copied()
            .unwrap_or((" ", "", ""))
    };
    if train_type.starts_with("hqq") {
        out.ignore("train_type", train_type, "HQQ quantization is not priced");
    }
    if train_type != "full" {
        match doc.uint("lora_rank")? {
            Some(r) => out.set("lora_rank", r, "--lora-rank", r),
            None => out.trainer_default("lora_rank", "64", "--lora-rank", "64", d("lora_rank").2),
        }
        match doc.take("lora_target_modules") {
            Some(v) if v.text().as_deref() == Some("all") => out.set(
                "lora_target_modules",
                "all",
                "--lora-targets",
                "q,k,v,gate,up,down",
            ),
            Some(v) if v.text().as_deref() == Some("default") => out.ignore(
                "lora_target_modules",
                "default",
                "PEFT's default for the model: membudget's default (q,v)",
            ),
            Some(v) => common::lora_targets(out, "lora_target_modules", &v.items()),
            None => out.trainer_default(
                "lora_target_modules",
                "all",
                "--lora-targets",
                "q,k,v,gate,up,down",
                d("lora_target_modules").2,
            ),
        }
        if let Some(v) = doc.take("lora_dropout") {
            out.pending("lora_dropout", &v, Pending::LoraDropout, &v);
        }
    }
    if let Some(n) = doc.take("world_size") {
        match super::value::uint_of("world_size", &n) {
            Ok(n) => out.set("world_size", n, "--nproc-per-node", n),
            Err(_) => out.ignore(
                "world_size",
                n,
                "-1 = every GPU of the machine: give --nproc-per-node",
            ),
        }
    }
    if let Some(v) = doc.take("use_activation_cpu_offload") {
        if v.text().as_deref().and_then(super::value::boolean) == Some(true) {
            out.set(
                "use_activation_cpu_offload",
                &v,
                "--offload-activations",
                "",
            );
        }
    }
    if let Some(o) = doc.text("optimizer")? {
        common::optimizer(out, "optimizer", &o);
    }
    let table: &[(&str, &str)] = &[
        (
            "sharding_strategy",
            "FSDP1 sharding is not priced (FSDP2 is)",
        ),
        ("use_cpu_offload", "FSDP CPU offload is not priced"),
        ("low_memory", "how the weights are loaded: before the step"),
        (
            "reentrant_checkpointing",
            "reentrant or not: the same tensors kept at the layers' boundaries",
        ),
        (
            "no_sync",
            "gradient sync skipped during accumulation: not priced",
        ),
        ("n_bits", "HQQ's bits: HQQ is not priced"),
        ("lora_alpha", "a scale: no memory"),
        ("llama_pro_path", "Llama Pro: not priced"),
    ];
    for (k, reason) in table {
        if let Some(v) = doc.take(k) {
            out.ignore(k, v, *reason);
        } else if !d(k).1.is_empty() && *k != "lora_target_modules" {
            out.ignore(&format!("{k} (default)"), d(k).1, *reason);
        }
    }
    finish(doc, out, "FSDP-QLoRA's train.py", &[]);
    Ok(())
}

/// FSDP-QLoRA's `train.py` defaults as a JSON of its signature
/// (`{"args": {"batch_size": {"default": 1, …}, …}}`).
pub fn fsdp_qlora_defaults(root: &Value) -> Result<Out, ReadError> {
    let Value::Map(top) = root else {
        return Err(ReadError::at("", "expected a table"));
    };
    let Some((_, Value::Map(args))) = top.iter().find(|(k, _)| k == "args") else {
        return Err(ReadError::at("args", "expected a table of the flags"));
    };
    let mut pairs = Vec::new();
    for (k, spec) in args {
        let default = match spec {
            Value::Map(m) => m
                .iter()
                .find(|(n, _)| n == "default")
                .map(|(_, v)| v.clone()),
            _ => None,
        };
        pairs.push((k.clone(), default.unwrap_or(Value::Null)));
    }
    fsdp_qlora(&mut Doc::from_pairs(pairs))
}

/// `unsloth-cli.py`'s flags, or (`kwargs`) Unsloth's calls' keyword
/// arguments with their call as prefix.
pub fn unsloth(doc: &mut Doc, kwargs: bool) -> Result<Out, ReadError> {
    let mut out = Out::default();
    if let Some((k, m)) = common::first_text(
        doc,
        &["model_name", "FastLanguageModel.from_pretrained.model_name"],
    )? {
        common::hub_model(&mut out, &k, &m);
    }
    let p = |call: &str, k: &str| {
        if kwargs {
            format!("{call}.{k}")
        } else {
            k.to_string()
        }
    };
    let (load, peft, sft) = (
        "FastLanguageModel.from_pretrained",
        "FastLanguageModel.get_peft_model",
        "SFTConfig",
    );
    let mut keys = vec!["max_seq_length".to_string()];
    for call in [load, peft, sft] {
        if kwargs {
            keys.push(p(call, "max_seq_length"));
        }
    }
    for key in keys {
        if let Some(n) = doc.uint(&key)? {
            out.set(&key, n, "--seq", n);
        }
    }
    let full = doc.flag(&p(load, "full_finetuning"))?.unwrap_or(false);
    if doc.flag(&p(load, "load_in_4bit"))? == Some(true) {
        out.set(&p(load, "load_in_4bit"), true, "--quant-base", "nf4");
    }
    if doc.flag(&p(load, "load_in_8bit"))? == Some(true) {
        out.set(&p(load, "load_in_8bit"), true, "--quant-base", "int8");
    }
    if !full {
        unsloth_lora(doc, &mut out, &p(peft, ""))?;
    }
    let gc = p(peft, "use_gradient_checkpointing");
    match doc.text(&gc)?.as_deref() {
        Some("unsloth") => {
            out.set(&gc, "unsloth", "--recompute", "full");
            out.set(&gc, "unsloth", "--offload-activations", "checkpoints");
        }
        Some(v) => common::recompute(&mut out, &gc, super::value::boolean(v).unwrap_or(true)),
        None => {}
    }
    let dkey = p(load, "dtype");
    match doc.text(&dkey)?.as_deref() {
        None | Some("None" | "null" | "auto") => {
            out.trainer_default(&dkey, "None", "--precision", "bf16", UNSLOTH_DTYPE)
        }
        Some(d @ ("float32" | "torch.float32")) => out.set(&dkey, d, "--precision", "fp32"),
        Some(d) => out.set(&dkey, d, "--precision", "bf16"),
    }
    let mut rest = Doc::from_pairs(
        doc.rest()
            .into_iter()
            .map(|(k, v)| (k.strip_prefix("SFTConfig.").unwrap_or(&k).to_string(), v))
            .collect(),
    );
    // unsloth-cli.py builds transformers' TrainingArguments (no TRL
    // defaults); the README's example an SFTConfig.
    let trl = hf::read_doc(&mut rest, if kwargs { Kind::Sft } else { Kind::Plain })?;
    if !kwargs {
        unsloth_cli_defaults(&mut out, &trl);
    }
    // TRL's defaults only where Unsloth's own keys said nothing.
    let mine: Vec<&str> = out.set.iter().map(|s| s.flag).collect();
    let trl_set: Vec<_> = trl
        .set
        .into_iter()
        .filter(|s| s.default_from.is_none() || !mine.contains(&s.flag))
        .collect();
    out.set.extend(trl_set);
    out.ignored.extend(trl.ignored);
    Ok(out)
}

fn unsloth_lora(doc: &mut Doc, out: &mut Out, prefix: &str) -> Result<(), ReadError> {
    let k = |n: &str| format!("{prefix}{n}");
    match doc.uint(&k("r"))? {
        Some(r) => out.set(&k("r"), r, "--lora-rank", r),
        None => out.trainer_default(
            &k("r"),
            "16",
            "--lora-rank",
            "16",
            "unsloth-cli.py: `--r`, `default=16`",
        ),
    }
    match doc.take(&k("target_modules")) {
        Some(v) => common::lora_targets(out, &k("target_modules"), &v.items()),
        None => out.trainer_default(&k("target_modules"), "q,k,v,o,gate,up,down", "--lora-targets", "all", "unsloth-cli.py: `target_modules=[\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\", \"gate_proj\", \"up_proj\", \"down_proj\"]`"),
    }
    if let Some(v) = doc.take(&k("lora_dropout")) {
        out.pending(&k("lora_dropout"), &v, Pending::LoraDropout, &v);
    }
    for n in ["lora_alpha", "use_rslora"] {
        if let Some(v) = doc.take(&k(n)) {
            out.ignore(&k(n), v, "a scale: no memory");
        }
    }
    Ok(())
}

/// `unsloth-cli.py`'s argparse defaults (unslothai/unsloth at 066c227):
/// (key, value, flag, its value, the argparse line).
pub const UNSLOTH_CLI_DEFAULTS: &[(&str, &str, &str, &str, &str)] = &[
    ("model_name", "unsloth/llama-3-8b", "--model", "llama-3.1-8b", "unsloth-cli.py: `model_group.add_argument('--model_name', type=str, default=\"unsloth/llama-3-8b\", …)`"),
    ("max_seq_length", "2048", "--seq", "2048", "unsloth-cli.py: `model_group.add_argument('--max_seq_length', type=int, default=2048, …)`"),
    ("r", "16", "--lora-rank", "16", "unsloth-cli.py: `lora_group.add_argument('--r', type=int, default=16, …)`"),
    ("use_gradient_checkpointing", "unsloth", "--recompute", "full", "unsloth-cli.py: `lora_group.add_argument('--use_gradient_checkpointing', type=str, default=\"unsloth\", …)`"),
    ("use_gradient_checkpointing", "unsloth", "--offload-activations", "checkpoints", "unsloth-cli.py: `default=\"unsloth\"`: the checkpoints offloaded to the CPU"),
    ("per_device_train_batch_size", "2", "--micro-batch", "2", "unsloth-cli.py: `training_group.add_argument('--per_device_train_batch_size', type=int, default=2, …)`"),
    ("gradient_accumulation_steps", "4", "--grad-accum", "4", "unsloth-cli.py: `training_group.add_argument('--gradient_accumulation_steps', type=int, default=4, …)`"),
    ("optim", "adamw_8bit", "--optimizer", "adam8bit", "unsloth-cli.py: `training_group.add_argument('--optim', type=str, default=\"adamw_8bit\", …)`"),
];

/// Unsloth's `dtype=None`: auto, bf16 where the card has it
/// (`unsloth-cli.py`: `model_group.add_argument('--dtype', type=str,
/// default=None, help="… (None for auto detection)")`; the README's
/// `from_pretrained` leaves it out the same).
const UNSLOTH_DTYPE: &str = "unsloth-cli.py: `model_group.add_argument('--dtype', type=str, default=None, help=\"Data type for model (None for auto detection)\")`: bf16 weights where the card has bf16";

/// `unsloth-cli.py`'s defaults for what its flags and TRL's left unset.
fn unsloth_cli_defaults(out: &mut Out, trl: &Out) {
    for (key, value, flag, arg, source) in UNSLOTH_CLI_DEFAULTS {
        let set = |o: &Out| {
            o.set
                .iter()
                .any(|s| s.flag == *flag && s.default_from.is_none())
        };
        let named_elsewhere = *flag == "--model" && out.unknown_model.is_some();
        if !(set(out) || set(trl) || named_elsewhere) {
            out.trainer_default(key, value, flag, arg, source);
        }
    }
}

/// Unsloth's keyword arguments written as YAML (call → kwargs).
pub fn unsloth_kwargs(root: &Value) -> Result<Out, ReadError> {
    let mut doc = Doc::new(root);
    unsloth(&mut doc, true)
}
