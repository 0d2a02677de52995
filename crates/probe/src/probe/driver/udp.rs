//! The UDP driver: flows of connected UDP sockets (or one SOCKS5 UDP ASSOCIATE relay each),
//! batched through `sendmmsg` / `recvmmsg`.

use super::*;
pub use npt_proxy::udp_flow::{split_target, SocksUdp};

/// Creates a UDP socket connected to `target` (an ephemeral source port of its own, on
/// `source`'s address and with its marking), asking the kernel for the TOS byte each reply
/// arrives with (`IP_RECVTOS`; read where [`run_udp`] reads the batch's control data).
pub fn udp_socket(target: SocketAddr, source: &Source) -> io::Result<UdpSocket> {
    let s = Socket::new(
        Domain::for_address(target),
        Type::DGRAM,
        Some(Protocol::UDP),
    )?;
    npt_netio::set_buffers(&s, 4 << 20);
    source.prepare(&s, target, true)?;
    // A kernel that cannot say (never on Linux) leaves the marking unreported, not the probe.
    let _ = npt_netio::rxtime::enable_tos(s.as_raw_fd(), target.is_ipv6());
    s.connect(&target.into())?;
    Ok(s.into())
}

/// Opens a SOCKS5 UDP association for one flow: a UDP socket connected to the proxy's relay
/// and the association that addresses `target` (`host:port` as written; `addr` as resolved
/// here).
pub fn socks_udp(
    via: &npt_proxy::Via,
    target: &str,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<(UdpSocket, SocksUdp, npt_proxy::Phases), npt_proxy::ProxyError> {
    let (host, port) = split_target(target, addr);
    let socks = SocksUdp::open(via, &host, port, addr, timeout)?;
    let sock = udp_socket(socks.relay(), &Source::default())?;
    let phases = socks.phases();
    Ok((sock, socks, phases))
}

struct UdpFlow {
    index: usize,
    sock: UdpSocket,
    session: Session,
    socks: Option<SocksUdp>,
    done: bool,
}

/// Drives UDP flows until all are done. `flows`: (flow index, socket, session, SOCKS relay).
pub fn run_udp(
    flows: Vec<(usize, UdpSocket, Session, Option<SocksUdp>)>,
    clock: Clock,
    stop: Arc<Stop>,
    tx: Sender<Event>,
) {
    npt_netio::tighten_timer_slack();
    // A packet or the flow query at the end, behind a SOCKS5 header when relayed.
    let size = flows
        .iter()
        .map(|(_, _, s, x)| s.max_send_len() + x.as_ref().map_or(0, |x| x.header().len()))
        .max()
        .unwrap_or(64);
    let mut out = MsgBatch::new(BATCH, size);
    // One spare byte per buffer: a longer echo is visible as a length mismatch. With control
    // space: the TOS byte each reply arrived with (`udp_socket` asked for it).
    let mut inb = MsgBatch::new(BATCH, size + 1).with_rx_times();
    let mut offset_at: Option<u64> = None;
    let mut flows: Vec<UdpFlow> = flows
        .into_iter()
        .map(|(index, sock, session, socks)| UdpFlow {
            index,
            sock,
            session,
            socks,
            done: false,
        })
        .collect();
    let fds: Vec<RawFd> = flows.iter().map(|f| f.sock.as_raw_fd()).collect();
    let no_write = vec![false; fds.len()];
    let mut ready = Vec::new();
    // Slot indices for sendmmsg, built once instead of once per batch.
    let all_slots: Vec<usize> = (0..BATCH).collect();
    let mut remaining = flows.len();
    while remaining > 0 {
        let mut deadline: Option<u64> = None;
        let t = clock.now();
        if offset_at.is_none_or(|at| t.saturating_sub(at) >= WALL_REFRESH_NS) {
            offset_at = Some(t);
            let offset = clock.wall_offset();
            for f in &mut flows {
                f.session.set_wall_offset(offset);
            }
        }
        for f in flows.iter_mut().filter(|f| !f.done) {
            let fd = f.sock.as_raw_fd();
            let s = &mut f.session;
            let now = clock.now();
            apply_stop(s, &stop, now);
            // Send what is due, a batch at a time, a bounded number of batches per step.
            for _ in 0..MAX_BATCHES_PER_STEP {
                let mut k = 0;
                let hl = f.socks.as_ref().map_or(0, |x| x.header().len());
                while k < BATCH {
                    let buf = out.buf_mut(k);
                    if let Some(x) = &f.socks {
                        buf[..hl].copy_from_slice(x.header());
                    }
                    match s.poll_transmit(now, &mut buf[hl..]) {
                        Some(n) => {
                            out.set_len(k, hl + n);
                            k += 1;
                        }
                        None => break,
                    }
                }
                if k == 0 {
                    break;
                }
                let mut sent = 0;
                while sent < k {
                    match out.send(fd, &all_slots[sent..k], false, 0) {
                        Ok(n) => sent += n.max(1),
                        Err(e) => {
                            // This packet did not leave; it will count as lost at its deadline.
                            s.send_failed(classify(&e), || format!("send: {e}"));
                            sent += 1;
                        }
                    }
                }
                if k < BATCH {
                    break;
                }
            }
            // Read everything that has arrived.
            loop {
                match inb.recv(fd, BATCH, libc::MSG_DONTWAIT) {
                    Ok(n) => {
                        let now = clock.now();
                        for j in 0..n {
                            if let Some(tos) = inb.rx_tos(j) {
                                s.totals_mut().marking.count(tos);
                            }
                            let d = inb.data(j);
                            match &f.socks {
                                None => s.handle_reply(now, d),
                                Some(_) => match npt_proxy::socks5::udp_payload_offset(d) {
                                    Ok(off) => s.handle_reply(now, &d[off..]),
                                    Err(_) => s.totals_mut().foreign += 1,
                                },
                            }
                        }
                        if n < BATCH {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        // ICMP port unreachable and friends, reported on a connected socket.
                        s.record_error(classify(&e), || format!("recv: {e}"));
                        break;
                    }
                }
            }
            s.handle_timeout(clock.now());
            send_packets(s, &tx);
            while let Some(iv) = s.poll_interval() {
                let _ = tx.send(Event::Interval {
                    flow: f.index,
                    interval: Box::new(iv),
                });
            }
            if s.is_done() {
                f.done = true;
                remaining -= 1;
                let stop = s.stop_reason();
                let totals = std::mem::take(s.totals_mut());
                let _ = tx.send(Event::Done {
                    flow: f.index,
                    result: Box::new(FlowResult {
                        totals,
                        stop,
                        tcp: None,
                        kernel: None,
                    }),
                });
                continue;
            }
            if let Some(t) = s.poll_timeout() {
                deadline = Some(deadline.map_or(t, |d: u64| d.min(t)));
            }
        }
        if remaining == 0 {
            break;
        }
        wait_until(&clock, &fds, &no_write, deadline, &mut ready);
    }
}
