//! What the page's planner panel says, as plain functions the page wires
//! (`app::plan`) and native tests check: *Make it fit* when the step does
//! not fit (the changes within the reader's GPUs, then those that need
//! more, apart), *Faster and still fits* when it fits a card of the table
//! (and, when nothing is faster, a sentence that says so), each row naming
//! every flag it changes, with its days and cost on a token budget.

use crate::budget::Unit;
use crate::detailed::plan::diff::{changes, Keep};
use crate::detailed::plan::planner::{make_it_fit_keeping, need, Change, Plan};
use crate::detailed::plan::search::{faster, Row};
use crate::detailed::time::steptime::{step_time, Cluster, Efficiency};
use crate::detailed::{DetailedConfig, Overhead};
use crate::state::{Mode, PageState};

/// Rows shown of each kind.
pub const ROWS: usize = 6;

/// The search's inputs, if the panel has anything to say: detailed mode
/// and a GPU (with its speeds when it is a card of the table): the card's
/// bytes, the configuration, the cluster and the levers kept.
pub type Question = (f64, DetailedConfig, Option<(Cluster, Efficiency)>, Keep);

/// The panel's question for the page's state `s`, if it asks one.
pub fn question(s: &PageState) -> Option<Question> {
    (s.mode == Mode::Detailed).then_some(())?;
    let timed = s.card().map(|g| {
        (
            Cluster::new(g, s.detailed.offload.gpus_per_node),
            Efficiency::for_gpu(&g),
        )
    });
    Some((s.gpu?.bytes(), s.detailed_config(), timed, s.detailed.keep))
}

/// What the panel found.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The planner's changes (it does not fit, or no card's speeds), and
    /// the tokens per second per GPU now, on a card of the table.
    Fit(Plan, Option<f64>),
    /// It fits a card of the table: the step time now, and the layouts
    /// over the same GPUs that fit and are faster, fastest first (none
    /// when nothing is).
    Faster {
        /// Seconds per step now.
        now: f64,
        /// Tokens per second per GPU now.
        rate: f64,
        /// The faster layouts.
        rows: Vec<Row>,
    },
}

/// Searches for `q` with the runtime overhead `overhead` (the fit check's
/// own [`need`]): see [`Answer`].
pub fn answer(q: &Question, overhead: Option<&Overhead>) -> Answer {
    let (capacity, cfg, timed, keep) = q;
    let fits = need(cfg, overhead).is_some_and(|n| n <= *capacity);
    match timed {
        Some((cluster, eff)) if fits => {
            let (now, rows) = faster(cfg, cluster, overhead, eff, *keep, ROWS);
            let rate = step_time(cfg, cluster, eff).tokens_per_s_per_gpu;
            Answer::Faster { now, rate, rows }
        }
        _ => Answer::Fit(
            make_it_fit_keeping(
                cfg,
                *capacity,
                overhead,
                timed.as_ref().map(|(c, e)| (c, e)),
                *keep,
            ),
            timed
                .as_ref()
                .map(|(c, e)| step_time(cfg, c, e).tokens_per_s_per_gpu),
        ),
    }
}

/// Whether the panel shows at all: while searching, when it does not fit,
/// and whenever it fits a card of the table (saying so if nothing is
/// faster).
pub fn shown(a: Option<&Answer>) -> bool {
    match a {
        None | Some(Answer::Faster { .. }) => true,
        Some(Answer::Fit(p, _)) => !p.fits_now,
    }
}

/// The sentence under the panel's title; `card` names a bigger card that
/// holds the step as it is (or is empty); `keep`, the levers held.
pub fn status(a: &Answer, card: &str, keep: Keep) -> String {
    match a {
        Answer::Fit(p, _) if !p.changes.iter().any(|c| c.fits) => format!(
            "Nothing the planner tries makes it fit this GPU; the closest changes are below.{card}"
        ),
        Answer::Fit(..) => format!(
            "Each change priced by the model (the step's peak, and the step time on a card of the table), the ones that fit first; each names every flag it changes.{card}"
        ),
        Answer::Faster { now, rows, .. } if rows.is_empty() => format!(
            "Nothing over the same GPUs and batch is faster than now ({} per step) and still fits this card{}: this layout is the fastest the planner finds.",
            seconds(*now),
            if keep == Keep::NONE { "" } else { ", keeping what is ticked" }
        ),
        Answer::Faster { now, .. } => format!(
            "Layouts over the same GPUs and batch that fit this card and are faster than now ({} per step), fastest first; each names every flag it changes.",
            seconds(*now)
        ),
    }
}

/// A token budget: the tokens to train on and the price of a GPU-hour,
/// if given.
pub type Budget = Option<(f64, Option<f64>)>;

/// " 156.2 days, 599,123 at 2.00 per GPU-hour" for `budget` at `rate`
/// tokens per second per GPU on `gpus` GPUs; nothing without a budget.
pub fn days_and_cost(budget: Budget, rate: f64, gpus: u64) -> String {
    let Some((tokens, price)) = budget.filter(|_| rate > 0.0) else {
        return String::new();
    };
    let gpu_hours = tokens / rate / 3600.0;
    let cost = price.map_or(String::new(), |p| {
        format!(", {} at {p:.2} per GPU-hour", grouped(gpu_hours * p))
    });
    format!(
        " {:.1} days on {gpus} GPU{}{cost}.",
        gpu_hours / gpus as f64 / 24.0,
        if gpus == 1 { "" } else { "s" }
    )
}

/// One *Make it fit* row: what it is, every flag it changes, what it
/// needs, saves and costs, and with a budget its days and cost (`rate`:
/// tokens per second per GPU now).
pub fn change_summary(
    c: &Change,
    from: &DetailedConfig,
    unit: Unit,
    budget: Budget,
    rate: Option<f64>,
) -> String {
    let time = c.time.map_or(String::new(), |t| {
        format!("; GPU-time per token {:+.0} %", 100.0 * (t - 1.0))
    });
    let days = rate
        .zip(c.time)
        .map_or(String::new(), |(r, t)| days_and_cost(budget, r / t, c.gpus));
    format!(
        "{} ({}): needs {:.1} {u}, saves {:.1} {u} of {}; {} GPU{}; compute ×{:.2}{time}. Cost: {}.{days}",
        c.name,
        changes(from, &c.cfg).join(" "),
        unit.of(c.need),
        unit.of(c.saved),
        c.term.replace('_', " "),
        c.gpus,
        if c.gpus == 1 { "" } else { "s" },
        c.compute,
        c.cost,
        u = unit.label(),
    )
}

/// One *Faster and still fits* row: every flag it changes, its step time
/// against `now`, its peak and MFU, and with a budget its days and cost.
pub fn faster_summary(
    r: &Row,
    now: f64,
    from: &DetailedConfig,
    unit: Unit,
    budget: Budget,
) -> String {
    format!(
        "{}: {} per step ({:+.0} %), needs {:.1} {u}, MFU {:.1} %.{}",
        changes(from, &r.cfg).join(" "),
        seconds(r.time.step_s),
        100.0 * (r.time.step_s / now - 1.0),
        unit.of(r.need),
        100.0 * r.time.mfu,
        days_and_cost(budget, r.time.tokens_per_s_per_gpu, r.cfg.gpus()),
        u = unit.label(),
    )
}

/// A step's time as the page shows it: ms below a second, minutes above two.
pub fn seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0} ms", s * 1e3)
    } else if s < 120.0 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} min", s / 60.0)
    }
}

/// A count, rounded, with thousands separators.
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
