//! The trainer on the page (issue 37): the "Trainer" select (its defaults,
//! as `--trainer`), a trainer's config file dropped, chosen or pasted (read
//! as `--from` reads it), and the configuration as that trainer's file (as
//! `--emit` writes it) with a copy button. The logic is
//! [`crate::from_page`]; these views only wire it to the state.

use super::canvas::Charts;
use super::reactive::{cond, on_click, on_event, text};
use super::State;
use crate::detailed::trainers::choice::TRAINERS;
use crate::detailed::DetailedConfig;
use crate::from_page::{choose_trainer, emit_target, fragment};
use crate::state::{Mode, PageState};
use leptos::prelude::*;

/// The trainer select, the file reader and the current configuration's
/// file (detailed mode, under the model picker).
#[component]
pub fn TrainerControls() -> impl IntoView {
    let State(state) = super::context::<State>();
    let charts = super::context::<Charts>();
    // What the last reading or choice said, and whether it is an error.
    let message = RwSignal::new(None::<(String, bool)>);
    let choose = move |ev: web_sys::Event| {
        let name = event_target_value(&ev);
        let now = state.get_untracked();
        match choose_trainer(&now, &name, super::browser_to_f64) {
            Some(a) => {
                message.set(Some((a.said, false)));
                charts.change(state, |s| *s = a.state);
            }
            None => {
                message.set(None);
                charts.change(state, |s| s.detailed.trainer = None);
            }
        }
    };
    let chosen = move || state.read().detailed.trainer.unwrap_or("").to_string();
    view! {
        <div class="trainer">
            <label for="trainer-select">"Trainer"</label>
            <select id="trainer-select" prop:value=text(chosen) on:change=on_event(choose)>
                <option value="">"Any (membudget's defaults)"</option>
                {TRAINERS.map(|t| view! { <option value=t>{t}</option> }).collect_view()}
            </select>
            {reader(state, charts, message)}
            <p
                id="trainer-message"
                role="status"
                class="derived trainer-said"
                class:invalid=cond(move || message.get().is_some_and(|(_, bad)| bad))
                hidden=cond(move || message.get().is_none())
            >
                {text(move || message.get().map(|(m, _)| m).unwrap_or_default())}
            </p>
            {file_of(state)}
        </div>
    }
}

/// A trainer's config file dropped, chosen or pasted, read as `--from`
/// reads it by the readers' wasm ([`super::readers::reading`]); what it
/// said (or why not) into `message`.
fn reader(
    state: RwSignal<PageState>,
    charts: Charts,
    message: RwSignal<Option<(String, bool)>>,
) -> impl IntoView {
    use crate::from_page::pasted_name;
    let read = super::readers::reading("read_trainer_file", state, charts, message, true, || ());
    let read_blob = move |file: web_sys::File| super::readers::read_file(file, read, message);
    let on_file = move |ev: web_sys::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        if let Some(file) = input.files().and_then(|f| f.get(0)) {
            read_blob(file);
        }
    };
    let on_drop = move |ev: leptos::ev::DragEvent| {
        ev.prevent_default();
        let dropped = ev.data_transfer().and_then(|d| d.files());
        if let Some(file) = dropped.and_then(|f| f.get(0)) {
            read_blob(file);
        }
    };
    view! {
        <details
            class="config-import trainer-reader"
            on:dragover=|ev: leptos::ev::DragEvent| ev.prevent_default()
            on:drop=on_drop
        >
            <summary>"Read a trainer's config file"</summary>
            <label for="trainer-input">
                "Paste or drop a torchtune, axolotl, LLaMA-Factory, litgpt or TRL YAML, a torchtitan TOML, a DeepSpeed JSON, an accelerate YAML or a launch command line"
            </label>
            <textarea
                id="trainer-input"
                rows="4"
                spellcheck="false"
                on:input=on_event(move |ev| {
                    let body = event_target_value(&ev);
                    read(pasted_name(&body).into(), body)
                })
            ></textarea>
            <label for="trainer-file">"or choose the file"</label>
            <input id="trainer-file" type="file" on:change=on_event(on_file) />
        </details>
    }
}

/// The current configuration as the chosen trainer's file, with a copy
/// button (or why it cannot be written).
fn file_of(state: RwSignal<PageState>) -> impl IntoView {
    let status = RwSignal::new(String::new());
    let written = move || {
        let s = state.read();
        let t = s.detailed.trainer.filter(|_| s.mode == Mode::Detailed)?;
        Some(fragment(&s.detailed_config(), t))
    };
    let body = move || match written() {
        Some(Ok(f)) => f,
        Some(Err(e)) => e,
        None => String::new(),
    };
    view! {
        <details class="trainer-file" id="trainer-file-out" hidden=cond(move || written().is_none())>
            <summary>{text(move || format!("This configuration as {}'s file", state.read().detailed.trainer.unwrap_or("")))}</summary>
            <pre id="fragment-text">{text(body)}</pre>
            <button
                type="button"
                id="fragment-copy"
                disabled=cond(move || !matches!(written(), Some(Ok(_))))
                on:click=on_click(move || copy(body(), status))
            >
                "Copy the file"
            </button>
            <span role="status" class="derived">{text(move || status.get())}</span>
        </details>
    }
}

/// A planner's row as the chosen trainer's file: a button that copies it
/// and shows it under the row (or why it cannot be written); hidden when
/// no trainer with a file is chosen.
pub fn row_file(to: DetailedConfig, index: usize) -> impl IntoView {
    let State(state) = super::context::<State>();
    let trainer = state.read_untracked().detailed.trainer;
    let shown = trainer.and_then(emit_target).is_some();
    let file = RwSignal::new(String::new());
    view! {
        <button
            type="button"
            class="plan-file"
            id=format!("plan-file-{index}")
            hidden=!shown
            on:click=on_click(move || match fragment(&to, trainer.unwrap_or("")) {
                Ok(f) => {
                    file.set(f.clone());
                    copy(f, RwSignal::new(String::new()));
                }
                Err(e) => file.set(e),
            })
        >
            {format!("Copy as {}'s file", trainer.unwrap_or(""))}
        </button>
        <pre class="plan-file-text" hidden=cond(move || file.get().is_empty())>{text(move || file.get())}</pre>
    }
}

/// Copies `text`, saying in `status` whether the browser allowed it.
fn copy(text: String, status: RwSignal<String>) {
    let Some(clipboard) = web_sys::window().map(|w| w.navigator().clipboard()) else {
        return;
    };
    let promise = clipboard.write_text(&text);
    leptos::task::spawn_local(async move {
        let done = wasm_bindgen_futures::JsFuture::from(promise).await;
        status.set(if done.is_ok() {
            "Copied.".into()
        } else {
            "The browser did not allow copying: select the text and copy it.".into()
        });
    });
}
