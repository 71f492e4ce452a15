//! DeepSeek-V2 and V3 (`deepseek_v2`, `deepseek_v3`): multi-head latent
//! attention (every head its own keys and values, through low-rank
//! latents) and experts, shared ones and leading dense layers.

use super::fields::HfConfig;
use super::llama::dense_ffn;
use super::moe::moe;
use super::{fail, need, or, ImportError, WIDTH};
use crate::detailed::model::arch::{Architecture, Mla, Router};

/// DeepSeek's experts and latent attention; V2 read with a softmax router.
pub(super) fn deepseek(
    c: &HfConfig,
    t: &str,
    arch: &mut Architecture,
    notes: &mut Vec<String>,
) -> Result<(), ImportError> {
    arch.ffn = dense_ffn(c, None)?;
    arch.kv_heads = arch.heads;
    let effn = expert_width(c)?;
    let shared = or("n_shared_experts", c.n_shared_experts, 0, 0, 64)? * effn;
    let dense = or(
        "first_k_dense_replace",
        c.first_k_dense_replace,
        0,
        0,
        arch.layers - 1,
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
            "deepseek_v2 read with a softmax router and no score-correction bias".to_string(),
        );
    }
    Ok(())
}

/// The routed experts' width; every layer after the dense ones must be MoE
/// (`moe_layer_freq` 1).
fn expert_width(c: &HfConfig) -> Result<u64, ImportError> {
    let effn = need("moe_intermediate_size", c.moe_intermediate_size, 1, WIDTH)?;
    if c.moe_layer_freq.unwrap_or(1) != 1 {
        return fail(
            "moe_layer_freq",
            "only 1 (every layer after the dense ones) is modelled",
        );
    }
    Ok(effn)
}
