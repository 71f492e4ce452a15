//! Properties of the URL codec and the GPU-fit solver over random input.
#![cfg(not(target_arch = "wasm32"))]

use membudget::budget::{estimate, Field, TrainingConfig};
use membudget::detailed::{AttentionKernel, Overhead, Overlap, PRESETS};
use membudget::number::std_to_f64;
use membudget::state::{
    max_fitting, DetailedOptions, Exercise, GpuCapacity, Mode, PageState, Pinned, SweepAxis, Unit,
};
use membudget::url::{decode, decode_lesson, encode, encode_light};
use proptest::prelude::*;

use crate::common;
use common::any_config;

/// Detailed settings: a preset or a custom shape, and any options.
fn any_detailed() -> impl Strategy<Value = DetailedOptions> {
    (
        0..PRESETS.len(),
        proptest::option::of((1u64..=64, 1u64..=100_000)),
        common::any_precision(),
        common::any_optimizer(),
        any::<(bool, bool, bool, bool, bool)>(),
        common::any_recompute(),
        (1u64..=4096, 0u8..=3, 1u64..=512, 1u64..=256),
        (
            proptest::option::of(1u64..=4096),
            proptest::option::of(1u64..=1024),
            proptest::option::of((
                0.0f64..=1000.0,
                0.0f64..=1000.0,
                0.0f64..=1000.0,
                0.0f64..=100.0,
            )),
        ),
        (
            0usize..4,
            any::<(bool, bool, bool, bool)>(),
            1u64..=64,
            0usize..3,
            (1u64..=64, 1u64..=8),
        ),
        (
            0usize..5,
            any::<bool>(),
            1u64..=4096,
            any::<(bool, bool, bool)>(),
        ),
        (any::<bool>(), 0u64..=99, 0usize..5),
        (
            0..membudget::detailed::Framework::ALL.len(),
            0usize..3,
            0usize..4,
            proptest::option::of(prop::sample::select(
                membudget::detailed::trainers::choice::TRAINERS.to_vec(),
            )),
        ),
    )
        .prop_map(
            |(
                m,
                custom,
                precision,
                optimizer,
                (flash, dropout, sp, both, in_backward),
                recompute,
                (dp, zero, tp, pp),
                (micro, lora, overhead),
                (quant, (off_opt, off_params, off_acts, all_targets), gpn, objective, (ep, etp)),
                (loss, liger, chunks, (grad_reduce, param_gather, tp_comm)),
                (lora_bf16, lora_dropout, tp_plan),
                (framework, act_kind, quant_path, trainer),
            )| {
                let mut d = DetailedOptions {
                    arch: PRESETS[m].arch,
                    ..DetailedOptions::default()
                };
                if let Some((heads, ffn)) = custom {
                    d.arch.heads = heads;
                    d.arch.kv_heads = heads;
                    d.arch.ffn = ffn;
                }
                d.precision = precision;
                d.optimizer = optimizer;
                d.optimizer_in_backward = in_backward;
                d.attention = if flash {
                    AttentionKernel::Flash
                } else {
                    AttentionKernel::Eager
                };
                d.dropout = dropout;
                d.recompute = recompute;
                d.parallel.dp = dp;
                d.parallel.zero = zero;
                d.parallel.tp = tp;
                d.parallel.sp = sp;
                d.parallel.pp = pp;
                d.micro_batch = micro;
                d.lora_rank = lora;
                d.show_lesson = both;
                d.base_quant = ["none", "nf4", "nf4-nodq", "int8"][quant].parse().unwrap();
                d.quant_path = membudget::detailed::QuantPath::NAMES[quant_path]
                    .parse()
                    .unwrap();
                d.offload.optimizer = off_opt;
                d.offload.params = off_params;
                d.offload.activations = off_acts;
                d.offload.gpus_per_node = gpn;
                d.framework = membudget::detailed::Framework::ALL[framework].1;
                d.offload.activations_by = membudget::detailed::ActOffload::ALL[act_kind];
                d.objective = ["sft", "dpo", "dpo-precomputed"][objective]
                    .parse()
                    .unwrap();
                if all_targets {
                    d.lora_targets = "all".parse().unwrap();
                }
                d.lora_dtype = if lora_bf16 { "bf16" } else { "fp32" }.parse().unwrap();
                d.lora_dropout_percent = lora_dropout;
                d.parallel.ep = ep;
                d.parallel.etp = etp;
                d.parallel
                    .set_plan(membudget::detailed::TpPlan::ALL[tp_plan]);
                d.loss = [
                    None,
                    Some("full"),
                    Some("chunked"),
                    Some("liger"),
                    Some("cce"),
                ][loss]
                    .map(|l| l.parse().unwrap());
                d.liger = liger;
                if liger {
                    d.profile = Some(membudget::detailed::Profile::Hf);
                }
                d.loss_chunks = chunks;
                // An uneven pipeline split, drawn from the chunks' number
                // (the strategy's tuples are full).
                if chunks % 3 == 1 {
                    d.parallel.first_stage_layers = Some(chunks % 97 + 1);
                }
                if chunks % 5 == 2 {
                    d.parallel.last_stage_layers = Some(chunks % 89 + 1);
                }
                d.async_tp = chunks % 7 == 3;
                d.overlap = Overlap {
                    grad_reduce,
                    param_gather,
                    tp_comm,
                    moe_a2a: chunks % 13 == 4,
                };
                d.fp8_param = chunks % 11 == 5;
                d.trainer = trainer;
                d.overhead = overhead.map(|(ctx, ws, comm, frag)| Overhead {
                    cuda_context_gb: ctx,
                    workspaces_gb: ws,
                    communication_gb: comm,
                    fragmentation_percent: frag,
                });
                d
            },
        )
}

