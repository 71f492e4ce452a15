//! The serde shape of a `config.json`: the keys that change training
//! memory (every family's, in one struct: serde's derived reader is large,
//! and one is in the page's wasm); Python's bare `Infinity`/`NaN` read as
//! `null` first; serde's errors with the field at fault named and the
//! wording put plainly.

use serde::de::IgnoredAny;
use serde::Deserialize;
use std::fmt;

use super::ImportError;

/// The keys that change training memory; `#[serde(default)]` leaves an
/// absent key `None` (or empty), and unknown keys are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct HfConfig {
    pub(super) model_type: Option<String>,
    // GPT-2's names.
    pub(super) n_layer: Option<u64>,
    pub(super) n_embd: Option<u64>,
    pub(super) n_head: Option<u64>,
    pub(super) n_inner: Option<u64>,
    pub(super) n_positions: Option<u64>,
    // Everyone else's.
    pub(super) vocab_size: Option<u64>,
    pub(super) num_hidden_layers: Option<u64>,
    pub(super) hidden_size: Option<u64>,
    pub(super) num_attention_heads: Option<u64>,
    pub(super) num_key_value_heads: Option<u64>,
    pub(super) intermediate_size: Option<u64>,
    pub(super) head_dim: Option<u64>,
    pub(super) tie_word_embeddings: Option<bool>,
    pub(super) attention_bias: Option<bool>,
    // Qwen2-MoE's q/k/v biases (on unless false).
    pub(super) qkv_bias: Option<bool>,
    pub(super) use_sliding_window: Option<bool>,
    // GLM-4.5: per-head q/k norms, the rotated fraction of each head (top
    // level as published, in `rope_parameters` as transformers 5 saves it).
    pub(super) use_qk_norm: Option<bool>,
    pub(super) partial_rotary_factor: Option<f64>,
    pub(super) rope_parameters: Option<RopeParameters>,
    // Mixture of experts.
    pub(super) num_local_experts: Option<u64>,
    pub(super) num_experts: Option<u64>,
    pub(super) n_routed_experts: Option<u64>,
    pub(super) num_experts_per_tok: Option<u64>,
    // gpt-oss's original name for it.
    pub(super) experts_per_token: Option<u64>,
    pub(super) sliding_window: Option<u64>,
    pub(super) moe_intermediate_size: Option<u64>,
    pub(super) shared_expert_intermediate_size: Option<u64>,
    pub(super) n_shared_experts: Option<u64>,
    pub(super) first_k_dense_replace: Option<u64>,
    pub(super) moe_layer_freq: Option<u64>,
    pub(super) decoder_sparse_step: Option<u64>,
    pub(super) mlp_only_layers: Vec<u64>,
    pub(super) norm_topk_prob: Option<bool>,
    // Gemma 2: present and null means off; absent means the default (on).
    #[serde(deserialize_with = "some_null")]
    pub(super) attn_logit_softcapping: Option<Option<f64>>,
    #[serde(deserialize_with = "some_null")]
    pub(super) final_logit_softcapping: Option<Option<f64>>,
    // Multi-head latent attention.
    pub(super) q_lora_rank: Option<u64>,
    pub(super) kv_lora_rank: Option<u64>,
    pub(super) qk_rope_head_dim: Option<u64>,
    pub(super) qk_nope_head_dim: Option<u64>,
    pub(super) v_head_dim: Option<u64>,
    // Reported, not used.
    pub(super) torch_dtype: Option<String>,
    pub(super) dtype: Option<String>,
    pub(super) quantization_config: Option<IgnoredAny>,
    // A multimodal model's language model (Llama 4's is read; Gemma 3's
    // is asked for).
    pub(super) text_config: Option<Box<HfConfig>>,
    // Llama 4: the dense layers' MLP width, which layers are MoE, which
    // lack rotary embeddings.
    pub(super) intermediate_size_mlp: Option<u64>,
    pub(super) interleave_moe_layer_step: Option<u64>,
    pub(super) moe_layers: Option<Vec<u64>>,
    pub(super) no_rope_layer_interval: Option<u64>,
    // Falcon-H1's Mamba-2 mixer (`FalconH1Config`); `mamba_d_ssm` null
    // means `mamba_expand` × hidden, absent means 1024 (the class default);
    // `mamba_d_head` is a width or "auto".
    #[serde(deserialize_with = "some_null")]
    pub(super) mamba_d_ssm: Option<Option<u64>>,
    pub(super) mamba_n_heads: Option<u64>,
    #[serde(deserialize_with = "width_or_auto")]
    pub(super) mamba_d_head: Option<Option<u64>>,
    pub(super) mamba_n_groups: Option<u64>,
    pub(super) mamba_d_state: Option<u64>,
    pub(super) mamba_d_conv: Option<u64>,
    pub(super) mamba_expand: Option<u64>,
    pub(super) mamba_chunk_size: Option<u64>,
    pub(super) mamba_conv_bias: Option<bool>,
    pub(super) mamba_proj_bias: Option<bool>,
    pub(super) mamba_rms_norm: Option<bool>,
    pub(super) projectors_bias: Option<bool>,
    pub(super) mlp_bias: Option<bool>,
}

/// The one key of `rope_parameters` that changes memory.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RopeParameters {
    pub(super) partial_rotary_factor: Option<f64>,
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
pub(super) fn python_floats_as_null(json: &str) -> (std::borrow::Cow<'_, str>, bool) {
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
        /// What the error says was expected.
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a whole number or \"auto\"")
        }
        /// A width.
        fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(Some(v)))
        }
        /// "auto", and nothing else.
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            if v == "auto" {
                Ok(Some(None))
            } else {
                Err(E::custom("expected a whole number or \"auto\""))
            }
        }
        /// `null`, read as "auto".
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(Some(None))
        }
    }
    d.deserialize_any(V)
}
/// serde's error as an [`ImportError`]: the JSON path as the field, the
/// reason in words.
pub(super) fn plainly(e: serde_path_to_error::Error<serde_json::Error>) -> ImportError {
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
}
