//! The hop agent's request and reply (`npt serve --hop-agent`, `npt ping --from`): a client
//! that passed the keyed handshake asks the server to measure an RTT from where the server
//! runs — a TCP connect, a UDP echo or a QUIC handshake to a target, N times — and the server
//! answers with one sample per attempt.
//!
//! Both travel as ordinary frames ([`crate::frame`], kinds `HopRequest` and `HopReply`) on a
//! stream; the header is sealed as every frame of a session is, and the payload ends with a
//! body tag ([`crate::auth::BODY_TAG_LEN`], see `auth/body.rs`) because here the payload is
//! the message. Integers are big-endian. Request payload:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------+---------------+-------------------------------+
//! |  hop version  |  proto 1..=3  |   attempts (1..=MAX_ATTEMPTS) |  0
//! +---------------+---------------+-------------------------------+
//! |           interval between attempts, µs                       |  4
//! +---------------------------------------------------------------+
//! |           timeout of one attempt, µs                          |  8
//! +-------------------------------+-------------------------------+
//! |          target port          |  UDP datagram size (0 = 64)   | 12
//! +---------------+---------------+-------------------------------+
//! |  host length  |  TOS (mark)   |         reserved (0)          | 16
//! +---------------+---------------+-------------------------------+
//! |           host: a name or an address literal, 1..=255 bytes   | 20
//! +---------------------------------------------------------------+
//! |           zero padding, so that the request is at least as    |
//! |           long as the reply it asks for                       |
//! +---------------------------------------------------------------+
//! |           body tag, 16 bytes                                  | len - 16
//! +---------------------------------------------------------------+
//! ```
//!
//! proto: 1 TCP connect, 2 UDP echo (framed, against an npt responder), 3 QUIC handshake,
//! 4 a path-MTU search each way against an `npt serve` ([`mtu`]: its fields, and its reply
//! of two way records instead of samples), 5 a marking read each way: UDP echoes sent with the
//! TOS byte at offset 17 (0 for every other proto) against an `npt serve` ([`mark`]: its reply
//! of two way records).
//! Reply payload (only when the header's `status` is [`status::OK`]; a refusal is the bare
//! 48-byte header with the reason in `status`):
//!
//! ```text
//! +---------------+---------------+-------------------------------+
//! |  hop version  |     proto     |   samples that follow, n      |  0
//! +---------------+---------------+-------------------------------+
//! | family 0/4/6  |  reserved (0) |   port measured               |  4
//! +---------------+---------------+-------------------------------+
//! |           address measured, 16 bytes (IPv4: the first 4)      |  8
//! +---------------------------------------------------------------+
//! |  n samples of 12 bytes: outcome (0 = answered, else an error  | 24
//! |  kind of [`ERROR_KINDS`]), 3 bytes 0, RTT in ns (0 if failed) |
//! +---------------------------------------------------------------+
//! |           body tag, 16 bytes                                  |
//! +---------------------------------------------------------------+
//! ```
//!
//! **A reply is never larger than its request**: [`request_frame`] pads the request to the
//! length of the reply it asks for, [`reply_frame`] refuses to build a larger one, so a hop
//! agent cannot amplify anything sent to it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::auth::{AuthError, BODY_TAG_LEN};
use crate::frame::HEADER_LEN;
use crate::WireError;

mod frames;
pub mod mark;
pub mod mtu;
mod reader;
pub use frames::{open_reply, open_request, reply_frame, request_frame};
pub use mark::{MarkReply, MarkWay};
pub use mtu::{MtuReply, MtuWay};
use reader::Reader;

/// The hop message version this build speaks.
pub const HOP_VERSION: u8 = 1;
/// Attempts one request may ask for (an agent may allow fewer).
pub const MAX_ATTEMPTS: u16 = 100;
/// The longest host name or literal a request carries.
pub const MAX_HOST_LEN: usize = 255;
/// Request payload before the host.
pub const REQUEST_FIXED: usize = 20;
/// Reply payload before the samples.
pub const REPLY_FIXED: usize = 24;
/// One sample in a reply.
pub const SAMPLE_LEN: usize = 12;
/// The longest hop request frame an agent reads: a longer one is not a hop request.
pub const MAX_REQUEST_LEN: usize = 4096;

/// The error kinds a failed attempt is reported under: the one vocabulary of npt's results,
/// in the order of their codes (code = index + 1; 0 is an answered attempt). A kind outside
/// it travels as `io`. `auth` (code 10): the target answered the agent's `--token` handshake
/// but not with its secret (the target's `npt serve --token` has another).
pub const ERROR_KINDS: [&str; 10] = [
    "refused",
    "reset",
    "closed",
    "timeout",
    "unreachable",
    "local",
    "tls",
    "protocol",
    "io",
    "auth",
];

