//! A layer's memory-bound kernels, in bytes at the memory's sustained
//! rate: norms, residual adds, the MLP's activation, rotary embeddings and
//! dropout as Megatron's fused kernels or `transformers`' eager ops run
//! them, context parallelism's merging of partial attention outputs
//! (Transformer Engine), and float8's casts (torchao's `Float8Linear`).

use super::layer::Widths;
use crate::detailed::config::{DetailedConfig, Fp8, Profile};
use crate::detailed::model::Router;

/// Bytes per token Megatron's output-discarding recomputation
/// ([`crate::detailed::config::RecomputeModules`]) reads and writes again
/// in backward: (in each MoE layer, in every layer). `layernorm` reruns the
/// norms that are modules of their own, each a forward of the fused norm
/// (read h, write h, at 16 bits, as [`per_token_bytes`] prices it): a MoE
/// layer's pre-MLP norm and multi-latent attention's input norm.
/// `mla_up_proj` reruns the rotary embedding of multi-latent attention's
/// q and k (read, write: 4 bytes an element, as [`per_token_bytes`]).
/// `moe_act` reruns the routed experts' activation over the k·F/t elements
/// a token's copies give this GPU (read the gate and up outputs, write
/// the product: 2·(up + 1) bytes an element). The whole modules rerun
/// their forward's memory-bound kernels: `mlp` a dense layer's fused norm
/// and activation, `shared_experts` the shared experts' activation, `moe`
/// those, the routed experts' activation and the token handling
/// ([`moe_token_bytes`]). Returns (in each MoE layer, in each dense
/// layer, in every layer).
pub(super) fn recomputed_module_bytes(cfg: &DetailedConfig, w: &Widths) -> (f64, f64, f64) {
    let rm = cfg.megatron_recompute_modules();
    let sp = if cfg.parallel.sp { w.t } else { 1.0 };
    let norm = 4.0 * w.h / sp;
    let act = |width: f64| 2.0 * (w.up + 1.0) * width / w.t;
    let (mut moe, mut every) = (0.0, 0.0);
    let dense = if rm.mlp {
        norm + act(cfg.arch.ffn as f64)
    } else {
        0.0
    };
    if rm.layernorm {
        moe += norm;
        if cfg.arch.mla.is_some() {
            every += norm;
        }
    }
    // `mla_up_proj` reruns the rotary embedding on q and k as well (the
    // up-projections' products are priced with the matrix multiplies).
    if rm.mla_up_proj && cfg.arch.mla.is_some() {
        every += 4.0 * (w.q + w.kv) / w.t;
    }
    if let Some(e) = cfg.arch.moe {
        let routed = act((e.top_k * e.expert_ffn) as f64);
        let shared = act(e.shared_ffn as f64);
        if rm.moe {
            moe += routed + shared + moe_token_bytes(cfg, w, true, 1.0);
        } else {
            moe += if rm.moe_act { routed } else { 0.0 }
                + if rm.shared_experts { shared } else { 0.0 };
        }
    }
    (moe, dense, every)
}

