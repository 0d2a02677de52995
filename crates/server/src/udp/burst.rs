//! UDP down (`npt bulk udp://… --direction down`): the datagrams a granted pull asks for, sent
//! after the batch's answers ([`crate::bulk_udp::grant_down`] decides who gets them).

use std::net::{SocketAddr, UdpSocket};

use npt_wire::auth::{Dir, SessionKey};
use npt_wire::frame::{status, Header, Kind};

use super::tally::Tally;
use crate::limiter::{Limiter, Verdict};

/// `count` `BulkData` datagrams of `size` bytes for a pull of `peer`'s flow, numbered from
/// `first_seq` (sent after the batch's answers).
pub(super) struct Burst {
    pub peer: SocketAddr,
    pub flow: u32,
    pub first_seq: u64,
    pub count: u64,
    pub size: usize,
    pub key: Option<SessionKey>,
}

/// Sends a burst, each datagram charged to `limiter` first (the open limits); stops at the
/// first one the limits refuse (counted). `buf`: scratch of at least `MAX_DATAGRAM` bytes.
pub(super) fn send_burst(
    sock: &UdpSocket,
    b: &Burst,
    now: u64,
    limiter: &mut Limiter,
    buf: &mut [u8],
    t: &mut Tally,
) {
    let fill = crate::stream::fill_chunk();
    for j in 0..b.count {
        if limiter.check(now, b.peer, b.size) != Verdict::Allow {
            t.refused_rate += 1;
            return;
        }
        let (Some(frame), Some(payload)) = (buf.get_mut(..b.size), fill.get(..b.size)) else {
            return;
        };
        frame.copy_from_slice(payload);
        let h = Header {
            kind: Kind::BulkData,
            flags: 0,
            frame_len: u32::try_from(b.size).unwrap_or(u32::MAX),
            reply_len: 0,
            flow: b.flow,
            status: status::OK,
            seq: b.first_seq.saturating_add(j),
            send_ts: now,
            token: 0,
        };
        let _ = h.encode(frame);
        if let Some(k) = &b.key {
            let _ = k.seal(Dir::ToClient, frame);
        }
        match sock.send_to(frame, b.peer) {
            Ok(n) => {
                t.tx += 1;
                t.tx_bytes += n as u64;
                t.bulk_down += 1;
            }
            // A full socket buffer: the rest of the burst is lost here, as on a NIC queue.
            Err(_) => return,
        }
    }
}
