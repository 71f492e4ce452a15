//! LoRA with PEFT against memory measured in PyTorch: `fixtures/lora_measured.tsv`,
//! written by `fixtures/measure_lora.py` (tiny Llama models, fp32 and bf16,
//! eager and SDPA, ranks 4–32, targets q,v / q,k,v,o / gate,up,down / all).
//! The "hf" profile must give the frozen and trainable parameters, the
//! parameter, gradient and AdamW bytes exactly (PEFT keeps adapters in fp32)
//! and the saved activations within ±5 % on every row.
#![cfg(not(target_arch = "wasm32"))]

use membudget::detailed::{
    estimate, Architecture, AttentionKernel, DetailedConfig, Device, LoraTargets, Optimizer,
    Precision, Profile,
};

#[test]
fn peft_lora_states_exact_and_activations_within_five_percent() {
    let text = include_str!("fixtures/lora_measured.tsv");
    let mut rows = 0;
    let mut worst: f64 = 0.0;
    for line in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        let n = |i: usize| c[i].parse::<u64>().unwrap();
        let f = |i: usize| c[i].parse::<f64>().unwrap();
        let arch = Architecture::llama(n(0), n(1), n(2), n(3), n(4), n(11));
        let mut cfg = DetailedConfig::new(arch, n(5), n(6));
        cfg.profile = Profile::Hf;
        cfg.device = Device::Cpu;
        cfg.optimizer = Optimizer::AdamW;
        cfg.dropout = false;
        cfg.precision = if c[7] == "fp32" {
            Precision::Fp32
        } else {
            Precision::Bf16
        };
        cfg.attention = if c[8] == "eager" {
            AttentionKernel::Eager
        } else {
            AttentionKernel::Flash
        };
        cfg.lora_rank = Some(n(9));
        cfg.lora_targets = c[10].parse::<LoraTargets>().unwrap();
        assert_eq!(arch.params(), n(12), "{line}: frozen parameters");
        assert_eq!(
            arch.lora_params(n(9), cfg.lora_targets),
            n(13),
            "{line}: adapters"
        );
        let b = estimate(&cfg).unwrap();
        assert_eq!(b.params, f(14), "{line}: parameter bytes");
        assert_eq!(b.grads, f(15), "{line}: gradient bytes");
        assert_eq!(b.master_weights, 0.0, "{line}: no master copy");
        assert_eq!(b.optimizer_state, f(16), "{line}: AdamW bytes");
        let err = b.activations / f(17) - 1.0;
        eprintln!("{:+.3} % ({} B) {line}", err * 100.0, b.activations - f(17));
        worst = worst.max(err.abs());
        assert!(err.abs() <= 0.05, "{line}: {} vs {}", b.activations, f(17));
        rows += 1;
    }
    eprintln!("worst {:.3} %", worst * 100.0);
    assert_eq!(rows, 10);
}
