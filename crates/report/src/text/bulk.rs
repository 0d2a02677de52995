//! The text `npt bulk` prints — a line per interval as it runs (iperf3's layout: interval,
//! goodput each way, retransmits, the kernel's RTT) and the summary at the end — which
//! `npt report` prints again from the saved result.

use std::io::{self, Write};

use npt_result::bulk::BulkBody;
use npt_result::interval::Interval;
use npt_result::Document;

use super::{bits, ms};

/// One interval: its time span, goodput each way that moved, and the streams' retransmits and
/// RTT (the mean of the streams' last readings) where there are any.
pub fn interval_line(iv: &Interval) -> String {
    let mut line = format!("[{:7.2}-{:7.2} s]", iv.start_s, iv.end_s);
    if let Some(b) = iv.bandwidth_bps {
        if b.down > 0.0 {
            line += &format!("  down {:>14}", bits(b.down));
        }
        if b.up > 0.0 {
            line += &format!("  up {:>14}", bits(b.up));
        }
        if b.down == 0.0 && b.up == 0.0 {
            line += "  nothing arrived";
        }
    }
    if let (Some(sent), Some(lost)) = (iv.sent, iv.lost) {
        line += &format!("  sent {sent} lost {lost}");
    }
    if let Some(streams) = &iv.streams {
        let retr: Option<u64> = streams
            .iter()
            .filter_map(|s| s.retransmits)
            .reduce(|a, b| a + b);
        if let Some(r) = retr {
            line += &format!("  retr {r}");
        }
    }
    if iv.latency_ms.count > 0 {
        line += &format!("  rtt {} ms", ms(iv.latency_ms.mean));
    }
    line
}

