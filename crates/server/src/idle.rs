//! The idle callbacks a UDP socket owes ([`npt_wire::idle`]): each one due at a time, sent to
//! the address its request came from. Sans-IO — every call takes `now` (ns) — so the
//! schedule is tested on a virtual clock; the UDP loop sends what [`Callbacks::pop_due`]
//! hands it and sleeps no longer than [`Callbacks::next_due`].
//!
//! Bounded like every traffic-sending feature of `npt serve`: the request paid for the
//! callback (it went through the source's budget, and its ack and callback together are no
//! longer than it: the UDP answer checks the length before it asks here),
//! at most [`MAX_GAP_MS`] of wait, at most [`MAX_PER_IP`] pending per source address and
//! [`MAX_TOTAL`] per socket; a request for a flow that has one pending replaces it, and a gap
//! of 0 cancels it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::{IpAddr, SocketAddr};

use npt_wire::auth::SessionKey;
use npt_wire::frame::{status, Header, Kind, HEADER_LEN};
use npt_wire::idle::{self, Idle, IDLE_LEN};

/// The longest gap a callback waits, ms (ten minutes: past conntrack's 120 s and a
/// relay's usual minutes, short enough that a pending table cannot be held for long).
pub const MAX_GAP_MS: u32 = 600_000;
/// Callbacks pending for one source address (a NAT's clients share it).
pub const MAX_PER_IP: usize = 64;
/// Callbacks pending on one socket.
pub const MAX_TOTAL: usize = 4096;

/// A callback that is due: its frame (held time written, not yet sealed), where it goes, and
/// the session key it is sealed with (`--token`).
#[derive(Debug)]
pub struct Due {
    pub peer: SocketAddr,
    pub frame: [u8; IDLE_LEN],
    pub key: Option<SessionKey>,
}

struct Pending {
    peer: SocketAddr,
    flow: u32,
    acked: u64,
    frame: [u8; IDLE_LEN],
    key: Option<SessionKey>,
}

/// The callbacks one socket owes, in due order.
pub struct Callbacks {
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    pending: HashMap<u64, Pending>,
    by_flow: HashMap<(SocketAddr, u32), u64>,
    per_ip: HashMap<IpAddr, usize>,
    next_id: u64,
    max_per_ip: usize,
    max_total: usize,
}

impl Default for Callbacks {
    fn default() -> Self {
        Callbacks::new(MAX_PER_IP, MAX_TOTAL)
    }
}

impl Callbacks {
    pub fn new(max_per_ip: usize, max_total: usize) -> Callbacks {
        Callbacks {
            queue: BinaryHeap::new(),
            pending: HashMap::new(),
            by_flow: HashMap::new(),
            per_ip: HashMap::new(),
            next_id: 0,
            max_per_ip,
            max_total,
        }
    }

    /// Callbacks pending.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// An `Idle` request `h` (payload `ask`) from `peer`, answered at `now`: schedules its
    /// callback (a gap of 0 only cancels the flow's pending one) and returns the ack's
    /// status — `OK`, or why none was scheduled.
    pub fn ask(
        &mut self,
        now: u64,
        peer: SocketAddr,
        h: &Header,
        ask: &Idle,
        key: Option<SessionKey>,
    ) -> u32 {
        self.cancel(peer, h.flow);
        if ask.gap_ms == 0 {
            return status::OK;
        }
        if ask.gap_ms > MAX_GAP_MS {
            return status::IDLE_GAP;
        }
        let ip_count = self.per_ip.get(&peer.ip()).copied().unwrap_or(0);
        if ip_count >= self.max_per_ip || self.pending.len() >= self.max_total {
            return status::IDLE_FULL;
        }
        let body = Idle {
            gap_ms: ask.gap_ms,
            seen: Some(peer),
            max_gap_ms: MAX_GAP_MS,
            held_us: 0,
        };
        let id = self.next_id;
        self.next_id += 1;
        let due = now.saturating_add(u64::from(ask.gap_ms) * 1_000_000);
        self.queue.push(Reverse((due, id)));
        self.pending.insert(
            id,
            Pending {
                peer,
                flow: h.flow,
                acked: now,
                frame: idle::answer(h, Kind::IdleCallback, status::OK, &body),
                key,
            },
        );
        self.by_flow.insert((peer, h.flow), id);
        *self.per_ip.entry(peer.ip()).or_insert(0) += 1;
        status::OK
    }

    /// Drops the callback pending for `peer`'s `flow`; true when there was one.
    pub fn cancel(&mut self, peer: SocketAddr, flow: u32) -> bool {
        let Some(id) = self.by_flow.remove(&(peer, flow)) else {
            return false;
        };
        self.forget(id).is_some()
    }

