//! The loss without the full logits: what the output layer and the cross
//! entropy keep and allocate when the trainer does not materialise the
//! n × V logits at once ([`Loss`]). The full loss stays where it was
//! (`activations::outer`, `timeline::pieces`); each other loss is priced
//! here from the code that runs it:
//!
//! - **Chunked** (torchtune 0.6.1, `CEWithChunkedOutputLoss` in
//!   `torchtune/modules/loss/ce_chunked_output_loss.py` and
//!   `TransformerDecoder.chunked_output` in `torchtune/modules/transformer.py`):
//!   the output projection runs on N chunks of the tokens and returns them
//!   as a list, all alive in the model's dtype until the loss is summed;
//!   the loss upcasts one chunk at a time (`logits.float()`) into
//!   `F.cross_entropy`, whose log-softmax keeps every chunk's fp32
//!   log-probabilities for backward, as the full loss does. Backward runs
//!   each chunk's loss before any output projection (autograd runs the
//!   later-created nodes first), so the chunks' logit gradients in the
//!   dtype gather, and each projection's weight gradient is summed with the
//!   others' before it reaches the weight. Measured on the CPU
//!   (`tests/fixtures/loss_measured.tsv`).
//! - **Chunked, compiled** (torchtune 0.6.1 `training.compile_loss` in
//!   `torchtune/training/_compile.py`, run by the recipes when `compile:
//!   True`): only `compute_cross_entropy` (the upcast and the cross
//!   entropy of one chunk) is compiled. AOTAutograd's partitioner saves
//!   each chunk's logits in the model's dtype, a contiguous int64 copy of
//!   its labels and two fp32 values a token (the row maximum and the
//!   log-sum-exp): the fp32 log-probabilities are recomputed in the fused
//!   backward, which writes the chunk's logit gradient in the dtype
//!   directly. The chunk list so stays alive until backward (eagerly it is
//!   freed after the loss), and nothing logit-sized in fp32 exists.
//!   Measured on the CPU (`tests/fixtures/compile_loss_measured.tsv`, the
//!   saved tensors listed by `measure_compile_loss.py`).
//! - **Liger** (liger-kernel 0.8.5, `ops/fused_linear_cross_entropy.py`,
//!   `fused_linear_cross_entropy_forward`): forward walks the tokens in
//!   chunks of `next_power_of_2(ceil(n / ceil(V / h)))` rows, each chunk's
//!   logits (the tile, in the matmul's dtype) turned into their gradient in
//!   place by the Triton kernel, and computes the gradients in forward:
//!   `grad_input` (n × h, the input's dtype) and `grad_weight` (V × h, the
//!   weight's dtype, `accum_dtype=None`), both `ctx.save_for_backward`-ed;
//!   `loss_1d` is n fp32. Backward only scales them in place
//!   (`element_mul_kernel`). The weight's gradient so exists from the
//!   forward's loss on. Modelled, not measured (Triton only).
//! - **Cut Cross-Entropy** (cut-cross-entropy 25.1.1, `cce.py`,
//!   `LinearCrossEntropyFunction`): forward keeps the output layer's input,
//!   the fp32 log-sum-exp per token, the int32 valid positions and, with
//!   the default `filter_eps="auto"`, the fp32 average logit per vocabulary
//!   entry (`cce_lse_forward.py`); backward (`cce_backward.py`,
//!   `cce_backward_kernel`) allocates the input's gradient, the weight's
//!   in the input's dtype (`zeros_like(c, dtype=e.dtype)`) and its cast to
//!   the weight's dtype, and the vocabulary's sort order (`argsort`, int64
//!   then int32). Modelled, not measured (Triton only).

use super::bytes::act_bytes;
use super::states::weight_bytes;
use crate::detailed::config::{DetailedConfig, Loss};

/// What a loss without the full logits keeps and allocates for one
/// micro-batch's n tokens on one GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LossBytes {
    /// Saved after the final norm for backward, in place of the full
    /// loss's output-layer input: what the output layer and the loss keep
    /// (the labels' bookkeeping is counted beside it).
    pub(crate) head: f64,
    /// Saved until the loss's backward has run (the log-probabilities).
    pub(crate) logits: f64,
    /// The loss's forward, at its largest, beyond what it saves.
    pub(crate) forward: f64,
    /// The loss's backward, at its largest, beyond what is saved.
    pub(crate) backward: f64,
    /// The output layer's backward beyond the weight's gradient.
    pub(crate) head_backward: f64,
}

/// The sizes a loss is priced from.
struct Dims {
    n: f64,
    h: f64,
    v: f64,
    /// Bytes of an activation value.
    p: f64,
    /// Bytes of a weight value (and of its gradient as autograd makes it).
    w: f64,
    /// The output layer is trained (no LoRA).
    trained: bool,
    /// The loss is compiled (`--compile`).
    compiled: bool,
}

