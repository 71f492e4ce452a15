//! `--from FILE`: a trainer's own configuration read into flags placed
//! before the user's own, so that the user's flags (and later files)
//! override it; what was read, for the printout and `inputs.from`.

use crate::cli::{Args, CliError, FromRead};
use crate::detailed::trainers::{self, Reading};
use crate::report::{FromIgnored, FromReport, FromSet};
use clap::Parser;
use std::ffi::OsString;

/// `args` (parsed from `argv`) with its `--from` files applied: each file's
/// flags, in order, then `argv`'s own. Errors name the file and the key.
pub fn with_from(args: Args, argv: &[OsString]) -> Result<Args, CliError> {
    if args.from.from.is_empty() && args.from.trainer.is_none() {
        return Ok(args);
    }
    let own_model =
        args.model.model.is_some() || args.model.config.is_some() || args.model.arch.is_some();
    let mut read = Vec::new();
    let mut flags: Vec<OsString> = Vec::new();
    for path in &args.from.from {
        let file = path.display().to_string();
        let text = std::fs::read(path).map_err(|e| format!("--from {file}: {e}"))?;
        let text = String::from_utf8(text).map_err(|_| format!("--from {file}: not UTF-8 text"))?;
        let mut reading =
            trainers::read(&file, &text).map_err(|e| format!("--from {file}: {e}"))?;
        if own_model {
            // The user's --model, --config or --arch names the model.
            let (models, rest): (Vec<_>, Vec<_>) =
                reading.out.set.drain(..).partition(|s| s.flag == "--model");
            reading.out.set = rest;
            for s in models {
                reading.out.ignore(
                    &s.key,
                    &s.value,
                    "your --model, --config or --arch names the model",
                );
            }
            reading.out.unknown_model = None;
        }
        check_flags(&file, &reading)?;
        flags.extend(reading.flags().map(OsString::from));
        read.push(FromRead { file, reading });
    }
    if !own_model
        && !read.iter().any(|r| {
            r.reading
                .out
                .set
                .iter()
                .any(|s| matches!(s.flag, "--model" | "--arch"))
        })
    {
        if let Some(r) = read
            .iter()
            .rev()
            .find(|r| r.reading.out.unknown_model.is_some())
        {
            let (key, name) = r.reading.out.unknown_model.clone().unwrap_or_default();
            return Err(format!(
                "--from {}: {key} names the model '{name}', which is not one of membudget's presets: give its Hugging Face config.json with --config PATH (or a preset with --model)",
                r.file
            ));
        }
    }
    if let Some(t) = &args.from.trainer {
        let reading = trainer_defaults(t, &flags, argv);
        let mut first: Vec<OsString> = reading.flags().map(OsString::from).collect();
        first.append(&mut flags);
        flags = first;
        read.insert(
            0,
            FromRead {
                file: format!("--trainer {t}"),
                reading,
            },
        );
    }
    if other_framework(&flags, argv) {
        flags = without_megatron_overlaps(&mut read);
    }
    let mut all = vec![argv.first().cloned().unwrap_or_else(|| "membudget".into())];
    all.extend(flags);
    all.extend(argv.iter().skip(1).cloned());
    let mut merged = Args::try_parse_from(all).map_err(|e| first_line(&e.to_string()))?;
    merged.from.read = read;
    Ok(merged)
}

/// Whether the last `--framework` of the files' `flags` and `argv` is
/// another than Megatron's.
fn other_framework(flags: &[OsString], argv: &[OsString]) -> bool {
    let later: Vec<String> = flags
        .iter()
        .chain(argv.iter().skip(1))
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    let last = later
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match f.strip_prefix("--framework") {
            Some("") => later.get(i + 1).cloned(),
            Some(v) => v.strip_prefix('=').map(String::from),
            None => None,
        })
        .next_back();
    last.is_some_and(|f| !f.eq_ignore_ascii_case("megatron"))
}

/// A Megatron-LM script's overlap settings (`--no-overlap-grad-reduce`, …,
/// `--overlap-moe-expert-parallel-comm`, which only `--framework megatron`
/// takes) under another framework: each moved to the reading's ignored
/// keys with why; the readings' flags, in order, without them.
fn without_megatron_overlaps(read: &mut [FromRead]) -> Vec<OsString> {
    const MEGATRON_ONLY: [&str; 4] = [
        "--no-overlap-grad-reduce",
        "--no-overlap-param-gather",
        "--no-tp-comm-overlap",
        "--overlap-moe-expert-parallel-comm",
    ];
    let mut flags = Vec::new();
    for r in read.iter_mut() {
        let out = &mut r.reading.out;
        let (megatron, kept): (Vec<_>, Vec<_>) = out
            .set
            .drain(..)
            .partition(|s| MEGATRON_ONLY.contains(&s.flag));
        out.set = kept;
        for s in megatron {
            out.ignore(
                &s.key,
                &s.value,
                "Megatron-Core's overlap: the run's --framework is another",
            );
        }
        flags.extend(r.reading.flags().map(OsString::from));
    }
    flags
}

