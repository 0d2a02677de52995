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
# 3. capacity: the same user model at CAP_STEPS users (1,000 … 16,000), CAP_DURATION each
#    (ramp-up a third of it, not measured apart): requests/s, p99, client CPU per 1,000
#    requests, and the user count from which p99 stays at least twice its value at the first
#    step — the point where this machine (client and server together) stops keeping up.
#    PARTS="3" runs only this part; every summary also prints client CPU per 1,000 requests.
# 4. before/after (only with NPT_BASE, an older npt binary): the same user model at CMP_USERS
#    (4,000) users for CMP_DURATION (20s, ramp-up a third), ROUNDS (5) alternations of NPT_BASE
#    and NPT against the same npt serve; each round's client CPU per request (user + sys of the
#    client over its requests), the medians and after/before (goal <= 0.75: a quarter lower).
#      NPT_BASE=/tmp/npt-old PARTS=4 ROUNDS=5 bash bench/run.sh
#
# Needs: python3. Traffic goes only to 127.0.0.1. Every process started here is killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

NPT=${NPT:-target/release/npt}
USERS=${USERS:-10000}
DURATION=${DURATION:-2m}
SHORT=${SHORT:-10m}
MEM_USERS=${MEM_USERS:-$USERS}
# Part 3: user counts tried (the first is the reference) and the length of each step.
CAP_STEPS=${CAP_STEPS:-1000 2000 4000 8000 16000}
CAP_DURATION=${CAP_DURATION:-30s}
PARTS=${PARTS:-1 2 3}
NPT_BASE=${NPT_BASE:-}
CMP_USERS=${CMP_USERS:-4000}
CMP_DURATION=${CMP_DURATION:-20s}
ROUNDS=${ROUNDS:-5}
ARGS=(--think 2s..20s --pages 1..2 --rounds 1..4 --request-down 1KB..16KB --seed 1 -q)
. bench/lib.sh

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
cpu = h['cpu_user_s'] + h['cpu_sys_s']
if s['requests']:
    print(f"  client cpu per 1,000 requests {cpu * 1e3 / s['requests'] * 1e3:.1f} ms"
          f" (user {h['cpu_user_s']:.2f} s + sys {h['cpu_sys_s']:.2f} s over {s['requests']} requests)")
EOF
}

rss() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["health"]["max_rss_bytes"])' "$1"; }

start_serve
echo "npt serve on $ADDR; load average: $(cut -d' ' -f1-3 /proc/loadavg)"

part() { case " $PARTS " in *" $1 "*) return 0;; *) return 1;; esac; }

if part 1; then
echo "== 1. scale: $USERS users, $DURATION, ramp-up 30s: npt run tcp://$ADDR ${ARGS[*]}"
"$NPT" run "tcp://$ADDR" --users "$USERS" --duration "$DURATION" --ramp-up 30s "${ARGS[@]}" \
  --json "$WORK/scale.json" >/dev/null
summary "$WORK/scale.json"
echo "  server: $(ps -o time=,rss= -p "${PIDS[0]}" | awk '{printf "cpu time %s, rss %.1f MB", $1, $2/1024}')"

fi

if part 2; then
echo "== 2. memory: $MEM_USERS users, 1m vs $SHORT"
"$NPT" run "tcp://$ADDR" --users "$MEM_USERS" --duration 1m --ramp-up 10s "${ARGS[@]}" --json "$WORK/m1.json" >/dev/null
"$NPT" run "tcp://$ADDR" --users "$MEM_USERS" --duration "$SHORT" --ramp-up 10s "${ARGS[@]}" --json "$WORK/m2.json" >/dev/null
summary "$WORK/m1.json"
summary "$WORK/m2.json"
R1=$(rss "$WORK/m1.json"); R2=$(rss "$WORK/m2.json")
python3 -c "import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); print(f'  rss 1m {a/1e6:.1f} MB, $SHORT {b/1e6:.1f} MB, ratio {b/a:.2f} (goal <= 1.2)')" "$R1" "$R2"
fi

