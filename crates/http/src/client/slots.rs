//! The slot tasks — a connection per request, HTTP/1.1 keep-alive, h2 streams — and the
//! per-slot request watchdog.

use super::*;

/// `--new-conn`: every request on its own connection.
pub(super) async fn new_conn_slot(ctx: Arc<Ctx>, shard: Arc<Shard>, g: usize) {
    let mut buf = Vec::new();
    let mut wd = Watchdog::new(ctx.timeout);
    while let Some(tk) = ctx.ticket(g).await {
        let sent = Instant::now();
        let _in_flight = ctx.inflight.enter(ctx.ns(sent));
        let r = ctx
            .fresh_request(tk.host, Some(&shard), &mut buf, &mut wd)
            .await;
        ctx.push(&shard, tk, sent, r, false);
    }
}

/// Connects a slot. A failed connection costs the request that would have used it (counted
/// as that request's error), then the slot backs off and tries again; `None` once no request
/// is due any more. The connection's event is returned too: its first request's answer
/// completes it for the setup block ([`Record::FirstByte`]).
pub(super) async fn connect_slot(ctx: &Ctx, shard: &Shard, g: usize) -> Option<(Io, ConnEvent)> {
    loop {
        match ctx.connect().await {
            Ok((io, ce)) => {
                shard.push(Record::Conn(ce));
                return Some((io, ce));
            }
            Err(f) => {
                let tk = ctx.ticket(g).await?;
                ctx.push(shard, tk, Instant::now(), Err(f), false);
                tokio::time::sleep(RECONNECT_BACKOFF).await;
            }
        }
    }
}

/// HTTP/1.1 keep-alive: one connection, one request at a time, reconnecting when it breaks.
pub(super) async fn h1_slot(ctx: Arc<Ctx>, shard: Arc<Shard>, g: usize) {
    let mut wd = Watchdog::new(ctx.timeout);
    loop {
        let Some((io, ce)) = connect_slot(&ctx, &shard, g).await else {
            return;
        };
        let mut fresh = Some(ce);
        let mut conn = h1::Conn::new(io);
        loop {
            let Some(tk) = ctx.ticket(g).await else {
                return;
            };
            let sent = Instant::now();
            let in_flight = ctx.inflight.enter(ctx.ns(sent));
            let (r, keep_alive) = ctx.h1_exchange(&mut conn, tk.host, sent, &mut wd).await;
            drop(in_flight);
            let failed = r.is_err();
            let reused = fresh.is_none();
            if let Some(mut ce) = fresh.take() {
                ce.first_byte_ns = super::ctx::first_byte(sent, &r);
                if ce.first_byte_ns.is_some() {
                    shard.push(Record::FirstByte(ce));
                }
            }
            ctx.push(&shard, tk, sent, r, reused);
            if failed || !keep_alive {
                break; // reconnect
            }
        }
    }
}

/// How often one request the server never processed (a graceful GOAWAY, a refused stream) is
/// sent again before it counts as an error (each try also within the request's timeout,
/// counted from its first send).
const H2_RETRIES: u32 = 8;

/// A request to send again on the slot's connection (or the next one): its ticket, when it was first sent
/// (its latency counts from then, as its user waits from then) and how often it was sent.
type Retry = (Ticket, Instant, u32);

