//! Gemma 2 and 3 (`gemma2`, `gemma3_text`): a Llama-like decoder whose
//! heads default to 256 wide and whose embeddings default to tied (both
//! read by `llama::decoder`), with four norms per layer and Gemma 2's
//! soft-capped logits; its MLP is the dense one.

use super::fields::HfConfig;
use crate::detailed::model::arch::Architecture;

/// Gemma's four norms per layer and Gemma 2's soft caps; nothing for any
/// other type.
pub(super) fn norms(c: &HfConfig, t: &str, arch: &mut Architecture) {
    arch.sandwich_norms = t == "gemma2" || t == "gemma3_text";
    // Gemma 2 caps its logits unless the file says null.
    arch.softcap = t == "gemma2"
        && !(c.attn_logit_softcapping == Some(None) && c.final_logit_softcapping == Some(None));
}
