#!/usr/bin/env bash
# Installs what building and testing membudget needs, skipping whatever is
# already there at the right version (fast on a warm machine, complete on a
# fresh Debian one with rustup). Sourced by .ci/serve, .ci/test, .ci/bench.
#   plan_setup    says what is missing and roughly how long it takes, first
#   setup_build   wasm target, Trunk, wasm-bindgen-cli, the release nightly,
#                 wasm-opt (npm binaryen@132), and every crate the builds need
#   setup_browser Chromium and ChromeDriver from Debian, playwright-core
#   fetch_crates  the crates Trunk's builds need, into their own cargo home
#   release_trunk trunk with the release toolchain (see below)
#   debug_trunk   trunk with stable, for the debug build
# Nothing here downloads a binary from outside the package registries.
# Trunk's builds run --offline (so Trunk never tries to download a tool)
# against a cargo home of their own, target/cargo-home, that holds only what
# fetch_crates put there: a build that needs a crate the set-up does not fetch
# fails on every machine, not only on a user's new one. .ci/test empties it
# before each run to prove that.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TRUNK_VERSION=0.21.14
# The release wasm is built with this pinned nightly: -Zbuild-std compiles
# the standard library with our size profile (opt-level "z", LTO with our
# code) instead of linking the prebuilt one; -Zlocation-detail=none and
# -Zfmt-debug=none leave out panic locations and Debug formatting; and
# -Cpanic=immediate-abort leaves out the panic machinery (a release panic
# aborts, and assets/boot.js shows the banner). README "Size" has the
# figures. Everything else (clippy, tests, the debug build) uses stable.
RELEASE_TOOLCHAIN=nightly-2026-10-30
RELEASE_ENV=(
  RUSTUP_TOOLCHAIN="$RELEASE_TOOLCHAIN"
  CARGO_UNSTABLE_BUILD_STD=std,panic_abort
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-Zlocation-detail=none -Zfmt-debug=none -Zunstable-options -Cpanic=immediate-abort"
)
# The user's cargo home: `cargo install` puts Trunk and wasm-bindgen-cli in
# its bin/, and clippy and the tests use it as usual.
USER_CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
# Trunk's builds' own cargo home (see above); a registry configuration of the
# user's (a mirror, say) is copied in.
BUILD_CARGO_HOME="$REPO/target/cargo-home"
export PATH="$USER_CARGO_HOME/bin:$REPO/node_modules/.bin:$PATH"
export TRUNK_SKIP_VERSION_CHECK=true

say() { printf '\033[1m==> [%3d s] %s\033[0m\n' "$SECONDS" "$*" >&2; }

# Runs an install step, says how long it took, and on failure says what
# could not be installed and where it comes from, then stops.
#   install_step WHAT SOURCE COMMAND...
install_step() {
  local what="$1" source="$2"; shift 2
  local start=$SECONDS
  say "installing $what"
  if ! "$@"; then
    printf '\033[1;31merror: could not install %s.\033[0m\n' "$what" >&2
    printf '  It comes from %s; the command that failed was:\n    %s\n' "$source" "$*" >&2
    printf '  Check that this machine reaches that registry, then run the command again.\n' >&2
    exit 1
  fi
  say "installed $what in $((SECONDS - start)) s"
}

as_root() { if [ "$(id -u)" -ne 0 ]; then sudo "$@"; else "$@"; fi; }

apt_missing() {
  local pkg; for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || printf '%s ' "$pkg"; done
}

apt_install() {
  local missing; missing="$(apt_missing "$@")"
  [ -z "$missing" ] && return 0
  # shellcheck disable=SC2086 # one word per package
  install_step "$missing(Debian packages)" "Debian's apt repositories" \
    bash -c "$(declare -f as_root); as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq $missing >/dev/null"
}

# The wasm-bindgen version Cargo.lock pins; the CLI must match it exactly.
wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$REPO/Cargo.lock"
}

have_wasm_target() { rustup target list --installed | grep -qx wasm32-unknown-unknown; }
have_trunk() { [ "$(trunk --version 2>/dev/null)" = "trunk $TRUNK_VERSION" ]; }
have_wasm_bindgen() { [ "$(wasm-bindgen --version 2>/dev/null)" = "wasm-bindgen $(wasm_bindgen_version)" ]; }
# The release toolchain counts only with rust-src (for -Zbuild-std) and the
# wasm32 target.
have_release_toolchain() {
  rustup component list --toolchain "$RELEASE_TOOLCHAIN" --installed 2>/dev/null | grep -q '^rust-src' \
    && rustup target list --toolchain "$RELEASE_TOOLCHAIN" --installed 2>/dev/null | grep -qx wasm32-unknown-unknown
}
# node_modules is current when it was installed from the committed lock.
have_node_modules() { cmp -s "$REPO/package-lock.json" "$REPO/node_modules/.membudget-lock"; }

