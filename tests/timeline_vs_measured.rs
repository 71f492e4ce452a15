//! The step timeline ("hf" profile, CPU) against the peak of live tensor
//! memory measured in PyTorch: every row of `fixtures/peak_measured.tsv`,
//! written by `fixtures/measure_peak.py` (two independent methods that agree
//! to the byte) from real Hugging Face GPT-2 and Llama models over two whole
//! training steps. The peak must be within ±5 % and in the right phase on
//! every row, and the README's table must be this one.
#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{estimate, timeline, DetailedConfig, Phase, Recompute, StepOptions};

/// One measured step.
use crate::common;

struct Row {
    label: String,
    cfg: DetailedConfig,
    opts: StepOptions,
    peak: f64,
    phase: Phase,
    peaks: [f64; 3],
    after_backward: f64,
}

fn rows() -> Vec<Row> {
    let text = include_str!("fixtures/peak_measured.tsv");
    let mut out = Vec::new();
    for (line, c) in common::tsv_rows(text) {
        assert_eq!(c.len(), 27, "{line}");
        let num = |i: usize| c[i].parse::<u64>().unwrap();
        let (layers, hidden, heads, kv, ffn, vocab, seq, micro, micro_batches) = (
            num(1),
            num(2),
            num(3),
            num(4),
            num(5),
            num(6),
            num(7),
            num(8),
            num(9),
        );
        let arch = common::measured_arch(c[0], (layers, hidden, heads, kv, ffn, vocab), seq);
        assert_eq!(arch.params(), num(16), "{line}: parameter count");
        let mut cfg = DetailedConfig::new(arch, seq, micro * micro_batches);
        cfg.micro_batch = Some(micro);
        common::hf_cpu(&mut cfg, c[10], c[11]);
        cfg.dropout = c[12] == "1";
        cfg.recompute = if c[13] == "1" {
            Recompute::Full
        } else {
            Recompute::None
        };
        let foreach = c[14] == "1";
        let opts = common::step_options(c[15], foreach);
        let kv_label = if c[0] == "llama" {
            format!(" kv{kv}")
        } else {
            String::new()
        };
        let label = format!(
            "{} L{layers} h{hidden} a{heads}{kv_label} V{}k s{seq} b{micro}{} {} {}{}{} {} step {}",
            c[0],
            vocab / 1000,
            if micro_batches > 1 {
                format!("×{micro_batches}")
            } else {
                String::new()
            },
            c[10],
            c[11],
            if cfg.dropout { " dropout" } else { "" },
            if c[13] == "1" { " ckpt" } else { "" },
            if foreach { "foreach" } else { "loop" },
            c[15],
        );
        out.push(Row {
            label,
            cfg,
            opts,
            peak: num(24) as f64,
            phase: common::phase(c[25]),
            peaks: [num(21) as f64, num(22) as f64, num(23) as f64],
            after_backward: num(19) as f64,
        });
    }
    out
}

/// The published formula some calculators use for the peak: parameters +
/// optimizer state + max(gradients + optimizer intermediates, activations).
fn published_max(cfg: &DetailedConfig) -> f64 {
    let b = estimate(cfg).unwrap();
    b.params + b.optimizer_state + (b.grads + b.params).max(b.activations)
}

fn mb(x: f64) -> String {
    format!("{:.1} MB", x / 1e6)
}

/// The README's table, computed.
fn table() -> String {
    let mut out = String::from(
        "| configuration | measured peak | phase | predicted | error | sum of states and saved | published max() |\n|---|---:|---|---:|---:|---:|---:|\n",
    );
    for r in rows() {
        let t = timeline(&r.cfg, &r.opts).unwrap();
        let b = estimate(&r.cfg).unwrap();
        let sum = b.total;
        out += &format!(
            "| {} | {} | {} | {} | {:+.1} % | {} ({:+.0} %) | {} ({:+.0} %) |\n",
            r.label,
            mb(r.peak),
            r.phase.name(),
            mb(t.peak_bytes()),
            (t.peak_bytes() / r.peak - 1.0) * 100.0,
            mb(sum),
            (sum / r.peak - 1.0) * 100.0,
            mb(published_max(&r.cfg)),
            (published_max(&r.cfg) / r.peak - 1.0) * 100.0,
        );
    }
    out
}

#[test]
fn peak_within_five_percent_and_right_phase_on_every_row() {
    let rows = rows();
    assert!(rows.len() >= 48, "{} rows", rows.len());
    let mut failures = Vec::new();
    for r in &rows {
        let t = timeline(&r.cfg, &r.opts).unwrap();
        let err = t.peak_bytes() / r.peak - 1.0;
        let got = t.peak_event().phase;
        let phases = [Phase::Forward, Phase::Backward, Phase::Optimizer]
            .map(|p| t.phase_peak(p).unwrap_or(0.0));
        println!(
            "{:<70} {:>+6.2} % {:?}/{:?}  fwd {:+.1} % bwd {:+.1} % opt {:+.1} %",
            r.label,
            err * 100.0,
            got,
            r.phase,
            (phases[0] / r.peaks[0] - 1.0) * 100.0,
            (phases[1] / r.peaks[1] - 1.0) * 100.0,
            (phases[2] / r.peaks[2] - 1.0) * 100.0,
        );
        if err.abs() > 0.05 || got != r.phase {
            failures.push(format!(
                "{}: {:+.2} %, {:?} vs {:?}",
                r.label,
                err * 100.0,
                got,
                r.phase
            ));
        }
        let _ = r.after_backward;
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn readme_shows_this_table() {
    let readme = include_str!("../docs/model.md");
    let want = table();
    assert!(
        readme.contains(&want),
        "docs/model.md peak table is stale; it should be:\n{want}"
    );
}
