#!/usr/bin/env python3
"""bench/curves.py — how npt's cost grows with the work asked of it, beside its peer's, drawn
from one run (see bench/curves.sh, which checks the tools and builds npt first).

Three curves, each point measured REPS times alternating npt and its peer, medians plotted:

  probe  offered pps -> CPU of client + server (100 % = one core) and RTT p50/p99:
         `npt probe --pps R` against `npt serve`, vs `sockperf under-load --mps R
         --reply-every 1` against `sockperf server` (every message answered, as the probe's);
         server on CPU 0, client on CPU 1. SPIN=1 adds `npt probe --spin`.
  run    simulated users -> client CPU and latency p99: `npt run` (bench/run.sh's user model)
         against one `npt serve`, vs the same with NPT_BASE (an older npt binary: before and
         after in one run); without NPT_BASE only npt is drawn.
  http   connections -> requests/s and client CPU per request: `npt http -c C` vs `wrk -c C`
         against nginx (one worker, `return 200`), keep-alive and a connection per request.

Output in OUT (default docs/bench): one CSV per curve (every sample), PNG charts drawn by
gnuplot (npt and its peer on one chart), and curves.md, a table of the medians.

Why Python: the points need exact CPU accounting of every process (wait4's rusage for the
clients, /proc tick counts for the servers), medians over alternations and CSV/gnuplot output;
as a shell script it was three times as long. Traffic goes only to 127.0.0.1. Every process
started here is stopped on exit.
"""

import csv
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NPT = os.environ.get("NPT", os.path.join(ROOT, "target/release/npt"))
NPT_BASE = os.environ.get("NPT_BASE", "")
OUT = os.environ.get("OUT", os.path.join(ROOT, "docs/bench"))
REPS = int(os.environ.get("REPS", "3"))
SECS = float(os.environ.get("SECS", "2"))
PARTS = os.environ.get("PARTS", "probe run http").split()
RATES = [int(x) for x in os.environ.get("RATES", "1000 10000 50000 200000").split()]
USERS = [int(x) for x in os.environ.get("USERS", "1000 4000 8000 16000").split()]
RUN_SECS = int(os.environ.get("RUN_SECS", "10"))
CONNS = [int(x) for x in os.environ.get("CONNS", "1 4 16 64").split()]
SPIN = os.environ.get("SPIN", "0") == "1"
TICK = os.sysconf("SC_CLK_TCK")
WORK = tempfile.mkdtemp(prefix="npt-curves-")
CHILDREN = []


def log(*a):
    print(*a, flush=True)


