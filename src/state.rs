//! Everything the page shows besides the inputs: a pinned baseline, a GPU to
//! fit, the unit, the sweep axis, embed mode and the lesson's exercises.
//! Pure data and logic; the URL codec ([`crate::url`]) reads and writes it.

pub use crate::budget::Unit;
use crate::budget::{estimate, figure, Breakdown, Field, TrainingConfig};
use crate::detailed::{
    preset, Architecture, AttentionKernel, BaseQuant, DetailedConfig, LoraTargets, Objective,
    Offload, Optimizer, Overhead, Overlap, Parallelism, Precision, Preset, Profile, Recompute,
    PRESETS,
};

/// A GPU's memory: an amount in a unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuCapacity {
    /// How many units.
    pub amount: f64,
    /// Which unit.
    pub unit: Unit,
}

/// Largest capacity accepted, in either unit (a 64-GPU node of 192 GiB
/// cards is 12 288; this leaves room for whole pods).
pub const MAX_GPU_AMOUNT: f64 = 100_000.0;

impl GpuCapacity {
    /// The capacity in bytes.
    pub fn bytes(&self) -> f64 {
        self.amount * self.unit.bytes()
    }

    /// The memory of the card of the table with key `key`, as sold (GiB);
    /// nothing for a key the table lacks.
    pub fn of_card(key: &str) -> Self {
        Self {
            amount: crate::detailed::time::hardware::memory_of(key).map_or(0.0, |(_, gib)| gib),
            unit: Unit::Gib,
        }
    }

    /// Whether the amount is a positive finite number within
    /// [`MAX_GPU_AMOUNT`].
    pub fn is_valid(&self) -> bool {
        self.amount.is_finite() && self.amount > 0.0 && self.amount <= MAX_GPU_AMOUNT
    }
}

/// GPUs by the memory printed on the box. Vendors' "80 GB" is 80 GiB of
/// memory (A100 80GB: 81 920 MiB in `nvidia-smi`), so each preset is that
/// many GiB; a few hundred MiB of it are reserved by the driver in practice.
pub const GPU_PRESETS: [(f64, &str); 10] = [
    (16.0, "V100 16GB, T4"),
    (24.0, "RTX 4090, A10, L4"),
    (40.0, "A100 40GB"),
    (48.0, "L40S, RTX 6000 Ada"),
    (80.0, "A100 / H100 80GB"),
    (94.0, "H100 NVL"),
    (141.0, "H200"),
    (180.0, "B200"),
    (192.0, "MI300X"),
    (256.0, "MI325X"),
];

/// Which input the sweep chart varies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SweepAxis {
    /// Batch 1, 2, 4 … 1024.
    #[default]
    Batch,
    /// Sequence length 128, 256 … 131 072.
    SeqLen,
}

impl SweepAxis {
    /// The field it varies.
    pub fn field(self) -> Field {
        match self {
            SweepAxis::Batch => Field::Batch,
            SweepAxis::SeqLen => Field::SeqLen,
        }
    }

    /// The URL value.
    pub fn key(self) -> &'static str {
        match self {
            SweepAxis::Batch => "batch",
            SweepAxis::SeqLen => "seq",
        }
    }

    /// The powers of two across the field's range; sequences from 128
    /// tokens, where the activations start to tell.
    pub fn points(self) -> Vec<u32> {
        let (min, max) = self.field().range();
        let min = match self {
            SweepAxis::SeqLen => min.max(128.0),
            _ => min,
        };
        let (lo, hi) = (min.log2() as u32, max.log2() as u32);
        (lo..=hi).map(|k| 1u32 << k).collect()
    }
}

/// The budget at every sweep point, other inputs as in `cfg`.
pub fn sweep(cfg: &TrainingConfig, axis: SweepAxis) -> Vec<(u32, Breakdown)> {
    axis.points()
        .into_iter()
        .filter_map(|v| {
            let c = cfg.with(axis.field(), f64::from(v)).ok()?;
            Some((v, estimate(&c).ok()?))
        })
        .collect()
}

/// The lesson's two exercises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exercise {
    /// Turn mixed precision off and compare the totals.
    FullPrecision,
    /// Raise the batch and see which term grows.
    LargerBatch,
}

impl Exercise {
    /// Both, in the lesson's order.
    pub const ALL: [Exercise; 2] = [Exercise::FullPrecision, Exercise::LargerBatch];

    /// 1 or 2, as in the lesson and the URL.
    pub fn number(self) -> u8 {
        match self {
            Exercise::FullPrecision => 1,
            Exercise::LargerBatch => 2,
        }
    }

