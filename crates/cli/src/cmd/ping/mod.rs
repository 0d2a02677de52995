//! `npt ping`: a hop's round-trip time, ping-style. Per-attempt lines, a summary (sent,
//! received, loss, min / avg / p50 / p90 / max / stddev), and a `kind = "ping"` result
//! document with `--json`; [`execute`] runs it (no segment, metrics or live view: a ping has
//! no series). `icmp://HOST` is the host's own ICMP echo ([`npt_ping::icmp`]), run the same
//! way. Exit 1 when nothing answered, 2 for a bad flag.

mod args;
mod from;
mod render;

pub use args::PingArgs;

use std::io::Write;
use std::process::ExitCode;

use npt_ping::icmp::{self, IcmpConfig, IcmpPing};
use npt_ping::workload::Ping;
use npt_ping::{Config, Proto, Target};

use crate::execute::{execute, Options};
use crate::usage;

/// `npt ping icmp://HOST`: its config; the flags that do not apply to an ICMP echo are refused.
pub fn icmp_config(a: &PingArgs) -> anyhow::Result<IcmpConfig> {
    let host = icmp::parse_host(&a.target).map_err(|e| usage!("{e}"))?;
    let (interval, timeout) = a.timing.durations()?;
    for (given, flag) in [
        (a.raw, "--raw"),
        (a.echo, "--echo"),
        (a.setup, "--setup"),
        (a.auth.is_some(), "--token"),
        (a.via.via.is_some(), "--via"),
        (a.from.is_some(), "--from"),
    ] {
        if given {
            return Err(usage!(
                "{flag} is not for icmp:// targets (an ICMP echo is answered by the host's kernel)"
            ));
        }
    }
    a.trust.resolve(crate::flags::trust::Quic::No)?;
    let min = icmp::codec::MIN_LEN;
    if !(min..=65_507).contains(&a.size) {
        return Err(usage!(
            "--size {} must be between {min} and 65507 bytes for icmp:// (the ICMP message)",
            a.size
        ));
    }
    let source = a.source.for_target("ping", &host, false, false)?;
    Ok(IcmpConfig {
        target: a.target.clone(),
        host,
        count: (a.count > 0).then_some(a.count),
        interval,
        timeout,
        size: a.size,
        source,
    })
}

pub fn config(a: &PingArgs) -> anyhow::Result<Config> {
    let target = Target::parse(&a.target).map_err(|e| usage!("{e}"))?;
    let (interval, timeout) = a.timing.durations()?;
    if a.raw && target.proto != Proto::Udp {
        return Err(usage!("--raw is for udp:// targets"));
    }
    if a.echo && target.proto != Proto::Tcp {
        return Err(usage!(
            "--echo is for tcp:// targets (a udp:// ping is an echo already)"
        ));
    }
    if a.setup && !a.echo {
        return Err(usage!(
            "--setup needs --echo (tcp://): the block's first echo and its base round trip are \
             two echoes on each new connection"
        ));
    }
    if a.auth.is_some() && !((target.proto == Proto::Udp && !a.raw) || a.echo) {
        return Err(usage!(
            "--token is for framed udp:// targets and tcp:// --echo"
        ));
    }
    let token = a.auth.get()?.map(str::to_string);
    let quic = target.proto == Proto::Quic;
    let trust = a
        .trust
        .resolve(crate::flags::trust::Quic::when(quic, "the server's"))?;
    let min = if a.raw {
        npt_wire::raw::RAW_HEADER_LEN
    } else {
        npt_wire::frame::HEADER_LEN
    };
    if (target.proto == Proto::Udp || a.echo) && !(min..=65_507).contains(&a.size) {
        return Err(usage!(
            "--size {} must be between {min} and 65507 bytes",
            a.size
        ));
    }
    let via = a.via.resolve(target.proto == Proto::Udp)?;
    if via.is_some() && target.proto != Proto::Tcp {
        return Err(usage!(
            "--via: npt ping measures tcp:// through a proxy (the time to its CONNECT reply)"
        ));
    }
    let source = a
        .source
        .for_target("ping", &target.host, quic, via.is_some())?;
    Ok(Config {
        target,
        count: (a.count > 0).then_some(a.count),
        interval,
        timeout,
        size: a.size,
        raw: a.raw,
        token,
        handshake: Default::default(),
        trust,
        via,
        echo: a.echo,
        setup: a.setup,
        source,
    })
}

