//! `npt trace TARGET --hop npt://A:P … [--through URL] --token S`: where the time goes along a
//! relay chain. Flags become the engine's [`npt_trace::Config`]; each hop agent's bounds are
//! checked here so a bad flag is exit 2 before anything is sent; `--during CMD` runs the
//! command (`sh -c`) after a first round and measures rounds until it exits ([`Command`]).
//! [`execute`] does the rest. Exit 1 when a leg answered nothing (its error is in the
//! report), 2 for a bad flag.

use std::io::Write;
use std::process::{Child, ExitCode, Stdio};

use clap::Args;
use npt_result::trace::{During, TraceBody};
use npt_result::Document;
use npt_trace::workload::{Alongside, Trace};
use npt_trace::{Config, Hop, Proto, Target, MAX_HOPS};

use crate::execute::{execute, Options, RunCommand};
use crate::usage;

#[derive(Args, Debug)]
pub struct TraceArgs {
    /// The chain's far end: tcp://HOST:PORT (connect RTT per segment), udp://HOST:PORT (echo)
    /// or quic://HOST:PORT (handshake); every segment and the chain use its protocol.
    #[arg(value_name = "TARGET")]
    pub target: String,
    /// A relay on the path, in order: `npt serve --token S --hop-agent` on it measures the
    /// next segment. `=HOST:PORT`: where the previous hop reaches it, when that is not the
    /// address this host uses (another link, QUIC's own port).
    #[arg(
        long = "hop",
        value_name = "npt://HOST:PORT[=HOST:PORT]",
        required = true
    )]
    pub hops: Vec<String>,
    /// The chain's entry: the RTT through every relay to the target, measured from here (TCP:
    /// an echo on an open connection, to the target's `npt serve`).
    #[arg(long, value_name = "URL")]
    pub through: Option<String>,
    // The chain's one secret (`npt serve --token`): the hop agents', and the keyed echoes
    // into serves that have --token.
    #[command(flatten)]
    pub auth: crate::flags::auth::TokenArgs,
    /// Attempts per segment (and through the chain) in each round.
    #[arg(long, short = 'c', value_name = "N", default_value_t = 5)]
    pub count: u64,
    #[command(flatten)]
    pub timing: crate::flags::timing::AttemptTiming,
    /// UDP datagram size in bytes, header included (at least 48).
    #[arg(long, short = 's', value_name = "BYTES", default_value_t = 64)]
    pub size: usize,
    // QUIC: this host's segment and the chain (the agents accept any certificate).
    #[command(flatten)]
    pub trust: crate::flags::trust::TrustArgs,
    /// Measure a round first, then run CMD (`sh -c`) and measure rounds until it exits: the
    /// segments' drift while, e.g., `npt compare` loads the chain.
    #[arg(long, value_name = "CMD")]
    pub during: Option<String>,
    /// After the first round, search each segment's path MTU each way (`npt mtu`'s DF-set
    /// probes to the segment's `npt serve` over UDP): this host the first segment, each hop
    /// agent the next.
    #[arg(long)]
    pub mtu: bool,
    /// `--mtu`: the longest one segment's search may take (at most 30 s, a hop agent's bound);
    /// what it knows by then is reported. A monitor's trace target with `--mtu` needs an
    /// `every` longer than this.
    #[arg(long, value_name = "DUR", default_value = "20s", requires = "mtu")]
    pub mtu_timeout: String,
    #[command(flatten)]
    pub output: crate::flags::output::OutputArgs,
    // What this host sends (its own segment and the chain); the agents send from theirs. A
    // marking (--dscp, --tos, --ecn) also reads each segment's marking each way after the
    // first round: this host the first segment, each hop agent the next.
    #[command(flatten)]
    pub source: crate::flags::source::SourceArgs,
}

