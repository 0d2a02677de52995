//! `npt setup URL [--via PROXY] [--tls 1.2|1.3] [--resume] [-c N]`: what each layer of a
//! connection's setup costs, in milliseconds and in round trips of the path, beside what its
//! protocol needs, with a flag where it took more. Flags become the engine's
//! [`npt_setup::Config`]; [`execute`] does the rest. Exit 1 when no attempt set every layer
//! up, or a layer is flagged; 2 for a bad flag.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use npt_result::setup::SetupBody;
use npt_result::Document;
use npt_setup::{Config, Scheme, TlsVersion};

use crate::execute::{execute, Options, RunCommand};
use crate::usage;
use crate::usage::parse_duration;

#[derive(Args, Debug)]
pub struct SetupArgs {
    /// What to set up: tcp://HOST:PORT (TCP connect), http://HOST:PORT (and GET /),
    /// https://HOST:PORT (and TLS) — against `npt serve --http` (with --tls) or any HTTP/1.1
    /// server — quic://HOST:PORT (`npt serve --quic`: the handshake and one echo), or
    /// udp://HOST:PORT (`npt serve`'s UDP port: through --via socks5://, the UDP ASSOCIATE,
    /// then one echo).
    #[arg(value_name = "URL")]
    pub target: String,
    #[command(flatten)]
    pub via: crate::flags::via::ViaArgs,
    /// The TLS version of https:// (1.2: two round trips, 1.3: one).
    #[arg(long, value_name = "VERSION", default_value = "1.3", value_parser = ["1.2", "1.3"])]
    pub tls: String,
    /// Resume the session from a ticket (one uncounted connection fetches it first); over
    /// QUIC also send the request in 0-RTT, and say whether the server accepted it.
    #[arg(long)]
    pub resume: bool,
    /// Fresh connections to measure.
    #[arg(short = 'c', long, value_name = "N", default_value_t = 10)]
    pub count: u32,
    /// The most one connection's setup may take.
    #[arg(long, value_name = "DUR", default_value = "5s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// The name sent in TLS (SNI) and the Host header [default: the URL's host].
    #[arg(long, value_name = "NAME")]
    pub server_name: Option<String>,
    #[command(flatten)]
    pub output: crate::flags::output::OutputArgs,
}

pub fn config(a: &SetupArgs) -> anyhow::Result<Config> {
    let (scheme, rest) = a.target.split_once("://").ok_or_else(|| {
        usage!(
            "{}: expected tcp://, http://, https:// or quic://HOST:PORT",
            a.target
        )
    })?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "tcp" => Scheme::Tcp,
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        "quic" => Scheme::Quic,
        "udp" => Scheme::Udp,
        other => {
            return Err(usage!(
                "{}: unsupported scheme {other:?} (tcp, http, https, quic or udp)",
                a.target
            ))
        }
    };
    let hostport = rest.split('/').next().unwrap_or_default();
    let (host, port) = split(hostport, scheme)
        .ok_or_else(|| usage!("{}: expected {}://HOST:PORT", a.target, scheme.name()))?;
    let via = a.via.resolve(scheme == Scheme::Udp)?;
    if via.is_some() && scheme == Scheme::Quic {
        return Err(usage!(
            "--via: QUIC goes over UDP, which a SOCKS5 or HTTP CONNECT tunnel does not set up \
             per connection; measure quic:// directly"
        ));
    }
    if a.resume && !matches!(scheme, Scheme::Https | Scheme::Quic) {
        return Err(usage!(
            "--resume: only https:// and quic:// have sessions to resume"
        ));
    }
    if a.tls != "1.3" && scheme != Scheme::Https {
        return Err(usage!(
            "--tls: only https:// has a TLS version to choose (QUIC is TLS 1.3)"
        ));
    }
    if a.count == 0 || a.count > 10_000 {
        return Err(usage!("--count {}: from 1 to 10000", a.count));
    }
    if a.timeout.is_zero() || a.timeout > Duration::from_secs(600) {
        return Err(usage!(
            "--timeout {:?}: more than 0 and at most 600 s",
            a.timeout
        ));
    }
    Ok(Config {
        scheme,
        server_name: a.server_name.clone().unwrap_or_else(|| host.clone()),
        host,
        port,
        via,
        tls: if a.tls == "1.2" {
            TlsVersion::V12
        } else {
            TlsVersion::V13
        },
        resume: a.resume,
        count: a.count,
        timeout: a.timeout,
    })
}

/// `host:port`, `[v6]:port`, or a host alone for http (80) and https (443).
fn split(s: &str, scheme: Scheme) -> Option<(String, u16)> {
    let (host, port) = if let Some(r) = s.strip_prefix('[') {
        let (h, after) = r.split_once(']')?;
        (h, after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match (port, scheme) {
        (Some(p), _) => p.parse::<u16>().ok().filter(|p| *p != 0)?,
        (None, Scheme::Http) => 80,
        (None, Scheme::Https) => 443,
        (None, _) => return None,
    };
    (!host.is_empty()).then(|| (host.to_string(), port))
}

pub fn run(a: SetupArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&a)?;
    let o = Options::new(&a.output);
    o.check()?;
    execute(cfg, o)
}

impl RunCommand for Config {
    fn banner(&self) -> Option<String> {
        let via = self
            .via
            .as_ref()
            .map(|v| format!(" via {v}"))
            .unwrap_or_default();
        Some(format!(
            "SETUP {}{via}: {} fresh connections{}",
            self.target(),
            self.count,
            if self.resume { ", resumed" } else { "" }
        ))
    }

    fn render(out: &mut dyn Write, doc: &Document<SetupBody>) -> std::io::Result<()> {
        npt_report::text::write_setup(out, &doc.body)
    }

    fn failed(body: &SetupBody) -> Option<&'static str> {
        if body.summary.completed == 0 {
            Some("no connection set every layer up (the report says why)")
        } else if body.summary.flagged > 0 {
            Some("a layer cost more round trips than its protocol needs")
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::testing::{self, flags};

    fn cfg(args: &[&str]) -> anyhow::Result<Config> {
        config(&flags::<SetupArgs>(args)?)
    }

    #[test]
    fn targets_and_bad_flags() {
        let c = cfg(&["https://10.0.0.2:8443", "--tls", "1.2", "--resume"]).unwrap();
        assert_eq!(
            (c.scheme, c.tls, c.resume, c.port),
            (Scheme::Https, TlsVersion::V12, true, 8443)
        );
        assert_eq!(cfg(&["https://example.net/x"]).unwrap().port, 443);
        assert_eq!(cfg(&["quic://[::1]:7778"]).unwrap().host, "::1");
        for (args, field) in [
            (&["sctp://h:1"][..], "unsupported scheme"),
            (
                &["udp://h:1", "--via", "http://p:3128"][..],
                "HTTP proxy cannot carry UDP",
            ),
            (&["quic://h"][..], "quic://HOST:PORT"),
            (&["quic://h:1", "--via", "socks5://p:1080"][..], "--via"),
            (&["tcp://h:1", "--resume"][..], "--resume"),
            (&["quic://h:1", "--tls", "1.2"][..], "--tls"),
            (&["tcp://h:1", "-c", "0"][..], "--count"),
            (&["tcp://h:1", "--timeout", "0s"][..], "--timeout"),
        ] {
            let m = testing::usage_msg(cfg(args));
            assert!(m.contains(field), "{args:?}: {m}");
        }
    }
}
