//! The model's shape: families, parameter counts, LoRA's adapters, and the
//! presets with their published configurations.

/// Transformer family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// GPT-2: LayerNorm, GELU MLP (4h), biases, learned positions, tied
    /// embeddings.
    Gpt2,
    /// Llama: RMSNorm, SwiGLU, RoPE, grouped-query attention, untied
    /// embeddings (Qwen2.5 adds q/k/v biases and may tie).
    Llama,
}

/// A model's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Architecture {
    /// GPT-2 or Llama style.
    pub family: Family,
    /// Transformer layers, L.
    pub layers: u64,
    /// Hidden size, h.
    pub hidden: u64,
    /// Attention heads, a.
    pub heads: u64,
    /// Key/value heads (grouped-query attention); equals `heads` for MHA.
    pub kv_heads: u64,
    /// MLP inner size (4h for GPT-2; the SwiGLU intermediate size for Llama).
    pub ffn: u64,
    /// Vocabulary size, V.
    pub vocab: u64,
    /// Learned position embeddings (GPT-2's n_positions); 0 for RoPE.
    pub positions: u64,
    /// Output layer shares the input embedding.
    pub tied_embeddings: bool,
    /// Biases on the q, k, v projections (Qwen2.5).
    pub qkv_bias: bool,
}

impl Architecture {
    /// A GPT-2 style model (ffn = 4h, 1024 positions, tied embeddings).
    pub const fn gpt2(layers: u64, hidden: u64, heads: u64, vocab: u64) -> Self {
        Self {
            family: Family::Gpt2,
            layers,
            hidden,
            heads,
            kv_heads: heads,
            ffn: 4 * hidden,
            vocab,
            positions: 1024,
            tied_embeddings: true,
            qkv_bias: true,
        }
    }

    /// A Llama style model (untied embeddings, no biases).
    pub const fn llama(
        layers: u64,
        hidden: u64,
        heads: u64,
        kv_heads: u64,
        ffn: u64,
        vocab: u64,
    ) -> Self {
        Self {
            family: Family::Llama,
            layers,
            hidden,
            heads,
            kv_heads,
            ffn,
            vocab,
            positions: 0,
            tied_embeddings: false,
            qkv_bias: false,
        }
    }

    /// Width of one head, h / a.
    pub fn head_dim(&self) -> u64 {
        self.hidden / self.heads
    }

    /// Width of K (and of V): kv_heads · head_dim.
    pub fn kv_dim(&self) -> u64 {
        self.kv_heads * self.head_dim()
    }

    /// Parameters of one layer.
    fn layer_params(&self) -> u64 {
        let (h, f, kv) = (self.hidden, self.ffn, self.kv_dim());
        match self.family {
            // ln_1, c_attn (h → 3h, bias), c_proj (bias), ln_2, c_fc (bias), c_proj (bias).
            Family::Gpt2 => {
                2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * h + (h * f + f) + (f * h + h)
            }
            // q, k, v, o; gate, up, down; two RMSNorm weights.
            Family::Llama => {
                let bias = if self.qkv_bias { h + 2 * kv } else { 0 };
                h * h + 2 * h * kv + h * h + bias + 3 * h * f + 2 * h
            }
        }
    }

    /// Parameters of everything outside the layers.
    fn outer_params(&self) -> u64 {
        let (h, v) = (self.hidden, self.vocab);
        let output = if self.tied_embeddings { 0 } else { v * h };
        match self.family {
            Family::Gpt2 => v * h + self.positions * h + 2 * h + output,
            Family::Llama => v * h + h + output,
        }
    }

    /// Total parameters (Radford et al. 2019, GPT-2; Touvron et al. 2023,
    /// Llama 2, Table 1 and the released configs). Shared tensors count once.
    pub fn params(&self) -> u64 {
        self.layers * self.layer_params() + self.outer_params()
    }

