//! The light lesson page: the lesson's view (five sliders, the precision
//! toggle, the stacked bar and the table) without a framework, as its own
//! small wasm (`src/bin/lesson.rs`). It is what `index.html` loads first, so
//! an embed or a first visit ships this, not the detailed model, the
//! importer, the sweep or the exports.
//!
//! On the full page it hands over to the full calculator (the `membudget`
//! wasm, fetched when the browser is idle after the first chart is drawn,
//! so that it never competes with it) with its state as a query string; in
//! an embed (`?embed=1`) it stays. An address it cannot show (detailed
//! mode, a baseline, an exercise, a value to report) goes to the full
//! calculator at once. Detailed, picked before the full calculator is
//! there, shows "Loading the detailed model…" instead of the lesson's
//! figures until it takes over.
//!
//! It does not build its markup: `index.html` carries the lesson's view as
//! static HTML (ids and classes the full page's), which the browser lays out
//! while this wasm downloads; [`start`] adopts it, sets the ranges, labels
//! and colours from the core, fills in the figures and draws the chart. So
//! the stylesheet, the tests and a reader's eye see the same page before and
//! after the hand-over.

use crate::app::browser_to_f64;
use crate::budget::{
    dominant_sentence, estimate, figure, master_copy_example, rounding_note, Breakdown, Field, Term,
};
use crate::canvas::{observe_size, paint, Surface};
use crate::chart::{term_colour_hex, Bar, ChartSpec};
use crate::number::show;
use crate::state::{Mode, PageState};
use crate::url::{decode_lesson, encode_light};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use web_sys::{Document, Element, HtmlInputElement};

#[wasm_bindgen]
extern "C" {
    /// Downloads and starts the full calculator's wasm (it waits, mounted
    /// nowhere, until its `take_over` is called): `assets/boot.js` defines
    /// it on the window, as a wasm-bindgen snippet would be one more module
    /// to fetch before the first chart.
    #[wasm_bindgen(js_name = membudgetLoadFull)]
    fn load_full() -> js_sys::Promise;
}

/// Asks the started full calculator (`module`, the one [`load_full`]
/// gives) to replace this page with `query`.
fn take_over(module: &JsValue, query: &str) {
    let f = js_sys::Reflect::get(module, &JsValue::from_str("take_over"))
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
    if let Some(f) = f {
        if let Err(e) = f.call1(module, &JsValue::from_str(query)) {
            not_loaded(&e);
        }
    }
}

/// The page's elements that change, and its state.
struct Page {
    state: PageState,
    doc: Document,
    sliders: Vec<HtmlInputElement>,
    boxes: Vec<HtmlInputElement>,
    messages: Vec<Element>,
    mixed: HtmlInputElement,
    hint: Element,
    sentence: Element,
    cells: Vec<Element>,
    /// The total's note when the rounded figures do not add up.
    rounding: Element,
    /// The five terms' table rows, and their formula and its explanation.
    rows: Vec<Element>,
    formulas: Vec<(Element, Element)>,
    chart: Surface,
    /// The system's colour scheme, asked once (each draw reads `matches`).
    dark: Option<web_sys::MediaQueryList>,
    open_full: Element,
    /// The canvas box in CSS pixels, kept by a `ResizeObserver`.
    size: (f64, f64),
    /// A pointer is down (a slider being dragged): the hand-over waits.
    pointer_down: bool,
    /// The full calculator, started and waiting to take over.
    full: Option<JsValue>,
    /// The full calculator has been asked for (by the idle prefetch or by
    /// Detailed).
    requested: bool,
}

type Shared = Rc<RefCell<Page>>;

/// Sets an attribute (on our own markup, where it cannot fail).
fn attr(e: &Element, name: &str, value: &str) {
    let _ = e.set_attribute(name, value);
}

/// Replaces an element's text.
fn text(e: &Element, t: &str) {
    e.set_text_content(Some(t));
}

/// Calls `f` on each `event` at `target`, for the life of the page.
fn listen(target: &Element, event: &str, f: impl FnMut(web_sys::Event) + 'static) {
    let closure = Closure::<dyn FnMut(web_sys::Event)>::new(f);
    let _ = target.add_event_listener_with_callback(event, closure.as_ref().unchecked_ref());
    // Lives as long as the element, which lives as long as the light page.
    closure.forget();
}

