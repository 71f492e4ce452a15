//! The page's trainer file and trainer choice (`src/from_page.rs`): a
//! reading applied to the page gives the configuration the command line
//! prices for the same flags over the page's settings; the page's fragment
//! is `--emit`'s; what the page cannot set is named; errors are words.
#![cfg(not(target_arch = "wasm32"))]

use clap::Parser;
use membudget::cli::Args;
use membudget::detailed::trainers::{self, choice::TRAINERS};
use membudget::from_page::{self, fragment, on_page, Applied};
use membudget::number::std_to_f64;
use membudget::state::{GpuCapacity, Mode, PageState, Unit};
use membudget::url::{decode, encode};
use std::path::Path;

fn read_file(state: &PageState, file: &str, text: &str) -> Result<Applied, String> {
    from_page::read_file(state, file, text, std_to_f64)
}

fn choose_trainer(state: &PageState, trainer: &str) -> Option<Applied> {
    from_page::choose_trainer(state, trainer, std_to_f64)
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/trainers");

/// The command line's configuration for the page's default settings
/// followed by `flags` (later flags override, as `--from`'s are overridden
/// by the user's): the batch is left to the flags when they size it, as
/// the command line computes it from the micro-batch, accumulation and GPUs.
fn cli_config(flags: &[String]) -> membudget::detailed::DetailedConfig {
    let sized = flags.iter().any(|f| {
        [
            "--micro-batch",
            "--grad-accum",
            "--nproc-per-node",
            "--batch",
        ]
        .contains(&f.as_str())
    });
    let mut argv: Vec<String> = [
        "membudget",
        "--model",
        "llama-2-7b",
        "--seq",
        "2048",
        "--gpu-memory",
        "80",
    ]
    .map(String::from)
    .to_vec();
    if !sized {
        argv.extend(["--batch".into(), "4".into()]);
    }
    argv.extend(flags.iter().cloned());
    let args = Args::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    args.detailed_config()
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
        .0
}

/// A reading's flags that the page sets.
fn page_flags(reading: &trainers::Reading) -> Vec<String> {
    reading
        .out
        .set
        .iter()
        .filter(|s| on_page(s.flag))
        .flat_map(|s| {
            std::iter::once(s.flag.to_string()).chain((!s.arg.is_empty()).then(|| s.arg.clone()))
        })
        .collect()
}

/// The default page on an 80 GiB card (a vLLM share needs a card).
fn on_80gib() -> PageState {
    PageState {
        gpu: Some(GpuCapacity {
            amount: 80.0,
            unit: Unit::Gib,
        }),
        ..PageState::default()
    }
}

/// Every fixture of each format, dropped on the default page, gives the
/// command line's configuration for the same settings; the address keeps
/// it (decoding the page's address gives the same state).
#[test]
fn each_fixture_on_the_page_is_the_command_lines_configuration() {
    let mut files: Vec<_> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 13, "{files:?}");
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let reading = trainers::read(&name, &text).unwrap();
        let page = read_file(&on_80gib(), &name, &text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(page.state.mode, Mode::Detailed);
        let flags = page_flags(&reading);
        let want = cli_config(&flags);
        let got = page.state.detailed_config();
        assert_eq!(got, want, "{name}: {flags:?}");
        assert_eq!(decode(&encode(&page.state)).state, page.state, "{name}");
        assert!(
            page.said.starts_with(&trainers::printout(&name, &reading)),
            "{name}"
        );
        for s in reading.out.set.iter().filter(|s| !on_page(s.flag)) {
            assert!(
                page.said
                    .contains(&format!("not on the page: {} = {}", s.key, s.value)),
                "{name}: {}",
                s.flag
            );
        }
    }
}

