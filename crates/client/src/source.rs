//! Where a client's packets come from and how they are marked: the address family names
//! resolve to (`-4`/`-6`), the source address (`--bind ADDR`) and the IP TOS / IPv6 traffic
//! class byte (`--dscp`/`--tos`). Every engine that opens its own sockets takes one
//! [`Source`] and applies it with [`Source::prepare`] before it connects or sends, so the
//! kernel picks no other source and marks every packet (the SYN included).

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// An address family (`-4`, `-6`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    V4,
    V6,
}

impl Family {
    pub fn of(ip: IpAddr) -> Family {
        if ip.is_ipv4() {
            Family::V4
        } else {
            Family::V6
        }
    }

    /// `-4` or `-6`, as the flag is written.
    pub fn flag(self) -> &'static str {
        match self {
            Family::V4 => "-4",
            Family::V6 => "-6",
        }
    }
}

/// A client's source: none of it set is the kernel's own choice. As a result's config
/// records it: only what was asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Source {
    /// Only addresses of this family (names resolve to it, literals must be of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<Family>,
    /// The source address (port 0: the kernel picks the port).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind: Option<IpAddr>,
    /// The TOS / traffic class byte every packet carries (DSCP << 2 | ECN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
}

/// A resolved address list with nothing of the asked family.
#[derive(Debug, thiserror::Error)]
#[error("{flag}: {what} has no {family} address")]
pub struct NoAddressOfFamily {
    pub flag: &'static str,
    pub what: String,
    pub family: &'static str,
}

impl Source {
    /// Nothing asked: the kernel's choices.
    pub fn is_default(&self) -> bool {
        *self == Source::default()
    }

    /// The addresses of `addrs` this source may use, in order; an error (naming `-4`/`-6`)
    /// when none is left. `what` names the target in the error.
    pub fn pick(
        &self,
        what: &str,
        addrs: Vec<SocketAddr>,
    ) -> Result<Vec<SocketAddr>, NoAddressOfFamily> {
        let Some(f) = self.family else {
            return Ok(addrs);
        };
        let kept: Vec<SocketAddr> = addrs
            .into_iter()
            .filter(|a| Family::of(a.ip()) == f)
            .collect();
        if kept.is_empty() {
            return Err(NoAddressOfFamily {
                flag: f.flag(),
                what: what.to_string(),
                family: match f {
                    Family::V4 => "IPv4",
                    Family::V6 => "IPv6",
                },
            });
        }
        Ok(kept)
    }

    /// The local address a socket to `peer` binds: `--bind`'s, else the unspecified address
    /// of the peer's family; port 0.
    pub fn local_for(&self, peer: SocketAddr) -> SocketAddr {
        match self.bind {
            Some(ip) => SocketAddr::new(ip, 0),
            None if peer.is_ipv4() => (Ipv4Addr::UNSPECIFIED, 0).into(),
            None => (Ipv6Addr::UNSPECIFIED, 0).into(),
        }
    }

    /// Marks and binds `s` (a fresh socket for `peer`) before it connects or sends: the TOS
    /// byte (`IP_TOS`, or `IPV6_TCLASS` on an IPv6 socket) and the source address. A TCP
    /// socket is bound only with `--bind` (else `connect` picks, as always); `always_bind`
    /// binds a UDP socket to the unspecified address when there is none.
    pub fn prepare(
        &self,
        s: &socket2::Socket,
        peer: SocketAddr,
        always_bind: bool,
    ) -> io::Result<()> {
        if let Some(tos) = self.tos {
            set_tos(s, peer.is_ipv6(), tos)?;
        }
        if self.bind.is_some() || always_bind {
            let local = self.local_for(peer);
            s.bind(&local.into()).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot bind to {}: {e}", local.ip()))
            })?;
        }
        Ok(())
    }

    /// [`Source::prepare`] on a socket already made elsewhere (tokio's, std's).
    pub fn prepare_fd<S: std::os::fd::AsFd>(
        &self,
        s: &S,
        peer: SocketAddr,
        always_bind: bool,
    ) -> io::Result<()> {
        let r = socket2::SockRef::from(s);
        self.prepare(&r, peer, always_bind)
    }
}

