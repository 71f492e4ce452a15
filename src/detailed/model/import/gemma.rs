//! Gemma 2 and 3 (`gemma2`, `gemma3_text`): a Llama-like decoder whose
//! heads default to 256 wide and whose embeddings default to tied (both
//! read by [`super::llama::decoder`]), with four norms per layer, Gemma 2's
//! soft-capped logits and a dense MLP.

use super::fields::HfConfig;
use super::llama::dense_ffn;
use super::ImportError;
use crate::detailed::model::arch::Architecture;

/// Gemma's norms and soft caps, and its dense MLP.
pub(super) fn gemma(c: &HfConfig, t: &str, arch: &mut Architecture) -> Result<(), ImportError> {
    arch.sandwich_norms = true;
    // Gemma 2 caps its logits unless the file says null.
    arch.softcap = t == "gemma2"
        && !(c.attn_logit_softcapping == Some(None) && c.final_logit_softcapping == Some(None));
    arch.ffn = dense_ffn(c, None)?;
    Ok(())
}
