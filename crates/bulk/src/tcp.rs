//! One TCP bulk stream: connect (directly, or through `--via`), open the bulk, then read
//! (down) or write (up) as fast as the path goes, reading the kernel's `TCP_INFO` every
//! [`SAMPLE_EVERY`]: retransmits, RTT, RTT variance, congestion window and delivery rate of
//! a sending stream; the receiver's RTT estimate of a receiving one (its smoothed RTT has no
//! samples after the handshake, and the sender's retransmits are the responder's to see).
//! A stream downloading from this host is woken only after about a millisecond of its rate
//! has arrived ([`npt_netio::lowat`]). An upload at a rate (`--rate`) is written as its pace
//! grants ([`crate::pace`]) with the kernel's pacing capped just above it; every stream reads
//! back the congestion control the kernel runs on it (`TCP_CONGESTION`).

use npt_result::error::ErrorKind;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_netio::lowat::{self, Lowat};
use npt_netio::tcpinfo::{tcp_info, TcpInfo};
use npt_wire::bulk::Direction;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::frames::{self, io_fail, Fail};
use crate::pace::Pace;
use crate::{Config, Reading, StreamState, SAMPLE_EVERY};

/// Bytes per read or write.
const CHUNK: usize = 128 * 1024;

/// A [`Reading`] of `TCP_INFO` for a stream going `dir`.
pub fn reading(i: &TcpInfo, dir: Direction) -> Reading {
    let us = |v: u32| u64::from(v) * 1000;
    match dir {
        Direction::Up => Reading {
            rtt_ns: Some(us(i.rtt_us)),
            rttvar_ns: Some(us(i.rttvar_us)),
            retransmits: Some(u64::from(i.total_retrans)),
            cwnd: Some(u64::from(i.snd_cwnd)),
            delivery_rate_bps: i.delivery_rate_bps(),
            ..Reading::default()
        },
        Direction::Down => Reading {
            rtt_ns: (i.rcv_rtt_us > 0).then(|| us(i.rcv_rtt_us)),
            ..Reading::default()
        },
    }
}

fn sample(s: &TcpStream, st: &StreamState) {
    if let Ok(i) = tcp_info(s.as_raw_fd()) {
        st.set_reading(reading(&i, st.direction));
    }
}

/// Runs one stream until `stop`; records its failure (unless it came after the stop).
pub(crate) async fn stream(
    cfg: Arc<Config>,
    addrs: Arc<Vec<SocketAddr>>,
    st: Arc<StreamState>,
    stop: Arc<AtomicBool>,
) {
    if let Err((kind, detail)) = run(&cfg, &addrs, &st, &stop).await {
        if !stop.load(Ordering::SeqCst) {
            st.fail(kind, detail);
        }
    }
    st.finish();
}

async fn connect(cfg: &Config, addrs: &[SocketAddr]) -> Result<TcpStream, Fail> {
    if let Some(via) = &cfg.via {
        let (s, _) = npt_proxy::connect_async::tcp_connect(via, &cfg.target.host, cfg.target.port)
            .await
            .map_err(|e| (e.kind(), e.to_string()))?;
        return Ok(s);
    }
    let mut last = None;
    for a in addrs {
        match cfg.source.connect_async(*a).await {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(io_fail(&format!("connect {a}"), &e)),
        }
    }
    Err(last.unwrap_or((ErrorKind::Config, "no address to connect to".into())))
}

