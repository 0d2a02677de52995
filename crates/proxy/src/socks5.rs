//! SOCKS5 (RFC 1928) with username/password authentication (RFC 1929), as a sans-IO codec:
//! functions that write requests into a buffer and parse replies from the bytes read so far
//! (`Ok(None)` = need more bytes). No socket, no clock; golden-byte tests below.
//!
//! ```text
//! greeting         +----+----------+----------+
//!                  |VER | NMETHODS | METHODS  |   VER = 5; 0x00 no auth, 0x02 user/pass
//!                  +----+----------+----------+
//! method choice    |VER | METHOD |               0xFF: no acceptable method
//! auth (RFC 1929)  |VER=1| ULEN | UNAME | PLEN | PASSWD |  → |VER=1| STATUS | (0 = ok)
//! request          |VER | CMD | RSV | ATYP | DST.ADDR | DST.PORT |  CMD 1 CONNECT, 3 UDP ASSOCIATE
//! reply            |VER | REP | RSV | ATYP | BND.ADDR | BND.PORT |  REP 0 = succeeded
//! UDP datagram     |RSV (2) | FRAG | ATYP | DST.ADDR | DST.PORT | DATA |
//! ATYP: 1 IPv4 (4 bytes), 3 domain (1 length byte + name), 4 IPv6 (16 bytes); ports big-endian
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::ProxyError;

pub const VERSION: u8 = 5;
pub const METHOD_NONE: u8 = 0x00;
pub const METHOD_USERPASS: u8 = 0x02;
pub const METHOD_UNACCEPTABLE: u8 = 0xFF;
pub const CMD_CONNECT: u8 = 1;
pub const CMD_UDP_ASSOCIATE: u8 = 3;

/// Where a request is going: an address, or a name the proxy resolves (`socks5h://`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Addr(SocketAddr),
    Name(String, u16),
}

impl Target {
    /// Bytes this address takes in a request or UDP header (ATYP + address + port).
    pub fn encoded_len(&self) -> usize {
        1 + match self {
            Target::Addr(SocketAddr::V4(_)) => 4,
            Target::Addr(SocketAddr::V6(_)) => 16,
            Target::Name(n, _) => 1 + n.len(),
        } + 2
    }

    // NO-PANIC: `out.len() >= need = encoded_len()` is checked first, and every range below ends
    // at most at `encoded_len()` for its variant (`rest + 2 == need`).
    #[allow(clippy::indexing_slicing)]
    fn encode(&self, out: &mut [u8]) -> Result<usize, ProxyError> {
        let need = self.encoded_len();
        if out.len() < need {
            return Err(ProxyError::Protocol(format!(
                "buffer of {} bytes for a {need}-byte address",
                out.len()
            )));
        }
        let (port, rest) = match self {
            Target::Addr(SocketAddr::V4(a)) => {
                out[0] = 1;
                out[1..5].copy_from_slice(&a.ip().octets());
                (a.port(), 5)
            }
            Target::Addr(SocketAddr::V6(a)) => {
                out[0] = 4;
                out[1..17].copy_from_slice(&a.ip().octets());
                (a.port(), 17)
            }
            Target::Name(n, port) => {
                let len = u8::try_from(n.len())
                    .ok()
                    .filter(|&l| l > 0)
                    .ok_or_else(|| ProxyError::Usage(format!("host name {n:?}: 1..255 bytes")))?;
                out[0] = 3;
                out[1] = len;
                out[2..2 + n.len()].copy_from_slice(n.as_bytes());
                (*port, 2 + n.len())
            }
        };
        out[rest..rest + 2].copy_from_slice(&port.to_be_bytes());
        Ok(need)
    }
}

/// Parses ATYP + address + port at the start of `b`: the address and the bytes it took.
/// `Ok(None)`: more bytes are needed.
fn parse_addr(b: &[u8]) -> Result<Option<(Target, usize)>, ProxyError> {
    let Some((&atyp, rest)) = b.split_first() else {
        return Ok(None);
    };
    // The address field: 4 or 16 bytes, or a length byte and that many name bytes.
    let addr_len = match atyp {
        1 => 4,
        4 => 16,
        3 => match rest.first() {
            Some(&n) => 1 + usize::from(n),
            None => return Ok(None),
        },
        other => {
            return Err(ProxyError::Protocol(format!(
                "unknown SOCKS address type {other}"
            )))
        }
    };
    let Some((addr, rest)) = rest.split_at_checked(addr_len) else {
        return Ok(None);
    };
    let Some(port) = rest.first_chunk::<2>() else {
        return Ok(None);
    };
    let port = u16::from_be_bytes(*port);
    let t = match atyp {
        1 => <[u8; 4]>::try_from(addr)
            .ok()
            .map(|o| Target::Addr(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(o)), port))),
        4 => <[u8; 16]>::try_from(addr)
            .ok()
            .map(|o| Target::Addr(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(o)), port))),
        _ => addr
            .get(1..)
            .map(|n| Target::Name(String::from_utf8_lossy(n).into_owned(), port)),
    };
    // `addr` has exactly the length its type calls for, so `t` is always `Some`.
    let t = t.ok_or_else(|| ProxyError::Protocol(format!("bad SOCKS address type {atyp}")))?;
    Ok(Some((t, 1 + addr_len + 2)))
}

