//! A node's own transit time: how long a datagram it forwards spends inside it, from the
//! instant the emulator delivers it into one of the node's TUN devices to the instant the
//! emulator reads it back out of one (kernel in, a relay program or the kernel's forwarding,
//! kernel out). A relay's forwarding is real delay on the paths through it that the links'
//! figures leave out; this is the lab's own reading of it.
//!
//! The datagram that leaves is told from the one that came in by its UDP payload alone: a
//! user-space relay (socat) rewrites addresses and ports, so only the payload is the same. The
//! wire thread hands each packet it delivers into a node ([`Transit::delivered`]) and each it
//! reads from one ([`Transit::sent`]) with `now`; sans-IO, so the tests run on a virtual
//! clock. Unmatched packets cost a table entry until they age out: most nodes are endpoints.
//!
//! Bounded: at most [`HELD`] deliveries are remembered, none longer than [`MAX_AGE`]; an
//! unmatched one pushed out by newer ones is counted ([`TransitStats::evicted`]). A datagram
//! sent back to the address and port it came from is the node answering (an echo server),
//! not forwarding, and is not counted. Neither are TCP, fragments, or a payload a tunnel
//! changes on the way through: they never match.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ops::AddAssign;
use std::time::{Duration, Instant};

use npt_stats::{Histogram, StatsError};

/// Deliveries into a node remembered at once (the oldest is forgotten beyond this).
pub const HELD: usize = 4096;
/// A delivery older than this is not matched: the node did not forward it.
pub const MAX_AGE: Duration = Duration::from_secs(1);

const UDP: u8 = 17;

/// A UDP datagram in an IP packet: its endpoints and its payload.
#[derive(Debug, PartialEq)]
pub struct Datagram<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub payload: &'a [u8],
}

/// The UDP datagram an IP packet carries (IPv4, or IPv6 with UDP as its first header), whole
/// and unfragmented; `None` for anything else, including truncated or malformed packets.
pub fn datagram(pkt: &[u8]) -> Option<Datagram<'_>> {
    let b = |i: usize| pkt.get(i).copied();
    let be16 = |i: usize| Some(u16::from_be_bytes([b(i)?, b(i + 1)?]));
    let (src, dst, udp) = match b(0)? >> 4 {
        4 => {
            let ihl = usize::from(b(0)? & 0x0f) * 4;
            let total = usize::from(be16(2)?);
            // More fragments, or an offset: a fragment's payload is not the datagram's.
            if ihl < 20 || be16(6)? & 0x3fff != 0 || b(9)? != UDP {
                return None;
            }
            let addr = |i: usize| -> Option<IpAddr> {
                Some(Ipv4Addr::new(b(i)?, b(i + 1)?, b(i + 2)?, b(i + 3)?).into())
            };
            (addr(12)?, addr(16)?, pkt.get(ihl..total)?)
        }
        6 => {
            let len = usize::from(be16(4)?);
            if b(6)? != UDP {
                return None;
            }
            let addr = |i: usize| -> Option<IpAddr> {
                let a: [u8; 16] = pkt.get(i..i + 16)?.try_into().ok()?;
                Some(Ipv6Addr::from(a).into())
            };
            (addr(8)?, addr(24)?, pkt.get(40..40 + len)?)
        }
        _ => return None,
    };
    let ub = |i: usize| udp.get(i).copied();
    let ub16 = |i: usize| Some(u16::from_be_bytes([ub(i)?, ub(i + 1)?]));
    let ulen = usize::from(ub16(4)?);
    Some(Datagram {
        src: SocketAddr::new(src, ub16(0)?),
        dst: SocketAddr::new(dst, ub16(2)?),
        payload: udp.get(8..ulen)?,
    })
}

/// What a node forwarded: per (link in, link out) pair, its transit times (ns), and the
/// deliveries forgotten unmatched because newer ones filled the table. A value that adds up.
#[derive(Clone, Debug, Default)]
pub struct TransitStats {
    /// `(in_link, out_link, transit times)`, links by their position in the topology file.
    pub pairs: Vec<(usize, usize, Histogram)>,
    pub evicted: u64,
}

