//! Which trainer runs the step: the room for the trainers' own
//! configuration files (torchtune, torchtitan, axolotl, LLaMA-Factory,
//! litgpt, TRL, DeepSpeed, accelerate, Megatron), read into a
//! [`DetailedConfig`](crate::detailed::config::DetailedConfig) and written
//! back from one. It may use [`crate::detailed::config`] and
//! [`crate::detailed::model`] only: a reader says what a file asks for; the
//! memory and time rooms price it.
//!
//! Empty today: the readers come with the next issue (`--from`, `--emit`).
