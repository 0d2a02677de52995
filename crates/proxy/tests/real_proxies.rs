//! Why this exists: the handshakes are only right if real proxies accept them. These tests
//! start Debian's `danted` (SOCKS5 CONNECT and UDP ASSOCIATE), `microsocks` (SOCKS5 with and
//! without a password) and `tinyproxy` (HTTP CONNECT) on loopback, send echoes through them,
//! and check refusals are classified. `.ci/run` installs the three packages; without them the
//! tests fail with a message saying which is missing (unless NPT_SKIP_PROXIES=1).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use npt_proxy::{socks5, tcp_connect, udp_associate, Via};

const T: Duration = Duration::from_secs(5);

/// A proxy process killed when dropped.
/// The temporary directory (config, pid file) lives as long as the process.
struct Proc(Child, #[allow(dead_code)] Option<tempfile::TempDir>);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn have(bin: &str) -> bool {
    if Path::new(bin).exists() {
        return true;
    }
    if std::env::var_os("NPT_SKIP_PROXIES").is_some() {
        eprintln!("SKIPPED: {bin} not installed and NPT_SKIP_PROXIES is set");
        return false;
    }
    panic!(
        "{bin} is not installed (apt-get install dante-server microsocks tinyproxy; .ci/run does)"
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts on `port` (bounded), or the process died.
fn wait_listening(p: &mut Proc, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        if let Ok(Some(st)) = p.0.try_wait() {
            panic!("proxy exited early: {st}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("proxy never listened on {port}");
}

fn spawn(cmd: &mut Command, dir: Option<tempfile::TempDir>, port: u16) -> Proc {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("proxy starts");
    let mut p = Proc(child, dir);
    wait_listening(&mut p, port);
    p
}

fn danted(port: u16) -> Proc {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("danted.conf");
    std::fs::write(
        &conf,
        format!(
            "logoutput: stderr\ninternal: 127.0.0.1 port = {port}\nexternal: 127.0.0.1\n\
             clientmethod: none\nsocksmethod: none\nuser.privileged: root\n\
             user.unprivileged: nobody\n\
             client pass {{ from: 127.0.0.0/8 to: 0.0.0.0/0 }}\n\
             socks block {{ from: 0.0.0.0/0 to: 127.0.0.99/32 }}\n\
             socks pass {{ from: 127.0.0.0/8 to: 0.0.0.0/0 command: connect udpassociate udpreply }}\n"
        ),
    )
    .unwrap();
    let pid = dir.path().join("danted.pid");
    spawn(
        Command::new("/usr/sbin/danted")
            .arg("-f")
            .arg(&conf)
            .arg("-p")
            .arg(&pid),
        Some(dir),
        port,
    )
}

fn tinyproxy(port: u16) -> Proc {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("tinyproxy.conf");
    std::fs::write(
        &conf,
        format!(
            "User nobody\nGroup nogroup\nPort {port}\nListen 127.0.0.1\nTimeout 30\n\
             Allow 127.0.0.1\nMaxClients 50\n"
        ),
    )
    .unwrap();
    spawn(
        Command::new("/usr/bin/tinyproxy")
            .arg("-d")
            .arg("-c")
            .arg(&conf),
        Some(dir),
        port,
    )
}

fn microsocks(port: u16, auth: Option<(&str, &str)>) -> Proc {
    let mut c = Command::new("/usr/bin/microsocks");
    c.args(["-i", "127.0.0.1", "-p", &port.to_string()]);
    if let Some((u, p)) = auth {
        c.args(["-u", u, "-P", p]);
    }
    spawn(&mut c, None, port)
}

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
    let conf = d.1.as_ref().map(|t| t.path().join("danted.conf")).unwrap();
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
    assert_eq!(e.kind(), "proxy_denied", "{e}");
    assert!(e.to_string().contains("not allowed by ruleset"), "{e}");

    // danted forks helpers: none may outlive the test's proxy.
    drop(d);
    let deadline = Instant::now() + Duration::from_secs(5);
    while running_with_arg(&conf) {
        assert!(Instant::now() < deadline, "danted processes left behind");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether any process has `arg` on its command line.
fn running_with_arg(arg: &Path) -> bool {
    let want = arg.to_string_lossy().into_owned();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| String::from_utf8_lossy(&c).contains(&want))
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
    assert_eq!(e.kind(), "proxy_auth_failed", "{e}");
    let none = Via::parse(&format!("socks5://127.0.0.1:{locked}")).unwrap();
    let e = tcp_connect(&none, "127.0.0.1", echo.port(), T).unwrap_err();
    assert_eq!(e.kind(), "proxy_auth_failed", "{e}");
    // The target refuses: microsocks says so in its reply code.
    let dead = free_port();
    let via = Via::parse(&format!("socks5://127.0.0.1:{open}")).unwrap();
    let e = tcp_connect(&via, "127.0.0.1", dead, T).unwrap_err();
    assert!(e.kind().starts_with("proxy_"), "{e}");
    // UDP ASSOCIATE unsupported by microsocks: a classified error, not a hang.
    let e = udp_associate(&via, T).unwrap_err();
    assert!(e.kind().starts_with("proxy_"), "{}: {e}", e.kind());
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
    assert_eq!(e.kind(), "proxy_target_unreachable", "{e}");
}

#[test]
fn a_dead_proxy_is_a_classified_error() {
    let via = Via::parse(&format!("socks5://127.0.0.1:{}", free_port())).unwrap();
    let e = tcp_connect(&via, "127.0.0.1", 7, T).unwrap_err();
    assert_eq!(e.kind(), "proxy_refused", "{e}");
    // Something that accepts and never answers: a timeout, within the bound.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let via = Via::parse(&format!("socks5://{}", l.local_addr().unwrap())).unwrap();
    let t = Instant::now();
    let e = tcp_connect(&via, "127.0.0.1", 7, Duration::from_millis(300)).unwrap_err();
    assert_eq!(e.kind(), "proxy_timeout", "{e}");
    assert!(t.elapsed() < Duration::from_secs(3));
}
