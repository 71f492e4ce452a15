//! One layer's forward for `m` tokens on one GPU ([`layer_forward`]),
//! split into matrix multiplies, attention and memory-bound kernels, each
//! priced by the roofline without overlap ([`gemm`], Williams et al. 2009)
//! on the layer's tensor-parallel shard (Shoeybi et al. 2019, §3): the
//! attention's projections, the MLP (dense, or a MoE layer's router and
//! experts), the attention core (FlashAttention's causal half, Dao 2023, or
//! eager attention's scores), a hybrid layer's Mamba-2 mixer, and the
//! memory-bound kernels and float8 casts of [`super::kernels`].

use super::kernels::{fp8_cast_bytes, moe_token_bytes, per_token_bytes};
use super::rates::{gemm, Rates};
use crate::detailed::config::{AttentionKernel, DetailedConfig, Profile};
use crate::detailed::model::{Family, Mamba2, Moe};

/// A layer's widths, each as a float, on one GPU's tensor-parallel shard.
#[derive(Clone, Copy)]
pub(super) struct Widths {
    /// Tensor-parallel degree, t.
    pub t: f64,
    /// Hidden size.
    pub h: f64,
    /// Sequence length (the attention's, whole under context parallelism).
    pub s: f64,
    /// Query width.
    pub q: f64,
    /// Key (and value) width.
    pub kv: f64,
    /// Attention output's width.
    pub o: f64,
    /// A gated MLP (Llama's SwiGLU).
    pub gated: bool,
    /// The MLP's input projections: 2 with a gate, else 1.
    pub up: f64,
}

impl Widths {
    /// `cfg`'s layer widths.
    pub(super) fn new(cfg: &DetailedConfig) -> Self {
        let a = &cfg.arch;
        let t = cfg.parallel.tp.max(1) as f64;
        let (h, s) = (a.hidden as f64, cfg.seq as f64);
        let (q, kv, o) = (a.q_dim() as f64, a.kv_dim() as f64, a.o_dim() as f64);
        let gated = a.family == Family::Llama;
        let up = if gated { 2.0 } else { 1.0 };
        Self {
            t,
            h,
            s,
            q,
            kv,
            o,
            gated,
            up,
        }
    }
}

/// Forward seconds of one layer for `m` tokens on one GPU, split into
/// matrix multiplies, attention and memory-bound kernels.
pub(super) fn layer_forward(cfg: &DetailedConfig, moe: bool, m: f64, r: &Rates) -> (f64, f64, f64) {
    let w = Widths::new(cfg);
    let mut mm = projections(cfg, &w, m, r);
    let act_width = mlp(cfg, &w, moe, m, r, &mut mm);
    let (mut attn, scores_bytes) = attention_core(cfg, &w, m, r);
    let mut per_token = per_token_bytes(cfg, &w, act_width);
    let cast = fp8_cast_bytes(cfg, &w, moe, m, r.fp8_any_layout);
    let routing = moe_token_bytes(cfg, &w, moe, m);
    if let Some(mx) = cfg.arch.ssm {
        let (matmul, scan, bytes) = mixer(cfg, &w, mx, m, r);
        mm += matmul;
        attn += scan;
        per_token += bytes;
    }
    let mem = (per_token * m + scores_bytes + cast + routing) / r.bytes;
    (mm, attn, mem)
}

/// A MoE layer's compute on either side of its expert all-to-alls, one
/// micro-batch of `m` tokens, seconds: the attention before the dispatch
/// (its projections and core) and the experts between the dispatch and
/// the combine (the router, shared and routed experts' products), forward
/// and backward (two products per weight; the attention core's backward
/// as [`super::compute::backward_attention`] prices it). What Megatron-Core's
/// combined 1F1B schedule puts beside another micro-batch's all-to-alls
/// ([`super::model_parallel::expert_parallel`]). The memory-bound kernels
/// are left out of it: what hides the all-to-alls is counted low, not high.
#[derive(Clone, Copy, Debug)]
pub(super) struct MoeHalves {
    /// The attention's forward, before the dispatch.
    pub pre_forward: f64,
    /// The experts' forward, between the dispatch and the combine.
    pub mlp_forward: f64,
    /// The attention's backward, after the dispatch's gradient.
    pub pre_backward: f64,
    /// The experts' backward: the input's gradient and the weights'.
    pub mlp_backward: f64,
}

