//! The walk over one step of one pipeline stage: what every stage starts
//! from ([`Start`]), GRPO's rollout, each micro-batch's forward (layer by
//! layer, the loss) and backward (the loss's, the output layer's, layer by
//! layer, the embedding's), the optimizer step and `zero_grad`, an event
//! recorded at each moment with the live bytes by category.

use super::optimizer;
use super::pieces::{pieces, LayerSplit, Pieces};
use crate::detailed::config::{
    AdamImpl, DetailedConfig, Device, Framework, Objective, Profile, Step, StepOptions,
};
use crate::detailed::memory::events::{Event, Live, Moment, Phase, StepTimeline};
use crate::detailed::memory::grpo;
use crate::detailed::memory::states::{self, weight_bytes, ModelStates};
use crate::detailed::memory::zero3::{first_partition_layer, zero1_reduce_values, Zero3};

/// What every stage's walk starts from.
#[derive(Clone)]
pub(super) struct Start {
    /// The model states on this GPU.
    states: ModelStates,
    /// One micro-batch's pieces; under FSDP2 without the outer weights,
    /// which its root holds instead.
    pieces: Pieces,
    /// Under Megatron-Core's block method, the pieces of the layers it does
    /// not recompute ([`DetailedConfig::recomputes_layer`]); a command-line
    /// setting ([`crate::detailed::config::COMMAND_LINE_ONLY`]).
    #[cfg(not(target_arch = "wasm32"))]
    kept: Option<Pieces>,
    /// FSDP2: the root's unsharded parameters, 0 under other frameworks.
    root: f64,
    /// Layers on one pipeline stage.
    pub(super) stage_layers: u64,
    /// Micro-batches of one step on one GPU.
    pub(super) micro_batches: u64,
    /// AdamW's implementation.
    adam: AdamImpl,
    /// DeepSpeed's ZeRO-3: its gathered weights and buffers.
    zero3: Option<Zero3>,
    /// Gradients live in buffers kept for the whole run.
    persistent_grads: bool,
    /// DDP without `gradient_as_bucket_view`: its buckets, a second copy of
    /// the gradients kept through the step.
    buckets: f64,
    /// Which step is modelled.
    step: Step,
    /// The optimizer in backward, if it runs there.
    in_backward: Option<InBackward>,
}

/// The optimizer in backward (torchtune's `optimizer_in_bwd`): what each
/// parameter's post-accumulate-grad hook adds when its gradient is ready
/// (`training/memory.py`, `register_optim_in_bwd_hooks`: the parameter's
/// own `optimizer.step()`, then `zero_grad()`, which frees the gradient).
#[derive(Clone, Copy)]
pub(super) struct InBackward {
    /// Live bytes per byte of the stepped parameter's gradient: the
    /// gradient and the update's temporaries.
    per_grad_byte: f64,
    /// Optimizer state the first step creates per byte of gradient, in
    /// each parameter's hook (`_init_group`); 0 on later steps.
    state_per_grad_byte: f64,
    /// The gradient of a layer's largest tensor, in bytes.
    largest_layer_grad: f64,
}

impl InBackward {
    /// `cfg`'s optimizer in backward, if it runs there.
    fn of(cfg: &DetailedConfig, states: &ModelStates, adam: AdamImpl, step: Step) -> Option<Self> {
        if !cfg.optimizer_in_backward {
            return None;
        }
        let gb = states::grad_bytes(cfg);
        Some(InBackward {
            per_grad_byte: optimizer::in_backward_per_value(cfg, adam) / gb,
            state_per_grad_byte: if step == Step::First && states.grads > 0.0 {
                states.optimizer_state / states.grads
            } else {
                0.0
            },
            largest_layer_grad: optimizer::largest_in_layer(cfg, cfg.parallel.tp as f64) * gb,
        })
    }
}

