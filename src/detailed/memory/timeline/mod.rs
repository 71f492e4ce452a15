//! Live memory over one training step, event by event, and its peak: the
//! answer to "will it fit".
//!
//! [`estimate`](fn@super::estimate) adds the model states and what the forward
//! pass saves for backward. A run runs out of memory at the *peak* of live
//! memory during a step instead, which is above that sum when backward's
//! transient buffers stack on what is still saved (the loss's gradients,
//! above all), and below it when the peak is the optimizer step, after the
//! activations are gone. This file walks one step the way PyTorch runs it —
//! forward layer by layer, the loss, backward layer by layer, the optimizer
//! step, `zero_grad` — and keeps, at each event, the live bytes by category.
//!
//! The step modelled is a *later* step by default ([`Step::Later`]): the
//! optimizer state then already lives through forward and backward, so its
//! peak is the one a run must survive (the first step's optimizer phase is
//! the same, its forward and backward lower). [`Step::First`] models the
//! first, where `optimizer.step()` creates the state.
//!
//! The events and their transients, each from the code it models:
//! - **Loss, forward** (`transformers`' `ForCausalMLMLoss`,
//!   `loss/loss_utils.py`): the output layer's logits in the model's dtype,
//!   their fp32 copy (`logits.float()`, none in fp32), and the fp32
//!   log-probabilities that `cross_entropy`'s `log_softmax` keeps for
//!   backward. The output object, and with it the logits, is dropped before
//!   backward, as the Hugging Face Trainer does (`compute_loss` returns only
//!   the loss).
//! - **Loss, backward** (PyTorch `derivatives.yaml`: `nll_loss_backward`
//!   allocates the gradient of the log-probabilities, `_log_softmax_backward_data`
//!   the gradient of the logits, both fp32, while the saved log-probabilities
//!   are still alive): 8·n·V bytes on top of everything saved. Megatron's
//!   fused vocabulary-parallel cross entropy (`tensor_parallel/cross_entropy.py`)
//!   computes the gradient in place of its saved softmax instead and only
//!   casts it to the model's dtype.
//! - **Layer backward**: the gradient of the residual stream and of the
//!   branch input (2·n·h), plus the largest of the MLP's and the attention's
//!   own activation gradients (autograd frees each node's saved tensors and
//!   its incoming gradient once the node has run: `torch/csrc/autograd/engine.cpp`,
//!   `Node::release_variables`), and the layer's recomputed activations under
//!   selective or full recomputation. The layer's weight gradients appear
//!   here (`AccumulateGrad` keeps the first gradient it gets; later ones,
//!   from later micro-batches, are added in place, so each parameter's
//!   incoming gradient is a transient of its size).
//! - **Optimizer step** (`torch/optim/adamw.py`): the first step creates the
//!   state (`zeros_like` for both moments, a 0-d `step` per tensor). The
//!   per-parameter loop (`_single_tensor_adamw`, PyTorch's default off CUDA)
//!   computes `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)`:
//!   two temporaries of the largest trained tensor. The `foreach` version
//!   (`_multi_tensor_adamw`, the CUDA default) computes
//!   `torch._foreach_sqrt(exp_avg_sqs)` for all tensors at once: one copy of
//!   every trained parameter. The fused kernels (`fused=True`, apex and
//!   Transformer Engine's FusedAdam, which Megatron uses) keep none; nor do
//!   SGD and 8-bit Adam's blockwise kernels. `zero_grad()` then frees the
//!   gradients (`set_to_none=True`, PyTorch's default since 2.0). Megatron
//!   (the `fused` profile) keeps its gradient buffers for the whole run
//!   instead, and adds each weight's gradient into them as backward
//!   produces it (a transient of that weight's size).
//! - **Micro-batches**: the second and later micro-batches start with the
//!   accumulated gradients alive; they are all alike, so the timeline shows
//!   the first and one later micro-batch.
//! - **ZeRO-3** gathers each layer's parameters before its forward and its
//!   backward and frees them after; with the next layer prefetched, two
//!   layers are gathered at a time (PyTorch FSDP's `limit_all_gathers` rate
//!   limiter allows two in-flight all-gathers; DeepSpeed prefetches by
//!   `stage3_prefetch_bucket_size`). ZeRO-2 and 3 hold a layer's full
//!   gradient until it is reduce-scattered to its shard.
//! - **Pipelines (1F1B)**: the first stage holds p micro-batches' activations
//!   when its first backward starts, the last stage one and the logits
//!   (Narayanan et al. 2021, §2.2); both stages are walked and the one with
//!   the higher peak is shown.
//!
//! Checked against the peak of live tensor bytes measured in PyTorch on the
//! CPU (`tests/fixtures/peak_measured.tsv`, `tests/timeline_vs_measured.rs`).
//! What only a GPU adds (the CUDA context, library workspaces, the caching
//! allocator's fragmentation) is not in these figures.

use super::activations;
use super::bytes::act_bytes;
use super::events::{Event, Live, Moment, Phase, StepTimeline};
use super::states::{self, grad_bytes, param_split, trained_params, update_bytes, weight_bytes};
use super::zero3::{self, Zero3};
use super::{check, quant};
use crate::detailed::config::{
    AdamImpl, AttentionKernel, BaseQuant, DetailedConfig, DetailedError, Framework, Objective,
    Optimizer, Profile, Reference, Step, StepOptions,
};
use crate::detailed::model::Family;

