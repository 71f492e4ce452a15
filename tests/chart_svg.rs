//! The chart drawn off-browser into SVG: the same `draw` the page runs.

use membudget::budget::Breakdown;
use membudget::budget::{estimate, Term, TrainingConfig};
use membudget::chart::{draw, term_colour_hex, Bar, ChartSpec, ChartStyle};
use membudget::state::{sweep, SweepAxis, Unit};
use plotters::prelude::*;

fn svg_of(spec: &ChartSpec, size: (u32, u32)) -> String {
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(&area, spec, &ChartStyle::default()).unwrap();
    }
    svg
}

/// The number in attribute `name` of an SVG tag (`x`, `y`, `height`).
fn attr(tag: &str, name: &str) -> Option<f64> {
    tag.split(&format!(" {name}=\""))
        .nth(1)?
        .split('"')
        .next()?
        .parse()
        .ok()
}

/// Whether the SVG has a `<text>` element reading exactly `text`.
fn has_text(svg: &str, text: &str) -> bool {
    svg.contains(&format!(">\n{text}\n</text>"))
}

fn one_bar(b: &Breakdown) -> ChartSpec {
    ChartSpec {
        bars: vec![Bar::lesson("Current", b)],
        unit: Unit::Gb,
        capacity_bytes: None,
        marked: None,
        legend: Some(0),
        share: false,
    }
}

fn render(cfg: &TrainingConfig) -> String {
    let b = estimate(cfg).unwrap();
    svg_of(&one_bar(&b), (720, 360))
}

/// Height in pixels of the filled rectangle of `colour` (the bar segment).
fn segment_height(svg: &str, term: Term) -> Option<f64> {
    let fill = format!("fill=\"{}\"", term_colour_hex(term).to_uppercase());
    svg.lines()
        .filter(|l| l.starts_with("<rect") && l.contains(&fill))
        .filter_map(|l| attr(l, "height"))
        // The legend swatch is 14 px; the bar segment is the other one.
        .rfind(|&h| h != 14.0)
}

#[test]
fn lesson_bar_has_five_segments_legend_and_total() {
    let svg = render(&TrainingConfig::default());
    for term in Term::ALL {
        assert!(
            segment_height(&svg, term).is_some(),
            "no segment for {term:?}"
        );
    }
    assert!(
        svg.contains("Activations  73.0 GB"),
        "legend figure missing"
    );
    assert!(svg.contains("Master weights  28.0 GB"));
    assert!(svg.contains("185.0 GB"), "total label missing");
    assert!(svg.contains("200 GB"), "axis top missing");
    // Segments are in proportion: optimizer state (56) is 4 x parameters (14).
    let p = segment_height(&svg, Term::Params).unwrap();
    let o = segment_height(&svg, Term::OptimizerState).unwrap();
    // Both edges of each segment are rounded to whole pixels.
    assert!((o - 4.0 * p).abs() <= 5.0, "{o} vs 4 x {p}");
}

#[test]
fn doubling_batch_grows_only_the_activation_segment() {
    // Batch 1 and 2 total 130.3 and 148.6 GB: one axis (150 GB) for both.
    let base = TrainingConfig::default();
    let small = render(&TrainingConfig { batch: 1, ..base });
    let large = render(&TrainingConfig { batch: 2, ..base });
    let act_s = segment_height(&small, Term::Activations).unwrap();
    let act_l = segment_height(&large, Term::Activations).unwrap();
    assert!(
        act_l > act_s * 1.9 && act_l < act_s * 2.1,
        "{act_s} -> {act_l}"
    );
    for term in [
        Term::Params,
        Term::Grads,
        Term::MasterWeights,
        Term::OptimizerState,
    ] {
        assert_eq!(
            segment_height(&small, term),
            segment_height(&large, term),
            "{term:?}"
        );
    }
}

#[test]
fn fp32_draws_no_master_weight_segment() {
    let svg = render(&TrainingConfig {
        mixed_precision: false,
        ..TrainingConfig::default()
    });
    assert_eq!(segment_height(&svg, Term::MasterWeights), None);
    assert!(svg.contains("Master weights  0.0 GB"));
}

