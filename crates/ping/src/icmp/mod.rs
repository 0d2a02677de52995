//! `npt ping icmp://HOST`: the ICMP echo RTT of a host, beside the TCP connect and UDP echo of
//! the other kinds — what `ping` itself measures, and what a forwarding table's "direct" column
//! is usually read from. Answered by the target host's kernel (no npt there, no port), so it
//! says nothing of a forwarder's user-space cost: compare it with `udp://` through the path.
//!
//! The echoes go over an unprivileged ICMP datagram socket (`SOCK_DGRAM, IPPROTO_ICMP`, which
//! the kernel allows when the caller's group is in `net.ipv4.ping_group_range`, for ICMPv6
//! too) where it can, else a raw socket (root or `CAP_NET_RAW`); the result says which
//! (`config.socket`, and its `note`). On a datagram socket the kernel chooses the identifier
//! and hands back only replies with it; on a raw socket every ICMP message from the host
//! arrives, and ours are told apart by identifier and by the token in the payload.
//!
//! [`codec`] is the sans-IO message format; [`net`] drives a [`crate::session::Session`] (the
//! same sequence, timeout, late/duplicate bookkeeping and tally as every ping kind) with the
//! socket; [`IcmpPing`] is the workload the cli runs, whose body is the same `kind = "ping"`
//! result, `proto = "icmp"`.

pub mod codec;
pub mod net;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use npt_result::packets::PacketLine;
use npt_result::ping::PingBody;
use npt_result::stats::{PingMeta, Stats};
use npt_result::workload::{Finished, Progress, Stop, Workload};
use npt_stats::Snapshot;

use crate::session::Event;
use crate::workload::{self, OnAttempt};
use crate::PingError;

/// The scheme of an ICMP target.
pub const SCHEME: &str = "icmp://";

/// Whether `target` names an ICMP ping (`icmp://HOST`).
pub fn is_icmp(target: &str) -> bool {
    target
        .get(..SCHEME.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(SCHEME))
}

/// `icmp://HOST` or `icmp://[V6]`: the host (no port: ICMP has none).
pub fn parse_host(target: &str) -> Result<String, PingError> {
    let bad = || PingError::BadIcmpTarget(target.to_string());
    if !is_icmp(target) {
        return Err(bad());
    }
    let rest = target
        .get(SCHEME.len()..)
        .unwrap_or("")
        .trim_end_matches('/');
    let host = match rest.strip_prefix('[') {
        Some(r) => r.strip_suffix(']').ok_or_else(bad)?,
        None if rest.contains(':') && rest.parse::<std::net::Ipv6Addr>().is_err() => {
            return Err(bad())
        }
        None => rest,
    };
    if host.is_empty() || host.contains(['/', '[', ']', ' ']) {
        return Err(bad());
    }
    Ok(host.to_string())
}

/// Which socket the echoes went over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SocketKind {
    /// `SOCK_DGRAM` + `IPPROTO_ICMP(V6)`: unprivileged, within `net.ipv4.ping_group_range`.
    Datagram,
    /// `SOCK_RAW`: root or `CAP_NET_RAW`.
    Raw,
}

impl SocketKind {
    pub fn name(self) -> &'static str {
        match self {
            SocketKind::Datagram => "datagram",
            SocketKind::Raw => "raw",
        }
    }

    /// The result's note: what answered, over which socket.
    pub fn note(self) -> String {
        let how = match self {
            SocketKind::Datagram => {
                "an unprivileged ICMP datagram socket (net.ipv4.ping_group_range)"
            }
            SocketKind::Raw => "a raw ICMP socket (root or CAP_NET_RAW)",
        };
        format!(
            "ICMP echo over {how}: answered by the target host's kernel, it says nothing of a \
             forwarder's user-space cost or of a port behind it"
        )
    }
}

/// Everything one `npt ping icmp://HOST` needs.
#[derive(Clone, Debug)]
pub struct IcmpConfig {
    /// `icmp://HOST` as given.
    pub target: String,
    pub host: String,
    /// Attempts to make; `None`: until stopped.
    pub count: Option<u64>,
    pub interval: Duration,
    pub timeout: Duration,
    /// The ICMP message's size in bytes, its 8-byte header included (at least
    /// [`codec::MIN_LEN`]); the IP header is not counted.
    pub size: usize,
    /// `-4`/`-6`, `--bind`, `--dscp`.
    pub source: npt_client::source::Source,
}

/// An ICMP ping run: the config and what sees every settled attempt.
pub struct IcmpPing<'a> {
    pub cfg: IcmpConfig,
    on_attempt: OnAttempt<'a>,
}

impl<'a> IcmpPing<'a> {
    pub fn new(cfg: IcmpConfig, on_attempt: impl FnMut(&Event, SocketAddr) + 'a) -> IcmpPing<'a> {
        IcmpPing {
            cfg,
            on_attempt: Box::new(on_attempt),
        }
    }
}

impl Workload for IcmpPing<'_> {
    type Body = PingBody;
    type Error = PingError;

    fn config(&self) -> serde_json::Value {
        let cfg = &self.cfg;
        serde_json::json!({
            "target": cfg.target,
            "proto": "icmp",
            "count": cfg.count,
            "interval_s": cfg.interval.as_secs_f64(),
            "timeout_s": cfg.timeout.as_secs_f64(),
            "size": cfg.size,
        })
    }

    fn length(&self) -> Option<npt_result::workload::Length> {
        workload::length(self.cfg.count, self.cfg.interval, self.cfg.timeout)
    }

    fn run(
        &mut self,
        stop: &Arc<Stop>,
        no_intervals: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<Finished<PingBody>, PingError> {
        self.run_logged(stop, no_intervals, &mut |_| {})
    }

    const PACKETS: bool = true;

    fn run_logged(
        &mut self,
        stop: &Arc<Stop>,
        _no_intervals: &mut dyn FnMut(&Progress<'_>),
        on_packet: &mut dyn FnMut(&PacketLine),
    ) -> Result<Finished<PingBody>, PingError> {
        let cfg = &self.cfg;
        let (out, started, ended) = workload::timed(&mut self.on_attempt, on_packet, |each| {
            net::run(cfg, stop, each)
        })?;
        let meta = PingMeta {
            target: self.cfg.target.clone(),
            proto: "icmp".to_string(),
            addresses: vec![out.addr.ip().to_string()],
            measured_from: None,
            answered_by: Some(npt_result::ping::answered_by::HOST.to_string()),
            setup: None,
        };
        let mut body = out.tally.summarize(&meta);
        body.note = Some(out.socket.note());
        let mut done = Finished::new(body, started, ended, out.stopped_by, Snapshot::new());
        done.decided
            .insert("socket".into(), out.socket.name().into());
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_icmp_target_is_a_host_without_a_port() {
        assert!(is_icmp("ICMP://h") && !is_icmp("udp://h:7") && !is_icmp("icm"));
        assert_eq!(parse_host("icmp://127.0.0.1").unwrap(), "127.0.0.1");
        assert_eq!(parse_host("icmp://[::1]").unwrap(), "::1");
        assert_eq!(parse_host("icmp://::1").unwrap(), "::1");
        assert_eq!(parse_host("icmp://example.net/").unwrap(), "example.net");
        for bad in [
            "icmp://",
            "icmp://h:7",
            "icmp://[::1",
            "icmp://a b",
            "udp://h:7",
        ] {
            let e = parse_host(bad).unwrap_err().to_string();
            assert!(e.contains("icmp://HOST"), "{bad}: {e}");
        }
    }
}
