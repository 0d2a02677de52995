//! `npt serve`: starts the responders and waits for Ctrl-C.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use npt_engine::probe::driver::Control;
use npt_server::{Limits, ServeConfig, Server};

use crate::usage;

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
    /// Only answer clients that send this secret (probe --token). Disables raw echo.
    #[arg(long, value_name = "SECRET")]
    pub token: Option<String>,
    /// UDP packets per second allowed from one source address.
    #[arg(long, value_name = "PPS", default_value_t = 500_000.0)]
    pub source_pps: f64,
    /// UDP payload megabits per second allowed from one source address.
    #[arg(long, value_name = "MBPS", default_value_t = 2000.0)]
    pub source_mbps: f64,
    /// TCP connections served at once.
    #[arg(long, value_name = "N", default_value_t = 65_536)]
    pub max_conns: usize,
    /// Also serve HTTP on this address: `/`, `/bytes/N`, `/delay/MS`, `/status/CODE`, POST
    /// echo; HTTP/1.1 + h2c (or h2 and http/1.1 by ALPN with --tls).
    #[arg(long = "http", value_name = "ADDR:PORT")]
    pub http: Option<String>,
    /// HTTPS on the --http address (self-signed certificate unless --cert/--key).
    #[arg(long, requires = "http")]
    pub tls: bool,
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
    /// Write the QUIC certificate (PEM) to this file, for `npt run --ca FILE`.
    #[arg(long, value_name = "FILE", requires = "quic")]
    pub quic_cert_out: Option<std::path::PathBuf>,
    /// Serve the responder's counters in OpenMetrics text at http://ADDR/metrics (Prometheus).
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
}

/// `--http`: the HTTP responder's options, if asked for.
fn http_options(a: &ServeArgs) -> anyhow::Result<Option<npt_http::ServerOptions>> {
    let Some(h) = &a.http else { return Ok(None) };
    let addr: SocketAddr = h
        .parse()
        .map_err(|_| usage!("--http {h:?}: expected ADDR:PORT, e.g. 0.0.0.0:8080"))?;
    let mut o = npt_http::ServerOptions::new(addr);
    o.tls = a.tls;
    o.cert = a.cert.clone();
    o.key = a.key.clone();
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
    if a.source_pps.is_nan() || a.source_pps <= 0.0 {
        return Err(usage!("--source-pps must be positive"));
    }
    if a.source_mbps.is_nan() || a.source_mbps <= 0.0 {
        return Err(usage!("--source-mbps must be positive"));
    }
    if a.max_conns == 0 {
        return Err(usage!("--max-conns must be at least 1"));
    }
    if matches!(&a.token, Some(t) if t.is_empty()) {
        return Err(usage!("--token must not be empty"));
    }
    Ok(ServeConfig {
        listen,
        token: a.token.as_deref().map(npt_wire::frame::token_from_secret),
        limits: Limits {
            pps: a.source_pps,
            bytes_per_s: a.source_mbps * 1e6 / 8.0,
            ..Limits::default()
        },
        max_tcp_conns: a.max_conns,
    })
}

pub fn run(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&a)?;
    let control = Arc::new(Control::default());
    crate::signals::install(&control)?;
    let http_opts = http_options(&a)?;
    let server = Server::start(cfg)?;
    let _metrics = match &a.metrics {
        Some(m) => Some(crate::metrics::start_source(
            "serve",
            m,
            crate::serve_metrics::source(server.counters()),
        )?),
        None => None,
    };
    let quic = start_quic(&a, &server)?;
    let http = match &http_opts {
        Some(o) => Some(npt_http::spawn_http_server(o)?),
        None => None,
    };
    {
        let mut out = std::io::stdout().lock();
        for addr in server.local_addrs() {
            writeln!(out, "npt serve: listening on tcp+udp {addr}")?;
        }
        if let Some((addr, _)) = &http {
            let what = if a.tls {
                "https (h2, http/1.1)"
            } else {
                "http (http/1.1, h2c)"
            };
            writeln!(out, "npt serve: listening on {what} {addr}")?;
        }
        if let Some(q) = &quic {
            writeln!(out, "npt serve: listening on quic {}", q.local_addr())?;
        }
        out.flush()?;
    }
    while control.signals.load(Ordering::SeqCst) == 0 {
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!("npt serve: stopping; {}", server.counters().line());
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
    let token = a.token.as_deref().map(npt_wire::frame::token_from_secret);
    let qs = npt_server::quic::start_quic(&server.runtime(), addr, tls, token, server.counters())?;
    if let Some(path) = &a.quic_cert_out {
        npt_report::write_atomic(path, qs.cert_pem().as_bytes())
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    Ok(Some(qs))
}
