//! torchtitan's per-operator checkpointing with torchao's float8 linear
//! layers inside `torch.compile` (its H100 benchmarks' stack: per-operator
//! checkpointing, compile, float8), against live memory measured in
//! PyTorch: `fixtures/compile_sac_fp8_measured.tsv`, written by
//! `fixtures/measure_compile_sac_fp8.py` (the project's small Hugging Face
//! Llama, its linear layers but the output layer converted to float8,
//! tensorwise and rowwise, each layer checkpointed under measure_sac.py's
//! policy, the model wrapped in `torch.compile`, inductor on the CPU, warm
//! steps, two each).
//!
//! The saved bytes must match to ±0.05 % (they match to the byte). On the
//! eager float8 fixture's shape (V 8,000, whose step peaks at the loss's
//! backward or the optimizer step) each phase's peak and the step's within
//! ±5 %, in the measured phase. On the layer-dominated shape (V 512, a
//! layer's backward the peak) the phase is right, the peaks held to the
//! wider bounds [`layer_dominated_row_within_its_known_gap`] states.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, DetailedConfig, Fp8, Phase, Recompute};

use common::PhaseRow as Row;

fn rows() -> Vec<Row> {
    let text = include_str!("fixtures/compile_sac_fp8_measured.tsv");
    common::tsv_rows(text)
        .map(|(line, c)| {
            assert_eq!(c.len(), 22, "{line}");
            assert_eq!(c[21], "1", "{line}: the two methods disagree");
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let arch = common::measured_arch("llama", (n(0), n(1), n(2), n(3), n(4), n(5)), n(6));
            assert_eq!(arch.params(), n(11), "{line}: parameter count");
            let mut cfg = DetailedConfig::new(arch, n(6), n(7));
            cfg.micro_batch = Some(n(7));
            common::hf_cpu(&mut cfg, c[8], "sdpa");
            cfg.dropout = false;
            cfg.compile = true;
            cfg.recompute = Recompute::SelectiveOp;
            cfg.fp8 = c[9].parse::<Fp8>().unwrap();
            Row {
                line: line.to_string(),
                cfg,
                step: c[10].to_string(),
                start: n(12) as f64,
                after_forward: n(13) as f64,
                peaks: [n(16) as f64, n(17) as f64, n(18) as f64],
                peak: n(19) as f64,
                phase: common::phase(c[20]),
            }
        })
        .collect()
}

/// What the forward leaves saved, modelled: the activations, the token ids
/// (int64) and the loss (a scalar), as in tests/compile_sac_vs_measured.rs.
fn saved(cfg: &DetailedConfig) -> f64 {
    estimate(cfg).unwrap().activations + 8.0 * cfg.seq as f64 * cfg.micro() as f64 + 4.0
}

/// The shape of the eager float8 fixture (`sac_fp8_measured.tsv`): V
/// 8,000, the layers outweighed by the loss and the optimizer step.
fn loss_dominated(r: &Row) -> bool {
    r.cfg.arch.vocab == 8000
}

/// The checks of one row: (what, modelled, measured).
fn checks(r: &Row) -> Vec<(&'static str, f64, f64)> {
    r.checks(saved)
}

/// The phase of the modelled step's peak.
fn modelled_phase(r: &Row) -> Phase {
    r.timeline().peak_event().phase
}

