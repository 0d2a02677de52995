//! STAMP (RFC 8762, the Simple Two-way Active Measurement Protocol): the test packets a
//! Session-Sender sends and a Session-Reflector sends back, in both modes, so npt can measure a
//! router's reflector and a STAMP sender can measure `npt serve`. All integers big-endian;
//! timestamps and the Error Estimate are in [`time`], the authenticated mode's HMAC in [`auth`].
//!
//! Session-Sender test packet, unauthenticated mode (RFC 8762 §4.2.1; the SSID is RFC 8972 §3,
//! MBZ in RFC 8762), 44 bytes:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        Sequence Number                        |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                          Timestamp                            |  4
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Error Estimate        |             SSID              | 12
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         MBZ (28 octets)                       | 16
//! ~                                                               ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Session-Reflector test packet, unauthenticated mode (RFC 8762 §4.3.1), 44 bytes:
//!
//! ```text
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        Sequence Number                        |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                          Timestamp                            |  4
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Error Estimate        |             SSID              | 12
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        Receive Timestamp                      | 16
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Session-Sender Sequence Number                | 24
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                  Session-Sender Timestamp                     | 28
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Session-Sender Error Estimate |            MBZ                | 36
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Ses-Sender TTL |                   MBZ                         | 40
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Session-Sender test packet, authenticated mode (RFC 8762 §4.2.2), 112 bytes:
//!
//! ```text
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        Sequence Number                        |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         MBZ (12 octets)                       |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                          Timestamp                            | 16
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Error Estimate        |             SSID              | 24
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         MBZ (68 octets)                       | 28
//! ~                                                               ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       HMAC (16 octets)                        | 96
//! ~                                                               ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Session-Reflector test packet, authenticated mode (RFC 8762 §4.3.2), 112 bytes:
//!
//! ```text
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        Sequence Number                        |  0
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         MBZ (12 octets)                       |  4
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                          Timestamp                            | 16
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Error Estimate        |             SSID              | 24
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         MBZ (4 octets)                        | 28
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                        Receive Timestamp                      | 32
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         MBZ (8 octets)                        | 40
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Session-Sender Sequence Number                | 48
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         MBZ (12 octets)                       | 52
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                  Session-Sender Timestamp                     | 64
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Session-Sender Error Estimate |         MBZ (6 octets)        | 72
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Ses-Sender TTL |                 MBZ (15 octets)               | 80
//! ~                                                               ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       HMAC (16 octets)                        | 96
//! ~                                                               ~
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! A packet may be longer than its base (RFC 8972's TLVs, padding); the reflector's answer is
//! as long as the request (RFC 8762's default, symmetrical size), and a request shorter than a
//! reflector packet is not answered at all (zero-filling it, as some TWAMP-Light peers expect,
//! would make the answer larger than the request). Nothing here reads the MBZ fields: they are
//! written as zero and ignored on receipt.

pub mod auth;
pub mod time;

use crate::frame::{be32, be64};
use crate::WireError;

pub use auth::StampKey;
pub use time::ErrorEstimate;

/// The IANA port of TWAMP-Test and STAMP; npt binds what the user gives.
pub const DEFAULT_PORT: u16 = 862;
/// Base packet length, unauthenticated mode (sender and reflector alike).
pub const OPEN_LEN: usize = 44;
/// Base packet length, authenticated mode.
pub const AUTH_LEN: usize = 112;
/// Where the HMAC sits in an authenticated packet; it covers the bytes before it.
pub const HMAC_AT: usize = 96;
/// Length of the truncated HMAC-SHA-256.
pub const HMAC_LEN: usize = 16;
/// RFC 8972's Extra Padding TLV: how npt pads a sender packet longer than its base.
pub const TLV_EXTRA_PADDING: u8 = 1;
/// A TLV's header: flags, type, length.
pub const TLV_HEADER_LEN: usize = 4;

/// The two modes of RFC 8762 §4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Unauthenticated (TWAMP-Light compatible).
    Open,
    /// Authenticated: the 112-byte layouts with an HMAC ([`auth`]).
    Authenticated,
}

impl Mode {
    /// Base packet length of this mode (sender and reflector packets are the same length).
    pub fn base_len(self) -> usize {
        match self {
            Mode::Open => OPEN_LEN,
            Mode::Authenticated => AUTH_LEN,
        }
    }