/// Bytes per token one layer's memory-bound kernels read and write,
/// forward, with the MLP's activation `act_width` elements wide.
pub(super) fn per_token_bytes(cfg: &DetailedConfig, w: &Widths, act_width: f64) -> f64 {
    let p = &cfg.parallel;
    let Widths {
        t,
        h,
        q,
        kv,
        o,
        gated,
        up,
        ..
    } = *w;
    // Memory-bound kernels, bytes per token at 16 bits. Fused kernels
    // (Megatron, MPT): two norms (read h, write h), two residual adds
    // (read 2h, write h), the MLP's activation (read the up and gate
    // outputs, write f), rotary embeddings on q and k (read, write),
    // dropout after attention and MLP (read, write, 1-byte mask). The "hf"
    // profile runs them as PyTorch's eager ops, one kernel each
    // (`transformers`' `LlamaRMSNorm`: cast to fp32, square, mean, scale,
    // cast back, weight: 36 bytes an element; `apply_rotary_pos_emb`: two
    // products, the rotated half's negation and concatenation, the sum: 20;
    // SwiGLU's SiLU then product: 10 bytes per FFN element instead of 6).
    // Norms, residuals and dropout run on every tensor-parallel rank unless
    // sequence parallelism splits them.
    let sp = if p.sp { t } else { 1.0 };
    // `torch.compile` (inductor) fuses each chain of pointwise ops and the
    // reduction beside it into one generated kernel (Ansel et al. 2024,
    // "PyTorch 2", ASPLOS, the TorchInductor section;
    // `torch/_inductor/scheduler.py`, `Scheduler.fuse_nodes`, torch
    // 2.15): RMSNorm, the rotation and
    // SwiGLU then read and write their tensors once, as the fused
    // profile's kernels do. What the partitioner recomputes in backward is
    // fused into the backward's kernels, which read the saved inputs
    // instead of the saved outputs: no traffic added, so the backward stays
    // at twice the forward's.
    let eager = cfg.profile == Profile::Hf && !cfg.compile;
    // GPT-2's LayerNorm is one kernel in either profile.
    // Liger's kernels (liger-kernel 0.8.5: `ops/rms_norm.py`,
    // `ops/swiglu.py`, `ops/rope.py`) are one Triton kernel each, as
    // Megatron's: the norm reads and writes its tensor once, the rotation
    // rewrites q and k in place, SwiGLU reads the gate and the up outputs
    // and writes their product.
    let (norm, rope, act) = if eager && gated && !cfg.liger {
        (36.0, 20.0, 10.0)
    } else {
        (4.0, 4.0, 2.0 * (up + 1.0))
    };
    let mut per_token = (2.0 * norm * h + 2.0 * 6.0 * h) / sp + act * act_width;
    if gated {
        per_token += rope * (q + kv) / t;
    }
    if cfg.dropout {
        per_token += 2.0 * 5.0 * h / sp;
    }
    // Context parallelism: each of the cp ring steps yields a partial
    // attention output that is merged into an fp32 accumulator (read and
    // written, 8 bytes a value: Transformer Engine's
    // `AttnFuncWithCPAndKVP2P`, `flash_attn_fwd_out_correction`).
    if p.cp > 1 && p.cp_comm == crate::detailed::config::CpComm::P2p {
        per_token += p.cp as f64 * 8.0 * o / t;
    }
    per_token
}

/// Bytes a Megatron-Core MoE layer's token handling reads and writes for
/// `m` tokens beyond the experts' GEMMs and activation, counted so that
/// the caller's forward-and-backward factor of three gives the step's:
/// each kernel below moves as many bytes in backward as in forward (its
/// backward is the inverse copy), so forward and backward together are
/// twice the forward's, entered here as 2/3 of it. Counted from
/// Megatron-LM at 8f1c2f8a (the commit Megatron-Bridge's 26.02 tables pin,
/// `3rdparty/Megatron-LM`), `megatron/core/transformer/moe/`:
///
/// - `token_dispatcher.py`, `MoEAlltoAllTokenDispatcher` (the all-to-all
///   [`super::model_parallel::expert_parallel`] prices), with
///   `moe_permute_fusion`: `dispatch_preprocess`'s `permute` reads each of
///   this rank's m/t tokens once and writes it k times (one row per chosen
///   expert); `combine_postprocess`'s `unpermute` reads the k rows and
///   writes one; with more than one local expert, `dispatch_postprocess`
///   and `combine_preprocess` each run `sort_chunks_by_idxs` over every
///   received row (read and written once), to group the rows by local
///   expert and back;
/// - `experts.py`, `TEGroupedMLP._apply_bias`: biased experts (gpt-oss,
///   `add_bias_linear` in Megatron-Bridge's `GPTOSSProvider`) add the
///   second GEMM's bias outside it (`skip_bias_add=True`) as eager PyTorch
///   ops per local expert, `t + b * p` then `torch.cat`: forward writes
///   `b * p` (one element), reads it and `t` and writes the sum (three),
///   reads and writes it in `cat` (two); backward's two products (`grad *
///   p`, `grad * b`) each read the gradient, write a product and read it
///   in a reduction (six): twelve element passes per row element, in the
///   16-bit dtype (the router's probabilities are the activations' dtype
///   unless `moe_router_dtype` says fp32; GPT-OSS's provider leaves it).
///
/// Other frameworks and the "hf" profile route their tokens in other ways
/// and are not priced here.
pub(super) fn moe_token_bytes(cfg: &DetailedConfig, w: &Widths, moe: bool, m: f64) -> f64 {
    let p = &cfg.parallel;
    let e = match cfg.arch.moe.filter(|_| moe) {
        Some(e) if cfg.megatron_kernels() => e,
        _ => return 0.0,
    };
    let (h, t, k) = (w.h, w.t, e.top_k as f64);
    let p16 = crate::detailed::memory::bytes::act_bytes(cfg);
    let source = m / t;
    let received = source * k * p.etp.max(1) as f64;
    let local = e.experts / p.ep.max(1);
    let mut elements = 2.0 * (1.0 + k) * source;
    if local > 1 {
        elements += 4.0 * received;
    }
    let mut per_step = 2.0 * elements;
    if e.router == Router::GptOss {
        per_step += 12.0 * received;
    }
    per_step * h * p16 / 3.0
}

