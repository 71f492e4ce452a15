//! Presets: published models, their `config.json` shapes and parameter
//! counts checked against the published figures.

use super::arch::{Architecture, Mla, Moe, Router};
use super::mamba::Mamba2;

/// A model with its published configuration.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    /// Short name for `--model`.
    pub name: &'static str,
    /// Its shape.
    pub arch: Architecture,
}

/// Qwen2.5: Llama's shape with q/k/v biases, embeddings tied or not.
const fn qwen(
    layers: u64,
    hidden: u64,
    heads: u64,
    kv_heads: u64,
    ffn: u64,
    vocab: u64,
    tied: bool,
) -> Architecture {
    Architecture {
        tied_embeddings: tied,
        qkv_bias: true,
        ..Architecture::llama(layers, hidden, heads, kv_heads, ffn, vocab)
    }
}

/// GPT-2's released sizes share the vocabulary.
const fn gpt2(layers: u64, hidden: u64, heads: u64) -> Architecture {
    Architecture::gpt2(layers, hidden, heads, 50257)
}

/// Qwen3: explicit 128-wide heads, q/k norms, no biases.
const fn qwen3(
    layers: u64,
    hidden: u64,
    heads: u64,
    kv_heads: u64,
    ffn: u64,
    tied: bool,
) -> Architecture {
    Architecture {
        tied_embeddings: tied,
        // Stored only where it differs from h / a.
        head_width: if hidden / heads == 128 { 0 } else { 128 },
        qk_norm: true,
        ..Architecture::llama(layers, hidden, heads, kv_heads, ffn, 151936)
    }
}

/// Llama 3.2's small models tie their embeddings.
const fn llama32(layers: u64, hidden: u64, heads: u64) -> Architecture {
    Architecture {
        tied_embeddings: true,
        ..Architecture::llama(layers, hidden, heads, 8, 8192, 128256)
    }
}

/// Mixtral-8x7B (`mistralai/Mixtral-8x7B-v0.1`, config.json): 8 experts,
/// top-2, every layer MoE.
const MIXTRAL_8X7B: Architecture = Architecture {
    moe: Some(Moe {
        experts: 8,
        top_k: 2,
        expert_ffn: 14336,
        shared_ffn: 0,
        first_dense: 0,
        router: Router::Mixtral,
        normalized: true,
    }),
    ..Architecture::llama(32, 4096, 32, 8, 14336, 32000)
};

/// Mixtral-8x22B (`mistralai/Mixtral-8x22B-v0.1`; its config.json's shape
/// as Megatron-MoE-ModelZoo's `model_configs/benchmarking/Mixtral-8x22B.yaml`
/// gives it: 56 layers, hidden 6,144, 48 query and 8 key/value heads,
/// 8 experts of 16,384, top-2, untied, the Llama 2 tokenizer's 32,000
/// tokens): Mixtral-8x7B's layer, larger.
const MIXTRAL_8X22B: Architecture = Architecture {
    moe: Some(Moe {
        experts: 8,
        top_k: 2,
        expert_ffn: 16384,
        shared_ffn: 0,
        first_dense: 0,
        router: Router::Mixtral,
        normalized: true,
    }),
    ..Architecture::llama(56, 6144, 48, 8, 16384, 32000)
};

/// Qwen3-30B-A3B (`Qwen/Qwen3-30B-A3B`, config.json): 128 experts of width
/// 768, top-8, every layer MoE.
const QWEN3_30B_A3B: Architecture = Architecture {
    moe: Some(Moe {
        experts: 128,
        top_k: 8,
        expert_ffn: 768,
        shared_ffn: 0,
        first_dense: 0,
        router: Router::Qwen,
        normalized: true,
    }),
    ..qwen3(48, 2048, 32, 4, 6144, false)
};

/// Qwen3-235B-A22B (`Qwen/Qwen3-235B-A22B`; its config.json's shape as
/// the model card and Megatron-MoE-ModelZoo's
/// `model_configs/benchmarking/Qwen3-235B-A22B.yaml` give it: 94 layers,
/// hidden 4,096, 64 query and 4 key/value heads of 128, 128 experts of
/// 1,536, top-8, vocabulary 151,936, untied): Qwen3-30B-A3B's layer,
/// larger.
const QWEN3_235B_A22B: Architecture = Architecture {
    moe: Some(Moe {
        experts: 128,
        top_k: 8,
        expert_ffn: 1536,
        shared_ffn: 0,
        first_dense: 0,
        router: Router::Qwen,
        normalized: true,
    }),
    ..qwen3(94, 4096, 64, 4, 12288, false)
};

