#!/usr/bin/env bash
# bench/run.sh — npt run at scale against a local npt serve, on loopback.
#
#   bash bench/run.sh                  # 10,000 users for 2 min, then RSS of 1 min vs 10 min
#   SHORT=3m bash bench/run.sh         # memory part with 1 min vs 3 min instead
#   USERS=2000 DURATION=30s bash bench/run.sh
#
# 1. scale: USERS (10,000) web users for DURATION (2m), ramp-up 30 s, against one npt serve on
#    the same 2-core machine. Prints throughput, latency, the client's CPU %, the tester's
#    timer lateness (how late think/pause wakeups fired) and peak RSS. The user model is
#    lighter than `npt run`'s defaults (see ARGS) so that client + server fit on 2 cores:
#    with the defaults 10,000 users ask for ~50,000 requests/s, several times what one
#    loopback machine serves, and the run would measure queueing, not the tester.
# 2. memory: the same run for 1 minute and for SHORT (10m): peak RSS of each and the ratio
#    (goal <= 1.2: histograms are fixed-size, only the 1 s series grows).
#
# Needs: python3. Traffic goes only to 127.0.0.1. Every process started here is killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

NPT=${NPT:-target/release/npt}
USERS=${USERS:-10000}
DURATION=${DURATION:-2m}
SHORT=${SHORT:-10m}
MEM_USERS=${MEM_USERS:-$USERS}
ARGS=(--think 2s..20s --pages 1..2 --rounds 1..4 --request-down 1KB..16KB --seed 1 -q)
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

[ -x "$NPT" ] || cargo build --release -p npt

start_serve() {
  "$NPT" serve --listen 127.0.0.1:0 >"$WORK/serve.out" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do
    ADDR=$(sed -n 's/^npt serve: listening on tcp+udp //p' "$WORK/serve.out" | head -1)
    [ -n "$ADDR" ] && return 0
    sleep 0.1
  done
  echo "npt serve did not start" >&2
  cat "$WORK/serve.out" >&2
  exit 1
}

summary() { # file
  python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s, h, t = d["summary"], d["health"], d["latency"].get("tcp", {})
l = h["timer_lateness_ms"]
print(f"  users {s['users']}  duration {s['duration_s']:.0f} s  requests {s['requests']} ({s['requests_per_s']:.0f}/s)"
      f"  errors {d['errors']['total_errors']}  max active conns {s['max_active_connections']}")
print(f"  latency.tcp ms: avg {t.get('avg_ms',0):.2f} p50 {t.get('p50_ms',0):.2f} p95 {t.get('p95_ms',0):.2f}"
      f" p99 {t.get('p99_ms',0):.2f} max {t.get('max_ms',0):.2f}")
print(f"  client cpu {h['cpu_pct']:.1f}% (100% = one core, 200% = both)  timer lateness p50 {l['p50']:.2f} ms"
      f" p99 {l['p99']:.2f} ms max {l['max']:.2f} ms  late wakeups (>10 ms) {h['late_wakeups']}")
print(f"  max rss {h['max_rss_bytes']/1e6:.1f} MB")
EOF
}

rss() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["health"]["max_rss_bytes"])' "$1"; }

start_serve
echo "npt serve on $ADDR; load average: $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== 1. scale: $USERS users, $DURATION, ramp-up 30s: npt run tcp://$ADDR ${ARGS[*]}"
"$NPT" run "tcp://$ADDR" --users "$USERS" --duration "$DURATION" --ramp-up 30s "${ARGS[@]}" \
  --json "$WORK/scale.json" >/dev/null
summary "$WORK/scale.json"
echo "  server: $(ps -o time=,rss= -p "${PIDS[0]}" | awk '{printf "cpu time %s, rss %.1f MB", $1, $2/1024}')"

echo "== 2. memory: $MEM_USERS users, 1m vs $SHORT"
"$NPT" run "tcp://$ADDR" --users "$MEM_USERS" --duration 1m --ramp-up 10s "${ARGS[@]}" --json "$WORK/m1.json" >/dev/null
"$NPT" run "tcp://$ADDR" --users "$MEM_USERS" --duration "$SHORT" --ramp-up 10s "${ARGS[@]}" --json "$WORK/m2.json" >/dev/null
summary "$WORK/m1.json"
summary "$WORK/m2.json"
R1=$(rss "$WORK/m1.json"); R2=$(rss "$WORK/m2.json")
python3 -c "import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); print(f'  rss 1m {a/1e6:.1f} MB, $SHORT {b/1e6:.1f} MB, ratio {b/a:.2f} (goal <= 1.2)')" "$R1" "$R2"
