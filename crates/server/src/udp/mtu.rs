//! Path MTU probes (`npt mtu`, [`npt_wire::mtu`]): an up probe answered in place with a short
//! report of what arrived (its length, and its largest fragment when the kernel reassembled
//! it); a down probe sent after the batch, DF set, of the size asked — never more bytes than
//! the request brought unless the source is trusted (`--token`, or an exempt loopback source),
//! and charged to the source's budget like every datagram the server sends on request.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use npt_netio::pmtu::{self, Discover, Saved};
use npt_wire::auth::{Dir, SessionKey};
use npt_wire::frame::{self, status, Header, Kind};
use npt_wire::mtu::{self, Direction, Mtu, MAX_PROBE, MTU_LEN};

use super::answer::Cx;
use super::tally::Tally;
use crate::limiter::{Limiter, Verdict};

/// A down probe owed after the batch.
pub(super) struct Down {
    peer: SocketAddr,
    h: Header,
    body: Mtu,
    size: usize,
    status: u32,
    trusted: bool,
    key: Option<SessionKey>,
}

/// An `Mtu` frame of `len` bytes (header `h`): the up answer's length, written over the
/// request, or None (a down probe queued in `cx`, or a malformed frame, counted).
pub(super) fn answer(
    data: &mut [u8],
    h: &Header,
    len: usize,
    t: &mut Tally,
    cx: &mut Cx<'_>,
    authenticated: bool,
) -> Option<usize> {
    let ask = data
        .get(frame::HEADER_LEN..)
        .and_then(|p| Mtu::decode(p).ok())
        .filter(|_| len >= MTU_LEN);
    let Some(ask) = ask else {
        t.malformed += 1;
        return None;
    };
    let body = Mtu {
        direction: ask.direction,
        size: ask.size,
        received: u32::try_from(len).unwrap_or(u32::MAX),
        frag: cx.frag.map_or(0, u32::from),
        pmtu: pmtu::route_mtu(cx.peer).unwrap_or(0),
    };
    match ask.direction {
        Direction::Up => {
            t.mtu_up += 1;
            mtu::write(data, h, Kind::MtuReply, status::OK, &body, MTU_LEN)?;
            Some(MTU_LEN)
        }
        Direction::Down => {
            let trusted = authenticated || cx.loopback_ok;
            let mut size = usize::try_from(ask.size)
                .unwrap_or(MAX_PROBE)
                .clamp(MTU_LEN, MAX_PROBE);
            let mut st = status::OK;
            if !trusted && size > len {
                // Never more than the request brought: no amplification.
                size = len;
                st = status::CLAMPED;
                t.clamped += 1;
            }
            cx.mtu_down.push(Down {
                peer: cx.peer,
                h: *h,
                body,
                size,
                status: st,
                trusted,
                key: cx.key.clone(),
            });
            None
        }
    }
}

/// What sending the owed down probes needs: the socket, its family, its DF policy to put
/// back, and the limits a probe is charged to (a stranger's, a trusted source's).
pub(super) struct Sender<'a> {
    pub sock: &'a UdpSocket,
    pub ipv6: bool,
    pub saved: &'a Saved,
    pub safe: &'a mut Limiter,
    pub open: &'a mut Limiter,
}

/// Sends the down probes owed, each DF set whatever path MTU the kernel learned
/// (`IP_PMTUDISC_PROBE`), then puts the socket's policy back (`saved`). A probe larger than the
/// server's own interface sends is answered with [`MTU_LEN`] bytes saying
/// [`status::MTU_TOO_BIG`] and the path MTU it has. `buf`: scratch of [`MAX_PROBE`] bytes.
pub(super) fn send_down(
    b: Sender<'_>,
    owed: &mut Vec<Down>,
    now: u64,
    buf: &mut [u8],
    t: &mut Tally,
) {
    if owed.is_empty() {
        return;
    }
    let sock = b.sock;
    let fd = sock.as_raw_fd();
    let _ = pmtu::set_discover(fd, b.ipv6, Discover::Probe);
    for d in owed.drain(..) {
        let limiter = if d.trusted {
            &mut *b.open
        } else {
            &mut *b.safe
        };
        if limiter.check(now, d.peer, d.size) != Verdict::Allow {
            t.refused_rate += 1;
            continue;
        }
        match send_one(sock, &d, d.size, d.status, &d.body, buf) {
            Ok(n) => {
                t.tx += 1;
                t.tx_bytes += n as u64;
                t.mtu_down += 1;
            }
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                let body = Mtu {
                    pmtu: pmtu::route_mtu(d.peer).unwrap_or(0),
                    ..d.body
                };
                if let Ok(n) = send_one(sock, &d, MTU_LEN, status::MTU_TOO_BIG, &body, buf) {
                    t.tx += 1;
                    t.tx_bytes += n as u64;
                    t.mtu_too_big += 1;
                }
            }
            Err(_) => t.send_errors += 1,
        }
    }
    b.saved.restore(fd);
}

fn send_one(
    sock: &UdpSocket,
    d: &Down,
    size: usize,
    st: u32,
    body: &Mtu,
    buf: &mut [u8],
) -> io::Result<usize> {
    let f = buf
        .get_mut(..size)
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    mtu::write(f, &d.h, Kind::MtuReply, st, body, size)
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    if let Some(k) = &d.key {
        let _ = k.seal(Dir::ToClient, f);
    }
    sock.send_to(f, d.peer)
}
