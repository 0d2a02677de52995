//! `npt http --metrics`: what the collector has added up so far, as OpenMetrics series. The
//! run hands them over with each interval that closes (and at the end), from the histograms
//! and counters it keeps anyway, so the workers' hot path is unchanged. The cli's exporter puts
//! the run's own labels (protocol, target) first.

use npt_stats::Snapshot;

use crate::collect::Collector;

fn refs(v: &[(String, String)]) -> Vec<(&str, &str)> {
    v.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

impl Collector {
    /// Writes the totals so far into `s`; series per virtual host carry `host`.
    pub fn export(&self, s: &mut Snapshot) {
        let with = |extra: &[(&'static str, &str)]| -> Vec<(String, String)> {
            extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        for (name, h) in &self.hosts {
            let hl = with(&[("host", name.as_str())]);
            let r = refs(&hl);
            s.counter(
                "npt_requests_total",
                "Requests with a complete response (any status).",
                &r,
                h.requests,
            );
            for (code, n) in &h.status.0 {
                let code = code.to_string();
                let mut cl = hl.clone();
                cl.push(("code".into(), code));
                s.counter(
                    "npt_responses_total",
                    "Responses by status code.",
                    &refs(&cl),
                    *n,
                );
            }
            let what = if self.open_loop {
                "Request latency, from the intended send time in open loop (coordinated-omission corrected)."
            } else {
                "Request latency, from the first byte written to the last byte read."
            };
            s.histogram("npt_request_duration_seconds", what, &r, &h.latency);
            if self.open_loop {
                s.histogram(
                    "npt_request_duration_uncorrected_seconds",
                    "Open loop: request latency from the actual send.",
                    &r,
                    &h.uncorrected,
                );
            }
        }
        let base = with(&[]);
        let b = refs(&base);
        for (kind, k) in self.errors.iter() {
            let el = with(&[("kind", kind)]);
            s.counter(
                "npt_errors_total",
                "Requests without a complete response, by kind.",
                &refs(&el),
                k.count,
            );
        }
        s.counter(
            "npt_connections_opened_total",
            "Connections opened.",
            &b,
            self.conns,
        );
        s.counter(
            "npt_bytes_sent_total",
            "Request body bytes sent (headers excluded).",
            &b,
            self.bytes_out,
        );
        s.counter(
            "npt_bytes_received_total",
            "Response body bytes received (headers excluded).",
            &b,
            self.bytes_in,
        );
        if self.open_loop {
            s.counter(
                "npt_sends_behind_schedule_total",
                "Open loop: sends more than 2 ms after their intended time.",
                &b,
                self.behind,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::collect::{Collector, Event, Outcome, Record};
    use npt_stats::{snapshot::Value, Snapshot};

    #[test]
    fn export_matches_the_collector() {
        let mut c = Collector::new(&["a.test".to_string(), "b.test".to_string()], true, 1 << 30);
        for i in 0..5u64 {
            c.add(&Record::Request(Event {
                host: (i % 2) as u16,
                outcome: if i == 4 {
                    Outcome::Error(npt_result::error::ErrorKind::Reset, "x".into())
                } else {
                    Outcome::Response(200)
                },
                intended_ns: Some(i * 1000),
                sent_ns: i * 1000,
                head_ns: i * 1000 + 500,
                done_ns: i * 1000 + 1000,
                bytes_out: 0,
                bytes_in: 2,
                reused: false,
            }));
        }
        let mut s = Snapshot::new();
        c.export(&mut s);
        let s = s.labelled(&[("protocol", "http/1.1")]);
        let a = [("protocol", "http/1.1"), ("host", "a.test")];
        assert_eq!(s.get("npt_requests_total", &a), Some(&Value::Counter(2)));
        assert_eq!(
            s.get(
                "npt_responses_total",
                &[
                    ("protocol", "http/1.1"),
                    ("host", "b.test"),
                    ("code", "200")
                ]
            ),
            Some(&Value::Counter(2))
        );
        assert_eq!(
            s.get(
                "npt_errors_total",
                &[("protocol", "http/1.1"), ("kind", "reset")]
            ),
            Some(&Value::Counter(1))
        );
        let Some(Value::Histogram { count, .. }) = s.get("npt_request_duration_seconds", &a) else {
            panic!("no latency histogram");
        };
        assert_eq!(*count, 2);
        assert!(s
            .get("npt_request_duration_uncorrected_seconds", &a)
            .is_some());
    }
}
