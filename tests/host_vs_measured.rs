//! The host's issuing of eager PyTorch's kernels against its measurement:
//! `fixtures/ops_measured.tsv`, written by `fixtures/measure_ops.py`
//! (`transformers`' `LlamaDecoderLayer`, eager and compiled, whole and
//! with PEFT's LoRA). The model's table
//! ([`membudget::detailed::time::steptime::host::LAYER_STEP`]) must be the
//! measurement, row for row, and each row's kernels the sum of its
//! operators.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::time::steptime::host::{HostRow, LAYER_STEP};

/// The fixture's rows as the model's, and each pass's operators summed.
fn measured() -> Vec<HostRow> {
    common::tsv_rows(include_str!("fixtures/ops_measured.tsv"))
        .map(|(line, c)| {
            assert_eq!(c.len(), 7, "{line}");
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let sum = |ops: &str| -> u64 {
                ops.split(',')
                    .map(|o| o.rsplit_once(':').unwrap().1.parse::<u64>().unwrap())
                    .sum()
            };
            assert_eq!(sum(c[5]), n(2), "{line}: forward operators");
            assert_eq!(sum(c[6]), n(3), "{line}: backward operators");
            let lora = match c[1] {
                "full" => 0,
                "lora-q" => 1,
                "lora-all" => 7,
                v => panic!("{line}: variant {v}"),
            };
            HostRow {
                compiled: c[0] == "compiled",
                lora_targets: lora,
                forward_kernels: n(2),
                backward_kernels: n(3),
                host_us: c[4].parse().unwrap(),
            }
        })
        .collect()
}

#[test]
fn the_table_is_the_measurement() {
    let rows = measured();
    assert_eq!(rows.len(), LAYER_STEP.len());
    for r in &rows {
        assert!(LAYER_STEP.contains(r), "{r:?} is not in LAYER_STEP");
    }
}

/// What the measurement says beyond the table: the eager layer's matrix
/// multiplies are 7 forward and 14 backward (a weight's two gradient
/// products), LoRA's frozen base drops the weight gradients' seven, and
/// inductor leaves the matrix multiplies alone and fuses the rest.
#[test]
fn the_operators_as_the_code_runs_them() {
    let text = include_str!("fixtures/ops_measured.tsv");
    let field = |profile: &str, variant: &str, col: usize, op: &str| -> u64 {
        let (_, c) = common::tsv_rows(text)
            .find(|(_, c)| c[0] == profile && c[1] == variant)
            .unwrap();
        c[col]
            .split(',')
            .find_map(|o| o.strip_prefix(&format!("{op}:")))
            .map_or(0, |v| v.parse().unwrap())
    };
    assert_eq!(field("eager", "full", 5, "mm"), 7);
    assert_eq!(field("eager", "full", 6, "mm"), 14);
    assert_eq!(field("eager", "lora-q", 6, "mm"), 7 + 4);
    assert_eq!(field("compiled", "full", 5, "mm"), 7);
    assert!(field("compiled", "full", 5, "fused") < field("eager", "full", 5, "mul"));
}
