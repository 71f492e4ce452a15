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

/// Multi-head latent attention (DeepSeek-AI 2024, "DeepSeek-V2", §2.1.2,
/// Eq. 9–19; `transformers`' `DeepseekV3Attention`): queries and keys/values
/// pass through low-rank latents; each head has a "nope" part and a shared
/// rotary part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mla {
    /// Query latent width, d_c′ (`q_lora_rank`); 0: a plain query projection.
    pub q_rank: u64,
    /// Key/value latent width, d_c (`kv_lora_rank`).
    pub kv_rank: u64,
    /// Rotary part of each query/key head, d_h^R (`qk_rope_head_dim`).
    pub rope_dim: u64,
    /// Non-rotary part of each query/key head (`qk_nope_head_dim`).
    pub nope_dim: u64,
    /// Width of each value head (`v_head_dim`).
    pub v_dim: u64,
}

/// Mixture of experts in the MLP (Shazeer et al. 2017; Jiang et al. 2024,
/// "Mixtral of Experts", §2; DeepSeek-AI 2024, "DeepSeek-V3", §2.1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moe {
    /// Routed experts per MoE layer, E.
    pub experts: u64,
    /// Experts each token is routed to, k.
    pub top_k: u64,
    /// Inner width of one routed expert's SwiGLU MLP.
    pub expert_ffn: u64,
    /// Inner width of the shared experts together (0: none); a shared
    /// expert sees every token.
    pub shared_ffn: u64,
    /// Dense layers before the first MoE layer (DeepSeek's
    /// `first_k_dense_replace`); they use the model's `ffn`.
    pub first_dense: u64,
    /// Which router, and so what it keeps for backward.
    pub router: Router,
    /// The top-k weights are renormalised to sum to one (Mixtral always;
    /// `norm_topk_prob` for Qwen3-MoE and DeepSeek, true in the released
    /// models, false by default in `Qwen3MoeConfig`).
    pub normalized: bool,
}

/// The router's kind, as `transformers` writes each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Router {
    /// Softmax over the experts, top-k renormalised, weights kept in fp32
    /// (`MixtralTopKRouter`).
    Mixtral,
    /// The same, weights cast back to the model's dtype
    /// (`Qwen3MoeTopKRouter`, `norm_topk_prob` as the released models set it).
    Qwen,
    /// Qwen's router, with a sigmoid gate on the shared expert's output: a
    /// bias-free h → 1 projection per MoE layer
    /// (`Qwen2MoeSparseMoeBlock.shared_expert_gate`,
    /// `sigmoid(gate(x)) * shared_expert(x)`).
    Qwen2,
    /// gpt-oss (`GptOssTopKRouter`, `GptOssExperts`): the top k of the
    /// biased logits, a softmax over those k; each expert with biases on
    /// its projections and the clamped SwiGLU
    /// (`(up + 1) · gate · σ(1.702 · gate)`, both clamped to ±7).
    GptOss,
    /// Sigmoid scores in fp32 with a per-expert score-correction bias
    /// (DeepSeek-V3's auxiliary-loss-free balancing, §2.1.2, Eq. 16). The
    /// bias is a buffer, not a parameter: updated by a rule, not by
    /// gradients (`DeepseekV3TopkRouter.e_score_correction_bias`); see
    /// [`Architecture::buffers`].
    DeepSeek,
    /// Llama 4 (`Llama4Router`, `Llama4TextMoe`): the top k of the logits
    /// through a sigmoid, scattered into an n × E score matrix; in
    /// `transformers` every expert then runs on every token, scaled by its
    /// score (zero but for the top k: `hidden_states.repeat(E, 1)`, one
    /// `torch.bmm` over the experts). Its per-head q/k norms
    /// (`Llama4TextWeightlessRMSNorm`, on the rotary layers) carry no
    /// weight; every fourth layer has no rotary embedding and scales its
    /// queries instead (`attn_temperature_tuning`).
    Llama4,
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
    /// MLP inner size (4h for GPT-2; the SwiGLU intermediate size for Llama;
    /// the dense layers' under mixture of experts).
    pub ffn: u64,
    /// Vocabulary size, V.
    pub vocab: u64,
    /// Learned position embeddings (GPT-2's n_positions); 0 for RoPE.
    pub positions: u64,
    /// Output layer shares the input embedding.
    pub tied_embeddings: bool,
    /// Biases on the q, k, v projections (Qwen2.5).
    pub qkv_bias: bool,
    /// Width of one attention head when it is not h / a (Qwen3, Gemma);
    /// 0: h / a.
    pub head_width: u64,
    /// Dimensions of each head that rotary embeddings rotate when not all
    /// (GLM-4.5's `partial_rotary_factor` 0.5); 0: the whole head.
    pub rotary_dims: u64,
    /// gpt-oss's attention: a learned sink logit per head in the softmax
    /// (`GptOssAttention.sinks`), a bias on the output projection, an
    /// RMSNorm that multiplies its weight into the fp32 normalised values
    /// (keeping them), and rotary cos and sin of half a head
    /// (`_apply_rotary_emb` rotates halves).
    pub attention_sinks: bool,
    /// RMSNorm on each head's query and key (Qwen3, Gemma 3).
    pub qk_norm: bool,
    /// Four norms per layer, before and after each block (Gemma 2 and 3),
    /// and Gemma's RMSNorm (it scales by 1 + w in fp32).
    pub sandwich_norms: bool,
    /// Gemma 2's soft-capped attention logits and final logits
    /// (`attn_logit_softcapping`, `final_logit_softcapping`).
    pub softcap: bool,
    /// Multi-head latent attention instead of q/k/v projections.
    pub mla: Option<Mla>,
    /// Mixture of experts in the MLP.
    pub moe: Option<Moe>,
    /// A Mamba-2 mixer beside the attention in every layer (Falcon-H1).
    pub ssm: Option<super::mamba::Mamba2>,
}

