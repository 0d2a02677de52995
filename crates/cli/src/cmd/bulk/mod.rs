//! `npt bulk`: capacity through `npt serve`'s bulk responder — TCP or QUIC streams up, down or
//! both, or UDP at a rate — with a line per interval as it runs, the summary, and a
//! `kind = "bulk"` result document with `--json`. Exit 1 when nothing arrived (every stream
//! failed), 2 for a bad flag.
//!
//! [`execute`] runs it as every workload: `--segment` splits the streams (UDP: the rate),
//! `--metrics` exports its totals, and a terminal gets the live view.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use npt_bulk::{Config, Proto, Target, UdpRate, Ways, MAX_STREAMS};
use npt_result::bulk::BulkBody;
use npt_result::workload::Progress;
use npt_result::Document;

use crate::execute::{execute, Lines, Options, RunCommand};
use crate::flags::duration::{self, DurationArgs};
use crate::flags::segment::Segment;
use crate::flags::timing::positive;
use crate::usage;

#[derive(Args, Debug)]
#[command(after_help = crate::execute::EXIT_CODES)]
#[command(mut_args(duration::says("How long to measure (e.g. 10s, 1m)", Some("10s"))))]
#[command(mut_args(duration::as_iperf3))]
pub struct BulkArgs {
    /// tcp://HOST:PORT, quic://HOST:PORT (streams) or udp://HOST:PORT (at --rate) of `npt serve`.
    #[arg(value_name = "TARGET")]
    pub target: String,
    /// Streams each way (TCP connections or QUIC streams), 1 to 1024.
    #[arg(long, short = 'P', value_name = "N", default_value_t = 1)]
    pub streams: u32,
    /// down (the server sends), up (this host sends) or both; UDP: up or down (down needs
    /// --token, or a server on loopback).
    #[arg(long, value_name = "up|down|both", value_parser = ["up", "down", "both"])]
    pub direction: Option<String>,
    #[command(flatten)]
    pub duration: DurationArgs,
    /// Length of one interval line and record.
    #[arg(
        long,
        short = 'i',
        value_name = "DUR",
        default_value = "1s",
        allow_hyphen_values = true
    )]
    pub interval: String,
    /// The rate, bits/s with a unit (e.g. 50mbit, 1.5gbit, 800kbit): UDP's to send at
    /// (required); on tcp:// and quic:// each stream's pace, payload bits/s, as iperf3's -b
    /// (-P 4 --rate 5mbit moves up to 20 Mbit/s each way; a download is paced by npt serve)
    /// [default for streams: as fast as the path goes].
    #[arg(long, short = 'b', value_name = "RATE")]
    pub rate: Option<String>,
    /// UDP: datagram size in bytes, npt header included (88 to 65507).
    #[arg(long, short = 's', value_name = "BYTES")]
    pub size: Option<usize>,
    /// Connect, handshake and the first answer must each come within this.
    #[arg(
        long,
        value_name = "DUR",
        default_value = "5s",
        allow_hyphen_values = true
    )]
    pub timeout: String,
    #[command(flatten)]
    pub auth: crate::flags::auth::TokenArgs,
    #[command(flatten)]
    pub trust: crate::flags::trust::TrustArgs,
    /// tcp://: this host's TCP congestion control on the streams it sends (e.g. cubic, bbr;
    /// one the kernel offers), as iperf3's -C; the result reports what the kernel ran [default:
    /// the system's]. Not with --direction down: the server's governs a download.
    #[arg(long, short = 'C', value_name = "NAME")]
    pub congestion: Option<String>,
    /// Worker threads moving the streams, 1 to 64 [default: 1 for tcp://; quic://: 2, or fewer
    /// CPUs or streams].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub output: crate::flags::output::OutputArgs,
    #[command(flatten)]
    pub source: crate::flags::source::SourceArgs,
    // The shared groups go here, one `#[command(flatten)]` each (a congestion-control group,
    // `--congestion`, belongs beside these).
    #[command(flatten)]
    pub via: crate::flags::via::ViaArgs,
    #[command(flatten)]
    pub segment: crate::flags::segment::SegmentArgs,
    #[command(flatten)]
    pub metrics: crate::flags::metrics::MetricsArgs,
}

