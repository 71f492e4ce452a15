//! Strategies shared by the property tests; each test binary uses some.
#![cfg(not(target_arch = "wasm32"))]
#![allow(dead_code)]

use membudget::budget::TrainingConfig;
use membudget::detailed::{Optimizer, Precision, Recompute};
use proptest::prelude::*;

/// Any configuration the core accepts.
pub fn any_config() -> impl Strategy<Value = TrainingConfig> {
    (
        0.1f64..=1000.0,
        1u32..=1024,
        128u32..=131_072,
        128u32..=65_536,
        1u32..=256,
        any::<bool>(),
    )
        .prop_map(
            |(params_b, batch, seq_len, hidden, layers, mixed_precision)| TrainingConfig {
                params_b,
                batch,
                seq_len,
                hidden,
                layers,
                mixed_precision,
            },
        )
}

/// Any storage precision.
pub fn any_precision() -> impl Strategy<Value = Precision> {
    prop::sample::select(vec![Precision::Fp32, Precision::Mixed, Precision::Bf16])
}

/// Any optimizer.
pub fn any_optimizer() -> impl Strategy<Value = Optimizer> {
    prop::sample::select(vec![
        Optimizer::AdamW,
        Optimizer::Sgd,
        Optimizer::SgdMomentum,
        Optimizer::Adam8bit,
    ])
}

/// Any recomputation setting.
pub fn any_recompute() -> impl Strategy<Value = Recompute> {
    prop::sample::select(vec![
        Recompute::None,
        Recompute::Selective,
        Recompute::SelectiveOp,
        Recompute::Full,
    ])
}

/// The shape `tests/fixtures/measure_*.py` builds for a measured row: GPT-2
/// with its MLP width and enough positions for the sequence, or Llama.
pub fn measured_arch(
    family: &str,
    (layers, hidden, heads, kv_heads, ffn, vocab): (u64, u64, u64, u64, u64, u64),
    seq: u64,
) -> membudget::detailed::Architecture {
    use membudget::detailed::Architecture;
    match family {
        "gpt2" => Architecture {
            ffn,
            positions: seq.max(1024),
            ..Architecture::gpt2(layers, hidden, heads, vocab)
        },
        "llama" => Architecture::llama(layers, hidden, heads, kv_heads, ffn, vocab),
        // `LlamaConfig(tie_word_embeddings=True)`.
        "llama-tied" => Architecture {
            tied_embeddings: true,
            ..Architecture::llama(layers, hidden, heads, kv_heads, ffn, vocab)
        },
        // `Qwen2Config`: a Llama with q/k/v biases.
        "qwen2" => Architecture {
            qkv_bias: true,
            ..Architecture::llama(layers, hidden, heads, kv_heads, ffn, vocab)
        },
        other => panic!("unknown arch {other}"),
    }
}

/// The data rows of a measured table (`tests/fixtures/*.tsv`): comment lines
/// and the header left out; each row as its line and its tab-separated fields.
pub fn tsv_rows(text: &str) -> impl Iterator<Item = (&str, Vec<&str>)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .skip(1)
        .map(|line| (line, line.split('\t').collect()))
}

/// A measured fixture's tensor-parallel plan by the name its rows give
/// (measure_sac_parallel.py's and measure_compile_tp.py's): `tp` the
/// layers' plan, `torchtitan` and `loss-parallel` torchtitan's, with
/// sequence parallelism.
pub fn measured_plan(name: &str) -> (membudget::detailed::TpPlan, bool) {
    use membudget::detailed::TpPlan;
    match name {
        "tp" => (TpPlan::Layers, false),
        "torchtitan" => (TpPlan::Torchtitan, true),
        "loss-parallel" => (TpPlan::LossParallel, true),
        other => panic!("plan {other}"),
    }
}

/// A tensor-parallel rank's configuration as the 2-rank scripts
/// (measure_sac_parallel.py, measure_compile_tp.py and their kin) write
/// it: `fields` from the row's layers, hidden, heads, kv heads, ffn,
/// vocabulary, seq, micro-batch and parameter count, in that order (the
/// count checked), Llama layers with SDPA and no dropout in `dtype` on
/// the CPU, `tp` GPUs under `plan` ([`measured_plan`]).
pub fn tp_rank_config(
    line: &str,
    fields: &[&str],
    dtype: &str,
    tp: u64,
    plan: &str,
) -> membudget::detailed::DetailedConfig {
    let n = |i: usize| fields[i].parse::<u64>().unwrap();
    let (seq, micro) = (n(6), n(7));
    let arch = measured_arch("llama", (n(0), n(1), n(2), n(3), n(4), n(5)), seq);
    assert_eq!(arch.params(), n(8), "{line}: parameters");
    let mut cfg = membudget::detailed::DetailedConfig::new(arch, seq, micro);
    cfg.micro_batch = Some(micro);
    cfg.dropout = false;
    hf_cpu(&mut cfg, dtype, "sdpa");
    cfg.parallel.tp = tp;
    let (plan, sp) = measured_plan(plan);
    cfg.parallel.set_plan(plan);
    cfg.parallel.sp = sp;
    cfg
}

