//! `--emit FORMAT` round trip: a configuration written as a trainer's file
//! and read back with `--from` is the same configuration (for every
//! setting; the kernel profile, which the HF trainers' readers set to `hf`,
//! and the GPUs per node, which `--nproc-per-node` sets, aside).
#![cfg(not(target_arch = "wasm32"))]

use clap::Parser;
use membudget::cli::Args;
use membudget::detailed::trainers::emit::{emit, Target};
use membudget::detailed::DetailedConfig;
use membudget::from::with_from;
use proptest::prelude::*;
use std::ffi::OsString;

/// The configuration the flags describe, `--from` applied.
fn config(flags: &[String]) -> Result<DetailedConfig, String> {
    let argv: Vec<OsString> = std::iter::once("membudget".to_string())
        .chain(flags.iter().cloned())
        .map(OsString::from)
        .collect();
    let args = Args::try_parse_from(&argv).map_err(|e| e.to_string())?;
    let args = with_from(args, &argv)?;
    let (cfg, _) = args.detailed_config()?;
    membudget::detailed::estimate(&cfg).map_err(|e| e.to_string())?;
    Ok(cfg)
}

/// Writes `cfg` as `target`, reads it back, and compares. `Ok(false)` when
/// the configuration is not one the format (or the model) takes.
fn round_trip(flags: &[String], target: Target) -> Result<bool, TestCaseError> {
    let Ok(a) = config(flags) else {
        return Ok(false);
    };
    let Ok(text) = emit(&a, target) else {
        return Ok(false);
    };
    let dir = std::env::temp_dir().join(format!("membudget-emit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!(
        "{:?}-{}.{}",
        target,
        std::thread::current()
            .name()
            .unwrap_or("t")
            .replace("::", "-"),
        target.extension()
    ));
    std::fs::write(&file, &text).unwrap();
    let mut back = vec!["--from".to_string(), file.display().to_string()];
    if target == Target::DeepSpeed {
        // A DeepSpeed config names no model, sequence or checkpointing:
        // the training script does.
        let p = membudget::detailed::PRESETS
            .iter()
            .find(|p| p.arch == a.arch)
            .unwrap();
        back.extend([
            "--model".into(),
            p.name.to_string(),
            "--seq".into(),
            a.seq.to_string(),
        ]);
        back.extend(["--recompute".into(), a.recompute.name().to_string()]);
    }
    if target != Target::Megatron {
        // The launcher's GPU count is not in these files.
        back.extend(["--nproc-per-node".into(), a.gpus().to_string()]);
    }
    let b = config(&back).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    let mut b2 = b;
    b2.profile = a.profile;
    b2.offload.gpus_per_node = a.offload.gpus_per_node;
    if target == Target::Megatron {
        inapplicable_overlaps(&a, &mut b2)?;
    }
    prop_assert_eq!(a, b2, "{:?}\n{}", target, text);
    Ok(true)
}

