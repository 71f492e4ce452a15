//! The lesson's GPU training-memory budget.
//!
//! Training memory splits into five terms that scale differently: the
//! parameters, their gradients, an fp32 master copy of the weights (mixed
//! precision only), Adam's two fp32 moment buffers, and the activations saved
//! for the backward pass. [`estimate`] reproduces the lesson's
//! `memory_budget_gb` to the last bit of every figure, for every valid input.
//!
//! ```
//! use membudget::budget::{estimate, Term, TrainingConfig};
//!
//! // The lesson's demo: 7 B parameters, batch 4, sequence 2048, hidden 4096,
//! // 32 layers, mixed precision.
//! let b = estimate(&TrainingConfig::default()).unwrap();
//! assert_eq!(b.gb(Term::Params), 14.0);
//! assert_eq!(b.gb(Term::MasterWeights), 28.0);
//! assert_eq!(b.gb(Term::OptimizerState), 56.0);
//! assert_eq!(format!("{:.1}", b.gb(Term::Activations)), "73.0");
//! assert_eq!(format!("{:.1}", b.total_gb()), "185.0");
//! assert_eq!(b.dominant(), Term::Activations);
//! ```
//!
//! Figures are in bytes; a GB is 10⁹ bytes, as in the lesson.

use crate::number::{read, ToF64};
use std::fmt;

/// Bytes in one GB as the lesson counts it: decimal, 10⁹.
pub const BYTES_PER_GB: f64 = 1e9;

/// One training set-up, in the lesson's terms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrainingConfig {
    /// Model size in billions of parameters (the lesson's `num_params_b`).
    pub params_b: f64,
    /// Sequences per step (the lesson's `batch`).
    pub batch: u32,
    /// Tokens per sequence (the lesson's `seq_len`).
    pub seq_len: u32,
    /// Width of the residual stream (the lesson's `hidden`).
    pub hidden: u32,
    /// Transformer layers (the lesson's `layers`).
    pub layers: u32,
    /// bf16 weights and gradients with an fp32 master copy (true), or plain fp32.
    pub mixed_precision: bool,
}

impl Default for TrainingConfig {
    /// The lesson's demo: `memory_budget_gb(num_params_b=7, batch=4,
    /// seq_len=2048, hidden=4096, layers=32)`, mixed precision on.
    fn default() -> Self {
        Self {
            params_b: 7.0,
            batch: 4,
            seq_len: 2048,
            hidden: 4096,
            layers: 32,
            mixed_precision: true,
        }
    }
}

/// How a control moves through a field's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Even steps of one.
    Linear,
    /// Even steps in log₂: each notch doubles (batch, sequence, hidden size).
    Log2,
    /// Even steps in log₁₀ (model size, which spans four decades).
    Log10,
}

/// A numeric input of [`TrainingConfig`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// Model size, billions of parameters.
    ModelSize,
    /// Batch size, sequences.
    Batch,
    /// Sequence length, tokens.
    SeqLen,
    /// Hidden size.
    Hidden,
    /// Number of layers.
    Layers,
}

/// The detailed model's largest global batch, in sequences: the command
/// line's `--batch` (2²⁰). The lesson's inputs stay within
/// [`Field::range`]'s 1,024, where its arithmetic is exact in u64
/// ([`estimate`]).
pub const DETAILED_BATCH_MAX: f64 = 1_048_576.0;

/// The detailed model's longest sequence, in tokens (2²⁰): a million-token
/// context split over context parallelism (Llama-3.1-8B at 1,048,576
/// tokens over cp 32, as Megatron-LM's context parallelism runs it). The
/// lesson's sequences stay within [`Field::range`]'s 131,072.
pub const DETAILED_SEQ_MAX: f64 = 1_048_576.0;

impl Field {
    /// Every numeric field, in the order of the lesson's signature.
    pub const ALL: [Field; 5] = [
        Field::ModelSize,
        Field::Batch,
        Field::SeqLen,
        Field::Hidden,
        Field::Layers,
    ];

