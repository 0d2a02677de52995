//! The search's sockets: one connected UDP socket per flow (a fresh source port, so a fresh
//! mapping on the path), all waited on with one `poll(2)`, the search told what came back
//! and what time it is ([`crate::search`] decides everything else). With `--token` each
//! socket does the keyed handshake when it opens, and its frames are sealed and checked.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Instant;

use npt_result::workload::Stop;
use npt_wire::auth::{Dir, SessionKey};

use crate::search::{Action, Search};
use crate::LifetimeError;

/// The longest a wait lasts before the stop request is looked at again.
const MAX_WAIT_MS: u64 = 200;

/// A flow's socket and its session key (`--token`), while it is open.
type Sock = Option<(UdpSocket, Option<SessionKey>)>;

/// Runs `search` against `to` until it finishes or `stop` says so.
pub fn run(
    search: &mut Search,
    to: SocketAddr,
    token: Option<&str>,
    stop: &Stop,
) -> Result<(), LifetimeError> {
    let epoch = Instant::now();
    let now = || u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut socks: Vec<Sock> = Vec::new();
    let mut actions = search.poll(now());
    let mut buf = [0u8; 2048];
    while !stop.stopping() {
        for a in actions.drain(..) {
            act(a, to, token, &mut socks)?;
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
            .filter_map(|(i, s)| s.as_ref().map(|(s, _)| (i, s.as_raw_fd())))
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
                while let Some((Ok(n), key)) = socks
                    .get(flow)
                    .and_then(Option::as_ref)
                    .map(|(s, k)| (s.recv(&mut buf), k))
                {
                    let got = buf.get(..n).unwrap_or_default();
                    // Under --token only what the session sealed counts.
                    if key
                        .as_ref()
                        .is_some_and(|k| k.open(Dir::ToClient, got).is_err())
                    {
                        continue;
                    }
                    actions.extend(search.on_datagram(flow, now(), got));
                }
            }
        }
        actions.extend(search.poll(now()));
    }
    Ok(())
}

fn act(
    a: Action,
    to: SocketAddr,
    token: Option<&str>,
    socks: &mut Vec<Sock>,
) -> Result<(), LifetimeError> {
    match a {
        Action::Open { flow } => {
            let any: SocketAddr = if to.is_ipv4() {
                ([0, 0, 0, 0], 0).into()
            } else {
                (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
            };
            let s = UdpSocket::bind(any).map_err(LifetimeError::Socket)?;
            s.connect(to).map_err(LifetimeError::Socket)?;
            let key = match token {
                Some(t) => Some(
                    npt_client::auth::udp(&s, t, npt_client::auth::HANDSHAKE_TIMEOUT)
                        .map_err(LifetimeError::Token)?,
                ),
                None => None,
            };
            s.set_nonblocking(true).map_err(LifetimeError::Socket)?;
            if socks.len() <= flow {
                socks.resize_with(flow + 1, || None);
            }
            if let Some(slot) = socks.get_mut(flow) {
                *slot = Some((s, key));
            }
        }
        Action::Send { flow, mut frame } => {
            if let Some((s, key)) = socks.get(flow).and_then(Option::as_ref) {
                if let Some(k) = key {
                    let _ = k.seal(Dir::ToServer, &mut frame);
                }
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
