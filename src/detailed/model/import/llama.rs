//! Dense Llama-likes (`llama`, `mistral`, `qwen2`, `qwen3`), and the
//! decoder every other type but `gpt2` builds on: the shape (layers,
//! hidden, heads, key/value heads, vocabulary, head width), each type's
//! attention (q/k/v biases, q/k norms, gpt-oss's sinks, sliding windows
//! read as full attention) and the dense MLP's width.

use super::fields::HfConfig;
use super::{fail, need, or, ImportError, HIDDEN, LAYERS, VOCAB, WIDTH};
use crate::detailed::model::arch::Architecture;

/// The shape, checked: layers, hidden, heads, key/value heads, vocabulary
/// and the head width with each type's default; the MLP's width is left to
/// the family's reader.
pub(super) fn decoder(c: &HfConfig, t: &str) -> Result<Architecture, ImportError> {
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
    Ok(arch)
}

/// Each type's attention: which have q/k/v biases, q/k norms, sinks; what
/// is read as something else is said in the notes.
pub(super) fn attention(c: &HfConfig, t: &str, arch: &mut Architecture, notes: &mut Vec<String>) {
    let deepseek = t.starts_with("deepseek");
    arch.qkv_bias = t == "qwen2"
        || (t == "qwen2_moe" && c.qkv_bias != Some(false))
        || (t == "gpt_oss" && c.attention_bias != Some(false))
        || (c.attention_bias == Some(true) && !deepseek);
    arch.qk_norm = matches!(t, "qwen3" | "qwen3_moe" | "gemma3_text")
        || (t == "glm4_moe" && c.use_qk_norm == Some(true))
        || (t == "llama4_text" && c.use_qk_norm != Some(false));
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
}

/// The dense MLP's width, `intermediate_size`, or the type's default.
pub(super) fn dense_ffn(c: &HfConfig, default: Option<u64>) -> Result<u64, ImportError> {
    match c.intermediate_size.or(default) {
        Some(v) => need("intermediate_size", Some(v), 1, WIDTH),
        None => fail("intermediate_size", "missing: this model type needs it"),
    }
}