/// The flags, validated into the engine's config; errors name the flag.
pub fn config(a: &BulkArgs) -> anyhow::Result<Config> {
    a.metrics.check()?;
    let target = Target::parse(&a.target).map_err(|e| usage!("{e}"))?;
    if !(1..=MAX_STREAMS).contains(&a.streams) {
        return Err(usage!(
            "--streams must be 1 to {MAX_STREAMS}, got {}",
            a.streams
        ));
    }
    let udp = target.proto == Proto::Udp;
    let ways = match (a.direction.as_deref(), udp) {
        (None, false) | (Some("down"), false) => Ways::Down,
        (Some("up"), false) => Ways::Up,
        (Some("both"), false) => Ways::Both,
        (None | Some("up"), true) => Ways::Up,
        (Some("down"), true) => Ways::Down,
        (Some("both"), true) => {
            return Err(usage!(
                "--direction both: UDP runs one way at a time (a down flow is pulled by \
                 requests that go up, and a full up direction would drop them and read as down \
                 loss); measure each way on its own"
            ))
        }
        (Some(d), _) => return Err(usage!("--direction must be up, down or both, got {d:?}")),
    };
    let duration = a.duration.get();
    if duration.is_zero() {
        return Err(usage!("--duration must be positive"));
    }
    let interval = positive("--interval", &a.interval)?;
    let timeout = positive("--timeout", &a.timeout)?;
    let udp_rate = if udp {
        if a.streams != 1 {
            return Err(usage!(
                "--streams is for tcp:// and quic://; UDP runs one flow"
            ));
        }
        let Some(r) = &a.rate else {
            return Err(usage!("udp:// needs --rate (e.g. --rate 50mbit)"));
        };
        let rate = crate::usage::rate_flag("--rate", r)?;
        let size = a.size.unwrap_or(1200);
        let min = npt_wire::bulk::REPLY_LEN;
        if !(min..=65_507).contains(&size) {
            return Err(usage!(
                "--size {size} must be between {min} and 65507 bytes"
            ));
        }
        Some(UdpRate {
            rate_bps: rate.as_bits_per_sec() as f64,
            size,
        })
    } else {
        if a.size.is_some() {
            return Err(usage!(
                "--size is for udp:// (streams write what TCP and QUIC segment)"
            ));
        }
        None
    };
    // Streams: each one's pace, when asked.
    let pace = match (&a.rate, udp) {
        (Some(r), false) => Some(crate::usage::rate_flag("--rate", r)?.as_bits_per_sec() as f64),
        _ => None,
    };
    let congestion = match &a.congestion {
        None => None,
        Some(_) if target.proto != Proto::Tcp => {
            return Err(usage!("--congestion is for tcp:// (TCP_CONGESTION)"))
        }
        Some(_) if ways == Ways::Down => {
            return Err(usage!(
                "--congestion sets this host's sending streams; a download (--direction down) \
                 is sent by the server with its own: use --direction up or both"
            ))
        }
        Some(cc) => Some(crate::usage::congestion_flag("--congestion", cc)?),
    };
    let token = a.auth.get()?.map(str::to_string);
    let via = a.via.resolve(udp)?;
    if via.is_some() && target.proto == Proto::Quic {
        return Err(usage!(
            "--via: npt bulk goes through a proxy over tcp:// and udp:// (SOCKS5), not quic://"
        ));
    }
    let quic = target.proto == Proto::Quic;
    let trust = a
        .trust
        .resolve(crate::flags::trust::Quic::when(quic, "the server's"))?;
    let source = a
        .source
        .for_target("bulk", &target.host, quic, via.is_some())?;
    Ok(Config {
        target,
        streams: a.streams,
        ways,
        duration,
        interval,
        udp: udp_rate,
        rate_bps: pace,
        token,
        trust,
        via,
        timeout,
        congestion,
        threads: a.threads.map(usize::from),
        source,
    })
}

pub fn run(a: BulkArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&a)?;
    let mut o = Options::new(&a.output);
    o.segment = &a.segment;
    o.metrics = &a.metrics;
    o.check()?;
    o.notices
        .extend(crate::flags::via::bulk_fragment_notice("--size", &cfg));
    o.labels = vec![
        ("protocol", cfg.target.proto.name().to_string()),
        ("target", cfg.target.to_string()),
    ];
    let mut text = o.text.writer();
    let what = match cfg.udp {
        Some(u) => format!(
            "udp {} at {} in {} B datagrams",
            cfg.ways.name(),
            npt_report::text::bits(u.rate_bps),
            u.size
        ),
        None => format!(
            "{} {}, {} stream{} each way{}{}",
            cfg.target.proto.name(),
            cfg.ways.name(),
            cfg.streams,
            if cfg.streams == 1 { "" } else { "s" },
            cfg.rate_bps.map_or(String::new(), |r| format!(
                " paced at {} each ({} in all)",
                npt_report::text::bits(r),
                npt_report::text::bits(
                    r * f64::from(cfg.streams) * cfg.ways.directions().len() as f64
                )
            )),
            cfg.congestion
                .as_ref()
                .map_or(String::new(), |c| format!(", {c}")),
        ),
    };
    let via = cfg
        .via
        .as_ref()
        .map_or(String::new(), |v| format!(" via {v}"));
    writeln!(
        text,
        "BULK {}{via}: {what}, {:.1} s",
        cfg.target,
        cfg.duration.as_secs_f64()
    )?;
    text.flush()?;
    execute(cfg, o)
}

