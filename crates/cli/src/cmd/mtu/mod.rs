//! `npt mtu udp://HOST:PORT [--max BYTES] [--token S] [--via socks5://…]`: the largest datagram that crosses each
//! way, whether PMTUD works or a black hole swallows larger ones, and where the path
//! fragments. Flags become the engine's [`npt_mtu::Config`]; [`execute`] does the rest. Exit 1
//! when nothing crossed (the engine's error says so), 2 for a bad flag.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use npt_client::target::{Proto, Target};
use npt_mtu::Config;
use npt_result::mtu::MtuBody;
use npt_result::Document;
use npt_wire::mtu::{MAX_PROBE, MTU_LEN};

use crate::execute::{execute, Options, RunCommand};
use crate::usage;
use crate::usage::parse_duration;

#[derive(Args, Debug)]
pub struct MtuArgs {
    /// The far end: udp://HOST:PORT of an `npt serve` (directly, or a relay's or NAT's port in
    /// front of it); a plain echo reads the round trip only.
    #[arg(value_name = "udp://HOST:PORT")]
    pub target: String,
    /// The largest datagram tried, bytes of UDP payload (default: a 1500-byte IP packet's,
    /// 1472 over IPv4, 1452 over IPv6; an interface of this host with a smaller MTU refuses
    /// larger ones at once, which is read as its limit).
    #[arg(long, value_name = "BYTES")]
    pub max: Option<usize>,
    /// The longest the search may take; what it knows by then is reported.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = parse_duration)]
    pub timeout: Duration,
    // `npt serve --token`: the handshake first; down probes may then exceed their requests.
    #[command(flatten)]
    pub auth: crate::flags::auth::TokenArgs,
    // `--via socks5://`: through the proxy's UDP relay (UDP ASSOCIATE).
    #[command(flatten)]
    pub via: crate::flags::via::ViaArgs,
    #[command(flatten)]
    pub output: crate::flags::output::OutputArgs,
}

pub fn config(a: &MtuArgs) -> anyhow::Result<Config> {
    let target = Target::parse(&a.target).map_err(|e| usage!("{e}"))?;
    if target.proto != Proto::Udp {
        return Err(usage!(
            "{}: mtu measures UDP datagrams: expected udp://HOST:PORT",
            a.target
        ));
    }
    if let Some(m) = a.max {
        if !(MTU_LEN..=MAX_PROBE).contains(&m) {
            return Err(usage!(
                "--max {m} must be between {MTU_LEN} and {MAX_PROBE} bytes (a datagram's payload)"
            ));
        }
    }
    if a.timeout < Duration::from_secs(1) || a.timeout > Duration::from_secs(600) {
        return Err(usage!(
            "--timeout {:?} must be between 1 s and 600 s",
            a.timeout
        ));
    }
    Ok(Config {
        target,
        max: a.max,
        token: a.auth.get()?.map(str::to_string),
        timeout: a.timeout,
        via: a.via.resolve(true)?,
    })
}

pub fn run(a: MtuArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&a)?;
    let o = Options::new(&a.output);
    o.check()?;
    execute(cfg, o)
}

impl RunCommand for Config {
    fn banner(&self) -> Option<String> {
        Some(format!(
            "MTU udp://{}:{}: DF-set probes each way, 3 tries a size, at most {} s",
            self.target.host,
            self.target.port,
            self.timeout.as_secs_f64()
        ))
    }

    fn render(out: &mut dyn Write, doc: &Document<MtuBody>) -> std::io::Result<()> {
        npt_report::text::write_mtu(out, &doc.body)
    }

    fn failed(body: &MtuBody) -> Option<&'static str> {
        (body.summary.up.largest_datagram.is_none() && body.summary.down.largest_datagram.is_none())
            .then_some("nothing crossed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::testing::{self, flags};
    use npt_mtu::DEFAULT_TIMEOUT;

    fn cfg(args: &[&str]) -> anyhow::Result<Config> {
        config(&flags::<MtuArgs>(args)?)
    }

    #[test]
    fn defaults_and_bad_flags() {
        let c = cfg(&["udp://10.0.0.2:7777"]).unwrap();
        assert_eq!((c.max, c.timeout), (None, DEFAULT_TIMEOUT));
        let m = testing::usage_msg(cfg(&["tcp://10.0.0.2:7777"]));
        assert!(m.contains("udp://HOST:PORT"), "{m}");
        let m = testing::usage_msg(cfg(&["udp://h:1", "--max", "20"]));
        assert!(m.contains("--max"), "{m}");
        let m = testing::usage_msg(cfg(&["udp://h:1", "--max", "70000"]));
        assert!(m.contains("--max"), "{m}");
        let m = testing::usage_msg(cfg(&["udp://h:1", "--timeout", "0.5s"]));
        assert!(m.contains("--timeout"), "{m}");
        let m = testing::usage_msg(cfg(&["udp://h:1", "--via", "http://p:3128"]));
        assert!(m.contains("--via") && m.contains("UDP"), "{m}");
        assert!(cfg(&["udp://h:1", "--via", "socks5://p:1080"])
            .unwrap()
            .via
            .is_some());
    }
}
