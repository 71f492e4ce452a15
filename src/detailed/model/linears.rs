//! One layer's linear layers, as a table: each projection's input and
//! output widths per token, whether it adds a bias, and how many times a
//! token passes through it. The layer's matrix multiplies are read from
//! here, once, by every part that needs their shapes: the FLOPs
//! ([`crate::detailed::time::flops`]), the step time's matrix multiplies
//! ([`crate::detailed::time::steptime`]), QLoRA's quantized weights
//! ([`crate::detailed::memory::quant`]) and per-operator checkpointing's
//! cache ([`crate::detailed::memory::sac`]).
//!
//! ```
//! use membudget::detailed::model::linears::Part;
//! use membudget::detailed::preset;
//!
//! let llama = preset("llama-3.1-8b").unwrap().arch;
//! let names: Vec<&str> = llama.linears(false).iter().map(|l| l.name).collect();
//! assert_eq!(names, ["q", "k", "v", "o", "gate", "up", "down"]);
//! // Multiply-adds per token: the layer's matrices, 218.1 M.
//! let weights: u64 = llama.linears(false).iter().map(|l| l.weights_per_token()).sum();
//! assert_eq!(weights, 218_103_808);
//! assert!(llama.linears(false).iter().all(|l| l.part != Part::Experts));
//! ```

use super::arch::{Architecture, Family};

/// Which part of the layer a linear layer belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The attention's projections (q, k, v, o, or latent attention's).
    Attention,
    /// A hybrid's Mamba-2 mixer's input and output projections.
    Mixer,
    /// A dense MLP (or a mixture of experts' shared expert).
    Mlp,
    /// A mixture of experts' router.
    Router,
    /// The routed experts' projections.
    Experts,
}

/// One linear layer of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Linear {
    /// Its name, after the module `transformers` gives it (`q` for
    /// `q_proj`, `c_attn` for GPT-2's fused projection).
    pub name: &'static str,
    /// The part of the layer it belongs to.
    pub part: Part,
    /// The width of its input, per token.
    pub input: u64,
    /// The width of its output, per token.
    pub out: u64,
    /// Whether it adds a bias (runs as `aten.addmm`).
    pub bias: bool,
    /// How many of it one token passes through: top-k for the routed
    /// experts' projections, 1 otherwise.
    pub per_token: u64,
}

impl Linear {
    /// A bias-free linear layer every token passes through once.
    const fn new(name: &'static str, part: Part, input: u64, out: u64) -> Self {
        Self {
            name,
            part,
            input,
            out,
            bias: false,
            per_token: 1,
        }
    }

    /// The same with a bias, or not.
    const fn biased(self, bias: bool) -> Self {
        Self { bias, ..self }
    }

    /// Its weight's elements: in × out.
    pub fn weights(&self) -> u64 {
        self.input * self.out
    }

    /// Multiply-adds one token makes in it: its weights, as many times as
    /// the token passes through it.
    pub fn weights_per_token(&self) -> u64 {
        self.per_token * self.weights()
    }
}

impl Architecture {
    /// One layer's linear layers in the order its forward pass runs them
    /// (`moe`: a mixture-of-experts layer): the attention's, a hybrid's
    /// mixer's, then the MLP's (or the router's, the routed experts' and
    /// the shared expert's). Qwen2-MoE's h → 1 shared-expert gate is
    /// counted with the norms (in the parameters), not here.
    pub fn linears(&self, moe: bool) -> Vec<Linear> {
        let mut out = self.attention_linears();
        if let Some(m) = self.ssm {
            out.push(Linear::new(
                "in_proj",
                Part::Mixer,
                self.hidden,
                m.in_width(),
            ));
            out.push(Linear::new("out_proj", Part::Mixer, m.inner(), self.hidden));
        }
        out.extend(self.mlp_linears(moe));
        out
    }

    /// The attention's projections: GPT-2's fused `c_attn` and `c_proj`
    /// (all biased), latent attention's low-rank projections
    /// (`DeepseekV3Attention`: q_a_proj, q_b_proj or q_proj,
    /// kv_a_proj_with_mqa, kv_b_proj, o_proj), or q, k, v and o (q, k and v
    /// biased in Qwen2; o biased beside gpt-oss's sinks).
    fn attention_linears(&self) -> Vec<Linear> {
        let h = self.hidden;
        let (q, kv, o) = (self.q_dim(), self.kv_dim(), self.o_dim());
        let a = Part::Attention;
        if self.family == Family::Gpt2 {
            return vec![
                Linear::new("c_attn", a, h, q + 2 * kv).biased(true),
                Linear::new("c_proj", a, o, h).biased(true),
            ];
        }
        let Some(m) = self.mla else {
            return vec![
                Linear::new("q", a, h, q).biased(self.qkv_bias),
                Linear::new("k", a, h, kv).biased(self.qkv_bias),
                Linear::new("v", a, h, kv).biased(self.qkv_bias),
                Linear::new("o", a, o, h).biased(self.attention_sinks),
            ];
        };
        let qk = self.heads * (m.nope_dim + m.rope_dim);
        let mut out = if m.q_rank > 0 {
            vec![
                Linear::new("q_a", a, h, m.q_rank),
                Linear::new("q_b", a, m.q_rank, qk),
            ]
        } else {
            vec![Linear::new("q", a, h, qk)]
        };
        out.extend([
            Linear::new("kv_a", a, h, m.kv_rank + m.rope_dim),
            Linear::new("kv_b", a, m.kv_rank, self.heads * (m.nope_dim + m.v_dim)),
            Linear::new("o", a, o, h),
        ]);
        out
    }

    /// The MLP's projections: GPT-2's `c_fc` and `c_proj` (biased),
    /// Llama's gate, up and down, or a mixture of experts' router
    /// (`nn.Linear(h, E, bias=False)`), its routed experts' gate, up and
    /// down (each token through top-k of them) and its shared expert's.
    fn mlp_linears(&self, moe: bool) -> Vec<Linear> {
        let (h, f) = (self.hidden, self.ffn);
        let dense = |f: u64| {
            let p = Part::Mlp;
            [
                Linear::new("gate", p, h, f),
                Linear::new("up", p, h, f),
                Linear::new("down", p, f, h),
            ]
        };
        if self.family == Family::Gpt2 {
            let p = Part::Mlp;
            return vec![
                Linear::new("c_fc", p, h, f).biased(true),
                Linear::new("c_proj", p, f, h).biased(true),
            ];
        }
        let Some(m) = self.moe.filter(|_| moe) else {
            return dense(f).to_vec();
        };
        let mut out = vec![Linear::new("router", Part::Router, h, m.experts)];
        out.extend(dense(m.expert_ffn).map(|l| Linear {
            part: Part::Experts,
            per_token: m.top_k,
            ..l
        }));
        if m.shared_ffn > 0 {
            out.extend(dense(m.shared_ffn));
        }
        out
    }
}
