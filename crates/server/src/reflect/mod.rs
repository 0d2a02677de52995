//! The UDP responder's side of [`npt_wire::reflect`]: what it tells a client that asks
//! (`REFLECT`) about the client's own flow, so the client can place each lost packet and each
//! millisecond — path up, path down, the responder's budget, the responder itself.
//!
//! - **Replies** carry the flow's receive count and, with room, [`Stamps`]: the receive time
//!   (the kernel's, [`npt_netio::rxtime`], else when the batch was read — both on the wall
//!   clock), the refused count, and the dwell, written last, just before `sendmmsg`
//!   ([`Reflector::stamp`]).
//! - **Refusals** of a `REFLECT` frame (the per-source budget, a token) are counted in its flow
//!   and may be answered by a notice, rate-limited ([`notices`]).
//! - **Flow queries** are answered with the flow's counts ([`FlowTable::get`]).
//!
//! Costs on the answer path: one hash lookup per `REFLECT` frame, no allocation (the pending
//! stamps live in a vector of the batch's size). The pieces are sans-IO ([`flows`], [`seen`],
//! [`notices`]); this module only glues them to the batch's slots.

pub mod flows;
pub mod notices;
pub mod seen;

use std::net::SocketAddr;

use npt_netio::MsgBatch;
use npt_wire::frame::{Header, Kind, HEADER_LEN};
use npt_wire::reflect::{self, FlowReport, Stamps};

pub use flows::{FlowTable, TableStats, FLOW_IDLE_NS, MAX_FLOWS};
pub use notices::Notices;

/// A count as the wire carries it: modulo 2³².
pub(crate) fn wire32(c: u64) -> u32 {
    u32::try_from(c & u64::from(u32::MAX)).unwrap_or(0)
}

/// One UDP socket's flow table, notice budget and the replies of the current batch that still
/// need their dwell.
pub struct Reflector {
    pub flows: FlowTable,
    pub notices: Notices,
    /// (slot, receive time) of the stamped replies of this batch.
    pending: Vec<(usize, u64)>,
}

impl Reflector {
    /// `batch`: the most replies one batch holds.
    pub fn new(flows: FlowTable, notices: Notices, batch: usize) -> Reflector {
        Reflector {
            flows,
            notices,
            pending: Vec::with_capacity(batch),
        }
    }

    /// Turns the answer in slot `slot` (header `h`, already the reply's: kind and status set;
    /// the slot's length already the reply's) into a reflected one. False when the flow table
    /// is full: the answer then goes out as an older responder's would.
    pub fn reply(
        &mut self,
        batch: &mut MsgBatch,
        slot: usize,
        h: &Header,
        now: u64,
        peer: SocketAddr,
        rx_wall: u64,
    ) -> bool {
        let Some(f) = self.flows.on_received(now, peer, h.flow, h.seq) else {
            return false;
        };
        let stamps = Stamps {
            rx_wall_ns: rx_wall,
            dwell_ns: 0,
            refused: wire32(f.refused),
        };
        let rx = wire32(f.received);
        if reflect::write_reply(batch.data_mut(slot), h, rx, &stamps) == Ok(true)
            && self.pending.len() < self.pending.capacity()
        {
            self.pending.push((slot, rx_wall));
        }
        true
    }

    /// The refused frame in slot `slot` (its header `h`, status `why`): counted in its flow if
    /// it is a `REFLECT` echo or request; the slot rewritten into a notice if the notice budget
    /// allows. True when the slot now holds a notice to send.
    pub fn refuse(
        &mut self,
        batch: &mut MsgBatch,
        slot: usize,
        h: &Header,
        why: u32,
        now: u64,
        peer: SocketAddr,
    ) -> bool {
        let data = batch.data(slot);
        if !reflect::wants_reflect(h) {
            return false;
        }
        let count = match h.kind {
            Kind::Echo | Kind::Request => self.flows.on_refused(now, peer, h.flow),
            // A query is not counted in its flow.
            Kind::FlowQuery => self.flows.get(now, peer, h.flow),
            _ => return false,
        }
        .map(|f| wire32(f.refused));
        let mut out = [0u8; HEADER_LEN];
        if reflect::write_notice(data, why, count, &mut out).is_none()
            || !self.notices.allow(now, peer)
        {
            return false;
        }
        if let Some(d) = batch.buf_mut(slot).first_chunk_mut::<HEADER_LEN>() {
            *d = out;
        }
        batch.set_len(slot, HEADER_LEN);
        true
    }

    /// The counts of `peer`'s flow `flow` for a flow query (None: not tracked).
    pub fn report(&mut self, now: u64, peer: SocketAddr, flow: u32) -> Option<FlowReport> {
        self.flows.get(now, peer, flow).map(flows::Flow::report)
    }

    /// Writes the dwell (`tx_wall` minus each reply's receive time) into this batch's stamped
    /// replies; call just before they are sent. Reads nothing when there are none.
    pub fn stamp(&mut self, batch: &mut MsgBatch, tx_wall: impl FnOnce() -> u64) {
        if self.pending.is_empty() {
            return;
        }
        let tx = tx_wall();
        for &(slot, rx) in &self.pending {
            let dwell = u32::try_from(tx.saturating_sub(rx)).unwrap_or(u32::MAX);
            reflect::write_dwell(batch.data_mut(slot), dwell);
        }
        self.pending.clear();
    }

    /// Forgets the stamps of a batch that was not sent.
    pub fn clear(&mut self) {
        self.pending.clear();
    }
}