impl RunCommand for Config {
    /// An interval line on stdout as it runs (on stderr with `--json -`).
    const LINES: Lines = Lines::Report;

    /// Streams (or a UDP flow's rate) split over the parts.
    fn split(&mut self, seg: &Segment) -> anyhow::Result<()> {
        seg.apply_bulk(self)
    }

    fn live(&self) -> Option<crate::execute::live::Spec> {
        Some(crate::execute::live::Spec {
            title: format!(
                "npt bulk {} — {}",
                self.target,
                match self.udp {
                    Some(u) => format!(
                        "udp {} at {}",
                        self.ways.name(),
                        npt_report::text::bits(u.rate_bps)
                    ),
                    None => format!("{} x {}", self.ways.name(), self.streams),
                }
            ),
            rate_unit: "Mbit/s",
            duration: Some(self.duration),
        })
    }

    /// The view's rate is the interval's goodput, both ways together.
    fn sample(p: &Progress<'_>) -> crate::execute::live::Sample {
        let mut s = crate::execute::live::Sample::of(p);
        if let Some(b) = p.interval.bandwidth_bps {
            s.rate = (b.up + b.down) / 1e6;
        }
        s
    }

    fn line(p: &Progress<'_>) -> String {
        npt_report::text::bulk_interval_line(p.interval)
    }

    fn render(out: &mut dyn Write, doc: &Document<BulkBody>) -> std::io::Result<()> {
        npt_report::text::write_bulk(out, doc)
    }

    fn refused(body: &BulkBody) -> u64 {
        body.summary
            .udp
            .as_ref()
            .and_then(|u| u.refused_by_server)
            .unwrap_or(0)
    }