pub fn config(a: &TraceArgs) -> anyhow::Result<Config> {
    let target = Target::parse(&a.target).map_err(|e| usage!("{e}"))?;
    let token = a
        .auth
        .required("--hop needs --token: a hop agent answers only clients that prove its secret")?;
    let hops = a
        .hops
        .iter()
        .map(|h| {
            Hop::parse(h).ok_or_else(|| {
                usage!(
                    "--hop {h:?}: expected npt://HOST:PORT (an `npt serve --hop-agent`), \
                     optionally =HOST:PORT (where the previous hop reaches it)"
                )
            })
        })
        .collect::<anyhow::Result<Vec<Hop>>>()?;
    if hops.len() > MAX_HOPS {
        return Err(usage!("--hop: at most {MAX_HOPS} hops"));
    }
    let through = match &a.through {
        None => None,
        Some(t) => {
            let t = Target::parse(t).map_err(|e| usage!("--through: {e}"))?;
            if t.proto != target.proto {
                return Err(usage!(
                    "--through {t}: the chain is measured over the target's protocol, {}",
                    target.proto.name()
                ));
            }
            Some(t)
        }
    };
    if a.count == 0 {
        return Err(usage!(
            "--count must be at least 1 (attempts per leg per round)"
        ));
    }
    let (interval, timeout) = a.timing.durations()?;
    let search = crate::flags::timing::positive("--mtu-timeout", &a.mtu_timeout)?;
    if search > npt_trace::mtu::MAX_SEARCH_TIME {
        return Err(usage!(
            "--mtu-timeout {search:?}: a hop agent searches for at most {:?}",
            npt_trace::mtu::MAX_SEARCH_TIME
        ));
    }
    let min = npt_wire::frame::HEADER_LEN;
    let size = u16::try_from(a.size)
        .ok()
        .filter(|s| usize::from(*s) >= min && usize::from(*s) <= 65_507)
        .ok_or_else(|| usage!("--size {} must be between {min} and 65507 bytes", a.size))?;
    let quic = target.proto == Proto::Quic;
    let trust = a.trust.resolve(crate::flags::trust::Quic::when(
        quic,
        "the first hop's and the chain's",
    ))?;
    let source = a.source.for_target("trace", &target.host, quic, false)?;
    let cfg = Config {
        target,
        hops,
        through,
        token,
        count: a.count,
        interval,
        timeout,
        size,
        trust,
        source,
        mtu: a.mtu.then_some(search),
    };
    // What each agent is asked must be within its bounds (its defaults: no flag changes
    // them): say so here, not as a refusal after connecting.
    let limits = npt_server::hop_agent::HopLimits::default();
    for leg in cfg.legs() {
        if let npt_trace::Who::Agent(agent) = &leg.from {
            if leg.to.host.len() > npt_wire::hop::MAX_HOST_LEN {
                return Err(usage!(
                    "{}: the host is longer than {} bytes",
                    leg.to,
                    npt_wire::hop::MAX_HOST_LEN
                ));
            }
            let f = npt_ping::from::FromConfig {
                target: leg.to.clone(),
                agent: agent.clone(),
                token: cfg.token.clone(),
                count: Some(cfg.count),
                interval,
                timeout,
                size,
            };
            limits.check(&f.request(1)).map_err(|e| {
                usage!("--interval, --timeout or --size out of a hop agent's bounds: {e}")
            })?;
            if let Some(tos) = cfg.source.tos {
                let r = npt_trace::marks::request(&cfg, &leg, tos);
                limits.check(&r).map_err(|e| {
                    usage!("--dscp: the marked echoes are out of a hop agent's bounds ({e}; --timeout, --size)")
                })?;
            }
        }
    }
    Ok(cfg)
}

/// `--during`'s command, run by `sh -c` in a process group of its own; ended with its
/// children if it still runs when the trace ends (also when dropped on an error).
pub struct Command {
    cmd: String,
    /// Its stdout goes to our stderr when our stdout carries the JSON document.
    to_stderr: bool,
    child: Option<Child>,
    note: Option<String>,
}

impl Command {
    pub fn new(cmd: String, to_stderr: bool) -> Command {
        Command {
            cmd,
            to_stderr,
            child: None,
            note: None,
        }
    }
}

impl Alongside for Command {
    fn start(&mut self) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        let mut c = std::process::Command::new("sh");
        // Its own process group: what the shell starts is ended with it ([`end`]).
        c.arg("-c")
            .arg(&self.cmd)
            .stdin(Stdio::null())
            .process_group(0);
        if self.to_stderr {
            use std::os::fd::AsFd;
            if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
                c.stdout(Stdio::from(fd));
            }
        }
        match c.spawn() {
            Ok(child) => {
                self.child = Some(child);
                Ok(())
            }
            Err(e) => {
                let why = format!("cannot run sh -c: {e}");
                self.note = Some(why.clone());
                Err(why)
            }
        }
    }

    fn running(&mut self) -> bool {
        matches!(self.child.as_mut().map(Child::try_wait), Some(Ok(None)))
    }

    fn finish(&mut self) -> During {
        let mut exit_code = None;
        if let Some(mut c) = self.child.take() {
            if matches!(c.try_wait(), Ok(None)) {
                end(&mut c);
                self.note = Some("still running when the trace ended: stopped".into());
            }
            exit_code = c.wait().ok().and_then(|s| s.code());
        }
        During {
            command: self.cmd.clone(),
            exit_code,
            note: self.note.take(),
        }
    }
}

impl Drop for Command {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            end(&mut c);
            let _ = c.wait();
        }
    }
}

