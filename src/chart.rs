//! The stacked bar chart: one bar per breakdown, one coloured segment per
//! term (five for the lesson, six with the detailed model's logits), a GB
//! axis and a legend with each term's figure.
//!
//! Drawing is written once, generic over plotters' [`DrawingBackend`]: the
//! page renders it on a `<canvas>`, the tests into an SVG string.

use crate::budget::{Breakdown, Term};
use crate::detailed::{DetailedBreakdown, Live, Moment, StepTimeline};
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
            Moment::RootGather => format!("gather{mb}"),
            Moment::Prefill => "prefill".into(),
            Moment::Decode => "decode".into(),
            Moment::ReferenceForward => format!("ref{mb}"),
            Moment::LayerForward(i) => format!("L{}{mb}", i + 1),
            Moment::OutputGather => format!("head·g{mb}"),
            Moment::Loss => format!("loss{mb}"),
            Moment::LossBackward => format!("loss↓{mb}"),
            Moment::HeadBackward => format!("head↓{mb}"),
            Moment::NormBackward => format!("norm↓{mb}"),
            Moment::LayerBackward(i) => format!("L{}↓{mb}", i + 1),
            Moment::EmbeddingBackward => format!("emb↓{mb}"),
            Moment::RootReduce | Moment::GradientReduce | Moment::PartitionReduce => {
                format!("reduce{mb}")
            }
            Moment::OptimizerState => "state".into(),
            Moment::OptimizerUpdate => "update".into(),
            Moment::WeightsGather => "all-gather".into(),
            Moment::End => "zero_grad".into(),
        };
        bars.push(Bar {
            label,
            parts: live_parts(&e.live, overhead_bytes),
        });
    }
    (bars, peak)
}

/// The bytes live at one moment as segments, bottom first, with
/// `overhead_bytes` (0 for none) as a band on top.
fn live_parts(l: &Live, overhead_bytes: f64) -> Vec<Part> {
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
    parts
}

/// The detailed mode's main chart, the one the verdict uses: the terms at
/// rest (the lesson's view: weights, gradients, states and the saved
/// activations, logits apart), then the step's peak as live at its moment
/// with the runtime overhead (`overhead_bytes`, 0 when it is off) as a band
/// on top. The second bar's total is what the verdict compares with the
/// card, so the two never disagree on one screen; the legend is its.
pub fn verdict_bars(b: &DetailedBreakdown, t: &StepTimeline, overhead_bytes: f64) -> Vec<Bar> {
    let label = if overhead_bytes > 0.0 {
        "Peak + overhead"
    } else {
        "Step's peak"
    };
    // The legend is the peak's, whose activations hold the logits: at rest
    // they are drawn in the activations' colour too, so that every colour
    // on the chart is one the legend names (the table below splits them).
    let mut rest = Bar::detailed("At rest", b);
    let logits: f64 = rest
        .parts
        .iter()
        .filter(|p| p.label == "Logits")
        .map(|p| p.bytes)
        .sum();
    rest.parts.retain(|p| p.label != "Logits");
    if let Some(a) = rest.parts.iter_mut().find(|p| p.label == "Activations") {
        a.bytes += logits;
    }
    vec![
        rest,
        Bar {
            label: label.into(),
            parts: live_parts(&t.peak_event().live, overhead_bytes),
        },
    ]
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
    /// Each bar scaled to 100 %, so its segments show each term's share of
    /// it (the sweep, whose totals span four decades: on a common axis the
    /// small settings' bars would be a few pixels tall); the axis is in
    /// percent and the totals are still written in the unit.
    pub share: bool,
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
    let legend = spec.legend.and_then(|i| spec.bars.get(i));
    let (plot_area, legend_area) = split_for_legend(area, legend, style);
    let plot = Plot::new(&plot_area, spec, style);
    let axis_label = if spec.share { "%" } else { spec.unit.label() };
    draw_axis(&plot_area, &plot, axis_label, style)?;
    let tops = draw_bars(&plot_area, &plot, spec)?;
    draw_captions(&plot_area, &plot, spec, &tops, style)?;
    if let Some(cap) = spec.capacity_bytes {
        draw_capacity(&plot_area, &plot, spec, &tops, (spec.unit.of(cap), style))?;
    }
    if let (Some(bar), Some(legend_area)) = (legend, legend_area) {
        draw_legend(&legend_area, bar, spec.unit, style)?;
    }
    area.present()
}