    /// Number of parameter tensors (PyTorch's AdamW keeps a 4-byte `step`
    /// tensor for each).
    pub fn param_tensors(&self) -> u64 {
        match self.family {
            // 12 per layer (6 weights, 6 biases); wte, wpe; ln_f weight and bias.
            Family::Gpt2 => 12 * self.layers + 4 + u64::from(!self.tied_embeddings),
            // 9 per layer (+3 q/k/v biases); embedding, final norm, output.
            Family::Llama => {
                (9 + if self.qkv_bias { 3 } else { 0 }) * self.layers
                    + 2
                    + u64::from(!self.tied_embeddings)
            }
        }
    }

    /// Input and output widths of one adaptable projection.
    pub(super) fn projection(&self, target: u8) -> (u64, u64) {
        let (h, kv, f) = (self.hidden, self.kv_dim(), self.ffn);
        match target {
            LoraTargets::K | LoraTargets::V => (h, kv),
            LoraTargets::GATE | LoraTargets::UP => (h, f),
            LoraTargets::DOWN => (f, h),
            _ => (h, h),
        }
    }

    /// Parameters that LoRA of rank `r` adds on `targets` (Hu et al. 2021,
    /// "LoRA", §4: A is r × in, B is out × r, per adapted projection).
    pub fn lora_params(&self, rank: u64, targets: LoraTargets) -> u64 {
        let per_layer: u64 = targets
            .iter()
            .map(|t| {
                let (i, o) = self.projection(t);
                rank * (i + o)
            })
            .sum();
        self.layers * per_layer
    }
}

/// Which projections LoRA adapts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoraTargets(pub u8);

impl LoraTargets {
    /// Query projection.
    pub const Q: u8 = 1;
    /// Key projection.
    pub const K: u8 = 2;
    /// Value projection.
    pub const V: u8 = 4;
    /// Attention output projection.
    pub const O: u8 = 8;
    /// SwiGLU gate projection (Llama only).
    pub const GATE: u8 = 16;
    /// MLP up projection (GPT-2's c_fc).
    pub const UP: u8 = 32;
    /// MLP down projection (GPT-2's c_proj).
    pub const DOWN: u8 = 64;
    const NAMES: [(&'static str, u8); 7] = [
        ("q", Self::Q),
        ("k", Self::K),
        ("v", Self::V),
        ("o", Self::O),
        ("gate", Self::GATE),
        ("up", Self::UP),
        ("down", Self::DOWN),
    ];

    /// The targets one by one.
    pub fn iter(self) -> impl Iterator<Item = u8> {
        Self::NAMES
            .into_iter()
            .map(|(_, bit)| bit)
            .filter(move |bit| self.0 & bit != 0)
    }

    /// How many projections per layer.
    pub fn count(self) -> u64 {
        u64::from(self.0.count_ones())
    }

    /// `q,v` style.
    pub fn names(self) -> String {
        let names: Vec<&str> = Self::NAMES
            .iter()
            .filter(|(_, bit)| self.0 & bit != 0)
            .map(|(n, _)| *n)
            .collect();
        names.join(",")
    }
}

impl Default for LoraTargets {
    /// q and v, as Hu et al. 2021 (§7.1) and PEFT's default for Llama.
    fn default() -> Self {
        Self(Self::Q | Self::V)
    }
}

impl std::str::FromStr for LoraTargets {
    type Err = String;
    /// `q,v`, `q,k,v,o,gate,up,down` or `all`.
    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("all") {
            return Ok(Self(127));
        }
        let mut bits = 0;
        for part in s.split(',').map(str::trim) {
            let bit = Self::NAMES
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(part))
                .map(|(_, b)| *b)
                .ok_or_else(|| {
                    format!("LoRA targets are q, k, v, o, gate, up, down or all (got '{part}')")
                })?;
            bits |= bit;
        }
        Ok(Self(bits))
    }
}

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
        name: "mistral-7b",
        arch: Architecture::llama(32, 4096, 32, 8, 14336, 32000),
    },
    Preset {
        name: "qwen2.5-0.5b",
        arch: qwen(24, 896, 14, 2, 4864, 151936, true),
    },
    Preset {
        name: "qwen2.5-7b",
        arch: qwen(28, 3584, 28, 4, 18944, 152064, false),
    },
    Preset {
        name: "qwen2.5-72b",
        arch: qwen(80, 8192, 64, 8, 29568, 152064, false),
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
