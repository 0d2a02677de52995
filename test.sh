#!/usr/bin/env bash
# Every check, on a fresh Debian machine that has only Rust: run as root. It installs what the
# tests use (Debian packages, three tools from PyPI and crates.io, rustfmt and clippy), then
# checks the rules and runs every test:
#   1. `cargo fmt --all --check` (seconds; first, so a formatting slip fails at once);
#   2. `cargo clippy --workspace --all-targets -- -D warnings` (the deny-lints behind
#      docs/development.md's "no panic on input"): before the tests, so a lint fails in the
#      minutes clippy takes rather than after the whole suite. Its check build shares nothing
#      with the test build, so its place changes no total, only how soon a failure shows;
#   3. `cargo test --workspace` (extra arguments go to it, not to the checks).
# Each step fails the script. CI (.ci/run) runs exactly this.
#
# Installed when missing:
# - rustup components rustfmt and clippy (a toolchain from rustup's minimal profile lacks them;
#   if `rustup component add` cannot add one, the script stops and says so).
# - Debian: chromium (the HTML report and dashboard are rendered and checked), socat and haproxy
#   (real forwarders in lab topologies), iproute2 and nftables (lab namespaces and links), tmux
#   (the live view is driven under it), dante-server, microsocks and tinyproxy (real SOCKS5 and
#   HTTP CONNECT proxies the --via tests go through), prometheus (scrapes --metrics), faketime
#   (a wall-clock step mid-run must change no measurement).
# - PyPI: kubernetes-validate (checks deploy/k8s/ against the Kubernetes schemas, no cluster).
# - crates.io: cargo-deny (licences, bans, sources and advisories in
#   crates/cli/tests/cli/supply_chain.rs); stamp-suite 1.0.0 (an independent STAMP sender and
#   reflector, RFC 8762: npt's STAMP is tested against it both ways in
#   crates/cli/tests/probe/stamp.rs and crates/cli/tests/lab/stamp.rs).
# The binary's integration tests are a few test binaries, one per area (crates/cli/tests/AREA/).
# Tests that need root (network namespaces, TCP repair) run because this runs as root; without
# root they print SKIPPED and pass. To run one test without this script, see
# docs/development.md.
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
PKGS="chromium socat haproxy iproute2 nftables tmux dante-server microsocks tinyproxy prometheus faketime"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
    else
        echo "test.sh: not root, cannot install:$missing (the tests that need them will fail)" >&2
    fi
fi
if ! command -v kubernetes-validate >/dev/null 2>&1; then
    python3 -m pip install --quiet --disable-pip-version-check kubernetes-validate
    command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
fi
if ! cargo deny --version >/dev/null 2>&1; then
    cargo install --quiet --locked cargo-deny
fi
if ! command -v stamp-suite >/dev/null 2>&1 && [ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/stamp-suite" ]; then
    cargo install --quiet --locked stamp-suite --version 1.0.0
fi
for tool in fmt:rustfmt clippy:clippy; do
    sub="${tool%%:*}" component="${tool##*:}"
    cargo "$sub" --version >/dev/null 2>&1 && continue
    if command -v rustup >/dev/null 2>&1; then
        rustup component list --installed | grep -q "^$component" || rustup component add "$component" || true
    fi
    if ! cargo "$sub" --version >/dev/null 2>&1; then
        echo "test.sh: cargo $sub is missing and 'rustup component add $component' could not add it: install $component for this toolchain, then run again" >&2
        exit 1
    fi
done
cargo fmt --all --check || { echo "test.sh: not formatted: run 'cargo fmt --all'" >&2; exit 1; }
cargo clippy --workspace --all-targets -- -D warnings || { echo "test.sh: clippy warned (warnings are denied)" >&2; exit 1; }
exec cargo test --workspace "$@"