#[test]
fn baseline_bar_gpu_line_and_gib_axis() {
    let base = estimate(&TrainingConfig::default()).unwrap();
    let cur = estimate(&TrainingConfig {
        batch: 8,
        ..TrainingConfig::default()
    })
    .unwrap();
    let spec = ChartSpec {
        bars: vec![Bar::lesson("Baseline", &base), Bar::lesson("Current", &cur)],
        unit: Unit::Gib,
        capacity_bytes: Some(80.0 * Unit::Gib.bytes()),
        marked: None,
        legend: Some(1),
        share: false,
    };
    let svg = svg_of(&spec, (720, 360));
    assert!(has_text(&svg, "Baseline") && has_text(&svg, "Current"));
    // 185.0 GB = 172.3 GiB; 258.0 GB = 240.3 GiB; the axis is in GiB.
    assert!(
        svg.contains("172.3 GiB") && svg.contains("240.3 GiB"),
        "totals in GiB"
    );
    assert!(svg.contains("GPU 80.0 GiB"), "capacity line label");
    assert!(
        svg.contains("<polyline") || svg.contains("<line"),
        "capacity line"
    );
    assert!(
        svg.contains("Activations  136.0 GiB"),
        "legend lists the current bar"
    );
}

#[test]
fn narrow_chart_puts_the_legend_underneath() {
    let b = estimate(&TrainingConfig::default()).unwrap();
    let svg = svg_of(&one_bar(&b), (360, 420));
    let y_of = |needle: &str| -> f64 {
        let at = svg
            .find(&format!(">\n{needle}\n</text>"))
            .unwrap_or_else(|| panic!("no {needle}"));
        let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
        attr(tag, "y").unwrap()
    };
    assert!(
        y_of("Parameters  14.0 GB") > y_of("Current"),
        "legend is not under the bars"
    );
}

#[test]
fn sweep_marks_the_current_point_only() {
    let cfg = TrainingConfig::default();
    let points = sweep(&cfg, SweepAxis::Batch);
    let bars: Vec<Bar> = points
        .iter()
        .map(|(v, b)| Bar::lesson(v.to_string(), b))
        .collect();
    let marked = points.iter().position(|(v, _)| *v == cfg.batch);
    let spec = ChartSpec {
        bars,
        unit: Unit::Gb,
        capacity_bytes: None,
        marked,
        legend: None,
        share: false,
    };
    let svg = svg_of(&spec, (720, 360));
    assert!(has_text(&svg, "1024") && has_text(&svg, "1"));
    // Only the marked bar (batch 4) carries its total.
    assert!(svg.contains("185.0 GB"));
    assert!(
        !svg.contains("18803.7 GB"),
        "unmarked bars must not carry totals"
    );
    assert!(!svg.contains("Parameters  "), "no legend requested");

    // On a phone-sized chart every other caption is left out, but never the
    // marked one.
    let narrow = svg_of(&spec, (330, 300));
    assert!(has_text(&narrow, "1") && has_text(&narrow, "4"));
    assert!(!has_text(&narrow, "2"), "captions would overlap");
    let marked8 = ChartSpec {
        marked: Some(3),
        ..spec.clone()
    };
    assert!(has_text(&svg_of(&marked8, (330, 300)), "8"));

    // Every text in one size (a canvas pays for each change of font); the
    // marked bar's caption stands out by colour instead: the others muted.
    let texts: Vec<&str> = svg.lines().filter(|l| l.starts_with("<text")).collect();
    assert!(texts.len() > 12, "{} texts", texts.len());
    let size = |l: &str| {
        l.split("font-size=")
            .nth(1)
            .map(|s| s.split(' ').next().map(str::to_owned))
    };
    assert!(
        texts.iter().all(|l| size(l) == size(texts[0])),
        "{texts:#?}"
    );
    let caption = |t: &str| {
        let at = svg.find(&format!(">\n{t}\n</text>")).unwrap();
        svg[..at].rsplit('\n').next().unwrap().to_string()
    };
    assert!(caption("4").contains("opacity=\"1\""), "{}", caption("4"));
    assert!(
        caption("8").contains("opacity=\"0.65\""),
        "{}",
        caption("8")
    );
}

#[test]
fn detailed_bar_draws_logits_as_their_own_segment() {
    use membudget::detailed::{estimate as detailed, preset, DetailedConfig};
    let arch = preset("llama-3.1-8b").unwrap().arch;
    let d = detailed(&DetailedConfig::new(arch, 8192, 1)).unwrap();
    let spec = ChartSpec {
        bars: vec![Bar::detailed("Detailed, per GPU", &d)],
        unit: Unit::Gb,
        capacity_bytes: None,
        marked: None,
        legend: Some(0),
        share: false,
    };
    let svg = svg_of(&spec, (720, 360));
    assert!(svg.contains("fill=\"#CC79A7\""), "no logits segment");
    // fp32 log-probabilities: 4 · 8192 · 128256 bytes = 4.2 GB.
    assert!(svg.contains("Logits  4.2 GB"), "legend lacks the logits");
    let total = format!("{:.1} GB", d.total / 1e9);
    assert!(has_text(&svg, &total), "total {total} missing");
}

