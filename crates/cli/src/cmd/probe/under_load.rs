//! `npt probe --under-load`: the load's flags, validated into the probe's [`LoadPlan`] (errors
//! name the flag), and the check that the load target accepts a connection before the run
//! starts, so that a refusing load target is a usage error (exit 2) and not a run whose loaded
//! phase silently had no load.

use std::net::TcpStream;
use std::time::Duration;

use clap::Args;
use npt_bulk::{Proto, QuicTrust, Target, UdpRate, Ways, MAX_STREAMS};
use npt_probe::LoadPlan;

use crate::usage;
use crate::usage::parse_duration;

/// The load flags (all of them need `--under-load`).
#[derive(Args, Debug, Default)]
pub struct LoadArgs {
    /// Run bulk streams to this tcp://HOST:PORT or quic://HOST:PORT, or UDP at --load-rate to
    /// udp://HOST:PORT (`npt serve`; may be the probe's own target) in a loaded phase between
    /// an idle and a recovery phase, and report the RTT of each phase, the increase under load
    /// and the responsiveness (RPM).
    #[arg(long, value_name = "URL")]
    pub under_load: Option<String>,
    /// Load streams each way, 1 to 1024 [default: 4].
    #[arg(long, value_name = "N")]
    pub load_streams: Option<u32>,
    /// Which way the load goes: down (the server sends), up or both [default: down; a udp://
    /// load: up, or down (npt serve sends UDP down only to --token sessions and loopback)].
    #[arg(long, value_name = "up|down|both", value_parser = ["up", "down", "both"])]
    pub load_direction: Option<String>,
    /// The load's rate, bits/s with a unit (e.g. 20mbit): a udp:// load's (required for it;
    /// datagrams, IP and UDP headers not counted), or the pace of each stream of a tcp:// or
    /// quic:// load (payload, as iperf3's -b: --load-streams 4 --load-rate 5mbit moves up to
    /// 20 Mbit/s each way) [default for streams: as fast as the path goes].
    #[arg(long, value_name = "RATE")]
    pub load_rate: Option<String>,
    /// udp:// load: datagram size in bytes, IP and UDP headers not counted [default: 1200].
    #[arg(long, value_name = "BYTES")]
    pub load_size: Option<usize>,
    /// Length of the loaded phase [default: 10s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub load_duration: Option<Duration>,
    /// Length of the idle phase before the load [default: 5s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub load_idle: Option<Duration>,
    /// Length of the recovery phase after the load [default: 5s].
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub load_recovery: Option<Duration>,
    /// tcp:// load: this host's TCP congestion control for the load's streams (e.g. cubic,
    /// bbr; one the kernel offers) [default: the system's]. It paces what this host sends
    /// (`--load-direction up`); a download is paced by the server's.
    #[arg(long, value_name = "NAME")]
    pub load_congestion: Option<String>,
    /// quic:// load: trust the certificates in this PEM file.
    #[arg(long, value_name = "FILE", conflicts_with = "load_insecure")]
    pub load_ca: Option<std::path::PathBuf>,
    /// quic:// load: accept any certificate.
    #[arg(long)]
    pub load_insecure: bool,
}

impl LoadArgs {
    /// The load flags given without `--under-load`, by name.
    fn given(&self) -> Option<&'static str> {
        [
            (self.load_streams.is_some(), "--load-streams"),
            (self.load_direction.is_some(), "--load-direction"),
            (self.load_rate.is_some(), "--load-rate"),
            (self.load_size.is_some(), "--load-size"),
            (self.load_duration.is_some(), "--load-duration"),
            (self.load_idle.is_some(), "--load-idle"),
            (self.load_recovery.is_some(), "--load-recovery"),
            (self.load_congestion.is_some(), "--load-congestion"),
            (self.load_ca.is_some(), "--load-ca"),
            (self.load_insecure, "--load-insecure"),
        ]
        .into_iter()
        .find_map(|(g, n)| g.then_some(n))
    }
}

fn positive(flag: &str, d: Option<Duration>, default: Duration) -> anyhow::Result<Duration> {
    let d = d.unwrap_or(default);
    if d.is_zero() {
        return Err(usage!("{flag} must be positive"));
    }
    Ok(d)
}

