#!/usr/bin/env bash
# bench/http.sh — npt http and npt serve --http side by side with their peers, in one run.
#
#   [REPS=3] bench/http.sh [DURATION]   (default 5s per figure, each pair run REPS times
#                                        alternately, medians compared; needs a release build)
#
# Installs nothing. Needs nginx (Debian nginx-light), wrk and h2load (nghttp2-client):
#   apt-get install -y nginx-light wrk nghttp2-client
# Starts nginx with a temporary config (one worker, `return 200`, loopback, pid/logs in a temp
# dir), and npt serve --http, both killed on exit. Prints every figure (requests/s) and the
# ratios the issue asks for:
#   npt http keep-alive -c50      vs  wrk -t2 -c50                         (goal ≥ 1.0)
#   npt http --new-conn -c50      vs  wrk -t2 -c50 -H 'Connection: close'  (goal ≥ 1.0)
#   npt http --http2 -c4 streams  vs  h2load -c4 -m10 (same clients and streams) (goal ≥ 0.9)
#   the same with --threads $(nproc) (one runtime thread per CPU: the default before npt picked
#   half the CPUs for a target on this machine), to show what the default choice is worth
#   npt serve --http under wrk    vs  nginx under wrk                      (goal ≥ 0.8)
# With NPT_BASE=<an older npt binary>, also before/after pairs (goal: not slower, ≥ 1.0 within
# noise): npt http -c50 keep-alive and --http2 -c4 --streams 10, NPT_BASE vs NPT, alternating.
# ONLY_BASE=1 runs just those:
#   NPT_BASE=/tmp/npt-old ONLY_BASE=1 REPS=5 bench/http.sh 5s
# Everything shares this machine's CPUs with the server under test; read ratios, not absolutes.
set -euo pipefail

DUR=${1:-5s}
REPS=${REPS:-3}
DUR_S=${DUR%s}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NPT=${NPT:-$ROOT/target/release/npt}

for tool in nginx wrk h2load python3; do
    if ! command -v "$tool" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$tool" ]; then
        echo "bench/http.sh: $tool not found (apt-get install -y nginx-light wrk nghttp2-client)" >&2
        exit 2
    fi
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [ ! -x "$NPT" ]; then
    echo "bench/http.sh: $NPT missing: cargo build --release -p npt" >&2
    exit 2
fi

TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ -f "$TMP/nginx.pid" ]; then kill "$(cat "$TMP/nginx.pid" 2>/dev/null)" 2>/dev/null || true; fi
    sleep 0.2
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() { # port: up to 5 s for a listener
    for _ in $(seq 1 100); do
        if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null; then
            return 0
        fi
        sleep 0.05
    done
    echo "bench/http.sh: nothing listening on port $1" >&2
    return 1
}

NGX_PORT=$(free_port)
NGX_H2_PORT=$(free_port)
while [ "$NGX_H2_PORT" = "$NGX_PORT" ]; do NGX_H2_PORT=$(free_port); done
mkdir -p "$TMP/ngx"
cat >"$TMP/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $TMP/nginx.pid;
error_log $TMP/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $TMP/ngx;
    proxy_temp_path $TMP/ngx;
    fastcgi_temp_path $TMP/ngx;
    uwsgi_temp_path $TMP/ngx;
    scgi_temp_path $TMP/ngx;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$NGX_PORT;
        listen 127.0.0.1:$NGX_H2_PORT http2;
        location / { return 200 "ok\n"; }
    }
}
EOF
"$NGINX" -c "$TMP/nginx.conf" -p "$TMP" &
PIDS+=($!)
wait_port "$NGX_PORT" || { cat "$TMP/error.log" >&2; exit 1; }
wait_port "$NGX_H2_PORT" || { cat "$TMP/error.log" >&2; exit 1; }

NPT_PORT=$(free_port)
"$NPT" serve --listen 127.0.0.1:0 --http "127.0.0.1:$NPT_PORT" >"$TMP/npt-serve.log" 2>&1 &
PIDS+=($!)
wait_port "$NPT_PORT" || { cat "$TMP/npt-serve.log" >&2; exit 1; }

URL=http://127.0.0.1:$NGX_PORT/
H2URL=http://127.0.0.1:$NGX_H2_PORT/

# Each *_rps prints "REQ_PER_S CPU_US_PER_REQUEST" for one run. The CPU figure (user + sys of
# the client process, from /usr/bin/time) is steadier than req/s when the box is shared.
timed() { /usr/bin/time -f '%U %S' -o "$TMP/time" "$@"; }
cpu_us() { # requests → µs of client CPU per request
    python3 -c "u,s=map(float,open('$TMP/time').read().split()[-2:]); n=$1; print('%.1f' % ((u+s)*1e6/n if n else 0))"
}
npt_rps() {
    timed "$NPT" http "$@" -d "$DUR" -q --json "$TMP/r.json" >/dev/null
    local rps n
    read -r rps n < <(python3 -c "import json; s=json.load(open('$TMP/r.json'))['summary']; print('%.0f %d' % (s['rps'], s['requests']))")
    echo "$rps $(cpu_us "$n")"
}
wrk_rps() {
    timed wrk -d "$DUR" "$@" >"$TMP/wrk.out"
    local rps n
    rps=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$TMP/wrk.out")
    n=$(awk '/requests in/ {print $1}' "$TMP/wrk.out")
    echo "$rps $(cpu_us "$n")"
}
h2load_rps() {
    timed h2load -D "$DUR_S" "$@" >"$TMP/h2load.out" 2>/dev/null
    local rps n
    rps=$(awk '/^finished in/ {gsub(",","",$4); printf "%.0f", $4}' "$TMP/h2load.out")
    n=$(awk '/^requests:/ {print $8}' "$TMP/h2load.out")
    echo "$rps $(cpu_us "$n")"
}
ratio() { python3 -c "print('%.2f' % ($1 / $2 if $2 else 0))"; }

