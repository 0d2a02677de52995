//! The UDP driver: flows of connected UDP sockets (or one SOCKS5 UDP ASSOCIATE relay each),
//! batched through `sendmmsg` / `recvmmsg`, with the kernel's help where it gives it
//! ([`npt_netio::offload`]): a batch of equal-size packets leaves in one GSO send, replies a
//! GSO sender coalesced come in as one GRO buffer. A reply's receive time is the clock read
//! right after the receive returned (the RTT at the application), or with `--rx-stamp kernel`
//! the kernel's timestamp of its arrival, so the tester's own wake-up is not in the RTT.

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

/// How the UDP driver waits and stamps (`--spin`, `--rx-stamp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpOptions {
    /// Never sleep: poll the sockets and the clock in a loop (one busy CPU per thread), so
    /// sends leave on time to the microsecond and replies are read as they arrive.
    pub spin: bool,
    /// Take each reply's receive time from the kernel's timestamp (`SO_TIMESTAMPNS`) instead
    /// of the clock after the receive returned (`--rx-stamp kernel`; off by default).
    pub kernel_stamps: bool,
}

struct UdpFlow {
    index: usize,
    sock: UdpSocket,
    session: Session,
    socks: Option<SocksUdp>,
    done: bool,
    /// Batches leave as one GSO send until the kernel refuses one.
    gso: bool,
    /// The runner was told the send phase ended ([`send_ended`]).
    told_send_end: bool,
}