/// Bytes of one micro-batch's pieces on one GPU, as the walk needs them.
struct Pieces {
    /// Saved by one layer, and what its backward materialises again.
    per_layer: f64,
    recomputed: f64,
    embedding: f64,
    head: f64,
    logits: f64,
    /// Token ids (int64).
    ids: f64,
    /// Inside one layer's forward and backward, beyond what is saved.
    layer_forward: f64,
    layer_backward: f64,
    /// The loss: forward and backward transients, and the output layer's.
    loss_forward: f64,
    loss_backward: f64,
    head_backward: f64,
    /// Trained bytes of one layer's gradients, of the output layer's and of
    /// the embedding's, on this GPU before ZeRO's sharding.
    layer_grads: f64,
    /// Of `layer_grads`, the share of a hybrid layer's Mamba-2 mixer, whose
    /// gradients come after `freed_before_mixer` bytes of the layer's saved
    /// tensors are freed; 0 for other layers.
    mixer_share: f64,
    freed_before_mixer: f64,
    head_grads: f64,
    embedding_grads: f64,
    /// Tied embeddings: the size of the shared table's gradient. Autograd
    /// holds the output layer's gradient of it in the table's input buffer
    /// until the embedding's backward gives the second, then sums the two
    /// out of place (`torch/csrc/autograd/input_buffer.cpp`, `accumulate`):
    /// three tables at once.
    tied_gradient: f64,
    /// ZeRO-3: a gathered layer's weights beyond this GPU's shard.
    gathered_layer: f64,
    gathered_outer: f64,
    /// Bytes of the gradient shard kept per byte of gradient backward
    /// produces: 2 under FSDP2's mixed-precision policy (bf16 produced, fp32
    /// kept), else 1.
    shard_scale: f64,
    /// FSDP2: the root's reduce-scatter when its backward ends, its
    /// unsharded gradients cast to the reduce dtype beside the flat input
    /// they are copied into (`foreach_reduce`: `_to_dtype_if_needed`,
    /// `foreach_reduce_scatter_copy_in`), measured.
    /// (the embedding's, the output layer's).
    root_reduce: (f64, f64),
    /// DPO's reference forward (no grad) before the policy's: its logits
    /// and one sequence's log-softmax.
    reference_forward: f64,
}

/// The largest trained tensor on one GPU, in elements: what the
/// per-parameter AdamW loop makes two temporaries of.
fn largest_trained(cfg: &DetailedConfig) -> f64 {
    let a = &cfg.arch;
    let tp = cfg.parallel.tp as f64;
    if let Some(r) = cfg.lora_rank {
        // A is r × in, B is out × r.
        let widest = cfg
            .lora_targets
            .iter()
            .map(|t| {
                let (i, o) = a.projection(t);
                i.max(o)
            })
            .max()
            .unwrap_or(0);
        return (r * widest) as f64;
    }
    let (h, f, kv) = (a.hidden, a.ffn, a.kv_dim());
    let layer_max = match a.family {
        Family::Gpt2 => (h * 3 * h).max(h * f),
        Family::Llama => (h * f).max(h * h).max(h * kv),
    };
    // `transformers` 5.x fuses each layer's experts into one 3-D
    // `gate_up_proj` (E × 2F × h), split over ep · etp.
    let experts = a.moe.map_or(0.0, |m| {
        (m.experts * 2 * m.expert_ffn * h) as f64 / (cfg.parallel.ep * cfg.parallel.etp) as f64
    });
    ((a.vocab * a.hidden) as f64 / cfg.parallel.outer_divisor())
        .max(layer_max as f64 / tp)
        .max(experts)
}

