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

use serde::de::IgnoredAny;
use serde::Deserialize;
use std::fmt;

use super::arch::{Architecture, Mla, Moe, Router};
use super::mamba::Mamba2;

/// The keys that change training memory; `#[serde(default)]` leaves an
/// absent key `None` (or empty), and unknown keys are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HfConfig {
    model_type: Option<String>,
    // GPT-2's names.
    n_layer: Option<u64>,
    n_embd: Option<u64>,
    n_head: Option<u64>,
    n_inner: Option<u64>,
    n_positions: Option<u64>,
    // Everyone else's.
    vocab_size: Option<u64>,
    num_hidden_layers: Option<u64>,
    hidden_size: Option<u64>,
    num_attention_heads: Option<u64>,
    num_key_value_heads: Option<u64>,
    intermediate_size: Option<u64>,
    head_dim: Option<u64>,
    tie_word_embeddings: Option<bool>,
    attention_bias: Option<bool>,
    // Qwen2-MoE's q/k/v biases (on unless false).
    qkv_bias: Option<bool>,
    use_sliding_window: Option<bool>,
    // GLM-4.5: per-head q/k norms, the rotated fraction of each head (top
    // level as published, in `rope_parameters` as transformers 5 saves it).
    use_qk_norm: Option<bool>,
    partial_rotary_factor: Option<f64>,
    rope_parameters: Option<RopeParameters>,
    // Mixture of experts.
    num_local_experts: Option<u64>,
    num_experts: Option<u64>,
    n_routed_experts: Option<u64>,
    num_experts_per_tok: Option<u64>,
    // gpt-oss's original name for it.
    experts_per_token: Option<u64>,
    sliding_window: Option<u64>,
    moe_intermediate_size: Option<u64>,
    shared_expert_intermediate_size: Option<u64>,
    n_shared_experts: Option<u64>,
    first_k_dense_replace: Option<u64>,
    moe_layer_freq: Option<u64>,
    decoder_sparse_step: Option<u64>,
    mlp_only_layers: Vec<u64>,
    norm_topk_prob: Option<bool>,
    // Gemma 2: present and null means off; absent means the default (on).
    #[serde(deserialize_with = "some_null")]
    attn_logit_softcapping: Option<Option<f64>>,
    #[serde(deserialize_with = "some_null")]
    final_logit_softcapping: Option<Option<f64>>,
    // Multi-head latent attention.
    q_lora_rank: Option<u64>,
    kv_lora_rank: Option<u64>,
    qk_rope_head_dim: Option<u64>,
    qk_nope_head_dim: Option<u64>,
    v_head_dim: Option<u64>,
    // Reported, not used.
    torch_dtype: Option<String>,
    dtype: Option<String>,
    quantization_config: Option<IgnoredAny>,
    // A multimodal model's language model (Llama 4's is read; Gemma 3's
    // is asked for).
    text_config: Option<Box<HfConfig>>,
    // Llama 4: the dense layers' MLP width, which layers are MoE, which
    // lack rotary embeddings.
    intermediate_size_mlp: Option<u64>,
    interleave_moe_layer_step: Option<u64>,
    moe_layers: Option<Vec<u64>>,
    no_rope_layer_interval: Option<u64>,
    // Falcon-H1's Mamba-2 mixer (`FalconH1Config`); `mamba_d_ssm` null
    // means `mamba_expand` × hidden, absent means 1024 (the class default);
    // `mamba_d_head` is a width or "auto".
    #[serde(deserialize_with = "some_null")]
    mamba_d_ssm: Option<Option<u64>>,
    mamba_n_heads: Option<u64>,
    #[serde(deserialize_with = "width_or_auto")]
    mamba_d_head: Option<Option<u64>>,
    mamba_n_groups: Option<u64>,
    mamba_d_state: Option<u64>,
    mamba_d_conv: Option<u64>,
    mamba_expand: Option<u64>,
    mamba_chunk_size: Option<u64>,
    mamba_conv_bias: Option<bool>,
    mamba_proj_bias: Option<bool>,
    mamba_rms_norm: Option<bool>,
    projectors_bias: Option<bool>,
    mlp_bias: Option<bool>,
}

