//! `npt serve`: starts the responders and waits for Ctrl-C.

mod metrics;

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use npt_result::workload::Stop;
use npt_server::{Limits, ServeConfig, Server};

use crate::usage;
use crate::usage::parse_duration;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address for TCP and UDP, on the same port number (repeatable).
    #[arg(
        long = "listen",
        short = 'l',
        value_name = "ADDR:PORT",
        default_value = "0.0.0.0:7777"
    )]
    pub listen: Vec<String>,
    /// Only answer clients that prove this secret (probe/ping/run --token): a keyed handshake
    /// on TCP and UDP, then a MAC on every packet. Disables raw echo.
    #[arg(long, value_name = "SECRET", env = "NPT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Lift the internet-safe defaults: 4,000,000 pps and 10,000 Mbit/s per UDP source, no
    /// total, 10,000 Mbit/s reply budget, raw UDP echo for everyone.
    #[arg(long)]
    pub open_limits: bool,
    /// Answer raw (unframed) UDP from any address [default: loopback and private addresses
    /// only; it reflects anything].
    #[arg(long)]
    pub raw_echo: bool,
    /// Apply the limits to loopback and private source addresses too (they are exempt by
    /// default: benches, labs and clusters run there). For a host whose private side is not
    /// trusted, or whose network lets spoofed private sources in.
    #[arg(long)]
    pub limit_local: bool,
    /// UDP packets per second from one source socket that has not authenticated (each
    /// address may use 4 times this) [default: 200; 4000000 with --open-limits].
    #[arg(long, value_name = "PPS")]
    pub source_pps: Option<f64>,
    /// UDP megabits per second from one such source socket [default: 4; 10000 with
    /// --open-limits].
    #[arg(long, value_name = "MBPS")]
    pub source_mbps: Option<f64>,
    /// UDP packets per second from all unauthenticated sources together [default: 10000;
    /// none with --open-limits].
    #[arg(long, value_name = "PPS")]
    pub total_pps: Option<f64>,
    /// UDP megabits per second from all unauthenticated sources together [default: 40; none
    /// with --open-limits].
    #[arg(long, value_name = "MBPS")]
    pub total_mbps: Option<f64>,
    /// TCP connections served at once, and as many HTTP ones with --http; further ones are
    /// closed at once and counted [default: what the open-file limit holds, at most 65536].
    #[arg(long, value_name = "N")]
    pub max_conns: Option<usize>,
    /// Close a TCP connection with no new frame for this long.
    #[arg(long, value_name = "DUR", default_value = "300s", value_parser = parse_duration)]
    pub idle_timeout: Duration,
    /// Close a connection stalled inside a frame (header, payload) or not reading its replies
    /// for this long (TCP and QUIC streams; HTTP bodies and responses); also the most a QUIC
    /// handshake may take.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration)]
    pub io_timeout: Duration,
    /// Close an HTTP connection whose request head is not complete this long after its
    /// first byte.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration)]
    pub http_header_timeout: Duration,
    /// Close an HTTP connection with no traffic and no request in progress for this long.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = parse_duration)]
    pub http_idle_timeout: Duration,
    /// Asked-for reply bytes (TCP/QUIC Responses, HTTP /bytes/N) per second per source
    /// address, in megabits; one reply can be at most one second's worth [default: 100;
    /// 10000 with --open-limits].
    #[arg(long, value_name = "MBPS")]
    pub reply_mbps: Option<f64>,
    /// How often refusals are summarized on stderr (tests shorten it).
    #[arg(long, hide = true, value_name = "DUR", default_value = "5s", value_parser = parse_duration)]
    pub log_every: Duration,
    /// Also serve HTTP on this address: `/`, `/bytes/N`, `/delay/MS`, `/status/CODE`, POST
    /// echo; HTTP/1.1 + h2c (or h2 and http/1.1 by ALPN with --tls).
    #[arg(long = "http", value_name = "ADDR:PORT")]
    pub http: Option<String>,
    /// HTTPS on the --http address (self-signed certificate unless --cert/--key).
    #[arg(long, requires = "http")]
    pub tls: bool,
    /// HOST=DUR: answer every HTTP request for this virtual host (Host or :authority, port
    /// aside) DUR late — backends of known, different delay behind one port, for `npt http
    /// --host` per-host load (repeatable, at most 64, each at most 600s).
    #[arg(long, value_name = "HOST=DUR", requires = "http")]
    pub http_delay: Vec<String>,
    /// Serve HTTP/1.1 only on --http: no h2c, and ALPN offers http/1.1 alone with --tls — a
    /// backend without HTTP/2, for `npt http --http2-fallback`.
    #[arg(long, requires = "http")]
    pub http1_only: bool,
    /// PEM certificate chain for --tls.
    #[arg(long, value_name = "FILE", requires = "tls", requires = "key")]
    pub cert: Option<std::path::PathBuf>,
    /// PEM private key for --tls.
    #[arg(long, value_name = "FILE", requires = "tls", requires = "cert")]
    pub key: Option<std::path::PathBuf>,
    /// Also serve QUIC on this UDP address (framed requests on every bidirectional stream,
    /// ALPN `npt`; for `npt run --quic`).
    #[arg(long = "quic", value_name = "ADDR:PORT")]
    pub quic: Option<String>,
    /// PEM certificate chain for --quic [default: self-signed for localhost, 127.0.0.1, ::1].
    #[arg(long, value_name = "FILE", requires = "quic", requires = "quic_key")]
    pub quic_cert: Option<std::path::PathBuf>,
    /// PEM private key for --quic-cert.
    #[arg(long, value_name = "FILE", requires = "quic", requires = "quic_cert")]
    pub quic_key: Option<std::path::PathBuf>,
    /// 0-RTT on --quic: `off` (tickets allow no early data), `accept` (a resumed client's
    /// 0-RTT request is answered at once; replayable, like all early data) or `reject`
    /// (tickets promise early data, then every session is forgotten, as a restarted server
    /// does: each 0-RTT attempt is rejected — a broken 0-RTT for `npt setup --resume`).
    #[arg(long = "quic-0rtt", value_name = "MODE", default_value = "off", requires = "quic",
          value_parser = ["off", "accept", "reject"])]
    pub quic_0rtt: String,
    /// Write the QUIC certificate (PEM) to this file, for `npt run --ca FILE`.
    #[arg(long, value_name = "FILE", requires = "quic")]
    pub quic_cert_out: Option<std::path::PathBuf>,
    /// Also be a STAMP Session-Reflector (RFC 8762) on this UDP address (IANA's port is 862),
    /// for `npt probe stamp://` and any STAMP or TWAMP-Light sender; stateful unless
    /// --stamp-stateless, under the same limits as UDP.
    #[arg(long = "stamp", value_name = "ADDR:PORT")]
    pub stamp: Option<String>,
    /// The STAMP reflector copies each sender's sequence number instead of keeping its own
    /// count per session (senders then see round-trip loss only, not which way).
    #[arg(long, requires = "stamp")]
    pub stamp_stateless: bool,
    /// STAMP authenticated mode: answer only test packets whose HMAC verifies under this key
    /// (hex, at least 32 digits), and seal the answers with it.
    #[arg(
        long,
        value_name = "HEX",
        env = "NPT_STAMP_KEY",
        hide_env_values = true,
        requires = "stamp"
    )]
    pub stamp_key: Option<String>,
    /// Serve the responder's counters in OpenMetrics text at http://ADDR/metrics (Prometheus).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
    /// Be a hop agent: measure RTTs on request (`npt ping --from`) — TCP connect, UDP echo or
    /// QUIC handshake — or the path MTU each way (`npt trace --mtu`) to a target within
    /// --hop-allow, for clients that pass --token (needed).
    #[arg(long)]
    pub hop_agent: bool,
    /// Targets the hop agent may measure, comma-separated (repeatable): addresses
    /// (10.0.3.2), networks (10.0.0.0/8), ADDR:PORT, or HOST:PORT by name [default: nothing].
    #[arg(long, value_name = "LIST", requires = "hop_agent")]
    pub hop_allow: Vec<String>,
}

