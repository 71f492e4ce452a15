//! The detailed mode's comparison: a pinned configuration (or a planner's
//! row) beside the one on screen, term by term and in time, with the change
//! (now − pinned). Plain functions the page wires (`app::compare`) and
//! native tests check (`tests/compare.rs`); every figure is the one the
//! page shows for that configuration alone: the table's terms
//! ([`crate::export::detailed_rows`]), the step's peak and what must fit
//! (the verdict's [`step_need`]), and the step time's
//! ([`step_time`]) with the token budget's days and cost
//! ([`crate::panel::days_and_cost`]'s arithmetic).
//!
//! ```
//! use membudget::compare::{compare, Context};
//! use membudget::detailed::{preset, DetailedConfig};
//!
//! let now = DetailedConfig::new(preset("llama-2-7b").unwrap().arch, 2048, 4);
//! let mut pinned = now;
//! pinned.micro_batch = Some(2);
//! let lines = compare(&pinned, &now, &Context::default());
//! let params = &lines[0];
//! assert_eq!((params.key, params.change()), ("params", Some(0.0)));
//! ```

use crate::budget::Unit;
use crate::detailed::memory::overhead::step_need;
use crate::detailed::memory::timeline;
use crate::detailed::time::steptime::{step_time, Cluster, Efficiency};
use crate::detailed::{estimate, DetailedConfig, Overhead, StepOptions};
use crate::export::detailed_rows;
use crate::panel::{seconds, Budget};
use crate::state::PageState;
pub use crate::state::Pinned;

/// How a line's figure reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Bytes, in the page's unit to one decimal.
    Bytes,
    /// A count (GPUs, tokens per second), with thousands separators.
    Count,
    /// Seconds, as the step time reads ([`seconds`]).
    Seconds,
    /// A fraction, as a percentage to one decimal (the change in points).
    Percent,
    /// Days, to one decimal.
    Days,
    /// Money, rounded, with thousands separators.
    Money,
}

/// One line of the comparison: a figure of each side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Line {
    /// The machine key (the table's term keys, then `peak`, `need`,
    /// `gpus`, `step_s`, `tokens_per_s`, `mfu`, `days`, `cost`).
    pub key: &'static str,
    /// The name a reader sees.
    pub label: &'static str,
    /// How it reads.
    pub kind: Kind,
    /// The pinned side's figure (`None`: it cannot be computed).
    pub base: Option<f64>,
    /// The figure now.
    pub now: Option<f64>,
}

impl Line {
    /// Now − pinned, when both are computed.
    pub fn change(&self) -> Option<f64> {
        Some(self.now? - self.base?)
    }

    /// The three cells as the page shows them in `unit`: pinned, now and
    /// the change (empty where a side cannot be computed).
    pub fn cells(&self, unit: Unit) -> [String; 3] {
        let f = |v: Option<f64>| v.map_or(String::new(), |v| figure(self.kind, v, unit));
        let change = self.change().map_or(String::new(), |d| {
            let text = match self.kind {
                // Percentage points, not a share of the pinned figure.
                Kind::Percent => format!("{:.1} pt", 100.0 * d.abs()),
                kind => figure(kind, d.abs(), unit),
            };
            if !text.contains(|c: char| ('1'..='9').contains(&c)) {
                text
            } else if d > 0.0 {
                format!("+{text}")
            } else {
                format!("−{text}")
            }
        });
        [f(self.base), f(self.now), change]
    }
}

/// `v` as a figure of `kind` (a change's magnitude for a change).
fn figure(kind: Kind, v: f64, unit: Unit) -> String {
    match kind {
        Kind::Bytes => format!("{:.1}", unit.of(v)),
        Kind::Count | Kind::Money => grouped(v),
        Kind::Seconds => seconds(v),
        Kind::Percent => format!("{:.1} %", 100.0 * v),
        Kind::Days => format!("{v:.1}"),
    }
}

