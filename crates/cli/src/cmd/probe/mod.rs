//! `npt probe`: line quality by echo. A probe's arguments go one way, each step in its own
//! file: [`args`] (clap's parse, or the line tester's XML config beside it) → [`config`] (each
//! value checked into the engine's `ProbeConfig`, an error naming its flag or XML attribute:
//! target, pacing, stop, [`framing`], stages, the load of [`under_load`], the clock assumption
//! of [`owd`]) → [`checks::reachable`] (the addresses that answer, just before the run) →
//! [`execute`] (the run sequence every measuring subcommand shares) → [`render`] (banner,
//! stage lines, the report).

mod args;
mod checks;
mod config;
mod framing;
mod owd;
mod render;
mod target;
mod under_load;

use std::process::ExitCode;

pub use args::ProbeArgs;
pub use config::{config, pacing};
pub use render::banner;
pub use under_load::phases;

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
