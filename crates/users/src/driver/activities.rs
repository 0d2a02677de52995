//! The activities a user carries out over TCP and QUIC: web visits (a page = its own
//! connection, the handshake-sized exchange, then request rounds), large transfers, and QUIC
//! visits with concurrent streams. Each TCP connection's `TCP_INFO` is read when it is up and
//! when it ends ([`KernelWatch`]), for the run's retransmits and kernel RTT.

use super::*;
use npt_netio::tcpinfo::{tcp_info, TcpInfo};
use npt_result::setup::Layer;
use npt_result::stats::setup::Attempt;
use std::os::fd::{AsRawFd, RawFd};

/// Reads a TCP connection's `TCP_INFO` now and again when dropped — which must be before the
/// socket is closed: declare it after the stream, so it drops first, on every way out
/// (an error, a cancelled task) as well as at the end.
struct KernelWatch<'a> {
    ctx: &'a Ctx,
    fd: RawFd,
    first: Option<TcpInfo>,
}

impl<'a> KernelWatch<'a> {
    fn start(ctx: &'a Ctx, s: &TcpStream) -> KernelWatch<'a> {
        let fd = s.as_raw_fd();
        KernelWatch {
            ctx,
            fd,
            first: tcp_info(fd).ok(),
        }
    }
}

impl Drop for KernelWatch<'_> {
    fn drop(&mut self) {
        let (Some(first), Ok(last)) = (self.first, tcp_info(self.fd)) else {
            return;
        };
        let scope = if self.ctx.cfg.targets.via.is_some() {
            npt_result::tcpinfo::SCOPE_PROXY
        } else {
            npt_result::tcpinfo::SCOPE_TARGET
        };
        self.ctx.col.tcp_kernel(&first, &last, scope);
    }
}

/// A TCP connection to `target` (through `--via` if set), with its `--token` session key and
/// its setup layers so far (the connect, the proxy's exchanges).
pub(super) async fn tcp_connect(
    ctx: &Ctx,
    target: SocketAddr,
) -> Result<(TcpStream, Instant, Option<SessionKey>, Attempt), Fail> {
    let t = Instant::now();
    let mut layers = Attempt::default();
    let s = match &ctx.cfg.targets.via {
        None => {
            let connect = ctx.cfg.targets.source.connect_async(target);
            let s = ctx.io("connect", connect).await?;
            layers.layers.push((Layer::TcpConnect, ns(t.elapsed())));
            s
        }
        Some(via) => {
            let host = target.ip().to_string();
            let tunnel = npt_proxy::connect_async::tcp_connect(via, &host, target.port());
            let (s, phases) = match tokio::time::timeout(ctx.cfg.timeout, tunnel).await {
                Ok(Ok(x)) => x,
                Ok(Err(e)) => return Err(Fail::new(e.kind(), format!("via {via}: {e}"))),
                Err(_) => return Err(Fail::timeout("proxy handshake")),
            };
            ctx.col.proxy(Proto::Tcp, phases.auth_ns + phases.reply_ns);
            layers.layers.extend(phases.layers(via, false));
            s
        }
    };
    ctx.col.connect(
        Proto::Tcp,
        u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX),
    );
    let _ = s.set_nodelay(true);
    let mut s = s;
    let key = match &ctx.cfg.secret {
        Some(secret) => Some(
            ctx.io("token handshake", auth::stream(&mut s, secret))
                .await?,
        ),
        None => None,
    };
    Ok((s, t, key, layers))
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

pub(super) async fn web_visit(
    ctx: &Ctx,
    ch: &mut Chooser,
    id: u64,
    target: SocketAddr,
) -> Result<(), Fail> {
    let shape: &Shape = &ctx.cfg.shape;
    let pages = ch.pages(shape);
    for p in 0..pages {
        let plan = ch.page(shape);
        web_page(ctx, ch, id, target, plan).await?;
        if p + 1 < pages {
            let d = ch.pause(shape);
            ctx.sleep_until(Instant::now() + d).await;
        }
    }
    Ok(())
}

