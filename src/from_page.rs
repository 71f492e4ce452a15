//! The page's side of `--from`, `--trainer` and `--emit` (issue 37): a
//! trainer's reading (a dropped or pasted file, or a trainer's defaults)
//! applied to the page's state, and the state written back as a trainer's
//! file.
//!
//! A reading is the command line's flags ([`crate::detailed::trainers`]);
//! here each flag becomes the address key that holds the same setting
//! ([`crate::url`]), and the pairs are decoded over the page's own address,
//! so the page checks a file's values with the address's checks and keeps
//! what a file set as the address keeps any setting. Flags with no page
//! control are named, never dropped silently. Where a flag needs the whole
//! reading (`--grad-accum`, `--nproc-per-node`, FSDP's own flags) it is set
//! as the command line sets it (`src/cli.rs`, `Args::detailed_config`).
//!
//! ```
//! use membudget::from_page::read_file;
//! use membudget::number::std_to_f64;
//! use membudget::state::PageState;
//!
//! let ds = r#"{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3}}"#;
//! let read = read_file(&PageState::default(), "ds.json", ds, std_to_f64).unwrap();
//! assert_eq!(read.state.detailed.micro_batch, Some(2));
//! assert_eq!(read.state.detailed.parallel.zero, 3);
//! assert!(read.said.starts_with("read from ds.json (DeepSpeed JSON): train_micro_batch_size_per_gpu=2 → --micro-batch 2"));
//! ```

use crate::detailed::config::{Framework, FsdpSharding, Precision};
use crate::detailed::trainers::{self, choice, emit, Reading, Set};
use crate::detailed::DetailedConfig;
use crate::number::ToF64;
use crate::state::{Mode, PageState};
use crate::url;

/// Flags that are one address key with the same value, a line each (flag,
/// space, key: one string, which the page's wasm holds in fewer bytes than
/// a table of pairs; a short list such as [`WHOLE`] does not gain). A switch (no value) writes `1`.
const KEYS: &str = "\
--model model
--overlap-grad-reduce ovgrad
--overlap-param-gather ovparam
--tp-comm-overlap ovtp
--overlap-moe-expert-parallel-comm ovmoe
--moe-a2a-overlap ovmoe
--seq seq
--batch batch
--micro-batch micro
--precision prec
--fp8 fp8
--fp8-param fp8param
--optimizer opt
--optimizer-in-backward optbwd
--compile compile
--compile-scope cscope
--async-tp asynctp
--attention attn
--dropout dropout
--recompute recompute
--recompute-modules rmods
--impl impl
--loss loss
--loss-chunks lchunks
--dp dp
--zero zero
--tp tp
--sp sp
--pp pp
--vp vp
--first-stage-layers ppfirst
--last-stage-layers pplast
--ep ep
--etp etp
--cp cp
--cp-comm cpcomm
--tp-plan tpplan
--schedule schedule
--framework framework
--dp-shard shard
--lora-rank lora
--lora-targets lorat
--lora-dtype loradtype
--quant-base quant
--offload-optimizer offopt
--offload-params offparams
--objective objective
--completion completion
--generations gens
--arch arch
--layers layers
--hidden hidden
--heads heads
--kv-heads kv
--ffn ffn
--vocab vocab
--positions pos";

/// [`KEYS`]'s lines as (flag, key).
fn keys() -> impl Iterator<Item = (&'static str, &'static str)> {
    KEYS.lines().filter_map(|l| l.split_once(' '))
}

/// Switches that turn an address key off: (flag, key), written `0`.
const OFF: [(&str, &str); 4] = [
    ("--no-overlap-grad-reduce", "ovgrad"),
    ("--no-overlap-param-gather", "ovparam"),
    ("--no-tp-comm-overlap", "ovtp"),
    ("--untie-embeddings-and-output-weights", "tied"),
];