/// A number rounded, with thousands separators.
fn grouped(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What both sides are priced with: the runtime overhead the verdict
/// counts, the card's speeds (a card of the table) and the token budget.
#[derive(Clone, Copy, Debug, Default)]
pub struct Context {
    /// The runtime overhead beside the peak (`None`: the peak alone).
    pub overhead: Option<Overhead>,
    /// The cluster and its efficiencies, on a card of the table.
    pub timed: Option<(Cluster, Efficiency)>,
    /// The tokens to train on and the price of a GPU-hour.
    pub budget: Budget,
}

impl Context {
    /// The page's: its overhead, its card and GPUs per node, its tokens
    /// and price.
    pub fn of(s: &PageState) -> Self {
        Self {
            overhead: s.detailed.overhead,
            timed: s.card().map(|g| {
                (
                    Cluster::new(g, s.detailed.offload.gpus_per_node),
                    Efficiency::for_gpu(&g),
                )
            }),
            budget: s.tokens.map(|n| (n, s.price)),
        }
    }
}

/// The lines after the table's terms: key, label and kind; the time's
/// only on a card of the table, days with a token budget, cost with a
/// price too.
fn more_lines(ctx: &Context) -> Vec<(&'static str, &'static str, Kind)> {
    let mut out = vec![
        ("peak", "Step's peak", Kind::Bytes),
        (
            "need",
            if ctx.overhead.is_some() {
                "Peak with the runtime overhead"
            } else {
                "What must fit (the peak)"
            },
            Kind::Bytes,
        ),
        ("gpus", "GPUs", Kind::Count),
    ];
    if ctx.timed.is_some() {
        out.extend([
            ("step_s", "Step time", Kind::Seconds),
            ("tokens_per_s", "Tokens/s per GPU", Kind::Count),
            ("mfu", "MFU", Kind::Percent),
        ]);
        if let Some((_, price)) = ctx.budget {
            out.push(("days", "Days", Kind::Days));
            if price.is_some() {
                out.push(("cost", "Cost", Kind::Money));
            }
        }
    }
    out
}

/// The figures of `cfg`, one per line in [`compare`]'s order (`None`
/// throughout when it cannot be computed).
pub fn figures(cfg: &DetailedConfig, ctx: &Context) -> Vec<Option<f64>> {
    let n = crate::export::DETAILED_ROWS.len() + more_lines(ctx).len();
    let Ok(b) = estimate(cfg) else {
        return vec![None; n];
    };
    let mut out: Vec<Option<f64>> = detailed_rows(&b).iter().map(|r| Some(r.bytes)).collect();
    let t = timeline(cfg, &StepOptions::default()).ok();
    out.push(t.as_ref().map(|t| t.peak_bytes()));
    out.push(t.map(|t| step_need(cfg, &t, ctx.overhead.as_ref())));
    out.push(Some(cfg.gpus() as f64));
    if let Some((cluster, eff)) = &ctx.timed {
        let st = step_time(cfg, cluster, eff);
        out.extend([st.step_s, st.tokens_per_s_per_gpu, st.mfu].map(Some));
        if let Some((tokens, price)) = ctx.budget {
            let rate = st.tokens_per_s_per_gpu;
            // As `panel::days_and_cost`: GPU-hours at the rate, over the GPUs.
            let gpu_hours = (rate > 0.0).then(|| tokens / rate / 3600.0);
            out.push(gpu_hours.map(|h| h / cfg.gpus() as f64 / 24.0));
            if let Some(p) = price {
                out.push(gpu_hours.map(|h| h * p));
            }
        }
    }
    out
}

/// The comparison of `base` (pinned) and `now`, both priced with `ctx`:
/// the table's terms (the total at rest last), the step's peak, what must
/// fit, the GPUs, and on a card of the table the step time, tokens per
/// second per GPU and MFU, with the days and cost of a token budget.
pub fn compare(base: &DetailedConfig, now: &DetailedConfig, ctx: &Context) -> Vec<Line> {
    let terms = crate::export::DETAILED_ROWS.iter().map(|&(label, key)| {
        let label = if key == "total" {
            "Total at rest"
        } else {
            label
        };
        (key, label, Kind::Bytes)
    });
    let (b, n) = (figures(base, ctx), figures(now, ctx));
    terms
        .chain(more_lines(ctx))
        .zip(b.into_iter().zip(n))
        .map(|((key, label, kind), (base, now))| Line {
            key,
            label,
            kind,
            base,
            now,
        })
        .collect()
}

/// What the pinned side is, against now: the flags that turn now into it
/// (as a planner's row names them), or why there are none.
pub fn difference(base: &DetailedConfig, now: &DetailedConfig) -> String {
    let flags = crate::detailed::plan::diff::changes(now, base);
    if !flags.is_empty() {
        format!("Pinned: now with {}.", flags.join(" "))
    } else if base == now {
        "Pinned: the same configuration as now.".into()
    } else {
        "Pinned: a configuration that differs from now beyond the planner's flags.".into()
    }
}

/// Why the pinned side cannot be computed, if it cannot.
pub fn error(base: &DetailedConfig) -> Option<String> {
    estimate(base)
        .err()
        .map(|e| format!("The pinned configuration cannot be computed: {e}."))
}

/// What the page shows under *Pin as baseline* for the state `s`, as
/// markup (one piece of text, so the page carries one reactive view for
/// it): a hint while nothing is pinned; else what the pinned side is, why
/// it cannot be computed if it cannot, and the table of [`compare`]'s
/// lines (`#compare-table`, a row `data-line` per key).
pub fn html(s: &PageState) -> String {
    let Some(pin) = s.pin.filter(|_| s.mode == crate::state::Mode::Detailed) else {
        return "<p class=\"hint\" id=\"compare-what\">Pin this configuration, change it, and \
                compare; or compare with a planner's row.</p>"
            .into();
    };
    let (base, now) = (pin.over(s).detailed_config(), s.detailed_config());
    let mut out = format!(
        "<p class=\"hint\" id=\"compare-what\">{}</p>",
        escaped(&difference(&base, &now))
    );
    if let Some(why) = error(&base) {
        out += &format!(
            "<p class=\"derived\" id=\"compare-error\">{}</p>",
            escaped(&why)
        );
    }
    out += &format!(
        "<table class=\"budget compare-table\" id=\"compare-table\"><caption>Pinned and now, \
         per GPU (memory in {})</caption><thead><tr><th scope=\"col\">Figure</th>\
         <th scope=\"col\" class=\"num\">Pinned</th><th scope=\"col\" class=\"num\">Now</th>\
         <th scope=\"col\" class=\"num\">Now − pinned</th></tr></thead><tbody>",
        s.unit.label()
    );
    for l in compare(&base, &now, &Context::of(s)) {
        let [b, n, c] = l.cells(s.unit);
        out += &format!(
            "<tr data-line=\"{}\"><th scope=\"row\">{}</th><td class=\"num\">{b}</td>\
             <td class=\"num\">{n}</td><td class=\"num\">{c}</td></tr>",
            l.key, l.label
        );
    }
    out + "</tbody></table>"
}

/// `text` with `&`, `<` and `>` escaped for markup.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