echo "bench/http.sh: $(nproc) CPUs, $DUR per figure, $REPS alternating repetitions (median shown)," \
    "nginx 1 worker on :$NGX_PORT (h2c :$NGX_H2_PORT), npt serve on :$NPT_PORT"
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# pair NAME_A NAME_B CMD_A CMD_B: runs A and B alternately REPS times, prints the median
# req/s and client CPU µs/request of each with every sample, and leaves the ratio of the
# req/s medians in $RATIO and of the CPU medians (B/A: >1 means A is cheaper) in $CPU_RATIO.
pair() {
    local name_a=$1 name_b=$2 cmd_a=$3 cmd_b=$4 ar=() br=() ac=() bc=() r c
    for _ in $(seq 1 "$REPS"); do
        read -r r c < <(eval "$cmd_a"); ar+=("$r"); ac+=("$c")
        read -r r c < <(eval "$cmd_b"); br+=("$r"); bc+=("$c")
    done
    local mar mbr mac mbc
    mar=$(median "${ar[@]}"); mbr=$(median "${br[@]}")
    mac=$(median "${ac[@]}"); mbc=$(median "${bc[@]}")
    printf '%-46s %10s %10s   (%s)\n' "$name_a" "$mar" "$mac" "${ar[*]}" "$name_b" "$mbr" "$mbc" "${br[*]}"
    RATIO=$(ratio "$mar" "$mbr")
    CPU_RATIO=$(ratio "$mbc" "$mac")
}

# Which client thread count npt http picks by default against this (local) server, and why.
"$NPT" http "$H2URL" --http2 -c 1 -d 0.2s -q --json "$TMP/t.json" >/dev/null
THREADS_WHY=$(python3 -c "import json; c=json.load(open('$TMP/t.json'))['config']; print('%s thread(s): %s' % (c['threads'], c['threads_why']))")
echo "npt http default: $THREADS_WHY"
printf '%-46s %10s %10s   %s\n' "figure" "req/s" "cpu us/req" "(req/s samples)"
if [ -n "${NPT_BASE:-}" ]; then
    base_rps() { NPT=$NPT_BASE npt_rps "$@"; }
    pair "npt http -c50 (keep-alive), this build" "the same, NPT_BASE" \
        'npt_rps "$URL" -c 50' 'base_rps "$URL" -c 50'
    b1=$RATIO bc1=$CPU_RATIO
    pair "npt http --http2 -c4 --streams 10, this build" "the same, NPT_BASE" \
        'npt_rps "$H2URL" --http2 -c 4 --streams 10' 'base_rps "$H2URL" --http2 -c 4 --streams 10'
    b2=$RATIO bc2=$CPU_RATIO
    echo "  this build / NPT_BASE: keep-alive $b1 (cpu $bc1), --http2 $b2 (cpu $bc2)   [>= 1.0: not slower]"
    if [ "${ONLY_BASE:-0}" = 1 ]; then exit 0; fi
fi
pair "npt http -c50 (keep-alive) -> nginx" "wrk -t2 -c50 -> nginx" \
    'npt_rps "$URL" -c 50' 'wrk_rps -t2 -c50 "$URL"'
r1=$RATIO c1=$CPU_RATIO
pair "npt http -c50 --new-conn -> nginx" "wrk -t2 -c50 -H 'Connection: close' -> nginx" \
    'npt_rps "$URL" -c 50 --new-conn' "wrk_rps -t2 -c50 -H 'Connection: close' \"\$URL\""
r2=$RATIO c2=$CPU_RATIO
pair "npt http --http2 -c4 --streams 10 -> nginx" "h2load -c4 -m10 -t2 -> nginx" \
    'npt_rps "$H2URL" --http2 -c 4 --streams 10' 'h2load_rps -c4 -m10 -t2 "$H2URL"'
r3=$RATIO c3=$CPU_RATIO
NCPU=$(nproc)
pair "npt http --http2 ... --threads $NCPU (one per CPU)" "h2load -c4 -m10 -t2 -> nginx" \
    'npt_rps "$H2URL" --http2 -c 4 --streams 10 --threads "$NCPU"' 'h2load_rps -c4 -m10 -t2 "$H2URL"'
r3b=$RATIO c3b=$CPU_RATIO
pair "wrk -t2 -c50 -> npt serve --http" "wrk -t2 -c50 -> nginx" \
    'wrk_rps -t2 -c50 "http://127.0.0.1:$NPT_PORT/"' 'wrk_rps -t2 -c50 "$URL"'
r4=$RATIO

echo
echo "ratios of medians (goal in brackets); cpu = peer's client CPU per request / npt's (> 1: npt is cheaper)"
echo "  npt http keep-alive / wrk              $r1  [>= 1.0]   cpu $c1"
echo "  npt http --new-conn / wrk close        $r2  [>= 1.0]   cpu $c2"
echo "  npt http --http2 / h2load              $r3  [>= 0.9]   cpu $c3   (default threads: $THREADS_WHY)"
echo "  npt http --http2 --threads $NCPU / h2load   $r3b  [for comparison: one thread per CPU]   cpu $c3b"
echo "  npt serve --http / nginx (under wrk)   $r4  [>= 0.8]   (cpu column: of wrk, the client)"
