//! Falcon-H1 (`falcon_h1`): a hybrid, a Mamba-2 mixer beside the attention
//! in every layer, read with `FalconH1Config`'s defaults.

use super::fields::HfConfig;
use super::{fail, need, or, ImportError, WIDTH};
use crate::detailed::model::arch::Architecture;
use crate::detailed::model::mamba::Mamba2;

/// Falcon-H1's dense MLP (14336 wide unless told) and its mixer.
pub(super) fn falcon_h1(c: &HfConfig, arch: &mut Architecture) -> Result<(), ImportError> {
    arch.ffn = or("intermediate_size", c.intermediate_size, 14336, 1, WIDTH)?;
    arch.ssm = Some(falcon_mamba(c, arch.hidden)?);
    Ok(())
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
