//! What the UDP responder counts of each flow that asks for it ([`npt_wire::reflect`]): per
//! source socket and flow id, the frames received (duplicates included), refused, duplicated
//! and reordered, so each reply can carry the receive count and each flow report the totals.
//!
//! Sans-IO (every call takes `now`, monotonic ns) and bounded, because the key comes from the
//! network and a flood of new flow ids (or spoofed sources) must not grow memory:
//! - at most `max` flows ([`MAX_FLOWS`] in `npt serve`), 128 bytes each with its key, and 48
//!   in the index that finds them (a full table, with the hash table's slack, is about 4 MiB
//!   per UDP socket);
//! - when the table is full, flows idle for `idle_ns` ([`FLOW_IDLE_NS`]) are forgotten, at most
//!   once per [`SWEEP_EVERY_NS`] (a sweep walks the whole table; a flood must not buy one per
//!   packet);
//! - while it is still full, frames of further flows are **not tracked**: they are answered as
//!   an older responder would (no receive count), and the client then knows round trips only.
//!   Live flows keep their counts: a flood cannot evict them.
//!
//! Each of these is counted ([`TableStats`]), for `npt serve`'s summary and `--metrics`.

use std::collections::HashMap;
use std::net::SocketAddr;

use npt_wire::reflect::FlowReport;

use super::seen::{Arrival, Seen};

/// Flows one UDP socket counts at once.
pub const MAX_FLOWS: usize = 16_384;
/// A flow with no frame for this long may be forgotten (when the table is full).
pub const FLOW_IDLE_NS: u64 = 30_000_000_000;
/// A full table is swept for idle flows at most this often.
pub const SWEEP_EVERY_NS: u64 = 1_000_000_000;

/// One flow's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flow {
    pub received: u64,
    pub refused: u64,
    pub duplicated: u64,
    pub reordered: u64,
    seen: Seen,
    /// The last frame of any kind (to forget idle flows).
    last: u64,
}

impl Flow {
    pub fn report(&self) -> FlowReport {
        FlowReport {
            received: self.received,
            refused: self.refused,
            duplicated: self.duplicated,
            reordered: self.reordered,
        }
    }
}

/// What a flow table has done since it was last asked ([`FlowTable::take_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableStats {
    /// Flows started.
    pub new: u64,
    /// Frames of flows the full table could not take (answered without counts).
    pub untracked: u64,
    /// Idle flows forgotten to make room.
    pub evicted: u64,
}

type Key = (SocketAddr, u32);

/// The flows live in a vector, found through a hash index, and the table remembers the last
/// flow it was asked for: a batch is mostly runs of one flow's frames, and a run hashes its key
/// once instead of once per frame (SipHash of a socket address is a few hundred instructions,
/// as in [`crate::limiter`]).
pub struct FlowTable {
    index: HashMap<Key, usize>,
    slots: Vec<(Key, Flow)>,
    last: Option<(Key, usize)>,
    max: usize,
    idle_ns: u64,
    last_sweep: Option<u64>,
    stats: TableStats,
}

