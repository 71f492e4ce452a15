//! The inputs: one slider and number box per field, and the precision toggle.

use super::canvas::Charts;
use super::reactive::{cond, on_event, text};
use super::{browser_to_f64, State};
use crate::budget::Field;
use crate::number::show;
use crate::state::{Mode, PageState, Unit};
use leptos::prelude::*;

/// A labelled slider with a number box beside it for one [`Field`].
///
/// The slider moves along the field's scale (doubling for batch, sequence
/// and hidden size; log₁₀ for model size). The box takes any typed value:
/// in range it applies as typed; out of range it is clamped on commit;
/// unparseable it is refused. Either way a message stays under the control
/// until a valid value arrives.
#[component]
pub fn FieldControl(
    /// Which input of the configuration this control edits.
    field: Field,
) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let value = Memo::new(move |_| state.read().config.get(field));
    let message = RwSignal::new(None::<String>);
    let (smin, smax, step) = field.slider_range();
    // The detailed model's ranges in detailed mode (its batch goes to 2²⁰,
    // as the command line's; the slider keeps the lesson's span).
    let detailed = move || state.with_untracked(|s| s.mode == Mode::Detailed);
    let min = field.range().0;
    let max = move || field.range_in(state.with(|s| s.mode == Mode::Detailed)).1;
    let key = field.key();
    let slider_id = format!("{key}-slider");
    let box_id = format!("{key}-input");
    let msg_id = format!("{key}-message");

    let apply = move |v: f64| {
        // Bind first: the read guard must be dropped before the update.
        let next = state.read_untracked().config.with_in(field, v, detailed());
        if let Ok(next) = next {
            charts.change(state, |s| s.config = next);
            message.set(None);
        }
    };

    // A range input's value, read as a number: no text to parse.
    let on_slider = move |ev: leptos::ev::Event| {
        let pos = event_target::<web_sys::HtmlInputElement>(&ev).value_as_number();
        if pos.is_finite() {
            apply(field.from_slider(pos));
        }
    };
    // While typing: apply only values that are already valid.
    let on_box_input = move |ev: leptos::ev::Event| {
        if let Ok(v) = field.parse_in(&event_target_value(&ev), browser_to_f64, detailed()) {
            apply(v);
        }
    };
    // On commit (Enter or leaving the box): clamp or refuse, and say so.
    let on_box_change = move |ev: leptos::ev::Event| {
        let (v, note) = field.commit_in(
            &event_target_value(&ev),
            value.get_untracked(),
            browser_to_f64,
            detailed(),
        );
        apply(v);
        // Show the value in force, even when the signal did not change.
        let input = event_target::<web_sys::HtmlInputElement>(&ev);
        input.set_value(&show(value.get_untracked()));
        message.set(note);
    };

    view! {
        <div class="field">
            <label for=slider_id.clone()>{field.label()}</label>
            <div class="field-inputs">
                <input
                    type="range"
                    id=slider_id
                    min=smin
                    max=smax
                    step=step
                    prop:value=text(move || field.to_slider(value.get()).to_string())
                    aria-valuetext=text(move || format!("{} {}", show(value.get()), field.unit()).trim_end().to_string())
                    on:input=on_event(on_slider)
                />
                <input
                    type="number"
                    id=box_id
                    class="number"
                    min=min
                    max=text(move || max().to_string())
                    step=if field.is_integer() { "1" } else { "any" }
                    aria-label=format!("{} value", field.label())
                    aria-describedby=msg_id.clone()
                    prop:value=text(move || show(value.get()))
                    on:input=on_event(on_box_input)
                    on:change=on_event(on_box_change)
                />
                <span class="unit">{field.unit()}</span>
            </div>
            <p id=msg_id class="field-message" role="status" aria-live="polite">
                {text(move || message.get().unwrap_or_default())}
            </p>
        </div>
    }
}

/// The "Mixed precision" checkbox: bf16 weights and gradients with an fp32
/// master copy when ticked, plain fp32 when not.
#[component]
pub fn MixedPrecisionToggle() -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    let mixed = move || state.read().config.mixed_precision;
    view! {
        <div class="field toggle">
            <label>
                <input
                    type="checkbox"
                    id="mixed-input"
                    prop:checked=cond(mixed)
                    on:change=on_event(move |ev| {
                        let on = event_target_checked(&ev);
                        charts.change(state, |s| s.config.mixed_precision = on);
                    })
                />
                " Mixed precision"
            </label>
            <span class="hint">
                {text(move || {
                    if mixed() {
                        "bf16 weights and gradients, fp32 master copy".into()
                    } else {
                        "fp32 weights and gradients, no master copy".into()
                    }
                })}
            </span>
        </div>
    }
}

/// One radio button of a group (`name`) that sets one part of the page
/// state to `value`; checked while `get` reads `value`.
pub(crate) fn radio<T: Copy + PartialEq + Send + Sync + 'static>(
    name: &'static str,
    id: String,
    text: String,
    value: T,
    get: fn(&PageState) -> T,
    set: fn(&mut PageState, T),
) -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    view! {
        <label>
            <input
                type="radio"
                name=name
                id=id
                prop:checked=cond(move || get(&state.read()) == value)
                on:change=on_event(move |_| charts.change(state, |s| set(s, value)))
            />
            {text}
        </label>
    }
}

/// GB (10⁹ bytes, the lesson's) or GiB (2³⁰ bytes, what `nvidia-smi` shows).
#[component]
pub fn UnitSwitch() -> impl IntoView {
    let option = |unit: Unit| {
        let text = format!(" {}", unit.definition());
        radio(
            "unit",
            format!("unit-{}", unit.key()),
            text,
            unit,
            |s| s.unit,
            |s, u| s.unit = u,
        )
    };
    view! {
        <fieldset class="field unit-switch">
            <legend>"Units"</legend>
            {option(Unit::Gb)}
            {option(Unit::Gib)}
        </fieldset>
    }
}