/// [`MoeHalves`] of `cfg`'s MoE layer for `m` tokens.
pub(super) fn moe_halves(cfg: &DetailedConfig, m: f64, r: &Rates) -> MoeHalves {
    let w = Widths::new(cfg);
    let proj = projections(cfg, &w, m, r);
    let mut experts = 0.0;
    mlp(cfg, &w, true, m, r, &mut experts);
    let (core, _) = attention_core(cfg, &w, m, r);
    MoeHalves {
        pre_forward: proj + core,
        mlp_forward: experts,
        pre_backward: 2.0 * proj + super::compute::backward_attention(cfg, r, core),
        mlp_backward: 2.0 * experts,
    }
}

/// The matrix multiplies Megatron's whole-module recomputation runs again
/// in one layer for `m` tokens, seconds: (a MoE layer's: its router and
/// experts under `moe`, its shared experts under `shared_experts`; a
/// dense layer's MLP under `mlp`).
pub(super) fn recomputed_mlp(cfg: &DetailedConfig, m: f64, r: &Rates) -> (f64, f64) {
    let rm = cfg.megatron_recompute_modules();
    let w = Widths::new(cfg);
    let whole = |moe: bool| {
        let mut mm = 0.0;
        mlp(cfg, &w, moe, m, r, &mut mm);
        mm
    };
    let moe = match cfg.arch.moe {
        Some(_) if rm.moe => whole(true),
        Some(e) if rm.shared_experts => shared_experts(&w, e, m, r),
        _ => 0.0,
    };
    let dense = if rm.mlp { whole(false) } else { 0.0 };
    (moe, dense)
}

/// The four matrix multiplies of a dense layer beside tensor
/// parallelism's collectives under sequence parallelism, forward seconds
/// for `m` tokens: the attention's input projections (after an
/// all-gather) and output projection (before a reduce-scatter), the MLP's
/// up (and gate) projection (after an all-gather) and down projection
/// (before a reduce-scatter) (Korthikanti et al. 2022, §4.2.2, Fig. 5).
pub(super) fn tp_gemms(cfg: &DetailedConfig, m: f64, r: &Rates) -> [f64; 4] {
    let w = Widths::new(cfg);
    let Widths { t, h, o, up, .. } = w;
    let out = gemm(m, o / t, h, r.linear, r.bytes);
    let f = cfg.arch.ffn as f64 / t;
    [
        projections(cfg, &w, m, r) - out,
        out,
        gemm(m, h, up * f, r.linear, r.bytes),
        gemm(m, f, h, r.linear, r.bytes),
    ]
}

/// The attention's projections for `m` tokens, seconds: q, k and v (or
/// MLA's low-rank projections) and the output.
fn projections(cfg: &DetailedConfig, w: &Widths, m: f64, r: &Rates) -> f64 {
    let a = &cfg.arch;
    let Widths { t, h, q, kv, o, .. } = *w;
    // Attention projections: column-parallel in, row-parallel out
    // (Shoeybi et al. 2019, §3).
    match a.mla {
        Some(_) => {
            let w = crate::detailed::time::flops::layer_matmul_weights(a, false)
                - 3.0 * h * a.ffn as f64;
            gemm(m, h, w / h / t, r.linear, r.bytes)
        }
        None => {
            gemm(m, h, (q + 2.0 * kv) / t, r.linear, r.bytes) + gemm(m, o / t, h, r.linear, r.bytes)
        }
    }
}

/// The MLP's matrix multiplies for `m` tokens, seconds, added to `mm`
/// (dense, or a MoE layer's routed experts, [`routed_experts`], and shared
/// ones); returns the activation's width per token, the elements its
/// memory-bound kernel writes.
fn mlp(cfg: &DetailedConfig, w: &Widths, moe: bool, m: f64, r: &Rates, mm: &mut f64) -> f64 {
    let a = &cfg.arch;
    let Widths { t, h, up, .. } = *w;
    // The MLP: up (and gate) column-parallel, down row-parallel.
    let mut act_width = 0.0;
    match a.moe.filter(|_| moe) {
        Some(e) => {
            let (routed, width) = routed_experts(cfg, w, e, m, r);
            *mm += routed;
            act_width += width;
            *mm += shared_experts(w, e, m, r);
            act_width += e.shared_ffn as f64 / t;
        }
        None => {
            let f = a.ffn as f64 / t;
            *mm += gemm(m, h, up * f, r.linear, r.bytes) + gemm(m, f, h, r.linear, r.bytes);
            act_width += f;
        }
    }
    act_width
}