    /// The label a reader sees.
    pub fn label(self) -> &'static str {
        match self {
            Field::ModelSize => "Model size",
            Field::Batch => "Batch size",
            Field::SeqLen => "Sequence length",
            Field::Hidden => "Hidden size",
            Field::Layers => "Layers",
        }
    }

    /// Short machine name: the CLI flag and the URL key.
    pub fn key(self) -> &'static str {
        match self {
            Field::ModelSize => "params",
            Field::Batch => "batch",
            Field::SeqLen => "seq",
            Field::Hidden => "hidden",
            Field::Layers => "layers",
        }
    }

    /// Unit shown after the value, if any.
    pub fn unit(self) -> &'static str {
        match self {
            Field::ModelSize => "B params",
            Field::SeqLen => "tokens",
            _ => "",
        }
    }

    /// Smallest and largest accepted value in `detailed` mode (the
    /// detailed model's global batch goes to [`DETAILED_BATCH_MAX`], as the
    /// command line's `--batch`, its sequence to [`DETAILED_SEQ_MAX`]) or
    /// the lesson's ([`Field::range`]).
    pub fn range_in(self, detailed: bool) -> (f64, f64) {
        match self {
            Field::Batch if detailed => (1.0, DETAILED_BATCH_MAX),
            Field::SeqLen if detailed => (1.0, DETAILED_SEQ_MAX),
            _ => self.range(),
        }
    }

    /// Smallest and largest accepted value, inclusive: the lesson's.
    pub fn range(self) -> (f64, f64) {
        match self {
            Field::ModelSize => (0.1, 1000.0),
            Field::Batch => (1.0, 1024.0),
            // Down to one token: classification and reward models score
            // short sequences.
            Field::SeqLen => (1.0, 131_072.0),
            Field::Hidden => (128.0, 65_536.0),
            Field::Layers => (1.0, 256.0),
        }
    }

    /// Whether only whole numbers are accepted.
    pub fn is_integer(self) -> bool {
        self != Field::ModelSize
    }

    /// How a slider for this field moves.
    pub fn scale(self) -> Scale {
        match self {
            Field::ModelSize => Scale::Log10,
            Field::Batch | Field::SeqLen | Field::Hidden => Scale::Log2,
            Field::Layers => Scale::Linear,
        }
    }

    /// Accepts `value` if it is a finite number in range (and whole where
    /// the field needs it); otherwise says what is wrong.
    pub fn check(self, value: f64) -> Result<f64, ConfigError> {
        self.check_in(value, false)
    }

    /// [`Field::check`] against [`Field::range_in`]`(detailed)`.
    pub fn check_in(self, value: f64, detailed: bool) -> Result<f64, ConfigError> {
        let (min, max) = self.range_in(detailed);
        let kind = if value.is_nan() {
            ErrorKind::NotANumber
        } else if value < min {
            ErrorKind::BelowMin { min, got: value }
        } else if value > max {
            ErrorKind::AboveMax { max, got: value }
        } else if self.is_integer() && value.fract() != 0.0 {
            ErrorKind::NotWhole { got: value }
        } else {
            return Ok(value);
        };
        Err(ConfigError { field: self, kind })
    }

    /// Parses what a reader typed (surrounding spaces allowed) and checks it.
    pub fn parse(self, text: &str) -> Result<f64, ConfigError> {
        self.parse_with(text, crate::number::std_to_f64)
    }

    /// [`Field::parse`] with the decimal conversion `to_f64` (see
    /// [`crate::number`]: the page passes the browser's).
    pub fn parse_with(self, text: &str, to_f64: ToF64) -> Result<f64, ConfigError> {
        self.parse_in(text, to_f64, false)
    }

    /// [`Field::parse_with`] against [`Field::range_in`]`(detailed)`.
    pub fn parse_in(self, text: &str, to_f64: ToF64, detailed: bool) -> Result<f64, ConfigError> {
        let kind = if text.trim().is_empty() {
            ErrorKind::Empty
        } else {
            match read(text, to_f64) {
                Some(v) => return self.check_in(v, detailed),
                None => ErrorKind::NotANumber,
            }
        };
        Err(ConfigError { field: self, kind })
    }

    /// What committing typed `text` does (Enter, or leaving the box), with
    /// `current` the value in force: a valid value applies as typed; one out
    /// of range or not whole is clamped, and one that is no number (or
    /// nothing) keeps `current`, each with a message that says so. Returns
    /// the value to apply and the message, if any. Both pages use it.
    ///
    /// ```
    /// use membudget::budget::Field;
    /// use membudget::number::std_to_f64;
    ///
    /// assert_eq!(Field::Batch.commit("8", 4.0, std_to_f64), (8.0, None));
    /// let (v, note) = Field::Batch.commit("0", 4.0, std_to_f64);
    /// assert_eq!((v, note.unwrap()), (1.0, "Batch size must be at least 1 (got 0); using 1.".to_string()));
    /// assert_eq!(Field::Layers.commit("", 32.0, std_to_f64).0, 32.0);
    /// ```
    pub fn commit(self, text: &str, current: f64, to_f64: ToF64) -> (f64, Option<String>) {
        self.commit_in(text, current, to_f64, false)
    }

    /// [`Field::commit`] against [`Field::range_in`]`(detailed)`.
    pub fn commit_in(
        self,
        text: &str,
        current: f64,
        to_f64: ToF64,
        detailed: bool,
    ) -> (f64, Option<String>) {
        match self.parse_in(text, to_f64, detailed) {
            Ok(v) => (v, None),
            Err(e) => match e.kind {
                ErrorKind::BelowMin { got, .. }
                | ErrorKind::AboveMax { got, .. }
                | ErrorKind::NotWhole { got } => {
                    let v = self.clamp_in(got, detailed);
                    (v, Some(format!("{e}; using {v}.")))
                }
                ErrorKind::Empty | ErrorKind::NotANumber => {
                    (current, Some(format!("{e}; kept {current}.")))
                }
            },
        }
    }

    /// The slider's `(min, max, step)` in slider units: the value itself
    /// (linear), its log₂ (one notch per doubling) or its log₁₀.
    pub fn slider_range(self) -> (f64, f64, f64) {
        let (min, max) = self.range();
        match self.scale() {
            Scale::Linear => (min, max, 1.0),
            Scale::Log2 => (min.log2(), max.log2(), 1.0),
            Scale::Log10 => (min.log10(), max.log10(), 0.005),
        }
    }

    /// Where `value` sits on the slider.
    pub fn to_slider(self, value: f64) -> f64 {
        match self.scale() {
            Scale::Linear => value,
            Scale::Log2 => value.log2(),
            Scale::Log10 => value.log10(),
        }
    }

    /// The value at slider position `pos`, always accepted by [`Field::check`]:
    /// powers of two on log₂ sliders, two significant digits on the log₁₀
    /// one (so 7 B is reachable and values read cleanly).
    pub fn from_slider(self, pos: f64) -> f64 {
        let raw = match self.scale() {
            Scale::Linear => pos.round(),
            Scale::Log2 => 2f64.powi(pos.round().clamp(-1000.0, 1000.0) as i32),
            Scale::Log10 => pow10_two_digits(pos),
        };
        self.clamp(raw)
    }

    /// The nearest accepted value: clamped into range, rounded to a whole
    /// number where needed; NaN becomes the lesson's default.
    pub fn clamp(self, value: f64) -> f64 {
        self.clamp_in(value, false)
    }

    /// [`Field::clamp`] into [`Field::range_in`]`(detailed)`.
    pub fn clamp_in(self, value: f64, detailed: bool) -> f64 {
        if value.is_nan() {
            return TrainingConfig::default().get(self);
        }
        let (min, max) = self.range_in(detailed);
        let v = value.clamp(min, max);
        if self.is_integer() {
            v.round()
        } else {
            v
        }
    }
}