/// Bytes float8's casts read and write in one layer's forward for `m`
/// tokens (a MoE layer's when `moe`) on a card whose fp8 GEMMs take
/// either layout or not (`any_layout`): none without float8.
pub(super) fn fp8_cast_bytes(
    cfg: &DetailedConfig,
    w: &Widths,
    moe: bool,
    m: f64,
    any_layout: bool,
) -> f64 {
    let a = &cfg.arch;
    let Widths {
        t,
        h,
        q,
        kv,
        o,
        gated,
        up,
        ..
    } = *w;
    // Float8: each converted linear casts its input and its weight (read
    // in the dtype, write one byte; compiled into one kernel each), the
    // inputs of q, k, v, gate and up separately though they are the same
    // tensor (`Float8Linear.forward`); backward's casts of the output
    // gradient and again of the input and weight follow the forward's
    // factor of two.
    if !crate::detailed::memory::fp8::enabled(cfg) {
        return 0.0;
    }
    let p16 = crate::detailed::memory::bytes::act_bytes(cfg) + 1.0;
    let widths = match a.moe.filter(|_| moe) {
        Some(e) if e.shared_ffn > 0 => 5.0 * h + o + e.shared_ffn as f64,
        Some(_) => 3.0 * h + o,
        None if gated => 5.0 * h + o + a.ffn as f64,
        None => 2.0 * h + o + a.ffn as f64,
    };
    let weights = match a.moe.filter(|_| moe) {
        Some(e) => h * (q + 2.0 * kv) + o * h + 3.0 * h * e.shared_ffn as f64,
        None => h * (q + 2.0 * kv) + o * h + (up + 1.0) * h * a.ffn as f64,
    };
    if matches!(cfg.fp8, Fp8::Te | Fp8::TeMxfp8) {
        let inputs = te_cast_inputs(cfg, w, moe);
        let per = te_cast_bytes(cfg, any_layout);
        return te_casts(cfg, inputs, m, weights, per, any_layout) / t;
    }
    p16 * (m * widths + weights) / t
}

