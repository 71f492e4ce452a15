//! `--from FILE`: each trainer format read into the command line's flags,
//! in order, with every key of the file either setting a flag or named as
//! ignored with a reason. Our own small files in each format
//! (`tests/fixtures/trainers/`), then every real file of
//! `../shared/trainer_configs/` when that folder is present (CI has it).
#![cfg(not(target_arch = "wasm32"))]

use clap::Parser;
use membudget::cli::{run, Args};
use membudget::detailed::time::hardware::gpu;
use membudget::detailed::time::steptime::{step_time, Cluster, Efficiency, StepTime};
use membudget::detailed::trainers::{self, parse, value::Doc, Format, Reading};
use membudget::detailed::{DetailedConfig, Overlap};
use membudget::from::with_from;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/trainers");

fn read(path: &Path) -> Reading {
    let text = std::fs::read_to_string(path).unwrap();
    trainers::read(&path.display().to_string(), &text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn flags(r: &Reading) -> String {
    r.flags().collect::<Vec<_>>().join(" ")
}

/// Our fixtures: (file, format, the flags in order).
const OWN: &[(&str, Format, &str)] = &[
    ("torchtune_lora.yaml", Format::Torchtune, "--model llama-3.2-1b --lora-rank 16 --lora-targets q,v,gate,down,up --micro-batch 3 --grad-accum 2 --seq 1024 --precision bf16 --lora-dtype bf16 --recompute full --optimizer adamw --adam fused --loss chunked --loss-chunks 8"),
    ("torchtitan.toml", Format::Torchtitan, "--model llama-3.1-8b --impl hf --micro-batch 2 --seq 4096 --tp 2 --tp-plan loss-parallel --sp --pp 1 --framework fsdp2 --zero 3 --dp-shard 4 --reshard-after-forward true --precision mixed --recompute full --optimizer adamw --adam foreach"),
    ("axolotl_qlora.yml", Format::Axolotl, "--impl hf --model llama-3.1-8b --micro-batch 4 --grad-accum 2 --seq 2048 --recompute full --offload-activations checkpoints --optimizer paged-adam8bit --attention flash --loss cce --lora-rank 8 --lora-targets q,k,lm_head --lora-dropout 0.05 --quant-base nf4 --precision bf16"),
    ("llamafactory_lora.yaml", Format::LlamaFactory, "--impl hf --model qwen3-8b --micro-batch 2 --grad-accum 4 --seq 4096 --lora-rank 32 --lora-targets q,v --quant-base int8 --recompute full --precision mixed --impl liger --loss liger"),
    ("litgpt_lora.yaml", Format::Litgpt, "--model mistral-7b --impl hf --nproc-per-node 1 --recompute none --micro-batch 4 --batch 16 --seq 1024 --precision bf16 --quant-base nf4 --quant-path bnb --lora-rank 4 --lora-dtype bf16 --lora-targets q,k,v,o --lora-dropout 0.05 --optimizer adamw"),
    ("trl_grpo.yaml", Format::TrainingArguments, "--impl hf --model llama-3.2-1b --micro-batch 8 --grad-accum 1 --recompute full --precision bf16 --objective grpo-kl --completion 768 --seq 1024 --generations 4 --vllm-colocate 0.25"),
    ("hf_args.json", Format::TrainingArguments, "--impl hf --model qwen2.5-7b --micro-batch 1 --grad-accum 16 --recompute none --optimizer adamw --adam fused --precision mixed"),
    ("deepspeed_z2.json", Format::DeepSpeed, "--micro-batch 2 --framework deepspeed --zero 2 --offload-optimizer --reduce-bucket-size 200000000 --overlap-comm true --precision mixed"),
    ("accelerate_fsdp2.yaml", Format::Accelerate, "--nproc-per-node 8 --nnodes 2 --precision mixed --framework fsdp2 --zero 3 --reshard-after-forward false --recompute full"),
    ("megatron.sh", Format::Command, "--nproc-per-node 8 --nnodes 2 --arch llama --layers 16 --hidden 2048 --heads 16 --ffn 8192 --vocab 32000 --kv-heads 4 --micro-batch 2 --batch 64 --seq 4096 --tp 2 --pp 2 --precision mixed --sp --zero 1 --recompute selective --no-overlap-grad-reduce --no-overlap-param-gather --no-tp-comm-overlap"),
    ("megatron_fp8.sh", Format::Command, "--nproc-per-node 8 --arch llama --layers 16 --hidden 2048 --heads 16 --ffn 8192 --vocab 32000 --kv-heads 4 --micro-batch 1 --batch 32 --seq 4096 --precision mixed --zero 1 --fp8 te --fp8-param --no-overlap-grad-reduce --no-overlap-param-gather"),
    ("megatron_offload.sh", Format::Command, "--nproc-per-node 8 --arch llama --layers 16 --hidden 2048 --heads 16 --ffn 8192 --vocab 32000 --kv-heads 4 --micro-batch 2 --batch 32 --seq 8192 --precision mixed --zero 1 --no-overlap-grad-reduce --no-overlap-param-gather --offload-layers 8"),
    ("fsdp_qlora.sh", Format::Command, "--impl hf --model llama-2-13b --micro-batch 2 --seq 2048 --recompute none --precision mixed --lora-rank 16 --lora-targets q,k,v,gate,up,down --nproc-per-node 2"),
    ("tune_run.sh", Format::Command, "--nproc-per-node 4 --framework fsdp2 --zero 3 --micro-batch 4 --seq 2048 --recompute none --optimizer paged-adam8bit"),
    ("unsloth_cli.sh", Format::Command, "--model mistral-7b --seq 4096 --quant-base nf4 --lora-rank 32 --lora-targets all --recompute full --offload-activations checkpoints --precision bf16 --impl hf --micro-batch 2 --grad-accum 4 --optimizer adam8bit"),
];

#[test]
fn own_fixtures_give_their_flags_in_order() {
    for (file, format, want) in OWN {
        let r = read(&Path::new(FIXTURES).join(file));
        assert_eq!(r.format, *format, "{file}");
        assert_eq!(flags(&r), *want, "{file}");
    }
}

/// The leaves of a structured file, by key path.
fn leaves(path: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.display().to_string();
    let root = if name.ends_with(".toml") {
        parse::toml(&text).ok()?
    } else if name.ends_with(".json") {
        parse::json(&text).ok()?
    } else if name.ends_with(".yaml") || name.ends_with(".yml") {
        parse::yaml(&text).ok()?
    } else {
        return None;
    };
    let mut doc = Doc::new(&root);
    Some(doc.rest().into_iter().map(|(k, _)| k).collect())
}

/// Every key of the file set a flag or is listed as ignored with a reason:
/// nothing is dropped silently.
fn assert_every_key_accounted(path: &Path, r: &Reading) {
    let Some(keys) = leaves(path) else { return };
    let named: Vec<&str> = r
        .out
        .set
        .iter()
        .map(|s| s.key.as_str())
        .chain(r.out.ignored.iter().map(|i| i.key.as_str()))
        .collect();
    for key in keys {
        let last = key.rsplit('.').next().unwrap_or(&key);
        // FSDP-QLoRA's defaults JSON: the flag is the key under `args`.
        let flag = key.strip_prefix("args.").and_then(|k| k.split('.').next());
        let found = named.iter().any(|n| {
            *n == key
                || n.contains(last)
                || flag.is_some_and(|f| n.contains(f))
                || key.starts_with("_")
                || key.ends_with(".help")
                || key.ends_with(".type")
                || key.ends_with(".choices")
        });
        assert!(
            found,
            "{}: key {key} neither set nor ignored",
            path.display()
        );
    }
    for i in &r.out.ignored {
        assert!(
            !i.reason.is_empty(),
            "{}: {} has no reason",
            path.display(),
            i.key
        );
    }
}

#[test]
fn own_fixtures_account_for_every_key() {
    for (file, ..) in OWN {
        let path = Path::new(FIXTURES).join(file);
        assert_every_key_accounted(&path, &read(&path));
    }
}

/// The membudget command line with `--from` applied, as `main` runs it.
fn cli(args: &[&str]) -> Result<String, String> {
    let argv: Vec<OsString> = std::iter::once("membudget")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    let parsed = Args::try_parse_from(&argv).map_err(|e| e.to_string())?;
    let merged = with_from(parsed, &argv)?;
    run(&merged)
}

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

#[test]
fn later_flags_override_the_file() {
    let f = fixture("torchtune_lora.yaml");
    let out = cli(&["--from", &f, "--json"]).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["inputs"]["micro_batch"], 3);
    assert_eq!(doc["inputs"]["batch"], 6, "micro-batch 3 × accumulation 2");
    assert_eq!(doc["inputs"]["from"][0]["format"], "torchtune recipe");
    let out = cli(&["--from", &f, "--micro-batch", "1", "--json"]).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["inputs"]["micro_batch"], 1);
    assert_eq!(doc["inputs"]["batch"], 2);
}

