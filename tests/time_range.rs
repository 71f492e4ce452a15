//! The step time's range ([`membudget::detailed::time::validation`]) rests
//! on docs/steptime.md's table of per-source errors: the code's table is
//! the document's, row by row (and `steptime_vs_published.rs` checks the
//! document's against the published rows themselves).

use membudget::detailed::time::validation::VALIDATION;

/// The document's per-source table: key, rows, median, worst, lowest and
/// highest error (fractions).
fn doc_table() -> Vec<(String, usize, [f64; 4])> {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/steptime.md")).unwrap();
    let start = doc
        .find("| source | rows | median error | worst error | lowest | highest |")
        .expect("docs/steptime.md has the per-source table");
    doc[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let c: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            let pct = |s: &str| s.trim_end_matches(" %").parse::<f64>().unwrap() / 100.0;
            (
                c[0].to_string(),
                c[1].parse().unwrap(),
                [pct(c[2]), pct(c[3]), pct(c[4]), pct(c[5])],
            )
        })
        .collect()
}

#[test]
fn the_code_s_table_is_the_document_s() {
    let doc = doc_table();
    assert_eq!(doc.len(), VALIDATION.len());
    for (v, (key, rows, [median, worst, lowest, highest])) in VALIDATION.iter().zip(&doc) {
        assert_eq!((v.source, v.rows), (key.as_str(), *rows));
        for (code, doc) in [
            (v.median, median),
            (v.worst, worst),
            (v.lowest, lowest),
            (v.highest, highest),
        ] {
            assert!((code - doc).abs() < 1e-12, "{key}: {code} vs {doc}");
        }
    }
}
