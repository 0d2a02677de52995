#!/usr/bin/env bash
# bench/fuzz.sh — every fuzz target in fuzz/ for a fixed number of executions, no crash allowed.
#
#   bash bench/fuzz.sh                        # 10M executions per network decoder, 1M per file
#   RUNS=1000000 TEXT_RUNS=100000 bash bench/fuzz.sh    # a quicker pass
#   TARGETS="proxy xml" bash bench/fuzz.sh
#
# Network decoders (RUNS, default 10,000,000): decode (frames, raw stamps, the sequence window),
# proxy (SOCKS5 and HTTP CONNECT replies through the parsers and the handshake state machine),
# ping (framed and raw echo replies into a ping session), icmp (ICMP and ICMPv6 messages, raw
# or datagram, into the echo decoder), http (HTTP/1.1 response heads,
# chunked bodies whole and in pieces, whole responses through `Conn::request`), auth (keyed-
# handshake messages and sealed frames), hop (the hop agent's requests and replies), stamp (STAMP
# test packets of both modes as a reflector and a sender read them, answered in place), transit
# (IP packets as a lab node's TUN device hands them over, into the lab's transit matcher).
# Files a user writes (TEXT_RUNS, default 1,000,000): xml (the line tester's config), topology (the
# lab file, then its plan), link (impairment strings and tables, then a link run). Each of
# those executions parses a whole XML or TOML document, ~10x the cost of a datagram, and the
# input comes from the user's own file, not from a peer; 1M keeps each near two minutes.
# Needs cargo-fuzz (`cargo install cargo-fuzz`) and a nightly toolchain, or RUSTC_BOOTSTRAP=1
# on stable (used here: libFuzzer's instrumentation needs unstable flags). Inputs in
# fuzz/seeds/<target>/ start each corpus (fuzz/corpus/<target>/, kept between runs). An input
# that crashes is kept in fuzz/artifacts/<target>/ and must become a regression test before
# it is fixed.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
RUNS=${RUNS:-10000000}
TEXT_RUNS=${TEXT_RUNS:-1000000}
TARGETS=${TARGETS:-"decode proxy ping icmp http auth hop stamp transit xml topology link"}
command -v cargo-fuzz >/dev/null || { echo "bench: missing cargo-fuzz (cargo install cargo-fuzz)" >&2; exit 2; }
for t in $TARGETS; do
  case $t in
    xml | topology | link) runs=$TEXT_RUNS ;;
    *) runs=$RUNS ;;
  esac
  mkdir -p "corpus/$t"
  seeds=()
  [ -d "seeds/$t" ] && seeds=("seeds/$t")
  echo "== $t: $runs executions"
  start=$(date +%s)
  # The whole log is kept; the summary is libFuzzer's own "Done N runs" line, and a target that
  # exits 0 without one (it did not build, or stopped early) fails like a crash.
  log="fuzz-$t.log"
  status=0
  RUSTC_BOOTSTRAP=1 cargo fuzz run "$t" "corpus/$t" "${seeds[@]}" -- -runs="$runs" -max_len=4096 \
    >"$log" 2>&1 || status=$?
  grep -E "^Done [0-9]+ runs|ERROR|panicked|crash-" "$log" || true
  grep -q "^Done $runs runs" "$log" || { [ "$status" = 0 ] && status=1; }
  echo "$t: exit $status after $(( $(date +%s) - start )) s (log: fuzz/$log)"
  [ "$status" = 0 ] || { tail -20 "$log" >&2; exit 1; }
done
