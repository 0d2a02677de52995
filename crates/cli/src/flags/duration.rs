//! `--duration`/`-d`: how long a run sends, one flag with one type (a [`Duration`], in
//! [`parse_duration`]'s forms: `10s`, `2m`, `1.5h`, `500ms`, or bare seconds) in every
//! subcommand that has it. A subcommand says its own help and default with [`says`] (`npt
//! probe` has none: without `--duration` or `--count` it runs until Ctrl-C); `npt bulk` also
//! takes iperf3's `-t` ([`as_iperf3`]).

use std::time::Duration;

use clap::{Arg, Args};

use crate::usage::parse_duration;

/// The `--duration` group every timed subcommand flattens.
#[derive(Args, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DurationArgs {
    /// How long the run sends (e.g. 10s, 2m).
    #[arg(long, short = 'd', value_name = "DURATION", value_parser = parse_duration)]
    pub duration: Option<Duration>,
}

impl DurationArgs {
    /// The length asked for, or the subcommand's default (which clap fills in; zero only for
    /// args built without clap).
    pub fn get(&self) -> Duration {
        self.duration.unwrap_or_default()
    }
}

/// A subcommand's own help and default for `--duration`, for `#[command(mut_args(…))]`: set
/// in place, so the flag keeps its place in help, man pages and completions.
pub fn says(help: &'static str, default: Option<&'static str>) -> impl FnMut(Arg) -> Arg {
    move |a| {
        if a.get_id() != "duration" {
            return a;
        }
        let a = a.help(help);
        match default {
            Some(d) => a.default_value(d),
            None => a,
        }
    }
}

/// `npt bulk`'s `--duration`: iperf3's `-t` too, and its `DUR` as bulk's other times.
pub fn as_iperf3(a: Arg) -> Arg {
    if a.get_id() != "duration" {
        return a;
    }
    a.visible_short_alias('t').value_name("DUR")
}
