//! Keeps raw UDP echo from ever sustaining a loop with another echo service.
//!
//! Raw echo answers a datagram, unchanged, to the address it claims to come from. One forged
//! datagram whose source is another echo service (another `npt serve`, an RFC 862 echo, or this
//! very socket) would otherwise bounce between the two for ever at the speed of the path: a
//! full core and ~170k packets/s for a self-loop on loopback. Framed packets cannot loop: a reply
//! kind is never answered. For raw echo this module decides, with three rules:
//!
//! 1. **Well-known ports.** A source port below 1024 is a service (echo 7, chargen 19, DNS, NTP,
//!    …), never a client socket, and is not answered.
//! 2. **Our own port number.** A source port equal to the port this socket serves is this socket
//!    itself (the self-loop) or a peer `npt serve` on the same port number (the usual setup, every
//!    hop on 7777): not answered.
//! 3. **Echo detection.** In a loop the *same payload* comes back from the *same peer* once per
//!    round. Each peer's last payload fingerprint is kept; the [`REPEAT_LIMIT`]-th consecutive
//!    identical payload from one peer, each within [`REPEAT_WINDOW_NS`] of the last, is not
//!    answered, and neither is anything more from that peer until it has been quiet for the
//!    window. So a loop through any number of echo services ends after at most `REPEAT_LIMIT`
//!    rounds: every round presents this socket with the same (peer, payload) again. Legitimate
//!    clients number their packets (npt probe, the line tester, sockperf), so consecutive
//!    payloads differ; a client that sends the *same* bytes more than `REPEAT_LIMIT` times in a
//!    row, each within a second, must vary them (docs/security.md says so).
//!
//! The table is direct-mapped (fixed memory: [`SLOTS`] entries) and keyed with a per-process
//! random hash key, so an attacker cannot aim collisions. A collision evicts a peer's state and
//! restarts its count; keeping a loop alive that way costs the attacker one forged packet per
//! round, the same as sending those packets itself, so there is no amplification either way.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};

use std::net::SocketAddr;

/// Consecutive identical payloads from one peer after which it is treated as an echo.
pub const REPEAT_LIMIT: u32 = 4;
/// How close together identical payloads must be to count as a repeat.
pub const REPEAT_WINDOW_NS: u64 = 1_000_000_000;
/// Table size (peers tracked at once).
pub const SLOTS: usize = 4096;
/// Bytes of payload hashed at each end (with the length): loops repeat the payload exactly,
/// clients' sequence numbers sit near the start; hashing 64 KiB datagrams whole would cost
/// more than echoing them.
const FINGERPRINT_EDGE: usize = 128;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Answer,
    /// Source port below 1024.
    WellKnownPort,
    /// Source port is this socket's own port number.
    OwnPort,
    /// The same payload keeps coming back from this peer.
    Echoing,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    /// Hash of the peer address (0 = empty).
    peer: u64,
    fingerprint: u64,
    repeats: u32,
    last_ns: u64,
}

pub struct LoopGuard {
    own_port: u16,
    keys: RandomState,
    slots: Box<[Slot]>,
}

impl LoopGuard {
    pub fn new(own_port: u16) -> LoopGuard {
        LoopGuard {
            own_port,
            keys: RandomState::new(),
            slots: vec![Slot::default(); SLOTS].into_boxed_slice(),
        }
    }

    /// Decides whether a raw datagram from `peer` may be echoed at time `now_ns`.
    pub fn check(&mut self, now_ns: u64, peer: SocketAddr, payload: &[u8]) -> Verdict {
        if peer.port() < 1024 {
            return Verdict::WellKnownPort;
        }
        if peer.port() == self.own_port {
            return Verdict::OwnPort;
        }
        let peer_key = self.peer_key(peer);
        let fp = self.hash(|h| {
            payload.len().hash(h);
            let head = payload.len().min(FINGERPRINT_EDGE);
            payload.get(..head).unwrap_or_default().hash(h);
            let tail = payload.len().saturating_sub(FINGERPRINT_EDGE).max(head);
            payload.get(tail..).unwrap_or_default().hash(h);
        });
        // NO-PANIC: `slot_of` is `% SLOTS` and `slots` holds SLOTS entries from `new` on.
        #[allow(clippy::indexing_slicing)]
        let slot = &mut self.slots[Self::slot_of(peer_key)];
        let recent = now_ns.saturating_sub(slot.last_ns) < REPEAT_WINDOW_NS;
        if slot.peer != peer_key || !recent {
            *slot = Slot {
                peer: peer_key,
                fingerprint: fp,
                repeats: 1,
                last_ns: now_ns,
            };
            return Verdict::Answer;
        }
        slot.last_ns = now_ns;
        if slot.repeats >= REPEAT_LIMIT {
            // Flagged as an echo: stays so while it keeps sending within the window.
            slot.fingerprint = fp;
            return Verdict::Echoing;
        }
        if slot.fingerprint == fp {
            slot.repeats += 1;
            if slot.repeats >= REPEAT_LIMIT {
                return Verdict::Echoing;
            }
        } else {
            slot.fingerprint = fp;
            slot.repeats = 1;
        }
        Verdict::Answer
    }

