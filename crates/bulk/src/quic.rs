//! QUIC bulk streams: the streams of a run share as few connections as the responder's
//! concurrent-stream limit allows ([`STREAMS_PER_CONN`]), each stream opened with the same
//! `Bulk` frame as a TCP connection. Every [`SAMPLE_EVERY`] each stream publishes its
//! connection's RTT estimate and congestion window; the packets the connection lost are
//! published on its first stream only, so that adding the streams counts them once. An upload at
//! a rate is written as its pace grants ([`crate::pace`]; QUIC's own pacer spreads the packets).

use npt_result::error::ErrorKind;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use npt_client::quic::{classify_connection, client_endpoint};
use npt_wire::bulk::Direction;

use crate::frames::{self, Fail};
use crate::{Config, Reading, StreamState, SAMPLE_EVERY};

/// Streams per QUIC connection (the responder allows 256 at once).
pub const STREAMS_PER_CONN: usize = 128;
const CHUNK: usize = 128 * 1024;

fn fail_all(states: &[Arc<StreamState>], f: &Fail) {
    for s in states {
        s.fail(f.0, f.1.clone());
        s.finish();
    }
}

/// Runs every stream of the run over QUIC until `stop`.
pub(crate) async fn run_all(
    cfg: Arc<Config>,
    addrs: Arc<Vec<SocketAddr>>,
    states: Vec<Arc<StreamState>>,
    stop: Arc<AtomicBool>,
) {
    let Some(&target) = addrs.first() else {
        fail_all(&states, &(ErrorKind::Config, "no address".into()));
        return;
    };
    let ep = match client_endpoint(target, &cfg.trust, cfg.timeout) {
        Ok(ep) => ep,
        Err(e) => return fail_all(&states, &(ErrorKind::Local, e)),
    };
    let mut conns = Vec::new();
    for group in states.chunks(STREAMS_PER_CONN) {
        conns.push(tokio::spawn(connection(
            ep.clone(),
            target,
            cfg.clone(),
            group.to_vec(),
            stop.clone(),
        )));
    }
    for c in conns {
        let _ = c.await;
    }
    ep.close(0u32.into(), b"done");
}

async fn connection(
    ep: quinn::Endpoint,
    target: SocketAddr,
    cfg: Arc<Config>,
    states: Vec<Arc<StreamState>>,
    stop: Arc<AtomicBool>,
) {
    let t = cfg.timeout;
    let connecting = match ep.connect(target, &cfg.target.host) {
        Ok(c) => c,
        Err(e) => return fail_all(&states, &(ErrorKind::Config, format!("connect: {e}"))),
    };
    let conn = match tokio::time::timeout(t, connecting).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            return fail_all(
                &states,
                &(classify_connection(&e), format!("QUIC handshake: {e}")),
            )
        }
        Err(_) => {
            return fail_all(
                &states,
                &(
                    ErrorKind::Timeout,
                    format!("QUIC handshake: no answer within {t:?}"),
                ),
            )
        }
    };
    let mut tasks = Vec::new();
    for st in &states {
        let (conn, cfg, st, stop) = (conn.clone(), cfg.clone(), st.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            if let Err((kind, detail)) = stream(&conn, &cfg, &st, &stop).await {
                if !stop.load(Ordering::SeqCst) {
                    st.fail(kind, detail);
                }
            }
            st.finish();
        }));
    }
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    while !stop.load(Ordering::SeqCst) && !tasks.iter().all(|t| t.is_finished()) {
        tick.tick().await;
        let p = conn.stats().path;
        for (i, st) in states.iter().enumerate() {
            st.set_reading(Reading {
                rtt_ns: Some(u64::try_from(p.rtt.as_nanos()).unwrap_or(u64::MAX)),
                retransmits: (i == 0).then_some(p.lost_packets),
                cwnd: Some(p.cwnd),
                ..Reading::default()
            });
        }
    }
    for t in tasks {
        let _ = t.await;
    }
    conn.close(0u32.into(), b"done");
}

async fn stream(
    conn: &quinn::Connection,
    cfg: &Config,
    st: &StreamState,
    stop: &AtomicBool,
) -> Result<(), Fail> {
    let t = cfg.timeout;
    let (mut send, mut recv) = tokio::time::timeout(t, conn.open_bi())
        .await
        .map_err(|_| {
            (
                ErrorKind::Timeout,
                format!("open stream: no answer within {t:?}"),
            )
        })?
        .map_err(|e| (classify_connection(&e), format!("open stream: {e}")))?;
    let key = {
        let mut joined = tokio::io::join(&mut recv, &mut send);
        frames::open(&mut joined, cfg, st).await?
    };
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    let mut buf = vec![0u8; CHUNK];
    let r = match st.direction {
        Direction::Down => loop {
            tokio::select! {
                r = recv.read(&mut buf) => match r {
                    Ok(Some(n)) => { st.bytes.fetch_add(n as u64, Ordering::Relaxed); }
                    Ok(None) => break Ok(()),
                    Err(e) => break Err((ErrorKind::Reset, format!("download: {e}"))),
                },
                _ = tick.tick() => if stop.load(Ordering::SeqCst) {
                    break Ok(());
                }
            }
        },
        Direction::Up => {
            npt_wire::fill::fill(npt_wire::Fill::Random, u64::from(st.index), 0, &mut buf);
            let reports = frames::follow_reports(&mut recv, key, st);
            tokio::pin!(reports);
            let mut pace = crate::pace::Pace::new(cfg.rate_bps);
            loop {
                tokio::select! {
                    r = async {
                        let n = pace.grant(buf.len()).await;
                        let r = send.write(buf.get(..n).unwrap_or(&buf)).await;
                        if let Ok(w) = r {
                            pace.spend(w);
                        }
                        r
                    } => if let Err(e) = r {
                        break Err((ErrorKind::Reset, format!("upload: {e}")));
                    },
                    r = &mut reports => break r,
                    _ = tick.tick() => if stop.load(Ordering::SeqCst) {
                        break Ok(());
                    }
                }
            }
        }
    };
    // Unsent or unread bytes are not part of the result.
    let _ = send.reset(0u32.into());
    let _ = recv.stop(0u32.into());
    r
}
