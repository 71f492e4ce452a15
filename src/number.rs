//! Reading the numbers people type and links carry.
//!
//! The syntax is checked here, in plain Rust, the same way everywhere; the
//! last step — decimal digits to the nearest `f64` — is a [`ToF64`] the
//! caller picks. Natively that is Rust's own [`std_to_f64`]; the page passes
//! the browser's `Number()`, because Rust's conversion brings a 10 KB table
//! of powers of five (and 14 KB of gzip) into the wasm while the browser
//! already has a conversion of its own. Both round correctly (IEEE 754
//! round-to-nearest-even; ECMAScript 2024 §7.1.4.1.1 StringToNumber), so
//! they agree on every input that passes [`read`] — the browser tests check
//! this on thousands of random strings.

/// Converts text that [`read`] accepted as decimal to the nearest `f64`.
pub type ToF64 = fn(&str) -> f64;

/// Rust's correctly rounded conversion (`str::parse`).
pub fn std_to_f64(decimal: &str) -> f64 {
    decimal.parse().unwrap_or(f64::NAN)
}

/// Reads `text` as a number, or `None` if it is not one.
///
/// Accepted, with optional surrounding spaces and a leading `+` or `-`:
/// decimal notation (`7`, `0.124`, `.5`, `5.`, `1e3`, `2.5E-2`) and
/// `inf` / `infinity` in any case (so an absurd value is reported as too
/// large rather than as not a number). Refused: `NaN`, hexadecimal,
/// digit separators, empty text.
///
/// ```
/// use membudget::number::{read, std_to_f64};
/// assert_eq!(read(" 1e3 ", std_to_f64), Some(1000.0));
/// assert_eq!(read("-inf", std_to_f64), Some(f64::NEG_INFINITY));
/// assert_eq!(read("0x10", std_to_f64), None);
/// assert_eq!(read("NaN", std_to_f64), None);
/// ```
pub fn read(text: &str, to_f64: ToF64) -> Option<f64> {
    let text = text.trim();
    let unsigned = text
        .strip_prefix(['+', '-'])
        .unwrap_or(text)
        .to_ascii_lowercase();
    if unsigned == "inf" || unsigned == "infinity" {
        let inf = f64::INFINITY;
        return Some(if text.starts_with('-') { -inf } else { inf });
    }
    is_decimal(&unsigned).then(|| to_f64(text))
}

/// `digits[.digits][e[+-]digits]`, where either side of the point may be
/// empty but not both.
fn is_decimal(unsigned: &str) -> bool {
    let (mantissa, exponent) = match unsigned.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (unsigned, None),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mantissa_ok =
        digits(whole) && digits(fraction) && !(whole.is_empty() && fraction.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    mantissa_ok && exponent_ok
}

/// A value as the number boxes show it, on both pages: `7`, `0.124`,
/// `2048` (Rust's shortest round-trip form).
pub fn show(value: f64) -> String {
    format!("{value}")
}

/// `n` with its thousands grouped by commas: `6,738,415,616`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_syntax() {
        for ok in [
            "7", "0.124", ".5", "5.", "1e3", "2.5E-2", "+4", "-3", "1e+9", " 16 ",
        ] {
            assert_eq!(read(ok, std_to_f64), ok.trim().parse().ok(), "{ok}");
        }
        for bad in [
            "", " ", ".", "e3", "1e", "1e+", "1.2.3", "0x10", "1_000", "NaN", "--1", "1 2", "١",
        ] {
            assert_eq!(read(bad, std_to_f64), None, "{bad:?}");
        }
        assert_eq!(read("Infinity", std_to_f64), Some(f64::INFINITY));
        assert_eq!(read("1e999", std_to_f64), Some(f64::INFINITY));
    }
}
