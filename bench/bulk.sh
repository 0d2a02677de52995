#!/usr/bin/env bash
# bench/bulk.sh — npt bulk vs iperf3 (3.x), side by side in one run, on loopback and across a
# 0-delay `npt lab` link (the lab part needs root; skipped otherwise, or with LAB=0).
#
#   bash bench/bulk.sh                       # 3 rounds x 5 s per figure, release build
#   ROUNDS=5 SECONDS_PER_RUN=8 bash bench/bulk.sh
#   LAB=0 bash bench/bulk.sh                 # loopback only
#   CASES="tcp-up-1 tcp-up-4" LOOPBACK=0 bash bench/bulk.sh   # some cases, the lab link only
#
# Cases: TCP down and up with 1 and 4 streams (iperf3 -R is "down": the server sends), and UDP
# at 200 Mbit/s and 1 Gbit/s in 1200-byte datagrams; udp-200m-fine has iperf3 pace on npt's
# 250 us step (--pacing-timer 250; its default is 1 ms, which wakes it a quarter as often). Each round runs every case with npt, then
# with iperf3, so machine drift hits both; each round's ratio is taken and their median shown:
#   goodput        npt / iperf3  (bytes that arrived: TCP up and UDP as the server counted them)
#   client CPU/GB  npt / iperf3  (user + system seconds of the client process, from wait4(2),
#                                 over the GB that arrived)
#   +server        the same with the server's CPU over the run added: on loopback the kernel
#                  runs the receiver's TCP work in whichever process is sending, so the split
#                  between client and server says as much about who slept as about cost
#   UDP            npt delivered / min(configured rate, what iperf3 -u delivered)
# Goals: goodput >= 0.9, client CPU/GB <= 1.1, UDP >= 0.95.
#
# Same CPUs for both tools: on loopback both servers run on CPU 0 and both clients on CPU 1
# (taskset), so a multi-threaded client gets no more CPU than single-threaded iperf3 3.x does.
# In the lab the link emulator needs a CPU of its own, so nothing is pinned there.
#
# Needs: iperf3, taskset (util-linux), python3. Traffic goes only to 127.0.0.1 and to the
# lab's namespaces. Every process and the lab started here are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_PER_RUN:-5}
NPT=${NPT:-$PWD/target/release/npt}
LAB=${LAB:-1}
[ "$(id -u)" = 0 ] || LAB=0
LAB_UP=0
. bench/lib.sh
on_exit() { [ "$LAB_UP" = 1 ] && "$NPT" lab down bbulk >/dev/null 2>&1; }

need() { command -v "$1" >/dev/null || { echo "bench: missing $1 ($2)" >&2; exit 2; }; }
need iperf3 "apt-get install iperf3"
need taskset "util-linux"
need python3 "python3"
[ -x "$NPT" ] || cargo build --release -q -p npt

wait_tcp() { for _ in $(seq 100); do ss -ltn | grep -q ":$1 " && return 0; sleep 0.05; done; echo "bench: port $1 never listened" >&2; exit 1; }

# The client's CPU: a python parent runs the command and reads its rusage with wait4(2)
# (every thread of the client; not the server's). Writes stdout to FILE, prints CPU seconds.
cat > "$WORK/cpu.py" <<'EOF'
import os, subprocess, sys
out = open(sys.argv[1], "w")
p = subprocess.Popen(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL)
_, status, ru = os.wait4(p.pid, 0)
print(f"{ru.ru_utime + ru.ru_stime:.4f}")
EOF

# Reads a result: "goodput_bps bytes" (npt: the result document; iperf3: its -J output; the
# bytes are those CPU/GB divides by).
cat > "$WORK/read.py" <<'EOF'
import json, sys
tool, path = sys.argv[1], sys.argv[2]
d = json.load(open(path))
if tool == "npt":
    s = d["summary"]
    if s.get("udp"):
        u = s["udp"]
        print(u["delivered_bps"], s["bytes"]["up"])
    else:
        # TCP: the bytes up are the responder's last report before the stop (up to 100 ms
        # early) while the client's CPU runs to the end; the goodput over the whole duration
        # is what the CPU bought, as iperf3's bytes are.
        print(s["goodput_mbps"] * 1e6, s["goodput_mbps"] * 1e6 * s["duration_s"] / 8)
