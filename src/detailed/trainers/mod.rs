//! Which trainer runs the step: the trainers' own configuration files
//! (torchtune, torchtitan, axolotl, LLaMA-Factory, litgpt, TRL and
//! Hugging Face `TrainingArguments`, DeepSpeed, accelerate, Megatron-LM,
//! FSDP-QLoRA, Unsloth, and their launch command lines), each read into the
//! settings the command line already understands: an ordered list of
//! flags (applied before the user's own, so the user's override), what each
//! key set, and every key not priced with the reason. Nothing is dropped
//! silently; [`emit`] writes a configuration back as a trainer's file
//! (`--emit`), which reads back to the same. It may use [`crate::detailed::config`] and
//! [`crate::detailed::model`] only: a reader says what a file asks for; the
//! memory and time rooms price it.
//!
//! The readers are pure Rust with no command-line dependency: the command
//! line (`src/from.rs`) and the page (`src/from_page.rs`) run the same code.
//!
//! ```
//! use membudget::detailed::trainers::read;
//!
//! let r = read("ds.json", r#"{"train_micro_batch_size_per_gpu": 2,
//!     "zero_optimization": {"stage": 3}, "bf16": {"enabled": true}}"#).unwrap();
//! let flags: Vec<String> = r.flags().collect();
//! assert_eq!(flags, ["--micro-batch", "2", "--framework", "deepspeed", "--zero", "3", "--precision", "mixed"]);
//! ```

pub mod accelerate;
pub mod axolotl;
pub mod choice;
pub mod command;
pub mod common;
pub mod deepspeed;
pub mod emit;
pub mod hf;
pub mod litgpt;
pub mod llamafactory;
pub mod megatron;
pub mod models;
pub mod parse;
pub mod pending;
pub mod torchtitan;
pub mod torchtune;
pub mod value;

pub use value::{Ignored, Out, ReadError, Set, Value};

/// The formats `--from` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// torchtune's recipe YAML.
    Torchtune,
    /// torchtitan's TOML.
    Torchtitan,
    /// axolotl's YAML.
    Axolotl,
    /// LLaMA-Factory's YAML (and its v1 format).
    LlamaFactory,
    /// litgpt's YAML (jsonargparse).
    Litgpt,
    /// TRL's or Hugging Face's `TrainingArguments` (YAML or JSON).
    TrainingArguments,
    /// A DeepSpeed config JSON.
    DeepSpeed,
    /// An accelerate config YAML.
    Accelerate,
    /// FSDP-QLoRA's `train.py` defaults (JSON of the signature).
    FsdpQloraDefaults,
    /// Unsloth's calls' keyword arguments written as YAML.
    UnslothKwargs,
    /// A launch command line (torchrun, accelerate launch, tune run,
    /// python …, Megatron's pretrain_gpt.py, unsloth-cli.py).
    Command,
    /// `--trainer NAME`: the defaults that trainer applies ([`choice`]).
    TrainerDefaults,
}

impl Format {
    /// The name printed with what was read.
    pub fn name(self) -> &'static str {
        match self {
            Format::Torchtune => "torchtune recipe",
            Format::Torchtitan => "torchtitan TOML",
            Format::Axolotl => "axolotl YAML",
            Format::LlamaFactory => "LLaMA-Factory YAML",
            Format::Litgpt => "litgpt YAML",
            Format::TrainingArguments => "TrainingArguments (TRL / transformers)",
            Format::DeepSpeed => "DeepSpeed JSON",
            Format::Accelerate => "accelerate config",
            Format::FsdpQloraDefaults => "FSDP-QLoRA train.py defaults",
            Format::UnslothKwargs => "Unsloth keyword arguments",
            Format::Command => "command line",
            Format::TrainerDefaults => "the trainer's defaults",
        }
    }
}

/// What one file asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    /// Which format it was read as.
    pub format: Format,
    /// Settings, trainer defaults and ignored keys.
    pub out: Out,
}

impl Reading {
    /// The flags to apply, in order (`--micro-batch`, `2`, `--sp`, …).
    pub fn flags(&self) -> impl Iterator<Item = String> + '_ {
        self.out.set.iter().flat_map(|s| {
            let arg = (!s.arg.is_empty()).then(|| s.arg.clone());
            std::iter::once(s.flag.to_string()).chain(arg)
        })
    }
}

/// What `reading` of `file` set, the trainer's defaults it applied, and
/// what it ignored with the reason: the command line's printout lines
/// (`read from FILE (format): …`), which the page shows as they are.
pub fn printout(file: &str, reading: &Reading) -> String {
    let shown = |s: &Set| {
        let flag = if s.arg.is_empty() {
            s.flag.to_string()
        } else {
            format!("{} {}", s.flag, s.arg)
        };
        if s.value.is_empty() {
            format!("{} → {flag}", s.key)
        } else {
            format!("{}={} → {flag}", s.key, shorten(&s.value))
        }
    };
    let set = &reading.out.set;
    let listed = |default: bool| -> Vec<String> {
        set.iter()
            .filter(|s| s.default_from.is_some() == default)
            .map(shown)
            .collect()
    };
    if reading.format == Format::TrainerDefaults {
        let flags: Vec<String> = reading.flags().collect();
        return format!(
            "{file}: that trainer's defaults, before your flags (docs/trainers.md): {}\n",
            flags.join(" ")
        );
    }
    let name = reading.format.name();
    let mut out = format!("read from {file} ({name}): {}\n", list(&listed(false)));
    let defaults = listed(true);
    if !defaults.is_empty() {
        out += &format!(
            "  {name} defaults (docs/trainers.md): {}\n",
            list(&defaults)
        );
    }
    let ignored: Vec<String> = reading
        .out
        .ignored
        .iter()
        .map(|i| format!("{}={} ({})", i.key, shorten(&i.value), i.reason))
        .collect();
    if !ignored.is_empty() {
        out += &format!("  ignored: {}\n", ignored.join("; "));
    }
    out
}

