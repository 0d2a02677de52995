//! What one batch of the UDP responder did, counted in plain integers on its thread and added
//! to the shared [`Counters`] once per batch (one atomic add per counter that moved, never one
//! per packet).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::reflect::TableStats;
use crate::Counters;

#[derive(Default)]
pub(super) struct Tally {
    pub rx: u64,
    pub rx_bytes: u64,
    pub tx: u64,
    pub tx_bytes: u64,
    pub refused_token: u64,
    pub refused_raw: u64,
    pub refused_rate: u64,
    pub auth_handshake: u64,
    pub auth_session: u64,
    pub auth_mac: u64,
    pub auth_replay: u64,
    pub sessions: u64,
    pub refused_loop: u64,
    pub malformed: u64,
    pub clamped: u64,
    pub bulk_flows: u64,
    pub bulk_refused: u64,
    /// UDP down datagrams sent.
    pub bulk_down: u64,
    /// Replies that carried their flow's counts.
    pub reflected: u64,
    /// Replies marked as their client asked (`MARK`).
    pub marked: u64,
    pub flow_reports: u64,
    /// `Idle` requests whose callback was not scheduled (a full table, a gap too long).
    pub idle_refused: u64,
    /// Up MTU probes answered, down ones sent, and down ones too big for this host's own
    /// interface (answered short).
    pub mtu_up: u64,
    pub mtu_down: u64,
    pub mtu_too_big: u64,
    /// Sends that failed (counted as the socket's errors).
    pub send_errors: u64,
}

/// Adds `v` to `c` unless it is zero (most counters of most batches).
fn add(c: &AtomicU64, v: u64) {
    if v != 0 {
        c.fetch_add(v, Ordering::Relaxed);
    }
}

impl Tally {
    /// Adds this batch to `c`, with the flow table's and the notice budget's counts.
    pub fn publish(&self, c: &Counters, flows: TableStats, notices: (u64, u64)) {
        let t = self;
        c.udp_rx.fetch_add(t.rx, Ordering::Relaxed);
        c.udp_rx_bytes.fetch_add(t.rx_bytes, Ordering::Relaxed);
        c.udp_tx.fetch_add(t.tx, Ordering::Relaxed);
        c.udp_tx_bytes.fetch_add(t.tx_bytes, Ordering::Relaxed);
        for (counter, v) in [
            (&c.udp_refused_token, t.refused_token),
            (&c.udp_refused_raw, t.refused_raw),
            (&c.udp_auth_handshake, t.auth_handshake),
            (&c.udp_auth_session, t.auth_session),
            (&c.udp_auth_mac, t.auth_mac),
            (&c.udp_auth_replay, t.auth_replay),
            (&c.udp_sessions, t.sessions),
            (&c.udp_refused_rate, t.refused_rate),
            (&c.udp_refused_loop, t.refused_loop),
            (&c.udp_malformed, t.malformed),
            (&c.udp_clamped, t.clamped),
            (&c.udp_bulk_flows, t.bulk_flows),
            (&c.udp_bulk_refused, t.bulk_refused),
            (&c.udp_bulk_down, t.bulk_down),
            (&c.udp_reflected, t.reflected),
            (&c.udp_marked, t.marked),
            (&c.udp_flow_reports, t.flow_reports),
            (&c.udp_idle_refused, t.idle_refused),
            (&c.udp_mtu_up, t.mtu_up),
            (&c.udp_mtu_down, t.mtu_down),
            (&c.udp_mtu_too_big, t.mtu_too_big),
            (&c.udp_errors, t.send_errors),
            (&c.udp_flows, flows.new),
            (&c.udp_flows_untracked, flows.untracked),
            (&c.udp_flows_evicted, flows.evicted),
            (&c.udp_notices_sent, notices.0),
            (&c.udp_notices_suppressed, notices.1),
        ] {
            add(counter, v);
        }
    }
}
