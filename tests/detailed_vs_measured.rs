//! The detailed model ("hf" profile, CPU) against memory measured in PyTorch:
//! every row of `fixtures/hf_measured.tsv`, written by
//! `fixtures/measure_hf.py` from real Hugging Face GPT-2 and Llama models.
//! Parameters, gradients and AdamW state must match to the byte, activations
//! within ±10 %; and the README's validation table must be this one.
#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{estimate, DetailedConfig};

use crate::common;

struct Row {
    label: String,
    cfg: DetailedConfig,
    params: f64,
    grads: f64,
    optimizer: f64,
    activations: f64,
    logits: f64,
}

fn rows() -> Vec<Row> {
    let text = include_str!("fixtures/hf_measured.tsv");
    let mut out = Vec::new();
    for (line, c) in common::tsv_rows(text) {
        assert_eq!(c.len(), 18, "{line}");
        let num = |i: usize| c[i].parse::<u64>().unwrap();
        let (layers, hidden, heads, kv, ffn, vocab, seq, batch) = (
            num(1),
            num(2),
            num(3),
            num(4),
            num(5),
            num(6),
            num(7),
            num(8),
        );
        let arch = common::measured_arch(c[0], (layers, hidden, heads, kv, ffn, vocab), seq);
        let mut cfg = DetailedConfig::new(arch, seq, batch);
        common::hf_cpu(&mut cfg, c[9], c[10]);
        cfg.dropout = c[11] == "1";
        assert_eq!(arch.params(), num(12), "{line}: parameter count");
        let kv_label = if c[0] == "llama" {
            format!(" kv{kv}")
        } else {
            String::new()
        };
        out.push(Row {
            label: format!(
                "{} L{layers} h{hidden} a{heads}{kv_label} s{seq} b{batch} {} {}{}",
                c[0],
                c[9],
                if c[10] == "eager" { "eager" } else { "sdpa" },
                if cfg.dropout { " dropout" } else { "" }
            ),
            cfg,
            params: num(13) as f64,
            grads: num(14) as f64,
            optimizer: num(15) as f64,
            activations: num(16) as f64,
            logits: num(17) as f64,
        });
    }
    out
}

/// The lesson's rule for the same shape: 34·L·b·s·h·2 bytes.
fn lesson_rule(cfg: &DetailedConfig) -> f64 {
    34.0 * 2.0 * (cfg.arch.layers * cfg.batch * cfg.seq * cfg.arch.hidden) as f64
}

#[test]
fn model_states_match_to_the_byte_and_activations_within_ten_percent() {
    let rows = rows();
    assert!(rows.len() >= 20, "only {} configurations", rows.len());
    let mut worst: f64 = 0.0;
    let mut worst_bytes: f64 = 0.0;
    for r in &rows {
        let b = estimate(&r.cfg).unwrap();
        assert_eq!(b.params, r.params, "{}: params", r.label);
        assert_eq!(b.grads, r.grads, "{}: grads", r.label);
        assert_eq!(b.optimizer_state, r.optimizer, "{}: optimizer", r.label);
        assert_eq!(b.master_weights, 0.0, "{}", r.label);
        let err = b.activations / r.activations - 1.0;
        assert!(
            err.abs() <= 0.10,
            "{}: predicted {} vs measured {} ({:+.1} %)",
            r.label,
            b.activations,
            r.activations,
            err * 100.0
        );
        assert_eq!(b.logits, r.logits, "{}: logits", r.label);
        worst = worst.max(err.abs());
        worst_bytes = worst_bytes.max((b.activations - r.activations).abs());
    }
    eprintln!(
        "worst activation error: {:.4} %, {worst_bytes} bytes",
        worst * 100.0
    );
}

/// The table in the README, rebuilt from the fixture and the model.
fn table() -> String {
    let mut t = String::from(
        "| configuration | measured | predicted | error | lesson rule |\n|---|---:|---:|---:|---:|\n",
    );
    for r in rows() {
        let b = estimate(&r.cfg).unwrap();
        let err = (b.activations / r.activations - 1.0) * 100.0;
        t += &format!(
            "| {} | {:.2} MB | {:.2} MB | {:+.1} % | {:.2} MB |\n",
            r.label,
            r.activations / 1e6,
            b.activations / 1e6,
            err,
            lesson_rule(&r.cfg) / 1e6
        );
    }
    t
}

#[test]
fn readme_table_is_current() {
    let readme = include_str!("../docs/validation.md");
    let want = table();
    assert!(
        readme.contains(&want),
        "docs/validation.md table is stale; it should read:\n{want}"
    );
}