/// The sweep scales each bar to 100 %, so a segment's height is its term's
/// share of that setting's budget: at batch 8 the activations (146 of 258
/// GB, 57 %) are 57 % of the bar and the parameters 5 %, and at batch 1024
/// the activations 99 % — the lesson's point, that activations take over as
/// the batch grows. On a common axis in GB the batch-8 bar would be a few
/// pixels of a 20,000 GB axis, and stacked on a logarithmic one (the
/// earlier sweep) its activations looked like a thin band.
#[test]
fn sweep_segments_are_proportional_to_their_terms() {
    let cfg = TrainingConfig {
        batch: 8,
        ..TrainingConfig::default()
    };
    let points = sweep(&cfg, SweepAxis::Batch);
    let marked = points.iter().position(|(v, _)| *v == 8);
    let b = points[marked.unwrap()].1;
    let spec = ChartSpec {
        bars: points
            .iter()
            .map(|(v, b)| Bar::lesson(v.to_string(), b))
            .collect(),
        unit: Unit::Gb,
        capacity_bytes: None,
        marked,
        legend: None,
        share: true,
    };
    let svg = svg_of(&spec, (720, 360));
    // The marked bar's segments: the one rectangle of each term's colour
    // drawn opaque (the other bars are faded).
    let height = |term: Term| {
        let fill = format!("fill=\"{}\"", term_colour_hex(term).to_uppercase());
        let rects: Vec<&str> = svg
            .lines()
            .filter(|l| l.starts_with("<rect") && l.contains(&fill))
            .collect();
        assert_eq!(rects.len(), spec.bars.len(), "{term:?}: a segment per bar");
        let opaque: Vec<f64> = rects
            .iter()
            .filter(|l| attr(l, "opacity").is_none_or(|o| o == 1.0))
            .filter_map(|l| attr(l, "height"))
            .collect();
        assert_eq!(opaque.len(), 1, "{term:?}: {rects:?}");
        opaque[0]
    };
    let stack: f64 = Term::ALL.iter().map(|&t| height(t)).sum();
    for term in Term::ALL {
        let drawn = height(term) / stack;
        let share = b.share(term);
        assert!(
            (drawn - share).abs() < 0.01,
            "{term:?}: {drawn:.3} of the bar for a share of {share:.3}"
        );
    }
    assert!((b.share(Term::Activations) - 0.57).abs() < 0.01);
    assert!(has_text(&svg, "258.0 GB"), "the current total is labelled");
    assert!(
        has_text(&svg, "100 %") && has_text(&svg, "20 %"),
        "a percent axis"
    );
    // Every bar is the same height: the activations' share is what grows.
    let fill = format!(
        "fill=\"{}\"",
        term_colour_hex(Term::Activations).to_uppercase()
    );
    let faded: Vec<f64> = svg
        .lines()
        .filter(|l| l.starts_with("<rect") && l.contains(&fill))
        .filter(|l| attr(l, "opacity").is_some_and(|o| o < 1.0))
        .filter_map(|l| attr(l, "height"))
        .collect();
    assert_eq!(faded.len(), spec.bars.len() - 1);
    assert!(faded.windows(2).all(|w| w[0] <= w[1]), "{faded:?}");
    assert!(faded[faded.len() - 1] > 0.98 * stack, "batch 1024: 99 %");
}