/// `--hop-agent`: refused without `--token` (an agent that sends traffic on request must know
/// who asks); measures with npt ping's engine and searches the path MTU with npt mtu's, their
/// UDP probes keyed with the same secret.
fn hop_config(a: &ServeArgs) -> anyhow::Result<Option<npt_server::hop_agent::HopAgentConfig>> {
    use npt_server::hop_agent::{AllowList, HopAgentConfig, HopLimits, Measurer};
    if !a.hop_agent {
        return Ok(None);
    }
    if a.token.is_none() {
        return Err(usage!(
            "--hop-agent needs --token: an agent that sends traffic on request answers only \
             clients that prove the secret"
        ));
    }
    let mut allow = AllowList::default();
    for l in &a.hop_allow {
        allow.extend(l).map_err(|e| usage!("{e}"))?;
    }
    Ok(Some(HopAgentConfig {
        allow,
        limits: HopLimits::default(),
        measure: Measurer::new(npt_ping::agent::measurer(a.token.clone()))
            .with_mtu(npt_mtu::agent::measurer(a.token.clone()))
            .with_mark(npt_probe::agent::measurer(a.token.clone())),
    }))
}

/// `--http-delay HOST=DUR`, each checked: a host name, a duration within the responder's bound.
fn http_delays(given: &[String]) -> anyhow::Result<Vec<(String, Duration)>> {
    use npt_server::http_server::{MAX_DELAY_MS, MAX_HOST_DELAYS};
    if given.len() > MAX_HOST_DELAYS {
        return Err(usage!("--http-delay: at most {MAX_HOST_DELAYS} hosts"));
    }
    let mut out: Vec<(String, Duration)> = Vec::new();
    for g in given {
        let bad = |why: &str| usage!("--http-delay {g:?}: {why}, e.g. slow.test=20ms");
        let (host, d) = g.split_once('=').ok_or_else(|| bad("expected HOST=DUR"))?;
        if host.is_empty() || http::HeaderValue::from_str(host).is_err() || host.contains(' ') {
            return Err(bad("not a host name"));
        }
        let d = parse_duration(d).map_err(|e| bad(&e.to_string()))?;
        if d > Duration::from_millis(MAX_DELAY_MS) {
            return Err(bad(&format!("at most {}s", MAX_DELAY_MS / 1000)));
        }
        if out.iter().any(|(h, _)| h.eq_ignore_ascii_case(host)) {
            return Err(bad("host given twice"));
        }
        out.push((host.to_string(), d));
    }
    Ok(out)
}

