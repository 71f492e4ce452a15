//! What a row changes: the command-line flags that turn the reader's
//! configuration into a row's, derived from the two configurations by one
//! table, so that a row's text can never hide a change its *Apply* makes;
//! and what the reader holds fixed (`--keep`), read from the same table.
//!
//! ```
//! use membudget::detailed::{plan::diff::changes, preset, DetailedConfig, Schedule};
//!
//! let from = DetailedConfig::new(preset("llama-3.1-8b").unwrap().arch, 4096, 8);
//! let mut to = from;
//! to.parallel.pp = 2;
//! to.parallel.schedule = Schedule::ZbH1;
//! assert_eq!(changes(&from, &to), ["--pp", "2", "--schedule", "zb-h1"]);
//! ```

use crate::detailed::config::{DetailedConfig, Loss, LOSS_CHUNKS};

/// What the reader can hold fixed: each lever names the settings a row
/// may change (`--keep optimizer,recompute`, a box per lever on the page).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lever {
    /// `--batch` (ZeRO-3 over more GPUs, each with its micro-batch).
    Batch,
    /// `--micro-batch`.
    MicroBatch,
    /// `--attention`.
    Attention,
    /// `--recompute`.
    Recompute,
    /// `--optimizer`, `--optimizer-in-backward`.
    Optimizer,
    /// `--precision`.
    Precision,
    /// The layout: `--dp`, `--tp`, `--sp`, `--pp`, `--vp`, `--schedule`,
    /// `--cp`, and Megatron-Core's expert all-to-all overlap.
    Parallelism,
    /// `--zero`, `--dp-shard`.
    Zero,
    /// `--offload-optimizer`, `--offload-activations`.
    Offload,
    /// LoRA and QLoRA: `--lora-rank`, `--lora-targets`, `--quant-base`,
    /// `--impl`.
    Lora,
    /// `--vllm-sleep`.
    Vllm,
    /// `--loss`, `--loss-chunks`.
    Loss,
    /// `--compile`.
    Compile,
}

impl Lever {
    /// Every lever, in the order `--help` and the page list them.
    pub const ALL: [Lever; 13] = [
        Lever::Optimizer,
        Lever::Recompute,
        Lever::MicroBatch,
        Lever::Zero,
        Lever::Offload,
        Lever::Parallelism,
        Lever::Attention,
        Lever::Precision,
        Lever::Lora,
        Lever::Batch,
        Lever::Vllm,
        Lever::Loss,
        Lever::Compile,
    ];

    /// Its name, as `--keep` and the address spell it.
    pub fn name(self) -> &'static str {
        match self {
            Lever::Batch => "batch",
            Lever::MicroBatch => "micro-batch",
            Lever::Attention => "attention",
            Lever::Recompute => "recompute",
            Lever::Optimizer => "optimizer",
            Lever::Precision => "precision",
            Lever::Parallelism => "parallelism",
            Lever::Zero => "zero",
            Lever::Offload => "offload",
            Lever::Lora => "lora",
            Lever::Vllm => "vllm",
            Lever::Loss => "loss",
            Lever::Compile => "compile",
        }
    }

    /// The lever named `name`, if any.
    pub fn parse(name: &str) -> Option<Lever> {
        Lever::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(name.trim()))
    }

    fn bit(self) -> u16 {
        1 << self as u16
    }
}

/// The levers held fixed: no row changes a setting of theirs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Keep(pub u16);

impl Keep {
    /// Nothing held: every row the planner finds.
    pub const NONE: Keep = Keep(0);

    /// Holds `lever` too.
    pub fn with(self, lever: Lever) -> Keep {
        Keep(self.0 | lever.bit())
    }

    /// Holds `lever` or lets it go.
    pub fn set(&mut self, lever: Lever, held: bool) {
        self.0 = if held {
            self.0 | lever.bit()
        } else {
            self.0 & !lever.bit()
        };
    }

    /// Whether `lever` is held.
    pub fn holds(self, lever: Lever) -> bool {
        self.0 & lever.bit() != 0
    }

