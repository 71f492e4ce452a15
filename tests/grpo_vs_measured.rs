//! GRPO's step against live memory measured in PyTorch:
//! `fixtures/grpo_measured.tsv`, written by `fixtures/measure_grpo.py`
//! (TRL's `GRPOTrainer` on tiny Llama policies on the CPU: generation with
//! `model.generate`, the fused LM head, with and without gradient
//! checkpointing and a reference model, one and two micro-batches; the
//! second optimizer step). The "hf" profile on the CPU must give each
//! phase's peak within ±5 %: the rollout (prefill and decoding, and the
//! reference's scoring), the forward with the fused head, the backward,
//! and the step's peak overall.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{
    config::Rollout, timeline, AdamImpl, Architecture, DetailedConfig, LoraTargets, Moment,
    Objective, Phase, Recompute, Step, StepOptions,
};

#[test]
fn grpo_phases_within_five_percent() {
    let text = include_str!("fixtures/grpo_measured.tsv");
    let mut rows = 0;
    let mut worst: f64 = 0.0;
    let mut failures = Vec::new();
    for (line, c) in common::tsv_rows(text) {
        let n = |i: usize| c[i].parse::<u64>().unwrap();
        let arch = Architecture::llama(n(0), n(1), n(2), n(3), n(4), n(5));
        assert_eq!(arch.params(), n(15), "{line}: parameters");
        let (prompt, completion, micro, accum) = (n(6), n(7), n(8), n(9));
        let mut cfg = DetailedConfig::new(arch, prompt + completion, micro * accum);
        cfg.micro_batch = Some(micro);
        cfg.dropout = false;
        common::hf_cpu(&mut cfg, c[13], "sdpa");
        cfg.recompute = if c[12] == "1" {
            Recompute::Full
        } else {
            Recompute::None
        };
        cfg.objective = Objective::Grpo {
            kl: c[11].parse::<f64>().unwrap() > 0.0,
        };
        cfg.rollout = Rollout {
            completion,
            generations: n(10),
            vllm: None,
        };
        if n(14) > 0 {
            cfg.lora_rank = Some(n(14));
            cfg.lora_targets = "q,v".parse::<LoraTargets>().unwrap();
        }
        let opts = StepOptions {
            step: Step::Later,
            adam: Some(AdamImpl::ForLoop),
        };
        let t = timeline(&cfg, &opts).unwrap();
        // The largest live bytes of `phase`, the reference's scoring
        // (`reference`) or the rest of it.
        let peak_of = |phase: Phase, reference: bool| {
            t.events
                .iter()
                .filter(|e| e.phase == phase)
                .filter(|e| (e.moment == Moment::ReferenceForward) == reference)
                .map(|e| e.live.total())
                .fold(0.0, f64::max)
        };
        // Columns 16–20: the peaks of generation, reference, forward,
        // backward and the optimizer step; 25: live bytes after the step
        // (weights and optimizer state).
        let mut checks = vec![
            ("generation", peak_of(Phase::Generation, false), n(16)),
            ("forward", peak_of(Phase::Forward, false), n(18)),
            ("backward", peak_of(Phase::Backward, false), n(19)),
            ("step", t.peak_bytes(), (16..21).map(n).max().unwrap()),
        ];
        if n(17) > 0 {
            checks.push(("reference", peak_of(Phase::Generation, true), n(17)));
        }
        // The rollout's own bytes (the cache, the prefill's and the
        // decoding's tensors) above what the step keeps throughout, within
        // ±15 % where they are at least a tenth of the peak.
        let kept = t.events.last().unwrap().live.total();
        let (got, want) = (
            peak_of(Phase::Generation, false) - kept,
            (n(16) - n(25)) as f64,
        );
        let rollout_err = got / want - 1.0;
        eprintln!(
            "   rollout {:+.2} % of {want} B  {line}",
            rollout_err * 100.0
        );
        if want > 0.1 * n(16) as f64 && rollout_err.abs() > 0.15 {
            failures.push(format!("rollout: {:+.2} % on {line}", rollout_err * 100.0));
        }
        for (what, got, want) in checks {
            let err = got / want as f64 - 1.0;
            eprintln!("{what:>10} {:+.2} %  {line}", err * 100.0);
            worst = worst.max(err.abs());
            if err.abs() > 0.05 {
                failures.push(format!("{what}: {:+.2} % on {line}", err * 100.0));
            }
        }
        rows += 1;
    }
    eprintln!("worst {:.2} %", worst * 100.0);
    assert!(rows >= 6);
    assert!(failures.is_empty(), "{failures:#?}");
}
