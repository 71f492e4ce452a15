//! A compiled loss against live memory measured in PyTorch:
//! `fixtures/compile_loss_measured.tsv`, written by
//! `fixtures/measure_compile_loss.py` (the project's small Hugging Face
//! Llama with each layer compiled as torchtune's `training.compile_model`
//! does, and the loss compiled as torchtune's `training.compile_loss`
//! compiles its chunked loss or as torchtitan compiles its cross entropy,
//! or leaves it eager as torchtitan did in December 2024; inductor on the
//! CPU, warm steps, two steps each). On every row with the layers
//! compiled, `--compile` with its scope (`--compile-scope layers-loss`, or
//! `layers` for the eager loss; `--loss chunked` for torchtune's loss) on
//! the CPU must give the saved activations, each phase's peak and the
//! step's peak within ±2 %, the peak in the right phase; and the compiled
//! chunked loss must keep less than the eager one, as measured.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, timeline, CompileScope, DetailedConfig, Loss, Phase};

/// One measured step and its configuration.
struct Row {
    line: String,
    cfg: DetailedConfig,
    step: String,
    /// Live bytes at the step's start and after its forward.
    start: f64,
    after_forward: f64,
    /// Peaks of forward, backward and the optimizer step; the step's, its
    /// phase.
    peaks: [f64; 3],
    peak: f64,
    phase: Phase,
    /// The layers were compiled too (else only the loss).
    layers_compiled: bool,
}

fn rows() -> Vec<Row> {
    let text = include_str!("fixtures/compile_loss_measured.tsv");
    common::tsv_rows(text)
        .map(|(line, c)| {
            assert_eq!(c.len(), 23, "{line}");
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let arch = common::measured_arch("llama", (n(0), n(1), n(2), n(3), n(4), n(5)), n(6));
            assert_eq!(arch.params(), n(12), "{line}: parameter count");
            let mut cfg = DetailedConfig::new(arch, n(6), n(7));
            cfg.micro_batch = Some(n(7));
            common::hf_cpu(&mut cfg, c[8], "sdpa");
            cfg.dropout = false;
            cfg.compile = true;
            if c[9] == "chunked" {
                cfg.loss = Loss::Chunked;
                cfg.loss_chunks = 8;
            }
            // The layers compiled one by one, as both trainers do, and the
            // loss compiled apart (torchtune, torchtitan) or left eager
            // (torchtitan's December 2024 release).
            if c[10] == "1" {
                cfg.compile_scope = match c[9] {
                    "eager" => CompileScope::Layers,
                    _ => CompileScope::LayersLoss,
                };
            }
            Row {
                line: line.to_string(),
                cfg,
                step: c[11].to_string(),
                start: n(13) as f64,
                after_forward: n(14) as f64,
                peaks: [n(17) as f64, n(18) as f64, n(19) as f64],
                peak: n(20) as f64,
                phase: common::phase(c[21]),
                layers_compiled: c[10] == "1",
            }
        })
        .collect()
}

/// The checks of one row: (what, modelled, measured).
fn checks(r: &Row) -> Vec<(&'static str, f64, f64)> {
    let t = timeline(&r.cfg, &common::step_options(&r.step, false)).unwrap();
    let mut checks = vec![("step", t.peak_bytes(), r.peak)];
    for (i, phase) in [Phase::Forward, Phase::Backward, Phase::Optimizer]
        .into_iter()
        .enumerate()
    {
        checks.push((phase.name(), t.phase_peak(phase).unwrap(), r.peaks[i]));
    }
    // What the forward leaves saved: the activations, the token ids
    // (int64) and the loss (a scalar).
    let saved =
        estimate(&r.cfg).unwrap().activations + 8.0 * r.cfg.seq as f64 * r.cfg.micro() as f64 + 4.0;
    checks.push(("saved", saved, r.after_forward - r.start));
    checks
}

