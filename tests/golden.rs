//! The golden test: the whole output of a few hundred command lines and
//! page addresses, byte for byte, as recorded before `src/detailed/` was
//! moved into its rooms (issue 36). It guards every refactor: a change that
//! moves no figure leaves `tests/fixtures/golden/outputs.txt.gz` as it is.
//!
//! - `commands.txt` (written by `commands.py`): one `membudget` command line
//!   per line, over every preset and published config.json, every
//!   framework, ZeRO stage and recomputation, TP/PP/CP/EP, LoRA/QLoRA,
//!   DPO/GRPO, fp8, offload, the cards' step times and `--plan`; its
//!   output (or its error) is kept whole.
//! - `queries.txt`: page addresses; kept is what the address codec reads
//!   (the state written back, what it ignored and why) and the estimate of
//!   the detailed configuration it opens.
//! - For every command of the detailed model, a digest of its figures at
//!   full precision (what the text and JSON round): the estimate, every
//!   event of the step's timeline, and on a card the step time, each as
//!   `Debug` prints every bit of an `f64`.
//!
//! A change that moves a figure on purpose re-records the file with
//! `GOLDEN_BLESS=1 cargo test --test native golden::` and says so in its commit.
#![cfg(not(target_arch = "wasm32"))]

use clap::Parser;
use membudget::cli::{run, Args};
use membudget::detailed::time::steptime::step_time;
use membudget::detailed::{estimate, timeline};
use membudget::url::{decode, encode};
use std::fmt::Write as _;
use std::io::{Read, Write as _};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden");

/// Every command's section: `$ membudget ARGS`, then its output or error.
fn commands() -> String {
    let list = std::fs::read_to_string(format!("{DIR}/commands.txt")).unwrap();
    // The commands name config.json files relative to the repository.
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).unwrap();
    let mut out = String::new();
    for line in list.lines().filter(|l| !l.starts_with('#')) {
        let argv = std::iter::once("membudget").chain(line.split_whitespace());
        let result = Args::try_parse_from(argv)
            .map_err(|e| e.to_string())
            .and_then(|args| run(&args).map_err(|e| format!("error: {e}\n")));
        let (Ok(text) | Err(text)) = result;
        writeln!(out, "$ membudget {line}").unwrap();
        out.push_str(&text);
    }
    out
}

/// Every address's section: what decoding kept and ignored, the address
/// encoded back, and the detailed configuration's estimate.
fn queries() -> String {
    let list = std::fs::read_to_string(format!("{DIR}/queries.txt")).unwrap();
    let mut out = String::new();
    for query in list.lines() {
        let decoded = decode(query);
        let cfg = decoded.state.detailed_config();
        writeln!(out, "? {query}").unwrap();
        writeln!(out, "encoded: {}", encode(&decoded.state)).unwrap();
        for i in &decoded.ignored {
            writeln!(out, "ignored: {} = {}: {}", i.key, i.value, i.reason).unwrap();
        }
        writeln!(out, "config: {cfg:?}").unwrap();
        writeln!(out, "estimate: {:?}", estimate(&cfg)).unwrap();
    }
    out
}

/// FNV-1a, 64 bits: a digest that needs no crate and never changes.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Every detailed command's figures at full precision, digested: the
/// estimate, the timeline's every event and, on a card, the step time.
fn exact() -> String {
    let list = std::fs::read_to_string(format!("{DIR}/commands.txt")).unwrap();
    let mut out = String::new();
    for line in list.lines().filter(|l| !l.starts_with('#')) {
        let argv = std::iter::once("membudget").chain(line.split_whitespace());
        let Ok(args) = Args::try_parse_from(argv) else {
            continue;
        };
        let Ok((cfg, _)) = args.detailed_config().map_err(|e| e.to_string()) else {
            continue;
        };
        if !args.is_detailed() {
            continue;
        }
        let mut figures = format!("{:?}", estimate(&cfg));
        write!(figures, "{:?}", timeline(&cfg, &args.step_options())).unwrap();
        if let Some(cluster) = args.cluster() {
            if let Ok(eff) = args.time.efficiency(Some(&cluster.gpu)) {
                write!(figures, "{:?}", step_time(&cfg, &cluster, &eff)).unwrap();
            }
        }
        writeln!(out, "= {:016x} {line}", fnv(&figures)).unwrap();
    }
    out
}

#[test]
fn every_command_and_address_gives_the_recorded_bytes() {
    let actual = commands() + &queries() + &exact();
    let path = format!("{DIR}/outputs.txt.gz");
    if std::env::var_os("GOLDEN_BLESS").is_some() {
        let file = std::fs::File::create(&path).unwrap();
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::best());
        gz.write_all(actual.as_bytes()).unwrap();
        gz.finish().unwrap();
        return;
    }
    let mut expected = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut expected)
        .unwrap();
    if actual == expected {
        return;
    }
    // Name the first section that differs, and its first differing line.
    let (mut section, mut line_no) = (String::new(), 0);
    for (i, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
        if e.starts_with("$ membudget") || e.starts_with("? ") || e.starts_with("= ") {
            section = e.to_string();
        }
        if a != e {
            line_no = i + 1;
            panic!(
                "outputs.txt.gz line {line_no}, in `{section}`:\n  recorded: {e}\n  now:      {a}"
            );
        }
    }
    panic!(
        "outputs differ in length only ({} lines now, {} recorded; after line {line_no})",
        actual.lines().count(),
        expected.lines().count()
    );
}
