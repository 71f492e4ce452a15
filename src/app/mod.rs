//! The Leptos page: controls wired to the budget core, a table and a chart.
//!
//! One source of truth: the [`Inputs`] signal holds the configuration; the
//! breakdown is a memo derived from it; the table, the sentence and the chart
//! all read that memo.

mod canvas;
mod controls;
mod panic;
mod table;

use crate::budget::{estimate, Breakdown, ConfigError, Field, TrainingConfig};
use leptos::prelude::*;

pub use canvas::BudgetChart;
pub use controls::{FieldControl, MixedPrecisionToggle};
pub use table::BudgetTable;

/// The configuration every control edits, passed by context.
#[derive(Clone, Copy)]
pub struct Inputs(pub RwSignal<TrainingConfig>);

/// The budget derived from [`Inputs`], passed by context.
#[derive(Clone, Copy)]
pub struct Budget(pub Memo<Result<Breakdown, ConfigError>>);

/// Installs the panic banner and mounts [`App`] on `<body>`.
pub fn start() {
    panic::install_hook();
    mount_to_body(App);
}

/// The whole calculator.
#[component]
pub fn App() -> impl IntoView {
    let inputs = Inputs(RwSignal::new(TrainingConfig::default()));
    let budget = Budget(Memo::new(move |_| estimate(&inputs.0.read())));
    provide_context(inputs);
    provide_context(budget);

    view! {
        <main class="membudget">
            <header>
                <h1>"GPU memory for training"</h1>
                <p class="lede">
                    "Training memory splits into terms that scale differently. "
                    "Move the sliders and watch which one grows."
                </p>
            </header>
            <div class="layout">
                <section class="controls" aria-label="Training configuration">
                    {Field::ALL.into_iter().map(|field| view! { <FieldControl field=field /> }).collect_view()}
                    <MixedPrecisionToggle />
                </section>
                <section class="results" aria-label="Memory budget">
                    <BudgetChart />
                    <BudgetTable />
                </section>
            </div>
            <footer>
                "The lesson's rule of thumb: GB = 10"<sup>"9"</sup>" bytes. "
                "Activations use 34·L·b·s·h·2 bytes (after Korthikanti et al. 2022), "
                "Adam keeps two fp32 buffers per parameter."
            </footer>
        </main>
    }
}
