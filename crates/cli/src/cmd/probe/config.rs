//! `npt probe`'s flags (or the line tester's XML config) checked into a `ProbeConfig`, one
//! named step after another ([`config`] reads as the list). An XML config, when given, sets
//! the values; any flag given on the command line overrides it. Every value is checked here
//! and an error names the flag (or XML attribute).

use std::time::Duration;

use npt_client::source::Source;
use npt_probe::xml::{self, XmlConfig, XmlLog, XmlPacing, XmlStop};
use npt_probe::LoadPlan;
use npt_probe::{PacingSpec, ProbeConfig, Proto, RxStamp, StageSpec};
use npt_proxy::Via;

use crate::cmd::probe::args::{Mode, ProbeArgs, RxStampArg};
use crate::cmd::probe::checks::check_memory;
use crate::cmd::probe::{framing, owd, target, under_load};
use crate::usage;

/// Turns flags (and the XML config, if any) into a validated run config, and what to say
/// before the run.
pub fn config(a: &ProbeArgs) -> anyhow::Result<(ProbeConfig, Vec<String>)> {
    a.metrics.check()?;
    let mut notices = Vec::new();
    let x = read_xml(a, &mut notices)?;
    let (proto, hostport) = target_of(a, x.as_ref())?;
    let via = a.via.resolve(proto.is_udp())?;
    let rx_stamp = receive(a, proto)?;
    // The target's literal is checked as it resolves (below).
    let source = a.source.for_target("probe", "", false, via.is_some())?;
    let addr = match target::resolve(&hostport, "target", &source) {
        Ok(addr) => addr,
        // socks5h://: the proxy resolves the name; the port is all npt needs here.
        Err(_) if a.via.remote_dns() => target::unresolved(&hostport)?,
        Err(e) => return Err(e),
    };
    let pacing = pacing(a, x.as_ref())?;
    let (count, duration) = stop(a, x.as_ref())?;
    let (clients, threads) = clients(a, x.as_ref(), &mut notices)?;
    let (raw, stamp_key, size) = framing::framing(a, x.as_ref(), proto)?;
    if a.loss_timeout.is_zero() {
        return Err(usage!("--loss-timeout must be positive"));
    }
    let stage = stages(a, x.as_ref())?;
    a.auth.get()?;
    check_memory(clients, stage, a.loss_timeout, &pacing)?;
    let (under_load, count, duration) = load(a, via.as_ref(), &source, count, duration)?;
    if let (Some(v), true) = (&via, proto.is_udp()) {
        let (host, _) = npt_proxy::udp_flow::split_target(&hostport, addr);
        notices.extend(crate::flags::via::fragment_notice(
            "--size", v, addr, &host, size,
        ));
    }
    if let Some(plan) = &under_load {
        notices.extend(crate::flags::via::bulk_fragment_notice(
            "--load-size",
            &plan.bulk,
        ));
    }
    if a.owd && raw {
        return Err(usage!(
            "--owd needs npt serve's timestamps: --raw is round trips only"
        ));
    }
    let mark = reply_marking(a, &source, proto, raw)?;
    let resolved = (!addr.ip().is_unspecified()).then_some(addr);
    let clock = owd::assumption(resolved, via.as_ref().map(|v| v.host.as_str()), a.owd);
    let cfg = ProbeConfig {
        proto,
        target: hostport,
        addr,
        raw,
        token: a.auth.cloned(),
        stamp_key,
        size,
        fill: a.fill,
        verify: a.verify,
        pacing,
        loss_timeout: a.loss_timeout,
        count,
        duration,
        clients,
        threads,
        stage,
        behind_threshold: a.behind_threshold,
        via,
        under_load,
        rx_stamp,
        spin: a.spin,
        clock,
        source,
        mark,
        on_waiting: Default::default(),
    };
    Ok((cfg, notices))
}

