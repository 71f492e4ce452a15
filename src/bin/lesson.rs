//! The light lesson page (see `membudget::light`): what `index.html` loads
//! first. Natively there is nothing to run; the command line is `membudget`.

#[cfg(target_arch = "wasm32")]
fn main() {
    membudget::light::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    eprintln!(
        "`lesson` is the page's light wasm, built by Trunk; the command line is `membudget`."
    );
    std::process::ExitCode::from(2)
}
