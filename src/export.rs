//! The budget as text to paste elsewhere: Markdown, CSV and JSON.
//!
//! ```
//! use membudget::budget::{estimate, TrainingConfig};
//! use membudget::export::to_markdown;
//! use membudget::state::Unit;
//!
//! let b = estimate(&TrainingConfig::default()).unwrap();
//! assert!(to_markdown(&b, Unit::Gb).contains("| Activations | 73.0 |"));
//! ```

use crate::budget::{Breakdown, Term};
use crate::detailed::DetailedBreakdown;
use crate::state::Unit;

/// One row of an exported table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    /// The name a reader sees.
    pub label: &'static str,
    /// The machine key.
    pub key: &'static str,
    /// Bytes.
    pub bytes: f64,
}

/// The lesson's rows: the five terms and the total.
pub fn lesson_rows(b: &Breakdown) -> Vec<Row> {
    Term::ALL
        .into_iter()
        .map(|t| Row {
            label: t.label(),
            key: t.json_key(),
            bytes: b.bytes(t),
        })
        .chain([Row {
            label: "Total",
            key: "total",
            bytes: b.total,
        }])
        .collect()
}

/// The detailed model's rows as the page's table shows them: the logits
/// apart from the other activations, so the rows add up to the total.
pub fn detailed_rows(b: &DetailedBreakdown) -> Vec<Row> {
    let bytes = [
        b.params,
        b.grads,
        b.master_weights,
        b.optimizer_state,
        b.activations - b.logits,
        b.logits,
        b.total,
    ];
    DETAILED_ROWS
        .iter()
        .zip(bytes)
        .map(|(&(label, key), bytes)| Row { label, key, bytes })
        .collect()
}

/// The rows of [`detailed_rows`], in order: label and key.
pub const DETAILED_ROWS: [(&str, &str); 7] = [
    ("Parameters", "params"),
    ("Gradients", "grads"),
    ("Master weights", "master_weights"),
    ("Optimizer state", "optimizer_state"),
    ("Activations without logits", "activations_without_logits"),
    ("Logits", "logits"),
    ("Total", "total"),
];

/// The detailed model's figures by JSON key: `activations` is everything
/// the forward pass keeps, logits included; `logits` is that part of it.
pub fn detailed_figures(b: &DetailedBreakdown) -> [(&'static str, f64); 7] {
    [
        ("params", b.params),
        ("grads", b.grads),
        ("master_weights", b.master_weights),
        ("optimizer_state", b.optimizer_state),
        ("activations", b.activations),
        ("logits", b.logits),
        ("total", b.total),
    ]
}

/// The detailed model's JSON, keyed as [`detailed_figures`].
pub fn detailed_json(b: &DetailedBreakdown) -> String {
    json_document("detailed", &detailed_figures(b))
}

/// A Markdown table of `rows`, figures to one decimal as on the page.
pub fn markdown(rows: &[Row], unit: Unit) -> String {
    let mut out = format!("| Term | {} |\n|---|---:|\n", unit.label());
    for r in rows {
        out += &format!("| {} | {:.1} |\n", r.label, unit.of(r.bytes));
    }
    out
}

/// CSV of `rows` with a header: term, bytes, and the figure in `unit` at
/// full precision (shortest text that reads back to the same number).
pub fn csv(rows: &[Row], unit: Unit) -> String {
    let mut out = format!("term,bytes,{}\n", unit.key());
    for r in rows {
        out += &format!("{},{},{}\n", r.key, r.bytes, unit.of(r.bytes));
    }
    out
}

/// The lesson's table as Markdown.
pub fn to_markdown(b: &Breakdown, unit: Unit) -> String {
    markdown(&lesson_rows(b), unit)
}

/// The lesson's table as CSV.
pub fn to_csv(b: &Breakdown, unit: Unit) -> String {
    csv(&lesson_rows(b), unit)
}

/// `{"model": "lesson", "bytes": {...}, "gb": {...}}`, each object keyed
/// `params grads master_weights optimizer_state activations total`; GB are
/// 10⁹ bytes. Figures are finite, so every number is valid JSON.
pub fn to_json(b: &Breakdown) -> String {
    let rows: Vec<(&str, f64)> = lesson_rows(b).iter().map(|r| (r.key, r.bytes)).collect();
    json_document("lesson", &rows)
}

/// `{"model": MODEL, "bytes": {KEY: bytes, …}, "gb": {KEY: bytes / 10⁹, …}}`
/// for finite figures (Rust's shortest round-trip form is valid JSON).
pub fn json_document(model: &str, rows: &[(&str, f64)]) -> String {
    let bytes: Vec<String> = rows
        .iter()
        .map(|(key, bytes)| format!("    \"{key}\": {}", json_bytes(*bytes)))
        .collect();
    let gb: Vec<String> = rows
        .iter()
        .map(|(key, bytes)| format!("    \"{key}\": {}", json_number(bytes / Unit::Gb.bytes())))
        .collect();
    format!(
        "{{\n  \"model\": \"{model}\",\n  \"bytes\": {{\n{}\n  }},\n  \"gb\": {{\n{}\n  }}\n}}\n",
        bytes.join(",\n"),
        gb.join(",\n"),
    )
}

/// A byte count as a JSON integer (rounded to the nearest byte: a share of
/// a model split across GPUs can be fractional).
pub fn json_bytes(bytes: f64) -> String {
    format!("{:.0}", bytes.round())
}

/// `v` as Rust's `{:?}` writes it (`185.0`, `7.3014444032e10` is written
/// `73014444032.0`, `1e16`, `1.5e-5`): shortest round-trip digits, always
/// valid JSON for finite `v`. Spelled out with `Display` and `LowerExp`
/// because the page's release build compiles `Debug` formatting away
/// (`-Zfmt-debug=none`, see README "Size").
pub fn json_number(v: f64) -> String {
    let magnitude = v.abs();
    if magnitude != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        format!("{v:e}")
    } else {
        let s = v.to_string();
        if s.contains('.') {
            s
        } else {
            s + ".0"
        }
    }
}

