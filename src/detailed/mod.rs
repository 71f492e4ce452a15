//! The detailed model: training memory of a real transformer, per GPU, from
//! its architecture, precision, optimizer, attention kernel, recomputation,
//! parallelism and LoRA, and the step's time. The lesson's model
//! ([`crate::budget`]) stays as taught; this one is for engineers who need
//! figures that hold.
//!
//! ```
//! use membudget::detailed::{estimate, preset, DetailedConfig};
//!
//! let llama = preset("llama-2-7b").unwrap().arch;
//! assert_eq!(llama.params(), 6_738_415_616);
//! let b = estimate(&DetailedConfig::new(llama, 2048, 1)).unwrap();
//! assert!(b.activations > b.logits);
//! ```
//!
//! A room per question, each using only the rooms above it in this list
//! (`docs/architecture.md` is the map):
//! - [`model`]: what the model is (shape, presets, `config.json`);
//! - [`config`]: what is asked (precision, kernels, parallelism, …);
//! - [`trainers`]: which trainer's file asked it (`--from`, `--emit`; the
//!   command line's and the page's);
//! - [`memory`]: what a step keeps, per GPU, and its peak;
//! - [`time`]: how long the step takes;
//! - [`plan`]: what to change so it fits, or runs faster.
//!
//! The names most callers need are re-exported here.

pub mod config;
pub mod memory;
pub mod model;
pub mod plan;
pub mod time;
pub mod trainers;

pub use config::{
    ActOffload, AdamImpl, AttentionKernel, BaseQuant, CompileScope, CpComm, DetailedConfig,
    DetailedError, Device, ExpertsImpl, Fp8, Framework, FsdpSharding, Implementation, Loss,
    MoeDispatcher, Objective, Offload, Optimizer, Overlap, Parallelism, Precision, Profile,
    QuantPath, Recompute, RecomputeModules, Reference, Schedule, Step, StepOptions, TpPlan,
};
pub use memory::{
    estimate, host_ram, stage_timelines, timeline, why_peak, DetailedBreakdown, Event, HostRam,
    Live, ModelStates, Moment, Overhead, OverheadBytes, Phase, StepTimeline,
};
pub use model::{
    import_config, preset, Architecture, Family, ImportError, Imported, LayerParams, LoraTargets,
    Mamba2, Mla, Moe, Preset, Router, MODEL_TYPES, PRESETS,
};