    /// The exercise with this number.
    pub fn from_number(n: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.number() == n)
    }

    /// What the reader is asked to do.
    pub fn task(self) -> &'static str {
        match self {
            Exercise::FullPrecision => {
                "Turn mixed precision off and compare the total. Is plain fp32 training just \
                 \"weights twice as big\"?"
            }
            Exercise::LargerBatch => {
                "Raise the batch size and watch the bar. Which single term grows, and which \
                 stay put?"
            }
        }
    }

    /// The explanation, shown once the reader has tried it, its figures
    /// in `unit` computed from the configurations [`Exercise::setup`] sets.
    pub fn explanation(self, unit: Unit) -> String {
        match self {
            Exercise::FullPrecision => {
                let set = self.setup(&PageState::default());
                let total = |c: &TrainingConfig| {
                    estimate(c).map_or_else(|_| String::new(), |b| figure(b.total, unit))
                };
                let (mixed, fp32) = (total(&set.baseline.unwrap_or_default()), total(&set.config));
                let figures = if mixed == fp32 {
                    format!("{mixed} {} either way", unit.label())
                } else {
                    format!("{mixed} {u} and {fp32} {u}", u = unit.label())
                };
                format!(
                    "In fp32 the weights and gradients take 4 bytes instead of 2, so both double; \
                     but the separate fp32 master copy is no longer needed, because the weights \
                     already are fp32. Adam's state (always fp32) and the activations do not move. \
                     For the lesson's 7 B model the gains and losses cancel: {figures}."
                )
            }
            Exercise::LargerBatch => {
                "Only activations grow: they are kept for every token of every sequence in the \
                 batch, so doubling the batch doubles them. Parameters, gradients, master weights \
                 and optimizer state depend on the model alone. When you run out of memory with \
                 large batches, activations are the term to cut (smaller micro-batches, \
                 recomputation)."
                    .into()
            }
        }
    }

    /// The page state that sets the exercise up: its whole configuration,
    /// the lesson's example (so that the explanation describes the bars),
    /// pinned as the baseline, and the change applied to it. The page's
    /// other choices (unit, card, sweep, embed) stay.
    pub fn setup(self, state: &PageState) -> PageState {
        let mut next = *state;
        next.exercise = Some(self);
        next.mode = Mode::Lesson;
        let base = TrainingConfig::default();
        let mut current = base;
        match self {
            Exercise::FullPrecision => current.mixed_precision = false,
            Exercise::LargerBatch => current.batch = base.batch * 2,
        }
        next.baseline = Some(base);
        next.config = current;
        next
    }

    /// Whether the page shows the comparison the exercise asks for.
    pub fn tried(self, state: &PageState) -> bool {
        let Some(base) = state.baseline else {
            return false;
        };
        let cur = state.config;
        match self {
            Exercise::FullPrecision => base.mixed_precision && !cur.mixed_precision,
            Exercise::LargerBatch => {
                cur.batch > base.batch
                    && TrainingConfig {
                        batch: base.batch,
                        ..cur
                    } == base
            }
        }
    }
}

/// Everything the page shows, as one value: the URL encodes exactly this.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct PageState {
    /// The configuration the controls edit.
    pub config: TrainingConfig,
    /// A pinned configuration to compare against.
    pub baseline: Option<TrainingConfig>,
    /// A GPU to fit the budget on.
    pub gpu: Option<GpuCapacity>,
    /// The card of the table it is, when picked by name (its key): its
    /// speeds price the step in time. Its memory is `gpu`.
    pub card: Option<&'static str>,
    /// The unit figures are shown in.
    pub unit: Unit,
    /// What the sweep chart varies.
    pub sweep: SweepAxis,
    /// Compact layout for an `<iframe>`.
    pub embed: bool,
    /// The exercise the reader opened, if any.
    pub exercise: Option<Exercise>,
    /// Lesson or detailed model.
    pub mode: Mode,
    /// The detailed model's settings (used in [`Mode::Detailed`]).
    pub detailed: DetailedOptions,
    /// The token budget the step time prices: tokens to train on
    /// ([`TOKENS`]).
    pub tokens: Option<f64>,
    /// The price of a GPU-hour, in the reader's currency ([`PRICE`]).
    pub price: Option<f64>,
    /// A configuration pinned in detailed mode to compare against
    /// ([`crate::compare`]; `dbase` in the address).
    pub pin: Option<Pinned>,
}

/// A configuration pinned in detailed mode: the shared inputs and the
/// detailed settings (the card, the unit, the token budget and the price
/// are the page's, the same for both sides of the comparison).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pinned {
    /// The shared inputs (batch, sequence, hidden size, layers).
    pub config: TrainingConfig,
    /// The detailed settings.
    pub detailed: DetailedOptions,
}

