//! `npt bulk --metrics`: what the run has moved and seen so far, as OpenMetrics series —
//! bytes that arrived each way, the last interval's goodput, the kernel's retransmits, the RTT
//! under load, and a UDP flow's datagrams sent and arrived. While the run goes on they come
//! from the collector (the samples it keeps anyway: no stream is touched); at the end from
//! the result body, so the last values equal what the document says. The cli's exporter puts
//! the run's own labels (protocol, target) first.

use npt_result::bulk::{hist, BulkBody};
use npt_result::probe::Directions;
use npt_stats::{Histogram, Snapshot};
use npt_wire::bulk::Direction;

use crate::collect::Collector;

/// The figures the series are written from.
struct Figures<'a> {
    bytes: Directions,
    bps: Directions,
    retransmits: Option<u64>,
    rtt: Option<&'a Histogram>,
    /// Datagrams sent and arrived (as the responder reported).
    udp: Option<(u64, u64)>,
}

fn write(f: &Figures<'_>, s: &mut Snapshot) {
    for (dir, bytes, bps) in [
        ("up", f.bytes.up, f.bps.up),
        ("down", f.bytes.down, f.bps.down),
    ] {
        let l = [("direction", dir)];
        // NO-PANIC: a float-to-int `as` saturates; byte counts are whole numbers.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        s.counter(
            "npt_bulk_bytes_total",
            "Payload bytes that arrived (up: as the responder reported them).",
            &l,
            bytes as u64,
        );
        s.gauge(
            "npt_bulk_goodput_bps",
            "Goodput, bits/s (headers excluded): of the last closed interval while the run goes on, of the whole run at the end.",
            &l,
            bps,
        );
    }
    if let Some(r) = f.retransmits {
        s.counter(
            "npt_bulk_retransmits_total",
            "TCP: segments the tester's kernel retransmitted (sending streams); QUIC: packets lost.",
            &[],
            r,
        );
    }
    if let Some(h) = f.rtt {
        s.histogram(
            "npt_bulk_rtt_seconds",
            "The path's RTT under the load (TCP: the kernel's smoothed RTT, sampled every 100 ms).",
            &[],
            h,
        );
    }
    if let Some((sent, received)) = f.udp {
        s.counter(
            "npt_bulk_datagrams_sent_total",
            "UDP datagrams sent.",
            &[],
            sent,
        );
        s.counter(
            "npt_bulk_datagrams_received_total",
            "UDP datagrams the responder reported arrived.",
            &[],
            received,
        );
    }
}

impl Collector {
    /// Writes the totals so far into `s`.
    pub fn export(&self, s: &mut Snapshot) {
        let mut bytes = Directions::default();
        let mut retransmits = None;
        let mut udp = None;
        for a in &self.streams {
            let b = a.last.bytes as f64;
            match a.dir {
                Some(Direction::Up) => bytes.up += b,
                _ => bytes.down += b,
            }
            if let Some(r) = a.last.reading.retransmits {
                *retransmits.get_or_insert(0) += r;
            }
            if let Some(u) = a.last.udp {
                udp = Some((u.sent, u.received));
            }
        }
        let f = Figures {
            bytes,
            bps: self.last_bps,
            retransmits,
            rtt: Some(&self.total),
            udp,
        };
        write(&f, s);
    }
}

/// The final totals, as the body states them (the goodput: the whole run's).
pub fn export_body(b: &BulkBody, s: &mut Snapshot) {
    let rtt = b
        .histograms
        .get(hist::RTT)
        .and_then(|h| Histogram::from_serialized(h).ok());
    let f = Figures {
        bytes: b.summary.bytes,
        bps: b.summary.goodput_bps,
        retransmits: b.summary.retransmits,
        rtt: rtt.as_ref().filter(|h| !h.is_empty()),
        udp: b.summary.udp.as_ref().map(|u| (u.sent, u.received)),
    };
    write(&f, s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::Snapshot as Sample;
    use crate::Reading;
    use npt_stats::snapshot::Value;

    /// A download and an upload stream over one interval: the series say what they moved,
    /// the retransmits and the RTT readings, during the run and (the same) from the body.
    #[test]
    fn series_say_what_the_streams_moved() {
        const S: u64 = 1_000_000_000;
        let mut c = Collector::new(&[Direction::Down, Direction::Up], S);
        let snap = |bytes, retr| Sample {
            bytes,
            reading: Reading {
                generation: 1,
                rtt_ns: Some(2_000_000),
                retransmits: Some(retr),
                ..Reading::default()
            },
            ..Sample::default()
        };
        let iv = c.sample(S, &[snap(1_000_000, 0), snap(250_000, 4)]);
        assert!(iv.is_some());
        let mut s = Snapshot::new();
        c.export(&mut s);
        let down = [("direction", "down")];
        assert_eq!(
            s.get("npt_bulk_bytes_total", &down),
            Some(&Value::Counter(1_000_000))
        );
        assert_eq!(
            s.get("npt_bulk_goodput_bps", &down),
            Some(&Value::Gauge(8e6))
        );
        assert_eq!(
            s.get("npt_bulk_retransmits_total", &[]),
            Some(&Value::Counter(4))
        );
        assert!(s.get("npt_bulk_rtt_seconds", &[]).is_some());
        assert!(s.get("npt_bulk_datagrams_sent_total", &[]).is_none(), "TCP");
        let body = c.finish(
            S,
            &[snap(1_000_000, 0), snap(250_000, 4)],
            None,
            &crate::collect::Meta {
                streams: 1,
                protocol: "tcp".into(),
                ..Default::default()
            },
            npt_result::Health::default(),
        );
        let mut e = Snapshot::new();
        export_body(&body, &mut e);
        assert_eq!(
            e.get("npt_bulk_bytes_total", &down),
            s.get("npt_bulk_bytes_total", &down)
        );
        assert_eq!(
            e.get("npt_bulk_goodput_bps", &down),
            Some(&Value::Gauge(body.summary.goodput_bps.down))
        );
        assert_eq!(
            e.get("npt_bulk_retransmits_total", &[]),
            Some(&Value::Counter(4))
        );
    }
}