/// The widths, per token, of the inputs Transformer Engine casts to fp8 in
/// a kernel of their own, as Megatron-Core runs its recipes (current
/// scaling and MXFP8): every linear layer's input. The two norms' outputs
/// (the attention's and the MLP's input, `TELayerNormColumnParallelLinear`)
/// are quantized after the norm, not by it: under current scaling the
/// norm writes its 16-bit output and its amax, then `quantize_with_amax`
/// casts it (`FUSED_NORM_AMAX_FP8`); under MXFP8 the norm runs unfused and
/// the quantizer casts after it (`UNFUSED`, unless `NVTE_NORM_FWD_USE_CUDNN`
/// is set; `layernorm_fwd`/`rmsnorm_fwd`,
/// `transformer_engine/pytorch/csrc/extensions/normalization.cpp`,
/// TransformerEngine d0067d0: only delayed scaling writes fp8 from the
/// norm's kernel). The attention's output and the MLP's activation reach
/// `TERowParallelLinear` in 16 bits, the activation from Megatron-Core's
/// own fused kernel (`bias_swiglu_impl`, `use_te_activation_func` off:
/// `megatron/core/transformer/mlp.py`, Megatron-LM d98e8a64), and are cast
/// there. A MoE layer casts its shared experts' inputs; its routed
/// experts, which the model prices at the bf16 rate (`layer::routed_experts`:
/// their fp8 rate waits for a source for small grouped GEMMs), are not
/// charged the casts of an fp8 GEMM either.
fn te_cast_inputs(cfg: &DetailedConfig, w: &Widths, moe: bool) -> f64 {
    let a = &cfg.arch;
    let attention = w.h + w.o;
    match a.moe.filter(|_| moe) {
        Some(e) if e.shared_ffn > 0 => attention + w.h + e.shared_ffn as f64,
        Some(_) => attention,
        None => attention + w.h + a.ffn as f64,
    }
}

/// Bytes one element of TE's casts moves: read in 16 bits, written in
/// fp8 once, or twice where a second GEMM reads it in the other layout.
/// Under MXFP8 always: its scales run along the rows for one GEMM and the
/// columns for the other (`MXFP8Quantizer` with row- and column-wise
/// usage; its scales, one byte per 32, left out). Under current scaling on
/// Hopper, whose fp8 GEMMs take one layout: the quantizer writes a
/// transposed copy beside the data (`with_transpose = columnwise_usage &&
/// !is_non_tn_fp8_gemm_supported`, `Float8CurrentScalingQuantizer`,
/// `transformer_engine/pytorch/csrc/quantizer.cpp`, TransformerEngine
/// d0067d0); on Blackwell (`any_layout`) once.
fn te_cast_bytes(cfg: &DetailedConfig, any_layout: bool) -> f64 {
    let p16 = crate::detailed::memory::bytes::act_bytes(cfg);
    match cfg.fp8 {
        Fp8::Te if any_layout => p16 + 1.0,
        _ => p16 + 2.0,
    }
}

/// Bytes Transformer Engine's casts move in one layer's forward for `m`
/// tokens, counted so that the forward-and-backward factor of three the
/// caller applies gives the step's casts: the linear layers' inputs,
/// `inputs` wide a token ([`te_cast_inputs`]), `per` bytes an element
/// ([`te_cast_bytes`]). The `weights` are cast once
/// per optimizer step: Megatron-Core passes `is_first_microbatch` to TE's
/// modules (`megatron/core/extensions/transformer_engine.py`,
/// `TELinear.forward`), which cast the weights and their transposes on
/// the first micro-batch and reuse the cached fp8 copies on the others
/// (`linear.py`, `cache_weight`/`update_workspace`).
///
/// Under `--fp8-param` the weights are fp8 already and not cast by TE
/// ([`te_weight_cast_per_step`]).
fn te_casts(
    cfg: &DetailedConfig,
    inputs: f64,
    m: f64,
    weights: f64,
    per: f64,
    any_layout: bool,
) -> f64 {
    let acc = cfg.accumulation_steps() as f64;
    m * inputs * per + weights * te_weight_cast_per_step(cfg, per, any_layout) / (3.0 * acc)
}

