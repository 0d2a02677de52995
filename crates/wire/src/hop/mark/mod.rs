//! The hop agent's marking answer (`npt trace --dscp`): a request of proto [`HopProto::Mark`]
//! asks the agent to send framed UDP echoes with a DSCP/ECN marking to the next hop's `npt
//! serve`, asking each reply to carry the same marking ([`crate::marking`]), and the reply
//! carries each way's verdict instead of RTT samples: up (agent → next hop, as the next hop
//! says each echo arrived) and down (next hop → agent, as the agent's kernel says each reply
//! arrived).
//!
//! The request is the ordinary hop request (`hop/mod.rs`) with these meanings: `attempts`
//! echoes `interval` apart, each given `timeout` to answer, `size` their datagram size (0: 64),
//! and the TOS byte at offset 17 (DSCP << 2 | ECN) the marking they are sent with. The reply's
//! 24 fixed bytes say `n = 2` and the address measured; two way records follow, up then down,
//! 12 bytes each:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------+---------------+---------------+---------------+
//! |  read 1 / 0   | known / error |  TOS sent     |  TOS arrived  |  0
//! +---------------+---------------+---------------+---------------+
//! |  DSCP fate    |  ECN fate     |         reserved (0)          |  4
//! +---------------+---------------+-------------------------------+
//! |  packets whose arrival is known |  of those, arrived CE       |  8
//! +-------------------------------+-------------------------------+
//! ```
//!
//! read: 0 the read failed (the second byte is then an error kind's code of
//! [`super::ERROR_KINDS`], the rest 0), 1 it read; then the second byte's bits say which TOS
//! bytes are known ([`SENT_KNOWN`], [`ARRIVED_KNOWN`]; an unknown one is 0). The fates are codes
//! of [`FATES`] (code = index + 1), as `npt probe`'s marking block names them (docs/probe.md).
//!
//! The reply frame is 48 + 24 + 24 + 16 = 112 bytes; the request is padded to it, so the rule
//! of `hop/mod.rs` holds: a reply is never larger than its request.

use super::{error_code, HopError, Reader, ERROR_KINDS};

/// One way record's length.
pub const WAY_LEN: usize = 12;
/// Ways in a reply: up, then down.
pub const WAYS: u16 = 2;

/// What happened to a field (DSCP or ECN) one way, in the order of their codes
/// (code = index + 1).
pub const FATES: [&str; 5] = ["arrived", "rewritten", "bleached", "mixed", "unknown"];

/// Flag: the TOS byte sent this way is known.
pub const SENT_KNOWN: u8 = 1;
/// Flag: the TOS byte most packets arrived with is known.
pub const ARRIVED_KNOWN: u8 = 2;

/// One way's marking as the agent read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkWay {
    /// `Ok` when the agent read it, `Err(kind)` of [`ERROR_KINDS`] when its echoes failed.
    pub read: Result<(), &'static str>,
    /// The TOS byte sent this way, when known.
    pub sent: Option<u8>,
    /// The TOS byte most packets arrived with (CE left out of the ECN count), when known.
    pub arrived: Option<u8>,
    /// Names of [`FATES`].
    pub dscp: &'static str,
    pub ecn: &'static str,
    /// Packets whose arrival marking is known this way.
    pub packets: u16,
    /// Of those, arrived marked CE.
    pub ce: u16,
}

/// Both ways of one read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkReply {
    pub up: MarkWay,
    pub down: MarkWay,
}

impl MarkWay {
    /// A way whose read failed under `kind` (a kind outside [`ERROR_KINDS`] travels as `io`).
    pub fn failed(kind: &str) -> MarkWay {
        let k = ERROR_KINDS
            .iter()
            .find(|k| **k == kind)
            .copied()
            .unwrap_or("io");
        MarkWay {
            read: Err(k),
            sent: None,
            arrived: None,
            dscp: "unknown",
            ecn: "unknown",
            packets: 0,
            ce: 0,
        }
    }

    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        if let Err(kind) = self.read {
            out.extend_from_slice(&[0, error_code(kind)]);
            out.extend_from_slice(&[0; WAY_LEN - 2]);
            return;
        }
        let known = if self.sent.is_some() { SENT_KNOWN } else { 0 }
            | if self.arrived.is_some() {
                ARRIVED_KNOWN
            } else {
                0
            };
        out.extend_from_slice(&[
            1,
            known,
            self.sent.unwrap_or(0),
            self.arrived.unwrap_or(0),
            fate_code(self.dscp),
            fate_code(self.ecn),
            0,
            0,
        ]);
        out.extend_from_slice(&self.packets.to_be_bytes());
        out.extend_from_slice(&self.ce.to_be_bytes());
    }

    pub(super) fn decode(r: &mut Reader<'_>) -> Result<MarkWay, HopError> {
        let read = r.u8()?;
        let second = r.u8()?;
        let sent = r.u8()?;
        let arrived = r.u8()?;
        let dscp = r.u8()?;
        let ecn = r.u8()?;
        let reserved = r.u16()?;
        let packets = r.u16()?;
        let ce = r.u16()?;
        match read {
            0 => {
                let kind = *ERROR_KINDS
                    .get(usize::from(second).wrapping_sub(1))
                    .ok_or(HopError::BadOutcome(second))?;
                if [sent, arrived, dscp, ecn] != [0; 4] || reserved != 0 || packets != 0 || ce != 0
                {
                    return Err(HopError::BadPadding);
                }
                Ok(MarkWay::failed(kind))
            }
            1 => {
                if second & !(SENT_KNOWN | ARRIVED_KNOWN) != 0 || reserved != 0 {
                    return Err(HopError::BadPadding);
                }
                let fate = |c: u8| {
                    FATES
                        .get(usize::from(c).wrapping_sub(1))
                        .copied()
                        .ok_or(HopError::BadOutcome(c))
                };
                let unknown_is_zero = |known: bool, v: u8| known || v == 0;
                if !unknown_is_zero(second & SENT_KNOWN != 0, sent)
                    || !unknown_is_zero(second & ARRIVED_KNOWN != 0, arrived)
                {
                    return Err(HopError::BadPadding);
                }
                Ok(MarkWay {
                    read: Ok(()),
                    sent: (second & SENT_KNOWN != 0).then_some(sent),
                    arrived: (second & ARRIVED_KNOWN != 0).then_some(arrived),
                    dscp: fate(dscp)?,
                    ecn: fate(ecn)?,
                    packets,
                    ce,
                })
            }
            c => Err(HopError::BadOutcome(c)),
        }
    }
}

fn fate_code(name: &str) -> u8 {
    let i = FATES.iter().position(|k| *k == name);
    // FATES has 5 entries; a name outside it (never built here) reads as unknown.
    i.and_then(|i| u8::try_from(i + 1).ok()).unwrap_or(5)
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
mod tests;