# Says, before anything long starts, what is missing and roughly how long
# installing it takes (measured on 2 cores; README "Set-up time").
#   plan_setup build|test
plan_setup() {
  local plan=() total=0
  command -v rustup >/dev/null || {
    echo "error: rustup is required (https://rustup.rs); it brings cargo and rustc." >&2; exit 1; }
  have_wasm_target || { plan+=("the wasm32-unknown-unknown target (rustup)           ~5 s"); total=$((total + 5)); }
  have_trunk || { plan+=("Trunk $TRUNK_VERSION, compiled from crates.io                  ~6.5 min"); total=$((total + 390)); }
  have_wasm_bindgen || { plan+=("wasm-bindgen-cli $(wasm_bindgen_version), compiled from crates.io        ~2 min"); total=$((total + 120)); }
  have_release_toolchain || { plan+=("the $RELEASE_TOOLCHAIN toolchain with rust-src (rustup) ~15 s"); total=$((total + 15)); }
  have_node_modules || { plan+=("npm packages: binaryen 132, terser, playwright-core ~5 s"); total=$((total + 5)); }
  if [ "$1" = test ] && [ -n "$(apt_missing chromium chromium-driver)" ]; then
    plan+=("Chromium and ChromeDriver (Debian packages)         ~30 s"); total=$((total + 30))
  fi
  if [ ${#plan[@]} -gt 0 ]; then
    say "first run on this machine: installing what is missing (about $(( (total + 59) / 60 )) min on 2 cores):"
    printf '      %s\n' "${plan[@]}" >&2
    say "then the first build compiles the crates and the standard library for size (about 3 min more; .ci/test about 6 min in all)"
  fi
}

setup_node() {
  command -v npm >/dev/null || apt_install nodejs npm
  if ! have_node_modules; then
    install_step "npm packages (binaryen 132, terser, playwright-core, axe-core)" "the npm registry" \
      bash -c "cd '$REPO' && npm ci --no-audit --no-fund --loglevel=error"
    cp "$REPO/package-lock.json" "$REPO/node_modules/.membudget-lock"
  fi
}

# Every crate Trunk's builds need, into BUILD_CARGO_HOME: the project's
# (stable, for the debug build), and under the release toolchain with
# -Zbuild-std the standard library's own dependencies (rustc-demangle,
# wasip1, ...), which `cargo fetch` of the project alone never brings.
fetch_crates() {
  mkdir -p "$BUILD_CARGO_HOME"
  local f; for f in config.toml config; do
    [ -f "$USER_CARGO_HOME/$f" ] && cp "$USER_CARGO_HOME/$f" "$BUILD_CARGO_HOME/$f"
  done
  (cd "$REPO" && export CARGO_HOME="$BUILD_CARGO_HOME" \
    && cargo fetch --quiet --target wasm32-unknown-unknown \
    && env "${RELEASE_ENV[@]}" cargo fetch --quiet --target wasm32-unknown-unknown) \
    || { echo "error: could not fetch crates from crates.io (cargo fetch failed above)." >&2; exit 1; }
}

setup_build() {
  plan_setup "${1:-build}"
  have_wasm_target || install_step "the wasm32-unknown-unknown target" "rustup's distribution server" \
    rustup target add wasm32-unknown-unknown
  rustup component list --installed | grep -q '^clippy' || rustup component add clippy
  rustup component list --installed | grep -q '^rustfmt' || rustup component add rustfmt
  command -v cc >/dev/null || apt_install build-essential

  # Without default features: no TLS stack (rustls, ring) and no update
  # check, which this project never uses (the tools are pinned and local,
  # the build is --offline); it compiles in about half the time.
  have_trunk || install_step "Trunk $TRUNK_VERSION (compiles for a few minutes)" "crates.io" \
    cargo install trunk --version "$TRUNK_VERSION" --locked --no-default-features
  # Without default features: no TLS stack; the test runner talks to a local
  # ChromeDriver over plain HTTP. Not --locked: its lockfile pins a
  # webpki-roots (1.0.11) that the registry lacks.
  have_wasm_bindgen || install_step "wasm-bindgen-cli $(wasm_bindgen_version) (compiles for a few minutes)" "crates.io" \
    cargo install wasm-bindgen-cli --version "$(wasm_bindgen_version)" --no-default-features
  # Installing again only adds what is missing.
  have_release_toolchain || install_step "the $RELEASE_TOOLCHAIN toolchain (release builds)" "rustup's distribution server" \
    rustup toolchain install "$RELEASE_TOOLCHAIN" --profile minimal \
      --component rust-src --target wasm32-unknown-unknown
  setup_node
  wasm-opt --version | grep -q 'version 132' \
    || { echo "error: wasm-opt on PATH is not binaryen 132: $(command -v wasm-opt)" >&2; exit 1; }
  fetch_crates
}

# `trunk … --offline` for a release build: the pinned nightly, std built for
# size, the crates fetch_crates fetched and nothing else.
release_trunk() { env CARGO_HOME="$BUILD_CARGO_HOME" "${RELEASE_ENV[@]}" trunk "$@" --offline; }
# `trunk … --offline` with stable (the debug build), in a target folder of
# its own so that it and the wasm32 tests (other cargo home) do not rebuild
# each other.
debug_trunk() { env CARGO_HOME="$BUILD_CARGO_HOME" CARGO_TARGET_DIR="$REPO/target/trunk-debug" trunk "$@" --offline; }

setup_browser() {
  apt_install chromium chromium-driver
  setup_node
}