/// The weights' casts once per optimizer step, bytes per weight: `per`,
/// TE's cast of a 16-bit weight (with its transpose where the card needs
/// one).
/// Under `--fp8-param` with the per-tensor recipe the distributed
/// optimizer casts its own shard of the fp32 main weights
/// (`quantize_param_shard`, `megatron/core/fp8_utils.py`, Megatron-LM
/// d98e8a64, into TE's `quantize_master_weights`,
/// `transformer_engine/pytorch/tensor/utils.py`, TransformerEngine
/// d0067d0): `master_weight.to(model_weight.dtype)` (read 4, write 2 bytes)
/// then `update_quantized` into the weight's fp8 `_data` (read 2, write
/// 1): 9 bytes per value of the 1/dp shard under Megatron's default
/// delayed scaling (`fp8_recipe = "delayed"`, `transformer_config.py`;
/// current scaling reads the bf16 shard once more for its amax,
/// `_cast_master_weights_to_fp8_current_scaling`: not priced apart);
/// after the all-gather every
/// GPU makes the whole weight's transpose where its fp8 GEMMs need one
/// (`post_all_gather_processing`: `_create_transpose` unless
/// `is_non_tn_fp8_gemm_supported()`, read 1, write 1; not on Blackwell,
/// `any_layout`). Under MXFP8 the weights arrive
/// in bf16 and are cast whole on every GPU after the gather
/// (`_post_param_sync`, `copy_tensors_to_quantized_params`), as TE casts
/// them without `--fp8-param`: unchanged.
/// With LoRA the base is frozen and built in fp8 under either recipe
/// (`fp8_model_init`): no optimizer step writes it and no gather brings
/// it, so it is never cast again.
///
/// Under `--disable-parameter-transpose-cache` an fp8 parameter's
/// transpose is made for every micro-batch's backward where the card needs
/// one (read a byte, write a byte), not once a step: the micro-batches'
/// transposes, with LoRA's frozen base too.
fn te_weight_cast_per_step(cfg: &DetailedConfig, per: f64, any_layout: bool) -> f64 {
    let transpose = if any_layout { 0.0 } else { 2.0 };
    // Made for every micro-batch's backward and dropped, or once a step.
    let per_use = cfg.transposes_per_use();
    let transposes = if per_use {
        transpose * cfg.accumulation_steps() as f64
    } else {
        transpose
    };
    if cfg.fp8_param && cfg.lora_rank.is_some() {
        return if per_use { transposes } else { 0.0 };
    }
    if !cfg.fp8_param || cfg.fp8 != Fp8::Te {
        return per;
    }
    let dp = cfg.parallel.data_group() as f64;
    9.0 / dp + transposes
}

#[cfg(test)]
mod tests {
    use super::super::testing::llama;
    use super::super::{step_time, Cluster, Efficiency};
    use crate::detailed::config::Fp8;
    use crate::detailed::time::hardware::gpu;

    /// Transformer Engine casts each weight once per optimizer step (the
    /// cached fp8 copies), so the step's casts are a per-micro-batch part
    /// (the linear layers' inputs) times the micro-batches plus the
    /// weights' once: on H100 4 bytes an element of every projection (read
    /// 2, write 1 and the transposed copy 1), on B200 3.
    #[test]
    fn te_casts_weights_once_per_step() {
        for (key, per) in [("h100-sxm", 4.0), ("b200", 3.0)] {
            weights_cast_once(key, per);
        }
        // torchao casts every weight and input on every micro-batch.
        let card = gpu("h100-sxm").unwrap();
        let once = 2.0 * te_memory_bound(card, 1) - te_memory_bound(card, 2);
        let mut c = llama(4096, 2);
        c.micro_batch = Some(1);
        c.fp8 = Fp8::Tensorwise;
        let torchao = step_time(&c, &Cluster::new(card, 8), &Efficiency::default());
        assert!(torchao.parts.memory_bound > te_memory_bound(card, 2) + once);
    }

    /// The memory-bound seconds of Llama 3.1 8B under `--fp8 te` on eight
    /// of `card`, one sequence of 4,096 tokens a micro-batch, `acc` of them.
    fn te_memory_bound(card: crate::detailed::time::hardware::Gpu, acc: u64) -> f64 {
        let mut c = llama(4096, acc);
        c.micro_batch = Some(1);
        c.fp8 = Fp8::Te;
        step_time(&c, &Cluster::new(card, 8), &Efficiency::default())
            .parts
            .memory_bound
    }