/// Every row with the layers compiled one by one (`--compile-scope
/// layers-loss`, or `layers` for the eager loss): the saved bytes, each
/// phase's peak and the step's within ±2 % (measured: −1.24 to +0.06 %),
/// in the right phase.
#[test]
fn compiled_layers_and_loss_within_two_percent_in_the_right_phase() {
    let rows: Vec<Row> = rows().into_iter().filter(|r| r.layers_compiled).collect();
    assert_eq!(rows.len(), 14, "{} rows", rows.len());
    let mut failures = Vec::new();
    for r in &rows {
        for (what, got, want) in checks(r) {
            let err = got / want - 1.0;
            eprintln!("{what:>9} {:+.2} %  {}", err * 100.0, r.line);
            if err.abs() > 0.02 {
                failures.push(format!("{what}: {:+.2} % on {}", err * 100.0, r.line));
            }
        }
        let t = timeline(&r.cfg, &common::step_options(&r.step, false)).unwrap();
        if t.peak_event().phase != r.phase {
            failures.push(format!(
                "phase {:?}, measured {:?} on {}",
                t.peak_event().phase,
                r.phase,
                r.line
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// torchtitan's cross entropy compiled on its own writes only the logits'
/// gradient in the dtype: the measured backward peaks one n·V·2 tensor
/// above the saved step (within 1 %), and the model prices it so
/// ([`CompileScope::LayersLoss`]), where the whole model compiled holds
/// the returned logits' zero gradient too.
#[test]
fn torchtitan_compiled_loss_writes_one_logit_gradient() {
    let rows: Vec<Row> = rows()
        .into_iter()
        .filter(|r| r.cfg.loss == Loss::Full && r.cfg.compile_scope == CompileScope::LayersLoss)
        .collect();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        let (n, v) = ((r.cfg.seq * r.cfg.micro()) as f64, r.cfg.arch.vocab as f64);
        let grad = r.peaks[1] - r.after_forward;
        assert!(
            (grad / (2.0 * n * v) - 1.0).abs() < 0.01,
            "{grad} on {}",
            r.line
        );
        let whole = DetailedConfig {
            compile_scope: CompileScope::Model,
            ..r.cfg
        };
        let opts = common::step_options(&r.step, false);
        let backward = |c: &DetailedConfig| {
            timeline(c, &opts)
                .unwrap()
                .phase_peak(Phase::Backward)
                .unwrap()
        };
        assert!(backward(&whole) > backward(&r.cfg), "{}", r.line);
    }
}

/// The loss compiled alone (the layers eager) against the same step with
/// the eager chunked loss (`loss_measured.tsv`, same shapes): compiled, the
/// loss keeps the chunks' logits in the dtype (n·V·2) and 16 bytes a token
/// instead of the fp32 log-probabilities (n·V·4), and its forward no longer
/// peaks with an fp32 copy beside every chunk.
#[test]
fn compiled_chunked_loss_keeps_the_logits_in_the_dtype() {
    let eager = include_str!("fixtures/loss_measured.tsv");
    for r in rows().iter().filter(|r| !r.layers_compiled) {
        let c: Vec<&str> = r.line.split('\t').collect();
        // The eager row: same layers..micro, one micro-batch, the dtype, no
        // checkpointing, 8 chunks, the same step.
        let key = format!("{}\t1\t{}\t0\t8\t{}\t", c[..8].join("\t"), c[8], r.step);
        let e: Vec<f64> = eager
            .lines()
            .find(|l| l.starts_with(&key))
            .unwrap_or_else(|| panic!("no eager twin for {}", r.line))
            .split('\t')
            .skip(14)
            .take(2)
            .map(|v| v.parse().unwrap())
            .collect();
        let (n, v) = ((r.cfg.seq * r.cfg.micro()) as f64, r.cfg.arch.vocab as f64);
        let eager_saved = e[1] - e[0];
        let compiled_saved = r.after_forward - r.start;
        let drop = eager_saved - compiled_saved;
        let err = drop / (n * v * 2.0 - 16.0 * n) - 1.0;
        assert!(err.abs() < 0.01, "{:+.3} % on {}", err * 100.0, r.line);
    }
}

/// docs/validation.md's table of the compiled loss, computed.
fn table() -> String {
    let mut out = String::from(
        "| configuration | loss | step | saved, measured | predicted | backward peak, measured | predicted | step peak, measured | predicted | error | phase |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for r in rows().iter().filter(|r| r.layers_compiled) {
        let t = timeline(&r.cfg, &common::step_options(&r.step, false)).unwrap();
        let c = checks(r);
        let a = &r.cfg.arch;
        let loss = match (r.cfg.loss, r.cfg.compile_scope) {
            (Loss::Chunked, _) => "torchtune's chunked (8), compiled",
            (_, CompileScope::Layers) => "torchtitan's full, eager",
            _ => "torchtitan's full, compiled",
        };
        out += &format!(
            "| L{} h{} V{} s{} b{} {} | {loss} | {} | {} | {} | {} | {} | {} | {} | {:+.2} % | {} |\n",
            a.layers,
            a.hidden,
            a.vocab,
            r.cfg.seq,
            r.cfg.micro(),
            r.cfg.precision.name(),
            r.step,
            common::mb(c[4].2),
            common::mb(c[4].1),
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
    common::assert_validation_doc_has(&table(), "compiled-loss table");
}