/// `--http`: the HTTP responder's options, if asked for.
fn http_options(
    a: &ServeArgs,
    cfg: &ServeConfig,
) -> anyhow::Result<Option<npt_server::http_server::ServerOptions>> {
    let Some(h) = &a.http else { return Ok(None) };
    let addr: SocketAddr = h
        .parse()
        .map_err(|_| usage!("--http {h:?}: expected ADDR:PORT, e.g. 0.0.0.0:8080"))?;
    let mut o = npt_server::http_server::ServerOptions::new(addr);
    o.tls = a.tls;
    o.cert = a.cert.clone();
    o.key = a.key.clone();
    o.max_conns = cfg.max_tcp_conns;
    o.header_timeout = a.http_header_timeout;
    o.idle_timeout = a.http_idle_timeout;
    o.io_timeout = a.io_timeout;
    o.token = a.token.clone();
    o.log_every = cfg.log_every;
    o.host_delays = http_delays(&a.http_delay)?;
    o.h1_only = a.http1_only;
    Ok(Some(o))
}

pub fn config(a: &ServeArgs) -> anyhow::Result<ServeConfig> {
    let mut listen = Vec::new();
    for l in &a.listen {
        let addr: SocketAddr = l.parse().map_err(|_| {
            usage!("--listen {l:?}: expected ADDR:PORT, e.g. 0.0.0.0:7777 or [::]:7777")
        })?;
        listen.push(addr);
    }
    for (flag, v) in [
        ("--source-pps", a.source_pps),
        ("--source-mbps", a.source_mbps),
        ("--total-pps", a.total_pps),
        ("--total-mbps", a.total_mbps),
        ("--reply-mbps", a.reply_mbps),
    ] {
        if matches!(v, Some(v) if v.is_nan() || v <= 0.0) {
            return Err(usage!("{flag} must be positive"));
        }
    }
    let max_conns = max_conns(a)?;
    for (flag, d) in [
        ("--idle-timeout", a.idle_timeout),
        ("--io-timeout", a.io_timeout),
        ("--http-header-timeout", a.http_header_timeout),
        ("--http-idle-timeout", a.http_idle_timeout),
        ("--log-every", a.log_every),
    ] {
        if d.is_zero() {
            return Err(usage!("{flag} must be positive"));
        }
    }
    if matches!(&a.token, Some(t) if t.is_empty()) {
        return Err(usage!("--token must not be empty"));
    }
    let (base, budget) = if a.open_limits {
        (Limits::open(), npt_server::BudgetLimits::open())
    } else {
        (Limits::safe(), npt_server::BudgetLimits::safe())
    };
    let mbps = |m: f64| m * 1e6 / 8.0;
    // A limit given explicitly applies to local sources too (so it can be tried there); the
    // defaults leave loopback and private addresses alone (benches and labs run there) unless
    // --limit-local.
    let explicit = a.source_pps.is_some()
        || a.source_mbps.is_some()
        || a.total_pps.is_some()
        || a.total_mbps.is_some();
    Ok(ServeConfig {
        listen,
        token: a.token.clone(),
        limits: Limits {
            pps: a.source_pps.unwrap_or(base.pps),
            bytes_per_s: a.source_mbps.map_or(base.bytes_per_s, mbps),
            total_pps: a.total_pps.unwrap_or(base.total_pps),
            total_bytes_per_s: a.total_mbps.map_or(base.total_bytes_per_s, mbps),
            ..base
        },
        session_limits: Limits::open(),
        exempt_local: !explicit && !a.limit_local,
        raw_echo: a.raw_echo || a.open_limits,
        max_tcp_conns: max_conns,
        timeouts: npt_server::Timeouts {
            idle: a.idle_timeout,
            io: a.io_timeout,
        },
        budget: npt_server::BudgetLimits {
            bytes_per_s: a.reply_mbps.map_or(budget.bytes_per_s, mbps),
            exempt_local: a.reply_mbps.is_none() && !a.limit_local,
            ..budget
        },
        // Bulk transfers of `--token` sessions: the open budget (strangers stay in `budget`).
        open_budget: npt_server::BudgetLimits {
            exempt_local: !a.limit_local,
            ..npt_server::BudgetLimits::open()
        },
        log_every: a.log_every,
        hop: hop_config(a)?,
        stamp: stamp_config(a)?,
    })
}

