//! The detailed mode's comparison (`membudget::compare`): the lines of a
//! pinned configuration beside the current one, each the figure the page
//! shows for that configuration alone, and the pin in the address
//! (`dbase`, read and written by `membudget::url::{decode, encode}`).
#![cfg(not(target_arch = "wasm32"))]

use membudget::compare::{compare, difference, error, figures, html, Context, Kind, Pinned};
use membudget::detailed::time::steptime::step_time;
use membudget::detailed::{estimate, timeline, StepOptions};
use membudget::export::detailed_rows;
use membudget::state::{detailed_need, PageState, Unit};
use membudget::url::{decode, encode};

/// Issue 38's planner: Llama-3.1-70B on 64 H100s, ZeRO-1, a trillion
/// tokens at 2.00 per GPU-hour.
const PLANNER: &str = "batch=512&seq=8192&card=h100-sxm&mode=detailed&model=llama-3.1-70b&dp=8&tp=8&sp=1&zero=1&micro=1&recompute=full&tokens=1e12&price=2";

/// The planner's page with ZeRO-1 pinned and ZeRO-3 on screen.
fn zero1_vs_zero3() -> (PageState, PageState) {
    let one = decode(PLANNER).state;
    let three = decode(&format!("{PLANNER}&zero=3")).state;
    assert_eq!(
        (one.detailed.parallel.zero, three.detailed.parallel.zero),
        (1, 3)
    );
    (one, three)
}

/// The table the page shows for it, line by line: pinned, now, now − pinned
/// (GB). ZeRO-3 splits the bf16 weights and gradients over the 8 data
/// ranks (17.6 → 2.2 GB each); ZeRO-1 already split the fp32 master
/// weights and Adam's moments, so they stay; the step gathers the weights
/// layer by layer, for each of the 64 micro-batches, behind compute that
/// those gathers slow, and takes 15.71 s longer.
#[test]
fn llama_70b_zero1_against_zero3() {
    let (one, three) = zero1_vs_zero3();
    let lines = compare(
        &one.detailed_config(),
        &three.detailed_config(),
        &Context::of(&three),
    );
    let want: [(&str, [&str; 3]); 15] = [
        ("Parameters", ["17.6", "2.2", "−15.4"]),
        ("Gradients", ["17.6", "2.2", "−15.4"]),
        ("Master weights", ["4.4", "4.4", "0.0"]),
        ("Optimizer state", ["8.8", "8.8", "0.0"]),
        ("Activations without logits", ["1.4", "1.4", "0.0"]),
        ("Logits", ["0.5", "0.5", "0.0"]),
        ("Total at rest", ["50.4", "19.5", "−30.9"]),
        ("Step's peak", ["50.7", "20.3", "−30.4"]),
        ("Peak with the runtime overhead", ["59.6", "24.7", "−35.0"]),
        ("GPUs", ["64", "64", "0"]),
        ("Step time", ["74.96 s", "90.67 s", "+15.71 s"]),
        ("Tokens/s per GPU", ["874", "723", "−151"]),
        ("MFU", ["42.5 %", "35.2 %", "−7.4 pt"]),
        ("Days", ["206.9", "250.2", "+43.3"]),
        ("Cost", ["635,465", "768,623", "+133,158"]),
    ];
    let got: Vec<(&str, [String; 3])> =
        lines.iter().map(|l| (l.label, l.cells(Unit::Gb))).collect();
    assert_eq!(got.len(), want.len());
    for ((label, cells), (wl, wc)) in got.iter().zip(want) {
        assert_eq!((*label, cells.clone()), (wl, wc.map(String::from)));
    }
    // Exact bytes of the terms that move.
    assert_eq!(
        (lines[0].base, lines[0].now),
        (Some(17_640_734_720.0), Some(2_205_091_840.0))
    );
    assert_eq!(lines[0].change(), Some(2_205_091_840.0 - 17_640_734_720.0));
    assert_eq!(
        difference(&one.detailed_config(), &three.detailed_config()),
        "Pinned: now with --zero 1."
    );
}

