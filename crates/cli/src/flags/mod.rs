//! The flag groups several subcommands flatten (`#[command(flatten)]`), each with one meaning
//! everywhere and validated in one place: the token, TLS trust, output, source address, proxy,
//! segment, metrics, attempt timing and the run's `--duration`.

pub mod auth;
pub mod duration;
pub mod metrics;
pub mod output;
pub mod segment;
pub mod source;
pub mod timing;
pub mod trust;
pub mod via;