/// The plot's area and, when a legend is drawn, the legend's: on the right,
/// or underneath on narrow areas.
#[allow(clippy::type_complexity)]
fn split_for_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    legend: Option<&Bar>,
    style: &ChartStyle,
) -> (DrawingArea<DB, Shift>, Option<DrawingArea<DB, Shift>>) {
    let (width, height) = area.dim_in_pixel();
    let narrow = f64::from(width) < NARROW * style.scale;
    match (legend, narrow) {
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
    }
}

/// Where things go in the plot's area, in pixels: room on the left for the
/// axis labels and underneath for the captions; a linear axis from 0 to
/// [`axis_top`] of the largest total (or the GPU line).
struct Plot {
    /// The axis's left and the plot's right edge.
    left: i32,
    right: i32,
    /// The axis's top and its zero.
    top: i32,
    bottom: i32,
    /// The axis's top value, in the unit.
    top_value: f64,
    /// Width of one bar's slot.
    slot: f64,
}

impl Plot {
    fn new<DB: DrawingBackend>(
        area: &DrawingArea<DB, Shift>,
        spec: &ChartSpec,
        style: &ChartStyle,
    ) -> Self {
        let max_total = spec
            .bars
            .iter()
            .map(Bar::total)
            .chain(spec.capacity_bytes)
            .fold(0.0, f64::max);
        let (w, h) = area.dim_in_pixel();
        let (left, right) = (style.px(84.0), w as i32 - style.px(12.0));
        Self {
            left,
            right,
            top: style.px(24.0),
            bottom: h as i32 - style.px(40.0),
            top_value: if spec.share {
                100.0
            } else {
                axis_top(spec.unit.of(max_total))
            },
            slot: f64::from(right - left) / spec.bars.len().max(1) as f64,
        }
    }

    /// The height in pixels of value `v` (in the unit).
    fn y(&self, v: f64) -> i32 {
        self.bottom - (v / self.top_value * f64::from(self.bottom - self.top)).round() as i32
    }

    /// The x in pixels of position `pos`, in slots from the axis.
    fn x(&self, pos: f64) -> i32 {
        self.left + (pos * self.slot).round() as i32
    }
}

