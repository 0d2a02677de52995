#!/usr/bin/env bash
# bench/probe.sh — npt probe/serve side by side with reference tools, on loopback, in one run.
#
#   bash bench/probe.sh            # all three parts (the memory part takes ~11 minutes)
#   QUICK=1 bash bench/probe.sh    # memory part with 10 s vs 60 s instead of 1 vs 10 minutes
#   ROUNDS=5 SECONDS_PER_RUN=5 bash bench/probe.sh
#   QUICK=1 ROUNDS=5 SECONDS_PER_RUN=5 RTT_SECS=5 PARTS="1 2" bash bench/probe.sh
#
# 1. relay throughput: npt probe --mode relay --warmup 128 (64 B) against npt serve, vs two C
#    pairs: UDPECHO_SRC (recvmmsg/sendmmsg, batch 32, window 128, no offload) and UDPECHO_GSO_SRC
#    (the same window, UDP GSO sends of up to 64 datagrams and UDP GRO receives, as npt's relay
#    batches); rounds alternate C, C-GSO, npt so machine drift hits all three; prints each round
#    and the median ratio against each pair (goal >= 1.0 against the GSO pair, zero loss).
# 2. RTT at 1000 pps, 64 B, same CPU placement (server on CPU 0, client on CPU 1), RTT_SECS
#    (10) each, ROUNDS alternations of: `sockperf ping-pong --full-rtt` against sockperf server;
#    npt probe against npt serve as a user runs it (the receive stamp read when the receive
#    returned: sockperf's kind of figure), that with --spin (a busy client, as sockperf's), and
#    with --rx-stamp kernel (the kernel's arrival stamp: the tester's wake-up left out, not the
#    same figure). Prints each round, the medians of the p50s and npt - sockperf (goal: the
#    default's p50 <= sockperf's + 5 us).
# 3. memory: RSS of a 20,000 pps probe run for 1 minute vs 10 minutes (goal ratio <= 1.05).
#
# Needs: cc, sockperf (Debian package `sockperf`), taskset (util-linux), python3.
# Traffic goes only to 127.0.0.1. Every process started here is killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_PER_RUN:-5}
UDPECHO_SRC=${UDPECHO_SRC:-bench/udpecho.c}
UDPECHO_GSO_SRC=${UDPECHO_GSO_SRC:-bench/udpecho_gso.c}
PARTS=${PARTS:-1 2 3}
part() { case " $PARTS " in *" $1 "*) return 0;; *) return 1;; esac; }
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

need() { command -v "$1" >/dev/null || { echo "bench: missing $1 ($2)" >&2; exit 2; }; }
need cc "apt-get install gcc"
need sockperf "apt-get install sockperf"
need taskset "util-linux"
need python3 "python3"
[ -f "$UDPECHO_SRC" ] || { echo "bench: $UDPECHO_SRC not found (set UDPECHO_SRC)" >&2; exit 2; }
[ -f "$UDPECHO_GSO_SRC" ] || { echo "bench: $UDPECHO_GSO_SRC not found (set UDPECHO_GSO_SRC)" >&2; exit 2; }

# NPT=<a binary> measures that one as it is; otherwise this checkout is built first.
if [ -z "${NPT:-}" ]; then cargo build --release -q -p npt; NPT=target/release/npt; fi
cc -O2 -o "$WORK/udpecho" "$UDPECHO_SRC"
cc -O2 -o "$WORK/udpecho_gso" "$UDPECHO_GSO_SRC"

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
# Waits until a UDP port answers an npt framed echo or the C server is bound (bounded).
wait_bound() { for _ in $(seq 100); do ss -lun | grep -q ":$1 " && return 0; sleep 0.05; done; echo "bench: port $1 never bound" >&2; exit 1; }
jget() { python3 -c "import json,sys;d=json.load(open('$1'));print(eval('d'+sys.argv[1]))" "$2"; }

if part 1; then
echo "== 1. relay echo throughput, 64 B, window 128, ${SECS}s x ${ROUNDS} rounds =="
ratios=(); gratios=()
for r in $(seq "$ROUNDS"); do
  p=$(free_port)
  "$WORK/udpecho" s 127.0.0.1 "$p" 32 & PIDS+=($!); wait_bound "$p"
  c=$("$WORK/udpecho" c 127.0.0.1 "$p" 32 128 "$SECS" 64 | sed 's/.*echo_pps=//')
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true

  p=$(free_port)
  "$WORK/udpecho_gso" s 127.0.0.1 "$p" 8 & PIDS+=($!); wait_bound "$p"
  g=$("$WORK/udpecho_gso" c 127.0.0.1 "$p" 64 128 "$SECS" 64 | sed 's/.*echo_pps=//')
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true

  p=$(free_port)
  "$NPT" serve --listen "127.0.0.1:$p" >/dev/null & PIDS+=($!); wait_bound "$p"
  "$NPT" probe "udp://127.0.0.1:$p" --mode relay --warmup 128 --size 64 -d "${SECS}s" -q --json "$WORK/relay.json" >/dev/null
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
  n=$(jget "$WORK/relay.json" "['summary']['pps_received']")
  lost=$(jget "$WORK/relay.json" "['summary']['lost']")
  ratio=$(python3 -c "print(f'{$n/$c:.2f}')")
  gratio=$(python3 -c "print(f'{$n/$g:.2f}')")
  ratios+=("$ratio"); gratios+=("$gratio")
  printf 'round %d: C pair %8.0f pps   C GSO pair %8.0f pps   npt %8.0f pps (lost %s)   npt/C %s   npt/C-GSO %s\n' "$r" "$c" "$g" "$n" "$lost" "$ratio" "$gratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
