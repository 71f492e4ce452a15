//! The step peak per rank under PyTorch's FSDP2 (`fully_shard` on every
//! decoder layer, then the model; fp32, no mixed-precision policy) against
//! `tests/fixtures/fsdp2_measured.tsv` (`measure_ddp.py --fsdp2`: gloo, 2
//! and 4 processes, `reshard_after_forward` true and false, every rank, two
//! steps).

#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{timeline, AdamImpl, DetailedConfig, Phase, Step, StepOptions};

mod common;

/// Each rank-step with the model's figure: (label, measured, model, phases
/// agree).
pub fn rows() -> Vec<(String, f64, f64, bool)> {
    rows_of(include_str!("fixtures/fsdp2_measured.tsv"), false)
}

/// The rows of a fixture; `mixed`: FSDP2's mixed-precision policy (bf16
/// compute over fp32 shards).
fn rows_of(text: &str, mixed: bool) -> Vec<(String, f64, f64, bool)> {
    let mut out = Vec::new();
    for (line, c) in common::tsv_rows(text) {
        let num = |i: usize| c[i].parse::<u64>().unwrap();
        let (world, reshard) = (num(0), c[1] == "1");
        let (layers, hidden, heads, kv, ffn, vocab, seq, micro) = (
            num(3),
            num(4),
            num(5),
            num(6),
            num(7),
            num(8),
            num(9),
            num(10),
        );
        let arch = common::measured_arch("llama", (layers, hidden, heads, kv, ffn, vocab), seq);
        assert_eq!(arch.params(), num(11), "{line}: parameter count");
        let mut cfg = DetailedConfig::new(arch, seq, micro * world);
        cfg.micro_batch = Some(micro);
        common::hf_cpu(&mut cfg, "fp32", "sdpa");
        if mixed {
            cfg.precision = membudget::detailed::Precision::Mixed;
        }
        cfg.dropout = false;
        cfg.parallel.dp = world;
        cfg.parallel.zero = 3;
        cfg.framework = membudget::detailed::Framework::Fsdp2 {
            reshard_after_forward: reshard,
        };
        let opts = StepOptions {
            step: if num(13) == 1 {
                Step::First
            } else {
                Step::Later
            },
            adam: Some(AdamImpl::ForLoop),
        };
        let t = timeline(&cfg, &opts).unwrap();
        let phase = match c[16] {
            "forward" => Phase::Forward,
            "backward" => Phase::Backward,
            _ => Phase::Optimizer,
        };
        out.push((
            format!(
                "world {world}, reshard {reshard}, rank {}, step {}",
                num(12),
                num(13)
            ),
            num(15) as f64,
            t.peak_bytes(),
            t.peak_event().phase == phase,
        ));
    }
    out
}

/// Every rank-step in its phase; without resharding after forward within
/// ±5 % (to a few KB); resharding, within ±5 % on the 2-layer shape and
/// 4–6 % low on the 4-layer one, which holds about 10 MB of gathered
/// weights at the loss's backward that the model does not place
/// (docs/validation.md).
#[test]
fn fsdp2_peaks_per_rank() {
    let rows = rows();
    assert_eq!(rows.len(), 48);
    for (label, measured, model, phase) in &rows {
        let err = model / measured - 1.0;
        println!(
            "{label}: measured {measured} model {model} ({:+.1} %)",
            100.0 * err
        );
        assert!(phase, "{label}");
        let bound = if label.contains("reshard true") {
            0.065
        } else {
            0.05
        };
        assert!(err.abs() <= bound, "{label}: {:+.1} %", 100.0 * err);
    }
}

#[test]
#[ignore]
fn print_mixed() {
    for (label, measured, model, phase) in
        rows_of(include_str!("fixtures/fsdp2_mp_measured.tsv"), true)
    {
        if label.contains("rank 0") {
            println!(
                "{label}: measured {measured} model {model} ({:+.1} %) phase {phase}",
                100.0 * (model / measured - 1.0)
            );
        }
    }
}
