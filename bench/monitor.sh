#!/usr/bin/env bash
# bench/monitor.sh — what `npt monitor` costs at scale: TARGETS targets (default 1,000: half
# UDP, half TCP pings of a loopback `npt serve`, 5 attempts 200 ms apart per round, and one
# target in PROBE_EVERY (default 20) a 1 s UDP probe at 50 pps instead) every EVERY (default
# 10s) for SECS seconds (default 300), with its listener scraped every 10 s: /metrics, then
# /api/data (the page's data). The monitor runs on CPUS cores (default 2, `taskset`).
# It reports, from the monitor's own store and /proc:
#   - round start lateness p50 / p99 / max (every round after the first WARMUP seconds),
#     and the rounds that were skipped or late past 1 s;
#   - the same for the rounds due while a scrape or a page's data was being answered, beside
#     the rest, and each scrape's time and size;
#   - what the late rounds coincide with: the monitor's threads' CPU, sampled every 100 ms by
#     thread (the store's writer and its rollups, the listener, the runtime and the rounds),
#     and the control's own late wake-ups (the box) — for the rounds late past the p99, the
#     share that fell in a 100 ms window where each was busy, beside the share of all windows;
#   - CPU (user+sys seconds over the run, as % of one core) and memory (RSS at the end, peak);
#   - threads at the end;
#   - a control: how late a plain process on the same box woke from 10 ms sleeps over the same
#     window (p50 / p99 / max), so a late round can be told from a busy box;
#   - disk: what each stored round takes in the run's file (its table's pages / its rows);
#   - disk at scale: the run's rounds replayed as one target every 10 s for SIM_DAYS (default
#     30) simulated days — synthetic timestamps through the store's own write, roll-up and
#     prune code (crates/monitor/examples/store_sim.rs), with the default retention — then the
#     bytes of each level's rows (SQLite's dbstat: pages, overhead included), a target's bytes
#     per day (a day of rounds, 1,440 minutes, 24 hours, one day row), its steady state at the
#     default retention (each level's bytes per row times the rows it keeps), and the file.
# Runs ROUNDS times (default 1) and prints each run and the medians. No peer tool does this
# job on the same box (SmokePing forks fping per target group), so there is no side-by-side
# ratio here: these are the monitor's own figures, to compare between versions.
#
#   bash bench/monitor.sh
#   TARGETS=200 SECS=120 ROUNDS=3 bash bench/monitor.sh
#   TARGETS=10000 SECS=180 bash bench/monitor.sh
#   KEEP=/tmp/monbench bash bench/monitor.sh      # keep each run's store and log there
#
# Traffic goes only to 127.0.0.1; every process started here is killed on exit. Needs python3.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=${TARGETS:-1000}
EVERY=${EVERY:-10s}
SECS=${SECS:-300}
WARMUP=${WARMUP:-30}
ROUNDS=${ROUNDS:-1}
PROBE_EVERY=${PROBE_EVERY:-20}
CPUS=${CPUS:-2}
NPT=${NPT:-target/release/npt}
SIM=${SIM:-target/release/examples/store_sim}
SIM_DAYS=${SIM_DAYS:-30}
. bench/lib.sh
[ -x "$NPT" ] || { echo "bench/monitor.sh: $NPT missing: cargo build --release -p npt" >&2; exit 2; }
[ -x "$SIM" ] || cargo build --release -q -p npt-monitor --example store_sim


P=$(free_port)
"$NPT" serve --listen "127.0.0.1:$P" >/dev/null 2>&1 & PIDS+=($!)
wait_port "$P"

