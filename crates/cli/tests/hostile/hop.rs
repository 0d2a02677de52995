//! Why this exists: a hop agent sends traffic on request, so it is what an attacker would aim
//! at to reflect or amplify traffic or to reach addresses it should not. `npt serve --token S
//! --hop-agent` is attacked here on loopback with hop requests that are unauthenticated,
//! replayed (in the same session and on other connections), sealed with a wrong MAC (header
//! and body), aimed outside `--hop-allow`, and a paced flood of allowed ones from several
//! sessions. Every one must be refused or limited, and counted where the operator looks (the
//! periodic log line, the same counters as `--metrics`); every reply must be no longer than
//! its request; and a well-behaved client asking through the flood must keep getting answers.
#![cfg(test)] // clippy.toml: test helpers count as tests
#![allow(clippy::cast_possible_truncation)] // small test values

use crate::common;
use crate::serve_util;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use npt_wire::auth::SessionKey;
use npt_wire::frame::{Header, HEADER_LEN};
use npt_wire::hop::{self, status, HopProto, HopRequest};
use serve_util::{logged, serve, until, Served};

const SECRET: &str = "hop-secret";

fn req(target: SocketAddr) -> HopRequest {
    HopRequest {
        proto: HopProto::Tcp,
        host: target.ip().to_string(),
        port: target.port(),
        attempts: 1,
        interval_us: 10_000,
        timeout_us: 500_000,
        size: 0,
        tos: 0,
    }
}

/// A connection to the agent, after the handshake when `secret` is given.
struct Client {
    sock: TcpStream,
    key: Option<SessionKey>,
    seq: u64,
}

impl Client {
    fn connect(agent: SocketAddr, secret: Option<&str>) -> Client {
        let mut sock = TcpStream::connect_timeout(&agent, Duration::from_secs(2)).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        sock.set_write_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let key = secret.map(|s| npt_client::auth::stream(&mut sock, s).unwrap());
        Client { sock, key, seq: 0 }
    }

    /// A request frame sealed with this session's key (or `key`), next sequence number.
    fn frame(&mut self, r: &HopRequest, key: Option<&SessionKey>) -> Vec<u8> {
        self.seq += 1;
        hop::request_frame(r, 1, self.seq, 0, key.or(self.key.as_ref())).unwrap()
    }

    fn send(&mut self, f: &[u8]) {
        let _ = self.sock.write_all(f);
    }

    /// The next reply: `Some(status)` (0 = measured), `None` when the agent closed instead.
    /// Checks that it is no longer than `request_len` and that it opens under the key.
    fn reply(&mut self, seq: u64, request_len: usize) -> Option<u32> {
        let mut hdr = [0u8; HEADER_LEN];
        if self.sock.read_exact(&mut hdr).is_err() {
            return None;
        }
        let h = Header::decode(&hdr).expect("a frame");
        let len = h.frame_len as usize;
        assert!(len <= request_len, "reply {len} > request {request_len}");
        let mut f = hdr.to_vec();
        f.resize(len, 0);
        self.sock
            .read_exact(&mut f[HEADER_LEN..])
            .expect("whole reply");
        let (_, r) = hop::open_reply(&f, seq, self.key.as_ref()).expect("a genuine reply");
        Some(r.err().unwrap_or(status::OK))
    }

    fn ask(&mut self, r: &HopRequest) -> Option<u32> {
        let f = self.frame(r, None);
        self.send(&f);
        self.reply(self.seq, f.len())
    }

    /// True once the agent closed the connection (EOF or reset, within 5 s).
    fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.sock.read(&mut b), Ok(0) | Err(_))
    }
}

fn counted(agent: &Served, section: &str, name: &str, want: u64) -> u64 {
    let ok = until(Duration::from_secs(10), || {
        logged(&agent.stderr(), section, name) >= want
    });
    let got = logged(&agent.stderr(), section, name);
    assert!(
        ok.is_some(),
        "{section} {name}: {got} < {want}\n{}",
        agent.stderr()
    );
    got
}

