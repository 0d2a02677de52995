//! The game activity: fixed-size UDP echo datagrams at a fixed tick, RTT, loss, late,
//! duplicates, reordering and RFC 3550 jitter, handed to the collector in batches.

use super::*;

/// A game session's counts since they were last handed to the collector. A packet is
/// counted as sent only once its fate is known (answered or lost), and counts, RTTs and bytes
/// are handed over together, so `received + lost == sent` and `requests == received` hold in
/// the result even for sessions the end of the run cuts off (their undecided packets are
/// left out, like any request in flight at the end).
pub(super) struct GameAcc {
    g: GameCounts,
    rtts: [u64; 64],
    nr: usize,
    up: u64,
    down: u64,
    jitter_flushed: u64,
}

impl Default for GameAcc {
    fn default() -> Self {
        GameAcc {
            g: GameCounts::default(),
            rtts: [0; 64],
            nr: 0,
            up: 0,
            down: 0,
            jitter_flushed: 0,
        }
    }
}

impl GameAcc {
    fn lost(&mut self) {
        self.g.sent += 1;
        self.g.lost += 1;
    }

    /// Records an on-time reply; true when the batch is full and should be flushed.
    fn received(&mut self, rtt: u64) -> bool {
        self.g.sent += 1;
        self.g.received += 1;
        self.rtts[self.nr] = rtt;
        self.nr += 1;
        self.nr == self.rtts.len()
    }

    fn flush(&mut self, col: &Collector, jit: &npt_stats::Jitter) {
        let new = jit.samples() - self.jitter_flushed;
        self.jitter_flushed = jit.samples();
        self.g.jitter = npt_stats::JitterMean::from_value(jit.value_ns(), new);
        col.game_flush(&self.rtts[..self.nr], &self.g, self.up, self.down);
        self.g = GameCounts::default();
        self.nr = 0;
        self.up = 0;
        self.down = 0;
    }
}

/// A game session: fixed-size `Echo` datagrams at a fixed tick; RTT from the echoed stamp,
/// loss/late/duplicate/reorder from the sequence window, RFC 3550 jitter of the RTT.
pub(super) async fn game(
    ctx: &Ctx,
    ch: &mut Chooser,
    id: u64,
    target: SocketAddr,
) -> Result<(), Fail> {
    let plan = ch.game(&ctx.cfg.shape);
    let bind: SocketAddr = if target.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let sock = UdpSocket::bind(bind)
        .await
        .map_err(|e| Fail::io("bind", &e))?;
    sock.connect(target)
        .await
        .map_err(|e| Fail::io("connect", &e))?;
    let key = match &ctx.cfg.secret {
        Some(secret) => Some(
            auth::udp(&sock, secret, ctx.cfg.timeout)
                .await
                .map_err(|e| Fail::io("token handshake", &e))?,
        ),
        None => None,
    };
    let _conn = ctx.col.conn_open(Proto::Udp);
    let size = frame_len(plan.size).min(64 * 1024) as usize;
    let mut out = fill()[..size].to_vec();
    // Echo replies are as long as the request; anything longer is not ours (truncated).
    let mut inb = vec![0u8; size + 64];
    let timeout_ns = ctx.cfg.shape.game.loss_timeout.as_nanos() as u64;
    let mut win = Window::new(timeout_ns, 4096);
    let mut jit = npt_stats::Jitter::default();
    let mut acc = GameAcc::default();
    let start = Instant::now();
    let end = start + plan.length;
    let mut next = start;
    let mut result = Ok(());
    loop {
        let sending = next < end;
        if !sending && win.in_flight() == 0 {
            break;
        }
        let drain_until = end + ctx.cfg.shape.game.loss_timeout;
        tokio::select! {
            _ = tokio::time::sleep_until(next.into()), if sending => {
                let now_ns = ctx.now_ns();
                win.expire(now_ns, |_, _| acc.lost());
                let seq = win.push(now_ns, now_ns, 0);
                let h = Header {
                    kind: Kind::Echo,
                    flags: 0,
                    frame_len: size as u32,
                    reply_len: 0,
                    flow: id as u32,
                    status: 0,
                    seq,
                    send_ts: now_ns,
                    token: ctx.cfg.token,
                };
                let _ = h.encode(&mut out);
                if let Some(k) = &key {
                    let _ = k.seal(Dir::ToServer, &mut out);
                }
                if let Err(e) = sock.send(&out).await {
                    result = Err(Fail::io("send", &e));
                    break;
                }
                acc.up += size as u64;
                next += plan.tick;
                // Fell behind (a stalled worker): skip ticks rather than burst.
                let now = Instant::now();
                if next + plan.tick < now {
                    next = now;
                }
            }
            r = sock.recv(&mut inb) => {
                let n = match r {
                    Ok(n) => n,
                    Err(e) => {
                        result = Err(Fail::io("receive", &e));
                        break;
                    }
                };
                let Ok(h) = Header::decode(&inb[..n]) else { continue };
                if h.kind != Kind::EchoReply || h.flow != id as u32 {
                    continue;
                }
                if key.as_ref().is_some_and(|k| k.open(Dir::ToClient, &inb[..n]).is_err()) {
                    continue;
                }
                acc.down += n as u64;
                let now_ns = ctx.now_ns();
                win.expire(now_ns, |_, _| acc.lost());
                match win.on_reply(h.seq) {
                    Outcome::OnTime { slot, reordered } => {
                        let rtt = now_ns.saturating_sub(slot.sent);
                        jit.record(rtt);
                        acc.g.reordered += reordered as u64;
                        if acc.received(rtt) {
                            acc.flush(&ctx.col, &jit);
                        }
                    }
                    Outcome::Late { reordered } => {
                        acc.g.late += 1;
                        acc.g.reordered += reordered as u64;
                    }
                    Outcome::Duplicate => acc.g.duplicated += 1,
                    Outcome::Unknown | Outcome::Stale => {}
                }
            }
            _ = tokio::time::sleep_until(drain_until.into()), if !sending => break,
        }
    }
    win.expire_all(|_, _| acc.lost());
    acc.flush(&ctx.col, &jit);
    result
}
