//! litgpt's own config_hub fine-tuning files against the peak memory litgpt
//! publishes for them (`config_hub/finetune/README.md`, measured on an A10G
//! as `torch.cuda.max_memory_allocated`, GB = 10⁹ bytes; bf16-true,
//! Alpaca2k, `max_seq_length` 512). The files are read from
//! `../shared/trainer_configs/litgpt/config_hub/finetune/` when that folder
//! is beside the repository (CI has it). No figure is fitted to these rows:
//! the test holds the model's `peak` to the errors it reaches today (the
//! table in docs/validation.md, "litgpt's published peaks"), so that a change
//! that moves them must say so. The QLoRA rows are under-stated by 21–28 %:
//! a known gap (the measured mechanisms and what is left are in that
//! section), held here, not hidden.
#![cfg(not(target_arch = "wasm32"))]

use std::path::Path;
use std::process::Command;

/// (config file, published peak in GB, the lowest and highest error, in
/// per cent, the model is held to).
const PUBLISHED: &[(&str, f64, f64, f64)] = &[
    ("tiny-llama/full", 14.10, -5.0, 0.0),
    ("tiny-llama/lora", 13.50, 0.0, 6.0),
    ("tiny-llama/qlora", 16.24, -22.0, 0.0),
    ("llama-2-7b/lora", 19.77, -4.0, 0.0),
    ("llama-2-7b/qlora", 13.68, -29.0, 0.0),
    ("llama-3-8b/lora", 19.73, -1.0, 0.0),
    ("llama-3-8b/qlora", 17.41, -26.0, 0.0),
    ("llama-3.1-8b/lora", 19.73, -1.0, 0.0),
    ("llama-3.1-8b/qlora", 17.41, -26.0, 0.0),
    ("mistral-7b/lora", 20.66, -2.0, 0.0),
    ("mistral-7b/qlora", 14.29, -28.5, 0.0),
];

fn peak_gb(file: &Path) -> f64 {
    let out = Command::new(env!("CARGO_BIN_EXE_membudget"))
        .arg("--from")
        .arg(file)
        .args(["--gpu", "a10g", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["peak"].as_f64().unwrap() / 1e9
}

#[test]
fn litgpt_config_hub_peaks_within_the_documented_errors() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/trainer_configs/litgpt/config_hub/finetune");
    if !dir.is_dir() {
        eprintln!("skipped: ../shared/trainer_configs is not beside the repository");
        return;
    }
    let mut failures = Vec::new();
    for &(name, published, low, high) in PUBLISHED {
        let got = peak_gb(&dir.join(format!("{name}.yaml")));
        let err = (got / published - 1.0) * 100.0;
        eprintln!("{name}: {got:.2} GB vs {published} GB published ({err:+.1} %)");
        if !(low..=high).contains(&err) {
            failures.push(format!("{name}: {err:+.1} % outside [{low}, {high}]"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
