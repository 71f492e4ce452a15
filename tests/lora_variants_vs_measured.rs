//! LoRA as trainers hold it, against PyTorch: `fixtures/lora_variants_measured.tsv`,
//! written by `fixtures/measure_lora_variants.py` (tiny Llama models on the
//! CPU: PEFT with fp32 adapters or adapters in the model's dtype, with and
//! without LoRA dropout; torchtune's own `LoRALinear`, bf16 adapters, with
//! and without its dropout). The trainable parameters and their parameter,
//! gradient and AdamW bytes must be exact, the bytes a forward pass saves
//! within ±5 %, and each step's peak within ±5 % in its phase.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::config::LoraDtype;
use membudget::detailed::{estimate, DetailedConfig, LoraTargets, Step};

/// Rows the table must have.
const MIN_ROWS: usize = 32;

struct Row {
    /// The fixture's line, the configuration and step, the measured peak.
    m: common::Measured,
    values: [f64; 5],
}

fn rows() -> Vec<Row> {
    common::tsv_rows(include_str!("fixtures/lora_variants_measured.tsv"))
        .map(|(line, c)| {
            assert_eq!(c.len(), 25, "{line}");
            assert_eq!(c[24], "1", "{line}: the two methods disagree");
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let seq = n(7);
            let arch = common::measured_arch("llama", (n(1), n(2), n(3), n(4), n(5), n(6)), seq);
            let mut cfg = DetailedConfig::new(arch, seq, n(8));
            cfg.dropout = false;
            common::hf_cpu(&mut cfg, c[9], c[10]);
            cfg.lora_rank = Some(n(11));
            cfg.lora_targets = c[12].parse::<LoraTargets>().unwrap();
            cfg.lora_dtype = c[13].parse::<LoraDtype>().unwrap();
            cfg.lora_dropout = c[14].parse().unwrap();
            Row {
                m: common::Measured {
                    line: line.to_string(),
                    cfg,
                    opts: common::step_options(c[20], false),
                    peak: n(22) as f64,
                    phase: c[23].to_string(),
                },
                values: [15, 16, 17, 18, 19].map(|i| n(i) as f64),
            }
        })
        .collect()
}

/// The adapters' count and their parameter, gradient and AdamW bytes to
/// the byte; the saved activations within ±5 %.
#[test]
fn states_exact_and_saved_bytes_within_5_percent() {
    let rows = rows();
    assert!(rows.len() >= MIN_ROWS);
    let mut worst: f64 = 0.0;
    for r in rows.iter().filter(|r| r.m.opts.step == Step::First) {
        let [trainable, params, grads, state, saved] = r.values;
        let lora =
            r.m.cfg
                .arch
                .lora_params(r.m.cfg.lora_rank.unwrap(), r.m.cfg.lora_targets);
        assert_eq!(lora as f64, trainable, "{}", r.m.line);
        let b = estimate(&r.m.cfg).unwrap();
        assert_eq!(b.params, params, "{}: parameter bytes", r.m.line);
        assert_eq!(b.grads, grads, "{}: gradient bytes", r.m.line);
        assert_eq!(b.optimizer_state, state, "{}: AdamW bytes", r.m.line);
        let err = b.activations / saved - 1.0;
        eprintln!(
            "{:+.3} % ({} B) {}",
            err * 100.0,
            b.activations - saved,
            r.m.line
        );
        worst = worst.max(err.abs());
        assert!(
            err.abs() <= 0.05,
            "{}: {} vs {saved}",
            r.m.line,
            b.activations
        );
    }
    eprintln!("worst {:.3} %", worst * 100.0);
}

/// Each step's peak within ±5 % in its phase.
#[test]
fn peaks_within_5_percent_in_the_right_phase() {
    let rows = rows();
    common::assert_peaks(rows.iter().map(|r| &r.m), 0.05);
}

/// bf16 adapters halve the adapters' states against PEFT's fp32 ones, and
/// LoRA dropout adds to what forward saves; both refused where they cannot
/// be priced.
#[test]
fn the_settings_move_the_right_terms_and_refuse_in_words() {
    use membudget::detailed::{preset, Precision, Profile};
    let mut cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 2048, 1);
    cfg.profile = Profile::Hf;
    cfg.precision = Precision::Bf16;
    cfg.lora_rank = Some(16);
    cfg.lora_targets = "all".parse().unwrap();
    let fp32 = estimate(&cfg).unwrap();
    cfg.lora_dtype = LoraDtype::Bf16;
    let bf16 = estimate(&cfg).unwrap();
    assert_eq!(bf16.grads * 2.0, fp32.grads);
    assert!(bf16.activations < fp32.activations);
    cfg.lora_dropout = 0.05;
    let dropout = estimate(&cfg).unwrap();
    assert!(dropout.activations > bf16.activations);
    assert_eq!(dropout.grads, bf16.grads);
    cfg.lora_dropout = 1.0;
    assert!(estimate(&cfg).unwrap_err().0.contains("probability"));
    cfg.lora_dropout = 0.05;
    cfg.profile = Profile::Fused;
    assert!(estimate(&cfg).unwrap_err().0.contains("hf profile"));
    cfg.profile = Profile::Hf;
    cfg.precision = Precision::Fp32;
    assert!(estimate(&cfg).unwrap_err().0.contains("16-bit"));
    // Adapters on the output layer and the embedding: their parameters
    // r·(V + h) each, refused on a tied table.
    cfg.precision = Precision::Bf16;
    let layers = estimate(&cfg).unwrap();
    cfg.lora_targets = "all,lm_head,embed".parse().unwrap();
    assert_eq!(
        cfg.lora_targets.names(),
        "q,k,v,o,gate,up,down,lm_head,embed"
    );
    let outer = estimate(&cfg).unwrap();
    let a = &cfg.arch;
    assert_eq!(
        outer.grads - layers.grads,
        (2 * 16 * (a.vocab + a.hidden)) as f64 * 2.0
    );
    cfg.arch = preset("llama-3.2-1b").unwrap().arch;
    assert!(estimate(&cfg).unwrap_err().0.contains("untied"));
}

/// The rows of docs/validation.md's table, from the fixture and the model.
fn table_lines() -> Vec<String> {
    rows()
        .iter()
        .map(|r| {
            let c: Vec<&str> = r.m.line.split('\t').collect();
            let t = membudget::detailed::timeline(&r.m.cfg, &r.m.opts).unwrap();
            let b = estimate(&r.m.cfg).unwrap();
            format!(
                "| {} L{} h{} s{} b{} {} {} r{} {} | {} | {} | {} | {:.3} MB | {:.3} MB | {:.2} MB | {:.2} MB | {:+.2} % |",
                c[0],
                c[1],
                c[2],
                c[7],
                c[8],
                c[9],
                c[10],
                c[11],
                c[12],
                c[13],
                c[14],
                c[20],
                r.values[4] / 1e6,
                b.activations / 1e6,
                r.m.peak / 1e6,
                t.peak_bytes() / 1e6,
                (t.peak_bytes() / r.m.peak - 1.0) * 100.0,
            )
        })
        .collect()
}

validation_table_tests!(table_lines);