/// Megatron-LM takes `--overlap-param-gather` only with the distributed
/// optimizer and `--tp-comm-overlap` only with sequence parallelism at tp
/// 2 or more: elsewhere neither is written nor read, and it moves no
/// figure. `b`'s such overlaps are set to `a`'s once the step times with
/// either agree (on 8 H100s a node).
fn inapplicable_overlaps(a: &DetailedConfig, b: &mut DetailedConfig) -> Result<(), TestCaseError> {
    use membudget::detailed::time::hardware::gpu;
    use membudget::detailed::time::steptime::{step_time, Cluster, Efficiency};
    let p = &a.parallel;
    let mut other = *a;
    if p.zero != 1 {
        other.overlap.param_gather = b.overlap.param_gather;
    }
    if !(p.sp && p.tp > 1) {
        other.overlap.tp_comm = b.overlap.tp_comm;
    }
    let h100 = Cluster::new(gpu("h100-sxm").unwrap(), 8);
    let eff = Efficiency::for_gpu(&h100.gpu);
    prop_assert_eq!(step_time(a, &h100, &eff), step_time(&other, &h100, &eff));
    b.overlap = if other.overlap == b.overlap {
        a.overlap
    } else {
        b.overlap
    };
    Ok(())
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// One configuration per format that must write and read back.
#[test]
fn each_format_round_trips_a_typical_configuration() {
    let cases: &[(Target, &[&str])] = &[
        (
            Target::DeepSpeed,
            &[
                "--model",
                "llama-3.1-8b",
                "--framework",
                "deepspeed",
                "--zero",
                "3",
                "--dp",
                "8",
                "--micro-batch",
                "2",
                "--batch",
                "64",
                "--seq",
                "4096",
                "--recompute",
                "full",
                "--reduce-bucket-size",
                "2e8",
            ],
        ),
        (
            Target::Torchtune,
            &[
                "--model",
                "llama-3.1-8b",
                "--precision",
                "bf16",
                "--lora-rank",
                "16",
                "--lora-targets",
                "q,k,v,o,gate,up,down",
                "--lora-dtype",
                "bf16",
                "--lora-dropout",
                "0.05",
                "--loss",
                "chunked",
                "--quant-base",
                "nf4",
                "--quant-path",
                "torchao",
                "--micro-batch",
                "2",
                "--batch",
                "32",
                "--recompute",
                "full",
                "--seq",
                "2048",
            ],
        ),
        (
            Target::Axolotl,
            &[
                "--model",
                "mistral-7b",
                "--precision",
                "bf16",
                "--lora-rank",
                "8",
                "--lora-targets",
                "q,v",
                "--quant-base",
                "nf4",
                "--micro-batch",
                "4",
                "--batch",
                "8",
                "--optimizer",
                "paged-adamw",
                "--recompute",
                "full",
                "--offload-activations",
                "checkpoints",
            ],
        ),
        (
            Target::Trl,
            &[
                "--model",
                "qwen2.5-7b",
                "--precision",
                "bf16",
                "--lora-rank",
                "32",
                "--lora-targets",
                "all",
                "--micro-batch",
                "2",
                "--batch",
                "16",
                "--recompute",
                "full",
                "--seq",
                "1024",
            ],
        ),
        (
            Target::Torchtitan,
            &[
                "--model",
                "llama-3.1-8b",
                "--framework",
                "fsdp2",
                "--zero",
                "3",
                "--dp",
                "4",
                "--tp",
                "2",
                "--tp-plan",
                "loss-parallel",
                "--sp",
                "--micro-batch",
                "1",
                "--batch",
                "8",
                "--seq",
                "8192",
                "--recompute",
                "full",
            ],
        ),
        (
            Target::Megatron,
            &[
                "--model",
                "llama-3.1-8b",
                "--dp",
                "4",
                "--tp",
                "2",
                "--sp",
                "--pp",
                "2",
                "--zero",
                "1",
                "--micro-batch",
                "1",
                "--batch",
                "128",
                "--seq",
                "8192",
                "--recompute",
                "selective",
            ],
        ),
        // Async TP, torchtitan's compile.enable_async_tensor_parallel,
        // which torchtitan runs under compile.enable (both written).
        (
            Target::Torchtitan,
            &[
                "--model",
                "llama-3.1-8b",
                "--impl",
                "hf",
                "--compile",
                "--compile-scope",
                "layers-loss",
                "--framework",
                "fsdp2",
                "--zero",
                "3",
                "--dp",
                "4",
                "--tp",
                "2",
                "--tp-plan",
                "loss-parallel",
                "--sp",
                "--async-tp",
                "--micro-batch",
                "1",
                "--batch",
                "8",
                "--seq",
                "8192",
                "--recompute",
                "full",
            ],
        ),
        // Uneven pipeline splits: as Megatron's first/last stage layers,
        // and (the interleaved schedule's chunks not dividing 15) as
        // NVIDIA's recipe for Llama-3.1-405B writes them, the embedding
        // and the loss counted as layers.
        (
            Target::Megatron,
            &[
                "--model",
                "llama-3.1-8b",
                "--dp",
                "2",
                "--pp",
                "4",
                "--zero",
                "1",
                "--batch",
                "16",
                "--micro-batch",
                "1",
                "--first-stage-layers",
                "6",
                "--last-stage-layers",
                "10",
            ],
        ),
        (
            Target::Megatron,
            &[
                "--model",
                "llama-3.1-405b",
                "--tp",
                "4",
                "--sp",
                "--pp",
                "8",
                "--vp",
                "8",
                "--cp",
                "2",
                "--dp",
                "2",
                "--zero",
                "1",
                "--seq",
                "8192",
                "--batch",
                "64",
                "--micro-batch",
                "1",
                "--first-stage-layers",
                "15",
                "--last-stage-layers",
                "15",
            ],
        ),
        // FP8 primary weights: `--fp8-format hybrid --fp8-param-gather`.
        (
            Target::Megatron,
            &[
                "--model",
                "llama-3.1-8b",
                "--dp",
                "8",
                "--zero",
                "1",
                "--fp8",
                "te",
                "--fp8-param",
                "--seq",
                "8192",
                "--batch",
                "64",
                "--micro-batch",
                "1",
            ],
        ),
    ];
    for (target, flags) in cases {
        assert!(
            round_trip(&strings(flags), *target).unwrap(),
            "{target:?} did not write"
        );
    }
}

#[test]
fn what_a_format_cannot_say_is_refused() {
    let cfg = config(&strings(&["--model", "llama-3.1-8b"])).unwrap();
    for (target, want) in [
        (Target::DeepSpeed, "the framework must be deepspeed"),
        (Target::Torchtune, "torchtune trains in pure bf16 or fp32"),
        (Target::Torchtitan, "torchtitan shards with FSDP2"),
    ] {
        assert!(emit(&cfg, target).unwrap_err().contains(want), "{target:?}");
    }
    // FP8 primary weights are Megatron-LM's flag alone.
    let fp8 = config(&strings(&[
        "--model",
        "llama-3.1-8b",
        "--dp",
        "8",
        "--zero",
        "1",
        "--fp8",
        "te",
        "--fp8-param",
    ]))
    .unwrap();
    assert!(emit(&fp8, Target::Megatron)
        .unwrap()
        .contains(" --fp8-format hybrid --fp8-param-gather"));
    assert!(emit(&fp8, Target::Torchtitan)
        .unwrap_err()
        .contains("--fp8-param-gather"));
    let moe = config(&strings(&["--model", "mixtral-8x7b"])).unwrap();
    assert!(emit(&moe, Target::Megatron)
        .unwrap_err()
        .contains("only dense models"));
    // LoRA over an fp8 base, as Megatron-Bridge's fine-tuning recipes run
    // it: Megatron-LM's launch line has no adapters, and says that (not a
    // PEFT dtype rule).
    let lora = config(&strings(&[
        "--model",
        "llama-3.1-8b",
        "--dp",
        "8",
        "--zero",
        "1",
        "--fp8",
        "te",
        "--fp8-param",
        "--impl",
        "fused",
        "--lora-rank",
        "16",
        "--lora-dtype",
        "bf16",
    ]))
    .unwrap();
    assert!(emit(&lora, Target::Megatron)
        .unwrap_err()
        .contains("pretrain_gpt.py trains the whole model"));
}

fn pick(options: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    proptest::sample::select(options)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn deepspeed_round_trips(zero in 1u8..=3, offload in 0u8..3, precision in pick(&["mixed", "fp32"]),
                             micro in 1u64..4, accum in 1u64..4, dp in pick(&["1", "2", "8"]), bucket in pick(&["5e7", "2e8", "5e8"]),
                             recompute in pick(&["none", "full"])) {
        let dp: u64 = dp.parse().unwrap();
        let mut f = strings(&["--model", "llama-3.2-1b", "--framework", "deepspeed", "--precision", precision, "--reduce-bucket-size", bucket, "--recompute", recompute]);
        f.extend(["--zero".into(), zero.to_string(), "--dp".into(), dp.to_string(), "--micro-batch".into(), micro.to_string(), "--batch".into(), (micro * accum * dp).to_string()]);
        if offload >= 1 { f.push("--offload-optimizer".into()); }
        if offload == 2 && zero == 3 { f.push("--offload-params".into()); }
        prop_assume!(round_trip(&f, Target::DeepSpeed)?);
    }

    #[test]
    fn torchtune_round_trips(model in pick(&["llama-3.2-1b", "llama-3.1-8b", "qwen2.5-7b", "llama-2-7b"]), precision in pick(&["bf16", "fp32"]),
                             lora in 0u8..3, targets in pick(&["q,v", "q,k,v,o", "all", "q,v,gate,up,down"]),
                             optimizer in pick(&["adamw", "paged-adamw", "paged-adam8bit", "adam8bit"]), recompute in pick(&["none", "full"]),
                             offload in any::<bool>(), fsdp in any::<bool>(), micro in 1u64..4, accum in 1u64..4, seq in pick(&["512", "2048"]),
                             chunks in prop::option::of(1u64..=16), dropout in pick(&["0", "0.05"]), in_bwd in any::<bool>()) {
        let mut f = strings(&["--model", model, "--precision", precision, "--optimizer", optimizer, "--recompute", recompute, "--seq", seq]);
        let dp = if fsdp { 4 } else { 1 };
        if fsdp { f.extend(strings(&["--framework", "fsdp2", "--zero", "3", "--dp", "4"])); }
        if lora > 0 { f.extend(strings(&["--lora-rank", "16", "--lora-targets", targets, "--lora-dropout", dropout])); }
        // torchtune keeps the adapters in the model's dtype.
        if lora > 0 && precision == "bf16" { f.extend(strings(&["--lora-dtype", "bf16"])); }
        if let Some(n) = chunks { f.extend(["--loss".into(), "chunked".into(), "--loss-chunks".into(), n.to_string()]); }
        if in_bwd && accum == 1 && !fsdp && lora == 0 { f.push("--optimizer-in-backward".into()); }
        if !in_bwd && lora == 0 && chunks.is_none() && !offload { f.extend(strings(&["--compile", "--attention", "flash"])); }
        // torchtune's QLoRA is torchao's NF4Tensor.
        if lora == 2 { f.extend(strings(&["--quant-base", "nf4", "--quant-path", "torchao"])); }
        if offload && recompute == "full" { f.extend(strings(&["--offload-activations", "torchtune"])); }
        f.extend(["--micro-batch".into(), micro.to_string(), "--batch".into(), (micro * accum * dp).to_string()]);
        prop_assume!(round_trip(&f, Target::Torchtune)?);
    }

    #[test]
    fn hf_trainers_round_trip(model in pick(&["llama-3.2-1b", "mistral-7b", "qwen3-8b"]), precision in pick(&["mixed", "bf16", "fp32"]),
                              lora in 0u8..4, targets in pick(&["q,v", "all", "q,k,v,o"]),
                              optimizer in pick(&["adamw", "paged-adamw", "paged-adam8bit", "adam8bit", "sgd"]), recompute in pick(&["none", "full"]),
                              offload in any::<bool>(), fsdp in any::<bool>(), micro in 1u64..4, accum in 1u64..4, axolotl in any::<bool>(),
                              dropout in pick(&["0", "0.05", "0.1"]), liger in any::<bool>()) {
        let target = if axolotl { Target::Axolotl } else { Target::Trl };
        let mut f = strings(&["--model", model, "--precision", precision, "--optimizer", optimizer, "--recompute", recompute]);
        let dp = if fsdp && axolotl { 2 } else { 1 };
        if fsdp && axolotl { f.extend(strings(&["--framework", "fsdp2", "--zero", "3", "--dp", "2"])); }
        if lora > 0 { f.extend(strings(&["--lora-rank", "8", "--lora-targets", targets, "--lora-dropout", dropout])); }
        if liger && !axolotl && lora == 0 { f.extend(strings(&["--impl", "liger"])); }
        if lora == 2 { f.extend(strings(&["--quant-base", "nf4"])); }
        if lora == 3 { f.extend(strings(&["--quant-base", if axolotl { "int8" } else { "nf4-nodq" }])); }
        if offload && recompute == "full" { f.extend(strings(&["--offload-activations", if axolotl { "checkpoints" } else { "torchtune" }])); }
        f.extend(["--micro-batch".into(), micro.to_string(), "--batch".into(), (micro * accum * dp).to_string()]);
        prop_assume!(round_trip(&f, target)?);
    }

    #[test]
    fn torchtitan_round_trips(dp in pick(&["1", "2", "4"]), tp in pick(&["1", "2"]), pp in pick(&["1", "2"]),
                              recompute in pick(&["none", "full", "selective-op"]), precision in pick(&["mixed", "fp32"]),
                              shard in any::<bool>(), reshard in any::<bool>(), micro in 1u64..3, accum in 1u64..3,
                              scope in pick(&["", "layers", "layers-loss"])) {
        let dpn: u64 = dp.parse().unwrap();
        let mut f = strings(&["--model", "llama-3.1-8b", "--framework", "fsdp2", "--zero", "3", "--dp", dp, "--tp", tp, "--pp", pp, "--recompute", recompute, "--precision", precision]);
        // torch.compile as torchtitan's compile.components say it.
        if !scope.is_empty() { f.extend(strings(&["--impl", "hf", "--compile", "--compile-scope", scope])); }
        if tp == "2" { f.extend(strings(&["--tp-plan", "loss-parallel", "--sp"])); }
        if shard && dpn == 4 { f.extend(strings(&["--dp-shard", "2"])); }
        if !reshard { f.extend(strings(&["--reshard-after-forward", "false"])); }
        f.extend(["--micro-batch".into(), micro.to_string(), "--batch".into(), (micro * accum * dpn).to_string()]);
        prop_assume!(round_trip(&f, Target::Torchtitan)?);
    }

    #[test]
    fn megatron_round_trips(model in pick(&["llama-3.1-8b", "llama-2-7b", "gpt2", "gpt3-175b", "nemotron-4-15b"]), dp in pick(&["1", "2", "8"]), tp in pick(&["1", "2", "4"]),
                            pp in pick(&["1", "2"]), zero in 0u8..2, sp in any::<bool>(), recompute in pick(&["none", "full", "selective"]),
                            precision in pick(&["mixed", "fp32"]), micro in 1u64..3, accum in 1u64..5, off in 0u8..8, fp8 in 0u8..3) {
        let dpn: u64 = dp.parse().unwrap();
        let mut f = strings(&["--model", model, "--dp", dp, "--tp", tp, "--pp", pp, "--recompute", recompute, "--precision", precision]);
        f.extend(["--zero".into(), zero.to_string()]);
        // Transformer Engine's fp8, and its FP8 primary weights
        // (`--fp8-format hybrid --fp8-param-gather`).
        if fp8 >= 1 { f.extend(strings(&["--fp8", "te"])); }
        if fp8 == 2 { f.push("--fp8-param".into()); }
        if sp && tp != "1" { f.push("--sp".into()); }
        // Megatron-Core's overlaps, any of them off (on by default).
        for (bit, flag) in ["--no-overlap-grad-reduce", "--no-overlap-param-gather", "--no-tp-comm-overlap"].iter().enumerate() {
            if off & (1 << bit) != 0 { f.push(flag.to_string()); }
        }
        f.extend(["--micro-batch".into(), micro.to_string(), "--batch".into(), (micro * accum * dpn).to_string()]);
        prop_assume!(round_trip(&f, Target::Megatron)?);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A quantization path the trainer does not run is refused in words,
    /// never dropped: torchtune holds torchao's NF4Tensor, TRL and axolotl
    /// PEFT's prepared base.
    #[test]
    fn a_foreign_quant_path_is_refused(path in pick(&["peft", "bnb", "torchao", "fsdp-qlora"]),
                                       target in pick(&["torchtune", "trl", "axolotl"])) {
        let target: Target = target.parse().unwrap();
        let torchtune = target == Target::Torchtune;
        let mut flags = strings(&["--model", "llama-3.1-8b", "--precision", "bf16", "--lora-rank", "16",
                                  "--quant-base", "nf4", "--quant-path", path, "--recompute", "full",
                                  "--micro-batch", "1", "--batch", "1"]);
        // torchtune keeps its adapters in bf16, PEFT in fp32.
        if torchtune { flags.extend(strings(&["--lora-dtype", "bf16"])); }
        let cfg = config(&flags).unwrap();
        let own = if torchtune { "torchao" } else { "peft" };
        let emitted = emit(&cfg, target);
        if path == own {
            prop_assert!(emitted.is_ok(), "{:?}", emitted);
            prop_assert!(round_trip(&flags, target)?);
        } else {
            let e = emitted.unwrap_err();
            prop_assert!(e.contains(&format!("--quant-path {own}")), "{}", e);
        }
    }
}

/// Every preset is written into a `transformers` trainer's file as its hub
/// checkpoint, which the readers take back to the same preset; a preset
/// with no such checkpoint (Nemotron-4, GPT-3) is refused in words rather
/// than written under a name no hub holds.
#[test]
fn presets_are_written_as_their_hub_checkpoints() {
    use membudget::detailed::model::presets::PRESETS;
    use membudget::detailed::trainers::{emit::hub_checkpoints, models};
    let mut written = 0;
    for p in PRESETS {
        let cfg = config(&strings(&["--model", p.name, "--precision", "bf16"])).unwrap();
        let out = emit(&cfg, Target::Axolotl);
        let id = out.as_ref().ok().and_then(|f| {
            f.lines()
                .find_map(|l| l.strip_prefix("base_model: "))
                .map(str::to_string)
        });
        match id {
            Some(id) => {
                assert!(
                    hub_checkpoints().any(|c| c == (p.name, id.as_str())),
                    "{id}"
                );
                assert_eq!(models::hub(&id), Some(p.name), "{id}");
                written += 1;
            }
            None => {
                let e = out.unwrap_err();
                assert!(
                    e.contains("has no checkpoint that transformers loads"),
                    "{e}"
                );
                let e = emit(&cfg, Target::Trl).unwrap_err();
                assert!(e.contains(&format!("{} has no checkpoint", p.name)), "{e}");
            }
        }
    }
    assert_eq!(
        written,
        hub_checkpoints().count(),
        "a hub entry names no preset"
    );
    assert_eq!(
        PRESETS.len() - written,
        3,
        "presets without a hub checkpoint"
    );
}

/// A Megatron launch line says every part of the shape where Megatron-LM's
/// defaults differ (LayerNorm, biases, learned positions, tied embeddings):
/// a Llama is written as NVIDIA's own Llama 3 scripts write it, and the
/// position table Megatron-LM requires is always there.
#[test]
fn a_megatron_line_says_what_megatron_would_build_otherwise() {
    let llama = config(&strings(&["--model", "llama-3.1-8b", "--seq", "8192"])).unwrap();
    let line = emit(&llama, Target::Megatron).unwrap();
    for flag in [
        " --swiglu",
        " --normalization RMSNorm",
        " --disable-bias-linear",
        " --untie-embeddings-and-output-weights",
        " --position-embedding-type rope",
        " --max-position-embeddings 8192",
    ] {
        assert!(line.contains(flag), "{flag}: {line}");
    }
    // GPT-2 is Megatron's defaults but its learned table's rows.
    let gpt2 = config(&strings(&["--model", "gpt2", "--seq", "1024"])).unwrap();
    let line = emit(&gpt2, Target::Megatron).unwrap();
    assert!(line.contains(" --max-position-embeddings 1024 "), "{line}");
    for flag in [
        "--swiglu",
        "--normalization",
        "--untie",
        "rope",
        "--disable-bias",
    ] {
        assert!(!line.contains(flag), "{flag}: {line}");
    }
}
