//! Plan rows say every flag they change (issue 38, deliverable 2): the
//! text of a row is the difference between the reader's configuration and
//! the row's, so applying it changes exactly what it names, and no two rows
//! of one plan read the same; `--keep` holds levers; changes that need more
//! GPUs are offered apart; `--plan --tokens` prints the plan first, with
//! days and cost per row; *Faster and still fits* says so when nothing is.
#![cfg(not(target_arch = "wasm32"))]

use clap::Parser;
use membudget::cli::Args;
use membudget::detailed::plan::diff::{changes, Keep, Lever};
use membudget::detailed::plan::planner::{make_it_fit, make_it_fit_keeping};
use membudget::detailed::plan::search::{faster, search, search_keeping};
use membudget::detailed::time::hardware::gpu;
use membudget::detailed::time::steptime::{Cluster, Efficiency};
use membudget::detailed::DetailedConfig;
use membudget::panel::{answer, question, status, Answer};
use proptest::prelude::*;
use std::process::Command;

/// The configuration the command line gives for `flags`, if valid.
fn config(flags: &[String]) -> Option<DetailedConfig> {
    let args =
        Args::try_parse_from(std::iter::once("membudget".to_string()).chain(flags.iter().cloned()))
            .ok()?;
    args.detailed_config().ok().map(|(c, _)| c)
}

/// Two configurations the command line cannot tell apart: a micro-batch
/// left to its default and the same one given; hybrid sharding over all
/// of dp and none.
fn same(a: &DetailedConfig, b: &DetailedConfig) -> bool {
    let norm = |c: &DetailedConfig| {
        let mut n = *c;
        n.micro_batch = Some(c.micro());
        n.parallel.dp_shard = c.parallel.dp_shard.filter(|&s| s != c.parallel.dp);
        n
    };
    norm(a) == norm(b)
}

/// Checks a plan's rows against `base`: each row's text, added to the
/// command, gives its configuration; each flag it names is needed (left
/// out, the configuration differs); no two rows read the same.
fn check_rows(
    base: &[String],
    from: &DetailedConfig,
    rows: &[DetailedConfig],
) -> Result<(), TestCaseError> {
    let mut texts = std::collections::HashSet::new();
    for to in rows {
        let text = changes(from, to);
        let mut rerun = base.to_vec();
        rerun.extend(text.iter().cloned());
        let got = config(&rerun);
        prop_assert!(
            got.is_some_and(|g| same(&g, to)),
            "{text:?} does not give the row"
        );
        // Every flag named is needed: alone, it changes the configuration,
        // or, left out, the row is not reached (a micro-batch held while dp
        // changes, which would otherwise follow the batch per replica).
        let starts: Vec<usize> = (0..text.len())
            .filter(|&i| text[i].starts_with("--"))
            .collect();
        for (k, &i) in starts.iter().enumerate() {
            let end = starts.get(k + 1).copied().unwrap_or(text.len());
            let mut one = base.to_vec();
            one.extend(text[i..end].iter().cloned());
            let mut without = base.to_vec();
            without.extend(text[..i].iter().cloned());
            without.extend(text[end..].iter().cloned());
            prop_assert!(
                config(&one).is_none_or(|g| !same(&g, from))
                    || !config(&without).is_some_and(|g| same(&g, to)),
                "{} in {text:?} changes nothing",
                text[i]
            );
        }
        prop_assert!(texts.insert(text.join(" ")), "two rows read {text:?}");
    }
    Ok(())
}

