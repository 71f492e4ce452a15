//! A panic shows a readable banner instead of leaving a blank page.

use wasm_bindgen::JsCast;

/// Logs panics to the console and shows them in a banner at the top of the page.
pub fn install_hook() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        // The message alone: release builds leave out panic locations.
        show_banner(info.payload_as_str().unwrap_or("an internal error"));
    }));
}

/// Puts the message in a `role="alert"` banner; plain text, never HTML.
fn show_banner(message: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Some(body) = doc.body() else { return };
    let Ok(banner) = doc.create_element("div") else {
        return;
    };
    banner.set_id("panic-banner");
    let _ = banner.set_attribute("role", "alert");
    banner.set_text_content(Some(&format!(
        "Something went wrong and the calculator stopped: {message}. Reload the page to start again."
    )));
    if let Ok(node) = banner.dyn_into::<web_sys::Node>() {
        let _ = body.insert_before(&node, body.first_child().as_ref());
    }
}
