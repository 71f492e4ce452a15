//! How far the step time can be trusted: each published source the step
//! time was checked against ([`VALIDATION`], docs/steptime.md's
//! "Validation against published throughputs" table, tested against it in
//! `tests/time_range.rs`), and the range of a step's time that those
//! checks support for a card and framework ([`range`]).
//!
//! An error is the predicted tokens per second over the measured, less
//! one. A source's rows span errors from `lowest` to `highest`, so the
//! measured rate of a step the model prices at `r` lies, on those rows'
//! evidence, between r / (1 + highest) and r / (1 + lowest), and its time
//! (step, days, cost) between t · (1 + lowest) and t · (1 + highest).
//!
//! Which rows speak for a configuration:
//!
//! - the card: the A100 rows for either A100; the H100 SXM rows for the
//!   H100 SXM, and for the H100 PCIe and the H200 by their architecture
//!   (Hopper: the same matrix-multiply fraction, Bekman's "H200 is the
//!   same", and FlashAttention's rate, [`super::steptime::FLASH_ATTENTION_2`]);
//!   Megatron-Bridge's dense rows on the B200, GB200 and GB300 for those
//!   and, by its architecture, the B300. No row was measured on any other
//!   card (Ada, the RTX 3090, AMD's): those are "not validated", not
//!   borrowed from a neighbour whose efficiencies they only share by
//!   assumption;
//! - the framework: the sources that ran the configuration's framework on
//!   that card when they hold at least [`MIN_ROWS`] rows, or else all of
//!   the card's sources, named (DDP, DeepSpeed);
//! - the model: every row is a dense model's. A mixture of experts is
//!   "not validated": the published MoE rows (Megatron-Core on H100 and
//!   Blackwell) run from 21 % slow to 412 % fast, too far apart to bound
//!   a figure.

use crate::detailed::config::{DetailedConfig, Framework};

/// One source of the validation: its rows' errors, as docs/steptime.md
/// prints them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Validation {
    /// The source's key in docs/steptime.md and the fixture.
    pub source: &'static str,
    /// Its name as the range names it.
    pub name: &'static str,
    /// The card group its rows ran on ([`CARDS`]).
    pub card: &'static str,
    /// The framework that ran them: "megatron", "fsdp1" or "fsdp2".
    pub framework: &'static str,
    /// Rows.
    pub rows: usize,
    /// Median absolute error.
    pub median: f64,
    /// Worst absolute error.
    pub worst: f64,
    /// Lowest signed error.
    pub lowest: f64,
    /// Highest signed error.
    pub highest: f64,
}

/// The sources, as docs/steptime.md's table has them
/// (`tests/fixtures/published_throughput.tsv`, each source cited there):
/// MPT (mosaicml/llm-foundry's benchmarking README at 8c8dd48f7, Composer's
/// FSDP), Korthikanti et al. 2022 Table 5 and Narayanan et al. 2021 Table 1
/// (Megatron-LM), torchtitan's `docs/performance.md` (FSDP2), IBM's
/// foundation-model-stack/fms-fsdp README and the PyTorch blog of
/// 2024-03-13 (FSDP), and the dense Llama rows of Megatron-Bridge's
/// performance summary (NVIDIA-NeMo/Megatron-Bridge
/// `docs/performance-summary.md` @ df0289c1: pre-training) and its archive
/// (`docs/performance-summary-archive.md` @ 067f987df, the 26.06 tables:
/// full fine-tuning and LoRA) on H100 and on Blackwell, and AMD's own
/// MLPerf Training v5.1 submissions (mlcommons/training_results_v5.1 @
/// 4da2d1cd71: Llama 2 70B LoRA on MI325X, MI350X and MI355X, Llama 3.1 8B
/// on MI350X and MI355X), and Megatron-LM's README's H100 weak-scaling
/// table (NVIDIA/Megatron-LM @ f2e5db402c, `images/model_table.png`:
/// Megatron-Core r0.8.0, BF16 GPT models from 1.7B to 462B).
///
/// The first is MPT's A100 rows, the largest source, whose median the
/// page's step-time note quotes.
pub const VALIDATION: [Validation; 11] = [
    source("mpt", "MPT", "A100", "fsdp1", 139, [4.2, 41.3, -16.8, 41.3]),
    source(
        "korthikanti",
        "Korthikanti",
        "A100",
        "megatron",
        8,
        [6.3, 14.1, -14.0, 14.1],
    ),
    source(
        "narayanan",
        "Narayanan",
        "A100",
        "megatron",
        10,
        [2.4, 8.4, -5.7, 8.4],
    ),
    source(
        "torchtitan",
        "torchtitan",
        "A100",
        "fsdp2",
        6,
        [2.8, 8.5, 0.5, 8.5],
    ),
    source("ibm", "IBM", "A100", "fsdp1", 4, [5.7, 16.8, -4.1, 16.8]),
    source(
        "mpt-h100",
        "MPT",
        "H100 SXM",
        "fsdp1",
        52,
        [12.4, 39.6, 1.9, 39.6],
    ),
    source(
        "ibm-h100",
        "IBM",
        "H100 SXM",
        "fsdp1",
        3,
        [14.4, 29.2, 11.9, 29.2],
    ),
    source(
        "mbridge-h100-dense",
        "Megatron-Bridge",
        "H100 SXM",
        "megatron",
        6,
        [5.6, 12.6, -5.6, 12.6],
    ),
    source(
        "mcore-h100",
        "Megatron-Core",
        "H100 SXM",
        "megatron",
        9,
        [4.1, 16.1, -12.1, 16.1],
    ),
    source(
        "mbridge-blackwell-dense",
        "Megatron-Bridge",
        "Blackwell",
        "megatron",
        25,
        [7.8, 22.3, -10.0, 22.3],
    ),
    source(
        "mlperf-amd",
        "MLPerf (AMD)",
        "AMD Instinct",
        "megatron",
        6,
        [12.9, 22.8, -3.1, 22.8],
    ),
];

