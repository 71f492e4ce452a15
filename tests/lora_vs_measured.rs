//! LoRA with PEFT against memory measured in PyTorch: `fixtures/lora_measured.tsv`,
//! written by `fixtures/measure_lora.py` (tiny Llama models, fp32 and bf16,
//! eager and SDPA, ranks 4–32, targets q,v / q,k,v,o / gate,up,down / all).
//! The "hf" profile must give the frozen and trainable parameters, the
//! parameter, gradient and AdamW bytes exactly (PEFT keeps adapters in fp32)
//! and the saved activations within ±5 % on every row.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, Architecture, BaseQuant, DetailedConfig, LoraTargets};

#[test]
fn peft_lora_states_exact_and_activations_within_five_percent() {
    let text = include_str!("fixtures/lora_measured.tsv");
    let mut rows = 0;
    let mut worst: f64 = 0.0;
    for (line, c) in common::tsv_rows(text) {
        let n = |i: usize| c[i].parse::<u64>().unwrap();
        let f = |i: usize| c[i].parse::<f64>().unwrap();
        let arch = Architecture::llama(n(0), n(1), n(2), n(3), n(4), n(11));
        let mut cfg = DetailedConfig::new(arch, n(5), n(6));
        cfg.dropout = false;
        common::hf_cpu(&mut cfg, c[7], c[8]);
        // QLoRA rows: bitsandbytes' packed weights count half their values
        // as parameters there, and the quantization state is checked in
        // qlora_vs_measured.rs; here the adapters, their states and the
        // activations.
        let qlora = c[7] == "nf4";
        if qlora {
            cfg.base_quant = BaseQuant::Nf4 { double_quant: true };
        }
        cfg.lora_rank = Some(n(9));
        cfg.lora_targets = c[10].parse::<LoraTargets>().unwrap();
        if !qlora {
            assert_eq!(arch.params(), n(12), "{line}: frozen parameters");
        }
        assert_eq!(
            arch.lora_params(n(9), cfg.lora_targets),
            n(13),
            "{line}: adapters"
        );
        let b = estimate(&cfg).unwrap();
        if !qlora {
            assert_eq!(b.params, f(14), "{line}: parameter bytes");
        }
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
    assert_eq!(rows, 12);
}

/// The step's peak under PEFT's LoRA: `fixtures/lora_peak_measured.tsv`
/// (written by `fixtures/measure_peak_lora.py`, the two methods of the dense
/// peak table agreeing to the byte), first and later steps. With SDPA (the
/// default): within ±5 % and the right phase on every row. With eager
/// attention the model over-states the backward peak by up to 8 % (the
/// frozen base frees the layer's MLP tensors before the attention's
/// a·s² gradients appear, which the full-fine-tuning count does not see):
/// a known gap, held here within ±10 %.
#[test]
fn peft_lora_peak_within_five_percent_and_right_phase() {
    use membudget::detailed::memory::timeline;
    let text = include_str!("fixtures/lora_peak_measured.tsv");
    let mut rows = 0;
    let mut failures = Vec::new();
    for (line, c) in common::tsv_rows(text) {
        let n = |i: usize| c[i].parse::<u64>().unwrap();
        let arch = Architecture::llama(n(0), n(1), n(2), n(3), n(4), n(5));
        let (seq, micro, accum) = (n(6), n(7), n(8));
        let mut cfg = DetailedConfig::new(arch, seq, micro * accum);
        cfg.micro_batch = Some(micro);
        cfg.dropout = false;
        common::hf_cpu(&mut cfg, c[9], c[10]);
        cfg.lora_rank = Some(n(11));
        cfg.lora_targets = c[12].parse::<LoraTargets>().unwrap();
        let opts = common::step_options(c[14], c[13] == "True");
        let t = timeline(&cfg, &opts).unwrap();
        let want = n(16) as f64;
        let err = t.peak_bytes() / want - 1.0;
        let phase = t.peak_event().phase.name();
        eprintln!("{:+.2} % {phase:>9} vs {:>9}  {line}", err * 100.0, c[17]);
        let eager = c[10] == "eager";
        if (!eager && (err.abs() > 0.05 || phase != c[17])) || err.abs() > 0.10 {
            failures.push(format!("{line}: {:+.2} %, {phase}", err * 100.0));
        }
        rows += 1;
    }
    assert_eq!(rows, 12);
    assert!(failures.is_empty(), "{failures:#?}");
}