#[test]
fn forged_replayed_disallowed_and_flooding_requests_are_refused_and_counted() {
    let _turn = common::turn(module_path!());
    let target = serve(4096, &[]);
    let allow = target.tcp.to_string();
    let agent = serve(
        4096,
        &[
            "--token",
            SECRET,
            "--hop-agent",
            "--hop-allow",
            allow.as_str(),
        ],
    );
    let a = agent.tcp;
    let ok = req(target.tcp);

    // A well-behaved session first: measured.
    let mut good = Client::connect(a, Some(SECRET));
    assert_eq!(good.ask(&ok), Some(status::OK));

    // 1. Unauthenticated: a hop request with no handshake is refused before it is read.
    let mut c = Client::connect(a, None);
    let f = c.frame(&ok, None);
    c.send(&f);
    assert!(c.closed(), "unauthenticated request answered");
    counted(&agent, "tcp refused:", "token", 1);

    // 2. Replays of a genuine frame.
    let mut s = Client::connect(a, Some(SECRET));
    let captured = s.frame(&ok, None);
    s.send(&captured);
    assert_eq!(s.reply(s.seq, captured.len()), Some(status::OK));
    //   in the same session: the sequence number was seen, the session is closed;
    s.send(&captured);
    assert!(s.closed(), "replay answered");
    counted(&agent, "hop agent:", "replay", 1);
    //   on a new connection without the handshake: no session;
    let mut c = Client::connect(a, None);
    c.send(&captured);
    assert!(c.closed());
    counted(&agent, "tcp refused:", "token", 2);
    //   in another session: the key is that session's, so the tag fails.
    let mut c = Client::connect(a, Some(SECRET));
    c.send(&captured);
    assert!(c.closed());
    counted(&agent, "tcp refused:", "bad-mac", 1);

    // 3. Wrong MACs: a header sealed under a guessed key; a genuine header on a changed body
    //    (the target swapped for one outside the list).
    let mut c = Client::connect(a, Some(SECRET));
    let wrong = SessionKey::from_bytes(&[0x42; 32]);
    let f = c.frame(&ok, Some(&wrong));
    c.send(&f);
    assert!(c.closed());
    counted(&agent, "tcp refused:", "bad-mac", 2);
    let mut c = Client::connect(a, Some(SECRET));
    let mut f = c.frame(&ok, None);
    let host_at = HEADER_LEN + hop::REQUEST_FIXED + ok.host.len() - 1;
    f[host_at] = b'9'; // 127.0.0.1 -> 127.0.0.9
    c.send(&f);
    assert!(c.closed());
    counted(&agent, "hop agent:", "bad-mac", 1);

    // 4. Outside --hop-allow: another port of the same host, and the cloud metadata address.
    let mut c = Client::connect(a, Some(SECRET));
    let mut other = ok.clone();
    other.port = target.tcp.port() ^ 1;
    assert_eq!(c.ask(&other), Some(status::NOT_ALLOWED));
    let meta = HopRequest {
        host: "169.254.169.254".into(),
        port: 80,
        ..ok.clone()
    };
    assert_eq!(c.ask(&meta), Some(status::NOT_ALLOWED));
    counted(&agent, "hop agent:", "target", 2);
    // Out of bounds (1,000 attempts every microsecond) is not even decoded into a measurement.
    let mut f = c.frame(&ok, None);
    f[HEADER_LEN + 2..HEADER_LEN + 4].copy_from_slice(&1000u16.to_be_bytes());
    let (h, b) = f.split_at_mut(HEADER_LEN);
    let k = c.key.clone().unwrap();
    k.seal(npt_wire::auth::Dir::ToServer, h).unwrap();
    k.seal_body(npt_wire::auth::Dir::ToServer, h, b).unwrap();
    c.send(&f);
    assert_eq!(c.reply(c.seq, f.len()), Some(status::BAD_REQUEST));
    counted(&agent, "hop agent:", "bad-request", 1);
    assert_eq!(c.ask(&ok), Some(status::OK), "the session still works");

    // 5. A flood of allowed requests from six sessions, each 100 a second (50 times the
    //    session rate), while a well-behaved client asks every 300 ms on its own session.
    let stop = Arc::new(AtomicBool::new(false));
    let busy_seen = Arc::new(AtomicUsize::new(0));
    let floods: Vec<_> = (0..6)
        .map(|_| {
            let (stop, busy_seen, ok) = (stop.clone(), busy_seen.clone(), ok.clone());
            std::thread::spawn(move || {
                let mut c = Client::connect(a, Some(SECRET));
                let (mut sent, mut measured, mut limited) = (0u64, 0u64, 0u64);
                let t0 = Instant::now();
                while !stop.load(Ordering::Relaxed) {
                    let due = t0 + Duration::from_millis(10) * sent as u32;
                    if let Some(w) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(w);
                    }
                    sent += 1;
                    match c.ask(&ok) {
                        Some(status::OK) => measured += 1,
                        Some(status::RATE_LIMITED) => limited += 1,
                        Some(status::BUSY) => {
                            limited += 1;
                            busy_seen.fetch_add(1, Ordering::Relaxed);
                        }
                        other => panic!("flood got {other:?}"),
                    }
                }
                (sent, measured, limited, t0.elapsed())
            })
        })
        .collect();
    // The floods' bursts together are more than the agent's: it says busy before the
    // well-behaved client starts (then its rate is more than the six sessions' together).
    let burst_over = until(Duration::from_secs(10), || {
        busy_seen.load(Ordering::Relaxed) > 0
    });
    assert!(burst_over.is_some(), "the agent's own rate never bit");
    let mut answered = 0;
    for _ in 0..10 {
        if good.ask(&ok) == Some(status::OK) {
            answered += 1;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    stop.store(true, Ordering::Relaxed);
    let mut total = (0, 0, 0);
    for f in floods {
        let (sent, measured, limited, took) = f.join().unwrap();
        // Each session: its burst of 10 and 2 a second, no more.
        let most = 10.0 + 2.0 * took.as_secs_f64() + 1.0;
        assert!(measured as f64 <= most, "{measured} measured in {took:?}");
        assert_eq!(sent, measured + limited);
        total = (total.0 + sent, total.1 + measured, total.2 + limited);
    }
    assert_eq!(
        answered, 10,
        "the well-behaved client was not answered through the flood"
    );
    assert!(total.2 > total.1, "flood {total:?}: most must be refused");
    // And the agent is still there for a newcomer.
    let mut late = Client::connect(a, Some(SECRET));
    assert_eq!(late.ask(&ok), Some(status::OK));

    // The exit summary has the final counts: every refusal above, each limited flood request,
    // and exactly the measurements that were answered.
    // SAFETY: signalling our own child.
    unsafe { libc::kill(agent.pid(), libc::SIGINT) };
    let said = until(Duration::from_secs(10), || {
        agent.stderr().contains("stopping; hop agent:")
    });
    assert!(said.is_some(), "no exit summary: {}", agent.stderr());
    let err = agent.stderr();
    let hop = |name| logged(&err, "stopping; hop agent:", name);
    assert_eq!(
        hop("rate") + hop("busy"),
        total.2,
        "every limited request counted"
    );
    assert!(hop("busy") > 0 && hop("rate") > 0, "{err}");
    // good: 1 + 10; s: 1; c (section 4): 1; late: 1; the floods' measured ones.
    assert_eq!(hop("answered"), total.1 + 14, "{err}");
    assert_eq!(hop("attempts"), hop("answered"), "one attempt each");
    assert_eq!(
        (
            hop("replay"),
            hop("bad-mac"),
            hop("target"),
            hop("bad-request")
        ),
        (1, 1, 2, 1)
    );
    assert_eq!(hop("disabled") + hop("unresolved"), 0);
    assert_eq!(logged(&err, "tcp refused:", "token"), 2);
    assert_eq!(logged(&err, "tcp refused:", "bad-mac"), 2);
}