/// The "hf" profile on the CPU with AdamW, as the measuring scripts run a
/// row: `dtype` `fp32` or 16-bit (`bf16`, and QLoRA's `nf4`, a bf16 model),
/// `attention` `eager` or SDPA.
pub fn hf_cpu(cfg: &mut membudget::detailed::DetailedConfig, dtype: &str, attention: &str) {
    use membudget::detailed::{AttentionKernel, Device, Profile};
    cfg.profile = Profile::Hf;
    cfg.device = Device::Cpu;
    cfg.optimizer = Optimizer::AdamW;
    cfg.precision = if dtype == "fp32" {
        Precision::Fp32
    } else {
        Precision::Bf16
    };
    cfg.attention = if attention == "eager" {
        AttentionKernel::Eager
    } else {
        AttentionKernel::Flash
    };
}

/// A phase as the measuring scripts name it.
pub fn phase(name: &str) -> membudget::detailed::Phase {
    use membudget::detailed::Phase;
    match name {
        "generation" | "reference" => Phase::Generation,
        "forward" => Phase::Forward,
        "backward" => Phase::Backward,
        "optimizer" => Phase::Optimizer,
        other => panic!("unknown phase {other}"),
    }
}

/// One rank-step of `measure_ddp.py`'s fixtures (DDP, FSDP2, DTensor TP)
/// and `measure_deepspeed.py`'s.
pub struct RankRow<'a> {
    /// The fixture's line.
    pub line: &'a str,
    /// Processes.
    pub world: u64,
    /// Column 1: `gradient_as_bucket_view` (DDP) or `reshard_after_forward`
    /// (FSDP2) as a flag; the ZeRO stage (DeepSpeed) as written.
    pub flag: bool,
    pub col1: &'a str,
    /// Column 2: the bucket (DDP's MB, DeepSpeed's values or `default`).
    pub col2: &'a str,
    /// The rank and the optimizer step (1 or 2).
    pub rank: u64,
    pub step: u64,
    /// The counter's peak, its phase, and whether the profiler agreed
    /// (false where the fixture has no profiler column).
    pub peak: f64,
    pub phase: membudget::detailed::Phase,
    pub agree: bool,
    /// The measured model on one process as the script runs it (fp32,
    /// SDPA, no dropout, the "hf" profile on the CPU), a micro-batch per
    /// process: the caller sets the parallel layout.
    pub cfg: membudget::detailed::DetailedConfig,
    /// Its step, with AdamW's per-parameter loop.
    pub opts: membudget::detailed::StepOptions,
}

/// The rank-steps of a `measure_ddp.py` fixture of Llamas, the parameter
/// count checked against the script's.
pub fn rank_rows(text: &str) -> Vec<RankRow<'_>> {
    rank_rows_of(text, "llama")
}

/// The rank-steps of a fixture of `family` models (`llama`, `gpt2`).
pub fn rank_rows_of<'a>(text: &'a str, family: &str) -> Vec<RankRow<'a>> {
    use membudget::detailed::{AdamImpl, DetailedConfig, Step, StepOptions};
    tsv_rows(text)
        .map(|(line, c)| {
            let num = |i: usize| c[i].parse::<u64>().unwrap();
            let (layers, hidden, heads, kv, ffn, vocab, seq, micro) = (
                num(3),
                num(4),
                num(5),
                num(6),
                num(7),
                num(8),
                num(9),
                num(10),
            );
            let arch = measured_arch(family, (layers, hidden, heads, kv, ffn, vocab), seq);
            assert_eq!(arch.params(), num(11), "{line}: parameter count");
            let world = num(0);
            let mut cfg = DetailedConfig::new(arch, seq, micro * world);
            cfg.micro_batch = Some(micro);
            hf_cpu(&mut cfg, "fp32", "sdpa");
            cfg.dropout = false;
            RankRow {
                line,
                world,
                flag: c[1] == "1",
                col1: c[1],
                col2: c[2],
                rank: num(12),
                step: num(13),
                peak: num(15) as f64,
                phase: phase(c[16]),
                agree: c.get(17) == Some(&"1"),
                cfg,
                opts: StepOptions {
                    step: if num(13) == 1 {
                        Step::First
                    } else {
                        Step::Later
                    },
                    adam: Some(AdamImpl::ForLoop),
                },
            }
        })
        .collect()
}

/// The step options a measured row names: step "1" is the first (AdamW's
/// state is created in it), later ones start with it; `foreach` AdamW or
/// its per-parameter loop.
pub fn step_options(step: &str, foreach: bool) -> membudget::detailed::StepOptions {
    use membudget::detailed::{AdamImpl, Step, StepOptions};
    StepOptions {
        step: if step == "1" {
            Step::First
        } else {
            Step::Later
        },
        adam: Some(if foreach {
            AdamImpl::Foreach
        } else {
            AdamImpl::ForLoop
        }),
    }
}