fn pieces(cfg: &DetailedConfig) -> Pieces {
    let a = &cfg.arch;
    let par = &cfg.parallel;
    let tp = par.tp as f64;
    let sp_div = par.sp_divisor();
    let saved = activations::saved(cfg);
    // The tokens of each sequence this GPU holds (context parallelism).
    let local = cfg.context_local();
    let micro = cfg.sequences() as f64;
    let n = local.seq as f64 * micro;
    let (h, f, v) = (a.hidden as f64, a.ffn as f64, a.vocab as f64);
    let kvd = a.kv_dim() as f64;
    let p = act_bytes(cfg);
    let scores_n = a.heads as f64 * local.seq as f64 * cfg.seq as f64 * micro;
    let eager = cfg.attention == AttentionKernel::Eager;

    // Forward, inside a layer: eager attention's pre-softmax scores, alive
    // while the softmax output is written (`modeling_llama.eager_attention_forward`).
    let layer_forward = if eager { scores_n * p / tp } else { 0.0 };
    // Backward, inside a layer: the residual stream's gradient and the
    // branch input's (2·n·h), plus the larger of the MLP's activation
    // gradients (Llama: the down projection's input gradient, then the
    // gate's and the up projection's; GPT-2: the GELU written in Python
    // adds a fourth n·F) and the attention's (eager: the softmax's fp32
    // input and output gradients, a·s² each; SDPA/flash: dQ, dK, dV and the
    // output's gradient).
    let stream = 2.0 * n * h * p / sp_div;
    // Under mixture of experts the routed experts' backward frees its saved
    // tensors (the n·k-row gate/up output, SiLU output, product and down
    // output) as fast as it allocates their gradients: measured
    // (`tests/fixtures/moe_peak_measured.tsv`), the layer peaks when its
    // weight gradients exist, with nothing of the experts' on top. The
    // shared experts are a dense MLP.
    let mlp = match (a.family, a.moe) {
        (Family::Llama, Some(m)) => 3.0 * n * m.shared_ffn as f64 * p / tp,
        (Family::Llama, None) => 3.0 * n * f * p / tp,
        (Family::Gpt2, _) => 4.0 * n * f * p / tp,
    };
    let attention = if eager {
        // Llama's eager attention runs its softmax in fp32
        // (`softmax(..., dtype=torch.float32)`); GPT-2's in the dtype.
        let softmax = if cfg.profile == Profile::Hf && a.family == Family::Llama {
            4.0
        } else {
            p
        };
        2.0 * scores_n * softmax
    } else {
        2.0 * (n * h + 2.0 * n * kvd) * p
    } / tp;
    let layer_backward = stream + mlp.max(attention);
    // Context parallelism: ring attention receives the next GPU's keys and
    // values while it works on the current ones, two chunks of this GPU's
    // tokens (Megatron-Core / Transformer Engine, `AttnFuncWithCPAndKVP2P`:
    // send and receive buffers); backward passes their gradients too.
    // All-to-all (Ulysses): the queries, keys and values arrive in new
    // buffers of their size (the whole sequence, heads / cp of the heads)
    // while the sent ones are still held; backward passes their gradients
    // the same way. Modelled from `AttnFuncWithCPAndQKVOA2A`, not measured.
    let ring = match (par.cp > 1, par.cp_comm) {
        (false, _) => 0.0,
        (true, crate::detailed::config::CpComm::P2p) => 2.0 * 2.0 * n * kvd * p / tp,
        (true, crate::detailed::config::CpComm::A2a) => n * (a.q_dim() as f64 + 2.0 * kvd) * p / tp,
    };

    // The loss (vocabulary-parallel under tensor parallelism).
    let nv = n * v / par.outer_divisor();
    let (loss_forward, loss_backward) = match cfg.profile {
        // Logits in the dtype and their fp32 copy (the log-probabilities are
        // saved, counted in `logits`); backward: two fp32 gradients.
        Profile::Hf => (nv * p + if p == 4.0 { 0.0 } else { 4.0 * nv }, 8.0 * nv),
        // Megatron: logits in the dtype while the fp32 softmax is formed;
        // backward in place, then the cast to the dtype.
        Profile::Fused => (nv * p, nv * p),
    };
    // The output layer's backward: the logits' gradient in the dtype and the
    // gradient of its input.
    let head_backward = nv * p + n * h * p / sp_div;
    // GRPO's fused head instead (`super::grpo`): its tile and statistics
    // forward, fp32 gradients backward; then the gradient of the scored
    // positions scattered back into the sequence (on CUDA through the
    // boolean index, one more n·h).
    let (loss_forward, loss_backward, head_backward) =
        if matches!(cfg.objective, Objective::Grpo { .. }) {
            let head = super::grpo::head(cfg);
            let index = match cfg.device {
                crate::detailed::config::Device::Cuda => n * h * p,
                crate::detailed::config::Device::Cpu => 0.0,
            };
            (head.forward, head.backward, index + n * h * p)
        } else {
            (loss_forward, loss_backward, head_backward)
        };

    let (emb_params, head_params, layer_params) = param_split(cfg);
    // Gradients as backward produces them: in bf16 under FSDP2's
    // mixed-precision policy, which keeps them in fp32 once reduced.
    let kept = grad_bytes(cfg);
    let gb = if states::fsdp2_policy(cfg) { 2.0 } else { kept };
    let table = (a.vocab * a.hidden) as f64;
    let (layer_grads, head_grads, embedding_grads, tied_gradient) = match cfg.lora_rank {
        Some(_) => (
            trained_params(cfg) / a.layers as f64 * gb / tp,
            0.0,
            0.0,
            0.0,
        ),
        // The shared table's gradient first comes from the output layer.
        None if a.tied_embeddings => (
            layer_params * gb,
            table * gb / par.outer_divisor(),
            emb_params * gb - table * gb / par.outer_divisor(),
            table * gb / par.outer_divisor(),
        ),
        None => (layer_params * gb, head_params * gb, emb_params * gb, 0.0),
    };
    // A hybrid layer (Falcon-H1): autograd reaches the Mamba-2 mixer last,
    // as it ran first in forward, after the MLP's and the attention's
    // backward have freed their saved tensors; the mixer's weight
    // gradients are allocated then, in their place (measured in
    // `tests/fixtures/hybrid_measured.tsv`, the layer's sub-modules hooked).
    let (mixer_share, freed_before_mixer) = match a.ssm.filter(|_| cfg.lora_rank.is_none()) {
        Some(m) => {
            let (replicated, sharded) = super::mixer::saved(cfg, m, micro);
            let mixer = replicated / sp_div + sharded / tp;
            let share = m.params(a.hidden) as f64 / a.layer_param_split(false).total() as f64;
            (share, (saved.per_layer_full - mixer).max(0.0))
        }
        None => (0.0, 0.0),
    };
    let wb = weight_bytes(cfg);
    // With the parameters offloaded, none of a gathered layer is resident;
    // FSDP2 all-gathers into new full-size tensors beside the shards
    // (`_fsdp_collectives.py`, `foreach_all_gather`), measured.
    // DeepSpeed's ZeRO-3 counts its gathered weights itself ([`Zero3`]).
    let unsharded = if cfg.offload.params || matches!(cfg.framework, Framework::Fsdp2 { .. }) {
        1.0
    } else if matches!(cfg.framework, Framework::DeepSpeed { .. }) {
        0.0
    } else if par.zero >= 3 {
        1.0 - 1.0 / par.zero_divisor(3)
    } else {
        0.0
    };
    // A quantized base: the 16-bit copy of the widest projection that the
    // layer's matmul dequantizes, forward and backward ([`super::quant`]).
    let dequant = if cfg.base_quant == BaseQuant::None {
        0.0
    } else {
        quant::largest_projection(a) as f64 * p / tp
    };
    // TRL's DPO runs the reference model first under `no_grad`: its logits
    // for the chosen and rejected sequences in the dtype, and
    // `selective_log_softmax`'s one-sequence-at-a-time log-softmax. GRPO's
    // reference scores the rollout a micro-batch at a time in the
    // generation phase ([`Walk::generation`]).
    let reference_forward = match cfg.objective {
        Objective::Dpo {
            reference: Reference::Model,
        } => nv * p + local.seq as f64 * v / par.outer_divisor() * 4.0,
        _ => 0.0,
    };
    Pieces {
        per_layer: saved.per_layer,
        // Per-operator checkpointing's cache is popped as the layer's
        // recomputation consumes it: the layer then holds its whole set.
        recomputed: (saved.per_layer_full - saved.per_layer).max(0.0),
        embedding: saved.embedding,
        head: saved.head,
        logits: saved.logits,
        ids: 8.0 * n,
        layer_forward: layer_forward + dequant + ring + super::fp8::forward_extra(cfg, n),
        layer_backward: layer_backward + dequant + 2.0 * ring + super::fp8::backward_extra(cfg, n),
        loss_forward,
        loss_backward,
        head_backward,
        layer_grads,
        mixer_share,
        freed_before_mixer,
        head_grads,
        embedding_grads,
        tied_gradient,
        gathered_layer: 2.0 * layer_params * wb * unsharded,
        gathered_outer: (emb_params + head_params) * wb * unsharded,
        shard_scale: kept / gb,
        root_reduce: if matches!(cfg.framework, Framework::Fsdp2 { .. }) && cfg.lora_rank.is_none()
        {
            (2.0 * emb_params * kept, 2.0 * head_params * kept)
        } else {
            (0.0, 0.0)
        },
        reference_forward,
    }
}

