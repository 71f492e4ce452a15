//! The step-time model against published training throughputs
//! (`tests/fixtures/published_throughput.tsv`, written by
//! `published_throughput.py` from independent publications and, for
//! Hopper and Blackwell, NVIDIA's own recipe tables): one set
//! of efficiencies ([`Efficiency::default`]) for every row, each source's
//! rows checked on their own.

use membudget::detailed::config::LoraDtype;
use membudget::detailed::time::hardware::gpu;
use membudget::detailed::time::steptime::{step_time, Cluster, Efficiency, StepTime};
use membudget::detailed::{
    preset, Architecture, AttentionKernel, DetailedConfig, Family, Fp8, Framework, Overlap,
    Parallelism, Profile, Recompute,
};

/// One published measurement and what the model says.
#[derive(Clone)]
pub struct Row {
    pub source: String,
    pub label: String,
    pub measured: f64,
    pub predicted: StepTime,
    /// The row's configuration and card.
    pub cfg: DetailedConfig,
    pub card: membudget::detailed::time::hardware::Gpu,
}

impl Row {
    pub fn error(&self) -> f64 {
        self.predicted.tokens_per_s_per_gpu / self.measured - 1.0
    }
}

fn arch(spec: &str) -> Architecture {
    let f: Vec<&str> = spec.split(':').collect();
    let n = |i: usize| f[i].parse::<u64>().unwrap();
    match f[0] {
        // MPT: GPT-2's shape without biases or learned positions (ALiBi).
        "mpt" => {
            let mut a = Architecture::gpt2(n(1), n(2), n(3), 50368);
            a.qkv_bias = false;
            a.positions = 0;
            a
        }
        "gpt" => {
            let mut a = Architecture::gpt2(n(1), n(2), n(3), n(4));
            a.positions = 2048;
            a
        }
        // Megatron-Core's GPT as the 2024 H100 scaling runs built it:
        // learned positions over the 4,096-token sequence, embeddings and
        // output layer untied (`--untie-embeddings-and-output-weights`).
        "mcore-gpt" => {
            let mut a = Architecture::gpt2(n(1), n(2), n(3), n(4));
            a.positions = 4096;
            a.tied_embeddings = false;
            a
        }
        "llama" => Architecture::llama(n(1), n(2), n(3), n(4), n(5), n(6)),
        name => preset(name).unwrap().arch,
    }
}