#[test]
fn later_files_override_earlier_ones() {
    // TrainingArguments then a DeepSpeed file: the second's micro-batch wins.
    let (hf, ds) = (fixture("hf_args.json"), fixture("deepspeed_z2.json"));
    let out = cli(&[
        "--from",
        &hf,
        "--from",
        &ds,
        "--nproc-per-node",
        "4",
        "--json",
    ])
    .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let i = &doc["inputs"];
    assert_eq!(i["micro_batch"], 2);
    assert_eq!(i["parallel"]["dp"], 4);
    assert_eq!(i["parallel"]["zero"], 2);
    assert_eq!(
        i["batch"],
        2 * 16 * 4,
        "micro 2 × accumulation 16 (TrainingArguments) × dp 4"
    );
    assert_eq!(i["framework"], "deepspeed");
    assert_eq!(i["from"].as_array().unwrap().len(), 2);
}

#[test]
fn the_data_parallel_size_is_what_the_parallel_sizes_leave() {
    // 8 GPUs × 2 nodes over tp 2 × pp 2: dp 4.
    let out = cli(&["--from", &fixture("megatron.sh"), "--json"]).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let p = &doc["inputs"]["parallel"];
    assert_eq!(
        (p["dp"].as_u64(), p["tp"].as_u64(), p["pp"].as_u64()),
        (Some(4), Some(2), Some(2))
    );
    let err = cli(&[
        "--from",
        &fixture("megatron.sh"),
        "--nnodes",
        "1",
        "--nproc-per-node",
        "2",
    ])
    .unwrap_err();
    assert!(
        err.contains("2 GPUs do not split into tp × pp × cp = 4"),
        "{err}"
    );
    assert!(
        err.contains("megatron.sh: tensor-model-parallel-size") || err.contains("--nproc-per-node"),
        "{err}"
    );
}

#[test]
fn the_printout_says_what_was_read() {
    let out = cli(&["--from", &fixture("torchtune_lora.yaml")]).unwrap();
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "read from {} (torchtune recipe): model._component_=",
            fixture("torchtune_lora.yaml")
        )),
        "{first}"
    );
    assert!(first.contains("batch_size=3 → --micro-batch 3"), "{first}");
    let ignored = out.lines().find(|l| l.starts_with("  ignored: ")).unwrap();
    assert!(
        ignored.contains("compile=false (off: priced without it)"),
        "{ignored}"
    );
    assert!(
        first.contains(
            "loss._component_=torchtune.modules.loss.CEWithChunkedOutputLoss → --loss chunked"
        ),
        "{first}"
    );
}

#[test]
fn an_unknown_model_names_config_as_the_way_in() {
    let dir = std::env::temp_dir().join("membudget-from-unknown");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("axolotl.yml");
    std::fs::write(
        &f,
        "base_model: someone/SomeModel-3B\nmicro_batch_size: 2\n",
    )
    .unwrap();
    let f = f.display().to_string();
    let err = cli(&["--from", &f]).unwrap_err();
    assert!(
        err.contains("base_model names the model 'someone/SomeModel-3B'")
            && err.contains("--config PATH"),
        "{err}"
    );
    // With a model of the user's own, the file's is not needed.
    let out = cli(&["--from", &f, "--model", "llama-3.2-1b"]).unwrap();
    assert!(
        out.contains("micro_batch_size=2 → --micro-batch 2"),
        "{out}"
    );
}

#[test]
fn bad_values_name_the_file_and_key() {
    let dir = std::env::temp_dir().join("membudget-from-bad");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text, want) in [
        (
            "ds.json",
            r#"{"zero_optimization": {"stage": 7}}"#,
            "zero_optimization.stage: ZeRO stages are 0 to 3, got 7",
        ),
        (
            "ds2.json",
            r#"{"train_micro_batch_size_per_gpu": "two"}"#,
            "train_micro_batch_size_per_gpu: expected a whole number, got two",
        ),
        (
            "ds3.json",
            r#"{"train_micro_batch_size_per_gpu": 0}"#,
            "train_micro_batch_size_per_gpu = 0 gives --micro-batch 0, which is refused",
        ),
        (
            "tt.toml",
            "[training]\nseq_len = \"long\"\n",
            "training.seq_len: expected a whole number, got long",
        ),
        (
            "a.yaml",
            "base_model: x\nadapter: dora\n",
            "adapter: expected lora or qlora, got dora",
        ),
        (
            "b.yaml",
            "- just\n- a list\n",
            "expected a table of keys at the top of the file",
        ),
        ("c.yaml", "key: [unclosed\n", "not valid YAML"),
        ("d.json", "{", "not valid JSON"),
        (
            "e.sh",
            "torchrun --nproc_per_node 'eight train.py",
            "a quote is not closed",
        ),
    ] {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        let f = f.display().to_string();
        let err = cli(&["--from", &f, "--model", "llama-3.2-1b"]).unwrap_err();
        assert!(err.starts_with(&format!("--from {f}: ")), "{err}");
        assert!(err.contains(want), "{name}: {err}");
    }
    let err = cli(&["--from", "/nonexistent/file.yaml"]).unwrap_err();
    assert!(err.starts_with("--from /nonexistent/file.yaml: "), "{err}");
}

