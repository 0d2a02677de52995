#!/usr/bin/env bash
# bench/metrics.sh — what `--metrics` costs: the same load with and without the OpenMetrics
# endpoint (and a scraper polling it every SCRAPE_S seconds, default 1 s: a fast Prometheus),
# rounds alternating A B / B A so machine drift hits both, medians and their ratio.
#
#   bash bench/metrics.sh                    # 3 rounds of 5 s per figure
#   ROUNDS=5 SECS=10 SCRAPE_S=0.1 bash bench/metrics.sh
#
# 1. npt probe --mode relay --warmup 128 (64 B) against npt serve: pps, with and without
#    the probe's --metrics (and both endpoints scraped).
# 2. npt http -c 50 (keep-alive) against npt serve --http: req/s, with and without --metrics.
# Goal: ratios ~1.0 (within the run-to-run noise; the counters are read on scrape, the hot
# path records nothing extra). The "with" rounds also pay for the scraper (one python3 process
# with a keep-alive connection per endpoint; its CPU per scrape is printed) on the same CPUs. Traffic goes only to 127.0.0.1; every process started here is
# killed on exit. Needs python3.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-5}
SCRAPE_S=${SCRAPE_S:-1}
NPT=${NPT:-target/release/npt}
. bench/lib.sh
[ -x "$NPT" ] || { echo "bench/metrics.sh: $NPT missing: cargo build --release -p npt" >&2; exit 2; }

# scrape PORT...: polls the endpoints every SCRAPE_S seconds in the background until killed; its
# pid in $SCRAPER. One process holding a keep-alive connection per endpoint, as Prometheus does:
# a curl process per scrape cost ~8 ms of CPU each here (`time` over 100), which at
# SCRAPE_S=0.1 and two endpoints was 16 % of a core taken from the load — the scraper's cost,
# not the endpoint's. Its own CPU and scrape count go to $WORK/scraper.
scrape() {
  python3 - "$SCRAPE_S" "$WORK/scraper" "$@" <<'PY' &
import http.client, os, signal, sys, time
every, out, ports = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
conns, n = {}, 0
def done(*_):
    t = os.times()
    with open(out, "a") as f:
        f.write(f"{n} {t.user + t.system}\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
while True:
    for p in ports:
        try:
            c = conns.get(p) or http.client.HTTPConnection("127.0.0.1", int(p), timeout=5)
            conns[p] = c
            c.request("GET", "/metrics")
            c.getresponse().read()
            n += 1
        except (OSError, http.client.HTTPException):
            conns.pop(p, None)
    time.sleep(every)
PY
  SCRAPER=$!; PIDS+=($SCRAPER)
}

# One server, started with --metrics: its counters are the same atomics with or without the
# endpoint (read only on scrape), so the difference between rounds is the agent's --metrics and
# the scraping, which runs only in the "with" rounds (agent and server endpoints).
P=$(free_port); H=$(free_port); M_SERVE=$(free_port)
"$NPT" serve --listen "127.0.0.1:$P" --http "127.0.0.1:$H" --metrics "127.0.0.1:$M_SERVE" >/dev/null 2>&1 & PIDS+=($!)
wait_port "$P"; wait_port "$H"; wait_port "$M_SERVE"

probe_pps() { # PORT [extra flags] → pps
  local port=$1; shift
  "$NPT" probe "udp://127.0.0.1:$port" --mode relay --warmup 128 --size 64 -d "${SECS}s" -q \
    --json "$WORK/p.json" "$@" >/dev/null
  python3 -c "import json; print('%.0f' % json.load(open('$WORK/p.json'))['summary']['pps'])"
}
http_rps() { # PORT [extra flags] → req/s
  local port=$1; shift
  "$NPT" http "http://127.0.0.1:$port/" -c 50 -d "${SECS}s" -q --json "$WORK/h.json" "$@" >/dev/null
  python3 -c "import json; print('%.0f' % json.load(open('$WORK/h.json'))['summary']['rps'])"
}

echo "bench/metrics.sh: $(nproc) CPUs, $ROUNDS rounds of ${SECS}s, alternating without / with --metrics (scraped every ${SCRAPE_S}s)"
with_probe() { local m; m=$(free_port); scrape "$m" "$M_SERVE"; probe_pps "$P" --metrics "127.0.0.1:$m"; kill "$SCRAPER"; }
with_http() { local m; m=$(free_port); scrape "$m" "$M_SERVE"; http_rps "$H" --metrics "127.0.0.1:$m"; kill "$SCRAPER"; }
pa=(); pb=(); ha=(); hb=()
for i in $(seq 1 "$ROUNDS"); do
  # A B in odd rounds, B A in even ones, so a drift within a round hits both alike.
  if [ $((i % 2)) = 1 ]; then a=$(probe_pps "$P"); b=$(with_probe); else b=$(with_probe); a=$(probe_pps "$P"); fi
  pa+=("$a"); pb+=("$b")
  echo "round $i  probe relay pps: without $a  with $b"
  if [ $((i % 2)) = 1 ]; then a=$(http_rps "$H"); b=$(with_http); else b=$(with_http); a=$(http_rps "$H"); fi
  ha+=("$a"); hb+=("$b")
  echo "round $i  http -c50 req/s:  without $a  with $b"
done
mpa=$(median "${pa[@]}"); mpb=$(median "${pb[@]}"); mha=$(median "${ha[@]}"); mhb=$(median "${hb[@]}")
echo
echo "medians                       without      with   with/without"
printf 'npt probe relay (pps)      %10s %9s   %s\n' "$mpa" "$mpb" "$(ratio "$mpb" "$mpa")"
printf 'npt http -c50 (req/s)      %10s %9s   %s\n' "$mha" "$mhb" "$(ratio "$mhb" "$mha")"
[ -s "$WORK/scraper" ] && awk '{n += $1; c += $2} END { if (n) printf "scraper: %d scrapes, %.0f us of its own CPU each\n", n, c * 1e6 / n }' "$WORK/scraper"
