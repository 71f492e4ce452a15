//! The page's components mounted in a real browser (headless Chromium via
//! wasm-bindgen-test): move a control, see the table and the chart change.
#![cfg(target_arch = "wasm32")]

use leptos::prelude::*;
use membudget::app::{App, Calculator};
use membudget::state::PageState;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;
use web_sys::{Event, EventInit, HtmlCanvasElement, HtmlElement, HtmlInputElement};

wasm_bindgen_test_configure!(run_in_browser);

/// Lets Leptos's effects and the browser run.
async fn settle() {
    wait_ms(30).await;
}

/// Waits `ms` milliseconds.
async fn wait_ms(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        web_sys::window()
            .unwrap()
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms)
            .unwrap();
    });
    wasm_bindgen_futures::JsFuture::from(promise).await.unwrap();
}

/// A fresh sized `<div>` on the test page.
fn container() -> HtmlElement {
    let doc = web_sys::window().unwrap().document().unwrap();
    let root: HtmlElement = doc.create_element("div").unwrap().unchecked_into();
    root.set_attribute("style", "width: 1000px").unwrap();
    doc.body().unwrap().append_child(&root).unwrap();
    root
}

/// Mounts a calculator on the lesson's example in its own `<div>` (not
/// [`App`], which reads the shared test page's address) and returns the div.
async fn mount() -> HtmlElement {
    let root = container();
    leptos::mount::mount_to(root.clone(), || {
        view! { <Calculator initial=PageState::default() /> }
    })
    .forget();
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

#[wasm_bindgen_test]
async fn app_reads_its_configuration_from_the_address() {
    // Calculators mounted by earlier tests write their own state to the
    // address once it has rested 250 ms: let them finish first.
    wait_ms(300).await;
    let history = web_sys::window().unwrap().history().unwrap();
    history
        .replace_state_with_url(
            &wasm_bindgen::JsValue::NULL,
            "",
            Some("?batch=16&mixed=0&junk=1"),
        )
        .unwrap();
    let root = container();
    leptos::mount::mount_to(root.clone(), App).forget();
    settle().await;
    assert_eq!(
        all_gb(&root),
        ["28.0", "28.0", "0.0", "56.0", "292.1", "404.1"]
    );
    // And writes its state back, in the codec's canonical form, once the
    // state has rested 250 ms.
    wait_ms(300).await;
    let search = web_sys::window().unwrap().location().search().unwrap();
    assert_eq!(
        search,
        "?params=7&batch=16&seq=2048&hidden=4096&layers=32&mixed=0"
    );
    history
        .replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some("?"))
        .unwrap();
}

#[wasm_bindgen_test]
async fn pinning_a_baseline_adds_its_column() {
    let root = mount().await;
    find::<HtmlElement>(&root, "#pin-baseline").click();
    settle().await;
    set(&find(&root, "#layers-slider"), "64", "input");
    settle().await;
    let cell = |class: &str| {
        find::<HtmlElement>(&root, &format!("tr[data-term='activations'] td.{class}"))
            .text_content()
            .unwrap()
    };
    assert_eq!(
        (cell("baseline"), cell("gb"), cell("change")),
        ("73.0".into(), "146.0".into(), "+73.0".into())
    );
}

/// The page reads numbers with the browser's conversion; on every decimal
/// the syntax accepts it must give Rust's value, bit for bit. Random texts
/// of up to 25 digits, exponents to ±350, and the awkward cases by hand.
/// The comparison in detailed mode: Llama-3.1-70B on 64 H100s with ZeRO-1
/// pinned and ZeRO-3 on screen (tests/compare.rs's figures); one click
/// unpins, another pins the page as it is.
#[wasm_bindgen_test]
async fn detailed_pin_shows_both_and_the_change() {
    use membudget::state::Pinned;
    let planner = "batch=512&seq=8192&card=h100-sxm&mode=detailed&model=llama-3.1-70b&dp=8&tp=8&sp=1&zero=1&micro=1&recompute=full&tokens=1e12&price=2";
    let one = membudget::url::decode(planner).state;
    let mut three = membudget::url::decode(&format!("{planner}&zero=3")).state;
    three.pin = Some(Pinned::of(&one));
    let root = container();
    leptos::mount::mount_to(root.clone(), move || {
        view! { <Calculator initial=three /> }
    })
    .forget();
    settle().await;
    let cells = |key: &str| -> Vec<String> {
        let row = format!("#compare-table tr[data-line='{key}']");
        [
            "th",
            "td:nth-of-type(1)",
            "td:nth-of-type(2)",
            "td:nth-of-type(3)",
        ]
        .iter()
        .map(|c| {
            find::<HtmlElement>(&root, &format!("{row} {c}"))
                .text_content()
                .unwrap()
        })
        .collect()
    };
    assert_eq!(cells("params"), ["Parameters", "17.6", "2.2", "−15.4"]);
    assert_eq!(
        cells("step_s"),
        ["Step time", "74.96 s", "90.67 s", "+15.71 s"]
    );
    assert_eq!(cells("cost"), ["Cost", "635,465", "768,623", "+133,158"]);
    assert_eq!(
        find::<HtmlElement>(&root, "#compare-what")
            .text_content()
            .unwrap(),
        "Pinned: now with --zero 1."
    );
    find::<HtmlElement>(&root, "#unpin-detailed").click();
    settle().await;
    assert!(root.query_selector("#compare-table").unwrap().is_none());
    find::<HtmlElement>(&root, "#pin-detailed").click();
    settle().await;
    assert_eq!(cells("params"), ["Parameters", "2.2", "2.2", "0.0"]);
}

