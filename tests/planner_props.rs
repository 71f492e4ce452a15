//! Properties of "make it fit" over random configurations and cards: it
//! never panics; every row is the model's own figure for the configuration
//! it names; and the flags it prints, given to the command line with the
//! model's own, give exactly that configuration.
#![cfg(not(target_arch = "wasm32"))]

use clap::Parser;
use membudget::cli::Args;
use membudget::detailed::plan::planner::{flags, make_it_fit, need};
use membudget::detailed::PRESETS;
use proptest::prelude::*;

/// A configuration as command-line flags, and the card's GiB.
fn any_setup() -> impl Strategy<Value = (Vec<String>, f64)> {
    (
        0..PRESETS.len(),
        prop::sample::select(vec![512u64, 2048, 4096, 8192]),
        prop::sample::select(vec![1u64, 2, 4]),
        prop::sample::select(vec![1u64, 2, 8]),
        0u8..=3,
        prop::sample::select(vec!["none", "selective", "full"]),
        prop::sample::select(vec!["flash", "eager"]),
        prop::sample::select(vec!["adamw", "sgd", "adam8bit"]),
        any::<bool>(),
        prop::sample::select(vec![24.0, 40.0, 80.0, 141.0]),
    )
        .prop_map(
            |(m, seq, micro, dp, zero, recompute, attention, optimizer, lora, gib)| {
                let mut f: Vec<String> = vec![
                    "--model".into(),
                    PRESETS[m].name.into(),
                    "--seq".into(),
                    seq.to_string(),
                    "--micro-batch".into(),
                    micro.to_string(),
                    "--batch".into(),
                    (micro * dp * 2).to_string(),
                    "--dp".into(),
                    dp.to_string(),
                    "--zero".into(),
                    zero.to_string(),
                    "--recompute".into(),
                    recompute.into(),
                    "--attention".into(),
                    attention.into(),
                    "--optimizer".into(),
                    optimizer.into(),
                ];
                if lora && PRESETS[m].arch.moe.is_none() {
                    f.extend(["--lora-rank".into(), "8".into()]);
                }
                (f, gib)
            },
        )
}

fn config(flags: &[String]) -> Option<membudget::detailed::DetailedConfig> {
    let args =
        Args::try_parse_from(std::iter::once("membudget".to_string()).chain(flags.iter().cloned()))
            .ok()?;
    args.detailed_config().ok().map(|(c, _)| c)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn rows_are_the_models_and_their_flags_rerun((base, gib) in any_setup()) {
        let Some(cfg) = config(&base) else { return Ok(()); };
        let capacity = gib * (1u64 << 30) as f64;
        let plan = make_it_fit(&cfg, capacity, None, None);
        if need(&cfg, None).is_none() {
            return Ok(());
        }
        prop_assert_eq!(plan.fits_now, plan.need <= capacity);
        let mut seen_miss = false;
        for c in &plan.changes {
            let n = need(&c.cfg, None).unwrap();
            prop_assert_eq!(c.need, n);
            prop_assert_eq!(c.fits, n <= capacity);
            prop_assert!(c.saved > 0.0 && c.need.is_finite());
            // A change never adds work it does not run, and never removes
            // any but the weight gradients LoRA's frozen base skips: about
            // a third of the products (4N of 6N, the attention's kept).
            let lora = c.cfg.lora_rank.is_some() && cfg.lora_rank.is_none();
            let least = if lora { 2.0 / 3.0 } else { 1.0 };
            prop_assert!(c.compute >= least - 1e-12, "{}: {}", c.name, c.compute);
            // Those that fit come first.
            prop_assert!(!(seen_miss && c.fits), "{} after a row that does not fit", c.name);
            seen_miss |= !c.fits;
            // The printed flags, added to the command, give the configuration.
            let mut rerun = base.clone();
            rerun.extend(flags(&cfg, &c.cfg));
            prop_assert_eq!(config(&rerun), Some(c.cfg), "{}: {:?}", c.name, flags(&cfg, &c.cfg));
        }
    }
}

