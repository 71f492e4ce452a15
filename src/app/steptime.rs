//! What a step costs in time on the card picked by name (detailed mode):
//! the step time, tokens per second per GPU, MFU, a bar of where the time
//! goes ([`crate::detailed::time::steptime`]) and, for a token budget, the days
//! and GPU-hours.

use super::detailed::grouped;
use super::reactive::{cond, not, on_event, text};
use super::{browser_to_f64, State};
use crate::detailed::time::steptime::{step_time, Cluster, Efficiency, StepTime};
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

/// Most tokens the budget accepts.
const MAX_TOKENS: f64 = 1e18;

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
    Some(Shown {
        summary: format!(
            "On {gpus} × {name}: {} per optimizer step, {} tokens/s per GPU, {:.0} model TFLOPS per GPU (MFU {:.1} %, HFU {:.1} %).{fp8}",
            seconds(t.step_s),
            grouped(t.tokens_per_s_per_gpu.round() as u64),
            t.model_tflops_per_gpu,
            100.0 * t.mfu,
            100.0 * t.hfu
        ),
        parts,
        fits,
        rate: t.tokens_per_s_per_gpu,
        gpus,
    })
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
                "median error 4.7 % against published A100 throughputs; it over-predicts H100."
            </p>
        </section>
    }
}

/// The token budget as typed (shown back as typed) and its value, and a
/// price per GPU-hour: read by the step time and the planner's rows.
#[derive(Clone, Copy)]
pub struct TokenBudget {
    /// Tokens to train on, as typed and as read.
    pub tokens: RwSignal<Option<(String, f64)>>,
    /// Price of a GPU-hour.
    pub price: RwSignal<Option<f64>>,
}

impl TokenBudget {
    /// A budget with nothing typed yet.
    pub fn new() -> Self {
        Self {
            tokens: RwSignal::new(None),
            price: RwSignal::new(None),
        }
    }

    /// The tokens and price, as the planner's rows read them.
    pub fn get(self) -> crate::panel::Budget {
        self.tokens.get().map(|(_, n)| (n, self.price.get()))
    }
}

/// The token budget: the tokens to train on and a price per GPU-hour, as
/// typed, and the days, GPU-hours and cost they take at the step's rate.
fn token_budget(now: Memo<Option<Shown>>) -> impl IntoView {
    let TokenBudget { tokens, price } = super::context::<TokenBudget>();
    let message = RwSignal::new(String::new());
    let on_tokens = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        let typed = value.trim();
        match read(typed, browser_to_f64) {
            _ if typed.is_empty() => {
                tokens.set(None);
                message.set(String::new());
            }
            Some(n) if n.is_finite() && (1.0..=MAX_TOKENS).contains(&n) => {
                tokens.set(Some((typed.to_string(), n)));
                message.set(String::new());
            }
            _ => message.set(
                "Tokens must be a number from 1 to 10¹⁸, like 1e12; kept the previous value."
                    .into(),
            ),
        }
    };
    // A price per GPU-hour, in whatever currency the reader thinks in.
    let on_price = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        match read(value.trim(), browser_to_f64) {
            _ if value.trim().is_empty() => price.set(None),
            Some(p) if p.is_finite() && (0.0..=1e6).contains(&p) => {
                price.set(Some(p));
                message.set(String::new());
            }
            _ => message.set(
                "The price must be a number from 0 to 1,000,000 per GPU-hour; kept the previous value."
                    .into(),
            ),
        }
    };
    let budget = move || {
        let (typed, n) = tokens.get()?;
        now.with(|s| {
            let s = s.as_ref()?;
            let gpu_hours = n / s.rate / 3600.0;
            let cost = price.get().map_or(String::new(), |p| {
                format!(
                    ", {} at {p:.2} per GPU-hour",
                    grouped((gpu_hours * p).round() as u64)
                )
            });
            Some(format!(
                "{typed} tokens: {:.1} days on {} GPU{}, {} GPU-hours{cost}.",
                gpu_hours / s.gpus as f64 / 24.0,
                s.gpus,
                if s.gpus == 1 { "" } else { "s" },
                grouped(gpu_hours.round() as u64)
            ))
        })
    };
    view! {
        <div class="field">
            <label for="tokens-input">"Tokens to train on"</label>
            <input type="text" id="tokens-input" inputmode="decimal" placeholder="1e12" on:change=on_event(on_tokens) />
            <label for="price-input">"Price per GPU-hour"</label>
            <input type="text" id="price-input" inputmode="decimal" placeholder="2.00" on:change=on_event(on_price) />
            <p class="field-message" role="status">{text(move || message.get())}</p>
            <p id="step-time-budget">{text(move || budget().unwrap_or_default())}</p>
        </div>
    }
}