/// Flags the page sets after the pairs, from the whole reading (their
/// values need another flag's): read by [`Whole`].
const WHOLE: [&str; 15] = [
    "--vllm-colocate",
    "--grad-accum",
    "--nproc-per-node",
    "--nnodes",
    "--reshard-after-forward",
    "--fsdp-sharding",
    "--fsdp-cpu-offload",
    "--offload-activations",
    "--offload-layers",
    "--lora-dropout",
    "--overlap-comm",
    "--reduce-bucket-size",
    "--prefetch-bucket-size",
    "--sub-group-size",
    "--param-persistence-threshold",
];

/// Whether the page sets `flag` (a flag of a reading); the others are
/// named in [`Applied::said`].
pub fn on_page(flag: &str) -> bool {
    keys().chain(OFF).any(|(f, _)| f == flag) || WHOLE.contains(&flag)
}

/// What a reading did to the page.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The page's state with the reading's settings.
    pub state: PageState,
    /// The command line's printout of the reading
    /// ([`trainers::printout`]), then what the page could not set.
    pub said: String,
}

/// Reads `text` (a trainer's file named `file`, or a launch line) and
/// applies it to `state`. Errors are sentences naming the key.
pub fn read_file(
    state: &PageState,
    file: &str,
    text: &str,
    to_f64: ToF64,
) -> Result<Applied, String> {
    let reading = trainers::read(file, text).map_err(|e| format!("{file}: {e}"))?;
    let mut applied = apply(state, &reading, to_f64).map_err(|e| format!("{file}: {e}"))?;
    applied.said = trainers::printout(file, &reading) + &applied.said;
    if let Some((key, name)) = &reading.out.unknown_model {
        if !reading.out.sets("--model") {
            applied.said += &format!(
                "  {key} names the model '{name}', which is not one of the presets: the page keeps its model (import the model's config.json, or pick a preset)\n"
            );
        }
    }
    Ok(applied)
}

/// A Hugging Face `config.json` applied to `state`: its architecture, priced
/// as transformers builds it (the `hf` kernels) unless the kernels were
/// chosen. `said` names the model type and the parameters it counts, with
/// the importer's notes; errors name the field.
pub fn import_config_json(state: &PageState, json: &str) -> Result<Applied, String> {
    use crate::detailed::Profile;
    use crate::number::grouped;
    let imported = crate::detailed::import_config(json).map_err(|e| e.to_string())?;
    let a = imported.arch;
    let mut said = format!(
        "Read as {}: {} parameters",
        imported.model_type,
        grouped(a.params())
    );
    if a.moe.is_some() {
        said += &format!(", {} active per token", grouped(a.active_params()));
    }
    if a.ssm.is_some() {
        said += ", a Mamba-2 mixer beside the attention in every layer";
    }
    for note in &imported.notes {
        said += &format!("; {note}");
    }
    said.push('.');
    let mut state = *state;
    state.choose_arch(a);
    state.detailed.profile.get_or_insert(Profile::Hf);
    Ok(Applied { state, said })
}

/// `trainer`'s defaults (its kernels, loss, checkpointing, adapters,
/// framework: [`choice`]) applied to `state`, which then names the trainer.
/// `None` for a name that is not one of [`choice::TRAINERS`].
pub fn choose_trainer(state: &PageState, trainer: &str, to_f64: ToF64) -> Option<Applied> {
    let name = *choice::TRAINERS.iter().find(|t| **t == trainer)?;
    let lora = state.detailed.lora_rank.is_some();
    // The trainer's own precision if it has one, else the page's (as the
    // command line's last `--precision`).
    let own_bf16 = choice::defaults(name, false, false)?
        .out
        .set
        .iter()
        .find(|s| s.flag == "--precision")
        .map(|s| s.arg == "bf16");
    let bf16 = own_bf16.unwrap_or(state.detailed.precision == Precision::Bf16);
    let reading = choice::defaults(name, lora, bf16)?;
    let mut applied = apply(state, &reading, to_f64).ok()?;
    applied.state.detailed.trainer = Some(name);
    applied.said = trainers::printout(&format!("--trainer {name}"), &reading);
    Some(applied)
}

