//! What one micro-batch's pieces weigh on one GPU, as the step's walk needs
//! them: what a layer saves and recomputes, the transient buffers inside a
//! layer's forward and backward (attention, MLP, context parallelism, a
//! quantized base's dequantized weight, fp8's casts), the loss's (GRPO's
//! fused head instead), the gradients as backward produces them, the
//! weights ZeRO-3 and FSDP2 gather, and DPO's reference forward.

use crate::detailed::config::{
    AttentionKernel, BaseQuant, CompileScope, CpComm, DetailedConfig, Device, Fp8, Framework,
    Objective, Profile, Reference, TpPlan,
};
use crate::detailed::memory::activations::{self, Saved};
use crate::detailed::memory::bytes::act_bytes;
use crate::detailed::memory::loss::loss_bytes;
use crate::detailed::memory::states::{
    self, grad_bytes, param_split, trained_params, weight_bytes,
};
use crate::detailed::memory::{fp8, grpo, mixer, quant};
use crate::detailed::model::Family;

/// Bytes of one micro-batch's pieces on one GPU, as the walk needs them.
#[derive(Clone)]
pub(super) struct Pieces {
    /// Saved by one layer, and what its backward materialises again.
    pub(super) per_layer: f64,
    pub(super) recomputed: f64,
    pub(super) embedding: f64,
    pub(super) head: f64,
    pub(super) logits: f64,
    /// Token ids (int64).
    pub(super) ids: f64,
    /// Inside one layer's forward and backward, beyond what is saved.
    pub(super) layer_forward: f64,
    pub(super) layer_backward: f64,
    /// The loss: forward and backward transients, and the output layer's.
    pub(super) loss_forward: f64,
    pub(super) loss_backward: f64,
    pub(super) head_backward: f64,
    /// The embedding's backward beyond its gradient.
    pub(super) embedding_backward: f64,
    /// Trained bytes of one layer's gradients, of the output layer's and of
    /// the embedding's, on this GPU before ZeRO's sharding.
    pub(super) layer_grads: f64,
    /// Of `layer_grads`, the share of a hybrid layer's Mamba-2 mixer, whose
    /// gradients come after `freed_before_mixer` bytes of the layer's saved
    /// tensors are freed; 0 for other layers.
    pub(super) mixer_share: f64,
    pub(super) freed_before_mixer: f64,
    pub(super) head_grads: f64,
    pub(super) embedding_grads: f64,
    /// Tied embeddings: the size of the shared table's gradient. Autograd
    /// holds the output layer's gradient of it in the table's input buffer
    /// until the embedding's backward gives the second, then sums the two
    /// out of place (`torch/csrc/autograd/input_buffer.cpp`, `accumulate`):
    /// three tables at once.
    pub(super) tied_gradient: f64,
    /// ZeRO-3: a gathered layer's weights beyond this GPU's shard.
    pub(super) gathered_layer: f64,
    pub(super) gathered_outer: f64,
    /// Bytes of the gradient shard kept per byte of gradient backward
    /// produces: 2 under FSDP2's mixed-precision policy (bf16 produced, fp32
    /// kept), else 1.
    pub(super) shard_scale: f64,
    /// FSDP2: the root's reduce-scatter when its backward ends, its
    /// unsharded gradients cast to the reduce dtype beside the flat input
    /// they are copied into (`foreach_reduce`: `_to_dtype_if_needed`,
    /// `foreach_reduce_scatter_copy_in`), measured.
    /// (the embedding's, the output layer's).
    pub(super) root_reduce: (f64, f64),
    /// DPO's reference forward (no grad) before the policy's: its logits
    /// and one sequence's log-softmax.
    pub(super) reference_forward: f64,
    /// A dense Llama layer's backward as the moments it really has
    /// ([`LayerSplit`]); `None` where the layer is priced as one moment.
    pub(super) split: Option<LayerSplit>,
}