/// DeepSeek-V3 (`deepseek-ai/DeepSeek-V3`, config.json; the main model,
/// without the multi-token-prediction layer): latent attention, 3 dense
/// layers, then 256 routed experts (top-8) and one shared expert.
/// GLM-4.5-Air (`zai-org/GLM-4.5-Air` config.json, `glm4_moe`): 96 heads
/// of 128 over h 4096 with q/k/v biases, half of each head rotated,
/// DeepSeek-V3's sigmoid router over 128 experts, one shared expert, one
/// dense layer first. `transformers` does not build its next-token
/// prediction layer, and neither does this.
const GLM_45_AIR: Architecture = Architecture {
    qkv_bias: true,
    head_width: 128,
    rotary_dims: 64,
    moe: Some(Moe {
        experts: 128,
        top_k: 8,
        expert_ffn: 1408,
        shared_ffn: 1408,
        first_dense: 1,
        router: Router::DeepSeek,
        normalized: true,
    }),
    ..Architecture::llama(46, 4096, 96, 8, 10944, 151552)
};

/// gpt-oss (`openai/gpt-oss-20b` and `-120b` config.json, `gpt_oss`): 64
/// heads of 64 over h 2880, 8 key/value heads, biases on every projection,
/// attention sinks, every layer MoE with biased experts of width 2880 and a
/// biased router choosing 4; alternate layers slide a 128-token window,
/// which changes no saved bytes here. Published in MXFP4 (experts), trained
/// from the 16-bit weights this prices.
const fn gpt_oss(layers: u64, experts: u64) -> Architecture {
    Architecture {
        qkv_bias: true,
        head_width: 64,
        attention_sinks: true,
        moe: Some(Moe {
            experts,
            top_k: 4,
            expert_ffn: 2880,
            shared_ffn: 0,
            first_dense: 0,
            router: Router::GptOss,
            normalized: true,
        }),
        ..Architecture::llama(layers, 2880, 64, 8, 2880, 201088)
    }
}

/// Llama 4 Scout (`meta-llama/Llama-4-Scout-17B-16E` config.json, its
/// `text_config`; the vision encoder is not priced): 40 heads of 128 over
/// h 5120, 8 key/value heads, every layer MoE with 16 experts of width 8192
/// choosing 1 and a shared expert of the same width, weightless q/k norms,
/// every fourth layer without rotary embedding.
const LLAMA_4_SCOUT: Architecture = Architecture {
    qk_norm: true,
    head_width: 128,
    moe: Some(Moe {
        experts: 16,
        top_k: 1,
        expert_ffn: 8192,
        shared_ffn: 8192,
        first_dense: 0,
        router: Router::Llama4,
        normalized: false,
    }),
    ..Architecture::llama(48, 5120, 40, 8, 16384, 202048)
};

/// Llama 4 Maverick (`meta-llama/Llama-4-Maverick-17B-128E`'s
/// `text_config`): Scout's layers with 128 experts in every second layer
/// (`interleave_moe_layer_step` 2), the other 24 dense at
/// `intermediate_size_mlp`; priced as leading dense layers, as the
/// config.json reader prices them (the layers' averages do not depend on
/// where the dense ones sit).
const LLAMA_4_MAVERICK: Architecture = Architecture {
    moe: Some(Moe {
        experts: 128,
        first_dense: 24,
        ..LLAMA_4_SCOUT.moe.unwrap()
    }),
    ..LLAMA_4_SCOUT
};

const DEEPSEEK_V3: Architecture = Architecture {
    mla: Some(Mla {
        q_rank: 1536,
        kv_rank: 512,
        rope_dim: 64,
        nope_dim: 128,
        v_dim: 128,
    }),
    moe: Some(Moe {
        experts: 256,
        top_k: 8,
        expert_ffn: 2048,
        shared_ffn: 2048,
        first_dense: 3,
        router: Router::DeepSeek,
        normalized: true,
    }),
    ..Architecture::llama(61, 7168, 128, 128, 18432, 129280)
};

