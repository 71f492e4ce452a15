//! Compute: one micro-batch's matrix multiplies, attention and
//! memory-bound kernels on the slowest pipeline stage: its layers' forward
//! ([`super::layer`]), the logits and the loss (PyTorch autocast's fp32
//! cross-entropy, or GRPO's fused head as TRL runs it), backward (two
//! products per trained weight, FlashAttention's 2.5×, Dao 2023, §3.1.2),
//! DPO's reference forward and recomputation (Korthikanti et al. 2022;
//! torchtitan's per-operator policy).

use super::kernels::recomputed_module_bytes;
use super::layer::{layer_forward, Widths};
use super::rates::{gemm, Rates};
use crate::detailed::config::{
    AttentionKernel, DetailedConfig, Loss, Objective, Recompute, Reference,
};
use crate::detailed::memory::bytes::act_bytes;
use crate::detailed::memory::states::{fsdp2_policy, grad_bytes};

/// One stage's forward of one micro-batch, seconds.
#[derive(Clone, Copy)]
pub(super) struct Forward {
    /// Matrix multiplies.
    pub mm: f64,
    /// Attention.
    pub attn: f64,
    /// Memory-bound kernels.
    pub mem: f64,
}

/// One micro-batch's compute on the slowest stage, seconds, with the
/// figures other parts are priced against.
pub(super) struct Compute {
    /// The layers' forward.
    pub forward: Forward,
    /// The output layer's matrix multiply (GRPO's fused head), forward.
    pub logits: f64,
    /// The attention's backward.
    pub backward_attention: f64,
    /// Matrix multiplies, forward, backward and recomputed ([`super::Parts::matmul`]).
    pub matmul: f64,
    /// Attention, forward, backward and recomputed.
    pub attention: f64,
    /// Memory-bound kernels, forward, backward and recomputed, the loss's
    /// included.
    pub memory_bound: f64,
}

/// One micro-batch of `m` tokens per GPU on a stage holding `share` of the
/// layers (and the output layer and the loss with `head`): forward,
/// backward, DPO's reference forward and recomputation.
pub(super) fn micro_batch(
    cfg: &DetailedConfig,
    r: &Rates,
    m: f64,
    share: f64,
    with_head: bool,
) -> Compute {
    let fwd = stage_forward(cfg, r, m, share);
    // Backward: the frozen weights of LoRA need only the input's gradient.
    let lora = cfg.lora_rank.is_some();
    let bwd_mm_factor = if lora { 1.0 } else { 2.0 };
    let backward_attn = backward_attention(cfg, r, fwd.attn);
    let recompute = recomputation(cfg, r, m, share, &fwd);
    let reference = reference_forwards(cfg);
    let (logits_mm, loss_mem) = if with_head {
        head(cfg, r, m, bwd_mm_factor)
    } else {
        (0.0, 0.0)
    };
    let loss_recompute = loss_recomputed(cfg, logits_mm);
    Compute {
        forward: fwd,
        logits: logits_mm,
        backward_attention: backward_attn,
        matmul: (1.0 + bwd_mm_factor + reference) * (fwd.mm + logits_mm)
            + recompute.0
            + loss_recompute,
        attention: (1.0 + reference) * fwd.attn + backward_attn + recompute.1,
        memory_bound: (1.0 + 2.0 + reference) * fwd.mem + recompute.2 + loss_mem,
    }
}

/// The forward of a stage's layers for `m` tokens: a dense and a MoE
/// layer priced once each ([`layer_forward`]), times their numbers, times
/// the stage's `share` of the layers.
fn stage_forward(cfg: &DetailedConfig, r: &Rates, m: f64, share: f64) -> Forward {
    let a = &cfg.arch;
    let moe_layers = a.moe_layers();
    let dense_layers = a.layers - moe_layers;
    let (dm, da, dmem) = layer_forward(cfg, false, m, r);
    let (em, ea, emem) = if moe_layers > 0 {
        layer_forward(cfg, true, m, r)
    } else {
        (0.0, 0.0, 0.0)
    };
    Forward {
        mm: (dense_layers as f64 * dm + moe_layers as f64 * em) * share,
        attn: (dense_layers as f64 * da + moe_layers as f64 * ea) * share,
        mem: (dense_layers as f64 * dmem + moe_layers as f64 * emem) * share,
    }
}

