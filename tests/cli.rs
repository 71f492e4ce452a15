//! The command line, run as a user runs it.
#![cfg(not(target_arch = "wasm32"))]

use std::process::Command;

fn membudget(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_membudget"))
        .args(args)
        .output()
        .expect("run membudget");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `membudget` with the flags `base`, then `extra`.
fn membudget_with(base: &[&str], extra: &[&str]) -> (i32, String, String) {
    membudget(&[base, extra].concat())
}

/// The JSON of a run with the flags `base`, then `extra`, that succeeds.
fn json_with(base: &[&str], extra: &[&str]) -> serde_json::Value {
    let (code, out, err) = membudget_with(base, &[extra, &["--json"]].concat());
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

const LESSON: &str = "\
params_gb                14.0 GB
grads_gb                 14.0 GB
master_weights_gb        28.0 GB
optimizer_state_gb       56.0 GB
activations_gb           73.0 GB
total_gb                185.0 GB
dominant: activations_gb (73.0 of 185.0 GB, 39 %)
";

#[test]
fn no_flags_prints_the_lesson() {
    assert_eq!(membudget(&[]), (0, LESSON.to_string(), String::new()));
}

#[test]
fn lesson_flags_print_the_lesson() {
    let args = [
        "--params", "7", "--batch", "4", "--seq", "2048", "--hidden", "4096", "--layers", "32",
    ];
    assert_eq!(membudget(&args).1, LESSON);
}

#[test]
fn fp32_moves_weights_and_master_copy() {
    let (code, out, _) = membudget(&["--fp32"]);
    assert_eq!(code, 0);
    assert!(out.starts_with(
        "params_gb                28.0 GB\n\
         grads_gb                 28.0 GB\n\
         master_weights_gb         0.0 GB\n"
    ));
    assert!(out.contains("total_gb                185.0 GB\n"));
}

#[test]
fn gpt2_small_row() {
    let (_, out, _) = membudget(&[
        "--params", "0.124", "--batch", "8", "--seq", "1024", "--hidden", "768", "--layers", "12",
    ]);
    assert!(out.contains("activations_gb            5.1 GB\n"), "{out}");
    assert!(out.contains("total_gb                  7.1 GB\n"), "{out}");
}

#[test]
fn json_has_bytes_and_gb() {
    let (code, out, _) = membudget(&["--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"], "lesson");
    assert_eq!(v["bytes"]["activations"], 73_014_444_032.0);
    assert_eq!(v["bytes"]["params"], 14e9);
    assert_eq!(v["gb"]["master_weights"], 28.0);
    assert_eq!(v["gb"]["optimizer_state"], 56.0);
    assert_eq!(v["gb"]["total"], 185.014444032);
    let keys = [
        "params",
        "grads",
        "master_weights",
        "optimizer_state",
        "activations",
        "total",
    ];
    for part in ["bytes", "gb"] {
        let obj = v[part].as_object().unwrap();
        assert_eq!(obj.len(), keys.len());
        for k in keys {
            assert!(obj[k].is_number(), "{part}.{k}");
        }
    }
}

#[test]
fn bad_flags_fail_with_a_clear_message() {
    let cases: &[(&[&str], &str)] = &[
        (&["--batch", "0"], "Batch size must be at least 1"),
        (&["--batch", "2.5"], "Batch size must be a whole number"),
        (&["--seq", "abc"], "Sequence length must be a number"),
        (&["--hidden", "100000"], "Hidden size must be at most 65536"),
        (&["--params", "NaN"], "Model size must be a number"),
        (&["--layers", "-1"], "Layers must be at least 1"),
        (&["--nonsense"], "unexpected argument '--nonsense'"),
    ];
    for (args, msg) in cases {
        let (code, out, err) = membudget(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?}");
        assert!(err.contains(msg), "{args:?}: {err}");
    }
}

#[test]
fn detailed_json_has_logits_and_adds_up() {
    let (code, out, err) = membudget(&["--model", "llama-2-7b", "--seq", "4096", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"], "detailed");
    let bytes = &v["bytes"];
    assert_eq!(bytes["params"], 6_738_415_616.0 * 2.0);
    assert_eq!(bytes["master_weights"], 6_738_415_616.0 * 4.0);
    let sum: f64 = [
        "params",
        "grads",
        "master_weights",
        "optimizer_state",
        "activations",
    ]
    .iter()
    .map(|k| bytes[k].as_f64().unwrap())
    .sum();
    assert_eq!(bytes["total"].as_f64().unwrap(), sum);
    let logits = bytes["logits"].as_f64().unwrap();
    // fp32 log-probabilities for 4096 tokens over 32000 words.
    assert_eq!(logits, 4.0 * 4096.0 * 32000.0);
    assert!(logits < bytes["activations"].as_f64().unwrap());
}

#[test]
fn detailed_hf_profile_reproduces_a_measured_row() {
    // tests/fixtures/hf_measured.tsv, first row: GPT-2 L2 h256, fp32, eager,
    // dropout, measured 20,729,860 activation bytes on the CPU.
    let (code, out, err) = membudget(&[
        "--model",
        "gpt2",
        "--layers",
        "2",
        "--hidden",
        "256",
        "--heads",
        "4",
        "--ffn",
        "1024",
        "--vocab",
        "1031",
        "--seq",
        "128",
        "--batch",
        "2",
        "--precision",
        "fp32",
        "--impl",
        "hf",
        "--device",
        "cpu",
        "--dropout",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["bytes"]["activations"], 20_729_860.0);
    assert_eq!(v["bytes"]["params"], 8_424_448.0);
}

#[test]
fn detailed_parallelism_divides_model_states() {
    let run = |extra: &[&str]| {
        let mut args = vec!["--model", "llama-2-7b", "--batch", "8", "--json"];
        args.extend_from_slice(extra);
        let (code, out, err) = membudget(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let one = run(&[]);
    let zero3 = run(&["--dp", "8", "--zero", "3"]);
    for k in ["params", "grads", "master_weights", "optimizer_state"] {
        let (a, b) = (
            one["bytes"][k].as_f64().unwrap(),
            zero3["bytes"][k].as_f64().unwrap(),
        );
        assert_eq!(b, a / 8.0, "{k}");
    }
}

#[test]
fn detailed_flags_are_checked() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--model", "gpt5"],
            "invalid value 'gpt5' for '--model <PRESET>'\n  [possible values: gpt2, gpt2-medium,",
        ),
        (
            &[
                "--arch", "llama", "--layers", "2", "--hidden", "256", "--heads", "4",
            ],
            "--ffn is required",
        ),
        (
            &["--model", "gpt2", "--params", "7"],
            "--params is the lesson model's",
        ),
        (
            &["--model", "gpt2", "--precision", "fp16"],
            "invalid value 'fp16' for '--precision <PRECISION>'\n  [possible values: mixed, bf16, fp32]",
        ),
        (
            &["--model", "gpt2", "--tp", "5"],
            "tensor parallelism must divide the attention heads",
        ),
        (
            &["--model", "gpt2", "--zero", "4"],
            "invalid value '4' for '--zero <STAGE>': 4 is not in 0..=3",
        ),
        (
            &["--model", "gpt2", "--batch", "3", "--dp", "2"],
            "--batch (3) must be a multiple of --dp (2), or give --micro-batch",
        ),
        (
            &["--model", "gpt2", "--dp", "2", "--grad-as-bucket-view"],
            "--grad-as-bucket-view needs --framework ddp",
        ),
        (
            &[
                "--model", "gpt2", "--dp", "2", "--framework", "ddp", "--reshard-after-forward",
                "false",
            ],
            "--reshard-after-forward needs --framework fsdp2",
        ),
        (
            &["--model", "gpt2", "--dp", "2", "--zero", "2", "--reduce-bucket-size", "1e6"],
            "--reduce-bucket-size needs --framework deepspeed",
        ),
        (
            &[
                "--model", "gpt2", "--dp", "2", "--framework", "ddp", "--no-overlap-grad-reduce",
            ],
            "--no-overlap-grad-reduce needs --framework megatron",
        ),
        (
            &[
                "--model", "gpt2", "--dp", "2", "--zero", "3", "--framework", "fsdp2",
                "--no-tp-comm-overlap",
            ],
            "--no-tp-comm-overlap needs --framework megatron",
        ),
        (
            &["--model", "gpt2", "--dp", "2", "--zero", "3", "--framework", "fsdp2", "--fsdp-sharding", "full"],
            "--fsdp-sharding needs --framework fsdp1",
        ),
        (
            &["--model", "gpt2", "--offload-activations", "torchtune"],
            "torchtune's activation offloading runs with activation checkpointing only",
        ),
        (
            &["--model", "gpt2", "--offload-activations", "checkpoints", "--recompute", "selective"],
            "offloaded checkpoints (Unsloth's gradient checkpointing) move each checkpointed layer input to the host: add --recompute full",
        ),
        (
            &["--model", "gpt2", "--offload-activations", "unsloth"],
            "invalid value 'unsloth' for '--offload-activations [<KIND>]'",
        ),
        (
            &["--model", "gpt2", "--dp", "2", "--zero", "3", "--fsdp-cpu-offload"],
            "--fsdp-cpu-offload needs --framework fsdp1 or fsdp2",
        ),
        (
            &["--model", "gpt2", "--dp", "2", "--zero", "2", "--framework", "fsdp1"],
            "FSDP1's FULL_SHARD and SHARD_GRAD_OP shard parameters, gradients and optimizer state: they are ZeRO-3 (--zero 3)",
        ),
        (
            &["--model", "gpt2", "--dp", "2", "--zero", "3", "--framework", "fsdp1", "--fsdp-sharding", "no-shard"],
            "FSDP1's NO_SHARD shards nothing: it is --zero 0",
        ),
        (
            &["--model", "gpt2", "--dp", "2", "--framework", "fsdp1-no-shard", "--fsdp-cpu-offload"],
            "--fsdp-cpu-offload with FSDP1's NO_SHARD is not modelled",
        ),
        (
            &[
                "--model", "gpt2", "--dp", "2", "--zero", "2", "--framework", "deepspeed",
                "--reduce-bucket-size", "10",
            ],
            "--reduce-bucket-size must be 1e3 to 1e10 values (got 10)",
        ),
        (
            &[
                "--model", "gpt2", "--dp", "2", "--zero", "3", "--framework", "deepspeed",
                "--pp", "2",
            ],
            "DeepSpeed's ZeRO-3 does not run with pipeline parallelism",
        ),
        (
            &["--model", "gpt2", "--dp", "2", "--zero", "3", "--prefetch-bucket-size", "1e6"],
            "--prefetch-bucket-size needs --framework deepspeed",
        ),
        (
            &[
                "--model", "gpt2", "--dp", "2", "--zero", "3", "--framework", "deepspeed",
                "--prefetch-bucket-size", "2e10",
            ],
            "--prefetch-bucket-size must be 0 to 1e10 values (got 20000000000)",
        ),
        (
            &[
                "--model", "gpt2", "--dp", "2", "--zero", "3", "--framework", "deepspeed",
                "--lora-rank", "8",
            ],
            "DeepSpeed's ZeRO-3 is modelled for full training",
        ),
        (
            &["--model", "llama-3.1-8b", "--impl", "fused", "--loss", "chunked"],
            "Megatron (--impl fused) computes its own fused cross entropy",
        ),
        (
            &["--model", "gpt2", "--impl", "liger"],
            "ship no GPT-2 model",
        ),
        (
            &["--model", "llama-3.1-8b", "--loss", "liger", "--objective", "dpo"],
            "modelled for supervised training",
        ),
        (
            &["--model", "llama-3.1-8b", "--loss", "cce", "--tp", "2"],
            "the whole output layer on each GPU (--tp 1)",
        ),
        (
            &["--model", "llama-3.1-8b", "--loss", "liger", "--device", "cpu"],
            "Triton's and need a GPU",
        ),
        (
            &["--model", "llama-3.1-8b", "--loss", "cce", "--precision", "fp32"],
            "needs bf16 or fp16 inputs",
        ),
        (
            &["--model", "mixtral-8x7b", "--impl", "liger"],
            "modelled for dense Llama-family models without LoRA",
        ),
        (
            &["--model", "llama-3.1-8b", "--impl", "liger", "--lora-rank", "8"],
            "modelled for dense Llama-family models without LoRA",
        ),
        (
            &["--model", "llama-3.1-8b", "--loss-chunks", "4"],
            "--loss-chunks sets the chunked loss's chunks: give --loss chunked",
        ),
        (
            &["--model", "llama-3.1-8b", "--loss", "chunked", "--loss-chunks", "0"],
            "invalid value '0' for '--loss-chunks <N>'",
        ),
    ];
    for (args, msg) in cases {
        let (code, out, err) = membudget(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty());
        assert!(err.contains(msg), "{args:?}: {err}");
    }
}

#[test]
fn detailed_text_names_the_dominant_term() {
    let (code, out, err) = membudget(&[
        "--model",
        "llama-2-7b",
        "--seq",
        "4096",
        "--attention",
        "flash",
        "--no-overhead",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("# detailed, per GPU: llama L32 h4096"),
        "{out}"
    );
    assert!(
        out.contains("\nactivations_gb           17.9 GB\n  of which logits_gb      0.5 GB\n"),
        "{out}"
    );
    assert!(
        out.ends_with(
            "total_gb                125.7 GB\n\
             # computed: micro-batch 1 × 1 accumulation step × dp 1 = 1 sequence per step; 1 GPU (dp 1 × tp 1 × pp 1)\n\
             # priced with fused kernels (Megatron), the default for full training (--impl to choose)\n\
             dominant: optimizer_state_gb (53.9 of 125.7 GB, 43 %)\n\
             peak_gb                 125.9 GB\npeak: forward phase, loss (later step; +0 % of total_gb)\n"
        ),
        "{out}"
    );
}

#[test]
fn detailed_json_has_the_peak_and_timeline_in_whole_bytes() {
    // peak_measured.tsv: Llama L2 h256 a4 kv2, V 32000, s128 b2, fp32, SDPA,
    // first step, AdamW per parameter: 350,901,600 bytes at the optimizer step.
    let (code, out, err) = membudget(&[
        "--arch",
        "llama",
        "--layers",
        "2",
        "--hidden",
        "256",
        "--heads",
        "4",
        "--kv-heads",
        "2",
        "--ffn",
        "688",
        "--vocab",
        "32000",
        "--seq",
        "128",
        "--batch",
        "2",
        "--precision",
        "fp32",
        "--attention",
        "flash",
        "--impl",
        "hf",
        "--device",
        "cpu",
        "--first-step",
        "--adam",
        "loop",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // Byte counts are JSON integers.
    for (k, n) in v["bytes"].as_object().unwrap() {
        assert!(n.is_u64(), "{k}: {n}");
    }
    let peak = v["peak"].as_u64().expect("peak in whole bytes");
    assert!((peak as f64 / 350_901_600.0 - 1.0).abs() < 0.001, "{peak}");
    assert_eq!(v["peak_phase"], "optimizer");
    assert_eq!(v["peak_event"], "optimizer update");
    assert_eq!(v["step"], "first");
    let events = v["timeline"].as_array().unwrap();
    // Start, 2 layers, loss; loss and head backward, 2 layers, embedding;
    // state created, update, zero_grad.
    assert_eq!(events.len(), 12, "{out}");
    let max = events
        .iter()
        .map(|e| e["total"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(max, peak);
    for e in events {
        let parts: u64 = [
            "params",
            "grads",
            "master_weights",
            "optimizer_state",
            "activations",
            "transient",
        ]
        .iter()
        .map(|k| e[k].as_u64().unwrap())
        .sum();
        assert!(parts.abs_diff(e["total"].as_u64().unwrap()) <= 6, "{e}");
    }
    assert_eq!(
        events.last().unwrap()["grads"],
        0,
        "zero_grad frees the gradients"
    );
}

#[test]
fn config_json_in_with_expert_parallelism() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/configs");
    let hub = format!("{dir}/hub/deepseek-v3.json");
    let args = [
        "--config",
        &hub,
        "--seq",
        "4096",
        "--batch",
        "64",
        "--dp",
        "64",
        "--ep",
        "64",
        "--zero",
        "1",
        "--attention",
        "flash",
        "--recompute",
        "full",
    ];
    let (code, out, err) = membudget(&args);
    assert_eq!(code, 0, "{out}");
    // What the file says that is not used, on stderr as the page says it.
    let notes: Vec<&str> = err.lines().collect();
    assert_eq!(notes.len(), 2, "{err}");
    assert!(
        notes[0].ends_with(
            "deepseek-v3.json: published in bfloat16; the training precision is chosen below"
        ),
        "{err}"
    );
    assert!(notes[1].contains("quantization_config ignored"), "{err}");
    assert!(out.contains("671026404352 parameters"), "{out}");
    assert!(out.contains("# experts: 256 routed (top-8, width 2048), shared width 2048, 3 dense layers first; 37552282624 active parameters per token; ep 64, etp 1"), "{out}");
    // 17.1 B parameters outside the routed experts whole, 653.9 B of experts
    // over 64 GPUs: 27.3 B at 2 bytes.
    assert!(out.contains("params_gb                54.7 GB"), "{out}");
    // The same model as transformers writes it gives the same figures.
    let saved = format!("{dir}/saved/deepseek-v3.json");
    let mut again = args;
    again[1] = &saved;
    assert_eq!(membudget(&again).1, out);
    // Experts divided by ep × etp need dp × tp to hold them.
    let (code, _, err) = membudget(&["--config", &hub, "--dp", "4", "--batch", "4", "--ep", "8"]);
    assert_ne!(code, 0);
    assert!(err.contains("ep × etp must divide dp × cp × tp"), "{err}");
}

#[test]
fn a_bad_config_json_names_its_field() {
    let path = std::env::temp_dir().join(format!("membudget-bad-{}.json", std::process::id()));
    std::fs::write(
        &path,
        r#"{"model_type": "mixtral", "num_hidden_layers": "32"}"#,
    )
    .unwrap();
    let (code, out, err) = membudget(&["--config", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    assert_ne!(code, 0);
    assert_eq!(out, "");
    assert!(
        err.contains("num_hidden_layers: wrong type, expected a whole number"),
        "{err}"
    );
}

#[test]
fn json_carries_the_host_ram_of_offload() {
    let args = [
        "--model",
        "llama-2-7b",
        "--dp",
        "8",
        "--batch",
        "8",
        "--zero",
        "3",
        "--offload-optimizer",
        "--json",
    ];
    let (code, out, _) = membudget(&args);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // 16 bytes per parameter of Llama-2-7B on the node's host, × 1.5.
    assert_eq!(v["host_ram"]["states"], 16 * 6_738_415_616u64);
    assert_eq!(v["host_ram"]["total"], 24 * 6_738_415_616u64);
    assert_eq!(v["bytes"]["optimizer_state"], 0);
    let (_, plain, _) = membudget(&args[..args.len() - 1]);
    assert!(plain.contains("host_ram_gb"), "{plain}");
    let (_, no_offload, _) = membudget(&["--model", "llama-2-7b", "--json"]);
    assert!(!no_offload.contains("host_ram"));
}

/// `--json` is built from `membudget::report`'s types: it reads back into
/// them, and writing them again gives the same text.
#[test]
fn json_round_trips_through_its_types() {
    use membudget::report::{DetailedReport, LessonReport, SCHEMA};
    let (code, out, err) = membudget(&["--json", "--batch", "8"]);
    assert_eq!(code, 0, "{err}");
    let lesson: LessonReport = serde_json::from_str(&out).unwrap();
    assert_eq!(serde_json::to_string_pretty(&lesson).unwrap() + "\n", out);
    assert_eq!(lesson.schema, SCHEMA);
    assert_eq!(lesson.inputs.batch, 8);
    assert_eq!(lesson.parameters, 7_000_000_000);
    assert_eq!(lesson.dominant, "activations");

    let (code, out, err) = membudget(&[
        "--model",
        "llama-3.1-8b",
        "--seq",
        "4096",
        "--batch",
        "16",
        "--micro-batch",
        "2",
        "--dp",
        "4",
        "--zero",
        "3",
        "--offload-optimizer",
        "--overhead",
        "--recompute",
        "selective",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let d: DetailedReport = serde_json::from_str(&out).unwrap();
    assert_eq!(serde_json::to_string_pretty(&d).unwrap() + "\n", out);
    assert_eq!(d.parameters, 8_030_261_248);
    assert_eq!(d.inputs.shape.preset.as_deref(), Some("llama-3.1-8b"));
    // Defaults resolved: flash attention, fused kernels for full training,
    // the AdamW the fused profile uses.
    assert_eq!(d.inputs.attention, "flash");
    assert_eq!(
        (d.inputs.profile.as_str(), d.inputs.profile_reason.as_str()),
        ("fused", "full training")
    );
    assert_eq!(d.inputs.adam, "fused");
    assert_eq!(d.computed.accumulation_steps, 2);
    assert_eq!(d.computed.gpus, 4);
    assert_eq!(d.computed.ignored.len(), 1, "selective with flash");
    assert!(d.overhead.is_some() && d.host_ram.is_some());
    assert_eq!(d.peak, d.timeline.iter().map(|e| e.total).max().unwrap());
}

/// `membudget --json | head` ends quietly when the reader closes the pipe.
#[test]
fn a_closed_pipe_ends_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_membudget"))
        .args([
            "--model",
            "llama-3.1-405b",
            "--batch",
            "4",
            "--micro-batch",
            "1",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The pipe is closed here, long before the document (170 KB) ends.
    let out = child.wait_with_output().unwrap();
    assert_eq!(&first[..1], b"{");
    assert!(out.status.success(), "{:?}", out.status);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// `--help` groups the flags under headings and lists every preset.
#[test]
fn help_is_grouped_and_lists_every_preset() {
    let (code, out, _) = membudget(&["--help"]);
    assert_eq!(code, 0);
    let mut at = 0;
    for heading in [
        "Model (lesson):",
        "Model (detailed):",
        "Training:",
        "Precision and optimizer:",
        "Kernels and recomputation:",
        "Parallelism:",
        "Fine-tuning:",
        "Offload:",
        "Runtime overhead:",
        "Output:",
    ] {
        let i = out[at..]
            .find(&format!("\n{heading}\n"))
            .unwrap_or_else(|| panic!("{heading} in order:\n{out}"));
        at += i + 1;
    }
    for p in membudget::detailed::PRESETS {
        assert!(
            out.contains(&format!(" {},", p.name)) || out.contains(&format!(" {}]", p.name)),
            "{}",
            p.name
        );
    }
}

/// With data parallelism and no batch given, each GPU runs one micro-batch.
#[test]
fn dp_without_a_batch_runs_one_micro_batch_per_gpu() {
    let (code, out, err) = membudget(&["--model", "llama-2-70b", "--dp", "8", "--zero", "3"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "# computed: micro-batch 1 × 1 accumulation step × dp 8 = 8 sequences per step; 8 GPUs"
        ),
        "{out}"
    );
}

/// `--gpu` fits the step's peak on a card from the table: the issue's dead
/// end (Llama-3.1-8B, 8,192 tokens, one 80 GB H100) does not fit, and
/// ZeRO-3 over 8 cards with full recomputation does, with room for a
/// micro-batch of 7 — each answer checked against the peak it prints.
#[test]
fn gpu_gives_the_verdict_and_what_fits() {
    use membudget::report::DetailedReport;
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--model",
            "llama-3.1-8b",
            "--seq",
            "8192",
            "--gpu",
            "h100-sxm",
            "--json",
        ];
        args.extend_from_slice(extra);
        let (code, out, err) = membudget(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<DetailedReport>(&out).unwrap()
    };
    let alone = run(&[]);
    let fit = alone.fit.unwrap();
    assert_eq!(fit.capacity, 80 << 30);
    // What must fit: the peak plus the runtime overhead (issue 38).
    assert_eq!(Some(fit.need), alone.peak_with_overhead);
    assert!(fit.need > alone.peak);
    assert!(!fit.fits);
    assert_eq!((fit.max_micro_batch, fit.max_seq), (None, None));

    let sharded = run(&["--dp", "8", "--zero", "3", "--recompute", "full"]);
    let fit = sharded.fit.unwrap();
    assert!(fit.fits && Some(fit.need) == sharded.peak_with_overhead);
    let m = fit.max_micro_batch.unwrap();
    // The largest micro-batch fits and one more does not.
    for (micro, fits) in [(m, true), (m + 1, false)] {
        let batch = (8 * micro).to_string();
        let micro = micro.to_string();
        let d = run(&[
            "--dp",
            "8",
            "--zero",
            "3",
            "--recompute",
            "full",
            "--micro-batch",
            &micro,
            "--batch",
            &batch,
        ]);
        assert_eq!(d.fit.unwrap().fits, fits, "micro-batch {micro}");
    }

    let (code, out, _) = membudget(&["--model", "llama-3.1-8b", "--gpu-memory", "24"]);
    assert_eq!(code, 0);
    assert!(out.contains("gpu: a 24 GiB card, does not fit by"), "{out}");
    let (code, _, err) = membudget(&["--model", "gpt2", "--gpu", "v100"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("[possible values: a100-40gb, a100-80gb, h100-sxm"),
        "{err}"
    );
}

/// The issue's dead end gets ways out, and each one's flags, added to the
/// command, give the figures the list promised: the planner's rows rerun.
#[test]
fn every_change_reruns_to_its_figures() {
    use membudget::report::DetailedReport;
    let base = [
        "--model",
        "llama-3.1-8b",
        "--seq",
        "8192",
        "--gpu",
        "h100-sxm",
        "--json",
    ];
    let (code, out, err) = membudget(&base);
    assert_eq!(code, 0, "{err}");
    let report = serde_json::from_str::<DetailedReport>(&out).unwrap();
    // The document with the planner's rows reads back to the same text.
    assert_eq!(serde_json::to_string_pretty(&report).unwrap() + "\n", out);
    let fit = report.fit.unwrap();
    assert!(!fit.fits);
    assert!(
        fit.changes.iter().filter(|c| c.fits).count() >= 3,
        "{:?}",
        fit.changes
    );
    // With the runtime overhead (issue 38) a B200's 193.3 GB no longer
    // holds its 198.0 GB; a GB200's 199.7 GB does (Megatron's fused
    // SwiGLU keeping its input alone: 206.7 GB before, an MI325X then).
    assert_eq!(fit.card.as_deref(), Some("GB200 (NVL72)"));
    for c in &fit.changes {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(c.flags.iter().map(String::as_str));
        let (code, out, err) = membudget(&args);
        assert_eq!(code, 0, "{}: {err}", c.change);
        let again = serde_json::from_str::<DetailedReport>(&out)
            .unwrap()
            .fit
            .unwrap();
        assert_eq!(
            (again.need, again.fits),
            (c.need, c.fits),
            "{}: {:?}",
            c.change,
            c.flags
        );
    }
}

/// A flag given twice takes its last value, so a planner row's flags can
/// be added to a command that already sets them.
#[test]
fn the_last_of_a_repeated_flag_wins() {
    let once = membudget(&[
        "--model", "gpt2", "--batch", "4", "--dp", "2", "--zero", "1", "--json",
    ]);
    let twice = membudget(&[
        "--model", "gpt2", "--batch", "4", "--dp", "2", "--zero", "0", "--zero", "1", "--json",
    ]);
    assert_eq!(once.0, 0, "{}", once.2);
    assert_eq!(once, twice);
}

/// The frameworks' options as PyTorch names them reach the same
/// configurations as the framework names that spell them out.
#[test]
fn framework_options_are_the_named_frameworks() {
    let base = [
        "--model",
        "llama-3.2-1b",
        "--dp",
        "4",
        "--seq",
        "1024",
        "--json",
    ];
    for (options, named) in [
        (
            &["--framework", "ddp", "--grad-as-bucket-view"][..],
            &["--framework", "ddp-bucket-view"][..],
        ),
        (
            &[
                "--framework",
                "fsdp2",
                "--zero",
                "3",
                "--reshard-after-forward",
                "false",
            ],
            &["--framework", "fsdp2-no-reshard", "--zero", "3"],
        ),
        (
            &[
                "--framework",
                "fsdp2-no-reshard",
                "--zero",
                "3",
                "--reshard-after-forward",
                "true",
            ],
            &["--framework", "fsdp2", "--zero", "3"],
        ),
        (
            &[
                "--framework",
                "fsdp1",
                "--zero",
                "3",
                "--fsdp-sharding",
                "grad-op",
            ],
            &["--framework", "fsdp1-grad-op", "--zero", "3"],
        ),
        (
            &["--framework", "fsdp1", "--fsdp-sharding", "no-shard"],
            &["--framework", "fsdp1-no-shard"],
        ),
        (
            &["--zero", "1", "--offload-activations"][..],
            &["--zero", "1", "--offload-activations", "save-on-cpu"][..],
        ),
        (
            &["--framework", "fsdp1", "--zero", "3", "--fsdp-cpu-offload"],
            &[
                "--framework",
                "fsdp1",
                "--zero",
                "3",
                "--offload-optimizer",
                "--offload-params",
            ],
        ),
    ] {
        let run = |extra: &[&str]| {
            let args: Vec<&str> = base.iter().chain(extra).copied().collect();
            let (code, out, err) = membudget(&args);
            assert_eq!(code, 0, "{args:?}: {err}");
            out
        };
        assert_eq!(run(options), run(named), "{options:?}");
    }
    // And they change the figures: the buckets' second copy of the gradients.
    let run = |extra: &[&str]| membudget_with(&base, extra).1;
    assert_ne!(
        run(&["--framework", "ddp"]),
        run(&["--framework", "ddp", "--grad-as-bucket-view"])
    );
}

/// DeepSpeed's bucket is its own configuration's figure: the default 5e8
/// values hold 1 GB in bf16 during backward, a smaller bucket less; JSON
/// carries it.
#[test]
fn deepspeed_bucket_moves_the_peak() {
    let peak = |extra: &[&str]| -> (u64, serde_json::Value) {
        let mut args = vec![
            "--model",
            "llama-3.2-1b",
            "--dp",
            "4",
            "--zero",
            "2",
            "--seq",
            "1024",
            "--framework",
            "deepspeed",
            "--json",
        ];
        args.extend(extra);
        let (code, out, err) = membudget(&args);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        (
            v["peak"].as_u64().unwrap(),
            v["inputs"]["reduce_bucket_size"].clone(),
        )
    };
    let (default, bucket) = peak(&[]);
    assert_eq!(bucket, 500_000_000);
    let (small, bucket) = peak(&["--reduce-bucket-size", "2e8"]);
    assert_eq!(bucket, 200_000_000);
    // 3e8 fewer bf16 values in the bucket, at the backward peak.
    assert_eq!(default - small, 600_000_000);
}

/// DeepSpeed's `overlap_comm` follows its default per stage in the JSON
/// inputs; set at stage 2 it doubles the bucket (one more 5e8-value bf16
/// buffer at the backward peak); at stage 1 turning it off keeps the whole
/// gradients through backward. ZeRO-3's sub-group and persistence settings
/// are echoed; misplaced flags are refused.
#[test]
fn deepspeed_overlap_comm_and_stage3_settings() {
    let run = |zero: &str, extra: &[&str]| {
        let mut args = vec![
            "--model",
            "llama-3.2-1b",
            "--dp",
            "4",
            "--zero",
            zero,
            "--seq",
            "1024",
            "--framework",
            "deepspeed",
            "--json",
        ];
        args.extend(extra);
        let (code, out, err) = membudget(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let stage2 = run("2", &[]);
    assert_eq!(stage2["inputs"]["overlap_comm"], false);
    let overlapped = run("2", &["--overlap-comm", "true"]);
    assert_eq!(overlapped["inputs"]["overlap_comm"], true);
    let diff = overlapped["peak"].as_u64().unwrap() - stage2["peak"].as_u64().unwrap();
    assert_eq!(diff, 1_000_000_000);
    let whole = run("1", &[])["peak"].as_u64().unwrap();
    let reduced = run("1", &["--overlap-comm", "true"]);
    assert!(whole > reduced["peak"].as_u64().unwrap() - 1_000_000_000);
    let z3 = run(
        "3",
        &[
            "--sub-group-size",
            "1e6",
            "--param-persistence-threshold",
            "0",
        ],
    );
    assert_eq!(z3["inputs"]["overlap_comm"], true);
    assert_eq!(z3["inputs"]["sub_group_size"], 1_000_000);
    assert_eq!(z3["inputs"]["param_persistence_threshold"], 0);
    for (args, message) in [
        (
            &["--model", "gpt2", "--overlap-comm", "true"][..],
            "--overlap-comm needs --framework deepspeed",
        ),
        (
            &[
                "--model",
                "gpt2",
                "--dp",
                "2",
                "--zero",
                "3",
                "--framework",
                "deepspeed",
                "--sub-group-size",
                "2e10",
            ],
            "--sub-group-size must be 0 to 1e10 values (got 20000000000)",
        ),
        (
            &["--model", "gpt2", "--seq", "0"],
            "Sequence length must be at least 1 (got 0)",
        ),
    ] {
        let (code, _, err) = membudget(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(message), "{err}");
    }
    let (code, _, err) = membudget(&["--model", "gpt2", "--seq", "1", "--batch", "8"]);
    assert_eq!(code, 0, "{err}");
}

/// A step that fits only once its paged optimizer state spills to the host
/// says so beside the verdict, with the figure without it; one that does
/// not fit even then does not.
#[test]
fn paged_state_that_spills_is_named_in_the_verdict() {
    let base = [
        "--model",
        "llama-2-7b",
        "--precision",
        "bf16",
        "--optimizer",
        "paged-adamw",
        "--optimizer-in-backward",
        "--recompute",
        "full",
        "--micro-batch",
        "2",
        "--batch",
        "2",
    ];
    let (code, out, _) = membudget(&[&base[..], &["--gpu", "rtx-4090"]].concat());
    assert_eq!(code, 0);
    let verdict = out.lines().find(|l| l.starts_with("gpu: ")).unwrap();
    assert!(verdict.contains("does not fit by"), "{verdict}");
    assert!(
        verdict.contains("of paged optimizer state it needs"),
        "{verdict}"
    );
    assert!(
        verdict.contains("runs once that state spills to host memory"),
        "{verdict}"
    );
    // The same on a 12 GB card: too big even without the paged state.
    let (_, out, _) = membudget(&[&base[..], &["--gpu-memory", "12"]].concat());
    let verdict = out.lines().find(|l| l.contains("does not fit by")).unwrap();
    assert!(!verdict.contains("spills"), "{verdict}");
}

/// `--tp-plan`: the plans their trainers cannot run are refused (exit 2,
/// in words); `layers` is `--tp-layers-only`, byte for byte; the default is
/// Megatron's, absent from `--json`; `hf` and `torchtitan` keep the
/// logits whole, so their peak is above Megatron's and `loss-parallel`'s.
#[test]
fn tp_plans_are_checked_and_priced() {
    let base = [
        "--model",
        "llama-3.1-8b",
        "--tp",
        "4",
        "--seq",
        "4096",
        "--json",
    ];
    let with = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        membudget(&args)
    };
    for (extra, says) in [
        (&["--tp-plan", "hf", "--sp"][..], "no sequence parallelism"),
        (&["--tp-plan", "torchtitan"][..], "add --sp"),
        (&["--tp-plan", "loss-parallel"][..], "add --sp"),
    ] {
        let (code, _, err) = with(extra);
        assert_eq!(code, 2, "{extra:?}");
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    let (code, _, err) = with(&["--tp-plan", "vocab"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        with(&["--tp-plan", "layers"]).1,
        with(&["--tp-layers-only"]).1
    );
    let (_, megatron, _) = with(&[]);
    assert_eq!(with(&["--tp-plan", "megatron"]).1, megatron);
    assert!(!megatron.contains("tp_plan"));
    let peak = |out: &str| -> f64 {
        let v: serde_json::Value = serde_json::from_str(out).unwrap();
        v["peak"].as_f64().unwrap()
    };
    let (_, hf, _) = with(&["--tp-plan", "hf"]);
    assert!(hf.contains("\"tp_plan\": \"hf\""), "{hf}");
    let (_, tt, _) = with(&["--tp-plan", "torchtitan", "--sp"]);
    let (_, lp, _) = with(&["--tp-plan", "loss-parallel", "--sp"]);
    let (_, msp, _) = with(&["--sp"]);
    assert!(
        peak(&hf) > peak(&megatron),
        "{} {}",
        peak(&hf),
        peak(&megatron)
    );
    assert!(peak(&tt) > peak(&lp), "{} {}", peak(&tt), peak(&lp));
    assert!(peak(&lp) > peak(&msp), "{} {}", peak(&lp), peak(&msp));
}

/// Issue 38's QLoRA case: Llama-3.1-8B, NF4 base, rank-16 adapters on every
/// projection, 4,096 tokens, micro-batch 2, paged 8-bit Adam on an RTX 4090.
/// Its tensors peak at 25.1 GB of the card's 25.8 GB; with the runtime
/// overhead, which the verdict now counts by default, it needs 29.7 GB.
const QLORA_4090: [&str; 20] = [
    "--model",
    "llama-3.1-8b",
    "--seq",
    "4096",
    "--batch",
    "2",
    "--micro-batch",
    "2",
    "--lora-rank",
    "16",
    "--lora-targets",
    "all",
    "--quant-base",
    "nf4",
    "--recompute",
    "full",
    "--optimizer",
    "paged-adam8bit",
    "--gpu",
    "rtx-4090",
];

fn qlora_with(extra: &[&str]) -> (i32, String, String) {
    let mut args = QLORA_4090.to_vec();
    args.extend_from_slice(extra);
    membudget(&args)
}

#[test]
fn qlora_on_a_4090_does_not_fit_with_the_runtime_overhead() {
    let (code, out, err) = qlora_with(&[]);
    assert_eq!((code, err.as_str()), (0, ""));
    // The parts beside the answer, then the figures a trainer's log prints.
    assert!(out.contains(
        "overhead_gb               4.6 GB (CUDA context 0.76, workspaces 0.07, communication 0.00, fragmentation 3.76)\n\
         peak_with_overhead_gb     29.7 GB\n\
         # a trainer's log prints torch.cuda.max_memory_allocated 25.1 GB (the tensors' peak) and max_memory_reserved 28.8 GB"
    ), "{out}");
    assert!(out.contains(
        "gpu: GeForce RTX 4090, does not fit by 3.9 GB: the step needs 29.7 GB, the card has 25.8 GB\n\
         largest micro-batch that fits: 1 (same accumulation steps); largest sequence: 3278\n\
         to make it fit"
    ), "{out}");
    // `--overhead` is the default now: old commands print the same.
    assert_eq!(qlora_with(&["--overhead"]).1, out);
    // One flag turns it off: the tensors' peak alone fits, as before.
    let (code, off, _) = qlora_with(&["--no-overhead"]);
    assert_eq!(code, 0);
    assert!(
        off.contains(
            "gpu: GeForce RTX 4090, fits: the step needs 25.1 GB of its 25.8 GB (0.7 GB to spare)"
        ),
        "{off}"
    );
    assert!(!off.contains("overhead_gb"), "{off}");
    // Expandable segments: 5 % fragmentation instead of 15 %; still too much.
    let es = qlora_with(&["--expandable-segments"]).1;
    assert!(es.contains("fragmentation 1.25)"), "{es}");
    assert!(
        es.contains("does not fit by 1.4 GB: the step needs 27.2 GB"),
        "{es}"
    );
    // The size flags still apply, and contradicting flags are refused.
    assert!(qlora_with(&[
        "--fragmentation",
        "0",
        "--cuda-context",
        "0",
        "--workspaces",
        "0"
    ])
    .1
    .contains("fits: the step needs 25.1 GB"));
    assert_eq!(qlora_with(&["--no-overhead", "--fragmentation", "5"]).0, 2);
}

#[test]
fn qlora_json_needs_the_peak_plus_its_overhead() {
    let (code, out, _) = qlora_with(&["--json"]);
    assert_eq!(code, 0);
    let r: membudget::report::DetailedReport = serde_json::from_str(&out).unwrap();
    let (o, fit) = (r.overhead.unwrap(), r.fit.unwrap());
    assert!(!fit.fits);
    assert_eq!(r.peak_with_overhead, Some(fit.need));
    assert!(fit.need.abs_diff(r.peak + o.total) <= 1);
    // 15 % of what PyTorch's allocator holds: the paged state (a few MB of
    // 8-bit moments here) is outside it.
    let paged = r.peak_paged_state.unwrap();
    assert!(paged > 0 && paged < 100_000_000);
    let allocated = r.peak - paged;
    assert!(
        o.fragmentation
            .abs_diff((0.15 * allocated as f64).round() as u64)
            <= 1
    );
    // max_memory_reserved: the allocated tensors plus the fragmentation.
    let reserved = r.peak_reserved_by_pytorch.unwrap();
    assert!(reserved.abs_diff(allocated + o.fragmentation) <= 1);
    assert!(reserved < fit.need && fit.need > fit.capacity && r.peak < fit.capacity);
}

/// `--quant-path`: in the JSON inputs when not PEFT's, refused without a
/// quantized base, set by `--trainer` for the trainers that hold their
/// base another way (torchtune: torchao; litgpt: bitsandbytes), and the
/// bf16 paths need less than PEFT's fp32 casts.
#[test]
fn quant_path_flag_json_trainer_and_refusal() {
    let base = [
        "--model",
        "llama-3.1-8b",
        "--seq",
        "2048",
        "--precision",
        "bf16",
        "--lora-rank",
        "16",
        "--quant-base",
        "nf4",
        "--json",
    ];
    let total = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let (code, out, err) = membudget(&args);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        (
            v["bytes"]["total"].as_f64().unwrap(),
            v["inputs"]["quant_path"].clone(),
        )
    };
    let (peft, none) = total(&[]);
    assert!(none.is_null());
    let (bnb, name) = total(&["--quant-path", "bnb"]);
    assert_eq!(name, "bnb");
    assert!(bnb < 0.8 * peft, "{bnb} {peft}");
    let (_, name) = total(&["--trainer", "torchtune"]);
    assert_eq!(name, "torchao");
    let (_, name) = total(&["--trainer", "litgpt"]);
    assert_eq!(name, "bnb");
    let (code, _, err) = membudget(&[
        "--model",
        "llama-3.1-8b",
        "--lora-rank",
        "16",
        "--quant-path",
        "bnb",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--quant-path needs --quant-base"), "{err}");
}

/// Megatron-Core's overlaps are on by default; each `--no-…` flag shows the
/// collective it hid: the tensor-parallel and data-parallel parts grow by
/// what `time.parts.hidden` said was hidden, and the step by as much.
#[test]
fn megatron_overlap_flags_expose_what_was_hidden() {
    let base = [
        "--model",
        "llama-3.1-8b",
        "--dp",
        "8",
        "--tp",
        "2",
        "--sp",
        "--batch",
        "16",
        "--gpu",
        "h100-sxm",
        "--json",
    ];
    let json = |args: &[&str]| {
        let (code, out, err) = membudget(args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let on = json(&base);
    let mut args = base.to_vec();
    args.extend(["--no-tp-comm-overlap", "--no-overlap-grad-reduce"]);
    let off = json(&args);
    let p = |d: &serde_json::Value, k: &str| d["time"]["parts"][k].as_f64().unwrap();
    let hidden = |d: &serde_json::Value, k: &str| d["time"]["hidden"][k].as_f64().unwrap();
    assert!(hidden(&on, "tensor_parallel") > 0.0);
    assert_eq!(hidden(&off, "tensor_parallel"), 0.0);
    let tp_sum = p(&on, "tensor_parallel") + hidden(&on, "tensor_parallel");
    assert!((p(&off, "tensor_parallel") / tp_sum - 1.0).abs() < 1e-9);
    assert!(p(&off, "data_parallel") > p(&on, "data_parallel"));
    assert!(off["time"]["step_s"].as_f64() > on["time"]["step_s"].as_f64());
}

/// `--fp8-param` (Megatron's `--fp8-param-gather`): refused in words (exit
/// 2) without Transformer Engine's fp8, Megatron or its distributed
/// optimizer; written in `--json`'s inputs only when on; the bf16 copy of
/// the layers' linear weights gone from the params (Llama 3.1 8B: 2 ·
/// 6,979,321,856 bytes).
#[test]
fn fp8_param_is_checked_and_priced() {
    let base = [
        "--model",
        "llama-3.1-8b",
        "--dp",
        "8",
        "--zero",
        "1",
        "--seq",
        "8192",
        "--batch",
        "64",
        "--micro-batch",
        "1",
        "--json",
    ];
    let with = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        membudget(&args)
    };
    for (extra, says) in [
        (&["--fp8-param"][..], "--fp8 te or te-mxfp8"),
        (
            &["--fp8-param", "--fp8", "tensorwise"][..],
            "--fp8 te or te-mxfp8",
        ),
        (
            &["--fp8-param", "--fp8", "te", "--zero", "0"][..],
            "--zero 1 or 2",
        ),
        (
            &[
                "--fp8-param",
                "--fp8",
                "te",
                "--framework",
                "ddp",
                "--zero",
                "0",
            ][..],
            "--framework megatron",
        ),
    ] {
        let (code, _, err) = with(extra);
        assert_eq!(code, 2, "{extra:?}");
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    let json =
        |extra: &[&str]| -> serde_json::Value { serde_json::from_str(&with(extra).1).unwrap() };
    let (off, on) = (
        json(&["--fp8", "te"]),
        json(&["--fp8", "te", "--fp8-param"]),
    );
    assert!(off["inputs"].get("fp8_param").is_none());
    assert_eq!(on["inputs"]["fp8_param"], true);
    let params = |v: &serde_json::Value| v["bytes"]["params"].as_f64().unwrap();
    assert_eq!(params(&off) - params(&on), 2.0 * 6_979_321_856.0);
}

/// `--recompute-modules`: Megatron's names; the JSON inputs list the
/// output-discarding ones (absent without), `core_attn` is `--recompute
/// selective` and refused beside another `--recompute`, a module not
/// priced is refused by name, and a module that changes nothing says so.
#[test]
fn recompute_modules_flag_json_and_refusals() {
    let base = [
        "--model",
        "qwen3-30b-a3b",
        "--seq",
        "4096",
        "--ep",
        "8",
        "--dp",
        "8",
    ];
    let run = |extra: &[&str]| membudget_with(&base, extra);
    let json = |extra: &[&str]| json_with(&base, extra);
    let off = json(&[]);
    assert!(off["inputs"]["recompute_modules"].is_null());
    let on = json(&["--recompute-modules", "core_attn,moe_act,layernorm"]);
    assert_eq!(
        on["inputs"]["recompute_modules"],
        serde_json::json!(["layernorm", "moe_act"])
    );
    assert_eq!(on["inputs"]["recompute"], "selective");
    let act = |v: &serde_json::Value| v["bytes"]["activations"].as_f64().unwrap();
    assert!(act(&on) < act(&off), "{} {}", act(&on), act(&off));
    let (code, _, err) = run(&["--recompute", "full", "--recompute-modules", "core_attn"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("core_attn is --recompute selective, not full"),
        "{err}"
    );
    let (code, _, err) = run(&["--recompute-modules", "mhc"]);
    assert_eq!(code, 2);
    assert!(err.contains("'mhc' is not priced"), "{err}");
    let (code, out, err) =
        membudget(&["--model", "llama-3.1-8b", "--recompute-modules", "moe_act"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(
            "# note: moe_act recomputes the routed experts' activation: the model has no experts"
        ),
        "{out}"
    );
}

/// NVIDIA's DeepSeek-V3 recipes on GB200 (PP 4 × VP 4, EP 64) and B200
/// (PP 16, EP 8), MXFP8 with FP8 primary weights, fit their cards once
/// their `recompute_modules=["mla_up_proj"]` is priced, and did not
/// before (Megatron-Bridge's `deepseek_workload_base_configs.py` at
/// df0289c1; docs/steptime.md, "Megatron-Core's recomputed modules").
#[test]
fn deepseek_v3_recipes_fit_with_their_recomputed_modules() {
    let fits = |layout: &[&str], modules: &[&str]| {
        let base = [
            "--model",
            "deepseek-v3",
            "--seq",
            "4096",
            "--micro-batch",
            "1",
            "--batch",
            "4096",
            "--zero",
            "1",
            "--fp8",
            "te-mxfp8",
            "--fp8-param",
            "--json",
        ];
        let args: Vec<&str> = base.iter().chain(layout).chain(modules).copied().collect();
        let (code, out, err) = membudget(&args);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["fit"]["fits"].as_bool().unwrap()
    };
    let gb200 = [
        "--pp",
        "4",
        "--vp",
        "4",
        "--first-stage-layers",
        "16",
        "--last-stage-layers",
        "13",
        "--dp",
        "64",
        "--ep",
        "64",
        "--gpu",
        "gb200",
    ];
    let b200 = [
        "--pp",
        "16",
        "--first-stage-layers",
        "4",
        "--last-stage-layers",
        "1",
        "--dp",
        "16",
        "--ep",
        "8",
        "--gpu",
        "b200",
    ];
    for layout in [&gb200[..], &b200[..]] {
        assert!(!fits(layout, &[]), "{layout:?}");
        assert!(
            fits(layout, &["--recompute-modules", "mla_up_proj"]),
            "{layout:?}"
        );
    }
}

/// A step over the card only by the allocator's fragmentation band says it
/// may run at the card's edge, with what it needs without the band
/// (`fit.edge` in the JSON): NVIDIA's Llama 3 70B recipe on GB200 with its
/// 40 offloaded layers, which ran. With 20 layers its tensors alone
/// overflow, and nothing is said.
#[test]
fn a_step_over_by_the_band_alone_may_run_at_the_edge() {
    let run = |layers: &str, json: bool| {
        let mut args = vec![
            "--model",
            "llama-3.1-70b",
            "--seq",
            "8192",
            "--micro-batch",
            "2",
            "--batch",
            "128",
            "--dp",
            "64",
            "--zero",
            "3",
            "--fp8",
            "te",
            "--fp8-param",
            "--gpu",
            "gb200",
            "--offload-layers",
            layers,
        ];
        if json {
            args.push("--json");
        }
        let (code, out, err) = membudget(&args);
        assert_eq!(code, 0, "{err}");
        out
    };
    let text = run("40", false);
    assert!(
        text.contains("does not fit by 24.0 GB: the step needs 223.7 GB, the card has 199.7 GB; without the allocator's fragmentation band it needs 194.7 GB, so it may run at the card's edge"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&run("40", true)).unwrap();
    let (edge, need) = (
        v["fit"]["edge"].as_f64().unwrap(),
        v["fit"]["need"].as_f64().unwrap(),
    );
    assert!(edge < 199.7e9 && need > 199.7e9, "{edge} {need}");
    assert!(!run("20", false).contains("card's edge"));
    let v: serde_json::Value = serde_json::from_str(&run("20", true)).unwrap();
    assert!(v["fit"].get("edge").is_none());
}

/// `--overlap-moe-expert-parallel-comm` (alias `--moe-a2a-overlap`):
/// Megatron-Core's combined schedule hides part of the expert
/// all-to-alls, the JSON says how much (`time.hidden.expert_parallel`) and
/// names it on (`inputs.overlaps_on`); what Megatron-Core refuses
/// (`TransformerConfig.__post_init__`) the command line refuses, saying
/// what it needs, and another framework refuses the flag.
#[test]
fn moe_a2a_overlap_flag_json_and_refusals() {
    let base = [
        "--model",
        "qwen3-30b-a3b",
        "--seq",
        "4096",
        "--batch",
        "128",
        "--micro-batch",
        "1",
        "--dp",
        "16",
        "--ep",
        "16",
        "--gpu",
        "h100-sxm",
    ];
    let run = |extra: &[&str]| membudget_with(&base, extra);
    let json = |extra: &[&str]| json_with(&base, extra);
    let off = json(&[]);
    let on = json(&["--moe-a2a-overlap"]);
    assert!(off["inputs"]["overlaps_on"].is_null());
    assert_eq!(on["inputs"]["overlaps_on"], serde_json::json!(["moe_a2a"]));
    let f = |v: &serde_json::Value, k: &str, p: &str| v["time"][k][p].as_f64().unwrap();
    assert_eq!(f(&off, "hidden", "expert_parallel"), 0.0);
    let hidden = f(&on, "hidden", "expert_parallel");
    assert!(hidden > 0.0);
    let all = f(&off, "parts", "expert_parallel");
    let shown = f(&on, "parts", "expert_parallel");
    assert!(
        (shown + hidden - all).abs() < 1e-9 * all,
        "{shown} {hidden} {all}"
    );
    for (extra, words) in [
        (
            &["--ep", "1"][..],
            "needs expert parallelism: --ep 2 or more",
        ),
        (&["--recompute", "full"], "runs without full recomputation"),
        (
            &["--ep", "8", "--dp", "8", "--pp", "2"],
            "needs interleaving with a pipeline: --vp 2 or more",
        ),
        (
            &["--recompute-modules", "moe"],
            "runs without the moe module's recomputation",
        ),
        (
            &["--framework", "fsdp2", "--zero", "3"],
            "needs --framework megatron",
        ),
    ] {
        let (code, _, err) = run(&[extra, &["--overlap-moe-expert-parallel-comm"]].concat());
        assert_eq!(code, 2, "{extra:?}");
        assert!(err.contains(words), "{extra:?}: {err}");
    }
}

/// A Megatron GPT that is not Llama-shaped (Nemotron-4): priced under
/// Megatron's kernels, refused in words under `transformers`' GPT-2 modules,
/// which have no grouped-query attention; `--positions` is the gpt2
/// shape's alone; the shape flags give the preset to the parameter.
#[test]
fn a_megatron_gpt_shape_is_priced_fused_and_refused_under_hf() {
    let (code, out, err) = membudget(&["--model", "nemotron-4-15b", "--seq", "4096"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("15630217216 parameters"), "{out}");
    let (code, _, err) = membudget(&["--model", "nemotron-4-15b", "--impl", "hf"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("transformers' GPT-2 has no grouped-query attention"),
        "{err}"
    );
    let (code, _, err) = membudget(&["--model", "llama-3.1-8b", "--positions", "4096"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the llama family's are rotary (positions 0)"),
        "{err}"
    );
    // The same refusal for a link that gives a llama shape learned rows.
    let link = membudget::url::decode("mode=detailed&model=llama-3.1-8b&pos=4096");
    let refused = membudget::detailed::estimate(&link.state.detailed_config()).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("the llama family's are rotary (positions 0)"),
        "{refused}"
    );
    let shape = [
        "--arch",
        "gpt2",
        "--layers",
        "32",
        "--hidden",
        "6144",
        "--heads",
        "48",
        "--kv-heads",
        "8",
        "--vocab",
        "256000",
        "--positions",
        "0",
        "--untie-embeddings-and-output-weights",
        "--seq",
        "4096",
        "--json",
    ];
    let (preset, own) = (
        json_with(&["--model", "nemotron-4-15b", "--seq", "4096"], &[]),
        json_with(&shape[..shape.len() - 1], &[]),
    );
    assert_eq!(own["inputs"]["shape"]["preset"], "nemotron-4-15b");
    assert_eq!(own["bytes"], preset["bytes"]);
    assert_eq!(own["parameters"], preset["parameters"]);
}

/// A sequence longer than the model's learned positions is priced as given
/// with a note that no trainer runs it; within the table, no note.
#[test]
fn a_sequence_past_the_learned_positions_is_noted() {
    let (code, _, err) = membudget(&["--model", "gpt2"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("the model has 1,024 learned positions, fewer than the 2,048-token sequence"),
        "{err}"
    );
    let (code, _, err) = membudget(&["--model", "gpt3-175b", "--seq", "2048"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("learned positions"), "{err}");
}
