//! ICMP and ICMPv6 echo messages, sans-IO: the request `npt ping icmp://` sends, the reply it
//! waits for, the error a router or host sends back instead, and the Internet checksum
//! (RFC 1071). Tested against fixed bytes; no socket here.
//!
//! ```text
//!  0               8               16                              31
//! +---------------+---------------+-------------------------------+
//! |     type      |     code      |           checksum            |
//! +---------------+---------------+-------------------------------+
//! |          identifier           |        sequence (low 16)      |
//! +-------------------------------+-------------------------------+
//! |                       token (this run's)                      |
//! +---------------------------------------------------------------+
//! |                  sequence (all 64 bits)                       |
//! |                                                               |
//! +---------------------------------------------------------------+
//! |                  send time (ns, the run's clock)              |
//! |                                                               |
//! +---------------------------------------------------------------+
//! |                  fill (zeros) up to the size                  |
//! ```
//!
//! Types: echo request 8 / reply 0 (ICMP), 128 / 129 (ICMPv6). The payload is ours and comes
//! back unchanged: the token tells this run's replies from anyone else's (a raw socket sees
//! every ICMP message; a datagram socket's identifier is the kernel's, not ours), the full
//! sequence number outlives the header's 16 bits. The ICMP checksum is ours to write; ICMPv6's
//! covers a pseudo-header with the addresses, so the kernel writes it (on raw and datagram
//! sockets alike) and this leaves it zero.

/// The ICMP header: type, code, checksum, identifier, sequence.
pub const HEADER_LEN: usize = 8;
/// The stamp after it: token, sequence, send time.
pub const STAMP_LEN: usize = 20;
/// The smallest request npt sends (header and stamp).
pub const MIN_LEN: usize = HEADER_LEN + STAMP_LEN;

/// Which ICMP: IPv4's or IPv6's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    V4,
    V6,
}

impl Family {
    fn request(self) -> u8 {
        match self {
            Family::V4 => 8,
            Family::V6 => 128,
        }
    }

    fn reply(self) -> u8 {
        match self {
            Family::V4 => 0,
            Family::V6 => 129,
        }
    }
}

/// What an echo request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Echo {
    /// The header's identifier (a datagram socket's kernel replaces it with its own).
    pub ident: u16,
    pub token: u32,
    pub seq: u64,
    pub send_ts: u64,
}

/// What a received message is, to a ping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// An echo reply: the identifier it came back with and the stamp of the request.
    Reply { ident: u16, echo: Echo },
    /// An error about one of our requests (destination unreachable, time exceeded): the
    /// request's stamp as the error quoted it, and what the error said.
    Error { echo: Echo, what: Unreachable },
    /// Anything else (our own request seen on a raw socket, someone else's ICMP, a short or
    /// corrupt message).
    Other,
}

/// The error a router or the host sent about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unreachable {
    /// Destination unreachable (no route, host, port or protocol; administratively
    /// prohibited), with its code.
    Unreachable(u8),
    /// Time (hop limit) exceeded in transit.
    TimeExceeded,
}

/// `buf` is shorter than [`MIN_LEN`].
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("an ICMP echo needs at least {MIN_LEN} bytes, got {0}")]
pub struct TooShort(pub usize);

/// Writes an echo request filling all of `buf`: header, stamp, zeros; the checksum (ICMP) or
/// zero in its place (ICMPv6, the kernel's).
// NO-PANIC: every index is below MIN_LEN, checked on entry.
#[allow(clippy::indexing_slicing)]
pub fn encode_request(buf: &mut [u8], family: Family, e: &Echo) -> Result<(), TooShort> {
    if buf.len() < MIN_LEN {
        return Err(TooShort(buf.len()));
    }
    buf.fill(0);
    buf[0] = family.request();
    buf[4..6].copy_from_slice(&e.ident.to_be_bytes());
    // The header holds the sequence's low 16 bits; the stamp holds all of it.
    let low = (e.seq & 0xffff) as u16;
    buf[6..8].copy_from_slice(&low.to_be_bytes());
    buf[8..12].copy_from_slice(&e.token.to_be_bytes());
    buf[12..20].copy_from_slice(&e.seq.to_be_bytes());
    buf[20..28].copy_from_slice(&e.send_ts.to_be_bytes());
    if family == Family::V4 {
        let c = checksum(buf);
        buf[2..4].copy_from_slice(&c.to_be_bytes());
    }
    Ok(())
}

