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
//! gradients than the schedule needs (the issue's advice for such noise).
//!
//! `deepspeed_settings_measured.tsv` and `deepspeed_heldout39_measured.tsv`
//! (`measure_deepspeed_settings.py`) add DeepSpeed's `overlap_comm`,
//! `sub_group_size` and persistence threshold, worlds of 3, tied
//! embeddings, q/k/v biases and short sequences, compared the same way.

#![cfg(not(target_arch = "wasm32"))]

use std::collections::BTreeMap;

use membudget::detailed::{
    timeline, AdamImpl, DetailedConfig, Framework, Phase, Step, StepOptions,
};

use crate::common;

/// DeepSpeed's default, as the fixtures spell it.
const D: &str = "default";

/// DeepSpeed with these settings as a fixture spells them (`default` for
/// DeepSpeed's own), the others its defaults.
fn deepspeed(
    bucket: &str,
    prefetch: &str,
    overlap: &str,
    sub_group: &str,
    persist: &str,
) -> Framework {
    let Framework::DeepSpeed {
        reduce_bucket_size,
        prefetch_bucket_size,
        sub_group_size,
        param_persistence_threshold,
        ..
    } = Framework::DEEPSPEED
    else {
        unreachable!()
    };
    let value = |s: &str, default: u64| if s == D { default } else { s.parse().unwrap() };
    Framework::DeepSpeed {
        reduce_bucket_size: value(bucket, reduce_bucket_size),
        prefetch_bucket_size: value(prefetch, prefetch_bucket_size),
        overlap_comm: (overlap != D).then(|| overlap == "true"),
        sub_group_size: value(sub_group, sub_group_size),
        param_persistence_threshold: value(persist, param_persistence_threshold),
    }
}

/// One rank-step of `measure_deepspeed_settings.py`'s tables.
struct Row<'a> {
    line: &'a str,
    /// Everything that names the configuration and step, the rank left out.
    key: String,
    cfg: DetailedConfig,
    opts: StepOptions,
    peak: f64,
    phase: Phase,
}

/// The rank-steps of a `measure_deepspeed_settings.py` table.
fn settings_rows(text: &str) -> Vec<Row<'_>> {
    common::tsv_rows(text)
        .map(|(line, c)| {
            let num = |i: usize| c[i].parse::<u64>().unwrap();
            let shape = (num(8), num(9), num(10), num(11), num(12), num(13));
            let arch = common::measured_arch(c[7], shape, num(14));
            assert_eq!(arch.params(), num(16), "{line}: parameter count");
            let (world, micro) = (num(0), num(15));
            let mut cfg = DetailedConfig::new(arch, num(14), micro * world);
            cfg.micro_batch = Some(micro);
            common::hf_cpu(&mut cfg, "fp32", "sdpa");
            cfg.dropout = false;
            cfg.parallel.dp = world;
            cfg.parallel.zero = c[1].parse().unwrap();
            cfg.framework = deepspeed(c[2], c[3], c[4], c[5], c[6]);
            let mut key: Vec<&str> = c[..17].to_vec();
            key.push(c[18]);
            Row {
                line,
                key: key.join(" "),
                cfg,
                opts: StepOptions {
                    step: if c[18] == "1" {
                        Step::First
                    } else {
                        Step::Later
                    },
                    adam: Some(AdamImpl::ForLoop),
                },
                peak: num(20) as f64,
                phase: common::phase(c[21]),
            }
        })
        .collect()
}