/// `10^pos` rounded to two significant digits, as
/// `round_significant(10f64.powf(pos), 2)` gives it on every position the
/// slider can take (tested), but with `log10` alone: in the wasm, `powf`
/// and its tables cost 3 KB of gzip. The mantissa is the `m / 10`
/// (`m` in 10…99, or 100 for the next power of ten) whose rounding
/// interval `[m − ½, m + ½) / 10` holds `10^(pos − ⌊pos⌋)`.
fn pow10_two_digits(pos: f64) -> f64 {
    if !pos.is_finite() {
        return f64::NAN;
    }
    let k = pos.floor();
    let fraction = pos - k;
    let m = (11..=100)
        .rev()
        .find(|&m| ((f64::from(m) - 0.5) / 10.0).log10() <= fraction)
        .unwrap_or(10);
    // m × 10^(k − 1), dividing by the inverse below 1 (so 0.12 is the f64
    // nearest 0.12, as `round_significant` makes it).
    let e = (k as i32).saturating_sub(1);
    if e >= 0 {
        f64::from(m) * 10f64.powi(e)
    } else {
        f64::from(m) / 10f64.powi(-e)
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// What is wrong with an input value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ErrorKind {
    /// Nothing was given.
    Empty,
    /// The text is not a number, or the number is NaN.
    NotANumber,
    /// Below the field's minimum.
    BelowMin {
        /// The minimum.
        min: f64,
        /// What was given.
        got: f64,
    },
    /// Above the field's maximum (infinity included).
    AboveMax {
        /// The maximum.
        max: f64,
        /// What was given.
        got: f64,
    },
    /// A fraction where only whole numbers make sense.
    NotWhole {
        /// What was given.
        got: f64,
    },
}

/// An input the budget refuses: which field, and why.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConfigError {
    /// The field at fault.
    pub field: Field,
    /// What is wrong with it.
    pub kind: ErrorKind,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = self.field.label();
        match self.kind {
            ErrorKind::Empty => write!(f, "{label} needs a value"),
            ErrorKind::NotANumber => write!(f, "{label} must be a number"),
            ErrorKind::BelowMin { min, got } => {
                write!(f, "{label} must be at least {min} (got {got})")
            }
            ErrorKind::AboveMax { max, got } => {
                write!(f, "{label} must be at most {max} (got {got})")
            }
            ErrorKind::NotWhole { got } => write!(f, "{label} must be a whole number (got {got})"),
        }
    }
}

impl std::error::Error for ConfigError {}

impl TrainingConfig {
    /// The value of one numeric field.
    pub fn get(&self, field: Field) -> f64 {
        match field {
            Field::ModelSize => self.params_b,
            Field::Batch => f64::from(self.batch),
            Field::SeqLen => f64::from(self.seq_len),
            Field::Hidden => f64::from(self.hidden),
            Field::Layers => f64::from(self.layers),
        }
    }

    /// A copy with one field changed, if the value is accepted.
    pub fn with(&self, field: Field, value: f64) -> Result<Self, ConfigError> {
        self.with_in(field, value, false)
    }

    /// [`TrainingConfig::with`] against [`Field::range_in`]`(detailed)`.
    pub fn with_in(&self, field: Field, value: f64, detailed: bool) -> Result<Self, ConfigError> {
        let v = field.check_in(value, detailed)?;
        let mut next = *self;
        // `check` guarantees whole numbers within u32 for the integer fields.
        match field {
            Field::ModelSize => next.params_b = v,
            Field::Batch => next.batch = v as u32,
            Field::SeqLen => next.seq_len = v as u32,
            Field::Hidden => next.hidden = v as u32,
            Field::Layers => next.layers = v as u32,
        }
        Ok(next)
    }

