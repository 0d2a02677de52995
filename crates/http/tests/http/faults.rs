//! Servers that misbehave: one that stalls for 1 s every 3 s (the coordinated-omission
//! test: the corrected p99 shows the stall, the uncorrected one hides it), and ones that reset,
//! close, hang, answer garbage or refuse — over HTTP/1.1 and h2 — classified errors, the run
//! ends on time, the report is written. Nothing here depends on the machine's speed beyond
//! generous margins.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation)]

use crate::common;

use npt_result::workload::Stop;
use std::convert::Infallible;
use std::io::Read as _;
use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::*;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper::Response;
use hyper_util::rt::TokioIo;

/// HTTP/1.1 server that holds every request arriving in [1 s, 2 s) of each 3 s period until 2 s.
fn stalling_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let t0 = tokio::time::Instant::now();
            loop {
                let Ok((s, _)) = listener.accept().await else {
                    continue;
                };
                let svc = service_fn(move |_req| async move {
                    let phase = t0.elapsed().as_nanos() % 3_000_000_000;
                    if (1_000_000_000..2_000_000_000).contains(&phase) {
                        let left = 2_000_000_000 - phase;
                        tokio::time::sleep(Duration::from_nanos(left as u64)).await;
                    }
                    Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
                });
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(s), svc)
                        .await;
                });
            }
        });
    });
    addr
}

#[test]
fn stall_shows_in_corrected_p99_only() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let addr = stalling_server();
    let mut c = config(&format!("http://{addr}/"));
    c.rate = Some(400.0);
    c.connections = 4;
    c.duration = Duration::from_secs(6);
    let v = document(run(&c));
    assert_valid(&v);
    let s = &v["summary"];
    assert_eq!(s["errors"], 0);
    let corrected = s["latency_ms"]["p99"].as_f64().unwrap();
    let uncorrected = s["latency_uncorrected_ms"]["p99"].as_f64().unwrap();
    eprintln!("p99 corrected {corrected} ms, uncorrected {uncorrected} ms");
    // Two stalls of 1 s in 6 s: a third of the schedule is due while the server is stuck, so
    // the corrected p99 is most of a second; only the ~4 requests in flight when a stall
    // begins wait that long from their actual send, far fewer than 1 % of ~2400.
    assert!(
        corrected >= 500.0,
        "corrected p99 {corrected} ms shows the stall"
    );
    assert!(
        uncorrected < corrected / 2.0,
        "uncorrected p99 {uncorrected} ms hides it (corrected {corrected} ms)"
    );
    assert!(s["latency_uncorrected_ms"]["max"].as_f64().unwrap() >= 500.0);
    assert!(v["health"]["sends_behind_schedule"].as_u64().unwrap() > 100);
}

#[derive(Clone, Copy)]
enum Fault {
    Reset,
    Close,
    Hang,
    Garbage,
}

/// A raw TCP server that reads a request and then misbehaves.
fn faulty_server(fault: Fault) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            match fault {
                Fault::Reset => reset(&s),
                Fault::Close => drop(s),
                Fault::Hang => held.push(s),
                Fault::Garbage => {
                    let _ = s.write_all(b"NOT HTTP AT ALL\r\n\r\n");
                }
            }
        }
    });
    addr
}

/// Closes with RST instead of FIN (SO_LINGER with a zero timeout).
fn reset(s: &TcpStream) {
    let l = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: setsockopt reads `l` for its size; the fd is open for the duration of the call.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&l as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

fn run_against(addr: SocketAddr, timeout: Duration) -> serde_json::Value {
    let mut c = config(&format!("http://{addr}/"));
    c.connections = 2;
    c.timeout = timeout;
    let t = Instant::now();
    let r = run(&c);
    let took = t.elapsed();
    assert!(
        took < c.duration + Duration::from_secs(2),
        "run took {took:?}"
    );
    assert_eq!(r.stopped_by.name(), "duration");
    // The report is written like the CLI writes it, and reads back valid.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let doc = npt_result::Document::new(
        "http",
        r.started,
        r.ended,
        r.stopped_by,
        serde_json::json!({}),
        r.body,
    );
    npt_result::write_atomic(&path, &doc.to_json_pretty()).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_valid(&v);
    v
}

fn kind_count(v: &serde_json::Value, kind: &str) -> u64 {
    v["errors"]["by_kind"][kind]["count"].as_u64().unwrap_or(0)
}

#[test]
fn reset_is_classified() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let v = run_against(faulty_server(Fault::Reset), Duration::from_secs(5));
    assert_eq!(v["summary"]["requests"], 0);
    assert!(kind_count(&v, "reset") > 0, "{}", v["errors"]);
    assert_eq!(v["summary"]["errors"], v["errors"]["total_errors"]);
    assert!(!v["errors"]["by_kind"]["reset"]["examples"][0]
        .as_str()
        .unwrap()
        .is_empty());
}

#[test]
fn close_is_classified() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let v = run_against(faulty_server(Fault::Close), Duration::from_secs(5));
    assert_eq!(v["summary"]["requests"], 0);
    assert!(kind_count(&v, "closed") > 0, "{}", v["errors"]);
}

