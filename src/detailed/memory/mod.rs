//! What a step keeps in memory, per GPU: the model states, the saved
//! activations, and their walk over one step. [`estimate()`] adds the model
//! states and the saved activations; [`timeline()`] walks the step and finds
//! its peak. The configuration is first [`check()`]ed: what cannot be priced
//! is refused in words.
//!
//! - [`check`](mod@check): what cannot be priced, refused in words;
//! - [`bytes`]: bytes per value, shared by every part below;
//! - [`states`]: weights, gradients, master weights, optimizer state, and
//!   how they split over the parallel GPUs;
//! - [`activations`]: what the forward pass keeps for backward, per profile,
//!   with its parts: [`sac`] (torchtitan's per-operator checkpointing),
//!   [`fp8`] (float8's and Transformer Engine's bytes), [`mixer`] (a
//!   hybrid's Mamba-2 mixer), [`grpo`] (GRPO's fused head and rollout);
//! - [`loss`]: the losses without the full logits (torchtune's chunked
//!   loss, Liger's and Cut Cross-Entropy's fused ones);
//! - [`quant`]: a quantized frozen base (QLoRA's NF4, LLM.int8());
//! - [`estimate()`]: model states plus saved activations, the step at rest;
//! - [`events`]: a step's moments and the live bytes at each;
//! - [`zero3`]: DeepSpeed's ZeRO-3 walk (prefetch, release, buckets);
//! - [`timeline()`]: live memory over one step, and its peak;
//! - [`offload`]: what ZeRO-Offload keeps in host memory, host RAM per node;
//! - [`overhead`]: what a GPU process uses beyond its tensors.

pub mod activations;
pub mod bytes;
pub mod check;
pub mod estimate;
pub mod events;
pub mod fp8;
pub mod grpo;
pub mod loss;
pub mod mixer;
pub mod offload;
pub mod overhead;
pub mod paged;
pub mod quant;
pub mod sac;
pub mod states;
pub mod timeline;
pub mod zero3;

pub use check::check;
pub use estimate::{estimate, stage_estimates, DetailedBreakdown};
pub use events::{Event, Live, Moment, Phase, StepTimeline};
pub use offload::{host_ram, HostRam};
pub use overhead::{Overhead, OverheadBytes};
pub use states::ModelStates;
pub use timeline::{stage_timelines, timeline, why_peak};
