//! config.json import against `transformers`: each published config in
//! `fixtures/configs/hub/`, and the same config as `transformers` 5.25 writes
//! it (`fixtures/configs/saved/`, from `fixtures/count_params.py`), must give
//! the parameter count `transformers` itself counts on the meta device
//! (`fixtures/param_counts.tsv`), and the published models must equal their
//! presets.
#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{import_config, preset};
use std::path::Path;

fn counts() -> Vec<(String, u64, u64, u64)> {
    include_str!("fixtures/param_counts.tsv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            (
                c[0].to_string(),
                c[1].parse().unwrap(),
                c[2].parse().unwrap(),
                c[3].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn both_formats_give_transformers_parameter_count() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs");
    let rows = counts();
    assert!(rows.len() >= 9);
    for (name, params, buffers, tensors) in rows {
        for format in ["hub", "saved"] {
            let path = dir.join(format).join(format!("{name}.json"));
            let json = std::fs::read_to_string(&path).unwrap();
            let imported =
                import_config(&json).unwrap_or_else(|e| panic!("{name} ({format}): {e}"));
            let a = imported.arch;
            assert_eq!(a.params(), params, "{name} ({format})");
            assert_eq!(a.buffers(), buffers, "{name} ({format}) buffers");
            assert_eq!(a.param_tensors(), tensors, "{name} ({format}) tensors");
            if let Some(p) = preset(&name) {
                assert_eq!(a, p.arch, "{name} ({format}) equals its preset");
            }
        }
    }
}

#[test]
fn notes_say_what_was_ignored() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configs/hub");
    let json = std::fs::read_to_string(dir.join("deepseek-v3.json")).unwrap();
    let imported = import_config(&json).unwrap();
    assert_eq!(imported.model_type, "deepseek_v3");
    assert!(imported
        .notes
        .iter()
        .any(|n| n.contains("quantization_config")));
    assert!(imported.notes.iter().any(|n| n.contains("bfloat16")));
}