    fn peer_key(&self, peer: SocketAddr) -> u64 {
        self.hash(|h| peer.hash(h)) | 1
    }

    fn slot_of(peer_key: u64) -> usize {
        (peer_key >> 7) as usize % SLOTS
    }

    fn hash(&self, f: impl FnOnce(&mut std::hash::DefaultHasher)) -> u64 {
        let mut h = self.keys.build_hasher();
        f(&mut h);
        h.finish()
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // small test values (clippy.toml)
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn well_known_and_own_ports_are_never_answered() {
        let mut g = LoopGuard::new(7777);
        assert_eq!(g.check(0, addr("10.0.0.1:7"), b"x"), Verdict::WellKnownPort);
        assert_eq!(
            g.check(0, addr("10.0.0.1:1023"), b"x"),
            Verdict::WellKnownPort
        );
        assert_eq!(g.check(0, addr("127.0.0.1:7777"), b"x"), Verdict::OwnPort);
        assert_eq!(g.check(0, addr("10.0.0.1:1024"), b"x"), Verdict::Answer);
    }

    #[test]
    fn numbered_packets_are_always_answered() {
        let mut g = LoopGuard::new(7777);
        let peer = addr("10.0.0.1:40000");
        for seq in 0u32..100_000 {
            let now = u64::from(seq) * 10_000; // 100k pps
            assert_eq!(g.check(now, peer, &seq.to_be_bytes()), Verdict::Answer);
        }
    }

    #[test]
    fn a_loop_is_cut_after_the_repeat_limit_and_stays_cut() {
        let mut g = LoopGuard::new(7777);
        let peer = addr("10.0.0.2:9000");
        let p = b"forged payload";
        let answered = (0..1000)
            .take_while(|i| g.check(i * 20_000, peer, p) == Verdict::Answer)
            .count();
        assert_eq!(answered as u32, REPEAT_LIMIT - 1);
        // While the peer keeps sending within the window, even new payloads are refused.
        assert_eq!(g.check(30 * MS, peer, b"other"), Verdict::Echoing);
        // Quiet for the window: forgiven.
        assert_eq!(
            g.check(30 * MS + REPEAT_WINDOW_NS, peer, b"other"),
            Verdict::Answer
        );
    }

    #[test]
    fn slow_repeats_are_not_a_loop() {
        let mut g = LoopGuard::new(7777);
        let peer = addr("10.0.0.3:9000");
        for i in 0..20 {
            assert_eq!(
                g.check(i * (REPEAT_WINDOW_NS + MS), peer, b"ping"),
                Verdict::Answer
            );
        }
    }

    #[test]
    fn a_three_server_ring_is_cut_too() {
        // A forged packet circulating A → B → C → A: at A it always arrives from C.
        let mut a = LoopGuard::new(7001);
        let c = addr("127.0.0.1:7003");
        let mut rounds = 0;
        while a.check(rounds * 60_000, c, b"ring") == Verdict::Answer {
            rounds += 1;
            assert!(rounds < 100, "loop never cut");
        }
        assert_eq!(rounds as u32, REPEAT_LIMIT - 1);
    }

    #[test]
    fn peers_are_tracked_separately() {
        let mut g = LoopGuard::new(7777);
        let a = addr("10.0.0.1:5000");
        // A second peer in another slot (the hash key is random per process).
        let slot = |g: &LoopGuard, p| LoopGuard::slot_of(g.peer_key(p));
        let b = (5001..6000)
            .map(|port| SocketAddr::new(a.ip(), port))
            .find(|&b| slot(&g, b) != slot(&g, a))
            .unwrap();
        for i in 0..(REPEAT_LIMIT as u64 - 1) {
            assert_eq!(g.check(i, a, b"same"), Verdict::Answer);
            assert_eq!(g.check(i, b, b"same"), Verdict::Answer);
        }
        assert_eq!(g.check(10, a, b"same"), Verdict::Echoing);
        assert_eq!(g.check(10, b, b"new"), Verdict::Answer);
    }
}