/// The output layer and the loss for `m` tokens: the logits' matrix
/// multiply, forward, and the loss's memory-bound kernels, forward and
/// backward, seconds (GRPO's fused head's, its backward's products
/// folded in, given backward's `bwd_mm_factor` products per weight).
fn head(cfg: &DetailedConfig, r: &Rates, m: f64, bwd_mm_factor: f64) -> (f64, f64) {
    let h = cfg.arch.hidden as f64;
    let vocab = cfg.arch.vocab as f64 / cfg.parallel.head_divisor();
    // GRPO's fused head (TRL's `ChunkedLogProbFunction`) projects only the
    // completion's positions, and again in backward before its two
    // gradient products; its tiles are written and read once each way
    // (about 10 bytes per logit) instead of the cross-entropy's 36.
    if matches!(cfg.objective, Objective::Grpo { .. }) {
        let scored = (cfg.micro() * cfg.rollout.completion_tokens(cfg.seq)) as f64;
        let head = gemm(scored, h, vocab, r.flops, r.bytes);
        return (
            head * (2.0 + bwd_mm_factor) / (1.0 + bwd_mm_factor),
            10.0 * scored * vocab / r.bytes,
        );
    }
    let logits_mm = gemm(m, h, vocab, r.flops, r.bytes);
    if let Some(bytes) = fused_loss_bytes_per_logit(cfg) {
        return (logits_mm, bytes * m * vocab / r.bytes);
    }
    // Cross-entropy as PyTorch's autocast runs it (`log_softmax` and
    // `nll_loss` are on its fp32 list, `aten/src/ATen/autocast_mode.cpp`):
    // cast the 16-bit logits up (read 2, write 4 bytes each), log-softmax
    // (read 4, write 4); backward writes the fp32 gradient (4), runs the
    // log-softmax backward (read 8, write 4) and casts down (read 4,
    // write 2): 36 bytes per logit.
    // The plans that gather the logits whole (`TpPlan::Hf`, `Torchtitan`)
    // run the loss over the whole vocabulary on every GPU.
    let loss_vocab = cfg.arch.vocab as f64 / cfg.parallel.logits_divisor();
    let loss_mem = 36.0 * m * loss_vocab / r.bytes;
    (logits_mm, loss_mem + chunk_sums(cfg, h * vocab) / r.bytes)
}

/// Bytes torchtune's chunked loss moves beyond the full loss's, for an
/// output layer of `weights` values on this GPU: the chunks run the same
/// products (`TransformerDecoder.chunked_output`, torchtune 0.6.1
/// `modules/transformer.py`: `[self.output(chunk) for chunk in
/// last_hidden_state.chunk(num_output_chunks, dim=1)]`), but each chunk's
/// backward yields a whole weight gradient, and autograd sums the
/// `num_output_chunks` of them before the weight's `AccumulateGrad`
/// (`torch/csrc/autograd/input_buffer.cpp`, `InputBuffer::add`): chunks − 1
/// additions, each reading two gradients and writing one, in the gradient's
/// dtype. A frozen output layer (LoRA) has no weight gradient to sum.
pub(super) fn chunk_sums(cfg: &DetailedConfig, weights: f64) -> f64 {
    if cfg.loss != Loss::Chunked || cfg.lora_rank.is_some() {
        return 0.0;
    }
    let chunks = cfg.loss_chunks.max(1) as f64;
    // FSDP2's policy computes the unsharded gradient in bf16.
    let bytes = if fsdp2_policy(cfg) {
        2.0
    } else {
        grad_bytes(cfg)
    };
    (chunks - 1.0) * 3.0 * weights * bytes
}

/// The bytes per logit a fused loss moves through memory, `None` for the
/// full loss and torchtune's chunked one (the same casts, log-softmax and
/// gradients as the full loss, one chunk at a time: 36 bytes per logit).
/// Liger (liger-kernel 0.8.5, `ops/cross_entropy.py`,
/// `liger_cross_entropy_kernel`) reads each tile's logits twice (the online
/// maximum and sum, then the gradient) and writes the gradient in their
/// place: three passes in the logits' dtype. Cut Cross-Entropy
/// (cut-cross-entropy 25.1.1, `cce_lse_forward.py`, `cce_backward.py`)
/// keeps its tiles in on-chip memory: none.
fn fused_loss_bytes_per_logit(cfg: &DetailedConfig) -> Option<f64> {
    match cfg.loss {
        Loss::Full | Loss::Chunked => None,
        Loss::Liger => Some(3.0 * act_bytes(cfg)),
        Loss::Cce => Some(0.0),
    }
}