    /// Nothing arrived (every stream failed): the summary says it, no message.
    fn failed(body: &BulkBody) -> Option<&'static str> {
        let s = &body.summary;
        (s.failed_streams as usize >= body.streams.len() || s.goodput_mbps == 0.0).then_some("")
    }

    fn is_usage(e: &npt_bulk::BulkError) -> bool {
        matches!(
            e,
            npt_bulk::BulkError::Resolve(..) | npt_bulk::BulkError::BadTarget(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::testing::{self, flags};
    use std::time::Duration;

    fn cfg(args: &[&str]) -> anyhow::Result<Config> {
        config(&flags::<BulkArgs>(args)?)
    }

    fn usage_msg(args: &[&str]) -> String {
        testing::usage_msg(cfg(args))
    }

    /// `--duration` is the flag every timed subcommand shares (`-d`); iperf3's `-t` still
    /// takes every form it took before.
    #[test]
    fn duration_takes_d_and_iperf3s_t() {
        let t = "tcp://127.0.0.1:7";
        for (args, secs) in [
            (&[t][..], 10),
            (&[t, "-t", "10"][..], 10),
            (&[t, "-t", "20s"][..], 20),
            (&[t, "-t30"][..], 30),
            (&[t, "-t", "1m"][..], 60),
            (&[t, "-d", "5s"][..], 5),
            (&[t, "--duration=2.5"][..], 2),
        ] {
            let c = cfg(args).unwrap();
            assert_eq!(c.duration.as_secs(), secs, "{args:?}");
        }
        assert!(flags::<BulkArgs>(&[t, "-t", "xyz"]).is_err());
        assert!(usage_msg(&[t, "-t", "0"]).contains("--duration must be positive"));
    }

    #[test]
    fn defaults() {
        let c = cfg(&["tcp://127.0.0.1:7"]).unwrap();
        assert_eq!((c.streams, c.ways), (1, Ways::Down));
        assert_eq!(c.duration, Duration::from_secs(10));
        let c = cfg(&["udp://127.0.0.1:7", "--rate", "50mbit"]).unwrap();
        assert_eq!(c.ways, Ways::Up);
        assert_eq!(
            c.udp,
            Some(UdpRate {
                rate_bps: 50e6,
                size: 1200
            })
        );
        let c = cfg(&[
            "udp://127.0.0.1:7",
            "--rate",
            "5mbit",
            "--direction",
            "down",
        ])
        .unwrap();
        assert_eq!(c.ways, Ways::Down);
        let c = cfg(&["tcp://127.0.0.1:7", "-P", "1024", "--direction", "both"]).unwrap();
        assert_eq!((c.streams, c.ways), (1024, Ways::Both));
        assert_eq!(c.threads, None, "picked by protocol");
        let c = cfg(&["tcp://127.0.0.1:7", "--threads", "3"]).unwrap();
        assert_eq!(c.threads, Some(3));
        assert_eq!(
            (c.rate_bps, c.congestion),
            (None, None),
            "unpaced, the system's"
        );
    }

    /// iperf3's -b and -C: each stream's pace and this host's congestion control.
    #[test]
    fn streams_at_a_rate_with_a_congestion_control() {
        let c = cfg(&[
            "tcp://127.0.0.1:7",
            "-P",
            "4",
            "-b",
            "5mbit",
            "--direction",
            "up",
        ])
        .unwrap();
        assert_eq!((c.rate_bps, c.udp), (Some(5e6), None));
        let c = cfg(&["quic://127.0.0.1:7", "--insecure", "--rate", "1gbit"]).unwrap();
        assert_eq!(c.rate_bps, Some(1e9));
        let c = cfg(&["udp://127.0.0.1:7", "--rate", "5mbit"]).unwrap();
        assert_eq!(c.rate_bps, None, "UDP's rate is the flow's");
        let c = cfg(&["tcp://127.0.0.1:7", "-C", "cubic", "--direction", "both"]).unwrap();
        assert_eq!(c.congestion.as_deref(), Some("cubic"));
    }

    #[test]
    fn bad_flags_name_the_flag() {
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--streams", "0"]).contains("--streams"));
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--streams", "1025"]).contains("--streams"));
        for n in ["0", "65", "two"] {
            // clap refuses it (exit 2) and names the flag.
            let e = flags::<BulkArgs>(&["tcp://127.0.0.1:7", "--threads", n]).unwrap_err();
            assert!(e.to_string().contains("--threads"), "{e}");
        }
        assert!(usage_msg(&["udp://127.0.0.1:7", "--rate", "fast"]).contains("--rate"));
        assert!(usage_msg(&["udp://127.0.0.1:7", "--rate", "0"]).contains("--rate"));
        assert!(usage_msg(&["udp://127.0.0.1:7"]).contains("--rate"));
        assert!(
            usage_msg(&["udp://127.0.0.1:7", "--rate", "1mbit", "--size", "20"]).contains("--size")
        );
        assert!(usage_msg(&[
            "udp://127.0.0.1:7",
            "--rate",
            "1mbit",
            "--direction",
            "both"
        ])
        .contains("--direction"));
        // A direction outside up|down|both is refused by the parser itself (exit 2, naming
        // the flag and the possible values, which completions also offer).
        let e = flags::<BulkArgs>(&["tcp://127.0.0.1:7", "--direction", "sideways"]).unwrap_err();
        assert!(e.to_string().contains("--direction"), "{e}");
        assert_eq!(e.exit_code(), 2);
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--rate", "5"]).contains("--rate 5: give a unit"));
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--rate", "0mbit"]).contains("--rate"));
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--size", "1200"]).contains("--size"));
        let cc = ["tcp://127.0.0.1:7", "--direction", "up", "--congestion"];
        assert!(usage_msg(&[&cc[..], &["no-such-cc"]].concat())
            .contains("--congestion \"no-such-cc\": this kernel offers"));
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--congestion", "cubic"])
            .contains("--congestion sets this host's sending streams"));
        assert!(
            usage_msg(&["quic://127.0.0.1:7", "--insecure", "-C", "cubic"])
                .contains("--congestion")
        );
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--duration", "0"]).contains("--duration"));
        assert!(usage_msg(&["quic://127.0.0.1:7"]).contains("--insecure"));
        assert!(
            usage_msg(&["quic://127.0.0.1:7", "--insecure", "--via", "http://p:1"])
                .contains("--via")
        );
        assert!(usage_msg(&["127.0.0.1:7"]).contains("tcp://"));
        let udp_via = ["udp://127.0.0.1:7", "--rate", "1mbit", "--via"];
        let http = [&udp_via[..], &["http://p:1"]].concat();
        assert!(usage_msg(&http).contains("HTTP proxy cannot carry UDP"));
        let keyed = [&udp_via[..], &["socks5://p:1", "--token", "s"]].concat();
        assert!(
            cfg(&keyed).unwrap().token.is_some(),
            "--token through SOCKS5 UDP"
        );
        let c = cfg(&[&udp_via[..], &["socks5://p:1"]].concat()).unwrap();
        assert!(c.via.is_some(), "UDP through SOCKS5");
    }
}