impl Source {
    /// A blocking TCP connect to `peer` from this source, within `timeout`.
    pub fn connect_timeout(
        &self,
        peer: SocketAddr,
        timeout: std::time::Duration,
    ) -> io::Result<std::net::TcpStream> {
        if self.is_default() {
            return std::net::TcpStream::connect_timeout(&peer, timeout);
        }
        let s = socket2::Socket::new(
            socket2::Domain::for_address(peer),
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )?;
        self.prepare(&s, peer, false)?;
        s.connect_timeout(&peer.into(), timeout)?;
        Ok(s.into())
    }

    /// A UDP socket connected to `peer` from this source.
    pub fn udp_connected(&self, peer: SocketAddr) -> io::Result<std::net::UdpSocket> {
        let s = socket2::Socket::new(
            socket2::Domain::for_address(peer),
            socket2::Type::DGRAM,
            Some(socket2::Protocol::UDP),
        )?;
        self.prepare(&s, peer, true)?;
        s.connect(&peer.into())?;
        Ok(s.into())
    }

    /// A tokio TCP connect to `peer` from this source (marked and bound before the SYN).
    pub async fn connect_async(&self, peer: SocketAddr) -> io::Result<tokio::net::TcpStream> {
        if self.is_default() {
            return tokio::net::TcpStream::connect(peer).await;
        }
        let s = if peer.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        self.prepare_fd(&s, peer, false)?;
        s.connect(peer).await
    }
}

/// Sets the TOS byte (`IP_TOS`) or, on an IPv6 socket, the traffic class (`IPV6_TCLASS`; an
/// IPv6 socket that reaches IPv4-mapped peers takes `IP_TOS` too, when the kernel lets it).
pub fn set_tos(s: &socket2::Socket, ipv6: bool, tos: u8) -> io::Result<()> {
    if ipv6 {
        s.set_tclass_v6(u32::from(tos))?;
        let _ = s.set_tos(u32::from(tos));
        Ok(())
    } else {
        s.set_tos(u32::from(tos))
    }
}

/// Whether `ip` is an address of this host: a UDP socket binds to it.
pub fn is_local(ip: IpAddr) -> bool {
    std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_keeps_only_its_addresses() {
        let v4: SocketAddr = "127.0.0.1:7".parse().unwrap();
        let v6: SocketAddr = "[::1]:7".parse().unwrap();
        let s = Source {
            family: Some(Family::V6),
            ..Source::default()
        };
        assert_eq!(s.pick("localhost", vec![v4, v6]).unwrap(), vec![v6]);
        let e = s.pick("127.0.0.1", vec![v4]).unwrap_err().to_string();
        assert_eq!(e, "-6: 127.0.0.1 has no IPv6 address");
        assert_eq!(Source::default().pick("x", vec![v4]).unwrap(), vec![v4]);
    }

    #[test]
    fn a_prepared_socket_has_its_source_and_marking() {
        let peer: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let s = Source {
            bind: Some("127.0.0.2".parse().unwrap()),
            tos: Some(46 << 2),
            ..Source::default()
        };
        let sock = socket2::Socket::new(
            socket2::Domain::IPV4,
            socket2::Type::DGRAM,
            Some(socket2::Protocol::UDP),
        )
        .unwrap();
        s.prepare(&sock, peer, true).unwrap();
        assert_eq!(sock.tos().unwrap(), 46 << 2);
        let local = sock.local_addr().unwrap().as_socket().unwrap();
        assert_eq!(local.ip(), "127.0.0.2".parse::<IpAddr>().unwrap());
        assert!(is_local("127.0.0.1".parse().unwrap()));
        assert!(!is_local("192.0.2.1".parse().unwrap()));
    }
}