/// Qwen's MoE layout (`decoder_sparse_step`, `mlp_only_layers`): the
/// leading dense layers, where every later layer is MoE; other layouts are
/// refused.
fn qwen_dense_layers(c: &HfConfig) -> Result<u64, ImportError> {
    if c.decoder_sparse_step.unwrap_or(1) != 1 {
        return fail(
            "decoder_sparse_step",
            "only 1 (every layer MoE) is modelled",
        );
    }
    // Dense layers are modelled where they lead: mlp_only_layers 0..k.
    let k = c.mlp_only_layers.len() as u64;
    if c.mlp_only_layers.iter().copied().ne(0..k) {
        return fail(
            "mlp_only_layers",
            "only leading dense layers (0, 1, …, k−1) are modelled",
        );
    }
    Ok(k)
}

/// The one key of `rope_parameters` that changes memory.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RopeParameters {
    partial_rotary_factor: Option<f64>,
}

/// Reads a key that may be present with `null`: `Some(None)` then, `None`
/// when absent (with `#[serde(default)]`).
fn some_null<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Python's `json.dump` writes `Infinity`, `-Infinity` and `NaN` (Falcon-H1's
/// `time_step_limit` holds an infinity), which JSON has no spelling for:
/// outside strings they become `null`. Returns the text and whether any
/// was found.
fn python_floats_as_null(json: &str) -> (std::borrow::Cow<'_, str>, bool) {
    const WORDS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    if !WORDS[1..].iter().any(|w| json.contains(w)) {
        return (json.into(), false);
    }
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped, mut found) = (false, false, false);
    let mut rest = json;
    while let Some(c) = rest.chars().next() {
        if in_string {
            in_string = escaped || c != '"';
            escaped = !escaped && c == '\\';
        } else if c == '"' {
            in_string = true;
        } else if let Some(w) = WORDS.iter().find(|w| rest.starts_with(**w)) {
            out.push_str("null");
            rest = &rest[w.len()..];
            found = true;
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    (out.into(), found)
}

/// Falcon-H1's `mamba_d_head`: a width, or "auto" (`Some(None)`), read
/// with a visitor of its own rather than through `serde_json::Value`, which
/// would bring its whole reader into the page.
fn width_or_auto<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<u64>>, D::Error> {
    struct V;
    impl serde::de::Visitor<'_> for V {
        type Value = Option<Option<u64>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a whole number or \"auto\"")
        }
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(Some(v)))
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            if v == "auto" {
                Ok(Some(None))
            } else {
                Err(E::custom("expected a whole number or \"auto\""))
            }
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Some(None))
        }
    }
    d.deserialize_any(V)
}

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
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for ImportError {}

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