/// Every row of the fixture with the model's prediction.
pub fn rows() -> Vec<Row> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/published_throughput.tsv"
    ))
    .unwrap();
    text.lines()
        .skip(1)
        .map(|line| {
            let c: Vec<&str> = line.split('\t').collect();
            let num = |i: usize| c[i].parse::<u64>().unwrap();
            let a = arch(c[1]);
            let (gpus, seq, micro, batch, tp, pp, vp) =
                (num(3), num(4), num(5), num(6), num(7), num(8), num(9));
            let (cp, ep) = (num(21), num(22));
            // An uneven pipeline split: the first and last stages' layers
            // (0: an even share).
            let stage = |i: usize| (num(i) > 0).then(|| num(i));
            let mut cfg = DetailedConfig::new(a, seq, batch);
            cfg.micro_batch = Some(micro);
            cfg.parallel = Parallelism {
                dp: gpus / (tp * pp * cp),
                tp,
                pp,
                vp,
                cp,
                ep,
                sp: c[10] == "1",
                zero: num(11) as u8,
                dp_shard: (num(18) > 0).then(|| num(18)),
                first_stage_layers: stage(24),
                last_stage_layers: stage(25),
                ..Parallelism::default()
            };
            cfg.recompute = match c[12] {
                "full" => Recompute::Full,
                "selective" => Recompute::Selective,
                "selective-op" => Recompute::SelectiveOp,
                _ => Recompute::None,
            };
            cfg.attention = if c[13].starts_with("flash") {
                AttentionKernel::Flash
            } else {
                AttentionKernel::Eager
            };
            cfg.dropout = c[14] == "1";
            cfg.moe_dispatcher = c[26].parse().unwrap();
            cfg.fp8_param = c[27] == "1";
            // Megatron-Core's recomputed modules ("-": none).
            for name in c[28].split(',').filter(|n| *n != "-") {
                assert!(cfg.recompute_modules.add(name), "{name}");
            }
            // Megatron-Core's overlaps the recipe turns off ("-": none).
            for name in c[29].split(',').filter(|n| *n != "-") {
                match name {
                    "tp_comm" => cfg.overlap.tp_comm = false,
                    "grad_reduce" => cfg.overlap.grad_reduce = false,
                    "param_gather" => cfg.overlap.param_gather = false,
                    _ => panic!("unknown overlap {name}"),
                }
            }
            // Megatron-Core's first layers offloaded (0: none).
            cfg.offload.activations = num(30) > 0;
            cfg.offload.activation_layers = num(30);
            // Megatron-Core's combined 1F1B schedule (0: off, its default).
            cfg.overlap.moe_a2a = c[31] == "1";
            // Megatron-Core's block method: the first layers of each chunk
            // recomputed (0: every layer under full recomputation).
            // (Command-line settings: the page's wasm has no such fields.)
            #[cfg(not(target_arch = "wasm32"))]
            {
                cfg.recompute_layers = num(33);
                // Megatron's --disable-parameter-transpose-cache.
                cfg.no_transpose_cache = c[34] == "1";
            }
            // LoRA, "rank:targets" ("-": full training), its adapters in
            // the model's bf16 as NeMo and Megatron-Bridge keep them.
            if let Some((rank, targets)) = c[32].split_once(':') {
                cfg.lora_rank = Some(rank.parse().unwrap());
                cfg.lora_targets = targets.parse().unwrap();
                cfg.lora_dtype = LoraDtype::Bf16;
            }
            cfg.fp8 = match c[23] {
                "te" => Fp8::Te,
                "te-mxfp8" => Fp8::TeMxfp8,
                _ => Fp8::None,
            };
            // Megatron-LM as the 2021–22 papers ran it: no Megatron-Core
            // overlaps (its `train_step` reduced the gradients after
            // `forward_backward_func`; userbuffers came with Transformer
            // Engine in 2023).
            if c[20] == "megatron-2022" {
                cfg.overlap = Overlap::NONE;
            }
            if c[20] == "fsdp2" {
                cfg.framework = Framework::Fsdp2 {
                    reshard_after_forward: true,
                };
            }
            cfg.profile = if c[17] == "hf" {
                Profile::Hf
            } else {
                Profile::Fused
            };
            let mut card = gpu(c[2]).unwrap();
            if num(19) > 0 {
                // The source's network, Gbit/s per node of 8, per GPU.
                card.inter_node_gbps = num(19) as f64 / 8.0 / 8.0;
            }
            let eff = Efficiency::for_gpu(&card);
            let eff = if c[13] == "flash1" {
                Efficiency::for_gpu_flash_attention_1(&card)
            } else {
                eff
            };
            let predicted = step_time(&cfg, &Cluster::new(card, 8), &eff);
            let published: f64 = c[15].parse().unwrap();
            let measured = match c[16] {
                "tokens/s/gpu" => published,
                // Seconds per iteration of the global batch, all GPUs.
                "s/iteration" => (batch * seq) as f64 / gpus as f64 / published,
                // Achieved teraFLOP/s per GPU counted as Narayanan et al.
                // 2021, §5.1: 96·B·s·l·h²·(1 + s/6h + V/16lh) per
                // iteration with full recomputation, per token over B·s.
                "tflops/gpu-96" => {
                    let (l, h, s, v) =
                        (a.layers as f64, a.hidden as f64, seq as f64, a.vocab as f64);
                    let per_token = 96.0 * l * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * l * h));
                    published * 1e12 / per_token
                }
                // Model teraFLOP/s per GPU counted as Megatron-LM's
                // `num_floating_point_operations` (megatron/training/
                // training.py, v0.8–v0.9): 12·B·s·l·h²·((1 + g/a + s/h)
                // + (f/h)·k·m + V/(2lh)) per iteration, f the expert's
                // width, k the experts a token is routed to and m 3/2
                // for a gated MLP (`--swiglu`), else 1.
                "tflops/gpu-megatron" => {
                    let (l, h, s, v) =
                        (a.layers as f64, a.hidden as f64, seq as f64, a.vocab as f64);
                    let (f, k) = a.moe.map_or((a.ffn, 1), |m| (m.expert_ffn, m.top_k));
                    let attention = 1.0 + a.kv_heads as f64 / a.heads as f64 + s / h;
                    let gated = if a.family == Family::Gpt2 { 1.0 } else { 1.5 };
                    let mlp = f as f64 / h * k as f64 * gated;
                    let per_token = 12.0 * l * h * h * (attention + mlp + v / (2.0 * l * h));
                    published * 1e12 / per_token
                }
                unit => panic!("unknown unit {unit}"),
            };
            Row {
                source: c[0].to_string(),
                label: format!(
                    "{} s{} {}×{} mb{} tp{} pp{}{}{} z{}{} {}{}{}",
                    c[1],
                    seq,
                    gpus,
                    c[2],
                    micro,
                    tp,
                    pp,
                    if vp > 1 {
                        format!(" vp{vp}")
                    } else {
                        String::new()
                    },
                    match (stage(24), stage(25)) {
                        (None, None) => String::new(),
                        (f, l) => format!(
                            " split{}/{}",
                            f.map_or("-".into(), |n| n.to_string()),
                            l.map_or("-".into(), |n| n.to_string())
                        ),
                    },
                    c[11],
                    if num(18) > 0 {
                        format!(" shard{}", num(18))
                    } else {
                        String::new()
                    },
                    match (c[28], num(33)) {
                        ("-", 0) => c[12].to_string(),
                        ("-", n) => format!("{}{n}", c[12]),
                        (modules, _) => format!("{}+{modules}", c[12]),
                    },
                    if c[10] == "1" { " sp" } else { "" },
                    [(cp, "cp"), (ep, "ep")]
                        .iter()
                        .filter(|(n, _)| *n > 1)
                        .map(|(n, k)| format!(" {k}{n}"))
                        .chain((c[23] != "none").then(|| format!(" {}", c[23])))
                        .chain((c[26] != "alltoall").then(|| format!(" {}", c[26])))
                        .chain((c[27] == "1").then(|| " fp8-param".to_string()))
                        .chain(
                            c[29].split(',').filter(|n| *n != "-").map(|n| {
                                format!(" no-{}-overlap", n.split('_').next().unwrap())
                            })
                        )
                        .chain((num(30) > 0).then(|| format!(" offload{}", num(30))))
                        .chain((c[31] == "1").then(|| " a2a-overlap".to_string()))
                        .chain((c[32] != "-").then(|| format!(" lora{}", c[32])))
                        .chain((c[34] == "1").then(|| " no-transpose-cache".to_string()))
                        .collect::<String>()
                ),
                measured,
                predicted,
                cfg,
                card,
            }
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Rows of the bounded sources the model misses by more than 25 %, each
/// out of line with the same source's neighbours (docs/steptime.md says
/// which and why). A new miss fails; a fixed one must leave this list.
const BEYOND: [&str; 4] = [
    "mpt:80:8192:64 s2048 64×a100-40gb mb2 tp1 pp1 z3 full",
    "mpt:48:7168:56 s8192 8×a100-80gb mb1 tp1 pp1 z3 full",
    "mpt:24:2048:16 s2048 32×a100-40gb mb10 tp1 pp1 z3 none",
    "mpt:24:1536:12 s512 8×a100-80gb mb96 tp1 pp1 z3 none",
];