/// Drives UDP flows until all are done. `flows`: (flow index, socket, session, SOCKS relay).
pub fn run_udp(
    flows: Vec<(usize, UdpSocket, Session, Option<SocksUdp>)>,
    opts: UdpOptions,
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
    let mut out = MsgBatch::new(SEND_BATCH, size);
    let mut gro = false;
    for (_, sock, _, _) in &flows {
        let fd = sock.as_raw_fd();
        gro |= npt_netio::offload::enable_gro(fd);
        if opts.kernel_stamps {
            // Refused (never, on Linux): the replies keep the time their receive returned.
            let _ = npt_netio::rxtime::enable(fd);
        }
    }
    // Room for a few packets and one spare byte per buffer: a plain echo that coalesced
    // requests (socat's PIPE) is split back into them (`Session::reply_len_in`), and any other
    // longer echo is visible as a length mismatch. The control space also carries the TOS byte
    // each reply arrived with (`udp_socket` asked). With GRO a buffer may hold a whole
    // coalesced batch (up to 64 KiB; pages never written stay unallocated).
    let plain = (4 * size).min(65_535) + 1;
    let mut inb = MsgBatch::new(BATCH, if gro { 65_536 } else { plain }).with_rx_times();
    let mut offset_at: Option<u64> = None;
    let mut flows: Vec<UdpFlow> = flows
        .into_iter()
        .map(|(index, sock, session, socks)| UdpFlow {
            index,
            sock,
            session,
            socks,
            done: false,
            gso: true,
            told_send_end: false,
        })
        .collect();
    let fds: Vec<RawFd> = flows.iter().map(|f| f.sock.as_raw_fd()).collect();
    let no_write = vec![false; fds.len()];
    let mut ready = Vec::new();
    // Slot indices for sendmmsg, built once instead of once per batch.
    let all_slots: Vec<usize> = (0..SEND_BATCH).collect();
    let mut remaining = flows.len();
    // After a send on a short path, poll for the reply instead of sleeping (bounded: see
    // `ReplyPoll`); `--spin` polls always, kernel stamps need no early read.
    let mut reply_poll = ReplyPoll::default();
    let poll_replies = !opts.spin && !opts.kernel_stamps;
    // Polling is shared out among the process's runs (see `ReplyPoll`).
    let mut turn = PollTurn::new(&GATE);
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
                while k < SEND_BATCH {
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
                if !(f.gso && send_gso(fd, &mut out, k, s, &mut f.gso)) {
                    send_plain(fd, &mut out, &all_slots[..k], s);
                }
                reply_poll.sent(now);
                if k < SEND_BATCH {
                    break;
                }
            }
            // Read everything that has arrived.
            loop {
                match inb.recv(fd, BATCH, libc::MSG_DONTWAIT) {
                    Ok(n) => {
                        // By default every reply gets `now`, read right after the receive
                        // returned; with `--rx-stamp kernel`, the kernel's stamp of its
                        // arrival, aged on the wall clock read at the same instant.
                        let (now, real) = if opts.kernel_stamps {
                            let (now, wall) = npt_netio::clockpair::now(|| clock.now());
                            (now, Some(wall))
                        } else {
                            (clock.now(), None)
                        };
                        for j in 0..n {
                            let rx = match real {
                                Some(real) => rx_time(now, real, inb.rx_time_ns(j)),
                                None => now,
                            };
                            let seg = inb.gro_segment(j);
                            // GRO coalesces only datagrams of one TOS: each segment counts.
                            if let Some(tos) = inb.rx_tos(j) {
                                for _ in npt_netio::offload::segments(inb.data(j), seg) {
                                    s.totals_mut().marking.count(tos);
                                }
                            }
                            s.note_arrival_tos(inb.rx_tos(j));
                            for d in npt_netio::offload::segments(inb.data(j), seg) {
                                let d = match &f.socks {
                                    None => d,
                                    Some(_) => match npt_proxy::socks5::udp_payload_offset(d) {
                                        Ok(off) => &d[off..],
                                        Err(_) => {
                                            s.totals_mut().foreign += 1;
                                            continue;
                                        }
                                    },
                                };
                                // One reply a datagram, unless an echo coalesced several.
                                for r in d.chunks(s.reply_len_in(d)) {
                                    if let Arrival::OnTime { rtt } = s.handle_arrival(rx, r) {
                                        reply_poll.replied(rtt);
                                    }
                                }
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
            send_ended(f.index, s, &mut f.told_send_end, &tx);
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
        if flows.iter().all(|f| f.done || f.session.in_flight() == 0) {
            reply_poll.settled();
        }
        let mut poll = poll_replies && reply_poll.poll_now(clock.now());
        if poll && !turn.take() {
            reply_poll.declined();
            poll = false;
        }
        if opts.spin || poll {
            // Busy: back to the sockets and the clock at once (Ctrl-C is checked each pass).
            std::hint::spin_loop();
        } else {
            turn.give_back();
            wait_until(&clock, &fds, &no_write, deadline, &mut ready);
        }
    }
}

/// Sends slots `0..k` of `out` (every one as long as the first) as GSO sends of up to
/// [`npt_netio::offload::gso_segments`] packets each. False if nothing was sent and the
/// caller should send the batch the plain way: the kernel refused GSO (then `gso` is turned
/// off for the flow), or a send failed for the packets' own reasons (recorded against the
/// flow; the plain path then tries each packet and counts any that cannot leave).
fn send_gso(fd: RawFd, out: &mut MsgBatch, k: usize, s: &mut Session, gso: &mut bool) -> bool {
    // Packets may be shorter than the batch's buffers (sized for the flow query at the end).
    let seg = out.len(0);
    let per = npt_netio::offload::gso_segments(seg);
    if k < 2 || per < 2 || (0..k).any(|i| out.len(i) != seg) {
        return false;
    }
    let mut done = 0;
    while done < k {
        let n = per.min(k - done);
        let r = if n == 1 {
            // A lone packet needs no segmentation.
            send_one(fd, out.data(done))
        } else {
            out.send_gso_slots(fd, done, n)
        };
        match r {
            Ok(_) => done += n,
            Err(e) if done == 0 => {
                if npt_netio::offload::gso_unsupported(&e) {
                    *gso = false;
                } else if !matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::ENOBUFS)) {
                    // A socket error (an ICMP unreachable reported on this send) is cleared
                    // by the report: count it here, the plain path will not see it again. A
                    // full buffer it will meet again, and count per packet.
                    s.record_error(classify(&e), || format!("send: {e}"));
                }
                return false;
            }
            Err(e) => {
                // Part of the batch left: the rest goes the plain way, one by one.
                s.record_error(classify(&e), || format!("send: {e}"));
                for i in done..k {
                    if let Err(e) = send_one(fd, out.data(i)) {
                        s.send_failed(classify(&e), || format!("send: {e}"));
                    }
                }
                return true;
            }
        }
    }
    true
}

fn send_one(fd: RawFd, data: &[u8]) -> io::Result<usize> {
    // SAFETY: `data` is a live buffer of `data.len()` bytes.
    let n = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), 0) };
    usize::try_from(n).map_err(|_| io::Error::last_os_error())
}

/// Sends `slots` of `out` with `sendmmsg`; a packet that cannot leave is counted against the
/// flow and will count as lost at its deadline.
fn send_plain(fd: RawFd, out: &mut MsgBatch, slots: &[usize], s: &mut Session) {
    let mut sent = 0;
    while sent < slots.len() {
        match out.send(fd, &slots[sent..], false, 0) {
            Ok(n) => sent += n.max(1),
            Err(e) => {
                // This packet did not leave; it will count as lost at its deadline.
                s.send_failed(classify(&e), || format!("send: {e}"));
                sent += 1;
            }
        }
    }
}