/// Falcon-H1 (Zuo et al. 2025, "Falcon-H1", Table 1; `transformers`'
/// FalconH1 model page; Megatron-Bridge's `FalconH1ModelProvider7B` and
/// `…34B`, read from the `tiiuae/Falcon-H1-*-Instruct` config.json files):
/// attention with heads of 128 beside a Mamba-2 mixer of heads of 128 in
/// every layer, its gated RMSNorm on, a state of 256 per group.
const fn falcon_h1(
    shape: (u64, u64, u64, u64, u64, u64),
    mamba_heads: u64,
    groups: u64,
    chunk: u64,
) -> Architecture {
    let (layers, hidden, heads, kv, ffn, vocab) = shape;
    Architecture {
        head_width: 128,
        ssm: Some(Mamba2 {
            heads: mamba_heads,
            head_dim: 128,
            groups,
            state: 256,
            conv: 4,
            chunk,
            gated_norm: true,
            conv_bias: true,
            in_bias: false,
            out_bias: false,
        }),
        ..Architecture::llama(layers, hidden, heads, kv, ffn, vocab)
    }
}

/// Nemotron-4 (Parmar et al. 2024, "Nemotron-4 15B Technical Report",
/// Table 1; Nvidia 2024, "Nemotron-4 340B Technical Report", Table 1;
/// NeMo's `Nemotron4Config15B` and `Nemotron4Config340B`,
/// `nemo/collections/llm/gpt/model/nemotron.py`): Megatron-Core's GPT with
/// grouped-query attention (8 groups), a squared-ReLU MLP of 4h, LayerNorm,
/// rotary positions, untied embeddings and 256,000 tokens. Priced as the
/// gpt2 shape, whose MLP keeps what squared ReLU keeps (its input and the
/// second linear's); its linear layers have no biases, which the gpt2
/// shape counts (0.004 % of the parameters).
const fn nemotron4(layers: u64, hidden: u64, heads: u64) -> Architecture {
    Architecture {
        kv_heads: 8,
        positions: 0,
        tied_embeddings: false,
        ..Architecture::gpt2(layers, hidden, heads, 256_000)
    }
}

