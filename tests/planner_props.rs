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
