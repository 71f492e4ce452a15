//! The command line: the lesson's printout (or JSON) for one configuration.

use crate::budget::{estimate, Breakdown, Field, TrainingConfig};
use clap::Parser;

/// Prints the lesson's GPU training-memory budget. With no flags: the
/// lesson's example (7 B parameters, batch 4, sequence 2048, hidden 4096,
/// 32 layers, mixed precision).
#[derive(Parser, Debug)]
#[command(name = "membudget", version, about, long_about = None, allow_negative_numbers = true)]
pub struct Args {
    /// Model size in billions of parameters (0.1–1000).
    #[arg(long, value_name = "B", value_parser = field_parser(Field::ModelSize), default_value = "7")]
    pub params: f64,
    /// Batch size in sequences (1–1024).
    #[arg(long, value_name = "N", value_parser = field_parser(Field::Batch), default_value = "4")]
    pub batch: f64,
    /// Sequence length in tokens (128–131072).
    #[arg(long, value_name = "TOKENS", value_parser = field_parser(Field::SeqLen), default_value = "2048")]
    pub seq: f64,
    /// Hidden size (128–65536).
    #[arg(long, value_name = "H", value_parser = field_parser(Field::Hidden), default_value = "4096")]
    pub hidden: f64,
    /// Number of layers (1–256).
    #[arg(long, value_name = "L", value_parser = field_parser(Field::Layers), default_value = "32")]
    pub layers: f64,
    /// Train in plain fp32 instead of mixed precision.
    #[arg(long)]
    pub fp32: bool,
    /// Print JSON: {"model": "lesson", "bytes": {...}, "gb": {...}}.
    #[arg(long)]
    pub json: bool,
}

/// A clap value parser that accepts what [`Field::parse`] accepts and
/// reports its message otherwise.
fn field_parser(field: Field) -> impl Fn(&str) -> Result<f64, String> + Clone {
    move |text| field.parse(text).map_err(|e| e.to_string())
}

impl Args {
    /// The configuration these flags describe.
    pub fn config(&self) -> Result<TrainingConfig, crate::budget::ConfigError> {
        let mut cfg = TrainingConfig {
            mixed_precision: !self.fp32,
            ..TrainingConfig::default()
        };
        for (field, value) in [
            (Field::ModelSize, self.params),
            (Field::Batch, self.batch),
            (Field::SeqLen, self.seq),
            (Field::Hidden, self.hidden),
            (Field::Layers, self.layers),
        ] {
            cfg = cfg.with(field, value)?;
        }
        Ok(cfg)
    }
}

/// The lesson's six lines, then the dominant term and its share.
pub fn render_text(b: &Breakdown) -> String {
    let d = b.dominant();
    format!(
        "{}dominant: {} ({:.1} of {:.1} GB, {:.0} %)\n",
        b.lesson_table(),
        d.lesson_key(),
        b.gb(d),
        b.total_gb(),
        b.share(d) * 100.0
    )
}

/// Runs the command for parsed flags: the text to print, or the error.
pub fn run(args: &Args) -> Result<String, crate::budget::ConfigError> {
    let b = estimate(&args.config()?)?;
    Ok(if args.json {
        crate::export::to_json(&b)
    } else {
        render_text(&b)
    })
}