/// Each line is the figure the page shows for that configuration alone:
/// the table's rows, the timeline's peak, the verdict's need, the step
/// time and the token budget's days and cost.
#[test]
fn lines_are_each_sides_own_figures() {
    let (one, three) = zero1_vs_zero3();
    let ctx = Context::of(&three);
    for s in [&one, &three] {
        let cfg = s.detailed_config();
        let f = figures(&cfg, &ctx);
        let rows: Vec<f64> = detailed_rows(&estimate(&cfg).unwrap())
            .iter()
            .map(|r| r.bytes)
            .collect();
        assert_eq!(f[..7].iter().map(|v| v.unwrap()).collect::<Vec<_>>(), rows);
        let t = timeline(&cfg, &StepOptions::default()).unwrap();
        assert_eq!(f[7], Some(t.peak_bytes()));
        assert_eq!(f[8], detailed_need(&cfg, s.detailed.overhead.as_ref()));
        assert_eq!(f[9], Some(64.0));
        let (cluster, eff) = ctx.timed.unwrap();
        let st = step_time(&cfg, &cluster, &eff);
        assert_eq!(
            f[10..13],
            [Some(st.step_s), Some(st.tokens_per_s_per_gpu), Some(st.mfu)]
        );
        let gpu_hours = 1e12 / st.tokens_per_s_per_gpu / 3600.0;
        assert_eq!(f[13], Some(gpu_hours / 64.0 / 24.0));
        assert_eq!(f[14], Some(gpu_hours * 2.0));
    }
}

/// Without a card of the table there is no time; without tokens, no
/// days; without a price, no cost; with the overhead off, the peak alone.
#[test]
fn lines_follow_what_the_page_knows() {
    let (one, three) = zero1_vs_zero3();
    let keys = |s: &PageState| -> Vec<&str> {
        compare(
            &one.detailed_config(),
            &s.detailed_config(),
            &Context::of(s),
        )
        .iter()
        .skip(7)
        .map(|l| l.key)
        .collect()
    };
    let all = [
        "peak",
        "need",
        "gpus",
        "step_s",
        "tokens_per_s",
        "mfu",
        "days",
        "cost",
    ];
    assert_eq!(keys(&three), all);
    let no_price = PageState {
        price: None,
        ..three
    };
    assert_eq!(keys(&no_price), all[..7]);
    let no_tokens = PageState {
        tokens: None,
        ..three
    };
    assert_eq!(keys(&no_tokens), all[..6]);
    let no_card = decode(&PLANNER.replace("card=h100-sxm", "gpu=80")).state;
    assert_eq!(keys(&no_card), all[..3]);
    let mut no_overhead = three;
    no_overhead.detailed.overhead = None;
    let lines = compare(
        &one.detailed_config(),
        &no_overhead.detailed_config(),
        &Context::of(&no_overhead),
    );
    assert_eq!(lines[8].label, "What must fit (the peak)");
    assert_eq!(lines[8].now, lines[7].now);
}

/// A pinned configuration that cannot be computed leaves its cells and
/// the changes empty, and says why; the side now still shows.
#[test]
fn a_side_that_cannot_be_computed_is_empty() {
    let (_, three) = zero1_vs_zero3();
    let mut bad = three.detailed_config();
    bad.parallel.tp = 3; // 64 heads do not split in 3
    let why = error(&bad).expect("tp 3 cannot split 64 heads");
    assert!(
        why.starts_with("The pinned configuration cannot be computed: "),
        "{why}"
    );
    for l in compare(&bad, &three.detailed_config(), &Context::of(&three)) {
        assert_eq!(l.base, None, "{}", l.key);
        assert!(l.now.is_some(), "{}", l.key);
        let [b, n, c] = l.cells(Unit::Gb);
        assert!(b.is_empty() && !n.is_empty() && c.is_empty(), "{}", l.key);
    }
    assert_eq!(error(&three.detailed_config()), None);
}

