//! What the model is: its shape (attention, latent attention, experts, a
//! Mamba-2 mixer), its parameter counts and LoRA's adapters; the published
//! presets; a Hugging Face `config.json` read into a shape. Uses nothing
//! else of the detailed model.
//!
//! - [`arch`]: [`Architecture`] and its counts;
//! - [`mamba`]: the hybrid's Mamba-2 mixer;
//! - [`presets`]: published models, their parameter counts checked;
//! - [`import`]: `config.json` to an [`Architecture`].

pub mod arch;
pub mod import;
pub mod mamba;
pub mod presets;

pub use arch::{Architecture, Family, LayerParams, LoraTargets, Mla, Moe, Router};
pub use import::{import_config, ImportError, Imported, MODEL_TYPES};
pub use mamba::Mamba2;
pub use presets::{preset, Preset, PRESETS};