if part 3; then
echo "== 3. capacity: users $CAP_STEPS, $CAP_DURATION each: npt run tcp://$ADDR ${ARGS[*]}"
secs=$(python3 -c "import sys; v=sys.argv[1]; print(int(float(v[:-1])*(60 if v.endswith('m') else 1)))" "$CAP_DURATION")
ramp=$((secs / 3)); [ "$ramp" -ge 1 ] || ramp=1
printf '  %8s %10s %10s %10s %16s %10s\n' users "req/s" "p50 ms" "p99 ms" "cpu ms/1k req" errors
for u in $CAP_STEPS; do
  "$NPT" run "tcp://$ADDR" --users "$u" --duration "$CAP_DURATION" --ramp-up "${ramp}s" "${ARGS[@]}" \
    --json "$WORK/cap-$u.json" >/dev/null || true
  python3 - "$WORK/cap-$u.json" "$u" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s, h, t = d["summary"], d["health"], d["latency"].get("tcp", {})
cpu = (h["cpu_user_s"] + h["cpu_sys_s"]) * 1e3 / max(s["requests"], 1) * 1e3
print(f"  {int(sys.argv[2]):>8} {s['requests_per_s']:>10.0f} {t.get('p50_ms',0):>10.2f} {t.get('p99_ms',0):>10.2f} {cpu:>16.1f} {d['errors']['total_errors']:>10}")
EOF
done
python3 - "$WORK" $CAP_STEPS <<'EOF'
import json, sys
work, steps = sys.argv[1], [int(x) for x in sys.argv[2:]]
p99 = {u: json.load(open(f"{work}/cap-{u}.json"))["latency"].get("tcp", {}).get("p99_ms", 0) for u in steps}
ref = p99[steps[0]]
# A p99 of a few hundred µs on a shared machine jumps now and then: the figure is the first
# step from which p99 stays at least doubled, with the first single crossing beside it.
doubled = [ref > 0 and p99[u] >= 2 * ref for u in steps]
stays = next((u for i, u in enumerate(steps) if i > 0 and all(doubled[i:])), None)
first = next((u for i, u in enumerate(steps) if i > 0 and doubled[i]), None)
if stays is None:
    print(f"  p99 does not stay at twice its {steps[0]}-user value ({ref:.2f} ms) up to {steps[-1]} users"
          + (f" (first crossed at {first} users: {p99[first]:.2f} ms)" if first else ""))
else:
    prev = steps[steps.index(stays) - 1]
    print(f"  p99 doubles between {prev} and {stays} users and stays doubled ({ref:.2f} ms at {steps[0]} -> {p99[stays]:.2f} ms at {stays})"
          + (f"; first crossed at {first} users" if first != stays else ""))
EOF
fi

if part 4; then
[ -x "$NPT_BASE" ] || { echo "bench/run.sh: part 4 needs NPT_BASE=<older npt binary>" >&2; exit 2; }
echo "== 4. before/after: $CMP_USERS users, $CMP_DURATION, $ROUNDS alternations of $NPT_BASE (before) and $NPT (after)"
secs=$(python3 -c "import sys; v=sys.argv[1]; print(int(float(v[:-1])*(60 if v.endswith('m') else 1)))" "$CMP_DURATION")
ramp=$((secs / 3)); [ "$ramp" -ge 1 ] || ramp=1
cpu_req() { # json -> "cpu_us_per_request requests_per_s p99_ms errors"
  python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s, h, t = d["summary"], d["health"], d["latency"].get("tcp", {})
cpu = (h["cpu_user_s"] + h["cpu_sys_s"]) * 1e6 / max(s["requests"], 1)
print(f"{cpu:.1f} {s['requests_per_s']:.0f} {t.get('p99_ms', 0):.2f} {d['errors']['total_errors']}")
EOF
}
before=(); after=()
for r in $(seq "$ROUNDS"); do
  line="  round $r:"
  for which in before after; do
    bin=$NPT; [ "$which" = before ] && bin=$NPT_BASE
    "$bin" run "tcp://$ADDR" --users "$CMP_USERS" --duration "$CMP_DURATION" --ramp-up "${ramp}s" "${ARGS[@]}" \
      --json "$WORK/cmp.json" >/dev/null || true
    read -r c rps p99 errs < <(cpu_req "$WORK/cmp.json")
    if [ "$which" = before ]; then before+=("$c"); else after+=("$c"); fi
    line="$line  $which ${c} us/request (${rps} req/s, p99 ${p99} ms, errors ${errs})"
  done
  echo "$line"
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
mb=$(med "${before[@]}"); ma=$(med "${after[@]}")
echo "  client CPU per request, medians: before $mb us, after $ma us, after/before $(python3 -c "print(f'{$ma/$mb:.2f}')") (goal <= 0.75)"
echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