/// The figures read in the page's unit; changes carry a true minus sign,
/// a plus, or none at zero.
#[test]
fn cells_read_in_the_unit_with_signs() {
    let (one, three) = zero1_vs_zero3();
    let lines = compare(
        &three.detailed_config(),
        &one.detailed_config(),
        &Context::of(&one),
    );
    assert_eq!(lines[0].cells(Unit::Gib), ["2.1", "16.4", "+14.4"]);
    assert_eq!(lines[0].kind, Kind::Bytes);
    assert_eq!(
        lines[10].cells(Unit::Gib),
        ["90.67 s", "74.96 s", "−15.71 s"]
    );
    let same = compare(
        &one.detailed_config(),
        &one.detailed_config(),
        &Context::of(&one),
    );
    for l in &same {
        assert_eq!(l.change(), Some(0.0), "{}", l.key);
        assert!(!l.cells(Unit::Gb)[2].starts_with(['+', '−']), "{}", l.key);
    }
    assert_eq!(
        difference(&one.detailed_config(), &one.detailed_config()),
        "Pinned: the same configuration as now."
    );
}

/// A planner's row pinned is the configuration its *Apply* sets, not
/// applied to the page.
#[test]
fn a_row_pinned_is_what_apply_sets() {
    let (one, three) = zero1_vs_zero3();
    let (from, to) = (one.detailed_config(), three.detailed_config());
    let pin = Pinned::row(&one, &from, &to);
    let mut applied = one;
    applied.apply_change(&from, &to);
    assert_eq!(pin, Pinned::of(&applied));
    assert_eq!(pin.over(&one).detailed_config(), to);
    assert_eq!(pin.over(&one).card, one.card, "the card stays the page's");
}

/// The address of `s` with `pin` pinned.
fn with_pin(s: &PageState, pin: Pinned) -> String {
    encode(&PageState {
        pin: Some(pin),
        ..*s
    })
}

/// The pin `query` reads, and what the address says of it.
fn read(query: &str) -> (Option<Pinned>, Vec<String>) {
    let d = decode(query);
    let said = d.ignored.iter().map(|i| i.to_string());
    (
        d.state.pin,
        said.filter(|i| i.starts_with("dbase")).collect(),
    )
}

/// The link keeps the pin: only the keys where it differs from the page.
#[test]
fn the_address_keeps_the_pin_compactly() {
    let (one, three) = zero1_vs_zero3();
    let pin = Pinned::of(&one);
    let query = with_pin(&three, pin);
    assert_eq!(query, format!("{}&dbase=zero.1", encode(&three)));
    assert_eq!(read(&query), (Some(pin), vec![]));
    // A key the pinned configuration lacks: named alone.
    let mut micro = three;
    micro.detailed.micro_batch = None;
    let q = with_pin(&micro, Pinned::of(&three));
    assert!(q.ends_with("&dbase=micro.1"), "{q}");
    assert_eq!(read(&q).0, Some(Pinned::of(&three)));
    let q = with_pin(&three, Pinned::of(&micro));
    assert!(q.ends_with("&dbase=micro"), "{q}");
    assert_eq!(read(&q).0, Some(Pinned::of(&micro)));
    // Another model: all of the pinned configuration's keys.
    let small = decode(&PLANNER.replace("llama-3.1-70b", "llama-3.1-8b")).state;
    let q = with_pin(&three, Pinned::of(&small));
    assert!(q.contains("&dbase=*params.7*batch.512*"), "{q}");
    assert_eq!(read(&q).0, Some(Pinned::of(&small)));
    // The lesson writes none.
    let lesson = PageState::default();
    assert_eq!(with_pin(&lesson, pin), encode(&lesson));
}

