//! Gemma 2 and Gemma 3 (text) against memory measured in PyTorch:
//! `fixtures/gemma_measured.tsv`, written by `fixtures/measure_gemma.py` from
//! tiny `Gemma2ForCausalLM` and `Gemma3ForCausalLM` models on the CPU. The
//! parameter count must match exactly and the saved activations within
//! ±5 % on every row (Gemma's four norms per layer, its RMSNorm's fp32
//! `1 + w`, Gemma 2's soft-capped attention and final logits, Gemma 3's q/k
//! norms).
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, Architecture, DetailedConfig};

#[test]
fn gemma_saved_bytes_within_five_percent() {
    let text = include_str!("fixtures/gemma_measured.tsv");
    let mut rows = 0;
    for (line, c) in common::tsv_rows(text) {
        let n = |i: usize| c[i].parse::<u64>().unwrap();
        let (layers, hidden, heads, kv, head_dim, ffn, vocab, seq, batch) =
            (n(1), n(2), n(3), n(4), n(5), n(6), n(7), n(8), n(9));
        let gemma2 = c[0] == "gemma2";
        let arch = Architecture {
            tied_embeddings: true,
            head_width: if head_dim * heads == hidden {
                0
            } else {
                head_dim
            },
            sandwich_norms: true,
            softcap: gemma2,
            qk_norm: !gemma2,
            ..Architecture::llama(layers, hidden, heads, kv, ffn, vocab)
        };
        assert_eq!(arch.params(), n(12), "{line}: parameters");
        let mut cfg = DetailedConfig::new(arch, seq, batch);
        cfg.dropout = false;
        common::hf_cpu(&mut cfg, c[10], c[11]);
        let got = estimate(&cfg).unwrap().activations;
        let want = n(13) as f64;
        let err = got / want - 1.0;
        eprintln!("{:+.3} % ({} B) {line}", err * 100.0, got - want);
        assert!(err.abs() <= 0.05, "{line}: {got} vs {want}");
        rows += 1;
    }
    assert_eq!(rows, 8);
}
