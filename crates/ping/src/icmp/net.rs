//! The socket half of `npt ping icmp://`: opens an ICMP datagram socket, or a raw one when the
//! kernel refuses that, connected to the host's first address, and drives a
//! [`Session`] with it — attempts overlap when the timeout is longer than the interval, as a
//! UDP ping's do. Waits are sliced to at most 100 ms so a Ctrl-C is seen promptly.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use npt_client::source::Source;
use npt_client::target::{Proto, Target};
use npt_result::error::ErrorKind;
use npt_result::workload::Stop;
use npt_result::StopReason;
use socket2::{Domain, Protocol, Socket, Type};

use super::codec::{self, Echo, Family, Received, Unreachable};
use super::{IcmpConfig, SocketKind};
use crate::net::{check_stop, classify_io, dur_ns, flow_id, now_ns, OnEvent};
use crate::session::{Session, Tally};
use crate::PingError;

const SLICE: Duration = Duration::from_millis(100);

/// What a finished run measured, and how.
#[derive(Debug)]
pub struct Outcome {
    pub tally: Tally,
    /// The address pinged (the host's first, of the family `-4`/`-6` asked for).
    pub addr: SocketAddr,
    pub socket: SocketKind,
    pub stopped_by: StopReason,
}

/// The host's addresses, as any target's resolve (`-4`/`-6` applied); the port is not used.
pub fn resolve(host: &str, source: &Source) -> Result<Vec<SocketAddr>, PingError> {
    let t = Target {
        proto: Proto::Udp,
        host: host.to_string(),
        port: 1,
    };
    Ok(t.resolve_from(source)?)
}

/// An ICMP socket to `peer`: a datagram one where the kernel allows it, else raw.
pub fn open(peer: SocketAddr, source: &Source) -> Result<(UdpSocket, SocketKind), PingError> {
    let (domain, proto) = if peer.is_ipv4() {
        (Domain::IPV4, Protocol::ICMPV4)
    } else {
        (Domain::IPV6, Protocol::ICMPV6)
    };
    let (sock, kind) = match Socket::new(domain, Type::DGRAM, Some(proto)) {
        Ok(s) => (s, SocketKind::Datagram),
        Err(dgram) => match Socket::new(domain, Type::RAW, Some(proto)) {
            Ok(s) => (s, SocketKind::Raw),
            Err(raw) => {
                return Err(PingError::IcmpSocket(format!(
                    "icmp://: no ICMP socket: a datagram socket ({dgram}) needs the group in \
                     net.ipv4.ping_group_range (sysctl), a raw one ({raw}) root or CAP_NET_RAW"
                )))
            }
        },
    };
    source
        .prepare(&sock, peer, false)
        .map_err(PingError::Socket)?;
    // ICMP has no port: the kernel reads the address only.
    let to = SocketAddr::new(peer.ip(), 0);
    sock.connect(&to.into()).map_err(PingError::Socket)?;
    Ok((sock.into(), kind))
}

/// Pings the host's first address until the count is reached or `stop` says so.
// NO-PANIC: `recv` returns `n <= inb.len()`.
#[allow(clippy::indexing_slicing)]
pub fn run(cfg: &IcmpConfig, stop: &Stop, on: OnEvent) -> Result<Outcome, PingError> {
    let addr = *resolve(&cfg.host, &cfg.source)?
        .first()
        .ok_or_else(|| PingError::NoAddress(cfg.host.clone()))?;
    let (sock, kind) = open(addr, &cfg.source)?;
    let family = if addr.is_ipv4() {
        Family::V4
    } else {
        Family::V6
    };
    let clock = Instant::now();
    let mut session = Session::new(cfg.count, dur_ns(cfg.interval), dur_ns(cfg.timeout), 0);
    let token = flow_id();
    // A raw socket sees every ICMP message of the host: ours carry this identifier.
    let ident = (std::process::id() & 0xffff) as u16;
    let mut out = vec![0u8; cfg.size.max(codec::MIN_LEN)];
    let mut inb = vec![0u8; 65_536];
    let mut stopped_by = StopReason::Count;
    loop {
        if let Some(why) = check_stop(&mut session, stop) {
            stopped_by = why;
        }
        let now = now_ns(clock);
        for ev in session.expire(now) {
            on(&ev, addr);
        }
        if session.finished() {
            break;
        }
        if session.due().is_some_and(|d| now >= d) {
            let (seq, given_up) = session.on_sent(now);
            for ev in &given_up {
                on(ev, addr);
            }
            let echo = Echo {
                ident,
                token,
                seq,
                send_ts: now,
            };
            codec::encode_request(&mut out, family, &echo)
                .map_err(|e| PingError::Socket(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
            if let Err(e) = sock.send(&out) {
                if let Some(ev) = session.on_error(seq, classify_io(&e), format!("{addr}: {e}")) {
                    on(&ev, addr);
                }
            }
            continue;
        }
        let wait = session
            .next_wake()
            .map_or(SLICE, |w| Duration::from_nanos(w.saturating_sub(now)))
            .clamp(Duration::from_micros(100), SLICE);
        sock.set_read_timeout(Some(wait))
            .map_err(PingError::Socket)?;
        match sock.recv(&mut inb) {
            Ok(n) => {
                let t = now_ns(clock);
                let msg = match (kind, family) {
                    (SocketKind::Raw, Family::V4) => codec::strip_ipv4(&inb[..n]),
                    _ => Some(&inb[..n]),
                };
                let Some(msg) = msg else { continue };
                let ours = |e: &Echo| {
                    e.token == token && (kind == SocketKind::Datagram || e.ident == ident)
                };
                match codec::decode(msg, family) {
                    Received::Reply { echo, .. } if ours(&echo) => {
                        if let Some(ev) = session.on_reply(echo.seq, t) {
                            on(&ev, addr);
                        }
                    }
                    Received::Error { echo, what } if ours(&echo) => {
                        let detail = match what {
                            Unreachable::Unreachable(code) => {
                                format!("{addr}: destination unreachable (code {code})")
                            }
                            Unreachable::TimeExceeded => format!("{addr}: time exceeded"),
                        };
                        if let Some(ev) = session.on_error(echo.seq, ErrorKind::Unreachable, detail)
                        {
                            on(&ev, addr);
                        }
                    }
                    _ => {}
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => {
                // An error the kernel queued on the socket (a datagram socket's unreachable):
                // it answers for the oldest attempt.
                if let Some(seq) = session.oldest_pending() {
                    if let Some(ev) = session.on_error(seq, classify_io(&e), format!("{addr}: {e}"))
                    {
                        on(&ev, addr);
                    }
                }
            }
        }
    }
    Ok(Outcome {
        tally: session.tally,
        addr,
        socket: kind,
        stopped_by,
    })
}