/// The marking npt serve is asked to send its replies with (and to say what each request
/// arrived with): `--reply-dscp`/`--reply-ecn`, each by default what is sent; asked whenever
/// something is marked. Exit 2 naming the flag where no reply can carry it (TCP, `--raw`,
/// STAMP).
fn reply_marking(
    a: &ProbeArgs,
    source: &Source,
    proto: Proto,
    raw: bool,
) -> anyhow::Result<Option<u8>> {
    let asked = a.reply_dscp.is_some() || a.reply_ecn.is_some();
    if asked && (proto != Proto::Udp || raw) {
        let flag = if a.reply_dscp.is_some() {
            "--reply-dscp"
        } else {
            "--reply-ecn"
        };
        return Err(usage!(
            "{flag}: only npt serve's UDP replies can be asked for a marking (not TCP, --raw \
             or stamp://)"
        ));
    }
    if !asked && source.tos.is_none() {
        return Ok(None);
    }
    let sent = source.tos.unwrap_or(0);
    let dscp = match &a.reply_dscp {
        Some(d) => crate::flags::source::dscp(d)
            .map_err(|_| usage!("--reply-dscp {d}: must be 0 to 63, or EF, AFxy, CSx"))?,
        None => sent >> 2,
    };
    let ecn = match &a.reply_ecn {
        Some(e) => crate::flags::source::ecn_codepoint("--reply-ecn", e, true)?,
        None => sent & 3,
    };
    Ok(Some(dscp << 2 | ecn))
}

/// `--config FILE`: the line tester's XML, with a notice of what npt ignores in it.
fn read_xml(a: &ProbeArgs, notices: &mut Vec<String>) -> anyhow::Result<Option<XmlConfig>> {
    let Some(path) = &a.config else {
        return Ok(None);
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| usage!("--config {}: {e}", path.display()))?;
    let x = xml::parse(&text).map_err(|e| usage!("--config {}: {e}", path.display()))?;
    if !x.ignored.is_empty() {
        notices.push(format!(
            "config: ignored (no equivalent in npt, one sender loop per client): {}",
            x.ignored.join(", ")
        ));
    }
    Ok(Some(x))
}

/// The target's protocol and `HOST:PORT`: the argument, else the XML's.
fn target_of(a: &ProbeArgs, x: Option<&XmlConfig>) -> anyhow::Result<(Proto, String)> {
    match (&a.target, x) {
        (Some(t), _) => target::parse(t),
        (None, Some(x)) => Ok((
            if x.tcp { Proto::Tcp } else { Proto::Udp },
            if x.host.contains(':') {
                format!("[{}]:{}", x.host, x.port)
            } else {
                format!("{}:{}", x.host, x.port)
            },
        )),
        (None, None) => Err(usage!(
            "a target is required: npt probe udp://HOST:PORT (or --config FILE)"
        )),
    }
}

/// `--rx-stamp` and `--spin`. A TCP probe reads its clock after each read: the kernel stamp
/// and the spin are for the UDP driver (udp:// and stamp://).
fn receive(a: &ProbeArgs, proto: Proto) -> anyhow::Result<RxStamp> {
    let rx_stamp = match a.rx_stamp {
        None | Some(RxStampArg::User) => RxStamp::User,
        Some(RxStampArg::Kernel) if proto.is_udp() => RxStamp::Kernel,
        Some(RxStampArg::Kernel) => {
            return Err(usage!(
                "--rx-stamp kernel is for UDP; a TCP probe stamps a reply when its read returns"
            ))
        }
    };
    if a.spin && !proto.is_udp() {
        return Err(usage!("--spin is for UDP probes"));
    }
    Ok(rx_stamp)
}

