//! membudget: the lesson's GPU training-memory budget as a library, a command
//! line and a Leptos page.
//!
//! - [`budget`]: the pure-Rust core (no web dependencies).
//! - [`detailed`]: the architecture-aware model (presets, precision,
//!   optimizers, attention kernels, recomputation, parallelism, LoRA).
//! - [`chart`]: the stacked bar chart, drawn on any plotters backend;
//!   `canvas` (wasm32 only): the backend and painting on a `<canvas>`.
//! - [`state`]: what the page shows besides the inputs (baseline, GPU fit,
//!   unit, sweep, exercises); [`url`]: that state in a query string.
//! - [`export`]: the table as Markdown, CSV and JSON.
//! - [`panel`]: what the page's planner panel says (*Make it fit*,
//!   *Faster and still fits*).
//! - [`from_page`]: a trainer's file or defaults onto the page's state,
//!   and the state as a trainer's file (`--from`, `--trainer`, `--emit`).
//! - [`number`]: reading typed numbers (one syntax, a pluggable conversion).
//! - `cli` (native only): the command line.
//! - `app` (wasm32 only): the Leptos page; `light` (wasm32 only): the
//!   lesson's view without a framework, loaded first.
#![deny(missing_docs)]

#[cfg(target_arch = "wasm32")]
pub mod app;
pub mod budget;
#[cfg(target_arch = "wasm32")]
pub mod canvas;
pub mod chart;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
pub mod compare;
pub mod detailed;
pub mod export;
#[cfg(not(target_arch = "wasm32"))]
pub mod from;
pub mod from_page;
#[cfg(target_arch = "wasm32")]
pub mod light;
pub mod number;
pub mod panel;
#[cfg(not(target_arch = "wasm32"))]
pub mod report;
pub mod state;
pub mod url;