/// Why an agent did not measure: the `status` of a bare `HopReply` header.
pub mod status {
    pub const OK: u32 = 0;
    /// The target is not within the agent's `--hop-allow`.
    pub const NOT_ALLOWED: u32 = 1;
    /// This session asked more often than the agent allows.
    pub const RATE_LIMITED: u32 = 2;
    /// The agent as a whole is at its request rate or its measurements in flight.
    pub const BUSY: u32 = 3;
    /// Out of the agent's bounds (attempts, interval, timeout, size, total time), malformed,
    /// or shorter than the reply it asks for.
    pub const BAD_REQUEST: u32 = 4;
    /// The server is not a hop agent (no `--hop-agent`).
    pub const DISABLED: u32 = 5;
    /// The agent could not resolve the target's name.
    pub const UNRESOLVED: u32 = 6;

    /// What a status means, for messages.
    pub fn text(s: u32) -> &'static str {
        match s {
            OK => "ok",
            NOT_ALLOWED => "the target is not within the agent's --hop-allow",
            RATE_LIMITED => "rate-limited: this session asked too often",
            BUSY => "the agent is busy (its request rate or measurements in flight)",
            BAD_REQUEST => "the request is out of the agent's bounds or malformed",
            DISABLED => "the server is not a hop agent (no --hop-agent)",
            UNRESOLVED => "the agent cannot resolve the target's name",
            _ => "unknown refusal",
        }
    }
}

/// Why hop bytes could not be encoded or decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HopError {
    #[error(transparent)]
    Wire(#[from] WireError),
    #[error("unsupported hop message version {0}")]
    BadVersion(u8),
    #[error("unknown hop protocol {0}")]
    BadProto(u8),
    #[error("attempts must be 1..={MAX_ATTEMPTS}, got {0}")]
    BadAttempts(u16),
    #[error("the host must be 1..={MAX_HOST_LEN} bytes of printable text")]
    BadHost,
    #[error("padding or reserved bytes are not zero")]
    BadPadding,
    #[error("unknown sample outcome {0}")]
    BadOutcome(u8),
    #[error("unknown address family {0}")]
    BadFamily(u8),
    #[error("{count} samples do not make a reply of {len} payload bytes")]
    BadCount { count: u16, len: usize },
    #[error("a reply of {reply} bytes would be larger than its request of {request}")]
    TooLarge { reply: usize, request: usize },
    #[error("not a hop reply to this request")]
    NotOurs,
    #[error("body tag: {0}")]
    Auth(AuthError),
}

/// What an attempt measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum HopProto {
    Tcp = 1,
    Udp = 2,
    Quic = 3,
    Mtu = 4,
    Mark = 5,
}

impl HopProto {
    pub fn from_u8(v: u8) -> Result<HopProto, HopError> {
        Ok(match v {
            1 => HopProto::Tcp,
            2 => HopProto::Udp,
            3 => HopProto::Quic,
            4 => HopProto::Mtu,
            5 => HopProto::Mark,
            other => return Err(HopError::BadProto(other)),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            HopProto::Tcp => "tcp",
            HopProto::Udp => "udp",
            HopProto::Quic => "quic",
            HopProto::Mtu => "mtu",
            HopProto::Mark => "mark",
        }
    }
}

/// Measure `proto` to `host:port`, `attempts` times, one every `interval_us`, each given
/// `timeout_us` to answer (UDP: datagrams of `size` bytes, 0 = 64).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HopRequest {
    pub proto: HopProto,
    pub host: String,
    pub port: u16,
    pub attempts: u16,
    pub interval_us: u32,
    pub timeout_us: u32,
    pub size: u16,
    /// [`HopProto::Mark`] only: the TOS byte (DSCP << 2 | ECN) the echoes are sent with and
    /// their replies asked to carry; 0 for every other proto.
    pub tos: u8,
}

/// One attempt's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sample {
    /// Answered after this many ns.
    Rtt(u64),
    /// Failed, under a kind of [`ERROR_KINDS`].
    Failed(&'static str),
}

impl Sample {
    /// A failure under `kind`, or `io` for a kind outside [`ERROR_KINDS`].
    pub fn failed(kind: &str) -> Sample {
        Sample::Failed(
            ERROR_KINDS
                .iter()
                .find(|k| **k == kind)
                .copied()
                .unwrap_or("io"),
        )
    }
}