/// Where one layer's parameters sit, since parallelism splits them apart.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerParams {
    /// Attention projections and dense MLP: split by tensor parallelism.
    pub dense: u64,
    /// Routed experts: split by expert × expert-tensor parallelism.
    pub experts: u64,
    /// Norm weights and the router: whole on every GPU of a replica.
    pub replicated: u64,
}

impl LayerParams {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.dense + self.experts + self.replicated
    }
}

impl Architecture {
    /// GPT-2's learned positions (`n_positions`), the gpt2 shape's unless
    /// said otherwise.
    pub const GPT2_POSITIONS: u64 = 1024;

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
            positions: Self::GPT2_POSITIONS,
            tied_embeddings: true,
            qkv_bias: true,
            head_width: 0,
            rotary_dims: 0,
            attention_sinks: false,
            qk_norm: false,
            sandwich_norms: false,
            softcap: false,
            mla: None,
            moe: None,
            ssm: None,
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
            head_width: 0,
            rotary_dims: 0,
            attention_sinks: false,
            qk_norm: false,
            sandwich_norms: false,
            softcap: false,
            mla: None,
            moe: None,
            ssm: None,
        }
    }

    /// Dimensions of a head that rotary embeddings rotate.
    pub fn rotary_width(&self) -> u64 {
        if self.rotary_dims > 0 {
            self.rotary_dims.min(self.head_dim())
        } else {
            self.head_dim()
        }
    }

    /// Width of one head: `head_width`, or h / a.
    pub fn head_dim(&self) -> u64 {
        if self.head_width > 0 {
            self.head_width
        } else {
            self.hidden / self.heads.max(1)
        }
    }

    /// Width of Q (and of the attention output): a · head_dim, or under
    /// latent attention a · (nope + rope).
    pub fn q_dim(&self) -> u64 {
        match self.mla {
            Some(m) => self.heads * (m.nope_dim + m.rope_dim),
            None => self.heads * self.head_dim(),
        }
    }

    /// Width of K (and of V): kv_heads · head_dim.
    pub fn kv_dim(&self) -> u64 {
        match self.mla {
            Some(m) => self.heads * (m.nope_dim + m.rope_dim),
            None => self.kv_heads * self.head_dim(),
        }
    }

    /// Width of the fused q, k and v projection's output: q + 2·kv (3h
    /// without grouping).
    pub fn qkv_width(&self) -> u64 {
        self.q_dim() + 2 * self.kv_dim()
    }

    /// Width of V and of the output projection's input.
    pub fn v_dim(&self) -> u64 {
        match self.mla {
            Some(m) => self.heads * m.v_dim,
            None => self.kv_dim(),
        }
    }

    /// Multi-latent attention's up-projections, the products from the
    /// latents to the heads, as (input width, output width): the query's
    /// (from its latent, or from the hidden state without one) and the
    /// keys' and values' (DeepSeek-AI 2024, "DeepSeek-V2", §2.1.2, Eq.
    /// 10–14); empty shapes without latent attention.
    pub fn mla_up_projections(&self) -> [(f64, f64); 2] {
        self.mla.map_or([(0.0, 0.0); 2], |m| {
            let q_in = if m.q_rank > 0 { m.q_rank } else { self.hidden };
            let heads = self.heads as f64;
            [
                (q_in as f64, heads * (m.nope_dim + m.rope_dim) as f64),
                (m.kv_rank as f64, heads * (m.nope_dim + m.v_dim) as f64),
            ]
        })
    }

    /// Width of the attention output (the output projection's input).
    pub fn o_dim(&self) -> u64 {
        match self.mla {
            Some(m) => self.heads * m.v_dim,
            None => self.q_dim(),
        }
    }

    /// Whether this is Llama 4 (its router, its weightless q/k norms, its
    /// NoPE layers and complex rotary table: [`Router::Llama4`]).
    pub fn llama4(&self) -> bool {
        self.moe.is_some_and(|m| m.router == Router::Llama4)
    }

    /// MoE layers: all but the leading dense ones (0 for a dense model).
    pub fn moe_layers(&self) -> u64 {
        self.moe
            .map_or(0, |m| self.layers.saturating_sub(m.first_dense))
    }

    /// Attention parameters of one layer (Llama family).
    fn attention_params(&self) -> u64 {
        let h = self.hidden;
        match self.mla {
            // `DeepseekV3Attention`: q_a_proj, q_a_layernorm, q_b_proj (or
            // q_proj), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj.
            Some(m) => {
                let qk = m.nope_dim + m.rope_dim;
                let q = if m.q_rank > 0 {
                    h * m.q_rank + m.q_rank + m.q_rank * self.heads * qk
                } else {
                    h * self.heads * qk
                };
                q + h * (m.kv_rank + m.rope_dim)
                    + m.kv_rank
                    + m.kv_rank * self.heads * (m.nope_dim + m.v_dim)
                    + self.heads * m.v_dim * h
            }
            None => {
                let (q, kv) = (self.q_dim(), self.kv_dim());
                let bias = if self.qkv_bias { q + 2 * kv } else { 0 };
                // gpt-oss: a sink per head and o_proj's bias.
                let sinks = if self.attention_sinks {
                    self.heads + h
                } else {
                    0
                };
                h * q + 2 * h * kv + q * h + bias + sinks
            }
        }
    }

    /// Parameters of one layer, split by how parallelism divides them:
    /// `moe_layer` says whether it is a mixture-of-experts layer.
    pub fn layer_param_split(&self, moe_layer: bool) -> LayerParams {
        let (h, f) = (self.hidden, self.ffn);
        match self.family {
            // ln_1, c_attn (h → 3h, bias), c_proj (bias), ln_2, c_fc (bias),
            // c_proj (bias); under grouped-query attention (Megatron-Core's
            // GPT with `--group-query-attention`: Nemotron-4) c_attn is
            // h → h + 2·kv (`linear_qkv`, `attention.py`).
            Family::Gpt2 => LayerParams {
                dense: (h * self.qkv_width() + self.qkv_width())
                    + (h * h + h)
                    + (h * f + f)
                    + (f * h + h),
                experts: 0,
                replicated: 4 * h,
            },
            // q, k, v, o (or latent attention); gate, up, down (or experts);
            // two RMSNorm weights (four with sandwich norms), q/k norms.
            Family::Llama => {
                let norms = if self.sandwich_norms { 4 * h } else { 2 * h };
                // Llama 4's q/k norms are weightless.
                let qk_norm = if self.qk_norm && !self.llama4() {
                    2 * self.head_dim()
                } else {
                    0
                };
                // Falcon-H1: the Mamba-2 mixer beside the attention, split
                // by heads under tensor parallelism as the attention is.
                let attention =
                    self.attention_params() + self.ssm.map_or(0, |m| m.params(self.hidden));
                match self.moe.filter(|_| moe_layer) {
                    // Each expert a SwiGLU MLP; the router a bias-free
                    // h → E projection (`nn.Linear(h, E, bias=False)`).
                    // Qwen2-MoE's shared-expert gate: h → 1.
                    // gpt-oss: the router's bias (E) and each expert's
                    // biases (2F + h).
                    Some(m) => {
                        let oss = m.router == Router::GptOss;
                        LayerParams {
                            dense: attention + 3 * h * m.shared_ffn,
                            experts: m.experts
                                * (3 * h * m.expert_ffn
                                    + if oss { 2 * m.expert_ffn + h } else { 0 }),
                            replicated: norms
                                + qk_norm
                                + h * m.experts
                                + if m.router == Router::Qwen2 { h } else { 0 }
                                + if oss { m.experts } else { 0 },
                        }
                    }
                    None => LayerParams {
                        dense: attention + 3 * h * f,
                        experts: 0,
                        replicated: norms + qk_norm,
                    },
                }
            }
        }
    }

    /// Parameters of all layers, split as [`Self::layer_param_split`].
    pub fn layers_param_split(&self) -> LayerParams {
        let moe = self.moe_layers();
        let dense = self.layers - moe;
        let (d, m) = (self.layer_param_split(false), self.layer_param_split(true));
        LayerParams {
            dense: dense * d.dense + moe * m.dense,
            experts: moe * m.experts,
            replicated: dense * d.replicated + moe * m.replicated,
        }
    }

    /// The longest sequence the model's positions run: its learned table's
    /// rows (the gpt2 shape's; the llama family's are rotary, `check`
    /// refuses a table there), `None` under rotary positions.
    /// `transformers`' GPT-2 indexes `wpe` no further; Megatron-LM asserts
    /// `max_position_embeddings >= seq_length`.
    pub fn learned_positions(&self) -> Option<u64> {
        (self.positions > 0).then_some(self.positions)
    }

    /// Input embedding parameters (and learned positions).
    pub fn embedding_params(&self) -> u64 {
        (self.vocab + self.positions) * self.hidden
    }

    /// Output layer parameters (0 when tied to the embedding).
    pub fn head_params(&self) -> u64 {
        if self.tied_embeddings {
            0
        } else {
            self.vocab * self.hidden
        }
    }

    /// Final norm parameters (LayerNorm's weight and bias for GPT-2).
    pub fn final_norm_params(&self) -> u64 {
        match self.family {
            Family::Gpt2 => 2 * self.hidden,
            Family::Llama => self.hidden,
        }
    }

    /// Total parameters (Radford et al. 2019, GPT-2; Touvron et al. 2023,
    /// Llama 2, Table 1 and the released configs; the MoE and latent
    /// attention terms as in [`Self::layer_param_split`]). Shared tensors
    /// count once; buffers do not count ([`Self::buffers`]).
    pub fn params(&self) -> u64 {
        self.layers_param_split().total()
            + self.embedding_params()
            + self.head_params()
            + self.final_norm_params()
    }

    /// Persistent buffers the checkpoint stores beside the parameters:
    /// DeepSeek-V3's score-correction bias, E per MoE layer. The published
    /// total (671 B for DeepSeek-V3's main model) is `params() + buffers()`.
    pub fn buffers(&self) -> u64 {
        self.moe
            .filter(|m| m.router == Router::DeepSeek)
            .map_or(0, |m| self.moe_layers() * m.experts)
    }

    /// Parameters one token passes through: the routed experts count k of
    /// E (Jiang et al. 2024, §2: "13B active" of Mixtral's 47B).
    pub fn active_params(&self) -> u64 {
        match self.moe {
            Some(m) => {
                let per_expert = 3 * self.hidden * m.expert_ffn;
                self.params()
                    - self.moe_layers() * (m.experts - m.top_k.min(m.experts)) * per_expert
            }
            None => self.params(),
        }
    }

    /// Number of parameter tensors (PyTorch's AdamW keeps a 4-byte `step`
    /// tensor for each).
    pub fn param_tensors(&self) -> u64 {
        match self.family {
            // 12 per layer (6 weights, 6 biases); wte, wpe; ln_f weight and bias.
            Family::Gpt2 => 12 * self.layers + 4 + u64::from(!self.tied_embeddings),
            // q, k, v, o (+3 biases, +2 q/k norms) or latent attention's 7
            // (5 without a query latent); two or four norms; the MLP's 3,
            // or under MoE the router, the experts fused into
            // two 3-D tensors (`gate_up_proj`, `down_proj`, `transformers`
            // 5.x) and the shared experts' 3; embedding, final norm, output.
            Family::Llama => {
                let attention = match self.mla {
                    Some(m) => {
                        if m.q_rank > 0 {
                            7
                        } else {
                            5
                        }
                    }
                    None => {
                        4 + if self.qkv_bias { 3 } else { 0 }
                            + if self.attention_sinks { 2 } else { 0 }
                    }
                } + if self.qk_norm && !self.llama4() { 2 } else { 0 }
                    + if self.sandwich_norms { 4 } else { 2 }
                    + self.ssm.map_or(0, |m| m.tensors());
                let moe = self.moe_layers();
                let mlp = self.moe.map_or(0, |m| {
                    let gate = u64::from(m.router == Router::Qwen2);
                    // gpt-oss: the router's bias and the experts' two.
                    let biases = if m.router == Router::GptOss { 3 } else { 0 };
                    moe * (1 + 2 + if m.shared_ffn > 0 { 3 } else { 0 } + gate + biases)
                });
                attention * self.layers
                    + 3 * (self.layers - moe)
                    + mlp
                    + 2
                    + u64::from(!self.tied_embeddings)
            }
        }
    }

    /// The weight matrices of one layer of a dense model without latent
    /// attention, as (rows, columns): what Muon orthogonalizes and Adafactor
    /// factors. `None` for experts (3-D tensors) and latent attention.
    pub fn layer_matrices(&self) -> Option<Vec<(u64, u64)>> {
        if self.moe.is_some() || self.mla.is_some() {
            return None;
        }
        let (h, f, q, kv) = (self.hidden, self.ffn, self.q_dim(), self.kv_dim());
        Some(match self.family {
            // Conv1D weights are (in, out): c_attn, c_proj, c_fc, c_proj.
            Family::Gpt2 => vec![(h, self.qkv_width()), (h, h), (h, f), (f, h)],
            // q, k, v, o; gate, up, down (`nn.Linear` weights are (out, in)).
            Family::Llama => vec![(q, h), (kv, h), (kv, h), (h, q), (f, h), (f, h), (h, f)],
        })
    }

    /// The model's matrices outside the layers, as (rows, columns): the
    /// embedding, the output layer unless tied, GPT-2's learned positions.
    pub fn outer_matrices(&self) -> Vec<(u64, u64)> {
        let mut m = vec![(self.vocab, self.hidden)];
        if !self.tied_embeddings {
            m.push((self.vocab, self.hidden));
        }
        if self.family == Family::Gpt2 {
            m.push((self.positions, self.hidden));
        }
        m
    }

    /// Input and output widths of one adaptable projection.
    pub(crate) fn projection(&self, target: u16) -> (u64, u64) {
        let (h, f) = (self.hidden, self.ffn);
        match target {
            LoraTargets::Q => (h, self.q_dim()),
            LoraTargets::K => (h, self.kv_dim()),
            LoraTargets::V => (h, self.v_dim()),
            LoraTargets::O => (self.o_dim(), h),
            LoraTargets::GATE | LoraTargets::UP => (h, f),
            _ => (f, h),
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
        self.layers * per_layer + self.outer_lora_params(rank, targets)
    }

    /// LoRA's parameters outside the layers: on the output layer A is
    /// r × h and B V × r; on the embedding A is r × V and B h × r (PEFT's
    /// `lora_embedding_A`, `lora_embedding_B`).
    pub fn outer_lora_params(&self, rank: u64, targets: LoraTargets) -> u64 {
        let table = rank * (self.vocab + self.hidden);
        u64::from(targets.lm_head()) * table + u64::from(targets.embed()) * table
    }
}

