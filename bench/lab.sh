#!/usr/bin/env bash
# bench/lab.sh — the lab's link emulator at its limits (root): packets/s through one link with
# 64-byte UDP, delay error at 20 ms, TCP bulk through a 0-delay link. Each figure is measured
# ROUNDS times, alternating the cases, and the median printed; the box swings ±30 % between runs.
#
#   sudo bash bench/lab.sh                  # 3 rounds, release build
#   ROUNDS=5 SECONDS_PER_RUN=5 sudo bash bench/lab.sh
#
# Goals (issue "npt lab"): >= 75,000 pps through one link with 64-byte UDP (what a plain C TUN
# wire moved here), delay error p50 <= 0.5 ms and p99 <= 2 ms at 20 ms, TCP bulk >= 1 Gbit/s
# through a 0-delay link. pps is npt probe in relay mode (a window of 256 in flight; the
# link's own counters are the figure); TCP bulk is iperf3 (Debian package) across the link.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_PER_RUN:-5}
[ "$(id -u)" = 0 ] || { echo "bench/lab.sh: needs root (network namespaces)" >&2; exit 2; }
command -v iperf3 >/dev/null || apt-get install -y -qq iperf3 >/dev/null
cargo build --release -q -p npt
NPT=$PWD/target/release/npt
DIR=$(mktemp -d)
trap '"$NPT" lab down bench >/dev/null 2>&1 || true; rm -rf "$DIR"' EXIT

topo() { # $1 = impairment lines, $2 = extra flags for up
  cat > "$DIR/bench.toml" <<EOT
name = "bench"
[[node]]
name = "client"
[[node]]
name = "server"
[[link]]
a = "client"
b = "server"
$1
[[service]]
name = "serve"
node = "server"
cmd = ["npt", "serve", "--listen", "0.0.0.0:7777"]
ready = "tcp://10.0.1.2:7777"
[[service]]
name = "iperf3"
node = "server"
cmd = ["iperf3", "-s", "-p", "5201"]
ready = "tcp://10.0.1.2:5201"
EOT
  "$NPT" lab up "$DIR/bench.toml" $2 >/dev/null
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

pps_run() { # $1 = link threads: packets/s the link moved client>server during a relay probe
  topo 'delay = "0ms"' "--link-threads $1"
  "$NPT" lab exec bench client -- npt probe udp://10.0.1.2:7777 --mode relay --warmup 256 \
    -d "${SECS}s" --size 64 -q >/dev/null 2>&1 || true
  "$NPT" lab status bench --json | python3 -c "
import json,sys; s=json.load(sys.stdin); d=s['links'][0]['directions'][0]['applied']
print(d['packets_out']/$SECS)"
  "$NPT" lab down bench >/dev/null
}

delay_run() { # delay error p50 and p99 (µs) at 20 ms with 10,000 pps of 64-byte UDP
  topo 'delay = "20ms"' ""
  "$NPT" lab exec bench client -- npt probe udp://10.0.1.2:7777 --mode rate --pps 10000 \
    -d "${SECS}s" --size 64 -q >/dev/null 2>&1 || true
  "$NPT" lab status bench --json | python3 -c "
import json,sys; s=json.load(sys.stdin); d=s['links'][0]['directions'][0]['applied']
print(d['delay_error_p50_us'], d['delay_error_p99_us'], d['packets_out'])"
  "$NPT" lab down bench >/dev/null
}

tcp_run() { # iperf3 Mbit/s client>server through a 0-delay link
  topo 'delay = "0ms"' "--link-threads ${1:-1}"
  "$NPT" lab exec bench client -- iperf3 -c 10.0.1.2 -p 5201 -t "$SECS" -J 2>/dev/null \
    | python3 -c "import json,sys; print(json.load(sys.stdin)['end']['sum_received']['bits_per_second']/1e6)"
  "$NPT" lab down bench >/dev/null
}

: > "$DIR/pps1"; : > "$DIR/pps2"; : > "$DIR/delay"; : > "$DIR/tcp1"; : > "$DIR/tcp2"
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  pps_run 1 >> "$DIR/pps1"
  pps_run 2 >> "$DIR/pps2"
  delay_run >> "$DIR/delay"
  tcp_run 1 >> "$DIR/tcp1"
  tcp_run 2 >> "$DIR/tcp2"
done
echo "rounds: $ROUNDS x ${SECS}s (medians; every round in brackets)"
printf 'pps, 64 B UDP, 1 wire thread     %10.0f  [%s]  goal >= 75000\n' "$(median < "$DIR/pps1")" "$(tr '\n' ' ' < "$DIR/pps1")"
printf 'pps, 64 B UDP, 2 wire threads    %10.0f  [%s]\n' "$(median < "$DIR/pps2")" "$(tr '\n' ' ' < "$DIR/pps2")"
printf 'delay error p50 at 20 ms (us)    %10.1f  [%s]  goal <= 500\n' "$(cut -d' ' -f1 < "$DIR/delay" | median)" "$(cut -d' ' -f1 < "$DIR/delay" | tr '\n' ' ')"
printf 'delay error p99 at 20 ms (us)    %10.1f  [%s]  goal <= 2000\n' "$(cut -d' ' -f2 < "$DIR/delay" | median)" "$(cut -d' ' -f2 < "$DIR/delay" | tr '\n' ' ')"
printf 'TCP bulk, 0 ms, 1 wire (Mbit/s)  %10.0f  [%s]  goal >= 1000\n' "$(median < "$DIR/tcp1")" "$(tr '\n' ' ' < "$DIR/tcp1")"
printf 'TCP bulk, 0 ms, 2 wires (Mbit/s) %10.0f  [%s]\n' "$(median < "$DIR/tcp2")" "$(tr '\n' ' ' < "$DIR/tcp2")"
