# bench/lib.sh — what the bench scripts share, sourced after they `cd` to the repository root:
#   . bench/lib.sh
# A work directory ($WORK) and the processes a script started (append their pids to PIDS),
# both gone on exit, Ctrl-C or TERM (a script may define on_exit for its own teardown, e.g. a
# lab); a free loopback port; waiting for a TCP listener (bounded); a median and a ratio.
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if declare -F on_exit >/dev/null; then on_exit || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# A TCP/UDP port on 127.0.0.1 that nothing uses now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_port PORT: until something accepts TCP on 127.0.0.1:PORT, at most 10 s (then fails).
wait_port() {
  for _ in $(seq 1 200); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "bench/${0##*/}: nothing listening on $1" >&2; return 1
}

# median X...: the middle value (the lower middle of an even count).
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# ratio A B: A / B with three decimals (0 when B is 0).
ratio() { python3 -c "print('%.3f' % ($1 / $2 if $2 else 0))"; }
