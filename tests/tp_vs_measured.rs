//! The step peak per rank under DTensor tensor parallelism on the decoder
//! layers (torchtitan's Llama layer plan: q, k, v, gate and up column-wise,
//! o and down row-wise; the embedding, output layer and logits whole on
//! every rank) against `tests/fixtures/tp_measured.tsv` (`measure_ddp.py
//! --tp`: gloo, 2 and 4 processes, two shapes, every rank, two steps) and,
//! with sequence parallelism on the norms, `tp_sp_measured.tsv` (`--tp
//! --sp`): the "hf" profile with `tp_layers_only` within ±5 % of each
//! rank's peak, in its phase.

#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::memory::timeline;

use crate::common;

/// Checks every rank-step of `text` with sequence parallelism `sp`.
fn check(text: &str, sp: bool) -> usize {
    let rows = common::rank_rows(text);
    for r in &rows {
        // One replica: the batch is one micro-batch.
        let mut cfg = r.cfg;
        cfg.batch = cfg.micro();
        cfg.parallel.tp = r.world;
        cfg.parallel.sp = sp;
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
    rows.len()
}

#[test]
fn tp_peaks_per_rank_match_the_measured() {
    let n = check(include_str!("fixtures/tp_measured.tsv"), false);
    assert!(n >= 24, "{n}");
}

/// With sequence parallelism on the norms (`measure_ddp.py --tp --sp`):
/// the residual stream and the norms' tensors split over the sequence, the
/// projections' gathered inputs whole. Priced without sequence
/// parallelism, or with Megatron's (every saved tensor split), the same
/// runs are well outside the bound, so the check tells the layouts apart.
#[test]
fn tp_sp_peaks_per_rank_match_the_measured() {
    let text = include_str!("fixtures/tp_sp_measured.tsv");
    let n = check(text, true);
    assert!(n >= 24, "{n}");
    for r in common::rank_rows(text) {
        let mut cfg = r.cfg;
        cfg.batch = cfg.micro();
        cfg.parallel.tp = r.world;
        cfg.parallel.tp_layers_only = true;
        let no_sp = timeline(&cfg, &r.opts).unwrap().peak_bytes() / r.peak - 1.0;
        cfg.parallel.sp = true;
        cfg.parallel.tp_layers_only = false;
        let megatron = timeline(&cfg, &r.opts).unwrap().peak_bytes() / r.peak - 1.0;
        assert!(
            no_sp > 0.05,
            "{}: without SP {:+.1} %",
            r.line,
            100.0 * no_sp
        );
        assert!(
            megatron < -0.05,
            "{}: Megatron's {:+.1} %",
            r.line,
            100.0 * megatron
        );
    }
}