/// A configuration as flags: a small model, a layout over up to 8 GPUs.
fn any_base() -> impl Strategy<Value = (Vec<String>, &'static str)> {
    (
        prop::sample::select(vec!["llama-3.2-1b", "qwen2.5-0.5b"]),
        prop::sample::select(vec![1024u64, 4096]),
        prop::sample::select(vec![1u64, 2, 4]),
        prop::sample::select(vec![1u64, 2]),
        0u8..=3,
        prop::sample::select(vec!["none", "full"]),
        prop::sample::select(vec!["adamw", "adam8bit"]),
        any::<(bool, bool, bool)>(),
        prop::sample::select(vec!["h100-sxm", "a100-40gb", "rtx-4090"]),
    )
        .prop_map(
            |(model, seq, dp, tp, zero, recompute, optimizer, (sp, offload, micro), card)| {
                let mut f: Vec<String> = [
                    "--model",
                    model,
                    "--attention",
                    "flash",
                    "--recompute",
                    recompute,
                    "--optimizer",
                    optimizer,
                ]
                .map(String::from)
                .to_vec();
                f.extend([
                    "--seq".into(),
                    seq.to_string(),
                    "--batch".into(),
                    (8 * dp).to_string(),
                ]);
                f.extend(["--dp".into(), dp.to_string(), "--tp".into(), tp.to_string()]);
                f.extend(["--zero".into(), zero.to_string()]);
                if sp && tp > 1 {
                    f.push("--sp".into());
                }
                if offload && zero > 0 {
                    f.push("--offload-optimizer".into());
                }
                if micro {
                    f.extend(["--micro-batch".into(), "2".into()]);
                }
                (f, card)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// Over random configurations, every row of `--plan` (over its GPUs and
    /// twice as many) and of *Make it fit* names exactly what it changes.
    #[test]
    fn rows_change_exactly_what_they_name((base, card) in any_base()) {
        let Some(cfg) = config(&base) else { return Ok(()); };
        let g = gpu(card).unwrap();
        let cluster = Cluster::new(g, 8);
        let eff = Efficiency::for_gpu(&g);
        for gpus in [cfg.gpus(), 2 * cfg.gpus()] {
            let rows: Vec<DetailedConfig> = search(&cfg, &cluster, gpus, None, &eff)
                .rows
                .into_iter()
                .map(|r| r.cfg)
                .collect();
            check_rows(&base, &cfg, &rows)?;
        }
        let fit = make_it_fit(&cfg, 0.5 * g.memory_bytes(), None, Some((&cluster, &eff)));
        let rows: Vec<DetailedConfig> = fit.changes.iter().map(|c| c.cfg).collect();
        check_rows(&base, &cfg, &rows)?;
    }
}

/// The page: Llama-3.1-70B on 64 H100s (dp 8, tp 8 with SP, ZeRO-1,
/// full recomputation). Two rows of *Faster and still fits* both read
/// "--recompute none --zero 3 --tp 4" before, one of them setting pp 2 and
/// ZB-H1: each row names its pipeline and a schedule other than the page's,
/// and no two read alike. (Since the compute slowed by hidden collectives
/// is priced, ZeRO-2 rows lead where ZeRO-3 ones did.)
#[test]
fn the_70b_pages_faster_rows_name_their_pipeline() {
    let s = membudget::url::decode(
        "batch=512&seq=8192&card=h100-sxm&mode=detailed&model=llama-3.1-70b&dp=8&tp=8&sp=1&zero=1&micro=1&recompute=full",
    )
    .state;
    let q = question(&s).unwrap();
    let Answer::Faster { rows, .. } = answer(&q, None) else {
        panic!("it fits: the faster rows")
    };
    let from = s.detailed_config();
    let texts: Vec<String> = rows
        .iter()
        .map(|r| changes(&from, &r.cfg).join(" "))
        .collect();
    assert_eq!(texts.len(), 6);
    assert!(
        texts.contains(&"--recompute none --zero 2 --tp 4 --pp 2 --schedule zb-h1".to_string()),
        "{texts:#?}"
    );
    // A row that changes the schedule names it; 1F1B, the page's own,
    // goes unnamed.
    for (r, t) in rows.iter().zip(&texts) {
        let named = t.contains("--schedule");
        assert_eq!(
            named,
            r.cfg.parallel.schedule != from.parallel.schedule,
            "{t}"
        );
    }
    for (i, t) in texts.iter().enumerate() {
        assert!(!texts[..i].contains(t), "{t} twice");
    }
    // Applying a row on the page gives the row: nothing hidden.
    for r in &rows {
        let mut t = s;
        t.apply_change(&from, &r.cfg);
        assert_eq!(t.detailed_config(), r.cfg);
    }
}

/// `--keep optimizer`: no row of the search or of *Make it fit* changes
/// the optimizer; without it, the top pretraining row is 8-bit Adam.
#[test]
fn keep_holds_the_optimizer() {
    let base: Vec<String> = "--model llama-3.1-8b --seq 8192 --batch 64 --attention flash"
        .split(' ')
        .map(String::from)
        .collect();
    let cfg = config(&base).unwrap();
    let g = gpu("h100-sxm").unwrap();
    let (cluster, eff) = (Cluster::new(g, 8), Efficiency::for_gpu(&g));
    let free = search(&cfg, &cluster, 8, None, &eff);
    assert_eq!(free.rows[0].cfg.optimizer.name(), "adam8bit");
    let keep = Keep::parse("optimizer").unwrap();
    let held = search_keeping(&cfg, &cluster, 8, None, &eff, keep);
    assert!(!held.rows.is_empty());
    assert!(held.rows.iter().all(|r| r.cfg.optimizer == cfg.optimizer));
    let fit = make_it_fit_keeping(&cfg, g.memory_bytes(), None, None, keep);
    assert!(fit.changes.iter().all(|c| c.cfg.optimizer == cfg.optimizer));
    assert!(make_it_fit(&cfg, g.memory_bytes(), None, None)
        .changes
        .iter()
        .any(|c| c.cfg.optimizer != cfg.optimizer));
    // Every lever's name reads back; an unknown one is refused.
    for l in Lever::ALL {
        assert_eq!(Keep::parse(l.name()), Ok(Keep::NONE.with(l)));
    }
    assert!(Keep::parse("framework").unwrap_err().contains("optimizer"));
    // The command line: the JSON says what was kept, no row changes it,
    // and an unknown lever is refused (exit code 2).
    let json: serde_json::Value = serde_json::from_str(&run(&[
        "--model",
        "llama-3.1-8b",
        "--seq",
        "8192",
        "--batch",
        "64",
        "--gpu",
        "h100-sxm",
        "--plan",
        "--gpus",
        "8",
        "--keep",
        "optimizer",
        "--json",
    ]))
    .unwrap();
    assert_eq!(json["inputs"]["keep"], serde_json::json!(["optimizer"]));
    let rows = json["plan"]["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    assert!(rows
        .iter()
        .all(|r| !r["changes"].to_string().contains("--optimizer")));
    let refused = Command::new(env!("CARGO_BIN_EXE_membudget"))
        .args([
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100-sxm",
            "--keep",
            "framework",
        ])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    // The address keeps it.
    let s = membudget::url::decode("mode=detailed&model=llama-3.1-8b&keep=optimizer.zero").state;
    assert_eq!(s.detailed.keep, keep.with(Lever::Zero));
    assert!(membudget::url::encode(&s).contains("keep=optimizer.zero"));
}

/// One GPU: the changes over more GPUs (ZeRO-3 over several) are apart
/// from those that run on it, on the page and on the command line.
#[test]
fn more_gpus_are_offered_apart() {
    let cfg = config(&[
        "--model".into(),
        "llama-3.1-8b".into(),
        "--seq".into(),
        "8192".into(),
    ])
    .unwrap();
    let plan = make_it_fit(&cfg, 80.0 * (1u64 << 30) as f64, None, None);
    assert!(plan.within().all(|c| c.gpus == 1));
    assert!(plan.more_gpus().count() > 0 && plan.more_gpus().all(|c| c.gpus > 1));
    let out = run(&[
        "--model",
        "llama-3.1-8b",
        "--seq",
        "8192",
        "--gpu",
        "h100-sxm",
    ]);
    let (within, more) = out.split_once("with more GPUs than it has now:\n").unwrap();
    assert!(!within.contains("over 2 GPUs") && !within.contains(" 2 GPUs,"));
    assert!(more.contains(" 2 GPUs,"));
}

/// Nothing faster: the panel says so instead of vanishing.
#[test]
fn nothing_faster_is_said() {
    let cfg = config(&[
        "--model".into(),
        "llama-3.2-1b".into(),
        "--seq".into(),
        "2048".into(),
        "--attention".into(),
        "flash".into(),
        "--recompute".into(),
        "none".into(),
    ])
    .unwrap();
    let g = gpu("h100-sxm").unwrap();
    let (cluster, eff) = (Cluster::new(g, 8), Efficiency::for_gpu(&g));
    let (now, rows) = faster(&cfg, &cluster, None, &eff, Keep::NONE, 6);
    assert!(rows.is_empty(), "{} faster rows", rows.len());
    let a = Answer::Faster {
        now,
        rate: 1.0,
        rows,
    };
    assert!(membudget::panel::shown(Some(&a)));
    assert!(
        status(&a, "", Keep::NONE).starts_with("Nothing over the same GPUs and batch is faster")
    );
}

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_membudget"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `--plan --tokens`: the plan first, each row with its days and cost,
/// the days those of its own rate.
#[test]
fn plan_with_tokens_prints_the_plan_first_with_days_and_cost() {
    let out = run(&[
        "--model",
        "llama-3.1-8b",
        "--seq",
        "8192",
        "--batch",
        "64",
        "--gpu",
        "h100-sxm",
        "--plan",
        "--gpus",
        "8",
        "--tokens",
        "1e12",
        "--price",
        "3",
    ]);
    assert!(out.starts_with("plan: 8 GPUs"), "{}", &out[..200]);
    assert!(out.lines().nth(1).unwrap().contains("days cost at 3.00"));
    let json: serde_json::Value = serde_json::from_str(&run(&[
        "--model",
        "llama-3.1-8b",
        "--seq",
        "8192",
        "--batch",
        "64",
        "--gpu",
        "h100-sxm",
        "--plan",
        "--gpus",
        "8",
        "--tokens",
        "1e12",
        "--json",
    ]))
    .unwrap();
    for r in json["plan"]["rows"].as_array().unwrap() {
        let rate = r["tokens_per_s_per_gpu"].as_f64().unwrap();
        let days = r["training"]["days"].as_f64().unwrap();
        assert!((days - 1e12 / rate / 8.0 / 86400.0).abs() < 1e-9 * days);
        assert!(r["changes"].is_array());
    }
}
