//! `npt`: the command line. Each subcommand parses its flags (clap derive), validates them into
//! the engine's typed config (naming the flag in any error), runs, and renders. Exit codes:
//! 0 ok, 1 the run failed (nothing answered, or the run could not be carried out),
//! 2 usage or configuration error, 3 the server refused part of the test (probe, run, bulk,
//! ping: `execute::EXIT_REFUSED`). A closed stdout (`| head`) counts as success.
//!
//! Where things are: [`cmd`] holds one folder per subcommand, [`flags`] the flag groups several
//! of them flatten, [`execute`] the run sequence every measuring subcommand goes through, and
//! [`usage`] the usage error (exit 2) and the parsers of flag values; they depend on each
//! other in that order, top down (`tests/layering.rs` checks it).

mod cmd;
mod execute;
mod flags;
mod usage;

use cmd::{
    bulk, compare, demo, http, lab, lifetime, manual, merge, monitor, mtu, ping, probe, report,
    run, serve, setup, trace,
};

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub use usage::UsageError;

#[derive(Parser, Debug)]
#[command(
    name = "npt",
    version,
    about = "npt: what a network path costs a real user",
    long_about = "npt measures paths through forwarders, relay chains, tunnels, proxies and \
gateways: latency as a user feels it, loss, jitter, pps and bandwidth."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Responder for every npt test: TCP and UDP echo on one port number.
    Serve(serve::ServeArgs),
    /// Line quality: UDP or TCP echo with sequence numbers and timestamps.
    Probe(probe::ProbeArgs),
    /// Starts an embedded server on loopback, probes it over UDP and TCP, prints the report.
    Demo(demo::DemoArgs),
    /// Simulated users: web over TCP, QUIC browsing, downloads/uploads, game-like UDP.
    Run(run::RunArgs),
    /// Gateway benchmark: HTTP/1.1 keep-alive or new connection per request, HTTP/2, virtual
    /// hosts, closed or open loop, cold start of a command.
    Http(http::HttpArgs),
    /// Hop RTT: TCP connect (or connect + one echo end to end, --echo), UDP echo (npt serve or
    /// any echo) or QUIC handshake, ping-style.
    Ping(ping::PingArgs),
    /// Capacity through npt serve on its one port: TCP or QUIC streams up, down or both (with
    /// the kernel's retransmits and RTT per stream), or UDP at a rate (delivered, loss, jitter).
    Bulk(bulk::BulkArgs),
    /// A relay chain's waterfall: each segment's RTT measured from its upstream hop (via hop
    /// agents), their sum, the chain's own RTT, and the relays' cost.
    Trace(trace::TraceArgs),
    /// How long a NAT or relay keeps an idle UDP flow (or TCP connection) alive, and whether an
    /// expired flow comes back from a new source port (npt serve at the far end calls each flow
    /// back).
    Lifetime(lifetime::LifetimeArgs),
    /// The largest datagram that crosses each way, whether PMTUD works (an ICMP came back) or
    /// larger ones vanish (a black hole, bracketed), and where the path fragments.
    Mtu(mtu::MtuArgs),
    /// Each layer's setup cost (TCP, SOCKS5 or HTTP CONNECT, TLS, QUIC 0-RTT, the first byte)
    /// in ms and in round trips, flagged where it took more than its protocol needs.
    Setup(setup::SetupArgs),
    /// Joins the results of the parts of a segmented run (--segment i/n) into one, exactly.
    Merge(merge::MergeArgs),
    /// Results side by side against theoretical latency (the forwarding-scenario table).
    Compare(compare::CompareArgs),
    /// Renders a saved result again: text, JSON, CSV, Markdown or HTML with charts; or a range
    /// of a monitor's history as one result (--from).
    Report(report::ReportArgs),
    /// Watches every path on a schedule: history kept exactly in SQLite, a dashboard, alerts,
    /// OpenMetrics for Prometheus.
    Monitor(monitor::MonitorArgs),
    /// Several hosts on this box: network namespaces joined by emulated links (delay, jitter,
    /// loss, rate), services on them, scenarios across them (root).
    Lab(lab::LabArgs),
    /// Prints a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(manual::CompletionsArgs),
    /// Prints a manual page (roff), or writes them all with --out-dir.
    Man(manual::ManArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.cmd {
        Command::Serve(a) => serve::run(a),
        Command::Probe(a) => probe::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Run(a) => run::run(a),
        Command::Http(a) => http::run(a),
        Command::Ping(a) => ping::run(a),
        Command::Bulk(a) => bulk::run(a),
        Command::Trace(a) => trace::run(a),
        Command::Lifetime(a) => lifetime::run(a),
        Command::Mtu(a) => mtu::run(a),
        Command::Setup(a) => setup::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Report(a) => report::run(a),
        Command::Monitor(a) => monitor::run(a),
        Command::Lab(a) => lab::run(a),
        Command::Completions(a) => manual::completions(a),
        Command::Man(a) => manual::man(a),
    };
    match result {
        Ok(code) => code,
        Err(err) => exit_for(&err),
    }
}

fn exit_for(err: &anyhow::Error) -> ExitCode {
    if let Some(u) = err.downcast_ref::<UsageError>() {
        eprintln!("npt: {u}");
        return ExitCode::from(2);
    }
    if let Some(io) = err.downcast_ref::<std::io::Error>() {
        if io.kind() == std::io::ErrorKind::BrokenPipe {
            return ExitCode::SUCCESS;
        }
    }
    eprintln!("npt: {}", one_line(err));
    ExitCode::from(1)
}

/// The error and its causes on one line, each said once: many errors already spell their
/// source in their own message (`cannot listen on …: Address already in use`), which
/// anyhow's `{:#}` would then print a second time.
fn one_line(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot listen on 127.0.0.1:1: {source}")]
    struct Bind {
        source: std::io::Error,
    }

    #[test]
    fn a_cause_already_in_the_message_is_said_once() {
        let io = std::io::Error::from(std::io::ErrorKind::AddrInUse);
        let text = io.to_string();
        let e = anyhow::Error::new(Bind { source: io });
        assert_eq!(
            one_line(&e),
            format!("cannot listen on 127.0.0.1:1: {text}")
        );
        let e = anyhow::anyhow!("inner").context("outer");
        assert_eq!(one_line(&e), "outer: inner");
    }
}
