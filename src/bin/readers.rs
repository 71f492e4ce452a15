//! The page's file readers: the `--from` readers of
//! [`membudget::detailed::trainers`] (issue 37) and the `config.json`
//! importer ([`membudget::detailed::import_config`]) as a third wasm, which
//! the full calculator loads the first time a reader drops, chooses or
//! pastes a file (`src/app/readers.rs`, `window.membudgetRead` in
//! `assets/boot.js`). Apart from the calculator because they are large (the
//! JSON, TOML and YAML parsers and every trainer's key table) and most
//! visitors never read a file. Natively there is nothing to run; the
//! command line's `--from` and `--config` read the same files.

/// Nothing to do when the module starts: the calculator calls [`read`].
#[cfg(target_arch = "wasm32")]
fn main() {}

/// Reads `body`, a trainer's file named `name`, over the page whose address
/// is `query` ([`membudget::from_page::read_file`]).
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn read_trainer_file(query: &str, name: &str, body: &str) -> String {
    answer(query, |state, to_f64| {
        membudget::from_page::read_file(state, name, body, to_f64)
    })
}

/// Reads `body`, a Hugging Face `config.json`, over the page whose address
/// is `query` ([`membudget::from_page::import_config_json`]); `name` is
/// unused.
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn read_config_json(query: &str, _name: &str, body: &str) -> String {
    answer(query, |state, _| {
        membudget::from_page::import_config_json(state, body)
    })
}

/// The page at `query` (read with the browser's decimal conversion, as the
/// page reads it) changed by `read`, as one line, `1` when read or `0` when
/// refused, then, when read, a line with the new page's address, then what
/// was read (or why not): text, so that no serializer is shipped.
#[cfg(target_arch = "wasm32")]
fn answer(
    query: &str,
    read: impl FnOnce(
        &membudget::state::PageState,
        membudget::number::ToF64,
    ) -> Result<membudget::from_page::Applied, String>,
) -> String {
    use membudget::url;
    let to_f64 = |d: &str| js_sys::Number::parse_float(d);
    let state = url::decode_with(query, to_f64).state;
    match read(&state, to_f64) {
        Ok(read) => format!("1\n{}\n{}", url::encode(&read.state), read.said),
        Err(why) => format!("0\n{why}"),
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    eprintln!(
        "`readers` is the page's trainer-file readers, a wasm built by Trunk; the command line is `membudget --from FILE`."
    );
    std::process::ExitCode::from(2)
}
