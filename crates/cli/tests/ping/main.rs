//! `npt ping`, `npt trace`, `npt lifetime` and `npt mtu` end to end on loopback: one segment measured from
//! here or by a hop agent (`--from`), a relay chain's segments in one waterfall, and an idle
//! flow's lifetime on a path that forgets nothing, the datagram sizes that cross, and each
//! layer's setup cost (`npt setup`).
#![cfg(test)] // clippy.toml: test helpers count as tests

#[path = "../common/mod.rs"]
pub mod common;
#[path = "../serve_util/mod.rs"]
pub mod serve_util;

mod end_to_end;
mod hop;
mod lifetime;
mod mtu;
mod setup;
mod trace;
mod trace_marking;
mod trace_mtu;
