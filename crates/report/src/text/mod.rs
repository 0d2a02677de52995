//! Plain-text renderers. They take any `io::Write`, so tests render into a `Vec<u8>`.

use std::io::{self, Write};

use npt_stats::Summary;

use npt_result::any::AnyResult;
use npt_result::interval::Interval;
use npt_result::probe::ProbeBody;
use npt_result::Document;

mod bulk;
mod directions;
mod http;
mod lifetime;
pub(crate) mod marking;
mod mtu;
mod ping;
mod run;
pub(crate) mod setup;
mod tcpinfo;
mod under_load;
mod vantages;

pub use bulk::{interval_line as bulk_interval_line, write_bulk};
pub use http::write_http;
pub use lifetime::{lifetime_lines, write_lifetime};
pub use mtu::write_mtu;
pub use ping::write_ping;
pub use run::write_run;
pub use setup::write_setup;

/// Formats bits per second with a unit (`12.34 Mbit/s`).
pub fn bits(bps: f64) -> String {
    let (v, u) = if bps >= 1e9 {
        (bps / 1e9, "Gbit/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "Mbit/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "kbit/s")
    } else {
        (bps, "bit/s")
    };
    format!("{v:.2} {u}")
}

/// The one line every result prints when `npt serve` refused part of the test: how many of
/// `what` ("datagrams", "attempts" …), that they are not path loss, and what lifts the refusal.
pub fn refused_line(n: u64, what: &str) -> String {
    format!(
        "refused    {n} {what} by the server, not lost on the path: use --token, or raise npt \
         serve's limits (--open-limits, --source-pps, --source-mbps; loopback and LAN clients \
         are exempt unless --limit-local)"
    )
}

/// A millisecond value with precision that suits its size.
pub fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// One stage line, printed while a probe runs (the line tester's `[阶段]` stage line, loss never
/// negative): its mean delay (the line tester's 延迟) beside the p50 and p99. The probe's own
/// fields of the record count as 0 where absent.
pub fn stage_line(r: &Interval) -> String {
    let (sent, lost) = (r.sent.unwrap_or(0), r.lost.unwrap_or(0));
    let bw = r.bandwidth_bps.unwrap_or_default();
    format!(
        "[stage {:>3}] {:>15}  sent {:>8}  {:>9.0} pps  rtt mean {} p50 {} p99 {} ms  loss {:.2}% ({}/{}){}  late {}  up {}  down {}",
        r.index,
        format!("{:.2}-{:.2}s", r.start_s, r.end_s),
        sent,
        r.rate_per_s,
        ms(r.latency_ms.mean),
        ms(r.latency_ms.p50),
        ms(r.latency_ms.p99),
        r.loss_pct.unwrap_or(0.0),
        lost,
        sent.saturating_sub(r.refused.unwrap_or(0)),
        stage_split(r),
        r.late.unwrap_or(0),
        bits(bw.up),
        bits(bw.down),
    )
}

/// The line when a probe has stopped sending and waits for the replies in flight, up to the
/// loss timeout (the line tester's "stopped sending, waiting for replies, about 1.00 s"):
/// `why` it stopped (`count`, `duration`, `signal` …), `in_flight` packets, `up_to_ms`; `held`:
/// over TCP, where a reply on a live connection is only late, the wait is the stream's hold.
pub fn waiting_line(
    elapsed_s: f64,
    why: &str,
    in_flight: u64,
    up_to_ms: f64,
    held: bool,
) -> String {
    let what = if held {
        "while the TCP connection lives"
    } else {
        "the loss timeout"
    };
    format!(
        "[waiting  ] {:>15}  sending stopped ({why}): waiting up to {} ms ({what}) for \
         {in_flight} packet{} in flight",
        format!("{elapsed_s:.2}s"),
        ms(up_to_ms),
        if in_flight == 1 { "" } else { "s" }
    )
}

/// A stage's losses placed up and down, and what the server refused (when it says).
fn stage_split(r: &Interval) -> String {
    let mut out = String::new();
    if let (Some(u), Some(d)) = (r.lost_up, r.lost_down) {
        if r.lost.unwrap_or(0) > 0 {
            out.push_str(&format!(" up {u} down {d}"));
        }
    }
    if let Some(n) = r.refused.filter(|n| *n > 0) {
        out.push_str(&format!("  refused {n}"));
    }
    out
}

/// TCP's first packet and total, each with the part after the connect beside it: quic-tun's
/// latency test timed from after `connect` returned, so its "first packet latency" is the
/// first echo alone and its "total latency" the total after connect. Files written before
/// those were recorded show npt's figures only.
fn tcp_line(s: &npt_result::probe::ProbeSummary) -> Option<String> {
    let (fp, total) = (s.first_packet_ms?, s.total_ms?);
    let connect = ms(s.connect_ms.unwrap_or(0.0));
    let first = match s.first_echo_ms {
        Some(e) => format!(
            "(connect {connect} ms; first echo after connect {} ms)",
            ms(e)
        ),
        None => format!("(connect {connect} ms)"),
    };
    let after = s
        .total_after_connect_ms
        .map_or(String::new(), |a| format!(" (after connect {} ms)", ms(a)));
    Some(format!(
        "tcp        first packet {} ms {first}  total {} ms{after}",
        ms(fp),
        ms(total)
    ))
}