/// A pinned value that cannot be used keeps that setting's default, a
/// batch is repaired, each with a message; outside detailed mode the pin
/// is dropped, and said; nothing panics.
#[test]
fn a_bad_pin_is_repaired_or_dropped_with_a_message() {
    let (_, three) = zero1_vs_zero3();
    let at = |value: &str| read(&format!("{PLANNER}&zero=3&dbase={value}"));
    let (pin, said) = at("zero.9");
    assert_eq!(pin.unwrap().detailed.parallel.zero, 0);
    assert_eq!(
        said,
        ["dbase: the pinned configuration's zero: must be a whole number from 0 to 3"]
    );
    let (pin, said) = at("batch.500");
    assert_eq!(pin.unwrap().config.batch, 504);
    assert_eq!(
        said,
        ["dbase: the pinned configuration's batch: batch must be a multiple of micro-batch × dp (8); using 504"]
    );
    // Garbage reads as keys to drop that the page has not: the page's own.
    assert_eq!(at("%%*..*nonsense"), (Some(Pinned::of(&three)), vec![]));
    let (pin, said) = read("batch=4&dbase=zero.1");
    assert_eq!(pin, None);
    assert_eq!(
        said,
        ["dbase: a pinned configuration needs mode=detailed; dropped"]
    );
}

/// Where the differing keys read over the page's would not give the pin
/// back (here `model`, which resets expert parallelism for a dense model,
/// would come after the page's `ep`), the link holds all of the pinned
/// configuration's own keys instead, and reads it back.
#[test]
fn a_pin_the_differences_cannot_rebuild_is_kept_whole() {
    let custom = "mode=detailed&batch=16&arch=llama&heads=32&kv=8&ffn=14000&vocab=128256&hidden=4096&layers=32&ep=2";
    let page = decode(custom).state;
    assert_eq!(page.detailed.parallel.ep, 2);
    let dense = decode("mode=detailed&batch=16&model=llama-3.1-8b&ep=2").state;
    assert_eq!(dense.detailed.parallel.ep, 2);
    let pin = Pinned::of(&dense);
    let query = with_pin(&page, pin);
    assert!(query.contains("&dbase=*"), "{query}");
    assert_eq!(read(&query), (Some(pin), vec![]));
}

/// The page's markup: a hint while nothing is pinned; then what the
/// pinned side is and the table, a row per line.
#[test]
fn the_page_shows_the_lines_as_a_table() {
    let (one, three) = zero1_vs_zero3();
    assert!(
        html(&three).starts_with("<p class=\"hint\" id=\"compare-what\">Pin this configuration")
    );
    let pinned = PageState {
        pin: Some(Pinned::of(&one)),
        ..three
    };
    let page = html(&pinned);
    assert!(page.starts_with("<p class=\"hint\" id=\"compare-what\">Pinned: now with --zero 1.</p><table class=\"budget compare-table\" id=\"compare-table\"><caption>Pinned and now, per GPU (memory in GB)</caption>"), "{page}");
    assert!(page.contains("<tr data-line=\"params\"><th scope=\"row\">Parameters</th><td class=\"num\">17.6</td><td class=\"num\">2.2</td><td class=\"num\">−15.4</td></tr>"), "{page}");
    assert_eq!(page.matches("<tr data-line=").count(), 15);
    assert!(page.ends_with("</tbody></table>"));
    // In the lesson, nothing but the hint.
    let lesson = PageState {
        mode: membudget::state::Mode::Lesson,
        ..pinned
    };
    assert!(!html(&lesson).contains("<table"));
    // A pinned side that cannot be computed says why.
    let mut bad = Pinned::of(&one);
    bad.detailed.parallel.tp = 3;
    let page = html(&PageState {
        pin: Some(bad),
        ..three
    });
    assert!(page.contains("<p class=\"derived\" id=\"compare-error\">The pinned configuration cannot be computed: "), "{page}");
}