/// A MoE layer's shared experts' products for `m` tokens, seconds (none
/// without them): up (and gate) column-parallel, down row-parallel.
fn shared_experts(w: &Widths, e: Moe, m: f64, r: &Rates) -> f64 {
    if e.shared_ffn == 0 {
        return 0.0;
    }
    let Widths { t, h, up, .. } = *w;
    let fs = e.shared_ffn as f64 / t;
    gemm(m, h, up * fs, r.linear, r.bytes) + gemm(m, fs, h, r.linear, r.bytes)
}

/// A MoE layer's router and the routed experts this GPU holds, for `m`
/// tokens: seconds, and the activation's width per token.
fn routed_experts(cfg: &DetailedConfig, w: &Widths, e: Moe, m: f64, r: &Rates) -> (f64, f64) {
    let p = &cfg.parallel;
    let Widths { t, h, up, .. } = *w;
    let et = p.etp.max(1) as f64;
    let local = (e.experts as f64 / p.ep.max(1) as f64).max(1.0);
    // Token-expert pairs this GPU computes: each token meets top-k
    // experts, spread evenly (the load-balancing loss's aim), and
    // the ranks that split an expert (etp) share their tokens.
    // `transformers` runs Llama 4's every expert on every token
    // (`Llama4TextMoe`: `hidden_states.repeat(E, 1)`, one bmm):
    // under the "hf" profile E pairs per token, not k.
    let pairs = if cfg.profile == Profile::Hf && e.router == crate::detailed::model::Router::Llama4
    {
        e.experts
    } else {
        e.top_k
    };
    let routed = m * pairs as f64 * et / t;
    let per_expert = routed / local;
    let f = e.expert_ffn as f64 / et;
    let mm = gemm(m, h, e.experts as f64, r.flops, r.bytes)
        + local
            * (gemm(per_expert, h, up * f, r.flops, r.bytes)
                + gemm(per_expert, f, h, r.flops, r.bytes));
    (mm, routed / m * f)
}

/// The attention core for `m` tokens: seconds of its score and value
/// products, and the bytes eager attention moves through its scores.
fn attention_core(cfg: &DetailedConfig, w: &Widths, m: f64, r: &Rates) -> (f64, f64) {
    let Widths { t, s, q, o, .. } = *w;
    // Attention core over a sequence: the heads split by t.
    let core = 2.0 * s * (q + o) / t * m;
    match cfg.attention {
        // Causal FlashAttention skips the masked half.
        AttentionKernel::Flash => (0.5 * core / r.attention, 0.0),
        AttentionKernel::Eager => {
            // Softmax reads and writes the a·s scores per token; dropout
            // reads, writes and keeps a 1-byte mask.
            let per_elem = if cfg.dropout { 9.0 } else { 4.0 };
            let elems = cfg.arch.heads as f64 / t * s * m;
            (core / r.flops, per_elem * elems)
        }
    }
}

/// A hybrid layer's Mamba-2 mixer for `m` tokens: seconds of its
/// projections and of its scan, and its memory traffic in bytes per token.
fn mixer(cfg: &DetailedConfig, widths: &Widths, mx: Mamba2, m: f64, r: &Rates) -> (f64, f64, f64) {
    let Widths { t, h, s, .. } = *widths;
    let eager = cfg.profile == Profile::Hf;
    // A hybrid layer's Mamba-2 mixer (Falcon-H1), its heads split by t:
    // the two projections as linear layers; the convolution and the SSD
    // scan's chunked products ([`crate::detailed::time::flops::scan_flops`])
    // at the fused kernels' rate, or as PyTorch's einsums in fp32 under
    // "hf"; and memory traffic: `mamba_ssm`'s combined kernel reads the
    // projection's output and writes the scan's and the gated output, while
    // the eager path writes every tensor it keeps (read back by the next op).
    let (d, w) = (mx.inner() as f64, mx.in_width() as f64);
    let mm = gemm(m, h, w / t, r.linear, r.bytes) + gemm(m, d / t, h, r.linear, r.bytes);
    let scan = crate::detailed::time::flops::scan_flops(mx, cfg.seq) / t * m;
    let p16 = crate::detailed::memory::bytes::act_bytes(cfg);
    if eager {
        let (_, kept) = crate::detailed::memory::mixer::saved(cfg, mx, 1.0);
        (mm, scan / r.flops, 2.0 * kept / s / t)
    } else {
        (mm, scan / r.attention, (w + 2.0 * d) * p16 / t)
    }
}
