//! The core against the lesson's own Python, bit for bit: every row of
//! `fixtures/lesson_reference.tsv` (written by `lesson_reference.py`, which
//! runs the lesson's `memory_budget_gb` verbatim in CPython).

use membudget::budget::{estimate, Term, TrainingConfig};

#[test]
fn every_python_row_matches_bit_for_bit() {
    let text = include_str!("fixtures/lesson_reference.tsv");
    let mut rows = 0;
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 13, "malformed fixture row: {line}");
        let cfg = TrainingConfig {
            params_b: cols[0].parse().unwrap(),
            batch: cols[1].parse().unwrap(),
            seq_len: cols[2].parse().unwrap(),
            hidden: cols[3].parse().unwrap(),
            layers: cols[4].parse().unwrap(),
            mixed_precision: cols[5] == "1",
        };
        let b = estimate(&cfg).unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
        let ours = Term::ALL.map(|t| b.gb(t)).into_iter().chain([b.total_gb()]);
        for (i, got) in ours.enumerate() {
            let want: f64 = cols[6 + i].parse().unwrap();
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "{cfg:?} column {i}: {got} vs {want}"
            );
        }
        assert_eq!(
            b.lesson_table(),
            cols[12].replace('|', "\n") + "\n",
            "{cfg:?}"
        );
        rows += 1;
    }
    assert_eq!(rows, 2007);
}