gmedian=$(printf '%s\n' "${gratios[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
echo "relay: median npt/C ratio $median (no offload in the C pair); npt/C-GSO $gmedian (goal >= 1.0)"

echo
fi

if part 2; then
RTT_SECS=${RTT_SECS:-10}
echo "== 2. RTT p50 at 1000 pps, 64 B, server on CPU 0, client on CPU 1, ${RTT_SECS}s x ${ROUNDS} rounds =="
p50() { python3 -c "import json;print(round(json.load(open('$1'))['summary']['rtt_ms']['p50']*1000,1))"; }
npt_rtt() { # extra flags...
  local p; p=$(free_port)
  taskset -c 0 "$NPT" serve --listen "127.0.0.1:$p" >/dev/null & PIDS+=($!); wait_bound "$p"
  taskset -c 1 "$NPT" probe "udp://127.0.0.1:$p" --pps 1000 -d "${RTT_SECS}s" --size 64 -q "$@" --json "$WORK/rtt.json" >/dev/null
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
  p50 "$WORK/rtt.json"
}
sp_all=(); k_all=(); u_all=(); s_all=()
for r in $(seq "$ROUNDS"); do
  p=$(free_port)
  taskset -c 0 sockperf server -i 127.0.0.1 -p "$p" >/dev/null 2>&1 & PIDS+=($!); wait_bound "$p"
  taskset -c 1 sockperf ping-pong -i 127.0.0.1 -p "$p" --full-rtt -t "$RTT_SECS" --mps 1000 -m 64 >"$WORK/sp.txt" 2>&1
  kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
  sp=$(grep 'percentile 50.000' "$WORK/sp.txt" | sed 's/.*= *//')
  u=$(npt_rtt)
  sn=$(npt_rtt --spin)
  k=$(npt_rtt --rx-stamp kernel)
  sp_all+=("$sp"); k_all+=("$k"); u_all+=("$u"); s_all+=("$sn")
  printf 'round %d: sockperf %7.1f us   npt %7.1f us   npt --spin %7.1f us   npt --rx-stamp kernel %7.1f us\n' "$r" "$sp" "$u" "$sn" "$k"
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
msp=$(med "${sp_all[@]}"); mk=$(med "${k_all[@]}"); mu=$(med "${u_all[@]}"); ms=$(med "${s_all[@]}")
echo "medians of p50: sockperf ping-pong --full-rtt ${msp} us; npt probe ${mu} us (default: read time), ${ms} us (--spin), ${mk} us (--rx-stamp kernel)"
echo "p50 difference npt - sockperf: $(python3 -c "print(round($mu-$msp,1))") us (goal <= +5 us); with --spin $(python3 -c "print(round($ms-$msp,1))") us; --rx-stamp kernel $(python3 -c "print(round($mk-$msp,1))") us (a different figure: the tester's wake-up left out)"

fi

if part 3; then
if [ "${QUICK:-0}" = 1 ]; then short=10; long=60; else short=60; long=600; fi
echo "== 3. memory: 20,000 pps for ${short}s vs ${long}s =="
p=$(free_port)
"$NPT" serve --listen "127.0.0.1:$p" >/dev/null & PIDS+=($!); wait_bound "$p"
"$NPT" probe "udp://127.0.0.1:$p" --pps 20000 -d "${short}s" -q --json "$WORK/m1.json" >/dev/null
"$NPT" probe "udp://127.0.0.1:$p" --pps 20000 -d "${long}s" -q --json "$WORK/m2.json" >/dev/null
kill "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true
r1=$(jget "$WORK/m1.json" "['health']['max_rss_bytes']")
r2=$(jget "$WORK/m2.json" "['health']['max_rss_bytes']")
echo "max RSS ${short}s: $((r1/1024)) KiB   ${long}s: $((r2/1024)) KiB   ratio $(python3 -c "print(f'{$r2/$r1:.2f}')") (goal <= 1.05)"
fi