/// Reads a `config.json`. Never panics: malformed JSON, a wrong type, a
/// missing field, a value out of range or an unknown `model_type` each give
/// an [`ImportError`] naming the field.
pub fn import_config(json: &str) -> Result<Imported, ImportError> {
    let (json, python_floats) = python_floats_as_null(json);
    let mut de = serde_json::Deserializer::from_str(&json);
    let c: HfConfig = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // serde_json appends " at line L column C"; the field says where.
        let reason = inner.to_string();
        let reason = match reason.rfind(" at line ") {
            Some(i) if path != "." => reason[..i].to_string(),
            _ => reason,
        };
        // serde's "invalid type: string \"32\", expected u64" quotes the
        // value with Debug formatting, which the release wasm compiles out;
        // say what was expected instead, in words.
        let reason = match reason.split_once(", expected ") {
            Some((found, expected)) if found.starts_with("invalid type") => {
                let expected = match expected {
                    "u64" => "a whole number",
                    "a boolean" | "bool" => "true or false",
                    other => other,
                };
                format!("wrong type, expected {expected}")
            }
            _ => reason,
        };
        ImportError {
            field: path,
            reason,
        }
    })?;
    let model_type = match c.model_type.as_deref() {
        Some(t) => t.to_string(),
        None => return fail("model_type", "missing: a config.json names its model_type"),
    };
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
    let arch = match model_type.as_str() {
        "gpt2" => gpt2(&c)?,
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

/// Falcon-H1's mixer, with `FalconH1Config`'s defaults and its check
/// (`validate_architecture`: the heads tile the inner width exactly).
fn falcon_mamba(c: &HfConfig, hidden: u64) -> Result<Mamba2, ImportError> {
    for (field, on) in [
        ("attention_bias", c.attention_bias),
        ("mlp_bias", c.mlp_bias),
    ] {
        if on == Some(true) {
            return fail(
                field,
                "true is not modelled for falcon_h1 (its published models have none)",
            );
        }
    }
    let expand = or("mamba_expand", c.mamba_expand, 2, 1, 16)?;
    let inner = match c.mamba_d_ssm {
        Some(Some(v)) => need("mamba_d_ssm", Some(v), 1, WIDTH)?,
        Some(None) => expand * hidden,
        None => 1024,
    };
    let heads = or("mamba_n_heads", c.mamba_n_heads, 128, 1, 4096)?;
    if !inner.is_multiple_of(heads) {
        return fail(
            "mamba_n_heads",
            format!("must divide the Mamba inner width ({inner})"),
        );
    }
    let head_dim = match c.mamba_d_head.flatten() {
        None => inner / heads,
        Some(d) if d * heads == inner => d,
        Some(_) => {
            return fail(
                "mamba_d_head",
                format!("times mamba_n_heads must equal the inner width ({inner})"),
            )
        }
    };
    let groups = or("mamba_n_groups", c.mamba_n_groups, 1, 1, heads)?;
    if !heads.is_multiple_of(groups) {
        return fail(
            "mamba_n_groups",
            format!("must divide mamba_n_heads ({heads})"),
        );
    }
    Ok(Mamba2 {
        heads,
        head_dim,
        groups,
        state: or("mamba_d_state", c.mamba_d_state, 256, 1, 4096)?,
        conv: or("mamba_d_conv", c.mamba_d_conv, 4, 1, 64)?,
        chunk: or("mamba_chunk_size", c.mamba_chunk_size, 256, 1, 1 << 16)?,
        gated_norm: c.mamba_rms_norm.unwrap_or(false),
        conv_bias: c.mamba_conv_bias.unwrap_or(true),
        in_bias: c.mamba_proj_bias.unwrap_or(false),
        out_bias: c.projectors_bias.unwrap_or(false),
    })
}

const LAYERS: u64 = 256;
const HIDDEN: (u64, u64) = (128, 65_536);
const WIDTH: u64 = 1 << 20;
const VOCAB: u64 = 1 << 22;

fn gpt2(c: &HfConfig) -> Result<Architecture, ImportError> {
    // GPT2Config's defaults: vocab 50257, 1024 positions, n_inner 4h, tied.
    let layers = need("n_layer", c.n_layer, 1, LAYERS)?;
    let hidden = need("n_embd", c.n_embd, HIDDEN.0, HIDDEN.1)?;
    let heads = need("n_head", c.n_head, 1, 1024)?;
    if !hidden.is_multiple_of(heads) {
        return fail("n_head", format!("must divide n_embd ({hidden})"));
    }
    let vocab = or("vocab_size", c.vocab_size, 50257, 1, VOCAB)?;
    Ok(Architecture {
        ffn: or("n_inner", c.n_inner, 4 * hidden, 1, WIDTH)?,
        positions: or("n_positions", c.n_positions, 1024, 1, 1 << 24)?,
        tied_embeddings: c.tie_word_embeddings.unwrap_or(true),
        ..Architecture::gpt2(layers, hidden, heads, vocab)
    })
}

fn llama_like(c: &HfConfig, t: &str, notes: &mut Vec<String>) -> Result<Architecture, ImportError> {
    let layers = need("num_hidden_layers", c.num_hidden_layers, 1, LAYERS)?;
    let hidden = need("hidden_size", c.hidden_size, HIDDEN.0, HIDDEN.1)?;
    let heads = need("num_attention_heads", c.num_attention_heads, 1, 1024)?;
    let kv = or(
        "num_key_value_heads",
        c.num_key_value_heads,
        heads,
        1,
        heads,
    )?;
    if !heads.is_multiple_of(kv) {
        return fail(
            "num_key_value_heads",
            format!("must divide num_attention_heads ({heads})"),
        );
    }
    let vocab = need("vocab_size", c.vocab_size, 1, VOCAB)?;
    let gemma = t == "gemma2" || t == "gemma3_text";
    let deepseek = t.starts_with("deepseek");
    // Qwen3 and Gemma default to explicit head widths (128, 256).
    let default_head = match t {
        "qwen3" | "qwen3_moe" | "llama4_text" => 128,
        _ if gemma => 256,
        _ => hidden / heads,
    };
    let head = if deepseek {
        // `transformers` writes DeepSeek's head_dim as the rotary part only.
        hidden / heads
    } else {
        or("head_dim", c.head_dim, default_head, 1, 4096)?
    };
    if head * heads != hidden && !hidden.is_multiple_of(heads) && c.head_dim.is_none() && !gemma {
        return fail(
            "num_attention_heads",
            format!("must divide hidden_size ({hidden})"),
        );
    }
    let mut arch = Architecture::llama(layers, hidden, heads, kv, 1, vocab);
    arch.head_width = if head * heads == hidden { 0 } else { head };
    arch.tied_embeddings = c.tie_word_embeddings.unwrap_or(gemma);
    arch.qkv_bias = t == "qwen2"
        || (t == "qwen2_moe" && c.qkv_bias != Some(false))
        || (t == "gpt_oss" && c.attention_bias != Some(false))
        || (c.attention_bias == Some(true) && !deepseek);
    arch.qk_norm = matches!(t, "qwen3" | "qwen3_moe" | "gemma3_text")
        || (t == "glm4_moe" && c.use_qk_norm == Some(true))
        || (t == "llama4_text" && c.use_qk_norm != Some(false));
    // GLM-4.5 rotates half of each head unless told otherwise
    // (`Glm4MoeConfig`: `partial_rotary_factor` 0.5 by default).
    if t == "glm4_moe" {
        let f = c
            .partial_rotary_factor
            .or(c
                .rope_parameters
                .as_ref()
                .and_then(|r| r.partial_rotary_factor))
            .unwrap_or(0.5);
        if !(f > 0.0 && f <= 1.0) {
            return fail("partial_rotary_factor", "must be above 0 and at most 1");
        }
        let dims = (head as f64 * f) as u64;
        arch.rotary_dims = if dims == head { 0 } else { dims.max(1) };
    }
    arch.sandwich_norms = gemma;
    // Gemma 2 caps its logits unless the file says null.
    arch.softcap = t == "gemma2"
        && !(c.attn_logit_softcapping == Some(None) && c.final_logit_softcapping == Some(None));
    if c.use_sliding_window == Some(true) {
        notes.push(
            "use_sliding_window read as full attention: with flash attention the saved bytes are the same"
                .to_string(),
        );
    }
    // gpt-oss: sinks, o_proj's bias, its RMSNorm and rotary halves.
    arch.attention_sinks = t == "gpt_oss";
    if t == "gpt_oss" && c.sliding_window.is_some() {
        notes.push(
            "sliding-window layers priced as full attention: the same saved bytes with flash attention, and eager computes every score before masking"
                .to_string(),
        );
    }
    if c.attention_bias == Some(true) && !matches!(t, "qwen2" | "llama" | "mistral" | "gpt_oss") {
        notes.push("attention_bias read as q/k/v biases".to_string());
    }
    let dense_ffn = |default: Option<u64>| match c.intermediate_size.or(default) {
        Some(v) => need("intermediate_size", Some(v), 1, WIDTH),
        None => fail("intermediate_size", "missing: this model type needs it"),
    };
    match t {
        // Every layer MoE, experts as wide as `intermediate_size`; gpt-oss's
        // (`GptOssMLP`) with biased experts and router.
        "mixtral" | "gpt_oss" => {
            let ffn = dense_ffn(None)?;
            arch.ffn = ffn;
            let experts = c.num_local_experts.or(c.num_experts);
            let router = if t == "gpt_oss" {
                Router::GptOss
            } else {
                Router::Mixtral
            };
            arch.moe = Some(moe(experts, "num_local_experts", c, ffn, 0, 0, router)?);
        }
        // Llama 4 (`Llama4TextConfig`): experts and the shared expert at
        // `intermediate_size`, dense layers at `intermediate_size_mlp`;
        // MoE every `interleave_moe_layer_step`-th layer unless
        // `moe_layers` lists them. The model counts the dense layers, not
        // where they sit: they are priced as leading ones.
        "llama4_text" => {
            let effn = or("intermediate_size", c.intermediate_size, 8192, 1, WIDTH)?;
            arch.ffn = or(
                "intermediate_size_mlp",
                c.intermediate_size_mlp,
                16384,
                1,
                WIDTH,
            )?;
            let moe_count = match &c.moe_layers {
                Some(list) => {
                    if list.iter().any(|&i| i >= layers) {
                        return fail(
                            "moe_layers",
                            format!("indices must be below num_hidden_layers ({layers})"),
                        );
                    }
                    list.len() as u64
                }
                None => {
                    let step = or(
                        "interleave_moe_layer_step",
                        c.interleave_moe_layer_step,
                        1,
                        1,
                        layers,
                    )?;
                    layers / step
                }
            };
            if moe_count == 0 {
                return fail(
                    "moe_layers",
                    "no MoE layer: this reader prices Llama 4 with experts",
                );
            }
            if moe_count < layers {
                notes.push(format!(
                    "{} dense layers of {} interleaved with the MoE ones, priced as if first",
                    layers - moe_count,
                    layers
                ));
            }
            if c.no_rope_layer_interval.is_some_and(|i| i != 4) {
                notes.push(
                    "no_rope_layer_interval read as 4 (every fourth layer without rotary embedding)"
                        .to_string(),
                );
            }
            let experts = c.num_local_experts.or(Some(16));
            arch.moe = Some(moe(
                experts,
                "num_local_experts",
                c,
                effn,
                effn,
                layers - moe_count,
                Router::Llama4,
            )?);
        }
        "qwen3_moe" => {
            arch.ffn = dense_ffn(Some(1))?;
            let effn = need("moe_intermediate_size", c.moe_intermediate_size, 1, WIDTH)?;
            let k = qwen_dense_layers(c)?;
            let experts = c.num_experts.or(c.num_local_experts);
            arch.moe = Some(moe(experts, "num_experts", c, effn, 0, k, Router::Qwen)?);
        }
        // Qwen2-MoE (`Qwen2MoeSparseMoeBlock`): routed experts, one shared
        // expert of its own width behind a sigmoid gate; dense layers where
        // `mlp_only_layers` lists them, at `intermediate_size`.
        "qwen2_moe" => {
            arch.ffn = dense_ffn(Some(5632))?;
            let effn = need("moe_intermediate_size", c.moe_intermediate_size, 1, WIDTH)?;
            let shared = or(
                "shared_expert_intermediate_size",
                c.shared_expert_intermediate_size,
                5632,
                0,
                WIDTH,
            )?;
            let k = qwen_dense_layers(c)?;
            let experts = c.num_experts.or(c.num_local_experts);
            arch.moe = Some(moe(
                experts,
                "num_experts",
                c,
                effn,
                shared,
                k,
                Router::Qwen2,
            )?);
        }
        // GLM-4.5 (`Glm4MoeMoE`): DeepSeek-V3's sigmoid router with its
        // score-correction bias and fp32 weight, shared experts and leading
        // dense layers, over grouped-query attention.
        "glm4_moe" => {
            arch.ffn = dense_ffn(None)?;
            let effn = need("moe_intermediate_size", c.moe_intermediate_size, 1, WIDTH)?;
            let shared = or("n_shared_experts", c.n_shared_experts, 1, 0, 64)? * effn;
            let dense = or(
                "first_k_dense_replace",
                c.first_k_dense_replace,
                1,
                0,
                layers - 1,
            )?;
            let experts = c.n_routed_experts.or(c.num_local_experts);
            arch.moe = Some(moe(
                experts,
                "n_routed_experts",
                c,
                effn,
                shared,
                dense,
                Router::DeepSeek,
            )?);
        }
        "deepseek_v3" | "deepseek_v2" => {
            arch.ffn = dense_ffn(None)?;
            arch.kv_heads = heads;
            let effn = need("moe_intermediate_size", c.moe_intermediate_size, 1, WIDTH)?;
            if c.moe_layer_freq.unwrap_or(1) != 1 {
                return fail(
                    "moe_layer_freq",
                    "only 1 (every layer after the dense ones) is modelled",
                );
            }
            let shared = or("n_shared_experts", c.n_shared_experts, 0, 0, 64)? * effn;
            let dense = or(
                "first_k_dense_replace",
                c.first_k_dense_replace,
                0,
                0,
                layers - 1,
            )?;
            let router = if t == "deepseek_v3" {
                Router::DeepSeek
            } else {
                Router::Qwen
            };
            arch.moe = Some(moe(
                c.n_routed_experts,
                "n_routed_experts",
                c,
                effn,
                shared,
                dense,
                router,
            )?);
            arch.mla = Some(Mla {
                q_rank: or("q_lora_rank", c.q_lora_rank, 0, 0, 1 << 16)?,
                kv_rank: need("kv_lora_rank", c.kv_lora_rank, 1, 1 << 16)?,
                rope_dim: need("qk_rope_head_dim", c.qk_rope_head_dim, 1, 1 << 12)?,
                nope_dim: need("qk_nope_head_dim", c.qk_nope_head_dim, 1, 1 << 12)?,
                v_dim: need("v_head_dim", c.v_head_dim, 1, 1 << 12)?,
            });
            if t == "deepseek_v2" {
                notes.push(
                    "deepseek_v2 read with a softmax router and no score-correction bias"
                        .to_string(),
                );
            }
        }
        "falcon_h1" => {
            arch.ffn = or("intermediate_size", c.intermediate_size, 14336, 1, WIDTH)?;
            arch.ssm = Some(falcon_mamba(c, hidden)?);
        }
        _ => arch.ffn = dense_ffn(None)?,
    }
    Ok(arch)
}

fn moe(
    experts: Option<u64>,
    name: &str,
    c: &HfConfig,
    expert_ffn: u64,
    shared_ffn: u64,
    first_dense: u64,
    router: Router,
) -> Result<Moe, ImportError> {
    let experts = need(name, experts, 1, 4096)?;
    let top_k = need(
        "num_experts_per_tok",
        c.num_experts_per_tok.or(c.experts_per_token),
        1,
        experts,
    )?;
    Ok(Moe {
        experts,
        top_k,
        expert_ffn,
        shared_ffn,
        first_dense,
        router,
        // gpt-oss's softmax over the k sums to one as a renormalisation would.
        normalized: matches!(router, Router::Mixtral | Router::GptOss)
            || (router != Router::Llama4 && c.norm_topk_prob.unwrap_or(router == Router::DeepSeek)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
