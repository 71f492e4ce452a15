//! A panic shows a readable banner instead of leaving a blank page.
//!
//! Release builds abort on a panic without running any hook
//! (`-Cpanic=immediate-abort`, see `.ci/setup.sh`): there the banner comes
//! from `assets/boot.js`, which sees the wasm trap. Everywhere else this
//! hook shows it, with the panic's message.

/// Logs panics to the console and shows them in a banner at the top of the
/// page. Compiled out where no hook can run.
#[cfg(not(panic = "immediate-abort"))]
pub fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        // The message alone: release builds leave out panic locations.
        show_banner(info.payload_as_str().unwrap_or("an internal error"));
    }));
}

/// Where panics abort at once, a hook would never run.
#[cfg(panic = "immediate-abort")]
pub fn install_hook() {}

/// Puts the message in a `role="alert"` banner; plain text, never HTML.
#[cfg(not(panic = "immediate-abort"))]
fn show_banner(message: &str) {
    alert(&format!(
        "Something went wrong and the calculator stopped: {message}. Reload the page to start again."
    ));
}

/// Inserts `text` at the top of the page in the alert banner
/// (`#panic-banner`, `role="alert"`); plain text, never HTML. Also used by
/// the light page ([`crate::light`]) when the full calculator cannot load.
pub(crate) fn alert(text: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Some(body) = doc.body() else { return };
    let Ok(banner) = doc.create_element("div") else {
        return;
    };
    banner.set_id("panic-banner");
    let _ = banner.set_attribute("role", "alert");
    banner.set_text_content(Some(text));
    let _ = body.insert_before(&banner, body.first_child().as_ref());
}