/// The three phases' lengths — idle, loaded, recovery — from their flags, or 5 s, 10 s and
/// 5 s (`npt compare` reads a child's length from them too).
pub fn phases(a: &LoadArgs) -> anyhow::Result<[Duration; 3]> {
    let duration = positive("--load-duration", a.load_duration, Duration::from_secs(10))?;
    let idle = positive("--load-idle", a.load_idle, Duration::from_secs(5))?;
    let recovery = positive("--load-recovery", a.load_recovery, Duration::from_secs(5))?;
    Ok([idle, duration, recovery])
}

/// The load plan, or `None` without `--under-load`. `token` and `via` are the probe's: the
/// load goes the same way (`--via` for tcp:// and, through SOCKS5, udp://).
pub fn plan(
    a: &LoadArgs,
    token: Option<&String>,
    via: Option<&npt_proxy::Via>,
) -> anyhow::Result<Option<LoadPlan>> {
    let Some(url) = &a.under_load else {
        if let Some(flag) = a.given() {
            return Err(usage!("{flag} needs --under-load URL"));
        }
        return Ok(None);
    };
    let target = Target::parse(url).map_err(|e| usage!("--under-load {url:?}: {e}"))?;
    let udp = target.proto == Proto::Udp;
    let streams = match (a.load_streams, udp) {
        (None, true) => 1,
        (Some(n), true) if n != 1 => {
            return Err(usage!(
                "--load-streams is for tcp:// and quic://; a udp:// load is one flow"
            ))
        }
        (n, _) => n.unwrap_or(4),
    };
    if !(1..=MAX_STREAMS).contains(&streams) {
        return Err(usage!(
            "--load-streams must be 1 to {MAX_STREAMS}, got {streams}"
        ));
    }
    let ways = match (a.load_direction.as_deref(), udp) {
        (None | Some("down"), false) => Ways::Down,
        (Some("up"), false) | (None | Some("up"), true) => Ways::Up,
        (Some("both"), false) => Ways::Both,
        (Some("down"), true) => Ways::Down,
        (Some("both"), true) => {
            return Err(usage!(
                "--load-direction both: a udp:// load is one flow, up or down (a down flow is \
                 pulled by requests that go up, which a full up direction would drop); load \
                 both ways with tcp://"
            ))
        }
        (Some(d), _) => {
            return Err(usage!(
                "--load-direction must be up, down or both, got {d:?}"
            ))
        }
    };
    let (udp_rate, pace) = rates(a, udp)?;
    let [idle, duration, recovery] = phases(a)?;
    if via.is_some() && target.proto == Proto::Quic {
        return Err(usage!(
            "--via: the load goes through a proxy over tcp:// and udp:// (SOCKS5), not {url}"
        ));
    }
    if (a.load_ca.is_some() || a.load_insecure) && target.proto != Proto::Quic {
        return Err(usage!(
            "--load-ca and --load-insecure are for a quic:// load"
        ));
    }
    if let Some(cc) = &a.load_congestion {
        if target.proto != Proto::Tcp {
            return Err(usage!("--load-congestion is for a tcp:// load"));
        }
        crate::usage::congestion_flag("--load-congestion", cc)?;
    }
    let trust = match (&a.load_ca, a.load_insecure) {
        (Some(f), _) => QuicTrust::from_pem_file(f).map_err(|e| usage!("--load-ca: {e}"))?,
        (None, true) => QuicTrust::Insecure,
        (None, false) if target.proto == Proto::Quic => {
            return Err(usage!(
                "--under-load quic://… needs --load-ca FILE or --load-insecure"
            ))
        }
        (None, false) => QuicTrust::default(),
    };
    Ok(Some(LoadPlan {
        bulk: npt_bulk::Config {
            target,
            streams,
            ways,
            duration,
            interval: Duration::from_secs(1),
            udp: udp_rate,
            rate_bps: pace,
            token: token.cloned(),
            trust,
            via: via.cloned(),
            timeout: Duration::from_secs(5),
            congestion: a.load_congestion.clone(),
            threads: None,
            source: Default::default(),
        },
        idle,
        recovery,
    }))
}