/// Which projections LoRA adapts: the layers' (bits 0–6) and, beside
/// them, the output layer and the embedding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoraTargets(pub u16);

impl LoraTargets {
    /// Query projection.
    pub const Q: u16 = 1;
    /// Key projection.
    pub const K: u16 = 2;
    /// Value projection.
    pub const V: u16 = 4;
    /// Attention output projection.
    pub const O: u16 = 8;
    /// SwiGLU gate projection (Llama only).
    pub const GATE: u16 = 16;
    /// MLP up projection (GPT-2's c_fc).
    pub const UP: u16 = 32;
    /// MLP down projection (GPT-2's c_proj).
    pub const DOWN: u16 = 64;
    /// The layers' seven projections (`all`).
    pub const LAYERS: u16 = 127;
    /// The output layer (`lm_head`; PEFT's `Linear`, r × h and V × r).
    pub const LM_HEAD: u16 = 128;
    /// The embedding (`embed_tokens`; PEFT's `Embedding`, r × V and h × r).
    pub const EMBED: u16 = 256;
    const NAMES: [(&'static str, u16); 7] = [
        ("q", Self::Q),
        ("k", Self::K),
        ("v", Self::V),
        ("o", Self::O),
        ("gate", Self::GATE),
        ("up", Self::UP),
        ("down", Self::DOWN),
    ];
    const OUTER: [(&'static str, u16); 2] = [("lm_head", Self::LM_HEAD), ("embed", Self::EMBED)];

    /// The layers' targets one by one.
    pub fn iter(self) -> impl Iterator<Item = u16> {
        Self::NAMES
            .into_iter()
            .map(|(_, bit)| bit)
            .filter(move |bit| self.any(*bit))
    }

    /// How many projections per layer.
    pub fn count(self) -> u64 {
        u64::from((self.0 & Self::LAYERS).count_ones())
    }

    /// Whether any of the projections `bits` names is adapted.
    pub fn any(self, bits: u16) -> bool {
        self.0 & bits != 0
    }

    /// Whether the output layer is adapted.
    pub fn lm_head(self) -> bool {
        self.any(Self::LM_HEAD)
    }

    /// Whether the embedding is adapted.
    pub fn embed(self) -> bool {
        self.any(Self::EMBED)
    }

    /// `q,v` style.
    pub fn names(self) -> String {
        let names: Vec<&str> = Self::NAMES
            .iter()
            .chain(Self::OUTER.iter())
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
    /// `q,v`, `q,k,v,o,gate,up,down`, `all` (the seven), and `lm_head`,
    /// `embed` beside them (`all,lm_head`).
    fn from_str(s: &str) -> Result<Self, String> {
        let mut bits = 0;
        for part in s.split(',').map(str::trim) {
            let bit = if part.eq_ignore_ascii_case("all") {
                Some(Self::LAYERS)
            } else {
                Self::NAMES
                    .iter()
                    .chain(Self::OUTER.iter())
                    .find(|(n, _)| n.eq_ignore_ascii_case(part))
                    .map(|(_, b)| *b)
            };
            bits |= bit.ok_or_else(|| {
                format!("LoRA targets are q, k, v, o, gate, up, down or all, and lm_head, embed (got '{part}')")
            })?;
        }
        Ok(Self(bits))
    }
}