/// Starts the light page: reads the address; shows the lesson's view, or
/// hands an address it cannot show to the full calculator.
pub fn start() {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let query = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    crate::app::panic::install_hook();
    // The lesson's keys alone, as the full page reads them; any other
    // address (the detailed model, a baseline, an exercise, a value the full
    // page would refuse or repair, and in debug builds `?debug_panic=1`,
    // the full calculator's: see `crate::app`) is the full calculator's.
    let Some(state) = decode_lesson(&query, browser_to_f64) else {
        hand_over(None, query.trim_start_matches('?').to_string());
        return;
    };
    // The loader is an `async` module: the wasm may be ready before the
    // parser has reached the markup.
    if doc.ready_state() == "loading" {
        let ready = Closure::once_into_js(move || {
            if let Some(doc) = web_sys::window().and_then(|w| w.document()) {
                show_page(&doc, state);
            }
        });
        let _ = doc.add_event_listener_with_callback("DOMContentLoaded", ready.unchecked_ref());
    } else {
        show_page(&doc, state);
    }
}

/// Shows `state` on the static markup, then (on the full page) loads the
/// full calculator, which takes over when no slider is held.
fn show_page(doc: &Document, state: PageState) {
    let Some(main) = doc.get_element_by_id("light-page") else {
        return;
    };
    // `assets/boot.js` hides the markup for an address that looks like the
    // full page's; this one is the lesson's after all.
    if let Some(root) = doc.document_element() {
        let _ = root.class_list().remove_1("full-first");
    }
    // The chart first, on the layout the browser already has: the adoption's
    // writes would make reading the canvas's size lay the page out again
    // (cold navigation -> first chart: README "Benchmark").
    let chart: Surface = Surface::new(find(doc, "#budget-chart").unchecked_into())
        .expect("a fresh canvas has a 2D context");
    let dark = web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten());
    let budget = estimate(&state.config).ok();
    let mut size = (0.0, 0.0);
    if let Some(b) = &budget {
        draw(&chart, &mut size, &state, dark.as_ref(), b);
    }
    let page = adopt(doc, main, state, Drawn { chart, size, dark });
    page.borrow_mut().show(budget.as_ref());
    if !state.embed {
        let p = page.clone();
        when_idle(move || fetch_full(&p));
    }
}

/// Calls `f` once the browser is idle (`requestIdleCallback`, at most a
/// second later), or after the next frame where it has no idle callback:
/// the full calculator's download and compilation then start after the
/// first chart is on screen, not beside it.
fn when_idle(f: impl FnOnce() + 'static) {
    let Some(w) = web_sys::window() else { return };
    let f = Closure::once_into_js(f);
    let idle = js_sys::Reflect::get(&w, &JsValue::from_str("requestIdleCallback"))
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &"timeout".into(), &1000.into());
    let asked = idle.is_some_and(|idle| idle.call2(&w, &f, &options).is_ok());
    if !asked {
        let _ = w.set_timeout_with_callback_and_timeout_and_arguments_0(f.unchecked_ref(), 50);
    }
}

/// Downloads and starts the full calculator (once), which takes over when
/// it is ready and no slider is held.
fn fetch_full(page: &Shared) {
    {
        let Ok(mut p) = page.try_borrow_mut() else {
            return;
        };
        if p.requested {
            return;
        }
        p.requested = true;
    }
    let p = page.clone();
    let future = wasm_bindgen_futures::JsFuture::from(load_full());
    wasm_bindgen_futures::spawn_local(async move {
        match future.await {
            Ok(module) => {
                p.borrow_mut().full = Some(module);
                Page::maybe_hand_over(&p);
            }
            Err(e) => not_loaded(&e),
        }
    });
}

/// Starts the full calculator on `query` (loading it unless `module` is
/// already there).
fn hand_over(module: Option<JsValue>, query: String) {
    match module {
        Some(m) => take_over(&m, &query),
        None => {
            let future = wasm_bindgen_futures::JsFuture::from(load_full());
            wasm_bindgen_futures::spawn_local(async move {
                match future.await {
                    Ok(m) => take_over(&m, &query),
                    Err(e) => not_loaded(&e),
                }
            });
        }
    }
}

/// Says, in the page's alert banner, that the full calculator could not be
/// loaded (offline on a first visit, say), instead of failing silently.
fn not_loaded(error: &JsValue) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if doc.get_element_by_id("panic-banner").is_some() {
        return;
    }
    let detail = error
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .unwrap_or_default();
    let still = if doc.get_element_by_id("light-page").is_some() {
        "the lesson's view still works"
    } else {
        "reload the page to try again"
    };
    crate::app::panic::alert(&format!(
        "The full calculator could not be loaded ({detail}); {still}."
    ));
}