    /// Checks every field; the first one out of range is reported.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_in(false)
    }

    /// [`TrainingConfig::validate`] against [`Field::range_in`]`(detailed)`.
    pub fn validate_in(&self, detailed: bool) -> Result<(), ConfigError> {
        for field in Field::ALL {
            field.check_in(self.get(field), detailed)?;
        }
        Ok(())
    }
}

/// The unit figures are shown in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Unit {
    /// 10⁹ bytes, as the lesson counts.
    #[default]
    Gb,
    /// 2³⁰ bytes, as `nvidia-smi` and operating systems count.
    Gib,
}

impl Unit {
    /// Bytes in one unit.
    pub fn bytes(self) -> f64 {
        match self {
            Unit::Gb => 1e9,
            Unit::Gib => 1_073_741_824.0,
        }
    }

    /// The unit's symbol.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Gb => "GB",
            Unit::Gib => "GiB",
        }
    }

    /// The URL value.
    pub fn key(self) -> &'static str {
        match self {
            Unit::Gb => "gb",
            Unit::Gib => "gib",
        }
    }

    /// What the unit means, for labels.
    pub fn definition(self) -> &'static str {
        match self {
            Unit::Gb => "GB = 10⁹ bytes",
            Unit::Gib => "GiB = 2³⁰ bytes",
        }
    }

    /// `bytes` in this unit.
    pub fn of(self, bytes: f64) -> f64 {
        bytes / self.bytes()
    }
}

/// One term of the budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Term {
    /// The weights themselves.
    Params,
    /// One gradient per trainable weight.
    Grads,
    /// fp32 copy of the weights kept by mixed-precision training.
    MasterWeights,
    /// Adam's first and second moments.
    OptimizerState,
    /// Intermediate tensors saved for the backward pass.
    Activations,
}

impl Term {
    /// Every term, in the lesson's order.
    pub const ALL: [Term; 5] = [
        Term::Params,
        Term::Grads,
        Term::MasterWeights,
        Term::OptimizerState,
        Term::Activations,
    ];

    /// The lesson's dictionary key (`params_gb` …).
    pub fn lesson_key(self) -> &'static str {
        match self {
            Term::Params => "params_gb",
            Term::Grads => "grads_gb",
            Term::MasterWeights => "master_weights_gb",
            Term::OptimizerState => "optimizer_state_gb",
            Term::Activations => "activations_gb",
        }
    }

    /// The JSON key (`params` …).
    pub fn json_key(self) -> &'static str {
        match self {
            Term::Params => "params",
            Term::Grads => "grads",
            Term::MasterWeights => "master_weights",
            Term::OptimizerState => "optimizer_state",
            Term::Activations => "activations",
        }
    }

    /// The name a reader sees.
    pub fn label(self) -> &'static str {
        match self {
            Term::Params => "Parameters",
            Term::Grads => "Gradients",
            Term::MasterWeights => "Master weights",
            Term::OptimizerState => "Optimizer state",
            Term::Activations => "Activations",
        }
    }

    /// The term's formula in symbols (N = parameters, b = batch, s =
    /// sequence length, h = hidden size, L = layers).
    pub fn formula(self, mixed_precision: bool) -> &'static str {
        match (self, mixed_precision) {
            (Term::Params | Term::Grads, true) => "N × 2 B",
            (Term::Params | Term::Grads, false) => "N × 4 B",
            (Term::MasterWeights, true) => "N × 4 B",
            (Term::MasterWeights, false) => "0",
            (Term::OptimizerState, _) => "N × 4 B × 2",
            (Term::Activations, _) => "34 × L × b × s × h × 2 B",
        }
    }

    /// The term's formula in words.
    pub fn explanation(self, mixed_precision: bool) -> &'static str {
        match (self, mixed_precision) {
            (Term::Params, true) => "one bf16 copy of every weight, 2 bytes each",
            (Term::Params, false) => "one fp32 copy of every weight, 4 bytes each",
            (Term::Grads, true) => "one bf16 gradient per weight, 2 bytes each",
            (Term::Grads, false) => "one fp32 gradient per weight, 4 bytes each",
            (Term::MasterWeights, true) => {
                "an fp32 copy of the weights that the optimizer updates, 4 bytes each"
            }
            (Term::MasterWeights, false) => "none: the fp32 weights are already the master copy",
            (Term::OptimizerState, _) => "Adam's momentum and variance, two fp32 buffers per weight",
            (Term::Activations, _) => {
                "the lesson's rule of thumb: 34 values per token, per hidden unit, per layer, 2 bytes each"
            }
        }
    }
}

/// The budget in bytes, term by term.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Breakdown {
    /// Parameter bytes.
    pub params: f64,
    /// Gradient bytes.
    pub grads: f64,
    /// fp32 master-weight bytes (0 without mixed precision).
    pub master_weights: f64,
    /// Optimizer-state bytes.
    pub optimizer_state: f64,
    /// Activation bytes.
    pub activations: f64,
    /// Sum of the five terms, added in the lesson's order.
    pub total: f64,
}