fn what(cfg: &Config) -> String {
    match cfg.target.proto {
        Proto::Tcp if cfg.echo => match &cfg.via {
            Some(v) => format!(
                "TCP connect via {v} + one {} B echo, end to end{}",
                npt_ping::echo::frame_size(cfg),
                setup_words(cfg)
            ),
            None => format!(
                "TCP connect + one {} B echo, end to end{}",
                npt_ping::echo::frame_size(cfg),
                setup_words(cfg)
            ),
        },
        Proto::Tcp => match &cfg.via {
            Some(v) => format!("TCP connect via {v}, until its CONNECT reply"),
            None => "TCP connect (answered by the first listener: a relay's own)".to_string(),
        },
        Proto::Udp if cfg.raw => format!("UDP raw echo, {} B", cfg.size),
        Proto::Udp => format!("UDP echo, {} B", cfg.size),
        Proto::Quic => "QUIC handshake".to_string(),
    }
}

/// `--setup`'s second echo, in the first line's words.
fn setup_words(cfg: &Config) -> &'static str {
    if cfg.setup {
        " (+ a second echo per connection: the setup block's base)"
    } else {
        ""
    }
}

pub fn run(a: PingArgs) -> anyhow::Result<ExitCode> {
    if icmp::is_icmp(&a.target) {
        return run_icmp(a);
    }
    if a.from.is_some() {
        return from::run(a);
    }
    let cfg = config(&a)?;
    let mut o = Options::new(&a.output);
    o.packets_to(a.packets.as_deref());
    o.check()?;
    let mut out = o.text.writer();
    let addrs = cfg
        .target
        .resolve_from(&cfg.source)
        .map_err(|e| usage!("{e}"))?;
    let shown: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
    writeln!(
        out,
        "PING {} ({}): {}",
        cfg.target,
        shown.join(", "),
        what(&cfg)
    )?;
    out.flush()?;
    let quiet = a.output.quiet;
    // A line that cannot be written (a closed pipe) stops the lines, not the run: the report
    // and the result file are still written.
    let mut writable = true;
    let ping = Ping::new(cfg, move |ev, addr| {
        if quiet || !writable {
            return;
        }
        let line = render::line(ev, &addr.to_string());
        writable = writeln!(out, "{line}").and_then(|()| out.flush()).is_ok();
    });
    execute(ping, o)
}