/// The sources held to the bounds: independent publications that
/// give every setting the model needs.
const BOUNDED: [&str; 4] = ["mpt", "korthikanti", "narayanan", "torchtitan"];

/// Every source, in the order docs/steptime.md shows them: the bounded
/// ones, then IBM's (whose 7B and 13B rows the model runs fast, see
/// docs/steptime.md) and the H100 rows.
const SOURCES: [&str; 18] = [
    "mpt",
    "korthikanti",
    "narayanan",
    "torchtitan",
    "ibm",
    "mpt-h100",
    "ibm-h100",
    "mbridge-h100",
    "mbridge-b200",
    "mbridge-b300",
    "mbridge-gb200",
    "mbridge-gb300",
    "mbridge-ft",
    "mlperf",
    "mlperf-amd",
    "mcore-h100",
    "moe-zoo-h100",
    "mcore-moe",
];

/// Median and worst absolute error of one source's rows.
pub fn summary(rows: &[Row], source: &str) -> (usize, f64, f64) {
    let e: Vec<f64> = rows
        .iter()
        .filter(|r| r.source == source)
        .map(|r| r.error().abs())
        .collect();
    let worst = e.iter().cloned().fold(0.0, f64::max);
    (e.len(), median(e), worst)
}

/// The lowest and highest signed error of one source's rows.
pub fn span(rows: &[Row], source: &str) -> (f64, f64) {
    rows.iter()
        .filter(|r| r.source == source)
        .map(Row::error)
        .fold((f64::MAX, f64::MIN), |(lo, hi), e| (lo.min(e), hi.max(e)))
}

