//! Falcon-H1's parallel hybrid (attention and a Mamba-2 mixer in every
//! layer) against PyTorch: `fixtures/hybrid_measured.tsv`, written by
//! `fixtures/measure_hybrid.py` (tiny `FalconH1ForCausalLM` models on the
//! CPU, where `transformers` runs the mixer's PyTorch path; fp32 and bf16,
//! with and without the gated norm, a sequence the chunks do not divide,
//! one and two groups, SDPA and eager attention, gradient accumulation and
//! checkpointing; two measuring methods agreeing to the byte). The "hf"
//! profile must give the parameter count exactly, the saved activations
//! within ±5 % (they are exact to 16 bytes), and each step's peak within ±5 % in the right phase.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, Architecture, DetailedConfig, Mamba2, Recompute, Step};

struct Row {
    /// The fixture's line, the configuration and step, the measured peak.
    m: common::Measured,
    n_params: u64,
    activations: f64,
}

fn rows() -> Vec<Row> {
    common::tsv_rows(include_str!("fixtures/hybrid_measured.tsv"))
        .map(|(line, c)| {
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let (hidden, heads, mhd) = (n(1), n(2), n(7));
            let arch = Architecture {
                // The script gives heads of 128 where the mixer's are.
                head_width: if mhd == 128 { 128 } else { 0 },
                ssm: Some(Mamba2 {
                    heads: n(6),
                    head_dim: mhd,
                    groups: n(8),
                    state: n(9),
                    conv: 4,
                    chunk: n(10),
                    gated_norm: c[11] == "True",
                    conv_bias: true,
                    in_bias: false,
                    out_bias: false,
                }),
                ..Architecture::llama(n(0), hidden, heads, n(3), n(4), n(5))
            };
            let (seq, micro, accum) = (n(12), n(13), n(14));
            let mut cfg = DetailedConfig::new(arch, seq, micro * accum);
            cfg.micro_batch = Some(micro);
            cfg.dropout = false;
            common::hf_cpu(&mut cfg, c[15], c[16]);
            if c[17] == "True" {
                cfg.recompute = Recompute::Full;
            }
            let opts = common::step_options(c[19], c[18] == "True");
            Row {
                m: common::Measured {
                    line: line.to_string(),
                    cfg,
                    opts,
                    peak: n(26) as f64,
                    phase: c[27].to_string(),
                },
                n_params: n(20),
                activations: n(21) as f64,
            }
        })
        .collect()
}

#[test]
fn hybrid_parameters_exact_and_saved_activations_within_five_percent() {
    let rows = rows();
    assert!(rows.len() >= 18);
    let mut worst: f64 = 0.0;
    for r in rows.iter().filter(|r| r.m.opts.step == Step::First) {
        assert_eq!(
            r.m.cfg.arch.params(),
            r.n_params,
            "{}: parameters",
            r.m.line
        );
        // One micro-batch's forward pass, without checkpointing.
        let mut cfg = r.m.cfg;
        cfg.recompute = Recompute::None;
        let got = estimate(&cfg).unwrap().activations;
        let err = got / r.activations - 1.0;
        eprintln!(
            "{:+.3} % ({:+.0} B) saved  {}",
            err * 100.0,
            got - r.activations,
            r.m.line
        );
        worst = worst.max(err.abs());
        assert!(
            err.abs() <= 0.05,
            "{}: {got} vs {}",
            r.m.line,
            r.activations
        );
        // In fact to the byte but for the three 8-byte exp(A) copies
        // whose nodes autograd may already have freed.
        assert!(
            (got - r.activations).abs() <= 16.0,
            "{}: {got} vs {}",
            r.m.line,
            r.activations
        );
    }
    eprintln!("worst {:.3} %", worst * 100.0);
}

#[test]
fn hybrid_step_peak_within_five_percent_and_right_phase() {
    let rows = rows();
    common::assert_peaks(rows.iter().map(|r| &r.m), 0.05);
}