/// One page: its own connection, the handshake-sized exchange, then the request rounds.
pub(super) async fn web_page(
    ctx: &Ctx,
    ch: &mut Chooser,
    id: u64,
    target: SocketAddr,
    plan: PagePlan,
) -> Result<(), Fail> {
    let shape = &ctx.cfg.shape;
    let (mut s, t_connect, key, mut layers) = tcp_connect(ctx, target).await?;
    let _kernel = KernelWatch::start(ctx, &s);
    let _conn = ctx.col.conn_open(Proto::Tcp);
    let (mut r, mut w) = s.split();
    let hs = exchange(
        ctx,
        Activity::Web,
        &mut r,
        &mut w,
        id,
        0,
        plan.handshake_up,
        plan.handshake_down,
        usize::MAX,
        key.as_ref(),
        true,
    )
    .await?;
    ctx.col.handshake(
        Proto::Tcp,
        u64::try_from(hs.total.as_nanos()).unwrap_or(u64::MAX),
    );
    // The connection's first exchange is its first response byte; the rounds after it are
    // requests on a connection in use, the setup block's base.
    layers.layers.push((Layer::FirstByte, ns(hs.ttfb)));
    ctx.col.set_up(Proto::Tcp, &ctx.plans.tcp, &layers);
    ctx.col.bytes(
        Activity::Web,
        frame_len(plan.handshake_up) as u64,
        frame_len(plan.handshake_down) as u64,
    );
    for round in 0..plan.rounds {
        let (up, down) = ch.web_round(shape);
        let x = exchange(
            ctx,
            Activity::Web,
            &mut r,
            &mut w,
            id,
            1 + round as u64,
            up,
            down,
            usize::MAX,
            key.as_ref(),
            false,
        )
        .await?;
        ctx.col.request(
            Activity::Web,
            frame_len(up) as u64,
            frame_len(down) as u64,
            u64::try_from(x.total.as_nanos()).unwrap_or(u64::MAX),
        );
        ctx.col.warm(Proto::Tcp, ns(x.ttfb));
        if round == 0 {
            ctx.col.first_request(
                Proto::Tcp,
                u64::try_from(t_connect.elapsed().as_nanos()).unwrap_or(u64::MAX),
            );
        }
        if round + 1 < plan.rounds {
            let d = ch.pause(shape);
            ctx.sleep_until(Instant::now() + d).await;
        }
    }
    Ok(())
}

/// One large download (a small request, `n` bytes back) or upload (`n` bytes up, a header
/// back), moved in chunks of `--chunk` bytes.
pub(super) async fn transfer(
    ctx: &Ctx,
    a: Activity,
    id: u64,
    target: SocketAddr,
    n: u64,
) -> Result<(), Fail> {
    let (mut s, t_connect, key, mut layers) = tcp_connect(ctx, target).await?;
    let _kernel = KernelWatch::start(ctx, &s);
    let _conn = ctx.col.conn_open(Proto::Tcp);
    let (mut r, mut w) = s.split();
    let chunk = ctx.cfg.shape.transfer.chunk.clamp(1, 1 << 20) as usize;
    let (up, down) = if a == Activity::Download {
        (256, n)
    } else {
        (n, HEADER_LEN as u64)
    };
    let x = exchange(
        ctx,
        a,
        &mut r,
        &mut w,
        id,
        0,
        up,
        down,
        chunk,
        key.as_ref(),
        true,
    )
    .await?;
    let (up, down) = (frame_len(up) as u64, frame_len(down) as u64);
    ctx.col.request(
        a,
        up,
        down,
        u64::try_from(x.total.as_nanos()).unwrap_or(u64::MAX),
    );
    ctx.col.first_request(
        Proto::Tcp,
        u64::try_from(t_connect.elapsed().as_nanos()).unwrap_or(u64::MAX),
    );
    ctx.col
        .ttfb(a, u64::try_from(x.ttfb.as_nanos()).unwrap_or(u64::MAX));
    // A download's small request is its connection's first response byte; an upload's first
    // byte comes after its whole body, no layer of the setup.
    if a == Activity::Download {
        layers.layers.push((Layer::FirstByte, ns(x.ttfb)));
        ctx.col.set_up(Proto::Tcp, &ctx.plans.tcp, &layers);
    }
    ctx.col.transfer(
        a,
        up.max(down),
        u64::try_from(x.total.as_nanos()).unwrap_or(u64::MAX),
    );
    Ok(())
}