impl FlowTable {
    pub fn new(max: usize, idle_ns: u64) -> FlowTable {
        FlowTable {
            index: HashMap::new(),
            slots: Vec::new(),
            last: None,
            max,
            idle_ns,
            last_sweep: None,
            stats: TableStats::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The counts since the last call, and zero from here on.
    pub fn take_stats(&mut self) -> TableStats {
        std::mem::take(&mut self.stats)
    }

    /// A frame of `peer`'s flow `flow` with sequence number `seq` arrived and is answered: the
    /// flow's counts after it (its receive count includes it), or None when the table is full
    /// (not tracked).
    pub fn on_received(
        &mut self,
        now: u64,
        peer: SocketAddr,
        flow: u32,
        seq: u64,
    ) -> Option<&Flow> {
        let f = self.flow(now, (peer, flow))?;
        f.received += 1;
        match f.seen.on_arrival(seq) {
            Arrival::New => {}
            Arrival::Reordered => f.reordered += 1,
            Arrival::Duplicate => f.duplicated += 1,
        }
        Some(f)
    }

    /// A frame of the flow was refused: its counts after it, or None when not tracked.
    pub fn on_refused(&mut self, now: u64, peer: SocketAddr, flow: u32) -> Option<&Flow> {
        let f = self.flow(now, (peer, flow))?;
        f.refused += 1;
        Some(f)
    }

    /// The flow's counts, if it is tracked (a query neither starts nor counts in a flow).
    pub fn get(&mut self, now: u64, peer: SocketAddr, flow: u32) -> Option<&Flow> {
        let i = self.find(&(peer, flow))?;
        let (_, f) = self.slots.get_mut(i)?;
        f.last = now;
        Some(f)
    }

    /// The slot of `key`, if tracked: the last one asked for, else through the index.
    fn find(&mut self, key: &Key) -> Option<usize> {
        let i = match self.last {
            Some((k, i)) if k == *key => i,
            _ => *self.index.get(key)?,
        };
        self.last = Some((*key, i));
        Some(i)
    }

    /// The flow's entry, started if there is room (one hash lookup per run of one flow's
    /// frames while the table has room).
    fn flow(&mut self, now: u64, key: Key) -> Option<&mut Flow> {
        let i = match self.find(&key) {
            Some(i) => i,
            None => {
                if self.slots.len() >= self.max {
                    self.sweep(now);
                    if self.slots.len() >= self.max {
                        self.stats.untracked += 1;
                        return None;
                    }
                }
                self.stats.new += 1;
                self.slots.push((key, Flow::default()));
                let i = self.slots.len() - 1;
                self.index.insert(key, i);
                self.last = Some((key, i));
                i
            }
        };
        // `i` came from the index, the last lookup or the push above: always a slot.
        let (_, f) = self.slots.get_mut(i)?;
        f.last = now;
        Some(f)
    }

    /// Forgets the flows idle for `idle_ns` (at most once per [`SWEEP_EVERY_NS`]) and
    /// re-indexes the rest.
    fn sweep(&mut self, now: u64) {
        if self
            .last_sweep
            .is_some_and(|t| now.saturating_sub(t) < SWEEP_EVERY_NS)
        {
            return;
        }
        self.last_sweep = Some(now);
        let before = self.slots.len();
        let idle = self.idle_ns;
        self.slots
            .retain(|(_, f)| now.saturating_sub(f.last) < idle);
        self.index.clear();
        self.index
            .extend(self.slots.iter().enumerate().map(|(i, (k, _))| (*k, i)));
        self.last = None;
        self.stats.evicted += (before - self.slots.len()) as u64;
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
    fn each_flow_counts_received_refused_duplicated_reordered() {
        let mut t = FlowTable::new(8, FLOW_IDLE_NS);
        for seq in [0, 1, 3, 2, 2] {
            t.on_received(0, peer(1), 7, seq).unwrap();
        }
        assert_eq!(t.on_refused(0, peer(1), 7).unwrap().refused, 1);
        let f = t.on_received(0, peer(1), 7, 4).unwrap();
        assert_eq!(
            f.report(),
            FlowReport {
                received: 6,
                refused: 1,
                duplicated: 1,
                reordered: 1
            }
        );
        // Another flow id, and the same id from another socket, are other flows.
        assert_eq!(t.on_received(0, peer(1), 8, 0).unwrap().received, 1);
        assert_eq!(t.on_received(0, peer(2), 7, 0).unwrap().received, 1);
        assert_eq!(t.len(), 3);
        assert_eq!(t.take_stats().new, 3);
        assert!(t.get(0, peer(3), 7).is_none(), "a query starts no flow");
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn a_flow_refused_from_its_first_frame_is_counted() {
        let mut t = FlowTable::new(8, FLOW_IDLE_NS);
        for _ in 0..3 {
            t.on_refused(0, peer(1), 1);
        }
        let f = t.on_received(S, peer(1), 1, 3).unwrap();
        assert_eq!((f.received, f.refused), (1, 3));
    }

    /// A flood of new flow ids fills the table and no further: live flows keep their counts,
    /// the flood's frames go untracked, and idle flows make room only after the idle time,
    /// with at most one sweep a second however many frames arrive.
    #[test]
    fn a_flood_of_new_flows_cannot_grow_the_table_or_evict_live_flows() {
        let mut t = FlowTable::new(100, 10 * S);
        t.on_received(0, peer(1), 1, 0).unwrap();
        let mut now = 0;
        for id in 0..100_000u32 {
            now = u64::from(id) * 100_000; // 10,000 new flows a second for 10 s
            t.on_received(now, peer(9), id + 2, 0);
            if id % 1000 == 0 {
                t.on_received(now, peer(1), 1, u64::from(id)).unwrap();
            }
        }
        assert_eq!(t.len(), 100);
        let s = t.take_stats();
        assert_eq!(s.new, 100, "the live flow and 99 of the flood");
        assert_eq!(s.untracked, 100_000 - 99);
        assert_eq!(s.evicted, 0, "nothing was idle for 10 s yet");
        assert_eq!(t.get(now, peer(1), 1).unwrap().received, 101);
        // 10 s after the flood stopped its flows are idle: the next new flow sweeps them.
        let later = now + 10 * S;
        t.on_received(later - S, peer(1), 1, 200_000).unwrap();
        assert!(t.on_received(later, peer(3), 1, 0).is_some());
        let s = t.take_stats();
        assert_eq!((s.evicted, s.new), (99, 1));
        assert_eq!(t.get(later, peer(1), 1).unwrap().received, 102, "kept");
    }

    #[test]
    fn an_entry_is_128_bytes_with_its_key() {
        assert_eq!(std::mem::size_of::<(Key, Flow)>(), 128);
    }

    #[test]
    fn a_full_table_sweeps_at_most_once_a_second() {
        let mut t = FlowTable::new(2, S);
        t.on_received(0, peer(1), 1, 0);
        t.on_received(0, peer(2), 1, 0);
        assert!(
            t.on_received(S / 2, peer(3), 1, 0).is_none(),
            "nothing idle"
        );
        // Idle now, but the last sweep was less than a second ago.
        assert!(t.on_received(S + S / 4, peer(3), 1, 0).is_none());
        assert!(t.on_received(2 * S, peer(3), 1, 0).is_some(), "swept");
        assert_eq!(t.take_stats().evicted, 2);
    }
}
