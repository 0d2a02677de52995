//! Why this exists: `npt serve --quic` faces the same internet as TCP, where QUIC clients fail
//! in ways of their own: a client that rejects the server's certificate aborts the handshake,
//! one offers an ALPN the server does not speak, connections are closed with an error code in
//! the middle of a stream, streams are reset mid-frame, clients vanish without a close, and
//! scanners send an Initial and never come back. Meanwhile a well-behaved QUIC client (trusting
//! the server's real certificate) must keep getting its echoes, the server's descriptors and
//! RSS must stay bounded, and each refusal or abort must be counted in the log line
//! (`quic conns refused: failed-handshake … handshake-timeout … aborted … lost …` and the
//! streams' `reset`).
//!
//! Each attack runs a bounded number of times, one after another on one thread, so the test
//! loads the server, not the box.

#![cfg(test)]
#![allow(clippy::cast_sign_loss)]

use crate::common;
use crate::serve_util;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use npt_wire::frame::{Header, Kind, HEADER_LEN};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serve_util::{logged, open_fds, rss_kib, serve, until};

const ALPN: &[u8] = b"npt";

fn frame(kind: Kind, len: u32, seq: u64) -> Vec<u8> {
    let mut b = vec![0x5A; (len as usize).clamp(HEADER_LEN, 1 << 16)];
    Header {
        kind,
        flags: 0,
        frame_len: len,
        reply_len: 0,
        flow: 5,
        status: 0,
        seq,
        send_ts: 1,
        token: 0,
    }
    .encode(&mut b)
    .unwrap();
    b
}

/// A client config trusting only `root`, offering `alpn`, idling out after `idle`.
fn client_config(
    root: &CertificateDer<'static>,
    alpn: &[u8],
    idle: Duration,
) -> quinn::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![alpn.to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_idle_timeout(Some(idle.try_into().unwrap()));
    cfg.transport_config(Arc::new(transport));
    cfg
}

fn endpoint(cfg: &quinn::ClientConfig) -> quinn::Endpoint {
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    ep.set_default_client_config(cfg.clone());
    ep
}

async fn connect(ep: &quinn::Endpoint, to: SocketAddr) -> Result<quinn::Connection, String> {
    let c = ep.connect(to, "localhost").map_err(|e| e.to_string())?;
    match tokio::time::timeout(Duration::from_secs(5), c).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err("handshake timed out".into()),
    }
}

/// One framed echo on a new stream of `conn`, within two seconds.
async fn echo(conn: &quinn::Connection, seq: u64) -> bool {
    let once = async {
        let (mut send, mut recv) = conn.open_bi().await.ok()?;
        send.write_all(&frame(Kind::Echo, 64, seq)).await.ok()?;
        send.finish().ok()?;
        let mut back = [0u8; 64];
        recv.read_exact(&mut back).await.ok()?;
        Header::decode(&back).ok().filter(|h| h.seq == seq)
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), once).await,
        Ok(Some(_))
    )
}

/// The well-behaved client: one echo every 20 ms on one connection (reconnecting if it
/// breaks, which counts as a miss) until `stop`, bounded to 120 s. (answered, sent).
fn good_client(
    to: SocketAddr,
    cfg: quinn::ClientConfig,
    stop: Arc<AtomicBool>,
) -> JoinHandle<(u32, u32)> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let ep = endpoint(&cfg);
            let mut conn: Option<quinn::Connection> = None;
            let (mut ok, mut n) = (0u32, 0u32);
            let t0 = Instant::now();
            while !stop.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(120) {
                n += 1;
                if conn.is_none() {
                    conn = connect(&ep, to).await.ok();
                }
                match &conn {
                    Some(c) if echo(c, u64::from(n)).await => ok += 1,
                    _ => conn = None,
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if let Some(c) = conn {
                c.close(0u32.into(), b"done");
            }
            ep.wait_idle().await;
            (ok, n)
        })
    })
}

