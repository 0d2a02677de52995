//! The hop agent's path-MTU answer (`npt trace --mtu`): a request of proto [`HopProto::Mtu`]
//! asks the agent to run `npt mtu`'s search against the next hop's `npt serve` — up, the agent's
//! own DF-set probes; down, DF-set datagrams the next hop sends on request — and the reply
//! carries each way's outcome instead of RTT samples.
//!
//! The request is the ordinary hop request (`hop/mod.rs`) with these meanings: `attempts` is 1 (one
//! search), `interval` 0 (the search paces itself), `timeout` the search's time bound, `size`
//! the largest datagram tried (0: the agent's default, an Ethernet path's 1,472 / 1,452 bytes).
//! The reply's 24 fixed bytes say `n = 2` and the address measured; two way records follow, up
//! (agent → next hop) then down (next hop → agent), 32 bytes each:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------+---------------+-------------------------------+
//! |    verdict    | flags / error |  limit MTU, IP bytes (0: none)|  0
//! +---------------+---------------+-------------------------------+
//! |  largest datagram that crossed|  smallest datagram lost       |  4
//! +-------------------------------+---------------+---------------+
//! |  largest fragment received    | router family |  sizes lost   |  8
//! +-------------------------------+---------------+---------------+
//! |  datagrams sent               |  datagrams answered           | 12
//! +-------------------------------+-------------------------------+
//! |  router that sent the ICMP, 16 bytes (IPv4: the first 4)      | 16
//! +---------------------------------------------------------------+
//! ```
//!
//! verdict: 0 the search failed (the second byte is then an error kind's code of
//! [`super::ERROR_KINDS`]), else a code of [`VERDICTS`] (code = index + 1) and the second byte
//! is flags ([`SETTLED`], [`CAPPED_BY_UP`]). Sizes are UDP payload bytes, 0 for none. The limit
//! MTU is the ICMP's announced MTU (`icmp`) or the interface's (`local`); sizes lost: those
//! unanswered after every try (at most 40 a way).
//!
//! The reply frame is 48 + 24 + 64 + 16 = 152 bytes; the request is padded to it, so the rule
//! of `hop/mod.rs` holds: a reply is never larger than its request.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{error_code, HopError, Reader, ERROR_KINDS};

/// One way record's length.
pub const WAY_LEN: usize = 32;
/// Ways in a reply: up, then down.
pub const WAYS: u16 = 2;

/// What stopped a larger datagram, in the order of their codes (code = index + 1): the names
/// of `npt mtu`'s result (docs/mtu.md).
pub const VERDICTS: [&str; 6] = [
    "max_crossed",
    "icmp",
    "black_hole",
    "local",
    "nothing_crossed",
    "unreadable",
];

/// Flag: the bracket is one byte wide (or the largest size tried crossed).
pub const SETTLED: u8 = 1;
/// Flag: down, without a token, the lost sizes are above what crossed up (`npt mtu`'s
/// `capped_by_up`).
pub const CAPPED_BY_UP: u8 = 2;

/// What one way carried, as the agent's search read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MtuWay {
    /// A name of [`VERDICTS`], or `Err(kind)` of [`ERROR_KINDS`] when the search failed.
    pub verdict: Result<&'static str, &'static str>,
    /// [`SETTLED`] | [`CAPPED_BY_UP`].
    pub flags: u8,
    /// The ICMP's (or the interface's) MTU, IP bytes.
    pub limit_mtu: Option<u16>,
    pub largest_datagram: Option<u16>,
    pub smallest_lost: Option<u16>,
    pub largest_fragment: Option<u16>,
    pub sent: u16,
    pub answered: u16,
    /// Sizes unanswered after every try.
    pub lost_sizes: u8,
    /// The router whose ICMP said "too big".
    pub router: Option<IpAddr>,
}

/// Both ways of one search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MtuReply {
    pub up: MtuWay,
    pub down: MtuWay,
}