/// The output layer's products a loss runs again, seconds, from the
/// logits' forward product `logits_mm`. Cut Cross-Entropy's backward
/// (`cce_backward.py`, `_cce_backward_kernel`) recomputes each tile of
/// logits from the input and the weight before its two gradient products:
/// one more product of the logits' size (priced without its gradient
/// filtering, which skips tiles whose softmax is negligible: an upper
/// bound). Liger computes both gradients in forward, tile by tile, and
/// backward only scales them: the same three products as the full loss.
/// torchtune's chunked loss runs the full loss's products, chunk by chunk.
fn loss_recomputed(cfg: &DetailedConfig, logits_mm: f64) -> f64 {
    match cfg.loss {
        Loss::Cce => logits_mm,
        Loss::Full | Loss::Chunked | Loss::Liger => 0.0,
    }
}

/// The attention's backward, seconds, from its forward's `fwd_attn`.
pub(super) fn backward_attention(cfg: &DetailedConfig, r: &Rates, fwd_attn: f64) -> f64 {
    // FlashAttention's backward runs 2.5× the forward's products (five
    // matrix multiplies for two, Dao 2023, §3.1.2) at its own rate; eager
    // attention's backward is twice its forward, like any product.
    match cfg.attention {
        AttentionKernel::Flash => 2.5 * fwd_attn * r.attention / r.attention_backward,
        AttentionKernel::Eager => 2.0 * fwd_attn,
    }
}

/// Recomputation in backward: seconds of matrix multiplies, attention
/// and memory-bound kernels the forward `fwd` runs again.
fn recomputation(
    cfg: &DetailedConfig,
    r: &Rates,
    m: f64,
    share: f64,
    fwd: &Forward,
) -> (f64, f64, f64) {
    let a = &cfg.arch;
    let (fwd_mm, fwd_attn, fwd_mem) = (fwd.mm, fwd.attn, fwd.mem);
    // Megatron's single modules, beside none or the attention core.
    let (moe_bytes, dense_bytes, layer_bytes) = recomputed_module_bytes(cfg, &Widths::new(cfg));
    let (moe_layers, dense_layers) = (a.moe_layers() as f64, (a.layers - a.moe_layers()) as f64);
    let per_layer =
        moe_layers * moe_bytes + dense_layers * dense_bytes + a.layers as f64 * layer_bytes;
    let modules = m * share * per_layer / r.bytes;
    let (moe_mm, dense_mm) = super::layer::recomputed_mlp(cfg, m, r);
    let up = (mla_up_recomputed(cfg, r, m) * a.layers as f64
        + moe_layers * moe_mm
        + dense_layers * dense_mm)
        * share;
    match cfg.recompute {
        Recompute::None => (up, 0.0, modules),
        Recompute::Selective => (up, fwd_attn, modules),
        Recompute::Full => {
            // Megatron-Core's block method reruns its share of the layers.
            let k = cfg.recomputed_share();
            (k * fwd_mm, k * fwd_attn, k * fwd_mem)
        }
        // Per-operator checkpointing (torchtitan): the even-numbered
        // bias-free projections (each rank's shard under tensor
        // parallelism: a column-parallel one's outputs, a row-parallel
        // one's inputs split t ways; float8's at `r.linear`, its casts
        // among the memory-bound kernels), every memory-bound kernel, and
        // the attention only when eager (flash's output is cached).
        Recompute::SelectiveOp => {
            let t = cfg.parallel.tp.max(1) as f64;
            let projections: f64 = crate::detailed::memory::sac::bias_free_projections(a)
                .iter()
                .skip(1)
                .step_by(2)
                .map(|w| {
                    let (k, n) = if w.row_parallel {
                        (w.input as f64 / t, w.out as f64)
                    } else {
                        (w.input as f64, w.out as f64 / t)
                    };
                    gemm(m, k, n, r.linear, r.bytes)
                })
                .sum();
            let attention = match cfg.attention {
                AttentionKernel::Flash => 0.0,
                AttentionKernel::Eager => fwd_attn,
            };
            (a.layers as f64 * share * projections, attention, fwd_mem)
        }
    }
}

