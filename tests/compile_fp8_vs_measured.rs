//! `torch.compile` over torchao's float8 linear layers against
//! measurement: `fixtures/compile_fp8_measured.tsv`
//! (`fixtures/measure_compile_fp8.py`: the small Llama in bf16, the output
//! layer left in bf16; tensorwise without recomputation and with full
//! recomputation, rowwise with full recomputation).

#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, DetailedConfig, Fp8, Recompute};

struct Row {
    m: common::Measured,
    live_start: f64,
    after_forward: f64,
}

fn rows() -> Vec<Row> {
    common::tsv_rows(include_str!("fixtures/compile_fp8_measured.tsv"))
        .map(|(line, c)| {
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let shape = (n(1), n(2), n(3), n(4), n(5), n(6));
            let (seq, micro) = (n(7), n(8));
            let arch = common::measured_arch(c[0], shape, seq);
            let mut cfg = DetailedConfig::new(arch, seq, micro);
            cfg.micro_batch = Some(micro);
            cfg.dropout = false;
            common::hf_cpu(&mut cfg, c[9], "sdpa");
            cfg.compile = true;
            cfg.fp8 = c[11].parse::<Fp8>().unwrap();
            cfg.recompute = if c[10] == "1" {
                Recompute::Full
            } else {
                Recompute::None
            };
            assert_eq!(cfg.arch.params(), n(13), "{line}: parameters");
            Row {
                m: common::Measured {
                    line: line.to_string(),
                    cfg,
                    opts: common::step_options(c[12], false),
                    peak: n(17) as f64,
                    phase: c[18].to_string(),
                },
                live_start: n(14) as f64,
                after_forward: n(15) as f64,
            }
        })
        .collect()
}

/// What the compiled forward keeps (live bytes after it less those at the
/// step's start) is the model's activations to the byte: the norms'
/// outputs and the SwiGLU product recomputed for their casts, a bf16 amax
/// and an fp32 scale kept per linear layer.
#[test]
fn compiled_float8_saved_bytes_are_exact() {
    let rows = rows();
    for r in &rows {
        let measured = r.after_forward - r.live_start;
        // The activations, the token ids (int64) and the loss (a scalar),
        // as tests/compile_vs_measured.rs counts them.
        let n = (r.m.cfg.seq * r.m.cfg.micro()) as f64;
        let model = estimate(&r.m.cfg).unwrap().activations + 8.0 * n + 4.0;
        assert_eq!(model, measured, "{}", r.m.line);
    }
    assert!(rows.len() >= 4, "{} rows", rows.len());
}

/// Compiled, float8 keeps less than bf16 without recomputation (the casts'
/// bf16 inputs recomputed) and the same with full recomputation (the
/// layers' inputs).
#[test]
fn float8_drops_the_casts_inputs_only_without_recomputation() {
    for r in rows() {
        let bf16 = DetailedConfig {
            fp8: Fp8::None,
            ..r.m.cfg
        };
        let (f8, b) = (
            estimate(&r.m.cfg).unwrap().activations,
            estimate(&bf16).unwrap().activations,
        );
        match r.m.cfg.recompute {
            Recompute::Full => assert_eq!(f8, b, "{}", r.m.line),
            _ => assert!(f8 < b, "{}", r.m.line),
        }
    }
}

/// The step's peak within 2 % in its phase (measured: −0.003 to
/// +0.9 %).
#[test]
fn compiled_float8_peaks_within_two_percent_and_right_phase() {
    common::assert_peaks(rows().iter().map(|r| &r.m), 0.02);
}
