//! The four QLoRA paths (`--quant-path peft|bnb|torchao|fsdp-qlora`)
//! against PyTorch: `fixtures/qlora_paths_measured.tsv`, written by
//! `fixtures/measure_qlora_paths.py` (tiny bf16 Llama models on the CPU:
//! bitsandbytes 0.50 through transformers with and without PEFT's
//! `prepare_model_for_kbit_training`, with `quant_storage=bfloat16` as
//! FSDP-QLoRA stores it, and torchao's `NF4Tensor` under torchtune's
//! `LoRALinear`). The frozen base (codes, quantization state and the
//! unquantized weights) and the adapters' bytes must be exact, the bytes a
//! forward pass saves within ±5 %, each step's peak within ±5 % in its
//! phase.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::config::LoraDtype;
use membudget::detailed::memory::quant::quantized_base_on;
use membudget::detailed::{estimate, BaseQuant, DetailedConfig, LoraTargets, QuantPath, Step};

/// Rows the table must have: 2 shapes × 4 paths × 2 steps.
const ROWS: usize = 16;

struct Row {
    /// The fixture's line, the configuration and step, the measured peak.
    m: common::Measured,
    /// trainable, base bytes, adapter bytes, AdamW bytes, saved bytes.
    values: [f64; 5],
}

fn rows() -> Vec<Row> {
    common::tsv_rows(include_str!("fixtures/qlora_paths_measured.tsv"))
        .map(|(line, c)| {
            assert_eq!(c.len(), 21, "{line}");
            assert_eq!(c[20], "1", "{line}: the two methods disagree");
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let seq = n(7);
            let arch = common::measured_arch("llama", (n(1), n(2), n(3), n(4), n(5), n(6)), seq);
            let mut cfg = DetailedConfig::new(arch, seq, n(8));
            cfg.dropout = false;
            common::hf_cpu(&mut cfg, "bf16", "sdpa");
            cfg.lora_rank = Some(n(9));
            cfg.lora_targets = c[10].parse::<LoraTargets>().unwrap();
            cfg.base_quant = BaseQuant::Nf4 { double_quant: true };
            cfg.quant_path = c[0].parse::<QuantPath>().unwrap();
            cfg.lora_dtype = if cfg.quant_path == QuantPath::Peft {
                LoraDtype::Fp32
            } else {
                LoraDtype::Bf16
            };
            Row {
                m: common::Measured {
                    line: line.to_string(),
                    cfg,
                    opts: common::step_options(c[16], false),
                    peak: n(18) as f64,
                    phase: c[19].to_string(),
                },
                values: [11, 12, 13, 14, 15].map(|i| n(i) as f64),
            }
        })
        .collect()
}