/// The element of the static markup matching `selector` (the markup is
/// ours: a missing element is a broken build, which the tests catch).
fn find(doc: &Document, selector: &str) -> Element {
    doc.query_selector(selector)
        .ok()
        .flatten()
        .expect("index.html carries the lesson's markup")
}

/// The chart as first drawn: its canvas, the box it was drawn in, and the
/// colour-scheme query it was drawn for.
struct Drawn {
    chart: Surface,
    size: (f64, f64),
    dark: Option<web_sys::MediaQueryList>,
}

/// Takes over the static markup of `index.html` (`#light-page`): sets the
/// ranges, labels and colours from the core, and the layout for `state`.
fn adopt(doc: &Document, main: Element, state: PageState, drawn: Drawn) -> Shared {
    if state.embed {
        let _ = main.class_list().add_1("embed");
    }
    let mut sliders = Vec::new();
    let mut boxes = Vec::new();
    let mut messages = Vec::new();
    for field in Field::ALL {
        let key = field.key();
        let (smin, smax, step) = field.slider_range();
        let (min, max) = field.range();
        let slider = find(doc, &format!("#{key}-slider"));
        attr(&slider, "min", &show(smin));
        attr(&slider, "max", &show(smax));
        attr(&slider, "step", &show(step));
        let number = find(doc, &format!("#{key}-input"));
        attr(&number, "min", &show(min));
        attr(&number, "max", &show(max));
        attr(
            &number,
            "step",
            if field.is_integer() { "1" } else { "any" },
        );
        attr(&number, "aria-label", &format!("{} value", field.label()));
        text(
            &find(doc, &format!("label[for={key}-slider]")),
            field.label(),
        );
        sliders.push(slider.unchecked_into());
        boxes.push(number.unchecked_into());
        messages.push(find(doc, &format!("#{key}-message")));
    }
    let mut cells = Vec::new();
    let mut rows = Vec::new();
    let mut formulas = Vec::new();
    for term in Term::ALL {
        let row = format!("tr[data-term={}]", term.json_key());
        // Through the CSSOM: the page's policy refuses style attributes.
        let swatch = find(doc, &format!("{row} .swatch"));
        let _ = swatch
            .unchecked_ref::<web_sys::HtmlElement>()
            .style()
            .set_property("background-color", &term_colour_hex(term));
        cells.push(find(doc, &format!("{row} td.gb")));
        formulas.push((
            find(doc, &format!("{row} code")),
            find(doc, &format!("{row} .why")),
        ));
        rows.push(find(doc, &row));
    }
    cells.push(find(doc, "tr[data-term=total] td.gb"));
    let (why, lines) = master_copy_example();
    text(&find(doc, "#master-why figcaption"), &why);
    text(&find(doc, "#master-why pre"), &lines.join("\n"));
    let unit = state.unit;
    text(&find(doc, "table.budget thead th.num"), unit.label());
    text(
        &find(doc, "tr[data-term=total] th"),
        &format!("Total ({})", unit.label()),
    );
    text(
        &find(doc, "table.budget caption"),
        &format!("Memory budget ({}; N = parameters)", unit.definition()),
    );
    let page = Rc::new(RefCell::new(Page {
        state,
        doc: doc.clone(),
        sliders,
        boxes,
        messages,
        mixed: find(doc, "#mixed-input").unchecked_into(),
        hint: find(doc, "#light-page .hint"),
        sentence: find(doc, "#light-page .dominant-sentence"),
        cells,
        rounding: find(doc, "#rounding-note"),
        rows,
        formulas,
        chart: drawn.chart,
        dark: drawn.dark,
        open_full: find(doc, "#light-page .open-full"),
        size: drawn.size,
        pointer_down: false,
        full: None,
        requested: false,
    }));
    wire(&page, &main, find(doc, "#mode-detailed").unchecked_into());
    page
}