/// One source's line of docs/steptime.md's table.
fn source_line(rows: &[Row], source: &str) -> String {
    let (n, med, worst) = summary(rows, source);
    let (lo, hi) = span(rows, source);
    format!(
        "| {source} | {n} | {:.1} % | {:.1} % | {:+.1} % | {:+.1} % |",
        100.0 * med,
        100.0 * worst,
        100.0 * lo,
        100.0 * hi
    )
}

/// The bounds, on each source that gives full configurations:
/// median ≤ 8 %, worst ≤ 25 % but for the rows named in `BEYOND`.
#[test]
fn bounded_sources_within_bounds() {
    let rows = rows();
    for source in BOUNDED {
        let (n, med, _) = summary(&rows, source);
        assert!(n >= 4, "{source}: {n} rows");
        assert!(med <= 0.08, "{source}: median {:.1} %", 100.0 * med);
    }
    let mut beyond: Vec<&str> = rows
        .iter()
        .filter(|r| BOUNDED.contains(&r.source.as_str()))
        .filter(|r| r.error().abs() > 0.25)
        .map(|r| r.label.as_str())
        .collect();
    beyond.sort();
    let mut want = BEYOND.to_vec();
    want.sort();
    assert_eq!(beyond, want);
    assert!(rows.len() >= 25);
}

