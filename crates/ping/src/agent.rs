//! The measuring half of `npt serve --hop-agent`: one hop request ([`npt_wire::hop`]) against
//! the one address the agent checked, measured exactly as `npt ping` measures (this crate's
//! [`crate::net::run`]), as one sample per attempt. The server calls it on a blocking thread.
//!
//! A UDP echo goes to a responder that, in a relay chain, is itself an `npt serve --token`
//! (every hop agent has one) and answers only sealed packets of a keyed session. So the agent
//! does the keyed handshake with **its own** `--token` first: the chain is assumed to share one
//! secret. Its cost is bounded and counted in the request's budget: the handshake must finish
//! within the request's timeout and sends at most [`HS_PER_STEP`] messages per step (Hello,
//! Auth: 4 × 96 bytes at most); the agent's bounds count a UDP request's time as attempts ×
//! interval + 2 × timeout (`npt_server::hop_agent::HopLimits::check`). A target that answers the
//! Hello but not the secret (its `--token` is another) fails every attempt under `auth`; one
//! that answers no Hello at all (a serve without `--token` ignores handshakes) is echoed
//! without, after that timeout.

use std::net::SocketAddr;
use std::time::Duration;

use npt_result::error::ErrorKind;
use npt_result::workload::Stop;
use npt_wire::frame::HEADER_LEN;
use npt_wire::hop::{HopProto, HopRequest, Sample};

use crate::session::Event;
use crate::{Config, Handshake, PingError, Proto, QuicTrust, Target};

/// Handshake messages an agent sends per step (a lost Hello or Auth is repeated once).
pub const HS_PER_STEP: u32 = 2;

/// The UDP datagram size of a request that leaves it to the agent (`size = 0`).
pub const DEFAULT_SIZE: usize = 64;

/// The ping configuration a request stands for, aimed at `addr` (a literal: nothing is
/// resolved again, so what is measured is what was checked). A QUIC handshake accepts any
/// certificate: the agent measures its time, and sends nothing that needs the server trusted.
pub fn config(req: &HopRequest, addr: SocketAddr) -> Config {
    config_with(req, addr, None)
}

/// [`config`] for an agent with `--token` `secret`: a UDP echo does the keyed handshake with
/// it, within the request's timeout (module doc).
pub fn config_with(req: &HopRequest, addr: SocketAddr, secret: Option<&str>) -> Config {
    let proto = match req.proto {
        HopProto::Tcp => Proto::Tcp,
        // An MTU or marking request never reaches a ping (the agent hands it to its reader).
        HopProto::Udp | HopProto::Mtu | HopProto::Mark => Proto::Udp,
        HopProto::Quic => Proto::Quic,
    };
    let size = match usize::from(req.size) {
        0 => DEFAULT_SIZE,
        n => n.max(HEADER_LEN),
    };
    let timeout = Duration::from_micros(u64::from(req.timeout_us));
    Config {
        target: Target {
            proto,
            host: addr.ip().to_string(),
            port: addr.port(),
        },
        count: Some(u64::from(req.attempts)),
        interval: Duration::from_micros(u64::from(req.interval_us)),
        timeout,
        size,
        raw: false,
        token: secret.filter(|_| proto == Proto::Udp).map(str::to_string),
        handshake: Handshake {
            bound: npt_client::auth::UdpBound {
                timeout,
                per_step: HS_PER_STEP,
            },
            plain_if_silent: true,
        },
        trust: QuicTrust::Insecure,
        via: None,
        echo: false,
        setup: false,
        source: Default::default(),
    }
}

/// Measures `req` against `addr`: one sample per attempt, in order. An attempt that never
/// settled counts as a timeout; a failure to start at all fails every attempt under its kind.
pub fn measure(req: &HopRequest, addr: SocketAddr) -> Vec<Sample> {
    measure_with(req, addr, None)
}