/// `--mode` and its flags (`--ping-pong`, `--pps`, `--interval`, `--warmup`): flags first,
/// then the XML, then defaults; a flag of another mode is refused.
pub fn pacing(a: &ProbeArgs, x: Option<&XmlConfig>) -> anyhow::Result<PacingSpec> {
    let mode = a.mode.or(x.map(|x| match x.pacing {
        XmlPacing::Interval(_) => Mode::Interval,
        XmlPacing::OnSend { .. } => Mode::Rate,
        XmlPacing::OnRecv { .. } => Mode::Relay,
    }));
    if a.ping_pong {
        if matches!(a.mode, Some(m) if m != Mode::Relay) {
            return Err(usage!(
                "--ping-pong is relay pacing; it cannot be used with --mode"
            ));
        }
        if matches!(a.warmup, Some(w) if w != 1) {
            return Err(usage!(
                "--ping-pong keeps one message in flight; drop --warmup"
            ));
        }
    }
    let mode = if a.ping_pong {
        Mode::Relay
    } else {
        mode.unwrap_or(Mode::Rate)
    };
    let flag_for_other_mode = |given: bool, flag: &str, needs: &str| -> anyhow::Result<()> {
        if given {
            return Err(usage!("{flag} applies only to --mode {needs}"));
        }
        Ok(())
    };
    let xml_pacing = x.map(|x| x.pacing);
    Ok(match mode {
        Mode::Rate => {
            flag_for_other_mode(a.interval.is_some(), "--interval", "interval")?;
            flag_for_other_mode(
                a.warmup.is_some() || a.warmup_interval.is_some(),
                "--warmup/--warmup-interval",
                "relay",
            )?;
            let pps = a
                .pps
                .or(match xml_pacing {
                    Some(XmlPacing::OnSend { maxpps }) => Some(maxpps),
                    _ => None,
                })
                .unwrap_or(100.0);
            let pps = crate::usage::pps_flag("--pps", pps, 10_000_000.0)?;
            PacingSpec::Rate { pps }
        }
        Mode::Interval => {
            flag_for_other_mode(a.pps.is_some(), "--pps", "rate")?;
            flag_for_other_mode(
                a.warmup.is_some() || a.warmup_interval.is_some(),
                "--warmup/--warmup-interval",
                "relay",
            )?;
            let (interval, source) = match (a.interval, xml_pacing) {
                (Some(d), _) => (d, "--interval"),
                (None, Some(XmlPacing::Interval(d))) => (d, "--config: <relay interval>"),
                _ => (Duration::from_millis(10), "--interval"),
            };
            if interval.is_zero() {
                return Err(usage!(
                    "{source} 0: must be positive (0 would send as fast as the CPU allows, for \
                     ever); for a fixed rate use --mode rate --pps N"
                ));
            }
            PacingSpec::Interval { interval }
        }
        Mode::Relay => {
            flag_for_other_mode(a.pps.is_some(), "--pps", "rate")?;
            flag_for_other_mode(a.interval.is_some(), "--interval", "interval")?;
            let (xw, xi) = match xml_pacing {
                Some(XmlPacing::OnRecv { warmup, interval }) => (Some(warmup), Some(interval)),
                _ => (None, None),
            };
            let warmup = if a.ping_pong {
                1
            } else {
                a.warmup.or(xw).unwrap_or(128)
            };
            if warmup == 0 {
                return Err(usage!("--warmup must be at least 1 (packets in flight)"));
            }
            PacingSpec::Relay {
                warmup,
                warmup_interval: a.warmup_interval.or(xi).unwrap_or(Duration::from_millis(1)),
            }
        }
    })
}

/// `--count` and `--duration` (the XML's stop when neither is given).
fn stop(a: &ProbeArgs, x: Option<&XmlConfig>) -> anyhow::Result<(Option<u64>, Option<Duration>)> {
    let (mut count, mut duration) = (a.count, a.duration.duration);
    if count.is_none() && duration.is_none() {
        match x.map(|x| x.stop) {
            Some(XmlStop::Count(n)) => count = Some(n),
            Some(XmlStop::Time(d)) => duration = Some(d),
            _ => {}
        }
    }
    if count == Some(0) {
        return Err(usage!("--count must be at least 1"));
    }
    if duration == Some(Duration::ZERO) {
        return Err(usage!("--duration must be positive"));
    }
    Ok((count, duration))
}

/// `--clients` and `--threads` (no more threads than clients, said so).
fn clients(
    a: &ProbeArgs,
    x: Option<&XmlConfig>,
    notices: &mut Vec<String>,
) -> anyhow::Result<(u32, u32)> {
    let clients = a.clients.or(x.map(|x| x.clients)).unwrap_or(1);
    if clients == 0 || clients > 10_000 {
        return Err(usage!("--clients {clients}: must be between 1 and 10000"));
    }
    let cores = npt_result::cpus();
    let cores = u32::try_from(cores).unwrap_or(u32::MAX);
    let threads = a.threads.unwrap_or(clients.min(cores));
    if threads == 0 {
        return Err(usage!("--threads must be at least 1"));
    }
    if threads > clients {
        notices.push(format!(
            "--threads {threads} > --clients {clients}: using {clients}"
        ));
    }
    Ok((clients, threads.min(clients)))
}