/// The Hopper and Blackwell sources of Megatron-Core's recipes (issue 35,
/// item 6), each held at what the model meets today (median, worst
/// absolute error; docs/steptime.md says which rows miss and why): a
/// change that worsens one fails. The target on its held-out rows
/// is median ≤ 8 % and worst ≤ 35 %. The dense Llama rows of all five
/// cards met it together (median 5.6 % over 12 rows) until the nine
/// Llama 3.1 405B rows with their uneven pipeline splits came in, priced
/// as they were before any change: 21 rows at a median of 8.3 %, held
/// there, and the worst at 28.0 % within the target. mbridge-h100's
/// median went back from 14.1 % to 20.7 % when its two Qwen3-235B-A22B
/// rows were given the all-to-all dispatcher their recipes really run
/// (they had been read as DeepEP's; docs/steptime.md, "A correction"),
/// and to 14.1 % when the recipes' all-to-all overlap was priced
/// (`overlap_moe_expert_parallel_comm`, 2026-12-07), which also added the
/// MoE model zoo's "+1f1b overlap" row (+24.1 %: the overlap hides more
/// in the model than the measurement gained) and took the host-paced rows
/// of 16 experts a GPU further fast (B300's Qwen3-235B-A22B +92.9 →
/// +124.6 %, H100's Qwen3-30B-A3B +342.7 → +433.7 %). Pricing the compute
/// that hidden collectives slow (18.9 %, Lee et al. 2025) moved every
/// bound but GB300's median toward the measurements, and they were
/// tightened to it: mbridge-h100 14.1 → 11.8 % (worst 416.3 %), the dense
/// rows 8.3 → 8.2 % (worst 25.0 %). Then Transformer Engine's casts as
/// Megatron-Core runs current scaling and MXFP8 (every linear layer's
/// input cast in a kernel of its own, twice under MXFP8) took the dense
/// rows to 7.8 % (worst 22.3 %), B200 24.3 → 23.1 %, GB200 17.1 → 12.7 %,
/// and GB300's median, whose rows the model already priced slow, from 5.4
/// to 7.1 %: its bound loosened to 7.2 % on purpose, said in
/// docs/steptime.md. Megatron-Bridge's fine-tuning tables (26.06: Llama 3
/// 70B, full fine-tuning on 32 GPUs and LoRA on 8) came in as they were
/// priced, with LoRA over an fp8 base (their recipes' `fp8_param`) the one
/// change made for them: 6.4 % (worst 11.0 %), the dense
/// rows with them 7.5 % over 31. MLPerf Training's rows (NVIDIA's
/// submissions, v4.1 and v5.1) came in as priced: 12.8 % over 8, worst
/// 110.3 % (Llama 3.1 8B on 512 GB200s, 2,048 tokens a GPU), their bound
/// what they are (12.1 % once the LoRA rows' transposes were made per
/// use, as their configs set); AMD's (v5.1, one node of MI300X, MI325X,
/// MI350X or MI355X) came in with what they needed to be said (the MI350X,
/// LoRA over an fp8 base at --zero 0, Megatron's block recomputation of
/// the MI300X's first 21 layers, the transposes made per use): 12.9 % over
/// 6, worst 22.8 %. Megatron-LM's own H100 weak-scaling table
/// (Megatron-Core r0.8.0, BF16 GPT from 1.7B on 48 GPUs to 462B on 6,144)
/// came in as priced: 4.1 % over 9, worst 16.1 % (the 1.7B, fast, as the
/// small models' rows are).
#[test]
fn recipe_sources_within_their_bounds() {
    let rows = rows();
    for (source, n, median, worst) in [
        ("mbridge-h100", 10, 0.11, 4.12),
        ("mbridge-b200", 11, 0.24, 1.87),
        ("mbridge-b300", 4, 0.38, 1.18),
        ("mbridge-gb200", 13, 0.13, 0.60),
        ("mbridge-gb300", 14, 0.072, 0.32),
        ("mbridge-ft", 10, 0.064, 0.11),
        ("mlperf", 8, 0.122, 1.11),
        ("mlperf-amd", 6, 0.13, 0.23),
        ("mcore-h100", 9, 0.042, 0.162),
        ("moe-zoo-h100", 5, 0.22, 0.66),
        ("mcore-moe", 1, 0.04, 0.04),
    ] {
        let (rows_n, med, wst) = summary(&rows, source);
        assert_eq!(rows_n, n, "{source}");
        assert!(med <= median, "{source}: median {:.1} %", 100.0 * med);
        assert!(wst <= worst, "{source}: worst {:.1} %", 100.0 * wst);
    }
    let dense: Vec<f64> = rows
        .iter()
        .filter(|r| r.source.starts_with("mbridge-") && r.label.starts_with("llama"))
        .map(|r| r.error().abs())
        .collect();
    assert_eq!(dense.len(), 31);
    let worst = dense.iter().cloned().fold(0.0, f64::max);
    assert!(median(dense) <= 0.075 && worst <= 0.35);
}

/// The number after `key` in a row's label (" pp8 " → 8), 1 without it.
fn label_number(label: &str, key: &str) -> u64 {
    label.split(key).nth(1).map_or(1, |rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().unwrap()
    })
}

/// Every row with an uneven pipeline split is priced with it: Llama 3.1
/// 405B's and Qwen3-235B-A22B's first and last stages' layers as
/// Megatron-Core builds them when the embedding and the loss each count as
/// a layer, (L + 2) / pp − 1; DeepSeek-V3's as its recipes' layouts place
/// its 61 layers, four a virtual stage between the first and the last.
#[test]
fn uneven_splits_are_the_recipes() {
    let rows = rows();
    let split: Vec<&Row> = rows.iter().filter(|r| r.label.contains(" split")).collect();
    assert_eq!(split.len(), 28);
    for r in split {
        let (pp, vp) = (label_number(&r.label, " pp"), label_number(&r.label, " vp"));
        let (first, last) = (
            label_number(&r.label, " split"),
            label_number(
                &r.label,
                &format!(" split{}/", label_number(&r.label, " split")),
            ),
        );
        if r.label.starts_with("deepseek-v3") {
            assert_eq!(61 - first - last, (pp - 2) * 4 * vp, "{}", r.label);
            assert_eq!(first, 4 * vp, "{}", r.label);
        } else {
            let layers = if r.label.starts_with("llama-3.1-405b") {
                126
            } else {
                94
            };
            let n = (layers + 2) / pp - 1;
            assert_eq!((first, last), (n, n), "{}", r.label);
        }
    }
}