/// Published configurations (the models' `config.json`).
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "gpt2",
        arch: gpt2(12, 768, 12),
    },
    Preset {
        name: "gpt2-medium",
        arch: gpt2(24, 1024, 16),
    },
    Preset {
        name: "gpt2-large",
        arch: gpt2(36, 1280, 20),
    },
    Preset {
        name: "gpt2-xl",
        arch: gpt2(48, 1600, 25),
    },
    // GPT-3 175B (Brown et al. 2020, "Language Models are Few-Shot
    // Learners", Table 2.1 and §2.1: GPT-2's model, tokenizer and tied
    // embeddings; 96 layers of 12,288, 96 heads, a 2,048-token context
    // learned as positions): 174.6 billion parameters against its "175.0B".
    Preset {
        name: "gpt3-175b",
        arch: Architecture {
            positions: 2048,
            ..gpt2(96, 12288, 96)
        },
    },
    Preset {
        name: "llama-2-7b",
        arch: Architecture::llama(32, 4096, 32, 32, 11008, 32000),
    },
    Preset {
        name: "llama-2-13b",
        arch: Architecture::llama(40, 5120, 40, 40, 13824, 32000),
    },
    Preset {
        name: "llama-2-70b",
        arch: Architecture::llama(80, 8192, 64, 8, 28672, 32000),
    },
    Preset {
        name: "llama-3.1-8b",
        arch: Architecture::llama(32, 4096, 32, 8, 14336, 128256),
    },
    Preset {
        name: "llama-3.1-70b",
        arch: Architecture::llama(80, 8192, 64, 8, 28672, 128256),
    },
    Preset {
        name: "llama-3.1-405b",
        arch: Architecture::llama(126, 16384, 128, 8, 53248, 128256),
    },
    Preset {
        name: "nemotron-4-15b",
        arch: nemotron4(32, 6144, 48),
    },
    Preset {
        name: "nemotron-4-340b",
        arch: nemotron4(96, 18432, 96),
    },
    Preset {
        name: "mistral-7b",
        arch: Architecture::llama(32, 4096, 32, 8, 14336, 32000),
    },
    Preset {
        name: "qwen2.5-0.5b",
        arch: qwen(24, 896, 14, 2, 4864, 151936, true),
    },
    Preset {
        name: "qwen2.5-1.5b",
        arch: qwen(28, 1536, 12, 2, 8960, 151936, true),
    },
    Preset {
        name: "qwen2.5-3b",
        arch: qwen(36, 2048, 16, 2, 11008, 151936, true),
    },
    Preset {
        name: "qwen2.5-7b",
        arch: qwen(28, 3584, 28, 4, 18944, 152064, false),
    },
    Preset {
        name: "qwen2.5-14b",
        arch: qwen(48, 5120, 40, 8, 13824, 152064, false),
    },
    Preset {
        name: "qwen2.5-32b",
        arch: qwen(64, 5120, 40, 8, 27648, 152064, false),
    },
    Preset {
        name: "qwen2.5-72b",
        arch: qwen(80, 8192, 64, 8, 29568, 152064, false),
    },
    Preset {
        name: "llama-3.2-1b",
        arch: llama32(16, 2048, 32),
    },
    Preset {
        name: "llama-3.2-3b",
        arch: llama32(28, 3072, 24),
    },
    Preset {
        name: "qwen3-0.6b",
        arch: qwen3(28, 1024, 16, 8, 3072, true),
    },
    Preset {
        name: "qwen3-1.7b",
        arch: qwen3(28, 2048, 16, 8, 6144, true),
    },
    Preset {
        name: "qwen3-4b",
        arch: qwen3(36, 2560, 32, 8, 9728, true),
    },
    Preset {
        name: "qwen3-8b",
        arch: qwen3(36, 4096, 32, 8, 12288, false),
    },
    Preset {
        name: "qwen3-14b",
        arch: qwen3(40, 5120, 40, 8, 17408, false),
    },
    Preset {
        name: "qwen3-32b",
        arch: qwen3(64, 5120, 64, 8, 25600, false),
    },
    Preset {
        name: "tinyllama-1.1b",
        arch: Architecture::llama(22, 2048, 32, 4, 5632, 32000),
    },
    Preset {
        name: "mixtral-8x7b",
        arch: MIXTRAL_8X7B,
    },
    Preset {
        name: "mixtral-8x22b",
        arch: MIXTRAL_8X22B,
    },
    Preset {
        name: "qwen3-30b-a3b",
        arch: QWEN3_30B_A3B,
    },
    Preset {
        name: "qwen3-235b-a22b",
        arch: QWEN3_235B_A22B,
    },
    Preset {
        name: "glm-4.5-air",
        arch: GLM_45_AIR,
    },
    Preset {
        name: "gpt-oss-20b",
        arch: gpt_oss(24, 32),
    },
    Preset {
        name: "gpt-oss-120b",
        arch: gpt_oss(36, 128),
    },
    Preset {
        name: "llama-4-scout",
        arch: LLAMA_4_SCOUT,
    },
    Preset {
        name: "llama-4-maverick",
        arch: LLAMA_4_MAVERICK,
    },
    Preset {
        name: "deepseek-v3",
        arch: DEEPSEEK_V3,
    },
    Preset {
        name: "falcon-h1-7b",
        arch: falcon_h1((44, 3072, 12, 2, 12288, 130_049), 24, 1, 256),
    },
    Preset {
        name: "falcon-h1-34b",
        arch: falcon_h1((72, 5120, 20, 4, 21504, 261_120), 32, 2, 128),
    },
];

