//! Config import: a Hugging Face `config.json` in, an [`Architecture`] out.
//!
//! ```
//! use membudget::detailed::{import_config, preset};
//!
//! let json = r#"{"model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096,
//!     "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
//!     "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2}"#;
//! let imported = import_config(json).unwrap();
//! assert_eq!(imported.arch, preset("mixtral-8x7b").unwrap().arch);
//! assert_eq!(imported.arch.params(), 46_702_792_704);
//!
//! let err = import_config(r#"{"model_type": "llama", "num_hidden_layers": "32"}"#).unwrap_err();
//! assert_eq!(err.field, "num_hidden_layers");
//! ```
//!
//! Both spellings are read: the files as the model hubs publish them and as
//! `transformers` 5.x writes them (`save_pretrained`): `num_experts` or
//! `num_local_experts`, `torch_dtype` or `dtype`, `rope_scaling` or
//! `rope_parameters` (neither changes memory). DeepSeek's `head_dim`, which
//! `transformers` writes as the rotary part of a head only, is not read for
//! `deepseek_v3`. Keys that do not change training memory are ignored;
//! `quantization_config` describes how the published weights are stored
//! (DeepSeek-V3's fp8), not how they are trained here, and is reported in
//! the notes and otherwise ignored. The defaults are `transformers`' own
//! where the format has one (`num_key_value_heads` = heads, `head_dim` =
//! hidden / heads, each model type's `tie_word_embeddings`); the shape
//! itself (layers, hidden, heads, MLP width, vocabulary) must be given.
//!
//! One reader per family, over one serde shape:
//! - `fields`: the keys `config.json` may hold, and serde's errors in words;
//! - `gpt2`: GPT-2's own names;
//! - `llama`: dense Llama-likes, and the decoder every other type builds on;
//! - `gemma`: Gemma 2 and 3;
//! - `moe`: Mixtral, gpt-oss, Llama 4, Qwen3-MoE, Qwen2-MoE, GLM-4.5;
//! - `deepseek`: DeepSeek-V2 and V3's latent attention and experts;
//! - `falcon`: Falcon-H1's hybrid, its Mamba-2 mixer.

mod deepseek;
mod falcon;
mod fields;
mod gemma;
mod gpt2;
mod llama;
mod moe;

use std::fmt;

use super::arch::Architecture;
use fields::HfConfig;

/// The model types read, and what each maps to.
pub const MODEL_TYPES: [&str; 17] = [
    "gpt2",
    "llama",
    "mistral",
    "qwen2",
    "qwen3",
    "gemma2",
    "gemma3_text",
    "mixtral",
    "qwen3_moe",
    "qwen2_moe",
    "glm4_moe",
    "gpt_oss",
    "deepseek_v3",
    "deepseek_v2",
    "llama4_text",
    "llama4",
    "falcon_h1",
];

/// What [`import_config`] made of a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    /// The model's shape.
    pub arch: Architecture,
    /// The `model_type` it was read as.
    pub model_type: String,
    /// What was read but not used, said plainly.
    pub notes: Vec<String>,
}