    /// The weights' share of TE's casts on the card `key`: `per` bytes a
    /// weight of every projection, once a step.
    fn weights_cast_once(key: &str, per: f64) {
        let card = gpu(key).unwrap();
        let once = 2.0 * te_memory_bound(card, 1) - te_memory_bound(card, 2);
        let a = llama(4096, 1).arch;
        let (h, f) = (a.hidden as f64, a.ffn as f64);
        let weights = h * (a.q_dim() + 2 * a.kv_dim()) as f64 + a.o_dim() as f64 * h + 3.0 * h * f;
        let rate = card.memory_gbps * 1e9 * Efficiency::default().memory;
        let want = a.layers as f64 * per * weights / rate;
        assert!((once / want - 1.0).abs() < 1e-6, "{key}: {once} {want}");
    }

    /// Transformer Engine as Megatron-Core runs it casts every linear
    /// layer's input: Llama 3.1 8B's q/k/v input, attention output, MLP
    /// input and activation, 4,096 + 4,096 + 4,096 + 14,336 elements a
    /// token; a Qwen3-30B-A3B MoE layer its q/k/v input and attention
    /// output (2,048 + 4,096), its routed experts priced at the bf16 rate
    /// and so not cast. Three bytes an element on Blackwell, four under
    /// MXFP8 or on Hopper.
    #[test]
    fn te_casts_every_linear_input() {
        use super::super::layer::Widths;
        use super::{te_cast_bytes, te_cast_inputs};
        use crate::detailed::model::preset;
        let mut c = llama(4096, 1);
        c.fp8 = Fp8::Te;
        assert_eq!(te_cast_inputs(&c, &Widths::new(&c), false), 26_624.0);
        // Blackwell's fp8 GEMMs take either layout; Hopper's need a
        // transposed copy as well.
        assert_eq!(te_cast_bytes(&c, true), 3.0);
        assert_eq!(te_cast_bytes(&c, false), 4.0);
        c.fp8 = Fp8::TeMxfp8;
        assert_eq!(te_cast_bytes(&c, true), 4.0);
        let q = crate::detailed::config::DetailedConfig::new(
            preset("qwen3-30b-a3b").unwrap().arch,
            4096,
            8,
        );
        assert_eq!(te_cast_inputs(&q, &Widths::new(&q), true), 2048.0 + 4096.0);
    }

