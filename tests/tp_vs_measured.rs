//! The step peak per rank under DTensor tensor parallelism on the decoder
//! layers (torchtitan's Llama layer plan: q, k, v, gate and up column-wise,
//! o and down row-wise; no sequence parallelism; the embedding, output
//! layer and logits whole on every rank) against
//! `tests/fixtures/tp_measured.tsv` (`measure_ddp.py --tp`: gloo, 2 and 4
//! processes, two shapes, every rank, two steps): the "hf" profile with
//! `tp_layers_only` within ±5 % of each rank's peak, in its phase.

#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::timeline;

mod common;

#[test]
fn tp_peaks_per_rank_match_the_measured() {
    let rows = common::rank_rows(include_str!("fixtures/tp_measured.tsv"));
    for r in &rows {
        // One replica: the batch is one micro-batch.
        let mut cfg = r.cfg;
        cfg.batch = cfg.micro();
        cfg.parallel.tp = r.world;
        cfg.parallel.tp_layers_only = true;
        let t = timeline(&cfg, &r.opts).unwrap();
        let err = t.peak_bytes() / r.peak - 1.0;
        if r.rank == 0 {
            println!(
                "| L{} h{} | {} | {} | {} | {:.0} | {:.0} | {:+.1} % |",
                cfg.arch.layers,
                cfg.arch.hidden,
                r.world,
                r.step,
                r.phase.name(),
                r.peak,
                t.peak_bytes(),
                100.0 * err
            );
        }
        assert!(err.abs() <= 0.05, "{}: {:+.1} %", r.line, 100.0 * err);
        assert_eq!(t.peak_event().phase, r.phase, "{}", r.line);
    }
    assert!(rows.len() >= 24, "{}", rows.len());
}
