//! The page and the command line price the same set-up the same way: for
//! each reader's set-up below, the page's address and the equivalent flags
//! give the same detailed configuration, defaults resolved — and
//! docs/defaults.md shows the defaults the code has.
#![cfg(not(target_arch = "wasm32"))]

use clap::Parser;
use membudget::cli::Args;
use membudget::detailed::{config::defaults, DetailedConfig, Profile};

/// (what the reader set up, the page's address, the same as flags, the
/// kernels that must price it).
const SETUPS: &[(&str, &str, &str, Profile)] = &[
    (
        "full training of a preset",
        "mode=detailed&model=llama-3.1-8b&seq=4096&batch=1",
        "--model llama-3.1-8b --seq 4096 --batch 1",
        Profile::Fused,
    ),
    (
        "QLoRA on a 24 GB card, the issue's example",
        "mode=detailed&model=llama-3.1-8b&seq=4096&batch=1&lora=16&lorat=q%2Ck%2Cv%2Co%2Cgate%2Cup%2Cdown&quant=nf4&recompute=full",
        "--model llama-3.1-8b --seq 4096 --batch 1 --lora-rank 16 --lora-targets all --quant-base nf4 --recompute full",
        Profile::Hf,
    ),
    (
        "LoRA, micro-batch 2",
        "mode=detailed&model=mistral-7b&seq=2048&batch=8&micro=2&lora=8",
        "--model mistral-7b --seq 2048 --batch 8 --micro-batch 2 --lora-rank 8",
        Profile::Hf,
    ),
    (
        "DPO with ZeRO-3 on 8 GPUs",
        "mode=detailed&model=qwen2.5-7b&seq=1024&batch=16&dp=8&zero=3&objective=dpo",
        "--model qwen2.5-7b --seq 1024 --batch 16 --dp 8 --zero 3 --objective dpo",
        Profile::Hf,
    ),
    (
        "GRPO with LoRA (TRL checkpoints every layer by default)",
        "mode=detailed&model=qwen3-8b&seq=4608&batch=8&lora=16&objective=grpo&completion=4096",
        "--model qwen3-8b --seq 4608 --batch 8 --lora-rank 16 --objective grpo --completion 4096",
        Profile::Hf,
    ),
    (
        "torchtune's optimizer in backward",
        "mode=detailed&model=llama-3.2-1b&seq=2048&batch=1&prec=bf16&optbwd=1",
        "--model llama-3.2-1b --seq 2048 --precision bf16 --optimizer-in-backward",
        Profile::Hf,
    ),
    (
        "LoRA with the kernels chosen",
        "mode=detailed&model=llama-2-7b&seq=2048&batch=4&lora=16&impl=fused",
        "--model llama-2-7b --seq 2048 --batch 4 --lora-rank 16 --impl fused",
        Profile::Fused,
    ),
    (
        "tensor and pipeline parallelism",
        "mode=detailed&model=llama-3.1-70b&seq=8192&batch=32&dp=4&tp=8&sp=1&pp=2&micro=1&recompute=selective",
        "--model llama-3.1-70b --seq 8192 --batch 32 --dp 4 --tp 8 --sp --pp 2 --micro-batch 1 --recompute selective",
        Profile::Fused,
    ),
    (
        "torchtune's chunked loss, 16 chunks",
        "mode=detailed&model=llama-3.1-8b&seq=8192&batch=2&prec=bf16&loss=chunked&lchunks=16",
        "--model llama-3.1-8b --seq 8192 --batch 2 --precision bf16 --loss chunked --loss-chunks 16",
        Profile::Hf,
    ),
    (
        "Liger's kernels (and its fused loss)",
        "mode=detailed&model=llama-3.1-8b&seq=8192&batch=2&prec=bf16&impl=liger",
        "--model llama-3.1-8b --seq 8192 --batch 2 --precision bf16 --impl liger",
        Profile::Hf,
    ),
];

fn page(query: &str) -> DetailedConfig {
    let d = membudget::url::decode(query);
    assert!(d.ignored.is_empty(), "{query}: {:?}", d.ignored);
    d.state.detailed_config()
}

fn cli(flags: &str) -> DetailedConfig {
    let args = Args::try_parse_from(std::iter::once("membudget").chain(flags.split(' ')))
        .unwrap_or_else(|e| panic!("{flags}: {e}"));
    args.detailed_config()
        .unwrap_or_else(|e| panic!("{flags}: {e}"))
        .0
}

#[test]
fn page_and_command_line_price_each_setup_alike() {
    for &(what, query, flags, profile) in SETUPS {
        let (p, c) = (page(query), cli(flags));
        assert_eq!(p, c, "{what}");
        assert_eq!(c.profile, profile, "{what}");
    }
}

#[test]
fn the_defaults_page_shows_the_code_s_defaults() {
    let doc = include_str!("../docs/defaults.md");
    let cfg = cli("--model llama-3.1-8b");
    let rows = [
        format!("| attention | `{}` |", defaults::ATTENTION.name()),
        format!(
            "| dropout | {} |",
            if defaults::DROPOUT { "on" } else { "off" }
        ),
        format!(
            "| recomputation | `{}`; `{}` under GRPO |",
            defaults::RECOMPUTE.name(),
            defaults::recompute(membudget::detailed::Objective::Grpo { kl: false }).name()
        ),
        format!("| precision | `{}` |", cfg.precision.name()),
        format!("| optimizer | `{}` |", cfg.optimizer.name()),
        format!("| sequence length | {} |", defaults::SEQ),
        format!("| micro-batch | {} |", defaults::MICRO_BATCH),
    ];
    for row in rows {
        assert!(
            doc.contains(&row),
            "docs/defaults.md lacks the row starting {row}"
        );
    }
    for &(what, _, flags, profile) in SETUPS {
        assert!(
            doc.contains(&format!("| {what} | `{flags}` | `{}` |", profile.name())),
            "{what}"
        );
    }
}
