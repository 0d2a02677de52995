//! `npt demo`: no arguments needed. Starts an embedded `npt serve` on loopback, probes it over
//! UDP (open loop, fixed rate) and TCP (first-packet and total latency, as quic-tun's latency test), and prints
//! both reports.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use npt_probe::{PacingSpec, ProbeConfig, Proto, StageSpec};
use npt_result::workload::{Stop, Workload};
use npt_server::{ServeConfig, Server};
use npt_wire::Fill;

use crate::cmd::probe::banner;
use crate::execute::RunCommand;
use crate::flags::duration::{self, DurationArgs};

#[derive(Args, Debug)]
#[command(mut_args(duration::says("How long the UDP probe runs", Some("3s"))))]
pub struct DemoArgs {
    #[command(flatten)]
    pub duration: DurationArgs,
    /// UDP packets per second.
    #[arg(long, default_value_t = 1000.0, allow_negative_numbers = true)]
    pub pps: f64,
}

pub fn run(a: DemoArgs) -> anyhow::Result<ExitCode> {
    let duration = a.duration.get();
    if duration.is_zero() {
        return Err(crate::usage!("--duration must be positive"));
    }
    crate::usage::pps_flag("--pps", a.pps, 1e6)?;
    let server = Server::start(ServeConfig {
        listen: vec!["127.0.0.1:0".parse()?],
        ..ServeConfig::default()
    })?;
    let addr = server.local_addrs()[0];
    println!("npt demo: embedded server on tcp+udp {addr}\n");
    let stop = Arc::new(Stop::new());
    crate::execute::signals::install(&stop)?;
    let base = ProbeConfig {
        proto: Proto::Udp,
        target: addr.to_string(),
        addr,
        raw: false,
        token: None,
        stamp_key: None,
        size: 64,
        fill: Fill::Random,
        verify: true,
        pacing: PacingSpec::Rate { pps: a.pps },
        loss_timeout: Duration::from_secs(1),
        count: None,
        duration: Some(duration),
        clients: 1,
        threads: 1,
        stage: StageSpec::Time(Duration::from_secs(1)),
        behind_threshold: Duration::from_millis(1),
        via: None,
        under_load: None,
        rx_stamp: Default::default(),
        spin: false,
        // The embedded server is on loopback: one clock.
        clock: npt_probe::ClockSync::SameHost,
        source: Default::default(),
        mark: None,
        on_waiting: Default::default(),
    };
    let tcp = ProbeConfig {
        proto: Proto::Tcp,
        size: 1000,
        pacing: PacingSpec::Interval {
            interval: Duration::from_millis(1),
        },
        count: Some(1000),
        duration: None,
        stage: StageSpec::Packets(250),
        ..base.clone()
    };
    let mut code = ExitCode::SUCCESS;
    for mut cfg in [base, tcp] {
        println!("{}", banner(&cfg));
        let done = cfg.run(&stop, &mut |p| println!("{}", ProbeConfig::line(p)))?;
        println!();
        let doc = crate::execute::document(&cfg, done, None)?;
        let mut out = std::io::stdout().lock();
        ProbeConfig::render(&mut out, &doc)?;
        out.flush()?;
        drop(out);
        if let Some(why) = ProbeConfig::failed(&doc.body) {
            eprintln!("npt probe: {why}");
            code = ExitCode::from(1);
        }
        println!();
    }
    drop(server);
    Ok(code)
}
