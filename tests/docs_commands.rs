//! Every command-line example in README.md and docs/ runs exactly as
//! written and prints what the document shows: `trycmd` reads each
//! ```` ```console ```` block (`$ membudget …` then its output; `...` stands
//! for lines left out) and runs it against the binary this package builds.
//! `TRYCMD=overwrite cargo test --test native docs_commands::` rewrites the outputs.
#![cfg(not(target_arch = "wasm32"))]

#[test]
fn readme_and_docs_examples_run_as_written() {
    trycmd::TestCases::new()
        .register_bin(
            "membudget",
            std::path::Path::new(env!("CARGO_BIN_EXE_membudget")),
        )
        .case("README.md")
        .case("docs/*.md");
}