/// The step timeline's captions (`start`, `L7`, … `emb↓`, `zero_grad`) do
/// not run into each other at any width, taking a character as half an
/// em (a sans-serif's average); the marked one (the peak) is always there.
#[test]
fn timeline_captions_never_overlap() {
    use membudget::chart::timeline_bars;
    use membudget::detailed::{preset, timeline, DetailedConfig, StepOptions};
    let arch = preset("llama-3.1-8b").unwrap().arch;
    let t = timeline(&DetailedConfig::new(arch, 2048, 4), &StepOptions::default()).unwrap();
    let (bars, peak) = timeline_bars(&t, 0.0);
    let spec = ChartSpec {
        legend: Some(peak),
        share: false,
        marked: Some(peak),
        bars: bars.clone(),
        unit: Unit::Gb,
        capacity_bytes: None,
    };
    let labels: Vec<&str> = bars.iter().map(|b| b.label.as_str()).collect();
    assert!(labels.contains(&"zero_grad"), "{labels:?}");
    for width in [360, 500, 756, 900, 1200] {
        let svg = svg_of(&spec, (width, 320));
        // (x, text) of each caption: texts hung from the top, under the axis.
        let mut lines = svg.lines();
        let mut captions = Vec::new();
        while let Some(l) = lines.next() {
            if l.starts_with("<text") && l.contains("dy=\"0.76em\"") {
                let x = attr(l, "x").unwrap();
                captions.push((x, lines.next().unwrap().to_string()));
            }
        }
        assert!(captions.len() >= 3, "{width}: {captions:?}");
        assert!(
            captions.iter().any(|(_, t)| *t == labels[peak]),
            "{width}: no peak caption"
        );
        for pair in captions.windows(2) {
            let ((x0, a), (x1, b)) = (&pair[0], &pair[1]);
            let half = |t: &str| t.chars().count() as f64 * 0.25 * 13.0;
            assert!(
                x1 - x0 >= half(a) + half(b),
                "{width}: {a} and {b} overlap: {captions:?}"
            );
        }
    }
}

