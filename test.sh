#!/usr/bin/env bash
# Every test, on a fresh Debian machine that has only Rust: run as root. It installs what the
# tests use (Debian packages, two Python/Rust tools), then runs `cargo test --workspace`.
# CI (.ci/run) runs exactly this. Extra arguments go to `cargo test`.
#
# Installed when missing:
# - Debian: chromium (the HTML report and dashboard are rendered and checked), socat and haproxy
#   (real forwarders in lab topologies), iproute2 and nftables (lab namespaces and links), tmux
#   (the live view is driven under it), dante-server, microsocks and tinyproxy (real SOCKS5 and
#   HTTP CONNECT proxies the --via tests go through), prometheus (scrapes --metrics), faketime
#   (a wall-clock step mid-run must change no measurement).
# - PyPI: kubernetes-validate (checks deploy/k8s/ against the Kubernetes schemas, no cluster).
# - crates.io: cargo-deny (licences, bans, sources and advisories in tests/cli/supply_chain.rs);
#   stamp-suite 1.0.0 (an independent STAMP sender and reflector, RFC 8762: npt's STAMP is
#   tested against it both ways in crates/cli/tests/probe/stamp.rs and lab/stamp.rs).
# Tests that need root (network namespaces, TCP repair) run because this runs as root; without
# root they print SKIPPED and pass. To run one test file without this script, see
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
exec cargo test --workspace "$@"
