//! UDP bulk flows at the responder: what arrived of each `Up` flow (source socket and flow id),
//! counted by [`OneWay`] — datagrams, bytes, highest sequence number, one-way jitter — so that
//! a `Bulk` frame can be answered with a report of it ([`npt_wire::bulk`]). The responder sends
//! nothing for the data itself, and a report is never larger than the frame that asked for it.
//!
//! The datagrams of a flow the per-source budget refused are counted too ([`Flows::on_refused`])
//! and reported with the counts ([`npt_wire::bulk::write_refused`]), so the client tells them
//! from path loss.
//!
//! Pure (takes `now`) and bounded: at most `max` flows; when full, flows idle for
//! [`FLOW_IDLE_NS`] are forgotten (at most once a second: a sweep walks the table), and while it
//! is still full the datagrams of further flows are not counted (the caller counts them as
//! refused). Spoofed sources can therefore fill the table, but not grow it, and live flows keep
//! their counts.
//!
//! UDP down ([`grant_down`]) is the one answer larger than its request: the client paces small
//! `Bulk` frames ("pulls"), each asking for up to [`MAX_BURST`] `BulkData` datagrams, and the
//! responder sends them at once — stateless (datagram `j` of pull `p` is numbered `p × k + j`).
//! Because a UDP source address can be forged, only sources that cannot be forged get it: a
//! session that passed the keyed `--token` handshake (its frames are sealed and tied to the
//! address that did the handshake), or a loopback source (the kernel drops loopback sources
//! arriving from outside). Every other pull is refused with a bare header no longer than the
//! pull, and counted; a private LAN address is not enough (forged, it would aim the flood at a
//! host on the LAN). What is sent is charged, datagram by datagram, to the open limits.

use std::collections::HashMap;
use std::net::SocketAddr;

use npt_wire::bulk::{BulkReport, OneWay};

/// Flows one UDP socket counts at once.
pub const MAX_FLOWS: usize = 4096;
/// A flow with no datagram for this long may be forgotten (when the table is full).
pub const FLOW_IDLE_NS: u64 = 10_000_000_000;

struct Flow {
    counts: OneWay,
    /// Datagrams of the flow the per-source budget refused.
    refused: u64,
    /// The first `BulkData` datagram (a report request may come before it): the report's
    /// time span begins here.
    first: Option<u64>,
    /// The last datagram of any kind (for forgetting idle flows).
    last: u64,
    /// The last `BulkData` datagram: a report's time span ends here, not at the request that
    /// asks for it (after the stop the client asks until answered; a retry can come 200 ms
    /// after the data, which would read as a lower rate).
    last_data: u64,
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
    last_sweep: Option<u64>,
}

/// A full table is swept for idle flows at most this often.
const SWEEP_EVERY_NS: u64 = 1_000_000_000;

