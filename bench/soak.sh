#!/usr/bin/env bash
# bench/soak.sh — long runs must not grow: npt serve under `npt run` for an hour and, at the
# same time, `npt probe` at 20,000 pps for 30 minutes, with the resident memory (VmRSS) and
# open descriptors of all three sampled every minute. After the first minute each series must
# stay flat: memory within TOL % of its value at the end of the first minute; descriptors must
# not grow — the median of the last quarter of the samples within FD_SLACK of the median of
# the first quarter (`npt run` opens and closes connections all the time, so a single sample
# says how many were open at that instant, not whether any leaked).
#
#   bash bench/soak.sh                                          # 60 min run, 30 min probe
#   RUN_SECS=240 PROBE_SECS=180 EVERY=20 bash bench/soak.sh     # a shortened pass
#   TOKEN=s3cret bash bench/soak.sh                             # the same with --token
#   CHECK=/tmp/npt-soak.XXXXXX bash bench/soak.sh               # judge an earlier run's samples
#
# `npt probe` keeps every stage record for its result document (~3.5 KiB of JSON per stage), so
# its RSS grows with the number of stages by design: pass PROBE_ARGS="--report-every 10s" to
# see whether anything else grows.
#
# Needs: python3. Traffic goes only to 127.0.0.1. Every process started here is stopped on exit.
# Samples go to $OUT (default: a temp dir, kept) as `t_s process rss_kib fds` lines.
set -euo pipefail
cd "$(dirname "$0")/.."

RUN_SECS=${RUN_SECS:-3600}
PROBE_SECS=${PROBE_SECS:-1800}
EVERY=${EVERY:-60}
PPS=${PPS:-20000}
USERS=${USERS:-50}
TOL=${TOL:-10}
FD_SLACK=${FD_SLACK:-16}
NPT=${NPT:-target/release/npt}
OUT=${CHECK:-${OUT:-$(mktemp -d /tmp/npt-soak.XXXXXX)}}
mkdir -p "$OUT"
TOKEN=${TOKEN:-}
read -r -a PROBE_EXTRA <<<"${PROBE_ARGS:-}"
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -INT "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM
command -v python3 >/dev/null || { echo "bench: missing python3" >&2; exit 2; }

if [ -z "${CHECK:-}" ]; then
cargo build --release -q -p npt
tok=()
[ -n "$TOKEN" ] && tok=(--token "$TOKEN")

"$NPT" serve --listen 127.0.0.1:0 "${tok[@]}" >"$OUT/serve.out" 2>"$OUT/serve.err" &
SERVE=$!; PIDS+=("$SERVE")
for _ in $(seq 100); do grep -q "listening on tcp+udp" "$OUT/serve.out" 2>/dev/null && break; sleep 0.1; done
ADDR=$(awk '/listening on tcp\+udp/ {print $NF; exit}' "$OUT/serve.out")
[ -n "$ADDR" ] || { echo "bench: npt serve did not start" >&2; cat "$OUT/serve.err" >&2; exit 1; }

"$NPT" run "$ADDR" -u "$USERS" -d "${RUN_SECS}s" "${tok[@]}" -q --json "$OUT/run.json" \
  >"$OUT/run.out" 2>"$OUT/run.err" &
RUN=$!; PIDS+=("$RUN")
"$NPT" probe "udp://$ADDR" --pps "$PPS" -d "${PROBE_SECS}s" "${tok[@]}" -q \
  --json "$OUT/probe.json" "${PROBE_EXTRA[@]}" >"$OUT/probe.out" 2>"$OUT/probe.err" &
PROBE=$!; PIDS+=("$PROBE")

sample() { # $1 = t, $2 = name, $3 = pid
  [ -d "/proc/$3" ] || return 0
  local rss fds
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$3/status" 2>/dev/null || echo 0)
  fds=$(ls "/proc/$3/fd" 2>/dev/null | wc -l)
  echo "$1 $2 ${rss:-0} $fds" | tee -a "$OUT/samples.txt"
}

echo "soak: serve $ADDR, run ${RUN_SECS}s x $USERS users, probe ${PROBE_SECS}s at $PPS pps, sample every ${EVERY}s -> $OUT"
start=$(date +%s)
t=0
while :; do
  sample "$t" serve "$SERVE"
  sample "$t" run "$RUN"
  sample "$t" probe "$PROBE"
  kill -0 "$RUN" 2>/dev/null || kill -0 "$PROBE" 2>/dev/null || break
  sleep "$EVERY"
  t=$(( $(date +%s) - start ))
done
wait "$RUN" || echo "soak: npt run exited $?" >&2
wait "$PROBE" || echo "soak: npt probe exited $?" >&2
kill -INT "$SERVE" 2>/dev/null || true
wait "$SERVE" 2>/dev/null || true
PIDS=()
tail -1 "$OUT/serve.err" | cut -c1-300
fi

python3 - "$OUT" "$EVERY" "$TOL" "$FD_SLACK" <<'PY'
import json, sys
out, every, tol, slack = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
series = {}
for line in open(f"{out}/samples.txt"):
    t, name, rss, fds = line.split()
    series.setdefault(name, []).append((float(t), int(rss), int(fds)))
ok = True
for name, s in series.items():
    after = [x for x in s if x[0] >= every]
    if len(after) < 2:
        print(f"{name:6} too few samples after the first {every:.0f} s"); ok = False; continue
    base_rss, base_fds = after[0][1], after[0][2]
    hi_rss = max(x[1] for x in after); lo_rss = min(x[1] for x in after)
    hi_fds = max(x[2] for x in after); lo_fds = min(x[2] for x in after)
    rss_dev = max(hi_rss - base_rss, base_rss - lo_rss) / base_rss * 100
    q = max(1, len(after) // 4)
    med = lambda xs: sorted(xs)[len(xs) // 2]
    first_fds, last_fds = med([x[2] for x in after[:q]]), med([x[2] for x in after[-q:]])
    fds_ok = last_fds - first_fds <= max(slack, first_fds * tol / 100)
    flat = rss_dev <= tol and fds_ok
    ok &= flat
    print(f"{name:6} {len(after)} samples after {every:.0f} s: rss {base_rss} KiB "
          f"(range {lo_rss}-{hi_rss}, {rss_dev:.1f} % off), fds {base_fds} "
          f"(range {lo_fds}-{hi_fds}, median {first_fds} first quarter, {last_fds} last)  "
          f"{'flat' if flat else 'NOT FLAT'}")
for f in ("probe", "run"):
    try:
        d = json.load(open(f"{out}/{f}.json"))
        s = d["summary"]
        if f == "probe":
            print(f"probe  sent {s['sent']} received {s['received']} lost {s['lost']} "
                  f"rtt p99 {s['rtt_ms']['p99']:.3f} ms")
        else:
            print(f"run    requests {s['requests']} errors {d['errors']['total_errors']}")
    except Exception as e:
        print(f"{f}: no result ({e})"); ok = False
print("soak:", "flat" if ok else "NOT FLAT")
sys.exit(0 if ok else 1)
PY