else:
    r = d["end"]["sum_received"]
    print(r["bits_per_second"], r["bytes"])
EOF

# A process's CPU so far, in clock ticks (utime + stime of /proc/PID/stat: fields 14 and 15,
# counted after the command name, which may hold spaces).
HZ=$(getconf CLK_TCK)
ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

# One figure: $1 where (lo|lab), $2 tool, $3 case; appends "goodput bytes cpu server_cpu" to
# its file (the server's CPU over the same run, from its tick counts).
# Cases: tcp-down-1 tcp-up-4 … and udp-200m, udp-1000m.
measure() {
  local where=$1 tool=$2 case=$3 host port pre=()
  if [ "$where" = lo ]; then
    host=127.0.0.1; pre=(taskset -c 1)
    if [ "$tool" = npt ]; then port=$NPT_PORT; else port=$IPERF_PORT; fi
  else
    host=10.0.1.2; pre=("$NPT" lab exec bbulk client --)
    if [ "$tool" = npt ]; then port=7777; else port=5201; fi
  fi
  local cmd
  case "$tool:$case" in
    npt:tcp-*) IFS=- read -r _ dir n <<< "$case"
      cmd=("$NPT" bulk "tcp://$host:$port" -P "$n" --direction "$dir" -t "${SECS}s" -q --json -) ;;
    iperf3:tcp-*) IFS=- read -r _ dir n <<< "$case"
      cmd=(iperf3 -c "$host" -p "$port" -P "$n" -t "$SECS" -J)
      [ "$dir" = down ] && cmd+=(-R) ;;
    npt:udp-*) local r=${case#udp-}; r=${r%%m*}
      cmd=("$NPT" bulk "udp://$host:$port" --rate "${r}mbit" --size 1200 -t "${SECS}s" -q --json -) ;;
    iperf3:udp-*) local r=${case#udp-}; r=${r%%m*}
      cmd=(iperf3 -c "$host" -p "$port" -u -b "${r}M" -l 1200 -t "$SECS" -J)
      # -fine: iperf3 paces on npt's 250 us step instead of its default 1 ms.
      [ "${case%-fine}" != "$case" ] && cmd+=(--pacing-timer 250) ;;
  esac
  local cpu spid s0 s1
  spid=${SERVER_PID[$where-$tool]}
  s0=$(ticks "$spid")
  cpu=$("${pre[@]}" python3 "$WORK/cpu.py" "$WORK/out.json" "${cmd[@]}") || true
  s1=$(ticks "$spid")
  local got
  got=$(python3 "$WORK/read.py" "$tool" "$WORK/out.json" 2>/dev/null) || got="0 0"
  echo "$got $cpu $(python3 -c "print(($s1 - $s0) / $HZ)")" >> "$WORK/$where-$tool-$case"
}

read -r -a CASES <<< "${CASES:-tcp-down-1 tcp-down-4 tcp-up-1 tcp-up-4 udp-200m udp-200m-fine udp-1000m}"

NPT_PORT=$(free_port)
taskset -c 0 "$NPT" serve --listen "127.0.0.1:$NPT_PORT" >/dev/null 2>&1 & PIDS+=($!)
declare -A SERVER_PID
SERVER_PID[lo-npt]=$!
IPERF_PORT=$(free_port)
taskset -c 0 iperf3 -s -p "$IPERF_PORT" >/dev/null 2>&1 & PIDS+=($!)
SERVER_PID[lo-iperf3]=$!
wait_tcp "$NPT_PORT"; wait_tcp "$IPERF_PORT"

