//! On wasm32 this mounts the page; natively it is the command line.

#[cfg(target_arch = "wasm32")]
fn main() {
    membudget::app::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    use clap::Parser;
    let args = membudget::cli::Args::parse();
    match membudget::cli::run(&args) {
        Ok(out) => {
            print!("{out}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(2)
        }
    }
}
