//! torchtitan's per-operator selective checkpointing against PyTorch:
//! `fixtures/sac_measured.tsv`, written by `fixtures/measure_sac.py` (tiny
//! Llama and Qwen2 models on the CPU, each under the per-operator policy
//! and under whole-layer checkpointing; fp32 and bf16, SDPA and eager,
//! grouped and full key/value heads, two micro-batches, a long sequence;
//! two measuring methods agreeing to the byte). The cache (what a forward
//! pass keeps beyond whole-layer checkpointing) must be exact, and each
//! step's peak within ±5 % in the right phase.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, timeline, DetailedConfig, Recompute};

struct Row {
    /// The fixture's line, the configuration and step, the measured peak.
    m: common::Measured,
    n_params: u64,
    live_start: f64,
    after_forward: f64,
}

fn rows() -> Vec<Row> {
    common::tsv_rows(include_str!("fixtures/sac_measured.tsv"))
        .map(|(line, c)| {
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let (seq, micro, accum) = (n(7), n(8), n(9));
            let mut arch =
                common::measured_arch("llama", (n(1), n(2), n(3), n(4), n(5), n(6)), seq);
            // Qwen2: biases on q, k and v.
            arch.qkv_bias = c[0] == "qwen2";
            let mut cfg = DetailedConfig::new(arch, seq, micro * accum);
            cfg.micro_batch = Some(micro);
            cfg.dropout = false;
            common::hf_cpu(&mut cfg, c[10], c[11]);
            cfg.recompute = match c[13] {
                "op" => Recompute::SelectiveOp,
                _ => Recompute::Full,
            };
            Row {
                m: common::Measured {
                    line: line.to_string(),
                    cfg,
                    opts: common::step_options(c[14], c[12] == "True"),
                    peak: n(21) as f64,
                    phase: c[22].to_string(),
                },
                n_params: n(15),
                live_start: n(16) as f64,
                after_forward: n(17) as f64,
            }
        })
        .collect()
}

/// What the per-operator policy keeps beyond whole-layer checkpointing
/// after the last micro-batch's forward pass, measured as the difference of
/// the two runs' live bytes (same model, same data), against the model's.
#[test]
fn per_op_cache_is_exact() {
    let rows = rows();
    assert!(rows.len() >= 36, "{} rows", rows.len());
    let mut compared = 0;
    for op in rows
        .iter()
        .filter(|r| r.m.cfg.recompute == Recompute::SelectiveOp)
    {
        assert_eq!(
            op.m.cfg.arch.params(),
            op.n_params,
            "{}: parameters",
            op.m.line
        );
        let full = rows
            .iter()
            .find(|f| {
                f.m.cfg.recompute == Recompute::Full
                    && f.m.opts.step == op.m.opts.step
                    && DetailedConfig {
                        recompute: Recompute::SelectiveOp,
                        ..f.m.cfg
                    } == op.m.cfg
            })
            .expect("its whole-layer row");
        assert_eq!(op.live_start, full.live_start, "{}", op.m.line);
        let measured = op.after_forward - full.after_forward;
        let model =
            estimate(&op.m.cfg).unwrap().activations - estimate(&full.m.cfg).unwrap().activations;
        assert_eq!(model, measured, "{}", op.m.line);
        assert!(measured > 0.0);
        compared += 1;
    }
    assert!(compared >= 18);
}

#[test]
fn per_op_step_peak_within_five_percent_and_right_phase() {
    let rows = rows();
    common::assert_peaks(rows.iter().map(|r| &r.m), 0.05);
}

/// The rows of docs/validation.md's table, from the fixture and the model.
fn table_lines() -> Vec<String> {
    rows()
        .iter()
        .map(|r| {
            let c: Vec<&str> = r.m.line.split('\t').collect();
            let t = timeline(&r.m.cfg, &r.m.opts).unwrap();
            let cache = if r.m.cfg.recompute == Recompute::SelectiveOp {
                let full = DetailedConfig {
                    recompute: Recompute::Full,
                    ..r.m.cfg
                };
                format!(
                    "{:.3} MB",
                    (estimate(&r.m.cfg).unwrap().activations - estimate(&full).unwrap().activations)
                        / 1e6
                )
            } else {
                "—".into()
            };
            format!(
                "| {} L{} h{} a{}/{} f{}, s{} b{}{} {} {}{} | {} | {} | {cache} | {:.2} MB | {:.2} MB | {:+.2} % | {} |",
                c[0],
                c[1],
                c[2],
                c[3],
                c[4],
                c[5],
                c[7],
                c[8],
                if c[9] == "1" { String::new() } else { format!("×{}", c[9]) },
                c[10],
                c[11],
                if c[12] == "True" { ", foreach" } else { "" },
                if c[13] == "op" { "per-operator" } else { "full" },
                c[14],
                r.m.peak / 1e6,
                t.peak_bytes() / 1e6,
                100.0 * (t.peak_bytes() / r.m.peak - 1.0),
                r.m.phase
            )
        })
        .collect()
}

validation_table_tests!(table_lines);
