//! Pinning a baseline to compare against.

use super::canvas::Charts;
use super::reactive::{cond, on_click, text};
use super::State;
use crate::budget::TrainingConfig;
use leptos::prelude::*;

/// `7 B, batch 4, seq 2048, hidden 4096, 32 layers, mixed`.
fn describe(c: &TrainingConfig) -> String {
    format!(
        "{} B, batch {}, seq {}, hidden {}, {} layers, {}",
        c.params_b,
        c.batch,
        c.seq_len,
        c.hidden,
        c.layers,
        if c.mixed_precision { "mixed" } else { "fp32" }
    )
}

/// "Pin as baseline" keeps the current configuration; the chart then shows
/// its bar beside the current one and the table its column and the change.
/// One click clears it.
#[component]
pub fn PinBaseline() -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let pinned = move || state.read().baseline;
    view! {
        <div class="field compare">
            <div class="buttons">
                <button
                    type="button"
                    id="pin-baseline"
                    on:click=on_click(move || charts.change(state, |s| s.baseline = Some(s.config)))
                >
                    {text(move || if pinned().is_some() { "Pin current instead".into() } else { "Pin as baseline".into() })}
                </button>
                <button
                    type="button"
                    id="clear-baseline"
                    hidden=cond(move || pinned().is_none())
                    on:click=on_click(move || charts.change(state, |s| s.baseline = None))
                >
                    "Clear baseline"
                </button>
            </div>
            <p class="hint">
                {text(move || match pinned() {
                    Some(b) => format!("Baseline: {}", describe(&b)),
                    None => "Pin a configuration, change the inputs, and compare.".to_string(),
                })}
            </p>
        </div>
    }
}