#[test]
fn npt_serve_quic_survives_bad_clients_and_counts_every_abort() {
    let _turn = common::turn(module_path!());
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("cert.pem");
    let s = serve(
        20_000,
        &[
            "--quic",
            "127.0.0.1:0",
            "--quic-cert-out",
            pem.to_str().unwrap(),
            "--idle-timeout",
            "2s",
            "--io-timeout",
            "1s",
        ],
    );
    let quic = s.quic.expect("quic address");
    let cert = CertificateDer::from_pem_file(&pem).unwrap();
    let good = client_config(&cert, ALPN, Duration::from_secs(10));
    let (fds0, rss0) = (open_fds(s.pid()), rss_kib(s.pid()));
    let stop = Arc::new(AtomicBool::new(false));
    let prober = good_client(quic, good.clone(), stop.clone());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut max_fds, mut max_rss) = (fds0, rss0);
    let mut sample = || {
        max_fds = max_fds.max(open_fds(s.pid()));
        max_rss = max_rss.max(rss_kib(s.pid()));
    };

    const N: usize = 50;
    rt.block_on(async {
        // A client that trusts another certificate rejects ours and aborts the handshake.
        let other = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        let other = CertificateDer::from(other.cert.der().to_vec());
        let ep = endpoint(&client_config(&other, ALPN, Duration::from_secs(10)));
        for _ in 0..N {
            let e = connect(&ep, quic)
                .await
                .expect_err("an untrusted certificate");
            assert!(e.contains("certificate") || e.contains("Unknown"), "{e}");
        }
        // An ALPN the server does not speak.
        let ep = endpoint(&client_config(&cert, b"h3", Duration::from_secs(10)));
        for _ in 0..N {
            let e = connect(&ep, quic).await.expect_err("no common ALPN");
            assert!(
                e.contains("application protocol") || e.contains("120"),
                "{e}"
            );
        }
        sample();
        // Closed with an error code in the middle of a frame.
        let ep = endpoint(&good);
        for i in 0..N {
            let conn = connect(&ep, quic).await.unwrap();
            let (mut send, _recv) = conn.open_bi().await.unwrap();
            send.write_all(&frame(Kind::Echo, 65_536, i as u64)[..1000])
                .await
                .unwrap();
            conn.close(42u32.into(), b"abrupt");
        }
        // Streams reset mid-frame (one connection, closed cleanly afterwards).
        let conn = connect(&ep, quic).await.unwrap();
        for i in 0..N {
            let (mut send, _recv) = conn.open_bi().await.unwrap();
            send.write_all(&frame(Kind::Echo, 65_536, i as u64)[..1000])
                .await
                .unwrap();
            // Let the bytes go out first, so the server is inside the frame.
            tokio::time::sleep(Duration::from_millis(5)).await;
            send.reset(7u32.into()).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        conn.close(0u32.into(), b"done");
        ep.wait_idle().await;
        sample();
    });

    // Clients that vanish without a close: their runtime (and so their endpoint driver) is
    // dropped with connections open and a frame half sent. They negotiated a 2 s idle
    // timeout, so the server notices after about that long.
    {
        let vanish_rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let cfg = client_config(&cert, ALPN, Duration::from_secs(2));
        let held = vanish_rt.block_on(async {
            let ep = endpoint(&cfg);
            let mut held = Vec::new();
            for i in 0..N {
                let conn = connect(&ep, quic).await.unwrap();
                let (mut send, recv) = conn.open_bi().await.unwrap();
                send.write_all(&frame(Kind::Echo, 65_536, i as u64)[..1000])
                    .await
                    .unwrap();
                held.push((conn, send, recv));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            (ep, held)
        });
        // Dropping the runtime first: nothing is left to send a close for these handles.
        drop(vanish_rt);
        drop(held);
    }

    // Abandoned handshakes: Initials captured from real clients (each its own endpoint and
    // connection ID) by a socket that never answers, each replayed once to the server from a
    // fresh socket that then closes.
    let abandoned = 200;
    let initials = rt.block_on(async {
        let trap = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let trap_addr = trap.local_addr().unwrap();
        let mut initials = Vec::new();
        let mut buf = [0u8; 2048];
        for _ in 0..abandoned {
            let ep = endpoint(&good);
            let port = ep.local_addr().unwrap().port();
            let connecting = ep.connect(trap_addr, "localhost").unwrap();
            // The first datagram from this endpoint (earlier ones' closes are skipped).
            let first = loop {
                let got = tokio::time::timeout(Duration::from_secs(5), trap.recv_from(&mut buf));
                let (n, from) = got.await.expect("an Initial in time").unwrap();
                if from.port() == port {
                    break buf[..n].to_vec();
                }
            };
            initials.push(first);
            drop(connecting);
            ep.close(0u32.into(), b"");
        }
        initials
    });
    for (i, p) in initials.iter().enumerate() {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        u.send_to(p, quic).unwrap();
        if i % 10 == 9 {
            sample();
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    let want: [(&str, &str, u64); 5] = [
        ("quic conns refused:", "failed-handshake", 2 * N as u64),
        ("quic conns refused:", "handshake-timeout", abandoned as u64),
        ("quic conns refused:", "aborted", N as u64),
        ("quic conns refused:", "lost", N as u64),
        ("quic streams refused:", "reset", N as u64),
    ];
    let all = until(Duration::from_secs(20), || {
        sample();
        let e = s.stderr();
        want.iter().all(|(sec, k, n)| logged(&e, sec, k) >= *n)
    });
    // A last good echo after everything.
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let (ok, sent) = prober.join().unwrap();
    let e = s.stderr();
    let last = e.lines().last().unwrap_or("").to_string();
    let fds_end = open_fds(s.pid());
    eprintln!(
        "good quic client answered {ok}/{sent}; fds {fds0} -> peak {max_fds} -> {fds_end}; rss {rss0} -> peak {max_rss} KiB\n{last}"
    );
    assert!(all.is_some(), "missing counts: {last}");
    for (sec, k, n) in want {
        assert_eq!(logged(&e, sec, k), n, "{sec} {k}: {last}");
    }
    assert!(
        sent > 20 && f64::from(ok) >= 0.95 * f64::from(sent),
        "{ok}/{sent}"
    );
    // One UDP socket serves every QUIC connection: no descriptor per peer.
    assert!(max_fds <= fds0 + 4, "fds {fds0} -> {max_fds}");
    assert!(max_rss < 128 * 1024, "rss bounded: {max_rss} KiB");
}
