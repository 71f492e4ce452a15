//! Strategies shared by the property tests; each test binary uses some.
#![cfg(not(target_arch = "wasm32"))]
#![allow(dead_code)]

use membudget::budget::TrainingConfig;
use membudget::detailed::{Optimizer, Precision, Recompute};
use proptest::prelude::*;

/// Any configuration the core accepts.
pub fn any_config() -> impl Strategy<Value = TrainingConfig> {
    (
        0.1f64..=1000.0,
        1u32..=1024,
        128u32..=131_072,
        128u32..=65_536,
        1u32..=256,
        any::<bool>(),
    )
        .prop_map(
            |(params_b, batch, seq_len, hidden, layers, mixed_precision)| TrainingConfig {
                params_b,
                batch,
                seq_len,
                hidden,
                layers,
                mixed_precision,
            },
        )
}

/// Any storage precision.
pub fn any_precision() -> impl Strategy<Value = Precision> {
    prop::sample::select(vec![Precision::Fp32, Precision::Mixed, Precision::Bf16])
}

/// Any optimizer.
pub fn any_optimizer() -> impl Strategy<Value = Optimizer> {
    prop::sample::select(vec![
        Optimizer::AdamW,
        Optimizer::Sgd,
        Optimizer::SgdMomentum,
        Optimizer::Adam8bit,
    ])
}

/// Any recomputation setting.
pub fn any_recompute() -> impl Strategy<Value = Recompute> {
    prop::sample::select(vec![Recompute::None, Recompute::Selective, Recompute::Full])
}

/// The shape `tests/fixtures/measure_*.py` builds for a measured row: GPT-2
/// with its MLP width and enough positions for the sequence, or Llama.
pub fn measured_arch(
    family: &str,
    (layers, hidden, heads, kv_heads, ffn, vocab): (u64, u64, u64, u64, u64, u64),
    seq: u64,
) -> membudget::detailed::Architecture {
    use membudget::detailed::Architecture;
    match family {
        "gpt2" => Architecture {
            ffn,
            positions: seq.max(1024),
            ..Architecture::gpt2(layers, hidden, heads, vocab)
        },
        "llama" => Architecture::llama(layers, hidden, heads, kv_heads, ffn, vocab),
        other => panic!("unknown arch {other}"),
    }
}

/// The data rows of a measured table (`tests/fixtures/*.tsv`): comment lines
/// and the header left out; each row as its line and its tab-separated fields.
pub fn tsv_rows(text: &str) -> impl Iterator<Item = (&str, Vec<&str>)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|line| (line, line.split('\t').collect()))
}

/// The "hf" profile on the CPU with AdamW, as the measuring scripts run a
/// row: `dtype` `fp32` or 16-bit (`bf16`, and QLoRA's `nf4`, a bf16 model),
/// `attention` `eager` or SDPA.
pub fn hf_cpu(cfg: &mut membudget::detailed::DetailedConfig, dtype: &str, attention: &str) {
    use membudget::detailed::{AttentionKernel, Device, Profile};
    cfg.profile = Profile::Hf;
    cfg.device = Device::Cpu;
    cfg.optimizer = Optimizer::AdamW;
    cfg.precision = if dtype == "fp32" {
        Precision::Fp32
    } else {
        Precision::Bf16
    };
    cfg.attention = if attention == "eager" {
        AttentionKernel::Eager
    } else {
        AttentionKernel::Flash
    };
}
