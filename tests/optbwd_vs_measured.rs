//! The optimizer in backward (torchtune's `optimizer_in_bwd`) against
//! PyTorch: `fixtures/optbwd_measured.tsv`, written by
//! `fixtures/measure_optbwd.py` (tiny Llama and GPT-2 models on the CPU,
//! torchtune's own `register_optim_in_bwd_hooks`, beside the usual step
//! after backward on the same model; two measuring methods agreeing to the
//! byte). Each step's peak must be within ±5 % in the right phase, both
//! modes; what the step in backward saves is the model's within 5 % of
//! the usual peak; and what it forbids is refused in words.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, timeline, DetailedConfig, Recompute, StepOptions};

struct Row {
    /// The fixture's line, the configuration and step, the measured peak.
    m: common::Measured,
    /// The configuration and step, without the mode.
    key: String,
    live_start: f64,
}

fn rows() -> Vec<Row> {
    common::tsv_rows(include_str!("fixtures/optbwd_measured.tsv"))
        .map(|(line, c)| {
            assert_eq!(c.len(), 24, "{line}");
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let seq = n(7);
            let arch = common::measured_arch(c[0], (n(1), n(2), n(3), n(4), n(5), n(6)), seq);
            assert_eq!(arch.params(), n(15), "{line}: parameter count");
            let mut cfg = DetailedConfig::new(arch, seq, n(8));
            cfg.dropout = false;
            common::hf_cpu(&mut cfg, c[9], c[10]);
            if c[11] == "True" {
                cfg.recompute = Recompute::Full;
            }
            cfg.optimizer_in_backward = c[13] == "bwd";
            assert_eq!(c[23], "1", "{line}: the two methods disagree");
            Row {
                m: common::Measured {
                    line: line.to_string(),
                    cfg,
                    opts: common::step_options(c[14], c[12] == "True"),
                    peak: n(21) as f64,
                    phase: c[22].to_string(),
                },
                key: format!("{} step {}", c[..13].join(" "), c[14]),
                live_start: n(16) as f64,
            }
        })
        .collect()
}

/// Every step's peak, the usual one and the one in backward, within 5 %
/// in its phase.
#[test]
fn peaks_within_5_percent_in_the_right_phase() {
    let rows = rows();
    assert!(
        rows.iter()
            .filter(|r| r.m.cfg.optimizer_in_backward)
            .count()
            >= 20
    );
    common::assert_peaks(rows.iter().map(|r| &r.m), 0.05);
}

/// A later step starts with the same bytes in both modes (weights and
/// state, no gradient), as measured; the step in backward never holds the
/// gradients, so the estimate's sum has none.
#[test]
fn a_later_step_starts_with_weights_and_state_only() {
    for r in rows().iter().filter(|r| r.key.ends_with("step 2")) {
        let b = estimate(&r.m.cfg).unwrap();
        let start = b.params + b.optimizer_state;
        assert!(
            (start / r.live_start - 1.0).abs() < 1e-3,
            "{}: {start} vs {}",
            r.m.line,
            r.live_start
        );
        assert_eq!(
            b.grads == 0.0,
            r.m.cfg.optimizer_in_backward,
            "{}",
            r.m.line
        );
    }
}

/// What the step in backward saves (the usual peak minus its own), model
/// against measurement, within 5 % of the usual peak.
#[test]
fn the_saving_is_the_measured_one() {
    let rows = rows();
    let mut compared = 0;
    for usual in rows.iter().filter(|r| !r.m.cfg.optimizer_in_backward) {
        let bwd = rows
            .iter()
            .find(|r| r.m.cfg.optimizer_in_backward && r.key == usual.key)
            .unwrap();
        let peak = |r: &Row| timeline(&r.m.cfg, &r.m.opts).unwrap().peak_bytes();
        let model = peak(usual) - peak(bwd);
        let measured = usual.m.peak - bwd.m.peak;
        assert!(
            (model - measured).abs() < 0.05 * usual.m.peak,
            "{}: saves {model} modelled, {measured} measured",
            usual.m.line
        );
        compared += 1;
    }
    assert!(compared >= 20, "{compared}");
}

