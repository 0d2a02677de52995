//! The loaded probe's part of the probe's text report: one line per phase (idle, loaded,
//! recovery) with its RTT percentiles, then the increase under load, the responsiveness (RPM)
//! and what the load moved, so the phases read in the order they ran.

use std::io::{self, Write};

use npt_result::under_load::UnderLoad;

use super::{bits, ms};

pub fn write_under_load(w: &mut dyn Write, u: &UnderLoad) -> io::Result<()> {
    writeln!(
        w,
        "load       {} {} x{}{}{}{}{}  ran {}",
        u.load.target,
        u.load.direction,
        u.load.streams,
        match (u.load.rate_bps, u.load.size) {
            (Some(r), Some(s)) => format!(" at {} in {s} B datagrams", bits(r)),
            (Some(r), None) => format!(" paced at {} a stream", bits(r)),
            _ => String::new(),
        },
        if u.load.direction == "both" {
            " each way"
        } else {
            ""
        },
        u.load
            .via
            .as_ref()
            .map(|v| format!(" via {v}"))
            .unwrap_or_default(),
        u.load
            .congestion
            .as_ref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default(),
        match (u.load_started_s, u.load_ended_s) {
            (Some(a), Some(b)) => format!("{a:.2}-{b:.2} s"),
            _ => "not at all (the run ended first)".to_string(),
        }
    )?;
    for p in &u.phases {
        let r = &p.rtt_ms;
        writeln!(
            w,
            "  {:<9}{:>6.2}-{:<6.2}s  rtt p50 {} p90 {} p99 {} max {} ms  ({} replies)",
            p.name,
            p.start_s,
            p.end_s,
            ms(r.p50),
            ms(r.p90),
            ms(r.p99),
            ms(r.max),
            r.count
        )?;
    }
    if let (Some(d), Some(x)) = (u.increase_p50_ms, u.increase_p50_x) {
        writeln!(
            w,
            "under load p50 {}{} ms ({x:.2}x)  p99 {}{} ms",
            if d >= 0.0 { "+" } else { "" },
            ms(d),
            if u.increase_p99_ms.unwrap_or(0.0) >= 0.0 {
                "+"
            } else {
                ""
            },
            ms(u.increase_p99_ms.unwrap_or(0.0))
        )?;
    }
    if let (Some(rpm), Some(rtt)) = (u.rpm, u.rpm_rtt_ms) {
        writeln!(
            w,
            "rpm        {rpm:.0} round trips/min under load (95% trimmed mean RTT {} ms){}",
            ms(rtt),
            u.idle_rpm
                .map(|i| format!(", {i:.0} idle"))
                .unwrap_or_default()
        )?;
    }
    // The directions the load ran, and what its own RTT is on its protocol.
    let moved = match u.load.direction.as_str() {
        "up" => format!("up {}", bits(u.goodput_bps.up)),
        "down" => format!("down {}", bits(u.goodput_bps.down)),
        _ => format!(
            "up {}  down {}",
            bits(u.goodput_bps.up),
            bits(u.goodput_bps.down)
        ),
    };
    let rtt_of = match u.load.target.split("://").next() {
        Some("udp") if u.load.direction == "down" => "pull rtt",
        Some("udp") => "report rtt",
        Some("quic") => "quic rtt",
        _ => "kernel rtt",
    };
    writeln!(
        w,
        "load moved {moved}  (goodput, application payload){}{}",
        u.load_rtt_ms
            .map(|r| format!("  {rtt_of} on the load p50 {} ms", ms(r.p50)))
            .unwrap_or_default(),
        u.retransmits
            .map(|r| format!("  retransmits {r}"))
            .unwrap_or_default()
    )?;
    if let Some(cc) = &u.congestion {
        writeln!(
            w,
            "load cc    {cc} (this host's kernel, on the load's streams that sent)"
        )?;
    }
    if let Some(x) = &u.udp {
        writeln!(
            w,
            "udp load   sent {}  arrived {}  lost {} ({:.2}%)  delivered {}  jitter {} ms",
            x.sent,
            x.received,
            x.lost,
            x.loss_pct,
            bits(x.delivered_bps),
            ms(x.jitter_ms)
        )?;
    }
    if u.load_errors.total_errors > 0 {
        for (kind, k) in u.load_errors.by_kind.iter() {
            writeln!(
                w,
                "  load error {kind} x{}  e.g. {}",
                k.count,
                k.examples.first().map(String::as_str).unwrap_or("")
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::under_load::{LoadSpec, Phase};
    use npt_stats::Summary;

    #[test]
    fn phases_in_order_then_the_increase_and_rpm() {
        let phase = |name: &str, a: f64, p50: f64| Phase {
            name: name.into(),
            start_s: a,
            end_s: a + 5.0,
            rtt_ms: Summary {
                count: 500,
                p50,
                ..Summary::default()
            },
        };
        let u = UnderLoad {
            load: LoadSpec {
                target: "tcp://t:7777".into(),
                direction: "down".into(),
                streams: 4,
                via: None,
                congestion: None,
                ..LoadSpec::default()
            },
            phases: vec![
                phase("idle", 0.0, 20.0),
                phase("loaded", 5.0, 140.0),
                phase("recovery", 10.0, 20.5),
            ],
            load_started_s: Some(5.0),
            load_ended_s: Some(10.1),
            increase_p50_ms: Some(120.0),
            increase_p50_x: Some(7.0),
            increase_p99_ms: Some(130.0),
            rpm: Some(428.6),
            rpm_rtt_ms: Some(140.0),
            idle_rpm: Some(3000.0),
            ..UnderLoad::default()
        };
        let mut out = Vec::new();
        write_under_load(&mut out, &u).unwrap();
        let t = String::from_utf8(out).unwrap();
        let idle = t.find("idle").unwrap();
        let loaded = t.find("loaded").unwrap();
        assert!(idle < loaded && loaded < t.find("recovery").unwrap(), "{t}");
        assert!(t.contains("p50 +120"), "{t}");
        assert!(t.contains("(7.00x)"), "{t}");
        assert!(t.contains("rpm        429 round trips/min"), "{t}");
        assert!(t.contains("ran 5.00-10.10 s"), "{t}");
        assert!(!t.contains("udp load"), "{t}");
    }

    #[test]
    fn a_udp_load_shows_its_rate_and_what_arrived() {
        let u = UnderLoad {
            load: LoadSpec {
                target: "udp://t:7777".into(),
                direction: "up".into(),
                streams: 1,
                rate_bps: Some(20e6),
                size: Some(1200),
                ..LoadSpec::default()
            },
            udp: Some(npt_result::under_load::UdpLoad {
                sent: 1000,
                received: 500,
                lost: 500,
                loss_pct: 50.0,
                delivered_bps: 9.6e6,
                jitter_ms: 0.1,
            }),
            ..UnderLoad::default()
        };
        let mut out = Vec::new();
        write_under_load(&mut out, &u).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(t.contains(" in 1200 B datagrams"), "{t}");
        assert!(t.contains("lost 500 (50.00%)"), "{t}");
        // Only the way it went, and no "kernel" RTT for a UDP load.
        assert!(t.contains("load moved up "), "{t}");
        assert!(!t.contains("down 0"), "{t}");
        assert!(!t.contains("kernel rtt"), "{t}");
    }

    /// A TCP load at a rate, up: its pace, what it moved, its retransmits and the congestion
    /// control the kernel ran.
    #[test]
    fn a_paced_tcp_load_shows_its_pace_retransmits_and_congestion() {
        let u = UnderLoad {
            load: LoadSpec {
                target: "tcp://t:7777".into(),
                direction: "up".into(),
                streams: 1,
                rate_bps: Some(5e6),
                congestion: Some("cubic".into()),
                ..LoadSpec::default()
            },
            goodput_bps: npt_result::common::Directions {
                up: 4.99e6,
                down: 0.0,
            },
            retransmits: Some(3),
            congestion: Some("cubic".into()),
            ..UnderLoad::default()
        };
        let mut out = Vec::new();
        write_under_load(&mut out, &u).unwrap();
        let t = String::from_utf8(out).unwrap();
        assert!(
            t.contains("tcp://t:7777 up x1 paced at 5.00 Mbit/s a stream"),
            "{t}"
        );
        assert!(t.contains("load moved up 4.99 Mbit/s"), "{t}");
        assert!(t.contains("retransmits 3"), "{t}");
        assert!(t.contains("load cc    cubic"), "{t}");
    }
}