def free_port(kind=socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(cmd, **kw):
    p = subprocess.Popen(cmd, stdout=kw.pop("stdout", subprocess.DEVNULL),
                         stderr=kw.pop("stderr", subprocess.DEVNULL), **kw)
    CHILDREN.append(p)
    return p


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p in CHILDREN:
        CHILDREN.remove(p)


def cleanup():
    for p in list(CHILDREN):
        try:
            stop(p)
        except Exception:
            pass
    shutil.rmtree(WORK, ignore_errors=True)


def ticks(pid):
    """utime + stime of a process and its threads, in seconds (/proc, tick resolution)."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICK


def timed(cmd, limit):
    """Runs a client to its end; (exit status, user + system CPU seconds from wait4, stdout)."""
    out = open(os.path.join(WORK, "client.out"), "w+")
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    CHILDREN.append(p)
    deadline = time.monotonic() + limit
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.02)
    p.returncode = status
    CHILDREN.remove(p)
    out.seek(0)
    return status, ru.ru_utime + ru.ru_stime, out.read()


def wait_udp(port):
    for _ in range(200):
        if f":{port:04X}" in open("/proc/net/udp").read().upper():
            return
        time.sleep(0.025)
    raise SystemExit(f"bench/curves.py: nothing bound UDP port {port}")


def wait_tcp(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.025)
    raise SystemExit(f"bench/curves.py: nothing listening on TCP port {port}")


def npt_serve(binary, udp_port=None, http_port=None, cpu=None):
    port = udp_port or free_port()
    cmd = [binary, "serve", "--listen", f"127.0.0.1:{port}"]
    if http_port:
        cmd += ["--http", f"127.0.0.1:{http_port}"]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu)] + cmd
    p = start(cmd)
    wait_udp(port)
    return p, port


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def write_csv(name, header, rows):
    path = os.path.join(OUT, name)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def gnuplot(png, title, xlabel, ylabel, series, logx=False, logy=False):
    """series: [(csv path, x column, y column, label)], columns 1-based, medians file."""
    lines = [
        "set terminal pngcairo size 900,520 font 'sans,10'",
        f"set output '{png}'",
        f"set title \"{title}\"",
        f"set xlabel \"{xlabel}\"",
        f"set ylabel \"{ylabel}\"",
        "set datafile separator ','",
        "set key top left",
        "set grid",
    ]
    if logx:
        lines.append("set logscale x")
    if logy:
        lines.append("set logscale y")
    plots = [f"'{path}' using {x}:{y} skip 1 with linespoints lw 2 title \"{label}\""
             for path, x, y, label in series]
    lines.append("plot " + ", ".join(plots))
    script = os.path.join(WORK, "plot.gp")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run(["gnuplot", script], check=True)
    log(f"  chart: {os.path.relpath(png, ROOT)}")


# ---------------------------------------------------------------------------------- probe --

def probe_point_npt(rate, spin):
    srv, port = npt_serve(NPT, cpu=0)
    c0 = ticks(srv.pid)
    j = os.path.join(WORK, "p.json")
    cmd = ["taskset", "-c", "1", NPT, "probe", f"udp://127.0.0.1:{port}", "--pps", str(rate),
           "-d", f"{SECS}s", "-q", "--json", j] + (["--spin"] if spin else [])
    _, cpu, _ = timed(cmd, SECS + 30)
    scpu = ticks(srv.pid) - c0
    stop(srv)
    s = json.load(open(j))["summary"]
    wall = SECS
    loss = s["lost"] / max(s["sent"], 1) * 100
    return (cpu + scpu) / wall * 100, cpu / wall * 100, s["rtt_ms"]["p50"] * 1e3, \
        s["rtt_ms"]["p99"] * 1e3, loss, s["pps_received"]


def probe_point_sockperf(rate):
    port = free_port(socket.SOCK_DGRAM)
    srv = start(["taskset", "-c", "0", "sockperf", "server", "-i", "127.0.0.1", "-p", str(port)])
    wait_udp(port)
    c0 = ticks(srv.pid)
    cmd = ["taskset", "-c", "1", "sockperf", "under-load", "-i", "127.0.0.1", "-p", str(port),
           "--mps", str(rate), "-t", str(int(SECS)), "-m", "64", "--reply-every", "1",
           "--full-rtt"]
    _, cpu, out = timed(cmd, SECS + 30)
    scpu = ticks(srv.pid) - c0
    stop(srv)
    wall = int(SECS) + 0.0
    def pct(p):
        m = re.search(rf"percentile {p} = *([0-9.]+)", out)
        return float(m.group(1)) if m else None
    m = re.search(r"SentMessages=(\d+); ReceivedMessages=(\d+)", out)
    sent, rcvd = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    m = re.search(r"RunTime=([0-9.]+) sec", out)
    run = float(m.group(1)) if m else wall
    # Of the messages sent, those never answered (sockperf's own "dropped messages" counts
    # something else: it exceeded the messages sent when the client fell behind).
    loss = (sent - rcvd) / sent * 100 if sent else None
    return (cpu + scpu) / wall * 100, cpu / wall * 100, pct("50.000"), pct("99.000"), loss, \
        rcvd / run if run else None


def curve_probe():
    log(f"== probe: offered pps -> CPU (client + server) and RTT; {REPS} alternations of {SECS:.0f} s")
    tools = [("npt", lambda r: probe_point_npt(r, False)), ("sockperf", probe_point_sockperf)]
    if SPIN:
        tools.insert(1, ("npt --spin", lambda r: probe_point_npt(r, True)))
    rows, med = [], {t: [] for t, _ in tools}
    for rate in RATES:
        samples = {t: [] for t, _ in tools}
        for rep in range(REPS):
            for name, f in tools:
                v = f(rate)
                samples[name].append(v)
                rows.append([name, rate, rep] + [None if x is None else round(x, 3) for x in v])
        for name, _ in tools:
            m = [median([s[i] for s in samples[name]]) for i in range(6)]
            med[name].append([rate] + m)
            log(f"  {name:10s} {rate:>7} pps: cpu {m[0]:6.1f} % (client {m[1]:5.1f} %)  "
                f"rtt p50 {m[2]:8.1f} us p99 {m[3]:9.1f} us  loss {m[4]:.3f} %  got {m[5]:8.0f} pps")
    hdr = ["tool", "pps_offered", "rep", "cpu_pct", "client_cpu_pct", "rtt_p50_us",
           "rtt_p99_us", "loss_pct", "pps_received"]
    write_csv("probe_samples.csv", hdr, rows)
    paths = {}
    for name, _ in tools:
        slug = name.replace(" ", "").replace("-", "")
        paths[name] = write_csv(f"probe_{slug}.csv", ["pps_offered"] + hdr[3:], med[name])
    gnuplot(os.path.join(OUT, "probe_cpu.png"),
            "UDP echo at a fixed rate: CPU of client + server (100 % = one core)",
            "packets/s offered (64 B, every one answered)", "CPU %",
            [(paths[n], 1, 2, n) for n, _ in tools], logx=True)
    gnuplot(os.path.join(OUT, "probe_rtt.png"),
            "UDP echo at a fixed rate: RTT p50 (server on CPU 0, client on CPU 1)",
            "packets/s offered", "RTT p50, us", [(paths[n], 1, 4, n) for n, _ in tools],
            logx=True, logy=True)
    return med, [n for n, _ in tools]


# ------------------------------------------------------------------------------------ run --

RUN_ARGS = ["--think", "2s..20s", "--pages", "1..2", "--rounds", "1..4",
            "--request-down", "1KB..16KB", "--seed", "1", "-q"]


def run_point(binary, users, port):
    j = os.path.join(WORK, "r.json")
    ramp = max(RUN_SECS // 3, 1)
    cmd = [binary, "run", f"tcp://127.0.0.1:{port}", "--users", str(users),
           "--duration", f"{RUN_SECS}s", "--ramp-up", f"{ramp}s", *RUN_ARGS, "--json", j]
    _, cpu, _ = timed(cmd, RUN_SECS + 60)
    d = json.load(open(j))
    s, t = d["summary"], d["latency"].get("tcp", {})
    n = max(s["requests"], 1)
    return cpu / RUN_SECS * 100, cpu / n * 1e6, t.get("p50_ms"), t.get("p99_ms"), \
        s["requests_per_s"], d["errors"]["total_errors"]


def curve_run():
    tools = [("npt", NPT)] + ([("npt before", NPT_BASE)] if NPT_BASE else [])
    log(f"== run: users -> client CPU and p99; {RUN_SECS} s per point, {REPS} alternations"
        + ("" if NPT_BASE else " (no NPT_BASE: npt only)"))
    srv, port = npt_serve(NPT)
    rows, med = [], {t: [] for t, _ in tools}
    for users in USERS:
        samples = {t: [] for t, _ in tools}
        for rep in range(REPS):
            for name, b in tools:
                v = run_point(b, users, port)
                samples[name].append(v)
                rows.append([name, users, rep] + [None if x is None else round(x, 3) for x in v])
        for name, _ in tools:
            m = [median([s[i] for s in samples[name]]) for i in range(6)]
            med[name].append([users] + m)
            log(f"  {name:10s} {users:>6} users: client cpu {m[0]:5.1f} %  {m[1]:6.1f} us/request"
                f"  p50 {m[2]:.2f} p99 {m[3]:.2f} ms  {m[4]:.0f} req/s  errors {m[5]:.0f}")
    stop(srv)
    hdr = ["tool", "users", "rep", "client_cpu_pct", "cpu_us_per_request", "p50_ms", "p99_ms",
           "requests_per_s", "errors"]
    write_csv("run_samples.csv", hdr, rows)
    paths = {n: write_csv(f"run_{n.replace(' ', '_')}.csv", ["users"] + hdr[3:], med[n])
             for n, _ in tools}
    gnuplot(os.path.join(OUT, "run_cpu.png"),
            "npt run against a local npt serve: client CPU per request",
            "simulated users (bench/run.sh's model)", "client CPU per request, us",
            [(paths[n], 1, 3, n) for n, _ in tools], logx=True)
    gnuplot(os.path.join(OUT, "run_p99.png"),
            "npt run against a local npt serve: request latency p99",
            "simulated users", "p99, ms", [(paths[n], 1, 5, n) for n, _ in tools],
            logx=True, logy=True)
    return med, [n for n, _ in tools]


# ----------------------------------------------------------------------------------- http --

def nginx():
    port = free_port()
    d = os.path.join(WORK, "nginx")
    os.makedirs(os.path.join(d, "t"), exist_ok=True)
    conf = os.path.join(d, "nginx.conf")
    t = os.path.join(d, "t")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1; daemon off; pid {d}/nginx.pid; error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{ access_log off; client_body_temp_path {t}; proxy_temp_path {t}; fastcgi_temp_path {t};
  uwsgi_temp_path {t}; scgi_temp_path {t}; keepalive_requests 1000000;
  server {{ listen 127.0.0.1:{port}; location / {{ return 200 "ok\\n"; }} }} }}
""")
    p = start([shutil.which("nginx") or "/usr/sbin/nginx", "-c", conf, "-p", d])
    wait_tcp(port)
    return p, f"http://127.0.0.1:{port}/"