impl TransitStats {
    /// Every pair's times together.
    pub fn total(&self) -> Histogram {
        let mut h = Histogram::default();
        for (_, _, p) in &self.pairs {
            h += p;
        }
        h
    }

    /// What was recorded since `earlier`, a reading of these same stats (pairs it lacks were
    /// new since).
    pub fn since(&self, earlier: &TransitStats) -> Result<TransitStats, StatsError> {
        let pairs = self
            .pairs
            .iter()
            .map(|(i, o, h)| {
                let before = earlier.pairs.iter().find(|(a, b, _)| (*a, *b) == (*i, *o));
                let h = match before {
                    Some((_, _, b)) => h.since(b)?,
                    None => h.clone(),
                };
                Ok((*i, *o, h))
            })
            .collect::<Result<_, StatsError>>()?;
        Ok(TransitStats {
            pairs,
            evicted: self.evicted.saturating_sub(earlier.evicted),
        })
    }

    fn record(&mut self, in_link: usize, out_link: usize, ns: u64) {
        match self
            .pairs
            .iter_mut()
            .find(|(i, o, _)| (*i, *o) == (in_link, out_link))
        {
            Some((_, _, h)) => h.record(ns),
            None => {
                let mut h = Histogram::default();
                h.record(ns);
                self.pairs.push((in_link, out_link, h));
            }
        }
    }
}

impl AddAssign<&TransitStats> for TransitStats {
    fn add_assign(&mut self, o: &TransitStats) {
        self.evicted += o.evicted;
        for (i, out, h) in &o.pairs {
            match self
                .pairs
                .iter_mut()
                .find(|(a, b, _)| (*a, *b) == (*i, *out))
            {
                Some((_, _, mine)) => *mine += h,
                None => self.pairs.push((*i, *out, h.clone())),
            }
        }
    }
}

/// A delivery remembered: when, through which link, from where.
struct Held {
    at: Instant,
    seq: u64,
    in_link: usize,
    src: SocketAddr,
}

/// One node's matcher of datagrams out to datagrams in.
pub struct Transit {
    hasher: foldhash::fast::RandomState,
    held: HashMap<u64, Held, foldhash::fast::RandomState>,
    /// (payload hash, seq) of every delivery remembered, oldest first; entries matched since
    /// stay until they reach the front (the `seq` tells them apart from a newer delivery of
    /// the same payload).
    order: VecDeque<(u64, u64)>,
    seq: u64,
    stats: TransitStats,
}

impl Default for Transit {
    fn default() -> Transit {
        Transit {
            hasher: foldhash::fast::RandomState::default(),
            // Grown as needed: a node that receives little costs little.
            held: HashMap::with_hasher(foldhash::fast::RandomState::default()),
            order: VecDeque::new(),
            seq: 0,
            stats: TransitStats::default(),
        }
    }
}

impl Transit {
    /// The emulator wrote `pkt` into this node, through link `in_link`, at `now`.
    pub fn delivered(&mut self, now: Instant, pkt: &[u8], in_link: usize) {
        let Some(d) = datagram(pkt) else {
            return;
        };
        self.forget_old(now);
        let key = self.hasher.hash_one(d.payload);
        // A payload already held keeps its first delivery: a forwarder sends the copies in
        // the order they came, so the first to leave is matched with the first that came.
        if self.held.contains_key(&key) {
            return;
        }
        if self.order.len() >= HELD {
            self.pop_oldest(true);
        }
        self.seq += 1;
        self.held.insert(
            key,
            Held {
                at: now,
                seq: self.seq,
                in_link,
                src: d.src,
            },
        );
        self.order.push_back((key, self.seq));
    }

