//! The step peak per rank under the tensor-parallel plans that split the
//! embedding and the output layer (`--tp-plan`) against their measured
//! fixtures (`measure_ddp.py --tp --plan NAME`: gloo, 2 and 4 processes,
//! two shapes, every rank, two steps):
//!
//! - `tp_hf_measured.tsv`: transformers' own `from_pretrained(...,
//!   tp_plan="auto")` (Llama's plan: the layers, `lm_head`
//!   `colwise_gather_output`, the embedding whole);
//! - `tp_torchtitan_measured.tsv`: torchtitan's `apply_tp` (embedding
//!   row-wise to Shard(1), `norm` SequenceParallel, output column-wise to
//!   Replicate(): the whole logits on every rank);
//! - `tp_loss_parallel_measured.tsv`: the same with `loss_parallel`.
//!
//! Each within ±5 % of every rank's peak, in its phase; and each farther
//! than 5 % from what Megatron's plan and the layers-only plan price for
//! the same runs, so that the test tells the plans apart.

#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::memory::timeline;
use membudget::detailed::TpPlan;

use crate::common;

/// The model's timeline for the run of `r` priced with `plan`.
fn priced(r: &common::RankRow<'_>, plan: TpPlan, sp: bool) -> membudget::detailed::StepTimeline {
    // One replica: the batch is one micro-batch.
    let mut cfg = r.cfg;
    cfg.batch = cfg.micro();
    cfg.parallel.tp = r.world;
    cfg.parallel.sp = sp;
    cfg.parallel.set_plan(plan);
    timeline(&cfg, &r.opts).unwrap()
}

/// Checks every rank-step of `text` priced with `plan`; returns the rows.
fn check(text: &str, plan: TpPlan, sp: bool) -> usize {
    let rows = common::rank_rows(text);
    for r in &rows {
        let t = priced(r, plan, sp);
        let err = t.peak_bytes() / r.peak - 1.0;
        if r.rank == 0 {
            println!(
                "| L{} h{} | {} | {} | {} | {} | {:.0} | {:.0} | {:+.1} % |",
                r.cfg.arch.layers,
                r.cfg.arch.hidden,
                r.world,
                r.step,
                r.phase.name(),
                t.peak_event().phase.name(),
                r.peak,
                t.peak_bytes(),
                100.0 * err
            );
        }
    }
    for r in &rows {
        let t = priced(r, plan, sp);
        let err = t.peak_bytes() / r.peak - 1.0;
        assert!(err.abs() <= 0.05, "{}: {:+.1} %", r.line, 100.0 * err);
        assert_eq!(t.peak_event().phase, r.phase, "{}", r.line);
    }
    rows.len()
}

/// Megatron's and the layers-only plan price the same runs worse than
/// `plan` does, Megatron's more than 5 % off: the test tells the plans
/// apart.
fn tells_apart(text: &str, plan: TpPlan, sp: bool) {
    for r in common::rank_rows(text) {
        let err = |p: TpPlan| priced(&r, p, sp).peak_bytes() / r.peak - 1.0;
        let own = err(plan).abs();
        let megatron = err(TpPlan::Megatron);
        let layers = err(TpPlan::Layers);
        if r.rank == 0 {
            println!(
                "{}: {:?} {:+.1} %, Megatron {:+.1} %, layers {:+.1} %",
                r.line,
                plan,
                100.0 * own,
                100.0 * megatron,
                100.0 * layers
            );
        }
        assert!(
            megatron.abs() > 0.05,
            "{}: Megatron {:+.1} %",
            r.line,
            100.0 * megatron
        );
        assert!(
            layers.abs() > own,
            "{}: layers {:+.1} %",
            r.line,
            100.0 * layers
        );
    }
}

#[test]

fn hf_tp_plan_peaks_per_rank_match_the_measured() {
    let text = include_str!("fixtures/tp_hf_measured.tsv");
    assert!(check(text, TpPlan::Hf, false) >= 16);
    tells_apart(text, TpPlan::Hf, false);
}

#[test]
fn torchtitan_tp_peaks_per_rank_match_the_measured() {
    let text = include_str!("fixtures/tp_torchtitan_measured.tsv");
    assert!(check(text, TpPlan::Torchtitan, true) >= 16);
    tells_apart(text, TpPlan::Torchtitan, true);
}

#[test]
fn loss_parallel_peaks_per_rank_match_the_measured() {
    let text = include_str!("fixtures/tp_loss_parallel_measured.tsv");
    assert!(check(text, TpPlan::LossParallel, true) >= 16);
    tells_apart(text, TpPlan::LossParallel, true);
}