fn nz(v: Option<u16>) -> [u8; 2] {
    v.unwrap_or(0).to_be_bytes()
}

fn opt(v: u16) -> Option<u16> {
    Some(v).filter(|v| *v != 0)
}

impl MtuWay {
    /// A way whose search failed under `kind` (a kind outside [`ERROR_KINDS`] travels as `io`).
    pub fn failed(kind: &str) -> MtuWay {
        let k = ERROR_KINDS
            .iter()
            .find(|k| **k == kind)
            .copied()
            .unwrap_or("io");
        MtuWay {
            verdict: Err(k),
            flags: 0,
            limit_mtu: None,
            largest_datagram: None,
            smallest_lost: None,
            largest_fragment: None,
            sent: 0,
            answered: 0,
            lost_sizes: 0,
            router: None,
        }
    }

    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        let (v, second) = match self.verdict {
            Ok(name) => (verdict_code(name), self.flags & (SETTLED | CAPPED_BY_UP)),
            Err(kind) => (0, error_code(kind)),
        };
        out.extend_from_slice(&[v, second]);
        out.extend_from_slice(&nz(self.limit_mtu));
        out.extend_from_slice(&nz(self.largest_datagram));
        out.extend_from_slice(&nz(self.smallest_lost));
        out.extend_from_slice(&nz(self.largest_fragment));
        let (family, ip) = match self.router {
            None => (0u8, [0u8; 16]),
            Some(IpAddr::V4(a)) => {
                let mut ip = [0u8; 16];
                ip.iter_mut().zip(a.octets()).for_each(|(d, s)| *d = s);
                (4, ip)
            }
            Some(IpAddr::V6(a)) => (6, a.octets()),
        };
        out.extend_from_slice(&[family, self.lost_sizes]);
        out.extend_from_slice(&self.sent.to_be_bytes());
        out.extend_from_slice(&self.answered.to_be_bytes());
        out.extend_from_slice(&ip);
    }

    pub(super) fn decode(r: &mut Reader<'_>) -> Result<MtuWay, HopError> {
        let v = r.u8()?;
        let second = r.u8()?;
        let verdict = match v {
            0 => Err(*ERROR_KINDS
                .get(usize::from(second).wrapping_sub(1))
                .ok_or(HopError::BadOutcome(second))?),
            c => Ok(*VERDICTS
                .get(usize::from(c) - 1)
                .ok_or(HopError::BadOutcome(c))?),
        };
        let flags = if v == 0 { 0 } else { second };
        if flags & !(SETTLED | CAPPED_BY_UP) != 0 {
            return Err(HopError::BadPadding);
        }
        let limit_mtu = opt(r.u16()?);
        let largest_datagram = opt(r.u16()?);
        let smallest_lost = opt(r.u16()?);
        let largest_fragment = opt(r.u16()?);
        let family = r.u8()?;
        let lost_sizes = r.u8()?;
        let sent = r.u16()?;
        let answered = r.u16()?;
        let ip = r.take(16)?;
        let router = match family {
            0 => None,
            4 => {
                let v4: [u8; 4] = ip.first_chunk().copied().unwrap_or_default();
                Some(IpAddr::V4(Ipv4Addr::from(v4)))
            }
            6 => {
                let v6: [u8; 16] = ip.first_chunk().copied().unwrap_or_default();
                Some(IpAddr::V6(Ipv6Addr::from(v6)))
            }
            f => return Err(HopError::BadFamily(f)),
        };
        Ok(MtuWay {
            verdict,
            flags,
            limit_mtu,
            largest_datagram,
            smallest_lost,
            largest_fragment,
            sent,
            answered,
            lost_sizes,
            router,
        })
    }
}

fn verdict_code(name: &str) -> u8 {
    let i = VERDICTS.iter().position(|k| *k == name);
    // VERDICTS has 6 entries; a name outside it (never built here) reads as unreadable.
    i.and_then(|i| u8::try_from(i + 1).ok()).unwrap_or(6)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
mod tests;