def http_npt(url, conns, new_conn):
    j = os.path.join(WORK, "h.json")
    cmd = [NPT, "http", url, "-c", str(conns), "-d", f"{SECS}s", "-q", "--json", j]
    if new_conn:
        cmd.append("--new-conn")
    _, cpu, _ = timed(cmd, SECS + 30)
    s = json.load(open(j))["summary"]
    return s["rps"], cpu / max(s["requests"], 1) * 1e6


def http_wrk(url, conns, new_conn):
    cmd = ["wrk", f"-t{min(2, conns)}", f"-c{conns}", f"-d{int(SECS)}s", url]
    if new_conn:
        cmd[1:1] = ["-H", "Connection: close"]
    _, cpu, out = timed(cmd, SECS + 30)
    m = re.search(r"Requests/sec:\s*([0-9.]+)", out)
    n = re.search(r"(\d+) requests in", out)
    rps = float(m.group(1)) if m else None
    return rps, (cpu / int(n.group(1)) * 1e6) if n and int(n.group(1)) else None


def curve_http():
    log(f"== http: connections -> requests/s; {REPS} alternations of {SECS:.0f} s")
    srv, url = nginx()
    rows, med = [], {}
    for mode in ("keepalive", "newconn"):
        tools = [("npt", http_npt), ("wrk", http_wrk)]
        for conns in CONNS:
            samples = {t: [] for t, _ in tools}
            for rep in range(REPS):
                for name, f in tools:
                    v = f(url, conns, mode == "newconn")
                    samples[name].append(v)
                    rows.append([mode, name, conns, rep] + [None if x is None else round(x, 2) for x in v])
            for name, _ in tools:
                m = [median([s[i] for s in samples[name]]) for i in range(2)]
                med.setdefault((mode, name), []).append([conns] + m)
                log(f"  {mode:9s} {name:4s} -c {conns:>4}: {m[0]:9.0f} req/s  "
                    f"client cpu {m[1]:6.1f} us/request")
    stop(srv)
    write_csv("http_samples.csv", ["mode", "tool", "connections", "rep", "rps", "cpu_us_per_request"], rows)
    paths = {k: write_csv(f"http_{k[0]}_{k[1]}.csv", ["connections", "rps", "cpu_us_per_request"], v)
             for k, v in med.items()}
    for mode, what in (("keepalive", "keep-alive"), ("newconn", "a connection per request (npt --new-conn, wrk Connection: close)")):
        gnuplot(os.path.join(OUT, f"http_{mode}.png"),
                f"HTTP/1.1 against nginx (1 worker), {what}", "connections", "requests/s",
                [(paths[(mode, n)], 1, 2, n) for n in ("npt", "wrk")], logx=True)
    return med


