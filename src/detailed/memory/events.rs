//! One step's moments and the live bytes at each: what the timeline
//! records, what ZeRO-3's walk and the page's step chart read.

/// The three phases of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// GRPO's rollout: the completions generated without grad, and the
    /// reference model's log-probabilities of them.
    Generation,
    /// The forward pass and the loss.
    Forward,
    /// Backpropagation.
    Backward,
    /// The optimizer step and `zero_grad`.
    Optimizer,
}

impl Phase {
    /// Its name, as the command line and the table say it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Generation => "generation",
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::Optimizer => "optimizer",
        }
    }
}

/// Where in the step an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// Before the micro-batch's forward pass.
    Start,
    /// FSDP2: the root module (embedding, final norm, output layer)
    /// all-gathered, its all-gather output beside the unsharded weights it is
    /// copied into: at the start of forward (kept until the first layer's
    /// all-gather completes) and, when the root reshards after forward, again
    /// at the start of backward.
    RootGather,
    /// GRPO: the prompts' prefill, the key/value cache starting.
    Prefill,
    /// GRPO: the last token generated, the key/value cache whole.
    Decode,
    /// DPO: the reference model's forward, its logits alive; GRPO: the
    /// reference scoring the completions.
    ReferenceForward,
    /// Inside layer `i`'s forward (0-based), at its largest transient.
    LayerForward(u64),
    /// DeepSpeed's ZeRO-3: the output layer's weights all-gathered, the
    /// last layer's activations saved (on later steps the prefetch group's
    /// flat buffer is freed once the output layer, its last weight, is
    /// fetched).
    OutputGather,
    /// The loss: logits, their fp32 copy, the log-probabilities.
    Loss,
    /// The loss's backward: the fp32 gradients of the log-probabilities and
    /// of the logits.
    LossBackward,
    /// The output layer's backward: the logits' gradient in the model's
    /// dtype, the output layer's weight gradient.
    HeadBackward,
    /// DeepSpeed's ZeRO-3: the final norm's backward, between the output
    /// layer's and the last layer's, where the first full bucket is
    /// reduced.
    NormBackward,
    /// Inside layer `i`'s backward, at its largest transient.
    LayerBackward(u64),
    /// FSDP2: the root's gradients reduce-scattered when its backward ends,
    /// cast to the reduce dtype beside the flat buffer they are copied into.
    RootReduce,
    /// The embedding's backward, end of the micro-batch's backward.
    EmbeddingBackward,
    /// DeepSpeed's ZeRO-3: the gradients left in the bucket all-reduced
    /// when backward ends (`independent_gradient_partition_epilogue`).
    GradientReduce,
    /// DeepSpeed's ZeRO-1 without `overlap_comm`: after backward, the whole
    /// gradients reduced bucket by bucket and copied into the flat
    /// partition (`reduce_gradients`).
    PartitionReduce,
    /// The first step creates the optimizer state.
    OptimizerState,
    /// The update, with its temporaries.
    OptimizerUpdate,
    /// DeepSpeed: the updated weights all-gathered from every partition.
    WeightsGather,
    /// After `zero_grad()`: gradients freed.
    End,
}

impl Moment {
    /// A short label: `layer 3 backward`, `loss backward`.
    pub fn label(self) -> String {
        match self {
            Moment::Start => "start".into(),
            Moment::RootGather => "root all-gather".into(),
            Moment::Prefill => "prefill".into(),
            Moment::Decode => "last decoding step".into(),
            Moment::ReferenceForward => "reference forward".into(),
            Moment::LayerForward(i) => format!("layer {} forward", i + 1),
            Moment::OutputGather => "output layer all-gather".into(),
            Moment::Loss => "loss".into(),
            Moment::LossBackward => "loss backward".into(),
            Moment::HeadBackward => "output layer backward".into(),
            Moment::NormBackward => "final norm backward".into(),
            Moment::LayerBackward(i) => format!("layer {} backward", i + 1),
            Moment::EmbeddingBackward => "embedding backward".into(),
            Moment::GradientReduce => "gradient all-reduce".into(),
            Moment::PartitionReduce => "gradient reduce into the partition".into(),
            Moment::RootReduce => "root reduce-scatter".into(),
            Moment::OptimizerState => "optimizer state created".into(),
            Moment::OptimizerUpdate => "optimizer update".into(),
            Moment::WeightsGather => "weights all-gather".into(),
            Moment::End => "zero_grad".into(),
        }
    }
}

/// Live bytes on one GPU at one event, by category.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Live {
    /// Weights (ZeRO-3's gathered layers are transient).
    pub params: f64,
    /// Gradients accumulated so far.
    pub grads: f64,
    /// fp32 master weights.
    pub master_weights: f64,
    /// Optimizer state.
    pub optimizer_state: f64,
    /// Activations saved for backward, and the batch's token ids.
    pub activations: f64,
    /// Buffers that live only around this event.
    pub transient: f64,
}

impl Live {
    /// All of it.
    pub fn total(&self) -> f64 {
        self.params
            + self.grads
            + self.master_weights
            + self.optimizer_state
            + self.activations
            + self.transient
    }
}

/// One event of the step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    /// Its phase.
    pub phase: Phase,
    /// Which micro-batch: 1, or 2 for the second and every later one.
    pub micro_batch: u64,
    /// Where in the step.
    pub moment: Moment,
    /// Live bytes then.
    pub live: Live,
}

/// One step over time on one GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct StepTimeline {
    /// The events in order.
    pub events: Vec<Event>,
    /// Index of the event with the most live bytes (the first such).
    pub peak: usize,
    /// For pipelines: the stage walked, 1-based (the one with the higher peak).
    pub stage: u64,
    /// Whether the first optimizer step is modelled.
    pub first_step: bool,
    /// DeepSpeed's gradient bucket: part of the transient buffers from the
    /// first gradient of backward to its end (0 under other frameworks).
    pub bucket: f64,
    /// GRPO: a colocated vLLM engine's reservation, part of the transient
    /// buffers of every training event (0 unless it stays awake).
    pub engine: f64,
    /// How the loss is computed: what the loss's moments hold.
    pub loss: crate::detailed::config::Loss,
}

impl StepTimeline {
    /// The peak event.
    pub fn peak_event(&self) -> &Event {
        &self.events[self.peak]
    }

    /// Live bytes at the peak.
    pub fn peak_bytes(&self) -> f64 {
        self.peak_event().live.total()
    }

    /// The largest live bytes within `phase`, if it has events.
    pub fn phase_peak(&self, phase: Phase) -> Option<f64> {
        self.events
            .iter()
            .filter(|e| e.phase == phase)
            .map(|e| e.live.total())
            .reduce(f64::max)
    }
}
