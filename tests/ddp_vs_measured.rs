//! The step peak per rank under PyTorch's DistributedDataParallel against
//! `tests/fixtures/ddp_measured.tsv` (`measure_ddp.py`: a small
//! `transformers` Llama, fp32, SDPA, AdamW's per-parameter loop, on the CPU
//! with gloo over 2 and 4 processes, with and without
//! `gradient_as_bucket_view`, buckets of 25 and 1 MB, two shapes; every
//! rank, two steps). The "hf" profile with the DDP framework must be within ±5 % of
//! each rank's peak, in the right phase.

#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{
    timeline, AdamImpl, DetailedConfig, Framework, Phase, Step, StepOptions,
};

mod common;

#[test]
fn ddp_peaks_per_rank_match_the_measured() {
    let text = include_str!("fixtures/ddp_measured.tsv");
    let mut rows = 0;
    let mut agree = 0;
    for (line, c) in common::tsv_rows(text) {
        let num = |i: usize| c[i].parse::<u64>().unwrap();
        let (world, view) = (num(0), c[1] == "1");
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
        cfg.dropout = false;
        cfg.parallel.dp = world;
        cfg.framework = Framework::Ddp { bucket_view: view };
        let opts = StepOptions {
            step: if num(13) == 1 {
                Step::First
            } else {
                Step::Later
            },
            adam: Some(AdamImpl::ForLoop),
        };
        let t = timeline(&cfg, &opts).unwrap();
        let measured = num(15) as f64;
        let err = t.peak_bytes() / measured - 1.0;
        let phase = match c[16] {
            "forward" => Phase::Forward,
            "backward" => Phase::Backward,
            _ => Phase::Optimizer,
        };
        if num(12) == 0 {
            let plain = timeline(
                &DetailedConfig {
                    framework: Framework::Megatron,
                    ..cfg
                },
                &opts,
            )
            .unwrap()
            .peak_bytes();
            println!(
                "| {world} | {} | {} | {} | {} | {:.0} | {:.0} | {:+.1} % | {} | {:+.1} % |",
                if view { "on" } else { "off" },
                num(2),
                num(13),
                c[16],
                measured,
                t.peak_bytes(),
                100.0 * err,
                if t.peak_event().phase == phase {
                    "yes"
                } else {
                    "no"
                },
                100.0 * (plain / measured - 1.0)
            );
        }
        assert!(
            err.abs() <= 0.05,
            "{line}: model {} vs {measured} ({:+.1} %)",
            t.peak_bytes(),
            100.0 * err
        );
        assert_eq!(t.peak_event().phase, phase, "{line}");
        rows += 1;
        agree += usize::from(c[17] == "1");
    }
    assert_eq!(rows, 96);
    // The profiler's replay agrees with the counter to the byte on 61 of the
    // 96 rank-steps; the counter's figure is the same on every rank
    // (docs/validation.md).
    assert!(agree >= 60, "{agree} of {rows}");
}