/// Walks one step of one pipeline stage and records its events.
struct Walk<'a> {
    cfg: &'a DetailedConfig,
    pieces: &'a Pieces,
    events: Vec<Event>,
    live: Live,
    /// Transient bytes held across events (a tied table's first gradient on
    /// later micro-batches).
    held: f64,
    /// Gradients live in buffers kept for the whole run.
    persistent_grads: bool,
    /// FSDP2: the root's unsharded parameters while they are held (from
    /// the start of forward to the end of backward, or, resharding after
    /// forward, again from the start of backward); and, without resharding
    /// after forward, each layer's from its forward to its backward.
    root: f64,
    /// FSDP2: the root's unsharded parameters, 0 under other frameworks.
    root_bytes: f64,
    /// FSDP2 with `reshard_after_forward=True` on the root too (as
    /// Accelerate's FSDP2 plugin and `fully_shard(model,
    /// reshard_after_forward=True)` set it; left unset, FSDP2 keeps the
    /// root's weights, `_fsdp_state.py`, `_lazy_init`).
    reshard_root: bool,
    unsharded_layer: f64,
    layers_held: f64,
    /// FSDP2 resharding after forward: the last layer, all-gathered again
    /// when the root's backward starts (its backward prefetch), held
    /// through the loss's backward.
    prefetched: f64,
    /// FSDP2: the root's unsharded gradients, held until its backward ends.
    root_grads: f64,
    /// DeepSpeed's gradient bucket, once allocated.
    bucket: f64,
    /// GRPO: a colocated vLLM engine's reservation, held through training
    /// unless it sleeps ([`super::grpo::engine_during_training`]).
    engine: f64,
    /// DeepSpeed's ZeRO-3: its gathered weights and buffers.
    zero3: Option<Zero3>,
    phase: Phase,
    micro_batch: u64,
}

impl Walk<'_> {
    /// GRPO's rollout, before the step trains ([`super::grpo`]): the
    /// prompts' prefill, the last decoding step with the whole cache, and,
    /// with a KL penalty, the reference scoring one micro-batch without
    /// grad (the backbone's output, its copy for the head, one layer's MLP
    /// tensors and the head's tile). Sharded weights are gathered as the
    /// forward gathers them: under FSDP2 a layer at a time (TRL's
    /// `summon_full_params(..., recurse=False)` unshards only the root's
    /// own), under other ZeRO-3 whole for generation.
    fn generation(&mut self) {
        let cfg = self.cfg;
        let g = super::grpo::generation(cfg);
        let gathered = if matches!(cfg.framework, Framework::Fsdp2 { .. }) {
            self.pieces.gathered_layer + self.root_bytes
        } else if cfg.parallel.zero >= 3 && cfg.lora_rank.is_none() {
            cfg.arch.params() as f64
                * weight_bytes(cfg)
                * (1.0 - 1.0 / cfg.parallel.zero_divisor(3))
        } else {
            0.0
        };
        self.phase = Phase::Generation;
        self.record(Moment::Prefill, g.prefill + gathered);
        self.record(Moment::Decode, g.decode + gathered);
        if cfg.objective == (Objective::Grpo { kl: true }) {
            self.record(
                Moment::ReferenceForward,
                super::grpo::reference_forward(cfg),
            );
        }
    }

    fn record(&mut self, moment: Moment, transient: f64) {
        self.events.push(Event {
            phase: self.phase,
            micro_batch: self.micro_batch,
            moment,
            live: Live {
                transient: transient
                    + self.held
                    + self.root
                    + self.layers_held
                    + self.root_grads
                    + self.bucket
                    + self.engine
                    + self.zero3.as_ref().map_or(0.0, |z| z.gathered(moment)),
                ..self.live
            },
        });
    }

    /// Adds `bytes` of a gradient: a new `.grad` on the first micro-batch,
    /// an in-place add of a transient of that size on later ones. Returns the
    /// transient. ZeRO-2/3 keep a shard of it.
    fn accumulate(&mut self, bytes: f64) -> f64 {
        let par = &self.cfg.parallel;
        // With the optimizer offloaded the shard goes to the host too.
        let shard = if self.cfg.offload.optimizer {
            0.0
        } else {
            bytes * self.pieces.shard_scale / par.zero_divisor(states::grad_stage(self.cfg))
        };
        // Until reduce-scattered, the full gradient is held.
        let unreduced = bytes - shard / self.pieces.shard_scale;
        // DeepSpeed's bucket, from the first gradient of backward on.
        self.bucket = states::deepspeed_bucket(self.cfg);
        if self.micro_batch == 1 && !self.persistent_grads {
            self.live.grads += shard;
            unreduced
        } else {
            bytes
        }
    }

    /// One micro-batch on a stage with `layers` layers, `first`/`last`
    /// saying whether it holds the embedding and the loss, with `in_flight`
    /// micro-batches' activations alive when its backward starts.
    fn micro_batch(&mut self, layers: u64, first: bool, last: bool, in_flight: f64) {
        let pc = self.pieces;
        self.phase = Phase::Forward;
        let resident = if self.cfg.offload.activations {
            0.0
        } else {
            layers as f64 * pc.per_layer
        };
        let others = (in_flight - 1.0) * (resident + if first { pc.embedding } else { 0.0 });
        self.live.activations = others + pc.ids;
        self.record(Moment::Start, 0.0);
        // FSDP2 gathers the root before its forward. In forward it keeps
        // each all-gather's output until the next all-gather completes
        // (`FSDPParamGroup.wait_for_unshard`: `all_gather_state`, freed by
        // `release_all_gather_state_for_comm_reuse`), so the root's lives
        // beside the first layer's gather (measured).
        if self.root_bytes > 0.0 {
            self.root = self.root_bytes;
            self.record(Moment::RootGather, self.root_bytes + pc.gathered_layer);
        }
        if first {
            self.live.activations += pc.embedding;
        }
        if pc.reference_forward > 0.0 {
            self.record(Moment::ReferenceForward, pc.reference_forward);
        }
        // Offloaded activations: one layer's stay on the GPU at a time.
        let offload = self.cfg.offload.activations;
        for i in 0..layers {
            if !offload || i == 0 {
                self.live.activations += pc.per_layer;
            }
            self.record(
                Moment::LayerForward(i),
                pc.layer_forward + pc.gathered_layer,
            );
            self.layers_held += self.unsharded_layer;
        }
        // FSDP2: the last layer's all-gather output, kept until the root's
        // forward ends.
        let last_gather = if self.root_bytes > 0.0 {
            pc.gathered_layer / 2.0
        } else {
            0.0
        };
        if last && self.zero3.is_some() {
            self.record(Moment::OutputGather, 0.0);
        }
        if last {
            self.live.activations += pc.head + pc.logits;
            self.record(
                Moment::Loss,
                pc.loss_forward + pc.gathered_outer + last_gather,
            );
        }

        self.phase = Phase::Backward;
        // Resharded after forward, the root is gathered again when backward
        // starts, before the loss's backward; its all-gather output is freed
        // once copied out, then the last layer is prefetched
        // (`FSDPParamGroup.pre_backward`, `_backward_prefetch`).
        if self.reshard_root {
            self.root = 0.0;
            self.record(Moment::RootGather, 2.0 * self.root_bytes);
            self.root = self.root_bytes;
        }
        self.layers_held += self.prefetched;
        if last {
            self.record(Moment::LossBackward, pc.loss_backward);
            self.live.activations -= pc.logits;
            let extra = self.accumulate(pc.head_grads);
            self.record(
                Moment::HeadBackward,
                pc.head_backward + extra + pc.gathered_outer,
            );
            if self.root_bytes > 0.0 {
                self.root_grads += extra;
            }
            if self.micro_batch > 1 {
                // The tied table's first gradient waits for the second.
                self.held = pc.tied_gradient;
            }
            self.live.activations -= pc.head;
        }
        // The prefetched layer is the first backward's own gathered one.
        self.layers_held -= self.prefetched;
        if last && self.zero3.is_some() {
            self.record(Moment::NormBackward, 0.0);
        }
        for i in (0..layers).rev() {
            let grads_before = self.live.grads;
            let extra = self.accumulate(pc.layer_grads);
            // ZeRO-3 copies each weight's gradient into its bucket as it
            // arrives: one weight's at a time.
            let extra = self
                .zero3
                .as_ref()
                .map_or(extra, |z| extra.min(z.largest_grad));
            // A hybrid layer's mixer gradients, new on the first
            // micro-batch (`accumulate` counts them into `grads`) or added
            // in place later (in `extra`), partly stand where the MLP's and
            // attention's freed tensors stood.
            let added = extra + self.live.grads - grads_before;
            let relief = (added * pc.mixer_share).min(pc.freed_before_mixer);
            let from_extra = relief.min(extra);
            self.live.grads -= relief - from_extra;
            self.record(
                Moment::LayerBackward(i),
                pc.layer_backward + pc.recomputed + extra - from_extra + pc.gathered_layer,
            );
            self.live.grads += relief - from_extra;
            self.layers_held -= self.unsharded_layer;
            if !offload || i == 0 {
                self.live.activations -= pc.per_layer;
            }
        }
        if first {
            let extra = self.accumulate(pc.embedding_grads);
            self.live.activations -= pc.embedding;
            self.record(
                Moment::EmbeddingBackward,
                extra + 2.0 * pc.tied_gradient + pc.gathered_outer,
            );
            self.held = 0.0;
            if self.zero3.is_some() {
                self.record(Moment::GradientReduce, 0.0);
            }
        }
        // FSDP2's root, its backward done: resharded, then its gradients
        // reduce-scattered.
        let (embedding, head) = pc.root_reduce;
        let reduce = if first { embedding } else { 0.0 } + if last { head } else { 0.0 };
        if self.root_bytes > 0.0 {
            self.root = 0.0;
            self.root_grads = 0.0;
            self.record(Moment::RootReduce, reduce);
        }
        self.live.activations = others;
        self.layers_held = 0.0;
        // FSDP2's root reshards when its backward ends.
        self.root = 0.0;
    }
}