/// What an agent measured: the address it measured (the target resolved there) and one
/// sample per attempt, in order; for [`HopProto::Mtu`], no samples but both ways' outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HopReply {
    pub proto: HopProto,
    pub addr: Option<SocketAddr>,
    pub samples: Vec<Sample>,
    /// [`HopProto::Mtu`] only.
    pub mtu: Option<MtuReply>,
    /// [`HopProto::Mark`] only.
    pub mark: Option<MarkReply>,
}

/// The length of the reply frame that answers `attempts` attempts.
pub fn reply_frame_len(attempts: u16) -> usize {
    HEADER_LEN + REPLY_FIXED + usize::from(attempts) * SAMPLE_LEN + BODY_TAG_LEN
}

/// The length of the reply frame that answers an MTU search: two way records.
pub const MTU_REPLY_FRAME_LEN: usize =
    HEADER_LEN + REPLY_FIXED + mtu::WAY_LEN * mtu::WAYS as usize + BODY_TAG_LEN;

/// The length of the reply frame that answers a marking read: two way records.
pub const MARK_REPLY_FRAME_LEN: usize =
    HEADER_LEN + REPLY_FIXED + mark::WAY_LEN * mark::WAYS as usize + BODY_TAG_LEN;

impl HopRequest {
    /// The length of the reply frame it asks for.
    pub fn reply_frame_len(&self) -> usize {
        match self.proto {
            HopProto::Mtu => MTU_REPLY_FRAME_LEN,
            HopProto::Mark => MARK_REPLY_FRAME_LEN,
            _ => reply_frame_len(self.attempts),
        }
    }

    /// The length of its frame: the message, or the reply it asks for if that is longer.
    pub fn frame_len(&self) -> usize {
        let own = HEADER_LEN + REQUEST_FIXED + self.host.len() + BODY_TAG_LEN;
        own.max(self.reply_frame_len())
    }

    fn check(&self) -> Result<u8, HopError> {
        if self.attempts == 0 || self.attempts > MAX_ATTEMPTS {
            return Err(HopError::BadAttempts(self.attempts));
        }
        // One search per MTU request.
        if self.proto == HopProto::Mtu && self.attempts != 1 {
            return Err(HopError::BadAttempts(self.attempts));
        }
        // Only a marking read carries a TOS byte.
        if self.proto != HopProto::Mark && self.tos != 0 {
            return Err(HopError::BadPadding);
        }
        let ok = !self.host.is_empty()
            && self.host.len() <= MAX_HOST_LEN
            && !self.host.chars().any(char::is_control);
        u8::try_from(self.host.len())
            .ok()
            .filter(|_| ok)
            .ok_or(HopError::BadHost)
    }

    /// Appends the message (without padding and tag) to `out`.
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), HopError> {
        let host_len = self.check()?;
        out.extend_from_slice(&[HOP_VERSION, self.proto as u8]);
        out.extend_from_slice(&self.attempts.to_be_bytes());
        out.extend_from_slice(&self.interval_us.to_be_bytes());
        out.extend_from_slice(&self.timeout_us.to_be_bytes());
        out.extend_from_slice(&self.port.to_be_bytes());
        out.extend_from_slice(&self.size.to_be_bytes());
        out.extend_from_slice(&[host_len, self.tos, 0, 0]);
        out.extend_from_slice(self.host.as_bytes());
        Ok(())
    }

    /// Decodes a request payload without its tag; the padding after the host must be zero.
    pub fn decode(b: &[u8]) -> Result<HopRequest, HopError> {
        let mut r = Reader::new(b);
        let version = r.u8()?;
        if version != HOP_VERSION {
            return Err(HopError::BadVersion(version));
        }
        let proto = HopProto::from_u8(r.u8()?)?;
        let attempts = r.u16()?;
        let interval_us = r.u32()?;
        let timeout_us = r.u32()?;
        let port = r.u16()?;
        let size = r.u16()?;
        let host_len = usize::from(r.u8()?);
        let tos = r.u8()?;
        if r.take(2)? != [0, 0] {
            return Err(HopError::BadPadding);
        }
        let host = std::str::from_utf8(r.take(host_len)?)
            .map_err(|_| HopError::BadHost)?
            .to_string();
        if r.rest().iter().any(|b| *b != 0) {
            return Err(HopError::BadPadding);
        }
        let req = HopRequest {
            proto,
            host,
            port,
            attempts,
            interval_us,
            timeout_us,
            size,
            tos,
        };
        req.check()?;
        Ok(req)
    }
}