    /// The emulator read `pkt` from this node, from its end of link `out_link`, at `now`: if
    /// it carries a payload delivered into the node (and not back to where it came from), the
    /// time it spent inside, which is recorded.
    pub fn sent(&mut self, now: Instant, pkt: &[u8], out_link: usize) -> Option<Duration> {
        let d = datagram(pkt)?;
        if self.held.is_empty() {
            return None;
        }
        let key = self.hasher.hash_one(d.payload);
        let h = self.held.remove(&key)?;
        let took = now.checked_duration_since(h.at)?;
        if took > MAX_AGE || d.dst == h.src {
            return None;
        }
        self.stats.record(
            h.in_link,
            out_link,
            u64::try_from(took.as_nanos()).unwrap_or(u64::MAX),
        );
        Some(took)
    }

    pub fn stats(&self) -> &TransitStats {
        &self.stats
    }

    /// Deliveries remembered now.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Drops, from the front of the order, what was matched since and what is too old.
    fn forget_old(&mut self, now: Instant) {
        while let Some(&(key, seq)) = self.order.front() {
            let live = self
                .held
                .get(&key)
                .is_some_and(|h| h.seq == seq && now.saturating_duration_since(h.at) <= MAX_AGE);
            if live {
                break;
            }
            self.pop_oldest(false);
        }
    }

