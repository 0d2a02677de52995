//! UDP bulk flows at the responder: what arrived of each `Up` flow (source socket and flow id),
//! counted by [`OneWay`] — datagrams, bytes, highest sequence number, one-way jitter — so that
//! a `Bulk` frame can be answered with a report of it ([`npt_wire::bulk`]). The responder sends
//! nothing for the data itself, and a report is never larger than the frame that asked for it.
//!
//! Pure (takes `now`) and bounded: at most `max` flows; when full, flows idle for
//! [`FLOW_IDLE_NS`] are forgotten, and while it is still full the datagrams of further flows are
//! not counted (the caller counts them as refused). Spoofed sources can therefore fill the
//! table, but not grow it, and live flows keep their counts.

use std::collections::HashMap;
use std::net::SocketAddr;

use npt_wire::bulk::{BulkReport, OneWay};

/// Flows one UDP socket counts at once.
pub const MAX_FLOWS: usize = 4096;
/// A flow with no datagram for this long may be forgotten (when the table is full).
pub const FLOW_IDLE_NS: u64 = 10_000_000_000;

struct Flow {
    counts: OneWay,
    first: u64,
    last: u64,
}

/// What became of a counted datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// The first datagram of a flow.
    New,
    Known,
    /// The table is full of live flows: not counted.
    Full,
}

pub struct Flows {
    map: HashMap<(SocketAddr, u32), Flow>,
    max: usize,
}

impl Flows {
    pub fn new(max: usize) -> Flows {
        Flows {
            map: HashMap::new(),
            max,
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// A datagram of flow `flow` from `peer` with `seq`, `send_ts` and `len` bytes at `now`.
    pub fn on_datagram(
        &mut self,
        now: u64,
        peer: SocketAddr,
        flow: u32,
        seq: u64,
        send_ts: u64,
        len: u64,
    ) -> Counted {
        let key = (peer, flow);
        let mut counted = Counted::Known;
        if !self.map.contains_key(&key) {
            if self.map.len() >= self.max {
                self.map
                    .retain(|_, f| now.saturating_sub(f.last) < FLOW_IDLE_NS);
            }
            if self.map.len() >= self.max {
                return Counted::Full;
            }
            counted = Counted::New;
        }
        let f = self.map.entry(key).or_insert(Flow {
            counts: OneWay::default(),
            first: now,
            last: now,
        });
        f.counts.on_datagram(seq, send_ts, now, len);
        f.last = now;
        counted
    }

    /// What arrived of `peer`'s flow `flow` (all zeros for a flow never seen).
    pub fn report(&self, now: u64, peer: SocketAddr, flow: u32) -> BulkReport {
        self.map
            .get(&(peer, flow))
            .map(|f| f.counts.report(now.saturating_sub(f.first)))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn peer(n: u8) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, n], 4000))
    }

    #[test]
    fn flows_are_counted_apart_and_reported() {
        let mut f = Flows::new(8);
        assert_eq!(f.on_datagram(0, peer(1), 1, 0, 0, 1000), Counted::New);
        assert_eq!(f.on_datagram(S, peer(1), 1, 3, 0, 1000), Counted::Known);
        assert_eq!(f.on_datagram(S, peer(1), 2, 0, 0, 500), Counted::New);
        assert_eq!(f.on_datagram(S, peer(2), 1, 0, 0, 500), Counted::New);
        let r = f.report(2 * S, peer(1), 1);
        assert_eq!((r.datagrams, r.bytes, r.expected), (2, 2000, 4));
        assert_eq!((r.lost(), r.elapsed_ns), (2, 2 * S));
        assert_eq!(f.report(0, peer(9), 1), BulkReport::default());
    }

    #[test]
    fn a_full_table_keeps_its_live_flows_and_forgets_idle_ones() {
        let mut f = Flows::new(2);
        f.on_datagram(0, peer(1), 1, 0, 0, 1);
        f.on_datagram(0, peer(2), 1, 0, 0, 1);
        assert_eq!(f.on_datagram(S, peer(3), 1, 0, 0, 1), Counted::Full);
        assert_eq!(f.len(), 2);
        f.on_datagram(11 * S, peer(1), 1, 1, 0, 1); // flow 1 stays alive
        assert_eq!(f.on_datagram(12 * S, peer(3), 1, 0, 0, 1), Counted::New);
        assert_eq!(
            f.report(12 * S, peer(1), 1).datagrams,
            2,
            "the live flow kept"
        );
        assert_eq!(
            f.report(12 * S, peer(2), 1).datagrams,
            0,
            "the idle flow forgotten"
        );
    }
}
