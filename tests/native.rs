//! The native tests: each file beside this one is a module of this single
//! test binary (`autotests = false` in Cargo.toml), so the crate is linked
//! once. Run one file's tests with `cargo test --test native FILE::`, e.g.
//! `cargo test --test native golden::`.

#[macro_use]
mod common;

mod act_offload_vs_measured;
mod budget_props;
mod chart_svg;
mod cli;
mod cli_time;
mod compare;
mod compile_fp8_vs_measured;
mod compile_loss_vs_measured;
mod compile_sac_fp8_vs_measured;
mod compile_sac_vs_measured;
mod compile_tp_vs_measured;
mod compile_vs_measured;
mod config_import;
mod ddp_vs_measured;
mod deepspeed_vs_measured;
mod defaults_agree;
mod detailed_props;
mod detailed_vs_measured;
mod docs_commands;
mod fp8_vs_measured;
mod from_page;
mod fsdp1_vs_measured;
mod fsdp2_vs_measured;
mod gemma_vs_measured;
mod golden;
mod grpo_vs_measured;
mod host_vs_measured;
mod hybrid_vs_measured;
mod layering;
mod lesson_python;
mod litgpt_vs_published;
mod long_context;
mod lora_variants_vs_measured;
mod lora_vs_measured;
mod loss_vs_measured;
mod moe_peak_vs_measured;
mod moe_vs_measured;
mod number_props;
mod offload_vs_deepspeed;
mod optbwd_vs_measured;
mod optimizers_vs_measured;
mod plan_rows;
mod planner_levers;
mod planner_props;
mod published_peaks;
mod qlora_paths_vs_measured;
mod qlora_vs_measured;
mod sac_parallel_vs_measured;
mod sac_vs_measured;
mod state_props;
mod steptime_vs_published;
mod time_range;
mod timeline_vs_measured;
mod tp_plan_vs_measured;
mod tp_vs_measured;
mod trainers_emit;
mod trainers_from;
mod trainers_props;
mod uneven_pipeline;