/// Each configuration-step's smallest peak over its ranks against the
/// model: the errors in %, and the lines whose phase the model misses,
/// each with whether it is a close call.
fn compare(rows: &[Row]) -> (Vec<f64>, Vec<(String, bool)>) {
    let mut smallest = BTreeMap::<&str, &Row>::new();
    for r in rows {
        let e = smallest.entry(&r.key).or_insert(r);
        if r.peak < e.peak {
            *e = r;
        }
    }
    let (mut errors, mut phases) = (Vec::new(), Vec::new());
    for r in smallest.values() {
        let t = timeline(&r.cfg, &r.opts).unwrap();
        let err = 100.0 * (t.peak_bytes() / r.peak - 1.0);
        let phase = t.peak_event().phase;
        let by_phase = [Phase::Forward, Phase::Backward, Phase::Optimizer]
            .map(|p| t.phase_peak(p).map_or(0.0, |b| (b / 1e6).round()));
        println!(
            "{}: measured {} {:?}, model {:+.1} % {:?} {:?} (MB by phase {by_phase:?})",
            r.key,
            r.peak,
            r.phase,
            err,
            phase,
            t.peak_event().moment
        );
        if std::env::var("DS_EVENTS").is_ok_and(|k| r.key.starts_with(&k)) {
            for e in &t.events {
                println!(
                    "    {:?} {:?} {:.1} MB",
                    e.phase,
                    e.moment,
                    e.live.total() / 1e6
                );
            }
        }
        errors.push(err);
        if phase != r.phase {
            // A close call, as in the first fixtures: the model's peak
            // within 3 % of its own peak in the measured phase, which is
            // within ±5 % of the measurement.
            let theirs = t.phase_peak(r.phase).unwrap();
            let close =
                t.peak_bytes() / theirs - 1.0 < 0.03 && (theirs / r.peak - 1.0).abs() <= 0.05;
            println!(
                "  {}: {:?} at {:+.1} % of the measured {:?}",
                if close { "close call" } else { "MISSED" },
                phase,
                100.0 * (t.peak_bytes() / theirs - 1.0),
                r.phase
            );
            phases.push((r.line.to_string(), close));
        }
    }
    (errors, phases)
}

/// The configuration-steps outside ±5 % and those whose phase the model
/// misses, printed.
fn misses(errors: &[f64], phases: &[(String, bool)]) -> (usize, usize) {
    let far = errors.iter().filter(|e| e.abs() > 5.0).count();
    let missed = phases.iter().filter(|(_, close)| !close).count();
    println!(
        "{far} outside ±5 %, {missed} phases missed, {} close calls",
        phases.len() - missed
    );
    (far, missed)
}

/// Settings the first fixtures left at DeepSpeed's defaults
/// (`deepspeed_settings_measured.tsv`, `measure_deepspeed_settings.py
/// settings`): `overlap_comm` both ways at stages 1 and 2, ZeRO-3's
/// `sub_group_size` and persistence threshold, worlds of 3, sequences of 16
/// to 96 tokens, tied embeddings and q/k/v biases. Every configuration-step
/// within ±6 %; the misses are those docs/validation.md names: ZeRO-1 with
/// `overlap_comm` on the Qwen2-style model on 3 GPUs (−5.4 %, its last
/// GPU allocating its partition at the output layer's reduction), and the
/// Qwen2-style model's later ZeRO-3 forward (−3.9 to −5.6 %).
#[test]
fn deepspeed_settings_per_rank() {
    let rows = settings_rows(include_str!("fixtures/deepspeed_settings_measured.tsv"));
    let (errors, phases) = compare(&rows);
    assert_eq!(errors.len(), 54);
    let worst = errors.iter().fold(0.0_f64, |w, e| w.max(e.abs()));
    assert!(worst <= 6.0, "worst {worst:+.1} %");
    let (far, missed) = misses(&errors, &phases);
    assert!(far <= 3 && missed <= 2, "{phases:#?}");
}

/// The configurations issue 39 reported, rebuilt
/// (`deepspeed_heldout39_measured.tsv`, `measure_deepspeed_settings.py
/// heldout`): a Qwen2-style model, a tied Llama and its untied twin, a
/// Llama with 32,000 words; worlds 2, 3 and 4, stages 1–3. Every
/// configuration-step within ±5 %; two ZeRO-2 steps out of phase
/// (docs/validation.md): the tied Llama's first step on 3 GPUs (−2.3 %,
/// its smallest rank the last GPU, not the first the model prices) and the
/// untied one's later step on 4 (exact, the measured backward and
/// optimizer peaks 14 KB apart).
#[test]
fn deepspeed_issue39_per_rank() {
    let rows = settings_rows(include_str!("fixtures/deepspeed_heldout39_measured.tsv"));
    let (errors, phases) = compare(&rows);
    assert_eq!(errors.len(), 78);
    let (far, missed) = misses(&errors, &phases);
    assert!(far == 0 && missed <= 2, "{phases:#?}");
}

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
        cfg.framework = deepspeed(&bucket.to_string(), &prefetch.to_string(), D, D, D);
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
