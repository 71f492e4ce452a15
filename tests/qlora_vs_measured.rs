//! A quantized frozen base against bitsandbytes: `fixtures/qlora_measured.tsv`
//! (written by `fixtures/measure_qlora.py`: tiny Llama, Qwen2 and GPT-2
//! models loaded in NF4 with and without double quantization and in int8 by
//! `transformers` with bitsandbytes 0.50 on the CPU, then PEFT's
//! `prepare_model_for_kbit_training`) holds the bytes of every parameter and
//! quantization-state storage; the model must give each to the byte.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::memory::quant::quantized_base;
use membudget::detailed::{Architecture, BaseQuant};

#[test]
fn quantized_base_matches_bitsandbytes_to_the_byte() {
    let text = include_str!("fixtures/qlora_measured.tsv");
    let mut rows = 0;
    for (line, c) in common::tsv_rows(text) {
        let n = |i: usize| c[i].parse::<u64>().unwrap();
        let (layers, hidden, heads, kv, ffn, vocab) = (n(1), n(2), n(3), n(4), n(5), n(7));
        let arch = match c[0] {
            "gpt2" => Architecture {
                ffn,
                ..Architecture::gpt2(layers, hidden, heads, vocab)
            },
            other => Architecture {
                qkv_bias: other == "qwen2",
                ..Architecture::llama(layers, hidden, heads, kv, ffn, vocab)
            },
        };
        let quant: BaseQuant = c[6].parse().unwrap();
        let (quantized, rest) = quantized_base(&arch, quant).unwrap();
        assert_eq!(quantized + 4 * rest, n(9), "{line}");
        rows += 1;
    }
    assert_eq!(rows, 8);
}