/// DeepSpeed with any of its settings (`dsbucket dsprefetch dsoverlap
/// dssubgroup dspersist`).
fn any_deepspeed() -> impl Strategy<Value = membudget::detailed::Framework> {
    (
        1_000u64..=10_000_000_000,
        0u64..=10_000_000_000,
        proptest::option::of(any::<bool>()),
        1_000u64..=10_000_000_000,
        0u64..=10_000_000_000,
    )
        .prop_map(|(bucket, prefetch, overlap, sub_group, persist)| {
            membudget::detailed::Framework::DeepSpeed {
                reduce_bucket_size: bucket,
                prefetch_bucket_size: prefetch,
                overlap_comm: overlap,
                sub_group_size: sub_group,
                param_persistence_threshold: persist,
            }
        })
}

fn any_state() -> impl Strategy<Value = PageState> {
    (
        any_lesson_state(),
        proptest::option::of(any_detailed()),
        proptest::option::of(any_deepspeed()),
        // The step time's question: tokens (1 to 10¹⁸) and a price.
        proptest::option::of(1.0f64..=1e18),
        proptest::option::of(0.0f64..=1e6),
        0u16..(1 << membudget::detailed::plan::diff::Lever::ALL.len()),
    )
        .prop_map(|(mut s, detailed, deepspeed, tokens, price, keep)| {
            s.tokens = tokens;
            s.price = price;
            if let Some(mut d) = detailed {
                s.mode = Mode::Detailed;
                if let Some(f) = deepspeed {
                    d.framework = f;
                }
                d.keep = membudget::detailed::plan::diff::Keep(keep);
                s.detailed = d;
                // A whole number of micro-batch × dp, as a state that
                // computes has (an address without one is repaired,
                // `addresses_open_or_are_repaired_with_a_message`).
                let cfg = s.detailed_config();
                let unit = cfg.micro() * cfg.parallel.dp.max(1);
                if unit <= 1 << 20 {
                    let batch = u64::from(s.config.batch);
                    s.config.batch = (batch / unit).max(1).saturating_mul(unit) as u32;
                }
            }
            s.normalized()
        })
}

