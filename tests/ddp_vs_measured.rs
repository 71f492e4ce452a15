//! The step peak per rank under PyTorch's DistributedDataParallel against
//! `tests/fixtures/ddp_measured.tsv` (`measure_ddp.py`: a small
//! `transformers` Llama, fp32, SDPA, AdamW's per-parameter loop, on the CPU
//! with gloo over 2 and 4 processes, with and without
//! `gradient_as_bucket_view`, buckets of 25 and 1 MB, two shapes; every
//! rank, two steps). The "hf" profile with the DDP framework must be within ±5 % of
//! each rank's peak, in the right phase.

#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{timeline, DetailedConfig, Framework};

use crate::common;

#[test]
fn ddp_peaks_per_rank_match_the_measured() {
    let rows = common::rank_rows(include_str!("fixtures/ddp_measured.tsv"));
    for r in &rows {
        let mut cfg = r.cfg;
        cfg.parallel.dp = r.world;
        cfg.framework = Framework::Ddp {
            bucket_view: r.flag,
        };
        let t = timeline(&cfg, &r.opts).unwrap();
        let err = t.peak_bytes() / r.peak - 1.0;
        if r.rank == 0 {
            let plain = timeline(
                &DetailedConfig {
                    framework: Framework::Megatron,
                    ..cfg
                },
                &r.opts,
            )
            .unwrap()
            .peak_bytes();
            let bucket_mb: Vec<&str> = r.line.split('\t').collect();
            println!(
                "| {} | {} | {} | {} | {} | {:.0} | {:.0} | {:+.1} % | {} | {:+.1} % |",
                r.world,
                if r.flag { "on" } else { "off" },
                bucket_mb[2],
                r.step,
                r.phase.name(),
                r.peak,
                t.peak_bytes(),
                100.0 * err,
                if t.peak_event().phase == r.phase {
                    "yes"
                } else {
                    "no"
                },
                100.0 * (plain / r.peak - 1.0)
            );
        }
        assert!(
            err.abs() <= 0.05,
            "{}: model {} vs {} ({:+.1} %)",
            r.line,
            t.peak_bytes(),
            r.peak,
            100.0 * err
        );
        assert_eq!(t.peak_event().phase, r.phase, "{}", r.line);
    }
    assert_eq!(rows.len(), 96);
    // The profiler's replay agrees with the counter to the byte on 61 of the
    // 96 rank-steps; the counter's figure is the same on every rank
    // (docs/validation.md).
    let agree = rows.iter().filter(|r| r.agree).count();
    assert!(agree >= 60, "{agree} of {}", rows.len());
}