    /// Drops the oldest remembered delivery; `evict`: count it if it was still unmatched.
    fn pop_oldest(&mut self, evict: bool) {
        let Some((key, seq)) = self.order.pop_front() else {
            return;
        };
        if self.held.get(&key).is_some_and(|h| h.seq == seq) {
            self.held.remove(&key);
            if evict {
                self.stats.evicted += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 UDP packet `src` → `dst` carrying `payload`.
    fn v4(src: &str, dst: &str, payload: &[u8]) -> Vec<u8> {
        npt_testkit::raw::udp4(src.parse().unwrap(), dst.parse().unwrap(), payload)
    }

    fn v6(src: &str, dst: &str, payload: &[u8]) -> Vec<u8> {
        let (s, d): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
        let (SocketAddr::V6(s), SocketAddr::V6(d)) = (s, d) else {
            panic!("v6")
        };
        let len = u16::try_from(8 + payload.len()).unwrap();
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&len.to_be_bytes());
        p.extend_from_slice(&[UDP, 64]);
        p.extend_from_slice(&s.ip().octets());
        p.extend_from_slice(&d.ip().octets());
        p.extend_from_slice(&s.port().to_be_bytes());
        p.extend_from_slice(&d.port().to_be_bytes());
        p.extend_from_slice(&len.to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        p
    }

    const IN: &str = "10.0.2.1:40000";
    const RELAY: &str = "10.0.2.2:9000";
    const OUT: &str = "10.0.3.1:50000";
    const TARGET: &str = "10.0.3.2:7777";

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_relayed_datagram_is_matched_with_its_time_inside_per_link_pair() {
        let t0 = Instant::now();
        let mut t = Transit::default();
        t.delivered(t0, &v4(IN, RELAY, b"seq 1"), 1);
        t.delivered(t0 + ms(1), &v4(IN, RELAY, b"seq 2"), 1);
        // Out with other addresses and ports, on the other link; the second one first.
        let took = t.sent(t0 + ms(3), &v4(OUT, TARGET, b"seq 2"), 2);
        assert_eq!(took, Some(ms(2)));
        assert_eq!(
            t.sent(t0 + ms(4), &v4(OUT, TARGET, b"seq 1"), 2),
            Some(ms(4))
        );
        // Matched once only.
        assert_eq!(t.sent(t0 + ms(5), &v4(OUT, TARGET, b"seq 1"), 2), None);
        // And the reply back the other way, a pair of its own.
        t.delivered(t0 + ms(6), &v4(TARGET, OUT, b"reply 1"), 2);
        assert_eq!(
            t.sent(t0 + ms(7), &v4(RELAY, IN, b"reply 1"), 1),
            Some(ms(1))
        );
        let s = t.stats();
        assert_eq!(s.pairs.len(), 2);
        assert_eq!(
            (s.pairs[0].0, s.pairs[0].1, s.pairs[0].2.count()),
            (1, 2, 2)
        );
        assert_eq!(
            (s.pairs[1].0, s.pairs[1].1, s.pairs[1].2.count()),
            (2, 1, 1)
        );
        assert_eq!(s.total().count(), 3);
        assert_eq!(s.total().max_ns(), t.stats().pairs[0].2.max_ns());
        assert_eq!(t.held(), 0);
    }

    #[test]
    fn what_the_node_did_not_forward_is_not_counted() {
        let t0 = Instant::now();
        let mut t = Transit::default();
        // A datagram the node originates.
        assert_eq!(t.sent(t0, &v4(OUT, TARGET, b"mine"), 2), None);
        // One delivered to it, then a different payload out.
        t.delivered(t0, &v4(IN, RELAY, b"query"), 1);
        assert_eq!(t.sent(t0 + ms(1), &v4(OUT, TARGET, b"other"), 2), None);
        // An echo: the same payload straight back to the address and port it came from.
        assert_eq!(t.sent(t0 + ms(1), &v4(RELAY, IN, b"query"), 1), None);
        assert_eq!(t.stats().total().count(), 0);
        assert_eq!(t.held(), 0, "the echo used up its delivery");
    }

    #[test]
    fn a_delivery_older_than_max_age_is_not_matched_and_is_forgotten() {
        let t0 = Instant::now();
        let mut t = Transit::default();
        t.delivered(t0, &v4(IN, RELAY, b"late"), 1);
        let late = t0 + MAX_AGE + ms(1);
        assert_eq!(t.sent(late, &v4(OUT, TARGET, b"late"), 2), None);
        t.delivered(t0, &v4(IN, RELAY, b"old"), 1);
        t.delivered(late, &v4(IN, RELAY, b"new"), 1);
        assert_eq!(t.held(), 1, "the old one aged out");
        assert_eq!(t.stats().evicted, 0, "ageing out is not an eviction");
        // Just inside the age still matches.
        assert_eq!(
            t.sent(late + MAX_AGE, &v4(OUT, TARGET, b"new"), 2),
            Some(MAX_AGE)
        );
    }

    #[test]
    fn the_table_is_bounded_and_counts_what_it_pushed_out() {
        let t0 = Instant::now();
        let mut t = Transit::default();
        let n = HELD + 100;
        for i in 0..n {
            t.delivered(t0, &v4(IN, RELAY, format!("p{i}").as_bytes()), 1);
        }
        assert_eq!(t.held(), HELD);
        assert!(t.order.len() <= HELD);
        assert_eq!(t.stats().evicted, 100);
        assert_eq!(t.sent(t0, &v4(OUT, TARGET, b"p99"), 2), None, "pushed out");
        assert_eq!(
            t.sent(t0, &v4(OUT, TARGET, b"p100"), 2),
            Some(Duration::ZERO)
        );
        // Matched entries still in the order are not evictions when they leave it.
        for i in 101..n {
            t.sent(t0, &v4(OUT, TARGET, format!("p{i}").as_bytes()), 2);
        }
        for i in 0..HELD {
            t.delivered(t0, &v4(IN, RELAY, format!("q{i}").as_bytes()), 1);
        }
        assert_eq!(t.stats().evicted, 100);
        assert_eq!(t.stats().total().count(), u64::try_from(HELD).unwrap());
    }

    #[test]
    fn copies_of_one_payload_match_first_in_first_out() {
        let t0 = Instant::now();
        let mut t = Transit::default();
        t.delivered(t0, &v4(IN, RELAY, b"dup"), 1);
        t.delivered(t0 + ms(2), &v4(IN, RELAY, b"dup"), 1);
        assert_eq!(t.sent(t0 + ms(3), &v4(OUT, TARGET, b"dup"), 2), Some(ms(3)));
        assert_eq!(t.sent(t0 + ms(4), &v4(OUT, TARGET, b"dup"), 2), None);
    }

    #[test]
    fn ipv6_udp_is_matched_and_other_packets_are_ignored() {
        let t0 = Instant::now();
        let mut t = Transit::default();
        t.delivered(t0, &v6("[fd00::1]:4000", "[fd00::2]:9000", b"six"), 0);
        assert_eq!(
            t.sent(
                t0 + ms(1),
                &v6("[fd01::1]:5000", "[fd01::2]:7777", b"six"),
                1
            ),
            Some(ms(1))
        );
        // TCP, an IPv4 fragment, and another IP version are not datagrams.
        let mut tcp = v4(IN, RELAY, b"tcp");
        tcp[9] = 6;
        let mut frag = v4(IN, RELAY, b"frag");
        frag[6] = 0x20; // more fragments
        let mut v5 = v4(IN, RELAY, b"v5");
        v5[0] = 0x55;
        for p in [&tcp, &frag, &v5] {
            assert_eq!(datagram(p), None);
            t.delivered(t0, p, 0);
        }
        assert_eq!(t.held(), 0);
        let p = v4(IN, RELAY, b"x");
        let d = datagram(&p).unwrap();
        assert_eq!(
            (d.src, d.dst, d.payload),
            (IN.parse().unwrap(), RELAY.parse().unwrap(), &b"x"[..])
        );
    }

    /// Every prefix and some corruptions of real packets: never a panic, and a packet cut short
    /// is never read as a datagram.
    #[test]
    fn truncated_or_corrupt_packets_never_panic() {
        let t0 = Instant::now();
        let mut t = Transit::default();
        for whole in [
            v4(IN, RELAY, b"payload!"),
            v6("[fd00::1]:4000", "[fd00::2]:9000", b"payload!"),
        ] {
            for cut in 0..whole.len() {
                let p = &whole[..cut];
                assert_eq!(datagram(p), None, "cut at {cut}");
                t.delivered(t0, p, 0);
                t.sent(t0, p, 0);
            }
            for i in 0..whole.len() {
                for v in [0u8, 0x0f, 0xff] {
                    let mut p = whole.clone();
                    p[i] = v;
                    let _ = datagram(&p);
                    t.delivered(t0, &p, 0);
                    t.sent(t0, &p, 1);
                }
            }
        }
        // A header length past the total, a UDP length under its header.
        let mut p = v4(IN, RELAY, b"abc");
        p[0] = 0x4f;
        assert_eq!(datagram(&p), None);
        let mut p = v4(IN, RELAY, b"abc");
        p[24..26].copy_from_slice(&4u16.to_be_bytes());
        assert_eq!(datagram(&p), None);
    }

    #[test]
    fn stats_add_up_per_pair() {
        let t0 = Instant::now();
        let mut a = Transit::default();
        a.delivered(t0, &v4(IN, RELAY, b"1"), 1);
        a.sent(t0 + ms(1), &v4(OUT, TARGET, b"1"), 2);
        let mut b = Transit::default();
        b.delivered(t0, &v4(IN, RELAY, b"1"), 1);
        b.sent(t0 + ms(2), &v4(OUT, TARGET, b"1"), 2);
        b.delivered(t0, &v4(TARGET, OUT, b"2"), 2);
        b.sent(t0 + ms(2), &v4(RELAY, IN, b"2"), 1);
        let mut sum = a.stats().clone();
        sum += b.stats();
        assert_eq!(sum.pairs.len(), 2);
        assert_eq!(sum.pairs[0].2.count(), 2);
        assert_eq!(sum.total().count(), 3);
        let back = sum.since(a.stats()).unwrap();
        assert_eq!(back.pairs[0].2.count(), 1);
        assert_eq!(back.pairs[0].2.max_ns(), b.stats().pairs[0].2.max_ns());
        assert!(b.stats().since(&sum).is_err(), "not an earlier reading");
    }
}