impl Pinned {
    /// The configuration of `s` (its shape normalized, as the address
    /// reads it back).
    pub fn of(s: &PageState) -> Self {
        let s = s.normalized();
        Self {
            config: s.config,
            detailed: s.detailed,
        }
    }

    /// The page state `current` with this configuration in place of its
    /// own: the card, unit, budget and the rest stay (the pin too).
    pub fn over(&self, current: &PageState) -> PageState {
        PageState {
            config: self.config,
            detailed: self.detailed,
            ..*current
        }
    }

    /// The row of a planner's panel pinned: the page's state with the
    /// change from `from` to `to` applied, as *Apply* would set it.
    pub fn row(current: &PageState, from: &DetailedConfig, to: &DetailedConfig) -> Self {
        let mut s = *current;
        s.apply_change(from, to);
        Self::of(&s)
    }
}

/// The token budget's limits, the command line's `--tokens` (1 to 10¹⁸).
pub const TOKENS: (f64, f64) = (1.0, 1e18);

/// A GPU-hour's price's limits (0 to 1,000,000).
pub const PRICE: (f64, f64) = (0.0, 1e6);

/// Which model the page shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// The lesson's rule of thumb (the default).
    #[default]
    Lesson,
    /// The architecture-aware model, per GPU.
    Detailed,
}

/// The detailed model's settings beyond the shared inputs (sequence length,
/// batch, hidden size and layers come from [`TrainingConfig`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetailedOptions {
    /// The architecture; its layers and hidden size are overridden by the
    /// shared inputs.
    pub arch: Architecture,
    /// Storage precision.
    pub precision: Precision,
    /// Float8 matmuls in the layers (torchao).
    pub fp8: crate::detailed::Fp8,
    /// FP8 primary weights (Megatron's `--fp8-param-gather`).
    pub fp8_param: bool,
    /// Megatron-Core's recomputed modules (`--recompute-modules`).
    pub recompute_modules: crate::detailed::RecomputeModules,
    /// Optimizer.
    pub optimizer: Optimizer,
    /// The optimizer's step in backward (torchtune's `optimizer_in_bwd`).
    pub optimizer_in_backward: bool,
    /// The model under `torch.compile` (inductor).
    pub compile: bool,
    /// What `torch.compile` wraps.
    pub compile_scope: crate::detailed::CompileScope,
    /// Async tensor parallelism (torchtitan's `enable_async_tensor_parallel`).
    pub async_tp: bool,
    /// Megatron-Core's communication overlaps (under the Megatron
    /// framework), all on by default as NVIDIA's recipes run them.
    pub overlap: Overlap,
    /// Attention kernel.
    pub attention: AttentionKernel,
    /// Dropout on.
    pub dropout: bool,
    /// Activation recomputation.
    pub recompute: Recompute,
    /// Kernel profile as chosen; `None`: the default that follows the rest
    /// of the set-up ([`crate::detailed::config::defaults::profile`]).
    pub profile: Option<Profile>,
    /// Liger's RMSNorm, SwiGLU and RoPE kernels (the implementation
    /// `liger`, under the "hf" profile).
    pub liger: bool,
    /// The loss as chosen; `None`: Liger's fused loss under its kernels,
    /// the full loss otherwise (as the command line's `--loss`).
    pub loss: Option<crate::detailed::Loss>,
    /// The chunked loss's chunks.
    pub loss_chunks: u64,
    /// Parallelism.
    pub parallel: Parallelism,
    /// Sequences per GPU per pass; `None`: batch / dp.
    pub micro_batch: Option<u64>,
    /// LoRA rank on q and v, if any.
    pub lora_rank: Option<u64>,
    /// Show the lesson's bar beside the detailed one.
    pub show_lesson: bool,
    /// The runtime overhead the verdict counts beside the peak; `None`
    /// when the reader judges by the tensors' peak alone (`oh=0`).
    pub overhead: Option<Overhead>,
    /// The projections LoRA adapts.
    pub lora_targets: LoraTargets,
    /// The adapters' dtype.
    pub lora_dtype: crate::detailed::config::LoraDtype,
    /// LoRA dropout, percent (0: none).
    pub lora_dropout_percent: u64,
    /// A quantized frozen base (QLoRA).
    pub base_quant: BaseQuant,
    /// Whose code holds the quantized base.
    pub quant_path: crate::detailed::QuantPath,
    /// What is offloaded to host memory.
    pub offload: Offload,
    /// Supervised, DPO or GRPO.
    pub objective: Objective,
    /// GRPO's completion length and completions per prompt.
    pub rollout: crate::detailed::config::Rollout,
    /// GRPO: a colocated vLLM engine's share of the card, percent.
    pub vllm_percent: Option<u64>,
    /// GRPO: that engine sleeps during training.
    pub vllm_sleep: bool,
    /// Who runs data parallelism.
    pub framework: crate::detailed::Framework,
    /// Which pipeline stage the step chart shows.
    pub stage_shown: ShownStage,
    /// What the planner's rows leave as it is (`keep`).
    pub keep: crate::detailed::plan::diff::Keep,
    /// The trainer chosen on the page (one of `--trainer`'s names), whose
    /// defaults were applied and whose file the page writes.
    pub trainer: Option<&'static str>,
}