/// The loss of `cfg` over n tokens, if it is not the full loss.
pub(crate) fn loss_bytes(cfg: &DetailedConfig, n: f64) -> Option<LossBytes> {
    let d = Dims {
        n,
        h: cfg.arch.hidden as f64,
        v: cfg.arch.vocab as f64,
        p: act_bytes(cfg),
        w: weight_bytes(cfg),
        trained: cfg.lora_rank.is_none(),
        compiled: cfg.compile,
    };
    match cfg.loss {
        Loss::Full => None,
        // `h.chunk(N, dim=1)` splits each sequence's tokens: no more
        // chunks than it has tokens.
        Loss::Chunked => Some(chunked(
            &d,
            cfg.loss_chunks.clamp(1, cfg.context_local().seq.max(1)) as f64,
        )),
        Loss::Liger => Some(liger(&d)),
        Loss::Cce => Some(cce(&d)),
    }
}

/// torchtune's chunked loss in N chunks (the module's doc).
fn chunked(d: &Dims, chunks: f64) -> LossBytes {
    let Dims { n, h, v, p, .. } = *d;
    let nv = n * v;
    // The output layer keeps its input (every chunk a view of it).
    let head = if d.trained { n * h * p } else { 0.0 };
    // Forward: every chunk's logits in the dtype, and one chunk's fp32
    // copy while its log-softmax is formed (none in fp32, where `.float()`
    // returns the chunk itself).
    let upcast = if p == 4.0 { 0.0 } else { 4.0 * nv / chunks };
    // Backward: one chunk's fp32 gradients of the log-probabilities and of
    // the logits (`nll_loss_backward`, `_log_softmax_backward_data`).
    let backward = 8.0 * nv / chunks;
    // The output layer's backward: the chunks' logit gradients in the
    // dtype, gathered before the first projection's backward runs, and
    // that chunk's input gradient (beside its weight gradient, which the
    // walk counts). The second chunk's weight gradient is then added to
    // the first's out of place (both are transposed views, which the
    // weight's input buffer does not add into in place:
    // `torch/csrc/autograd/input_buffer.cpp`, `accumulate`): three weight
    // gradients at once, after the two chunks' logit gradients are freed.
    // Located with autograd's node hooks and the allocation counter.
    let grad_weight = if d.trained { v * h * d.w } else { 0.0 };
    let first = nv * p + n * h * p / chunks;
    let summing = if chunks >= 2.0 {
        nv * p * (chunks - 2.0) / chunks + 2.0 * grad_weight + 2.0 * n * h * p / chunks
    } else {
        0.0
    };
    let head_backward = first.max(summing);
    if d.compiled {
        return LossBytes {
            head,
            // Every chunk's logits in the dtype, its labels (int64) and two
            // fp32 statistics a token, saved by the compiled graphs.
            logits: nv * p + 16.0 * n,
            // The fused kernel writes only the chunk's loss.
            forward: 0.0,
            // The last chunk's logit gradient in the dtype, the others'
            // already in place of their freed saved logits.
            backward: nv * p / chunks,
            head_backward,
        };
    }
    LossBytes {
        head,
        logits: 4.0 * nv,
        forward: nv * p + upcast,
        backward,
        head_backward,
    }
}

/// Liger's chunk of rows (`fused_linear_cross_entropy_forward`):
/// `next_power_of_2(ceil(n / ceil(V / h)))`, at most n.
pub(crate) fn liger_rows(n: f64, h: f64, v: f64) -> f64 {
    let inc = (v / h).ceil().max(1.0);
    let rows = (n / inc).ceil().max(1.0);
    (2f64.powi(rows.log2().ceil() as i32)).min(n)
}

/// Liger's fused linear cross entropy (the module's doc).
fn liger(d: &Dims) -> LossBytes {
    let Dims { n, h, v, p, w, .. } = *d;
    let tile = liger_rows(n, h, v) * v * p;
    // The weight's gradient, made in forward and held by the function's
    // context until backward hands it to the weight.
    let grad_weight = if d.trained { v * h * w } else { 0.0 };
    LossBytes {
        // `grad_input`, saved; the output layer's input is not.
        head: n * h * p,
        logits: 0.0,
        // The tile, `loss_1d` (fp32) and the target mask (bool).
        forward: grad_weight + tile + 4.0 * n + n,
        backward: grad_weight,
        // The input's gradient is the saved `grad_input`.
        head_backward: 0.0,
    }
}