/// The groups of Megatron-Bridge's rows that set a range beside the
/// figures (`src/detailed/time/validation.rs`): the dense Llama rows of
/// each card group, its pre-training and fine-tuning tables' alike; the
/// mixture-of-experts rows set none. Each group: its key, its sources and
/// its cards.
const RANGE_GROUPS: [(&str, &[&str], &[&str]); 2] = [
    (
        "mbridge-h100-dense",
        &["mbridge-h100", "mbridge-ft"],
        &["h100-sxm"],
    ),
    (
        "mbridge-blackwell-dense",
        &[
            "mbridge-b200",
            "mbridge-b300",
            "mbridge-gb200",
            "mbridge-gb300",
            "mbridge-ft",
        ],
        &["b200", "b300", "gb200", "gb300"],
    ),
];

/// One range group's line of docs/steptime.md's per-source table.
fn group_line(rows: &[Row], group: &str, sources: &[&str], cards: &[&str]) -> String {
    let dense: Vec<Row> = rows
        .iter()
        .filter(|r| sources.contains(&r.source.as_str()) && r.label.starts_with("llama"))
        .filter(|r| cards.iter().any(|c| r.label.contains(&format!("×{c} "))))
        .map(|r| Row {
            source: group.to_string(),
            ..r.clone()
        })
        .collect();
    source_line(&dense, group)
}

/// The range groups' figures are the rows', as docs/steptime.md prints
/// them (and `tests/time_range.rs` holds the code's table to the document).
#[test]
fn range_groups_are_their_rows() {
    let rows = rows();
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/steptime.md")).unwrap();
    for (group, sources, cards) in RANGE_GROUPS {
        let line = group_line(&rows, group, sources, cards);
        assert!(doc.contains(&line), "docs/steptime.md lacks {line}");
    }
}

/// Each source's figures as docs/steptime.md prints them.
#[test]
fn docs_show_the_code_s_figures() {
    let rows = rows();
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/steptime.md")).unwrap();
    for source in SOURCES {
        let line = source_line(&rows, source);
        assert!(doc.contains(&line), "docs/steptime.md lacks {line}");
    }
    for r in rows
        .iter()
        .filter(|r| r.source != "mpt" || BEYOND.contains(&r.label.as_str()))
    {
        let line = format!(
            "| {} | {} | {:.0} | {:.0} | {:+.1} % | {} |",
            r.source,
            r.label,
            r.measured,
            r.predicted.tokens_per_s_per_gpu,
            100.0 * r.error(),
            r.predicted.parts.dominant()
        );
        assert!(doc.contains(&line), "docs/steptime.md lacks {line}");
    }
}

/// `cargo test --test native steptime_vs_published:: -- --ignored --nocapture`
/// prints the table for docs/steptime.md.
#[test]
#[ignore]
fn print_table() {
    let rows = rows();
    for source in SOURCES {
        println!("{}", source_line(&rows, source));
    }
    for (group, sources, cards) in RANGE_GROUPS {
        println!("{}", group_line(&rows, group, sources, cards));
    }
    for r in &rows {
        println!(
            "| {} | {} | {:.0} | {:.0} | {:+.1} % | {} |",
            r.source,
            r.label,
            r.measured,
            r.predicted.tokens_per_s_per_gpu,
            100.0 * r.error(),
            r.predicted.parts.dominant()
        );
        if std::env::var("PARTS").is_ok_and(|f| r.label.contains(&f) || r.source == f) {
            println!("   {:?}", r.predicted.parts);
        }
    }
}

