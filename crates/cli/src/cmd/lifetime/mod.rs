//! `npt lifetime udp://HOST:PORT [--max DUR] [--resolution DUR]`: how long the path keeps an
//! idle UDP flow alive, with its bracket, and whether an expired flow comes back rebound;
//! `tcp://HOST:PORT` the same for idle TCP connections, and how the path ended them.
//! Flags become the engine's [`npt_lifetime::Config`]; [`execute`] does the rest. Exit 1 when
//! no flow settled (or the far end is not `npt serve`: the engine's error says so), 2 for a
//! bad flag.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use npt_client::target::{Proto, Target};
use npt_lifetime::{Config, MAX_MAX};
use npt_result::lifetime::LifetimeBody;
use npt_result::Document;

use crate::execute::{execute, Options, RunCommand};
use crate::usage;
use crate::usage::parse_duration;

#[derive(Args, Debug)]
pub struct LifetimeArgs {
    /// The far end: udp://HOST:PORT (or tcp://HOST:PORT for idle TCP connections) of an `npt
    /// serve` (directly, or a relay's or NAT's port in front of it); it calls each flow back
    /// after its idle gap.
    #[arg(value_name = "udp|tcp://HOST:PORT")]
    pub target: String,
    /// The longest idle gap tried (at most 600 s, the responder's longest): a path that keeps
    /// a flow this long reads "longer than --max". The search takes about twice the lifetime.
    #[arg(long, value_name = "DUR", default_value = "120s", value_parser = parse_duration)]
    pub max: Duration,
    /// How narrow the bracket gets (default: 1 s, or 2 % of the lifetime when that is more).
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub resolution: Option<Duration>,
    // `npt serve --token`: each flow's socket does the handshake first.
    #[command(flatten)]
    pub auth: crate::flags::auth::TokenArgs,
    // Each flow through the proxy: a UDP flow its own SOCKS5 UDP ASSOCIATE, a connection its
    // own CONNECT.
    #[command(flatten)]
    pub via: crate::flags::via::ViaArgs,
    #[command(flatten)]
    pub output: crate::flags::output::OutputArgs,
}

pub fn config(a: &LifetimeArgs) -> anyhow::Result<Config> {
    let target = Target::parse(&a.target).map_err(|e| usage!("{e}"))?;
    if target.proto == Proto::Quic {
        return Err(usage!(
            "{}: lifetime measures UDP flows or TCP connections: expected udp://HOST:PORT or \
             tcp://HOST:PORT",
            a.target
        ));
    }
    if a.max < Duration::from_secs(1) || a.max > MAX_MAX {
        return Err(usage!(
            "--max {:?} must be between 1 s and {} s (the responder's longest gap)",
            a.max,
            MAX_MAX.as_secs()
        ));
    }
    if let Some(r) = a.resolution {
        if r < Duration::from_millis(10) || r >= a.max {
            return Err(usage!(
                "--resolution {r:?} must be at least 10 ms and below --max"
            ));
        }
    }
    Ok(Config {
        max: a.max,
        resolution: a.resolution,
        token: a.auth.get()?.map(str::to_string),
        via: a.via.resolve(target.proto == Proto::Udp)?,
        target,
    })
}

pub fn run(a: LifetimeArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&a)?;
    let o = Options::new(&a.output);
    o.check()?;
    execute(cfg, o)
}

impl RunCommand for Config {
    fn banner(&self) -> Option<String> {
        Some(format!(
            "LIFETIME {}: idle flows up to {} s, in parallel (about twice the lifetime)",
            self.name(),
            self.max.as_secs_f64()
        ))
    }

    fn render(out: &mut dyn Write, doc: &Document<LifetimeBody>) -> std::io::Result<()> {
        npt_report::text::write_lifetime(out, &doc.body)
    }

    fn failed(body: &LifetimeBody) -> Option<&'static str> {
        let settled = body.summary.alive_after_s.is_some() || body.summary.gone_after_s.is_some();
        (!settled).then_some("no flow settled (the report says why)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::testing::{self, flags};

    fn cfg(args: &[&str]) -> anyhow::Result<Config> {
        config(&flags::<LifetimeArgs>(args)?)
    }

    #[test]
    fn defaults_and_bad_flags() {
        let c = cfg(&["udp://10.0.0.2:7777"]).unwrap();
        assert_eq!((c.max, c.resolution), (Duration::from_secs(120), None));
        assert_eq!(
            cfg(&["tcp://10.0.0.2:7777"]).unwrap().name(),
            "tcp://10.0.0.2:7777"
        );
        let m = testing::usage_msg(cfg(&["quic://10.0.0.2:7777"]));
        assert!(m.contains("udp://HOST:PORT"), "{m}");
        let m = testing::usage_msg(cfg(&["udp://h:1", "--via", "http://p:3128"]));
        assert!(m.contains("--via"), "{m}");
        let via = cfg(&["tcp://h:1", "--via", "http://p:3128"]).unwrap().via;
        assert_eq!(via.unwrap().to_string(), "http://p:3128");
        let m = testing::usage_msg(cfg(&["udp://h:1", "--max", "601s"]));
        assert!(m.contains("--max"), "{m}");
        let m = testing::usage_msg(cfg(&["udp://h:1", "--max", "5s", "--resolution", "5s"]));
        assert!(m.contains("--resolution"), "{m}");
    }
}