/// The load's rates: a udp:// load's rate and size (`--load-rate` required, `--load-size` at
/// least a report's length), or the pace of each stream of a tcp:// or quic:// load
/// (`--load-rate`, optional; `--load-size` refused).
fn rates(a: &LoadArgs, udp: bool) -> anyhow::Result<(Option<UdpRate>, Option<f64>)> {
    if !udp {
        if a.load_size.is_some() {
            return Err(usage!(
                "--load-size is for a udp:// load (streams write what TCP and QUIC segment)"
            ));
        }
        let pace = match &a.load_rate {
            Some(r) => Some(crate::usage::rate_flag("--load-rate", r)?.as_bits_per_sec() as f64),
            None => None,
        };
        return Ok((None, pace));
    }
    let Some(r) = &a.load_rate else {
        return Err(usage!(
            "--under-load udp://… needs --load-rate (e.g. --load-rate 20mbit)"
        ));
    };
    let rate = crate::usage::rate_flag("--load-rate", r)?;
    let size = a.load_size.unwrap_or(1200);
    let min = npt_wire::bulk::REPLY_LEN;
    if !(min..=65_507).contains(&size) {
        return Err(usage!(
            "--load-size {size} must be between {min} and 65507 bytes"
        ));
    }
    let udp = UdpRate {
        rate_bps: rate.as_bits_per_sec() as f64,
        size,
    };
    Ok((Some(udp), None))
}

