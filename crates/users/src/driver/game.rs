//! The game activity: a thin tokio driver of `npt probe`'s sans-IO [`Session`], so a game
//! session is measured exactly as a probe flow is (same sequence window, loss timeout, drain
//! and RFC 3550 jitter). The session decides what to send and when (fixed-size `Echo`
//! datagrams at a fixed tick) and what each reply means; this module only moves bytes between
//! one UDP socket and the session, sleeps until [`Session::poll_timeout`], and hands the
//! session's progress to the run's collector in batches.

use npt_probe::{Arrival, ClockSync, Framing, Reflect, Session, SessionConfig, Stage, StopReason};
use npt_wire::{Fill, Pacing};

use super::*;

/// On-time RTTs since the last hand-over to the collector, with the session whose progress
/// goes with them. RTTs and the session's counts are handed over together (every
/// [`GameBatch::CAP`] replies and at the session's end), so `received + lost + refused ==
/// sent` and
/// `requests == received` hold in the result even for sessions the end of the run cuts off:
/// what was not handed over yet is left out, like any request in flight at the end.
struct GameBatch {
    rtts: [u64; GameBatch::CAP],
    n: usize,
}

impl GameBatch {
    const CAP: usize = 64;

    /// Records an on-time reply; true when the batch is full and should be flushed.
    fn push(&mut self, rtt: u64) -> bool {
        if let Some(slot) = self.rtts.get_mut(self.n) {
            *slot = rtt;
            self.n += 1;
        }
        self.n >= Self::CAP
    }

    fn flush(&mut self, col: &Collector, s: &mut Session) {
        let p = s.take_progress();
        debug_assert_eq!(p.received, self.n as u64, "one RTT per on-time reply");
        // The packets whose fate became known since the last flush count as this batch's sent.
        let g = GameCounts {
            packets: npt_stats::PacketCounts {
                sent: p.resolved,
                received: p.received,
                lost: p.lost,
                late: p.late,
                duplicated: p.duplicated,
                reordered: p.reordered,
            },
            refused: p.refused,
            jitter: p.jitter,
        };
        let rtts = self.rtts.get(..self.n).unwrap_or(&self.rtts);
        col.game_flush(rtts, &g, p.bytes_up, p.bytes_down);
        self.n = 0;
    }
}

/// A game session: a UDP socket connected to the target, the `--token` handshake if asked,
/// then the probe session driven until it is done (sending for the plan's length, then
/// draining for at most the loss timeout).
pub(super) async fn game(
    ctx: &Ctx,
    ch: &mut Chooser,
    id: u64,
    target: SocketAddr,
) -> Result<(), Fail> {
    let plan = ch.game(&ctx.cfg.shape);
    // From `--bind`'s address, marked (`--dscp`), as every socket of the run.
    let std_sock = ctx
        .cfg
        .targets
        .source
        .udp_connected(target)
        .map_err(|e| Fail::io("bind", &e))?;
    std_sock
        .set_nonblocking(true)
        .map_err(|e| Fail::io("bind", &e))?;
    let sock = UdpSocket::from_std(std_sock).map_err(|e| Fail::io("bind", &e))?;
    sock.connect(target)
        .await
        .map_err(|e| Fail::io("connect", &e))?;
    let auth = match &ctx.cfg.secret {
        Some(secret) => Some(
            auth::udp(&sock, secret, ctx.cfg.timeout)
                .await
                .map_err(|e| Fail::io("token handshake", &e))?,
        ),
        None => None,
    };
    let _conn = ctx.col.conn_open(Proto::Udp);
    let size = frame_len(plan.size).min(64 * 1024) as usize;
    let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let tick = ns(plan.tick).max(1);
    let start = ctx.now_ns();
    let mut s = Session::new(SessionConfig {
        // Flow ids are the run's session numbers; the wire field is 32 bits, and a wrapped
        // id only has to differ from the other sessions on this socket (there are none).
        #[allow(clippy::cast_possible_truncation)] // NO-PANIC: see above; truncation is intended.
        flow: id as u32,
        framing: Framing::Framed {
            token: ctx.cfg.token,
        },
        size,
        fill: Fill::Random,
        fill_seed: id,
        verify: false,
        pacing: Pacing::Tick { every: tick },
        loss_timeout: ns(ctx.cfg.shape.game.loss_timeout),
        count: None,
        send_until: Some(start.saturating_add(ns(plan.length))),
        start,
        // The run cuts its own intervals from the batches: one stage for the whole session.
        stage: Stage::Packets(u64::MAX),
        behind_threshold: tick,
        history: 4096,
        auth,
        stamp_key: None,
        phases: None,
        // Refusals by the far end's budget are told apart from path loss (the flow query at
        // the end settles them); the game keeps no per-direction delays.
        reflect: Reflect::Full,
        clock: ClockSync::None,
        log_packets: false,
        mark: None,
    });
    // RTTs go to the run's shared histograms: thousands of sessions keep none of their own.
    s.keep_histograms(false);
    let mut batch = GameBatch {
        rtts: [0; GameBatch::CAP],
        n: 0,
    };
    let result = drive(ctx, &sock, &mut s, &mut batch, size).await;
    if result.is_err() {
        // A socket error ends the session: what is in flight counts as lost.
        s.abort(ctx.now_ns(), StopReason::Error);
    }
    batch.flush(&ctx.col, &mut s);
    result
}

/// Moves bytes between `sock` and the session until it is done.
async fn drive(
    ctx: &Ctx,
    sock: &UdpSocket,
    s: &mut Session,
    batch: &mut GameBatch,
    size: usize,
) -> Result<(), Fail> {
    // A packet, or the flow query at the end.
    let mut out = vec![0u8; s.max_send_len().max(size)];
    // Echo replies are as long as the request; anything longer is not ours (truncated).
    let mut inb = vec![0u8; size + 64];
    loop {
        let now = ctx.now_ns();
        while let Some(n) = s.poll_transmit(now, &mut out) {
            sock.send(out.get(..n).unwrap_or(&out))
                .await
                .map_err(|e| Fail::io("send", &e))?;
        }
        s.handle_timeout(now);
        if s.is_done() {
            return Ok(());
        }
        let Some(wake) = s.poll_timeout() else {
            // Not done and nothing to wait for cannot happen with a tick schedule; never hang.
            s.abort(now, StopReason::Abort);
            return Ok(());
        };
        let wake = ctx.t0 + Duration::from_nanos(wake);
        tokio::select! {
            _ = tokio::time::sleep_until(wake.into()) => {}
            r = sock.recv(&mut inb) => {
                let n = r.map_err(|e| Fail::io("receive", &e))?;
                let reply = inb.get(..n).unwrap_or(&inb);
                if let Arrival::OnTime { rtt } = s.handle_arrival(ctx.now_ns(), reply) {
                    if batch.push(rtt) {
                        batch.flush(&ctx.col, s);
                    }
                }
            }
        }
    }
}