/// The real files beside the repository, if present: `../shared/trainer_configs`.
fn real_files() -> Option<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/trainer_configs");
    if !dir.is_dir() {
        return None;
    }
    let mut files = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n != "README.md") {
                files.push(p);
            }
        }
    }
    files.sort();
    Some(files)
}

/// What some real files must set (flag and value as the command line
/// spells them), from the keys docs/trainers.md lists.
const REAL: &[(&str, &[&str])] = &[
    (
        "torchtune/llama3_1/8B_qlora_single_device.yaml",
        &[
            "--model llama-3.1-8b",
            "--quant-base nf4",
            "--quant-path torchao",
            "--lora-rank 8",
            "--lora-targets all",
            "--micro-batch 2",
            "--grad-accum 16",
            "--precision bf16",
            "--recompute full",
        ],
    ),
    (
        "torchtune/llama3_1/70B_full.yaml",
        &[
            "--framework fsdp2",
            "--zero 3",
            "--model llama-3.1-70b",
            "--adam fused",
        ],
    ),
    (
        "torchtune/llama2/7B_full_low_memory.yaml",
        &["--optimizer paged-adamw", "--model llama-2-7b"],
    ),
    (
        "torchtitan/train_configs/llama3_8b.toml",
        &[
            "--micro-batch 1",
            "--seq 8192",
            "--recompute selective-op",
            "--framework fsdp2",
        ],
    ),
    (
        "torchtitan/train_configs/llama3_8b_6fc499f6.toml",
        &["--micro-batch 1", "--seq 8192", "--tp 1"],
    ),
    (
        "torchtitan/train_configs/llama3_405b.toml",
        &["--tp 8", "--fp8 tensorwise", "--recompute full"],
    ),
    (
        "axolotl/examples/alst/llama3-8b-deepspeed-alst.yaml",
        &[
            "--seq 500000",
            "--cp 8",
            "--optimizer adam8bit",
            "--offload-activations",
            "--recompute full",
        ],
    ),
    (
        "axolotl/examples/llama-3/qlora.yml",
        &[
            "--quant-base nf4",
            "--lora-rank 32",
            "--lora-targets all",
            "--optimizer paged-adamw",
        ],
    ),
    (
        "axolotl/examples/llama-3/3b-fp8-fsdp2.yaml",
        &[
            "--framework fsdp2",
            "--fp8 tensorwise",
            "--micro-batch 16",
            "--recompute none",
        ],
    ),
    (
        "axolotl/deepspeed_configs/zero3_bf16_cpuoffload_all.json",
        &[
            "--zero 3",
            "--offload-optimizer",
            "--offload-params",
            "--precision mixed",
        ],
    ),
    (
        "deepspeed/training/bf16_master_weight/configs/bf16_full.json",
        &[
            "--micro-batch 4",
            "--zero 3",
            "--reduce-bucket-size 50000000",
        ],
    ),
    (
        "accelerate/examples/deepspeed_config_templates/zero_stage3_offload_config.json",
        &[
            "--grad-accum 1",
            "--zero 3",
            "--offload-params",
            "--precision mixed",
        ],
    ),
    (
        "accelerate/examples/config_yaml_templates/fsdp.yaml",
        &[
            "--nproc-per-node 2",
            "--precision mixed",
            "--recompute none",
        ],
    ),
    (
        "trl/examples/accelerate_configs/deepspeed_zero3.yaml",
        &["--nproc-per-node 8", "--framework deepspeed", "--zero 3"],
    ),
    (
        "trl/examples/accelerate_configs/fsdp2.yaml",
        &["--framework fsdp2", "--reshard-after-forward true"],
    ),
    (
        "trl/examples/cli_configs/example_config.yaml",
        &[
            "--micro-batch 8",
            "--seq 1024",
            "--recompute full",
            "--precision mixed",
        ],
    ),
    (
        "trl/open-r1/recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo.yaml",
        &[
            "--micro-batch 16",
            "--objective grpo",
            "--seq 1536",
            "--completion 1024",
            "--generations 16",
            "--precision bf16",
        ],
    ),
    (
        "trl/open-r1/recipes/OpenR1-Distill-7B/sft/config_distill.yaml",
        &[
            "--micro-batch 2",
            "--grad-accum 8",
            "--seq 32768",
            "--recompute full",
        ],
    ),
    (
        "trl/commands/sft_peft.cmd.txt",
        &[
            "--micro-batch 2",
            "--grad-accum 8",
            "--lora-rank 32",
            "--seq 1024",
        ],
    ),
    (
        "trl/commands/grpo_vlm_zero3.cmd.txt",
        &[
            "--lora-targets q,v",
            "--objective grpo",
            "--completion 1024",
            "--precision bf16",
        ],
    ),
    (
        "llama-factory/examples/train_lora/qwen3_lora_sft.yaml",
        &[
            "--micro-batch 1",
            "--grad-accum 8",
            "--seq 2048",
            "--recompute full",
            "--lora-rank 8",
            "--lora-targets all",
        ],
    ),
    (
        "llama-factory/examples/train_qlora/qwen3_lora_sft_otfq.yaml",
        &["--quant-base nf4"],
    ),
    (
        "llama-factory/examples/deepspeed/ds_z3_config.json",
        &["--zero 3"],
    ),
    (
        "llama-factory/examples/v1/train_full/train_full_liger_kernel.yaml",
        &["--micro-batch 1", "--framework fsdp2"],
    ),
    (
        "megatron-lm/train_llama3_8b_h100_fp8.args.txt",
        &[
            "--nproc-per-node 8",
            "--kv-heads 8",
            "--batch 128",
            "--seq 8192",
            "--sp",
            "--zero 1",
            "--fp8 te",
            "--fp8-param",
            "--precision mixed",
            "--overlap-grad-reduce",
            "--overlap-param-gather",
        ],
    ),
    (
        "megatron-lm/train_gpt3_175b_distributed.args.txt",
        &[
            "--arch gpt2",
            "--positions 2048",
            "--tp 8",
            "--pp 16",
            "--batch 1536",
            "--precision mixed",
            "--no-overlap-grad-reduce",
        ],
    ),
    (
        "litgpt/config_hub/finetune/llama-3.1-8b/qlora.yaml",
        &[
            "--quant-base nf4-nodq",
            "--quant-path bnb",
            "--precision bf16",
            "--batch 8",
            "--micro-batch 2",
            "--lora-targets q,v",
        ],
    ),
    (
        "litgpt/config_hub/finetune/llama-3.2-1B/full.yaml",
        &["--model llama-3.2-1b"],
    ),
    (
        "fsdp_qlora/train_py_defaults_4cd6923.json",
        &[
            "--lora-rank 64",
            "--quant-base nf4",
            "--quant-path fsdp-qlora",
            "--recompute full",
            "--precision bf16",
            "--seq 512",
        ],
    ),
    (
        "unsloth/unsloth-cli_usage.cmd.txt",
        &[
            "--seq 8192",
            "--lora-rank 64",
            "--offload-activations",
            "--optimizer adam8bit",
            "--micro-batch 4",
        ],
    ),
    (
        "unsloth/readme_sft_example.args.txt",
        &[
            "--model gpt-oss-20b",
            "--lora-rank 16",
            "--lora-targets all",
            "--micro-batch 2",
            "--seq 2048",
        ],
    ),
];