/// Megatron's `mla_up_proj` recomputation in one layer for `m` tokens,
/// seconds: multi-latent attention's two up-projections again
/// ([`crate::detailed::model::Architecture::mla_up_projections`]), each
/// split over the t tensor-parallel ranks by its output heads.
fn mla_up_recomputed(cfg: &DetailedConfig, r: &Rates, m: f64) -> f64 {
    if !cfg.megatron_recompute_modules().mla_up_proj {
        return 0.0;
    }
    let t = cfg.parallel.tp.max(1) as f64;
    cfg.arch
        .mla_up_projections()
        .iter()
        .map(|&(k, n)| gemm(m, k, n / t, r.linear, r.bytes))
        .sum()
}

/// Forwards of a reference model per micro-batch: one for DPO with a
/// reference model, else none.
fn reference_forwards(cfg: &DetailedConfig) -> f64 {
    // DPO with a reference model runs one more forward, without grad.
    match cfg.objective {
        Objective::Dpo {
            reference: Reference::Model,
        } => 1.0,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{at, llama};
    use crate::detailed::config::Recompute;

    /// Megatron's recomputed modules rerun their forward's bytes in
    /// backward, one micro-batch of Qwen3-30B-A3B (48 MoE layers, h 2,048,
    /// 8 of 128 experts 768 wide) of 4,096 tokens: `layernorm` a fused
    /// norm's 4·h bytes a token per layer, `moe_act` SwiGLU's 6 bytes per
    /// element of the k·F a token's copies give the GPU. No product and no
    /// attention is added.
    #[test]
    fn recomputed_modules_rerun_their_bytes() {
        use super::super::testing::{h100_micro_batch, model};
        let mut c = model("qwen3-30b-a3b", 4096, 1);
        let m = 4096.0;
        let (off, r) = h100_micro_batch(&c, m);
        c.recompute_modules.layernorm = true;
        let (norm, _) = h100_micro_batch(&c, m);
        c.recompute_modules.moe_act = true;
        let (both, _) = h100_micro_batch(&c, m);
        let per = |bytes: f64| 48.0 * m * bytes / r.bytes;
        let (h, k, f) = (2048.0, 8.0, 768.0);
        assert_eq!(super::super::layer::recomputed_mlp(&c, m, &r), (0.0, 0.0));
        let d_norm = norm.memory_bound - off.memory_bound;
        assert!((d_norm / per(4.0 * h) - 1.0).abs() < 1e-12, "{d_norm}");
        let d_act = both.memory_bound - norm.memory_bound;
        assert!((d_act / per(6.0 * k * f) - 1.0).abs() < 1e-12, "{d_act}");
        assert_eq!((both.matmul, both.attention), (off.matmul, off.attention));
    }

    /// Megatron's whole-module checkpoints rerun the module's forward in
    /// backward: `mlp` on Llama 3.1 8B (32 dense layers, h 4,096, F 14,336)
    /// at 4,096 tokens adds its three products a layer and its fused
    /// norm's 4·h and SwiGLU's 6·F bytes a token; `moe` on Qwen3-30B-A3B
    /// with EP 8 adds the router's and experts' products and runs the
    /// forward's dispatch and combine again: the all-to-alls grow by half.
    #[test]
    fn whole_modules_rerun_their_forward() {
        use super::super::testing::{h100_micro_batch, model};
        use super::gemm;
        let c = model("llama-3.1-8b", 4096, 1);
        let m = 4096.0;
        let mut on = c;
        on.recompute_modules.mlp = true;
        let ((a, r), (b, _)) = (h100_micro_batch(&c, m), h100_micro_batch(&on, m));
        let (h, f) = (4096.0, 14336.0);
        let mm = 32.0 * (gemm(m, h, 2.0 * f, r.linear, r.bytes) + gemm(m, f, h, r.linear, r.bytes));
        assert!(((b.matmul - a.matmul) / mm - 1.0).abs() < 1e-12);
        let bytes = 32.0 * m * (4.0 * h + 6.0 * f) / r.bytes;
        assert!(((b.memory_bound - a.memory_bound) / bytes - 1.0).abs() < 1e-12);
        assert_eq!(a.attention, b.attention);
        let mut q = model("qwen3-30b-a3b", 4096, 64);
        q.micro_batch = Some(1);
        q.parallel.dp = 8;
        q.parallel.ep = 8;
        let mut whole = q;
        whole.recompute_modules.moe = true;
        let (off, on) = (at(&q), at(&whole));
        let ratio = on.parts.expert_parallel / off.parts.expert_parallel;
        assert!((ratio - 1.5).abs() < 1e-12, "{ratio}");
        assert!(on.parts.matmul > off.parts.matmul);
    }

    /// `mla_up_proj` reruns DeepSeek-V3's two up-projections in each of
    /// its 61 layers (the query's 1,536 → 128·192, the keys' and values'
    /// 512 → 128·256) and their rotary embedding: the step's matrix
    /// multiplies grow by those products, and its hardware FLOPs by
    /// 2·61·(1,536·24,576 + 512·32,768) a token, exactly.
    #[test]
    fn mla_up_proj_reruns_the_up_projections() {
        use super::super::testing::{at, h100_micro_batch, model};
        use super::gemm;
        use crate::detailed::time::flops::step_flops;
        let c = model("deepseek-v3", 4096, 1);
        let m = 4096.0;
        let mut on = c;
        on.recompute_modules.mla_up_proj = true;
        let ((a, r), (b, _)) = (h100_micro_batch(&c, m), h100_micro_batch(&on, m));
        let want = 61.0
            * (gemm(m, 1536.0, 24576.0, r.linear, r.bytes)
                + gemm(m, 512.0, 32768.0, r.linear, r.bytes));
        assert!(((b.matmul - a.matmul) / want - 1.0).abs() < 1e-12);
        let rope = 61.0 * m * 4.0 * (24576.0 + 24576.0) / r.bytes;
        assert!(((b.memory_bound - a.memory_bound) / rope - 1.0).abs() < 1e-12);
        let per_token = 2.0 * 61.0 * (1536.0 * 24576.0 + 512.0 * 32768.0);
        let extra = step_flops(&on).hardware - step_flops(&c).hardware;
        assert!(
            (extra / (per_token * 4096.0) - 1.0).abs() < 1e-12,
            "{extra}"
        );
        assert!(at(&on).step_s > at(&c).step_s);
    }

    /// Each loss's time as its source says (one micro-batch of Llama 3.1
    /// 8B, 4,096 × 4 tokens, bf16, on an A100): torchtune's chunked loss
    /// the full loss's products and passes, plus its 7 sums of the output
    /// layer's bf16 weight gradient (3 × 128,256 × 4,096 × 2 bytes each:
    /// 22.1 GB, about 13 ms at the A100's sustained rate), none under LoRA;
    /// Liger's the same products and three passes of two
    /// bytes per logit in place of 36; Cut Cross-Entropy one more product
    /// of the logits' size and no pass over them in memory.
    #[test]
    fn each_loss_prices_what_it_recomputes() {
        use super::super::{Cluster, Efficiency};
        use super::{micro_batch, DetailedConfig, Loss, Rates};
        use crate::detailed::config::{Precision, Profile};
        use crate::detailed::time::hardware::gpu;
        let mut c = llama(4096, 4);
        c.profile = Profile::Hf;
        c.precision = Precision::Bf16;
        let cluster = Cluster::new(gpu("a100-80gb").unwrap(), 8);
        let r = Rates::new(&c, &cluster, &Efficiency::default());
        let m = 4096.0 * 4.0;
        let with = |loss| micro_batch(&DetailedConfig { loss, ..c }, &r, m, 1.0, true);
        let full = with(Loss::Full);
        let per_logit = m * c.arch.vocab as f64 / r.bytes;
        let chunked = with(Loss::Chunked);
        assert_eq!(chunked.matmul, full.matmul);
        let sums: f64 = 7.0 * 3.0 * 128_256.0 * 4096.0 * 2.0;
        assert!((sums / 1e9 - 22.07).abs() < 0.01, "{sums}");
        let extra = chunked.memory_bound - full.memory_bound;
        assert!((extra / (sums / r.bytes) - 1.0).abs() < 1e-9, "{extra}");
        assert!(extra > 0.005 && extra < 0.03, "{extra} s");
        let lora = |loss| {
            let l = DetailedConfig {
                loss,
                lora_rank: Some(16),
                ..c
            };
            micro_batch(&l, &r, m, 1.0, true).memory_bound
        };
        assert_eq!(lora(Loss::Chunked), lora(Loss::Full));
        let liger = with(Loss::Liger);
        assert_eq!(liger.matmul, full.matmul);
        let saved = full.memory_bound - liger.memory_bound;
        assert!((saved / ((36.0 - 6.0) * per_logit) - 1.0).abs() < 1e-9);
        let cce = with(Loss::Cce);
        assert!((cce.matmul - full.matmul - full.logits).abs() < 1e-12 * full.matmul);
        let saved = full.memory_bound - cce.memory_bound;
        assert!((saved / (36.0 * per_logit) - 1.0).abs() < 1e-9);
    }

    /// `torch.compile` over the hf profile prices the layers' memory-bound
    /// kernels as the fused profile's (inductor's fused kernels) and
    /// leaves the products, the attention and the loss as they are.
    #[test]
    fn compile_fuses_the_layers_memory_bound_kernels() {
        use super::super::{Cluster, Efficiency};
        use super::{micro_batch, DetailedConfig, Rates};
        use crate::detailed::config::{Precision, Profile};
        use crate::detailed::time::hardware::gpu;
        let mut c = llama(4096, 4);
        c.profile = Profile::Hf;
        c.precision = Precision::Bf16;
        c.dropout = false;
        let cluster = Cluster::new(gpu("a100-80gb").unwrap(), 8);
        let r = Rates::new(&c, &cluster, &Efficiency::default());
        let m = 4096.0 * 4.0;
        let eager = micro_batch(&c, &r, m, 1.0, true);
        let compiled = micro_batch(&DetailedConfig { compile: true, ..c }, &r, m, 1.0, true);
        let fused = micro_batch(
            &DetailedConfig {
                profile: Profile::Fused,
                ..c
            },
            &r,
            m,
            1.0,
            true,
        );
        assert_eq!(compiled.matmul, eager.matmul);
        assert_eq!(compiled.attention, eager.attention);
        assert_eq!(compiled.forward.mem, fused.forward.mem);
        assert!(compiled.memory_bound < eager.memory_bound);
    }

    /// The hardware FLOPs count the products the step time prices: with
    /// the memory's rate taken as unbounded, every product costs its
    /// operations at the matrix rate alone, so the step's `matmul` seconds
    /// times that rate are the operations it priced. They equal
    /// [`step_flops`]'s `matmul` exactly, with and without LoRA (whose
    /// frozen weights run no weight-gradient product) and under every
    /// recomputation, dense and mixture-of-experts.
    ///
    /// [`step_flops`]: crate::detailed::time::flops::step_flops
    #[test]
    fn hardware_flops_are_the_products_the_step_time_prices() {
        use super::super::{step_time, Cluster, Efficiency};
        use crate::detailed::preset;
        use crate::detailed::time::flops::step_flops;
        use crate::detailed::time::hardware::gpu;
        let eff = Efficiency {
            memory: f64::INFINITY,
            ..Efficiency::default()
        };
        let card = gpu("h100-sxm").unwrap();
        let rate = card
            .peak_tflops(crate::detailed::time::hardware::Dtype::Bf16)
            .unwrap()
            * 1e12
            * eff.matmul;
        for name in ["llama-3.1-8b", "mixtral-8x7b"] {
            for lora in [None, Some(16)] {
                for recompute in [
                    Recompute::None,
                    Recompute::Selective,
                    Recompute::Full,
                    Recompute::SelectiveOp,
                ] {
                    let mut c = llama(2048, 8);
                    c.arch = preset(name).unwrap().arch;
                    c.lora_rank = lora;
                    c.recompute = recompute;
                    let t = step_time(&c, &Cluster::new(card, 8), &eff);
                    let priced = t.parts.matmul * rate;
                    let counted = step_flops(&c).matmul;
                    assert!(
                        (counted / priced - 1.0).abs() < 1e-9,
                        "{name} {lora:?} {recompute:?}: {counted:e} vs {priced:e}"
                    );
                }
            }
        }
    }

    /// LoRA on Llama 3.1 8B (2,048 tokens, micro-batch 8, bf16, H100):
    /// without recomputation HFU is MFU, and both count about 4N per
    /// token (the frozen weights' forward and input gradient), not 6N;
    /// full recomputation adds one forward of the layers (about 2N).
    #[test]
    fn lora_counts_four_n_and_recomputation_two_more() {
        use crate::detailed::time::flops::{forward_per_token, step_flops};
        let mut c = llama(2048, 8);
        c.lora_rank = Some(16);
        let f = step_flops(&c);
        let (logits, layers) = forward_per_token(&c.arch, 2048);
        let n2 = logits + layers.weights;
        let per_token = f.model / f.tokens;
        assert_eq!(f.hardware, f.model);
        assert!((per_token - 3.0 * layers.attention) / n2 > 2.0);
        assert!(
            (per_token - 3.0 * layers.attention) / n2 < 2.02,
            "{}",
            per_token / n2
        );
        c.recompute = Recompute::Full;
        let full = step_flops(&c);
        assert_eq!(full.model, f.model);
        let extra = (full.hardware - full.model) / full.tokens;
        assert!((extra / layers.total() - 1.0).abs() < 0.01, "{extra}");
    }

    /// Recomputation costs time in the order of the work it repeats, and
    /// HFU counts it while MFU does not.
    #[test]
    fn recomputation_costs_in_order() {
        let mut c = llama(4096, 4);
        let none = at(&c);
        c.recompute = Recompute::Selective;
        let selective = at(&c);
        c.recompute = Recompute::Full;
        let full = at(&c);
        assert!(none.step_s < selective.step_s && selective.step_s < full.step_s);
        assert!(full.hfu > full.mfu && (none.hfu - none.mfu).abs() < 1e-12);
        // A full recompute is about one more forward: a third of the step.
        let extra = full.step_s / none.step_s - 1.0;
        assert!(extra > 0.25 && extra < 0.36, "{extra}");
        // torchtitan's per-operator policy under flash attention reruns k,
        // o and up (3 of Llama's 7 projections: at 8B's shape 79.7 M of a
        // layer's 218.1 M weights) and the memory-bound kernels, not the
        // attention.
        c.recompute = Recompute::SelectiveOp;
        let op = at(&c);
        assert!(none.step_s < op.step_s && op.step_s < full.step_s);
        let mm = (op.parts.matmul - none.parts.matmul) / (full.parts.matmul - none.parts.matmul);
        let weights = crate::detailed::memory::sac::recomputed_weights(&c.arch)
            / crate::detailed::time::flops::layer_matmul_weights(&c.arch, false);
        assert!((weights - 79.69 / 218.1).abs() < 1e-3, "{weights}");
        assert!((mm / weights - 1.0).abs() < 0.02, "{mm} {weights}");
        assert_eq!(op.parts.attention, none.parts.attention);
        assert_eq!(op.parts.memory_bound, full.parts.memory_bound);
    }

    /// Under a DTensor tensor-parallel plan the per-operator policy reruns
    /// each rank's shards of the same projections, and of the collectives
    /// the two all-gathers (the reduce-scatters are kept): 5 a layer
    /// against full recomputation's 6 and none's 4.
    #[test]
    fn per_operator_under_tensor_parallelism() {
        let mut c = llama(4096, 4);
        c.profile = crate::detailed::config::Profile::Hf;
        c.parallel.tp = 2;
        c.parallel.sp = true;
        c.parallel
            .set_plan(crate::detailed::config::TpPlan::Torchtitan);
        // Exposed, as torchtitan runs them without async TP.
        c.overlap.tp_comm = false;
        let none = at(&c);
        c.recompute = Recompute::Full;
        let full = at(&c);
        c.recompute = Recompute::SelectiveOp;
        let op = at(&c);
        let mm = (op.parts.matmul - none.parts.matmul) / (full.parts.matmul - none.parts.matmul);
        let weights = crate::detailed::memory::sac::recomputed_weights(&c.arch)
            / crate::detailed::time::flops::layer_matmul_weights(&c.arch, false);
        assert!((mm / weights - 1.0).abs() < 0.03, "{mm} {weights}");
        let tp = |t: &super::super::parts::StepTime| t.parts.tensor_parallel;
        assert!((tp(&op) / tp(&none) - 1.25).abs() < 1e-9);
        assert!((tp(&full) / tp(&none) - 1.5).abs() < 1e-9);
    }
}