impl Flows {
    pub fn new(max: usize) -> Flows {
        Flows {
            map: HashMap::new(),
            max,
            last_sweep: None,
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// A datagram of flow `flow` from `peer` with `seq`, `send_ts` and `len` bytes at `now`:
    /// `data` (`BulkData`), or a report request (`Bulk`), which counts in the sequence and the
    /// bytes but not in the jitter or the time span.
    #[allow(clippy::too_many_arguments)]
    pub fn on_datagram(
        &mut self,
        now: u64,
        peer: SocketAddr,
        flow: u32,
        seq: u64,
        send_ts: u64,
        len: u64,
        data: bool,
    ) -> Counted {
        let Some((f, counted)) = self.flow(now, (peer, flow)) else {
            return Counted::Full;
        };
        if data {
            f.counts.on_datagram(seq, send_ts, now, len);
            f.first.get_or_insert(now);
            f.last_data = now;
        } else {
            f.counts.on_request(seq, len);
        }
        counted
    }

    /// A datagram of the flow was refused by the per-source budget (counted like any other).
    pub fn on_refused(&mut self, now: u64, peer: SocketAddr, flow: u32) -> Counted {
        match self.flow(now, (peer, flow)) {
            Some((f, counted)) => {
                f.refused += 1;
                counted
            }
            None => Counted::Full,
        }
    }

    /// The flow's entry (started if there is room), and whether it is new.
    fn flow(&mut self, now: u64, key: (SocketAddr, u32)) -> Option<(&mut Flow, Counted)> {
        let mut counted = Counted::Known;
        if !self.map.contains_key(&key) {
            if self.map.len() >= self.max
                && self
                    .last_sweep
                    .is_none_or(|t| now.saturating_sub(t) >= SWEEP_EVERY_NS)
            {
                self.last_sweep = Some(now);
                self.map
                    .retain(|_, f| now.saturating_sub(f.last) < FLOW_IDLE_NS);
            }
            if self.map.len() >= self.max {
                return None;
            }
            counted = Counted::New;
        }
        let f = self.map.entry(key).or_insert(Flow {
            counts: OneWay::default(),
            refused: 0,
            first: None,
            last: now,
            last_data: now,
        });
        f.last = now;
        Some((f, counted))
    }

    /// What arrived of `peer`'s flow `flow` (all zeros for a flow never seen), over the time
    /// from its first data datagram to its last.
    pub fn report(&self, peer: SocketAddr, flow: u32) -> BulkReport {
        self.map
            .get(&(peer, flow))
            .map(|f| {
                let first = f.first.unwrap_or(f.last_data);
                f.counts.report(f.last_data.saturating_sub(first))
            })
            .unwrap_or_default()
    }

    /// The flow's datagrams the budget refused (0 for a flow never seen).
    pub fn refused(&self, peer: SocketAddr, flow: u32) -> u64 {
        self.map.get(&(peer, flow)).map_or(0, |f| f.refused)
    }
}

/// The most datagrams one pull may ask for.
pub const MAX_BURST: u64 = 64;
/// The largest datagram UDP down sends (the largest UDP payload over IPv4).
pub const MAX_DOWN_SIZE: u32 = 65_507;

/// Why a pull got nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DownRefused {
    /// Not authenticated and not loopback: UDP down would make the server an amplifier.
    Stranger,
    /// A datagram size below a header or above [`MAX_DOWN_SIZE`], or an ask below one.
    Malformed,
}

/// What a pull asking `reply_len` bytes in datagrams of `size` bytes is granted: how many
/// datagrams, at most [`MAX_BURST`]. `trusted`: the source passed the `--token` handshake or
/// is loopback.
pub fn grant_down(trusted: bool, size: u32, reply_len: u32) -> Result<u64, DownRefused> {
    if !trusted {
        return Err(DownRefused::Stranger);
    }
    let min = u32::try_from(npt_wire::frame::HEADER_LEN).unwrap_or(u32::MAX);
    if !(min..=MAX_DOWN_SIZE).contains(&size) || reply_len < size {
        return Err(DownRefused::Malformed);
    }
    Ok(u64::from(reply_len / size).min(MAX_BURST))
}

/// Whether a source may have UDP down without `--token`: loopback only (see the module doc).
pub fn loopback(peer: SocketAddr) -> bool {
    match peer.ip() {
        std::net::IpAddr::V4(v4) => v4.is_loopback(),
        std::net::IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
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
        assert_eq!(f.on_datagram(0, peer(1), 1, 0, 0, 1000, true), Counted::New);
        assert_eq!(
            f.on_datagram(S, peer(1), 1, 3, 0, 1000, true),
            Counted::Known
        );
        assert_eq!(f.on_datagram(S, peer(1), 2, 0, 0, 500, true), Counted::New);
        assert_eq!(f.on_datagram(S, peer(2), 1, 0, 0, 500, true), Counted::New);
        let r = f.report(peer(1), 1);
        assert_eq!((r.datagrams, r.bytes, r.expected), (2, 2000, 4));
        assert_eq!((r.lost(), r.elapsed_ns), (2, S));
        assert_eq!(f.report(peer(9), 1), BulkReport::default());
    }

    /// The lab case that read 9.43–9.53 instead of 9.77 Mbit/s through a 10 Mbit/s link with
    /// 6 ms of jitter: data crossed a full 120 ms queue; after the stop the first report
    /// request was dropped by it, and the retry 200 ms later crossed it empty.
    #[test]
    fn a_late_report_request_stretches_neither_the_span_nor_the_jitter() {
        const MS: u64 = 1_000_000;
        let mut f = Flows::new(8);
        // 1,000 data datagrams 1 ms apart, each 130 ms in transit (a full queue).
        for i in 0..1000 {
            f.on_datagram(130 * MS + i * MS, peer(1), 1, i, i * MS, 1200, true);
        }
        // The retry, sent 200 ms after the last datum, crosses the empty link in 10 ms.
        let sent = 999 * MS + 200 * MS;
        f.on_datagram(sent + 10 * MS, peer(1), 1, 1000, sent, 88, false);
        let r = f.report(peer(1), 1);
        assert_eq!(r.elapsed_ns, 999 * MS, "first to last data datagram");
        assert_eq!((r.datagrams, r.expected), (1001, 1001));
        assert_eq!(r.jitter_ns, 0, "the data's transit never varied");
    }

    /// The tester's first report request leaves before the data (its round trip is the
    /// empty path's); the span still begins at the data.
    #[test]
    fn a_request_before_the_data_does_not_start_the_span() {
        const MS: u64 = 1_000_000;
        let mut f = Flows::new(8);
        f.on_datagram(10 * MS, peer(1), 1, 0, 0, 88, false);
        for i in 1..=100 {
            f.on_datagram(20 * MS + i * MS, peer(1), 1, i, i * MS, 1200, true);
        }
        let r = f.report(peer(1), 1);
        assert_eq!(r.elapsed_ns, 99 * MS);
        assert_eq!((r.datagrams, r.expected), (101, 101));
    }

    #[test]
    fn udp_down_is_for_the_trusted_and_bounded() {
        assert_eq!(grant_down(false, 1200, 12_000), Err(DownRefused::Stranger));
        assert_eq!(grant_down(true, 1200, 12_000), Ok(10));
        assert_eq!(grant_down(true, 1200, u32::MAX), Ok(MAX_BURST));
        assert_eq!(grant_down(true, 10, 1200), Err(DownRefused::Malformed));
        assert_eq!(
            grant_down(true, 70_000, 70_000),
            Err(DownRefused::Malformed)
        );
        assert_eq!(grant_down(true, 1200, 100), Err(DownRefused::Malformed));
        assert!(loopback(SocketAddr::from(([127, 0, 0, 2], 1))));
        assert!(!loopback(peer(1)), "a documentation address");
        assert!(
            !loopback(SocketAddr::from(([10, 0, 0, 1], 1))),
            "private is not enough"
        );
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:9".parse().unwrap();
        assert!(loopback(mapped));
    }

    #[test]
    fn refused_datagrams_are_counted_apart() {
        let mut f = Flows::new(2);
        assert_eq!(
            f.on_refused(0, peer(1), 1),
            Counted::New,
            "refused from the first"
        );
        f.on_datagram(0, peer(1), 1, 1, 0, 100, true);
        f.on_refused(0, peer(1), 1);
        assert_eq!(f.refused(peer(1), 1), 2);
        let r = f.report(peer(1), 1);
        assert_eq!(
            (r.datagrams, r.expected),
            (1, 2),
            "the refused are not received"
        );
        f.on_datagram(0, peer(2), 1, 0, 0, 1, true);
        assert_eq!(f.on_refused(0, peer(3), 1), Counted::Full);
        assert_eq!(f.refused(peer(3), 1), 0);
    }

    #[test]
    fn a_full_table_keeps_its_live_flows_and_forgets_idle_ones() {
        let mut f = Flows::new(2);
        f.on_datagram(0, peer(1), 1, 0, 0, 1, true);
        f.on_datagram(0, peer(2), 1, 0, 0, 1, true);
        assert_eq!(f.on_datagram(S, peer(3), 1, 0, 0, 1, true), Counted::Full);
        assert_eq!(f.len(), 2);
        f.on_datagram(11 * S, peer(1), 1, 1, 0, 1, true); // flow 1 stays alive
        assert_eq!(
            f.on_datagram(12 * S, peer(3), 1, 0, 0, 1, true),
            Counted::New
        );
        assert_eq!(f.report(peer(1), 1).datagrams, 2, "the live flow kept");
        assert_eq!(f.report(peer(2), 1).datagrams, 0, "the idle flow forgotten");
    }
}