/// An `<iframe>` that embeds the page at `url` (which should carry
/// `embed=1`), sized for the compact layout. The URL is escaped for an
/// attribute value.
pub fn iframe_snippet(url: &str) -> String {
    let escaped = url
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!(
        "<iframe src=\"{escaped}\" width=\"640\" height=\"480\" style=\"border:0\" \
         title=\"GPU memory budget calculator\" loading=\"lazy\"></iframe>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{estimate, TrainingConfig};

    fn lesson() -> Breakdown {
        estimate(&TrainingConfig::default()).unwrap()
    }

    #[test]
    fn markdown_is_the_page_table() {
        assert_eq!(
            to_markdown(&lesson(), Unit::Gb),
            "| Term | GB |\n|---|---:|\n| Parameters | 14.0 |\n| Gradients | 14.0 |\n\
             | Master weights | 28.0 |\n| Optimizer state | 56.0 |\n| Activations | 73.0 |\n\
             | Total | 185.0 |\n"
        );
        assert!(to_markdown(&lesson(), Unit::Gib).contains("| Total | 172.3 |"));
    }

    #[test]
    fn csv_has_exact_bytes() {
        let csv = to_csv(&lesson(), Unit::Gb);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "term,bytes,gb");
        assert_eq!(lines[5], "activations,73014444032,73.014444032");
        assert_eq!(lines[6], "total,185014444032,185.014444032");
        assert_eq!(lines.len(), 7);
    }

    #[test]
    fn json_numbers_read_back_exactly() {
        let json = to_json(&lesson());
        assert!(json.contains("\"model\": \"lesson\""));
        assert!(json.contains("\"activations\": 73014444032,"));
        assert!(json.contains("\"total\": 185.014444032"));
    }
}

#[cfg(test)]
mod snippet_tests {
    use super::iframe_snippet;

    #[test]
    fn iframe_escapes_the_url() {
        assert_eq!(
            iframe_snippet("https://x.org/m/?batch=8&embed=1"),
            "<iframe src=\"https://x.org/m/?batch=8&amp;embed=1\" width=\"640\" height=\"480\" \
             style=\"border:0\" title=\"GPU memory budget calculator\" loading=\"lazy\"></iframe>"
        );
        assert!(!iframe_snippet("a\"><script>").contains("<script>"));
    }
}
