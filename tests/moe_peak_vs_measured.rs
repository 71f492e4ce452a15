//! The step timeline of mixture-of-experts models against the peak of live
//! memory measured in PyTorch: `fixtures/moe_peak_measured.tsv`, written by
//! `fixtures/measure_peak_moe.py` (tiny Mixtral, Qwen2-MoE, Qwen3-MoE, GLM-4.5 and gpt-oss models, both
//! expert implementations, loop and foreach AdamW, first and later steps;
//! two measuring methods that agree to the byte on every row). The "hf"
//! profile on the CPU must give the peak within ±5 % and the right phase.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{timeline, Architecture, DetailedConfig, ExpertsImpl, Moe, Router};

#[test]
fn moe_peak_within_five_percent_and_right_phase() {
    let text = include_str!("fixtures/moe_peak_measured.tsv");
    let mut rows = 0;
    let mut worst: f64 = 0.0;
    let mut failures = Vec::new();
    for (line, c) in common::tsv_rows(text) {
        let n = |i: usize| c[i].parse::<u64>().unwrap();
        let qwen = c[0] == "qwen3_moe";
        // Qwen2-MoE: a shared expert of width 2F behind its gate, q/k/v
        // biases, top-k weights not renormalised (its config's default).
        let qwen2 = c[0] == "qwen2_moe";
        // GLM-4.5: DeepSeek's router, one shared expert, a dense layer of
        // width 4F first, heads of 128 with q/k/v biases, half rotated.
        let glm = c[0] == "glm4_moe";
        let oss = c[0] == "gpt_oss";
        // Llama 4: weightless q/k norms, a shared expert of the experts'
        // width, every expert on every token.
        let llama4 = c[0] == "llama4";
        let arch = Architecture {
            qk_norm: qwen || llama4,
            qkv_bias: qwen2 || glm || oss,
            attention_sinks: oss,
            head_width: if glm { 128 } else { 0 },
            rotary_dims: if glm { 64 } else { 0 },
            moe: Some(Moe {
                experts: n(5),
                top_k: n(6),
                expert_ffn: n(7),
                shared_ffn: match c[0] {
                    "qwen2_moe" => 2 * n(7),
                    "glm4_moe" | "llama4" => n(7),
                    _ => 0,
                },
                first_dense: u64::from(glm),
                router: match c[0] {
                    "llama4" => Router::Llama4,
                    "glm4_moe" => Router::DeepSeek,
                    "gpt_oss" => Router::GptOss,
                    "qwen3_moe" => Router::Qwen,
                    "qwen2_moe" => Router::Qwen2,
                    _ => Router::Mixtral,
                },
                normalized: !qwen2 && !llama4,
            }),
            ..Architecture::llama(
                n(1),
                n(2),
                n(3),
                n(4),
                if glm || llama4 { 4 * n(7) } else { n(7) },
                n(8),
            )
        };
        assert_eq!(arch.params(), n(17), "{line}: parameters");
        let (seq, micro, accum) = (n(9), n(10), n(11));
        let mut cfg = DetailedConfig::new(arch, seq, micro * accum);
        cfg.micro_batch = Some(micro);
        cfg.dropout = false;
        common::hf_cpu(&mut cfg, c[12], c[13]);
        cfg.experts_impl = if c[14] == "eager" {
            ExpertsImpl::Loop
        } else {
            ExpertsImpl::Grouped
        };
        let opts = common::step_options(c[16], c[15] == "True");
        let t = timeline(&cfg, &opts).unwrap();
        let want = n(22) as f64;
        let err = t.peak_bytes() / want - 1.0;
        let phase = t.peak_event().phase.name();
        eprintln!("{:+.2} % {phase:>9} vs {:>9}  {line}", err * 100.0, c[23]);
        worst = worst.max(err.abs());
        if err.abs() > 0.05 || phase != c[23] {
            failures.push(format!(
                "{}: {:+.2} %, {phase} vs {}",
                &line[..60.min(line.len())],
                err * 100.0,
                c[23]
            ));
        }
        rows += 1;
    }
    eprintln!("worst {:.2} %", worst * 100.0);
    assert!(rows >= 16);
    assert!(failures.is_empty(), "{failures:#?}");
}
