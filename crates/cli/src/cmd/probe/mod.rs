//! `npt probe`: line quality by echo. A probe's arguments go one way, each step in its own
//! file: [`args`] (clap's parse, or the line tester's XML config beside it) → [`config`] (each
//! value checked into the engine's `ProbeConfig`, an error naming its flag or XML attribute:
//! target, pacing, stop, framing, stages, the load of [`under_load`], the clock assumption of
//! [`owd`]) → [`checks::reachable`] (the addresses that answer, just before the run) →
//! [`execute`] (the run sequence every measuring subcommand shares) → [`render`] (banner,
//! stage lines, the report).

mod args;
mod checks;
mod config;
mod owd;
mod render;
mod target;
mod under_load;

use std::process::ExitCode;

pub use args::{Mode, ProbeArgs};
pub use config::config;
pub use render::banner;

use crate::execute::{execute, Options};

pub fn run(a: ProbeArgs) -> anyhow::Result<ExitCode> {
    let (mut cfg, mut notices) = config(&a)?;
    let mut o = Options::new(&a.output);
    o.segment = &a.segment;
    o.metrics = &a.metrics;
    o.packets_to(a.packets.as_deref());
    // Before the reachability checks below: nothing reaches the network with a bad path.
    o.check()?;
    notices.extend(checks::reachable(&mut cfg)?);
    o.notices = notices;
    o.labels = vec![
        ("protocol", cfg.proto.name().to_string()),
        ("target", cfg.addr.to_string()),
    ];
    execute(cfg, o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_probe::{PacingSpec, Proto, StageSpec};
    use npt_wire::Fill;
    use std::time::Duration;

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
