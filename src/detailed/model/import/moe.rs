//! Mixtures of experts on a Llama-like decoder: Mixtral and gpt-oss
//! (`mixtral`, `gpt_oss`), Llama 4's language model (`llama4_text`),
//! Qwen3-MoE and Qwen2-MoE (`qwen3_moe`, `qwen2_moe`) and GLM-4.5
//! (`glm4_moe`); and the experts, top k and router every MoE reader
//! (DeepSeek's too) shares.

use super::fields::HfConfig;
use super::llama::dense_ffn;
use super::{fail, need, or, ImportError, WIDTH};
use crate::detailed::model::arch::{Architecture, Moe, Router};

/// Mixtral and gpt-oss.
pub(super) fn mixtral(c: &HfConfig, t: &str, arch: &mut Architecture) -> Result<(), ImportError> {
    // Every layer MoE, experts as wide as `intermediate_size`; gpt-oss's
    // (`GptOssMLP`) with biased experts and router.
    let ffn = dense_ffn(c, None)?;
    arch.ffn = ffn;
    let experts = c.num_local_experts.or(c.num_experts);
    let router = if t == "gpt_oss" {
        Router::GptOss
    } else {
        Router::Mixtral
    };
    arch.moe = Some(moe(experts, "num_local_experts", c, ffn, 0, 0, router)?);
    Ok(())
}

/// Llama 4's language model: its two MLP widths, which layers are MoE
/// (at least one), and its experts.
pub(super) fn llama4(
    c: &HfConfig,
    arch: &mut Architecture,
    notes: &mut Vec<String>,
) -> Result<(), ImportError> {
    // Llama 4 (`Llama4TextConfig`): experts and the shared expert at
    // `intermediate_size`, dense layers at `intermediate_size_mlp`;
    // MoE every `interleave_moe_layer_step`-th layer unless
    // `moe_layers` lists them. The model counts the dense layers, not
    // where they sit: they are priced as leading ones.
    let layers = arch.layers;
    let effn = or("intermediate_size", c.intermediate_size, 8192, 1, WIDTH)?;
    arch.ffn = or(
        "intermediate_size_mlp",
        c.intermediate_size_mlp,
        16384,
        1,
        WIDTH,
    )?;
    let moe_count = llama4_moe_layers(c, layers)?;
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
    Ok(())
}

/// How many of Llama 4's layers are MoE: those `moe_layers` lists, or
/// every `interleave_moe_layer_step`-th; at least one.
fn llama4_moe_layers(c: &HfConfig, layers: u64) -> Result<u64, ImportError> {
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
    Ok(moe_count)
}

/// Qwen3-MoE: routed experts, no shared one; `intermediate_size`, the
/// width of the dense layers `mlp_only_layers` lists, 1 when absent.
pub(super) fn qwen3(c: &HfConfig, arch: &mut Architecture) -> Result<(), ImportError> {
    arch.ffn = dense_ffn(c, Some(1))?;
    let effn = need("moe_intermediate_size", c.moe_intermediate_size, 1, WIDTH)?;
    let k = qwen_dense_layers(c)?;
    let experts = c.num_experts.or(c.num_local_experts);
    arch.moe = Some(moe(experts, "num_experts", c, effn, 0, k, Router::Qwen)?);
    Ok(())
}

/// Qwen2-MoE.
pub(super) fn qwen2(c: &HfConfig, arch: &mut Architecture) -> Result<(), ImportError> {
    // Qwen2-MoE (`Qwen2MoeSparseMoeBlock`): routed experts, one shared
    // expert of its own width behind a sigmoid gate; dense layers where
    // `mlp_only_layers` lists them, at `intermediate_size`.
    arch.ffn = dense_ffn(c, Some(5632))?;
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
    Ok(())
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

/// GLM-4.5: its partial rotary embedding, then its experts.
pub(super) fn glm4(c: &HfConfig, arch: &mut Architecture) -> Result<(), ImportError> {
    arch.rotary_dims = glm4_rotary(c, arch.head_dim())?;
    // GLM-4.5 (`Glm4MoeMoE`): DeepSeek-V3's sigmoid router with its
    // score-correction bias and fp32 weight, shared experts and leading
    // dense layers, over grouped-query attention.
    arch.ffn = dense_ffn(c, None)?;
    let effn = need("moe_intermediate_size", c.moe_intermediate_size, 1, WIDTH)?;
    let shared = or("n_shared_experts", c.n_shared_experts, 1, 0, 64)? * effn;
    let dense = or(
        "first_k_dense_replace",
        c.first_k_dense_replace,
        1,
        0,
        arch.layers - 1,
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
    Ok(())
}

/// GLM-4.5's rotated dimensions of a `head`-wide head (0: all of them).
fn glm4_rotary(c: &HfConfig, head: u64) -> Result<u64, ImportError> {
    // GLM-4.5 rotates half of each head unless told otherwise
    // (`Glm4MoeConfig`: `partial_rotary_factor` 0.5 by default).
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
    Ok(if dims == head { 0 } else { dims.max(1) })
}

/// The MoE block: `experts` (read from `name`), `num_experts_per_tok` (or
/// gpt-oss's `experts_per_token`) of them per token, and whether the top
/// k's weights are renormalised.
pub(super) fn moe(
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