/// Which pipeline stage the step chart shows; the fit verdict always takes
/// the one with the higher peak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShownStage {
    /// The stage with the higher peak.
    #[default]
    Highest,
    /// The first: the embedding and the micro-batches in flight.
    First,
    /// The last: the logits and the loss.
    Last,
}

impl ShownStage {
    /// Every choice, in the page's order, by its address name.
    pub const ALL: [(&'static str, ShownStage); 3] = [
        ("peak", ShownStage::Highest),
        ("first", ShownStage::First),
        ("last", ShownStage::Last),
    ];

    /// Its name in the address.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, s)| *s == self)
            .map_or("peak", |(n, _)| n)
    }
}

impl std::str::FromStr for ShownStage {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, v)| *v)
            .ok_or_else(|| "stage must be peak, first or last".to_string())
    }
}

impl Default for DetailedOptions {
    /// Llama-2-7B, mixed precision AdamW, flash attention (what
    /// PyTorch SDPA and FlashAttention keep: the frameworks' default), fused kernels,
    /// one GPU.
    fn default() -> Self {
        let arch = preset("llama-2-7b")
            .map_or(Architecture::llama(32, 4096, 32, 32, 11008, 32000), |p| {
                p.arch
            });
        Self {
            arch,
            precision: Precision::Mixed,
            fp8: crate::detailed::Fp8::None,
            fp8_param: false,
            recompute_modules: crate::detailed::RecomputeModules::default(),
            optimizer: Optimizer::AdamW,
            optimizer_in_backward: false,
            compile: false,
            compile_scope: crate::detailed::CompileScope::Model,
            async_tp: false,
            overlap: Overlap::default(),
            attention: AttentionKernel::Flash,
            dropout: false,
            recompute: Recompute::None,
            profile: None,
            liger: false,
            loss: None,
            loss_chunks: crate::detailed::config::LOSS_CHUNKS,
            parallel: Parallelism::default(),
            micro_batch: None,
            lora_rank: None,
            show_lesson: false,
            overhead: Some(Overhead::default()),
            lora_targets: LoraTargets::default(),
            lora_dtype: crate::detailed::config::LoraDtype::Fp32,
            lora_dropout_percent: 0,
            base_quant: BaseQuant::None,
            quant_path: crate::detailed::QuantPath::Peft,
            offload: Offload::default(),
            objective: Objective::Sft,
            rollout: crate::detailed::config::Rollout::default(),
            vllm_percent: None,
            vllm_sleep: false,
            framework: crate::detailed::Framework::Megatron,
            stage_shown: ShownStage::Highest,
            keep: crate::detailed::plan::diff::Keep::NONE,
            trainer: None,
        }
    }
}

/// Recipes people ask about in the fine-tuning issue trackers, as page
/// addresses: (button id, name, query). The README links them.
pub const RECIPES: [(&str, &str, &str); 3] = [
    (
        "recipe-qlora",
        "QLoRA of an 8B model on an RTX 4090 (24 GB)",
        "mode=detailed&model=llama-3.1-8b&seq=2048&batch=4&micro=1&prec=bf16&opt=paged-adam8bit&attn=flash&dropout=0&recompute=full&impl=hf&lora=16&lorat=q%2Ck%2Cv%2Co%2Cgate%2Cup%2Cdown&quant=nf4&card=rtx-4090",
    ),
    (
        "recipe-dpo",
        "DPO of a 7B model on 8 GPUs with ZeRO-3",
        "mode=detailed&model=mistral-7b&seq=1024&batch=64&micro=2&prec=mixed&attn=flash&dropout=0&recompute=full&impl=hf&dp=8&zero=3&objective=dpo&gpu=80gib",
    ),
    (
        "recipe-grpo",
        "GRPO of Qwen3-8B with LoRA: 8 completions of 4,096 tokens on one H100",
        "mode=detailed&model=qwen3-8b&seq=4608&batch=8&prec=mixed&attn=flash&dropout=0&recompute=full&impl=hf&lora=16&objective=grpo&completion=4096&card=h100-sxm",
    ),
];