/// `--stamp`: the reflector's address, sequence mode and key.
fn stamp_config(a: &ServeArgs) -> anyhow::Result<Option<npt_server::stamp::StampConfig>> {
    let Some(text) = &a.stamp else {
        return Ok(None);
    };
    let addr: SocketAddr = text
        .parse()
        .map_err(|_| usage!("--stamp {text:?}: expected ADDR:PORT, e.g. 0.0.0.0:862"))?;
    let key = match &a.stamp_key {
        Some(k) => {
            Some(npt_wire::stamp::StampKey::from_hex(k).map_err(|e| usage!("--stamp-key: {e}"))?)
        }
        None => None,
    };
    Ok(Some(npt_server::stamp::StampConfig {
        addr,
        reflector: npt_server::stamp::reflect::ReflectorConfig {
            stateful: !a.stamp_stateless,
            key,
        },
    }))
}

/// `--max-conns`, or the default the open-file limit holds (raised to the hard limit first);
/// a value the limit cannot hold is a usage error (exit 2), not a silent stall later.
fn max_conns(a: &ServeArgs) -> anyhow::Result<usize> {
    use npt_server::fdlimit;
    let responders = 1 + usize::from(a.http.is_some());
    let soft = fdlimit::raise_nofile().map_or(u64::MAX, |l| l.soft);
    match a.max_conns {
        None => Ok(fdlimit::default_max_conns(soft, responders)),
        Some(0) => Err(usage!("--max-conns must be at least 1")),
        Some(n) => match fdlimit::check_max_conns(n, soft, responders) {
            Ok(()) => Ok(n),
            Err(most) => Err(usage!(
                "--max-conns {n}: the open-file limit ({soft}, `ulimit -n`) holds at most {most} connections per responder here"
            )),
        },
    }
}