/// `--trainer`'s defaults for the run the files' `flags` and `argv` ask
/// for: with LoRA or not, in bf16 or not (the last `--precision`, else the
/// trainer's own).
fn trainer_defaults(trainer: &str, flags: &[OsString], argv: &[OsString]) -> Reading {
    let later: Vec<String> = flags
        .iter()
        .chain(argv.iter().skip(1))
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    let lora = later
        .iter()
        .any(|f| f == "--lora-rank" || f.starts_with("--lora-rank="));
    let own = trainers::choice::defaults(trainer, false, false)
        .and_then(|r| r.out.set.into_iter().find(|s| s.flag == "--precision"))
        .map(|s| s.arg);
    let bf16 = last_value(&later, "--precision")
        .or(own)
        .is_some_and(|p| p.eq_ignore_ascii_case("bf16"));
    let mut reading = trainers::choice::defaults(trainer, lora, bf16).unwrap_or(Reading {
        format: trainers::Format::TrainerDefaults,
        out: Default::default(),
    });
    let quantized =
        last_value(&later, "--quant-base").is_some_and(|q| !q.eq_ignore_ascii_case("none"));
    if let Some((path, source)) = trainers::choice::quant_path(trainer).filter(|_| quantized) {
        let key = format!("({trainer})");
        reading
            .out
            .trainer_default(&key, path, "--quant-path", path, source);
    }
    if trainer == "torchtitan" {
        torchtitan_split(&later, &mut reading);
    }
    reading
}

/// The last value given to `flag` in `args` (`--flag value` or
/// `--flag=value`): the one that wins.
fn last_value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .enumerate()
        .filter_map(|(i, f)| match f.strip_prefix(flag) {
            Some("") => args.get(i + 1).cloned(),
            Some(v) => v.strip_prefix('=').map(String::from),
            None => None,
        })
        .next_back()
}

/// torchtitan splits a pipeline's layers itself (the embedding and the
/// output each weigh a layer): under `--trainer torchtitan` with `--pp`
/// and no split given, its uneven split becomes `--first-stage-layers`
/// and `--last-stage-layers` where the GPUs between are alike
/// ([`trainers::torchtitan::torchtitan_split`]), as a torchtitan file's
/// reading has it. The model's layers come from
/// `--layers` or `--model`'s preset.
fn torchtitan_split(later: &[String], reading: &mut Reading) {
    let value_of = |flag: &str| last_value(later, flag);
    let uint = |flag: &str| value_of(flag).and_then(|v| v.parse::<u64>().ok());
    if value_of("--first-stage-layers").is_some() || value_of("--last-stage-layers").is_some() {
        return;
    }
    let layers = uint("--layers").or_else(|| {
        value_of("--model")
            .and_then(|m| crate::detailed::preset(&m))
            .map(|p| p.arch.layers)
    });
    let Some(layers) = layers else {
        return;
    };
    let (pp, vp) = (uint("--pp").unwrap_or(1), uint("--vp").unwrap_or(1));
    let counts = trainers::torchtitan::torchtitan_split(layers, pp, vp);
    let (Some(&first), Some(&last)) = (counts.first(), counts.last()) else {
        return;
    };
    let middle = &counts[1..counts.len() - 1];
    let even = counts.iter().all(|&c| c == first);
    if even || !middle.iter().all(|m| Some(m) == middle.first()) {
        return;
    }
    let (key, _, source) = trainers::torchtitan::DEFAULTS[6];
    let value = format!("1 and 1: layers per GPU {counts:?}");
    for (flag, n) in [
        ("--first-stage-layers", first),
        ("--last-stage-layers", last),
    ] {
        reading
            .out
            .trainer_default(key, &value, flag, &n.to_string(), source);
    }
}

/// Each setting's flag, parsed alone: a value the command line refuses is
/// reported with the file and key that gave it.
fn check_flags(file: &str, reading: &Reading) -> Result<(), CliError> {
    for s in &reading.out.set {
        let mut one = vec!["membudget".to_string(), s.flag.to_string()];
        if !s.arg.is_empty() {
            one.push(s.arg.clone());
        }
        if let Err(e) = Args::try_parse_from(&one) {
            return Err(format!(
                "--from {file}: {} = {} gives {} {}, which is refused: {}",
                s.key,
                s.value,
                s.flag,
                s.arg,
                first_line(&e.to_string()).trim_start_matches("error: ")
            ));
        }
    }
    Ok(())
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

/// An error of the configuration the files led to, with the file and key
/// behind each flag it names.
pub fn explain(error: CliError, read: &[FromRead]) -> CliError {
    let mut from = Vec::new();
    for r in read {
        for s in &r.reading.out.set {
            let named = error
                .split(|c: char| c.is_whitespace() || c == '(' || c == ',')
                .any(|w| w == s.flag);
            if named && !from.iter().any(|(f, _): &(&str, String)| *f == s.flag) {
                from.push((
                    s.flag,
                    format!("{} from {}: {} = {}", s.flag, r.file, s.key, s.value),
                ));
            }
        }
    }
    if from.is_empty() {
        return error;
    }
    let notes: Vec<String> = from.into_iter().map(|(_, n)| n).collect();
    format!("{error} ({})", notes.join("; "))
}

/// The printout's lines: what each file set, the trainer's defaults it
/// applied, and what it ignored with the reason
/// ([`trainers::printout`], which the page shows too).
pub fn text(read: &[FromRead]) -> String {
    read.iter()
        .map(|r| trainers::printout(&r.file, &r.reading))
        .collect()
}

/// `inputs.from` of the JSON document.
pub fn report(read: &[FromRead]) -> Vec<FromReport> {
    read.iter()
        .map(|r| FromReport {
            file: r.file.clone(),
            format: r.reading.format.name().into(),
            set: r
                .reading
                .out
                .set
                .iter()
                .map(|s| FromSet {
                    key: s.key.clone(),
                    value: s.value.clone(),
                    flag: if s.arg.is_empty() {
                        s.flag.into()
                    } else {
                        format!("{} {}", s.flag, s.arg)
                    },
                    default_from: s.default_from.map(String::from),
                })
                .collect(),
            ignored: r
                .reading
                .out
                .ignored
                .iter()
                .map(|i| FromIgnored {
                    key: i.key.clone(),
                    value: i.value.clone(),
                    reason: i.reason.clone(),
                })
                .collect(),
        })
        .collect()
}