/// The mixture-of-experts rows' span, as the range's refusal states it
/// (`validation::range`): every MoE row of the fixture, rounded.
#[test]
fn moe_refusal_states_the_rows_span() {
    let rows = rows();
    let moe: Vec<f64> = rows
        .iter()
        .filter(|r| r.label.contains(" ep"))
        .map(Row::error)
        .collect();
    assert_eq!(moe.len(), 37);
    let lowest = moe.iter().cloned().fold(f64::MAX, f64::min);
    let highest = moe.iter().cloned().fold(f64::MIN, f64::max);
    let mut cfg = DetailedConfig::new(preset("mixtral-8x7b").unwrap().arch, 4096, 8);
    cfg.framework = Framework::Megatron;
    let refusal = membudget::detailed::time::validation::range(&cfg, "h100-sxm").unwrap_err();
    let span = format!(
        "run from {:.0} % slow to {:.0} % fast",
        -100.0 * lowest,
        100.0 * highest
    );
    assert!(refusal.ends_with(&span), "{refusal} / {span}");
}

/// Every published row ran, so its step fit its card. The model's
/// tensors' peak plus the runtime overhead outside the caching allocator
/// (CUDA context, workspaces, communication buffers; no fragmentation
/// band) fits the card on every row but the one whose recipe the fixture
/// does not know whole: GPT-OSS 120B on H100 at micro-batch 4 and EP 8
/// (Megatron-Bridge 25.11, a recipe not in the repository's history, whose
/// recomputation is not known); and MLPerf's Llama 2 70B LoRA on 8 H200s
/// (TP 1, CP 2), the one Megatron LoRA row whose base fills the card: as
/// today's Transformer Engine builds fp8 primary weights the model keeps
/// a transpose beside each (69 GB here; NeMo 24.09's kept one byte a
/// weight, and without it the row fits). With the default 15 % fragmentation band
/// (a verdict's caution, `FRAGMENTATION_PERCENT`) the rows tuned to the
/// card's edge read "does not fit": the count is held here and in
/// docs/validation.md.
#[test]
fn published_runs_fit_their_cards() {
    use membudget::detailed::{memory::overhead::step_need, timeline, Overhead, StepOptions};
    const OVER: [&str; 1] = ["gpt-oss-120b s4096 64×h100-sxm mb4 tp1 pp4 z1 none ep8"];
    let fixed = Overhead {
        fragmentation_percent: 0.0,
        ..Overhead::default()
    };
    let (mut banded, mut rows_seen) = (0, 0);
    for r in rows() {
        let t = timeline(&r.cfg, &StepOptions::default()).unwrap();
        let card = r.card.memory_bytes();
        let need = step_need(&r.cfg, &t, Some(&fixed));
        rows_seen += 1;
        if OVER.contains(&r.label.as_str()) {
            assert!(
                need > card,
                "{}: fits now; drop it from the exception",
                r.label
            );
            continue;
        }
        assert!(
            need <= card,
            "{} {}: {:.1} GB of {:.1}",
            r.source,
            r.label,
            need / 1e9,
            card / 1e9
        );
        if step_need(&r.cfg, &t, Some(&Overhead::default())) > card {
            banded += 1;
        }
    }
    assert_eq!(rows_seen, 313);
    assert_eq!(banded, 55, "rows over the card with the 15 % band");
}

/// Prints each row's tensors' peak and what it needs with the default
/// band and with expandable segments against its card: the figures
/// docs/validation.md's "Published runs fit their cards" sums.
#[test]
#[ignore]
fn print_fits() {
    use membudget::detailed::{memory::overhead::step_need, timeline, Overhead, StepOptions};
    for r in rows() {
        let Ok(t) = timeline(&r.cfg, &StepOptions::default()) else {
            println!("| {} | {} | refused |", r.source, r.label);
            continue;
        };
        let card = r.card.memory_bytes();
        let peak = t.peak_bytes();
        let need = step_need(&r.cfg, &t, Some(&Overhead::default()));
        let x = Overhead::expandable_segments();
        let need_x = step_need(&r.cfg, &t, Some(&x));
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
            r.source,
            r.label,
            peak / 1e9,
            need / 1e9,
            need_x / 1e9,
            card / 1e9,
            if peak > card {
                "TENSORS OVER"
            } else if need_x > card {
                "over with x"
            } else if need > card {
                "over default"
            } else {
                "fits"
            }
        );
    }
}
