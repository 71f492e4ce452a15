//! What a hybrid's Mamba-2 mixer keeps for backward, in each profile (its
//! shape is [`crate::detailed::model::mamba`]).

use super::bytes::act_bytes;
use crate::detailed::config::{DetailedConfig, Profile};
use crate::detailed::model::Mamba2;

/// What one mixer keeps for backward for `b` sequences of `s` tokens, in
/// bytes: (`replicated`, `sharded`), split as tensor parallelism splits a
/// layer (the input projection's input is whole on every rank; the rest is
/// per head).
///
/// - [`Profile::Fused`]: `mamba_ssm`'s `MambaSplitConv1dScanCombinedFn`
///   (`ops/triton/ssd_combined.py`, the path `transformers` takes on CUDA
///   with the kernels installed) saves the projection's output `zxbcdt`,
///   the scan's output `out_x` and the norm's fp32 `rstd`, and recomputes
///   the rest in backward; beside it, the input projection's input.
///   Modelled from that code, not measured (it needs a GPU).
/// - [`Profile::Hf`]: `transformers`' PyTorch path (`torch_forward`: the
///   convolution as `F.conv1d`, the scan as `mamba2_chunk_scan`'s einsums in
///   fp32, chunk by chunk) keeps every operand autograd needs, term by term
///   below; measured in `tests/fixtures/hybrid_measured.tsv`.
pub(crate) fn saved(cfg: &DetailedConfig, m: Mamba2, b: f64) -> (f64, f64) {
    let s = cfg.seq as f64;
    let n = s * b;
    let h = cfg.arch.hidden as f64;
    let p = act_bytes(cfg);
    let (heads, pd, g, st) = (
        m.heads as f64,
        m.head_dim as f64,
        m.groups as f64,
        m.state as f64,
    );
    let (d, cd, w, k) = (
        m.inner() as f64,
        m.conv_dim() as f64,
        m.in_width() as f64,
        m.conv as f64,
    );
    let rstd = if m.gated_norm { 4.0 * n * g } else { 0.0 };
    // The input projection's input: Falcon-H1 scales the normed stream by
    // `ssm_in_multiplier` first, a tensor of its own.
    let input = n * h * p;
    if cfg.profile == Profile::Fused {
        return (input, n * w * p + n * d * p + rstd);
    }
    let fp32 = p == 4.0;
    // The scan pads the sequence to whole chunks of Q: c chunks, n' tokens.
    let q = m.chunk as f64;
    let c = (s / q).ceil();
    let np = c * q * b;
    // zxbcdt (the convolution's input is a view of it); the convolution's
    // output before its causal trim (s + K − 1 positions), SiLU's input.
    let conv = n * w * p + b * cd * (s + k - 1.0) * p;
    // Δ: softplus's and clamp's inputs in the dtype, and its fp32 copies
    // (one view of the clamp's output in fp32, two casts otherwise).
    let dt = 2.0 * n * heads * p + if fp32 { 4.0 } else { 8.0 } * n * heads;
    // x in fp32: SiLU's output itself in fp32 (x, B and C together), a
    // cast of x otherwise.
    let x = if fp32 { 4.0 * n * cd } else { 4.0 * n * d };
    // `mamba2_chunk_scan`, fp32, B and C repeated to every head:
    // the padded x for D's skip; exp(segsum) L (Q × Q per chunk and head);
    // C·Bᵀ's operand copies and result G; G∘L's copy and x's for Y_diag;
    // the decay row, the chunked B, B·decay's and x's copies for the
    // chunk states; the inter-chunk decay (c + 1)² and the states' copy
    // (c + 1 of P × N); the output decay, C's and the states' copies for
    // C·states, and that product for Y_off.
    let scan = 4.0
        * (np * d
            + np * heads * q
            + 2.0 * np * heads * st
            + np * heads * q
            + np * heads * q
            + np * d
            + np * heads
            + np * heads * st
            + np * heads * st
            + np * d
            + b * heads * (c + 1.0) * (c + 1.0)
            + b * heads * (c + 1.0) * pd * st
            + np * heads
            + np * heads * st
            + b * c * heads * pd * st
            + np * d);
    // The boolean masks of the two segment sums, and −exp(A_log) (fp32).
    let small = 2.0 * q * q + 2.0 * (c + 1.0) * (c + 1.0) + 12.0 * heads;
    // The gate: without the norm, y (fp32), SiLU(z) and the output
    // projection's input; with it (`FalconH1RMSNormGated`, either order),
    // four fp32 tensors of the inner width, the fp32 root per group, the
    // projection's input, and z's fp32 cast unless fp32 already.
    let gate = if m.gated_norm {
        16.0 * n * d + rstd + n * d * p + if fp32 { 0.0 } else { 4.0 * n * d }
    } else {
        4.0 * n * d + 2.0 * n * d * p
    };
    (input, conv + dt + x + scan + small + gate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::time::flops::{scan_flops, step_flops};
    use crate::detailed::{import_config, preset, Precision};

    /// `mamba_ssm`'s combined kernel keeps `zxbcdt`, `out_x` and `rstd`
    /// (`ssd_combined.py`, `MambaSplitConv1dScanCombinedFn.forward`'s
    /// `save_for_backward`), beside the projection's input: for
    /// Falcon-H1-7B at 4,096 tokens in bf16, per layer.
    #[test]
    fn fused_profile_keeps_what_the_kernel_saves() {
        let arch = preset("falcon-h1-7b").unwrap().arch;
        let m = arch.ssm.unwrap();
        let mut cfg = DetailedConfig::new(arch, 4096, 1);
        cfg.precision = Precision::Bf16;
        cfg.profile = Profile::Fused;
        let n = 4096.0;
        // zxbcdt: 2·3072 + 2·1·256 + 24 = 6,680 wide; out_x 3,072; rstd
        // one fp32 per token and group.
        assert_eq!(m.in_width(), 6680);
        let (replicated, sharded) = saved(&cfg, m, 1.0);
        assert_eq!(replicated, n * 3072.0 * 2.0);
        assert_eq!(sharded, n * 6680.0 * 2.0 + n * 3072.0 * 2.0 + 4.0 * n);
    }

    /// The scan's products for Falcon-H1-7B (Q = 256, G = 1, N = 256,
    /// d = 3,072, K = 4), and the model's FLOPs: 6 × the weights a token
    /// meets (the mixer's projections among them) plus attention and 3 ×
    /// the scan, per token.
    #[test]
    fn scan_flops_and_the_step_count_them() {
        let arch = preset("falcon-h1-7b").unwrap().arch;
        let m = arch.ssm.unwrap();
        let scan =
            2.0 * 4.0 * 3584.0 + 2.0 * 256.0 * 256.0 + 2.0 * 256.0 * 3072.0 + 4.0 * 256.0 * 3072.0;
        assert_eq!(scan_flops(m, 4096), scan);
        // Megatron-LM's 7·d·N is within 15 % of it.
        assert!((7.0 * 3072.0 * 256.0 / scan - 1.0).abs() < 0.15);
        let cfg = DetailedConfig::new(arch, 4096, 1);
        let per_token = step_flops(&cfg).model / 4096.0;
        // Weights a token meets: all but the embedding's lookup, less the
        // norms, biases, the convolution and the per-head vectors.
        let vectors = arch.layers * (2 * 3072 + m.conv_dim() * 5 + 3 * 24 + 3072) + 3072;
        let matmul = (arch.params() - 130_049 * 3072 - vectors) as f64;
        let attention = 12.0 * 44.0 * 4096.0 * 1536.0;
        let want = 6.0 * matmul + attention + 3.0 * 44.0 * scan;
        assert!(
            (per_token / want - 1.0).abs() < 1e-12,
            "{per_token} vs {want}"
        );
    }

    /// `FalconH1Config`'s defaults: `mamba_d_ssm` absent is 1024, null is
    /// `mamba_expand` × hidden; the heads must tile the inner width.
    #[test]
    fn import_follows_falcon_h1_config() {
        let base = r#""model_type": "falcon_h1", "num_hidden_layers": 2, "hidden_size": 512,
            "num_attention_heads": 8, "vocab_size": 1000, "mamba_n_heads": 16"#;
        let absent = import_config(&format!("{{{base}}}"))
            .unwrap()
            .arch
            .ssm
            .unwrap();
        assert_eq!((absent.inner(), absent.head_dim), (1024, 64));
        let null = import_config(&format!("{{{base}, \"mamba_d_ssm\": null}}"))
            .unwrap()
            .arch
            .ssm
            .unwrap();
        assert_eq!(null.inner(), 1024);
        let wide = import_config(&format!(
            "{{{base}, \"mamba_d_ssm\": null, \"mamba_expand\": 4}}"
        ))
        .unwrap()
        .arch
        .ssm
        .unwrap();
        assert_eq!((wide.inner(), wide.head_dim), (2048, 128));
        let e = import_config(&format!("{{{base}, \"mamba_d_ssm\": 1000}}")).unwrap_err();
        assert_eq!(e.field, "mamba_n_heads");
        let e = import_config(&format!("{{{base}, \"attention_bias\": true}}")).unwrap_err();
        assert_eq!(e.field, "attention_bias");
        // Python's json writes `time_step_limit`'s infinity bare; inside a
        // string the word stays as it is.
        let python = format!(
            "{{{base}, \"time_step_limit\": [0.0, Infinity], \"x\": -Infinity, \"y\": NaN, \"torch_dtype\": \"NaN \\\"Infinity\\\"\"}}"
        );
        let read = import_config(&python).unwrap();
        assert_eq!(read.arch, absent_arch(base));
        assert!(read.notes.iter().any(|n| n.contains("Infinity/NaN")));
        assert!(read
            .notes
            .iter()
            .any(|n| n.contains("published in NaN \"Infinity\"")));
    }

    fn absent_arch(base: &str) -> crate::detailed::Architecture {
        import_config(&format!("{{{base}}}")).unwrap().arch
    }
}