/// `reading`'s settings over `state`: each flag as its address key, decoded
/// over the page's address, then the flags that need the whole reading.
/// `said` lists the flags with no control on the page. `to_f64` is the
/// decimal conversion the address is read with ([`crate::number`]: the page
/// passes the browser's).
pub fn apply(state: &PageState, reading: &Reading, to_f64: ToF64) -> Result<Applied, String> {
    let set = &reading.out.set;
    let detailed = PageState {
        mode: Mode::Detailed,
        pin: None,
        ..*state
    };
    let mut query = form_urlencoded::Serializer::new(url::encode(&detailed));
    // The framework first: DeepSpeed's own keys need it before them.
    let (first, rest): (Vec<&Set>, Vec<&Set>) = set.iter().partition(|s| s.flag == "--framework");
    let mut skipped = Vec::new();
    for s in first.into_iter().chain(rest) {
        if let Some((_, key)) = OFF.iter().find(|(flag, _)| *flag == s.flag) {
            query.append_pair(key, "0");
            continue;
        }
        match keys().find(|(flag, _)| *flag == s.flag) {
            Some((_, key)) if s.arg.is_empty() => {
                query.append_pair(key, "1");
            }
            Some((_, key)) => {
                query.append_pair(key, &s.arg);
            }
            None if WHOLE.contains(&s.flag) => {}
            None => skipped.push(s),
        }
    }
    // The keys alone: the address's repairs wait until the reading's whole
    // flags (accumulation, the launcher's GPUs) have set the batch.
    let decoded = url::decode_keys(&query.finish(), to_f64);
    if let Some(bad) = decoded.ignored.first() {
        let from = set
            .iter()
            .find(|s| keys().any(|(flag, key)| key == bad.key && flag == s.flag));
        return Err(match from {
            Some(s) => format!(
                "{} = {} gives {} {}, which is refused: {}",
                s.key, s.value, s.flag, s.arg, bad.reason
            ),
            None => bad.to_string(),
        });
    }
    let mut next = decoded.state;
    next.mode = Mode::Detailed;
    next.pin = state.pin;
    Whole::of(set).apply(&mut next)?;
    // Then what the address repairs on the whole, said as it says it.
    let mut repaired = Vec::new();
    url::repair(&mut next, &mut repaired);
    let said = skipped
        .iter()
        .map(|s| {
            format!(
                "  not on the page: {} = {} → {} {} (the command line's --from reads it)\n",
                s.key, s.value, s.flag, s.arg
            )
        })
        .chain(repaired.iter().map(|r| format!("  repaired: {r}\n")))
        .collect();
    Ok(Applied { state: next, said })
}

/// A reading's flags and values, the last value winning (as clap's), for
/// the flags of [`WHOLE`].
#[derive(Default)]
struct Whole<'a> {
    values: Vec<(&'static str, &'a str)>,
}

impl<'a> Whole<'a> {
    fn of(set: &'a [Set]) -> Self {
        let values = set.iter().map(|s| (s.flag, s.arg.as_str())).collect();
        Whole { values }
    }