/// A tcp:// load target without a proxy must accept a connection now; one that refuses or
/// does not resolve is a usage error naming `--under-load`. (Through `--via`, or over QUIC,
/// the streams' own errors are counted in `under_load.load_errors` instead.)
pub fn check_reachable(plan: &LoadPlan) -> anyhow::Result<()> {
    let t = &plan.bulk.target;
    if t.proto != Proto::Tcp || plan.bulk.via.is_some() {
        return Ok(());
    }
    let addrs = t.resolve().map_err(|e| usage!("--under-load {t}: {e}"))?;
    let mut last = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, plan.bulk.timeout) {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    Err(usage!(
        "--under-load {t}: {}",
        last.map_or_else(|| "no address".to_string(), |e| e.to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(url: &str) -> LoadArgs {
        LoadArgs {
            under_load: Some(url.into()),
            ..LoadArgs::default()
        }
    }

    fn err(a: &LoadArgs) -> String {
        plan(a, None, None).unwrap_err().to_string()
    }

    #[test]
    fn defaults_and_phases() {
        let p = plan(&args("tcp://127.0.0.1:7777"), None, None)
            .unwrap()
            .unwrap();
        assert_eq!((p.bulk.streams, p.bulk.ways), (4, Ways::Down));
        assert_eq!(p.total(), Duration::from_secs(20));
        assert_eq!(p.bounds(100), [5_000_000_100, 15_000_000_100]);
        assert!(plan(&LoadArgs::default(), None, None).unwrap().is_none());
    }

    #[test]
    fn bad_load_flags_name_the_flag() {
        assert!(err(&args("tcp:/x")).contains("--under-load"));
        let mut a = args("tcp://127.0.0.1:7");
        a.load_streams = Some(0);
        assert!(err(&a).contains("--load-streams must be 1 to 1024, got 0"));
        a.load_streams = Some(1025);
        assert!(err(&a).contains("got 1025"));
        let mut a = args("tcp://127.0.0.1:7");
        a.load_direction = Some("sideways".into());
        assert!(err(&a).contains("--load-direction"));
        let mut a = args("tcp://127.0.0.1:7");
        a.load_duration = Some(Duration::ZERO);
        assert!(err(&a).contains("--load-duration must be positive"));
        assert!(err(&args("quic://127.0.0.1:7")).contains("--load-insecure"));
        let mut a = args("tcp://127.0.0.1:7");
        a.load_congestion = Some("no-such-cc".into());
        assert!(err(&a).contains("--load-congestion \"no-such-cc\": this kernel offers"));
        let a = LoadArgs {
            load_streams: Some(2),
            ..LoadArgs::default()
        };
        assert!(err(&a).contains("--load-streams needs --under-load"));
    }

    #[test]
    fn a_udp_load_needs_a_rate_goes_up_and_is_one_flow() {
        let mut a = args("udp://127.0.0.1:7");
        assert!(err(&a).contains("needs --load-rate"));
        a.load_rate = Some("fast".into());
        assert!(err(&a).contains("--load-rate"));
        a.load_rate = Some("0mbit".into());
        assert!(err(&a).contains("--load-rate must be positive"));
        a.load_rate = Some("20".into());
        assert!(err(&a).contains("--load-rate 20: give a unit"));
        a.load_rate = Some("20mbit".into());
        let p = plan(&a, None, None).unwrap().unwrap();
        assert_eq!((p.bulk.streams, p.bulk.ways), (1, Ways::Up));
        assert_eq!(
            p.bulk.udp,
            Some(UdpRate {
                rate_bps: 20e6,
                size: 1200
            })
        );
        let spec = p.spec();
        assert_eq!((spec.rate_bps, spec.size), (Some(20e6), Some(1200)));
        a.load_size = Some(10);
        assert!(err(&a).contains("--load-size 10 must be between"));
        a.load_size = Some(1400);
        assert_eq!(
            plan(&a, None, None)
                .unwrap()
                .unwrap()
                .bulk
                .udp
                .unwrap()
                .size,
            1400
        );
        a.load_direction = Some("both".into());
        assert!(err(&a).contains("--load-direction both: a udp:// load is one flow"));
        a.load_direction = Some("down".into());
        assert_eq!(plan(&a, None, None).unwrap().unwrap().bulk.ways, Ways::Down);
        a.load_direction = Some("up".into());
        a.load_streams = Some(4);
        assert!(err(&a).contains("--load-streams is for tcp://"));
        a.load_streams = None;
        a.load_congestion = Some("cubic".into());
        assert!(err(&a).contains("--load-congestion is for a tcp:// load"));
        for url in ["tcp://127.0.0.1:7", "quic://127.0.0.1:7"] {
            let mut a = args(url);
            a.load_insecure = url.starts_with("quic");
            a.load_size = Some(1200);
            assert!(err(&a).contains("--load-size is for a udp:// load"));
            a.load_size = None;
            a.load_rate = Some("5".into());
            assert!(err(&a).contains("--load-rate 5: give a unit"));
            a.load_rate = Some("0kbit".into());
            assert!(err(&a).contains("--load-rate must be positive"));
            // A stream load at a rate: each stream paced at it.
            a.load_rate = Some("5mbit".into());
            let p = plan(&a, None, None).unwrap().unwrap();
            assert_eq!((p.bulk.rate_bps, p.bulk.udp), (Some(5e6), None), "{url}");
            assert_eq!(p.spec().rate_bps, Some(5e6));
        }
        let a = LoadArgs {
            load_rate: Some("1mbit".into()),
            ..LoadArgs::default()
        };
        assert!(err(&a).contains("--load-rate needs --under-load"));
    }

    #[test]
    fn the_load_takes_the_probes_proxy_except_over_quic() {
        let via = npt_proxy::Via::parse("socks5://127.0.0.1:1080").unwrap();
        let token = "s".to_string();
        let mut a = args("udp://127.0.0.1:7");
        a.load_rate = Some("1mbit".into());
        let p = plan(&a, Some(&token), Some(&via)).unwrap().unwrap();
        assert_eq!(
            p.bulk.via.as_ref().map(ToString::to_string),
            Some(via.to_string())
        );
        assert_eq!(p.bulk.token.as_deref(), Some("s"));
        let p = plan(&args("tcp://127.0.0.1:7"), None, Some(&via))
            .unwrap()
            .unwrap();
        assert!(p.bulk.via.is_some());
        let mut a = args("quic://127.0.0.1:7");
        a.load_insecure = true;
        let e = plan(&a, None, Some(&via)).unwrap_err().to_string();
        assert!(
            e.contains("--via: the load goes through a proxy over tcp:// and udp://"),
            "{e}"
        );
    }

    #[test]
    fn a_refusing_load_target_is_a_usage_error() {
        // A port nothing listens on: bind one, note it, close it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let p = plan(&args(&format!("tcp://127.0.0.1:{port}")), None, None)
            .unwrap()
            .unwrap();
        let e = check_reachable(&p).unwrap_err().to_string();
        assert!(e.contains("--under-load tcp://127.0.0.1:"), "{e}");
    }
}