/// The moments inside a dense Llama layer's backward, where one event at
/// the sum of its parts over-counts (issue 34, measured on FSDP2 with small
/// vocabularies, `tests/fixtures/fsdp2_small_vocab_measured.tsv`). Autograd
/// frees a node's saved tensors as soon as the node has run
/// (`torch/csrc/autograd/engine.cpp`, `release_variables`), and a weight's
/// gradient exists from its own `MmBackward` on:
/// - **the MLP's**, the layer's first: the down projection has run (its
///   weight gradient exists, its saved input is freed), and the product's
///   backward writes the gate's and the up projection's input gradients
///   beside the down projection's input gradient; of the residual stream's
///   two gradients one is live;
/// - **the rest**, an upper bound of what follows: every weight gradient of
///   the layer, the MLP's saved tensors freed, the attention's backward
///   temporaries and both stream gradients.
#[derive(Clone, Copy, Debug)]
pub(super) struct LayerSplit {
    /// The down projection's share of the layer's weight gradients.
    pub(super) down_share: f64,
    /// The MLP moment's temporaries, and the saved bytes freed by then.
    pub(super) mlp: f64,
    pub(super) mlp_freed: f64,
    /// The later moment's temporaries, and the saved bytes freed by then.
    pub(super) rest: f64,
    pub(super) rest_freed: f64,
    /// The gradient arriving at the layer's output, before its backward.
    pub(super) incoming: f64,
}

/// The sizes the pieces are priced from, on one GPU.
struct Sizes {
    /// The tokens of each sequence this GPU holds (context parallelism).
    seq: f64,
    /// Sequences in the micro-batch.
    micro: f64,
    /// Tokens of the micro-batch on this GPU.
    n: f64,
    /// Bytes of one activation value.
    p: f64,
    /// Tensor parallelism's degree.
    tp: f64,
    /// What sequence parallelism divides the residual stream by.
    sp_div: f64,
    /// Logit values on this GPU (vocabulary-parallel under tensor
    /// parallelism).
    nv: f64,
}

impl Sizes {
    /// The sizes of `cfg`'s micro-batch on one GPU.
    fn of(cfg: &DetailedConfig) -> Self {
        let par = &cfg.parallel;
        // The tokens of each sequence this GPU holds (context parallelism).
        let local = cfg.context_local();
        let micro = cfg.sequences() as f64;
        let n = local.seq as f64 * micro;
        Sizes {
            seq: local.seq as f64,
            micro,
            n,
            p: act_bytes(cfg),
            tp: par.tp as f64,
            sp_div: par.sp_divisor(),
            nv: n * cfg.arch.vocab as f64 / par.logits_divisor(),
        }
    }
}

/// The pieces of one micro-batch of `cfg` on one GPU.
pub(super) fn pieces(cfg: &DetailedConfig) -> Pieces {
    let s = Sizes::of(cfg);
    let saved = activations::saved(cfg);
    let ring = context_parallel(cfg, &s);
    let dequant = dequantized(cfg, &s);
    let (loss_forward, loss_backward, head_backward) = match cfg.objective {
        Objective::Grpo { .. } => grpo_loss(cfg, &s),
        _ => loss(cfg, &s),
    };
    let (layer_grads, head_grads, embedding_grads, tied_gradient) = gradients(cfg);
    let (mixer_share, freed_before_mixer) = mixer_gradients(cfg, &s, &saved);
    let (gathered_layer, gathered_outer) = gathered_weights(cfg);
    // A layer's backward beyond its attention's and MLP's temporaries.
    let backward_extra = dequant + 2.0 * ring + fp8::backward_extra(cfg, s.n);
    Pieces {
        per_layer: saved.per_layer,
        // Per-operator checkpointing's cache is popped as the layer's
        // recomputation consumes it: the layer then holds its whole set.
        recomputed: (saved.per_layer_full - saved.per_layer).max(0.0),
        embedding: saved.embedding,
        head: saved.head,
        logits: saved.logits,
        ids: 8.0 * s.n,
        layer_forward: layer_forward(cfg, &s) + dequant + ring + fp8::forward_extra(cfg, s.n),
        layer_backward: layer_backward(cfg, &s)
            + dequant
            + 2.0 * ring
            + fp8::backward_extra(cfg, s.n)
            + fp8::te_transpose_transient(cfg),
        loss_forward,
        loss_backward,
        head_backward,
        embedding_backward: compiled_embedding_backward(cfg, &s),
        layer_grads,
        mixer_share,
        freed_before_mixer,
        head_grads,
        embedding_grads,
        tied_gradient,
        gathered_layer,
        gathered_outer,
        shard_scale: shard_scale(cfg),
        root_reduce: root_reduce(cfg),
        reference_forward: dpo_reference_forward(cfg, &s),
        split: layer_split(cfg, &s, backward_extra),
    }
}