    /// `--fp8-param` (per-tensor recipe) over 8 H100s: TE no longer casts
    /// the weights (4 bytes an element with their transposes, once per
    /// step); the distributed optimizer casts its eighth of them from fp32
    /// (9 bytes an element) and every GPU transposes the gathered fp8
    /// weights (2 bytes an element): 9/8 + 2 − 4 = 7/8 byte less per
    /// weight of the layers' projections; on B200, no transposes, 9/8 − 3.
    /// The update writes no bf16 copy of them: 2 bytes per linear weight
    /// (6,979,321,856 in Llama 3.1 8B) fewer. Under MXFP8 the cast is
    /// TE's, unchanged.
    #[test]
    fn fp8_param_casts_the_shard_and_transposes() {
        let card = gpu("h100-sxm").unwrap();
        let mut c = llama(4096, 64);
        c.micro_batch = Some(1);
        c.parallel.dp = 8;
        c.parallel.zero = 1;
        c.fp8 = Fp8::Te;
        let at = |c: &crate::detailed::config::DetailedConfig| {
            step_time(c, &Cluster::new(card, 8), &Efficiency::default()).parts
        };
        let off = at(&c);
        c.fp8_param = true;
        let on = at(&c);
        let a = c.arch;
        let (h, f) = (a.hidden as f64, a.ffn as f64);
        let weights = h * (a.q_dim() + 2 * a.kv_dim()) as f64 + a.o_dim() as f64 * h + 3.0 * h * f;
        let rate = card.memory_gbps * 1e9 * Efficiency::default().memory;
        let cast = a.layers as f64 * weights * (9.0 / 8.0 + 2.0 - 4.0) / rate;
        let got = on.memory_bound - off.memory_bound;
        assert!((got / cast - 1.0).abs() < 1e-6, "{got} {cast}");
        let update = off.optimizer - on.optimizer;
        let want = 2.0 * 6_979_321_856.0 / rate;
        assert!((update / want - 1.0).abs() < 1e-9, "{update} {want}");
        c.fp8 = Fp8::TeMxfp8;
        let mx_on = at(&c).memory_bound;
        c.fp8_param = false;
        assert_eq!(mx_on, at(&c).memory_bound);
        // On B200, whose fp8 GEMMs take either layout: TE's cast is 3 bytes
        // and nothing is transposed after the gather, 9/8 − 3 a weight.
        let b200 = gpu("b200").unwrap();
        let on_b200 = |param: bool| {
            let mut c = c;
            c.fp8 = Fp8::Te;
            c.fp8_param = param;
            step_time(&c, &Cluster::new(b200, 8), &Efficiency::default())
                .parts
                .memory_bound
        };
        let rate = b200.memory_gbps * 1e9 * Efficiency::default().memory;
        let cast = a.layers as f64 * weights * (9.0 / 8.0 - 3.0) / rate;
        let got = on_b200(true) - on_b200(false);
        assert!((got / cast - 1.0).abs() < 1e-6, "{got} {cast}");
        // LoRA: the frozen fp8 base is cast never, where without
        // `--fp8-param` TE casts it once a step (3 bytes a weight on B200).
        let lora = |param: bool| {
            let mut c = c;
            c.fp8 = Fp8::Te;
            c.fp8_param = param;
            c.lora_rank = Some(16);
            step_time(&c, &Cluster::new(b200, 8), &Efficiency::default())
                .parts
                .memory_bound
        };
        let cast = a.layers as f64 * weights * 3.0 / rate;
        let got = lora(false) - lora(true);
        assert!((got / cast - 1.0).abs() < 1e-6, "{got} {cast}");
    }

    /// Megatron-Core's MoE token handling, counted by hand for one
    /// GPT-OSS 120B layer of 4,096 tokens (h 2,880, top 4) on EP 64 (two
    /// local experts): permute and unpermute 2 · (1 + 4) · 4,096 rows, the
    /// two local sorts 4 · 16,384, each twice over the step, and the
    /// second GEMM's eager bias 12 passes of the 16,384 received rows:
    /// 409,600 rows of 2,880 bf16 elements, a third of it in the forward.
    /// One local expert needs no sort; Qwen3's experts have no bias; other
    /// frameworks route their tokens in other ways.
    #[test]
    fn moe_token_bytes_as_counted() {
        use super::super::layer::Widths;
        use super::moe_token_bytes;
        use crate::detailed::config::{DetailedConfig, Framework};
        use crate::detailed::model::preset;
        let mut c = DetailedConfig::new(preset("gpt-oss-120b").unwrap().arch, 4096, 64);
        c.parallel.ep = 64;
        let bytes = |c: &DetailedConfig| moe_token_bytes(c, &Widths::new(c), true, 4096.0);
        assert_eq!(bytes(&c), 786_432_000.0);
        assert_eq!(moe_token_bytes(&c, &Widths::new(&c), false, 4096.0), 0.0);
        c.parallel.ep = 128;
        let rows = 2.0 * 2.0 * 5.0 * 4096.0 + 12.0 * 16384.0;
        assert_eq!(bytes(&c), rows * 2880.0 * 2.0 / 3.0);
        let mut q = DetailedConfig::new(preset("qwen3-30b-a3b").unwrap().arch, 4096, 8);
        q.parallel.ep = 8;
        let rows = 2.0 * (2.0 * 9.0 * 4096.0 + 4.0 * 8.0 * 4096.0);
        assert_eq!(bytes(&q), rows * 2048.0 * 2.0 / 3.0);
        q.framework = Framework::Fsdp2 {
            reshard_after_forward: true,
        };
        assert_eq!(bytes(&q), 0.0);
    }
}