#[test]
fn every_real_trainer_file_is_read() {
    let Some(files) = real_files() else {
        eprintln!("skipped: ../shared/trainer_configs is not beside the repository");
        return;
    };
    assert!(files.len() >= 55, "{} files", files.len());
    for path in &files {
        let r = read(path);
        assert_every_key_accounted(path, &r);
        // Every setting is a flag the command line takes.
        for s in &r.out.set {
            let mut argv = vec!["membudget", s.flag];
            if !s.arg.is_empty() {
                argv.push(&s.arg);
            }
            Args::try_parse_from(&argv)
                .unwrap_or_else(|e| panic!("{}: {} {}: {e}", path.display(), s.flag, s.arg));
        }
    }
    for (file, want) in REAL {
        let path = files
            .iter()
            .find(|p| p.ends_with(file))
            .unwrap_or_else(|| panic!("{file} missing"));
        let got: Vec<String> = {
            let r = read(path);
            r.out
                .set
                .iter()
                .map(|s| {
                    if s.arg.is_empty() {
                        s.flag.to_string()
                    } else {
                        format!("{} {}", s.flag, s.arg)
                    }
                })
                .collect()
        };
        for w in *want {
            assert!(
                got.iter()
                    .any(|g| g == w || (g.starts_with(w) && !w.contains(' '))),
                "{file}: no {w} in {got:?}"
            );
        }
    }
}

#[test]
fn real_files_price_or_refuse_in_words() {
    let Some(files) = real_files() else {
        eprintln!("skipped: ../shared/trainer_configs is not beside the repository");
        return;
    };
    let mut priced = 0;
    for path in &files {
        let f = path.display().to_string();
        // A card for GRPO's colocated vLLM, which takes a share of it; a
        // model for the files that name none (DeepSpeed, accelerate) or one
        // that is not a preset.
        let fallback = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm"];
        match cli(&["--from", &f])
            .or_else(|_| cli(&["--from", &f, "--gpu", "h100-sxm"]))
            .or_else(|_| cli(&[&["--from", f.as_str()][..], &fallback[..]].concat()))
        {
            Ok(out) => {
                assert!(out.starts_with("read from "), "{f}: {out}");
                priced += 1;
            }
            Err(e) => assert!(!e.is_empty() && !e.contains("panicked"), "{f}: {e}"),
        }
    }
    // All but Megatron-LM's GPT-3 175B script, whose launcher's 8 GPUs
    // do not hold its tp 8 × pp 16 (refused in words); axolotl's ALST
    // example (500,000 tokens over cp 8) prices since sequences go to 2²⁰.
    assert!(priced >= 58, "{priced} of {} files priced", files.len());
    let alst = files
        .iter()
        .find(|p| p.ends_with("axolotl/examples/alst/llama3-8b-deepspeed-alst.yaml"))
        .unwrap();
    let out = cli(&["--from", &alst.display().to_string()]).unwrap();
    assert!(out.contains("seq 500000"), "{out}");
}

/// docs/trainers.md carries every default with its source, and every
/// ignored key with its reason, as the readers have them.
#[test]
fn docs_list_every_default_and_ignored_key() {
    use membudget::detailed::trainers::{
        accelerate, axolotl, command, deepspeed, hf, litgpt, llamafactory, megatron, torchtitan,
        torchtune,
    };
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/trainers.md")).unwrap();
    let defaults = [
        torchtune::DEFAULTS,
        torchtitan::DEFAULTS,
        axolotl::DEFAULTS,
        llamafactory::DEFAULTS,
        litgpt::DEFAULTS,
        hf::DEFAULTS,
        deepspeed::DEFAULTS,
        accelerate::DEFAULTS,
        megatron::DEFAULTS,
        command::FSDP_QLORA_DEFAULTS,
    ];
    for (key, value, source) in defaults.iter().flat_map(|d| d.iter()) {
        let row = format!("| `{key}` | {value} | {source} |");
        assert!(doc.contains(&row), "docs/trainers.md lacks {row}");
    }
    for (key, value, flag, arg, source) in command::UNSLOTH_CLI_DEFAULTS {
        let row = format!("| `{key}` | {value} | `{flag} {arg}` | {source} |");
        assert!(doc.contains(&row), "docs/trainers.md lacks {row}");
    }
    let ignored = [
        torchtune::IGNORED,
        torchtitan::IGNORED,
        axolotl::IGNORED,
        llamafactory::IGNORED,
        litgpt::IGNORED,
        hf::IGNORED,
        deepspeed::IGNORED,
        accelerate::IGNORED,
        megatron::IGNORED,
    ];
    for (key, reason) in ignored.iter().flat_map(|d| d.iter()) {
        let row = format!("| `{key}` | {reason} |");
        assert!(doc.contains(&row), "docs/trainers.md lacks {row}");
    }
}

/// The binary: a bad file is exit code 2 with the file and key, never a
/// panic (101).
#[test]
fn the_binary_refuses_a_bad_file_with_exit_code_2() {
    let dir = std::env::temp_dir().join("membudget-from-exit");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.toml");
    std::fs::write(&f, "[training]\nlocal_batch_size = -3\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_membudget"))
        .args(["--from", f.to_str().unwrap(), "--model", "llama-3.2-1b"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("training.local_batch_size: expected a whole number, got -3"),
        "{err}"
    );
    let ok = std::process::Command::new(env!("CARGO_BIN_EXE_membudget"))
        .args([
            "--from",
            &fixture("deepspeed_z2.json"),
            "--model",
            "llama-3.2-1b",
            "--nproc-per-node",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).starts_with("read from "));
}

