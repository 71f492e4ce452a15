//! torchtitan's per-operator selective checkpointing combined with float8
//! and with tensor parallelism, against PyTorch: `fixtures/sac_fp8_measured.tsv`
//! (torchao's tensorwise and rowwise float8, one rank) and
//! `fixtures/sac_tp_measured.tsv` (DTensor tensor parallelism on 2 ranks:
//! the layers' plan without sequence parallelism, torchtitan's, loss
//! parallel) and `fixtures/sac_fp8_tp_measured.tsv` (the two together under
//! torchtitan's plan and loss parallel, tensorwise with torchao's float8
//! plan), all written by `fixtures/measure_sac_parallel.py`, each
//! configuration under the per-operator policy and under whole-layer
//! checkpointing. The cache (what the policy keeps beyond whole-layer
//! checkpointing after the forward pass, per rank) must be exact, and each
//! step's peak within ±5 % in the right phase.
#![cfg(not(target_arch = "wasm32"))]

use crate::common;

use membudget::detailed::{estimate, timeline, DetailedConfig, Fp8, Recompute};

struct Row {
    m: common::Measured,
    live_start: f64,
    after_forward: f64,
    /// The table's label: the recipe or the plan.
    label: String,
}

fn recompute(name: &str) -> Recompute {
    match name {
        "op" => Recompute::SelectiveOp,
        _ => Recompute::Full,
    }
}

fn fp8_rows() -> Vec<Row> {
    common::tsv_rows(include_str!("fixtures/sac_fp8_measured.tsv"))
        .map(|(line, c)| {
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let shape = (n(0), n(1), n(2), n(3), n(4), n(5));
            let (seq, micro) = (n(6), n(7));
            let arch = common::measured_arch("llama", shape, seq);
            assert_eq!(arch.params(), n(12), "{line}: parameters");
            let mut cfg = DetailedConfig::new(arch, seq, micro);
            cfg.micro_batch = Some(micro);
            cfg.dropout = false;
            common::hf_cpu(&mut cfg, c[8], "sdpa");
            cfg.fp8 = c[9].parse::<Fp8>().unwrap();
            cfg.recompute = recompute(c[10]);
            Row {
                m: common::Measured {
                    line: line.to_string(),
                    cfg,
                    opts: common::step_options(c[11], false),
                    peak: n(15) as f64,
                    phase: c[16].to_string(),
                },
                live_start: n(13) as f64,
                after_forward: n(14) as f64,
                label: format!("float8 {}", c[9]),
            }
        })
        .collect()
}

fn tp_rows() -> Vec<Row> {
    common::tsv_rows(include_str!("fixtures/sac_tp_measured.tsv"))
        .map(|(line, c)| {
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let mut cfg = common::tp_rank_config(line, &c[3..12], "fp32", n(1), c[0]);
            cfg.recompute = recompute(c[2]);
            Row {
                m: common::Measured {
                    line: line.to_string(),
                    cfg,
                    opts: common::step_options(c[13], false),
                    peak: n(16) as f64,
                    phase: c[17].to_string(),
                },
                live_start: n(14) as f64,
                after_forward: n(15) as f64,
                label: format!(
                    "tp {} {}, rank {}",
                    n(1),
                    match c[0] {
                        "tp" => "layers",
                        "torchtitan" => "torchtitan + sp",
                        _ => "loss-parallel + sp",
                    },
                    c[12]
                ),
            }
        })
        .collect()
}

/// `fixtures/sac_fp8_tp_measured.tsv`: float8 under tensor parallelism as
/// torchtitan runs it (tensorwise under torchao's float8 plan, rowwise
/// under the plain one), bf16, 2 ranks.
fn fp8_tp_rows() -> Vec<Row> {
    common::tsv_rows(include_str!("fixtures/sac_fp8_tp_measured.tsv"))
        .map(|(line, c)| {
            let n = |i: usize| c[i].parse::<u64>().unwrap();
            let mut cfg = common::tp_rank_config(line, &c[4..13], "bf16", n(2), c[1]);
            cfg.fp8 = c[0].parse::<Fp8>().unwrap();
            cfg.recompute = recompute(c[3]);
            Row {
                m: common::Measured {
                    line: line.to_string(),
                    cfg,
                    opts: common::step_options(c[14], false),
                    peak: n(17) as f64,
                    phase: c[18].to_string(),
                },
                live_start: n(15) as f64,
                after_forward: n(16) as f64,
                label: format!("float8 {}, tp {} {} + sp, rank {}", c[0], n(2), c[1], c[13]),
            }
        })
        .collect()
}

fn rows() -> Vec<Row> {
    fp8_rows()
        .into_iter()
        .chain(tp_rows())
        .chain(fp8_tp_rows())
        .collect()
}

/// The model's cache: the per-operator row's activations beyond its
/// whole-layer twin's.
fn model_cache(cfg: &DetailedConfig) -> f64 {
    let full = DetailedConfig {
        recompute: Recompute::Full,
        ..*cfg
    };
    estimate(cfg).unwrap().activations - estimate(&full).unwrap().activations
}