/// What `npt serve --token S --hop-agent` measures with: [`measure_with`] its secret.
pub fn measurer(
    secret: Option<String>,
) -> impl Fn(&HopRequest, SocketAddr) -> Vec<Sample> + Send + Sync + 'static {
    move |req, addr| measure_with(req, addr, secret.as_deref())
}

/// [`measure`] by an agent with `--token` `secret` (module doc).
pub fn measure_with(req: &HopRequest, addr: SocketAddr, secret: Option<&str>) -> Vec<Sample> {
    let cfg = config_with(req, addr, secret);
    let n = usize::from(req.attempts);
    let mut out: Vec<Option<Sample>> = vec![None; n];
    let stop = Stop::new();
    let ran = crate::net::run(&cfg, &stop, &mut |ev, _| {
        let (seq, s) = match ev {
            Event::Reply { seq, rtt_ns, .. } => (*seq, Sample::Rtt(*rtt_ns)),
            Event::Error { seq, kind, .. } => (*seq, Sample::failed(kind.name())),
            // The hop protocol's kinds: the server refused the attempt.
            Event::Refused { seq, .. } => (*seq, Sample::failed("refused")),
            Event::Late { .. } => return,
        };
        let slot = usize::try_from(seq)
            .ok()
            .and_then(|s| s.checked_sub(1))
            .and_then(|i| out.get_mut(i));
        if let Some(slot) = slot {
            slot.get_or_insert(s);
        }
    });
    if let Err(e) = ran {
        return vec![Sample::failed(start_error_kind(&e).name()); n];
    }
    out.into_iter()
        .map(|s| s.unwrap_or(Sample::Failed("timeout")))
        .collect()
}

/// The kind a run that could not start fails its attempts under.
pub fn start_error_kind(e: &PingError) -> ErrorKind {
    match e {
        PingError::Auth(_, io) if npt_client::auth::is_secret_refused(io) => ErrorKind::Auth,
        PingError::Socket(io) | PingError::Resolve(_, io) | PingError::Auth(_, io) => {
            crate::net::classify_io(io)
        }
        PingError::Quic(_) | PingError::IcmpSocket(_) => ErrorKind::Local,
        PingError::BadTarget(_)
        | PingError::BadIcmpTarget(_)
        | PingError::NoAddress(_)
        | PingError::Family(_) => ErrorKind::Io,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(proto: HopProto, attempts: u16) -> HopRequest {
        HopRequest {
            proto,
            host: "ignored.example".into(),
            port: 1,
            attempts,
            interval_us: 10_000,
            timeout_us: 500_000,
            size: 0,
            tos: 0,
        }
    }

    #[test]
    fn a_request_becomes_the_ping_it_stands_for() {
        let a: SocketAddr = "[::1]:7777".parse().unwrap();
        let c = config(&req(HopProto::Quic, 7), a);
        assert_eq!(
            c.target.to_string(),
            "quic://[::1]:7777",
            "the address, not the name"
        );
        assert_eq!(c.count, Some(7));
        assert_eq!(c.interval, Duration::from_millis(10));
        assert_eq!(c.timeout, Duration::from_millis(500));
        assert_eq!(c.size, DEFAULT_SIZE);
        assert!(matches!(c.trust, QuicTrust::Insecure));
        let mut r = req(HopProto::Udp, 1);
        r.size = 20;
        assert_eq!(config(&r, a).size, HEADER_LEN, "at least a frame header");
    }

    #[test]
    fn every_attempt_gets_a_sample_over_loopback() {
        let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let got = measure(&req(HopProto::Tcp, 3), open.local_addr().unwrap());
        assert_eq!(got.len(), 3);
        assert!(
            got.iter().all(|s| matches!(s, Sample::Rtt(ns) if *ns > 0)),
            "{got:?}"
        );
        let got = measure(&req(HopProto::Tcp, 2), closed);
        assert_eq!(got, vec![Sample::Failed("refused"); 2]);
    }
}
