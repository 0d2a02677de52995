//! Why this exists: QUIC connections used to be counted as "tcp conns", and a QUIC stream that
//! stopped inside a frame held its task until the connection idled out. QUIC now has its own
//! counters and each stream the stream responder's deadlines; checked here with a real quinn
//! client over loopback.

#![cfg(test)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_server::quic::{QuicTls, ALPN};
use npt_server::{Counters, ServeConfig, Server, Timeouts};
use npt_wire::frame::{Header, Kind, HEADER_LEN};

fn echo_frame(seq: u64) -> [u8; 64] {
    let mut b = [0u8; 64];
    Header {
        kind: Kind::Echo,
        flags: 0,
        frame_len: 64,
        reply_len: 0,
        flow: 1,
        status: 0,
        seq,
        send_ts: 1,
        token: 0,
    }
    .encode(&mut b)
    .unwrap();
    b
}

#[test]
fn quic_has_its_own_counters_and_stalled_streams_are_closed() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let srv = Server::start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        timeouts: Timeouts {
            idle: Duration::from_secs(5),
            io: Duration::from_millis(300),
        },
        ..ServeConfig::default()
    })
    .unwrap();
    let qs = srv
        .start_quic("127.0.0.1:0".parse().unwrap(), QuicTls::SelfSigned)
        .unwrap();
    let addr = qs.local_addr();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from(
            qs.cert_der().to_vec(),
        ))
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let c = srv.counters();
    rt.block_on(async {
        let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let conn = tokio::time::timeout(
            Duration::from_secs(5),
            ep.connect(addr, "localhost").unwrap(),
        )
        .await
        .expect("handshake in time")
        .expect("handshake");
        // A good stream: one echo.
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        send.write_all(&echo_frame(3)).await.unwrap();
        let mut back = [0u8; 64];
        tokio::time::timeout(Duration::from_secs(5), recv.read_exact(&mut back))
            .await
            .expect("echo in time")
            .unwrap();
        assert_eq!(Header::decode(&back[..HEADER_LEN]).unwrap().seq, 3);
        send.finish().unwrap();
        // A stream that stops inside its header: the server ends it after `io`.
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        send.write_all(&echo_frame(4)[..10]).await.unwrap();
        let t = Instant::now();
        let mut sink = [0u8; 64];
        let end = tokio::time::timeout(Duration::from_secs(5), recv.read(&mut sink)).await;
        assert!(end.is_ok(), "stream ended by the server");
        assert!(
            t.elapsed() >= Duration::from_millis(150),
            "{:?}",
            t.elapsed()
        );
        conn.close(0u32.into(), b"done");
        ep.wait_idle().await;
    });
    let t = Instant::now();
    while Counters::get(&c.quic.stalled_read) < 1 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(Counters::get(&c.quic.stalled_read), 1, "{}", c.line());
    assert_eq!(Counters::get(&c.quic_conns), 1);
    assert_eq!(Counters::get(&c.quic_streams), 2);
    assert_eq!(Counters::get(&c.tcp_accepted), 0, "QUIC is not TCP");
    assert!(c.line().contains("quic conns 1 streams 2"), "{}", c.line());
}