/// `--trainer` places that trainer's defaults before the files and flags:
/// torchtune's chunked loss and bf16 adapters with LoRA, overridden by a
/// later flag; in fp32 its adapters stay fp32 (no refusal); TRL's LoRA
/// dropout only with LoRA.
#[test]
fn the_trainer_choice_sets_its_defaults_first() {
    let line = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("# detailed"))
            .unwrap()
            .to_string()
    };
    let out = cli(&[
        "--model",
        "llama-3.2-1b",
        "--trainer",
        "torchtune",
        "--lora-rank",
        "8",
    ])
    .unwrap();
    assert!(out.starts_with("--trainer torchtune: that trainer's defaults, before your flags (docs/trainers.md): --impl hf --precision bf16 --loss chunked --lora-dtype bf16\n"), "{out}");
    assert!(line(&out).contains("the chunked loss (8 chunks)"), "{out}");
    assert!(line(&out).contains("bf16 adapters"), "{out}");
    let out = cli(&[
        "--model",
        "llama-3.2-1b",
        "--trainer",
        "torchtune",
        "--loss",
        "full",
    ])
    .unwrap();
    assert!(!line(&out).contains("chunked"), "{out}");
    let out = cli(&[
        "--model",
        "llama-3.2-1b",
        "--trainer",
        "torchtune",
        "--precision",
        "fp32",
        "--lora-rank",
        "8",
    ])
    .unwrap();
    assert!(!line(&out).contains("bf16 adapters"), "{out}");
    let out = cli(&["--model", "llama-3.2-1b", "--trainer", "trl"]).unwrap();
    assert!(!out.contains("--lora-dropout"), "{out}");
    let out = cli(&[
        "--model",
        "llama-3.2-1b",
        "--trainer",
        "trl",
        "--lora-rank",
        "8",
    ])
    .unwrap();
    assert!(line(&out).contains("dropout 0.05"), "{out}");
    assert!(cli(&["--model", "llama-3.2-1b", "--trainer", "nemo"]).is_err());
}

/// The configuration `args` ask for, `--from` applied, and its step time
/// on H100 SXMs, 8 a node.
fn timed(args: &[&str]) -> (DetailedConfig, StepTime) {
    let argv: Vec<OsString> = std::iter::once("membudget")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    let parsed = Args::try_parse_from(&argv).unwrap();
    let (cfg, _) = with_from(parsed, &argv).unwrap().detailed_config().unwrap();
    let h100 = Cluster::new(gpu("h100-sxm").unwrap(), 8);
    let time = step_time(&cfg, &h100, &Efficiency::for_gpu(&h100.gpu));
    (cfg, time)
}