    fn get(&self, flag: &str) -> Option<&'a str> {
        self.values
            .iter()
            .rev()
            .find(|(f, _)| *f == flag)
            .map(|(_, v)| *v)
    }

    /// A whole number (written plainly or as `5e8`).
    fn count(&self, flag: &str, least: u64, most: u64) -> Result<Option<u64>, String> {
        self.get(flag)
            .map(|v| {
                scaled(v, 0)
                    .filter(|x| (least..=most).contains(x))
                    .ok_or_else(|| {
                        format!("{flag} must be a whole number from {least} to {most} (got {v})")
                    })
            })
            .transpose()
    }

    /// A fraction as a whole percent in `least..=most`.
    fn percent(&self, flag: &str, least: u64, most: u64) -> Result<Option<u64>, String> {
        self.get(flag)
            .map(|v| {
                scaled(v, 2)
                    .filter(|x| (least..=most).contains(x))
                    .ok_or_else(|| {
                        format!("{flag} must be a fraction from {least} % to {most} % (got {v})")
                    })
            })
            .transpose()
    }

    /// Sets the flags that need the whole reading, as the command line
    /// does (`src/cli.rs`: `read_framework`, `read_deepspeed`,
    /// `read_offload`, `data_parallel`, `read_batch`).
    fn apply(&self, s: &mut PageState) -> Result<(), String> {
        self.framework(&mut s.detailed.framework)?;
        let d = &mut s.detailed;
        if let Some(v) = self.count("--vocab", 1, 1 << 22)? {
            d.arch.vocab = v;
        }
        if self.get("--fsdp-cpu-offload").is_some() {
            d.offload.optimizer = true;
            d.offload.params = true;
        }
        if let Some(kind) = self.get("--offload-activations") {
            d.offload.activations = true;
            d.offload.activations_by = match kind {
                "" => Default::default(),
                k => k.parse()?,
            };
        }
        if let Some(n) = self.count("--offload-layers", 1, 1 << 20)? {
            d.offload.activations = true;
            d.offload.activation_layers = n;
        }
        if let Some(p) = self.percent("--lora-dropout", 0, 99)? {
            d.lora_dropout_percent = p;
        }
        if let Some(p) = self.percent("--vllm-colocate", 5, 95)? {
            d.vllm_percent = Some(p);
        }
        self.batch(s)
    }

    /// `--reshard-after-forward`, `--fsdp-sharding` and DeepSpeed's sizes on
    /// the framework the reading chose.
    fn framework(&self, f: &mut Framework) -> Result<(), String> {
        if let Some(r) = self.get("--reshard-after-forward") {
            let Framework::Fsdp2 { .. } = f else {
                return Err("--reshard-after-forward needs --framework fsdp2".into());
            };
            *f = Framework::Fsdp2 {
                reshard_after_forward: r == "true",
            };
        }
        if let Some(x) = self.get("--fsdp-sharding") {
            let Framework::Fsdp1 { .. } = f else {
                return Err("--fsdp-sharding needs --framework fsdp1".into());
            };
            *f = Framework::Fsdp1 {
                sharding: x.parse::<FsdpSharding>()?,
            };
        }
        let ds = [
            "--overlap-comm",
            "--reduce-bucket-size",
            "--prefetch-bucket-size",
            "--sub-group-size",
            "--param-persistence-threshold",
        ];
        let Framework::DeepSpeed {
            reduce_bucket_size,
            prefetch_bucket_size,
            overlap_comm,
            sub_group_size,
            param_persistence_threshold,
        } = f
        else {
            return match ds.iter().find(|flag| self.get(flag).is_some()) {
                Some(flag) => Err(format!("{flag} needs --framework deepspeed")),
                None => Ok(()),
            };
        };
        if let Some(o) = self.get(ds[0]) {
            *overlap_comm = Some(o == "true");
        }
        let slots = [
            (reduce_bucket_size, 1_000),
            (prefetch_bucket_size, 0),
            (sub_group_size, 1_000),
            (param_persistence_threshold, 0),
        ];
        for ((slot, least), flag) in slots.into_iter().zip(&ds[1..]) {
            if let Some(v) = self.count(flag, least, 10_000_000_000)? {
                *slot = v;
            }
        }
        Ok(())
    }

    /// The launcher's GPUs (`--nproc-per-node` × `--nnodes`) give the
    /// data-parallel size left by tp × pp × cp and the GPUs per node; with
    /// no `--batch`, the batch is micro-batch × accumulation × dp.
    fn batch(&self, s: &mut PageState) -> Result<(), String> {
        let d = &mut s.detailed;
        if let Some(nproc) = self.count("--nproc-per-node", 1, 4096)? {
            let world = nproc * self.count("--nnodes", 1, 65536)?.unwrap_or(1);
            let p = &d.parallel;
            let model = p.tp * p.pp * p.cp;
            if !world.is_multiple_of(model) || !(1..=4096).contains(&(world / model)) {
                return Err(format!(
                    "--nproc-per-node × --nnodes = {world} GPUs do not split into tp × pp × cp = {model}"
                ));
            }
            d.parallel.dp = world / model;
            if nproc <= 64 {
                d.offload.gpus_per_node = nproc;
            }
        }
        let accum = self.count("--grad-accum", 1, 1 << 20)?;
        let given = |f: &str| self.get(f).is_some();
        let sized = ["--micro-batch", "--grad-accum", "--nproc-per-node"];
        if !given("--batch") && sized.iter().any(|f| given(f)) {
            let grpo = matches!(d.objective, crate::detailed::Objective::Grpo { .. });
            let micro = d.micro_batch.unwrap_or(if grpo {
                d.rollout.generations
            } else {
                crate::detailed::config::defaults::MICRO_BATCH
            });
            let batch = micro * accum.unwrap_or(1) * d.parallel.dp;
            s.config.batch = crate::budget::Field::Batch.clamp(batch as f64) as u32;
        }
        Ok(())
    }
}

