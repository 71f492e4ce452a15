//! The step peak per rank under DeepSpeed's ZeRO stages 1, 2 and 3 against
//! `tests/fixtures/deepspeed_measured.tsv` (`measure_deepspeed.py`: fp32 on
//! the CPU, gloo, 2 and 4 processes, DeepSpeed's default buckets and one of
//! 1e6 values, every rank, two steps), and under stage 3 against
//! `deepspeed3_heldout_measured.tsv`, a third shape with 3e6-value buckets
//! measured after the model was written (`measure_deepspeed.py heldout`).
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

/// Every configuration and step in its phase and within ±5 %, the default
/// bucket's 2 GB included; and the model without DeepSpeed's own buffers
/// (Megatron's semantics) more than half low on the default bucket, so the
/// check tells them apart.
#[test]
fn deepspeed_peaks_per_rank() {
    let mut rows = common::rank_rows(include_str!("fixtures/deepspeed_measured.tsv"));
    rows.extend(common::rank_rows(include_str!(
        "fixtures/deepspeed3_heldout_measured.tsv"
    )));
    rows.extend(common::rank_rows_of(
        include_str!("fixtures/deepspeed3_gpt2_measured.tsv"),
        "gpt2",
    ));
    // (shape, world, stage, bucket, step) → the rank with the smallest peak.
    let mut smallest = BTreeMap::new();
    let mut largest = BTreeMap::<_, f64>::new();
    for r in &rows {
        let a = &r.cfg.arch;
        let key = (a.layers, a.hidden, a.vocab, r.world, r.col1, r.col2, r.step);
        let entry = smallest.entry(key).or_insert(r);
        if r.peak < entry.peak {
            *entry = r;
        }
        let top = largest.entry(key).or_default();
        *top = top.max(r.peak);
    }
    assert_eq!(smallest.len(), 72);
    let mut close_calls = 0;
    for (key, r) in &smallest {
        let stage: u8 = r.col1.parse().unwrap();
        // The small bucket sets the reduce, all-gather and prefetch buckets.
        let (bucket, prefetch) = match r.col2 {
            "default" => (500_000_000, 50_000_000),
            n => (n.parse().unwrap(), n.parse().unwrap()),
        };
        let mut cfg = r.cfg;
        cfg.parallel.dp = r.world;
        cfg.parallel.zero = stage;
        let megatron = timeline(&cfg, &r.opts).unwrap().peak_bytes();
        cfg.framework = Framework::DeepSpeed {
            reduce_bucket_size: bucket,
            prefetch_bucket_size: prefetch,
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
        assert!(err.abs() <= 0.05, "{}: {:+.1} %", r.line, 100.0 * err);
        if t.peak_event().phase != r.phase {
            // ZeRO-3's all-gathers run on gloo's thread, which allocates
            // its receive buffer whenever it gets to the collective: up to
            // ±3 % of the step either way. Where the model's forward and
            // backward peaks are closer than that, its phase is a toss-up;
            // the measured phase's peak must still be within ±5 %.
            let theirs = t.phase_peak(r.phase).unwrap();
            println!(
                "  close call: {:?} at {:+.1} % of the measured {:?}",
                t.peak_event().phase,
                100.0 * (t.peak_bytes() / theirs - 1.0),
                r.phase
            );
            assert!(t.peak_bytes() / theirs - 1.0 < 0.03, "{}", r.line);
            assert!((theirs / r.peak - 1.0).abs() <= 0.05, "{}", r.line);
            close_calls += 1;
        }
        if r.col2 == "default" {
            assert!(megatron / r.peak - 1.0 < -0.5, "{}", r.line);
        }
    }
    // One, a held-out ZeRO-3 step: its forward 2.8 % under, its backward
    // exact (docs/validation.md).
    assert!(close_calls <= 1, "{close_calls} phases missed");
}