/// Megatron-LM's overlaps are off unless the script gives them
/// (store_true flags, megatron/training/arguments.py at d98e8a64). Its
/// Llama 3 8B fp8 script gives `--overlap-grad-reduce` and
/// `--overlap-param-gather` and reads with both on (its tp of 1 leaves
/// `--tp-comm-overlap` out of it); the same script without those two lines
/// reads with both off, and the data-parallel time that hid behind
/// backward and forward is all exposed: the reduce-scatter and the
/// all-gather whole. The GPT-3 175B script gives none: the gradients'
/// overlap is off (the other two do not apply: no distributed optimizer,
/// no sequence parallelism), and its exposed data-parallel time grows
/// against the same run with `--overlap-grad-reduce` given after it.
#[test]
fn megatron_scripts_read_their_overlaps() {
    let Some(files) = real_files() else {
        eprintln!("skipped: ../shared/trainer_configs is not beside the repository");
        return;
    };
    let find = |name: &str| files.iter().find(|p| p.ends_with(name)).unwrap().clone();
    let llama = find("megatron-lm/train_llama3_8b_h100_fp8.args.txt");
    let (given, on) = timed(&["--from", llama.to_str().unwrap()]);
    assert_eq!(given.overlap, Overlap::default());
    let text = std::fs::read_to_string(&llama).unwrap();
    let without: String = text
        .lines()
        .filter(|l| !l.trim().starts_with("--overlap-"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(without.lines().count() + 2, text.lines().count());
    let dir = std::env::temp_dir().join(format!("membudget-overlaps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bare = dir.join("train_llama3_8b_h100_fp8.args.txt");
    std::fs::write(&bare, without).unwrap();
    let (silent, off) = timed(&["--from", bare.to_str().unwrap()]);
    assert_eq!(
        silent.overlap,
        Overlap {
            grad_reduce: false,
            param_gather: false,
            tp_comm: true,
            moe_a2a: false,
        }
    );
    assert!(on.parts.hidden.data_parallel > 0.0, "{on:?}");
    assert_eq!(off.parts.hidden.data_parallel, 0.0);
    let whole = on.parts.data_parallel + on.parts.hidden.data_parallel;
    assert!(
        (off.parts.data_parallel / whole - 1.0).abs() < 1e-12,
        "{off:?}"
    );
    assert!(off.step_s > on.step_s);

    let gpt3 = find("megatron-lm/train_gpt3_175b_distributed.args.txt");
    let gpt3 = gpt3.to_str().unwrap();
    // 64 nodes: dp 4 over tp 8 × pp 16.
    let (read, off) = timed(&["--from", gpt3, "--nnodes", "64"]);
    assert_eq!(read.parallel.data_group(), 4);
    // Its shape is GPT-3 175B's, its 2,048 learned positions included.
    assert_eq!(
        read.arch,
        membudget::detailed::preset("gpt3-175b").unwrap().arch
    );
    assert_eq!(
        read.overlap,
        Overlap {
            grad_reduce: false,
            ..Overlap::default()
        }
    );
    let (_, on) = timed(&["--from", gpt3, "--nnodes", "64", "--overlap-grad-reduce"]);
    assert!(
        off.parts.data_parallel > on.parts.data_parallel,
        "{off:?} {on:?}"
    );
    assert!(off.step_s > on.step_s);
}

/// A Megatron-LM script's overlaps off give way to a later flag: the
/// user's `--overlap-grad-reduce` turns that one back on, and under
/// another framework (which the overlaps' `--no-` flags are refused
/// without) all three are named as ignored, with why.
#[test]
fn a_megatron_scripts_overlaps_give_way() {
    let f = fixture("megatron.sh");
    let (cfg, _) = timed(&["--from", &f, "--overlap-grad-reduce"]);
    assert_eq!(
        cfg.overlap,
        Overlap {
            grad_reduce: true,
            ..Overlap::NONE
        }
    );
    let out = cli(&["--from", &f, "--framework", "fsdp2", "--zero", "3"]).unwrap();
    for key in [
        "overlap-grad-reduce",
        "overlap-param-gather",
        "tp-comm-overlap",
    ] {
        assert!(
            out.contains(&format!(
                "{key}=false (Megatron-Core's overlap: the run's --framework is another)"
            )),
            "{out}"
        );
    }
}

/// A torchtitan pipeline as torchtitan runs it: its own split of the
/// layers (the embedding and the output each weigh one), and its local
/// batch in the pipeline's micro-batches. Llama 3.1 405B over 8 stages:
/// 15, 16 × 6, 15 layers a GPU, by one stage a GPU or two (interleaved).
#[test]
fn torchtitan_pipelines_split_layers_and_batches_as_torchtitan() {
    use membudget::detailed::trainers::torchtitan::torchtitan_split;
    assert_eq!(
        torchtitan_split(126, 8, 1),
        [15, 16, 16, 16, 16, 16, 16, 15]
    );
    assert_eq!(
        torchtitan_split(126, 8, 2),
        [15, 16, 16, 16, 16, 16, 16, 15]
    );
    // Llama 3.1 8B over 4 stages: 34 weighted over 4, the two extra on
    // the first two stages: 8, 9, 8, 7 (not of the first/last form).
    assert_eq!(torchtitan_split(32, 4, 1), [8, 9, 8, 7]);
    assert!(torchtitan_split(32, 1, 1).is_empty());
    // The 2024-12 layout: micro-batches default to the pipeline degree.
    let old = "[model]\nname = \"llama3\"\nflavor = \"405B\"\n[training]\nbatch_size = 32\nseq_len = 8192\ntensor_parallel_degree = 8\n[experimental]\npipeline_parallel_degree = 8\npipeline_parallel_schedule = \"1F1B\"\n";
    let r = trainers::read("old.toml", old).unwrap();
    let f = flags(&r);
    for want in [
        "--micro-batch 4",
        "--grad-accum 8",
        "--pp 8",
        "--first-stage-layers 15",
        "--last-stage-layers 15",
    ] {
        assert!(f.contains(want), "{want}: {f}");
    }
    // The 2025 layout: micro-batches of pipeline_parallel_microbatch_size
    // (1 unset); Interleaved1F1B runs two stages a GPU.
    let new = "[model]\nname = \"llama3\"\nflavor = \"8B\"\n[training]\nlocal_batch_size = 8\nseq_len = 8192\n[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = \"Interleaved1F1B\"\n";
    let f = flags(&trainers::read("new.toml", new).unwrap());
    for want in ["--micro-batch 1", "--grad-accum 8", "--vp 2"] {
        assert!(f.contains(want), "{want}: {f}");
    }
    // 8B over 4 × 2 stages: 34 over 8, 5 5 4 4 4 4 4 4 less the ends:
    // GPUs 4 + 4, 5 + 4, 4 + 4, 4 + 3: the middle differ, priced even.
    assert!(!f.contains("--first-stage-layers"), "{f}");
    assert!(r
        .out
        .ignored
        .iter()
        .all(|i| !i.key.contains("microbatches")));
}

/// `--trainer torchtitan` on the command line splits a pipeline as
/// torchtitan does, as its file's reading does: Llama 3.1 405B's 126
/// layers over 8 GPUs of two stages each are 15, 16 × 6, 15 (refused as
/// an even split, 126 not dividing into 16 stages), a split given on the
/// command line wins, and an even or inexpressible split sets nothing.
#[test]
fn the_torchtitan_choice_splits_a_pipeline_as_torchtitan() {
    let base: Vec<&str> = "--model llama-3.1-405b --dp 8 --tp 8 --sp --pp 8 --vp 2 \
         --seq 8192 --batch 64 --micro-batch 1 --recompute full"
        .split_whitespace()
        .collect();
    let err = cli(&base).unwrap_err();
    assert!(err.contains("divisible"), "{err}");
    let with = |extra: &[&str]| {
        let mut args = base.clone();
        args.extend_from_slice(&["--trainer", "torchtitan"]);
        args.extend_from_slice(extra);
        cli(&args)
    };
    let out = with(&[]).unwrap();
    let first = out.lines().next().unwrap();
    assert!(
        first.ends_with("--first-stage-layers 15 --last-stage-layers 15"),
        "{first}"
    );
    let given = with(&["--first-stage-layers", "9", "--last-stage-layers", "9"]);
    let first = given.unwrap().lines().next().unwrap().to_string();
    assert!(!first.contains("--first-stage-layers"), "{first}");
    // Llama 3.1 8B over 2 GPUs: 34 weighted, 16 and 16, even; over 4
    // GPUs 8, 9, 8, 7, the middle unlike: neither is set.
    for pp in ["2", "4"] {
        let out = cli(&[
            "--model",
            "llama-3.1-8b",
            "--pp",
            pp,
            "--batch",
            "8",
            "--trainer",
            "torchtitan",
        ])
        .unwrap();
        assert!(!out.contains("--first-stage-layers"), "{out}");
    }
}

/// torchtitan's H100 stacks (float8, per-operator checkpointing, compile;
/// its async-TP benchmark's with TP 8 and async TP, the key under
/// `[parallelism]` as 2025's files have it) keep `--compile` where
/// `memory/check.rs` prices it, tensorwise or rowwise, on whole layers or
/// under torchtitan's plan, and with full recomputation or none.
#[test]
fn torchtitan_float8_with_per_op_checkpointing_keeps_compile() {
    let file = |recipe: &str, mode: &str, tp: u64| {
        format!(
            "[model]\nname = \"llama3\"\nflavor = \"8B\"\nconverters = [\"float8\"]\n\
             [float8]\nrecipe_name = \"{recipe}\"\n\
             [activation_checkpoint]\nmode = \"{mode}\"\nselective_ac_option = \"op\"\n\
             [compile]\nenable = true\n\
             [parallelism]\ntensor_parallel_degree = {tp}\nenable_async_tensor_parallel = true\n"
        )
    };
    let read = |recipe, mode, tp| {
        flags(&trainers::read("torchtitan.toml", &file(recipe, mode, tp)).unwrap())
    };
    let compiled = |recipe, mode, tp| read(recipe, mode, tp).split(' ').any(|f| f == "--compile");
    assert!(compiled("tensorwise", "selective", 1));
    assert!(compiled("rowwise", "selective", 1));
    assert!(compiled("tensorwise", "none", 1));
    assert!(compiled("tensorwise", "selective", 8));
    assert!(compiled("rowwise", "selective", 8));
    assert!(compiled("rowwise", "full", 8));
    assert!(compiled("rowwise", "none", 1));
    let async_tp = read("rowwise", "selective", 8);
    assert!(async_tp.contains("--async-tp"), "{async_tp}");
    let args = Args::try_parse_from(
        std::iter::once("membudget")
            .chain(async_tp.split(' '))
            .chain(["--gpu", "h100-hbm2e", "--json"]),
    )
    .unwrap();
    let out = run(&args).unwrap_or_else(|e| panic!("{async_tp}: {e}"));
    assert!(out.contains("\"tokens_per_s_per_gpu\""), "{out}");
}

/// Megatron-LM's token dispatcher: `flex` runs DeepEP unless another
/// backend is named (`moe_flex_dispatcher_backend = "deepep"` by default,
/// transformer_config.py at d98e8a64), as does the older
/// `--moe-enable-deepep`; `alltoall` is read as itself and the other
/// backends are named as priced like it.
#[test]
fn megatron_reads_its_token_dispatcher() {
    let line = |extra: &str| {
        let text = format!("torchrun pretrain_gpt.py --expert-model-parallel-size 8 {extra}");
        trainers::read("moe.sh", &text).unwrap()
    };
    for (extra, want) in [
        ("--moe-token-dispatcher-type flex", Some("deepep")),
        (
            "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep",
            Some("deepep"),
        ),
        (
            "--moe-token-dispatcher-type flex --moe-enable-deepep",
            Some("deepep"),
        ),
        ("--moe-token-dispatcher-type alltoall", Some("alltoall")),
        (
            "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep",
            None,
        ),
        ("--moe-token-dispatcher-type allgather", None),
    ] {
        let r = line(extra);
        assert_eq!(r.out.arg("--moe-dispatcher"), want, "{extra}");
        assert_eq!(
            r.out
                .ignored
                .iter()
                .any(|i| i.reason.contains("all-to-all")),
            want.is_none(),
            "{extra}"
        );
    }
    // Without `flex` the backend and the older switch are named, not lost.
    let r = line("--moe-token-dispatcher-type alltoall --moe-flex-dispatcher-backend deepep --moe-enable-deepep");
    assert_eq!(r.out.arg("--moe-dispatcher"), Some("alltoall"));
    let named: Vec<&str> = r.out.ignored.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(named, ["moe-flex-dispatcher-backend", "moe-enable-deepep"]);
}

/// Megatron-LM's selective recomputation: `--recompute-modules` (default
/// `core_attn`, transformer_config.py at d98e8a64) gives `core_attn` as
/// `--recompute selective` and `layernorm` and `moe_act` as
/// `--recompute-modules`; the modules not priced are named, as is a list
/// under full recomputation or without `--recompute-granularity`. The
/// launch line `--emit megatron` writes reads back to the same flags.
#[test]
fn megatron_reads_its_recomputed_modules() {
    let line = |extra: &str| {
        let text = format!("torchrun pretrain_gpt.py --num-experts 8 {extra}");
        trainers::read("moe.sh", &text).unwrap()
    };
    for (extra, recompute, modules, named) in [
        (
            "--recompute-granularity selective",
            Some("selective"),
            None,
            None,
        ),
        (
            "--recompute-granularity selective --recompute-modules layernorm moe_act",
            None,
            Some("layernorm,moe_act"),
            None,
        ),
        (
            "--recompute-granularity selective --recompute-modules core_attn moe_act mla_up_proj mlp",
            Some("selective"),
            Some("moe_act,mla_up_proj,mlp"),
            None,
        ),
        (
            "--recompute-granularity selective --recompute-modules moe shared_experts gdn_norm_out",
            None,
            Some("moe,shared_experts"),
            Some("gdn_norm_out"),
        ),
        (
            "--recompute-granularity full --recompute-modules layernorm",
            Some("full"),
            None,
            Some("layernorm"),
        ),
        ("--recompute-modules moe_act", None, None, Some("moe_act")),
    ] {
        let r = line(extra);
        assert_eq!(r.out.arg("--recompute"), recompute, "{extra}");
        assert_eq!(r.out.arg("--recompute-modules"), modules, "{extra}");
        let ignored = r.out.ignored.iter().find(|i| i.key == "recompute-modules");
        assert_eq!(ignored.map(|i| i.value.as_str()), named, "{extra}");
    }
    let args = llama_8b_zero1;
    let emitted = run(&args(&[
        "--recompute-modules",
        "core_attn,layernorm",
        "--emit",
        "megatron",
    ]))
    .unwrap();
    assert!(
        emitted
            .contains("--recompute-granularity selective --recompute-modules core_attn layernorm"),
        "{emitted}"
    );
    let back = trainers::read("launch.sh", &emitted).unwrap();
    assert_eq!(back.out.arg("--recompute"), Some("selective"));
    assert_eq!(back.out.arg("--recompute-modules"), Some("layernorm"));
}

/// Megatron-LM's `--cpu-offloading-num-layers N` reads as `--offload-layers
/// N` (0, the default, as nothing offloaded), and `--emit megatron` writes
/// it back; an offload Megatron cannot say (every layer's, the optimizer)
/// is refused in words.
#[test]
fn megatron_reads_and_writes_its_offloaded_layers() {
    let line = |extra: &str| {
        let text = format!("torchrun pretrain_gpt.py --num-layers 16 {extra}");
        trainers::read("offload.sh", &text).unwrap()
    };
    assert_eq!(
        line("--cpu-offloading-num-layers 8")
            .out
            .arg("--offload-layers"),
        Some("8")
    );
    let none = line("--cpu-offloading-num-layers 0");
    assert_eq!(none.out.arg("--offload-layers"), None);
    assert!(none
        .out
        .ignored
        .iter()
        .any(|i| i.key == "cpu-offloading-num-layers"));
    let args = llama_8b_zero1;
    let emitted = run(&args(&["--offload-layers", "12", "--emit", "megatron"])).unwrap();
    assert!(
        emitted.contains(" --cpu-offloading-num-layers 12"),
        "{emitted}"
    );
    let back = trainers::read("back.sh", &emitted).unwrap();
    assert_eq!(back.out.arg("--offload-layers"), Some("12"));
    for refused in [&["--offload-activations"][..], &["--offload-optimizer"][..]] {
        let mut extra = refused.to_vec();
        extra.extend(["--emit", "megatron"]);
        let e = run(&args(&extra)).unwrap_err();
        assert!(e.contains("--offload-layers"), "{e}");
    }
}

/// Llama-3.1-8B over 8 GPUs with the distributed optimizer, and `extra`:
/// a configuration `--emit megatron` writes.
fn llama_8b_zero1(extra: &[&str]) -> Args {
    Args::try_parse_from(
        [
            "membudget",
            "--model",
            "llama-3.1-8b",
            "--dp",
            "8",
            "--zero",
            "1",
        ]
        .iter()
        .chain(extra),
    )
    .unwrap()
}

/// Megatron-LM's `--overlap-moe-expert-parallel-comm` reads as the flag,
/// `--delay-wgrad-compute` beside it as time only, said. (`--emit
/// megatron` writes dense models only, which cannot take the flag.)
#[test]
fn megatron_reads_its_a2a_overlap() {
    let text = "torchrun pretrain_gpt.py --num-layers 16 --overlap-moe-expert-parallel-comm --delay-wgrad-compute";
    let read = trainers::read("a2a.sh", text).unwrap();
    assert_eq!(read.out.arg("--overlap-moe-expert-parallel-comm"), Some(""));
    assert!(read
        .out
        .ignored
        .iter()
        .any(|i| i.key == "delay-wgrad-compute"));
    let plain = trainers::read("plain.sh", "torchrun pretrain_gpt.py --num-layers 16").unwrap();
    assert_eq!(plain.out.arg("--overlap-moe-expert-parallel-comm"), None);
}

/// Megatron-LM's full recomputation needs a method and a count
/// (`TransformerConfig.__post_init__`): `--recompute-method block
/// --recompute-num-layers N` reads as `--recompute-layers N`, and the
/// uniform method of one layer a unit as every layer (`--recompute full`
/// alone); other counts are named as priced that way. `--emit megatron`
/// writes both forms, and they read back.
#[test]
fn megatron_reads_and_writes_its_recompute_method() {
    let line = |extra: &str| {
        let text = format!("torchrun pretrain_gpt.py --num-layers 16 {extra}");
        trainers::read("recompute.sh", &text).unwrap()
    };
    let block =
        line("--recompute-granularity full --recompute-method block --recompute-num-layers 5");
    assert_eq!(block.out.arg("--recompute"), Some("full"));
    assert_eq!(block.out.arg("--recompute-layers"), Some("5"));
    let every =
        line("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
    assert_eq!(every.out.arg("--recompute-layers"), None);
    // Read, and priced as it is: listed as asking for nothing more.
    assert!(every
        .out
        .ignored
        .iter()
        .all(|i| i.reason.contains("as priced")));
    let units =
        line("--recompute-granularity full --recompute-method uniform --recompute-num-layers 4");
    assert_eq!(units.out.arg("--recompute-layers"), None);
    assert!(units
        .out
        .ignored
        .iter()
        .any(|i| i.key == "recompute-num-layers" && i.value == "4"));
    for (extra, written, layers) in [
        (
            &["--recompute", "full", "--recompute-layers", "3"][..],
            "--recompute-granularity full --recompute-method block --recompute-num-layers 3",
            Some("3"),
        ),
        (
            &["--recompute", "full"][..],
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
            None,
        ),
    ] {
        let emitted = run(&llama_8b_zero1(
            &[extra, &["--emit", "megatron"][..]].concat(),
        ))
        .unwrap();
        assert!(emitted.contains(written), "{emitted}");
        let back = trainers::read("launch.sh", &emitted).unwrap();
        assert_eq!(back.out.arg("--recompute"), Some("full"));
        assert_eq!(back.out.arg("--recompute-layers"), layers);
    }
}

/// A Megatron-Core GPT that is not Llama-shaped, as NeMo's Nemotron-4 340B
/// runs it (`Nemotron4Config340B`): grouped queries, untied embeddings and
/// rotary positions without `--swiglu` read as the gpt2 shape with those,
/// the `nemotron-4-340b` preset to the parameter; Megatron's default,
/// learned positions, is `--max-position-embeddings` rows.
#[test]
fn megatron_reads_a_gpt_with_grouped_queries_untied_and_rotary() {
    let shape = "--num-layers 96 --hidden-size 18432 --ffn-hidden-size 73728 --num-attention-heads 96 --vocab-size 256000 --seq-length 4096";
    let line = |extra: &str| {
        let text = format!("torchrun pretrain_gpt.py {shape} {extra}");
        let r = trainers::read("nemotron.sh", &text).unwrap();
        let mut argv = vec!["membudget".to_string()];
        argv.extend(r.flags());
        let args = Args::try_parse_from(argv).unwrap();
        (r, args.detailed_config().unwrap().0.arch)
    };
    let nemotron = membudget::detailed::preset("nemotron-4-340b").unwrap().arch;
    let (r, arch) = line("--group-query-attention --num-query-groups 8 --untie-embeddings-and-output-weights --position-embedding-type rope --max-position-embeddings 4096 --squared-relu");
    assert_eq!(arch, nemotron);
    assert_eq!(arch.params(), 341_041_876_992);
    assert_eq!(r.out.arg("--positions"), Some("0"));
    let named: Vec<&str> = r.out.ignored.iter().map(|i| i.key.as_str()).collect();
    assert!(named.contains(&"max-position-embeddings"), "{named:?}");
    assert!(named.contains(&"squared-relu"), "{named:?}");
    // Without them: tied, 96 heads of keys and values, learned positions.
    let (_, plain) = line("--max-position-embeddings 4096");
    assert_eq!(
        (plain.kv_heads, plain.tied_embeddings, plain.positions),
        (96, true, 4096)
    );
    // 96 layers × (h·3h − h·(h + 2·8·192)) and their biases, less the
    // output layer, plus 4,096 learned positions.
    let (gqa, output, positions) = (
        96 * (18432 + 1) * (3 * 18432 - 21504),
        256_000 * 18432,
        4096 * 18432,
    );
    assert_eq!(plain.params() - nemotron.params(), gqa - output + positions);
    // The older switch says rope too; a llama shape's positions are named.
    let (_, older) = line("--use-rotary-position-embeddings");
    assert_eq!(older.positions, 0);
    let (r, _) = line("--swiglu --position-embedding-type rope");
    assert!(r
        .out
        .ignored
        .iter()
        .any(|i| i.key == "position-embedding-type"));
}

/// A Megatron line's mixture of experts (`--num-experts`) is read as the
/// preset with its experts, router, widths, layers and hidden size, so
/// that NeMo's Mixtral and DeepSeek-V3 lines price their experts; before,
/// `--num-experts` was ignored and the line priced as a dense model (or
/// refused under `--expert-model-parallel-size`). A layout that is no
/// preset's is refused in words.
#[test]
fn megatron_reads_a_mixture_of_experts_as_its_preset() {
    let read = |text: &str| {
        let r = trainers::read("moe.sh", &format!("torchrun pretrain_gpt.py {text}"))?;
        let mut argv = vec!["membudget".to_string()];
        argv.extend(r.flags());
        let args = Args::try_parse_from(argv).unwrap();
        Ok::<_, trainers::value::ReadError>(args.detailed_config().unwrap().0)
    };
    let mixtral = "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention --num-query-groups 8 --swiglu --vocab-size 32000 --seq-length 4096 --micro-batch-size 1 --global-batch-size 256 --num-experts 8 --moe-router-topk 2 --moe-grouped-gemm --expert-model-parallel-size 8 --pipeline-model-parallel-size 4 --nproc-per-node 8 --nnodes 4";
    let cfg = read(mixtral).unwrap();
    assert_eq!(
        cfg.arch,
        membudget::detailed::preset("mixtral-8x7b").unwrap().arch
    );
    assert_eq!(cfg.parallel.ep, 8);
    // DeepSeek-V3: three dense layers first, a shared expert, 8 of 256.
    let deepseek = "--num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432 --num-attention-heads 128 --swiglu --vocab-size 129280 --seq-length 4096 --micro-batch-size 1 --global-batch-size 64 --num-experts 256 --moe-router-topk 8 --moe-ffn-hidden-size 2048 --moe-shared-expert-intermediate-size 2048 --moe-layer-freq ([0]*3+[1]*58) --multi-latent-attention";
    let cfg = read(deepseek).unwrap();
    assert_eq!(cfg.arch.params(), 671_026_404_352);
    // Top-4 routing is no preset's Mixtral.
    let e = read(&mixtral.replace("--moe-router-topk 2", "--moe-router-topk 4")).unwrap_err();
    assert_eq!(e.key, "num-experts");
    assert!(
        e.message
            .contains("8 experts (top-4) of this shape are no preset's"),
        "{}",
        e.message
    );
}