/// The sentence beside the answer naming the trainer chosen and the
/// defaults it applies to `cfg` (with LoRA or not, in bf16 or not).
pub fn trainer_words(trainer: &str, cfg: &DetailedConfig) -> String {
    let bf16 = cfg.precision == Precision::Bf16;
    let flags: Vec<String> = choice::defaults(trainer, cfg.lora_rank.is_some(), bf16)
        .map(|r| r.flags().collect())
        .unwrap_or_default();
    format!(
        " Trainer: {trainer}, its defaults applied when chosen ({}; docs/trainers.md).",
        flags.join(" ")
    )
}

/// The name pasted text is read under (a reader picks the format by the
/// name's extension, then by the content): a first line `{` is JSON, a
/// `[table]` header TOML; anything else is left to the reader (a YAML of
/// `key: value` lines, else a command line).
pub fn pasted_name(text: &str) -> &'static str {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or("");
    if first.starts_with('{') {
        "pasted.json"
    } else if first.starts_with('[') && first.ends_with(']') {
        "pasted.toml"
    } else {
        "pasted"
    }
}

/// `text` × 10^`by`, rounded: a decimal number written plainly, with a
/// fraction or an exponent (`12`, `0.05`, `5e8`), read without Rust's
/// float parser, whose tables would cost the page about 10 KB.
fn scaled(text: &str, by: i32) -> Option<u64> {
    let t = text.trim();
    let (m, e) = t.split_once(['e', 'E']).unwrap_or((t, "0"));
    let exp: i32 = e.strip_prefix('+').unwrap_or(e).parse().ok()?;
    let (int, frac) = m.split_once('.').unwrap_or((m, ""));
    let all = [int, frac].concat();
    if all.is_empty() || !all.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits: u64 = all.parse().ok()?;
    let shift = exp.checked_add(by)?.checked_sub(frac.len() as i32)?;
    if shift >= 0 {
        digits.checked_mul(10u64.checked_pow(shift as u32)?)
    } else {
        let d = 10u64.checked_pow(shift.unsigned_abs())?;
        Some(digits / d + u64::from(digits % d >= d.div_ceil(2)))
    }
}

/// The `--emit` format that writes `trainer`'s file, if any: TRL and
/// transformers share TrainingArguments' keys; DeepSpeed's is its JSON.
pub fn emit_target(trainer: &str) -> Option<emit::Target> {
    match trainer {
        "hf" | "trl" => Some(emit::Target::Trl),
        other => other.parse().ok(),
    }
}