#[test]
fn hang_times_out_and_the_run_ends_on_time() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let v = run_against(faulty_server(Fault::Hang), Duration::from_millis(300));
    assert_eq!(v["summary"]["requests"], 0);
    assert!(kind_count(&v, "timeout") > 0, "{}", v["errors"]);
}

#[test]
fn garbage_is_a_protocol_error() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let v = run_against(faulty_server(Fault::Garbage), Duration::from_secs(5));
    assert_eq!(v["summary"]["requests"], 0);
    assert!(kind_count(&v, "protocol") > 0, "{}", v["errors"]);
}

#[test]
fn refused_is_classified() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let v = run_against(
        format!("127.0.0.1:{}", free_port()).parse().unwrap(),
        Duration::from_secs(5),
    );
    assert!(kind_count(&v, "refused") > 0, "{}", v["errors"]);
}

#[test]
fn stop_flag_ends_the_run_early_with_a_result() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let addr = faulty_server(Fault::Hang);
    let mut c = config(&format!("http://{addr}/"));
    c.duration = Duration::from_secs(60);
    let stop = Arc::new(Stop::new());
    let s2 = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        s2.signal();
    });
    let t = Instant::now();
    let r = npt_http::run(&c, &stop, &mut |_| {}).unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(r.stopped_by.name(), "signal");
    assert_valid(&document(r));
}

/// An h2c server that takes every stream and then either never answers or resets it.
fn h2_server(reset: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((s, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(s).await else {
                        return;
                    };
                    let mut held = Vec::new();
                    while let Some(Ok((_req, mut respond))) = conn.accept().await {
                        if reset {
                            respond.send_reset(h2::Reason::INTERNAL_ERROR);
                        } else {
                            held.push(respond);
                        }
                    }
                });
            }
        });
    });
    addr
}

fn run_h2_against(addr: SocketAddr, timeout: Duration) -> serde_json::Value {
    let mut c = config(&format!("http://{addr}/"));
    c.http2 = true;
    c.connections = 1;
    c.streams = 4;
    c.timeout = timeout;
    let t = Instant::now();
    let r = run(&c);
    assert!(
        t.elapsed() < c.duration + Duration::from_secs(2),
        "took {:?}",
        t.elapsed()
    );
    let v = document(r);
    assert_valid(&v);
    v
}

#[test]
fn h2_streams_that_hang_time_out() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let v = run_h2_against(h2_server(false), Duration::from_millis(300));
    assert_eq!(v["summary"]["requests"], 0);
    assert!(kind_count(&v, "timeout") > 0, "{}", v["errors"]);
}

#[test]
fn h2_stream_resets_are_protocol_errors() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let v = run_h2_against(h2_server(true), Duration::from_secs(5));
    assert_eq!(v["summary"]["requests"], 0);
    assert!(kind_count(&v, "protocol") > 0, "{}", v["errors"]);
    assert_eq!(
        v["summary"]["connections_opened"], 1,
        "a stream reset does not cost the connection"
    );
}

/// An h2c server that answers `200 ok` to the first `per_conn` requests of a connection, then
/// closes it gracefully (GOAWAY) and refuses every later stream (`REFUSED_STREAM`) — as a
/// server that caps its requests per connection does (nginx: `keepalive_requests` 1000, its
/// GOAWAY's last stream leaving the streams above it unprocessed).
fn h2_closing_server(per_conn: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((s, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(s).await else {
                        return;
                    };
                    let mut served = 0;
                    while let Some(Ok((_req, mut respond))) = conn.accept().await {
                        if served >= per_conn {
                            respond.send_reset(h2::Reason::REFUSED_STREAM);
                            continue;
                        }
                        let resp = http::Response::new(());
                        if let Ok(mut body) = respond.send_response(resp, false) {
                            let _ = body.send_data(Bytes::from_static(b"ok\n"), true);
                        }
                        served += 1;
                        if served == per_conn {
                            conn.graceful_shutdown();
                        }
                    }
                });
            }
        });
    });
    addr
}

/// A request the server refused unprocessed (`REFUSED_STREAM`, or above a GOAWAY's last
/// stream) may be sent again (RFC 9113 §8.7): it goes again on a new connection, its latency
/// counted from its first send, and is not an error — against nginx's GOAWAY after 1000
/// requests each such request was a `protocol` error ("not a result of an error").
#[test]
fn h2_requests_the_server_refused_unprocessed_are_sent_again() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let mut c = config(&format!("http://{}/", h2_closing_server(20)));
    c.http2 = true;
    c.connections = 2;
    c.streams = 8;
    let v = document(run(&c));
    assert_valid(&v);
    let s = &v["summary"];
    assert!(s["requests"].as_u64().unwrap() > 200, "{s}");
    assert!(s["connections_opened"].as_u64().unwrap() > 10, "{s}");
    assert_eq!(s["errors"], 0, "{}", v["errors"]);
}
