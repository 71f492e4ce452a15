//! The step peak per rank under PyTorch's FSDP1 (`FullyShardedDataParallel`
//! as accelerate wraps a Llama: each decoder layer its own unit, the rest
//! the root, `use_orig_params=True`) against
//! `tests/fixtures/fsdp1_measured.tsv` (`measure_ddp.py --fsdp1`: fp32,
//! gloo, 2 and 4 processes, `FULL_SHARD`, `SHARD_GRAD_OP` and `NO_SHARD`,
//! every rank, two steps).

#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{timeline, Framework, FsdpSharding};

use crate::common;

/// Each rank-step with the model's figure: (label, measured, model,
/// phases agree).
fn rows() -> Vec<(String, f64, f64, bool)> {
    common::rank_rows(include_str!("fixtures/fsdp1_measured.tsv"))
        .into_iter()
        .map(|r| {
            let mut cfg = r.cfg;
            let sharding = [
                FsdpSharding::Full,
                FsdpSharding::GradOp,
                FsdpSharding::NoShard,
            ][r.col1.parse::<usize>().unwrap()];
            cfg.parallel.dp = r.world;
            cfg.parallel.zero = if sharding == FsdpSharding::NoShard {
                0
            } else {
                3
            };
            cfg.framework = Framework::Fsdp1 { sharding };
            let t = timeline(&cfg, &r.opts).unwrap();
            (
                format!(
                    "L{} V {}, world {}, {:?}, rank {}, step {}",
                    cfg.arch.layers, cfg.arch.vocab, r.world, sharding, r.rank, r.step
                ),
                r.peak,
                t.peak_bytes(),
                t.peak_event().phase == r.phase,
            )
        })
        .collect()
}

/// Every rank-step in its phase and within ±5 %, the bound.
#[test]
fn fsdp1_peaks_per_rank() {
    let rows = rows();
    assert_eq!(rows.len(), 72);
    for (label, measured, model, phase) in &rows {
        let err = model / measured - 1.0;
        println!(
            "{label}: measured {measured} model {model} ({:+.2} %) phase {phase}",
            100.0 * err
        );
    }
    for (label, measured, model, phase) in &rows {
        let err = model / measured - 1.0;
        assert!(phase, "{label}");
        assert!(err.abs() <= 0.05, "{label}: {:+.3} %", 100.0 * err);
    }
}
