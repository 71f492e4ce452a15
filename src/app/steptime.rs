//! What a step costs in time on the card picked by name (detailed mode):
//! the step time, tokens per second per GPU, MFU, a bar of where the time
//! goes ([`crate::detailed::time::steptime`]) and, for a token budget, the days
//! and GPU-hours.

use super::detailed::grouped;
use super::reactive::{cond, not, on_event, text};
use super::{browser_to_f64, State};
use crate::detailed::time::steptime::{step_time, Cluster, Efficiency, StepTime};
use crate::detailed::time::validation::{range, Range, VALIDATION};
use crate::number::read;
use crate::state::{Mode, PageState};
use leptos::prelude::*;

/// The step's time on the picked card, in detailed mode.
pub fn time_of(s: &PageState) -> Option<(StepTime, u64)> {
    (s.mode == Mode::Detailed).then_some(())?;
    let g = s.card()?;
    let cfg = s.detailed_config();
    let cluster = Cluster::new(g, s.detailed.offload.gpus_per_node);
    Some((
        step_time(&cfg, &cluster, &Efficiency::for_gpu(&g)),
        cfg.gpus(),
    ))
}

/// Seconds, readably: "850 ms", "6.20 s", "4.1 min".
pub use crate::panel::seconds;

/// What the section shows for one state: the summary, the bar's parts
/// (class, share of the step in percent, legend text) in a fixed order,
/// and whether the step fits the card.
#[derive(Clone, Debug, PartialEq)]
struct Shown {
    summary: String,
    parts: Vec<(String, f64, String)>,
    fits: bool,
    rate: f64,
    gpus: u64,
    /// The range the step-time model's validation supports here, or why
    /// there is none ([`crate::detailed::time::validation`]).
    range: Result<Range, String>,
}

fn shown(s: &PageState) -> Option<Shown> {
    let (t, gpus) = time_of(s)?;
    let name = s.card().map_or("", |g| g.name);
    let total = t.parts.total();
    let parts = t
        .parts
        .named()
        .into_iter()
        .filter(|(_, v)| *v >= 0.005 * total)
        .map(|(n, v)| {
            let share = 100.0 * v / total;
            (
                format!("time-{}", n.replace(' ', "-")),
                share,
                format!("{n} {share:.0} % ({})", seconds(v)),
            )
        })
        .collect();
    let fits = crate::state::detailed_need(&s.detailed_config(), s.detailed.overhead.as_ref())
        .zip(s.gpu)
        .is_none_or(|(need, g)| need <= g.bytes());
    let cfg = s.detailed_config();
    let fp8 = if !crate::detailed::memory::fp8::enabled(&cfg) {
        ""
    } else if s
        .card()
        .is_some_and(|g| crate::detailed::time::hardware::fp8_runs_on(&cfg, &g))
    {
        " Float8 matmuls at the card's fp8 rate; MFU and HFU stay against its bf16 peak."
    } else {
        " This card has no tensor cores for this fp8 recipe (MXFP8 needs Blackwell): priced at its bf16 rate."
    };
    let range = range(&cfg, s.card.unwrap_or(""));
    Some(Shown {
        summary: format!(
            "On {gpus} × {name}: {} per optimizer step, {} tokens/s per GPU, {:.0} model TFLOPS per GPU (MFU {:.1} %, HFU {:.1} %).{fp8} {}",
            seconds(t.step_s),
            grouped(t.tokens_per_s_per_gpu.round() as u64),
            t.model_tflops_per_gpu,
            100.0 * t.mfu,
            100.0 * t.hfu,
            range_sentence(&range, &t)
        ),
        parts,
        fits,
        rate: t.tokens_per_s_per_gpu,
        gpus,
        range,
    })
}

/// The step's figures as the validation bounds them: "By the validation
/// on H100 SXM (MPT, IBM: 55 rows): 1.02–1.43 s, …", or why it cannot.
fn range_sentence(r: &Result<Range, String>, t: &StepTime) -> String {
    match r {
        Ok(r) => {
            let (s0, s1) = r.time(t.step_s);
            let (t0, t1) = r.rate(t.tokens_per_s_per_gpu);
            let (m0, m1) = r.rate(t.mfu);
            format!(
                "By {} ({}: {} rows, errors {:+.1} % to {:+.1} %): {}–{}, {}–{} tokens/s per GPU, MFU {:.1}–{:.1} %.",
                r.basis,
                r.names,
                r.rows,
                100.0 * r.lowest,
                100.0 * r.highest,
                seconds(s0),
                seconds(s1),
                grouped(t0.round() as u64),
                grouped(t1.round() as u64),
                100.0 * m0,
                100.0 * m1
            )
        }
        Err(why) => format!("Its range: {why}."),
    }
}