#[wasm_bindgen_test]
fn browser_conversion_agrees_with_rust() {
    use membudget::app::browser_to_f64;
    use membudget::number::{read, std_to_f64};
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut texts: Vec<String> = [
        "7",
        "0.124",
        ".5",
        "5.",
        "1e3",
        "-0",
        "2.5E-2",
        "9007199254740993",
        "0.1000000000000000055511151231257827",
        "2.2250738585072011e-308",
        "4.9406564584124654e-324",
        "1.7976931348623157e308",
        "1e400",
        "123456789012345678901234567890",
    ]
    .map(String::from)
    .to_vec();
    for _ in 0..5_000 {
        let digit = |next: &mut dyn FnMut(u64) -> u64| char::from(b'0' + next(10) as u8);
        let mut t = String::new();
        if next(3) == 0 {
            t.push('-');
        }
        for _ in 0..next(18) + 1 {
            t.push(digit(&mut next));
        }
        if next(2) == 0 {
            t.push('.');
            for _ in 0..next(10) {
                t.push(digit(&mut next));
            }
        }
        if next(3) == 0 {
            t += &format!("e{}", next(700) as i64 - 350);
        }
        texts.push(t);
    }
    for t in &texts {
        let ours = read(t, browser_to_f64).map(f64::to_bits);
        let rust = read(t, std_to_f64).map(f64::to_bits);
        assert!(ours.is_some(), "{t} refused");
        assert_eq!(ours, rust, "{t}");
    }
}

/// The pixels of `spec` drawn on a fresh 900 × 360 canvas at device scale
/// 2, with filled rectangles batched by colour or filled one by one.
fn drawn(spec: &membudget::chart::ChartSpec, batch: bool) -> Vec<u8> {
    let doc = web_sys::window().unwrap().document().unwrap();
    let canvas: HtmlCanvasElement = doc.create_element("canvas").unwrap().unchecked_into();
    doc.body().unwrap().append_child(&canvas).unwrap();
    let surface = membudget::canvas::Surface::new(canvas.clone()).unwrap();
    let style = membudget::chart::ChartStyle {
        scale: 2.0,
        dark: false,
    };
    membudget::canvas::paint_with(&surface, (900.0, 360.0), spec, &style, batch);
    let context: web_sys::CanvasRenderingContext2d =
        canvas.get_context("2d").unwrap().unwrap().unchecked_into();
    let pixels = context
        .get_image_data(0.0, 0.0, 1800.0, 720.0)
        .unwrap()
        .data()
        .0;
    canvas.remove();
    pixels
}

/// The step timeline of `s` as the page draws it: a bar per event, the
/// peak marked and its terms in the legend, the others faded.
fn timeline_spec(s: &membudget::state::PageState) -> membudget::chart::ChartSpec {
    let t = membudget::detailed::memory::timeline(
        &s.detailed_config(),
        &membudget::detailed::StepOptions::default(),
    )
    .unwrap();
    let (bars, peak) = membudget::chart::timeline_bars(&t, 0.0);
    membudget::chart::ChartSpec {
        legend: Some(peak),
        share: false,
        bars,
        unit: s.unit,
        capacity_bytes: s.gpu.map(|g| g.bytes()),
        marked: Some(peak),
    }
}

#[wasm_bindgen_test]
fn batched_rectangles_draw_the_same_pixels_as_one_by_one() {
    // The step timeline: a bar per event, the faded ones translucent, of a model
    // with every kind of segment; and the detailed budget bar.
    let s = membudget::url::decode("mode=detailed&model=llama-3.1-8b&gpu=80").state;
    let cfg = s.detailed_config();
    let timeline = timeline_spec(&s);
    assert!(timeline.bars.len() >= 20, "{} bars", timeline.bars.len());
    let budget = membudget::chart::ChartSpec {
        legend: Some(0),
        share: false,
        bars: vec![membudget::chart::Bar::detailed(
            "Detailed, per GPU",
            &membudget::detailed::estimate(&cfg).unwrap(),
        )],
        unit: s.unit,
        capacity_bytes: None,
        marked: None,
    };
    for spec in [&timeline, &budget] {
        let (batched, one_by_one) = (drawn(spec, true), drawn(spec, false));
        assert_eq!(batched.len(), 1800 * 720 * 4);
        // Something was drawn: not all one colour.
        assert!(batched.chunks(4).any(|p| p != &batched[..4]));
        let differing = batched
            .chunks(4)
            .zip(one_by_one.chunks(4))
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(differing, 0, "{differing} pixels differ");
    }
}

/// Translucent colours reach the canvas as set: the faded bars (55 %) and
/// the grid lines (15 %) blend with the white ground. A colour string the
/// browser refused would leave the previous colour in place, unseen.
#[wasm_bindgen_test]
fn translucent_colours_are_drawn_blended() {
    let s = membudget::url::decode("mode=detailed&model=llama-3.1-8b").state;
    let pixels = drawn(&timeline_spec(&s), true);
    // `c` at `alpha` over white, per channel.
    let over_white = |c: [f64; 3], alpha: f64| c.map(|v| alpha * v + (1.0 - alpha) * 255.0);
    let count = |want: [f64; 3]| {
        pixels
            .chunks(4)
            .filter(|p| (0..3).all(|i| (f64::from(p[i]) - want[i]).abs() <= 1.5))
            .count()
    };
    // Parameters' blue, faded; the grid's near-black at 15 %.
    let faded = count(over_white([0.0, 114.0, 178.0], 0.55));
    let grid = count(over_white([34.0, 34.0, 34.0], 0.15));
    assert!(faded > 1000, "{faded} faded-blue pixels");
    assert!(grid > 100, "{grid} grid pixels");
}