/// A dense Llama layer's backward moments ([`LayerSplit`]); `None` for
/// GPT-2, mixtures of experts, hybrids, adapters and float8 (whose saved
/// casts the MLP's moment does not free as counted here), offloaded
/// activations and `torch.compile` (whose backward is one compiled graph
/// with its own saved set), priced as one moment.
fn layer_split(cfg: &DetailedConfig, s: &Sizes, extras: f64) -> Option<LayerSplit> {
    let a = &cfg.arch;
    if a.family != Family::Llama
        || a.moe.is_some()
        || a.ssm.is_some()
        || cfg.lora_rank.is_some()
        || cfg.fp8 != Fp8::None
        || cfg.offload.activations
        || cfg.compile
    {
        return None;
    }
    let (n, p, tp) = (s.n, s.p, s.tp);
    let (h, f) = (a.hidden as f64, a.ffn as f64);
    let split = a.layer_param_split(false);
    let nf = n * f * p / tp;
    let stream = n * h * p / s.sp_div;
    // Everything in the layer's backward beyond the MLP's and the
    // attention's own temporaries: context parallelism, a dequantized
    // base, fp8's casts ([`pieces`]).
    Some(LayerSplit {
        down_share: (h * f) / split.total() as f64,
        // The down projection's input gradient, the gate's and the up
        // projection's; the down projection's saved input freed.
        mlp: stream + 3.0 * nf + extras,
        mlp_freed: nf,
        // The MLP's four saved n·F tensors (gate and up outputs, SiLU
        // output, product) freed.
        rest: 2.0 * stream + attention_backward(cfg, s) + extras,
        rest_freed: 4.0 * nf,
        incoming: stream,
    })
}

/// Eager attention's score values on this GPU: heads × local queries ×
/// keys × sequences.
fn scores(cfg: &DetailedConfig, s: &Sizes) -> f64 {
    cfg.arch.heads as f64 * s.seq * cfg.seq as f64 * s.micro
}

/// Inside a layer's forward, beyond what it saves.
fn layer_forward(cfg: &DetailedConfig, s: &Sizes) -> f64 {
    // Forward, inside a layer: eager attention's pre-softmax scores, alive
    // while the softmax output is written (`modeling_llama.eager_attention_forward`).
    if cfg.attention == AttentionKernel::Eager {
        scores(cfg, s) * s.p / s.tp
    } else {
        0.0
    }
}

/// Inside a layer's backward, beyond what it saves: the activation
/// gradients of the residual stream and of the larger of the MLP and the
/// attention.
fn layer_backward(cfg: &DetailedConfig, s: &Sizes) -> f64 {
    let a = &cfg.arch;
    let (n, p, tp) = (s.n, s.p, s.tp);
    let (h, f) = (a.hidden as f64, a.ffn as f64);
    // Backward, inside a layer: the residual stream's gradient and the
    // branch input's (2·n·h), plus the larger of the MLP's activation
    // gradients (Llama: the down projection's input gradient, then the
    // gate's and the up projection's; GPT-2: the GELU written in Python
    // adds a fourth n·F) and the attention's (eager: the softmax's fp32
    // input and output gradients, a·s² each; SDPA/flash: dQ, dK, dV and the
    // output's gradient).
    let stream = 2.0 * n * h * p / s.sp_div;
    // Under mixture of experts the routed experts' backward frees its saved
    // tensors (the n·k-row gate/up output, SiLU output, product and down
    // output) as fast as it allocates their gradients: measured
    // (`tests/fixtures/moe_peak_measured.tsv`), the layer peaks when its
    // weight gradients exist, with nothing of the experts' on top. The
    // shared experts are a dense MLP.
    // Liger's SwiGLU writes the gate's and the up projection's gradients
    // into their saved outputs (`swiglu_backward`): only the down
    // projection's input gradient is new.
    let mlp = match (a.family, a.moe) {
        (Family::Llama, Some(m)) => 3.0 * n * m.shared_ffn as f64 * p / tp,
        (Family::Llama, None) if cfg.liger => n * f * p / tp,
        (Family::Llama, None) => 3.0 * n * f * p / tp,
        (Family::Gpt2, _) => 4.0 * n * f * p / tp,
    };
    stream + mlp.max(attention_backward(cfg, s))
}