/// Each trainer's defaults on the page are the command line's
/// `--trainer`'s, with and without LoRA; the address names the trainer.
#[test]
fn each_trainer_on_the_page_is_the_command_lines() {
    for lora in [false, true] {
        for t in TRAINERS {
            let mut start = PageState::default();
            if lora {
                start.detailed.lora_rank = Some(8);
            }
            let page = choose_trainer(&start, t).unwrap();
            assert_eq!(page.state.detailed.trainer, Some(t));
            let mut argv = vec![
                "membudget".to_string(),
                "--trainer".into(),
                t.into(),
                "--model".into(),
                "llama-2-7b".into(),
                "--seq".into(),
                "2048".into(),
                "--batch".into(),
                "4".into(),
            ];
            if lora {
                argv.extend(["--lora-rank".into(), "8".into()]);
            }
            let os: Vec<std::ffi::OsString> = argv.iter().map(Into::into).collect();
            let args =
                membudget::from::with_from(Args::try_parse_from(&argv).unwrap(), &os).unwrap();
            let want = args.detailed_config().unwrap().0;
            assert_eq!(page.state.detailed_config(), want, "{t} lora {lora}");
            assert!(
                page.said
                    .starts_with(&format!("--trainer {t}: that trainer's defaults")),
                "{}",
                page.said
            );
            let query = encode(&page.state);
            assert!(query.contains(&format!("trainer={t}")), "{query}");
            assert_eq!(decode(&query).state, page.state);
        }
    }
    assert!(choose_trainer(&PageState::default(), "nemo").is_none());
}

/// The fragment is `--emit`'s for the same configuration; trainers with no
/// format and configurations a format cannot say are refused in words.
#[test]
fn the_fragment_is_emits() {
    let text = std::fs::read_to_string(Path::new(FIXTURES).join("torchtune_lora.yaml")).unwrap();
    let page = read_file(&PageState::default(), "torchtune_lora.yaml", &text).unwrap();
    let cfg = page.state.detailed_config();
    for (trainer, target) in [
        ("torchtune", "torchtune"),
        ("trl", "trl"),
        ("hf", "trl"),
        ("axolotl", "axolotl"),
        ("deepspeed", "deepspeed"),
    ] {
        let want = trainers::emit::emit(&cfg, target.parse().unwrap());
        assert_eq!(fragment(&cfg, trainer), want, "{trainer}");
    }
    let e = fragment(&cfg, "litgpt").unwrap_err();
    assert!(e.contains("litgpt has no file membudget writes"), "{e}");
    // Mixed precision cannot be said in a torchtune recipe.
    let e = fragment(&PageState::default().detailed_config(), "torchtune").unwrap_err();
    assert!(e.starts_with("--emit torchtune:"), "{e}");
}

/// Bad files and values are refused in words that name the key; the
/// state is left as it was (the caller keeps its own).
#[test]
fn bad_files_are_refused_in_words() {
    let s = PageState::default();
    let e = read_file(&s, "ds.json", "{\"zero_optimization\": {\"stage\": 7}}").unwrap_err();
    assert!(e.starts_with("ds.json: zero_optimization.stage"), "{e}");
    let e = read_file(&s, "ds.json", "{\"train_micro_batch_size_per_gpu\": 0}").unwrap_err();
    assert!(
        e.contains("train_micro_batch_size_per_gpu = 0 gives --micro-batch 0, which is refused"),
        "{e}"
    );
    let e = read_file(&s, "x.yaml", "a: [").unwrap_err();
    assert!(e.contains("not valid YAML"), "{e}");
    let e = read_file(&s, "x.toml", "[training]\nseq_len = \"long\"").unwrap_err();
    assert!(e.starts_with("x.toml: training.seq_len"), "{e}");
    let r = read_file(
        &s,
        "r.yaml",
        "base_model: someone/unknown-13b\nmicro_batch_size: 2\n",
    )
    .unwrap();
    assert!(
        r.said.contains("names the model 'someone/unknown-13b'"),
        "{}",
        r.said
    );
    assert_eq!(r.state.detailed.micro_batch, Some(2));
}