/// The `y` of the first point of each `<polyline>`: the dashed GPU line's
/// dashes are the ones drawn most often at one height.
fn gpu_line_y(svg: &str) -> f64 {
    let mut counts: Vec<(f64, usize)> = Vec::new();
    for l in svg.lines().filter(|l| l.starts_with("<polyline")) {
        let points = l
            .split(" points=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        let ys: Vec<f64> = points
            .split_whitespace()
            .map(|p| p.split(',').nth(1).unwrap().parse().unwrap())
            .collect();
        if ys.len() == 2 && ys[0] == ys[1] {
            match counts.iter_mut().find(|(y, _)| *y == ys[0]) {
                Some((_, n)) => *n += 1,
                None => counts.push((ys[0], 1)),
            }
        }
    }
    counts.into_iter().max_by_key(|&(_, n)| n).unwrap().0
}

/// Issue 38: the detailed mode's main chart is the one the verdict uses.
/// For the QLoRA case on an RTX 4090 the terms at rest (16.9 GB) sit under
/// the card's line while the verdict says 29.7 GB: the chart must show the
/// step's peak with the runtime overhead, over the line, beside them, and
/// without the overhead the peak (25.1 GB) under it, as the verdict says.
#[test]
fn verdict_bar_is_the_peak_with_the_overhead_and_agrees_with_the_verdict() {
    use membudget::chart::{verdict_bars, OVERHEAD_COLOUR};
    use membudget::detailed::memory::overhead::step_need;
    use membudget::detailed::plan::planner::need;
    use membudget::detailed::{estimate as detailed, timeline, Overhead, StepOptions};
    // The case as the page reads it from its address.
    let decoded = membudget::url::decode(
        "?mode=detailed&model=llama-3.1-8b&seq=4096&batch=2&micro=2&lora=16&lorat=all\
         &quant=nf4&recompute=full&opt=paged-adam8bit&card=rtx-4090",
    );
    assert!(decoded.ignored.is_empty(), "{:?}", decoded.ignored);
    let state = decoded.state;
    assert!(state.detailed.overhead.is_some(), "counted by default");
    let cfg = state.detailed_config();
    let (d, t) = (
        detailed(&cfg).unwrap(),
        timeline(&cfg, &StepOptions::default()).unwrap(),
    );
    let capacity = state.gpu.unwrap().bytes();
    for (o, fits) in [(Some(Overhead::default()), false), (None, true)] {
        let extra = o.map_or(0.0, |o| o.for_step(&cfg, &t).total());
        let bars = verdict_bars(&d, &t, extra);
        let verdict = need(&cfg, o.as_ref()).unwrap();
        assert!((step_need(&cfg, &t, o.as_ref()) - verdict).abs() < 1.0);
        assert_eq!(verdict <= capacity, fits);
        assert!(
            (bars[1].total() - verdict).abs() < 1.0,
            "{} vs {verdict}",
            bars[1].total()
        );
        assert!((bars[0].total() - d.total).abs() < 1.0);
        // Every colour at rest is one the legend (the peak's) names.
        for p in &bars[0].parts {
            assert!(
                bars[1].parts.iter().any(|q| q.colour == p.colour),
                "{} has no legend entry",
                p.label
            );
        }
        let spec = ChartSpec {
            legend: Some(1),
            share: false,
            bars,
            unit: Unit::Gb,
            capacity_bytes: Some(capacity),
            marked: None,
        };
        let svg = svg_of(&spec, (720, 360));
        assert!(
            has_text(&svg, &format!("{:.1} GB", verdict / 1e9)),
            "the verdict's figure on its bar"
        );
        assert!(
            has_text(&svg, &format!("{:.1} GB", d.total / 1e9)),
            "the terms at rest"
        );
        assert!(svg.contains("GPU 25.8 GB"));
        // The tops of the two bars against the line: the highest segment of
        // each, found by its left edge.
        let line = gpu_line_y(&svg);
        let mut tops: Vec<(f64, f64)> = Vec::new();
        for l in svg
            .lines()
            .filter(|l| l.starts_with("<rect") && attr(l, "height") != Some(14.0))
        {
            let (Some(x), Some(y)) = (attr(l, "x"), attr(l, "y")) else {
                continue;
            };
            if attr(l, "width") == Some(720.0) {
                continue; // the background
            }
            match tops.iter_mut().find(|(bx, _)| *bx == x) {
                Some((_, top)) => *top = top.min(y),
                None => tops.push((x, y)),
            }
        }
        tops.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(tops.len(), 2, "{tops:?}");
        assert!(tops[0].1 > line, "the terms at rest are under the line");
        assert_eq!(
            tops[1].1 > line,
            fits,
            "peak bar top {} vs line {line}",
            tops[1].1
        );
        let grey = format!(
            "fill=\"#{:02X}{:02X}{:02X}\"",
            OVERHEAD_COLOUR.0, OVERHEAD_COLOUR.1, OVERHEAD_COLOUR.2
        );
        assert_eq!(svg.contains(&grey), o.is_some(), "the overhead band");
        assert_eq!(
            svg.contains("Runtime overhead  4.6 GB"),
            o.is_some(),
            "legend"
        );
    }
}

/// The `<text>` tag reading exactly `text`: its x, y and anchor.
fn text_at(svg: &str, text: &str) -> (f64, f64, String) {
    let lines: Vec<&str> = svg.lines().collect();
    let i = lines.iter().position(|l| *l == text).expect(text);
    let tag = lines[i - 1];
    let anchor = tag
        .split(" text-anchor=\"")
        .nth(1)
        .map_or("start", |a| a.split('"').next().unwrap())
        .to_string();
    (attr(tag, "x").unwrap(), attr(tag, "y").unwrap(), anchor)
}

/// The GPU line's label keeps off the bars' totals: NVIDIA's Llama 3 70B
/// recipe on a GB200 (174.3 GB at rest, 211.1 GB at the peak with the
/// overhead, the card's 199.7 GB between), drawn 360 px wide as a phone
/// shows it, had the peak's total and the label over each other at the
/// line's right end. There the label moves; with the peak well above the
/// line it stays at the right end, above the line.
#[test]
fn the_gpu_label_keeps_off_the_totals() {
    let bar = |label: &str, gb: f64| Bar {
        label: label.into(),
        parts: vec![membudget::chart::Part {
            label: "Activations",
            colour: RGBColor(0xD5, 0x5E, 0x00),
            bytes: gb * 1e9,
        }],
    };
    let spec = |peak: f64| ChartSpec {
        bars: vec![bar("At rest", 174.3), bar("Peak + overhead", peak)],
        unit: Unit::Gb,
        capacity_bytes: Some(199.7e9),
        marked: None,
        legend: Some(1),
        share: false,
    };
    for (size, peak) in [
        ((360, 300), 211.1),
        ((720, 360), 211.1),
        ((360, 300), 300.0),
    ] {
        let svg = svg_of(&spec(peak), size);
        let line = gpu_line_y(&svg);
        let (gx, gy, anchor) = text_at(&svg, "GPU 199.7 GB");
        let (tx, ty, _) = text_at(&svg, &format!("{peak:.1} GB"));
        // Texts 12 px high, anchored at their bottoms: two whose anchors are
        // nearer in height overlap unless they are 80 px apart sideways
        // (the label's width, about half of it the total's).
        let apart = |y: f64, x: f64| (y - gy).abs() >= 12.0 || (x - gx).abs() >= 80.0;
        assert!(
            apart(ty, tx),
            "{size:?} {peak}: {gx},{gy} {anchor} vs {tx},{ty}"
        );
        if peak == 300.0 {
            assert!(
                anchor == "end" && gy <= line,
                "{gx},{gy} {anchor}, line {line}"
            );
        }
    }
}
