//! Config fuzzing for `--from`: any text, in any of the formats, is read
//! or refused with a sentence; never a panic. Mutations of our own
//! fixtures (a value replaced by a hostile one, lines dropped, bytes
//! flipped) and text from nothing.
#![cfg(not(target_arch = "wasm32"))]

use clap::Parser;
use membudget::cli::Args;
use membudget::detailed::trainers;
use proptest::prelude::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/trainers");

fn fixtures() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Values a hostile or careless file puts where a number or name belongs.
const HOSTILE: &[&str] = &[
    "-1",
    "0",
    "1e400",
    "NaN",
    "inf",
    "\"\"",
    "null",
    "[]",
    "{}",
    "[1, [2, [3]]]",
    "18446744073709551616",
    "9999999999999999999999",
    "auto",
    "True",
    "0x10",
    "1_000_000_000_000_000",
    "\"\\u0000\"",
    "*anchor",
    "&a [*a]",
    "'unterminated",
    "🙂",
    "${oc.env:HOME}",
    "~",
    "-",
    "--",
    "=",
];

/// Reading `text` as `name` returns; an error has a sentence.
fn reads_or_refuses(name: &str, text: &str) -> Result<(), TestCaseError> {
    match trainers::read(name, text) {
        Ok(r) => {
            // Every flag the reader gives is one the command line knows
            // (its value may still be refused, with the key named).
            for s in &r.out.set {
                let parsed = Args::try_parse_from(["membudget", s.flag]);
                if let Err(e) = parsed {
                    prop_assert!(
                        e.kind() != clap::error::ErrorKind::UnknownArgument,
                        "{name}: unknown flag {}",
                        s.flag
                    );
                }
            }
            for i in &r.out.ignored {
                prop_assert!(!i.reason.is_empty());
            }
        }
        Err(e) => prop_assert!(!e.message.is_empty(), "{name}: empty error"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A value of a fixture replaced by a hostile one.
    #[test]
    fn hostile_values_are_read_or_refused(file in 0usize..13, line in 0usize..40, bad in 0..HOSTILE.len()) {
        let all = fixtures();
        let (name, text) = &all[file % all.len()];
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        let i = line % lines.len();
        let l = &lines[i];
        let replaced = if let Some((k, _)) = l.split_once(": ") {
            format!("{k}: {}", HOSTILE[bad])
        } else if let Some((k, _)) = l.split_once(" = ") {
            format!("{k} = {}", HOSTILE[bad])
        } else if let Some((k, _)) = l.split_once("\": ") {
            format!("{k}\": {},", HOSTILE[bad])
        } else {
            format!("{l} {}", HOSTILE[bad])
        };
        lines[i] = replaced;
        reads_or_refuses(name, &lines.join("\n"))?;
    }

    /// Lines dropped or repeated, bytes flipped.
    #[test]
    fn mangled_files_are_read_or_refused(file in 0usize..13, cut in 0usize..2000, flip in any::<u8>(), at in 0usize..2000) {
        let all = fixtures();
        let (name, text) = &all[file % all.len()];
        let mut bytes = text.as_bytes().to_vec();
        bytes.truncate(cut.max(1).min(bytes.len()));
        if !bytes.is_empty() {
            let i = at % bytes.len();
            bytes[i] = flip;
        }
        let text = String::from_utf8_lossy(&bytes).into_owned();
        reads_or_refuses(name, &text)?;
        reads_or_refuses(name, &format!("{text}\n{text}"))?;
    }

    /// Any text under any of the names.
    #[test]
    fn any_text_is_read_or_refused(text in "\\PC{0,300}", ext in 0usize..5) {
        let name = ["f.yaml", "f.json", "f.toml", "f.txt", "f"][ext];
        reads_or_refuses(name, &text)?;
    }

    /// Structured noise: nested maps and lists of random keys.
    #[test]
    fn nested_yaml_is_read_or_refused(keys in proptest::collection::vec("[a-z_]{1,8}", 1..12), depth in 1usize..40) {
        let mut text = String::new();
        for (i, k) in keys.iter().enumerate() {
            let indent = "  ".repeat(i % depth);
            text += &format!("{indent}{k}:\n");
        }
        text += &format!("{}leaf: [1, {{a: 2}}]\n", "  ".repeat(keys.len() % depth));
        reads_or_refuses("n.yaml", &text)?;
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = "[".repeat(100_000);
    for name in ["d.yaml", "d.json", "d.toml"] {
        assert!(trainers::read(name, &deep).is_err());
    }
    let nested: String = (0..200)
        .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
        .collect();
    let e = trainers::read("n.yaml", &nested).unwrap_err();
    assert!(e.message.contains("nested more than"), "{e}");
    let big = "a: 1\n".repeat(300_000);
    assert!(trainers::read("big.yaml", &big)
        .unwrap_err()
        .message
        .contains("larger than"));
}
