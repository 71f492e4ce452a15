//! The page's components mounted in a real browser (headless Chromium via
//! wasm-bindgen-test): move a control, see the table and the chart change.
#![cfg(target_arch = "wasm32")]

use membudget::app::App;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{Event, EventInit, HtmlCanvasElement, HtmlElement, HtmlInputElement};

wasm_bindgen_test_configure!(run_in_browser);

/// Lets Leptos's effects and the browser run.
async fn settle() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        web_sys::window()
            .unwrap()
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 30)
            .unwrap();
    });
    wasm_bindgen_futures::JsFuture::from(promise).await.unwrap();
}

/// Mounts a fresh App in its own sized `<div>` and returns that div.
async fn mount() -> HtmlElement {
    let doc = web_sys::window().unwrap().document().unwrap();
    let root: HtmlElement = doc.create_element("div").unwrap().unchecked_into();
    root.set_attribute("style", "width: 1000px").unwrap();
    doc.body().unwrap().append_child(&root).unwrap();
    leptos::mount::mount_to(root.clone(), App).forget();
    settle().await;
    root
}

fn find<T: JsCast>(root: &HtmlElement, selector: &str) -> T {
    root.query_selector(selector)
        .unwrap()
        .unwrap_or_else(|| panic!("no {selector}"))
        .unchecked_into()
}

/// The GB cell of one table row (`params` … `activations`, `total`).
fn gb(root: &HtmlElement, term: &str) -> String {
    find::<HtmlElement>(root, &format!("tr[data-term='{term}'] td.gb"))
        .text_content()
        .unwrap()
}

fn all_gb(root: &HtmlElement) -> Vec<String> {
    [
        "params",
        "grads",
        "master_weights",
        "optimizer_state",
        "activations",
        "total",
    ]
    .iter()
    .map(|t| gb(root, t))
    .collect()
}

/// Sets an input's value and fires the event a person's edit would.
fn set(input: &HtmlInputElement, value: &str, event: &str) {
    input.set_value(value);
    let init = EventInit::new();
    init.set_bubbles(true);
    input
        .dispatch_event(&Event::new_with_event_init_dict(event, &init).unwrap())
        .unwrap();
}

fn chart_pixels(root: &HtmlElement) -> String {
    find::<HtmlCanvasElement>(root, "#budget-chart")
        .to_data_url()
        .unwrap()
}

#[wasm_bindgen_test]
async fn opens_on_the_lesson_example() {
    let root = mount().await;
    assert_eq!(
        all_gb(&root),
        ["14.0", "14.0", "28.0", "56.0", "73.0", "185.0"]
    );
    let sentence = find::<HtmlElement>(&root, ".dominant-sentence")
        .text_content()
        .unwrap();
    assert_eq!(sentence, "Activations dominate: 73.0 of 185.0 GB, 39 %");
    assert_eq!(find::<HtmlInputElement>(&root, "#batch-input").value(), "4");
}

#[wasm_bindgen_test]
async fn batch_slider_grows_only_activations_and_redraws() {
    let root = mount().await;
    let before = chart_pixels(&root);
    // Slider units are log2 for batch: 3 is batch 8.
    set(&find(&root, "#batch-slider"), "3", "input");
    settle().await;
    assert_eq!(
        all_gb(&root),
        ["14.0", "14.0", "28.0", "56.0", "146.0", "258.0"]
    );
    assert_eq!(find::<HtmlInputElement>(&root, "#batch-input").value(), "8");
    assert_ne!(chart_pixels(&root), before, "chart did not redraw");
}

#[wasm_bindgen_test]
async fn typed_out_of_range_value_is_clamped_with_a_message() {
    let root = mount().await;
    let boxed: HtmlInputElement = find(&root, "#batch-input");
    set(&boxed, "5000", "input");
    set(&boxed, "5000", "change");
    settle().await;
    assert_eq!(boxed.value(), "1024");
    let msg = find::<HtmlElement>(&root, "#batch-message")
        .text_content()
        .unwrap();
    assert_eq!(
        msg,
        "Batch size must be at most 1024 (got 5000); using 1024."
    );
    assert_eq!(gb(&root, "activations"), "18691.7");
    // Text that is no number is refused, the value kept, the message shown.
    set(&boxed, "", "change");
    settle().await;
    assert_eq!(boxed.value(), "1024");
    let msg = find::<HtmlElement>(&root, "#batch-message")
        .text_content()
        .unwrap();
    assert_eq!(msg, "Batch size needs a value; kept 1024.");
    assert!(!root.inner_text().contains("NaN"));
}

#[wasm_bindgen_test]
async fn unticking_mixed_precision_empties_master_weights() {
    let root = mount().await;
    let mixed: HtmlInputElement = find(&root, "#mixed-input");
    mixed.set_checked(false);
    let init = EventInit::new();
    init.set_bubbles(true);
    mixed
        .dispatch_event(&Event::new_with_event_init_dict("change", &init).unwrap())
        .unwrap();
    settle().await;
    assert_eq!(
        all_gb(&root),
        ["28.0", "28.0", "0.0", "56.0", "73.0", "185.0"]
    );
}