impl HopReply {
    /// Appends the message (without tag) to `out`.
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), HopError> {
        let n = match (&self.mtu, &self.mark, self.proto) {
            (Some(_), None, HopProto::Mtu) if self.samples.is_empty() => mtu::WAYS,
            (None, Some(_), HopProto::Mark) if self.samples.is_empty() => mark::WAYS,
            (None, None, p) if !matches!(p, HopProto::Mtu | HopProto::Mark) => {
                u16::try_from(self.samples.len())
                    .ok()
                    .filter(|n| *n <= MAX_ATTEMPTS)
                    .ok_or(HopError::BadAttempts(u16::MAX))?
            }
            _ => return Err(HopError::BadProto(self.proto as u8)),
        };
        out.extend_from_slice(&[HOP_VERSION, self.proto as u8]);
        out.extend_from_slice(&n.to_be_bytes());
        let (family, port, ip) = match self.addr {
            None => (0u8, 0u16, [0u8; 16]),
            Some(SocketAddr::V4(a)) => {
                let mut ip = [0u8; 16];
                ip.iter_mut().zip(a.ip().octets()).for_each(|(d, s)| *d = s);
                (4, a.port(), ip)
            }
            Some(SocketAddr::V6(a)) => (6, a.port(), a.ip().octets()),
        };
        out.extend_from_slice(&[family, 0]);
        out.extend_from_slice(&port.to_be_bytes());
        out.extend_from_slice(&ip);
        if let Some(m) = &self.mtu {
            m.up.encode(out);
            m.down.encode(out);
        }
        if let Some(m) = &self.mark {
            m.up.encode(out);
            m.down.encode(out);
        }
        for s in &self.samples {
            let (code, rtt) = match s {
                Sample::Rtt(ns) => (0u8, *ns),
                Sample::Failed(k) => (error_code(k), 0),
            };
            out.extend_from_slice(&[code, 0, 0, 0]);
            out.extend_from_slice(&rtt.to_be_bytes());
        }
        Ok(())
    }

    /// Decodes a reply payload without its tag.
    pub fn decode(b: &[u8]) -> Result<HopReply, HopError> {
        let mut r = Reader::new(b);
        let version = r.u8()?;
        if version != HOP_VERSION {
            return Err(HopError::BadVersion(version));
        }
        let proto = HopProto::from_u8(r.u8()?)?;
        let count = r.u16()?;
        let family = r.u8()?;
        r.u8()?;
        let port = r.u16()?;
        let ip = r.take(16)?;
        let addr = match family {
            0 => None,
            4 => {
                let v4: [u8; 4] = ip.first_chunk().copied().unwrap_or_default();
                Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(v4)), port))
            }
            6 => {
                let v6: [u8; 16] = ip.first_chunk().copied().unwrap_or_default();
                Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(v6)), port))
            }
            f => return Err(HopError::BadFamily(f)),
        };
        if proto == HopProto::Mtu {
            if count != mtu::WAYS || r.rest().len() != mtu::WAY_LEN * usize::from(mtu::WAYS) {
                return Err(HopError::BadCount {
                    count,
                    len: b.len(),
                });
            }
            let up = MtuWay::decode(&mut r)?;
            let down = MtuWay::decode(&mut r)?;
            return Ok(HopReply {
                proto,
                addr,
                samples: Vec::new(),
                mtu: Some(MtuReply { up, down }),
                mark: None,
            });
        }
        if proto == HopProto::Mark {
            if count != mark::WAYS || r.rest().len() != mark::WAY_LEN * usize::from(mark::WAYS) {
                return Err(HopError::BadCount {
                    count,
                    len: b.len(),
                });
            }
            let up = MarkWay::decode(&mut r)?;
            let down = MarkWay::decode(&mut r)?;
            return Ok(HopReply {
                proto,
                addr,
                samples: Vec::new(),
                mtu: None,
                mark: Some(MarkReply { up, down }),
            });
        }
        if count > MAX_ATTEMPTS || r.rest().len() != usize::from(count) * SAMPLE_LEN {
            return Err(HopError::BadCount {
                count,
                len: b.len(),
            });
        }
        let mut samples = Vec::with_capacity(usize::from(count));
        for _ in 0..count {
            let code = r.u8()?;
            r.take(3)?;
            let rtt = r.u64()?;
            samples.push(match code {
                0 => Sample::Rtt(rtt),
                c => Sample::Failed(
                    ERROR_KINDS
                        .get(usize::from(c) - 1)
                        .ok_or(HopError::BadOutcome(c))?,
                ),
            });
        }
        Ok(HopReply {
            proto,
            addr,
            samples,
            mtu: None,
            mark: None,
        })
    }
}

fn error_code(kind: &str) -> u8 {
    let i = ERROR_KINDS.iter().position(|k| *k == kind);
    // ERROR_KINDS has 10 entries: every index + 1 fits a u8; "io" is code 9.
    i.and_then(|i| u8::try_from(i + 1).ok()).unwrap_or(9)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
mod tests;
