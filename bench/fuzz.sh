#!/usr/bin/env bash
# bench/fuzz.sh — every fuzz target in fuzz/ for a fixed number of executions, no crash allowed.
#
#   bash bench/fuzz.sh                 # 10,000,000 executions per target
#   RUNS=1000000 bash bench/fuzz.sh    # a quicker pass
#   TARGETS="proxy" bash bench/fuzz.sh
#
# Targets: decode (frames, raw stamps, the sequence window), proxy (SOCKS5 and HTTP CONNECT
# replies through the parsers and the handshake state machine). Needs cargo-fuzz
# (`cargo install cargo-fuzz`) and a nightly toolchain, or RUSTC_BOOTSTRAP=1 on stable (used
# here: libFuzzer's instrumentation needs unstable flags). An input that crashes is kept in
# fuzz/artifacts/<target>/ and must become a regression test before it is fixed.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
RUNS=${RUNS:-10000000}
TARGETS=${TARGETS:-"decode proxy"}
command -v cargo-fuzz >/dev/null || { echo "bench: missing cargo-fuzz (cargo install cargo-fuzz)" >&2; exit 2; }
for t in $TARGETS; do
  echo "== $t: $RUNS executions"
  start=$(date +%s)
  RUSTC_BOOTSTRAP=1 cargo fuzz run "$t" -- -runs="$RUNS" -max_len=4096 2>&1 \
    | grep -E "^(Done|#[0-9]+ +DONE)|ERROR|panicked|crash-" || true
  status=${PIPESTATUS[0]}
  echo "$t: exit $status after $(( $(date +%s) - start )) s"
  [ "$status" = 0 ] || exit 1
done