/// Default AdamW implementation for the profile and device.
pub fn default_adam(cfg: &DetailedConfig) -> AdamImpl {
    match (cfg.profile, cfg.device) {
        (Profile::Fused, _) => AdamImpl::Fused,
        (Profile::Hf, crate::detailed::config::Device::Cuda) => AdamImpl::Foreach,
        (Profile::Hf, crate::detailed::config::Device::Cpu) => AdamImpl::ForLoop,
    }
}

/// The step timeline of `cfg` on one GPU: under a pipeline, the stage with
/// the higher peak ([`stage_timelines`] has both).
///
/// ```
/// use membudget::detailed::{preset, timeline, DetailedConfig, Phase, Profile, StepOptions};
///
/// let mut cfg = DetailedConfig::new(preset("gpt2").unwrap().arch, 1024, 8);
/// cfg.profile = Profile::Hf;
/// let t = timeline(&cfg, &StepOptions::default()).unwrap();
/// assert_eq!(t.peak_event().phase, Phase::Backward);
/// ```
pub fn timeline(cfg: &DetailedConfig, opts: &StepOptions) -> Result<StepTimeline, DetailedError> {
    let mut best: Option<StepTimeline> = None;
    for t in stage_timelines(cfg, opts)? {
        if best
            .as_ref()
            .is_none_or(|b| t.peak_bytes() > b.peak_bytes())
        {
            best = Some(t);
        }
    }
    Ok(best.unwrap_or(StepTimeline {
        events: Vec::new(),
        peak: 0,
        stage: 1,
        first_step: opts.step == Step::First,
        bucket: 0.0,
        engine: 0.0,
    }))
}

