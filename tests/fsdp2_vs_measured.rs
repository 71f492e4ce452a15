//! The step peak per rank under PyTorch's FSDP2 (`fully_shard` on every
//! decoder layer, then the model; fp32, no mixed-precision policy) against
//! `tests/fixtures/fsdp2_measured.tsv` (`measure_ddp.py --fsdp2`: gloo, 2
//! and 4 processes, `reshard_after_forward` true and false, every rank, two
//! steps).

#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{timeline, Framework, Precision};

mod common;

/// Each rank-step of a fixture with the model's figure: (label, measured,
/// model, phases agree); `mixed`: FSDP2's mixed-precision policy, priced as
/// the model's mixed precision.
fn rows_of(text: &str, mixed: bool) -> Vec<(String, f64, f64, bool)> {
    common::rank_rows(text)
        .into_iter()
        .map(|r| {
            let mut cfg = r.cfg;
            if mixed {
                cfg.precision = Precision::Mixed;
            }
            cfg.parallel.dp = r.world;
            cfg.parallel.zero = 3;
            cfg.framework = Framework::Fsdp2 {
                reshard_after_forward: r.flag,
            };
            let t = timeline(&cfg, &r.opts).unwrap();
            (
                format!(
                    "world {}, reshard {}, rank {}, step {}",
                    r.world, r.flag, r.rank, r.step
                ),
                r.peak,
                t.peak_bytes(),
                t.peak_event().phase == r.phase,
            )
        })
        .collect()
}

/// Every rank-step in its phase; without resharding after forward within
/// ±5 % (to a few KB); resharding, within ±5 % on the 2-layer shape and
/// 4–6 % low on the 4-layer one, which holds about 10 MB of gathered
/// weights at the loss's backward that the model does not place
/// (docs/validation.md).
#[test]
fn fsdp2_peaks_per_rank() {
    let rows = rows_of(include_str!("fixtures/fsdp2_measured.tsv"), false);
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
