//! One folder per subcommand: its flags (clap derive), their validation into the engine's
//! config, its run and its rendering. Subcommands share only through [`crate::flags`] (the flag
//! groups several of them flatten) and [`crate::execute`] (the run sequence around a workload);
//! `compare`, `lab` and `monitor` drive other subcommands' runs from those subcommands' own
//! parsed arguments.

pub mod bulk;
pub mod compare;
pub mod demo;
pub mod http;
pub mod lab;
pub mod lifetime;
pub mod manual;
pub mod merge;
pub mod monitor;
pub mod mtu;
pub mod ping;
pub mod probe;
pub mod report;
pub mod run;
pub mod serve;
pub mod setup;
pub mod trace;