#[test]
fn compile_with_per_op_checkpointing_and_float8_within_five_percent_in_the_right_phase() {
    let rows: Vec<Row> = rows().into_iter().filter(loss_dominated).collect();
    assert_eq!(rows.len(), 4, "{} rows", rows.len());
    let mut failures = Vec::new();
    for r in &rows {
        for (what, got, want) in checks(r) {
            let err = got / want - 1.0;
            eprintln!("{what:>9} {:+.3} %  {}", err * 100.0, r.line);
            let tolerance = if what == "saved" { 0.0005 } else { 0.05 };
            if err.abs() > tolerance {
                failures.push(format!("{what}: {:+.3} % on {}", err * 100.0, r.line));
            }
        }
        let phase = modelled_phase(r);
        if phase != r.phase {
            failures.push(format!(
                "phase {phase:?}, measured {:?} on {}",
                r.phase, r.line
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The layer-dominated rows (V 512): the saved bytes to ±0.05 %, the
/// step's peak in the backward as measured, the backward and step peaks
/// below the measured ones by less than 7 % and the forward's above by
/// less than 15 %, the optimizer step's within ±5 %. Not priced: in the
/// backward, the fp32 n·F buffers inductor's generated backward realizes
/// in the MLP's float8 casts (its output code at a smaller shape: the
/// SiLU's gradient in fp32 between the cast's max reduction and the cast;
/// three n·F fp32 allocations live at this row's peak, located with the
/// profiler's memory events); compiled in bf16 on this shape the model
/// is already 3.4 % below the measured backward (one run, not in a
/// fixture). In the forward, float8's casts are priced as eager's on the
/// CPU (`fp8::forward_extra`: fp32 temporaries, 9 bytes an element) where
/// inductor fuses them, while the compiled layer's own forward transient
/// is not priced (bf16 on this shape: the model 9.5 % below).
#[test]
fn layer_dominated_row_within_its_known_gap() {
    let rows: Vec<Row> = rows().into_iter().filter(|r| !loss_dominated(r)).collect();
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(modelled_phase(r), r.phase, "{}", r.line);
        for (what, got, want) in checks(r) {
            let err = got / want - 1.0;
            let (low, high) = match what {
                "saved" => (-0.0005, 0.0005),
                "step" | "backward" => (-0.07, 0.0),
                "forward" => (0.0, 0.15),
                _ => (-0.05, 0.05),
            };
            assert!(
                (low..=high).contains(&err),
                "{what}: {:+.3} % on {}",
                err * 100.0,
                r.line
            );
        }
    }
}

/// Measured, float8's scales add to the bf16 compiled set what the model
/// says: rowwise keeps two fp32 row-wise scales a token a layer
/// (2 · 4 · n), tensorwise 10 maxima in the dtype and 6 fp32 inverse
/// scales a layer, whatever the tokens.
#[test]
fn rowwise_keeps_two_scales_a_token_and_tensorwise_a_few_values() {
    let rows = rows();
    for r in rows.iter().filter(|r| r.cfg.fp8 == Fp8::Rowwise) {
        let tensorwise = rows
            .iter()
            .find(|t| {
                t.cfg.fp8 == Fp8::Tensorwise
                    && t.step == r.step
                    && t.cfg.arch == r.cfg.arch
                    && t.cfg.seq == r.cfg.seq
            })
            .unwrap();
        let measured = (r.after_forward - r.start) - (tensorwise.after_forward - tensorwise.start);
        let n = (r.cfg.seq * r.cfg.micro()) as f64;
        let layers = r.cfg.arch.layers as f64;
        assert_eq!(measured, layers * (8.0 * n - (10.0 * 2.0 + 6.0 * 4.0)));
        assert_eq!(saved(&r.cfg) - saved(&tensorwise.cfg), measured);
        let bf16 = DetailedConfig {
            fp8: Fp8::None,
            ..r.cfg
        };
        assert_eq!(saved(&r.cfg) - saved(&bf16), layers * 8.0 * n);
    }
}

/// docs/validation.md's table of torch.compile with per-operator
/// checkpointing and float8, computed.
fn table() -> String {
    let mut out = String::from(
        "| configuration | recipe | step | saved, measured | predicted | backward peak, measured | predicted | step peak, measured | predicted | error | phase |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for r in rows() {
        let t = r.timeline();
        let a = &r.cfg.arch;
        out += &format!(
            "| llama L{} h{} kv{} V{} s{} b{} {} | {} | {} | {} | {} | {} | {} | {} | {} | {:+.2} % | {} |\n",
            a.layers,
            a.hidden,
            a.kv_heads,
            a.vocab,
            r.cfg.seq,
            r.cfg.micro(),
            r.cfg.precision.name(),
            r.cfg.fp8.name(),
            r.step,
            common::mb(r.after_forward - r.start),
            common::mb(saved(&r.cfg)),
            common::mb(r.peaks[1]),
            common::mb(t.phase_peak(Phase::Backward).unwrap()),
            common::mb(r.peak),
            common::mb(t.peak_bytes()),
            (t.peak_bytes() / r.peak - 1.0) * 100.0,
            r.phase.name(),
        );
    }
    out
}

#[test]
fn validation_doc_table_is_current() {
    common::assert_validation_doc_has(
        &table(),
        "table of torch.compile with per-operator checkpointing and float8",
    );
}

/// `fixtures/compile_sac_fp8_tp_measured.tsv`
/// (`fixtures/measure_compile_sac_fp8_tp.py`): the four as torchtitan's
/// async-TP benchmark stacks them on Llama 3.1 8B (per-operator
/// checkpointing, float8, compile, torchtitan's tensor-parallel plan with
/// sequence parallelism), bf16, on 2 gloo ranks; tensorwise under torchao's
/// float8 plan, rowwise under the plain one. Each rank's step as a [`Row`].
fn tp_rows() -> Vec<Row> {
    common::tsv_rows(include_str!("fixtures/compile_sac_fp8_tp_measured.tsv"))
        .map(|(line, c)| {
            assert_eq!(c.len(), 22, "{line}");
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let mut cfg = common::tp_rank_config(line, &c[3..12], "bf16", n(2), c[1]);
            cfg.fp8 = c[0].parse::<Fp8>().unwrap();
            cfg.compile = true;
            cfg.recompute = Recompute::SelectiveOp;
            Row {
                line: line.to_string(),
                cfg,
                step: c[13].to_string(),
                start: n(14) as f64,
                after_forward: n(15) as f64,
                peaks: [n(16) as f64, n(17) as f64, n(18) as f64],
                peak: n(19) as f64,
                phase: common::phase(c[20]),
            }
        })
        .collect()
}

/// What a rank's forward leaves under tensor parallelism (the token ids
/// are passed with the labels, counted by the model's loss): the model's
/// activations less the two int64 index tensors, 16 bytes a token, that
/// transformers' traced causal mask keeps on one GPU and that the script
/// does not build (it passes no mask, as eager autograd and torchtitan's
/// own model do, see there).
fn tp_saved(cfg: &DetailedConfig) -> f64 {
    estimate(cfg).unwrap().activations - 16.0 * cfg.seq as f64 * cfg.micro() as f64
}

/// Under tensor parallelism each rank's forward leaves what the model
/// says to ±0.05 %: the compiled per-operator set split by t (the kept
/// column-wise projections and SDPA's output by heads), the attention's
/// sequence-parallel reduce-scatter kept and the MLP's dropped, float8's
/// scales beside them.
#[test]
fn tensor_parallel_saved_bytes_per_rank() {
    let rows = tp_rows();
    for r in &rows {
        let (model, saved) = (tp_saved(&r.cfg), r.after_forward - r.start);
        let err = model / saved - 1.0;
        eprintln!("{:+.4} % {model:.0} vs {saved:.0}  {}", err * 100.0, r.line);
        assert!(err.abs() < 0.0005, "{}: {:+.4} %", r.line, err * 100.0);
    }
    assert_eq!(rows.len(), 8, "{} rows", rows.len());
}

/// Each rank's step peak within 3 % and in its phase, or in a phase whose
/// measured peak is within 0.1 % of the step's (the first step's backward
/// and optimizer peaks differ by 9 KB of 28 MB).
#[test]
fn tensor_parallel_step_peaks_within_three_percent_and_right_phase() {
    let mut failures = Vec::new();
    for r in &tp_rows() {
        let t = r.timeline();
        let err = t.peak_bytes() / r.peak - 1.0;
        let phase = t.peak_event().phase;
        let tie = r.tie(phase, 0.001);
        eprintln!(
            "{:+.2} % {phase:?} vs {:?}  {}",
            err * 100.0,
            r.phase,
            r.line
        );
        if err.abs() > 0.03 || (phase != r.phase && !tie) {
            failures.push(format!("{:+.2} %, {phase:?}: {}", err * 100.0, r.line));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
