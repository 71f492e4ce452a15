//! torchtune's chunked loss against live memory measured in PyTorch:
//! `fixtures/loss_measured.tsv`, written by `fixtures/measure_loss.py`
//! (torchtune 0.6.1's `CEWithChunkedOutputLoss` and
//! `TransformerDecoder.chunked_output` after the Hugging Face Llama the
//! project measures, beside `transformers`' full loss, two steps each; the
//! two measuring methods agree to the byte). On every row the "hf" profile
//! on the CPU must give the saved activations, each phase's peak and the
//! step's peak within ±5 %, the peak in the right phase; and the chunked
//! loss must lower the measured backward below the full loss's where the
//! logits dominate, as the model says.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, timeline, DetailedConfig, Loss, Phase, Recompute};

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
    micro_batches: u64,
}

fn rows() -> Vec<Row> {
    let text = include_str!("fixtures/loss_measured.tsv");
    common::tsv_rows(text)
        .map(|(line, c)| {
            assert_eq!(c.len(), 24, "{line}");
            assert_eq!(c[23], "1", "{line}: the two methods disagree");
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let arch = common::measured_arch("llama", (n(0), n(1), n(2), n(3), n(4), n(5)), n(6));
            assert_eq!(arch.params(), n(13), "{line}: parameter count");
            let mut cfg = DetailedConfig::new(arch, n(6), n(7) * n(8));
            cfg.micro_batch = Some(n(7));
            common::hf_cpu(&mut cfg, c[9], "sdpa");
            cfg.dropout = false;
            if c[10] == "1" {
                cfg.recompute = Recompute::Full;
            }
            if n(11) > 0 {
                cfg.loss = Loss::Chunked;
                cfg.loss_chunks = n(11);
            }
            Row {
                line: line.to_string(),
                cfg,
                step: c[12].to_string(),
                start: n(14) as f64,
                after_forward: n(15) as f64,
                peaks: [n(18) as f64, n(19) as f64, n(20) as f64],
                peak: n(21) as f64,
                phase: common::phase(c[22]),
                micro_batches: n(8),
            }
        })
        .collect()
}

#[test]
fn chunked_loss_within_five_percent_in_the_right_phase() {
    let rows = rows();
    assert!(rows.len() >= 40, "{} rows", rows.len());
    let mut failures = Vec::new();
    for r in &rows {
        let opts = common::step_options(&r.step, false);
        let t = timeline(&r.cfg, &opts).unwrap();
        let mut checks = vec![("step", t.peak_bytes(), r.peak)];
        for (i, phase) in [Phase::Forward, Phase::Backward, Phase::Optimizer]
            .into_iter()
            .enumerate()
        {
            checks.push((phase.name(), t.phase_peak(phase).unwrap(), r.peaks[i]));
        }
        // What one micro-batch's forward leaves saved (the loss, a scalar,
        // aside).
        if r.micro_batches == 1 {
            let saved = estimate(&r.cfg).unwrap().activations;
            checks.push(("saved", saved, r.after_forward - r.start));
        }
        for (what, got, want) in checks {
            let err = got / want - 1.0;
            eprintln!("{what:>9} {:+.2} %  {}", err * 100.0, r.line);
            if err.abs() > 0.05 {
                failures.push(format!("{what}: {:+.2} % on {}", err * 100.0, r.line));
            }
        }
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

/// Chunking moves the backward's peak both ways, as the model says: in
/// bf16 over 256 tokens it saves most of the logits' fp32 gradients; in
/// fp32 (no copy to save) or over 64 tokens the output layer's weight
/// gradients, three at once while the chunks' are summed out of place,
/// cost more than it saves (real micro-batches have far more tokens than
/// the hidden size, and the saving wins). For
/// every chunked row beside its full-loss twin, the change in the backward's
/// peak is the model's within 2 % of the full loss's peak.
#[test]
fn chunking_changes_the_backward_as_modelled() {
    let rows = rows();
    let backward = |r: &Row| {
        let t = timeline(&r.cfg, &common::step_options(&r.step, false)).unwrap();
        t.phase_peak(Phase::Backward).unwrap()
    };
    let (mut lower, mut higher) = (false, false);
    let mut pairs = 0;
    for chunked in rows.iter().filter(|r| r.cfg.loss == Loss::Chunked) {
        let full = DetailedConfig {
            loss: Loss::Full,
            ..chunked.cfg
        };
        let Some(twin) = rows
            .iter()
            .find(|r| r.cfg == full && r.step == chunked.step)
        else {
            continue;
        };
        let measured = (chunked.peaks[1] - twin.peaks[1]) / twin.peaks[1];
        let model = (backward(chunked) - backward(twin)) / twin.peaks[1];
        eprintln!(
            "backward {:+.1} % measured, {:+.1} % modelled  {}",
            measured * 100.0,
            model * 100.0,
            chunked.line
        );
        assert!((measured - model).abs() < 0.02, "{}", chunked.line);
        lower |= measured < -0.2;
        higher |= measured > 0.1;
        pairs += 1;
    }
    assert!(
        pairs >= 6 && lower && higher,
        "{pairs} pairs, {lower}, {higher}"
    );
}

/// docs/validation.md's table of the chunked loss, computed.
fn table() -> String {
    let mut out = String::from(
        "| configuration | loss | step | saved, measured | predicted | backward peak, measured | predicted | step peak, measured | predicted | error | phase |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for r in rows() {
        let c: Vec<&str> = r.line.split('\t').collect();
        let t = timeline(&r.cfg, &common::step_options(&r.step, false)).unwrap();
        let (saved, predicted) = if r.micro_batches == 1 {
            (
                common::mb(r.after_forward - r.start),
                common::mb(estimate(&r.cfg).unwrap().activations),
            )
        } else {
            ("—".to_string(), "—".to_string())
        };
        let a = &r.cfg.arch;
        let loss = match r.cfg.loss {
            Loss::Chunked => format!("chunked {}", r.cfg.loss_chunks),
            _ => "full".to_string(),
        };
        out += &format!(
            "| L{} h{} V{} s{} b{}{} {}{} | {loss} | {} | {saved} | {predicted} | {} | {} | {} | {} | {:+.2} % | {} |\n",
            a.layers,
            a.hidden,
            a.vocab,
            r.cfg.seq,
            r.cfg.micro(),
            if r.micro_batches > 1 {
                format!("×{}", r.micro_batches)
            } else {
                String::new()
            },
            c[9],
            if c[10] == "1" { " ckpt" } else { "" },
            r.step,
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
    common::assert_validation_doc_has(&table(), "chunked-loss table");
}