/// The attention's backward temporaries (eager: the softmax's input and
/// output gradients, a·s² each; SDPA/flash: dQ, dK, dV and the output's
/// gradient).
fn attention_backward(cfg: &DetailedConfig, s: &Sizes) -> f64 {
    let a = &cfg.arch;
    let (n, p, tp) = (s.n, s.p, s.tp);
    let h = a.hidden as f64;
    let kvd = a.kv_dim() as f64;
    let values = if cfg.attention == AttentionKernel::Eager {
        // Llama's eager attention runs its softmax in fp32
        // (`softmax(..., dtype=torch.float32)`); GPT-2's in the dtype.
        let softmax = if cfg.profile == Profile::Hf && a.family == Family::Llama {
            4.0
        } else {
            p
        };
        2.0 * scores(cfg, s) * softmax
    } else {
        2.0 * (n * h + 2.0 * n * kvd) * p
    };
    values / tp
}

/// Context parallelism's buffers in a layer's forward (twice that in its
/// backward).
fn context_parallel(cfg: &DetailedConfig, s: &Sizes) -> f64 {
    let a = &cfg.arch;
    let par = &cfg.parallel;
    let (n, p, tp) = (s.n, s.p, s.tp);
    let kvd = a.kv_dim() as f64;
    // Context parallelism: ring attention receives the next GPU's keys and
    // values while it works on the current ones, two chunks of this GPU's
    // tokens (Megatron-Core / Transformer Engine, `AttnFuncWithCPAndKVP2P`:
    // send and receive buffers); backward passes their gradients too.
    // All-to-all (Ulysses): the queries, keys and values arrive in new
    // buffers of their size (the whole sequence, heads / cp of the heads)
    // while the sent ones are still held; backward passes their gradients
    // the same way. Modelled from `AttnFuncWithCPAndQKVOA2A`, not measured.
    match (par.cp > 1, par.cp_comm) {
        (false, _) => 0.0,
        (true, CpComm::P2p) => 2.0 * 2.0 * n * kvd * p / tp,
        (true, CpComm::A2a) => n * (a.q_dim() as f64 + 2.0 * kvd) * p / tp,
    }
}

/// A quantized base: the 16-bit copy of the widest projection that the
/// layer's matmul dequantizes, forward and backward ([`quant`]).
fn dequantized(cfg: &DetailedConfig, s: &Sizes) -> f64 {
    if cfg.base_quant == BaseQuant::None {
        0.0
    } else {
        quant::largest_projection(&cfg.arch) as f64 * s.p / s.tp
    }
}

/// The loss's forward and backward transients and the output layer's
/// backward: (forward, backward, output layer's backward).
fn loss(cfg: &DetailedConfig, s: &Sizes) -> (f64, f64, f64) {
    let (nv, p) = (s.nv, s.p);
    // A loss without the full logits (`crate::detailed::memory::loss`).
    if let Some(l) = loss_bytes(cfg, s.n) {
        return (l.forward, l.backward, l.head_backward);
    }
    match cfg.compile_scope {
        _ if !cfg.compile => {}
        CompileScope::Model => return compiled_loss(cfg, s),
        CompileScope::LayersLoss => return separately_compiled_loss(cfg, s),
        CompileScope::Layers => {}
    }
    // The loss (vocabulary-parallel under tensor parallelism).
    let (loss_forward, loss_backward) = match cfg.profile {
        // Logits in the dtype and their fp32 copy (the log-probabilities are
        // saved, counted in `logits`); backward: two fp32 gradients.
        Profile::Hf => (nv * p + if p == 4.0 { 0.0 } else { 4.0 * nv }, 8.0 * nv),
        // Megatron: logits in the dtype while the fp32 softmax is formed;
        // backward in place, then the cast to the dtype.
        Profile::Fused => (nv * p, nv * p),
    };
    let loss_backward = loss_backward + loss_parallel_backward(cfg, s);
    let head_backward = eager_head_backward(cfg, s);
    (
        loss_forward.max(lm_head_adapter(cfg, s)),
        loss_backward,
        head_backward,
    )
}