/// The fewest rows of a card's own framework that set its range alone.
pub const MIN_ROWS: usize = 4;

/// A row of [`VALIDATION`] from its percentages: median, worst, lowest,
/// highest.
const fn source(
    source: &'static str,
    name: &'static str,
    card: &'static str,
    framework: &'static str,
    rows: usize,
    percent: [f64; 4],
) -> Validation {
    Validation {
        source,
        name,
        card,
        framework,
        rows,
        median: percent[0] / 100.0,
        worst: percent[1] / 100.0,
        lowest: percent[2] / 100.0,
        highest: percent[3] / 100.0,
    }
}

/// The card groups the validation covers: the group, the cards measured,
/// and the cards it speaks for by their architecture.
pub const CARDS: [(&str, &[&str], &[&str]); 4] = [
    ("A100", &["a100-40gb", "a100-80gb"], &[]),
    (
        "H100 SXM",
        &["h100-sxm"],
        &["h100-pcie", "h100-nvl", "h100-hbm2e", "h200"],
    ),
    ("Blackwell", &["b200", "gb200", "gb300"], &["b300"]),
    (
        "AMD Instinct",
        &["mi300x", "mi325x", "mi350x", "mi355x"],
        &[],
    ),
];

/// The range of a step's time the validation supports.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    /// Which validation, in words: "the validation on H100 SXM".
    pub basis: String,
    /// Its sources' names: "MPT, IBM".
    pub names: String,
    /// The sources' keys.
    pub sources: Vec<&'static str>,
    /// Their rows.
    pub rows: usize,
    /// The lowest signed error among them.
    pub lowest: f64,
    /// The highest.
    pub highest: f64,
}

impl Range {
    /// A time (or cost) `t` as the model prices it: its range.
    pub fn time(&self, t: f64) -> (f64, f64) {
        (t * (1.0 + self.lowest), t * (1.0 + self.highest))
    }

    /// A rate (tokens/s, TFLOPS, MFU) `r` as the model prices it: its
    /// range.
    pub fn rate(&self, r: f64) -> (f64, f64) {
        (r / (1.0 + self.highest), r / (1.0 + self.lowest))
    }
}

/// The key the validation's table gives `framework`.
fn framework_key(framework: &Framework) -> &'static str {
    match framework {
        Framework::Megatron => "megatron",
        Framework::Fsdp1 { .. } => "fsdp1",
        Framework::Fsdp2 { .. } => "fsdp2",
        Framework::Ddp { .. } => "ddp",
        Framework::DeepSpeed { .. } => "deepspeed",
    }
}

