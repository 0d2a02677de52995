//! The DSCP/ECN marking of the UDP datagrams the server received, as the kernel tells it
//! (`IP_RECVTOS`, `IPV6_RECVTCLASS` on every UDP socket): a count per DSCP value and per ECN
//! codepoint, so a client's `--dscp 46` can be seen to arrive as 46 (or re-marked, or
//! bleached to 0) at the far end. In the exit summary, a periodic line while marked traffic
//! arrives, and `--metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

/// Datagrams received by DSCP value and by ECN codepoint.
#[derive(Debug)]
pub struct Marking {
    dscp: [AtomicU64; 64],
    ecn: [AtomicU64; 4],
}

impl Default for Marking {
    fn default() -> Marking {
        Marking {
            dscp: std::array::from_fn(|_| AtomicU64::new(0)),
            ecn: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

/// ECN codepoints by value (RFC 3168).
pub const ECN_NAMES: [&str; 4] = ["not-ect", "ect1", "ect0", "ce"];

impl Marking {
    /// Adds `n` datagrams that arrived with TOS byte `tos`.
    pub fn add(&self, tos: u8, n: u64) {
        if let Some(c) = self.dscp.get(usize::from(tos >> 2)) {
            c.fetch_add(n, Ordering::Relaxed);
        }
        if let Some(c) = self.ecn.get(usize::from(tos & 3)) {
            c.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// `(dscp, datagrams)` for every DSCP value seen, in order.
    pub fn dscp(&self) -> Vec<(u8, u64)> {
        (0u8..)
            .zip(&self.dscp)
            .map(|(d, c)| (d, c.load(Ordering::Relaxed)))
            .filter(|&(_, n)| n > 0)
            .collect()
    }

    /// Datagrams per ECN codepoint ([`ECN_NAMES`]).
    pub fn ecn(&self) -> [u64; 4] {
        std::array::from_fn(|i| self.ecn.get(i).map_or(0, |c| c.load(Ordering::Relaxed)))
    }

    /// Datagrams that arrived marked (a DSCP other than 0, or an ECN codepoint).
    pub fn marked(&self) -> u64 {
        let unmarked_dscp = self.dscp.first().map_or(0, |c| c.load(Ordering::Relaxed));
        let all: u64 = self.dscp.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        let ect: u64 = self.ecn().iter().skip(1).sum();
        (all - unmarked_dscp) + ect
    }

    /// `dscp 0: 12, 46: 1000; ecn ect0: 5` — only what was seen (ECN only when some datagram
    /// carried it); None before any datagram.
    pub fn text(&self) -> Option<String> {
        let dscp = self.dscp();
        if dscp.is_empty() {
            return None;
        }
        let list: Vec<String> = dscp.iter().map(|(d, n)| format!("{d}: {n}")).collect();
        let mut out = format!("dscp {}", list.join(", "));
        let ecn = self.ecn();
        let seen: Vec<String> = ECN_NAMES
            .iter()
            .zip(ecn)
            .skip(1)
            .filter(|&(_, n)| n > 0)
            .map(|(name, n)| format!("{name}: {n}"))
            .collect();
        if !seen.is_empty() {
            out.push_str(&format!("; ecn {}", seen.join(", ")));
        }
        Some(out)
    }
}

/// One batch's datagrams by TOS byte, published at the batch's end (no shared write per
/// datagram on the echo path).
#[derive(Debug)]
pub(crate) struct BatchMarks {
    counts: [u32; 256],
    touched: Vec<u8>,
}

impl Default for BatchMarks {
    fn default() -> BatchMarks {
        BatchMarks {
            counts: [0; 256],
            touched: Vec::with_capacity(4),
        }
    }
}

impl BatchMarks {
    pub fn count(&mut self, tos: u8) {
        if let Some(c) = self.counts.get_mut(usize::from(tos)) {
            if *c == 0 {
                self.touched.push(tos);
            }
            *c = c.saturating_add(1);
        }
    }

    pub fn publish(&mut self, m: &Marking) {
        for tos in self.touched.drain(..) {
            if let Some(c) = self.counts.get_mut(usize::from(tos)) {
                m.add(tos, u64::from(*c));
                *c = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagrams_count_by_dscp_and_ecn() {
        let m = Marking::default();
        assert_eq!(m.text(), None);
        let mut b = BatchMarks::default();
        for _ in 0..3 {
            b.count(46 << 2);
        }
        b.count(0);
        b.count((10 << 2) | 3);
        b.publish(&m);
        b.publish(&m);
        assert_eq!(m.dscp(), vec![(0, 1), (10, 1), (46, 3)]);
        assert_eq!(m.ecn(), [4, 0, 0, 1]);
        assert_eq!(m.marked(), 5);
        assert_eq!(m.text().unwrap(), "dscp 0: 1, 10: 1, 46: 3; ecn ce: 1");
    }
}