/// The greeting: the methods we can do (user/pass only when we have credentials).
pub fn greeting(with_credentials: bool, out: &mut Vec<u8>) {
    if with_credentials {
        out.extend_from_slice(&[VERSION, 2, METHOD_NONE, METHOD_USERPASS]);
    } else {
        out.extend_from_slice(&[VERSION, 1, METHOD_NONE]);
    }
}

/// The server's method choice.
pub fn parse_method(b: &[u8]) -> Result<Option<(u8, usize)>, ProxyError> {
    let [ver, method, ..] = *b else {
        return Ok(None);
    };
    if ver != VERSION {
        return Err(ProxyError::Protocol(format!(
            "not a SOCKS5 server (version byte {ver})"
        )));
    }
    match method {
        METHOD_NONE | METHOD_USERPASS => Ok(Some((method, 2))),
        METHOD_UNACCEPTABLE => Err(ProxyError::AuthFailed(
            "the proxy accepts none of our methods (it wants credentials, or other ones)".into(),
        )),
        m => Err(ProxyError::Protocol(format!(
            "the proxy chose method {m}, which was not offered"
        ))),
    }
}

/// RFC 1929 username/password request.
pub fn auth_request(user: &str, pass: &str, out: &mut Vec<u8>) -> Result<(), ProxyError> {
    let (u, p) = (user.as_bytes(), pass.as_bytes());
    let (Ok(ulen @ 1..), Ok(plen)) = (u8::try_from(u.len()), u8::try_from(p.len())) else {
        return Err(ProxyError::Usage(
            "SOCKS5 user name must be 1..255 bytes and password at most 255".into(),
        ));
    };
    out.push(1);
    out.push(ulen);
    out.extend_from_slice(u);
    out.push(plen);
    out.extend_from_slice(p);
    Ok(())
}

pub fn parse_auth_reply(b: &[u8]) -> Result<Option<usize>, ProxyError> {
    let [ver, status, ..] = *b else {
        return Ok(None);
    };
    if ver != 1 {
        return Err(ProxyError::Protocol(format!(
            "bad auth reply version {ver}"
        )));
    }
    if status != 0 {
        return Err(ProxyError::AuthFailed(format!(
            "the proxy rejected the user name or password (status {status})"
        )));
    }
    Ok(Some(2))
}

/// A CONNECT or UDP ASSOCIATE request.
pub fn request(cmd: u8, target: &Target, out: &mut Vec<u8>) -> Result<(), ProxyError> {
    out.extend_from_slice(&[VERSION, cmd, 0]);
    let start = out.len();
    out.resize(start + target.encoded_len(), 0);
    // `start <= out.len()` after the resize; an empty slice would be refused by `encode`.
    target.encode(out.get_mut(start..).unwrap_or_default())?;
    Ok(())
}

/// What a reply code means, in words (RFC 1928 section 6).
pub fn reply_words(code: u8) -> &'static str {
    match code {
        0 => "succeeded",
        1 => "general SOCKS server failure",
        2 => "connection not allowed by ruleset",
        3 => "network unreachable",
        4 => "host unreachable",
        5 => "connection refused by the target",
        6 => "TTL expired",
        7 => "command not supported",
        8 => "address type not supported",
        _ => "unassigned reply code",
    }
}

/// The reply to a request: the bound address (for UDP ASSOCIATE, where datagrams go).
pub fn parse_reply(b: &[u8]) -> Result<Option<(Target, usize)>, ProxyError> {
    let [ver, code, _, ref rest @ ..] = *b else {
        return Ok(None);
    };
    if rest.is_empty() {
        return Ok(None);
    }
    if ver != VERSION {
        return Err(ProxyError::Protocol(format!("bad reply version {ver}")));
    }
    if code != 0 {
        return Err(ProxyError::Refused {
            code,
            words: reply_words(code),
        });
    }
    Ok(parse_addr(rest)?.map(|(t, n)| (t, 3 + n)))
}

/// Writes the UDP request header for `target` at the start of `out`; returns its length.
/// Hot path: no allocation.
pub fn udp_header(target: &Target, out: &mut [u8]) -> Result<usize, ProxyError> {
    let Some((head, rest)) = out.split_first_chunk_mut::<3>() else {
        return Err(ProxyError::Protocol("buffer too small".into()));
    };
    *head = [0, 0, 0];
    Ok(3 + target.encode(rest)?)
}