impl Start {
    /// What every stage's walk of `cfg`'s step starts from.
    pub(super) fn new(cfg: &DetailedConfig, opts: &StepOptions) -> Self {
        let par = &cfg.parallel;
        let states = states::model_states(cfg);
        let mut pc = pieces(cfg);
        // FSDP2's root holds the outer weights unsharded throughout (below),
        // instead of gathering them around their use.
        let root = if cfg.framework.fsdp_reshard().is_some() {
            std::mem::take(&mut pc.gathered_outer)
        } else {
            0.0
        };
        #[cfg(not(target_arch = "wasm32"))]
        let kept = cfg.block_recompute().then(|| {
            let whole = DetailedConfig {
                recompute: crate::detailed::config::Recompute::None,
                recompute_layers: 0,
                ..*cfg
            };
            Pieces {
                gathered_outer: pc.gathered_outer,
                ..pieces(&whole)
            }
        });
        let stage_layers = par.stage_layers(&cfg.arch) as u64;
        let micro_batches = cfg.batch / (cfg.micro() * par.dp);
        let adam = opts.adam.unwrap_or_else(|| super::default_adam(cfg));
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
        let in_backward = InBackward::of(cfg, &states, adam, opts.step);
        Start {
            states,
            pieces: pc,
            #[cfg(not(target_arch = "wasm32"))]
            kept,
            root,
            stage_layers,
            micro_batches,
            adam,
            zero3,
            persistent_grads,
            buckets,
            step: opts.step,
            in_backward,
        }
    }
}

impl Start {
    /// The start of a stage of an uneven pipeline split: `layers` of them,
    /// and `scale` times the average stage's model states
    /// ([`states::stage_states_scale`]).
    pub(super) fn for_stage(&self, layers: u64, scale: f64) -> Start {
        let s = self.states;
        Start {
            states: ModelStates {
                params: s.params * scale,
                grads: s.grads * scale,
                master_weights: s.master_weights * scale,
                optimizer_state: s.optimizer_state * scale,
            },
            buckets: self.buckets * scale,
            stage_layers: layers,
            ..self.clone()
        }
    }
}

/// Walks one step of one pipeline stage and records its events.
pub(super) struct Walk<'a> {
    cfg: &'a DetailedConfig,
    pieces: &'a Pieces,
    /// The pieces of the layers Megatron-Core's block method keeps whole.
    #[cfg(not(target_arch = "wasm32"))]
    kept: Option<&'a Pieces>,
    /// Layers on this pipeline stage.
    #[cfg(not(target_arch = "wasm32"))]
    stage_layers: u64,
    events: Vec<Event>,
    /// Every event kept, or only the highest so far (the planner's
    /// [`super::peak`]).
    every_event: bool,
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
    /// DeepSpeed's stages 1 (with `overlap_comm`) and 2 on the first
    /// micro-batch: the flat gradient partition not yet allocated, and the
    /// layer whose reduction allocates it (none: the embedding's, when
    /// backward ends); `None` otherwise.
    partition_at: Option<Option<u64>>,
    /// GRPO: a colocated vLLM engine's reservation, held through training
    /// unless it sleeps ([`grpo::engine_during_training`]).
    pub(super) engine: f64,
    /// DeepSpeed's ZeRO-3: its gathered weights and buffers.
    zero3: Option<Zero3>,
    /// The optimizer in backward, if it runs there.
    in_backward: Option<InBackward>,
    phase: Phase,
    /// Which micro-batch is walked: 1, or 2 for every later one.
    pub(super) micro_batch: u64,
}