/// The frozen base as each path stores it, to the byte; the adapters and
/// their AdamW state to the byte; the saved activations within ±5 %.
#[test]
fn base_exact_and_saved_bytes_within_5_percent() {
    let rows = rows();
    let mut worst: f64 = 0.0;
    for r in rows.iter().filter(|r| r.m.opts.step == Step::First) {
        let [trainable, base, adapters, state, saved] = r.values;
        let c = &r.m.cfg;
        let lora = c.arch.lora_params(c.lora_rank.unwrap(), c.lora_targets);
        assert_eq!(lora as f64, trainable, "{}", r.m.line);
        let (q, rest) = quantized_base_on(&c.arch, c.base_quant, c.quant_path, 2).unwrap();
        assert_eq!((q + rest) as f64, base, "{}: frozen base bytes", r.m.line);
        let b = estimate(c).unwrap();
        assert_eq!(b.params, base + adapters, "{}: parameter bytes", r.m.line);
        assert_eq!(b.grads, adapters, "{}: gradient bytes", r.m.line);
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
    assert_eq!(rows.len(), ROWS);
}

/// Each step's peak within ±5 % in its phase.
#[test]
fn peaks_within_5_percent_in_the_right_phase() {
    let rows = rows();
    common::assert_peaks(rows.iter().map(|r| &r.m), 0.05);
}

/// On Llama 3.1 8B: PEFT's fp32 casts cost 2 bytes more per unquantized
/// weight; torchao's state (bf16 factors, no code tables per tensor) is a
/// little smaller than bitsandbytes'; FSDP-QLoRA stores what bitsandbytes
/// does on one GPU, and over 8 ranks keeps its quantization state whole on
/// every rank while the codes are sharded. Paths refuse what their code
/// cannot quantize, in words.
#[test]
fn paths_order_and_fsdp_qlora_replicates_the_state() {
    use membudget::detailed::memory::quant::quant_state_bytes;
    use membudget::detailed::{preset, Framework, Precision, Profile};
    let mut cfg = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 2048, 1);
    cfg.profile = Profile::Hf;
    cfg.precision = Precision::Bf16;
    cfg.lora_rank = Some(16);
    cfg.base_quant = BaseQuant::Nf4 { double_quant: true };
    let params = |cfg: &DetailedConfig, path| {
        let mut c = *cfg;
        c.quant_path = path;
        estimate(&c).unwrap().params
    };
    let (peft, bnb, ao) = (
        params(&cfg, QuantPath::Peft),
        params(&cfg, QuantPath::Bnb),
        params(&cfg, QuantPath::Torchao),
    );
    // PEFT's casts: the embedding, output layer and norms at 4 bytes, not 2.
    let rest = 2 * 128_256 * 4096 + 65 * 4096;
    assert_eq!(peft - bnb, 2.0 * rest as f64);
    assert!(ao < bnb && bnb - ao < 0.01 * bnb, "{ao} {bnb}");
    assert_eq!(params(&cfg, QuantPath::FsdpQlora), bnb);
    // Over 8 ranks the codes and the 16-bit rest are sharded, the state is not.
    cfg.framework = Framework::Fsdp2 {
        reshard_after_forward: true,
    };
    cfg.parallel.dp = 8;
    cfg.parallel.zero = 3;
    cfg.batch = 8;
    let fsdp = params(&cfg, QuantPath::FsdpQlora);
    let bnb8 = params(&cfg, QuantPath::Bnb);
    let state = quant_state_bytes(&cfg.arch, cfg.base_quant) as f64;
    assert!(
        (fsdp - bnb8 - state * 7.0 / 8.0).abs() < 1.0,
        "{fsdp} {bnb8} {state}"
    );
    // Refusals in words.
    for (path, quant) in [
        (QuantPath::Torchao, BaseQuant::Int8),
        (
            QuantPath::Torchao,
            BaseQuant::Nf4 {
                double_quant: false,
            },
        ),
        (QuantPath::FsdpQlora, BaseQuant::Int8),
        (QuantPath::Bnb, BaseQuant::None),
    ] {
        let mut c = cfg;
        c.quant_path = path;
        c.base_quant = quant;
        let e = estimate(&c).unwrap_err().to_string();
        assert!(
            e.contains("quant") || e.contains("4-bit") || e.contains("4 bits"),
            "{e}"
        );
    }
}

fn table_lines() -> Vec<String> {
    rows()
        .iter()
        .map(|r| {
            let c: Vec<&str> = r.m.line.split('\t').collect();
            let t = membudget::detailed::timeline(&r.m.cfg, &r.m.opts).unwrap();
            let b = estimate(&r.m.cfg).unwrap();
            format!(
                "| {} | L{} h{} s{} b{} r{} {} | {} | {:.3} MB | {:.3} MB | {:.3} MB | {:.3} MB | {:.2} MB | {:.2} MB | {:+.2} % | {} |",
                c[0],
                c[1],
                c[2],
                c[7],
                c[8],
                c[9],
                c[10],
                c[16],
                r.values[1] / 1e6,
                (b.params - r.values[2]) / 1e6,
                r.values[4] / 1e6,
                b.activations / 1e6,
                r.m.peak / 1e6,
                t.peak_bytes() / 1e6,
                (t.peak_bytes() / r.m.peak - 1.0) * 100.0,
                r.m.phase,
            )
        })
        .collect()
}

validation_table_tests!(table_lines);
