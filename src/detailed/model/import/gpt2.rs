//! GPT-2 (`gpt2`): its own names for the shape (`n_layer`, `n_embd`,
//! `n_head`, `n_inner`, `n_positions`) and `GPT2Config`'s defaults.

use super::fields::HfConfig;
use super::{fail, need, or, ImportError, HIDDEN, LAYERS, VOCAB, WIDTH};
use crate::detailed::model::arch::Architecture;

/// A GPT-2: learned positions, a 4h MLP unless `n_inner` says otherwise,
/// tied embeddings unless untied.
pub(super) fn gpt2(c: &HfConfig) -> Result<Architecture, ImportError> {
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
