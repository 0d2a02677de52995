//! One attempt over UDP: through `--via socks5://`, a fresh association — TCP connect to the
//! proxy, its greeting, the UDP ASSOCIATE reply, each timed — then one framed echo through the
//! relay (the first response byte) and a second (the base round trip), against `npt serve`'s
//! UDP port; directly, the two echoes alone. Blocking sockets, each wait bounded by what is
//! left of the attempt's timeout (the runtime has nothing else to run meanwhile).

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use npt_result::error::{io_error_kind, ErrorKind};
use npt_wire::frame::{Header, Kind, HEADER_LEN};

use crate::classify::{Attempt, Layer};
use crate::tcp::Failure;
use crate::{ns, Config};

/// One fresh flow to the target `addr` (through `--via`: a fresh association), its layers
/// recorded in `a` as they complete.
pub fn attempt(cfg: &Config, addr: SocketAddr, a: &mut Attempt) -> Result<(), Failure> {
    let started = Instant::now();
    let left = || {
        cfg.timeout
            .checked_sub(started.elapsed())
            .filter(|d| !d.is_zero())
            .ok_or((
                ErrorKind::Timeout,
                format!("no echo within {:?}", cfg.timeout),
            ))
    };
    let (flow, to) = match &cfg.via {
        Some(via) => {
            // Unspecified: the proxy's grammar decides (an IP as is, a name resolved here or,
            // with socks5h://, by the proxy).
            let any = SocketAddr::from(([0, 0, 0, 0], cfg.port));
            let f = npt_proxy::udp_flow::SocksUdp::open(via, &cfg.host, cfg.port, any, left()?)
                .map_err(|e| (e.kind(), format!("via {via}: {e}")))?;
            let ph = f.phases();
            a.layers.extend(ph.layers(via, true));
            let relay = f.relay();
            (Some(f), relay)
        }
        None => (None, addr),
    };
    let bind: SocketAddr = if to.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let io = |e: std::io::Error| (io_error_kind(&e), format!("{to}: {e}"));
    let sock = UdpSocket::bind(bind).map_err(io)?;
    sock.connect(to).map_err(io)?;
    let header = flow
        .as_ref()
        .map(|f| f.header().to_vec())
        .unwrap_or_default();
    let echo = |seq: u64| -> Result<u64, Failure> {
        let mut req = header.clone();
        let at = req.len();
        req.resize(at + HEADER_LEN, 0);
        Header {
            kind: Kind::Echo,
            flags: 0,
            frame_len: u32::try_from(HEADER_LEN).unwrap_or(u32::MAX),
            reply_len: 0,
            flow: std::process::id(),
            status: 0,
            seq,
            send_ts: 0,
            token: 0,
        }
        .encode(req.get_mut(at..).unwrap_or_default())
        .map_err(|e| (ErrorKind::Internal, e.to_string()))?;
        let t = Instant::now();
        sock.send(&req).map_err(io)?;
        let mut buf = [0u8; 2048];
        // Bounded: each pass waits at most what is left of the timeout, and at most 64.
        for _ in 0..64 {
            sock.set_read_timeout(Some(left()?.max(Duration::from_millis(1))))
                .map_err(io)?;
            let n = match sock.recv(&mut buf) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err((ErrorKind::Timeout, format!("{to}: no echo in time")))
                }
                Err(e) => return Err(io(e)),
            };
            let got = buf.get(..n).unwrap_or_default();
            let payload = match &flow {
                Some(f) => match f.payload(got) {
                    Ok(p) => p,
                    Err(_) => continue,
                },
                None => got,
            };
            match Header::decode(payload) {
                Ok(h) if h.kind == Kind::EchoReply && h.seq == seq => return Ok(ns(t.elapsed())),
                _ => continue,
            }
        }
        Err((ErrorKind::Protocol, format!("{to}: no echo of ours")))
    };
    let first = echo(1)?;
    a.layers.push((Layer::FirstByte, first));
    a.rtt_ns = Some(echo(2)?);
    Ok(())
}