/// The axes, and gridlines with labels at steps of 1, 2 or 5 × 10ᵏ, at
/// most five.
fn draw_axis<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    plot: &Plot,
    label: &str,
    style: &ChartStyle,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let fg = style.foreground();
    let step = tick_step(plot.top_value);
    let ticks = (0..)
        .map(|k| f64::from(k) * step)
        .take_while(|v| *v <= plot.top_value * (1.0 + 1e-9));
    for (k, v) in ticks.enumerate() {
        let y = plot.y(v);
        if k > 0 {
            area.draw(&PathElement::new(
                vec![(plot.left, y), (plot.right, y)],
                fg.mix(0.15),
            ))?;
        }
        area.draw(&Text::new(
            format!("{} {label}", trim_number(v)),
            (plot.left - style.px(6.0), y),
            style.font().pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    let axes = vec![
        (plot.left, plot.top),
        (plot.left, plot.bottom),
        (plot.right, plot.bottom),
    ];
    area.draw(&PathElement::new(
        axes,
        fg.stroke_width(style.px(1.0).max(1) as u32),
    ))
}

/// The stacked bars, each in the middle 60 % of its slot, the unmarked ones
/// faded; returns each stack's top value. The segments do not overlap, so
/// they are drawn fill by fill: a canvas then changes its fill a few times
/// per chart instead of at every segment.
fn draw_bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    plot: &Plot,
    spec: &ChartSpec,
) -> Result<Vec<f64>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut segments = Vec::new();
    let mut fills = Vec::new();
    let mut tops = Vec::with_capacity(spec.bars.len());
    for (i, bar) in spec.bars.iter().enumerate() {
        let faded = spec.marked.is_some_and(|m| m != i);
        let (x0, x1) = (plot.x(i as f64 + 0.2), plot.x(i as f64 + 0.8));
        let total = bar.total();
        let mut base = 0.0;
        for part in &bar.parts {
            let v = if spec.share {
                part.bytes / total * 100.0
            } else {
                spec.unit.of(part.bytes)
            };
            if v.is_nan() || v <= 0.0 {
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
            segments.push((fill, [(x0, plot.y(base + v)), (x1, plot.y(base))]));
            base += v;
        }
        tops.push(base);
    }
    for fill in fills {
        for &(_, corners) in segments.iter().filter(|(f, _)| *f == fill) {
            area.draw(&Rectangle::new(corners, fill.filled()))?;
        }
    }
    Ok(tops)
}

/// Each bar's total above it (only the marked one's when one is marked)
/// and its caption underneath. Captions need about 40 CSS px each: on
/// crowded axes every k-th is drawn, always the marked one, and never one
/// over another (their extents estimated from their length).
fn draw_captions<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    plot: &Plot,
    spec: &ChartSpec,
    tops: &[f64],
    style: &ChartStyle,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let unit = spec.unit;
    let caption_every = (40.0 * style.scale / plot.slot).ceil().max(1.0) as usize;
    let muted = style.foreground().mix(0.65);
    // A caption's extent, (left, right) in pixels, estimated from its
    // length: 0.6 em a character, wider than a sans-serif's average, so
    // that estimates which do not meet leave a gap between the texts.
    let extent = |i: usize, label: &str| {
        let half = half_width(label, style);
        let centre = plot.x(i as f64 + 0.5);
        (centre - half, centre + half)
    };
    let marked_extent = spec
        .marked
        .and_then(|m| Some(extent(m, &spec.bars.get(m)?.label)));
    let mut captioned_to = i32::MIN;
    for (i, (bar, &stack)) in spec.bars.iter().zip(tops).enumerate() {
        let centre = plot.x(i as f64 + 0.5);
        if spec.marked.is_none_or(|m| m == i) {
            area.draw(&Text::new(
                total_label(bar, unit),
                (centre, plot.y(stack)),
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
        area.draw(&Text::new(
            bar.label.clone(),
            (centre, plot.bottom + style.px(8.0)),
            caption.pos(Pos::new(HPos::Center, VPos::Top)),
        ))?;
    }
    Ok(())
}

/// A bar's total, as drawn above it.
fn total_label(bar: &Bar, unit: Unit) -> String {
    format!("{:.1} {}", unit.of(bar.total()), unit.label())
}

/// Half a text's width in pixels, estimated from its length: 0.3 em a
/// character (as the captions' extents are).
fn half_width(text: &str, style: &ChartStyle) -> i32 {
    (text.chars().count() as f64 * 0.3 * TEXT_PX * style.scale).ceil() as i32
}

/// The GPU's memory `v` (in the unit) as a dashed line across the plot,
/// labelled above its right end, or above its left end where that would
/// cover a bar's total (each bar's, or the marked one's alone, at its top
/// in `tops`).
fn draw_capacity<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    plot: &Plot,
    spec: &ChartSpec,
    tops: &[f64],
    (v, style): (f64, &ChartStyle),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let y = plot.y(v);
    let (dash, gap) = (style.px(8.0).max(1), style.px(5.0).max(1));
    let line = style.foreground().stroke_width(style.px(2.0).max(1) as u32);
    let mut x = plot.left;
    while x < plot.right {
        let end = (x + dash).min(plot.right);
        area.draw(&PathElement::new(vec![(x, y), (end, y)], line))?;
        x = end + gap;
    }
    let text = format!("GPU {:.1} {}", v, spec.unit.label());
    let left_of_label = plot.right - 2 * half_width(&text, style);
    // A total's text and the label share their height band and meet.
    let covers = spec
        .bars
        .iter()
        .zip(tops)
        .enumerate()
        .any(|(i, (bar, &top))| {
            let right = plot.x(i as f64 + 0.5) + half_width(&total_label(bar, spec.unit), style);
            spec.marked.is_none_or(|m| m == i)
                && right > left_of_label
                && (plot.y(top) - y).abs() < style.px(TEXT_PX)
        });
    if covers {
        area.draw(&Text::new(
            text,
            (plot.left, y),
            style.font().pos(Pos::new(HPos::Left, VPos::Bottom)),
        ))
    } else {
        area.draw(&Text::new(
            text,
            (plot.right, y),
            style.font().pos(Pos::new(HPos::Right, VPos::Bottom)),
        ))
    }
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