impl<'a> Walk<'a> {
    /// A walk of `cfg`'s step from `start`, before its first event: the
    /// model states live, and FSDP2's root set up.
    pub(super) fn new(cfg: &'a DetailedConfig, start: &'a Start, every_event: bool) -> Self {
        let states = &start.states;
        let pc = &start.pieces;
        let persistent_grads = start.persistent_grads;
        let mut walk = Walk {
            cfg,
            pieces: pc,
            #[cfg(not(target_arch = "wasm32"))]
            kept: start.kept.as_ref(),
            #[cfg(not(target_arch = "wasm32"))]
            stage_layers: start.stage_layers,
            events: Vec::new(),
            every_event,
            held: 0.0,
            persistent_grads,
            root: 0.0,
            root_bytes: 0.0,
            reshard_root: false,
            unsharded_layer: 0.0,
            layers_held: 0.0,
            prefetched: 0.0,
            root_grads: 0.0,
            bucket: if start.zero3.is_some() {
                states::deepspeed_bucket(cfg)
            } else {
                0.0
            },
            zero3: start.zero3.clone(),
            in_backward: start.in_backward,
            partition_at: partition_at(cfg),
            engine: 0.0,
            live: Live {
                grads: if persistent_grads {
                    states.grads
                } else {
                    start.buckets
                },
                params: states.params,
                master_weights: states.master_weights,
                optimizer_state: if start.step == Step::Later {
                    states.optimizer_state
                } else {
                    0.0
                },
                ..Live::default()
            },
            phase: Phase::Forward,
            micro_batch: 1,
        };
        if let Some(reshard_after_forward) = cfg.framework.fsdp_reshard() {
            walk.root_bytes = start.root;
            // FSDP1 never reshards the root after forward
            // (`_runtime_utils.py`, `_post_forward_reshard`: "Do not free
            // the root's parameters in the post-forward for FULL_SHARD").
            walk.reshard_root =
                reshard_after_forward && matches!(cfg.framework, Framework::Fsdp2 { .. });
            if reshard_after_forward {
                walk.prefetched = pc.gathered_layer / 2.0;
            } else {
                walk.unsharded_layer = pc.gathered_layer / 2.0;
            }
        }
        walk
    }

    /// GRPO's rollout, before the step trains ([`grpo`]): the
    /// prompts' prefill, the last decoding step with the whole cache, and,
    /// with a KL penalty, the reference scoring one micro-batch without
    /// grad (the backbone's output, its copy for the head, one layer's MLP
    /// tensors and the head's tile). Sharded weights are gathered as the
    /// forward gathers them: under FSDP2 a layer at a time (TRL's
    /// `summon_full_params(..., recurse=False)` unshards only the root's
    /// own), under other ZeRO-3 whole for generation.
    pub(super) fn generation(&mut self) {
        let cfg = self.cfg;
        let g = grpo::generation(cfg);
        let gathered = if cfg.framework.fsdp_reshard().is_some() {
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
            self.record(Moment::ReferenceForward, grpo::reference_forward(cfg));
        }
    }

    /// Records an event at `moment` with `transient` bytes on top of what
    /// is held across events.
    fn record(&mut self, moment: Moment, transient: f64) {
        let event = Event {
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
        };
        // Keeping only the highest, the first of equals, is what
        // [`Self::finish`] picks from every event.
        if !self.every_event {
            match self.events.first() {
                Some(best) if event.live.total() <= best.live.total() => return,
                _ => self.events.clear(),
            }
        }
        self.events.push(event);
    }

    /// DeepSpeed's ZeRO-2 reducing a tied table's gradient on the first
    /// micro-batch: the output layer's share is autograd's, held whole in the
    /// table's input buffer until the embedding's backward adds the
    /// second (`torch/csrc/autograd/input_buffer.cpp`); only their sum
    /// reaches DeepSpeed's gradient hook (measured:
    /// `deepspeed_heldout39_measured.tsv`, the tied Llama under ZeRO-2).
    fn tied_whole(&self) -> bool {
        self.micro_batch == 1
            && self.pieces.tied_gradient > 0.0
            && matches!(self.cfg.framework, Framework::DeepSpeed { .. })
            && self.cfg.parallel.zero == 2
    }

    /// DeepSpeed allocates the flat gradient partition, whole
    /// ([`partition_at`]).
    fn allocate_partition(&mut self) {
        self.live.grads += states::model_states(self.cfg).grads;
        self.partition_at = None;
    }