    /// Field offsets of the two layouts.
    const fn at(self) -> Offsets {
        match self {
            Mode::Open => Offsets {
                ts: 4,
                err: 12,
                ssid: 14,
                rx_ts: 16,
                s_seq: 24,
                s_ts: 28,
                s_err: 36,
                ttl: 40,
            },
            Mode::Authenticated => Offsets {
                ts: 16,
                err: 24,
                ssid: 26,
                rx_ts: 32,
                s_seq: 48,
                s_ts: 64,
                s_err: 72,
                ttl: 80,
            },
        }
    }
}

/// Where each field starts (the sequence number is at 0 in both modes).
struct Offsets {
    ts: usize,
    err: usize,
    ssid: usize,
    rx_ts: usize,
    s_seq: usize,
    s_ts: usize,
    s_err: usize,
    ttl: usize,
}

/// A Session-Sender test packet (its base; what follows stays in the caller's buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TestPacket {
    pub seq: u32,
    /// T1, in the format `error.ptp` says.
    pub timestamp: u64,
    pub error: ErrorEstimate,
    /// RFC 8972 Session-Sender Identifier (0: none).
    pub ssid: u16,
}

/// A Session-Reflector test packet (its base).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ReflectedPacket {
    /// Stateless: the sender's sequence number; stateful: the reflector's own count.
    pub seq: u32,
    /// T3: when the reflector sent it.
    pub timestamp: u64,
    /// The reflector's clock; its Z bit gives the format of `timestamp` and `receive_timestamp`.
    pub error: ErrorEstimate,
    pub ssid: u16,
    /// T2: when the reflector received the test packet.
    pub receive_timestamp: u64,
    pub sender_seq: u32,
    /// T1, copied from the test packet.
    pub sender_timestamp: u64,
    pub sender_error: ErrorEstimate,
    /// TTL (IPv4) or Hop Limit (IPv6) of the test packet as it arrived.
    pub sender_ttl: u8,
}

/// The base of `buf` for `mode`, or the one truncation error.
fn base(buf: &[u8], mode: Mode) -> Result<&[u8], WireError> {
    buf.get(..mode.base_len()).ok_or(WireError::Truncated {
        need: mode.base_len(),
        have: buf.len(),
    })
}

fn base_mut(buf: &mut [u8], mode: Mode) -> Result<&mut [u8], WireError> {
    let have = buf.len();
    buf.get_mut(..mode.base_len()).ok_or(WireError::Truncated {
        need: mode.base_len(),
        have,
    })
}

/// The base of `buf` for `mode` with every byte before the HMAC zeroed (the MBZ fields), for a
/// packet to be written over it.
fn cleared_base(buf: &mut [u8], mode: Mode) -> Result<&mut [u8], WireError> {
    let b = base_mut(buf, mode)?;
    let end = match mode {
        Mode::Authenticated => HMAC_AT,
        Mode::Open => b.len(),
    };
    if let Some(z) = b.get_mut(..end) {
        z.fill(0);
    }
    Ok(b)
}

fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = buf.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

fn be16(b: &[u8]) -> u16 {
    b.first_chunk().map_or(0, |a| u16::from_be_bytes(*a))
}

/// The bytes of `buf` from `at` on (empty past the end).
fn from(buf: &[u8], at: usize) -> &[u8] {
    buf.get(at..).unwrap_or_default()
}

impl TestPacket {
    /// Writes the base (MBZ zeroed; the HMAC field left as it is, see [`StampKey::seal`]).
    pub fn encode(&self, mode: Mode, buf: &mut [u8]) -> Result<(), WireError> {
        let at = mode.at();
        let b = cleared_base(buf, mode)?;
        put(b, 0, &self.seq.to_be_bytes());
        put(b, at.ts, &self.timestamp.to_be_bytes());
        put(b, at.err, &self.error.to_u16().to_be_bytes());
        put(b, at.ssid, &self.ssid.to_be_bytes());
        Ok(())
    }

    pub fn decode(mode: Mode, buf: &[u8]) -> Result<TestPacket, WireError> {
        let at = mode.at();
        let b = base(buf, mode)?;
        Ok(TestPacket {
            seq: be32(b),
            timestamp: be64(from(b, at.ts)),
            error: ErrorEstimate::from_u16(be16(from(b, at.err))),
            ssid: be16(from(b, at.ssid)),
        })
    }
}