/// A `config.json` on the page (read by the readers' wasm, which hands the
/// page an address): the imported architecture, priced with transformers'
/// kernels, survives the address exactly, for every model of the fixtures.
#[test]
fn each_config_json_on_the_page_survives_the_address() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/configs/hub");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    let page = PageState {
        mode: Mode::Detailed,
        ..PageState::default()
    };
    for path in files {
        let json = std::fs::read_to_string(&path).unwrap();
        let want = membudget::detailed::import_config(&json).unwrap();
        let read = from_page::import_config_json(&page, &json)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(read.state.detailed.arch, want.arch, "{}", path.display());
        assert_eq!(
            read.state.detailed.profile,
            Some(membudget::detailed::Profile::Hf)
        );
        assert!(
            read.said
                .starts_with(&format!("Read as {}: ", want.model_type)),
            "{}",
            read.said
        );
        assert_eq!(
            decode(&encode(&read.state)).state,
            read.state,
            "{}",
            path.display()
        );
    }
    let bad = from_page::import_config_json(
        &page,
        r#"{"model_type": "llama", "num_hidden_layers": "32"}"#,
    );
    assert!(bad.unwrap_err().starts_with("num_hidden_layers: "));
}

/// Megatron-Core's recomputed modules reach the page from a Megatron-LM
/// line (`rmods` in the address, the boxes) and survive the address; a
/// module not priced (hyper-connections' `mhc`) is refused there.
#[test]
fn recomputed_modules_reach_the_page_and_its_address() {
    let text = std::fs::read_to_string(format!("{FIXTURES}/megatron_recompute.sh")).unwrap();
    let page = read_file(&on_80gib(), "megatron_recompute.sh", &text).unwrap();
    let m = page.state.detailed.recompute_modules;
    assert!(m.layernorm && m.moe_act && !m.mla_up_proj);
    let address = encode(&page.state);
    assert!(address.contains("rmods=layernorm%2Cmoe_act"), "{address}");
    assert_eq!(decode(&address).state, page.state);
    let bad = decode("mode=detailed&rmods=mhc");
    assert!(
        bad.ignored.iter().any(|i| i.key == "rmods"),
        "{:?}",
        bad.ignored
    );
}

/// Megatron-LM's offloaded first layers (`--cpu-offloading-num-layers`)
/// reach the page (`offlayers` in the address, the count under Offload)
/// and survive the address.
#[test]
fn offloaded_layers_reach_the_page_and_its_address() {
    let text = std::fs::read_to_string(format!("{FIXTURES}/megatron_offload.sh")).unwrap();
    let page = read_file(&on_80gib(), "megatron_offload.sh", &text).unwrap();
    let o = page.state.detailed.offload;
    assert!(o.activations && o.activation_layers == 8, "{o:?}");
    let address = encode(&page.state);
    assert!(address.contains("offlayers=8"), "{address}");
    assert_eq!(decode(&address).state, page.state);
}

/// Megatron-LM's `--overlap-moe-expert-parallel-comm` reaches the page
/// (`ovmoe` in the address, the Megatron overlap box) and survives the
/// address; a line without it leaves the overlap off, as Megatron-Core's
/// default.
#[test]
fn the_a2a_overlap_reaches_the_page_and_its_address() {
    let line = |extra: &str| {
        format!(
            "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 \
             --ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention \
             --num-query-groups 8 --vocab-size 32000 --swiglu \
             --seq-length 4096 --micro-batch-size 1 --global-batch-size 32 --bf16 \
             --num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 8 {extra}"
        )
    };
    let on = read_file(
        &on_80gib(),
        "a2a.sh",
        &line("--overlap-moe-expert-parallel-comm"),
    )
    .unwrap();
    assert!(on.state.detailed.overlap.moe_a2a);
    let address = encode(&on.state);
    assert!(address.contains("ovmoe=1"), "{address}");
    assert_eq!(decode(&address).state, on.state);
    let off = read_file(&on_80gib(), "plain.sh", &line("")).unwrap();
    assert!(!off.state.detailed.overlap.moe_a2a);
    assert!(!encode(&off.state).contains("ovmoe"));
}
