//! `npt probe` end to end on loopback, as a user runs it: the figures against real peers and
//! faulty ones, the receive stamps, STAMP against an independent implementation, under load,
//! through proxies and relays, split into segments, the per-packet log, the flags every test
//! takes, and who is to blame for a loss.
#![cfg(test)] // clippy.toml: test helpers count as tests

#[path = "../common/mod.rs"]
pub mod common;
#[path = "../serve_util/mod.rs"]
pub mod serve_util;

mod attribution;
mod end_to_end;
mod faults;
mod hardening;
mod marking;
mod packets;
mod relay;
mod rx_stamps;
mod segment;
mod source_flags;
mod stamp;
mod under_load;
mod via;
mod wallclock;