    /// Adds `bytes` of a gradient: a new `.grad` on the first micro-batch,
    /// an in-place add of a transient of that size on later ones. Returns the
    /// transient. ZeRO-2/3 keep a shard of it.
    fn accumulate(&mut self, bytes: f64) -> f64 {
        let par = &self.cfg.parallel;
        // With the optimizer offloaded the shard goes to the host too.
        // DeepSpeed's ZeRO-1 without `overlap_comm` reduces only when
        // backward ends: the whole gradient is kept on the GPU until then,
        // the optimizer offloaded or not. With the optimizer offloaded
        // otherwise, the shard goes to the host too.
        let shard = if states::whole_grads_in_backward(self.cfg) {
            bytes * self.pieces.shard_scale
        } else if self.cfg.offload.optimizer {
            0.0
        } else {
            bytes * self.pieces.shard_scale / par.zero_divisor(states::grad_stage(self.cfg))
        };
        // Until reduce-scattered, the full gradient is held.
        let unreduced = bytes - shard / self.pieces.shard_scale;
        // DeepSpeed's bucket, from the first gradient of backward on.
        self.bucket = states::deepspeed_bucket(self.cfg);
        if self.micro_batch == 1 && !self.persistent_grads {
            // DeepSpeed allocates its partition whole, at once (below).
            if self.partition_at.is_none() {
                self.live.grads += shard;
            }
            unreduced
        } else {
            bytes
        }
    }

    /// The optimizer in backward: the hooks of a group of parameters whose
    /// gradients weigh `bytes`, the largest `largest`: each creates its
    /// state on the first step; the largest's gradient and update
    /// temporaries are the transient. Nothing is added to the gradients.
    fn step_in_backward(&mut self, ib: InBackward, bytes: f64, largest: f64) -> f64 {
        self.live.optimizer_state += ib.state_per_grad_byte * bytes;
        largest * ib.per_grad_byte
    }

    /// One micro-batch on a stage with `layers` layers, `first`/`last`
    /// saying whether it holds the embedding and the loss, with `in_flight`
    /// micro-batches' activations alive when its backward starts.
    pub(super) fn micro_batch(&mut self, layers: u64, first: bool, last: bool, in_flight: f64) {
        let others = self.forward_start(layers, first, in_flight);
        self.forward_layers(layers);
        if last {
            self.loss();
        }
        self.backward_start();
        if last {
            self.head_backward();
        }
        // The prefetched layer is the first backward's own gathered one.
        self.layers_held -= self.prefetched;
        if last && self.zero3.is_some() {
            self.record(Moment::NormBackward, 0.0);
        }
        for i in (0..layers).rev() {
            self.layer_backward(i);
        }
        if first {
            self.embedding_backward();
        }
        self.root_reduce(first, last);
        self.live.activations = others;
        self.layers_held = 0.0;
        // FSDP2's root reshards when its backward ends.
        self.root = 0.0;
    }

    /// The start of a micro-batch's forward: the other micro-batches'
    /// activations in flight and the token ids, FSDP2's root gathered, the
    /// embedding's output, DPO's reference forward. Returns the activations
    /// of the other micro-batches.
    fn forward_start(&mut self, layers: u64, first: bool, in_flight: f64) -> f64 {
        let pc = self.pieces;
        self.phase = Phase::Forward;
        // Offloaded layers of the others are on the host.
        let on_gpu = self.cfg.offloaded_layers().min(layers)..layers;
        #[cfg(not(target_arch = "wasm32"))]
        let resident: f64 = on_gpu.map(|i| self.layer_pieces(i).per_layer).sum();
        #[cfg(target_arch = "wasm32")]
        let resident = on_gpu.count() as f64 * pc.per_layer;
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
        others
    }

