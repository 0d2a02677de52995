//! Real short benchmarks against the in-process responder on 127.0.0.1:0 — HTTP/1.1 keep-alive,
//! several virtual hosts, a new connection per request, h2c, TLS (h2 and http/1.1), open loop,
//! POST echo and non-2xx statuses — each result document validated against the JSON Schema.

#![cfg(test)]

use crate::common;

use common::*;

#[test]
fn keep_alive_with_virtual_hosts() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, _srv) = responder(false);
    let mut c = config(&format!("http://{addr}/"));
    c.hosts = vec!["app1.test".into(), "app2.test".into(), "app3.test".into()];
    let v = document(run(&c));
    assert_valid(&v);
    let s = &v["summary"];
    let n = s["requests"].as_u64().unwrap();
    assert!(n > 0);
    assert_eq!(s["errors"], 0);
    assert_eq!(s["status"]["200"].as_u64(), Some(n));
    assert_eq!(s["protocol"], "http/1.1");
    assert_eq!(
        s["connections_opened"], 4,
        "keep-alive reuses its connections"
    );
    let per_host: Vec<u64> = ["app1.test", "app2.test", "app3.test"]
        .iter()
        .map(|h| v["hosts"][h]["requests"].as_u64().unwrap())
        .collect();
    assert_eq!(per_host.iter().sum::<u64>(), n);
    assert!(
        per_host.iter().all(|&r| r > 0),
        "round robin reaches every host: {per_host:?}"
    );
    assert!(s["rps"].as_f64().unwrap() > 0.0);
    assert!(s["latency_ms"]["p50"].as_f64().unwrap() > 0.0);
    assert!(s.get("latency_uncorrected_ms").is_none());
    assert_eq!(v["latency"]["tcp"]["p99_ms"], s["latency_ms"]["p99"]);
    let intervals = v["intervals"].as_array().unwrap();
    assert!(!intervals.is_empty());
    let in_intervals: u64 = intervals
        .iter()
        .map(|i| i["completed"].as_u64().unwrap())
        .sum();
    assert_eq!(in_intervals, n, "every request is in exactly one interval");
    let dur = s["duration_s"].as_f64().unwrap();
    assert!(intervals
        .iter()
        .all(|i| i["end_s"].as_f64().unwrap() <= dur + 1e-9));
    assert_eq!(v["stopped_by"], "duration");
}

#[test]
fn new_connection_per_request() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, _srv) = responder(false);
    let mut c = config(&format!("http://{addr}/"));
    c.new_conn = true;
    let v = document(run(&c));
    assert_valid(&v);
    let s = &v["summary"];
    let n = s["requests"].as_u64().unwrap();
    assert!(n > 0);
    assert_eq!(s["errors"], 0);
    // Every completed request opened its own connection (a few more may have been cut short).
    assert!(s["connections_opened"].as_u64().unwrap() >= n);
}

#[test]
fn h2c_multiplexed() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, _srv) = responder(false);
    let mut c = config(&format!("http://{addr}/bytes/1000"));
    c.http2 = true;
    c.connections = 2;
    c.streams = 8;
    let v = document(run(&c));
    assert_valid(&v);
    let s = &v["summary"];
    let n = s["requests"].as_u64().unwrap();
    assert!(n > 0);
    assert_eq!(s["errors"], 0);
    assert_eq!(s["protocol"], "h2");
    assert_eq!(s["connections_opened"], 2, "streams share the connections");
    assert_eq!(s["bytes"]["down"].as_f64().unwrap(), n as f64 * 1000.0);
}

#[test]
fn tls_h2_and_http1() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, _srv) = responder(true);
    for h2 in [true, false] {
        let mut c = config(&format!("https://127.0.0.1:{}/", addr.port()));
        c.insecure = true;
        c.http2 = h2;
        c.new_conn = !h2;
        c.connections = 2;
        let v = document(run(&c));
        assert_valid(&v);
        let s = &v["summary"];
        assert!(s["requests"].as_u64().unwrap() > 0, "h2={h2}: {s}");
        assert_eq!(s["errors"], 0, "h2={h2}: {}", v["errors"]);
        assert_eq!(s["tls"], true);
        assert!(s["phases_ms"]["tls"]["count"].as_u64().unwrap() > 0);
        assert!(v["histograms"]["tls"].is_object());
    }
}

#[test]
fn tls_without_insecure_rejects_self_signed() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, _srv) = responder(true);
    let mut c = config(&format!("https://127.0.0.1:{}/", addr.port()));
    c.connections = 1;
    c.duration = std::time::Duration::from_millis(300);
    let v = document(run(&c));
    assert_valid(&v);
    assert_eq!(v["summary"]["requests"], 0);
    assert!(v["errors"]["by_kind"]["tls"]["count"].as_u64().unwrap() > 0);
}

#[test]
fn open_loop_reports_both_latencies() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, _srv) = responder(false);
    let mut c = config(&format!("http://{addr}/"));
    c.rate = Some(200.0);
    let v = document(run(&c));
    assert_valid(&v);
    let s = &v["summary"];
    assert_eq!(s["mode"], "open");
    assert!(s["latency_uncorrected_ms"].is_object());
    // At most one request per scheduled tick, whatever the speed of the machine.
    let n = s["requests"].as_u64().unwrap();
    assert!(n > 0 && n <= 200, "{n}");
}

#[test]
fn post_echo_and_non_2xx_statuses() {
    let _turn = npt_testkit::turn::turn(module_path!());
    let (addr, _srv) = responder(false);
    let mut c = config(&format!("http://{addr}/anything"));
    c.method = http::Method::POST;
    c.body = bytes::Bytes::from(vec![7u8; 5000]);
    let v = document(run(&c));
    assert_valid(&v);
    let s = &v["summary"];
    assert!(s["requests"].as_u64().unwrap() > 0);
    assert_eq!(
        s["bytes"]["down"], s["bytes"]["up"],
        "the responder echoes every body"
    );

    let c = config(&format!("http://{addr}/status/503"));
    let v = document(run(&c));
    assert_valid(&v);
    let s = &v["summary"];
    let n = s["requests"].as_u64().unwrap();
    assert!(n > 0);
    assert_eq!(s["status"]["503"].as_u64(), Some(n));
    assert_eq!(s["errors"], 0, "non-2xx are counted by code, not as errors");
    assert_eq!(s["ok"], 0);
}
