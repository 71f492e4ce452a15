//! The page's files read by the readers' wasm (`src/bin/readers.rs`): a
//! trainer's config file (`--from`'s readers) and a Hugging Face
//! `config.json` (the importer). They are a module of their own, fetched by
//! `window.membudgetRead` (`assets/boot.js`) the first time a file is read:
//! their parsers and tables are most of 190 KB gzip that a visitor who reads
//! no file never downloads.

use crate::state::PageState;
use wasm_bindgen::{JsCast, JsValue};

/// `body` (the file `name`) read by the readers' export `what`
/// (`read_trainer_file` or `read_config_json`) over the page at `query`:
/// the new page's state and what was read, or why not, in words. The
/// export answers `1`, the new address and what was read; or `0` and why
/// not.
pub(super) async fn read(
    what: &str,
    query: &str,
    name: &str,
    body: &str,
) -> Result<(PageState, String), String> {
    let unloaded = |e: JsValue| {
        let why = e
            .dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .unwrap_or_default();
        format!("the file readers could not be loaded ({why}); the command line reads it: membudget --from FILE")
    };
    let window = web_sys::window().ok_or("no window")?;
    let call = js_sys::Reflect::get(&window, &"membudgetRead".into())
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        .ok_or("the page's loader is missing")?;
    let args = js_sys::Array::of4(&what.into(), &query.into(), &name.into(), &body.into());
    let promise = call.apply(&JsValue::NULL, &args).map_err(unloaded)?;
    let answer = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::from(promise))
        .await
        .map_err(unloaded)?
        .as_string()
        .unwrap_or_default();
    match answer.split_once('\n') {
        Some(("1", rest)) => {
            let (address, said) = rest.split_once('\n').unwrap_or((rest, ""));
            let state = crate::url::decode_with(address, super::browser_to_f64).state;
            Ok((state, said.into()))
        }
        Some((_, why)) => Err(why.into()),
        None => Err("the file readers gave no answer".into()),
    }
}

/// A file's reading into the page: `read(name, body)` reads `body` (the
/// file `name`) by the readers' export `what` over the page in `state`,
/// sets the page to what it read (then calls `after`), and says what was
/// read, or why not, in `message` ((text, whether it is an error)); an
/// empty body clears the message. A later file wins over one still being
/// read. With `announce`, says that it is reading first (the readers load
/// on the first file).
pub(super) fn reading(
    what: &'static str,
    state: leptos::prelude::RwSignal<PageState>,
    charts: super::canvas::Charts,
    message: leptos::prelude::RwSignal<Option<(String, bool)>>,
    announce: bool,
    after: impl Fn() + Copy + Send + Sync + 'static,
) -> impl Fn(String, String) + Copy + Send + Sync + 'static {
    use leptos::prelude::*;
    let latest = StoredValue::new(0u32);
    move |name: String, body: String| {
        let ticket = latest.get_value().wrapping_add(1);
        latest.set_value(ticket);
        if body.trim().is_empty() {
            message.set(None);
            return;
        }
        let query = crate::url::encode(&state.get_untracked());
        leptos::task::spawn_local(async move {
            if announce {
                message.set(Some((
                    "Reading the file (the readers load on the first file)…".into(),
                    false,
                )));
            }
            let answer = read(what, &query, &name, &body).await;
            if latest.get_value() != ticket {
                return;
            }
            match answer {
                Ok((new, said)) => {
                    message.set(Some((said, false)));
                    charts.change(state, |s| *s = new);
                    after();
                }
                Err(e) => message.set(Some((format!("Not read: {e}. Nothing was changed."), true))),
            }
        });
    }
}

/// `file`'s text handed to `read` with its name, or "not text" in
/// `message`.
pub(super) fn read_file(
    file: web_sys::File,
    read: impl Fn(String, String) + 'static,
    message: leptos::prelude::RwSignal<Option<(String, bool)>>,
) {
    use leptos::prelude::*;
    let name = file.name();
    leptos::task::spawn_local(async move {
        let body = wasm_bindgen_futures::JsFuture::from(file.text()).await;
        match body.ok().and_then(|t| t.as_string()) {
            Some(t) => read(name, t),
            None => message.set(Some(("Not read: the file is not text.".into(), true))),
        }
    });
}