/// A value on one line, at most 60 characters (the JSON keeps it whole).
fn shorten(value: &str) -> String {
    let one: String = value.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &one[..at]),
        None => one,
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "nothing".into()
    } else {
        items.join(", ")
    }
}

/// Reads `text`, named `name` (its extension and content decide the
/// format).
pub fn read(name: &str, text: &str) -> Result<Reading, ReadError> {
    if text.len() > value::MAX_BYTES {
        return Err(ReadError::at(
            "",
            format!(
                "larger than {} bytes: not a trainer's configuration",
                value::MAX_BYTES
            ),
        ));
    }
    let lower = name.to_ascii_lowercase();
    let (format, out) = if lower.ends_with(".toml") {
        (Format::Torchtitan, torchtitan::read(&parse::toml(text)?)?)
    } else if lower.ends_with(".json") {
        read_json(&parse::json(text)?)?
    } else if lower.ends_with(".yaml") || lower.ends_with(".yml") || looks_like_yaml(text) {
        read_yaml(&parse::yaml(text)?, text)?
    } else {
        (Format::Command, command::read(&parse::words(text)?)?)
    };
    Ok(Reading { format, out })
}

/// A file with no known extension whose first non-comment line is a YAML
/// `key: value` (Unsloth's keyword arguments).
fn looks_like_yaml(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| {
            l.split_once(':')
                .is_some_and(|(k, _)| !k.contains(' ') && !k.is_empty())
        })
}

fn read_json(root: &Value) -> Result<(Format, Out), ReadError> {
    top_table(root)?;
    let keys = top_keys(root);
    let has = |k: &str| keys.iter().any(|x| x == k);
    if has("zero_optimization") || has("train_micro_batch_size_per_gpu") || has("train_batch_size")
    {
        Ok((Format::DeepSpeed, deepspeed::read(root)?))
    } else if has("_source") && has("args") {
        Ok((
            Format::FsdpQloraDefaults,
            command::fsdp_qlora_defaults(root)?,
        ))
    } else if is_table(root, "bf16") || is_table(root, "fp16") {
        // A DeepSpeed file with precision only.
        Ok((Format::DeepSpeed, deepspeed::read(root)?))
    } else {
        Ok((Format::TrainingArguments, hf::read(root)?))
    }
}

fn read_yaml(root: &Value, text: &str) -> Result<(Format, Out), ReadError> {
    top_table(root)?;
    let keys = top_keys(root);
    let has = |k: &str| keys.iter().any(|x| x == k);
    let format = if has("distributed_type") || has("compute_environment") {
        Format::Accelerate
    } else if has("FastLanguageModel.from_pretrained") || has("FastLanguageModel.get_peft_model") {
        Format::UnslothKwargs
    } else if component(root) {
        Format::Torchtune
    } else if has("checkpoint_dir") && (has("train") || has("precision")) {
        Format::Litgpt
    } else if has("finetuning_type") || has("cutoff_len") || has("quantization_bit") {
        Format::LlamaFactory
    } else if has("base_model") || has("sequence_len") || has("micro_batch_size") || has("adapter")
    {
        Format::Axolotl
    } else {
        Format::TrainingArguments
    };
    let out = match format {
        Format::Accelerate => accelerate::read(root)?,
        Format::UnslothKwargs => command::unsloth_kwargs(root)?,
        Format::Torchtune => torchtune::read(root, text)?,
        Format::Litgpt => litgpt::read(root)?,
        Format::LlamaFactory => llamafactory::read(root)?,
        Format::Axolotl => axolotl::read(root)?,
        _ => hf::read(root)?,
    };
    Ok((format, out))
}

/// A configuration is a table of keys at the top.
fn top_table(root: &Value) -> Result<(), ReadError> {
    match root {
        Value::Map(_) => Ok(()),
        other => Err(ReadError::at(
            "",
            format!("expected a table of keys at the top of the file, got {other}"),
        )),
    }
}

/// DeepSpeed writes `"bf16": {"enabled": …}`; TrainingArguments `"bf16": true`.
fn is_table(root: &Value, key: &str) -> bool {
    matches!(root, Value::Map(items) if items.iter().any(|(k, v)| k == key && matches!(v, Value::Map(_))))
}

fn top_keys(root: &Value) -> Vec<String> {
    match root {
        Value::Map(items) => items.iter().map(|(k, _)| k.clone()).collect(),
        _ => Vec::new(),
    }
}

/// A torchtune recipe: a `model` table with `_component_`.
fn component(root: &Value) -> bool {
    match root {
        Value::Map(items) => items.iter().any(|(k, v)| {
            k == "model" && matches!(v, Value::Map(m) if m.iter().any(|(k, _)| k == "_component_"))
        }),
        _ => false,
    }
}
