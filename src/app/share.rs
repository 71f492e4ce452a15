//! Sharing and exporting: links, embed code, the table as text, the chart
//! as PNG; and the notice for values a link carried that were not used.

use super::reactive::{cond, not, on_click, text};
use super::{Budget, DetailedBudget, State};
use crate::budget::Breakdown;
use crate::detailed::DetailedBreakdown;
use crate::export::{
    csv, detailed_json, detailed_rows, iframe_snippet, lesson_rows, markdown, to_json, Row,
};
use crate::state::{Mode, Unit};
use crate::url::{encode, Ignored};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// Lists what the address carried that could not be used, until dismissed.
/// Values are shown as text, never as HTML.
#[component]
pub fn UrlNotices(
    /// The values that were ignored.
    ignored: Vec<Ignored>,
) -> impl IntoView {
    if ignored.is_empty() {
        return None;
    }
    let shown = RwSignal::new(true);
    Some(view! {
        <div class="notice" role="alert" id="url-notices" hidden=not(cond(move || shown.get()))>
            <p>"Some values in this link could not be used; defaults are shown instead:"</p>
            <ul>
                {ignored.iter().map(|i| view! { <li>{i.to_string()}</li> }).collect_view()}
            </ul>
            <button type="button" on:click=on_click(move || shown.set(false))>
                "Dismiss"
            </button>
        </div>
    })
}

/// The page's address for `query`, without any existing query or fragment.
fn page_url(query: &str) -> String {
    let location = web_sys::window().map(|w| w.location());
    let base = location
        .and_then(|l| Some(format!("{}{}", l.origin().ok()?, l.pathname().ok()?)))
        .unwrap_or_default();
    format!("{base}?{query}")
}

/// Copies `text` to the clipboard; the text also stays in the box below the
/// buttons, so it can be copied by hand where the browser refuses.
fn copy(text: String, what: &'static str, status: RwSignal<String>, output: RwSignal<String>) {
    output.set(text.clone());
    let Some(clipboard) = web_sys::window().map(|w| w.navigator().clipboard()) else {
        return;
    };
    let promise = clipboard.write_text(&text);
    leptos::task::spawn_local(async move {
        let done = wasm_bindgen_futures::JsFuture::from(promise).await;
        status.set(match done {
            Ok(_) => format!("Copied {what} to the clipboard."),
            Err(_) => {
                format!("The browser did not allow copying: select the {what} below and copy it.")
            }
        });
    });
}

/// Saves the main chart as `membudget-chart.png`.
fn download_chart(status: RwSignal<String>) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let url = doc
        .get_element_by_id("budget-chart")
        .and_then(|c| c.dyn_into::<web_sys::HtmlCanvasElement>().ok())
        .and_then(|c| c.to_data_url().ok());
    let link = doc
        .create_element("a")
        .ok()
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok());
    if let (Some(url), Some(link)) = (url, link) {
        link.set_href(&url);
        link.set_download("membudget-chart.png");
        link.click();
        status.set("Saved the chart as membudget-chart.png.".into());
    }
}

/// "Share and export": copy a link or embed code for this exact view, the
/// table as Markdown, CSV or JSON, or save the chart as PNG.
#[component]
pub fn ExportPanel() -> impl IntoView {
    let State(state) = super::context::<State>();
    let Budget(budget) = super::context::<Budget>();
    let status = RwSignal::new(String::new());
    let output = RwSignal::new(String::new());

    let link = move |embed: bool| {
        let mut s = *state.read_untracked();
        s.embed = embed;
        page_url(&encode(&s))
    };
    let DetailedBudget(detailed) = super::context::<DetailedBudget>();
    // What the panel exports: the lesson's budget through `lesson`, or the
    // detailed model's per GPU through `per_gpu` (empty if it cannot be
    // computed).
    type Export<'a, B> = &'a dyn Fn(&B) -> String;
    let in_force = move |lesson: Export<Breakdown>, per_gpu: Export<DetailedBreakdown>| {
        if state.read_untracked().mode == Mode::Detailed {
            detailed
                .get_untracked()
                .map(|b| per_gpu(&b))
                .unwrap_or_default()
        } else {
            budget
                .get_untracked()
                .map(|b| lesson(&b))
                .unwrap_or_default()
        }
    };
    let table = move |format: fn(&[Row], Unit) -> String| {
        let unit = state.read_untracked().unit;
        in_force(&|b| format(&lesson_rows(b), unit), &|b| {
            format(&detailed_rows(b), unit)
        })
    };
    let json = move || in_force(&to_json, &detailed_json);

    view! {
        <section class="panel export" aria-labelledby="export-title">
            <h2 id="export-title">"Share and export"</h2>
            <div class="buttons">
                <button type="button" id="copy-link" on:click=on_click(move || copy(link(false), "link", status, output))>
                    "Copy link"
                </button>
                <button
                    type="button"
                    id="copy-embed"
                    on:click=on_click(move || copy(iframe_snippet(&link(true)), "embed code", status, output))
                >
                    "Copy embed code"
                </button>
                <button
                    type="button"
                    id="copy-markdown"
                    on:click=on_click(move || copy(table(markdown), "Markdown table", status, output))
                >
                    "Copy table (Markdown)"
                </button>
                <button type="button" id="copy-csv" on:click=on_click(move || copy(table(csv), "CSV", status, output))>
                    "Copy table (CSV)"
                </button>
                <button
                    type="button"
                    id="copy-json"
                    on:click=on_click(move || copy(json(), "JSON", status, output))
                >
                    "Copy table (JSON)"
                </button>
                <button type="button" id="download-chart" on:click=on_click(move || download_chart(status))>
                    "Download chart (PNG)"
                </button>
            </div>
            <p id="export-status" role="status">{text(move || status.get())}</p>
            <textarea
                id="export-text"
                readonly
                rows="8"
                aria-label="Copied text"
                hidden=cond(move || output.get().is_empty())
                prop:value=text(move || output.get())
            ></textarea>
        </section>
    }
}