impl PageState {
    /// The architecture in force: the detailed settings with the shared
    /// layers and hidden size.
    pub fn architecture(&self) -> Architecture {
        Architecture {
            layers: u64::from(self.config.layers),
            hidden: u64::from(self.config.hidden),
            ..self.detailed.arch
        }
    }

    /// The same state with the detailed shape's layers and hidden size set
    /// from the shared inputs (they are the ones in force).
    pub fn normalized(mut self) -> Self {
        self.detailed.arch = self.architecture();
        // A card names its memory: a capacity that is not the card's drops
        // the name.
        if self
            .card
            .is_some_and(|c| self.gpu != Some(GpuCapacity::of_card(c)))
        {
            self.card = None;
        }
        self
    }

    /// Switches the page to `mode`: the lesson holds the batch and the
    /// sequence to its own ranges (1,024 and 131,072; the detailed model's
    /// go to 2²⁰).
    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
        if mode == Mode::Lesson {
            self.config.batch = Field::Batch.clamp(f64::from(self.config.batch)) as u32;
            self.config.seq_len = Field::SeqLen.clamp(f64::from(self.config.seq_len)) as u32;
        }
    }

    /// The card of the table picked by name, if any.
    pub fn card(&self) -> Option<crate::detailed::time::hardware::Gpu> {
        crate::detailed::time::hardware::gpu(self.card?)
    }

    /// Picks the card of the table with key `key`: its name and memory.
    pub fn choose_card(&mut self, key: &str) {
        if let Some((key, gib)) = crate::detailed::time::hardware::memory_of(key) {
            self.card = Some(key);
            self.gpu = Some(GpuCapacity {
                amount: gib,
                unit: Unit::Gib,
            });
        }
    }

    /// The preset the architecture in force equals, if any.
    pub fn preset_name(&self) -> Option<&'static str> {
        let arch = self.architecture();
        PRESETS.iter().find(|p| p.arch == arch).map(|p| p.name)
    }

    /// Switches to a preset: its shape, and its layers and hidden size into
    /// the shared inputs.
    pub fn choose_preset(&mut self, preset: &Preset) {
        self.choose_arch(preset.arch);
    }

    /// Switches to a shape (a preset's or an imported config's): its layers
    /// and hidden size into the shared inputs; expert parallelism back to 1
    /// for a dense model, where it means nothing.
    pub fn choose_arch(&mut self, arch: Architecture) {
        self.detailed.arch = arch;
        self.config.layers = arch.layers as u32;
        self.config.hidden = arch.hidden as u32;
        if arch.moe.is_none() {
            self.detailed.parallel.ep = 1;
            self.detailed.parallel.etp = 1;
        }
    }

    /// Why the detailed model is priced with its kernels: `"chosen"`, or
    /// the default's reason (`"LoRA"`).
    pub fn profile_reason(&self) -> &'static str {
        match self.detailed.profile {
            Some(_) => "chosen",
            None => crate::detailed::config::defaults::profile(&self.detailed_config(), false).1,
        }
    }

    /// The lesson's configuration for the same model as the detailed one
    /// (its parameter count and precision), to draw the two side by side.
    pub fn lesson_for_detailed(&self) -> TrainingConfig {
        let params_b = self.architecture().params() as f64 / 1e9;
        TrainingConfig {
            params_b: Field::ModelSize.clamp(params_b),
            mixed_precision: self.detailed.precision != Precision::Fp32,
            ..self.config
        }
    }

    /// The detailed model's configuration for this page.
    pub fn detailed_config(&self) -> DetailedConfig {
        let d = &self.detailed;
        let mut cfg = DetailedConfig::new(
            self.architecture(),
            u64::from(self.config.seq_len),
            u64::from(self.config.batch),
        );
        cfg.micro_batch = d.micro_batch;
        cfg.precision = d.precision;
        cfg.fp8 = d.fp8;
        cfg.fp8_param = d.fp8_param;
        cfg.recompute_modules = d.recompute_modules;
        cfg.optimizer = d.optimizer;
        cfg.optimizer_in_backward = d.optimizer_in_backward;
        cfg.compile = d.compile;
        cfg.compile_scope = d.compile_scope;
        cfg.async_tp = d.async_tp;
        cfg.overlap = d.overlap;
        cfg.attention = d.attention;
        cfg.dropout = d.dropout;
        cfg.recompute = d.recompute;
        cfg.parallel = d.parallel;
        cfg.lora_rank = d.lora_rank;
        cfg.lora_targets = d.lora_targets;
        cfg.lora_dtype = d.lora_dtype;
        cfg.lora_dropout = d.lora_dropout_percent as f64 / 100.0;
        cfg.base_quant = d.base_quant;
        cfg.quant_path = d.quant_path;
        cfg.offload = d.offload;
        cfg.objective = d.objective;
        cfg.rollout = d.rollout;
        // A colocated vLLM engine takes its share of the card chosen (none
        // without a card).
        cfg.rollout.vllm =
            d.vllm_percent
                .zip(self.gpu)
                .map(|(pct, g)| crate::detailed::config::Vllm {
                    reserved: (g.bytes() * pct as f64 / 100.0) as u64,
                    sleep: d.vllm_sleep,
                });
        cfg.framework = d.framework;
        cfg.liger = d.liger;
        cfg.loss = d.loss.unwrap_or(if d.liger {
            crate::detailed::Loss::Liger
        } else {
            crate::detailed::Loss::Full
        });
        cfg.loss_chunks = d.loss_chunks;
        // Last: the default kernels follow LoRA, QLoRA, DPO, GRPO and the
        // loss.
        cfg.profile = d
            .profile
            .unwrap_or_else(|| crate::detailed::config::defaults::profile(&cfg, false).0);
        cfg
    }

    /// Applies a planner's change: the settings in which `to` differs from
    /// `from` (the configuration the change was found for) are set from
    /// `to`; the kernels become chosen when the change sets them.
    pub fn apply_change(&mut self, from: &DetailedConfig, to: &DetailedConfig) {
        let d = &mut self.detailed;
        if to.batch != from.batch {
            self.config.batch = Field::Batch.clamp(to.batch as f64) as u32;
        }
        // Left unset, the micro-batch follows the batch and dp: set it
        // where that would not give the row's (as the row's text says).
        if from.micro_batch.unwrap_or(to.batch / to.parallel.dp.max(1)) != to.micro() {
            d.micro_batch = Some(to.micro());
        }
        d.attention = to.attention;
        d.recompute = to.recompute;
        d.optimizer = to.optimizer;
        d.precision = to.precision;
        d.parallel = to.parallel;
        d.offload = to.offload;
        d.lora_rank = to.lora_rank;
        d.lora_targets = to.lora_targets;
        d.base_quant = to.base_quant;
        if to.profile != from.profile {
            d.profile = Some(to.profile);
        }
        if to.loss != from.loss {
            d.loss = Some(to.loss);
            d.loss_chunks = to.loss_chunks;
        }
        d.optimizer_in_backward = to.optimizer_in_backward;
        d.compile = to.compile;
        d.compile_scope = to.compile_scope;
        if let Some(v) = to.rollout.vllm {
            d.vllm_sleep = v.sleep;
        }
    }

    /// A state that names an exercise but has no baseline (a hand-written
    /// `?ex=1`) gets the exercise's comparison set up; others are unchanged.
    pub fn with_exercise_set_up(self) -> Self {
        match (self.exercise, self.baseline) {
            (Some(ex), None) => ex.setup(&self),
            _ => self,
        }
    }
}