impl ReflectedPacket {
    /// The four fields a reflector packet begins with, where a test packet has them.
    fn head(&self) -> TestPacket {
        TestPacket {
            seq: self.seq,
            timestamp: self.timestamp,
            error: self.error,
            ssid: self.ssid,
        }
    }

    /// Writes the base (MBZ zeroed; the HMAC field left as it is).
    pub fn encode(&self, mode: Mode, buf: &mut [u8]) -> Result<(), WireError> {
        let at = mode.at();
        // Both layouts start with the same four fields.
        self.head().encode(mode, buf)?;
        let b = base_mut(buf, mode)?;
        put(b, at.rx_ts, &self.receive_timestamp.to_be_bytes());
        put(b, at.s_seq, &self.sender_seq.to_be_bytes());
        put(b, at.s_ts, &self.sender_timestamp.to_be_bytes());
        put(b, at.s_err, &self.sender_error.to_u16().to_be_bytes());
        put(b, at.ttl, &[self.sender_ttl]);
        Ok(())
    }

    pub fn decode(mode: Mode, buf: &[u8]) -> Result<ReflectedPacket, WireError> {
        let at = mode.at();
        let head = TestPacket::decode(mode, buf)?;
        let b = base(buf, mode)?;
        Ok(ReflectedPacket {
            seq: head.seq,
            timestamp: head.timestamp,
            error: head.error,
            ssid: head.ssid,
            receive_timestamp: be64(from(b, at.rx_ts)),
            sender_seq: be32(from(b, at.s_seq)),
            sender_timestamp: be64(from(b, at.s_ts)),
            sender_error: ErrorEstimate::from_u16(be16(from(b, at.s_err))),
            sender_ttl: from(b, at.ttl).first().copied().unwrap_or(0),
        })
    }

    /// Rewrites only the Timestamp (T3) and the reflector's Error Estimate of an encoded
    /// reflector packet: the reflector fills everything else first and stamps the send time
    /// last, just before the packet leaves (then seals it in authenticated mode).
    pub fn set_send_time(
        mode: Mode,
        buf: &mut [u8],
        timestamp: u64,
        error: ErrorEstimate,
    ) -> Result<(), WireError> {
        let at = mode.at();
        let b = base_mut(buf, mode)?;
        put(b, at.ts, &timestamp.to_be_bytes());
        put(b, at.err, &error.to_u16().to_be_bytes());
        Ok(())
    }

    /// The Timestamp (T3) field of an encoded reflector packet, and the Session-Sender
    /// Timestamp field: where a packet that is one of our own answers, come back, carries the
    /// T3 we wrote (an echo service returns it at `ts`, a reflector copies it to `s_ts`).
    pub fn timestamps(mode: Mode, buf: &[u8]) -> Option<(u64, u64)> {
        let at = mode.at();
        let b = base(buf, mode).ok()?;
        Some((be64(from(b, at.ts)), be64(from(b, at.s_ts))))
    }
}

/// Writes the header of RFC 8972's Extra Padding TLV at the front of `buf` (what follows a
/// sender packet's base), its length covering the rest of `buf`: a reflector that parses TLVs
/// finds a well-formed one, and one that does not copies it back. The value is left to the
/// caller (npt fills it like any payload: random by default, as RFC 8972 §4.1 recommends). An
/// empty `buf` needs no TLV; a shorter one than [`TLV_HEADER_LEN`] cannot hold one.
pub fn write_padding_header(buf: &mut [u8]) -> Result<(), WireError> {
    if buf.is_empty() {
        return Ok(());
    }
    let have = buf.len();
    let too_short = WireError::Truncated {
        need: TLV_HEADER_LEN,
        have,
    };
    let value_len = have.checked_sub(TLV_HEADER_LEN).ok_or(too_short)?;
    let len = u16::try_from(value_len).map_err(|_| WireError::BadLength(u32::MAX))?;
    let [hi, lo] = len.to_be_bytes();
    put(buf, 0, &[0, TLV_EXTRA_PADDING, hi, lo]);
    Ok(())
}

/// Whether a sender packet of `size` bytes can be padded with [`write_padding_header`]: its base
/// exactly, or room for a TLV header after it.
pub fn valid_size(mode: Mode, size: usize) -> bool {
    size == mode.base_len() || size >= mode.base_len() + TLV_HEADER_LEN
}

#[cfg(test)]
mod tests;