/// How long a command asked to stop (SIGTERM) has to write its own report before it is killed.
const GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Ends `--during`'s process group: SIGTERM (an npt workload then writes its report), and
/// SIGKILL if it is still there after [`GRACE`].
fn end(c: &mut Child) {
    let Ok(pgid) = i32::try_from(c.id()) else {
        let _ = c.kill();
        return;
    };
    // SAFETY: kill(2) with a negative pid signals that process group; no memory is touched.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    let until = std::time::Instant::now() + GRACE;
    while std::time::Instant::now() < until {
        if !matches!(c.try_wait(), Ok(None)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The shell may be gone and its children not: the group gets SIGKILL either way.
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = c.try_wait();
}

pub fn run(a: TraceArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&a)?;
    let o = Options::new(&a.output);
    o.check()?;
    let mut out = o.text.writer();
    let through = cfg
        .through
        .as_ref()
        .map_or(String::new(), |t| format!(", through {t}"));
    writeln!(
        out,
        "TRACE {} over {} hop(s){through}: {}",
        cfg.target,
        cfg.hops.len(),
        cfg.what()
    )?;
    out.flush()?;
    let quiet = a.output.quiet;
    let alongside = a
        .during
        .clone()
        .map(|c| Box::new(Command::new(c, o.json_stdout)) as Box<dyn Alongside>);
    // A line that cannot be written (a closed pipe) stops the lines, not the run.
    let mut writable = true;
    let trace = Trace::new(cfg, alongside, move |line| {
        if quiet || !writable {
            return;
        }
        writable = writeln!(out, "{line}").and_then(|()| out.flush()).is_ok();
    });
    execute(trace, o)
}

impl RunCommand for Trace<'_> {
    fn render(out: &mut dyn Write, doc: &Document<TraceBody>) -> std::io::Result<()> {
        npt_report::trace::write_text(out, &doc.body, doc.stopped_by, doc.duration_s)
    }

    fn failed(body: &TraceBody) -> Option<&'static str> {
        let silent = body
            .segments
            .iter()
            .chain(&body.chain)
            .any(|l| l.summary.received == 0);
        silent.then_some("a leg of the trace answered nothing (the report says why)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::testing::{self, flags};

    fn cfg(args: &[&str]) -> anyhow::Result<Config> {
        config(&flags::<TraceArgs>(args)?)
    }

    fn usage_msg(args: &[&str]) -> String {
        testing::usage_msg(cfg(args))
    }

    const OK: [&str; 5] = [
        "tcp://10.0.3.2:7777",
        "--hop",
        "npt://10.0.5.2:7777",
        "--token",
        "S",
    ];

    fn with(extra: &[&'static str]) -> Vec<&'static str> {
        let mut v = OK.to_vec();
        v.extend_from_slice(extra);
        v
    }

    #[test]
    fn defaults_match_ping() {
        let c = cfg(&with(&["--through", "tcp://10.0.5.2:9003"])).unwrap();
        assert_eq!(c.count, 5);
        assert_eq!(c.interval, std::time::Duration::from_secs(1));
        assert_eq!(c.timeout, std::time::Duration::from_secs(1));
        assert_eq!(c.size, 64);
        assert_eq!(c.legs().len(), 3);
        assert_eq!(c.mtu, None);
    }

    #[test]
    fn an_mtu_search_is_bounded_by_its_own_timeout() {
        let s = std::time::Duration::from_secs;
        let default = cfg(&with(&["--mtu"])).unwrap().mtu;
        assert_eq!(default, Some(npt_trace::mtu::SEARCH_TIME));
        let c = cfg(&with(&["--mtu", "--mtu-timeout", "2s"])).unwrap();
        assert_eq!(c.mtu, Some(s(2)));
        assert!(usage_msg(&with(&["--mtu", "--mtu-timeout", "31s"])).contains("--mtu-timeout"));
        assert!(usage_msg(&with(&["--mtu", "--mtu-timeout", "0s"])).contains("--mtu-timeout"));
        assert!(
            flags::<TraceArgs>(&with(&["--mtu-timeout", "2s"])).is_err(),
            "only with --mtu"
        );
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let m = usage_msg(&["tcp://t:1", "--hop", "npt://a:1"]);
        assert!(m.contains("--hop needs --token"), "{m}");
        let m = usage_msg(&["tcp://t:1", "--hop", "a:1", "--token", "S"]);
        assert!(m.contains("--hop \"a:1\""), "{m}");
        assert!(usage_msg(&with(&["--through", "udp://a:1"])).contains("--through"));
        assert!(usage_msg(&with(&["--through", "a:1"])).contains("--through"));
        assert!(usage_msg(&with(&["--count", "0"])).contains("--count"));
        assert!(usage_msg(&with(&["--interval", "0"])).contains("--interval"));
        assert!(usage_msg(&with(&["--timeout", "11s"])).contains("timeout 11000000 µs"));
        assert!(usage_msg(&with(&["--size", "10"])).contains("--size"));
        assert!(usage_msg(&with(&["--insecure"])).contains("quic://"));
        let mut q = with(&[]);
        q[0] = "quic://t:7778";
        assert!(usage_msg(&q).contains("--insecure"));
        let mut e = with(&[]);
        e[4] = "";
        assert!(usage_msg(&e).contains("--token"));
        let many: Vec<&str> = std::iter::once("tcp://t:1")
            .chain((0..17).flat_map(|_| ["--hop", "npt://a:1"]))
            .chain(["--token", "S"])
            .collect();
        assert!(usage_msg(&many).contains("at most 16"));
        let t = flags::<TraceArgs>(&["tcp://t:1", "--token", "S"]);
        assert!(t.is_err(), "at least one --hop");
    }
}