/// The command line's JSON document for `flags`, if it prices them.
fn report(flags: &[String]) -> Option<membudget::report::DetailedReport> {
    let args =
        Args::try_parse_from(std::iter::once("membudget".to_string()).chain(flags.iter().cloned()))
            .ok()?;
    let out = membudget::cli::run(&args).ok()?;
    serde_json::from_str(&out).ok()
}

/// The verdict for `base` plus `extra` on a card of `gib` GiB, with the
/// runtime overhead named explicitly (`--overhead`, as before issue 38).
fn fit_with_overhead(
    base: &[String],
    extra: &[String],
    gib: f64,
) -> Option<membudget::report::FitReport> {
    let mut f = base.to_vec();
    f.extend(extra.iter().cloned());
    f.extend([
        "--gpu-memory".into(),
        gib.to_string(),
        "--overhead".into(),
        "--json".into(),
    ]);
    report(&f)?.fit
}

/// The value after `flag` in `flags`.
fn value_of(flags: &[String], flag: &str) -> u64 {
    let i = flags.iter().position(|f| f == flag).unwrap();
    flags[i + 1].parse().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Issue 38: what the command line says fits by default (the verdict,
    /// the largest micro-batch and sequence, each change of "to make it
    /// fit") still fits once the runtime overhead is counted.
    #[test]
    fn what_fits_by_default_fits_with_the_overhead((base, gib) in any_setup()) {
        let mut flags = base.clone();
        flags.extend(["--gpu-memory".into(), gib.to_string(), "--json".into()]);
        let Some(r) = report(&flags) else { return Ok(()); };
        let fit = r.fit.clone().unwrap();
        let o = r.overhead.unwrap();
        prop_assert_eq!(r.peak_with_overhead, Some(fit.need));
        prop_assert!(fit.need.abs_diff(r.peak + o.total) <= 1);
        prop_assert_eq!(fit.fits, fit.need <= fit.capacity);
        prop_assert_eq!(Some(fit.clone()), fit_with_overhead(&base, &[], gib));
        for c in fit.changes.iter().filter(|c| c.fits) {
            let again = fit_with_overhead(&base, &c.flags, gib).unwrap();
            prop_assert!(again.fits, "{}: {:?} needs {} of {}", c.change, c.flags, again.need, again.capacity);
        }
        let (dp, accumulation) = (value_of(&base, "--dp"), 2);
        if let Some(m) = fit.max_micro_batch {
            let at = ["--micro-batch".into(), m.to_string(), "--batch".into(), (m * dp * accumulation).to_string()];
            prop_assert!(fit_with_overhead(&base, &at, gib).unwrap().fits, "micro-batch {}", m);
        }
        if let Some(s) = fit.max_seq {
            prop_assert!(fit_with_overhead(&base, &["--seq".into(), s.to_string()], gib).unwrap().fits, "seq {}", s);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    /// `--plan` judges its layouts by the peak plus the runtime overhead by
    /// default: the same rows as with `--overhead`, every one within the card.
    #[test]
    fn plan_rows_fit_with_the_overhead((base, _) in any_setup(), card in prop::sample::select(vec!["rtx-4090", "a100-40gb", "h100-sxm"])) {
        let mut flags = base.clone();
        flags.extend(["--gpu".into(), card.into(), "--plan".into(), "--json".into()]);
        let Some(r) = report(&flags) else { return Ok(()); };
        let capacity = membudget::detailed::time::hardware::gpu(card).unwrap().memory_bytes();
        flags.push("--overhead".into());
        let explicit = report(&flags).unwrap();
        let (plan, again) = (r.plan.unwrap(), explicit.plan.unwrap());
        prop_assert_eq!(&plan, &again);
        for row in &plan.rows {
            prop_assert!(row.peak as f64 <= capacity, "{:?}", row.flags);
        }
    }
}