/// One measured step: the fixture's line, the configuration and step the
/// model prices, and the measured peak and its phase.
pub struct Measured {
    pub line: String,
    pub cfg: membudget::detailed::DetailedConfig,
    pub opts: membudget::detailed::StepOptions,
    pub peak: f64,
    pub phase: String,
}

/// Asserts that the timeline's peak is within `tolerance` of each measured
/// one, in its phase; prints every row's error and the worst.
pub fn assert_peaks<'a>(rows: impl IntoIterator<Item = &'a Measured>, tolerance: f64) {
    let mut failures = Vec::new();
    let mut worst: f64 = 0.0;
    for r in rows {
        let t = membudget::detailed::memory::timeline(&r.cfg, &r.opts).unwrap();
        let err = t.peak_bytes() / r.peak - 1.0;
        let phase = t.peak_event().phase.name();
        eprintln!(
            "{:+.2} % {phase:>9} vs {:>9} {:.0}  {}",
            err * 100.0,
            r.phase,
            t.peak_bytes(),
            r.line
        );
        worst = worst.max(err.abs());
        if err.abs() > tolerance || phase != r.phase {
            failures.push(format!("{}: {:+.2} %, {phase}", r.line, err * 100.0));
        }
    }
    eprintln!("worst {:.2} %", worst * 100.0);
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Bytes as the measured tables in docs/validation.md print them.
pub fn mb(x: f64) -> String {
    format!("{:.2} MB", x / 1e6)
}

/// docs/validation.md holds `want`, the table `what` names as the code
/// computes it.
pub fn assert_validation_doc_has(want: &str, what: &str) {
    assert!(
        include_str!("../../docs/validation.md").contains(want),
        "docs/validation.md's {what} is stale; it should be:\n{want}"
    );
}

/// The phases a measuring script records a peak for, in its columns'
/// order.
pub const MEASURED_PHASES: [membudget::detailed::Phase; 3] = [
    membudget::detailed::Phase::Forward,
    membudget::detailed::Phase::Backward,
    membudget::detailed::Phase::Optimizer,
];

/// One measured step with each phase's peak, as the compile fixtures
/// (`measure_compile_sac*.py`) write it.
pub struct PhaseRow {
    pub line: String,
    pub cfg: membudget::detailed::DetailedConfig,
    pub step: String,
    /// Live bytes at the step's start and after its forward.
    pub start: f64,
    pub after_forward: f64,
    /// Peaks of [`MEASURED_PHASES`]; the step's, and its phase.
    pub peaks: [f64; 3],
    pub peak: f64,
    pub phase: membudget::detailed::Phase,
}

impl PhaseRow {
    /// The modelled step.
    pub fn timeline(&self) -> membudget::detailed::memory::StepTimeline {
        membudget::detailed::memory::timeline(&self.cfg, &step_options(&self.step, false)).unwrap()
    }

    /// (what, modelled, measured): the step's peak, each phase's, and what
    /// the forward leaves, modelled by `saved`.
    pub fn checks(
        &self,
        saved: fn(&membudget::detailed::DetailedConfig) -> f64,
    ) -> Vec<(&'static str, f64, f64)> {
        let t = self.timeline();
        let mut checks = vec![("step", t.peak_bytes(), self.peak)];
        for (phase, want) in MEASURED_PHASES.into_iter().zip(self.peaks) {
            checks.push((phase.name(), t.phase_peak(phase).unwrap(), want));
        }
        checks.push(("saved", saved(&self.cfg), self.after_forward - self.start));
        checks
    }

    /// Whether `phase`'s measured peak lies within `within` (a fraction) of
    /// the step's: a phase the model may name in the measured one's place.
    pub fn tie(&self, phase: membudget::detailed::Phase, within: f64) -> bool {
        let i = MEASURED_PHASES.iter().position(|p| *p == phase);
        i.is_some_and(|i| (self.peaks[i] / self.peak - 1.0).abs() < within)
    }
}

/// The two tests of a measured table kept in docs/validation.md: the doc
/// shows every line `$lines()` gives, and an ignored test prints them
/// (`cargo test --test native NAME:: -- --ignored --nocapture`) to paste in.
#[macro_export]
macro_rules! validation_table_tests {
    ($lines:ident) => {
        /// docs/validation.md shows the code's figures.
        #[test]
        fn docs_show_the_measured_table() {
            let doc =
                std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/validation.md"))
                    .unwrap();
            for line in $lines() {
                assert!(doc.contains(&line), "docs/validation.md lacks {line}");
            }
        }

        /// Prints the table for docs/validation.md.
        #[test]
        #[ignore]
        fn print_table() {
            for line in $lines() {
                println!("{line}");
            }
        }
    };
}