fn membudget(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_membudget"))
        .args(args)
        .output()
        .expect("run membudget");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `--optimizer-in-backward` prices the step with hf kernels, says what
/// it forbids, and refuses gradient accumulation, LoRA, several GPUs and
/// Megatron's kernels in words (exit code 2), as torchtune refuses them.
#[test]
fn the_flag_prices_and_refuses_in_words() {
    let base = [
        "--model",
        "llama-3.2-1b",
        "--seq",
        "2048",
        "--precision",
        "bf16",
    ];
    let (code, out, err) = membudget(&[&base[..], &["--optimizer-in-backward"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("adamw in backward"), "{out}");
    assert!(out.contains("hf kernels"), "{out}");
    assert!(
        out.contains("forbids gradient accumulation and gradient clipping"),
        "{out}"
    );
    assert!(out.contains("grads_gb                  0.0 GB"), "{out}");
    for (extra, words) in [
        (
            &["--batch", "8", "--micro-batch", "2"][..],
            "Gradient accumulation is not supported",
        ),
        (&["--lora-rank", "16"][..], "LoRA recipes"),
        (&["--dp", "2"][..], "priced on one GPU"),
        (&["--impl", "fused"][..], "use the hf profile"),
        (&["--optimizer", "muon"][..], "one optimizer per parameter"),
    ] {
        let (code, _, err) = membudget(&[&base[..], &["--optimizer-in-backward"], extra].concat());
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(words), "{extra:?}: {err}");
    }
    // The JSON's inputs carry it only when on.
    let (_, on, _) = membudget(&[&base[..], &["--optimizer-in-backward", "--json"]].concat());
    assert!(on.contains("\"optimizer_in_backward\": true"), "{on}");
    let (_, off, _) = membudget(&[&base[..], &["--json"]].concat());
    assert!(!off.contains("optimizer_in_backward"), "{off}");
}

/// On a model whose usual step peaks at the update, the step in backward
/// peaks lower by at least the gradients it never holds together, less
/// the largest tensor's; the address round-trips the setting.
#[test]
fn it_lowers_an_update_peak_and_round_trips() {
    use membudget::detailed::{preset, AdamImpl, Phase, Profile};
    let mut cfg = DetailedConfig::new(preset("llama-3.2-1b").unwrap().arch, 512, 1);
    cfg.profile = Profile::Hf;
    cfg.dropout = false;
    let opts = StepOptions {
        adam: Some(AdamImpl::Foreach),
        ..StepOptions::default()
    };
    let usual = timeline(&cfg, &opts).unwrap();
    assert_eq!(usual.peak_event().phase, Phase::Optimizer);
    let grads = estimate(&cfg).unwrap().grads;
    cfg.optimizer_in_backward = true;
    let bwd = timeline(&cfg, &opts).unwrap();
    assert!(bwd.peak_bytes() < usual.peak_bytes() - grads / 2.0);
    let d = membudget::url::decode("mode=detailed&model=llama-3.2-1b&seq=512&batch=1&optbwd=1");
    assert!(d.ignored.is_empty());
    assert!(d.state.detailed_config().optimizer_in_backward);
    assert!(membudget::url::encode(&d.state).contains("optbwd=1"));
}

/// The rows of docs/validation.md's table, from the fixture and the model:
/// each configuration and step, the usual step's peak and the one in
/// backward, measured and modelled.
fn table_lines() -> Vec<String> {
    let rows = rows();
    let peak = |r: &Row| timeline(&r.m.cfg, &r.m.opts).unwrap().peak_bytes();
    rows.iter()
        .filter(|r| !r.m.cfg.optimizer_in_backward)
        .map(|usual| {
            let bwd = rows
                .iter()
                .find(|r| r.m.cfg.optimizer_in_backward && r.key == usual.key)
                .unwrap();
            let c: Vec<&str> = usual.m.line.split('\t').collect();
            let (mu, pu, mb, pb) = (usual.m.peak, peak(usual), bwd.m.peak, peak(bwd));
            format!(
                "| {} L{} h{} V{}k s{} b{} {} {}{} {} | {} | {:.1} MB ({}) | {:.1} MB | {:+.2} % | {:.1} MB ({}) | {:.1} MB | {:+.2} % | {:.1} MB | {:.1} MB |",
                c[0],
                c[1],
                c[2],
                c[6].parse::<u64>().unwrap() / 1000,
                c[7],
                c[8],
                c[9],
                c[10],
                if c[11] == "True" { " ckpt" } else { "" },
                if c[12] == "True" { "foreach" } else { "loop" },
                c[14],
                mu / 1e6,
                usual.m.phase,
                pu / 1e6,
                (pu / mu - 1.0) * 100.0,
                mb / 1e6,
                bwd.m.phase,
                pb / 1e6,
                (pb / mb - 1.0) * 100.0,
                (mu - mb) / 1e6,
                (pu - pb) / 1e6,
            )
        })
        .collect()
}

validation_table_tests!(table_lines);

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
    /// Any preset that can be priced with the step in backward gives finite,
    /// non-negative live bytes at every event, no gradient at the update
    /// (each was freed in its hook), the whole state there, and a peak at
    /// least the weights and the state.
    #[test]
    fn the_step_in_backward_is_sound_on_any_preset(
        m in 0..membudget::detailed::PRESETS.len(),
        seq in proptest::sample::select(vec![128u64, 1024, 4096]),
        micro in 1u64..=4,
        precision in common::any_precision(),
        optimizer in common::any_optimizer(),
        first in proptest::bool::ANY,
        adam in proptest::sample::select(vec![None, Some(membudget::detailed::AdamImpl::ForLoop), Some(membudget::detailed::AdamImpl::Foreach)]),
    ) {
        use membudget::detailed::{Moment, Profile, Step};
        let mut cfg = DetailedConfig::new(membudget::detailed::PRESETS[m].arch, seq, micro);
        cfg.profile = Profile::Hf;
        cfg.precision = precision;
        cfg.optimizer = optimizer;
        cfg.optimizer_in_backward = true;
        let opts = StepOptions { step: if first { Step::First } else { Step::Later }, adam };
        let Ok(t) = timeline(&cfg, &opts) else { return Ok(()); };
        let b = estimate(&cfg).unwrap();
        let peak = t.peak_bytes();
        proptest::prop_assert!(peak.is_finite());
        for e in &t.events {
            let l = &e.live;
            for v in [l.params, l.grads, l.master_weights, l.optimizer_state, l.activations, l.transient] {
                proptest::prop_assert!(v.is_finite() && v >= -1e-6 * peak, "{e:?}");
            }
            proptest::prop_assert_eq!(l.grads, 0.0);
        }
        let update = t.events.iter().find(|e| e.moment == Moment::OptimizerUpdate).unwrap();
        proptest::prop_assert!((update.live.optimizer_state - b.optimizer_state).abs() <= 1e-6 * b.optimizer_state.max(1.0));
        proptest::prop_assert!(peak >= (b.params + b.master_weights + b.optimizer_state) * (1.0 - 1e-12));
    }
}