    fn forget(&mut self, id: u64) -> Option<Pending> {
        let p = self.pending.remove(&id)?;
        self.by_flow.remove(&(p.peer, p.flow));
        if let Some(n) = self.per_ip.get_mut(&p.peer.ip()) {
            *n -= 1;
            if *n == 0 {
                self.per_ip.remove(&p.peer.ip());
            }
        }
        Some(p)
    }

    /// When the next callback is due (ns), if any.
    pub fn next_due(&mut self) -> Option<u64> {
        // Cancelled entries stay in the queue until they surface; drop them here.
        while let Some(Reverse((due, id))) = self.queue.peek().copied() {
            if self.pending.contains_key(&id) {
                return Some(due);
            }
            self.queue.pop();
        }
        None
    }

    /// The next callback due at `now`, with the time it was held written in.
    pub fn pop_due(&mut self, now: u64) -> Option<Due> {
        let due = self.next_due()?;
        if due > now {
            return None;
        }
        let Reverse((_, id)) = self.queue.pop()?;
        let mut p = self.forget(id)?;
        let held_us = u32::try_from(now.saturating_sub(p.acked) / 1_000).unwrap_or(u32::MAX);
        if let Some(b) = p.frame.get_mut(HEADER_LEN + 28..HEADER_LEN + 32) {
            b.copy_from_slice(&held_us.to_be_bytes());
        }
        Some(Due {
            peer: p.peer,
            frame: p.frame,
            key: p.key,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn req(flow: u32) -> Header {
        Header::decode(&idle::request(flow, 1, 2, 0)).unwrap()
    }

    fn gap(ms: u32) -> Idle {
        Idle {
            gap_ms: ms,
            ..Idle::default()
        }
    }

    fn peer(p: u16) -> SocketAddr {
        SocketAddr::from(([198, 51, 100, 1], p))
    }

    #[test]
    fn callbacks_leave_in_due_order_with_their_held_time() {
        let mut c = Callbacks::default();
        assert_eq!(c.ask(0, peer(1), &req(1), &gap(5_000), None), status::OK);
        assert_eq!(c.ask(S, peer(2), &req(2), &gap(2_000), None), status::OK);
        assert_eq!(c.next_due(), Some(3 * S));
        assert!(c.pop_due(3 * S - 1).is_none());
        let d = c.pop_due(3 * S + 7_000).unwrap();
        assert_eq!(d.peer, peer(2));
        let (h, body) = idle::read(&d.frame).unwrap();
        assert_eq!((h.kind, h.flow), (Kind::IdleCallback, 2));
        assert_eq!((body.held_us, body.seen), (2_000_007, Some(peer(2))));
        assert!(c.pop_due(4 * S).is_none());
        let d = c.pop_due(6 * S).unwrap();
        assert_eq!(idle::read(&d.frame).unwrap().1.held_us, 6_000_000);
        assert!(c.is_empty() && c.next_due().is_none());
    }

    #[test]
    fn a_gap_of_zero_cancels_and_a_new_ask_replaces() {
        let mut c = Callbacks::default();
        c.ask(0, peer(1), &req(1), &gap(5_000), None);
        c.ask(0, peer(1), &req(1), &gap(9_000), None);
        assert_eq!(c.len(), 1);
        assert_eq!(c.next_due(), Some(9 * S), "the stale entry is skipped");
        assert_eq!(c.ask(S, peer(1), &req(1), &gap(0), None), status::OK);
        assert!(c.is_empty() && c.pop_due(100 * S).is_none());
        // Another port of the same address is another flow.
        c.ask(0, peer(1), &req(1), &gap(1_000), None);
        c.ask(0, peer(2), &req(1), &gap(1_000), None);
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn bounded_per_address_in_total_and_in_gap() {
        let mut c = Callbacks::new(3, 5);
        assert_eq!(
            c.ask(0, peer(1), &req(1), &gap(MAX_GAP_MS + 1), None),
            status::IDLE_GAP
        );
        for f in 0..3 {
            assert_eq!(c.ask(0, peer(1), &req(f), &gap(1_000), None), status::OK);
        }
        assert_eq!(
            c.ask(0, peer(1), &req(9), &gap(1_000), None),
            status::IDLE_FULL
        );
        let other = SocketAddr::from(([203, 0, 113, 9], 1));
        assert_eq!(c.ask(0, other, &req(1), &gap(1_000), None), status::OK);
        assert_eq!(c.ask(0, other, &req(2), &gap(1_000), None), status::OK);
        assert_eq!(
            c.ask(0, other, &req(3), &gap(1_000), None),
            status::IDLE_FULL
        );
        // Sent ones free their places.
        while c.pop_due(S).is_some() {}
        assert_eq!(c.ask(S, peer(1), &req(9), &gap(1_000), None), status::OK);
    }
}