impl Breakdown {
    /// Bytes of one term.
    pub fn bytes(&self, term: Term) -> f64 {
        match term {
            Term::Params => self.params,
            Term::Grads => self.grads,
            Term::MasterWeights => self.master_weights,
            Term::OptimizerState => self.optimizer_state,
            Term::Activations => self.activations,
        }
    }

    /// One term in GB (bytes / 10⁹), bit for bit the lesson's figure.
    pub fn gb(&self, term: Term) -> f64 {
        self.bytes(term) / BYTES_PER_GB
    }

    /// The total in GB, bit for bit the lesson's `total_gb`.
    pub fn total_gb(&self) -> f64 {
        self.total / BYTES_PER_GB
    }

    /// The largest term; on a tie, the first in the lesson's order.
    pub fn dominant(&self) -> Term {
        Term::ALL.into_iter().fold(Term::Params, |best, t| {
            if self.bytes(t) > self.bytes(best) {
                t
            } else {
                best
            }
        })
    }

    /// A term's fraction of the total, in 0..=1.
    pub fn share(&self, term: Term) -> f64 {
        if self.total > 0.0 {
            self.bytes(term) / self.total
        } else {
            0.0
        }
    }

    /// The lesson's printout: one `f"{key:20s} {value:8.1f} GB"` line per
    /// term, then `total_gb`, each ending in a newline.
    pub fn lesson_table(&self) -> String {
        let rows = Term::ALL
            .into_iter()
            .map(|t| (t.lesson_key(), self.gb(t)))
            .chain([("total_gb", self.total_gb())]);
        rows.map(|(key, gb)| format!("{key:20} {gb:8.1} GB\n"))
            .collect()
    }
}

/// Computes the lesson's budget for `cfg`.
///
/// Each figure follows the lesson's `memory_budget_gb` operation for
/// operation (same f64 operations in the same order, integer activations
/// exact before one rounding to f64), so every GB figure equals Python's bit
/// for bit. Sources of the terms:
///
/// - N = `params_b` × 10⁹ parameters.
/// - Parameters and gradients: N × 2 bytes in bf16 under mixed precision,
///   N × 4 bytes in fp32 (Micikevicius et al. 2018, "Mixed Precision
///   Training", §3: fp16/bf16 weights, activations and gradients).
/// - Master weights: N × 4 bytes under mixed precision, else 0 (ibid. §3.1,
///   "FP32 master copy of weights").
/// - Optimizer state: N × 4 × 2 bytes, Adam's first and second moments in
///   fp32 (Kingma & Ba 2015, "Adam", Algorithm 1, m_t and v_t; with the two
///   lines above this is the 16Ψ of Rajbhandari et al. 2020, "ZeRO", §3.1).
/// - Activations: 34·L·b·s·h·2 bytes. The 34·s·b·h per layer is the first
///   term of Korthikanti et al. 2022, "Reducing Activation Recomputation in
///   Large Transformer Models", §4.1, Eq. 1 (attention scores' 5·a·s²·b
///   dropped). Korthikanti's figure is already bytes at 16 bits; the lesson
///   multiplies by 2 bytes once more, and this function keeps the lesson's
///   rule exactly as taught.
pub fn estimate(cfg: &TrainingConfig) -> Result<Breakdown, ConfigError> {
    cfg.validate()?;
    let params = cfg.params_b * 1e9;
    let bytes_per_param = if cfg.mixed_precision { 2.0 } else { 4.0 };
    let param_mem = params * bytes_per_param;
    let grad_mem = params * bytes_per_param;
    let master_mem = if cfg.mixed_precision {
        params * 4.0
    } else {
        0.0
    };
    let adam_mem = params * 4.0 * 2.0;
    // Exact in u64 (at most 34·256·1024·131072·65536·2 ≈ 1.5e17 < 2^64),
    // then one correctly rounded conversion, as Python's int → float.
    let act_mem = (34
        * u64::from(cfg.layers)
        * u64::from(cfg.batch)
        * u64::from(cfg.seq_len)
        * u64::from(cfg.hidden)
        * 2) as f64;
    let total = param_mem + grad_mem + master_mem + adam_mem + act_mem;
    Ok(Breakdown {
        params: param_mem,
        grads: grad_mem,
        master_weights: master_mem,
        optimizer_state: adam_mem,
        activations: act_mem,
        total,
    })
}

/// The sentence naming the dominant term, e.g. "Activations dominate: 73.0
/// of 185.0 GB, 39 %", the verb agreeing with it ("Optimizer state
/// dominates").
pub fn dominant_sentence(b: &Breakdown, unit: Unit) -> String {
    let term = b.dominant();
    let verb = if term == Term::OptimizerState {
        "dominates"
    } else {
        "dominate"
    };
    format!(
        "{} {verb}: {:.1} of {:.1} {}, {:.0} %",
        term.label(),
        unit.of(b.bytes(term)),
        unit.of(b.total),
        unit.label(),
        b.share(term) * 100.0
    )
}

/// What a table of figures to one decimal says under it when its terms,
/// each rounded on its own, do not add up to its total, the exact sum
/// rounded once (146.04 + 146.04 = 292.08 shows as 146.0 + 146.0 = 292.1).
pub const ROUNDING_NOTE: &str = "(rounded; the sum is of the exact figures)";

