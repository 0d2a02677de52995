//! The STAMP Session-Reflector's decisions, with no socket and no clock: which test packets it
//! answers, and the answer, written over the request in place (same length: RFC 8762's
//! symmetrical size, and never an amplifier).
//!
//! - **Stateless** (RFC 8762 §4): the answer's sequence number is the sender's.
//! - **Stateful**: each session — source address and port, and RFC 8972's SSID — has its own
//!   counter, so the sender can tell a request lost on the way up (a gap in the reflector's
//!   numbers) from an answer lost on the way down. The sessions are the UDP responder's bounded
//!   flow table ([`FlowTable`], keyed by source and SSID here): at most [`MAX_SESSIONS`], idle
//!   ones ([`SESSION_IDLE_NS`]) dropped when it is full, at most one sweep a second; a new
//!   session that still finds no room is refused (a reflector without a count cannot answer
//!   statefully).
//! - **Authenticated mode**: only packets whose HMAC verifies under the key are answered, and
//!   the answer is sealed with it.
//!
//! Refused, and counted by the driver:
//! - a packet shorter than a reflector packet of the mode ([`Refusal::Short`]): an answer as
//!   long as it cannot hold the reflector's fields, and a longer one would amplify;
//! - a source port below 1024 other than STAMP's and TWAMP's 862 and 863 ([`Refusal::Port`]):
//!   that is a service (echo, chargen, DNS), which a forged request could set talking with the
//!   reflector for ever;
//! - one of this reflector's own answers, come back ([`Refusal::Loop`]): every reflector copies
//!   the request's Timestamp to its Session-Sender Timestamp, so an answer bounced off another
//!   reflector (or two reflectors bounced off each other by one forged packet) carries, there,
//!   a time this reflector itself wrote moments ago. A real test packet has zeros there (MBZ)
//!   or, from a TWAMP-Light sender, padding that lands within [`LOOP_WINDOW_NS`] of the
//!   reflector's clock by chance about once in 35 million packets. No table is needed, so any
//!   number of loops started at once all end at their second round;
//! - a packet whose HMAC does not verify ([`Refusal::BadMac`]), a stateful session that finds
//!   the table full ([`Refusal::SessionsFull`]).

use std::net::SocketAddr;

use npt_wire::stamp::time::ntp_to_unix_ns;
use npt_wire::stamp::{ErrorEstimate, Mode, ReflectedPacket, StampKey, TestPacket};

use crate::reflect::FlowTable;

/// Stateful sessions one reflector keeps at once.
pub const MAX_SESSIONS: usize = 65_536;
/// A stateful session with no packet for this long may be dropped (5 minutes).
pub const SESSION_IDLE_NS: u64 = 300_000_000_000;
/// How close to the reflector's clock a Session-Sender Timestamp field must be to show that
/// the packet is one of its own answers.
pub const LOOP_WINDOW_NS: u64 = 60_000_000_000;

/// Why a datagram was not answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Over the source's or the total budget (the driver's limiter decides this one).
    Rate,
    Short,
    Port,
    BadMac,
    Loop,
    SessionsFull,
}

/// What a packet proved before it was answered: the driver charges a keyed one to the open
/// limits, as it does an authenticated `--token` session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proof {
    None,
    Keyed,
}

/// The reflector's configuration.
#[derive(Clone, Debug)]
pub struct ReflectorConfig {
    pub stateful: bool,
    /// Authenticated mode with this key; None = unauthenticated.
    pub key: Option<StampKey>,
}

impl ReflectorConfig {
    pub fn mode(&self) -> Mode {
        if self.key.is_some() {
            Mode::Authenticated
        } else {
            Mode::Open
        }
    }
}

/// One reflector socket's state.
pub struct Reflector {
    cfg: ReflectorConfig,
    sessions: FlowTable,
}

impl Reflector {
    pub fn new(cfg: ReflectorConfig) -> Reflector {
        Reflector {
            cfg,
            sessions: FlowTable::new(MAX_SESSIONS, SESSION_IDLE_NS),
        }
    }

    pub fn mode(&self) -> Mode {
        self.cfg.mode()
    }

    /// Stateful sessions kept now.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// The checks that need no state: length, source port, HMAC, and whether the packet is one
    /// of our own answers come back (`wall_ns`: the reflector's clock, Unix ns).
    pub fn check(&self, peer: SocketAddr, data: &[u8], wall_ns: u64) -> Result<Proof, Refusal> {
        let mode = self.mode();
        if data.len() < mode.base_len() {
            return Err(Refusal::Short);
        }
        let port = peer.port();
        if port < 1024 && port != 862 && port != 863 {
            return Err(Refusal::Port);
        }
        let proof = match &self.cfg.key {
            Some(k) if !k.verify(data) => return Err(Refusal::BadMac),
            Some(_) => Proof::Keyed,
            None => Proof::None,
        };
        let (_, copied) = ReflectedPacket::timestamps(mode, data).ok_or(Refusal::Short)?;
        if copied != 0 && ntp_to_unix_ns(copied).abs_diff(wall_ns) <= LOOP_WINDOW_NS {
            return Err(Refusal::Loop);
        }
        Ok(proof)
    }

    /// Rewrites the test packet in `data` (already [`check`](Reflector::check)ed) into its
    /// answer, all but the send time: `receive_ts` (T2) as written on the wire, `ttl` as the
    /// packet arrived. Returns whether a stateful session was created.
    pub fn answer(
        &mut self,
        now: u64,
        peer: SocketAddr,
        receive_ts: u64,
        ttl: u8,
        error: ErrorEstimate,
        data: &mut [u8],
    ) -> Result<bool, Refusal> {
        let mode = self.mode();
        let t = TestPacket::decode(mode, data).map_err(|_| Refusal::Short)?;
        let (seq, created) = if self.cfg.stateful {
            self.next_seq(now, peer, t.ssid, t.seq)?
        } else {
            (t.seq, false)
        };
        ReflectedPacket {
            seq,
            timestamp: 0,
            error,
            ssid: t.ssid,
            receive_timestamp: receive_ts,
            sender_seq: t.seq,
            sender_timestamp: t.timestamp,
            sender_error: t.error,
            sender_ttl: ttl,
        }
        .encode(mode, data)
        .map_err(|_| Refusal::Short)?;
        Ok(created)
    }

    /// Stamps the send time (T3) on an answer just before it leaves, and seals it in
    /// authenticated mode.
    pub fn stamp(&self, data: &mut [u8], send_ts: u64, error: ErrorEstimate) {
        let mode = self.mode();
        let _ = ReflectedPacket::set_send_time(mode, data, send_ts, error);
        if let Some(k) = &self.cfg.key {
            let _ = k.seal(data);
        }
    }

    /// The session's next sequence number (its packets received before this one: TWAMP's and
    /// STAMP's reflector count from 0), creating the session if there is room; (seq, created).
    fn next_seq(
        &mut self,
        now: u64,
        peer: SocketAddr,
        ssid: u16,
        sender_seq: u32,
    ) -> Result<(u32, bool), Refusal> {
        let f = self
            .sessions
            .on_received(now, peer, u32::from(ssid), u64::from(sender_seq))
            .ok_or(Refusal::SessionsFull)?;
        // Modulo 2^32, as the wire carries it.
        let seq = u32::try_from(f.received.wrapping_sub(1) & u64::from(u32::MAX)).unwrap_or(0);
        Ok((seq, self.sessions.take_stats().new > 0))
    }
}

#[cfg(test)]
mod tests;