/// `part ÷ whole` in % (0 of nothing).
pub fn pct(part: u64, whole: u64) -> f64 {
    npt_result::loss_pct(part, whole)
}

pub(crate) fn summary_line(s: &Summary) -> String {
    if s.count == 0 {
        return "no samples".to_string();
    }
    format!(
        "min {}  mean {}  stddev {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {} ms",
        ms(s.min),
        ms(s.mean),
        ms(s.stddev),
        ms(s.p50),
        ms(s.p90),
        ms(s.p99),
        ms(s.p999),
        ms(s.max)
    )
}

/// The final summary of a probe run.
pub fn write_probe(w: &mut dyn Write, doc: &Document<ProbeBody>) -> io::Result<()> {
    let s = &doc.body.summary;
    let h = &doc.body.health;
    writeln!(
        w,
        "npt probe {}://{}  mode {}{}  size {} B  clients {}  {}",
        // A STAMP probe is a UDP probe in STAMP's framing; its target was stamp://.
        if s.framing == "stamp" {
            "stamp"
        } else {
            &s.protocol
        },
        s.target,
        s.mode,
        if s.open_loop {
            " (open loop)"
        } else {
            " (closed loop)"
        },
        s.size,
        s.clients,
        s.framing
    )?;
    writeln!(
        w,
        "stopped by {} after {:.2} s (send phase {:.2} s, loss timeout {} ms)",
        doc.stopped_by,
        doc.duration_s,
        s.send_duration_s,
        ms(s.loss_timeout_ms)
    )?;
    writeln!(
        w,
        "packets    sent {}  received {}  lost {} ({:.3}%)  late {}  duplicated {}  reordered {}",
        s.packets.sent,
        s.packets.received,
        s.packets.lost,
        s.loss_pct,
        s.packets.late,
        s.packets.duplicated,
        s.packets.reordered
    )?;
    directions::write_refused(w, s)?;
    directions::write_directions(w, s)?;
    writeln!(
        w,
        "rate       {:.1} pps sent, {:.1} pps received",
        s.pps, s.pps_received
    )?;
    writeln!(w, "rtt        {}", summary_line(&s.rtt_ms))?;
    if let Some(c) = &s.rtt_corrected_ms {
        writeln!(
            w,
            "corrected  {}  (from the intended send time)",
            summary_line(c)
        )?;
    }
    writeln!(
        w,
        "jitter     {} ms (RFC 3550)  ipdv p50 {} p99 {} max {} ms",
        ms(s.jitter_ms),
        ms(s.ipdv_ms.p50),
        ms(s.ipdv_ms.p99),
        ms(s.ipdv_ms.max)
    )?;
    writeln!(
        w,
        "bandwidth  up {}  down {}  (application payload; IP/{} headers excluded)",
        bits(s.bandwidth_bps.up),
        bits(s.bandwidth_bps.down),
        s.protocol.to_uppercase()
    )?;
    if let Some(line) = tcp_line(s) {
        writeln!(w, "{line}")?;
    }
    if let Some(p) = &s.proxy {
        writeln!(
            w,
            "proxy      {}  handshake {} ms (connect {} ms, auth {} ms, reply {} ms) x{}",
            p.via,
            ms(p.handshake_ms),
            ms(p.proxy_connect_ms),
            ms(p.auth_ms),
            ms(p.reply_ms),
            p.handshakes
        )?;
    }
    if let Some(k) = &s.tcp_info {
        tcpinfo::write_kernel(w, k)?;
    }
    if let Some(m) = &s.marking {
        marking::write_marking(w, m, s.protocol == "udp")?;
    }
    if s.corrupt + s.foreign + s.stale > 0 {
        writeln!(
            w,
            "suspect    corrupt {}  foreign {}  stale {}",
            s.corrupt, s.foreign, s.stale
        )?;
    }
    if let Some(u) = &doc.body.under_load {
        under_load::write_under_load(w, u)?;
    }
    let late = h.send_lateness_ms.unwrap_or_default();
    writeln!(
        w,
        "tester     behind schedule {} (>{} ms)  send lateness p50 {} p99 {} max {} ms  cpu {:.0}%  rss {:.1} MiB",
        h.sends_behind_schedule.unwrap_or(0),
        ms(h.behind_threshold_ms.unwrap_or(0.0)),
        ms(late.p50),
        ms(late.p99),
        ms(late.max),
        h.cpu_pct,
        h.max_rss_bytes as f64 / (1024.0 * 1024.0)
    )?;
    let e = &doc.body.errors;
    if e.total_errors == 0 {
        writeln!(w, "errors     none")?;
    } else {
        writeln!(
            w,
            "errors     {} ({:.3}% of sends)",
            e.total_errors,
            e.error_rate * 100.0
        )?;
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

/// The text summary of any workload's result, as the command that made it printed it.
pub fn write_text(w: &mut dyn io::Write, doc: &AnyResult) -> io::Result<()> {
    crate::render::text(w, doc)?;
    // A merge of several monitor stores: each vantage's own figures under the merge's.
    vantages::write(w, &doc.config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::any::AnyBody;

    /// Every kind's result, read as any result, prints its command's text: http's exactly
    /// what `write_http` prints for its own document.
    #[test]
    fn the_text_of_any_kind_is_its_commands_text() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1");
        let read = |kind: &str| npt_result::any::read(&dir.join(format!("{kind}-0.json"))).unwrap();
        let any = read("http");
        let AnyBody::Http(b) = &any.body else {
            panic!("an http result")
        };
        let typed = Document {
            schema: any.schema.clone(),
            kind: any.kind.clone(),
            tool: any.tool.clone(),
            host: any.host.clone(),
            started_at: any.started_at.clone(),
            ended_at: any.ended_at.clone(),
            duration_s: any.duration_s,
            stopped_by: any.stopped_by,
            config: any.config.clone(),
            body: b.clone(),
        };
        let (mut direct, mut out) = (Vec::new(), Vec::new());
        write_http(&mut direct, &typed).unwrap();
        write_text(&mut out, &any).unwrap();
        assert_eq!(out, direct);
        for kind in ["probe", "run"] {
            let mut out = Vec::new();
            write_text(&mut out, &read(kind)).unwrap();
            assert!(!out.is_empty());
        }
    }

    #[test]
    fn units() {
        assert_eq!(bits(640_000.0), "640.00 kbit/s");
        assert_eq!(bits(1.5e9), "1.50 Gbit/s");
        assert_eq!(ms(0.0412), "0.041");
        assert_eq!(ms(152.04), "152.0");
    }

    /// The TCP line states quic-tun's figures by their definitions beside npt's, and an older
    /// file without them still shows npt's.
    #[test]
    fn tcp_line_puts_the_figures_after_connect_beside_npts() {
        let mut s = npt_result::probe::ProbeSummary {
            first_packet_ms: Some(0.304),
            connect_ms: Some(0.186),
            first_echo_ms: Some(0.118),
            total_ms: Some(9990.3),
            total_after_connect_ms: Some(9990.1),
            ..Default::default()
        };
        assert_eq!(
            tcp_line(&s).unwrap(),
            "tcp        first packet 0.304 ms (connect 0.186 ms; first echo after connect \
             0.118 ms)  total 9990.3 ms (after connect 9990.1 ms)"
        );
        s.first_echo_ms = None;
        s.total_after_connect_ms = None;
        assert_eq!(
            tcp_line(&s).unwrap(),
            "tcp        first packet 0.304 ms (connect 0.186 ms)  total 9990.3 ms"
        );
        s.total_ms = None;
        assert!(tcp_line(&s).is_none());
    }

    #[test]
    fn waiting_line_says_how_long_and_how_many() {
        assert_eq!(
            waiting_line(5.004, "count", 37, 1000.0, false),
            "[waiting  ]           5.00s  sending stopped (count): waiting up to 1000.0 ms (the \
             loss timeout) for 37 packets in flight"
        );
        assert!(waiting_line(0.1, "signal", 1, 250.0, false).ends_with("for 1 packet in flight"));
        assert!(waiting_line(0.1, "count", 1, 60000.0, true)
            .contains("waiting up to 60000.0 ms (while the TCP connection lives)"));
    }

    #[test]
    fn stage_line_shows_loss_over_sent() {
        let r = Interval {
            index: 2,
            start_s: 3.5,
            end_s: 7.0,
            sent: Some(1000),
            completed: 990,
            lost: Some(10),
            loss_pct: Some(1.0),
            rate_per_s: 285.7,
            ..Default::default()
        };
        let line = stage_line(&r);
        assert!(line.contains("loss 1.00% (10/1000)"), "{line}");
        // The mean delay (the line tester's 延迟) beside the percentiles.
        let r = Interval {
            latency_ms: Summary {
                count: 3,
                mean: 4.86,
                p50: 3.16,
                p99: 10.04,
                ..Summary::default()
            },
            ..r
        };
        assert!(
            stage_line(&r).contains("rtt mean 4.86 p50 3.16 p99 10.04 ms  loss"),
            "{}",
            stage_line(&r)
        );
        assert!(line.starts_with("[stage   2]"), "{line}");
    }
}
