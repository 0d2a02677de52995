//! The search's sockets: one connected UDP socket per flow (a fresh source port, so a fresh
//! mapping on the path), all waited on with one `poll(2)`, the search told what came back
//! and what time it is ([`crate::search`] decides everything else). With `--token` each
//! socket does the keyed handshake when it opens, and its frames are sealed and checked. With
//! `--via socks5://` each flow opens its own UDP ASSOCIATE (its own control connection, so
//! its own relay socket at the proxy) and its datagrams carry the relay's header.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Instant;

use npt_proxy::udp_flow::SocksUdp;
use npt_result::workload::Stop;
use npt_wire::auth::{Dir, SessionKey};

use crate::search::{Action, Search};
use crate::{LifetimeError, Route};

/// The longest the proxy may take to open an association.
const ASSOCIATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// The longest a wait lasts before the stop request is looked at again.
const MAX_WAIT_MS: u64 = 200;

/// A flow's socket, its session key (`--token`) and its association (`--via`), while open.
type Sock = Option<(UdpSocket, Option<SessionKey>, Option<SocksUdp>)>;

/// Runs `search` against `to` until it finishes or `stop` says so.
pub fn run(
    search: &mut Search,
    route: Route<'_>,
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
            act(a, route, token, &mut socks)?;
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
            .filter_map(|(i, s)| s.as_ref().map(|(s, ..)| (i, s.as_raw_fd())))
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
                while let Some((Ok(n), key, assoc)) = socks
                    .get(flow)
                    .and_then(Option::as_ref)
                    .map(|(s, k, a)| (s.recv(&mut buf), k, a))
                {
                    let got = buf.get(..n).unwrap_or_default();
                    // Through the proxy: the relay's header off (a datagram without one is
                    // not the flow's).
                    let got = match assoc {
                        Some(a) => match a.payload(got) {
                            Ok(p) => p,
                            Err(_) => continue,
                        },
                        None => got,
                    };
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
    route: Route<'_>,
    token: Option<&str>,
    socks: &mut Vec<Sock>,
) -> Result<(), LifetimeError> {
    match a {
        Action::Open { flow } => {
            let assoc = match route.via {
                Some(via) => Some(
                    SocksUdp::open(
                        via,
                        route.host,
                        route.to.port(),
                        route.to,
                        ASSOCIATE_TIMEOUT,
                    )
                    .map_err(|e| LifetimeError::Via(via.to_string(), e))?,
                ),
                None => None,
            };
            let dest = assoc.as_ref().map_or(route.to, SocksUdp::relay);
            let any: SocketAddr = if dest.is_ipv4() {
                ([0, 0, 0, 0], 0).into()
            } else {
                (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
            };
            let s = UdpSocket::bind(any).map_err(LifetimeError::Socket)?;
            s.connect(dest).map_err(LifetimeError::Socket)?;
            let timeout = npt_client::auth::HANDSHAKE_TIMEOUT;
            let key = match (token, &assoc) {
                (Some(t), Some(a)) => Some(
                    npt_client::auth::udp_relayed(&s, a, t, timeout)
                        .map_err(LifetimeError::Token)?,
                ),
                (Some(t), None) => {
                    Some(npt_client::auth::udp(&s, t, timeout).map_err(LifetimeError::Token)?)
                }
                (None, _) => None,
            };
            s.set_nonblocking(true).map_err(LifetimeError::Socket)?;
            if socks.len() <= flow {
                socks.resize_with(flow + 1, || None);
            }
            if let Some(slot) = socks.get_mut(flow) {
                *slot = Some((s, key, assoc));
            }
        }
        Action::Send { flow, mut frame } => {
            if let Some((s, key, assoc)) = socks.get(flow).and_then(Option::as_ref) {
                if let Some(k) = key {
                    let _ = k.seal(Dir::ToServer, &mut frame);
                }
                // A refused or unreachable send is the path's answer: the flow's timers see it.
                let _ = match assoc {
                    Some(a) => s.send(&[a.header(), &frame[..]].concat()),
                    None => s.send(&frame),
                };
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