/// Apple's Cut Cross-Entropy (the module's doc).
fn cce(d: &Dims) -> LossBytes {
    let Dims { n, h, v, p, w, .. } = *d;
    // The input's gradient and the weight's in the input's dtype, then
    // cast to the weight's (a copy unless they agree); the sort order,
    // int64 then int32.
    let (dc, cast) = if d.trained {
        (v * h * p, if w == p { 0.0 } else { v * h * w })
    } else {
        (0.0, 0.0)
    };
    LossBytes {
        // The input, the fp32 log-sum-exp, the int32 valid positions, the
        // fp32 average logit per vocabulary entry.
        head: n * h * p + 4.0 * n + 4.0 * n + 4.0 * v,
        logits: 0.0,
        // The fp32 negative dot products (`indexed_neg_dot_forward_kernel`).
        forward: 4.0 * n,
        backward: n * h * p + dc + cast + 12.0 * v,
        // The input's gradient on its way to the final norm.
        head_backward: n * h * p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::config::{AttentionKernel, Precision, Profile, StepOptions};
    use crate::detailed::memory::activations::saved;
    use crate::detailed::memory::events::Moment;
    use crate::detailed::memory::timeline::timeline;

    /// Llama 3.1 8B, 4,096 tokens, bf16, SDPA, stock `transformers`.
    fn llama_8b() -> DetailedConfig {
        let arch = crate::detailed::preset("llama-3.1-8b").unwrap().arch;
        let mut c = DetailedConfig::new(arch, 4096, 1);
        c.profile = Profile::Hf;
        c.precision = Precision::Bf16;
        c.attention = AttentionKernel::Flash;
        c.dropout = false;
        c
    }

    /// Liger's RMSNorm keeps 4·n·h bytes less than stock (no fp32 input,
    /// which was the residual's copy; its input in the dtype, which stock
    /// keeps as the normalised output) and its SwiGLU one n·F less (no SiLU
    /// output): two norms and one MLP a layer.
    #[test]
    fn liger_kernels_keep_two_fp32_inputs_and_a_silu_less_per_layer() {
        let mut c = llama_8b();
        let stock = saved(&c).per_layer;
        c.liger = true;
        let liger = saved(&c).per_layer;
        let (n, h, f) = (4096.0, 4096.0, 14336.0);
        assert_eq!(stock - liger, 2.0 * 4.0 * n * h + n * f * 2.0);
    }

    /// The fused losses keep no logits; Liger's weight gradient exists from
    /// the loss's forward to its backward, Cut Cross-Entropy's appears in
    /// its backward beside the recomputed input gradient; the gradients
    /// the output layer leaves are the full loss's.
    #[test]
    fn fused_losses_hold_the_weight_gradient_where_their_code_makes_it() {
        let c = llama_8b();
        let vh2 = 128_256.0 * 4096.0 * 2.0;
        let at = |loss, moment| {
            let t = timeline(&DetailedConfig { loss, ..c }, &StepOptions::default()).unwrap();
            *t.events.iter().find(|e| e.moment == moment).unwrap()
        };
        for loss in [Loss::Liger, Loss::Cce] {
            assert_eq!(saved(&DetailedConfig { loss, ..c }).logits, 0.0);
            let (full, fused) = (
                at(Loss::Full, Moment::HeadBackward),
                at(loss, Moment::HeadBackward),
            );
            assert_eq!(full.live.grads, fused.live.grads, "{loss:?}");
        }
        assert!(at(Loss::Liger, Moment::Loss).live.transient >= vh2);
        assert!(at(Loss::Liger, Moment::LossBackward).live.transient >= vh2);
        assert!(at(Loss::Cce, Moment::Loss).live.transient < 1e6);
        let cce = at(Loss::Cce, Moment::LossBackward).live.transient;
        assert_eq!(cce, 4096.0 * 4096.0 * 2.0 + vh2 + 12.0 * 128_256.0);
    }

    /// torchtune's chunked loss compiled keeps every chunk's logits in the
    /// dtype and 16 bytes a token instead of the fp32 log-probabilities,
    /// and no fp32 copy in its forward; the output layer's backward is
    /// eager's.
    #[test]
    fn compiled_chunked_loss_keeps_the_logits_in_the_dtype() {
        let eager = DetailedConfig {
            loss: Loss::Chunked,
            loss_chunks: 8,
            ..llama_8b()
        };
        let compiled = DetailedConfig {
            compile: true,
            ..eager
        };
        let (n, v) = (4096.0, 128_256.0);
        let (e, c) = (
            loss_bytes(&eager, n).unwrap(),
            loss_bytes(&compiled, n).unwrap(),
        );
        assert_eq!(e.logits, 4.0 * n * v);
        assert_eq!(c.logits, 2.0 * n * v + 16.0 * n);
        assert_eq!(c.forward, 0.0);
        assert_eq!(c.backward, 2.0 * n * v / 8.0);
        assert_eq!((c.head, c.head_backward), (e.head, e.head_backward));
    }

    /// Liger's chunk, worked in its source's comment: BT = 4096·4,
    /// V = 32000, H = 4096 gives 2048 rows.
    #[test]
    fn liger_rows_as_its_source_works_them() {
        assert_eq!(liger_rows(16384.0, 4096.0, 32000.0), 2048.0);
        // Llama 3's vocabulary over 2048 hidden: ceil(128256 / 2048) = 63,
        // ceil(8192 / 63) = 131, next power of two 256.
        assert_eq!(liger_rows(8192.0, 2048.0, 128256.0), 256.0);
        // A vocabulary under the hidden size: one chunk of every row.
        assert_eq!(liger_rows(100.0, 4096.0, 1000.0), 100.0);
    }
}