/// The summary of a bulk result: per stream, the totals each way, retransmits, RTT, UDP's
/// delivery, the tester's health and errors.
pub fn write_bulk(w: &mut dyn Write, doc: &Document<BulkBody>) -> io::Result<()> {
    let b = &doc.body;
    let s = &b.summary;
    writeln!(
        w,
        "npt bulk {}: {} {}, {} stream{}, {:.2} s, stopped by {}",
        s.target,
        s.protocol,
        s.direction,
        s.streams,
        if s.streams == 1 { "" } else { "s" },
        s.duration_s,
        doc.stopped_by
    )?;
    if b.streams.len() > 1 {
        writeln!(
            w,
            "stream  dir   {:>15} {:>12}  retr  rtt ms",
            "goodput", "bytes"
        )?;
        for t in &b.streams {
            writeln!(
                w,
                "{:>6}  {:<4}  {:>15} {:>12}  {:>4}  {}{}",
                t.index,
                t.direction,
                bits(t.goodput_bps),
                t.bytes,
                t.retransmits.map_or("-".to_string(), |r| r.to_string()),
                t.rtt_ms.map_or("-".to_string(), ms),
                t.error
                    .as_deref()
                    .map_or(String::new(), |e| format!("  ended: {e}"))
            )?;
        }
    }
    for (dir, bps, bytes) in [
        ("down", s.goodput_bps.down, s.bytes.down),
        ("up", s.goodput_bps.up, s.bytes.up),
    ] {
        if bytes > 0.0 || s.direction == dir || s.direction == "both" {
            writeln!(w, "{dir:<10} {} ({bytes:.0} bytes)", bits(bps))?;
        }
    }
    if let (Some(r), Some(pct)) = (s.rate_bps, s.rate_achieved_pct) {
        writeln!(
            w,
            "pace       {} asked of each stream, {pct:.1}% achieved",
            bits(r)
        )?;
    }
    if let Some(cc) = &s.congestion {
        writeln!(
            w,
            "congestion {cc} (this host's kernel, on the streams it sent)"
        )?;
    }
    if let Some(r) = s.retransmits {
        writeln!(w, "retransmits {r}")?;
    }
    if let Some(u) = &s.udp {
        writeln!(
            w,
            "udp        {} × {} B asked: sent {}, arrived {}, lost {} ({:.2}%), delivered {}, jitter {} ms",
            bits(u.rate_bps),
            u.size,
            u.sent,
            u.received,
            u.lost,
            u.loss_pct,
            bits(u.delivered_bps),
            ms(u.jitter_ms)
        )?;
        if let Some(r) = u.refused_by_server.filter(|&r| r > 0) {
            writeln!(w, "{}", super::refused_line(r, "datagrams"))?;
        }
        let what = if s.direction == "down" {
            "pulls"
        } else {
            "sends"
        };
        if u.sends_behind_schedule > 0 {
            writeln!(
                w,
                "           {} {what} left over 1 ms late (the tester could not keep the rate), \
                 stalled {} ms beyond the path's queue",
                u.sends_behind_schedule,
                ms(u.stalled_ms)
            )?;
        }
        if u.tester_limited {
            writeln!(
                w,
                "           TESTER-LIMITED: {} ms, {:.1}% of the run (over {:.0}%), with datagrams \
                 lost: the delivered rate may read low by as much because of this host, not \
                 the path",
                ms(u.stalled_ms),
                u.stalled_ms / 10.0 / s.duration_s.max(1e-9),
                npt_result::bulk::LIMIT_FRACTION * 100.0
            )?;
        }
    }
    if let Some(r) = &s.rtt_ms {
        let what = match (s.protocol.as_str(), s.direction.as_str()) {
            ("tcp", _) => "kernel rtt",
            // UDP down: a pull's round trip to the first datagram it brought.
            ("udp", "down") => "pull rtt",
            ("udp", _) => "report rtt",
            _ => "rtt",
        };
        writeln!(
            w,
            "{what:<10} min {} avg {} p50 {} p99 {} max {} ms ({} samples)",
            ms(r.min),
            ms(r.mean),
            ms(r.p50),
            ms(r.p99),
            ms(r.max),
            r.count
        )?;
    }
    let h = &b.health;
    if let Some(l) = &h.send_lateness_ms {
        writeln!(
            w,
            "tester     send lateness p50 {} p99 {} max {} ms",
            ms(l.p50),
            ms(l.p99),
            ms(l.max)
        )?;
    }
    writeln!(
        w,
        "tester     cpu {:.1}% (user {:.2} s, sys {:.2} s), peak rss {:.1} MiB",
        h.cpu_pct,
        h.cpu_user_s,
        h.cpu_sys_s,
        h.max_rss_bytes as f64 / (1024.0 * 1024.0)
    )?;
    let e = &b.errors;
    if e.total_errors == 0 {
        writeln!(w, "errors     none")?;
    } else {
        writeln!(w, "errors     {} of {} streams", e.total_errors, s.streams)?;
        for (kind, k) in e.by_kind.iter() {
            writeln!(
                w,
                "  {kind:<12} {:>8}  e.g. {}",
                k.count,
                k.examples.first().map(String::as_str).unwrap_or("")
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use npt_result::probe::Directions;

    use super::*;

    #[test]
    fn an_interval_line_shows_what_moved() {
        let iv = Interval {
            start_s: 1.0,
            end_s: 2.0,
            bandwidth_bps: Some(Directions {
                up: 0.0,
                down: 9.5e6,
            }),
            streams: Some(vec![
                npt_result::bulk::StreamInterval {
                    retransmits: Some(2),
                    ..Default::default()
                },
                npt_result::bulk::StreamInterval {
                    retransmits: Some(1),
                    ..Default::default()
                },
            ]),
            ..Interval::default()
        };
        let l = interval_line(&iv);
        assert_eq!(l, "[   1.00-   2.00 s]  down    9.50 Mbit/s  retr 3");
    }

    /// Streams at a rate: the pace asked and achieved, and the congestion control the kernel
    /// ran on the streams sent.
    #[test]
    fn a_paced_run_shows_its_pace_and_congestion_control() {
        use npt_result::bulk::StreamTotal;
        use npt_result::stats::{BulkMeta, BulkStats, Stats};
        let st = BulkStats {
            streams: 2,
            duration_s: 10.0,
            stream_totals: (0..2)
                .map(|i| StreamTotal {
                    index: i,
                    direction: "up".into(),
                    goodput_bps: 4.9e6,
                    rate_bps: Some(5e6),
                    congestion: Some("cubic".into()),
                    ..StreamTotal::default()
                })
                .collect(),
            ..BulkStats::default()
        };
        let meta = BulkMeta {
            target: "tcp://t:1".into(),
            protocol: "tcp".into(),
            direction: "up".into(),
        };
        let now = std::time::SystemTime::now();
        let doc = Document::new(
            "bulk",
            now,
            now,
            npt_result::StopReason::Duration,
            serde_json::json!({}),
            st.summarize(&meta),
        );
        let mut out = Vec::new();
        write_bulk(&mut out, &doc).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(
            t.contains("pace       5.00 Mbit/s asked of each stream, 98.0% achieved"),
            "{t}"
        );
        assert!(t.contains("congestion cubic (this host's kernel"), "{t}");
    }
}