/// HTTP/2: one connection carrying `streams` concurrent request loops. A request the server
/// never processed (a graceful GOAWAY above its last stream, a refused stream: `unprocessed`)
/// is sent again, on the next connection when this one is going away, its latency counted from
/// its first send.
pub(super) async fn h2_slot(ctx: Arc<Ctx>, shard: Arc<Shard>, streams: u32, g: usize) {
    let retries: Arc<std::sync::Mutex<Vec<Retry>>> = Arc::default();
    loop {
        let Some((io, ce)) = connect_slot(&ctx, &shard, g).await else {
            return;
        };
        let (tx, conn) = match h2_handshake(io).await {
            Ok(x) => x,
            Err(f) => {
                let Some(tk) = ctx.ticket(g).await else {
                    return;
                };
                ctx.push(&shard, tk, Instant::now(), Err(f), false);
                tokio::time::sleep(RECONNECT_BACKOFF).await;
                continue;
            }
        };
        // The stream that sends first on the connection takes its event and completes it
        // with that request's first byte.
        let fresh = Arc::new(std::sync::Mutex::new(Some(ce)));
        let mut set = JoinSet::new();
        for _ in 0..streams {
            let (ctx, shard, mut tx) = (ctx.clone(), shard.clone(), tx.clone());
            let (retries, fresh) = (retries.clone(), fresh.clone());
            set.spawn(async move {
                let mut wd = Watchdog::new(ctx.timeout);
                loop {
                    // Err: the connection is gone; the slot reconnects.
                    if std::future::poll_fn(|cx| tx.poll_ready(cx)).await.is_err() {
                        return false;
                    }
                    let again = retries.lock().ok().and_then(|mut r| r.pop());
                    let (tk, sent, tries) = match again {
                        Some(r) => r,
                        None => {
                            let Some(tk) = ctx.ticket(g).await else {
                                return true;
                            };
                            (tk, Instant::now(), 0)
                        }
                    };
                    let first = fresh.lock().ok().and_then(|mut f| f.take());
                    let reused = first.is_none();
                    // Measured from now, a retried request's first send being earlier.
                    let write = Instant::now();
                    let in_flight = ctx.inflight.enter(ctx.ns(sent));
                    let r = ctx.h2_exchange(&mut tx, tk.host, sent, &mut wd).await;
                    drop(in_flight);
                    if let Some(mut ce) = first {
                        ce.first_byte_ns = r
                            .as_ref()
                            .ok()
                            .map(|(_, head, _)| crate::client::ns_between(write, *head));
                        if ce.first_byte_ns.is_some() {
                            shard.push(Record::FirstByte(ce));
                        }
                    }
                    match r {
                        // Sent again: on this connection if it still takes requests, else
                        // (poll_ready fails: a GOAWAY) on the next one.
                        Err((_, true)) if tries < H2_RETRIES => {
                            if let Ok(mut r) = retries.lock() {
                                r.push((tk, sent, tries + 1));
                            }
                        }
                        r => ctx.push(&shard, tk, sent, r.map_err(|(f, _)| f), reused),
                    }
                }
            });
        }
        drop(tx);
        let mut done = false;
        while let Some(r) = set.join_next().await {
            done |= r.unwrap_or(false);
        }
        conn.abort();
        if done {
            return;
        }
    }
}

pub(super) type H2Tx = h2::client::SendRequest<Bytes>;

/// h2 handshake (prior knowledge, or after ALPN `h2`); the connection runs as its own task.
pub(super) async fn h2_handshake(io: Io) -> Result<(H2Tx, tokio::task::JoinHandle<()>), Failure> {
    let (tx, conn) = h2::client::Builder::new()
        .initial_window_size(1 << 20)
        .initial_connection_window_size(1 << 24)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|e| Failure::from_err(&e))?;
    let task = tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok((tx, task))
}

/// A slot's request timeout without a timer per request: one `Sleep` per slot, re-armed only
/// when it fires (at most once per timeout period) — inserting and removing a timer-wheel
/// entry for every request was a visible share of the client's CPU at 50k requests/s.
pub(super) struct Watchdog {
    pub(super) sleep: Pin<Box<tokio::time::Sleep>>,
}

impl Watchdog {
    pub(super) fn new(timeout: Duration) -> Watchdog {
        Watchdog {
            sleep: Box::pin(tokio::time::sleep(timeout)),
        }
    }

    /// Runs `work` until it completes (`Some`) or `deadline` passes (`None`).
    pub(super) async fn guard<F: Future>(
        &mut self,
        deadline: Instant,
        work: F,
    ) -> Option<F::Output> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                r = &mut work => return Some(r),
                _ = self.sleep.as_mut() => {
                    // Armed for an earlier request's deadline, or this one's.
                    if Instant::now() >= deadline {
                        return None;
                    }
                    self.sleep.as_mut().reset(deadline.into());
                }
            }
        }
    }
}
