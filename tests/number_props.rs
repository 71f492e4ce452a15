//! Reading numbers: one syntax for the page, the links and the CLI, and
//! the JSON spelling of figures.
#![cfg(not(target_arch = "wasm32"))]

use membudget::export::json_number;
use membudget::number::{read, std_to_f64};
use proptest::prelude::*;

/// Decimal text of every shape the syntax allows, and some it does not.
fn decimal_text() -> impl Strategy<Value = String> {
    "[ ]{0,2}[+-]?[0-9]{0,22}(\\.[0-9]{0,22})?([eE][+-]?[0-9]{1,3})?[ ]{0,2}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4_000))]

    /// Whatever `read` accepts, Rust's parser reads to the same value; what
    /// it refuses is exactly what has no digits before the exponent.
    #[test]
    fn read_agrees_with_rust_on_decimals(text in decimal_text()) {
        let trimmed = text.trim();
        let mantissa = trimmed.split(['e', 'E']).next().unwrap();
        let has_digits = mantissa.bytes().any(|b| b.is_ascii_digit());
        match read(&text, std_to_f64) {
            Some(v) => prop_assert_eq!(v.to_bits(), trimmed.parse::<f64>().unwrap().to_bits()),
            None => prop_assert!(!has_digits, "refused {:?}", text),
        }
    }

    /// Arbitrary text never panics, and what is accepted Rust reads alike
    /// (`inf` spelled any way included).
    #[test]
    fn read_is_a_subset_of_rust(text in any::<String>()) {
        if let Some(v) = read(&text, std_to_f64) {
            prop_assert_eq!(Some(v.to_bits()), text.trim().parse::<f64>().ok().map(f64::to_bits));
        }
    }

    /// `json_number` writes exactly what `{:?}` writes, for every finite value.
    #[test]
    fn json_number_is_debug(v in any::<f64>().prop_filter("finite", |v| v.is_finite())) {
        prop_assert_eq!(json_number(v), format!("{v:?}"));
    }
}

#[test]
fn json_number_edges() {
    for v in [
        0.0,
        -0.0,
        1e-4,
        9.999e-5,
        1e16,
        9.9e15,
        185.0,
        73.014444032,
        5e-324,
    ] {
        assert_eq!(json_number(v), format!("{v:?}"), "{v}");
    }
}
