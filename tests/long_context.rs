//! Sequences to 2²⁰ tokens (with context parallelism) and batches to 2²⁰
//! sequences: the detailed model, its timeline and its step time never
//! panic (no integer overflow: up to 2⁴⁰ tokens a step, 2⁴⁰ attention
//! scores a head) and never show NaN or infinity; what they cannot price
//! they refuse in words. A million-token context-parallel run prices.
#![cfg(not(target_arch = "wasm32"))]

use membudget::cli::{run, Args};
use membudget::detailed::{
    estimate, memory::sac, time::hardware::gpu, time::steptime::step_time, time::steptime::Cluster,
    time::steptime::Efficiency, timeline, AttentionKernel, DetailedConfig, Profile, Recompute,
    StepOptions, PRESETS,
};
use proptest::prelude::*;

use crate::common;

/// The extremes and their neighbours: one token, the lesson's 131,072 and
/// one either side, half and all of 2²⁰.
const SEQS: [u64; 7] = [1, 2, 131_071, 131_072, 131_073, 524_288, 1_048_576];

fn figures_are_finite(cfg: &DetailedConfig) -> Result<(), TestCaseError> {
    let b = match estimate(cfg) {
        Err(e) => {
            prop_assert!(!e.to_string().is_empty());
            return Ok(());
        }
        Ok(b) => b,
    };
    for x in [
        b.params,
        b.grads,
        b.master_weights,
        b.optimizer_state,
        b.activations,
        b.logits,
        b.total,
    ] {
        prop_assert!(x.is_finite() && x >= 0.0, "{b:?}");
    }
    let t = match timeline(cfg, &StepOptions::default()) {
        // The peak alone can pass the bound that the rest does not.
        Err(e) => {
            prop_assert!(e.to_string().contains("2^60"), "{e}");
            return Ok(());
        }
        Ok(t) => t,
    };
    let peak = t.peak_bytes();
    prop_assert!(peak.is_finite() && peak > 0.0);
    for e in &t.events {
        let l = e.live;
        for v in [
            l.params,
            l.grads,
            l.master_weights,
            l.optimizer_state,
            l.activations,
            l.transient,
        ] {
            prop_assert!(v.is_finite() && v >= -1e-6 * peak, "{e:?}");
        }
    }
    let h100 = Cluster::new(gpu("h100-sxm").unwrap(), 8);
    let s = step_time(cfg, &h100, &Efficiency::for_gpu(&h100.gpu));
    prop_assert!(s.step_s.is_finite() && s.step_s > 0.0, "{s:?}");
    for (name, v) in s.parts.named() {
        prop_assert!(v.is_finite() && v >= 0.0, "{name} {v} {s:?}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Every preset at the extremes of sequence, micro-batch, accumulation
    /// (batch to 2²⁰), context and tensor parallelism, with eager or flash
    /// attention, either kernel profile and every recomputation.
    #[test]
    fn the_extremes_are_finite_or_refused(
        m in 0..PRESETS.len(),
        seq in prop::sample::select(SEQS.to_vec()),
        micro in prop::sample::select(vec![1u64, 2, 1 << 10, 1 << 20]),
        accum in prop::sample::select(vec![1u64, 3, 1 << 10, 1 << 20]),
        cp in prop::sample::select(vec![1u64, 2, 8, 32]),
        tp in prop::sample::select(vec![1u64, 8]),
        (flash, hf) in any::<(bool, bool)>(),
        recompute in common::any_recompute(),
    ) {
        let batch = (micro * accum).min(1 << 20);
        let mut cfg = DetailedConfig::new(PRESETS[m].arch, seq, batch);
        cfg.micro_batch = Some(micro.min(batch));
        cfg.parallel.cp = cp;
        cfg.parallel.tp = if cfg.arch.heads.is_multiple_of(tp) && !hf { tp } else { 1 };
        cfg.parallel.sp = cfg.parallel.tp > 1;
        // Ring attention runs in the fused kernel (refused otherwise).
        cfg.attention = if flash || cp > 1 { AttentionKernel::Flash } else { AttentionKernel::Eager };
        cfg.profile = if hf { Profile::Hf } else { Profile::Fused };
        cfg.recompute = recompute;
        if recompute == Recompute::SelectiveOp && sac::unsupported(&cfg).is_some() {
            cfg.recompute = Recompute::Full;
        }
        figures_are_finite(&cfg)?;
    }
}

fn cli(args: &[&str]) -> Result<String, String> {
    use clap::Parser;
    let parsed = Args::try_parse_from(std::iter::once("membudget").chain(args.iter().copied()))
        .map_err(|e| e.to_string())?;
    run(&parsed)
}

/// Llama-3.1-8B at 1,048,576 tokens over cp 32 (Megatron-LM's context
/// parallelism, ring exchange): each GPU keeps the activations of
/// 1,048,576 / 32 = 32,768 tokens, exactly those of the sequence cut to
/// 32,768 without context parallelism; its attention's work is 32 times
/// that cut sequence's (every query meets all 2²⁰ keys); the step prices.
#[test]
fn a_million_token_context_parallel_run_prices() {
    let arch = membudget::detailed::preset("llama-3.1-8b").unwrap().arch;
    let mut long = DetailedConfig::new(arch, 1 << 20, 1);
    long.parallel.cp = 32;
    long.recompute = Recompute::Full;
    long.attention = AttentionKernel::Flash;
    let cut = DetailedConfig {
        seq: 1 << 15,
        parallel: Default::default(),
        ..long
    };
    let (l, c) = (estimate(&long).unwrap(), estimate(&cut).unwrap());
    assert_eq!(l.activations, c.activations);
    assert_eq!(l.logits, c.logits);
    // The logits of 32,768 tokens in fp32: 32,768 × 128,256 × 4 bytes.
    assert_eq!(l.logits, 32_768.0 * 128_256.0 * 4.0);
    let h100 = Cluster::new(gpu("h100-sxm").unwrap(), 8);
    let eff = Efficiency::for_gpu(&h100.gpu);
    let (ls, cs) = (step_time(&long, &h100, &eff), step_time(&cut, &h100, &eff));
    assert!(ls.step_s.is_finite() && ls.step_s > cs.step_s);
    let ratio = ls.parts.attention / cs.parts.attention;
    assert!((ratio - 32.0).abs() < 1e-9, "attention ×{ratio}");
    // The command line takes it and prices it, its figures finite.
    let out = cli(&[
        "--model",
        "llama-3.1-8b",
        "--seq",
        "1048576",
        "--cp",
        "32",
        "--recompute",
        "full",
        "--gpu",
        "h100-sxm",
        "--json",
    ])
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["inputs"]["seq"], 1_048_576);
    let step = v["time"]["step_s"].as_f64().unwrap();
    assert!(step.is_finite() && step > 0.0, "{step}");
    // One token more is refused in words, and the lesson keeps 131,072.
    let e = cli(&["--model", "llama-3.1-8b", "--seq", "1048577"]).unwrap_err();
    assert!(e.contains("1048576"), "{e}");
    let e = cli(&["--seq", "131073"]).unwrap_err();
    assert!(e.contains("131072"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]

    /// The command line at the extremes, with a card (the verdict, the
    /// largest micro-batch and sequence that fit, the levers that double or
    /// halve them) and the step time: it prices or refuses in words (exit
    /// code 2, never a panic), and no figure is NaN, infinite or a 64-bit
    /// integer's saturated end (2⁶⁴ bytes = 18446744073.7 GB).
    #[test]
    fn the_command_line_at_the_extremes(
        model in prop::sample::select(vec!["gpt2", "llama-3.1-8b", "llama-3.1-405b", "mixtral-8x7b", "deepseek-v3"]),
        seq in prop::sample::select(SEQS.to_vec()),
        micro in prop::sample::select(vec![1u64, 64, 1 << 20]),
        accum in prop::sample::select(vec![1u64, 1 << 20]),
        cp in prop::sample::select(vec![1u64, 8, 32]),
        attention in prop::sample::select(vec!["flash", "eager"]),
        json in any::<bool>(),
    ) {
        let batch = (micro * accum).min(1 << 20).to_string();
        let (micro, seq, cp) = (micro.min(1 << 20).to_string(), seq.to_string(), cp.to_string());
        let mut args = vec![
            "--model", model, "--seq", &seq, "--batch", &batch, "--micro-batch", &micro,
            "--cp", &cp, "--attention", attention, "--gpu", "h100-sxm",
        ];
        if json {
            args.push("--json");
        }
        match cli(&args) {
            Err(e) => prop_assert!(!e.is_empty() && !e.contains("panicked"), "{e}"),
            Ok(out) => {
                for bad in ["NaN", "inf ", "inf\n", "18446744073", "null,\n    \"step_s"] {
                    prop_assert!(!out.contains(bad), "{bad} in {args:?}:\n{out}");
                }
            }
        }
    }
}