/// `cfg` as `trainer`'s file (what `--emit` prints), or why not, in words.
pub fn fragment(cfg: &DetailedConfig, trainer: &str) -> Result<String, String> {
    let target = emit_target(trainer).ok_or_else(|| {
        format!(
            "{trainer} has no file membudget writes (it writes {})",
            emit::Target::NAMES.join(", ")
        )
    })?;
    emit::emit(cfg, target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_file(state: &PageState, file: &str, text: &str) -> Result<Applied, String> {
        super::read_file(state, file, text, crate::number::std_to_f64)
    }

    fn apply(state: &PageState, reading: &Reading) -> Result<Applied, String> {
        super::apply(state, reading, crate::number::std_to_f64)
    }

    /// Decimal numbers scaled without the float parser, as the command
    /// line's parse and round them.
    #[test]
    fn numbers_are_scaled_exactly() {
        assert_eq!(scaled("12", 0), Some(12));
        assert_eq!(scaled("5e8", 0), Some(500_000_000));
        assert_eq!(scaled("1.5E3", 0), Some(1500));
        assert_eq!(scaled("0.05", 2), Some(5));
        assert_eq!(scaled("0.125", 2), Some(13));
        assert_eq!(scaled(".5", 2), Some(50));
        assert_eq!(scaled("0", 2), Some(0));
        for bad in ["", "-1", "x", "1e", "1e99", "1.2.3", "99999999999999999999"] {
            assert_eq!(scaled(bad, 0), None, "{bad}");
        }
    }

    /// Pasted text is named by its first line; comments and blank lines
    /// are skipped.
    #[test]
    fn pasted_text_is_named_by_its_first_line() {
        assert_eq!(pasted_name("\n  {\"bf16\": {}}"), "pasted.json");
        assert_eq!(
            pasted_name("# torchtitan\n[training]\nseq_len = 8"),
            "pasted.toml"
        );
        assert_eq!(pasted_name("batch_size: 2"), "pasted");
        assert_eq!(
            pasted_name("torchrun --nproc-per-node 8 train.py"),
            "pasted"
        );
        assert_eq!(pasted_name(""), "pasted");
    }

    /// A flag the page has no control for is named with its key; the rest
    /// of the file applies.
    #[test]
    fn flags_not_on_the_page_are_named() {
        let s = PageState::default();
        let a = read_file(
            &s,
            "hf.json",
            "{\"per_device_train_batch_size\": 2, \"optim\": \"adamw_torch_fused\"}",
        )
        .unwrap();
        assert!(
            a.said
                .contains("not on the page: optim = adamw_torch_fused → --adam fused"),
            "{}",
            a.said
        );
        assert_eq!(a.state.detailed.micro_batch, Some(2));
        assert!(!on_page("--adam") && on_page("--grad-accum") && on_page("--micro-batch"));
    }

    /// The launcher's GPUs give the data-parallel size left by tp, and the
    /// batch micro × accumulation × dp, as the command line's.
    #[test]
    fn the_launchers_gpus_set_dp_and_the_batch() {
        let line = "torchrun --nproc-per-node 8 train.py";
        let s = PageState::default();
        let r = trainers::read("run.sh", line).unwrap();
        let mut reading = r.clone();
        reading.out.set("tp", 2, "--tp", 2);
        reading.out.set("accum", 3, "--grad-accum", 3);
        reading.out.set("micro", 2, "--micro-batch", 2);
        let a = apply(&s, &reading).unwrap();
        assert_eq!(a.state.detailed.parallel.dp, 4);
        assert_eq!(a.state.config.batch, 2 * 3 * 4);
        assert_eq!(a.state.detailed.offload.gpus_per_node, 8);
        let mut bad = r;
        bad.out.set("tp", 3, "--tp", 3);
        assert!(apply(&s, &bad)
            .unwrap_err()
            .contains("do not split into tp × pp × cp = 3"));
    }
}
