//! Proxy handshakes over a blocking socket, bounded by one deadline and timed phase by phase:
//! connect to the proxy, authenticate (SOCKS5 user/password), and the proxy's reply to
//! CONNECT or UDP ASSOCIATE. Callers that must not block for long run this on a thread of
//! their own or accept that a handshake holds their thread for at most the timeout.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::handshake::{Handshake, Step};
use crate::socks5::{self, Target};
use crate::{ProxyError, Via, ViaKind};

/// How long each phase took, in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phases {
    /// TCP connect to the proxy.
    pub proxy_connect_ns: u64,
    /// SOCKS5 method choice and user/password exchange (0 for HTTP CONNECT).
    pub auth_ns: u64,
    /// From sending CONNECT / UDP ASSOCIATE to the proxy's success reply.
    pub reply_ns: u64,
}

impl Phases {
    pub fn total_ns(&self) -> u64 {
        self.proxy_connect_ns + self.auth_ns + self.reply_ns
    }

    /// The phases as a setup block's layers, in [`Via::setup_plan`]'s order: the connect to
    /// the proxy, then its SOCKS5 greeting and CONNECT (or UDP ASSOCIATE, `udp`), or its HTTP
    /// CONNECT.
    pub fn layers(&self, via: &Via, udp: bool) -> Vec<(npt_result::setup::Layer, u64)> {
        use npt_result::setup::Layer;
        let mut v = vec![(Layer::TcpConnect, self.proxy_connect_ns)];
        match via.kind {
            ViaKind::Socks5 { .. } => {
                v.push((Layer::Socks5Greeting, self.auth_ns));
                let cmd = if udp {
                    Layer::Socks5UdpAssociate
                } else {
                    Layer::Socks5Connect
                };
                v.push((cmd, self.reply_ns));
            }
            ViaKind::Http => v.push((Layer::HttpConnect, self.reply_ns)),
        }
        v
    }
}

/// A UDP ASSOCIATE in force: datagrams go to `relay` with a SOCKS UDP header; the association
/// lasts as long as `control` stays open.
#[derive(Debug)]
pub struct UdpAssociation {
    pub control: TcpStream,
    pub relay: SocketAddr,
    pub phases: Phases,
}

fn ns(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

pub(crate) fn connect_proxy(via: &Via, deadline: Instant) -> Result<(TcpStream, u64), ProxyError> {
    let authority = via.authority();
    let err = |source| ProxyError::Connect {
        addr: authority.clone(),
        source,
    };
    let addrs: Vec<SocketAddr> = authority.to_socket_addrs().map_err(err)?.collect();
    let mut last = None;
    for a in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let t = Instant::now();
        match TcpStream::connect_timeout(&a, left) {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok((s, ns(t)));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(err(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::TimedOut, "no address answered in time")
    })))
}

/// Runs `h` to completion over a blocking socket before `deadline`, timing its phases.
fn drive(
    s: &mut TcpStream,
    mut h: Handshake,
    deadline: Instant,
    phases: &mut Phases,
) -> Result<Option<Target>, ProxyError> {
    let mut chunk = [0u8; 1024];
    let mut t = Instant::now();
    // Bounded: every pass writes or reads at least one byte, or fails; the deadline is checked.
    for _ in 0..64 * 1024 {
        if !h.output().is_empty() {
            s.write_all(h.output())?;
            h.written();
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ProxyError::Timeout(h.phase()));
        }
        s.set_read_timeout(Some(left))?;
        let n = match s.read(&mut chunk) {
            Ok(0) => {
                return Err(ProxyError::Protocol(format!(
                    "the proxy closed the connection during {}",
                    h.phase()
                )))
            }
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(ProxyError::Timeout(h.phase()))
            }
            Err(e) => return Err(e.into()),
        };
        // NO-PANIC: `read` returns at most the buffer's length.
        #[allow(clippy::indexing_slicing)]
        let got = &chunk[..n];
        match h.on_read(got)? {
            Step::NeedMore => {}
            Step::Authenticated => {
                phases.auth_ns = ns(t);
                t = Instant::now();
            }
            Step::Done { bound } => {
                phases.reply_ns = ns(t);
                s.set_read_timeout(None)?;
                return Ok(bound);
            }
        }
    }
    Err(ProxyError::Protocol(format!(
        "endless answer during {}",
        h.phase()
    )))
}

/// The address a SOCKS5 request names: a name for `socks5h://`, else resolved here.
pub fn target_for(via: &Via, host: &str, port: u16) -> Result<Target, ProxyError> {
    if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(Target::Addr(SocketAddr::new(ip, port)));
    }
    if via.kind == (ViaKind::Socks5 { remote_dns: true }) {
        return Ok(Target::Name(host.to_string(), port));
    }
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(Target::Addr)
        .ok_or_else(|| {
            ProxyError::Usage(format!(
                "cannot resolve {host:?} (use socks5h:// to let the proxy resolve it)"
            ))
        })
}

/// A TCP connection to `host:port` through `via`, ready to carry the application's bytes.
pub fn tcp_connect(
    via: &Via,
    host: &str,
    port: u16,
    timeout: Duration,
) -> Result<(TcpStream, Phases), ProxyError> {
    let deadline = Instant::now() + timeout;
    let mut phases = Phases::default();
    let h = Handshake::connect(via, host, port)?;
    let (mut s, connect_ns) = connect_proxy(via, deadline)?;
    phases.proxy_connect_ns = connect_ns;
    drive(&mut s, h, deadline, &mut phases)?;
    Ok((s, phases))
}

/// A SOCKS5 UDP ASSOCIATE. A relay address of 0.0.0.0 / :: means "the proxy's own address".
pub fn udp_associate(via: &Via, timeout: Duration) -> Result<UdpAssociation, ProxyError> {
    if via.kind == ViaKind::Http {
        return Err(ProxyError::Usage(
            "an HTTP proxy cannot carry UDP: use socks5:// for udp:// targets".into(),
        ));
    }
    let deadline = Instant::now() + timeout;
    let mut phases = Phases::default();
    let (mut s, connect_ns) = connect_proxy(via, deadline)?;
    phases.proxy_connect_ns = connect_ns;
    // The client's UDP address is not known yet: all zeros, as RFC 1928 allows.
    let any = Target::Addr(SocketAddr::from(([0, 0, 0, 0], 0)));
    let h = Handshake::socks(via, socks5::CMD_UDP_ASSOCIATE, any);
    let bound = drive(&mut s, h, deadline, &mut phases)?;
    let mut relay = match bound {
        Some(Target::Addr(a)) => a,
        other => {
            return Err(ProxyError::Protocol(format!(
                "the proxy gave no address for its UDP relay ({other:?})"
            )))
        }
    };
    if relay.ip().is_unspecified() {
        relay.set_ip(s.peer_addr()?.ip());
    }
    Ok(UdpAssociation {
        control: s,
        relay,
        phases,
    })
}
