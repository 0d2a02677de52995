#!/usr/bin/env bash
# bench/proxy.sh — what a local proxy costs, measured by npt itself, direct vs through it.
#
#   bash bench/proxy.sh                     # 3 rounds of 5 s each
#   ROUNDS=5 SECONDS_PER_RUN=10 bash bench/proxy.sh
#
# 1. UDP pps: npt probe --mode relay --warmup 64 (64 B) against npt serve, direct vs through
#    danted's UDP ASSOCIATE (the per-datagram SOCKS header is added and stripped by npt on its
#    hot path; danted relays in user space). Rounds alternate direct / via so machine drift hits
#    both; prints each round and the medians.
# 2. TCP ping-pong RTT (1000 B, one message in flight): direct vs through danted (SOCKS5
#    CONNECT), microsocks (SOCKS5) and tinyproxy (HTTP CONNECT); medians of the rounds' p50.
#
# Needs: danted (dante-server), microsocks, tinyproxy, python3 (Debian packages).
# Traffic goes only to 127.0.0.1. Every process started here is killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
SECS=${SECONDS_PER_RUN:-5}
NPT=${NPT:-target/release/npt}
. bench/lib.sh

need() { [ -x "$1" ] || command -v "$1" >/dev/null || { echo "bench: missing $1 ($2)" >&2; exit 2; }; }
need /usr/sbin/danted "apt-get install dante-server"
need /usr/bin/microsocks "apt-get install microsocks"
need /usr/bin/tinyproxy "apt-get install tinyproxy"
need python3 "python3"

cargo build --release -q -p npt


"$NPT" serve --listen 127.0.0.1:0 > "$WORK/serve.out" 2>/dev/null &
PIDS+=($!)
for _ in $(seq 1 100); do grep -q listening "$WORK/serve.out" && break; sleep 0.05; done
TARGET=$(grep -o '127.0.0.1:[0-9]*' "$WORK/serve.out" | head -1)

D=$(free_port)
cat > "$WORK/danted.conf" <<EOF
logoutput: stderr
internal: 127.0.0.1 port = $D
external: 127.0.0.1
clientmethod: none
socksmethod: none
user.privileged: root
user.unprivileged: nobody
client pass { from: 127.0.0.0/8 to: 0.0.0.0/0 }
socks pass { from: 127.0.0.0/8 to: 0.0.0.0/0 command: connect udpassociate udpreply }
EOF
/usr/sbin/danted -f "$WORK/danted.conf" -p "$WORK/danted.pid" 2>/dev/null &
PIDS+=($!)
M=$(free_port)
/usr/bin/microsocks -i 127.0.0.1 -p "$M" >/dev/null 2>&1 &
PIDS+=($!)
T=$(free_port)
printf 'User nobody\nGroup nogroup\nPort %s\nListen 127.0.0.1\nTimeout 30\nAllow 127.0.0.1\n' "$T" > "$WORK/tinyproxy.conf"
/usr/bin/tinyproxy -d -c "$WORK/tinyproxy.conf" >/dev/null 2>&1 &
PIDS+=($!)
wait_port "$D"; wait_port "$M"; wait_port "$T"

field() { python3 -c "import json,sys;d=json.load(open('$1'));print(d['summary']$2)"; }
median() { python3 -c "import statistics,sys;print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }

echo "== UDP relay pps, 64 B, warm-up 64: direct vs danted UDP ASSOCIATE (${SECS}s x ${ROUNDS})"
direct=(); via=()
for r in $(seq 1 "$ROUNDS"); do
  "$NPT" probe "udp://$TARGET" --mode relay --warmup 64 -d "${SECS}s" -q --json "$WORK/d.json" >/dev/null || true
  "$NPT" probe "udp://$TARGET" --mode relay --warmup 64 -d "${SECS}s" -q --json "$WORK/v.json" \
    --via "socks5://127.0.0.1:$D" >/dev/null || true
  a=$(field "$WORK/d.json" "['pps_received']"); b=$(field "$WORK/v.json" "['pps_received']")
  la=$(field "$WORK/d.json" "['loss_pct']"); lb=$(field "$WORK/v.json" "['loss_pct']")
  printf 'round %d: direct %.0f pps (loss %s%%)   via danted %.0f pps (loss %s%%)\n' "$r" "$a" "$la" "$b" "$lb"
  direct+=("$a"); via+=("$b")
done
md=$(median "${direct[@]}"); mv=$(median "${via[@]}")
printf 'median: direct %.0f pps, via danted %.0f pps, ratio via/direct %.2f\n\n' "$md" "$mv" "$(python3 -c "print($mv/$md)")"

echo "== TCP ping-pong p50 (1000 B, one in flight): direct vs proxies (${ROUNDS} rounds of 2000)"
declare -A p50s
for r in $(seq 1 "$ROUNDS"); do
  for name in direct danted microsocks tinyproxy; do
    case $name in
      direct) via=() ;;
      danted) via=(--via "socks5://127.0.0.1:$D") ;;
      microsocks) via=(--via "socks5://127.0.0.1:$M") ;;
      tinyproxy) via=(--via "http://127.0.0.1:$T") ;;
    esac
    "$NPT" probe "tcp://$TARGET" --ping-pong -n 2000 --size 1000 -q --json "$WORK/t.json" "${via[@]}" >/dev/null || true
    p50s[$name]="${p50s[$name]:-} $(field "$WORK/t.json" "['rtt_ms']['p50']")"
  done
done
base=$(median ${p50s[direct]})
for name in direct danted microsocks tinyproxy; do
  m=$(median ${p50s[$name]})
  printf '%-10s p50 %.3f ms (rounds:%s)  +%.3f ms over direct\n' "$name" "$m" "${p50s[$name]}" "$(python3 -c "print($m-$base)")"
done