/// The step-time line, bar and token budget.
#[component]
pub fn StepTimeBar() -> impl IntoView {
    let State(state) = super::context::<State>();
    let now = Memo::new(move |_| shown(&state.read()));
    let field =
        move |f: fn(&Shown) -> String| move || now.with(|n| n.as_ref().map(f).unwrap_or_default());
    let parts = move || now.with(|n| n.as_ref().map(|n| n.parts.clone()).unwrap_or_default());
    view! {
        <section class="step-time" id="step-time" hidden=not(cond(move || now.with(Option::is_some))) aria-label="Step time">
            <h3>"Step time"</h3>
            <p id="step-time-summary">{text(field(|n| n.summary.clone()))}</p>
            <p class="derived" id="step-time-fit" hidden=cond(move || now.with(|n| n.as_ref().is_none_or(|n| n.fits)))>
                "The step does not fit this card: this is what it would take if it did."
            </p>
            <div class="time-bar" id="step-time-bar" role="img" aria-label="Where the step's time goes">
                {move || {
                    parts()
                        .into_iter()
                        .map(|(class, share, title)| {
                            view! { <span class=format!("time-part {class}") style:width=format!("{share:.2}%") title=title></span> }
                        })
                        .collect_view()
                }}
            </div>
            <ul class="time-legend" id="step-time-legend">
                {move || {
                    parts()
                        .into_iter()
                        .map(|(class, _, legend)| view! { <li><span class=format!("swatch {class}")></span>{legend}</li> })
                        .collect_view()
                }}
            </ul>
            {token_budget(now)}
            <p class="hint">
                "A first-principles model with one set of cited efficiencies (docs/steptime.md): "
                {format!("median error {:.1} % against published A100 throughputs; it over-predicts H100.", 100.0 * VALIDATION[0].median)}
            </p>
        </section>
    }
}

/// The token budget the planner's rows read: the tokens and price in the
/// page's state (so in the address).
#[derive(Clone, Copy)]
pub struct TokenBudget(pub RwSignal<PageState>);

impl TokenBudget {
    /// The tokens and price, as the planner's rows read them.
    pub fn get(self) -> crate::panel::Budget {
        self.0.with(|s| s.tokens.map(|n| (n, s.price)))
    }
}

/// The token budget: the tokens to train on and a price per GPU-hour, in
/// the page's state (so in the address), and the days, GPU-hours and cost
/// they take at the step's rate.
fn token_budget(now: Memo<Option<Shown>>) -> impl IntoView {
    let State(state) = super::context::<State>();
    let message = RwSignal::new(String::new());
    // A number typed into one of the two fields, within `limits`, into the
    // state; empty clears it; anything else keeps the value and says why.
    let typed = move |value: String,
                      limits: (f64, f64),
                      set: fn(&mut PageState, Option<f64>),
                      why: &str| {
        let typed = value.trim();
        match read(typed, browser_to_f64) {
            _ if typed.is_empty() => state.update(|s| set(s, None)),
            Some(n) if n.is_finite() && (limits.0..=limits.1).contains(&n) => {
                state.update(|s| set(s, Some(n)));
                message.set(String::new());
                return;
            }
            _ => {
                message.set(why.into());
                return;
            }
        }
        message.set(String::new());
    };
    let on_tokens = move |ev: leptos::ev::Event| {
        typed(
            event_target_value(&ev),
            crate::state::TOKENS,
            |s, v| s.tokens = v,
            "Tokens must be a number from 1 to 10¹⁸, like 1e12; kept the previous value.",
        )
    };
    let on_price = move |ev: leptos::ev::Event| {
        typed(
            event_target_value(&ev),
            crate::state::PRICE,
            |s, v| s.price = v,
            "The price must be a number from 0 to 1,000,000 per GPU-hour; kept the previous value.",
        )
    };
    let tokens = move || state.with(|s| s.tokens.map(|n| (format!("{n:e}"), n)));
    let price = move || state.with(|s| s.price);
    let budget = move || {
        let (typed, n) = tokens()?;
        now.with(|s| {
            let s = s.as_ref()?;
            let gpu_hours = n / s.rate / 3600.0;
            let days = gpu_hours / s.gpus as f64 / 24.0;
            let cost = price().map_or(String::new(), |p| {
                let cost = gpu_hours * p;
                let span = s.range.as_ref().map_or(String::new(), |r| {
                    let (c0, c1) = r.time(cost);
                    format!(
                        " ({}–{})",
                        grouped(c0.round() as u64),
                        grouped(c1.round() as u64)
                    )
                });
                format!(
                    ", {}{span} at {p:.2} per GPU-hour",
                    grouped(cost.round() as u64)
                )
            });
            let span = match &s.range {
                Ok(r) => {
                    let (d0, d1) = r.time(days);
                    format!(" ({d0:.1}–{d1:.1} by {})", r.basis)
                }
                Err(why) => format!(" ({})", why.split(':').next().unwrap_or_default()),
            };
            Some(format!(
                "{typed} tokens: {days:.1} days{span} on {} GPU{}, {} GPU-hours{cost}.",
                s.gpus,
                if s.gpus == 1 { "" } else { "s" },
                grouped(gpu_hours.round() as u64)
            ))
        })
    };
    view! {
        <div class="field">
            <label for="tokens-input">"Tokens to train on"</label>
            <input type="text" id="tokens-input" inputmode="decimal" placeholder="1e12" prop:value=text(move || tokens().map(|t| t.0).unwrap_or_default()) on:change=on_event(on_tokens) />
            <label for="price-input">"Price per GPU-hour"</label>
            <input type="text" id="price-input" inputmode="decimal" placeholder="2.00" prop:value=text(move || price().map(|p| p.to_string()).unwrap_or_default()) on:change=on_event(on_price) />
            <p class="field-message" role="status">{text(move || message.get())}</p>
            <p id="step-time-budget">{text(move || budget().unwrap_or_default())}</p>
        </div>
    }
}