/// What the per-operator policy keeps beyond whole-layer checkpointing
/// after the forward pass, per rank, measured as the difference of the two
/// runs' live bytes (same model, same data, same rank), against the model's.
#[test]
fn per_op_cache_is_exact_with_float8_and_tensor_parallelism() {
    let rows = rows();
    let mut compared = (0, 0, 0);
    for op in rows
        .iter()
        .filter(|r| r.m.cfg.recompute == Recompute::SelectiveOp)
    {
        let full = rows
            .iter()
            .find(|f| {
                f.m.cfg.recompute == Recompute::Full
                    && f.label == op.label
                    && f.m.opts.step == op.m.opts.step
                    && DetailedConfig {
                        recompute: Recompute::SelectiveOp,
                        ..f.m.cfg
                    } == op.m.cfg
            })
            .expect("its whole-layer row");
        assert_eq!(op.live_start, full.live_start, "{}", op.m.line);
        let measured = op.after_forward - full.after_forward;
        assert_eq!(model_cache(&op.m.cfg), measured, "{}", op.m.line);
        assert!(measured > 0.0);
        match (op.m.cfg.fp8 != Fp8::None, op.m.cfg.parallel.tp > 1) {
            (true, true) => compared.2 += 1,
            (false, true) => compared.1 += 1,
            _ => compared.0 += 1,
        }
    }
    assert!(
        compared.0 >= 4 && compared.1 >= 24 && compared.2 >= 16,
        "{compared:?}"
    );
}

/// The mechanisms the cache is made of, each seen in the measurement:
/// sequence parallelism's two kept reduce-scatters a layer, and the
/// tensorwise recipe's kept scales, alone and under tensor parallelism.
#[test]
fn reduce_scatters_and_tensorwise_scales_are_kept() {
    let rows = rows();
    let cache = |label: &str, step: membudget::detailed::Step| {
        let op = |r: &&Row| r.m.cfg.recompute == Recompute::SelectiveOp && r.m.opts.step == step;
        let o = rows.iter().filter(op).find(|r| r.label == label).unwrap();
        let f = rows
            .iter()
            .find(|r| {
                r.m.cfg.recompute == Recompute::Full && r.label == label && r.m.opts.step == step
            })
            .unwrap();
        (o.after_forward - f.after_forward, o.m.cfg)
    };
    let first = membudget::detailed::Step::First;
    // The first shape (L4 h256, 4 × 512 tokens, fp32): torchtitan's plan
    // keeps 2 · h/t values a token a layer more than the layers' plan.
    let (sp, cfg) = cache("tp 2 torchtitan + sp, rank 0", first);
    let (no_sp, _) = cache("tp 2 layers, rank 0", first);
    let a = cfg.arch;
    let tokens = (cfg.seq * cfg.micro()) as f64;
    assert_eq!(
        sp - no_sp,
        a.layers as f64 * tokens * 2.0 * (a.hidden / 2) as f64 * 4.0
    );
    // Tensorwise keeps a bf16 scale for each of a layer's 7 linear layers'
    // input and weight; rowwise none.
    let (tensorwise, cfg) = cache("float8 tensorwise", first);
    let (rowwise, _) = cache("float8 rowwise", first);
    assert_eq!(tensorwise - rowwise, cfg.arch.layers as f64 * 14.0 * 2.0);
    // Under torchtitan's plan the float8 plan casts 4 inputs (q, k, v
    // share one, gate and up one): 11 maxima a layer; rowwise keeps the
    // bf16 cache.
    let (tensorwise, cfg) = cache("float8 tensorwise, tp 2 torchtitan + sp, rank 0", first);
    let (rowwise, _) = cache("float8 rowwise, tp 2 torchtitan + sp, rank 0", first);
    assert_eq!(tensorwise - rowwise, cfg.arch.layers as f64 * 11.0 * 2.0);
    let bf16 = DetailedConfig {
        fp8: Fp8::None,
        ..cfg
    };
    assert_eq!(rowwise, model_cache(&bf16));
}

#[test]
fn per_op_step_peaks_within_five_percent_and_right_phase() {
    common::assert_peaks(rows().iter().map(|r| &r.m), 0.05);
}

/// The rows of docs/validation.md's table, from the fixtures and the model
/// (rank 0 of the tensor-parallel runs: the ranks measure alike).
fn table_lines() -> Vec<String> {
    rows()
        .iter()
        .filter(|r| !r.label.ends_with("rank 1"))
        .map(|r| {
            let c = &r.m.cfg;
            let a = &c.arch;
            let t = timeline(c, &r.m.opts).unwrap();
            let cache = if c.recompute == Recompute::SelectiveOp {
                format!("{:.3} MB", model_cache(c) / 1e6)
            } else {
                "—".into()
            };
            format!(
                "| L{} h{} a{}/{} f{}, s{} b{} {} | {} | {} | {} | {cache} | {:.2} MB | {:.2} MB | {:+.2} % | {} |",
                a.layers,
                a.hidden,
                a.heads,
                a.kv_heads,
                a.ffn,
                c.seq,
                c.micro(),
                if c.precision == membudget::detailed::Precision::Fp32 { "fp32" } else { "bf16" },
                r.label.trim_end_matches(", rank 0"),
                if c.recompute == Recompute::SelectiveOp { "per-operator" } else { "full" },
                if r.m.opts.step == membudget::detailed::Step::First { 1 } else { 2 },
                r.m.peak / 1e6,
                t.peak_bytes() / 1e6,
                100.0 * (t.peak_bytes() / r.m.peak - 1.0),
                r.m.phase
            )
        })
        .collect()
}

validation_table_tests!(table_lines);