/// The loss under `torch.compile` (measured,
/// `tests/fixtures/compile_measured.tsv`): the compiled forward writes the
/// logits (saved, in the dtype) and only per-token statistics beside them,
/// so nothing transient. The model returns its logits beside the loss, so
/// the compiled backward receives a gradient for them too, which
/// AOTAutograd materialises as zeros in the dtype (the output unused, its
/// `tangents` still an input of the backward graph); while that and the
/// saved logits are held, inductor's one fused kernel
/// (`log_softmax_backward_data`, `nll_loss_backward` and the cast) writes
/// the logits' gradient in the dtype, with two n·h tensors (the output
/// layer's input gradient and the final norm's recomputed output) then
/// beside it; then the output layer's weight gradient beside the logits'
/// gradient and the n·h pair. Read from inductor's backward code for the
/// small Llama (`TORCH_LOGS=output_code`, torch 2.15): no fp32 logit-sized
/// buffer.
///
/// Under a DTensor plan that splits the output layer over the vocabulary
/// and gathers the logits whole (transformers' and torchtitan's without
/// loss parallelism), the gathered logits are saved whole, but the
/// compiled backward writes their gradient for this GPU's vocabulary
/// shard only: the gather's backward is a slice, fused into the softmax's
/// backward (measured, `tests/fixtures/compile_tp_measured.tsv`).
fn compiled_loss(cfg: &DetailedConfig, s: &Sizes) -> (f64, f64, f64) {
    let (nv, p) = (s.nv, s.p);
    let nh2 = 2.0 * s.n * cfg.arch.hidden as f64 * p;
    // The GPU's vocabulary shard of the logits it holds: t where the
    // output layer is split and its logits gathered whole, 1 where they
    // stay split (already in `nv`) or the layer is whole.
    let par = &cfg.parallel;
    let shard = par.head_divisor() / par.logits_divisor();
    match cfg.arch.family {
        // The returned logits' zero gradient and the logits' gradient.
        Family::Llama => (0.0, nv * p + nv * p / shard + nh2, nv * p / shard + nh2),
        // GPT-2 (tied table): an fp32 logit-sized tensor and, in 16 bits,
        // one in the dtype, as measured on its rows; its backward code not
        // read.
        Family::Gpt2 => {
            let copy = if p == 4.0 { 0.0 } else { nv * p };
            (0.0, 4.0 * nv + copy, nv * p + nh2)
        }
    }
}

/// The embedding's backward under `torch.compile` of the whole model (an
/// eager embedding, with the layers compiled one by one, has none),
/// beyond the gradient it
/// returns: inductor decomposes `aten.embedding_dense_backward` (torch
/// 2.15, `torch/_inductor/decomposition.py`, `_embedding_dense_backward`,
/// every device but XPU) into `torch/_decomp/decompositions.py`'s
/// `embedding_dense_backward`, which accumulates in the promoted
/// computation dtype: the incoming n·h gradient cast to fp32, an fp32
/// table of zeros it is added into, then its cast to the weight's dtype
/// (the gradient). Nothing beyond the gradient in fp32; a frozen table
/// has no backward. Measured on Llama's untied table
/// (`tests/fixtures/compile_measured.tsv`, the 16-bit rows whose table
/// outweighs their logits). A tied table (GPT-2) is summed in the same
/// graph with the output layer's gradient; its 16-bit compiled rows are
/// within 5 % at the eager walk's three tables, and stay priced so.
fn compiled_embedding_backward(cfg: &DetailedConfig, s: &Sizes) -> f64 {
    let a = &cfg.arch;
    let whole = cfg.compile && cfg.compile_scope == CompileScope::Model;
    if !whole || s.p == 4.0 || cfg.lora_rank.is_some() || a.tied_embeddings {
        return 0.0;
    }
    let table = (a.vocab * a.hidden) as f64 / cfg.parallel.embedding_divisor();
    4.0 * table + 4.0 * s.n * a.hidden as f64
}

/// The full loss compiled on its own after the eager output layer
/// ([`CompileScope::LayersLoss`], torchtitan's `build_cross_entropy_loss`):
/// its forward writes only per-token statistics beside the logits it
/// saves; its backward writes the logits' gradient in the dtype and
/// nothing fp32 (measured: n·V·2 above the saved step, within 1 %,
/// `tests/fixtures/compile_loss_measured.tsv`); the eager output layer's
/// backward then holds that gradient beside its input's.
fn separately_compiled_loss(cfg: &DetailedConfig, s: &Sizes) -> (f64, f64, f64) {
    (
        lm_head_adapter(cfg, s),
        s.nv * s.p,
        eager_head_backward(cfg, s),
    )
}

