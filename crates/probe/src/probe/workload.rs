//! The probe as a [`Workload`]: its config runs through [`runner::run`], and its totals are the
//! `--metrics` series `npt probe` has always shown — the stages so far added up while the run
//! goes on ([`Running`]), the report's own figures at the end ([`final_totals`]).

use std::sync::Arc;
use std::time::Duration;

use npt_result::packets::PacketLine;
use npt_result::probe::{hist, ProbeBody};
use npt_result::workload::{times, Finished, Length, Progress, Stop, Workload};
use npt_stats::{ErrorCounts, Histogram, Snapshot};

use super::runner::{self, PacingSpec, ProbeConfig};
use super::session::Interval;

impl Workload for ProbeConfig {
    type Body = ProbeBody;
    type Error = std::io::Error;

    fn config(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    fn length(&self) -> Option<Length> {
        length(self.count, self.duration, &self.pacing, self.loss_timeout)
    }

    fn run(
        &mut self,
        stop: &Arc<Stop>,
        on_interval: &mut dyn FnMut(&Progress<'_>),
    ) -> std::io::Result<Finished<ProbeBody>> {
        runner::run(self, stop, on_interval, None)
    }

    const PACKETS: bool = true;

    fn run_logged(
        &mut self,
        stop: &Arc<Stop>,
        on_interval: &mut dyn FnMut(&Progress<'_>),
        on_packet: &mut dyn FnMut(&PacketLine),
    ) -> std::io::Result<Finished<ProbeBody>> {
        runner::run(self, stop, on_interval, Some(on_packet))
    }
}

/// How long a probe takes at most: its send phase — its `duration` (`--under-load`: the three
/// phases), or its `count` at its pace if that ends first — and the last packet's
/// `loss_timeout`. A relay schedule sends each packet when the last is answered: every packet
/// may wait its full loss timeout. `None` with neither (until stopped).
pub fn length(
    count: Option<u64>,
    duration: Option<Duration>,
    pacing: &PacingSpec,
    loss_timeout: Duration,
) -> Option<Length> {
    let by_count = count.map(|n| match *pacing {
        PacingSpec::Relay { .. } => times(loss_timeout, n),
        PacingSpec::Interval { interval } => times(interval, n),
        // Too long for a `Duration` (a huge count at a tiny rate): unbounded.
        PacingSpec::Rate { pps } => {
            Duration::try_from_secs_f64(n as f64 / pps.max(1e-3)).unwrap_or(Duration::MAX)
        }
    });
    let send = match (duration, by_count) {
        (Some(d), Some(c)) => d.min(c),
        (d, c) => d.or(c)?,
    };
    Some(Length::planned(send.saturating_add(loss_timeout)))
}

/// The merged stages handed over so far, added up (once per stage, never per packet).
#[derive(Default)]
pub struct Running {
    packets: npt_stats::PacketCounts,
    refused: u64,
    rtt: Histogram,
}

impl Running {
    pub fn add(&mut self, iv: &Interval) {
        self.packets += &iv.packets;
        self.refused += iv.refused;
        self.rtt += &iv.rtt;
    }

    pub fn received(&self) -> u64 {
        self.packets.received
    }

    pub fn export(&self, s: &mut Snapshot) {
        export(self, None, s);
    }
}

/// The report's totals as the endpoint shows them after the run, exactly as the result
/// document has them.
pub fn final_totals(body: &ProbeBody) -> Snapshot {
    let m = &body.summary;
    let rtt = body.histograms.get(hist::RTT);
    let t = Running {
        packets: m.packets,
        refused: m.refused_by_server,
        rtt: match rtt.map(Histogram::from_serialized) {
            Some(Ok(h)) => h,
            _ => Histogram::new(),
        },
    };
    let mut s = Snapshot::new();
    export(&t, Some(&body.errors.by_kind), &mut s);
    s
}

fn export(t: &Running, errors: Option<&ErrorCounts>, s: &mut Snapshot) {
    for (name, help, v) in [
        ("npt_packets_sent_total", "Probe packets sent.", t.packets.sent),
        (
            "npt_packets_received_total",
            "Probe replies received within the loss timeout.",
            t.packets.received,
        ),
        (
            "npt_packets_lost_total",
            "Probe packets without a reply within the loss timeout that the server did not refuse (counted in the stage they were sent in).",
            t.packets.lost,
        ),
        (
            "npt_packets_refused_total",
            "Probe packets the server's budget or --token refused (not path loss).",
            t.refused,
        ),
        (
            "npt_packets_late_total",
            "Replies that came after the loss timeout (already lost).",
            t.packets.late,
        ),
        ("npt_packets_duplicated_total", "Duplicate replies.", t.packets.duplicated),
        ("npt_packets_reordered_total", "Replies out of order.", t.packets.reordered),
    ] {
        s.counter(name, help, &[], v);
    }
    s.histogram(
        "npt_packet_rtt_seconds",
        "Round-trip time of on-time replies, from the actual send.",
        &[],
        &t.rtt,
    );
    for (kind, k) in errors.into_iter().flat_map(|e| e.iter()) {
        s.counter(
            "npt_errors_total",
            "Errors by kind.",
            &[("kind", kind)],
            k.count,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_stats::snapshot::Value;

    #[test]
    fn stages_add_up_and_the_end_shows_the_report() {
        let mut r = Running::default();
        let mut iv = Interval {
            packets: npt_stats::PacketCounts {
                sent: 10,
                received: 9,
                lost: 1,
                ..Default::default()
            },
            ..Interval::default()
        };
        iv.rtt.record(2_000_000);
        r.add(&iv);
        r.add(&iv);
        let mut s = Snapshot::new();
        r.export(&mut s);
        assert_eq!(
            s.get("npt_packets_sent_total", &[]),
            Some(&Value::Counter(20))
        );
        assert_eq!(
            s.get("npt_packets_lost_total", &[]),
            Some(&Value::Counter(2))
        );
        let Some(Value::Histogram { count, .. }) = s.get("npt_packet_rtt_seconds", &[]) else {
            panic!("no rtt histogram");
        };
        assert_eq!(*count, 2);
        assert_eq!(r.received(), 18);
    }
}