/// The Internet checksum (RFC 1071) of `data`: the ones' complement of the ones' complement
/// sum of its 16-bit words (an odd last byte padded with zero). Over a message whose checksum
/// field holds its checksum, it is 0.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        if let [hi, lo] = w {
            sum += u32::from(u16::from_be_bytes([*hi, *lo]));
        }
    }
    if let [last] = words.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    // Folded: it fits 16 bits.
    !u16::try_from(sum).unwrap_or(u16::MAX)
}

/// Skips an IPv4 header (a raw IPv4 socket receives it; datagram and IPv6 sockets do not).
pub fn strip_ipv4(buf: &[u8]) -> Option<&[u8]> {
    let first = *buf.first()?;
    if first >> 4 != 4 {
        return None;
    }
    buf.get(usize::from(first & 0x0f) * 4..)
}

/// What the ICMP message `msg` (from its type on: no IP header) is to this ping.
pub fn decode(msg: &[u8], family: Family) -> Received {
    let (Some(&ty), Some(&code)) = (msg.first(), msg.get(1)) else {
        return Received::Other;
    };
    if family == Family::V4 && checksum(msg) != 0 {
        return Received::Other;
    }
    if ty == family.reply() {
        return match (ident(msg), stamp(msg)) {
            (Some(ident), Some(echo)) => Received::Reply {
                ident,
                echo: Echo { ident, ..echo },
            },
            _ => Received::Other,
        };
    }
    let what = match (family, ty) {
        (Family::V4, 3) | (Family::V6, 1) => Unreachable::Unreachable(code),
        (Family::V4, 11) | (Family::V6, 3) => Unreachable::TimeExceeded,
        _ => return Received::Other,
    };
    // The error quotes the request's IP packet after its own 8 bytes.
    let quoted = msg.get(HEADER_LEN..).and_then(|ip| match family {
        Family::V4 => strip_ipv4(ip),
        // The fixed IPv6 header; a request of ours carries no extension header.
        Family::V6 => ip.get(40..).filter(|_| ip.get(6) == Some(&58)),
    });
    match quoted {
        Some(q) if q.first() == Some(&family.request()) => match (ident(q), stamp(q)) {
            (Some(ident), Some(echo)) => Received::Error {
                echo: Echo { ident, ..echo },
                what,
            },
            _ => Received::Other,
        },
        _ => Received::Other,
    }
}

fn ident(msg: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes(msg.get(4..6)?.try_into().ok()?))
}

