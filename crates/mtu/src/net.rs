//! The search's socket: one connected UDP socket, its DF policy set per send (up probes
//! `IP_PMTUDISC_PROBE`, down requests `IP_PMTUDISC_DONT`), its error queue read for the ICMP
//! "too big" messages and local refusals ([`npt_netio::pmtu`]), and each answer's largest
//! fragment (`IP_RECVFRAGSIZE`); the search told what came back and what time it is
//! ([`crate::search`] decides everything else). With `--token` the socket does the keyed
//! handshake first, and its frames are sealed and checked.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Instant;

use npt_netio::pmtu::{self, Discover, Origin};
use npt_netio::{rxtime, MsgBatch};
use npt_proxy::udp_flow::SocksUdp;
use npt_proxy::Via;
use npt_result::workload::Stop;
use npt_wire::auth::Dir;
use npt_wire::frame::Header;

use crate::search::{Search, Send};
use crate::MtuError;

/// The longest a wait lasts before the stop request is looked at again.
const MAX_WAIT_MS: u64 = 200;

/// How long the proxy's greeting and UDP ASSOCIATE may take.
const ASSOCIATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The socket the search sends on: connected to the target, or to `via`'s UDP relay with the
/// association that addresses the target (`host:port` as written, `to` as resolved).
pub fn open(
    to: SocketAddr,
    host: &str,
    via: Option<&Via>,
) -> Result<(UdpSocket, Option<SocksUdp>), MtuError> {
    let relay = match via {
        Some(v) => Some(SocksUdp::open(v, host, to.port(), to, ASSOCIATE_TIMEOUT)?),
        None => None,
    };
    let peer = relay.as_ref().map_or(to, SocksUdp::relay);
    let any: SocketAddr = if peer.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(any).map_err(MtuError::Socket)?;
    s.connect(peer).map_err(MtuError::Socket)?;
    Ok((s, relay))
}

/// Runs `search` on `s` (from [`open`]) until it finishes or `stop` says so.
pub fn run(
    search: &mut Search,
    s: &UdpSocket,
    relay: Option<&SocksUdp>,
    token: Option<&str>,
    stop: &Stop,
) -> Result<(), MtuError> {
    let to = s.peer_addr().map_err(MtuError::Socket)?;
    let timeout = npt_client::auth::HANDSHAKE_TIMEOUT;
    let key = match (token, relay) {
        (Some(t), None) => Some(npt_client::auth::udp(s, t, timeout).map_err(MtuError::Token)?),
        (Some(t), Some(r)) => {
            Some(npt_client::auth::udp_relayed(s, r, t, timeout).map_err(MtuError::Token)?)
        }
        (None, _) => None,
    };
    let front = relay.map_or(0, |r| r.header().len());
    let mut out = Vec::with_capacity(65_536);
    let fd = s.as_raw_fd();
    let v6 = to.is_ipv6();
    pmtu::enable_recverr(fd, v6).map_err(MtuError::Socket)?;
    let _ = rxtime::enable_fragsize(fd, v6);
    s.set_nonblocking(true).map_err(MtuError::Socket)?;
    let mut batch = MsgBatch::new(1, 65_536);
    batch.collect_rx_times();
    let epoch = Instant::now();
    let now = || u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut df: Option<bool> = None;
    let mut pending = search.poll(now());
    while !stop.stopping() {
        while let Some(mut x) = pending.pop() {
            if df != Some(x.df) {
                let d = if x.df {
                    Discover::Probe
                } else {
                    Discover::Dont
                };
                pmtu::set_discover(fd, v6, d).map_err(MtuError::Socket)?;
                df = Some(x.df);
            }
            if let Some(k) = &key {
                let _ = k.seal(Dir::ToServer, &mut x.frame);
            }
            out.clear();
            if let Some(r) = relay {
                out.extend_from_slice(r.header());
            }
            out.extend_from_slice(&x.frame);
            if let Err(e) = s.send(&out) {
                if e.raw_os_error() == Some(libc::EMSGSIZE) {
                    pending.extend(refused_here(search, &x, to, now()));
                }
                // Anything else (a port unreachable from an earlier probe, a full buffer):
                // the probe's timer sees it.
            }
        }
        drain_errors(search, fd, front, &now, &mut pending);
        if search.finished() {
            break;
        }
        if !pending.is_empty() {
            continue;
        }
        let t = now();
        let wait_ms = search
            .next_wake()
            .map_or(MAX_WAIT_MS, |w| w.saturating_sub(t).div_ceil(1_000_000))
            .min(MAX_WAIT_MS);
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = i32::try_from(wait_ms).unwrap_or(i32::MAX);
        // SAFETY: one live pollfd record for the duration of the call.
        let ready = unsafe { libc::poll(&mut p, 1, ms) };
        if ready > 0 {
            loop {
                match batch.recv(fd, 1, libc::MSG_DONTWAIT) {
                    Ok(n) if n > 0 => {
                        let got = match relay {
                            None => batch.data(0),
                            // The relay's header checked and skipped.
                            Some(r) => match r.payload(batch.data(0)) {
                                Ok(p) => p,
                                Err(_) => continue,
                            },
                        };
                        // Under --token only what the session sealed counts.
                        if key
                            .as_ref()
                            .is_some_and(|k| k.open(Dir::ToClient, got).is_err())
                        {
                            continue;
                        }
                        let frag = batch.rx_frag(0);
                        pending.extend(search.on_datagram(now(), got, frag));
                    }
                    Ok(_) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    // A queued error surfaced on the read: the error queue says which.
                    Err(_) => drain_errors(search, fd, front, &now, &mut pending),
                }
            }
        }
        pending.extend(search.poll(now()));
    }
    Ok(())
}

/// This host refused to send `x` (over its interface's MTU): the search is told at once, with
/// the MTU the kernel holds toward `to`.
fn refused_here(search: &mut Search, x: &Send, to: SocketAddr, now: u64) -> Vec<Send> {
    let mtu = pmtu::route_mtu(to);
    search.on_too_big(now, x.seq, mtu, None, true)
}

/// Reads every queued error: a "too big" (an ICMP, or this host's own refusal) is told to the
/// search for the probe it names (its sequence number is in the front of the datagram the
/// error quotes, after the relay's `front` bytes of header).
fn drain_errors(
    search: &mut Search,
    fd: i32,
    front: usize,
    now: &impl Fn() -> u64,
    out: &mut Vec<Send>,
) {
    for _ in 0..64 {
        let Ok(Some(e)) = pmtu::read_error(fd) else {
            return;
        };
        if !e.too_big() {
            continue;
        }
        let Ok(h) = Header::decode(e.datagram.get(front..).unwrap_or_default()) else {
            continue;
        };
        let local = e.origin == Origin::Local;
        out.extend(search.on_too_big(now(), h.seq, e.mtu, e.offender, local));
    }
}