/// The listeners: sliders, number boxes, the toggle, the mode switch; the
/// canvas size, the colour scheme; pointers (for the hand-over).
fn wire(page: &Shared, main: &Element, detailed_radio: HtmlInputElement) {
    let p = page.borrow();
    for (i, field) in Field::ALL.into_iter().enumerate() {
        let pg = page.clone();
        // The range's value as a number, in one call (no text to parse).
        listen(&p.sliders[i], "input", move |ev| {
            let pos = target_input(&ev).map_or(f64::NAN, |i| i.value_as_number());
            if pos.is_finite() {
                pg.borrow_mut().apply(field, field.from_slider(pos), None);
            }
        });
        let pg = page.clone();
        listen(&p.boxes[i], "input", move |ev| {
            if let Ok(v) = field.parse_with(&target_value(&ev), browser_to_f64) {
                pg.borrow_mut().apply(field, v, None);
            }
        });
        let pg = page.clone();
        listen(&p.boxes[i], "change", move |ev| {
            let mut page = pg.borrow_mut();
            let current = page.state.config.get(field);
            let (v, note) = field.commit(&target_value(&ev), current, browser_to_f64);
            page.apply(field, v, Some(note.unwrap_or_default()));
        });
    }
    let pg = page.clone();
    listen(&p.mixed, "change", move |ev| {
        let on = ev
            .target()
            .and_then(|t| t.dyn_into::<HtmlInputElement>().ok())
            .is_some_and(|i| i.checked());
        let mut page = pg.borrow_mut();
        page.state.config.mixed_precision = on;
        page.render();
    });
    wire_detailed(page, detailed_radio);
    let pg = page.clone();
    listen(main, "pointerdown", move |_| {
        pg.borrow_mut().pointer_down = true
    });
    // Leaving a number box may be what the hand-over waited for.
    let pg = page.clone();
    listen(main, "focusout", move |_| {
        let pg = pg.clone();
        // After the focus has moved on (focusout fires before it does).
        let later = Closure::once_into_js(move || Page::maybe_hand_over(&pg));
        if let Some(w) = web_sys::window() {
            let _ = w.set_timeout_with_callback(later.unchecked_ref());
        }
    });
    for event in ["pointerup", "pointercancel"] {
        let pg = page.clone();
        if let Some(w) = web_sys::window() {
            let closure = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
                pg.borrow_mut().pointer_down = false;
                Page::maybe_hand_over(&pg);
            });
            let _ = w.add_event_listener_with_callback(event, closure.as_ref().unchecked_ref());
            closure.forget();
        }
    }
    // Redraw when the canvas box changes size.
    let pg = page.clone();
    observe_size(p.chart.canvas(), move |new| {
        if let Ok(mut page) = pg.try_borrow_mut() {
            if page.size != new {
                page.size = new;
                page.redraw();
            }
        }
    });
    // Redraw in the other colours when the system's scheme changes.
    if let Some(query) = &p.dark {
        let pg = page.clone();
        let listener = Closure::<dyn Fn(web_sys::Event)>::new(move |_| {
            if let Ok(mut page) = pg.try_borrow_mut() {
                page.redraw();
            }
        });
        let _ = query.add_event_listener_with_callback("change", listener.as_ref().unchecked_ref());
        listener.forget();
    }
}

/// Detailed: the full calculator at once if it is there; else
/// "Loading the detailed model…" in place of the lesson's figures until
/// it takes over (in detailed mode, since the state now says so).
fn wire_detailed(page: &Shared, radio: HtmlInputElement) {
    let pg = page.clone();
    listen(&radio, "change", move |_| {
        let (full, query) = {
            let mut page = pg.borrow_mut();
            page.state.mode = Mode::Detailed;
            (page.full.take(), encode_light(&page.state))
        };
        if full.is_some() {
            hand_over(full, query);
            return;
        }
        if let Some(root) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.document_element())
        {
            let _ = root.class_list().add_1("loading-full");
        }
        fetch_full(&pg);
    });
}

/// Draws `b`, the budget of `state`, on `chart` in the colours `dark` asks
/// for; `size` is the canvas's box, measured by [`paint`] if not known yet
/// (`(0, 0)`). Nothing while hidden.
fn draw(
    chart: &Surface,
    size: &mut (f64, f64),
    state: &PageState,
    dark: Option<&web_sys::MediaQueryList>,
    b: &Breakdown,
) {
    let spec = ChartSpec {
        legend: (!state.embed).then_some(0),
        share: false,
        bars: vec![Bar::lesson("Current", b)],
        unit: state.unit,
        capacity_bytes: state.gpu.map(|g| g.bytes()),
        marked: None,
    };
    paint(chart, size, &spec, dark.is_some_and(|q| q.matches()));
}

