//! The step peak per rank under DeepSpeed's ZeRO stages 1 and 2 against
//! `tests/fixtures/deepspeed_measured.tsv` (`measure_deepspeed.py`: fp32 on
//! the CPU, gloo, 2 and 4 processes, DeepSpeed's default bucket of 5e8
//! values and one of 1e6, every rank, two steps).
//!
//! The figure compared is each configuration's smallest peak over its
//! ranks. With the small bucket some ranks peak higher by up to 17 %, a
//! different rank each time: the reductions of many small buckets finish
//! at varying times on gloo's threads, so a rank can hold a few more
//! gradients than the schedule needs (the advice for such noise).

#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;

use membudget::detailed::{timeline, Framework};

mod common;

/// Every stage-1 and stage-2 configuration and step in its phase and
/// within ±5 %, the default bucket's 2 GB included; and the model without
/// DeepSpeed's own buffers (Megatron's semantics) more than half low on
/// the default bucket, so the check tells them apart.
#[test]
fn deepspeed_peaks_per_rank() {
    let rows = common::rank_rows(include_str!("fixtures/deepspeed_measured.tsv"));
    // (shape, world, stage, bucket, step) → the rank with the smallest peak.
    let mut smallest = BTreeMap::new();
    let mut largest = BTreeMap::<_, f64>::new();
    for r in rows.iter().filter(|r| r.col1 != "3") {
        let key = (r.cfg.arch.layers, r.world, r.col1, r.col2, r.step);
        let entry = smallest.entry(key).or_insert(r);
        if r.peak < entry.peak {
            *entry = r;
        }
        let top = largest.entry(key).or_default();
        *top = top.max(r.peak);
    }
    assert_eq!(smallest.len(), 32);
    for (key, r) in &smallest {
        let stage: u8 = r.col1.parse().unwrap();
        let bucket = match r.col2 {
            "default" => 500_000_000,
            n => n.parse().unwrap(),
        };
        let mut cfg = r.cfg;
        cfg.parallel.dp = r.world;
        cfg.parallel.zero = stage;
        let megatron = timeline(&cfg, &r.opts).unwrap().peak_bytes();
        cfg.framework = Framework::DeepSpeed {
            reduce_bucket_size: bucket,
        };
        let t = timeline(&cfg, &r.opts).unwrap();
        let err = t.peak_bytes() / r.peak - 1.0;
        println!(
            "{key:?}: measured {} (ranks up to {:+.1} %) model {} ({:+.1} %), megatron {:+.1} %",
            r.peak,
            100.0 * (largest[key] / r.peak - 1.0),
            t.peak_bytes(),
            100.0 * err,
            100.0 * (megatron / r.peak - 1.0)
        );
        assert_eq!(t.peak_event().phase, r.phase, "{}", r.line);
        assert!(err.abs() <= 0.05, "{}: {:+.1} %", r.line, 100.0 * err);
        if r.col2 == "default" {
            assert!(megatron / r.peak - 1.0 < -0.5, "{}", r.line);
        }
    }
}