/// The step timelines of the first pipeline stage (the embedding, p
/// micro-batches in flight) and of the last (the logits and the loss), in
/// that order; one timeline without a pipeline. The stages between hold
/// less than the first.
pub fn stage_timelines(
    cfg: &DetailedConfig,
    opts: &StepOptions,
) -> Result<Vec<StepTimeline>, DetailedError> {
    check(cfg)?;
    let par = &cfg.parallel;
    let states = states::model_states(cfg);
    let mut pc = pieces(cfg);
    // FSDP2's root holds the outer weights unsharded throughout (below),
    // instead of gathering them around their use.
    let root = if matches!(cfg.framework, Framework::Fsdp2 { .. }) {
        std::mem::take(&mut pc.gathered_outer)
    } else {
        0.0
    };
    let stage_layers = par.stage_layers(&cfg.arch) as u64;
    let micro_batches = cfg.batch / (cfg.micro() * par.dp);
    let adam = opts.adam.unwrap_or_else(|| default_adam(cfg));
    // Megatron keeps gradients in buffers allocated once and zeroed each
    // step (`distributed/param_and_grad_buffer.py`; weights' gradients are
    // added into them as backward produces them); PyTorch's `zero_grad()`
    // frees them.
    // DDP with `gradient_as_bucket_view` keeps them too: they are views
    // into its buckets. Without it the buckets are a second copy that
    // lives through the step, and `param.grad` comes and goes.
    let ddp = match cfg.framework {
        Framework::Ddp { bucket_view } => Some(bucket_view),
        _ => None,
    };
    // DeepSpeed's partitions of the gradients are freed when the step ends
    // under stages 1 and 2; stage 3 allocates its flat partition and its
    // bucket when it starts and keeps them.
    let zero3 = Zero3::new(cfg, opts.step == Step::First);
    let persistent_grads = (cfg.profile == Profile::Fused
        && !matches!(cfg.framework, Framework::DeepSpeed { .. }))
        || ddp == Some(true)
        || zero3.is_some();
    let buckets = if ddp == Some(false) {
        states.grads / 2.0
    } else {
        0.0
    };

    // Pipelines: the first stage (embedding, p micro-batches in flight) and
    // the last (loss, one); one stage is both without a pipeline.
    let stages: Vec<(u64, bool, bool, f64)> = if par.pp == 1 {
        vec![(1, true, true, 1.0)]
    } else {
        let in_flight = par.first_stage_in_flight(cfg.accumulation_steps());
        vec![(1, true, false, in_flight), (par.pp, false, true, 1.0)]
    };
    let walks = stages.into_iter().map(|(stage, first, last, in_flight)| {
        let mut walk = Walk {
            cfg,
            pieces: &pc,
            events: Vec::new(),
            held: 0.0,
            persistent_grads,
            root: 0.0,
            root_bytes: 0.0,
            reshard_root: false,
            unsharded_layer: 0.0,
            layers_held: 0.0,
            prefetched: 0.0,
            root_grads: 0.0,
            bucket: if zero3.is_some() {
                states::deepspeed_bucket(cfg)
            } else {
                0.0
            },
            zero3: zero3.clone(),
            engine: 0.0,
            live: Live {
                grads: if persistent_grads {
                    states.grads
                } else {
                    buckets
                },
                params: states.params,
                master_weights: states.master_weights,
                optimizer_state: if opts.step == Step::Later {
                    states.optimizer_state
                } else {
                    0.0
                },
                ..Live::default()
            },
            phase: Phase::Forward,
            micro_batch: 1,
        };
        if let Framework::Fsdp2 {
            reshard_after_forward,
        } = cfg.framework
        {
            walk.root_bytes = root;
            walk.reshard_root = reshard_after_forward;
            if reshard_after_forward {
                walk.prefetched = pc.gathered_layer / 2.0;
            } else {
                walk.unsharded_layer = pc.gathered_layer / 2.0;
            }
        }
        if matches!(cfg.objective, Objective::Grpo { .. }) {
            walk.generation();
            walk.engine = super::grpo::engine_during_training(cfg);
        }
        walk.micro_batch(stage_layers, first, last, in_flight);
        if micro_batches > 1 {
            walk.micro_batch = 2;
            walk.micro_batch(stage_layers, first, last, in_flight);
        }
        // DeepSpeed frees its bucket when backward ends (stages 1 and 2).
        if zero3.is_none() {
            walk.bucket = 0.0;
        }
        // Gradients on this GPU are exactly the states' figure now.
        walk.live.grads = states.grads;
        walk.live.activations = 0.0;
        walk.phase = Phase::Optimizer;
        walk.micro_batch = 1;
        if opts.step == Step::First {
            walk.live.optimizer_state = states.optimizer_state;
            walk.record(Moment::OptimizerState, 0.0);
        }
        let shard = (par.tp * par.pp) as f64 * par.zero_divisor(1);
        // DeepSpeed updates one flat fp32 partition at a time: the whole
        // partition under stages 1 and 2, a sub-group of it under stage 3.
        let partition = trained_params(cfg) / shard;
        let sub_group = if zero3.is_some() {
            partition.min(zero3::SUB_GROUP_SIZE)
        } else {
            partition
        } * update_bytes(cfg);
        let temporaries = match (cfg.optimizer, adam) {
            // DeepSpeed hands the optimizer one flat fp32 partition
            // (`single_partition_of_fp32_groups`): the loop's two
            // temporaries are that size (measured).
            (Optimizer::AdamW, AdamImpl::ForLoop)
                if matches!(cfg.framework, Framework::DeepSpeed { .. }) =>
            {
                2.0 * sub_group
            }
            (Optimizer::AdamW, AdamImpl::ForLoop) => {
                2.0 * largest_trained(cfg) * update_bytes(cfg) / par.zero_divisor(1)
            }
            (Optimizer::AdamW, AdamImpl::Foreach) => {
                trained_params(cfg) * update_bytes(cfg) / shard
            }
            // `lion-pytorch`: `exp_avg.clone().mul_(β1).add(grad, 1 − β1)`,
            // two tensors of the parameter's size (measured exact).
            (Optimizer::Lion, _) => {
                2.0 * largest_trained(cfg) * update_bytes(cfg) / par.zero_divisor(1)
            }
            // Adafactor's `var_estimate = row_var @ col_var`, one tensor of
            // the parameter's size (modelled; on the CPU its reductions add
            // a buffer the measurement shows, not modelled).
            (Optimizer::Adafactor, _) => {
                largest_trained(cfg) * update_bytes(cfg) / par.zero_divisor(1)
            }
            // The larger of AdamW's per-parameter loop over the tensors
            // outside the layers (two of the embedding's size) and Muon's
            // Newton–Schulz iteration on the largest layer matrix m × n
            // (m ≤ n): `grad.lerp(buf)` in the parameter's dtype, the bf16
            // iterate twice while it is replaced, and the bf16 m × m Gram
            // matrix and its update (`_zeropower_via_newtonschulz`).
            (Optimizer::Muon, _) => {
                let tp = par.tp as f64;
                let outer = (cfg.arch.vocab * cfg.arch.hidden) as f64 / par.outer_divisor();
                let (m, n) = cfg
                    .arch
                    .layer_matrices()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(r, c)| (r.min(c) as f64, r.max(c) as f64))
                    .fold((0.0, 0.0), |best: (f64, f64), mn| {
                        if mn.0 * mn.1 > best.0 * best.1 {
                            mn
                        } else {
                            best
                        }
                    });
                let ns = m * n * (update_bytes(cfg) + 4.0) + 4.0 * m * m;
                (2.0 * outer * update_bytes(cfg)).max(ns / tp) / par.zero_divisor(1)
            }
            _ => 0.0,
        };
        // CPU Adam runs on the host. ZeRO-3 flattens each sub-group's
        // gradient partition into a new fp32 tensor before its update.
        let temporaries = if cfg.offload.optimizer {
            0.0
        } else if zero3.is_some() {
            temporaries + sub_group
        } else {
            temporaries
        };
        walk.record(Moment::OptimizerUpdate, temporaries);
        if !persistent_grads {
            walk.live.grads = buckets;
        }
        // DeepSpeed frees the gradient partition, then all-gathers the
        // updated partitions of the weights through a buffer of all of them
        // (`all_gather_dp_groups`; measured: the whole weights' size
        // whatever allgather_bucket_size).
        if matches!(cfg.framework, Framework::DeepSpeed { .. }) && zero3.is_none() {
            walk.record(Moment::WeightsGather, states.params);
        }
        walk.record(Moment::End, 0.0);

        let peak = walk.events.iter().enumerate().fold(0, |best, (i, e)| {
            if e.live.total() > walk.events[best].live.total() {
                i
            } else {
                best
            }
        });
        StepTimeline {
            events: walk.events,
            peak,
            stage,
            first_step: opts.step == Step::First,
            bucket: states::deepspeed_bucket(cfg),
            engine: super::grpo::engine_during_training(cfg),
        }
    });
    Ok(walks.collect())
}