WHERES=()
[ "${LOOPBACK:-1}" = 1 ] && WHERES+=(lo)
if [ "$LAB" = 1 ]; then
  cat > "$WORK/bbulk.toml" <<EOT
name = "bbulk"
[[node]]
name = "client"
[[node]]
name = "server"
[[link]]
a = "client"
b = "server"
delay = "0ms"
[[service]]
name = "serve"
node = "server"
cmd = ["$NPT", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.1.2:7777"
[[service]]
name = "iperf3"
node = "server"
cmd = ["iperf3", "-s", "-p", "5201"]
ready = "tcp://10.0.1.2:5201"
EOT
  "$NPT" lab up "$WORK/bbulk.toml" >/dev/null
  LAB_UP=1
  SERVER_PID[lab-npt]=$(pgrep -f "serve --listen 0.0.0.0:7777" | head -1)
  SERVER_PID[lab-iperf3]=$(pgrep -f "iperf3 -s -p 5201" | head -1)
  WHERES+=(lab)
fi

for r in $(seq "$ROUNDS"); do
  for where in "${WHERES[@]}"; do
    for c in "${CASES[@]}"; do
      echo "round $r/$ROUNDS: $where $c" >&2
      measure "$where" npt "$c"
      measure "$where" iperf3 "$c"
    done
  done
done

# Ratios are taken round by round (npt and iperf3 of one round ran back to back, so the
# machine's drift between rounds cancels) and their median reported beside the medians of
# the figures themselves.
cat > "$WORK/sum.py" <<'EOF2'
import statistics, sys
where, case, npt_file, ipf_file = sys.argv[1:5]
rows = lambda f: [tuple(map(float, l.split())) for l in open(f) if l.strip()]
n, i = rows(npt_file), rows(ipf_file)
med = statistics.median
gb = lambda r: r[2] / (r[1] / 1e9) if r[1] > 0 else float("nan")
ng, ig = med(r[0] / 1e6 for r in n), med(r[0] / 1e6 for r in i)
nc, ic = med(gb(r) for r in n), med(gb(r) for r in i)
if case.startswith("udp-"):
    rate = float(case[4:].split("m")[0])
    ratio = med(a[0] / 1e6 / min(rate, b[0] / 1e6) for a, b in zip(n, i))
    goal = "delivered/min(rate, iperf3) >= 0.95"
else:
    ratio = med(a[0] / b[0] for a, b in zip(n, i))
    goal = "goodput >= 0.90, CPU/GB <= 1.10"
cratio = med(gb(a) / gb(b) for a, b in zip(n, i))
both = lambda r: (r[2] + r[3]) / (r[1] / 1e9) if r[1] > 0 else float("nan")
bratio = med(both(a) / both(b) for a, b in zip(n, i))
print(f"{where:<4} {case:<11} {ng:10.0f} {ig:10.0f} {ratio:7.2f}  {nc:9.3f} {ic:9.3f} {cratio:7.2f}  {bratio:7.2f}  {goal}")
print("     npt [%s] iperf3 [%s]" % (" ".join(f"{r[0]/1e6:.0f}" for r in n), " ".join(f"{r[0]/1e6:.0f}" for r in i)))
EOF2

echo "npt bulk vs iperf3 $(iperf3 --version | head -1 | cut -d' ' -f2): $ROUNDS rounds x ${SECS}s; figures are medians, ratios medians of each round's ratio"
printf '%-4s %-11s %10s %10s %7s  %9s %9s %7s  %7s  %s\n' where case "npt Mb/s" "ipf Mb/s" ratio "npt s/GB" "ipf s/GB" ratio "+server" goal
for where in "${WHERES[@]}"; do
  for c in "${CASES[@]}"; do
    python3 "$WORK/sum.py" "$where" "$c" "$WORK/$where-npt-$c" "$WORK/$where-iperf3-$c"
  done
done
