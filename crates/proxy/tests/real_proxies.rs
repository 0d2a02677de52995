//! Why this exists: the handshakes are only right if real proxies accept them. These tests
//! start Debian's `danted` (SOCKS5 CONNECT and UDP ASSOCIATE), `microsocks` (SOCKS5 with and
//! without a password) and `tinyproxy` (HTTP CONNECT) on loopback, send echoes through them,
//! and check refusals are classified. `./test.sh` installs the three packages; without them the
//! tests fail with a message saying which is missing (unless NPT_SKIP_PROXIES=1).

#![cfg(test)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::time::{Duration, Instant};

use npt_proxy::{socks5, tcp_connect, udp_associate, Via};
use npt_testkit::process::free_port;
use npt_testkit::proxies::{
    danted, danted_with, have, microsocks, running_with_arg, tinyproxy, SystemUser,
};

const T: Duration = Duration::from_secs(5);

/// A TCP echo server on loopback for a bounded number of connections.
fn tcp_echo() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming().take(16) {
            let Ok(mut c) = c else { return };
            std::thread::spawn(move || {
                let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
                let mut b = [0u8; 4096];
                while let Ok(n) = c.read(&mut b) {
                    if n == 0 || c.write_all(&b[..n]).is_err() {
                        break;
                    }
                }
            });
        }
    });
    a
}

fn udp_echo() -> SocketAddr {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let a = s.local_addr().unwrap();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(30);
        let mut b = [0u8; 2048];
        while Instant::now() < end {
            if let Ok((n, from)) = s.recv_from(&mut b) {
                let _ = s.send_to(&b[..n], from);
            }
        }
    });
    a
}

fn echo_through(via: &Via, target: SocketAddr) {
    let (mut s, phases) =
        tcp_connect(via, &target.ip().to_string(), target.port(), T).expect("tunnel");
    assert!(
        phases.proxy_connect_ns > 0 && phases.reply_ns > 0,
        "{phases:?}"
    );
    s.set_read_timeout(Some(T)).unwrap();
    for i in 0..20u8 {
        let msg = [i; 100];
        s.write_all(&msg).unwrap();
        let mut back = [0u8; 100];
        s.read_exact(&mut back).unwrap();
        assert_eq!(back, msg);
    }
}