    /// The layers' forward, each saving its activations.
    fn forward_layers(&mut self, layers: u64) {
        // Offloaded activations: one layer's stay on the GPU at a time.
        let offloaded = self.cfg.offloaded_layers();
        for i in 0..layers {
            let pc = self.layer_pieces(i);
            if i >= offloaded || i == 0 {
                self.live.activations += pc.per_layer;
            }
            self.record(
                Moment::LayerForward(i),
                pc.layer_forward + pc.gathered_layer,
            );
            self.layers_held += self.unsharded_layer;
        }
    }

    /// The last stage's output layer and loss: ZeRO-3's gather of the
    /// output layer, then the logits and the loss's transients.
    fn loss(&mut self) {
        let pc = self.pieces;
        // FSDP2: the last layer's all-gather output, kept until the root's
        // forward ends.
        let last_gather = if self.root_bytes > 0.0 {
            pc.gathered_layer / 2.0
        } else {
            0.0
        };
        if self.zero3.is_some() {
            self.record(Moment::OutputGather, 0.0);
        }
        self.live.activations += pc.head + pc.logits;
        self.record(
            Moment::Loss,
            pc.loss_forward + pc.gathered_outer + last_gather,
        );
    }

    /// The start of backward: FSDP2's root gathered again if it resharded
    /// after forward, and the last layer prefetched.
    fn backward_start(&mut self) {
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
    }

    /// The last stage's loss backward and output layer's backward, with the
    /// output layer's weight gradient.
    fn head_backward(&mut self) {
        let pc = self.pieces;
        self.record(Moment::LossBackward, pc.loss_backward);
        self.live.activations -= pc.logits;
        let tied_whole = self.tied_whole();
        let extra = match self.in_backward {
            // A tied table's gradient waits in autograd's input buffer for
            // the embedding's: its hook runs then.
            Some(_) if pc.tied_gradient > 0.0 => {
                self.held = pc.tied_gradient;
                0.0
            }
            // The weight's gradient beside the logits' while the output
            // layer's backward runs; its hook after, once autograd has
            // released the logits' gradient (`engine.cpp`: a node's inputs
            // are freed when it has run).
            Some(ib) => {
                let step = self.step_in_backward(ib, pc.head_grads, pc.head_grads);
                step.max(pc.head_backward + pc.head_grads) - pc.head_backward
            }
            None if tied_whole => {
                self.bucket = states::deepspeed_bucket(self.cfg);
                pc.head_grads
            }
            None => self.accumulate(pc.head_grads),
        };
        self.record(
            Moment::HeadBackward,
            pc.head_backward + extra + pc.gathered_outer,
        );
        if self.root_bytes > 0.0 {
            self.root_grads += extra;
        }
        if self.micro_batch > 1 || tied_whole {
            // The tied table's first gradient waits for the second.
            self.held = pc.tied_gradient;
        }
        self.live.activations -= pc.head;
    }