/// Where the payload of a relayed UDP datagram starts (header checked, no allocation).
/// Fragments (FRAG != 0) are refused: npt never sends them.
pub fn udp_payload_offset(b: &[u8]) -> Result<usize, ProxyError> {
    let [_, _, frag, ref rest @ ..] = *b else {
        return Err(ProxyError::Protocol("short SOCKS UDP datagram".into()));
    };
    if rest.is_empty() {
        return Err(ProxyError::Protocol("short SOCKS UDP datagram".into()));
    }
    if frag != 0 {
        return Err(ProxyError::Protocol("fragmented SOCKS UDP datagram".into()));
    }
    match parse_addr(rest)? {
        Some((_, n)) => Ok(3 + n),
        None => Err(ProxyError::Protocol("short SOCKS UDP datagram".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> Target {
        Target::Addr(s.parse().unwrap())
    }

    #[test]
    fn golden_handshake_bytes() {
        let mut g = Vec::new();
        greeting(false, &mut g);
        assert_eq!(g, [5, 1, 0]);
        g.clear();
        greeting(true, &mut g);
        assert_eq!(g, [5, 2, 0, 2]);
        let mut a = Vec::new();
        auth_request("bob", "pw", &mut a).unwrap();
        assert_eq!(a, [1, 3, b'b', b'o', b'b', 2, b'p', b'w']);
        let mut r = Vec::new();
        request(CMD_CONNECT, &v4("10.1.2.3:7777"), &mut r).unwrap();
        assert_eq!(r, [5, 1, 0, 1, 10, 1, 2, 3, 0x1E, 0x61]);
        r.clear();
        request(CMD_CONNECT, &Target::Name("ex.org".into(), 80), &mut r).unwrap();
        assert_eq!(
            r,
            [5, 1, 0, 3, 6, b'e', b'x', b'.', b'o', b'r', b'g', 0, 80]
        );
        r.clear();
        request(CMD_UDP_ASSOCIATE, &v4("0.0.0.0:0"), &mut r).unwrap();
        assert_eq!(r, [5, 3, 0, 1, 0, 0, 0, 0, 0, 0]);
        r.clear();
        request(
            CMD_CONNECT,
            &Target::Addr("[::1]:443".parse().unwrap()),
            &mut r,
        )
        .unwrap();
        let mut want = vec![5, 1, 0, 4];
        want.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        want.extend_from_slice(&[1, 0xBB]);
        assert_eq!(r, want);
    }

    #[test]
    fn replies_parse_incrementally_and_errors_are_in_words() {
        assert_eq!(parse_method(&[5]).unwrap(), None);
        assert_eq!(parse_method(&[5, 0]).unwrap(), Some((0, 2)));
        assert!(matches!(
            parse_method(&[5, 0xFF]),
            Err(ProxyError::AuthFailed(_))
        ));
        assert!(matches!(
            parse_method(&[4, 0]),
            Err(ProxyError::Protocol(_))
        ));
        assert_eq!(parse_auth_reply(&[1, 0]).unwrap(), Some(2));
        assert!(matches!(
            parse_auth_reply(&[1, 1]),
            Err(ProxyError::AuthFailed(_))
        ));
        let ok = [5, 0, 0, 1, 127, 0, 0, 1, 0x04, 0x38];
        for cut in 0..ok.len() {
            assert_eq!(parse_reply(&ok[..cut]).unwrap(), None, "cut at {cut}");
        }
        assert_eq!(parse_reply(&ok).unwrap(), Some((v4("127.0.0.1:1080"), 10)));
        let e = parse_reply(&[5, 2, 0, 1, 0, 0, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(e.kind().name(), "proxy_denied");
        assert!(e.to_string().contains("not allowed by ruleset"), "{e}");
        assert_eq!(
            parse_reply(&[5, 5, 0, 1]).unwrap_err().kind().name(),
            "proxy_target_refused"
        );
        assert_eq!(
            parse_reply(&[5, 7, 0, 1]).unwrap_err().kind().name(),
            "proxy_unsupported"
        );
        assert!(
            parse_reply(&[5, 0, 0, 9, 0]).is_err(),
            "unknown address type"
        );
    }

    #[test]
    fn udp_header_round_trip_without_allocation() {
        let mut buf = [0u8; 64];
        let n = udp_header(&v4("192.0.2.7:9"), &mut buf).unwrap();
        assert_eq!(&buf[..n], &[0, 0, 0, 1, 192, 0, 2, 7, 0, 9]);
        buf[n..n + 3].copy_from_slice(b"abc");
        assert_eq!(udp_payload_offset(&buf[..n + 3]).unwrap(), n);
        assert!(
            udp_payload_offset(&[0, 0, 1, 1, 0, 0, 0, 0, 0, 0]).is_err(),
            "fragment"
        );
        assert!(udp_payload_offset(&[0, 0, 0, 1, 1]).is_err(), "short");
        assert!(udp_header(&v4("1.2.3.4:5"), &mut [0u8; 5]).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A cheap xorshift stream: every prefix of every buffer goes through every parser.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            let mut b = [0u8; 24];
            for v in b.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *v = (x % 7) as u8; // small values hit the interesting codes
            }
            b[0] = if x & 1 == 0 { 5 } else { b[0] };
            for cut in 0..b.len() {
                let _ = parse_method(&b[..cut]);
                let _ = parse_auth_reply(&b[..cut]);
                let _ = parse_reply(&b[..cut]);
                let _ = udp_payload_offset(&b[..cut]);
            }
        }
    }
}
