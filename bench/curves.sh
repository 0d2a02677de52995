#!/usr/bin/env bash
# bench/curves.sh — cost curves: how npt's CPU, latency and throughput grow with the work asked,
# npt and its peer on one chart, from one run (bench/curves.py does the measuring and says how).
#
#   bash bench/curves.sh                                  # all three, ~8 minutes
#   NPT_BASE=/path/to/older/npt bash bench/curves.sh      # run: before and after on one chart
#   PARTS="probe" SPIN=1 bash bench/curves.sh             # probe only, with npt probe --spin
#   REPS=5 SECS=5 RUN_SECS=30 OUT=/tmp/curves bash bench/curves.sh   # longer, elsewhere
#   REPS=1 SECS=1 RUN_SECS=4 RATES="1000 20000" USERS="500 1000" CONNS="1 16" bash bench/curves.sh  # a smoke run
#
# Defaults: REPS=3 alternations per point, SECS=2 per probe/http sample, RUN_SECS=10 per run
# sample, RATES="1000 10000 50000 200000" pps, USERS="1000 4000 8000 16000", CONNS="1 4 16 64".
# Writes OUT (default docs/bench, beside docs/benchmarks.md): CSVs of every sample and of the
# medians, PNG charts, and curves.md (the medians as tables, the charts linked). Every point
# alternates npt and its peer REPS times; the medians are drawn. This box swings ±30 % between
# runs: read the curves of one run against each other, not against another run's.
#
# Needs (Debian): python3, gnuplot-nox, sockperf, nginx-light, wrk, util-linux (taskset):
#   apt-get install -y python3 gnuplot-nox sockperf nginx-light wrk util-linux
# Traffic goes only to 127.0.0.1; every process started here is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
need() { command -v "$1" >/dev/null || [ -x "/usr/sbin/$1" ] || { echo "bench/curves.sh: missing $1 (apt-get install $2)" >&2; exit 2; }; }
need python3 python3
need gnuplot gnuplot-nox
need taskset util-linux
case " ${PARTS:-probe run http} " in *" probe "*) need sockperf sockperf;; esac
case " ${PARTS:-probe run http} " in *" http "*) need nginx nginx-light; need wrk wrk;; esac
[ -n "${NPT:-}" ] || cargo build --release -q -p npt
exec python3 bench/curves.py
