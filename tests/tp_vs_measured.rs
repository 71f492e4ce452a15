//! The step peak per rank under DTensor tensor parallelism on the decoder
//! layers (torchtitan's Llama layer plan: q, k, v, gate and up column-wise,
//! o and down row-wise; no sequence parallelism; the embedding, output
//! layer and logits whole on every rank) against
//! `tests/fixtures/tp_measured.tsv` (`measure_ddp.py --tp`: gloo, 2 and 4
//! processes, two shapes, every rank, two steps): the "hf" profile with
//! `tp_layers_only` within ±5 % of each rank's peak, in its phase.

#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{timeline, AdamImpl, DetailedConfig, Phase, Step, StepOptions};

mod common;

#[test]
fn tp_peaks_per_rank_match_the_measured() {
    let mut rows = 0;
    for (line, c) in common::tsv_rows(include_str!("fixtures/tp_measured.tsv")) {
        let num = |i: usize| c[i].parse::<u64>().unwrap();
        let world = num(0);
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
        let mut cfg = DetailedConfig::new(arch, seq, micro);
        cfg.micro_batch = Some(micro);
        common::hf_cpu(&mut cfg, "fp32", "sdpa");
        cfg.dropout = false;
        cfg.parallel.tp = world;
        cfg.parallel.tp_layers_only = true;
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
            println!(
                "| L{layers} h{hidden} | {world} | {} | {} | {measured:.0} | {:.0} | {:+.1} % |",
                num(13),
                c[16],
                t.peak_bytes(),
                100.0 * err
            );
        }
        assert!(err.abs() <= 0.05, "{line}: {:+.1} %", 100.0 * err);
        assert_eq!(t.peak_event().phase, phase, "{line}");
        rows += 1;
    }
    assert!(rows >= 24, "{rows}");
}
