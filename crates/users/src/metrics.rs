//! `npt run --metrics`: the collector's totals so far as OpenMetrics series, labelled by
//! protocol and activity. The run hands them over with each interval (and at the end), under
//! the collector's lock, which users already take per request; nothing is added per request.
//! The cli's exporter puts the run's own labels (`target`) first.

use std::sync::atomic::Ordering;

use npt_stats::Snapshot;

use crate::collect::Collector;
use crate::config::{Activity, Proto};

impl Collector {
    /// Writes the totals so far into `s`.
    pub fn export(&self, s: &mut Snapshot) {
        let t = self.lock();
        for a in Activity::ALL {
            let x = &t.act[a.index()];
            if x.sessions == 0 && x.requests == 0 {
                continue;
            }
            let r = [("activity", a.name())];
            s.counter(
                "npt_requests_total",
                "Requests (rounds) completed, by activity.",
                &r,
                x.requests,
            );
            s.counter(
                "npt_request_errors_total",
                "Requests that failed, by activity.",
                &r,
                x.errors,
            );
            s.counter(
                "npt_sessions_total",
                "User sessions started, by activity.",
                &r,
                x.sessions,
            );
            s.histogram(
                "npt_request_duration_seconds",
                "Request latency (first byte written to last byte read), by activity.",
                &r,
                &x.latency,
            );
            if a == Activity::Game {
                let g = &x.game;
                s.counter(
                    "npt_packets_sent_total",
                    "Game packets sent.",
                    &r,
                    g.packets.sent,
                );
                s.counter(
                    "npt_packets_lost_total",
                    "Game packets without a reply within the loss timeout (path loss).",
                    &r,
                    g.packets.lost,
                );
                s.counter(
                    "npt_packets_refused_total",
                    "Game packets the server's budget refused (not path loss).",
                    &r,
                    g.refused,
                );
            }
        }
        for p in Proto::ALL {
            let x = &t.proto[p.index()];
            if x.connections == 0 && x.requests == 0 {
                continue;
            }
            let r = [("protocol", p.name())];
            s.counter(
                "npt_connections_opened_total",
                "Connections opened, by protocol.",
                &r,
                x.connections,
            );
        }
        for (kind, k) in t.errors.iter() {
            let r = [("kind", kind)];
            s.counter("npt_errors_total", "Errors by kind.", &r, k.count);
        }
        drop(t);
        let r: [(&str, &str); 0] = [];
        s.gauge(
            "npt_active_users",
            "Users running now.",
            &r,
            self.active_users.load(Ordering::Relaxed) as f64,
        );
        s.gauge(
            "npt_open_connections",
            "Connections open now.",
            &r,
            self.active_conns.load(Ordering::Relaxed) as f64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_stats::snapshot::Value;

    #[test]
    fn export_reads_the_totals() {
        let c = Collector::new();
        c.session(Activity::Web);
        c.request(Activity::Web, 10, 20, 1_000_000);
        c.request(Activity::Web, 10, 20, 3_000_000);
        c.error(Activity::Web, npt_result::error::ErrorKind::Refused, || {
            "x".into()
        });
        let _u = c.user_active();
        let mut s = Snapshot::new();
        c.export(&mut s);
        let s = s.labelled(&[("target", "t")]);
        let web = [("target", "t"), ("activity", "web")];
        assert_eq!(s.get("npt_requests_total", &web), Some(&Value::Counter(2)));
        assert_eq!(
            s.get("npt_errors_total", &[("target", "t"), ("kind", "refused")]),
            Some(&Value::Counter(1))
        );
        assert_eq!(
            s.get("npt_active_users", &[("target", "t")]),
            Some(&Value::Gauge(1.0))
        );
        let Some(Value::Histogram { count, .. }) = s.get("npt_request_duration_seconds", &web)
        else {
            panic!("no histogram");
        };
        assert_eq!(*count, 2);
    }
}
