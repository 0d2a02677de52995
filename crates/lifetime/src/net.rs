//! The search's sockets: one connected UDP socket per flow (a fresh source port, so a fresh
//! mapping on the path), all waited on with one `poll(2)`, the search told what came back
//! and what time it is ([`crate::search`] decides everything else).

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Instant;

use npt_result::workload::Stop;

use crate::search::{Action, Search};
use crate::LifetimeError;

/// The longest a wait lasts before the stop request is looked at again.
const MAX_WAIT_MS: u64 = 200;

/// Runs `search` against `to` until it finishes or `stop` says so.
pub fn run(search: &mut Search, to: SocketAddr, stop: &Stop) -> Result<(), LifetimeError> {
    let epoch = Instant::now();
    let now = || u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut socks: Vec<Option<UdpSocket>> = Vec::new();
    let mut actions = search.poll(now());
    let mut buf = [0u8; 2048];
    while !stop.stopping() {
        for a in actions.drain(..) {
            act(a, to, &mut socks)?;
        }
        if search.finished() {
            break;
        }
        let t = now();
        let wait_ms = search
            .next_wake()
            .map_or(MAX_WAIT_MS, |w| w.saturating_sub(t).div_ceil(1_000_000))
            .min(MAX_WAIT_MS);
        let open: Vec<(usize, i32)> = socks
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (i, s.as_raw_fd())))
            .collect();
        let mut fds: Vec<libc::pollfd> = open
            .iter()
            .map(|&(_, fd)| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let nfds = libc::nfds_t::try_from(fds.len()).unwrap_or(0);
        let ms = i32::try_from(wait_ms).unwrap_or(i32::MAX);
        // SAFETY: `fds` is a live array of `nfds` pollfd records for the duration of the call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), nfds, ms) };
        if ready > 0 {
            for (&(flow, _), p) in open.iter().zip(&fds) {
                if p.revents == 0 {
                    continue;
                }
                while let Some(Ok(n)) = socks
                    .get(flow)
                    .and_then(Option::as_ref)
                    .map(|s| s.recv(&mut buf))
                {
                    let more = search.on_datagram(flow, now(), buf.get(..n).unwrap_or_default());
                    actions.extend(more);
                }
            }
        }
        actions.extend(search.poll(now()));
    }
    Ok(())
}

fn act(a: Action, to: SocketAddr, socks: &mut Vec<Option<UdpSocket>>) -> Result<(), LifetimeError> {
    match a {
        Action::Open { flow } => {
            let any: SocketAddr = if to.is_ipv4() {
                ([0, 0, 0, 0], 0).into()
            } else {
                (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
            };
            let s = UdpSocket::bind(any).map_err(LifetimeError::Socket)?;
            s.connect(to).map_err(LifetimeError::Socket)?;
            s.set_nonblocking(true).map_err(LifetimeError::Socket)?;
            if socks.len() <= flow {
                socks.resize_with(flow + 1, || None);
            }
            socks[flow] = Some(s);
        }
        Action::Send { flow, frame } => {
            if let Some(s) = socks.get(flow).and_then(Option::as_ref) {
                // A refused or unreachable send is the path's answer: the flow's timers see it.
                let _ = s.send(&frame);
            }
        }
        Action::Close { flow } => {
            if let Some(s) = socks.get_mut(flow) {
                *s = None;
            }
        }
    }
    Ok(())
}
