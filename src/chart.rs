//! The stacked bar chart: one bar per breakdown, one coloured segment per
//! term (five for the lesson, six with the detailed model's logits), a GB
//! axis and a legend with each term's figure.
//!
//! Drawing is written once, generic over plotters' [`DrawingBackend`]: the
//! page renders it on a `<canvas>`, the tests into an SVG string.

use crate::budget::{Breakdown, Term};
use crate::detailed::{DetailedBreakdown, Moment, StepTimeline};
use crate::state::Unit;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Okabe & Ito's colour-blind-safe palette (Okabe & Ito 2008, "Color
/// Universal Design"), one colour per term.
pub fn term_colour(term: Term) -> RGBColor {
    match term {
        Term::Params => RGBColor(0x00, 0x72, 0xB2),
        Term::Grads => RGBColor(0x56, 0xB4, 0xE9),
        Term::MasterWeights => RGBColor(0x00, 0x9E, 0x73),
        Term::OptimizerState => RGBColor(0xE6, 0x9F, 0x00),
        Term::Activations => RGBColor(0xD5, 0x5E, 0x00),
    }
}

/// The colour as CSS hex (`#0072b2`), for the table's swatches.
pub fn term_colour_hex(term: Term) -> String {
    let RGBColor(r, g, b) = term_colour(term);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// How the chart looks: pixel density and light or dark colours.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChartStyle {
    /// Device pixels per CSS pixel; every length and font size is scaled by it.
    pub scale: f64,
    /// Dark background with light text.
    pub dark: bool,
}

impl Default for ChartStyle {
    fn default() -> Self {
        Self {
            scale: 1.0,
            dark: false,
        }
    }
}

/// Size of every text on a chart, in CSS pixels.
const TEXT_PX: f64 = 13.0;

impl ChartStyle {
    fn px(&self, css_px: f64) -> i32 {
        (css_px * self.scale).round() as i32
    }
    fn background(&self) -> RGBColor {
        if self.dark {
            RGBColor(0x1b, 0x1d, 0x22)
        } else {
            WHITE
        }
    }
    fn foreground(&self) -> RGBColor {
        if self.dark {
            RGBColor(0xe8, 0xe8, 0xe8)
        } else {
            RGBColor(0x22, 0x22, 0x22)
        }
    }
    /// The chart's one font: every text in one size, in the foreground
    /// colour. One size, not 12, 13 and 14 px for captions, labels and
    /// totals: Chromium shapes a canvas's text again in every task, font by
    /// font, and each change of font costs; measured from outside on the
    /// detailed page, one size took 0.1 ms off every input's 1.17 ms
    /// (README "Benchmark"). The family is given as
    /// `FontFamily::SansSerif`, not `"sans-serif"`: parsing the name
    /// lowercases it with Unicode tables (2 KB of wasm).
    fn font(&self) -> TextStyle<'static> {
        (FontFamily::SansSerif, TEXT_PX * self.scale)
            .into_font()
            .color(&self.foreground())
    }
}

/// Colour of the detailed model's logits segment (Okabe & Ito's reddish
/// purple).
pub const LOGITS_COLOUR: RGBColor = RGBColor(0xCC, 0x79, 0xA7);

/// Colour of the step timeline's transient buffers (Okabe & Ito's yellow).
pub const TRANSIENT_COLOUR: RGBColor = RGBColor(0xF0, 0xE4, 0x42);

/// Colour of the runtime overhead band (a neutral grey).
pub const OVERHEAD_COLOUR: RGBColor = RGBColor(0x99, 0x99, 0x99);

/// One segment of a bar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Part {
    /// The term's name, for the legend.
    pub label: &'static str,
    /// Its colour.
    pub colour: RGBColor,
    /// Its size.
    pub bytes: f64,
}

/// One bar: its caption under the axis and its segments, bottom first.
#[derive(Clone, Debug)]
pub struct Bar {
    /// Caption under the bar ("Current", "Baseline", "256").
    pub label: String,
    /// Segments, bottom of the stack first.
    pub parts: Vec<Part>,
}

impl Bar {
    /// The lesson's five terms.
    pub fn lesson(label: impl Into<String>, b: &Breakdown) -> Self {
        Self {
            label: label.into(),
            parts: Term::ALL
                .into_iter()
                .map(|t| Part {
                    label: t.label(),
                    colour: term_colour(t),
                    bytes: b.bytes(t),
                })
                .collect(),
        }
    }

