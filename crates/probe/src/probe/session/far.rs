//! What the far end saw of one packet, as its reply tells it — kept apart from how the reply is
//! framed, so an npt responder's reflect block ([`npt_wire::reflect`]) and a STAMP reflector's
//! reply (RFC 8762: its sequence number and T2/T3 timestamps) feed the same per-direction
//! bookkeeping ([`super::split`]).

use npt_wire::frame::{status, Header, HEADER_LEN};
use npt_wire::reflect;

/// What the far end saw of one packet. Every field is optional: a responder says what it can.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FarEnd {
    /// Packets of this flow the far end had received when this one arrived, this one
    /// included, duplicates included, refused ones not; modulo 2³² (a stateful STAMP
    /// reflector: its sequence number + 1).
    pub rx_count: Option<u32>,
    /// When the far end received the packet, ns since the Unix epoch on its clock.
    pub rx_wall_ns: Option<u64>,
    /// When the far end sent the reply, on the same clock.
    pub tx_wall_ns: Option<u64>,
    /// Packets of this flow the far end refused so far, modulo 2³².
    pub refused: Option<u32>,
    /// The far end's own estimate of its clock's error, ns (STAMP's Error Estimate).
    pub error_ns: Option<u64>,
    /// Whether the far end says its clock is synchronized to an external source.
    pub synced: Option<bool>,
}

impl FarEnd {
    /// The reflect block of an npt echo reply (header `h`, whole frame `frame`); None when the
    /// responder said nothing (an older `npt serve`, or `--raw`'s plain echo).
    pub fn of_npt(h: &Header, frame: &[u8]) -> Option<FarEnd> {
        let r = reflect::read_reply(h, frame)?;
        let stamps = r.stamps;
        Some(FarEnd {
            rx_count: Some(r.rx_count),
            rx_wall_ns: stamps.map(|s| s.rx_wall_ns),
            tx_wall_ns: stamps.map(|s| s.rx_wall_ns.saturating_add(u64::from(s.dwell_ns))),
            refused: stamps.map(|s| s.refused),
            error_ns: None,
            synced: None,
        })
    }

    /// Time the far end held the packet (send − receive), when it gave both.
    pub fn dwell_ns(&self) -> Option<u64> {
        Some(self.tx_wall_ns?.saturating_sub(self.rx_wall_ns?))
    }
}

/// Why the far end refused a packet, as its notice says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalWhy {
    /// Its per-source budget (`npt serve`'s limits, e.g. `--limit-local`).
    Budget,
    /// It takes only `--token` sessions.
    TokenRequired,
    /// The frame was sealed and it has no `--token`.
    NoToken,
    /// Sealed for a session it does not know (restarted, or forgot an idle session).
    UnknownSession,
    /// A reason this version does not know.
    Other,
}

impl RefusalWhy {
    pub fn of_status(s: u32) -> RefusalWhy {
        match s {
            status::BUDGET => RefusalWhy::Budget,
            status::TOKEN_REQUIRED => RefusalWhy::TokenRequired,
            status::NO_TOKEN => RefusalWhy::NoToken,
            status::UNKNOWN_SESSION => RefusalWhy::UnknownSession,
            _ => RefusalWhy::Other,
        }
    }

    /// The name in the result (`refusals` by reason).
    pub fn name(&self) -> &'static str {
        match self {
            RefusalWhy::Budget => "budget",
            RefusalWhy::TokenRequired => "token_required",
            RefusalWhy::NoToken => "no_token",
            RefusalWhy::UnknownSession => "unknown_session",
            RefusalWhy::Other => "other",
        }
    }
}

/// A refusal notice of npt's framing: the refused packet's sequence number, why, and the
/// flow's refused count so far.
pub fn npt_notice(h: &Header, len: usize) -> Option<(u64, RefusalWhy, Option<u32>)> {
    if len != HEADER_LEN {
        return None;
    }
    let n = reflect::read_notice(h)?;
    Some((h.seq, RefusalWhy::of_status(n.status), n.refused))
}