fn stamp(msg: &[u8]) -> Option<Echo> {
    let be8 = |r: std::ops::Range<usize>| -> Option<u64> {
        Some(u64::from_be_bytes(msg.get(r)?.try_into().ok()?))
    };
    Some(Echo {
        ident: 0,
        token: u32::from_be_bytes(msg.get(8..12)?.try_into().ok()?),
        seq: be8(12..20)?,
        send_ts: be8(20..28)?,
    })
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    const E: Echo = Echo {
        ident: 0x1234,
        token: 0xdead_beef,
        seq: 0x0102_0304_0506_0708,
        send_ts: 0x1111_2222_3333_4444,
    };

    /// An ICMP echo request of 32 bytes, by hand: type 8, code 0, the checksum worked out
    /// below, identifier 0x1234, sequence 0x0708 (the low 16 bits), then the stamp and zeros.
    const REQUEST_V4: [u8; 32] = [
        8, 0, 0x86, 0x67, 0x12, 0x34, 0x07, 0x08, // header
        0xde, 0xad, 0xbe, 0xef, // token
        1, 2, 3, 4, 5, 6, 7, 8, // sequence
        0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44, // send time
        0, 0, 0, 0, // fill
    ];

    #[test]
    fn a_request_is_its_golden_bytes() {
        // The checksum by hand: the 16-bit words (the checksum's own as zero) sum to 0x27996;
        // the carry folded in, 0x7996 + 2 = 0x7998; complemented, 0x8667.
        let mut buf = [0xffu8; 32];
        encode_request(&mut buf, Family::V4, &E).unwrap();
        assert_eq!(buf, REQUEST_V4);
        assert_eq!(
            checksum(&buf),
            0,
            "a message with its checksum sums to zero"
        );
        let mut v6 = [0u8; 32];
        encode_request(&mut v6, Family::V6, &E).unwrap();
        assert_eq!((v6[0], v6[2], v6[3]), (128, 0, 0), "the kernel's checksum");
        assert_eq!(v6[4..], REQUEST_V4[4..]);
        assert_eq!(
            encode_request(&mut [0u8; 27], Family::V4, &E),
            Err(TooShort(27))
        );
    }

    #[test]
    fn checksum_follows_rfc_1071() {
        // RFC 1071's example words 0001 f203 f4f5 f6f7 sum to ddf2 (with the carry), so the
        // checksum is its complement.
        assert_eq!(
            checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]),
            !0xddf2
        );
        assert_eq!(checksum(&[0xff]), !0xff00, "an odd byte is padded");
        assert_eq!(checksum(&[]), 0xffff);
    }

    /// The reply to [`REQUEST_V4`] as a host sends it: type 0 and the checksum adjusted by
    /// the 8 the type lost; the identifier a datagram socket's kernel chose.
    fn reply_v4(ident: u16) -> Vec<u8> {
        let mut r = REQUEST_V4.to_vec();
        r[0] = 0;
        r[4..6].copy_from_slice(&ident.to_be_bytes());
        r[2..4].copy_from_slice(&[0, 0]);
        let c = checksum(&r);
        r[2..4].copy_from_slice(&c.to_be_bytes());
        r
    }

    #[test]
    fn replies_decode_with_their_stamp_and_identifier() {
        let r = reply_v4(0x4242);
        assert_eq!(
            decode(&r, Family::V4),
            Received::Reply {
                ident: 0x4242,
                echo: Echo { ident: 0x4242, ..E }
            }
        );
        // Behind the IPv4 header a raw socket receives (20 bytes, IHL 5).
        let mut ip = vec![
            0x45, 0, 0, 52, 0, 0, 0, 0, 64, 1, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
        ];
        ip.extend_from_slice(&r);
        assert_eq!(strip_ipv4(&ip), Some(&r[..]));
        // A flipped bit fails the checksum; our own request, seen on a raw socket, is not a
        // reply; a short message is nothing.
        let mut bad = r.clone();
        bad[13] ^= 1;
        assert_eq!(decode(&bad, Family::V4), Received::Other);
        assert_eq!(decode(&REQUEST_V4, Family::V4), Received::Other);
        assert_eq!(decode(&r[..20], Family::V4), Received::Other);
        assert_eq!(decode(&[], Family::V6), Received::Other);
        let mut v6 = REQUEST_V4.to_vec();
        v6[0] = 129;
        assert!(matches!(
            decode(&v6, Family::V6),
            Received::Reply { echo, .. } if echo.seq == E.seq && echo.token == E.token
        ));
    }

    #[test]
    fn an_error_quoting_our_request_names_it() {
        // Destination unreachable (host, code 1): its header, then the request's IPv4 packet.
        let mut m = vec![3, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&[
            0x45, 0, 0, 52, 0, 0, 0, 0, 64, 1, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        m.extend_from_slice(&REQUEST_V4);
        let c = checksum(&m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        assert_eq!(
            decode(&m, Family::V4),
            Received::Error {
                echo: E,
                what: Unreachable::Unreachable(1)
            }
        );
        // ICMPv6 time exceeded: the quoted IPv6 header (next header 58) and the request.
        let mut m6 = vec![3, 0, 0, 0, 0, 0, 0, 0];
        let mut ip6 = [0u8; 40];
        ip6[0] = 0x60;
        ip6[6] = 58;
        m6.extend_from_slice(&ip6);
        let mut req6 = REQUEST_V4;
        req6[0] = 128;
        m6.extend_from_slice(&req6);
        assert_eq!(
            decode(&m6, Family::V6),
            Received::Error {
                echo: E,
                what: Unreachable::TimeExceeded
            }
        );
    }
}