    /// The detailed model's terms, the logits apart from the other
    /// activations.
    pub fn detailed(label: impl Into<String>, b: &DetailedBreakdown) -> Self {
        let part = |label, term, bytes| Part {
            label,
            colour: term_colour(term),
            bytes,
        };
        let mut parts = vec![
            part("Parameters", Term::Params, b.params),
            part("Gradients", Term::Grads, b.grads),
            part("Master weights", Term::MasterWeights, b.master_weights),
            part("Optimizer state", Term::OptimizerState, b.optimizer_state),
            part("Activations", Term::Activations, b.activations - b.logits),
        ];
        parts.push(Part {
            label: "Logits",
            colour: LOGITS_COLOUR,
            bytes: b.logits,
        });
        Self {
            label: label.into(),
            parts,
        }
    }

    /// The sum of the segments.
    pub fn total(&self) -> f64 {
        self.parts.iter().map(|p| p.bytes).sum()
    }
}

/// Most layer events of each direction the timeline chart shows; the rest
/// are left out evenly (the first and last layer and the peak always stay).
pub const TIMELINE_LAYERS: u64 = 6;

/// The step timeline as bars, one per event, with `overhead_bytes` (the
/// runtime overhead, 0 for none) as a band on top of each: with many
/// layers, at most [`TIMELINE_LAYERS`] layer events per direction are kept.
/// Returns the bars and the index of the peak's bar.
pub fn timeline_bars(t: &StepTimeline, overhead_bytes: f64) -> (Vec<Bar>, usize) {
    let layers = t
        .events
        .iter()
        .filter_map(|e| match e.moment {
            Moment::LayerForward(i) => Some(i + 1),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let every = layers.div_ceil(TIMELINE_LAYERS).max(1);
    let keep_layer = |i: u64| i == 0 || i + 1 == layers || i.is_multiple_of(every);
    let mut bars = Vec::new();
    let mut peak = 0;
    for (j, e) in t.events.iter().enumerate() {
        let keep = match e.moment {
            Moment::LayerForward(i) | Moment::LayerBackward(i) => keep_layer(i),
            _ => true,
        };
        if !keep && j != t.peak {
            continue;
        }
        if j == t.peak {
            peak = bars.len();
        }
        let mb = if e.micro_batch > 1 { "·2" } else { "" };
        let label = match e.moment {
            Moment::Start => format!("start{mb}"),
            Moment::ReferenceForward => format!("ref{mb}"),
            Moment::LayerForward(i) => format!("L{}{mb}", i + 1),
            Moment::Loss => format!("loss{mb}"),
            Moment::LossBackward => format!("loss↓{mb}"),
            Moment::HeadBackward => format!("head↓{mb}"),
            Moment::LayerBackward(i) => format!("L{}↓{mb}", i + 1),
            Moment::EmbeddingBackward => format!("emb↓{mb}"),
            Moment::OptimizerState => "state".into(),
            Moment::OptimizerUpdate => "update".into(),
            Moment::End => "zero_grad".into(),
        };
        let l = &e.live;
        let part = |label, colour, bytes| Part {
            label,
            colour,
            bytes,
        };
        let mut parts = vec![
            part("Parameters", term_colour(Term::Params), l.params),
            part("Gradients", term_colour(Term::Grads), l.grads),
            part(
                "Master weights",
                term_colour(Term::MasterWeights),
                l.master_weights,
            ),
            part(
                "Optimizer state",
                term_colour(Term::OptimizerState),
                l.optimizer_state,
            ),
            part("Activations", term_colour(Term::Activations), l.activations),
            part("Transient buffers", TRANSIENT_COLOUR, l.transient),
        ];
        if overhead_bytes > 0.0 {
            parts.push(part("Runtime overhead", OVERHEAD_COLOUR, overhead_bytes));
        }
        bars.push(Bar { label, parts });
    }
    (bars, peak)
}

/// What to draw: the bars and everything around them.
#[derive(Clone, Debug)]
pub struct ChartSpec {
    /// The bars, left to right.
    pub bars: Vec<Bar>,
    /// The unit of the axis and the labels.
    pub unit: Unit,
    /// A GPU's memory in bytes, drawn as a dashed line across the bars.
    pub capacity_bytes: Option<f64>,
    /// The bar to emphasise (the current point of a sweep); the others fade
    /// and only this one carries its total.
    pub marked: Option<usize>,
    /// The bar whose segments the legend lists; no legend when `None`.
    pub legend: Option<usize>,
    /// A logarithmic axis (decades), so that terms of very different sizes
    /// all show: the sweep's activations reach 10⁴ GB while the other
    /// terms stay near 10 GB. Each segment spans its stack's cumulative
    /// bounds on that axis.
    pub log: bool,
}

/// The decades of a logarithmic axis for `spec`: (lowest, highest) values,
/// powers of ten; the lowest is the decade of the smallest bottom segment,
/// at most six decades below the top.
fn log_bounds(spec: &ChartSpec) -> (f64, f64) {
    let unit = spec.unit;
    let max_total = spec
        .bars
        .iter()
        .map(Bar::total)
        .chain(spec.capacity_bytes)
        .map(|b| unit.of(b))
        .fold(0.0, f64::max);
    let min_first = spec
        .bars
        .iter()
        .filter_map(|b| b.parts.iter().map(|p| unit.of(p.bytes)).find(|&v| v > 0.0))
        .fold(f64::INFINITY, f64::min);
    if !(max_total.is_finite() && max_total > 0.0) {
        return (0.1, 1.0);
    }
    // Whole exponents, and `powi`: `powf` would ship libm's `pow` (2 KB).
    let top_exp = max_total.log10().ceil().max(-3.0) as i32;
    let lo_exp = if min_first.is_finite() {
        min_first.log10().floor().max(-300.0) as i32
    } else {
        top_exp - 1
    };
    let lo_exp = lo_exp.clamp(top_exp - 6, top_exp - 1);
    (10f64.powi(lo_exp), 10f64.powi(top_exp))
}

/// The top of the GB axis for a largest total of `max_gb`: the next value of
/// 1, 1.5, 2, 3, 4, 5, 6, 8 × 10ᵏ at or above it. The axis moves in these
/// steps only, so while a reader drags a slider the bar visibly grows
/// instead of the axis rescaling under it.
pub fn axis_top(max_gb: f64) -> f64 {
    if !(max_gb.is_finite() && max_gb > 0.0) {
        return 1.0;
    }
    let decade = 10f64.powi(max_gb.log10().floor() as i32);
    [1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|&top| top >= max_gb * (1.0 - 1e-12))
        .unwrap_or(10.0 * decade)
}

/// Width of the legend column beside the chart, in CSS pixels.
const LEGEND_WIDTH: f64 = 190.0;
/// Below this width (CSS pixels) the legend goes under the chart.
const NARROW: f64 = 520.0;
/// Height of one legend row, in CSS pixels.
const LEGEND_ROW: f64 = 24.0;

/// Draws `spec` into `area`, filling it: axis and bars, and the legend on
/// the right, or underneath on narrow areas.
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    spec: &ChartSpec,
    style: &ChartStyle,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    area.fill(&style.background())?;
    let (width, height) = area.dim_in_pixel();
    let narrow = f64::from(width) < NARROW * style.scale;
    let legend = spec.legend.and_then(|i| spec.bars.get(i));
    let (plot_area, legend_area) = match (legend, narrow) {
        (None, _) => (area.clone(), None),
        (Some(bar), true) => {
            let rows = bar.parts.len() as f64;
            let legend_px = style
                .px(LEGEND_ROW * rows + 8.0)
                .clamp(0, height as i32 / 2);
            let (top, bottom) = area.split_vertically(height as i32 - legend_px);
            (top, Some(bottom))
        }
        (Some(_), false) => {
            let legend_px = style.px(LEGEND_WIDTH).clamp(0, width as i32 / 2);
            let (left, right) = area.split_horizontally(width as i32 - legend_px);
            (left, Some(right))
        }
    };

    let unit = spec.unit;
    let max_total = spec
        .bars
        .iter()
        .map(Bar::total)
        .chain(spec.capacity_bytes)
        .fold(0.0, f64::max);
    let top = axis_top(unit.of(max_total));
    let (log_lo, log_top) = log_bounds(spec);
    let top = if spec.log { log_top } else { top };
    let n = spec.bars.len().max(1) as f64;
    let fg = style.foreground();
    let line = |width: f64| fg.stroke_width(style.px(width).max(1) as u32);

    // The plot in pixels of `plot_area`: room on the left for the axis
    // labels and underneath for the captions.
    let (plot_w, plot_h) = plot_area.dim_in_pixel();
    let (left, right) = (style.px(84.0), plot_w as i32 - style.px(12.0));
    let (top_px, bottom) = (style.px(24.0), plot_h as i32 - style.px(40.0));
    let span = f64::from(bottom - top_px);
    let y_of = |v: f64| {
        let share = if spec.log {
            (v.max(log_lo) / log_lo).log10() / (log_top / log_lo).log10()
        } else {
            v / top
        };
        bottom - (share * span).round() as i32
    };
    let slot = f64::from(right - left) / n;
    let x_of = |pos: f64| left + (pos * slot).round() as i32;

    // Gridlines and labels at steps of 1, 2 or 5 × 10ᵏ, at most five; on a
    // logarithmic axis at every decade.
    let ticks: Vec<f64> = if spec.log {
        let decades = (log_top / log_lo).log10().round() as i32;
        (0..=decades).map(|d| log_lo * 10f64.powi(d)).collect()
    } else {
        let step = tick_step(top);
        (0..)
            .map(|k| f64::from(k) * step)
            .take_while(|v| *v <= top * (1.0 + 1e-9))
            .collect()
    };
    for (k, &v) in ticks.iter().enumerate() {
        let y = y_of(v);
        if k > 0 {
            plot_area.draw(&PathElement::new(vec![(left, y), (right, y)], fg.mix(0.15)))?;
        }
        plot_area.draw(&Text::new(
            format!("{} {}", trim_number(v), unit.label()),
            (left - style.px(6.0), y),
            style.font().pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    let axes = vec![(left, top_px), (left, bottom), (right, bottom)];
    plot_area.draw(&PathElement::new(axes, line(1.0)))?;

    // Captions need about 40 CSS px each; on crowded axes every k-th is
    // drawn (and always the marked one).
    let caption_every = (40.0 * style.scale / slot).ceil().max(1.0) as usize;
    let muted = fg.mix(0.65);
    // A caption's extent, (left, right) in pixels, estimated from its
    // length: 0.6 em a character, wider than a sans-serif's average, so
    // that estimates which do not meet leave a gap between the texts.
    let extent = |i: usize, label: &str| {
        let half = (label.chars().count() as f64 * 0.3 * TEXT_PX * style.scale).ceil() as i32;
        let centre = x_of(i as f64 + 0.5);
        (centre - half, centre + half)
    };
    let marked_extent = spec
        .marked
        .and_then(|m| Some(extent(m, &spec.bars.get(m)?.label)));
    let mut captioned_to = i32::MIN;

    // Each bar takes the middle 60 % of its slot. The segments do not
    // overlap, so they are drawn fill by fill: a canvas then changes its
    // fill a few times per chart instead of at every segment.
    let mut segments = Vec::new();
    let mut fills = Vec::new();
    let mut tops = Vec::with_capacity(spec.bars.len());
    for (i, bar) in spec.bars.iter().enumerate() {
        let faded = spec.marked.is_some_and(|m| m != i);
        let (x0, x1) = (x_of(i as f64 + 0.2), x_of(i as f64 + 0.8));
        let mut base = 0.0;
        for part in &bar.parts {
            let v = unit.of(part.bytes);
            if v <= 0.0 {
                continue;
            }
            let fill = if faded {
                part.colour.mix(0.55)
            } else {
                part.colour.to_rgba()
            };
            if !fills.contains(&fill) {
                fills.push(fill);
            }
            segments.push((fill, [(x0, y_of(base + v)), (x1, y_of(base))]));
            base += v;
        }
        tops.push(base);
    }
    for fill in fills {
        for &(_, corners) in segments.iter().filter(|(f, _)| *f == fill) {
            plot_area.draw(&Rectangle::new(corners, fill.filled()))?;
        }
    }

    for (i, (bar, &stack)) in spec.bars.iter().zip(&tops).enumerate() {
        let centre = x_of(i as f64 + 0.5);
        if spec.marked.is_none_or(|m| m == i) {
            plot_area.draw(&Text::new(
                format!("{:.1} {}", unit.of(bar.total()), unit.label()),
                (centre, y_of(stack)),
                style.font().pos(Pos::new(HPos::Center, VPos::Bottom)),
            ))?;
        }
        // The marked bar's caption is always drawn; its neighbours within
        // one caption's width give way to it.
        let crowds_marked = spec
            .marked
            .is_some_and(|m| m != i && m.abs_diff(i) < caption_every);
        if (i % caption_every != 0 && spec.marked != Some(i)) || crowds_marked {
            continue;
        }
        // Nor is a caption drawn over the one before it or the marked one
        // (long names: the step timeline's `zero_grad`).
        let (from, to) = extent(i, &bar.label);
        let meets = |(l, r): (i32, i32)| from < r && l < to;
        if spec.marked != Some(i) && (from < captioned_to || marked_extent.is_some_and(meets)) {
            continue;
        }
        captioned_to = to;
        // The marked bar's caption in the foreground colour, the others
        // muted.
        let caption = if spec.marked.is_some_and(|m| m != i) {
            style.font().color(&muted)
        } else {
            style.font()
        };
        plot_area.draw(&Text::new(
            bar.label.clone(),
            (centre, bottom + style.px(8.0)),
            caption.pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }

    if let Some(cap) = spec.capacity_bytes {
        let (v, y) = (unit.of(cap), y_of(unit.of(cap)));
        let (dash, gap) = (style.px(8.0).max(1), style.px(5.0).max(1));
        let mut x = left;
        while x < right {
            let end = (x + dash).min(right);
            plot_area.draw(&PathElement::new(vec![(x, y), (end, y)], line(2.0)))?;
            x = end + gap;
        }
        plot_area.draw(&Text::new(
            format!("GPU {:.1} {}", v, unit.label()),
            (right, y),
            style.font().pos(Pos::new(HPos::Right, VPos::Bottom)),
        ))?;
    }

    if let (Some(bar), Some(legend_area)) = (legend, legend_area) {
        draw_legend(&legend_area, bar, unit, style)?;
    }
    area.present()
}

/// The gridline step for an axis from 0 to `top`: the smallest of 1, 2 or
/// 5 × 10ᵏ that gives at most five intervals. Every [`axis_top`] is a
/// multiple of it, so the top carries a label.
pub fn tick_step(top: f64) -> f64 {
    if !(top.is_finite() && top > 0.0) {
        return 1.0;
    }
    let decade = 10f64.powi((top / 5.0).log10().floor() as i32);
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|&step| top / step <= 5.0 * (1.0 + 1e-9))
        .unwrap_or(10.0 * decade)
}

/// The legend: a swatch, the term's name and its GB, top of the stack first.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    bar: &Bar,
    unit: Unit,
    style: &ChartStyle,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let row = style.px(LEGEND_ROW);
    let swatch = style.px(14.0);
    let (width, height) = area.dim_in_pixel();
    // Beside the chart the legend starts level with the axis top; under it,
    // at its own top.
    let top = style.px(if width < height { 28.0 } else { 4.0 });
    // Swatches first, then names: a canvas changes its fill colour once per
    // swatch instead of twice per row.
    let rows = || bar.parts.iter().rev().enumerate();
    let x = style.px(8.0);
    let y = |k: usize| top + k as i32 * row;
    for (k, part) in rows() {
        area.draw(&Rectangle::new(
            [(x, y(k)), (x + swatch, y(k) + swatch)],
            part.colour.filled(),
        ))?;
    }
    for (k, part) in rows() {
        area.draw(&Text::new(
            format!(
                "{}  {:.1} {}",
                part.label,
                unit.of(part.bytes),
                unit.label()
            ),
            (x + swatch + style.px(8.0), y(k) + swatch / 2),
            style.font().pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
}

/// `200` rather than `200.0`, `1.5` as is.
fn trim_number(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_top_steps() {
        let cases = [
            (185.014, 200.0),
            (258.0, 300.0),
            (7.118, 8.0),
            (1302.5, 1500.0),
            (100.0, 100.0),
            (0.0, 1.0),
            (f64::NAN, 1.0),
            (0.35, 0.4),
            (9.5, 10.0),
        ];
        for (max, want) in cases {
            let got = axis_top(max);
            assert!((got - want).abs() < 1e-9, "{max}: {got} vs {want}");
        }
    }

    #[test]
    fn tick_steps_divide_every_axis_top() {
        for exp in -3..6 {
            for m in [1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0] {
                let top = m * 10f64.powi(exp);
                let step = tick_step(top);
                let intervals = top / step;
                assert!(
                    (2.0 - 1e-9..=5.0 + 1e-9).contains(&intervals),
                    "{top}: {step}"
                );
                assert!(
                    (intervals - intervals.round()).abs() < 1e-9,
                    "{top}: {step}"
                );
            }
        }
        assert_eq!(tick_step(200.0), 50.0);
        assert_eq!(tick_step(f64::NAN), 1.0);
    }

    #[test]
    fn trims_numbers() {
        assert_eq!(trim_number(200.0), "200");
        assert_eq!(trim_number(1.5), "1.5");
        assert_eq!(trim_number(0.25), "0.25");
    }
}