/// `--report-every` or `--report-every-packets` (the XML's log, else every second).
fn stages(a: &ProbeArgs, x: Option<&XmlConfig>) -> anyhow::Result<StageSpec> {
    if a.report_every.is_some() && a.report_every_packets.is_some() {
        return Err(usage!(
            "--report-every and --report-every-packets cannot be used together"
        ));
    }
    Ok(match (a.report_every, a.report_every_packets) {
        (Some(d), None) if d.is_zero() => return Err(usage!("--report-every must be positive")),
        (Some(d), None) => StageSpec::Time(d),
        (None, Some(0)) => return Err(usage!("--report-every-packets must be at least 1")),
        (None, Some(p)) => StageSpec::Packets(p),
        _ => match x.and_then(|x| x.log) {
            Some(XmlLog::Count(p)) => StageSpec::Packets(p),
            Some(XmlLog::Time(d)) => StageSpec::Time(d),
            None => StageSpec::Time(Duration::from_secs(1)),
        },
    })
}

/// `--under-load`: the load's plan, whose phases then set the run's length (no `--count` or
/// `--duration` beside it).
fn load(
    a: &ProbeArgs,
    via: Option<&Via>,
    source: &Source,
    count: Option<u64>,
    duration: Option<Duration>,
) -> anyhow::Result<(Option<LoadPlan>, Option<u64>, Option<Duration>)> {
    let mut plan = under_load::plan(&a.load, a.auth.token.as_ref(), via)?;
    let Some(p) = plan.as_mut() else {
        return Ok((None, count, duration));
    };
    // `-4`/`-6` hold for the load's connections too; its packets stay unmarked.
    p.bulk.source.family = source.family;
    if source.bind.is_some() {
        return Err(usage!(
            "--bind does not go with --under-load: the load's connections would leave from \
             another address than the probe's (--dscp marks the probe's packets only, as a \
             QoS test wants)"
        ));
    }
    if a.count.is_some() || a.duration.duration.is_some() {
        return Err(usage!(
            "--count and --duration do not go with --under-load: the run is \
             --load-idle + --load-duration + --load-recovery ({:?})",
            p.total()
        ));
    }
    let total = p.total();
    Ok((plan, None, Some(total)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::probe::render::banner;
    use npt_wire::Fill;

    fn args(target: &str) -> ProbeArgs {
        ProbeArgs {
            target: Some(target.to_string()),
            fill: Fill::Random,
            loss_timeout: Duration::from_secs(1),
            behind_threshold: Duration::from_millis(1),
            ..ProbeArgs::default()
        }
    }

    fn err(a: &ProbeArgs) -> String {
        config(a).unwrap_err().to_string()
    }

    #[test]
    fn defaults() {
        let (c, _) = config(&args("udp://127.0.0.1:7777")).unwrap();
        assert_eq!(c.proto, Proto::Udp);
        assert_eq!(c.pacing, PacingSpec::Rate { pps: 100.0 });
        assert_eq!((c.size, c.clients, c.raw), (64, 1, false));
        assert_eq!(c.stage, StageSpec::Time(Duration::from_secs(1)));
        assert_eq!((c.count, c.duration), (None, None));
    }

    #[test]
    fn interval_zero_is_refused_and_ping_pong_is_relay_with_one_in_flight() {
        let mut a = args("udp://127.0.0.1:7777");
        a.mode = Some(Mode::Interval);
        a.interval = Some(Duration::ZERO);
        assert!(
            err(&a).contains("--interval 0: must be positive"),
            "{}",
            err(&a)
        );
        let mut a = args("tcp://127.0.0.1:7777");
        a.ping_pong = true;
        let (c, _) = config(&a).unwrap();
        assert!(matches!(c.pacing, PacingSpec::Relay { warmup: 1, .. }));
        a.mode = Some(Mode::Rate);
        assert!(err(&a).contains("--ping-pong"));
    }

    /// The stop in the banner reads as a phrase in each case (it read `stop after until
    /// Ctrl-C` with neither --count nor --duration).
    #[test]
    fn banner_says_when_the_probe_stops() {
        let mut a = args("udp://127.0.0.1:7777");
        let b = banner(&config(&a).unwrap().0);
        assert!(b.ends_with(", 1 client(s), run until Ctrl-C"), "{b}");
        a.count = Some(10);
        let b = banner(&config(&a).unwrap().0);
        assert!(b.ends_with(", stop after 10 packets"), "{b}");
        a.duration.duration = Some(Duration::from_secs(5));
        let b = banner(&config(&a).unwrap().0);
        assert!(b.ends_with(", stop after 10 packets or 5s"), "{b}");
    }

    #[test]
    fn bad_targets_name_the_problem() {
        assert!(err(&args("127.0.0.1:7777")).contains("expected udp://HOST:PORT"));
        assert!(err(&args("http://127.0.0.1:7777")).contains("unsupported scheme"));
        assert!(err(&args("udp://127.0.0.1")).contains("missing :PORT"));
        assert!(err(&args("udp://127.0.0.1:99999")).contains("bad port"));
        assert!(err(&args("udp://no-such-host.invalid:7")).contains("cannot resolve host"));
    }

    #[test]
    fn flags_for_another_mode_are_refused() {
        let mut a = args("udp://127.0.0.1:7");
        a.interval = Some(Duration::from_millis(5));
        assert!(err(&a).contains("--interval applies only to --mode interval"));
        a.mode = Some(Mode::Relay);
        assert!(err(&a).contains("--interval"));
        let mut a = args("udp://127.0.0.1:7");
        a.mode = Some(Mode::Relay);
        a.pps = Some(5.0);
        assert!(err(&a).contains("--pps applies only to --mode rate"));
    }

    #[test]
    fn sizes_and_counts() {
        let mut a = args("udp://127.0.0.1:7");
        a.size = Some(40);
        assert!(err(&a).contains("--size 40"));
        a.raw = true;
        assert!(config(&a).is_ok(), "raw header is 24 bytes");
        a.size = Some(70_000);
        assert!(err(&a).contains("--size"));
        let mut a = args("udp://127.0.0.1:7");
        a.count = Some(0);
        assert!(err(&a).contains("--count"));
        let mut a = args("udp://127.0.0.1:7");
        a.clients = Some(0);
        assert!(err(&a).contains("--clients"));
        let mut a = args("udp://127.0.0.1:7");
        a.raw = true;
        a.auth.token = Some("x".into());
        assert!(err(&a).contains("--token"));
    }

    #[test]
    fn stamp_targets_size_and_key() {
        let (c, _) = config(&args("stamp://127.0.0.1:862")).unwrap();
        assert_eq!((c.proto, c.size, c.raw), (Proto::Stamp, 44, false));
        let mut a = args("stamp://127.0.0.1:862");
        a.stamp_key = Some("000102030405060708090a0b0c0d0e0f".into());
        let (c, _) = config(&a).unwrap();
        assert_eq!(c.size, 112, "the authenticated packet");
        assert!(c.stamp_key.is_some());
        a.size = Some(113);
        assert!(err(&a).contains("--size 113: a STAMP test packet is 112 bytes (authenticated)"));
        a.size = Some(116);
        assert!(config(&a).is_ok(), "room for the padding TLV");
        a.stamp_key = Some("0001".into());
        assert!(err(&a).contains("--stamp-key: 2 bytes"), "{}", err(&a));
        let mut a = args("stamp://127.0.0.1:862");
        a.size = Some(45);
        assert!(err(&a).contains("--size 45"));
        a.size = None;
        a.raw = true;
        assert!(err(&a).contains("a stamp:// target speaks STAMP"));
        let mut a = args("stamp://127.0.0.1:862");
        a.auth.token = Some("s".into());
        assert!(err(&a).contains("--raw and --token"));
        let mut a = args("udp://127.0.0.1:7777");
        a.stamp_key = Some("000102030405060708090a0b0c0d0e0f".into());
        assert!(err(&a).contains("--stamp-key is for stamp://"));
    }

    #[test]
    fn xml_config_and_flag_override() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/ConfigTemplate.xml"
        );
        let mut a = ProbeArgs {
            config: Some(path.into()),
            ..args("x")
        };
        a.target = None;
        let (c, notices) = config(&a).unwrap();
        assert_eq!(
            c.pacing,
            PacingSpec::Relay {
                warmup: 50_000,
                warmup_interval: Duration::from_millis(10)
            }
        );
        assert_eq!(c.count, Some(1_000_000));
        assert!(
            c.raw,
            "the line tester's dataprotocol raw means a plain echo server"
        );
        assert_eq!(c.stage, StageSpec::Packets(100_000));
        assert_eq!(c.addr, "127.0.0.1:7777".parse().unwrap());
        assert!(notices[0].contains("threadsperclient=8"));
        a.count = Some(10);
        a.warmup = Some(4);
        let (c, _) = config(&a).unwrap();
        assert_eq!(c.count, Some(10));
        assert_eq!(
            c.pacing,
            PacingSpec::Relay {
                warmup: 4,
                warmup_interval: Duration::from_millis(10)
            }
        );
        a.config = Some("/nonexistent.xml".into());
        assert!(err(&a).contains("--config /nonexistent.xml"));
    }
}
