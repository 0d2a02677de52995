//! One UDP flow through a SOCKS5 relay, for the engines that send datagrams (the probe, bulk):
//! the association ([`crate::udp_associate`]), the request header that addresses the target —
//! built once, prefixed to every datagram — and the check that strips the relay's header from
//! each reply. The association lasts while the control connection is open, so the flow keeps
//! it for its life.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::connect::{target_for, udp_associate, Phases};
use crate::socks5::{udp_header, udp_payload_offset, Target};
use crate::{ProxyError, Via};

/// An open SOCKS5 UDP association addressing one target.
#[derive(Debug)]
pub struct SocksUdp {
    header: Vec<u8>,
    relay: SocketAddr,
    phases: Phases,
    /// The association lasts while this TCP connection is open.
    _control: TcpStream,
}

impl SocksUdp {
    /// Asks `via` for a UDP association to `host:port` (`addr` as resolved here; an
    /// unspecified `addr` lets a `socks5h://` proxy resolve `host`).
    pub fn open(
        via: &Via,
        host: &str,
        port: u16,
        addr: SocketAddr,
        timeout: Duration,
    ) -> Result<Self, ProxyError> {
        let assoc = udp_associate(via, timeout)?;
        let t = if addr.ip().is_unspecified() {
            target_for(via, host, port)?
        } else {
            Target::Addr(addr)
        };
        let mut header = vec![0u8; 3 + t.encoded_len()];
        let n = udp_header(&t, &mut header)?;
        header.truncate(n);
        Ok(SocksUdp {
            header,
            relay: assoc.relay,
            phases: assoc.phases,
            _control: assoc.control,
        })
    }

    /// The header every datagram to the relay starts with.
    pub fn header(&self) -> &[u8] {
        &self.header
    }

    /// The relay's UDP address: where the flow's socket sends.
    pub fn relay(&self) -> SocketAddr {
        self.relay
    }

    /// How long the proxy's connect, authentication and ASSOCIATE reply took.
    pub fn phases(&self) -> Phases {
        self.phases
    }

    /// The payload of datagram `d` from the relay (its header checked and skipped).
    pub fn payload<'a>(&self, d: &'a [u8]) -> Result<&'a [u8], ProxyError> {
        let at = udp_payload_offset(d)?;
        d.get(at..)
            .ok_or_else(|| ProxyError::Protocol("short SOCKS UDP datagram".into()))
    }
}

/// The bytes the relay's header adds to every datagram (RFC 1928 §7): 10 for an IPv4 target,
/// 22 for IPv6, 7 + the name's length for a name the proxy resolves — `addr` and `host` as
/// [`SocksUdp::open`] gets them (an unspecified `addr`: the proxy resolves `host`).
pub fn header_len(addr: SocketAddr, host: &str) -> usize {
    let t = if addr.ip().is_unspecified() {
        Target::Name(host.to_string(), addr.port())
    } else {
        Target::Addr(addr)
    };
    3 + t.encoded_len()
}

/// `host:port` / `[v6]:port` as the user wrote it → host and port (`addr`'s when there is none).
pub fn split_target(target: &str, addr: SocketAddr) -> (String, u16) {
    match target.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && p.parse::<u16>().is_ok() => (
            h.trim_start_matches('[').trim_end_matches(']').to_string(),
            p.parse().unwrap_or(addr.port()),
        ),
        _ => (addr.ip().to_string(), addr.port()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_split_as_written() {
        let a: SocketAddr = "192.0.2.1:7".parse().unwrap();
        assert_eq!(
            split_target("example.com:99", a),
            ("example.com".into(), 99)
        );
        assert_eq!(split_target("[::1]:5", a), ("::1".into(), 5));
        assert_eq!(split_target("nohost", a), ("192.0.2.1".into(), 7));
    }

    /// `header_len` is the length of the header `SocksUdp::open` builds.
    #[test]
    fn header_len_is_the_built_headers() {
        let mut buf = [0u8; 300];
        for a in ["192.0.2.1:7", "[2001:db8::1]:7"] {
            let addr: SocketAddr = a.parse().unwrap();
            let n = udp_header(&Target::Addr(addr), &mut buf).unwrap();
            assert_eq!(header_len(addr, "ignored"), n, "{a}");
        }
        let any: SocketAddr = "0.0.0.0:7".parse().unwrap();
        let name = Target::Name("example.com".into(), 7);
        let n = udp_header(&name, &mut buf).unwrap();
        assert_eq!(header_len(any, "example.com"), n);
    }
}
