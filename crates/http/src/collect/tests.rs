//! The collector's tests: made-up events in, the counts, intervals and body out.

use super::*;

const MS: u64 = 1_000_000;

fn ok(host: u16, code: u16, sent: u64, done: u64) -> Record {
    Record::Request(Event {
        host,
        outcome: Outcome::Response(code),
        intended_ns: None,
        sent_ns: sent,
        head_ns: sent + (done - sent) / 2,
        done_ns: done,
        bytes_out: 0,
        bytes_in: 10,
        reused: false,
    })
}

fn err(host: u16, kind: ErrorKind, at: u64) -> Record {
    Record::Request(Event {
        host,
        outcome: Outcome::Error(kind, "boom".into()),
        intended_ns: None,
        sent_ns: at,
        head_ns: 0,
        done_ns: at,
        bytes_out: 0,
        bytes_in: 0,
        reused: false,
    })
}

#[test]
fn counts_status_hosts_and_errors() {
    let hosts = vec!["a".to_string(), "b".to_string()];
    let mut c = Collector::new(&hosts, false, 1000 * MS);
    c.add(&ok(0, 200, 0, 2 * MS));
    c.add(&ok(1, 404, 10 * MS, 11 * MS));
    c.add(&ok(1, 200, 1100 * MS, 1101 * MS));
    c.add(&err(0, ErrorKind::Refused, 1200 * MS));
    c.add(&Record::Conn(ConnEvent {
        connect_ns: MS,
        tls_ns: None,
        proxy_ns: None,
        tls_version: None,
        first_byte_ns: None,
    }));
    let body = c.finish(HttpSummary::default(), 2000 * MS, Health::default(), None);
    let s = &body.summary;
    assert_eq!((s.requests, s.ok, s.errors), (3, 2, 1));
    assert_eq!(s.status.get("200"), Some(&2));
    assert_eq!(
        s.status.get("404"),
        Some(&1),
        "non-2xx are counted, not errors"
    );
    assert_eq!(s.rps, 1.5);
    assert_eq!(s.connections_opened, 1);
    assert!(s.phases_ms.tls.is_none());
    assert!(
        s.latency_uncorrected_ms.is_none(),
        "closed loop has one latency"
    );
    assert_eq!(body.hosts["a"].requests, 1);
    assert_eq!(body.hosts["a"].errors, 1);
    assert_eq!(body.hosts["b"].requests, 2);
    assert_eq!(body.errors.by_kind.get("refused"), 1);
    assert_eq!(body.errors.error_rate, 0.25);
    assert_eq!(body.intervals.len(), 2);
    assert_eq!(body.intervals[0].completed, 2);
    assert_eq!(body.intervals[1].completed, 1);
    assert_eq!(body.intervals[1].errors, 1);
    assert_eq!(body.latency["tcp"].max_ms, s.latency_ms.max);
}

#[test]
fn error_rate_counts_requests_still_in_flight() {
    let hosts = vec!["a".to_string()];
    let mut c = Collector::new(&hosts, false, 1000 * MS);
    c.add(&ok(0, 200, 0, 2 * MS));
    c.add(&err(0, ErrorKind::Reset, 3 * MS));
    c.add(&err(0, ErrorKind::Io, 4 * MS));
    let summary = HttpSummary {
        in_flight_at_end: 2,
        ..HttpSummary::default()
    };
    let body = c.finish(summary, 1000 * MS, Health::default(), None);
    // Started: 1 completed + 2 failed + 2 still waiting at the end.
    assert_eq!(body.errors.attempts, Some(5));
    assert_eq!(body.errors.error_rate, 0.4);
    assert_eq!(body.errors.by_kind.get("io"), 1);
}

#[test]
fn open_loop_measures_from_intended_time() {
    let mut c = Collector::new(&["h".to_string()], true, 1000 * MS);
    // Due at 0, left at 500 ms because every slot was busy, answered 1 ms later.
    c.add(&Record::Request(Event {
        host: 0,
        outcome: Outcome::Response(200),
        intended_ns: Some(0),
        sent_ns: 500 * MS,
        head_ns: 500 * MS,
        done_ns: 501 * MS,
        bytes_out: 0,
        bytes_in: 0,
        reused: false,
    }));
    let body = c.finish(HttpSummary::default(), 1000 * MS, Health::default(), None);
    let s = &body.summary;
    assert!(
        (s.latency_ms.max - 501.0).abs() < 1.0,
        "{}",
        s.latency_ms.max
    );
    let u = s.latency_uncorrected_ms.expect("open loop reports both");
    assert!((u.max - 1.0).abs() < 0.01, "{}", u.max);
    assert_eq!(body.health.sends_behind_schedule, Some(1));
    assert!(body.histograms.contains_key(hist::LATENCY_UNCORRECTED));
}

#[test]
fn open_loop_latency_always_counts_from_the_intended_time() {
    let mut c = Collector::new(&["h".to_string()], true, 1000 * MS);
    // Due at 10 ms, left 1 ms late (a busy slot or a late wake-up): charged either way.
    c.add(&Record::Request(Event {
        host: 0,
        outcome: Outcome::Response(200),
        intended_ns: Some(10 * MS),
        sent_ns: 11 * MS,
        head_ns: 11 * MS,
        done_ns: 11 * MS + 100_000,
        bytes_out: 0,
        bytes_in: 0,
        reused: false,
    }));
    let body = c.finish(HttpSummary::default(), 1000 * MS, Health::default(), None);
    assert!((body.summary.latency_ms.max - 1.1).abs() < 0.01);
    let uncorrected = body.summary.latency_uncorrected_ms.unwrap();
    assert!((uncorrected.max - 0.1).abs() < 0.01);
    assert!((body.health.send_lateness_ms.unwrap().max - 1.0).abs() < 0.01);
    assert_eq!(body.health.sends_behind_schedule, Some(0));
}

#[test]
fn intervals_close_in_order_and_fill_gaps() {
    let mut c = Collector::new(&["h".to_string()], false, 1000 * MS);
    c.add(&ok(0, 200, 0, MS));
    c.add(&ok(0, 200, 2500 * MS, 2501 * MS));
    let closed = c.close_until(1500 * MS);
    assert_eq!(closed.last().map(|r| r.rate_per_s), Some(1.0));
    let closed = c.close_until(3000 * MS);
    assert_eq!(closed.iter().map(|r| r.index).collect::<Vec<_>>(), [1, 2]);
    let body = c.finish(HttpSummary::default(), 3200 * MS, Health::default(), None);
    let idx: Vec<u32> = body.intervals.iter().map(|r| r.index).collect();
    assert_eq!(idx, vec![0, 1, 2]);
    assert_eq!(body.intervals[1].completed, 0);
}

#[test]
fn last_partial_interval_ends_with_the_run() {
    let mut c = Collector::new(&["h".to_string()], false, 1000 * MS);
    c.add(&ok(0, 200, 1200 * MS, 1201 * MS));
    let body = c.finish(HttpSummary::default(), 1500 * MS, Health::default(), None);
    let last = body.intervals.last().unwrap();
    assert_eq!(last.end_s, 1.5);
    assert_eq!(last.rate_per_s, 2.0);
}

#[test]
fn shard_drains_everything() {
    let s = Shard::default();
    s.push(ok(0, 200, 0, 1));
    s.push(ok(0, 200, 0, 1));
    let mut v = Vec::new();
    s.drain_into(&mut v);
    assert_eq!(v.len(), 2);
    s.drain_into(&mut v);
    assert!(v.is_empty());
}
