//! The step peak per rank under PyTorch's FSDP2 (`fully_shard` on every
//! decoder layer, then the model) against `tests/fixtures/fsdp2_measured.tsv`
//! (`measure_ddp.py --fsdp2`: fp32, gloo, 2 and 4 processes,
//! `reshard_after_forward` true and false, every rank, two steps) and
//! `fsdp2_mp_measured.tsv` (`--fsdp2 --mp`: the same under a bf16
//! mixed-precision policy).

#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{timeline, Framework, Precision};

use crate::common;

/// Each rank-step of a fixture with the model's figure: (label, measured,
/// model, phases agree); `mixed`: FSDP2's mixed-precision policy.
fn rows_of(text: &str, mixed: bool) -> Vec<(String, f64, f64, bool)> {
    common::rank_rows(text)
        .into_iter()
        .map(|r| {
            let mut cfg = r.cfg;
            if mixed {
                cfg.precision = Precision::Mixed;
            }
            cfg.parallel.dp = r.world;
            cfg.parallel.zero = 3;
            cfg.framework = Framework::Fsdp2 {
                reshard_after_forward: r.flag,
            };
            let t = timeline(&cfg, &r.opts).unwrap();
            (
                format!(
                    "V {}, world {}, reshard {}, rank {}, step {}",
                    cfg.arch.vocab, r.world, r.flag, r.rank, r.step
                ),
                r.peak,
                t.peak_bytes(),
                t.peak_event().phase == r.phase,
            )
        })
        .collect()
}

/// Every rank-step in its phase and within 0.1 % (a few KB; the issue's
/// bound is ±5 %), resharding after forward or not.
#[test]
fn fsdp2_peaks_per_rank() {
    let rows = rows_of(include_str!("fixtures/fsdp2_measured.tsv"), false);
    assert_eq!(rows.len(), 48);
    for (label, measured, model, phase) in &rows {
        let err = model / measured - 1.0;
        println!(
            "{label}: measured {measured} model {model} ({:+.1} %)",
            100.0 * err
        );
        assert!(phase, "{label}");
        assert!(err.abs() <= 0.001, "{label}: {:+.3} %", 100.0 * err);
    }
}

/// FSDP2 with `MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`
/// over the fp32 model, `--precision mixed` under `--framework fsdp2`: every
/// rank-step in its phase and within 0.1 %.
#[test]
fn fsdp2_mixed_precision_peaks_per_rank() {
    let rows = rows_of(include_str!("fixtures/fsdp2_mp_measured.tsv"), true);
    assert_eq!(rows.len(), 48);
    for (label, measured, model, phase) in &rows {
        let err = model / measured - 1.0;
        println!(
            "{label}: measured {measured} model {model} ({:+.1} %)",
            100.0 * err
        );
        assert!(phase, "{label}");
        assert!(err.abs() <= 0.001, "{label}: {:+.3} %", 100.0 * err);
    }
}

/// Small vocabularies (3,000 and 1,500), where the peak leaves the loss's
/// backward for a layer's backward or the forward (issue 34): worlds 2, 3
/// and 4, both `reshard_after_forward` settings. Per configuration and
/// step, the smallest peak over the ranks (the held-out method) is within
/// ±5 % and in its phase, and every rank within ±8 %: over gloo on two
/// cores a rank sometimes still holds one layer's all-gather buffer when
/// the loss's backward runs (+2.9 MB on world 4 rank 0 and world 3 rank 2
/// in this file; a profiler trace of the same configuration shows that
/// rank at the model's figure), which the model does not price.
#[test]
fn fsdp2_small_vocabulary_peaks_per_rank() {
    let rows = rows_of(
        include_str!("fixtures/fsdp2_small_vocab_measured.tsv"),
        false,
    );
    assert_eq!(rows.len(), 72);
    let mut smallest: std::collections::BTreeMap<String, (f64, f64, bool)> = Default::default();
    for (label, measured, model, phase) in &rows {
        let err = model / measured - 1.0;
        println!(
            "{label}: measured {measured} model {model} ({:+.2} %)",
            100.0 * err
        );
        assert!(err.abs() <= 0.08, "{label}: {:+.2} %", 100.0 * err);
        let (config, step) = label.split_at(label.rfind(", step").unwrap());
        let key = config[..config.rfind(", rank").unwrap()].to_string() + step;
        let e = smallest.entry(key).or_insert((f64::MAX, *model, *phase));
        if *measured < e.0 {
            *e = (*measured, *model, *phase);
        }
    }
    assert_eq!(smallest.len(), 24);
    for (key, (measured, model, phase)) in &smallest {
        let err = model / measured - 1.0;
        assert!(phase, "{key}");
        assert!(err.abs() <= 0.05, "{key}: {:+.2} %", 100.0 * err);
    }
}