/// The input element an event came from.
fn target_input(ev: &web_sys::Event) -> Option<HtmlInputElement> {
    ev.target()
        .and_then(|t| t.dyn_into::<HtmlInputElement>().ok())
}

fn target_value(ev: &web_sys::Event) -> String {
    target_input(ev).map(|i| i.value()).unwrap_or_default()
}

impl Page {
    /// Sets `field` to `value` (already valid) and shows it; `note`, when
    /// given, replaces the field's message.
    fn apply(&mut self, field: Field, value: f64, note: Option<String>) {
        if let Ok(next) = self.state.config.with(field, value) {
            self.state.config = next;
        }
        let i = Field::ALL.iter().position(|&f| f == field).unwrap_or(0);
        if let Some(note) = note {
            text(&self.messages[i], &note);
            // The value in force, even when it did not change.
            self.boxes[i].set_value(&show(self.state.config.get(field)));
        } else {
            text(&self.messages[i], "");
        }
        self.render();
    }

    /// Shows the state: chart, inputs, sentence and table.
    fn render(&mut self) {
        let budget = estimate(&self.state.config).ok();
        // The chart first: setting a canvas font after other changes to the
        // page makes the browser recompute their styles at once.
        if let Some(b) = &budget {
            draw(
                &self.chart,
                &mut self.size,
                &self.state,
                self.dark.as_ref(),
                b,
            );
        }
        self.show(budget.as_ref());
    }

    /// Shows the state around the chart: inputs, sentence and table
    /// (`budget`: the state's, `None` if it has none).
    fn show(&mut self, budget: Option<&Breakdown>) {
        let s = self.state;
        let focused = self.doc.active_element();
        for (i, field) in Field::ALL.into_iter().enumerate() {
            let v = s.config.get(field);
            self.sliders[i].set_value(&show(field.to_slider(v)));
            attr(
                &self.sliders[i],
                "aria-valuetext",
                format!("{} {}", show(v), field.unit()).trim_end(),
            );
            let number: &Element = &self.boxes[i];
            if focused.as_ref() != Some(number) {
                self.boxes[i].set_value(&show(v));
            }
        }
        self.mixed.set_checked(s.config.mixed_precision);
        let mixed = s.config.mixed_precision;
        text(
            &self.hint,
            if mixed {
                "bf16 weights and gradients, fp32 master copy"
            } else {
                "fp32 weights and gradients, no master copy"
            },
        );
        let Some(b) = budget else { return };
        let unit = s.unit;
        let sentence = dominant_sentence(b, unit);
        text(&self.sentence, &sentence);
        attr(self.chart.canvas(), "aria-label", &sentence);
        let dominant = b.dominant();
        for (i, term) in Term::ALL.into_iter().enumerate() {
            text(&self.cells[i], &figure(b.bytes(term), unit));
            let row = &self.rows[i];
            let _ = row
                .class_list()
                .toggle_with_force("dominant", term == dominant);
            let (code, why) = &self.formulas[i];
            text(code, term.formula(mixed));
            text(why, term.explanation(mixed));
        }
        text(&self.cells[Term::ALL.len()], &figure(b.total, unit));
        text(&self.rounding, rounding_note(b, unit).unwrap_or_default());
        let mut full = s;
        full.embed = false;
        attr(
            &self.open_full,
            "href",
            &format!("?{}", encode_light(&full)),
        );
    }

    /// Draws the chart again (its box or the colour scheme changed).
    fn redraw(&mut self) {
        if let Ok(b) = estimate(&self.state.config) {
            draw(
                &self.chart,
                &mut self.size,
                &self.state,
                self.dark.as_ref(),
                &b,
            );
        }
    }

    /// Hands over to the full calculator once it is loaded, no slider is
    /// held and no number box is being typed in (the full page would show
    /// the value in force, not the half-typed text).
    fn maybe_hand_over(page: &Shared) {
        let (full, query) = {
            let Ok(mut p) = page.try_borrow_mut() else {
                return;
            };
            let typing = p.doc.active_element().is_some_and(|e| {
                p.boxes.iter().any(|b| {
                    let b: &Element = b;
                    *b == e
                })
            });
            if p.pointer_down || typing || p.full.is_none() {
                return;
            }
            (p.full.take(), encode_light(&p.state))
        };
        hand_over(full, query);
    }
}