# ---------------------------------------------------------------------------------- table --

def table(probe, run, http):
    md = ["# Cost curves", "",
          f"Made by `bench/curves.sh` (REPS={REPS}, SECS={SECS:g}, RUN_SECS={RUN_SECS}) on "
          f"{os.cpu_count()} CPUs, load average at the end "
          f"{open('/proc/loadavg').read().split()[0]}. Medians of the alternations; every sample "
          "is in the CSV files beside this one.", ""]
    if probe:
        med, tools = probe
        md += ["## probe: UDP echo at a fixed rate", "",
               "![CPU](probe_cpu.png)", "", "![RTT](probe_rtt.png)", "",
               "| tool | pps offered | CPU % (client + server) | client CPU % | RTT p50 µs | RTT p99 µs | loss % |",
               "|---|---|---|---|---|---|---|"]
        for name in tools:
            for r in med[name]:
                md.append(f"| {name} | {r[0]:,} | {r[1]:.1f} | {r[2]:.1f} | {r[3]:.1f} | {r[4]:.1f} | "
                          f"{'' if r[5] is None else f'{r[5]:.3f}'} |")
        md.append("")
    if run:
        med, tools = run
        md += ["## run: simulated users", "", "![CPU](run_cpu.png)", "", "![p99](run_p99.png)", "",
               "| binary | users | client CPU % | µs CPU/request | p50 ms | p99 ms | req/s | errors |",
               "|---|---|---|---|---|---|---|---|"]
        for name in tools:
            for r in med[name]:
                md.append(f"| {name} | {r[0]:,} | {r[1]:.1f} | {r[2]:.1f} | {r[3]:.2f} | {r[4]:.2f} | "
                          f"{r[5]:.0f} | {r[6]:.0f} |")
        md.append("")
    if http:
        md += ["## http: connections", "", "![keep-alive](http_keepalive.png)", "",
               "![new connection](http_newconn.png)", "",
               "| mode | connections | npt req/s | wrk req/s | npt ÷ wrk | npt µs CPU/req | wrk µs CPU/req |",
               "|---|---|---|---|---|---|---|"]
        for mode in ("keepalive", "newconn"):
            for a, b in zip(http[(mode, "npt")], http[(mode, "wrk")]):
                ratio = a[1] / b[1] if a[1] and b[1] else 0
                md.append(f"| {mode} | {a[0]} | {a[1]:,.0f} | {b[1]:,.0f} | {ratio:.2f} | "
                          f"{a[2]:.1f} | {b[2]:.1f} |")
        md.append("")
    with open(os.path.join(OUT, "curves.md"), "w") as f:
        f.write("\n".join(md))
    log(f"table: {os.path.relpath(os.path.join(OUT, 'curves.md'), ROOT)}")


def main():
    os.makedirs(OUT, exist_ok=True)
    log(f"bench/curves.py: {os.cpu_count()} CPUs, load average {open('/proc/loadavg').read().split()[0]}, "
        f"parts {' '.join(PARTS)}, output {OUT}")
    probe = curve_probe() if "probe" in PARTS else None
    run = curve_run() if "run" in PARTS else None
    http = curve_http() if "http" in PARTS else None
    table(probe, run, http)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        main()
    finally:
        cleanup()
