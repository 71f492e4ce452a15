#!/usr/bin/env bash
# Installs what building and testing membudget needs, skipping whatever is
# already there at the right version (fast on a warm machine, complete on a
# fresh Debian one with rustup). Sourced by .ci/serve and .ci/test.
#   setup_build   wasm target, Trunk, wasm-bindgen-cli, wasm-opt (npm binaryen@132)
#   setup_browser Chromium and ChromeDriver from Debian, playwright-core
#   release_trunk trunk with the release toolchain (see below)
# Nothing here downloads a binary from outside the package registries.
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
export PATH="$HOME/.cargo/bin:$REPO/node_modules/.bin:$PATH"
export TRUNK_SKIP_VERSION_CHECK=true

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "apt-get install ${missing[*]}"
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The wasm-bindgen version Cargo.lock pins; the CLI must match it exactly.
wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$REPO/Cargo.lock"
}

setup_node() {
  command -v npm >/dev/null || apt_install nodejs npm
  # node_modules is current when it was installed from the committed lock.
  local stamp="$REPO/node_modules/.membudget-lock"
  if ! cmp -s "$REPO/package-lock.json" "$stamp"; then
    say "npm ci (binaryen 132, playwright-core)"
    (cd "$REPO" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$REPO/package-lock.json" "$stamp"
  fi
}

setup_build() {
  command -v rustup >/dev/null || { echo "rustup is required: https://rustup.rs" >&2; exit 1; }
  rustup target list --installed | grep -qx wasm32-unknown-unknown \
    || { say "rustup target add wasm32-unknown-unknown"; rustup target add wasm32-unknown-unknown; }
  rustup component list --installed | grep -q '^clippy' || rustup component add clippy
  rustup component list --installed | grep -q '^rustfmt' || rustup component add rustfmt
  command -v cc >/dev/null || apt_install build-essential

  if [ "$(trunk --version 2>/dev/null)" != "trunk $TRUNK_VERSION" ]; then
    say "cargo install trunk $TRUNK_VERSION (about 10 minutes on 2 cores)"
    cargo install trunk --version "$TRUNK_VERSION" --locked
  fi
  local wbg; wbg="$(wasm_bindgen_version)"
  if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $wbg" ]; then
    # Not --locked: its lockfile pins a webpki-roots the registry lacks.
    say "cargo install wasm-bindgen-cli $wbg"
    cargo install wasm-bindgen-cli --version "$wbg"
  fi
  # The toolchain with rust-src (for -Zbuild-std) and the wasm32 target;
  # installing again only adds what is missing.
  { rustup component list --toolchain "$RELEASE_TOOLCHAIN" --installed 2>/dev/null | grep -q '^rust-src' \
      && rustup target list --toolchain "$RELEASE_TOOLCHAIN" --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; } \
    || { say "rustup toolchain install $RELEASE_TOOLCHAIN (release builds)"
         rustup toolchain install "$RELEASE_TOOLCHAIN" --profile minimal \
           --component rust-src --target wasm32-unknown-unknown; }
  setup_node
  wasm-opt --version | grep -q 'version 132' \
    || { echo "wasm-opt on PATH is not binaryen 132: $(command -v wasm-opt)" >&2; exit 1; }
  (cd "$REPO" && cargo fetch --quiet)
}

# `trunk …` for a release build: the pinned nightly, std built for size.
release_trunk() {
  RUSTUP_TOOLCHAIN="$RELEASE_TOOLCHAIN" \
  CARGO_UNSTABLE_BUILD_STD=std,panic_abort \
  CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="-Zlocation-detail=none -Zfmt-debug=none -Zunstable-options -Cpanic=immediate-abort" \
    trunk "$@"
}

setup_browser() {
  apt_install chromium chromium-driver
  setup_node
}