    /// The levers held, as `--keep` reads them ("optimizer,recompute").
    pub fn names(self) -> String {
        Lever::ALL
            .into_iter()
            .filter(|&l| self.holds(l))
            .map(Lever::name)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// `--keep`'s list, comma-separated; an unknown name is refused with
    /// the names there are.
    pub fn parse(list: &str) -> Result<Keep, String> {
        list.split(',')
            .filter(|n| !n.trim().is_empty())
            .try_fold(Keep::NONE, |k, n| {
                Lever::parse(n).map(|l| k.with(l)).ok_or_else(|| {
                    format!(
                        "--keep takes {} (got {})",
                        Lever::ALL.map(Lever::name).join(", "),
                        n.trim()
                    )
                })
            })
    }

    /// Whether a row from `from` to `to` leaves every held lever alone.
    pub fn allows(self, from: &DetailedConfig, to: &DetailedConfig) -> bool {
        // The micro-batch is held when each GPU runs as many sequences
        // at a time as before, whatever flag says so.
        self == Keep::NONE
            || changed(from, to).iter().all(|(s, _)| {
                !self.holds(s.lever) || (s.lever == Lever::MicroBatch && from.micro() == to.micro())
            })
    }
}

/// One setting a row may change: its flag, its kind, its lever, and its
/// value in a configuration as the flag spells it (a switch's: "on" or "").
struct Setting {
    flag: &'static str,
    kind: Kind,
    lever: Lever,
    value: fn(&DetailedConfig, &DetailedConfig) -> String,
}

/// A flag with a value, or a switch with the flag that turns it off
/// (none where no row turns it off).
#[derive(Clone, Copy)]
enum Kind {
    Valued,
    Switch(Option<&'static str>),
}

/// A flag with a value, read from the configuration itself.
macro_rules! valued {
    ($flag:literal, $lever:ident, |$c:ident| $read:expr) => {
        Setting {
            flag: $flag,
            kind: Kind::Valued,
            lever: Lever::$lever,
            value: |$c, _| $read,
        }
    };
}

/// A switch, on or off.
macro_rules! switch {
    ($flag:literal, $off:expr, $lever:ident, |$c:ident| $on:expr) => {
        Setting {
            flag: $flag,
            kind: Kind::Switch($off),
            lever: Lever::$lever,
            value: |$c, _| if $on { "on".into() } else { String::new() },
        }
    };
}

/// The settings a row may change, in the order a row names them. Each
/// value is read as the command line would give it after the row's other
/// flags: `value(cfg, to)` for the reader's `cfg` is what `cfg`'s own
/// flags leave in place once the row's others are applied (a micro-batch
/// left to its default follows the batch and dp).
const SETTINGS: &[Setting] = &[
    valued!("--batch", Batch, |c| c.batch.to_string()),
    Setting {
        flag: "--micro-batch",
        kind: Kind::Valued,
        lever: Lever::MicroBatch,
        // Unset, the micro-batch is the batch per replica of the row.
        value: |c, to| {
            c.micro_batch
                .unwrap_or(to.batch / to.parallel.dp.max(1))
                .max(1)
                .to_string()
        },
    },
    valued!("--attention", Attention, |c| c.attention.name().into()),
    valued!("--recompute", Recompute, |c| c.recompute.name().into()),
    // Megatron's block method's count, 0 for every layer.
    valued!("--recompute-layers", Recompute, |c| c
        .block_layers()
        .to_string()),
    valued!("--optimizer", Optimizer, |c| c.optimizer.name().into()),
    valued!("--precision", Precision, |c| c.precision.name().into()),
    valued!("--dp", Parallelism, |c| c.parallel.dp.to_string()),
    valued!("--zero", Zero, |c| c.parallel.zero.to_string()),
    Setting {
        flag: "--dp-shard",
        kind: Kind::Valued,
        lever: Lever::Zero,
        // Sharding over all of dp is a group of dp (the flag's default).
        value: |c, to| c.parallel.dp_shard.unwrap_or(to.parallel.dp).to_string(),
    },
    valued!("--tp", Parallelism, |c| c.parallel.tp.to_string()),
    valued!("--pp", Parallelism, |c| c.parallel.pp.to_string()),
    valued!("--vp", Parallelism, |c| c.parallel.vp.to_string()),
    valued!("--schedule", Parallelism, |c| c
        .parallel
        .schedule
        .name()
        .into()),
    valued!("--cp", Parallelism, |c| c.parallel.cp.to_string()),
    switch!("--sp", Some("--no-sp"), Parallelism, |c| c.parallel.sp),
    switch!(
        "--offload-optimizer",
        Some("--no-offload-optimizer"),
        Offload,
        |c| c.offload.optimizer
    ),
    valued!("--gpus-per-node", Parallelism, |c| c
        .offload
        .gpus_per_node
        .to_string()),
    valued!("--lora-rank", Lora, |c| c
        .lora_rank
        .map_or(String::new(), |r| r.to_string())),
    valued!("--lora-targets", Lora, |c| c.lora_targets.names()),
    valued!("--quant-base", Lora, |c| c.base_quant.name().into()),
    valued!("--impl", Lora, |c| c.profile.name().into()),
    valued!("--loss", Loss, |c| c.loss.name().into()),
    // Chunks are a count only under the chunked loss, torchtune's 8 unless
    // said.
    valued!("--loss-chunks", Loss, |c| if c.loss == Loss::Chunked {
        c.loss_chunks
    } else {
        LOSS_CHUNKS
    }
    .to_string()),
    // The levers only ever turn these on.
    valued!(
        "--offload-activations",
        Offload,
        |c| if c.offload.activations {
            c.offload.activations_by.name().into()
        } else {
            String::new()
        }
    ),
    // Megatron-Core's first layers offloaded (none: every layer's, or no
    // offload, which --offload-activations names).
    valued!(
        "--offload-layers",
        Offload,
        |c| match c.offload.activation_layers {
            0 => String::new(),
            n => n.to_string(),
        }
    ),
    // The layouts only ever turn it on.
    switch!(
        "--overlap-moe-expert-parallel-comm",
        None,
        Parallelism,
        |c| c.overlap.moe_a2a
    ),
    switch!("--optimizer-in-backward", None, Optimizer, |c| c
        .optimizer_in_backward),
    switch!("--compile", None, Compile, |c| c.compile),
    // The levers only ever put the engine to sleep.
    switch!("--vllm-sleep", None, Vllm, |c| c
        .rollout
        .vllm
        .is_some_and(|v| v.sleep)),
];

/// The settings that differ from `from` to `to`, with `to`'s value.
fn changed(from: &DetailedConfig, to: &DetailedConfig) -> Vec<(&'static Setting, String)> {
    SETTINGS
        .iter()
        .filter_map(|s| {
            let new = (s.value)(to, to);
            ((s.value)(from, to) != new).then_some((s, new))
        })
        .collect()
}

/// The command-line flags that turn `from` into `to`: added to `from`'s
/// own flags, they give `to`; each names a setting that differs. A row's
/// text is this list, so two rows that read the same are the same
/// configuration.
pub fn changes(from: &DetailedConfig, to: &DetailedConfig) -> Vec<String> {
    let mut out = Vec::new();
    for (s, new) in changed(from, to) {
        match s.kind {
            // A value that went away (LoRA's targets without LoRA) is no
            // flag: the setting it belongs to names the change.
            Kind::Valued if new.is_empty() => {}
            Kind::Valued => out.extend([s.flag.to_string(), new]),
            Kind::Switch(_) if !new.is_empty() => out.push(s.flag.into()),
            Kind::Switch(off) => out.extend(off.map(String::from)),
        }
    }
    out
}

/// The levers a row from `from` to `to` moves.
pub fn levers(from: &DetailedConfig, to: &DetailedConfig) -> Vec<Lever> {
    let mut out: Vec<Lever> = Vec::new();
    for (s, _) in changed(from, to) {
        if !out.contains(&s.lever) {
            out.push(s.lever);
        }
    }
    out
}