/// The eager output layer's backward: the logits' gradient in the dtype
/// and the gradient of its input.
fn eager_head_backward(cfg: &DetailedConfig, s: &Sizes) -> f64 {
    s.nv * s.p + s.n * cfg.arch.hidden as f64 * s.p / s.sp_div
}

/// What `loss_parallel()`'s cross-entropy backward holds beyond the loss's
/// two fp32 gradients (torch 2.15,
/// `torch/distributed/tensor/parallel/loss.py`,
/// `_nll_loss_and_log_softmax_backward`): `grad_input = zeros_like(x)`,
/// then `(grad_input + exp(x)) * grad_output`, three n·V/t fp32 tensors at
/// the product, one more than the stock loss's; and the target's
/// bookkeeping: `safe_target`, the vocabulary shard's masked target
/// (`_MaskPartial._partition_value`) and `arange_1d` (int64, 8·n each),
/// `grad_update` and the masked `grad_output` (fp32, 4·n each) and the mask
/// (bool, n): 33·n (measured, `tests/fixtures/tp_loss_parallel_measured.tsv`).
fn loss_parallel_backward(cfg: &DetailedConfig, s: &Sizes) -> f64 {
    let par = &cfg.parallel;
    if par.tp > 1 && par.plan() == TpPlan::LossParallel {
        4.0 * s.nv + 33.0 * s.n
    } else {
        0.0
    }
}

/// PEFT's LoRA on the output layer (`result = result + lora_B(lora_A(x)) *
/// scaling`, then `result.to(torch_result_dtype)`), beyond the loss's
/// saved log-probabilities: the frozen layer's logits, B's n × V output,
/// its scaled copy and their sum in the adapters' dtype live at once
/// (measured, `tests/fixtures/lora_variants_measured.tsv`: B's output is
/// still held at the sum).
fn lm_head_adapter(cfg: &DetailedConfig, s: &Sizes) -> f64 {
    if !(states::peft(cfg) && cfg.lora_targets.lm_head()) {
        return 0.0;
    }
    let ab = if states::fp32_adapters(cfg) { 4.0 } else { s.p };
    s.nv * (s.p + 3.0 * ab) - 4.0 * s.nv
}

/// GRPO's loss instead of [`loss`]: (forward, backward, output layer's
/// backward).
fn grpo_loss(cfg: &DetailedConfig, s: &Sizes) -> (f64, f64, f64) {
    let (n, h, p) = (s.n, cfg.arch.hidden as f64, s.p);
    // GRPO's fused head instead (`super::grpo`): its tile and statistics
    // forward, fp32 gradients backward; then the gradient of the scored
    // positions scattered back into the sequence (on CUDA through the
    // boolean index, one more n·h).
    let head = grpo::head(cfg);
    let index = match cfg.device {
        Device::Cuda => n * h * p,
        Device::Cpu => 0.0,
    };
    (head.forward, head.backward, index + n * h * p)
}

/// Bytes of a gradient as backward produces it.
fn produced_grad_bytes(cfg: &DetailedConfig) -> f64 {
    // Gradients as backward produces them: in bf16 under FSDP2's
    // mixed-precision policy, which keeps them in fp32 once reduced.
    if states::fsdp2_policy(cfg) {
        2.0
    } else {
        grad_bytes(cfg)
    }
}

/// Bytes of gradient shard kept per byte produced ([`Pieces::shard_scale`]).
fn shard_scale(cfg: &DetailedConfig) -> f64 {
    grad_bytes(cfg) / produced_grad_bytes(cfg)
}

