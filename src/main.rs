//! On wasm32 this mounts the page; natively it is the command line.

/// On wasm32 the full calculator, which the light lesson page
/// (`src/light.rs`) loads and starts through [`take_over`]: nothing to do
/// when the module starts.
#[cfg(target_arch = "wasm32")]
fn main() {}

/// Replaces the light lesson page with the full calculator on `query`.
#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn take_over(query: String) {
    membudget::app::take_over(&query);
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    use clap::Parser;
    use std::io::Write;
    let args = membudget::cli::Args::parse();
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let run = membudget::from::with_from(args, &argv).and_then(|a| membudget::cli::run(&a));
    match run {
        Ok(out) => {
            // A reader who pipes into `head` closes the pipe early: that
            // ends the output quietly instead of panicking, as `print!` would.
            match std::io::stdout().lock().write_all(out.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    eprintln!("error: {e}");
                    std::process::ExitCode::FAILURE
                }
                _ => std::process::ExitCode::SUCCESS,
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