/// The range the validation supports for `cfg` on the card `card` (its
/// key), or why there is none: "not validated on this card".
pub fn range(cfg: &DetailedConfig, card: &str) -> Result<Range, String> {
    let Some(&(group, _, alike)) = CARDS
        .iter()
        .find(|(_, measured, alike)| measured.contains(&card) || alike.contains(&card))
    else {
        let [a, h, b, m] = CARDS.map(|c| c.0);
        return Err(format!(
            "not validated on this card: docs/steptime.md's published rows ran on {a}, {h}, {b} and {m} only"
        ));
    };
    if cfg.arch.moe.is_some() {
        return Err("not validated for a mixture of experts: docs/steptime.md's published MoE rows run from 21 % slow to 412 % fast".to_string());
    }
    let on_card = || VALIDATION.iter().filter(|v| v.card == group);
    let framework = framework_key(&cfg.framework);
    let same: Vec<&Validation> = on_card().filter(|v| v.framework == framework).collect();
    let chosen = if same.iter().map(|v| v.rows).sum::<usize>() < MIN_ROWS {
        on_card().collect()
    } else {
        same
    };
    let mut names: Vec<&str> = chosen.iter().map(|v| v.name).collect();
    names.dedup();
    let architecture = if alike.contains(&card) {
        ", the same architecture"
    } else {
        ""
    };
    Ok(Range {
        basis: format!("the validation on {group}{architecture}"),
        names: names.join(", "),
        sources: chosen.iter().map(|v| v.source).collect(),
        rows: chosen.iter().map(|v| v.rows).sum(),
        lowest: chosen.iter().map(|v| v.lowest).fold(f64::MAX, f64::min),
        highest: chosen.iter().map(|v| v.highest).fold(f64::MIN, f64::max),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detailed::{preset, DetailedConfig};

    fn llama() -> DetailedConfig {
        DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 4096, 8)
    }

    /// Each card group and framework picks its own sources; a card no row
    /// ran on has none.
    #[test]
    fn each_card_and_framework_picks_its_sources() {
        let mut c = llama();
        c.framework = Framework::Fsdp1 {
            sharding: crate::detailed::config::FsdpSharding::Full,
        };
        // The page's note quotes the first source's median: MPT's A100 rows.
        assert_eq!(VALIDATION[0].source, "mpt");
        let h100 = range(&c, "h100-sxm").unwrap();
        assert_eq!(h100.sources, ["mpt-h100", "ibm-h100"]);
        assert_eq!(h100.basis, "the validation on H100 SXM");
        assert_eq!(h100.names, "MPT, IBM");
        assert_eq!((h100.lowest, h100.highest), (0.019, 0.396));
        let h200 = range(&c, "h200").unwrap();
        assert_eq!(
            h200.basis,
            "the validation on H100 SXM, the same architecture"
        );
        c.framework = Framework::Megatron;
        let a100 = range(&c, "a100-80gb").unwrap();
        assert_eq!(a100.sources, ["korthikanti", "narayanan"]);
        assert_eq!(a100.rows, 18);
        c.framework = Framework::DEEPSPEED;
        assert_eq!(range(&c, "a100-40gb").unwrap().sources.len(), 5);
        // Megatron on H100: Megatron-Bridge's six dense rows (Llama 3.1
        // 70B and 405B pre-training, Llama 3 70B full fine-tuning and
        // LoRA) and Megatron-Core's nine weak-scaling rows set the range,
        // the lowest error the latter's 32B, the highest its 1.7B.
        c.framework = Framework::Megatron;
        let h100 = range(&c, "h100-sxm").unwrap();
        assert_eq!(h100.sources, ["mbridge-h100-dense", "mcore-h100"]);
        assert_eq!(h100.names, "Megatron-Bridge, Megatron-Core");
        assert!((h100.lowest + 0.121).abs() < 1e-12 && (h100.highest - 0.161).abs() < 1e-12);
        assert_eq!(h100.rows, 15);
        let b200 = range(&c, "b200").unwrap();
        assert_eq!(b200.sources, ["mbridge-blackwell-dense"]);
        assert_eq!(b200.rows, 25);
        assert_eq!(
            range(&c, "b300").unwrap().basis,
            "the validation on Blackwell, the same architecture"
        );
        c.arch = preset("mixtral-8x7b").unwrap().arch;
        assert!(range(&c, "h100-sxm")
            .unwrap_err()
            .contains("mixture of experts"));
        for card in ["rtx-4090", "rtx-3090", "l40s", "mi300x", "mi325x"] {
            assert!(range(&c, card).unwrap_err().starts_with("not validated"));
        }
    }

    /// The model runs fast on H100: the measured time is longer, the
    /// measured rate lower, than the priced ones.
    #[test]
    fn a_fast_model_bounds_time_from_below() {
        let mut c = llama();
        c.framework = Framework::Fsdp1 {
            sharding: crate::detailed::config::FsdpSharding::Full,
        };
        let r = range(&c, "h100-sxm").unwrap();
        let (lo, hi) = r.time(100.0);
        assert!((lo - 101.9).abs() < 1e-9 && (hi - 139.6).abs() < 1e-9);
        let (lo, hi) = r.rate(139.6);
        assert!((lo - 100.0).abs() < 1e-9 && hi < 139.6);
    }
}