/// Why a file could not be read: the field (a JSON path) and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportError {
    /// The key at fault (`.` when the file as a whole is).
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for ImportError {
    /// `field: reason`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for ImportError {}

/// An [`ImportError`] for `field`.
fn fail<T>(field: &str, reason: impl Into<String>) -> Result<T, ImportError> {
    Err(ImportError {
        field: field.to_string(),
        reason: reason.into(),
    })
}

/// A required count within `lo..=hi`.
fn need(field: &str, value: Option<u64>, lo: u64, hi: u64) -> Result<u64, ImportError> {
    match value {
        None => fail(field, "missing: this model type needs it"),
        Some(v) if !(lo..=hi).contains(&v) => {
            fail(field, format!("must be {lo} to {hi} (got {v})"))
        }
        Some(v) => Ok(v),
    }
}

/// An optional count within `lo..=hi`, `default` when absent.
fn or(field: &str, value: Option<u64>, default: u64, lo: u64, hi: u64) -> Result<u64, ImportError> {
    need(field, Some(value.unwrap_or(default)), lo, hi)
}

// The ranges a count is held to: layers, hidden size, an MLP's width,
// the vocabulary.
const LAYERS: u64 = 256;
const HIDDEN: (u64, u64) = (128, 65_536);
const WIDTH: u64 = 1 << 20;
const VOCAB: u64 = 1 << 22;

/// Reads a `config.json`. Never panics: malformed JSON, a wrong type, a
/// missing field, a value out of range or an unknown `model_type` each give
/// an [`ImportError`] naming the field.
pub fn import_config(json: &str) -> Result<Imported, ImportError> {
    let (json, python_floats) = fields::python_floats_as_null(json);
    let mut de = serde_json::Deserializer::from_str(&json);
    let c: HfConfig = serde_path_to_error::deserialize(&mut de).map_err(fields::plainly)?;
    let model_type = match c.model_type.as_deref() {
        Some(t) => t.to_string(),
        None => return fail("model_type", "missing: a config.json names its model_type"),
    };
    let mut notes = published(&c, python_floats);
    let arch = match model_type.as_str() {
        "gpt2" => gpt2::gpt2(&c)?,
        "gemma3" if c.text_config.is_some() => {
            return fail(
                "model_type",
                "gemma3 is the multimodal model: paste its text_config (model_type gemma3_text)",
            )
        }
        // Llama 4 (`Llama4ForConditionalGeneration`): its language
        // model, `text_config`; the vision tower is not priced.
        "llama4" => match c.text_config.as_deref() {
            Some(text) => {
                notes.push(
                        "llama4: the language model (text_config) priced; the vision encoder and projector are not"
                            .to_string(),
                    );
                llama_like(text, "llama4_text", &mut notes)?
            }
            None => {
                return fail(
                    "text_config",
                    "missing: llama4 keeps its language model there",
                )
            }
        },
        t if MODEL_TYPES.contains(&t) => llama_like(&c, t, &mut notes)?,
        other => {
            return fail(
                "model_type",
                format!(
                    "'{}' is not one of {}",
                    other.chars().take(40).collect::<String>(),
                    MODEL_TYPES.join(", ")
                ),
            )
        }
    };
    Ok(Imported {
        arch,
        model_type,
        notes,
    })
}

/// The first notes: what the file says of itself that is reported and not
/// used (Python's floats, the published dtype, the quantization).
fn published(c: &HfConfig, python_floats: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if python_floats {
        notes.push(
            "Infinity/NaN (Python's json, not JSON) read as null: no key that changes memory holds one"
                .to_string(),
        );
    }
    if let Some(dtype) = c.dtype.as_deref().or(c.torch_dtype.as_deref()) {
        notes.push(format!(
            "published in {dtype}; the training precision is chosen below"
        ));
    }
    if c.quantization_config.is_some() {
        notes.push(
            "quantization_config ignored: it says how the published weights are stored, \
             not how they are trained here"
                .to_string(),
        );
    }
    notes
}

/// Every model type but `gpt2`: the Llama-like decoder and its attention,
/// then the family's MLP (experts, latent attention, a mixer).
fn llama_like(c: &HfConfig, t: &str, notes: &mut Vec<String>) -> Result<Architecture, ImportError> {
    let mut arch = llama::decoder(c, t)?;
    llama::attention(c, t, &mut arch, notes);
    gemma::norms(c, t, &mut arch);
    match t {
        "mixtral" | "gpt_oss" => moe::mixtral(c, t, &mut arch)?,
        "llama4_text" => moe::llama4(c, &mut arch, notes)?,
        "qwen3_moe" => moe::qwen3(c, &mut arch)?,
        "qwen2_moe" => moe::qwen2(c, &mut arch)?,
        "glm4_moe" => moe::glm4(c, &mut arch)?,
        "deepseek_v3" | "deepseek_v2" => deepseek::deepseek(c, t, &mut arch, notes)?,
        "falcon_h1" => falcon::falcon_h1(c, &mut arch)?,
        _ => arch.ffn = llama::dense_ffn(c, None)?,
    }
    Ok(arch)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each malformed file's error names the key at fault.
    #[test]
    fn errors_name_the_field() {
        let cases = [
            ("not json", "."),
            (r#"{"model_type": 3}"#, "model_type"),
            (r#"{"num_hidden_layers": 2}"#, "model_type"),
            (r#"{"model_type": "bert"}"#, "model_type"),
            (
                r#"{"model_type": "llama", "num_hidden_layers": -1}"#,
                "num_hidden_layers",
            ),
            (
                r#"{"model_type": "llama", "num_hidden_layers": 1e9}"#,
                "num_hidden_layers",
            ),
            (
                r#"{"model_type": "llama", "num_hidden_layers": 4}"#,
                "hidden_size",
            ),
            (
                r#"{"model_type": "llama", "num_hidden_layers": 4000, "hidden_size": 512}"#,
                "num_hidden_layers",
            ),
            (
                r#"{"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 512,
                "num_attention_heads": 8, "vocab_size": 1000}"#,
                "intermediate_size",
            ),
            (
                r#"{"model_type": "mixtral", "num_hidden_layers": 4, "hidden_size": 512,
                "num_attention_heads": 8, "vocab_size": 1000, "intermediate_size": 64,
                "num_local_experts": 4, "num_experts_per_tok": 5}"#,
                "num_experts_per_tok",
            ),
            (
                r#"{"model_type": "gpt2", "n_layer": 2, "n_embd": 256, "n_head": 3}"#,
                "n_head",
            ),
            (
                r#"{"model_type": "gpt2", "n_layer": 2, "n_embd": true}"#,
                "n_embd",
            ),
        ];
        let err =
            import_config(r#"{"model_type": "llama", "num_hidden_layers": "32"}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "num_hidden_layers: wrong type, expected a whole number"
        );
        for (json, field) in cases {
            let err = import_config(json).unwrap_err();
            assert_eq!(err.field, field, "{json}: {err}");
            assert!(!err.reason.is_empty());
        }
    }
}
