//! `torch.compile` over DTensor tensor parallelism against measurement:
//! `fixtures/compile_tp_measured.tsv` (`fixtures/measure_compile_tp.py`:
//! tiny Llama models on 2 gloo ranks, the layers' plan and torchtitan's
//! sequence-parallel plan, the whole model compiled, each beside the same
//! model in eager PyTorch).

#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, DetailedConfig};

struct Row {
    m: common::Measured,
    rank: u64,
    live_start: f64,
    after_forward: f64,
}

fn rows() -> Vec<Row> {
    common::tsv_rows(include_str!("fixtures/compile_tp_measured.tsv"))
        .map(|(line, c)| {
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let mut cfg = common::tp_rank_config(line, &c[3..12], "fp32", n(1), c[0]);
            cfg.compile = match c[2] {
                "compile" => true,
                "eager" => false,
                other => panic!("{line}: mode {other}"),
            };
            Row {
                m: common::Measured {
                    line: line.to_string(),
                    cfg,
                    opts: common::step_options(c[13], false),
                    peak: n(16) as f64,
                    phase: c[17].to_string(),
                },
                rank: n(12),
                live_start: n(14) as f64,
                after_forward: n(15) as f64,
            }
        })
        .collect()
}

/// What each rank's forward pass keeps (its live bytes after the forward
/// pass less those at the step's start), compiled and eager, within 0.05 %
/// of the model's activations: the compiled layer's saved tensors split as
/// eager autograd's are, and the final norm's output (the output layer's
/// input) is gathered whole under sequence parallelism.
#[test]
fn compiled_saved_bytes_split_as_eager_ones() {
    let rows = rows();
    let mut compiled = 0;
    for r in &rows {
        let measured = r.after_forward - r.live_start;
        let model = estimate(&r.m.cfg).unwrap().activations;
        let err = model / measured - 1.0;
        eprintln!(
            "{:+.4} % {model:.0} vs {measured:.0}  {}",
            err * 100.0,
            r.m.line
        );
        assert!(err.abs() < 0.0005, "{}: {:+.4} %", r.m.line, err * 100.0);
        compiled += usize::from(r.m.cfg.compile);
    }
    assert!(compiled >= 8 && rows.len() >= 16, "{} rows", rows.len());
}

/// The step's peak within 2.5 % and in its phase, compiled and eager (the
/// single-GPU compiled rows of `compile_vs_measured.rs` are held to 5 %). Under
/// torchtitan's plan, whose logits are gathered whole, the compiled loss's
/// backward writes the gradient of this GPU's vocabulary shard only:
/// priced whole, the compiled rows' peaks came out 9.3 and 9.9 % high.
#[test]
fn compiled_step_peaks_within_two_and_a_half_percent_and_right_phase() {
    common::assert_peaks(rows().iter().map(|r| &r.m), 0.025);
}

/// Compile keeps less than eager on every rank of every layout measured,
/// and the model says so by the measured amount within 1 %.
#[test]
fn compile_saves_what_it_measures_under_tensor_parallelism() {
    let rows = rows();
    for c in rows.iter().filter(|r| r.m.cfg.compile) {
        let e = rows
            .iter()
            .find(|e| {
                !e.m.cfg.compile
                    && e.rank == c.rank
                    && e.m.opts.step == c.m.opts.step
                    && DetailedConfig {
                        compile: true,
                        ..e.m.cfg
                    } == c.m.cfg
            })
            .expect("its eager twin");
        let measured = e.after_forward - c.after_forward;
        let model =
            estimate(&e.m.cfg).unwrap().activations - estimate(&c.m.cfg).unwrap().activations;
        assert!(measured > 0.0, "{}", c.m.line);
        assert!(
            (model / measured - 1.0).abs() < 0.01,
            "{}: model {model:.0}, measured {measured:.0}",
            c.m.line
        );
    }
}

/// The rows of docs/validation.md's table (rank 0: the ranks measure
/// alike).
fn table_lines() -> Vec<String> {
    let mb = |b: f64| format!("{:.2} MB", b / 1e6);
    let mut lines = vec![
        "| plan | shape | mode | step | saved, measured | predicted | step peak, measured | predicted | error |".to_string(),
        "|---|---|---|---:|---:|---:|---:|---:|---:|".to_string(),
    ];
    for r in rows().iter().filter(|r| r.rank == 0) {
        let c = &r.m.cfg;
        let t = membudget::detailed::memory::timeline(c, &r.m.opts).unwrap();
        let a = &c.arch;
        lines.push(format!(
            "| {} | L{} h{} V{} s{} b{} | {} | {} | {} | {} | {} | {} | {:+.2} % |",
            if c.parallel.sp {
                "torchtitan + sp"
            } else {
                "layers"
            },
            a.layers,
            a.hidden,
            a.vocab,
            c.seq,
            c.micro(),
            if c.compile { "compile" } else { "eager" },
            if r.m.opts.step == membudget::detailed::Step::First {
                1
            } else {
                2
            },
            mb(r.after_forward - r.live_start),
            mb(estimate(c).unwrap().activations),
            mb(r.m.peak),
            mb(t.peak_bytes()),
            (t.peak_bytes() / r.m.peak - 1.0) * 100.0
        ));
    }
    lines
}

validation_table_tests!(table_lines);