/// The preset called `name` (case-insensitive).
pub fn preset(name: &str) -> Option<Preset> {
    PRESETS
        .iter()
        .copied()
        .find(|p| p.name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::Family;

    /// `tests/fixtures/param_counts.tsv`: `transformers` 5.25 builds each
    /// published config.json on the meta device and counts its parameters
    /// and parameter tensors.
    #[test]
    fn new_presets_match_transformers_to_the_parameter() {
        let cases = [
            ("llama-3.2-1b", 1_235_814_400u64, 146u64),
            ("qwen3-8b", 8_190_735_360, 399),
            ("mixtral-8x7b", 46_702_792_704, 291),
            ("mixtral-8x22b", 140_620_634_112, 507),
            ("qwen3-30b-a3b", 30_532_122_624, 531),
            ("qwen3-235b-a22b", 235_093_634_560, 1037),
            ("deepseek-v3", 671_026_404_352, 909),
            ("mistral-7b", 7_241_732_096, 291),
            ("qwen2.5-7b", 7_615_616_512, 339),
            ("glm-4.5-air", 106_852_245_504, 690),
            ("gpt-oss-20b", 20_914_757_184, 411),
            ("gpt-oss-120b", 116_829_156_672, 615),
            ("llama-4-scout", 107_769_861_120, 579),
            ("falcon-h1-7b", 7_585_654_880, 751),
            ("falcon-h1-34b", 33_642_516_224, 1227),
        ];
        for (name, params, tensors) in cases {
            let arch = preset(name).unwrap().arch;
            assert_eq!(arch.params(), params, "{name}");
            assert_eq!(arch.param_tensors(), tensors, "{name} tensors");
        }
        // DeepSeek-V3's published "671B" main model: parameters plus the
        // 58 × 256 score-correction biases its checkpoint stores.
        let ds = preset("deepseek-v3").unwrap().arch;
        assert_eq!(ds.params() + ds.buffers(), 671_026_419_200);
        assert_eq!(ds.family, Family::Llama);
        // GLM-4.5-Air: 45 MoE layers × 128 correction biases.
        assert_eq!(preset("glm-4.5-air").unwrap().arch.buffers(), 5_760);
        // Published active parameters per token: Mixtral 12.9 B (Jiang et al.
        // 2024, §2: "13B active"), Mixtral-8x22B 39 B (Mistral AI's
        // announcement, "39B active parameters out of 141B"), Qwen3-30B-A3B 3.3 B (model card),
        // DeepSeek-V3 37 B (DeepSeek-AI 2024, abstract), Qwen3-235B-A22B
        // 22 B (model card: "22B activated").
        for (name, active) in [
            ("mixtral-8x7b", 12.9e9),
            ("mixtral-8x22b", 39.0e9),
            ("qwen3-30b-a3b", 3.3e9),
            ("qwen3-235b-a22b", 22.0e9),
            ("deepseek-v3", 37.0e9),
        ] {
            let got = preset(name).unwrap().arch.active_params() as f64;
            assert!((got / active - 1.0).abs() < 0.03, "{name}: {got}");
        }
        // GLM-4.5-Air: "106B total parameters and 12B active" (model
        // card), the active count without the embedding and output layer.
        let glm = preset("glm-4.5-air").unwrap().arch;
        let outer = 2.0 * 151_552.0 * 4096.0;
        let active = glm.active_params() as f64 - outer;
        assert!((active / 12.0e9 - 1.0).abs() < 0.03, "{active}");
        // gpt-oss: "21B parameters with 3.6B active" and "117B parameters
        // with 5.1B active" (OpenAI's model cards), active counted without
        // the input embedding (201,088 × 2,880).
        for (name, total, active) in [
            ("gpt-oss-20b", 21.0e9, 3.6e9),
            ("gpt-oss-120b", 117.0e9, 5.1e9),
        ] {
            let a = preset(name).unwrap().arch;
            assert!((a.params() as f64 / total - 1.0).abs() < 0.01, "{name}");
            let got = a.active_params() as f64 - 201_088.0 * 2880.0;
            assert!((got / active - 1.0).abs() < 0.03, "{name}: {got}");
        }
        // Llama 4 Scout: "17B active, 109B total" (Meta's model card, the
        // vision encoder in the total): the language model's active count,
        // one expert and the shared one per layer, embedding and output
        // layer included.
        let scout = preset("llama-4-scout").unwrap().arch;
        let active = scout.active_params() as f64;
        assert!((active / 17.0e9 - 1.0).abs() < 0.03, "{active}");
        // Llama 4 Maverick: "17B active, 400B total" (the model card, the
        // vision encoder in the total).
        let maverick = preset("llama-4-maverick").unwrap().arch;
        let (total, active) = (maverick.params() as f64, maverick.active_params() as f64);
        assert!((active / 17.0e9 - 1.0).abs() < 0.03, "{active}");
        assert!((total / 400.0e9 - 1.0).abs() < 0.01, "{total}");
        assert_eq!(maverick.moe_layers(), 24);
        // Nemotron-4: "12.5 billion non-embedding parameters" (15B report,
        // §2) and "331.6 billion non-embedding parameters" and "9.4 billion
        // embedding parameters" (340B report, §2.1): grouped-query attention
        // and untied embeddings, or the 340B would count 60 billion more.
        for (name, layers_b) in [("nemotron-4-15b", 12.5e9), ("nemotron-4-340b", 331.6e9)] {
            let a = preset(name).unwrap().arch;
            let embedding = 2.0 * (a.vocab * a.hidden) as f64;
            let layers = a.params() as f64 - embedding;
            // To the printed digit: within half of 0.1 billion.
            assert!((layers - layers_b).abs() < 0.05e9, "{name}: {layers}");
        }
        // GPT-3 175B: "175.0B" (Brown et al. 2020, Table 2.1), to its digit.
        let gpt3 = preset("gpt3-175b").unwrap().arch.params() as f64;
        assert!((gpt3 / 175.0e9 - 1.0).abs() < 0.005, "{gpt3}");
        let big = preset("nemotron-4-340b").unwrap().arch;
        assert_eq!(2 * big.vocab * big.hidden, 9_437_184_000);
        // Llama-3.2-3B's model card: 3.21 B.
        let l3 = preset("llama-3.2-3b").unwrap().arch.params() as f64;
        assert!((l3 / 3.21e9 - 1.0).abs() < 0.005, "{l3}");
    }

    /// The model cards' parameter counts (Qwen3 and Qwen2.5 cards on the
    /// hub, "Number of Parameters"; TinyLlama's README, "1.1B"), which round
    /// or cut to two or three digits: within 1.5 %. The exact counts are
    /// `transformers`' (tests/config_import.rs, from param_counts.tsv).
    #[test]
    fn small_and_mid_presets_match_their_model_cards() {
        let cards = [
            ("qwen3-0.6b", 0.6e9),
            ("qwen3-1.7b", 1.7e9),
            ("qwen3-4b", 4.0e9),
            ("qwen3-14b", 14.8e9),
            ("qwen3-32b", 32.8e9),
            ("qwen2.5-1.5b", 1.54e9),
            ("qwen2.5-3b", 3.09e9),
            ("qwen2.5-14b", 14.7e9),
            ("qwen2.5-32b", 32.5e9),
            ("tinyllama-1.1b", 1.1e9),
        ];
        for (name, want) in cards {
            let got = preset(name).unwrap().arch.params() as f64;
            assert!((got / want - 1.0).abs() < 0.015, "{name}: {got}");
        }
    }

    #[test]
    fn parameter_counts_match_published_vectors() {
        // VECTORS.md, "Parameter counts from architecture".
        let cases = [
            ("gpt2", 124_439_808u64),
            ("gpt2-xl", 1_557_611_200),
            ("llama-2-7b", 6_738_415_616),
            ("llama-3.1-8b", 8_030_261_248),
        ];
        for (name, want) in cases {
            assert_eq!(preset(name).unwrap().arch.params(), want, "{name}");
        }
        // Published sizes of the others, to 1 %.
        let rough = [
            ("gpt2-medium", 355e6),
            ("gpt2-large", 774e6),
            ("llama-2-13b", 13.0e9),
            ("llama-2-70b", 69.0e9),
            ("llama-3.1-70b", 70.6e9),
            ("llama-3.1-405b", 405.9e9),
            ("mistral-7b", 7.24e9),
            ("qwen2.5-0.5b", 0.494e9),
            ("qwen2.5-7b", 7.62e9),
            ("qwen2.5-72b", 72.7e9),
        ];
        for (name, want) in rough {
            let got = preset(name).unwrap().arch.params() as f64;
            assert!((got / want - 1.0).abs() < 0.01, "{name}: {got}");
        }
    }
}
