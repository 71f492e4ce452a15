//! Mixture-of-experts models ("hf" profile, CPU) against memory measured in
//! PyTorch: every row of `fixtures/moe_measured.tsv`, written by
//! `fixtures/measure_moe.py` from tiny `MixtralForCausalLM` and
//! `Qwen3MoeForCausalLM` models and a small `DeepseekV3ForCausalLM` (latent
//! attention, a dense layer first, a shared expert, grouped sigmoid router),
//! with both expert implementations.
//! Parameters, gradients and AdamW state must match to the byte, saved
//! activations within ±5 % (the bar) and, as it stands, within 16
//! bytes: exact on every row but top-1 routing, where it is 8 bytes short.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, Architecture, DetailedConfig, ExpertsImpl, Mla, Moe, Router};

struct Row {
    line: String,
    cfg: DetailedConfig,
    n_params: u64,
    measured: [f64; 4],
    busiest: f64,
}

fn rows() -> Vec<Row> {
    let text = include_str!("fixtures/moe_measured.tsv");
    let mut out = Vec::new();
    for (line, c) in common::tsv_rows(text) {
        assert_eq!(c.len(), 21, "{line}");
        let num = |i: usize| c[i].parse::<u64>().unwrap();
        let (layers, hidden, heads, kv, experts, top_k, effn, vocab, seq, batch) = (
            num(1),
            num(2),
            num(3),
            num(4),
            num(5),
            num(6),
            num(7),
            num(8),
            num(9),
            num(10),
        );
        let qwen = c[0].starts_with("qwen3_moe");
        let deepseek = c[0] == "deepseek_v3";
        let qwen2 = c[0] == "qwen2_moe";
        let glm = c[0].starts_with("glm4_moe");
        let oss = c[0] == "gpt_oss";
        let llama4 = c[0] == "llama4";
        let router = match c[0] {
            "llama4" => Router::Llama4,
            "gpt_oss" => Router::GptOss,
            "glm4_moe" | "glm4_moe-qknorm" => Router::DeepSeek,
            "qwen3_moe" | "qwen3_moe-raw" => Router::Qwen,
            "qwen2_moe" => Router::Qwen2,
            "deepseek_v3" => Router::DeepSeek,
            _ => Router::Mixtral,
        };
        // measure_moe.py's DeepSeek shape: latent attention (64, 32, rope
        // 16, nope 32, value 32), one dense layer of MLP width 4F first, one
        // shared expert.
        // measure_moe.py's Qwen2-MoE: a shared expert of width 2F behind its
        // gate, q/k/v biases, norm_topk_prob off (Qwen2MoeConfig's default).
        // measure_moe.py's GLM-4.5: DeepSeek's router and layout (a dense
        // layer of width 4F first, one shared expert) with grouped-query
        // attention of head width 128, q/k/v biases, q/k norms on "-qknorm".
        let arch = Architecture {
            // measure_moe.py's Llama 4: weightless q/k norms, a shared
            // expert of the experts' width.
            qk_norm: qwen || c[0] == "glm4_moe-qknorm" || llama4,
            qkv_bias: qwen2 || glm || oss,
            // measure_moe.py's gpt-oss: sinks, biases everywhere, eager.
            attention_sinks: oss,
            head_width: if glm { 128 } else { 0 },
            // Half of each head rotated (Glm4MoeConfig's default).
            rotary_dims: if glm { 64 } else { 0 },
            mla: deepseek.then_some(Mla {
                q_rank: 64,
                kv_rank: 32,
                rope_dim: 16,
                nope_dim: 32,
                v_dim: 32,
            }),
            moe: Some(Moe {
                experts,
                top_k,
                expert_ffn: effn,
                shared_ffn: match c[0] {
                    "deepseek_v3" | "glm4_moe" | "glm4_moe-qknorm" => effn,
                    "qwen2_moe" => 2 * effn,
                    "llama4" => effn,
                    _ => 0,
                },
                first_dense: u64::from(deepseek || glm),
                router,
                normalized: !c[0].ends_with("-raw") && !qwen2,
            }),
            ..Architecture::llama(
                layers,
                hidden,
                heads,
                kv,
                if deepseek || glm || llama4 {
                    4 * effn
                } else {
                    effn
                },
                vocab,
            )
        };
        let mut cfg = DetailedConfig::new(arch, seq, batch);
        cfg.dropout = false;
        common::hf_cpu(&mut cfg, c[11], c[12]);
        cfg.experts_impl = if c[13] == "eager" {
            ExpertsImpl::Loop
        } else {
            ExpertsImpl::Grouped
        };
        let f = |i: usize| c[i].parse::<f64>().unwrap();
        out.push(Row {
            line: line.to_string(),
            cfg,
            n_params: num(14),
            measured: [f(15), f(16), f(17), f(18)],
            busiest: f(20),
        });
    }
    out
}

#[test]
fn moe_states_and_activations_match_to_the_byte() {
    let rows = rows();
    assert!(rows.len() >= 10, "at least 10 MoE rows");
    let mut worst: f64 = 0.0;
    for r in &rows {
        assert_eq!(
            r.cfg.arch.params(),
            r.n_params,
            "{}: parameter count",
            r.line
        );
        let b = estimate(&r.cfg).unwrap();
        let [params, grads, opt, acts] = r.measured;
        assert_eq!(b.params, params, "{}: parameter bytes", r.line);
        assert_eq!(b.grads, grads, "{}: gradient bytes", r.line);
        assert_eq!(b.optimizer_state, opt, "{}: optimizer bytes", r.line);
        let err = b.activations / acts - 1.0;
        eprintln!("{:+.2} %  {}", err * 100.0, r.line);
        worst = worst.max(err.abs());
        assert!(err.abs() <= 0.05, "{}: {} vs {acts}", r.line, b.activations);
        assert!(
            (b.activations - acts).abs() < 16.0,
            "{}: {} vs {acts}",
            r.line,
            b.activations
        );
    }
    eprintln!("worst {:.2} %", worst * 100.0);
}

/// Random routing is uneven (the busiest expert took up to half of a layer's
/// assignments), yet the prediction, which assumes balance, holds: every
/// saved tensor of the experts scales with the n·k assignments, not with any
/// one expert's share.
#[test]
fn uneven_routing_was_measured_and_does_not_matter() {
    let rows = rows();
    let uneven = rows
        .iter()
        .filter(|r| {
            let m = r.cfg.arch.moe.unwrap();
            r.busiest > 1.5 / m.experts as f64
        })
        .count();
    assert!(uneven >= rows.len() / 2, "most rows route unevenly");
}