    /// The pieces of layer `i`: the step's, or under Megatron-Core's block
    /// method those of a layer kept whole when it is not recomputed.
    #[cfg(not(target_arch = "wasm32"))]
    fn layer_pieces(&self, i: u64) -> &'a Pieces {
        match self.kept {
            Some(kept) if !self.cfg.recomputes_layer(i, self.stage_layers) => kept,
            _ => self.pieces,
        }
    }

    /// Every layer's pieces are the step's on the page.
    #[cfg(target_arch = "wasm32")]
    fn layer_pieces(&self, _: u64) -> &'a Pieces {
        self.pieces
    }

    /// Layer `i`'s backward with its own pieces ([`Walk::layer_pieces`]).
    #[cfg(not(target_arch = "wasm32"))]
    fn layer_backward(&mut self, i: u64) {
        if self.kept.is_none() {
            return self.layer_backward_of(i);
        }
        let step = self.pieces;
        self.pieces = self.layer_pieces(i);
        self.layer_backward_of(i);
        self.pieces = step;
    }

    /// Layer `i`'s backward on the page: the step's pieces.
    #[cfg(target_arch = "wasm32")]
    fn layer_backward(&mut self, i: u64) {
        self.layer_backward_of(i)
    }

    /// Layer `i`'s backward: its activation gradients, its recomputed
    /// activations and its weight gradients, then its saved activations
    /// freed.
    fn layer_backward_of(&mut self, i: u64) {
        let pc = self.pieces;
        let on_gpu = i >= self.cfg.offloaded_layers() || i == 0;
        if let Some(ib) = self.in_backward {
            let step = self.step_in_backward(ib, pc.layer_grads, ib.largest_layer_grad);
            self.record(
                Moment::LayerBackward(i),
                pc.layer_backward + pc.recomputed + step,
            );
            if on_gpu {
                self.live.activations -= pc.per_layer;
            }
            return;
        }
        let grads_before = self.live.grads;
        let extra = self.accumulate(pc.layer_grads);
        // ZeRO-3 copies each weight's gradient into its bucket as it
        // arrives: one weight's at a time.
        let extra = self
            .zero3
            .as_ref()
            .map_or(extra, |z| extra.min(z.largest_grad));
        // FSDP2 without resharding after forward holds every layer
        // unsharded since its forward (in `layers_held`): its backward
        // gathers nothing (`FSDPParamGroup.unshard` returns early when
        // already unsharded, `_fsdp_param_group.py`; measured).
        let gathered = if self.unsharded_layer > 0.0 {
            0.0
        } else {
            pc.gathered_layer
        };
        match pc.split.filter(|_| self.zero3.is_none()) {
            Some(split) => self.split_backward(i, split, grads_before, extra, gathered),
            None => self.whole_backward(i, grads_before, extra, gathered),
        }
        if self.partition_at == Some(Some(i)) {
            self.allocate_partition();
        }
        self.layers_held -= self.unsharded_layer;
        if on_gpu {
            self.live.activations -= pc.per_layer;
        }
    }

    /// Layer `i`'s backward as one moment at the sum of its parts: GPT-2,
    /// mixtures of experts, hybrids, adapters and DeepSpeed's ZeRO-3.
    fn whole_backward(&mut self, i: u64, grads_before: f64, extra: f64, gathered: f64) {
        let pc = self.pieces;
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
            pc.layer_backward + pc.recomputed + extra - from_extra + gathered,
        );
        self.live.grads += relief - from_extra;
    }

    /// A dense Llama layer's backward, recorded at the highest of its
    /// moments ([`LayerSplit`]): FSDP2's prefetch of the next layer in its
    /// pre-backward (resharding after forward), the MLP's, and the rest.
    /// Each is (gradients not yet there, saved bytes freed, transient).
    fn split_backward(
        &mut self,
        i: u64,
        split: LayerSplit,
        grads_before: f64,
        extra: f64,
        gathered: f64,
    ) {
        let pc = self.pieces;
        let added = self.live.grads - grads_before;
        let not_down = 1.0 - split.down_share;
        // What a moment has freed comes out of the recomputed tensors
        // first (a transient here), then out of the saved ones.
        let freed = |bytes: f64| {
            let recomputed = bytes.min(pc.recomputed);
            (
                -(bytes - recomputed).min(pc.per_layer),
                pc.recomputed - recomputed,
            )
        };
        let (mlp_saved, mlp_recomputed) = freed(split.mlp_freed);
        let (rest_saved, rest_recomputed) = freed(split.rest_freed);
        let moments = [
            (-added, 0.0, split.incoming + self.prefetch_gather(i)),
            (
                -not_down * added,
                mlp_saved,
                split.mlp + mlp_recomputed + split.down_share * extra + gathered,
            ),
            (
                0.0,
                rest_saved,
                split.rest + rest_recomputed + extra + gathered,
            ),
        ];
        let (grads, saved, transient) =
            moments.into_iter().fold((0.0, 0.0, f64::MIN), |best, m| {
                if m.0 + m.1 + m.2 > best.0 + best.1 + best.2 {
                    m
                } else {
                    best
                }
            });
        self.live.grads += grads;
        self.live.activations += saved;
        self.record(Moment::LayerBackward(i), transient);
        self.live.grads -= grads;
        self.live.activations -= saved;
    }

    /// FSDP2 resharding after forward: in layer `i`'s pre-backward, with
    /// this layer unsharded, the all-gather of layer `i − 1` it prefetches
    /// (`FSDPParamGroup.pre_backward`, `_backward_prefetch`). Over gloo
    /// (the CPU) `all_gather_into_tensor` receives into a copy of the
    /// output first (`ProcessGroupGloo::_allgather_base`): a third layer.
    fn prefetch_gather(&self, i: u64) -> f64 {
        if self.prefetched == 0.0 || i == 0 {
            return f64::MIN;
        }
        let gloo = if self.cfg.device == Device::Cpu {
            self.prefetched
        } else {
            0.0
        };
        self.pieces.gathered_layer + gloo
    }

    /// The first stage's embedding backward, the end of the micro-batch's
    /// backward, and ZeRO-3's reduction of what is left in its bucket.
    fn embedding_backward(&mut self) {
        let pc = self.pieces;
        let extra = match self.in_backward {
            // The tables' hooks: a tied table's two gradients, the second
            // added in place into the first (two tables, measured: not the
            // three of an out-of-place sum), then its step.
            Some(ib) => {
                self.held = 0.0;
                let grads = pc.embedding_grads + pc.tied_gradient;
                let largest = pc.embedding_grads.max(pc.tied_gradient);
                let step = self.step_in_backward(ib, grads, largest);
                step.max(2.0 * pc.tied_gradient) - 2.0 * pc.tied_gradient
            }
            None => self.accumulate(pc.embedding_grads),
        };
        self.live.activations -= pc.embedding;
        // Three tables at once while autograd sums the two shares, or
        // under DeepSpeed's ZeRO-3 two (measured,
        // `deepspeed_settings_measured.tsv`: the tied Llama's first steps).
        let sums = if self.zero3.is_some() { 1.0 } else { 2.0 };
        self.record(
            Moment::EmbeddingBackward,
            extra
                + sums * pc.tied_gradient
                + pc.gathered_outer
                + self.root_flat_grad()
                + pc.embedding_backward,
        );
        if self.tied_whole() {
            // Their sum is the table's gradient, reduced to its shard.
            self.accumulate(pc.tied_gradient);
        }
        if self.partition_at == Some(None) {
            self.allocate_partition();
        }
        self.held = 0.0;
        if self.zero3.is_some() {
            self.record(Moment::GradientReduce, 0.0);
        }
    }

    /// FSDP1: the root's flat gradient, assembled when its last view's
    /// gradient (the embedding's) arrives, with the views' gradients and
    /// the unsharded root still live. With `use_orig_params=True` each
    /// weight is a view of the flat parameter (`_flat_param.py`,
    /// `_use_unsharded_views`), so autograd sums into the flat parameter
    /// through `split_with_sizes`' backward, which concatenates every
    /// view's gradient into a new full-size tensor (`FunctionsManual.cpp`,
    /// `split_with_sizes_backward`) before FSDP's post-backward hook
    /// reshards and reduce-scatters. Measured
    /// (`tests/fixtures/fsdp1_measured.tsv`): the peak of a large
    /// vocabulary's step, sharded or not (`NO_SHARD` concatenates too).
    fn root_flat_grad(&self) -> f64 {
        if !matches!(self.cfg.framework, Framework::Fsdp1 { .. }) || self.cfg.lora_rank.is_some() {
            return 0.0;
        }
        let (embedding, head, _) = states::param_split(self.cfg);
        (embedding + head) * states::grad_bytes(self.cfg)
    }

    /// FSDP2's root, its backward done: resharded, then its gradients
    /// reduce-scattered (the embedding's on the first stage, the output
    /// layer's on the last).
    fn root_reduce(&mut self, first: bool, last: bool) {
        let (embedding, head) = self.pieces.root_reduce;
        let reduce = if first { embedding } else { 0.0 } + if last { head } else { 0.0 };
        if self.root_bytes > 0.0 {
            self.root = 0.0;
            self.root_grads = 0.0;
            self.record(Moment::RootReduce, reduce);
        }
    }

    /// The optimizer step after the micro-batches: the state created on the
    /// first step, the update with its temporaries, DeepSpeed's all-gather
    /// of the updated weights, `zero_grad`.
    pub(super) fn optimizer_step(&mut self, start: &Start) {
        let cfg = self.cfg;
        let states = &start.states;
        // DeepSpeed's ZeRO-1 without `overlap_comm` reduces the whole
        // gradients into its partition when backward ends.
        if states::whole_grads_in_backward(cfg) && !cfg.offload.optimizer {
            self.live.grads = zero1_reduce_values(cfg) * states::grad_bytes(cfg);
            self.record(Moment::PartitionReduce, 0.0);
        }
        // DeepSpeed frees its bucket when backward ends (stages 1 and 2).
        if self.zero3.is_none() {
            self.bucket = 0.0;
        }
        self.live.activations = 0.0;
        self.phase = Phase::Optimizer;
        self.micro_batch = 1;
        if start.in_backward.is_some() {
            // Every parameter was stepped and its gradient freed in backward.
            self.live.grads = 0.0;
            self.live.optimizer_state = states.optimizer_state;
            self.record(Moment::OptimizerUpdate, 0.0);
            self.record(Moment::End, 0.0);
            return;
        }
        // Gradients on this GPU are exactly the states' figure now.
        self.live.grads = states.grads;
        if start.step == Step::First {
            self.live.optimizer_state = states.optimizer_state;
            self.record(Moment::OptimizerState, 0.0);
        }
        let temporaries = optimizer::temporaries(cfg, start.adam, self.zero3.is_some());
        self.record(Moment::OptimizerUpdate, temporaries);
        if !self.persistent_grads {
            self.live.grads = start.buckets;
        }
        // DeepSpeed frees the gradient partition, then all-gathers the
        // updated partitions of the weights through a buffer of all of them
        // (`all_gather_dp_groups`; measured: the whole weights' size
        // whatever allgather_bucket_size).
        if matches!(cfg.framework, Framework::DeepSpeed { .. }) && self.zero3.is_none() {
            self.record(Moment::WeightsGather, states.params);
        }
        self.record(Moment::End, 0.0);
    }

    /// The walked stage's timeline: its events and their peak (the first
    /// event with the most live bytes).
    pub(super) fn finish(self, stage: u64, start: &Start) -> StepTimeline {
        let peak = self.events.iter().enumerate().fold(0, |best, (i, e)| {
            if e.live.total() > self.events[best].live.total() {
                i
            } else {
                best
            }
        });
        StepTimeline {
            events: self.events,
            peak,
            stage,
            first_step: start.step == Step::First,
            bucket: states::deepspeed_bucket(self.cfg),
            engine: grpo::engine_during_training(self.cfg),
            loss: self.cfg.loss,
        }
    }
}

/// Where DeepSpeed allocates the flat gradient partition of the GPU priced
/// ([`first_partition_layer`]), under stages 2, and 1 with `overlap_comm`,
/// which reduce as backward goes; `None` under other frameworks and
/// stages, and with the optimizer offloaded.
fn partition_at(cfg: &DetailedConfig) -> Option<Option<u64>> {
    let deepspeed = matches!(cfg.framework, Framework::DeepSpeed { .. });
    let zero = cfg.parallel.zero;
    // (Under pipeline parallelism, which DeepSpeed's engine runs with
    // ZeRO-1 at most, the partition keeps growing gradient by gradient.)
    (deepspeed && zero == 2 && !cfg.offload.optimizer && cfg.parallel.pp == 1)
        .then(|| first_partition_layer(cfg))
}