/// The peak of one (later) training step of `cfg` per GPU, plus the
/// runtime overhead when one is given: what must fit on the GPU.
pub use crate::detailed::plan::planner::need as detailed_need;

/// The largest `v` in `1..=max` with `fits(v)`, for a `fits` that holds up
/// to some value and fails above it; `None` when even 1 does not fit.
fn largest_fitting(max: u64, fits: impl Fn(u64) -> bool) -> Option<u64> {
    if !fits(1) {
        return None;
    }
    let (mut lo, mut hi) = (1u64, max);
    if fits(hi) {
        return Some(hi);
    }
    // fits(lo) and !fits(hi)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// The largest micro-batch per GPU for which the peak of a training step of
/// `cfg` (plus `overhead`, if given) fits in `capacity_bytes` (searched up
/// to 4096; the peak grows with the micro-batch), with `cfg`'s accumulation
/// steps (so a pipeline keeps its micro-batches in flight), or `None` when
/// even one sequence does not fit.
pub fn max_micro_batch(
    cfg: &DetailedConfig,
    capacity_bytes: f64,
    overhead: Option<&Overhead>,
) -> Option<u64> {
    largest_fitting(4096, |m| {
        let c = DetailedConfig {
            micro_batch: Some(m),
            batch: m * cfg.parallel.dp * cfg.accumulation_steps(),
            ..*cfg
        };
        detailed_need(&c, overhead).is_some_and(|need| need <= capacity_bytes)
    })
}

/// The largest sequence length (up to the detailed model's 1,048,576) for which the
/// peak of a training step of `cfg` (plus `overhead`) fits in
/// `capacity_bytes`, or `None` when even the shortest does not fit. Under
/// context parallelism the lengths searched are multiples of 2 × cp, the
/// only ones it runs; a model with learned positions (the gpt2 shape's)
/// runs none longer than its table (GPT-3's 2,048 tokens).
pub fn max_detailed_seq(
    cfg: &DetailedConfig,
    capacity_bytes: f64,
    overhead: Option<&Overhead>,
) -> Option<u64> {
    let unit = if cfg.parallel.cp > 1 {
        2 * cfg.parallel.cp
    } else {
        1
    };
    let max = Field::SeqLen.range_in(true).1 as u64;
    let max = cfg.arch.learned_positions().map_or(max, |p| max.min(p));
    largest_fitting(max / unit, |k| {
        let c = DetailedConfig {
            seq: k * unit,
            ..*cfg
        };
        detailed_need(&c, overhead).is_some_and(|need| need <= capacity_bytes)
    })
    .map(|k| k * unit)
}

/// The largest value of `field` (batch or sequence length) for which the
/// budget of `cfg` fits in `capacity_bytes`, other inputs unchanged; `None`
/// when even the field's minimum does not fit. Solved from the formula (the
/// activations are linear in the field, everything else is constant) and
/// then confirmed against [`estimate`]'s own total, so the answer agrees with
/// the figures the page shows to the byte.
pub fn max_fitting(cfg: &TrainingConfig, field: Field, capacity_bytes: f64) -> Option<u32> {
    let (min, max) = field.range();
    let (min, max) = (min as u32, max as u32);
    let fits = |v: u32| {
        cfg.with(field, f64::from(v))
            .ok()
            .and_then(|c| estimate(&c).ok())
            .is_some_and(|b| b.total <= capacity_bytes)
    };
    let b = estimate(cfg).ok()?;
    let current = cfg.get(field);
    let per_unit = b.activations / current;
    let fixed = b.total - b.activations;
    let guess = ((capacity_bytes - fixed) / per_unit).floor();
    let mut v = if guess.is_nan() {
        min
    } else {
        guess.clamp(f64::from(min), f64::from(max)) as u32
    };
    // Rounding in the float sums can put the guess one off either way.
    while v < max && fits(v + 1) {
        v += 1;
    }
    while v > min && !fits(v) {
        v -= 1;
    }
    fits(v).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_points_are_powers_of_two_across_the_range() {
        assert_eq!(
            SweepAxis::Batch.points(),
            [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
        );
        let seq = SweepAxis::SeqLen.points();
        assert_eq!(
            (seq[0], *seq.last().unwrap(), seq.len()),
            (128, 131_072, 11)
        );
    }

    #[test]
    fn exercise_setups_compare_what_the_lesson_asks() {
        let lesson = PageState::default();
        let one = Exercise::FullPrecision.setup(&lesson);
        assert_eq!(one.baseline, Some(TrainingConfig::default()));
        assert!(!one.config.mixed_precision);
        assert!(Exercise::FullPrecision.tried(&one));
        assert!(!Exercise::LargerBatch.tried(&one));
        let a = estimate(&one.baseline.unwrap()).unwrap();
        let b = estimate(&one.config).unwrap();
        assert_eq!(
            format!("{:.1} {:.1}", a.total_gb(), b.total_gb()),
            "185.0 185.0"
        );

        let two = Exercise::LargerBatch.setup(&lesson);
        assert_eq!(two.config.batch, 8);
        assert!(Exercise::LargerBatch.tried(&two));
        assert!(!Exercise::LargerBatch.tried(&lesson));
        // From any configuration on screen, the exercise's own: the
        // explanation's figures are the bars'.
        let elsewhere = PageState {
            config: TrainingConfig {
                params_b: 70.0,
                batch: 1024,
                mixed_precision: false,
                ..TrainingConfig::default()
            },
            baseline: Some(TrainingConfig {
                layers: 80,
                ..TrainingConfig::default()
            }),
            unit: Unit::Gib,
            ..lesson
        };
        for ex in Exercise::ALL {
            let set = ex.setup(&elsewhere);
            assert_eq!(set.baseline, ex.setup(&lesson).baseline);
            assert_eq!(set.config, ex.setup(&lesson).config);
            assert_eq!(set.unit, Unit::Gib, "the page's other choices stay");
            assert!(ex.tried(&set));
        }
        let one = Exercise::FullPrecision.setup(&elsewhere);
        let bars = [one.baseline.unwrap(), one.config]
            .map(|c| figure(estimate(&c).unwrap().total, one.unit));
        assert_eq!(bars, ["172.3", "172.3"]);
        assert!(Exercise::FullPrecision
            .explanation(one.unit)
            .contains("172.3 GiB either way"));
        assert!(Exercise::FullPrecision
            .explanation(Unit::Gb)
            .contains("185.0 GB either way"));
    }

    #[test]
    fn exercise_link_without_baseline_is_set_up() {
        let bare = PageState {
            exercise: Some(Exercise::FullPrecision),
            ..PageState::default()
        };
        let s = bare.with_exercise_set_up();
        assert_eq!(s, Exercise::FullPrecision.setup(&PageState::default()));
        assert_eq!(s.with_exercise_set_up(), s, "an existing baseline is kept");
        assert_eq!(
            PageState::default().with_exercise_set_up(),
            PageState::default()
        );
    }

    #[test]
    fn vendor_capacities_are_binary() {
        let h100 = GpuCapacity {
            amount: 80.0,
            unit: Unit::Gib,
        };
        assert_eq!(h100.bytes(), 85_899_345_920.0);
        assert_eq!(format!("{:.1}", Unit::Gb.of(h100.bytes())), "85.9");
    }

    #[test]
    fn max_batch_on_known_cards() {
        let lesson = TrainingConfig::default();
        // 112 GB fixed + 18.25 GB per sequence: 192 GiB (206.2 GB) fits 5.
        let cap = 192.0 * Unit::Gib.bytes();
        assert_eq!(max_fitting(&lesson, Field::Batch, cap), Some(5));
        // 80 GiB does not even hold the 112 GB of weights and optimizer state.
        assert_eq!(
            max_fitting(&lesson, Field::Batch, 80.0 * Unit::Gib.bytes()),
            None
        );
        // Plenty of room: capped at the range's maximum.
        assert_eq!(max_fitting(&lesson, Field::Batch, 1e15), Some(1024));
        assert_eq!(max_fitting(&lesson, Field::SeqLen, 1e15), Some(131_072));
    }

    /// Under context parallelism the longest sequence is searched among
    /// the lengths it runs (multiples of 2 × cp): before, a search from one
    /// token answered none for a step that fits at 262,144.
    #[test]
    fn the_longest_sequence_under_context_parallelism_is_a_multiple_of_2_cp() {
        let mut cfg = DetailedConfig::new(
            crate::detailed::preset("llama-3.1-8b").unwrap().arch,
            262_144,
            1,
        );
        cfg.parallel.cp = 8;
        cfg.parallel.zero = 3;
        cfg.recompute = crate::detailed::Recompute::Full;
        cfg.attention = crate::detailed::AttentionKernel::Flash;
        let cap = 141.0 * Unit::Gb.bytes();
        let need = |seq| detailed_need(&DetailedConfig { seq, ..cfg }, None).unwrap();
        assert!(need(262_144) < cap);
        let longest = max_detailed_seq(&cfg, cap, None).unwrap();
        assert_eq!(longest % 16, 0);
        assert!(longest >= 262_144 && need(longest) <= cap, "{longest}");
        if longest < 1 << 20 {
            assert!(need(longest + 16) > cap, "{longest}");
        }
    }

    /// A model with learned positions runs no sequence longer than its
    /// table: GPT-3 175B over 128 H100s fits 10,720 tokens of memory but
    /// has 2,048 positions; a model with rotary positions is not capped.
    #[test]
    fn the_longest_sequence_stops_at_the_learned_positions() {
        let mut cfg = DetailedConfig::new(
            crate::detailed::preset("gpt3-175b").unwrap().arch,
            2048,
            1536,
        );
        cfg.micro_batch = Some(1);
        cfg.parallel.tp = 8;
        cfg.parallel.sp = true;
        cfg.parallel.pp = 16;
        cfg.attention = crate::detailed::AttentionKernel::Flash;
        let cap = 80.0 * Unit::Gb.bytes();
        let need = |seq| detailed_need(&DetailedConfig { seq, ..cfg }, None).unwrap();
        assert!(need(8192) < cap);
        assert_eq!(max_detailed_seq(&cfg, cap, None), Some(2048));
        cfg.arch.positions = 0;
        assert!(max_detailed_seq(&cfg, cap, None).unwrap() > 8192);
    }
}
