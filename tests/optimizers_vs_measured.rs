//! Lion, Muon (with AdamW on the rest) and Adafactor against PyTorch on the
//! CPU: `fixtures/optimizers_measured.tsv`, written by
//! `fixtures/measure_optimizers.py` (tiny Llama and GPT-2 models, fp32 and
//! bf16). The "hf" profile must give the optimizer state to the byte on
//! every row, and Lion's step temporaries to the byte. Muon's and
//! Adafactor's step temporaries are modelled from PyTorch's code: Muon's
//! Newton–Schulz products in bf16 allocate more on this CPU (no bf16 matrix
//! units: 665,216 bytes for a 524,288-byte bf16 product, measured), and
//! Adafactor's step keeps up to a second tensor of the parameter's size that
//! the code does not explain. The model is held at or under the measured,
//! and at least 60 % (Muon) or 40 % (Adafactor) of it; docs/model.md shows
//! the rows.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{
    estimate, timeline, Architecture, AttentionKernel, DetailedConfig, Device, Family, Moment,
    Optimizer, Precision, Profile, StepOptions,
};

/// The rows: (label, configuration, measured state, measured temporaries).
fn rows() -> Vec<(String, DetailedConfig, f64, f64)> {
    let text = include_str!("fixtures/optimizers_measured.tsv");
    common::tsv_rows(text)
        .map(|(line, c)| {
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let (layers, hidden, heads, kv, ffn, vocab) = (n(1), n(2), n(3), n(4), n(5), n(6));
            let mut arch = match c[0] {
                "gpt2" => Architecture::gpt2(layers, hidden, heads, vocab),
                _ => Architecture::llama(layers, hidden, heads, kv, ffn, vocab),
            };
            if arch.family == Family::Llama {
                arch.tied_embeddings = c[7] == "True";
                arch.qkv_bias = c[8] == "True";
            }
            assert_eq!(arch.params(), n(11), "{line}: parameters");
            let mut cfg = DetailedConfig::new(arch, 32, 2);
            cfg.profile = Profile::Hf;
            cfg.device = Device::Cpu;
            cfg.dropout = false;
            cfg.attention = AttentionKernel::Flash;
            cfg.precision = if c[9] == "fp32" {
                Precision::Fp32
            } else {
                Precision::Bf16
            };
            cfg.optimizer = c[10].parse::<Optimizer>().unwrap();
            (line.to_string(), cfg, n(12) as f64, n(13) as f64)
        })
        .collect()
}

/// The step's optimizer temporaries in the model's timeline.
fn temporaries(cfg: &DetailedConfig) -> f64 {
    let t = timeline(cfg, &StepOptions::default()).unwrap();
    t.events
        .iter()
        .find(|e| e.moment == Moment::OptimizerUpdate)
        .unwrap()
        .live
        .transient
}

#[test]
fn optimizer_state_is_exact_on_every_row() {
    let rows = rows();
    assert_eq!(rows.len(), 18);
    for (line, cfg, state, _) in &rows {
        assert_eq!(estimate(cfg).unwrap().optimizer_state, *state, "{line}");
    }
}

#[test]
fn lions_temporaries_are_exact_and_the_others_bounded() {
    for (line, cfg, _, measured) in rows() {
        let modelled = temporaries(&cfg);
        if cfg.optimizer == Optimizer::Lion {
            assert_eq!(modelled, measured, "{line}");
        } else {
            let least = if cfg.optimizer == Optimizer::Muon {
                0.6
            } else {
                0.4
            };
            assert!(
                modelled <= measured && modelled >= least * measured,
                "{line}: modelled {modelled}, measured {measured}"
            );
        }
    }
}

/// docs/model.md's table is these rows, as the model prices them now.
#[test]
fn the_docs_table_is_current() {
    let doc = include_str!("../docs/model.md");
    let text = include_str!("fixtures/optimizers_measured.tsv");
    for ((_, c), (_, cfg, _, measured)) in common::tsv_rows(text).zip(rows()) {
        let modelled = temporaries(&cfg);
        let tied = if c[7] == "True" { ", tied" } else { "" };
        let row = format!(
            "| {} L{} h{} V{}{} | {} | {} | {} | {} | {} ({:+.0} %) |",
            c[0],
            c[1],
            c[2],
            c[6],
            tied,
            c[9],
            c[10],
            c[12],
            c[13],
            modelled,
            (modelled / measured - 1.0) * 100.0
        );
        assert!(doc.contains(&row), "docs/model.md should have:\n{row}");
    }
}