async fn run(
    cfg: &Config,
    addrs: &[SocketAddr],
    st: &StreamState,
    stop: &AtomicBool,
) -> Result<(), Fail> {
    let t = cfg.timeout;
    let mut s = tokio::time::timeout(t, connect(cfg, addrs))
        .await
        .map_err(|_| {
            (
                ErrorKind::Timeout,
                format!("connect: no answer within {t:?}"),
            )
        })??;
    let _ = s.set_nodelay(true);
    if let Some(cc) = &cfg.congestion {
        npt_netio::tcpinfo::set_congestion(s.as_raw_fd(), cc)
            .map_err(|e| (ErrorKind::Config, format!("congestion control {cc:?}: {e}")))?;
    }
    if let Ok(cc) = npt_netio::tcpinfo::congestion(s.as_raw_fd()) {
        st.set_congestion(cc);
    }
    if let (Some(rate), Direction::Up) = (cfg.rate_bps, st.direction) {
        // Best effort: the pace holds the rate whatever the kernel does; this spreads packets.
        let _ = crate::pace::cap_kernel(s.as_raw_fd(), rate);
    }
    let key = frames::open(&mut s, cfg, st).await?;
    sample(&s, st);
    // A download from this host's responder gets a wake-up mark: the bytes counted at a
    // sample are then at most a millisecond of the rate behind.
    let mut lowat = s
        .peer_addr()
        .is_ok_and(|a| lowat::wanted(a.ip()))
        .then(|| Lowat::new(Instant::now()));
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut buf = vec![0u8; CHUNK];
    match st.direction {
        Direction::Down => loop {
            tokio::select! {
                r = s.read(&mut buf) => match r {
                    Ok(0) => return Ok(()),
                    Ok(n) => { st.bytes.fetch_add(n as u64, Ordering::Relaxed); }
                    Err(e) => return Err(io_fail("download", &e)),
                },
                _ = tick.tick() => {
                    sample(&s, st);
                    if let Some(l) = lowat.as_mut() {
                        l.apply(s.as_raw_fd(), st.bytes.load(Ordering::Relaxed), Instant::now());
                    }
                    if stop.load(Ordering::SeqCst) {
                        return Ok(());
                    }
                }
            }
        },
        Direction::Up => {
            let (rd, mut wr) = s.into_split();
            let reports = frames::follow_reports(rd, key, st);
            tokio::pin!(reports);
            npt_wire::fill::fill(npt_wire::Fill::Random, u64::from(st.index), 0, &mut buf);
            let mut pace = Pace::new(cfg.rate_bps);
            let r = loop {
                tokio::select! {
                    // One future: the grant, the write and the spending of what it wrote.
                    r = async {
                        let n = pace.grant(buf.len()).await;
                        let r = wr.write(buf.get(..n).unwrap_or(&buf)).await;
                        if let Ok(w) = r {
                            pace.spend(w);
                        }
                        r
                    } => if let Err(e) = r {
                        break Err(io_fail("upload", &e));
                    },
                    r = &mut reports => break r,
                    _ = tick.tick() => {
                        sample(wr.as_ref(), st);
                        if stop.load(Ordering::SeqCst) {
                            break Ok(());
                        }
                    }
                }
            };
            // Whatever is still in the socket buffer is not part of the result: the close
            // resets the connection instead of sending it (a zero linger does not block).
            let _ = socket2::SockRef::from(wr.as_ref()).set_linger(Some(Duration::ZERO));
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sender_reads_the_senders_fields_and_a_receiver_its_rtt() {
        let i = TcpInfo {
            rtt_us: 20_000,
            rttvar_us: 500,
            rcv_rtt_us: 25_000,
            total_retrans: 7,
            snd_cwnd: 40,
            delivery_rate: Some(1_250_000),
            ..TcpInfo::default()
        };
        let up = reading(&i, Direction::Up);
        assert_eq!((up.rtt_ns, up.rttvar_ns), (Some(20_000_000), Some(500_000)));
        assert_eq!((up.retransmits, up.cwnd), (Some(7), Some(40)));
        assert_eq!(up.delivery_rate_bps, Some(10e6));
        let down = reading(&i, Direction::Down);
        assert_eq!((down.rtt_ns, down.retransmits), (Some(25_000_000), None));
        let none = reading(&TcpInfo::default(), Direction::Down);
        assert_eq!(none.rtt_ns, None, "no receiver estimate yet");
    }
}