/// The gradients backward produces on this GPU before ZeRO's sharding:
/// (a layer's, the output layer's, the embedding's, a tied table's).
fn gradients(cfg: &DetailedConfig) -> (f64, f64, f64, f64) {
    let a = &cfg.arch;
    let par = &cfg.parallel;
    let (emb_params, head_params, layer_params) = param_split(cfg);
    let gb = produced_grad_bytes(cfg);
    let table = (a.vocab * a.hidden) as f64;
    match cfg.lora_rank {
        // The adapters outside the layers on the output layer and the
        // embedding, r·(V + h) each.
        Some(r) => {
            let t = cfg.lora_targets;
            let outer = |on: bool| {
                if on {
                    (r * (a.vocab + a.hidden)) as f64 * gb
                } else {
                    0.0
                }
            };
            let layers = trained_params(cfg) * gb - outer(t.lm_head()) - outer(t.embed());
            (
                layers / a.layers as f64 / par.tp as f64,
                outer(t.lm_head()),
                outer(t.embed()),
                0.0,
            )
        }
        // The shared table's gradient first comes from the output layer.
        None if a.tied_embeddings => (
            layer_params * gb,
            table * gb / par.head_divisor(),
            emb_params * gb - table * gb / par.head_divisor(),
            table * gb / par.head_divisor(),
        ),
        None => (layer_params * gb, head_params * gb, emb_params * gb, 0.0),
    }
}

/// A hybrid layer's Mamba-2 mixer: (its share of the layer's gradients,
/// the saved bytes freed before they come).
fn mixer_gradients(cfg: &DetailedConfig, s: &Sizes, saved: &Saved) -> (f64, f64) {
    let a = &cfg.arch;
    // A hybrid layer (Falcon-H1): autograd reaches the Mamba-2 mixer last,
    // as it ran first in forward, after the MLP's and the attention's
    // backward have freed their saved tensors; the mixer's weight
    // gradients are allocated then, in their place (measured in
    // `tests/fixtures/hybrid_measured.tsv`, the layer's sub-modules hooked).
    match a.ssm.filter(|_| cfg.lora_rank.is_none()) {
        Some(m) => {
            let (replicated, sharded) = mixer::saved(cfg, m, s.micro);
            let mixer = replicated / s.sp_div + sharded / s.tp;
            let share = m.params(a.hidden) as f64 / a.layer_param_split(false).total() as f64;
            (share, (saved.per_layer_full - mixer).max(0.0))
        }
        None => (0.0, 0.0),
    }
}

/// ZeRO-3 and FSDP2: the gathered weights beyond this GPU's shard, (two
/// layers', the embedding's and output layer's).
fn gathered_weights(cfg: &DetailedConfig) -> (f64, f64) {
    let par = &cfg.parallel;
    let (emb_params, head_params, layer_params) = param_split(cfg);
    let wb = weight_bytes(cfg);
    // With the parameters offloaded, none of a gathered layer is resident;
    // FSDP2 all-gathers into new full-size tensors beside the shards
    // (`_fsdp_collectives.py`, `foreach_all_gather`), measured.
    // DeepSpeed's ZeRO-3 counts its gathered weights itself
    // ([`Zero3`](crate::detailed::memory::zero3::Zero3)).
    let unsharded = if matches!(cfg.framework, Framework::DeepSpeed { .. }) {
        0.0
    } else if cfg.offload.params || cfg.framework.fsdp_reshard().is_some() {
        1.0
    } else if par.zero >= 3 {
        1.0 - 1.0 / par.zero_divisor(3)
    } else {
        0.0
    };
    (
        2.0 * layer_params * wb * unsharded,
        (emb_params + head_params) * wb * unsharded,
    )
}

/// FSDP2: the root's reduce-scatter ([`Pieces::root_reduce`]).
fn root_reduce(cfg: &DetailedConfig) -> (f64, f64) {
    if cfg.framework.fsdp_reshard().is_some() && cfg.lora_rank.is_none() {
        let (emb_params, head_params, _) = param_split(cfg);
        let kept = grad_bytes(cfg);
        (2.0 * emb_params * kept, 2.0 * head_params * kept)
    } else {
        (0.0, 0.0)
    }
}

/// DPO's reference forward before the policy's ([`Pieces::reference_forward`]).
fn dpo_reference_forward(cfg: &DetailedConfig, s: &Sizes) -> f64 {
    // TRL's DPO runs the reference model first under `no_grad`: its logits
    // for the chosen and rejected sequences in the dtype, and
    // `selective_log_softmax`'s one-sequence-at-a-time log-softmax. GRPO's
    // reference scores the rollout a micro-batch at a time in the
    // generation phase (`Walk::generation`).
    match cfg.objective {
        Objective::Dpo {
            reference: Reference::Model,
        } => s.nv * s.p + s.seq * cfg.arch.vocab as f64 / cfg.parallel.logits_divisor() * 4.0,
        _ => 0.0,
    }
}