/// `bytes` in `unit` as the page and the command line show it: one decimal.
pub fn figure(bytes: f64, unit: Unit) -> String {
    format!("{:.1}", unit.of(bytes))
}

/// [`ROUNDING_NOTE`] when the five terms of `b`, as [`figure`] shows them,
/// do not add up to its total as shown; `None` when they do (the lesson's
/// 14.0 + 14.0 + 28.0 + 56.0 + 73.0 = 185.0). Adds the shown figures in
/// whole tenths, so the check itself does not round.
pub fn rounding_note(b: &Breakdown, unit: Unit) -> Option<&'static str> {
    // "292.1" -> 2921: its digits (a shown figure always has one decimal).
    let tenths = |bytes: f64| {
        figure(bytes, unit)
            .bytes()
            .filter(u8::is_ascii_digit)
            .fold(0_u128, |n, d| n * 10 + u128::from(d - b'0'))
    };
    let terms: u128 = Term::ALL.into_iter().map(|t| tenths(b.bytes(t))).sum();
    (terms != tenths(b.total)).then_some(ROUNDING_NOTE)
}

/// `x` rounded to bfloat16 and back: 8 significant bits (7 stored, one
/// implicit), to the nearest, ties to even, as PyTorch rounds a float to
/// bf16 (c10/util/BFloat16.h, `round_to_nearest_even`, PyTorch 2.x): the
/// low 16 bits of the f32 are dropped after adding half of their weight.
pub fn to_bf16(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    let bits = x.to_bits();
    let half = 0x7FFF + ((bits >> 16) & 1);
    f32::from_bits(bits.wrapping_add(half) & 0xFFFF_0000)
}

/// The distance from `x` (a bf16 value) to the next bf16 value above it.
pub fn bf16_spacing(x: f32) -> f32 {
    let x = to_bf16(x);
    f32::from_bits(x.to_bits() + 0x1_0000) - x
}