/// `npt ping icmp://HOST`: the same lines, summary and result as the other kinds.
fn run_icmp(a: PingArgs) -> anyhow::Result<ExitCode> {
    let cfg = icmp_config(&a)?;
    let mut o = Options::new(&a.output);
    o.packets_to(a.packets.as_deref());
    o.check()?;
    let mut out = o.text.writer();
    let addrs = icmp::net::resolve(&cfg.host, &cfg.source).map_err(|e| usage!("{e}"))?;
    let first = addrs
        .first()
        .map(|a| a.ip().to_string())
        .unwrap_or_default();
    writeln!(
        out,
        "PING {} ({first}): ICMP echo, {} B",
        cfg.target, cfg.size
    )?;
    out.flush()?;
    let quiet = a.output.quiet;
    let mut writable = true;
    let ping = IcmpPing::new(cfg, move |ev, addr| {
        if quiet || !writable {
            return;
        }
        writable = writeln!(out, "{}", render::line(ev, &addr.ip().to_string()))
            .and_then(|()| out.flush())
            .is_ok();
    });
    execute(ping, o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::testing::{self, flags};
    use std::time::Duration;

    fn cfg(args: &[&str]) -> anyhow::Result<Config> {
        config(&flags::<PingArgs>(args)?)
    }

    fn usage_msg(args: &[&str]) -> String {
        testing::usage_msg(cfg(args))
    }

    #[test]
    fn defaults() {
        let c = cfg(&["tcp://127.0.0.1:7"]).unwrap();
        assert_eq!(c.count, Some(5));
        assert_eq!(c.interval, Duration::from_secs(1));
        assert_eq!(c.timeout, Duration::from_secs(1));
        assert_eq!(cfg(&["udp://127.0.0.1:7", "-c", "0"]).unwrap().count, None);
    }

    #[test]
    fn bad_flags_name_the_flag() {
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--interval", "0"]).contains("--interval"));
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--interval", "-1s"]).contains("--interval"));
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--timeout", "0ms"]).contains("--timeout"));
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--raw"]).contains("--raw"));
        assert!(usage_msg(&["quic://127.0.0.1:7"]).contains("--insecure"));
        assert!(usage_msg(&["udp://127.0.0.1:7", "--size", "10"]).contains("--size"));
        assert!(usage_msg(&["127.0.0.1:7"]).contains("tcp://"));
        assert!(usage_msg(&["udp://127.0.0.1:7", "--echo"]).contains("--echo"));
        assert!(usage_msg(&["quic://127.0.0.1:7", "--echo", "--insecure"]).contains("--echo"));
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--echo", "-s", "47"]).contains("--size"));
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--token", "s"]).contains("--token"));
        assert!(usage_msg(&["tcp://127.0.0.1:7", "--setup"]).contains("--setup"));
        assert!(usage_msg(&["udp://127.0.0.1:7", "--setup"]).contains("--setup"));
        assert!(usage_msg(&["quic://127.0.0.1:7", "--setup", "--insecure"]).contains("--setup"));
    }

    #[test]
    fn icmp_takes_a_host_and_refuses_what_does_not_apply() {
        let icmp = |args: &[&str]| icmp_config(&flags::<PingArgs>(args)?);
        let c = icmp(&["icmp://127.0.0.1", "-c", "3", "-s", "100"]).unwrap();
        assert_eq!(
            (c.host.as_str(), c.count, c.size),
            ("127.0.0.1", Some(3), 100)
        );
        assert_eq!(icmp(&["icmp://[::1]"]).unwrap().host, "::1");
        let msg = |args: &[&str]| testing::usage_msg(icmp(args));
        assert!(msg(&["icmp://127.0.0.1:7"]).contains("icmp://HOST"));
        assert!(msg(&["icmp://127.0.0.1", "-s", "27"]).contains("--size"));
        for flag in ["--raw", "--echo", "--setup"] {
            assert!(msg(&["icmp://127.0.0.1", flag]).contains(flag), "{flag}");
        }
        assert!(msg(&["icmp://127.0.0.1", "--token", "s"]).contains("--token"));
        assert!(msg(&["icmp://h", "--via", "socks5://127.0.0.1:1"]).contains("--via"));
        assert!(msg(&["icmp://127.0.0.1", "--insecure"]).contains("--insecure"));
    }

    #[test]
    fn echo_is_tcp_end_to_end_and_takes_a_size_and_a_token() {
        let c = cfg(&["tcp://127.0.0.1:7", "--echo", "-s", "200", "--token", "s"]).unwrap();
        assert!(c.echo);
        assert_eq!((c.size, c.token.as_deref()), (200, Some("s")));
        assert_eq!(c.answered_by(), "echo");
        assert_eq!(
            cfg(&["tcp://127.0.0.1:7"]).unwrap().answered_by(),
            "first_listener"
        );
        let via = cfg(&["tcp://127.0.0.1:7", "--via", "socks5://127.0.0.1:1080"]).unwrap();
        assert_eq!(via.answered_by(), "proxy");
        assert!(what(&c).contains("one 200 B echo, end to end"));
        assert!(!c.setup);
        let s = cfg(&["tcp://127.0.0.1:7", "--echo", "--setup"]).unwrap();
        assert!(s.setup && what(&s).contains("a second echo per connection"));
    }
}