/// Why the peak of `t` differs from `sum` (the model states plus the saved
/// activations), in a sentence or two for the page; `size` writes a byte
/// count in the reader's unit.
pub fn why_peak(t: &StepTimeline, sum: f64, size: impl Fn(f64) -> String) -> String {
    let e = t.peak_event();
    let l = &e.live;
    let peak = t.peak_bytes();
    let (relation, by) = if peak >= sum {
        ("above", peak - sum)
    } else {
        ("below", sum - peak)
    };
    let head = format!(
        "The step peaks at {} during {} ({} phase), {} {relation} the sum of states and saved activations ({}).",
        size(peak),
        e.moment.label(),
        e.phase.name(),
        size(by),
        size(sum),
    );
    // GRPO's steps open with the rollout; a colocated vLLM engine that
    // stays awake is part of every training event's transient buffers,
    // said on its own.
    let grpo = t
        .events
        .first()
        .is_some_and(|e| e.phase == Phase::Generation);
    let engine = if e.phase == Phase::Generation {
        0.0
    } else {
        t.engine
    };
    let own = Live {
        transient: l.transient - engine,
        ..*l
    };
    let l = &own;
    let why = match e.moment {
        Moment::Prefill => format!(
            " GRPO's rollout begins: the prompts' key/value cache and one layer's MLP tensors for every prompt ({}) sit beside the weights and the optimizer state; no gradient or saved activation exists yet.",
            size(l.transient)
        ),
        Moment::Decode => format!(
            " GRPO's rollout at its last token: the key/value cache of every completion this GPU generates at once and the step's logits (or a colocated vLLM engine's reservation) ({}) sit beside the weights and the optimizer state.",
            size(l.transient)
        ),
        Moment::ReferenceForward if grpo => format!(
            " The reference model scores the completions without grad, a micro-batch at a time: its forward's buffers ({}).",
            size(l.transient)
        ),
        Moment::Loss if grpo => format!(
            " TRL's fused LM head keeps no logits: every saved activation plus its product tile and statistics ({}).",
            size(l.transient)
        ),
        Moment::OptimizerUpdate | Moment::OptimizerState => format!(
            " By the optimizer step every activation is freed, but the gradients ({}), the optimizer state and the update's temporaries ({}) are all live.",
            size(l.grads),
            size(l.transient)
        ),
        Moment::Loss => format!(
            " The loss holds every saved activation plus the logits and their fp32 copy ({}){}.",
            size(l.transient),
            if l.grads == 0.0 {
                "; the gradients do not exist yet (zero_grad freed them)"
            } else {
                ""
            }
        ),
        Moment::LossBackward | Moment::HeadBackward => format!(
            " Backward starts with every saved activation still live, and the loss's gradients ({}) stack on top.",
            size(l.transient)
        ),
        Moment::LayerBackward(_) => format!(
            " Inside this layer's backward its activation gradients{} ({}) stack on the activations not yet freed.",
            if e.micro_batch > 1 {
                " and the accumulated gradients"
            } else {
                ""
            },
            size(l.transient)
        ),
        Moment::RootGather => format!(
            " FSDP2 is all-gathering its root module (embedding, final norm, output layer): the all-gather's output and the unsharded weights it is copied into are both live ({}).",
            size(l.transient)
        ),
        Moment::WeightsGather => format!(
            " DeepSpeed is all-gathering the updated weights from every GPU's partition into a buffer the size of all of them ({}).",
            size(l.transient)
        ),
        Moment::OutputGather => format!(
            " DeepSpeed's ZeRO-3 is all-gathering the output layer after the last layer's forward: the gathered weights, the persistent small ones and, on later steps, the prefetch group's flat buffer beside them ({}) stack on the saved activations.",
            size(l.transient)
        ),
        Moment::GradientReduce => format!(
            " Backward has ended and DeepSpeed's ZeRO-3 all-reduces the gradients left in its bucket: two copies of them beside the bucket and the still-gathered embedding ({} in all).",
            size(l.transient)
        ),
        Moment::RootReduce => format!(
            " FSDP2 is reduce-scattering the root module's gradients: cast to the reduce dtype and copied into one flat buffer, two full copies ({}).",
            size(l.transient)
        ),
        Moment::LayerForward(_) => format!(
            " The forward pass has saved {} and this layer's transient buffers add {}.",
            size(l.activations),
            size(l.transient)
        ),
        _ => String::new(),
    };
    // ZeRO-3 allocates its bucket at start-up and keeps it.
    let zero3 = t.events.iter().any(|e| e.moment == Moment::GradientReduce);
    let bucket = match e.moment {
        _ if zero3 => format!(
            " Of the transient buffers, {} is DeepSpeed's gradient bucket (reduce_bucket_size), allocated at start-up and kept.",
            size(t.bucket)
        ),
        Moment::HeadBackward | Moment::LayerBackward(_) | Moment::EmbeddingBackward
            if t.bucket > 0.0 =>
        {
            format!(
                " Of the transient buffers, {} is DeepSpeed's gradient bucket (reduce_bucket_size), held from the first gradient to the end of backward.",
                size(t.bucket)
            )
        }
        _ => String::new(),
    };
    let vllm = if engine > 0.0 {
        format!(
            " Beside all this a colocated vLLM engine keeps its reservation ({}) through training.",
            size(engine)
        )
    } else {
        String::new()
    };
    head + &why + &bucket + &vllm
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under a pipeline both end stages are walked, the first holding the
    /// micro-batches in flight, the last the loss; `timeline` is the one
    /// with the higher peak.
    #[test]
    fn both_end_stages_are_walked() {
        let mut cfg = DetailedConfig::new(
            crate::detailed::preset("llama-3.1-70b").unwrap().arch,
            4096,
            16,
        );
        cfg.micro_batch = Some(1);
        cfg.parallel.tp = 8;
        cfg.parallel.sp = true;
        cfg.parallel.pp = 4;
        let all = stage_timelines(&cfg, &StepOptions::default()).unwrap();
        assert_eq!(all.iter().map(|t| t.stage).collect::<Vec<_>>(), [1, 4]);
        assert!(all[1].events.iter().any(|e| e.moment == Moment::Loss));
        assert!(!all[0].events.iter().any(|e| e.moment == Moment::Loss));
        let worst = timeline(&cfg, &StepOptions::default()).unwrap();
        let top = all.iter().map(StepTimeline::peak_bytes).fold(0.0, f64::max);
        assert_eq!(worst.peak_bytes(), top);
        cfg.parallel.pp = 1;
        assert_eq!(
            stage_timelines(&cfg, &StepOptions::default())
                .unwrap()
                .len(),
            1
        );
    }
    use crate::detailed::{estimate, preset, Precision};

    fn gb(b: f64) -> String {
        format!("{:.1} GB", b / 1e9)
    }

    #[test]
    fn a_later_step_peaks_below_the_sum_when_the_optimizer_dominates() {
        // Llama-2-7B, seq 2048, batch 1, flash, mixed, AdamW one tensor at
        // a time: the gradients (freed by zero_grad in PyTorch) are not live
        // during forward, the activations not during the update, so the
        // "hf" step peaks at the update, below the sum.
        let arch = preset("llama-2-7b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 2048, 1);
        cfg.attention = AttentionKernel::Flash;
        cfg.profile = Profile::Hf;
        let opts = StepOptions {
            adam: Some(AdamImpl::ForLoop),
            ..StepOptions::default()
        };
        let t = timeline(&cfg, &opts).unwrap();
        let sum = estimate(&cfg).unwrap().total;
        assert!(t.peak_bytes() < sum, "{} vs {sum}", t.peak_bytes());
        assert_eq!(t.peak_event().phase, Phase::Optimizer);
        let why = why_peak(&t, sum, gb);
        assert!(why.contains("below the sum"), "{why}");
        assert!(why.contains("optimizer step"), "{why}");
    }

    #[test]
    fn long_sequences_peak_in_backward_above_the_sum() {
        let arch = preset("llama-3.1-8b").unwrap().arch;
        let mut cfg = DetailedConfig::new(arch, 8192, 4);
        cfg.profile = Profile::Hf;
        cfg.attention = AttentionKernel::Flash;
        let t = timeline(&cfg, &StepOptions::default()).unwrap();
        let sum = estimate(&cfg).unwrap().total;
        assert!(t.peak_bytes() > sum);
        assert_eq!(t.peak_event().phase, Phase::Backward);
        assert!(why_peak(&t, sum, gb).contains("above the sum"));
    }

    #[test]
    fn live_bytes_never_negative_and_states_match_the_breakdown() {
        for name in ["gpt2", "llama-2-7b", "qwen2.5-0.5b"] {
            let arch = preset(name).unwrap().arch;
            for (pp, zero, micro) in [(1, 0, 1), (2, 1, 2), (1, 3, 1)] {
                let mut cfg = DetailedConfig::new(arch, 1024, 8 * micro);
                cfg.micro_batch = Some(micro);
                cfg.parallel.dp = 4;
                cfg.parallel.zero = zero;
                cfg.parallel.pp = pp;
                cfg.precision = Precision::Bf16;
                let b = estimate(&cfg).unwrap();
                let t = timeline(&cfg, &StepOptions::default()).unwrap();
                for e in &t.events {
                    let l = &e.live;
                    for v in [
                        l.params,
                        l.grads,
                        l.optimizer_state,
                        l.activations,
                        l.transient,
                    ] {
                        assert!(v >= -1e-3, "{name}: {e:?}");
                    }
                    assert_eq!(l.params, b.params);
                }
                let update = t
                    .events
                    .iter()
                    .find(|e| e.moment == Moment::OptimizerUpdate)
                    .unwrap();
                assert_eq!(update.live.grads, b.grads, "{name}");
                assert_eq!(update.live.optimizer_state, b.optimizer_state, "{name}");
            }
        }
    }
}
