//! The searching half of `npt serve --hop-agent` for `npt trace --mtu`: one MTU hop request
//! ([`npt_wire::hop::mtu`]) against the one address the agent checked, searched exactly as
//! `npt mtu` searches ([`crate::Config`]'s run), and each way's outcome in the reply's terms —
//! and back ([`direction`]), for the trace that reads the reply.
//!
//! The next hop is an `npt serve --token` in a relay chain, so the agent keys its probes with
//! **its own** `--token` first (the chain shares one secret, as for the UDP echo of
//! `npt_ping::agent`); a next hop that ignores the handshake (a serve without `--token`) is
//! searched without one after the handshake's timeout: its down answers are then never larger
//! than the requests (`capped_by_up`). The search's time is the request's timeout, and it sends
//! at most [`crate::search::MAX_SIZES`] × [`crate::search::TRIES`] datagrams each way.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use npt_client::target::{Proto, Target};
use npt_result::mtu::{MtuDirection, MtuSummary};
use npt_result::workload::{Stop, Workload};
use npt_wire::hop::mtu::{CAPPED_BY_UP, SETTLED, VERDICTS};
use npt_wire::hop::{HopRequest, MtuReply, MtuWay};

use crate::{Config, MtuError};

/// The agent's measurer for MTU requests, keyed with the agent's `--token` `secret`.
pub fn measurer(
    secret: Option<String>,
) -> impl Fn(&HopRequest, SocketAddr) -> MtuReply + Send + Sync + 'static {
    move |req, addr| search(req, addr, secret.as_deref())
}

/// Searches `addr` (a checked literal: nothing is resolved again) as `req` asks.
pub fn search(req: &HopRequest, addr: SocketAddr, secret: Option<&str>) -> MtuReply {
    let mut cfg = Config {
        target: Target {
            proto: Proto::Udp,
            host: addr.ip().to_string(),
            port: addr.port(),
        },
        max: Some(usize::from(req.size)).filter(|s| *s > 0),
        token: secret.map(str::to_string),
        timeout: Duration::from_micros(u64::from(req.timeout_us)),
        via: None,
    };
    match run_keyed(&mut cfg, &Arc::new(Stop::new())) {
        Ok(s) => MtuReply {
            up: way(&s.up),
            down: way(&s.down),
        },
        Err(e) => MtuReply {
            up: MtuWay::failed(error_kind(&e)),
            down: MtuWay::failed(error_kind(&e)),
        },
    }
}

/// Runs `cfg`'s search, keyed with its token when it has one; a far end that ignores the
/// handshake (a serve without `--token`) is searched without.
pub fn run_keyed(cfg: &mut Config, stop: &Arc<Stop>) -> Result<MtuSummary, MtuError> {
    let mut got = cfg.run(stop, &mut |_| {});
    if let Err(MtuError::Token(e)) = &got {
        if e.kind() == std::io::ErrorKind::TimedOut && !stop.stopping() {
            cfg.token = None;
            got = cfg.run(stop, &mut |_| {});
        }
    }
    got.map(|f| f.body.summary)
}

/// The error kind (of [`npt_wire::hop::ERROR_KINDS`]) a failed search is reported under.
pub fn error_kind(e: &MtuError) -> &'static str {
    match e {
        MtuError::Silent(_) => "timeout",
        MtuError::Token(io) => npt_client::auth::error_kind(io).name(),
        MtuError::Resolve(_) => "config",
        _ => "io",
    }
}

fn u16_of(v: Option<u32>) -> Option<u16> {
    v.map(|v| u16::try_from(v).unwrap_or(u16::MAX))
}

/// One way of a finished search in the reply's terms.
pub fn way(d: &MtuDirection) -> MtuWay {
    let verdict = VERDICTS
        .iter()
        .find(|v| **v == d.verdict)
        .copied()
        .unwrap_or("unreadable");
    let mut flags = 0;
    if d.settled {
        flags |= SETTLED;
    }
    if d.capped_by_up {
        flags |= CAPPED_BY_UP;
    }
    MtuWay {
        verdict: Ok(verdict),
        flags,
        limit_mtu: u16_of(d.icmp_mtu.or(d.local_mtu)),
        largest_datagram: u16_of(d.largest_datagram),
        smallest_lost: u16_of(d.smallest_lost),
        largest_fragment: u16_of(d.largest_fragment),
        sent: u16::try_from(d.sent).unwrap_or(u16::MAX),
        answered: u16::try_from(d.answered).unwrap_or(u16::MAX),
        lost_sizes: u8::try_from(d.lost_sizes).unwrap_or(u8::MAX),
        router: d.icmp_from.as_deref().and_then(|a| a.parse().ok()),
    }
}

/// A way of an agent's reply as `npt mtu`'s result says it (`headers`: the IP + UDP bytes under
/// a datagram toward the address measured); `Err(kind)` when the agent's search failed.
pub fn direction(w: &MtuWay, headers: u32) -> Result<MtuDirection, &'static str> {
    let verdict = w.verdict?;
    let mtu = w.limit_mtu.map(u32::from);
    Ok(MtuDirection {
        verdict: verdict.to_string(),
        largest_datagram: w.largest_datagram.map(u32::from),
        largest_packet: w.largest_datagram.map(|d| u32::from(d) + headers),
        smallest_lost: w.smallest_lost.map(u32::from),
        settled: w.flags & SETTLED != 0,
        icmp_mtu: mtu.filter(|_| verdict == "icmp"),
        icmp_from: w.router.map(|r| r.to_string()),
        local_mtu: mtu.filter(|_| verdict == "local"),
        largest_fragment: w.largest_fragment.map(u32::from),
        capped_by_up: w.flags & CAPPED_BY_UP != 0,
        sent: u32::from(w.sent),
        answered: u32::from(w.answered),
        lost_sizes: u32::from(w.lost_sizes),
        ..MtuDirection::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_way_travels_to_the_reply_and_back_as_the_result_says_it() {
        let d = MtuDirection {
            verdict: "icmp".into(),
            largest_datagram: Some(1372),
            largest_packet: Some(1400),
            smallest_lost: Some(1373),
            settled: true,
            icmp_mtu: Some(1400),
            icmp_from: Some("10.0.1.2".into()),
            sent: 14,
            answered: 11,
            lost_sizes: 2,
            ..MtuDirection::default()
        };
        let back = direction(&way(&d), 28).unwrap();
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&d).unwrap()
        );
        let local = MtuDirection {
            verdict: "local".into(),
            local_mtu: Some(1100),
            ..MtuDirection::default()
        };
        let back = direction(&way(&local), 28).unwrap();
        assert_eq!((back.local_mtu, back.icmp_mtu), (Some(1100), None));
        assert_eq!(
            direction(&MtuWay::failed("timeout"), 28).err(),
            Some("timeout")
        );
    }

    #[test]
    fn a_silent_next_hop_is_a_timeout_both_ways_within_the_bound() {
        let closed = {
            let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            s.local_addr().unwrap()
        };
        let req = HopRequest {
            proto: npt_wire::hop::HopProto::Mtu,
            host: closed.ip().to_string(),
            port: closed.port(),
            attempts: 1,
            interval_us: 0,
            timeout_us: 2_000_000,
            size: 0,
            tos: 0,
        };
        let t = std::time::Instant::now();
        let r = search(&req, closed, None);
        assert_eq!(
            (r.up.verdict, r.down.verdict),
            (Err("timeout"), Err("timeout"))
        );
        assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    }
}