#[test]
fn dante_connect_and_udp_associate() {
    if !have("/usr/sbin/danted") {
        return;
    }
    let port = free_port();
    let d = danted(port);
    let conf = d.config("danted.conf").unwrap();
    let via = Via::parse(&format!("socks5://127.0.0.1:{port}")).unwrap();
    echo_through(&via, tcp_echo());

    // UDP ASSOCIATE: datagrams with the SOCKS header go to the relay and come back wrapped.
    let target = udp_echo();
    let assoc = udp_associate(&via, T).expect("udp associate");
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(assoc.relay).unwrap();
    sock.set_read_timeout(Some(T)).unwrap();
    let t = socks5::Target::Addr(target);
    let mut buf = [0u8; 256];
    let mut back = [0u8; 256];
    for i in 0..10u8 {
        let h = socks5::udp_header(&t, &mut buf).unwrap();
        buf[h..h + 32].fill(i);
        sock.send(&buf[..h + 32]).unwrap();
        let n = sock.recv(&mut back).expect("relayed reply");
        let off = socks5::udp_payload_offset(&back[..n]).unwrap();
        assert_eq!(&back[off..n], &[i; 32]);
    }
    drop(assoc);

    // A target the ruleset blocks: classified, with the reply code in words.
    let e = tcp_connect(&via, "127.0.0.99", 7, T).unwrap_err();
    assert_eq!(e.kind().name(), "proxy_denied", "{e}");
    assert!(e.to_string().contains("not allowed by ruleset"), "{e}");

    // danted forks helpers: none may outlive the test's proxy.
    drop(d);
    let deadline = Instant::now() + Duration::from_secs(5);
    while running_with_arg(&conf) {
        assert!(Instant::now() < deadline, "danted processes left behind");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn microsocks_with_and_without_a_password() {
    if !have("/usr/bin/microsocks") {
        return;
    }
    let echo = tcp_echo();
    let open = free_port();
    let _m = microsocks(open, None);
    echo_through(
        &Via::parse(&format!("socks5h://127.0.0.1:{open}")).unwrap(),
        echo,
    );

    let locked = free_port();
    let _m2 = microsocks(locked, Some(("npt", "s3cret")));
    echo_through(
        &Via::parse(&format!("socks5://npt:s3cret@127.0.0.1:{locked}")).unwrap(),
        echo,
    );
    let wrong = Via::parse(&format!("socks5://npt:nope@127.0.0.1:{locked}")).unwrap();
    let e = tcp_connect(&wrong, "127.0.0.1", echo.port(), T).unwrap_err();
    assert_eq!(e.kind().name(), "proxy_auth_failed", "{e}");
    let none = Via::parse(&format!("socks5://127.0.0.1:{locked}")).unwrap();
    let e = tcp_connect(&none, "127.0.0.1", echo.port(), T).unwrap_err();
    assert_eq!(e.kind().name(), "proxy_auth_failed", "{e}");
    // The target refuses: microsocks says so in its reply code.
    let dead = free_port();
    let via = Via::parse(&format!("socks5://127.0.0.1:{open}")).unwrap();
    let e = tcp_connect(&via, "127.0.0.1", dead, T).unwrap_err();
    assert!(e.kind().name().starts_with("proxy_"), "{e}");
    // UDP ASSOCIATE unsupported by microsocks: a classified error, not a hang.
    let e = udp_associate(&via, T).unwrap_err();
    assert!(e.kind().name().starts_with("proxy_"), "{}: {e}", e.kind());
}

#[test]
fn tinyproxy_http_connect() {
    if !have("/usr/bin/tinyproxy") {
        return;
    }
    let port = free_port();
    let _t = tinyproxy(port);
    let via = Via::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    echo_through(&via, tcp_echo());
    let dead = free_port();
    let e = tcp_connect(&via, "127.0.0.1", dead, T).unwrap_err();
    assert_eq!(e.kind().name(), "proxy_target_unreachable", "{e}");
}

#[test]
fn a_dead_proxy_is_a_classified_error() {
    let via = Via::parse(&format!("socks5://127.0.0.1:{}", free_port())).unwrap();
    let e = tcp_connect(&via, "127.0.0.1", 7, T).unwrap_err();
    assert_eq!(e.kind().name(), "proxy_refused", "{e}");
    // Something that accepts and never answers: a timeout, within the bound.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let via = Via::parse(&format!("socks5://{}", l.local_addr().unwrap())).unwrap();
    let t = Instant::now();
    let e = tcp_connect(&via, "127.0.0.1", 7, Duration::from_millis(300)).unwrap_err();
    assert_eq!(e.kind().name(), "proxy_timeout", "{e}");
    assert!(t.elapsed() < Duration::from_secs(3));
}

#[test]
fn the_async_driver_goes_through_the_same_proxies() {
    if !have("/usr/bin/microsocks") || !have("/usr/bin/tinyproxy") {
        return;
    }
    let echo = tcp_echo();
    let m = free_port();
    let _m = microsocks(m, Some(("npt", "pw")));
    let t = free_port();
    let _t = tinyproxy(t);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        for url in [
            format!("socks5://npt:pw@127.0.0.1:{m}"),
            format!("http://127.0.0.1:{t}"),
        ] {
            let via = Via::parse(&url).unwrap();
            let connect = npt_proxy::connect_async::tcp_connect(&via, "127.0.0.1", echo.port());
            let (mut s, phases) = tokio::time::timeout(T, connect).await.unwrap().unwrap();
            assert!(phases.reply_ns > 0, "{url}: {phases:?}");
            s.write_all(b"through").await.unwrap();
            let mut back = [0u8; 7];
            s.read_exact(&mut back).await.unwrap();
            assert_eq!(&back, b"through", "{url}");
        }
        let wrong = Via::parse(&format!("socks5://npt:no@127.0.0.1:{m}")).unwrap();
        let e = npt_proxy::connect_async::tcp_connect(&wrong, "127.0.0.1", echo.port())
            .await
            .unwrap_err();
        assert_eq!(e.kind().name(), "proxy_auth_failed");
    });
}

#[test]
fn dante_with_a_username_and_password() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED dante_with_a_username_and_password: needs root to create an account");
        return;
    }
    if !have("/usr/sbin/danted") {
        return;
    }
    let user = SystemUser::create().expect("a throwaway account");
    let port = free_port();
    let _d = danted_with(port, "username");
    let good = Via::parse(&format!(
        "socks5://{}:{}@127.0.0.1:{port}",
        user.name, user.password
    ))
    .unwrap();
    echo_through(&good, tcp_echo());
    let assoc = udp_associate(&good, T).expect("UDP ASSOCIATE with a password");
    assert!(assoc.phases.auth_ns > 0);
    drop(assoc);
    let bad = Via::parse(&format!("socks5://{}:wrong@127.0.0.1:{port}", user.name)).unwrap();
    let e = tcp_connect(&bad, "127.0.0.1", 7, T).unwrap_err();
    assert_eq!(e.kind().name(), "proxy_auth_failed", "{e}");
    let none = Via::parse(&format!("socks5://127.0.0.1:{port}")).unwrap();
    let e = tcp_connect(&none, "127.0.0.1", 7, T).unwrap_err();
    assert_eq!(e.kind().name(), "proxy_auth_failed", "{e}");
}
