//! Proxy handshakes over a blocking socket, bounded by one deadline and timed phase by phase:
//! connect to the proxy, authenticate (SOCKS5 user/password), and the proxy's reply to
//! CONNECT or UDP ASSOCIATE. Callers that must not block for long run this on a thread of
//! their own or accept that a handshake holds their thread for at most the timeout.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::socks5::{self, Target};
use crate::{http_connect, ProxyError, Via, ViaKind};

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
    since.elapsed().as_nanos() as u64
}

fn connect_proxy(via: &Via, deadline: Instant) -> Result<(TcpStream, u64), ProxyError> {
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

/// Reads until `parse` has a whole answer, leaving any bytes after it in `buf`.
fn read_until<T>(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    deadline: Instant,
    phase: &'static str,
    mut parse: impl FnMut(&[u8]) -> Result<Option<(T, usize)>, ProxyError>,
) -> Result<T, ProxyError> {
    let mut chunk = [0u8; 1024];
    // Bounded: every pass reads at least one byte or fails, and the deadline is checked.
    for _ in 0..64 * 1024 {
        if let Some((v, used)) = parse(buf)? {
            buf.drain(..used);
            return Ok(v);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ProxyError::Timeout(phase));
        }
        s.set_read_timeout(Some(left))?;
        match s.read(&mut chunk) {
            Ok(0) => {
                return Err(ProxyError::Protocol(format!(
                    "the proxy closed the connection during {phase}"
                )))
            }
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(ProxyError::Timeout(phase))
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ProxyError::Protocol(format!(
        "endless answer during {phase}"
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

fn socks_handshake(
    s: &mut TcpStream,
    via: &Via,
    cmd: u8,
    target: &Target,
    deadline: Instant,
    phases: &mut Phases,
) -> Result<Target, ProxyError> {
    let mut out = Vec::with_capacity(64);
    let mut buf = Vec::with_capacity(64);
    let t = Instant::now();
    socks5::greeting(via.credentials().is_some(), &mut out);
    s.write_all(&out)?;
    let method = read_until(s, &mut buf, deadline, "method choice", socks5::parse_method)?;
    if method == socks5::METHOD_USERPASS {
        let (u, p) = via.credentials().ok_or_else(|| {
            ProxyError::AuthFailed("the proxy asks for a user name and password".into())
        })?;
        out.clear();
        socks5::auth_request(u, p, &mut out)?;
        s.write_all(&out)?;
        read_until(s, &mut buf, deadline, "authentication", |b| {
            Ok(socks5::parse_auth_reply(b)?.map(|n| ((), n)))
        })?;
    }
    phases.auth_ns = ns(t);
    let t = Instant::now();
    out.clear();
    socks5::request(cmd, target, &mut out)?;
    s.write_all(&out)?;
    let bound = read_until(s, &mut buf, deadline, "request reply", socks5::parse_reply)?;
    phases.reply_ns = ns(t);
    if !buf.is_empty() {
        return Err(ProxyError::Protocol(
            "the proxy sent data before the tunnel was open".into(),
        ));
    }
    Ok(bound)
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
    let (mut s, connect_ns) = connect_proxy(via, deadline)?;
    phases.proxy_connect_ns = connect_ns;
    match via.kind {
        ViaKind::Socks5 { .. } => {
            let target = target_for(via, host, port)?;
            socks_handshake(
                &mut s,
                via,
                socks5::CMD_CONNECT,
                &target,
                deadline,
                &mut phases,
            )?;
        }
        ViaKind::Http => {
            let authority = if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            let mut out = Vec::with_capacity(128);
            http_connect::request(&authority, via.credentials(), &mut out);
            let t = Instant::now();
            s.write_all(&out)?;
            let mut buf = Vec::new();
            read_until(&mut s, &mut buf, deadline, "CONNECT reply", |b| {
                Ok(http_connect::parse_response(b)?.map(|n| ((), n)))
            })?;
            phases.reply_ns = ns(t);
            if !buf.is_empty() {
                return Err(ProxyError::Protocol(
                    "the proxy sent data before the tunnel was open".into(),
                ));
            }
        }
    }
    s.set_read_timeout(None)?;
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
    let bound = socks_handshake(
        &mut s,
        via,
        socks5::CMD_UDP_ASSOCIATE,
        &any,
        deadline,
        &mut phases,
    )?;
    let mut relay = match bound {
        Target::Addr(a) => a,
        Target::Name(n, _) => {
            return Err(ProxyError::Protocol(format!(
                "the proxy named its UDP relay by name ({n:?}), not by address"
            )))
        }
    };
    if relay.ip().is_unspecified() {
        relay.set_ip(s.peer_addr()?.ip());
    }
    s.set_read_timeout(None)?;
    Ok(UdpAssociation {
        control: s,
        relay,
        phases,
    })
}
