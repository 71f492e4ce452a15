//! Properties of the lesson's budget over many random valid inputs.
#![cfg(not(target_arch = "wasm32"))]

use membudget::budget::{estimate, figure, rounding_note, Field, Term, TrainingConfig, Unit};
use proptest::prelude::*;

use crate::common;
use common::any_config;

/// Whether `more` is `k` times `one`: exactly while the larger product,
/// 34·L·b·s·h·2·k, is a whole number f64 holds exactly (below 2⁵³); above
/// that the lesson's left-to-right products round, and `more` is within
/// four units in the last place.
fn k_times(more: f64, one: f64, k: u32, cfg: &TrainingConfig) -> bool {
    let exact = 34
        * u128::from(cfg.layers)
        * u128::from(cfg.batch)
        * u128::from(cfg.seq_len)
        * u128::from(cfg.hidden)
        * 2
        * u128::from(k);
    let want = one * f64::from(k);
    if exact < 1 << 53 {
        more == want
    } else {
        (more - want).abs() <= 4.0 * f64::EPSILON * more
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    #[test]
    fn total_is_the_sum_and_every_figure_finite(cfg in any_config()) {
        let b = estimate(&cfg).unwrap();
        let sum: f64 = Term::ALL.iter().map(|&t| b.bytes(t)).sum();
        prop_assert!((b.total - sum).abs() <= b.total * 1e-15);
        for t in Term::ALL {
            prop_assert!(b.bytes(t).is_finite() && b.bytes(t) >= 0.0);
            prop_assert!(b.share(t) >= 0.0 && b.share(t) <= 1.0);
        }
        prop_assert!(b.total.is_finite() && b.total > 0.0);
        let d = b.dominant();
        prop_assert!(Term::ALL.iter().all(|&t| b.bytes(t) <= b.bytes(d)));
    }

    #[test]
    fn activations_linear_in_batch_others_fixed(cfg in any_config(), k in 2u32..=8) {
        // Fold the batch into 1..=1024/k so that k times it stays in range.
        let cfg = TrainingConfig { batch: 1 + cfg.batch % (1024 / k), ..cfg };
        let one = estimate(&cfg).unwrap();
        let more = estimate(&TrainingConfig { batch: cfg.batch * k, ..cfg }).unwrap();
        prop_assert!(k_times(more.activations, one.activations, k, &cfg), "{} vs {} x {k}", more.activations, one.activations);
        for t in [Term::Params, Term::Grads, Term::MasterWeights, Term::OptimizerState] {
            prop_assert_eq!(more.bytes(t), one.bytes(t));
        }
    }

    #[test]
    fn activations_linear_in_seq_others_fixed(cfg in any_config(), k in 2u32..=8) {
        // Fold the length into 128..=131072/k so that k times it stays in range.
        let cfg = TrainingConfig { seq_len: 128 + cfg.seq_len % (131_072 / k - 127), ..cfg };
        let one = estimate(&cfg).unwrap();
        let more = estimate(&TrainingConfig { seq_len: cfg.seq_len * k, ..cfg }).unwrap();
        prop_assert!(k_times(more.activations, one.activations, k, &cfg), "{} vs {} x {k}", more.activations, one.activations);
        for t in [Term::Params, Term::Grads, Term::MasterWeights, Term::OptimizerState] {
            prop_assert_eq!(more.bytes(t), one.bytes(t));
        }
    }

    /// The lesson's exercise 1: fp32 doubles weights and gradients, removes
    /// the master copy, and leaves optimizer state and activations alone.
    #[test]
    fn mixed_precision_moves_exactly_the_weight_terms(cfg in any_config()) {
        let mixed = estimate(&TrainingConfig { mixed_precision: true, ..cfg }).unwrap();
        let fp32 = estimate(&TrainingConfig { mixed_precision: false, ..cfg }).unwrap();
        let n = cfg.params_b * 1e9;
        prop_assert_eq!(mixed.params, n * 2.0);
        prop_assert_eq!(fp32.params, n * 4.0);
        prop_assert_eq!(fp32.grads, 2.0 * mixed.grads);
        prop_assert_eq!(mixed.master_weights, n * 4.0);
        prop_assert_eq!(fp32.master_weights, 0.0);
        prop_assert_eq!(fp32.optimizer_state, mixed.optimizer_state);
        prop_assert_eq!(fp32.activations, mixed.activations);
    }

    /// Whatever is typed, parsing never panics, and what it accepts is in
    /// range and whole where it must be; clamping always lands in range.
    #[test]
    fn parse_and_clamp_stay_in_range(text in "\\PC{0,12}", x in any::<f64>()) {
        for field in Field::ALL {
            let (min, max) = field.range();
            if let Ok(v) = field.parse(&text) {
                prop_assert!(v >= min && v <= max);
                prop_assert!(!field.is_integer() || v.fract() == 0.0);
            }
            let c = field.clamp(x);
            prop_assert!(c >= min && c <= max && field.check(c).is_ok());
        }
    }

    #[test]
    fn out_of_range_is_refused_with_the_field(cfg in any_config(), which in 0usize..5, over in any::<bool>()) {
        let field = Field::ALL[which];
        let (min, max) = field.range();
        let bad = if over { max + 1.0 } else { min - 0.05 };
        let err = cfg.with(field, bad).unwrap_err();
        prop_assert_eq!(err.field, field);
    }
}

/// Found by the property above: with 3 × 323 sequences of 124,001 tokens
/// the product passes 2⁵³ and the lesson's left-to-right rounding makes the
/// two sides differ in the last place (1.0841081349976744e17 against …42e17).
#[test]
fn linearity_holds_to_the_last_place_above_two_to_the_53() {
    let cfg = TrainingConfig {
        params_b: 0.1,
        batch: 323,
        seq_len: 124_001,
        hidden: 65_361,
        layers: 203,
        mixed_precision: false,
    };
    let one = estimate(&cfg).unwrap();
    let more = estimate(&TrainingConfig { batch: 969, ..cfg }).unwrap();
    assert_ne!(more.activations, one.activations * 3.0);
    assert!(k_times(more.activations, one.activations, 3, &cfg));
}

proptest! {
    /// Committing any typed number: what applies is always a value the
    /// field accepts; there is a message exactly when the text was not
    /// already a valid value, and it names the value in force.
    #[test]
    fn commit_always_applies_an_accepted_value(
        field in prop::sample::select(Field::ALL.to_vec()),
        typed in prop_oneof![
            (-1e7f64..1e7).prop_map(|v| v.to_string()),
            (0u32..200_000).prop_map(|v| v.to_string()),
            Just(String::new()),
            Just("abc".to_string()),
        ],
    ) {
        let current = field.clamp(4.0);
        let (v, note) = field.commit(&typed, current, membudget::number::std_to_f64);
        prop_assert!(field.check(v).is_ok(), "{typed} -> {v}");
        let valid = field.parse(&typed).is_ok();
        prop_assert_eq!(note.is_none(), valid);
        if let Some(note) = note {
            prop_assert!(note.ends_with(&format!(" {v}.")), "{}", note);
        }
    }
}

/// A figure as the page shows it ("292.1") read back in whole tenths, by
/// its digits (no float arithmetic).
fn tenths(shown: &str) -> i128 {
    let (whole, tenth) = shown.split_once('.').expect("one decimal");
    whole.parse::<i128>().unwrap() * 10 + tenth.parse::<i128>().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(10_000))]

    /// The table's rounded figures add up to its total, or the note says
    /// that they are rounded: never a sum that silently does not add up.
    #[test]
    fn shown_figures_add_up_or_carry_the_note(cfg in any_config(), gib in any::<bool>()) {
        let unit = if gib { Unit::Gib } else { Unit::Gb };
        let b = estimate(&cfg).unwrap();
        let terms: i128 = Term::ALL.iter().map(|&t| tenths(&figure(b.bytes(t), unit))).sum();
        let total = tenths(&figure(b.total, unit));
        prop_assert_eq!(rounding_note(&b, unit).is_some(), terms != total);
        // Each term is rounded on its own: the shown sum is off by at most
        // half a tenth per term.
        prop_assert!((terms - total).abs() <= 3);
    }
}