# config DIR PORT LISTEN: TARGETS targets on the server, alternating UDP and TCP pings, one
# in PROBE_EVERY a probe; enough rounds of each kind at once for a round of every target
# that is due (a ping round lasts about 1 s: TARGETS / 10 s of them run at once).
config() {
  python3 - "$1" "$2" "$3" "$TARGETS" "$EVERY" "$PROBE_EVERY" <<'EOF'
import sys
d, port, listen, n, every, pe = sys.argv[1:]
n, pe = int(n), int(pe)
with open(d + "/m.toml", "w") as f:
    f.write('vantage = "bench"\nstore = "m.db"\nlisten = "127.0.0.1:%s"\nevery = "%s"\n' % (listen, every))
    f.write('[limits]\nping = %d\nprobe = %d\n' % (max(256, n // 4), max(32, n // 40)))
    for i in range(n):
        f.write('[[target]]\nname = "t%05d"\ngroup = "g%d"\n' % (i, i % 100))
        if pe > 0 and i % pe == pe - 1:
            f.write('kind = "probe"\ntarget = "udp://127.0.0.1:%s"\nlength = "1s"\n'
                    'args = ["--pps", "50"]\n' % port)
        else:
            proto = "udp" if i % 2 == 0 else "tcp"
            f.write('target = "%s://127.0.0.1:%s"\n' % (proto, port))
EOF
}

ticks() { getconf CLK_TCK; }
# cpu_s PID: user+sys seconds so far.
cpu_s() { awk -v hz="$(ticks)" '{print ($14 + $15) / hz}' "/proc/$1/stat"; }
status() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

LAT50=(); LAT99=(); CPU=(); RSS=(); BYTES=(); CTL99=()
for r in $(seq 1 "$ROUNDS"); do
  D="$WORK/run$r"; mkdir -p "$D"
  LISTEN=$(free_port)
  config "$D" "$P" "$LISTEN"
  PIN=(); if [ "$(nproc)" -gt "$CPUS" ]; then PIN=(taskset -c "0-$((CPUS - 1))"); fi
  "${PIN[@]}" "$NPT" monitor "$D/m.toml" 2>"$D/monitor.log" & MON=$!; PIDS+=($MON)
  # A config of ten thousand targets takes a few seconds to read: wait up to a minute.
  for _ in $(seq 1 600); do grep -q "dashboard on" "$D/monitor.log" && break; sleep 0.1; done
  wait_port "$LISTEN"
  sleep "$WARMUP"
  # The control: a plain process waking every 10 ms for the measured window.
  python3 - "$((SECS - WARMUP))" "$D/control_late.txt" > "$D/control.txt" <<'EOF' & CTL=$!; PIDS+=($CTL)
import sys, time
end = time.monotonic() + float(sys.argv[1])
late = []
with open(sys.argv[2], "w") as spikes:
    while time.monotonic() < end:
        due = time.monotonic() + 0.01
        time.sleep(0.01)
        x = time.monotonic() - due
        late.append(x)
        if x > 0.005:
            spikes.write(f"{int(time.time() * 1000)} {x * 1e3:.3f}\n")
late.sort()
q = lambda p: late[min(len(late) - 1, int(p * len(late)))] * 1e3
print(f"{q(0.5):.3f} {q(0.99):.3f} {q(1.0):.3f}")
EOF
  # The monitor's threads' CPU every 100 ms, by thread name: "wall_ms name ticks" lines.
  python3 - "$MON" "$((SECS - WARMUP))" > "$D/threads.txt" <<'EOF' & SAMP=$!; PIDS+=($SAMP)
import os, sys, time
pid, secs = sys.argv[1], float(sys.argv[2])
end = time.monotonic() + secs
prev = {}
while time.monotonic() < end:
    now = int(time.time() * 1000)
    by = {}
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                st = open(f"/proc/{pid}/task/{tid}/stat").read()
            except OSError:
                continue
            name = st[st.index("(") + 1:st.rindex(")")]
            f = st[st.rindex(")") + 2:].split()
            t = int(f[11]) + int(f[12])
            d = t - prev.get(tid, t)
            prev[tid] = t
            by[name] = by.get(name, 0) + d
    except OSError:
        break
    for k, v in by.items():
        if v:
            print(now, k.replace(" ", "_"), v)
    time.sleep(0.1)
EOF
  cpu0=$(cpu_s "$MON")
  size0=$(du -cb "$D"/m.db* | tail -1 | cut -f1)
  t0=$(date +%s.%N)
  left=$((SECS - WARMUP))
  # Each scrape's wall-clock window (ms), its path, seconds and bytes: the rounds due inside
  # one are compared with the rest below.
  : > "$D/scrapes.txt"
  while [ "$left" -gt 0 ]; do
    for path in metrics "api/data?range=1h"; do
      a=$(date +%s%3N)
      got=$(curl -s -o /dev/null -w "%{time_total} %{size_download}" "http://127.0.0.1:$LISTEN/$path" 2>/dev/null || echo "nan 0")
      echo "$a $(date +%s%3N) ${path%%\?*} $got" >> "$D/scrapes.txt"
    done
    s=$(( left < 10 ? left : 10 )); sleep "$s"; left=$((left - s))
  done
  cpu1=$(cpu_s "$MON"); t1=$(date +%s.%N)
  rss=$(status "$MON" VmRSS); hwm=$(status "$MON" VmHWM); thr=$(status "$MON" Threads)
  size1=$(du -cb "$D"/m.db* | tail -1 | cut -f1)
  wait "$CTL" || true
  wait "$SAMP" || true
  read -r c50 c99 cmax < "$D/control.txt" || { c50=nan; c99=nan; cmax=nan; }
  kill -INT "$MON"; wait "$MON" || true
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp -r "$D" "$KEEP/"; fi
  python3 - "$D/m.db" "$cpu0" "$cpu1" "$t0" "$t1" "$rss" "$hwm" "$thr" "$size0" "$size1" "$TARGETS" "$WARMUP" "$D/scrapes.txt" "$D/threads.txt" "$D/control_late.txt" "$(getconf CLK_TCK)" > "$D/result.txt" <<'EOF'
import sqlite3, sys
db, cpu0, cpu1, t0, t1, rss, hwm, thr, size0, size1, n, warm, scrapes, threads, ctl_late, hz = sys.argv[1:]
cpu0, cpu1, t0, t1 = float(cpu0), float(cpu1), float(t0), float(t1)
c = sqlite3.connect(db)
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
# A round's key is its target and start (ms) in one integer: the start is its low 42 bits.
start = c.execute("select min(id & 4398046511103) from round").fetchone()[0]
after = start + int(warm) * 1000
lat = sorted(r[0] for r in c.execute(
    "select lateness_ns from round where (id & 4398046511103) >= ? and status != 'skipped'",
    (after,)))
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] / 1e6 if lat else float("nan")
by = dict(c.execute("select status, count(*) from round group by status").fetchall())
late = sum(1 for x in lat if x > 1e9)
# Rounds due while a scrape or the page's data was being answered, against the rest. A
# round's due time is its start less its lateness (whatever the store's columns).
wins = []
for line in open(scrapes):
    a, b, path, secs, size = line.split()
    wins.append((int(a), int(b), path, float(secs), int(size)))
def during(due):
    return any(a <= due <= b for a, b, *_ in wins)
inside, outside = [], []
for start, ln in c.execute(
        "select id & 4398046511103, lateness_ns from round where (id & 4398046511103) >= ? and status != 'skipped'", (after,)):
    (inside if during(start - ln / 1e6) else outside).append(ln)
def qs(v):
    v = sorted(v)
    f = lambda p: v[min(len(v) - 1, int(p * len(v)))] / 1e6 if v else float("nan")
    return f"p50 {f(0.5):.3f} p99 {f(0.99):.3f} max {f(1.0):.3f} ms ({len(v)} rounds)"
rows = c.execute("select count(*) from round").fetchone()[0]
secs = t1 - t0
page = c.execute("PRAGMA page_size").fetchone()[0] * c.execute("PRAGMA page_count").fetchone()[0]
st = dict(c.execute("select name, sum(pgsize) from dbstat group by name").fetchall())
per_round = st.get("round", 0) / max(rows, 1)
print(f"rounds {rows} {by}; lateness p50 {q(0.5):.3f} p99 {q(0.99):.3f} max {q(1.0):.3f} ms "
      f"({late} over 1 s)")
skipped = by.get("skipped", 0)
print(f"skipped rounds {skipped} of {rows}")
print(f"rounds due during a scrape: lateness {qs(inside)}; the rest: {qs(outside)}")
# What the rounds late past the p99 coincide with, by 100 ms window (the sampler's, labelled by
# their end): in a window of a round's wait (due to start, and the next), a thread busy (90 %
# of the window or more on CPU), a scrape being answered, the control itself woken 10 ms late
# or more — beside the same for rounds picked at random and given a wait of the p99 (the
# base rate: how often that coincidence happens anyway).
busy = {}
for line in open(threads):
    ms, name, ticks = line.split()
    w = int(ms) // 100
    share = int(ticks) / int(hz) / 0.1
    key = {"npt-monitor-sto": "store writer", "npt-monitor-htt": "listener",
           "npt-monitor-scr": "a scrape's thread",
           "npt": "the loop (main thread)"}.get(name, "the runtime's workers and rounds")
    busy.setdefault(key, {})
    busy[key][w] = busy[key].get(w, 0) + share
sets = {k: {w for w, v in d.items() if v >= 0.9} for k, d in busy.items()}
sets["a scrape"] = {w for a, b, *_ in wins for w in range(a // 100, b // 100 + 1)}
ctl = {}
for l in open(ctl_late):
    ms, x = l.split()
    ctl[int(ms) // 100] = max(ctl.get(int(ms) // 100, 0), float(x))
allw = set()
for d in busy.values():
    allw |= set(d)
p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))] if lat else 0
worst = [(start - ln / 1e6, ln) for start, ln in c.execute(
    "select id & 4398046511103, lateness_ns from round where (id & 4398046511103) >= ? and status != 'skipped' and lateness_ns > ?",
    (after, p99))]
import random
random.seed(1)
every = [(start - ln / 1e6, p99) for start, ln in c.execute(
    "select id & 4398046511103, lateness_ns from round where (id & 4398046511103) >= ? and status != 'skipped'", (after,))]
pick = random.sample(every, min(5000, len(every)))
span = lambda due, ln: range(int(due) // 100, int(due + ln / 1e6) // 100 + 2)
sets["the control 10 ms late"] = {w for w, x in ctl.items() if x >= 10}
if worst and pick:
    parts = []
    for k in sorted(sets):
        share = lambda rs: 100 * sum(1 for d, l in rs if any(w in sets[k] for w in span(d, l))) / len(rs)
        parts.append(f"{k} {share(worst):.0f} % (base {share(pick):.0f} %)")
    print(f"the {len(worst)} rounds late past the p99 ({p99 / 1e6:.1f} ms) waited through a window with: " + "; ".join(parts))
for k in sorted(busy):
    v = sorted(busy[k].values())
    print(f"thread CPU, {k}: {100 * sum(v) / max(len(allw), 1):.0f} % of a core on average, busiest 100 ms {100 * v[-1]:.0f} %")
for p in sorted(set(w[2] for w in wins)):
    t = sorted(w[3] for w in wins if w[2] == p)
    z = max(w[4] for w in wins if w[2] == p)
    print(f"GET /{p}: {len(t)} times, {t[len(t) // 2] * 1e3:.0f} ms median, {t[-1] * 1e3:.0f} ms max, {z} B")
print(f"cpu {100 * (cpu1 - cpu0) / secs:.1f} % of one core over {secs:.0f} s; rss {int(rss)//1024} MiB "
      f"(peak {int(hwm)//1024} MiB); threads {thr}")
print(f"disk: {page} B checkpointed for {rows} rounds; the round table {per_round:.0f} B per round")
print(f"SUMMARY {q(0.5):.3f} {q(0.99):.3f} {100 * (cpu1 - cpu0) / secs:.1f} {int(rss)//1024} {per_round:.0f}")
EOF
  echo "== run $r: $TARGETS targets every $EVERY, ${SECS} s"
  grep -v SUMMARY "$D/result.txt"
  echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "control: a plain process's 10 ms sleeps woke late by p50 $c50 p99 $c99 max $cmax ms (the box, not the monitor)"
  CTL99+=("$c99")
  read -r l50 l99 cpu mem bytes < <(grep SUMMARY "$D/result.txt" | cut -d' ' -f2-)
  LAT50+=("$l50"); LAT99+=("$l99"); CPU+=("$cpu"); RSS+=("$mem"); BYTES+=("$bytes")
done
echo "== medians of $ROUNDS run(s): lateness p50 $(median "${LAT50[@]}") ms, p99 $(median "${LAT99[@]}") ms (control p99 $(median "${CTL99[@]}") ms); cpu $(median "${CPU[@]}") %; rss $(median "${RSS[@]}") MiB; $(median "${BYTES[@]}") B per stored round"

# Disk at scale: run 1's rounds as one target over SIM_DAYS simulated days.
echo "== disk: run 1's rounds replayed as one target every 10 s for $SIM_DAYS simulated days (store_sim)"
"$SIM" "$WORK/run1/m.db" "$WORK/sim.db" "$SIM_DAYS" 1 > "$WORK/sim.txt"
if [ -n "${KEEP:-}" ]; then cp "$WORK/sim.db" "$KEEP/"; fi
python3 - "$WORK/sim.db" "$SIM_DAYS" <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
size = c.execute("PRAGMA page_count").fetchone()[0] * c.execute("PRAGMA page_size").fetchone()[0]
free = c.execute("PRAGMA freelist_count").fetchone()[0]
pages = dict(c.execute("select name, sum(pgsize) from dbstat group by name").fetchall())
# Rows a 10 s target makes per day and keeps at the default retention (rounds 6 h, minutes
# 1 d, hours 30 d, days 60 d) and at the earlier defaults (2 d, 14 d, 400 d, 10 y), by level.
levels = [("round", "round", 8640, 2160, 2 * 8640), ("minute", "rollup_minute", 1440, 1440, 14 * 1440),
          ("hour", "rollup_hour", 24, 30 * 24, 400 * 24), ("day", "rollup_day", 1, 60, 3650)]
day = steady = earlier = 0
for name, table, per_day, kept, kept_before in levels:
    rows = c.execute(f"select count(*) from {table}").fetchone()[0]
    b = pages.get(table, 0) / rows if rows else float("nan")
    day += b * per_day
    steady += b * kept
    earlier += b * kept_before
    print(f"  {name:6} {rows:7} rows  {b:6.1f} B per row  {b * per_day / 1e3:8.1f} kB per day"
          f"  {b * kept / 1e6:6.2f} MB kept ({kept} rows)")
print(f"  per target per day {day / 1e6:.3f} MB; steady state at the default retention "
      f"{steady / 1e6:.2f} MB (at the earlier 2d/14d/400d/10y: {earlier / 1e6:.1f} MB); "
      f"the file after {sys.argv[2]} simulated days: {size / 1e6:.2f} MB "
      f"({free} free pages)")
EOF