pub fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&a)?;
    let hop = cfg.hop.as_ref().map(|h| h.allow.to_string());
    if cfg.hop.as_ref().is_some_and(|h| h.allow.is_empty()) {
        eprintln!("npt serve: --hop-agent without --hop-allow: every hop request is refused");
    }
    let stop = Arc::new(Stop::new());
    crate::execute::signals::install(&stop)?;
    let http_opts = http_options(&a, &cfg)?;
    let server = Server::start(cfg)?;
    let _metrics = match &a.metrics {
        Some(m) => Some(crate::flags::metrics::start_source(
            "serve",
            m,
            crate::cmd::serve::metrics::source(server.counters()),
        )?),
        None => None,
    };
    let quic = start_quic(&a, &server)?;
    let http = match http_opts {
        Some(mut o) => {
            let budget = server.reply_budget();
            o.reply_budget = Some(npt_server::http_server::ReplyBudgetHook(Arc::new(
                move |ip, n| budget.take(ip, n),
            )));
            Some(npt_server::http_server::spawn_http_server(&o)?)
        }
        None => None,
    };
    {
        let mut out = std::io::stdout().lock();
        for addr in server.local_addrs() {
            writeln!(out, "npt serve: listening on tcp+udp {addr}")?;
        }
        if let Some((addr, _)) = &http {
            let what = match (a.tls, a.http1_only) {
                (true, false) => "https (h2, http/1.1)",
                (true, true) => "https (http/1.1)",
                (false, false) => "http (http/1.1, h2c)",
                (false, true) => "http (http/1.1)",
            };
            writeln!(out, "npt serve: listening on {what} {addr}")?;
        }
        if let Some(q) = &quic {
            writeln!(out, "npt serve: listening on quic {}", q.local_addr())?;
        }
        if let Some(addr) = server.stamp_addr() {
            let how = match (a.stamp_stateless, a.stamp_key.is_some()) {
                (false, false) => "stateful, unauthenticated",
                (false, true) => "stateful, authenticated",
                (true, false) => "stateless, unauthenticated",
                (true, true) => "stateless, authenticated",
            };
            writeln!(out, "npt serve: listening on stamp {addr} ({how})")?;
        }
        out.flush()?;
    }
    // On stderr: stdout carries the ready lines, which scripts read up to the address they
    // want and then stop reading.
    if let Some(h) = &hop {
        eprintln!("npt serve: hop agent for --token clients, may measure: {h}");
    }
    while !stop.stopping() {
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("npt serve: stopping; {}", server.counters().line());
    if hop.is_some() {
        eprintln!("npt serve: stopping; {}", server.counters().hop.line());
    }
    if let Some((_, h)) = &http {
        eprintln!("npt serve: stopping; {}", h.counters().line());
    }
    drop(quic);
    drop(server);
    drop(http);
    Ok(ExitCode::SUCCESS)
}

/// `--quic`: the QUIC responder on the server's runtime, sharing its counters and token.
fn start_quic(
    a: &ServeArgs,
    server: &Server,
) -> anyhow::Result<Option<npt_server::quic::QuicServer>> {
    let Some(q) = &a.quic else { return Ok(None) };
    let addr: SocketAddr = q
        .parse()
        .map_err(|_| usage!("--quic {q:?}: expected ADDR:PORT, e.g. 0.0.0.0:7778"))?;
    let tls = match (&a.quic_cert, &a.quic_key) {
        (Some(cert), Some(key)) => npt_server::quic::QuicTls::Pem {
            cert: cert.clone(),
            key: key.clone(),
        },
        _ => npt_server::quic::QuicTls::SelfSigned,
    };
    let zero_rtt = match a.quic_0rtt.as_str() {
        "accept" => npt_server::quic::ZeroRtt::Accept,
        "reject" => npt_server::quic::ZeroRtt::Reject,
        _ => npt_server::quic::ZeroRtt::Off,
    };
    let qs = server.start_quic_0rtt(addr, tls, zero_rtt)?;
    if let Some(path) = &a.quic_cert_out {
        npt_result::write_atomic(path, qs.cert_pem().as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    Ok(Some(qs))
}