/// One QUIC visit: connect (the handshake), the main document, then the resources on
/// concurrent bidirectional streams of the same connection.
pub(super) async fn quic_visit(ctx: &Arc<Ctx>, ch: &mut Chooser, id: u64) -> Result<(), Fail> {
    let (Some(ep), Some(target)) = (&ctx.quic, ctx.cfg.targets.quic) else {
        return Err(Fail::new(ErrorKind::Config, "no QUIC endpoint"));
    };
    let shape = &ctx.cfg.shape;
    let plan = ch.quic_visit(shape);
    let t = Instant::now();
    let connecting = ep
        .connect(target, &ctx.cfg.targets.quic_server_name)
        .map_err(|e| Fail::new(ErrorKind::Local, format!("connect: {e}")))?;
    let conn = match tokio::time::timeout(ctx.cfg.timeout, connecting).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            return Err(Fail::new(
                quic::classify_connection(&e),
                format!("handshake: {e}"),
            ))
        }
        Err(_) => return Err(Fail::timeout("handshake")),
    };
    let hs = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
    ctx.col.connect(Proto::Quic, hs);
    ctx.col.handshake(Proto::Quic, hs);
    let _conn = ctx.col.conn_open(Proto::Quic);
    let result = async {
        let (up, down) = (plan.doc_up, plan.doc_down);
        let x = quic_request(ctx, &conn, id, 0, up, down).await?;
        ctx.col.request(
            Activity::Quic,
            frame_len(up) as u64,
            frame_len(down) as u64,
            u64::try_from(x.total.as_nanos()).unwrap_or(u64::MAX),
        );
        let layers = vec![(Layer::Quic, hs), (Layer::FirstByte, ns(x.ttfb))];
        let a = Attempt {
            layers,
            ..Attempt::default()
        };
        ctx.col.set_up(Proto::Quic, &ctx.plans.quic, &a);
        ctx.col.first_request(
            Proto::Quic,
            u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX),
        );
        let mut set = tokio::task::JoinSet::new();
        for i in 0..plan.resources {
            let (up, down) = ch.quic_resource(shape);
            let ctx = ctx.clone();
            let conn = conn.clone();
            set.spawn(async move {
                let r = quic_request(&ctx, &conn, id, 1 + i as u64, up, down).await;
                (r, up, down)
            });
        }
        let mut first_err = None;
        while let Some(j) = set.join_next().await {
            match j {
                Ok((Ok(x), up, down)) => {
                    ctx.col.request(
                        Activity::Quic,
                        frame_len(up) as u64,
                        frame_len(down) as u64,
                        u64::try_from(x.total.as_nanos()).unwrap_or(u64::MAX),
                    );
                    ctx.col.warm(Proto::Quic, ns(x.ttfb));
                }
                Ok((Err(f), _, _)) => {
                    // Every failed stream counts; the visit fails once, with the first.
                    if first_err.is_none() {
                        first_err = Some(f);
                    } else {
                        ctx.col.error(Activity::Quic, f.kind, || f.msg);
                    }
                }
                Err(_) => {}
            }
        }
        match first_err {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }
    .await;
    conn.close(0u32.into(), b"visit over");
    result
}

pub(super) async fn quic_request(
    ctx: &Ctx,
    conn: &quinn::Connection,
    id: u64,
    seq: u64,
    up: u64,
    down: u64,
) -> Result<Exchange, Fail> {
    let (mut send, mut recv) = match tokio::time::timeout(ctx.cfg.timeout, conn.open_bi()).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return Err(Fail::new(
                quic::classify_connection(&e),
                format!("open stream: {e}"),
            ))
        }
        Err(_) => return Err(Fail::timeout("open stream")),
    };
    // `--token`: each stream opens with the keyed handshake, as a TCP connection does.
    let key = match &ctx.cfg.secret {
        Some(secret) => {
            let mut s = tokio::io::join(&mut recv, &mut send);
            Some(
                ctx.io("token handshake", auth::stream(&mut s, secret))
                    .await?,
            )
        }
        None => None,
    };
    let x = exchange(
        ctx,
        Activity::Quic,
        &mut recv,
        &mut send,
        id,
        seq,
        up,
        down,
        usize::MAX,
        key.as_ref(),
        false,
    )
    .await?;
    let _ = send.finish();
    Ok(x)
}