/// Why mixed precision keeps an fp32 master copy, computed: an update of
/// 10⁻⁴ to a weight of 1.0 vanishes in bf16 (its values near 1.0 are
/// 2⁻⁷ = 0.0078 apart) and survives in fp32 (Micikevicius et al. 2018,
/// "Mixed Precision Training", §3.1: updates below the format's resolution
/// are lost, so the optimizer updates an fp32 copy). Returns the sentence
/// and the figure's two lines, fp32's then bf16's.
pub fn master_copy_example() -> (String, [String; 2]) {
    let (weight, update) = (1.0_f32, 1e-4_f32);
    // Shown through f64, whose formatting the page has already.
    let spacing = f64::from(bf16_spacing(weight));
    let fp32 = f64::from(weight + update);
    let bf16 = f64::from(to_bf16(to_bf16(weight) + to_bf16(update)));
    let (weight, update) = (f64::from(weight), f64::from(update));
    let sentence = format!(
        "Why an fp32 master copy: an update smaller than bf16's resolution vanishes. \
         bf16 keeps 8 significant bits, so next to 1.0 its values are 2⁻⁷ = {spacing:.4} apart, \
         and a step of {update:.4} is lost; the optimizer updates an fp32 copy, where it adds up \
         (Micikevicius et al. 2018, §3.1)."
    );
    let line = |name: &str, sum: f64| format!("{name}: {weight:.1} + {update:.4} = {sum:.4}");
    (sentence, [line("fp32", fp32), line("bf16", bf16)])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// bf16 keeps 8 significant bits: 1 + 2⁻⁸ is a tie that rounds to
    /// the even 1.0, 1 + 3·2⁻⁹ rounds up to 1 + 2⁻⁷; the spacing doubles at
    /// each power of two; an update of 10⁻⁴ to 1.0 vanishes, in fp32 it
    /// does not.
    #[test]
    fn bf16_rounds_to_eight_significant_bits() {
        let p = |e: i32| 2f32.powi(e);
        assert_eq!(to_bf16(1.0 + p(-8)), 1.0);
        assert_eq!(to_bf16(1.0 + 3.0 * p(-9)), 1.0 + p(-7));
        assert_eq!(
            to_bf16(1.0 + p(-7) + p(-8)),
            1.0 + 2.0 * p(-7),
            "tie to even, up"
        );
        assert_eq!(bf16_spacing(1.0), p(-7));
        assert_eq!(bf16_spacing(2.0), p(-6));
        assert_eq!(bf16_spacing(0.5), p(-8));
        assert_eq!(to_bf16(1.0 + 1e-4), 1.0);
        assert_ne!(1.0_f32 + 1e-4, 1.0);
        assert!(to_bf16(f32::NAN).is_nan());
        let (sentence, [fp32, bf16]) = master_copy_example();
        assert!(sentence.contains("2⁻⁷ = 0.0078 apart"), "{sentence}");
        assert_eq!(fp32, "fp32: 1.0 + 0.0001 = 1.0001");
        assert_eq!(bf16, "bf16: 1.0 + 0.0001 = 1.0000");
    }

    /// 146.04 + 146.04 is shown 146.0 + 146.0 = 292.1: the note says so;
    /// the lesson's demo adds up and has none.
    #[test]
    fn rounded_figures_that_do_not_add_up_carry_the_note() {
        let b = Breakdown {
            params: 146.04e9,
            grads: 146.04e9,
            master_weights: 0.0,
            optimizer_state: 0.0,
            activations: 0.0,
            total: 292.08e9,
        };
        assert_eq!(figure(b.total, Unit::Gb), "292.1");
        assert_eq!(rounding_note(&b, Unit::Gb), Some(ROUNDING_NOTE));
        let lesson = estimate(&TrainingConfig::default()).unwrap();
        assert_eq!(rounding_note(&lesson, Unit::Gb), None);
    }

    /// Every term, made the largest, is named with a verb that agrees.
    #[test]
    fn the_dominant_sentence_agrees_with_each_term() {
        let expected = [
            "Parameters dominate: 5.0 of 9.0 GB, 56 %",
            "Gradients dominate: 5.0 of 9.0 GB, 56 %",
            "Master weights dominate: 5.0 of 9.0 GB, 56 %",
            "Optimizer state dominates: 5.0 of 9.0 GB, 56 %",
            "Activations dominate: 5.0 of 9.0 GB, 56 %",
        ];
        for (i, want) in expected.iter().enumerate() {
            let v = |j: usize| if i == j { 5e9 } else { 1e9 };
            let b = Breakdown {
                params: v(0),
                grads: v(1),
                master_weights: v(2),
                optimizer_state: v(3),
                activations: v(4),
                total: 9e9,
            };
            assert_eq!(dominant_sentence(&b, Unit::Gb), *want);
        }
    }

    /// A configuration in the order of the lesson's signature.
    const fn cfg(
        params_b: f64,
        batch: u32,
        seq_len: u32,
        hidden: u32,
        layers: u32,
        mixed: bool,
    ) -> TrainingConfig {
        TrainingConfig {
            params_b,
            batch,
            seq_len,
            hidden,
            layers,
            mixed_precision: mixed,
        }
    }

    /// VECTORS.md, "The lesson's demo" table: configuration → params, grads,
    /// master, optim, activations, total (GB; to three decimals as published).
    const VECTORS: &[(TrainingConfig, [f64; 6])] = &[
        (
            cfg(7.0, 4, 2048, 4096, 32, true),
            [14.0, 14.0, 28.0, 56.0, 73.014, 185.014],
        ),
        (
            cfg(7.0, 4, 2048, 4096, 32, false),
            [28.0, 28.0, 0.0, 56.0, 73.014, 185.014],
        ),
        (
            cfg(7.0, 8, 2048, 4096, 32, true),
            [14.0, 14.0, 28.0, 56.0, 146.029, 258.029],
        ),
        (
            cfg(0.124, 8, 1024, 768, 12, true),
            [0.248, 0.248, 0.496, 0.992, 5.134, 7.118],
        ),
        (
            cfg(70.0, 1, 4096, 8192, 80, true),
            [140.0, 140.0, 280.0, 560.0, 182.536, 1302.536],
        ),
    ];

    #[test]
    fn reference_vectors() {
        for (config, want) in VECTORS {
            let b = estimate(config).unwrap();
            let got = [
                b.gb(Term::Params),
                b.gb(Term::Grads),
                b.gb(Term::MasterWeights),
                b.gb(Term::OptimizerState),
                b.gb(Term::Activations),
                b.total_gb(),
            ];
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 5e-4, "{config:?}: got {g}, want {w}");
            }
        }
    }

    #[test]
    fn lesson_demo_printout_and_unrounded_activations() {
        let b = estimate(&TrainingConfig::default()).unwrap();
        assert_eq!(
            b.lesson_table(),
            "params_gb                14.0 GB\n\
             grads_gb                 14.0 GB\n\
             master_weights_gb        28.0 GB\n\
             optimizer_state_gb       56.0 GB\n\
             activations_gb           73.0 GB\n\
             total_gb                185.0 GB\n"
        );
        assert_eq!(b.activations, 73_014_444_032.0);
        assert_eq!(
            dominant_sentence(&b, Unit::Gb),
            "Activations dominate: 73.0 of 185.0 GB, 39 %"
        );
    }

    #[test]
    fn exercise_one_fp32_total_unchanged() {
        let mixed = estimate(&TrainingConfig::default()).unwrap();
        let fp32 = estimate(&TrainingConfig {
            mixed_precision: false,
            ..TrainingConfig::default()
        })
        .unwrap();
        assert_eq!(fp32.total, mixed.total);
        assert_eq!(fp32.params, 2.0 * mixed.params);
        assert_eq!(fp32.master_weights, 0.0);
    }

    #[test]
    fn field_checks_name_the_field_and_reason() {
        let cases: &[(Field, &str, Result<f64, ErrorKind>)] = &[
            (Field::Batch, "4", Ok(4.0)),
            (Field::Batch, " 16 ", Ok(16.0)),
            (Field::Batch, "", Err(ErrorKind::Empty)),
            (Field::Batch, "abc", Err(ErrorKind::NotANumber)),
            (Field::Batch, "NaN", Err(ErrorKind::NotANumber)),
            (
                Field::Batch,
                "0",
                Err(ErrorKind::BelowMin { min: 1.0, got: 0.0 }),
            ),
            (
                Field::Batch,
                "-3",
                Err(ErrorKind::BelowMin {
                    min: 1.0,
                    got: -3.0,
                }),
            ),
            (Field::Batch, "2.5", Err(ErrorKind::NotWhole { got: 2.5 })),
            (
                Field::Batch,
                "inf",
                Err(ErrorKind::AboveMax {
                    max: 1024.0,
                    got: f64::INFINITY,
                }),
            ),
            (
                Field::SeqLen,
                "0",
                Err(ErrorKind::BelowMin { min: 1.0, got: 0.0 }),
            ),
            (
                Field::Hidden,
                "65537",
                Err(ErrorKind::AboveMax {
                    max: 65536.0,
                    got: 65537.0,
                }),
            ),
            (Field::Layers, "256", Ok(256.0)),
            (Field::ModelSize, "0.124", Ok(0.124)),
            (Field::ModelSize, "1e3", Ok(1000.0)),
            (
                Field::ModelSize,
                "0.05",
                Err(ErrorKind::BelowMin {
                    min: 0.1,
                    got: 0.05,
                }),
            ),
        ];
        for (field, text, want) in cases {
            let got = field.parse(text).map_err(|e| {
                assert_eq!(e.field, *field);
                e.kind
            });
            assert_eq!(&got, want, "{field} {text:?}");
        }
        let msg = Field::Batch.parse("0").unwrap_err().to_string();
        assert_eq!(msg, "Batch size must be at least 1 (got 0)");
    }

    #[test]
    fn invalid_config_is_refused_not_computed() {
        let bad = TrainingConfig {
            batch: 0,
            ..TrainingConfig::default()
        };
        assert_eq!(estimate(&bad).unwrap_err().field, Field::Batch);
        let nan = TrainingConfig {
            params_b: f64::NAN,
            ..TrainingConfig::default()
        };
        assert_eq!(estimate(&nan).unwrap_err().kind, ErrorKind::NotANumber);
    }

    /// `x` rounded to `digits` significant decimal digits (finite, positive
    /// x): the reference for `pow10_two_digits`.
    fn round_significant(x: f64, digits: i32) -> f64 {
        if !(x.is_finite() && x > 0.0) {
            return x;
        }
        let exp = x.log10().floor() as i32 - (digits - 1);
        if exp >= 0 {
            (x / 10f64.powi(exp)).round() * 10f64.powi(exp)
        } else {
            // Divide by the inverse so that 0.12 comes out as the f64 nearest 0.12.
            (x * 10f64.powi(-exp)).round() / 10f64.powi(-exp)
        }
    }

    /// Every position the model-size slider can take (−1 to 3 in steps of
    /// 0.005, as the browser writes them) gives exactly what rounding
    /// `10f64.powf(pos)` to two significant digits gives.
    #[test]
    fn model_size_slider_snaps_like_powf() {
        let (min, max, step) = Field::ModelSize.slider_range();
        let steps = ((max - min) / step).round() as i32;
        for n in 0..=steps {
            let pos: f64 = format!("{:.3}", min + f64::from(n) * step).parse().unwrap();
            let want = round_significant(10f64.powf(pos), 2);
            assert_eq!(pow10_two_digits(pos), want, "{pos}");
        }
        assert!(pow10_two_digits(f64::NAN).is_nan());
        assert_eq!(pow10_two_digits(0.9999), 10.0);
    }

    #[test]
    fn sliders_map_to_clean_values() {
        let cases: &[(Field, f64, f64)] = &[
            (Field::ModelSize, 7f64.log10(), 7.0),
            (Field::ModelSize, 0.845, 7.0),
            (Field::ModelSize, -1.0, 0.1),
            (Field::ModelSize, 3.0, 1000.0),
            (Field::ModelSize, (0.124f64).log10(), 0.12),
            (Field::ModelSize, 1.845, 70.0),
            (Field::Batch, 3.0, 8.0),
            (Field::Batch, 2.4, 4.0),
            (Field::Batch, 11.0, 1024.0),
            (Field::SeqLen, 11.0, 2048.0),
            (Field::Hidden, 12.0, 4096.0),
            (Field::Layers, 32.0, 32.0),
            (Field::Layers, 0.0, 1.0),
        ];
        for &(field, pos, want) in cases {
            assert_eq!(field.from_slider(pos), want, "{field} at {pos}");
        }
        for field in Field::ALL {
            let d = TrainingConfig::default().get(field);
            let (min, max, _) = field.slider_range();
            let pos = field.to_slider(d);
            assert!(pos >= min && pos <= max);
            assert_eq!(field.from_slider(pos), d, "{field} default round trip");
        }
    }

    #[test]
    fn clamp_lands_in_range() {
        assert_eq!(Field::Batch.clamp(5000.0), 1024.0);
        assert_eq!(Field::Batch.clamp(-1.0), 1.0);
        assert_eq!(Field::Batch.clamp(2.6), 3.0);
        assert_eq!(Field::SeqLen.clamp(f64::NAN), 2048.0);
        assert_eq!(Field::ModelSize.clamp(f64::INFINITY), 1000.0);
        assert_eq!(Field::ModelSize.clamp(0.0), 0.1);
    }
}