fn any_lesson_state() -> impl Strategy<Value = PageState> {
    (
        any_config(),
        proptest::option::of(any_config()),
        proptest::option::of((0.001f64..=100_000.0, any::<bool>())),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        proptest::option::of(1u8..=2),
    )
        .prop_map(|(config, baseline, gpu, gib, seq, embed, ex)| PageState {
            config,
            baseline,
            gpu: gpu.map(|(amount, gib)| GpuCapacity {
                amount,
                unit: if gib { Unit::Gib } else { Unit::Gb },
            }),
            unit: if gib { Unit::Gib } else { Unit::Gb },
            sweep: if seq {
                SweepAxis::SeqLen
            } else {
                SweepAxis::Batch
            },
            embed,
            exercise: ex.and_then(Exercise::from_number),
            ..PageState::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(15_000))]

    #[test]
    fn url_round_trips(state in any_state()) {
        let query = encode(&state);
        let d = decode(&query);
        prop_assert!(d.ignored.is_empty(), "{query}: {:?}", d.ignored);
        prop_assert_eq!(d.state, state);
        prop_assert_eq!(decode(&format!("?{query}")).state, state);
    }

    /// A configuration pinned in detailed mode round-trips through the
    /// address (`dbase`) over any page in detailed mode, the page's own
    /// keys unchanged by it.
    #[test]
    fn pin_round_trips(state in any_state(), pinned in any_state()) {
        let mut state = state;
        state.mode = Mode::Detailed;
        let mut pinned = pinned;
        pinned.mode = Mode::Detailed;
        let mut state = state.normalized();
        let page = encode(&state);
        state.pin = Some(Pinned::of(&pinned));
        let query = encode(&state);
        prop_assert!(query.starts_with(&format!("{page}&dbase=")), "{query}");
        let d = decode(&query);
        prop_assert!(d.ignored.is_empty(), "{query}: {:?}", d.ignored);
        prop_assert_eq!(d.state, state, "{}", query);
    }

    /// Any `dbase` at all over a detailed page: no panic, and the pin
    /// read is one the detailed model answers or explains.
    #[test]
    fn any_pin_decodes(value in "[a-z0-9.*,-]{0,40}|\\PC{0,40}") {
        let query = format!("mode=detailed&model=llama-3.1-8b&dp=8&zero=1&dbase={}",
            form_urlencoded::byte_serialize(value.as_bytes()).collect::<String>());
        let d = decode(&query);
        let pin = d.state.pin.expect("a detailed page keeps its pin");
        prop_assert!(pin.config.validate_in(true).is_ok());
        let _ = membudget::detailed::estimate(&pin.over(&d.state).detailed_config());
    }

    /// Any query at all: no panic, and whatever was accepted is valid.
    #[test]
    fn any_query_decodes_to_a_valid_state(query in "[a-z=&%0-9.,eE+-]{0,60}|\\PC{0,60}") {
        let d = decode(&query);
        prop_assert!(d.state.config.validate_in(d.state.mode == Mode::Detailed).is_ok());
        if let Some(b) = d.state.baseline {
            prop_assert!(b.validate().is_ok());
        }
        if let Some(g) = d.state.gpu {
            prop_assert!(g.is_valid());
        }
        for i in &d.ignored {
            prop_assert!(i.value.chars().count() <= 40 && i.key.chars().count() <= 40);
        }
    }

    /// Keys with random values: each known key either applies or is
    /// reported, never both, never a panic.
    #[test]
    fn known_keys_apply_or_report(
        key in prop::sample::select(vec!["params", "batch", "seq", "hidden", "layers", "mixed", "base", "gpu", "unit", "sweep", "embed", "ex",
            "mode", "model", "arch", "heads", "kv", "ffn", "vocab", "tied", "pos", "qkvbias", "prec", "opt", "attn",
            "dropout", "recompute", "impl", "dp", "zero", "tp", "sp", "pp", "micro", "lora", "both", "loss", "lchunks", "keep", "trainer"]),
        value in "[0-9a-z.,-]{0,12}|llama-2-7b|gpt2|detailed|flash|selective|hf|bf16|adam8bit|liger|chunked|cce|optimizer[.]zero|torchtune|trl",
    ) {
        let d = decode(&format!("{key}={value}"));
        prop_assert!(d.ignored.len() <= 1);
        if d.ignored.len() == 1 {
            // Set aside, or repaired to the nearest value that computes
            // (a batch above the lesson's 1,024), and said.
            let mut want = PageState::default();
            if d.ignored[0].reason.ends_with(&format!("; using {}", d.state.config.batch)) {
                prop_assert_eq!(key, "batch");
                want.config.batch = d.state.config.batch;
            }
            prop_assert_eq!(d.state, want);
        }
        // Whatever was accepted, the detailed model answers or explains.
        if let Ok(b) = membudget::detailed::estimate(&d.state.detailed_config()) {
            prop_assert!(b.total.is_finite() && b.total > 0.0);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The solver's batch equals the largest that a scan of every batch
    /// finds fitting, using the page's own totals.
    #[test]
    fn max_batch_matches_brute_force(cfg in any_config(), cap_gb in 1.0f64..50_000.0) {
        let cap = cap_gb * 1e9;
        let brute = (1..=1024u32)
            .filter(|&b| estimate(&TrainingConfig { batch: b, ..cfg }).unwrap().total <= cap)
            .max();
        prop_assert_eq!(max_fitting(&cfg, Field::Batch, cap), brute);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn max_seq_matches_brute_force(cfg in any_config(), cap_gb in 1.0f64..50_000.0) {
        let cap = cap_gb * 1e9;
        let brute = (1..=131_072u32)
            .rev()
            .find(|&s| estimate(&TrainingConfig { seq_len: s, ..cfg }).unwrap().total <= cap);
        prop_assert_eq!(max_fitting(&cfg, Field::SeqLen, cap), brute);
    }
}

/// Exact boundaries: a capacity equal to a total fits; one byte less does not.
#[test]
fn fit_boundary_is_exact() {
    let cfg = TrainingConfig::default();
    let at = |b: u32| estimate(&TrainingConfig { batch: b, ..cfg }).unwrap().total;
    for b in [1, 4, 7, 100, 1024] {
        assert_eq!(max_fitting(&cfg, Field::Batch, at(b)), Some(b));
        if b > 1 {
            let just_under = at(b) - 1.0;
            assert_eq!(max_fitting(&cfg, Field::Batch, just_under), Some(b - 1));
        }
    }
}

/// The page's two fine-tuning recipes read back whole, compute, and fit
/// their GPUs by the step's peak.
#[test]
fn recipes_decode_compute_and_fit() {
    for (id, name, query) in membudget::state::RECIPES {
        let d = membudget::url::decode(query);
        assert!(d.ignored.is_empty(), "{id}: {:?}", d.ignored);
        let s = d.state;
        let cfg = s.detailed_config();
        let b = membudget::detailed::estimate(&cfg).unwrap_or_else(|e| panic!("{name}: {e}"));
        let t = membudget::detailed::memory::timeline(&cfg, &Default::default()).unwrap();
        let gpu = s.gpu.expect("a GPU").bytes();
        assert!(
            t.peak_bytes() < gpu,
            "{name}: peak {} of {gpu}",
            t.peak_bytes()
        );
        assert!(b.total > 0.0);
        // The QLoRA recipe names the card it is for, so the page prices
        // its step in time (a bare "24 GB" has no speeds).
        if id == "recipe-qlora" {
            assert_eq!(s.card, Some("rtx-4090"), "{id}");
        }
        // The README links the same address.
        assert!(
            include_str!("../README.md").contains(&format!("8080/?{query})")),
            "{id} in README"
        );
        // The address the page writes for it reads back the same.
        assert_eq!(
            membudget::url::decode(&membudget::url::encode(&s)).state,
            s,
            "{id}"
        );
    }
}

/// Applying a planner's change to the page gives the configuration the
/// planner priced, so the page then shows that row's figures.
#[test]
fn applying_a_planned_change_gives_its_configuration() {
    use membudget::detailed::plan::planner::make_it_fit;
    for query in [
        "mode=detailed&model=llama-3.1-8b&seq=8192&batch=1&gpu=80",
        "mode=detailed&model=llama-2-13b&seq=4096&batch=8&micro=4&dp=2&attn=eager&gpu=40",
        "mode=detailed&model=mistral-7b&seq=2048&batch=4&lora=16&gpu=24",
    ] {
        let s = membudget::url::decode(query).state;
        let from = s.detailed_config();
        let plan = make_it_fit(&from, s.gpu.unwrap().bytes(), None, None);
        assert!(!plan.changes.is_empty(), "{query}");
        for c in &plan.changes {
            let mut t = s;
            t.apply_change(&from, &c.cfg);
            assert_eq!(t.detailed_config(), c.cfg, "{query}: {}", c.name);
            // And the address keeps it.
            let back = membudget::url::decode(&membudget::url::encode(&t)).state;
            assert_eq!(
                back.detailed_config(),
                c.cfg,
                "{query}: {} via the address",
                c.name
            );
        }
    }
}

/// With a pipeline, the largest micro-batch that fits is solved with the
/// reader's accumulation steps, so the first stage keeps its micro-batches
/// in flight: that micro-batch fits, one more does not.
#[test]
fn largest_micro_batch_keeps_the_pipelines_micro_batches_in_flight() {
    use membudget::detailed::{preset, DetailedConfig};
    use membudget::state::{detailed_need, max_micro_batch};
    let mut cfg = DetailedConfig::new(preset("llama-3.1-70b").unwrap().arch, 4096, 32);
    cfg.attention = membudget::detailed::AttentionKernel::Flash;
    cfg.dropout = false;
    cfg.parallel.tp = 8;
    cfg.parallel.sp = true;
    cfg.parallel.pp = 4;
    cfg.micro_batch = Some(1);
    let capacity = 80.0 * (1u64 << 30) as f64;
    let acc = cfg.accumulation_steps();
    assert_eq!(acc, 32);
    let m = max_micro_batch(&cfg, capacity, None).unwrap();
    let at = |micro: u64| DetailedConfig {
        micro_batch: Some(micro),
        batch: micro * acc,
        ..cfg
    };
    assert!(detailed_need(&at(m), None).unwrap() <= capacity);
    assert!(detailed_need(&at(m + 1), None).unwrap() > capacity);
    // With one micro-batch per step the pipeline would hold one, not four:
    // the answer would be larger.
    let alone = DetailedConfig { batch: 1, ..cfg };
    assert!(max_micro_batch(&alone, capacity, None).unwrap() >= m);
}

/// Issue 38: the runtime overhead is counted by default, in the address
/// too. An address without `oh` (old links included) gets it; `oh=0`
/// leaves it out and round-trips; an old link's `oh=1` is the default, and
/// its sizes still apply.
#[test]
fn the_overhead_is_on_unless_the_address_says_oh_0() {
    let on = decode("?mode=detailed&model=llama-3.1-8b").state;
    assert_eq!(on.detailed.overhead, Some(Overhead::default()));
    assert!(!encode(&on).contains("oh"), "{}", encode(&on));
    let off = decode("?mode=detailed&model=llama-3.1-8b&oh=0").state;
    assert_eq!(off.detailed.overhead, None);
    assert!(encode(&off).ends_with("&oh=0"), "{}", encode(&off));
    assert_eq!(decode(&encode(&off)).state, off);
    let old = decode("?mode=detailed&model=llama-3.1-8b&oh=1&ohfrag=5").state;
    assert_eq!(
        old.detailed.overhead.map(|o| o.fragmentation_percent),
        Some(5.0)
    );
    assert_eq!(
        old.detailed.overhead,
        Some(membudget::detailed::Overhead::expandable_segments())
    );
    assert!(encode(&old).ends_with("&ohfrag=5"), "{}", encode(&old));
    // The lesson's address never carries it.
    assert!(!encode(&decode("?batch=8").state).contains("oh"));
}

/// A configuration the command line accepts, as its flags and as the
/// page's address: a preset, a sequence up to the detailed model's 2²⁰
/// tokens, micro-batch, dp, tp, ZeRO and a global batch up to the command
/// line's 2²⁰ sequences.
fn any_cli_setup() -> impl Strategy<Value = (String, String)> {
    (
        0..PRESETS.len(),
        1u64..=1 << 20,
        1u64..=64,
        prop::sample::select(vec![1u64, 2, 8, 64, 512]),
        prop::sample::select(vec![1u64, 2, 8]),
        0u8..=3,
        1u64..=1 << 20,
    )
        .prop_map(|(m, seq, micro, dp, tp, zero, k)| {
            let unit = micro * dp;
            let batch = (k / unit).max(1) * unit;
            let name = PRESETS[m].name;
            (
                format!("--model {name} --seq {seq} --batch {batch} --micro-batch {micro} --dp {dp} --tp {tp} --zero {zero}"),
                format!("mode=detailed&model={name}&seq={seq}&batch={batch}&micro={micro}&dp={dp}&tp={tp}&zero={zero}"),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// The page's limits are the command line's: every configuration the
    /// command line accepts opens on the page as the same configuration,
    /// with nothing set aside, and the address the page writes for it
    /// reads back the same.
    #[test]
    fn every_cli_configuration_opens_on_the_page((flags, query) in any_cli_setup()) {
        use clap::Parser;
        let args = membudget::cli::Args::try_parse_from(
            std::iter::once("membudget").chain(flags.split(' ')),
        )
        .unwrap();
        let Ok((cli, _)) = args.detailed_config() else { return Ok(()); };
        let d = decode(&query);
        prop_assert!(d.ignored.is_empty(), "{query}: {:?}", d.ignored);
        prop_assert_eq!(d.state.detailed_config(), cli, "{}", query);
        let again = decode(&encode(&d.state));
        prop_assert!(again.ignored.is_empty());
        prop_assert_eq!(again.state.detailed_config(), cli);
    }
}

/// The address: a global batch of 2,048 opens as 2,048 (the page
/// capped it at 1,024 and fell back to 4, which no micro-batch × dp
/// divides); the lesson holds its batch to 1,024 and says so; a batch that
/// micro-batch × dp does not divide is repaired to the nearest that it
/// does, and said, so the page computes.
#[test]
fn addresses_open_or_are_repaired_with_a_message() {
    let d = decode("?batch=2048&seq=8192&card=h100-sxm&mode=detailed&model=llama-3.1-70b&dp=8&tp=8&sp=1&zero=1&micro=1&recompute=full");
    assert!(d.ignored.is_empty(), "{:?}", d.ignored);
    assert_eq!(d.state.config.batch, 2048);
    assert!(membudget::detailed::estimate(&d.state.detailed_config()).is_ok());
    let d = decode("?batch=2048");
    assert_eq!(d.state.config.batch, 1024);
    assert_eq!(
        d.ignored[0].to_string(),
        "batch: the lesson's batch is at most 1024 (the detailed model's 1048576); using 1024"
    );
    let d = decode("?mode=detailed&model=llama-3.1-8b&batch=100&micro=8&dp=2");
    assert_eq!(d.state.config.batch, 96);
    assert_eq!(
        d.ignored[0].to_string(),
        "batch: batch must be a multiple of micro-batch × dp (16); using 96"
    );
    assert!(membudget::detailed::estimate(&d.state.detailed_config()).is_ok());
    // Back to the lesson, the batch comes into its range.
    let mut s = decode("?mode=detailed&batch=4096").state;
    s.set_mode(Mode::Lesson);
    assert_eq!(s.config.batch, 1024);
    assert!(s.config.validate().is_ok());
}

/// A state the light lesson page shows: the lesson's keys alone (no
/// baseline, exercise or detailed model), with a card or a capacity and the
/// step time's question.
fn any_light_state() -> impl Strategy<Value = PageState> {
    (
        any_lesson_state(),
        proptest::option::of(prop::sample::select(
            membudget::detailed::time::hardware::MEMORY
                .map(|(k, _)| k)
                .to_vec(),
        )),
        proptest::option::of(1.0f64..=1e18),
        proptest::option::of(0.0f64..=1e6),
    )
        .prop_map(|(mut s, card, tokens, price)| {
            s.baseline = None;
            s.exercise = None;
            if let Some(c) = card {
                s.choose_card(c);
            }
            s.tokens = tokens;
            s.price = price;
            s.normalized()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5_000))]

    /// The light page's reader (`decode_lesson`) over random addresses:
    /// where it reads one, the full decoder reads the same state and
    /// ignores nothing, so the light page never shows what the full page
    /// would not.
    #[test]
    fn the_light_page_reads_only_what_the_full_page_reads_alike(
        pairs in prop::collection::vec((
            prop::sample::select(vec!["params", "batch", "seq", "hidden", "layers", "mixed", "gpu", "card", "unit",
                "sweep", "embed", "tokens", "price", "mode", "base", "ex", "model", "dp", "colour"]),
            "[0-9]{1,5}|[0-9.]{1,6}(gb|gib)?|0|1|lesson|detailed|gb|gib|seq|batch|h100-sxm|a100-40gb|rtx-4090|llama-2-7b|1e9|-3|NaN",
        ), 0..6),
    ) {
        let query: String = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&");
        if let Some(light) = decode_lesson(&query, std_to_f64) {
            let full = decode(&query);
            prop_assert!(full.ignored.is_empty(), "{query}: {:?}", full.ignored);
            prop_assert_eq!(full.state, light, "{}", query);
            prop_assert_eq!(light.mode, Mode::Lesson);
        }
    }

    /// Every address of a state the light page shows, it reads; what it
    /// writes is the full page's address, and its hand-over to the detailed
    /// model opens the full page's detailed state.
    #[test]
    fn the_light_page_reads_and_writes_every_lesson_address(state in any_light_state()) {
        let query = encode(&state);
        prop_assert_eq!(&encode_light(&state), &query);
        prop_assert_eq!(decode_lesson(&query, std_to_f64), Some(state), "{}", query);
        let mut detailed = state;
        detailed.mode = Mode::Detailed;
        let opened = decode(&encode_light(&detailed));
        prop_assert!(opened.ignored.is_empty(), "{:?}", opened.ignored);
        prop_assert_eq!(opened.state, decode(&encode(&detailed)).state);
        prop_assert_eq!(opened.state, detailed);
    }
}

/// Addresses the light page leaves to the full decoder, unread: the
/// detailed model's keys, a baseline, an exercise, a value refused or
/// repaired, and keys the full decoder ignores without a word.
#[test]
fn the_light_page_hands_over_what_it_does_not_read() {
    for query in [
        "mode=detailed",
        "model=llama-3.1-8b",
        "base=7,4,2048,4096,32,1",
        "ex=1",
        "batch=2048",
        "params=abc",
        "utm_source=x",
    ] {
        assert_eq!(decode_lesson(query, std_to_f64), None, "{query}");
    }
    let read = decode_lesson("?params=13&mode=lesson&card=h100-sxm&unit=gib", std_to_f64).unwrap();
    assert_eq!(read.config.params_b, 13.0);
    assert_eq!(read.card, Some("h100-sxm"));
    assert_eq!(read.unit, Unit::Gib);
}

/// The detailed model's sequence goes to 2²⁰ on the page as on the command
/// line (a million tokens over cp 32 opens as written and round-trips);
/// the lesson holds its own to 131,072 and says so, and so does switching
/// back to it.
#[test]
fn a_million_token_address_opens_in_the_detailed_mode_only() {
    let q = "?mode=detailed&model=llama-3.1-8b&seq=1048576&batch=1&cp=32&attn=flash&recompute=full";
    let d = decode(q);
    assert!(d.ignored.is_empty(), "{:?}", d.ignored);
    assert_eq!(d.state.config.seq_len, 1_048_576);
    let cfg = d.state.detailed_config();
    assert_eq!((cfg.seq, cfg.parallel.cp), (1 << 20, 32));
    assert!(membudget::detailed::estimate(&cfg).is_ok());
    let again = decode(&encode(&d.state));
    assert!(again.ignored.is_empty());
    assert_eq!(again.state.detailed_config(), cfg);
    let d = decode("?seq=500000");
    assert_eq!(d.state.config.seq_len, 131_072);
    assert_eq!(
        d.ignored[0].to_string(),
        "seq: the lesson's sequence is at most 131072 (the detailed model's 1048576); using 131072"
    );
    let d = decode("?mode=detailed&seq=1048577");
    assert!(
        d.ignored[0].to_string().starts_with("seq: "),
        "{:?}",
        d.ignored
    );
    let mut s = decode(q).state;
    s.set_mode(Mode::Lesson);
    assert_eq!(s.config.seq_len, 131_072);
    assert!(s.config.validate().is_ok());
}
