//! `npt ping` and `npt trace` end to end on loopback: one segment measured from here or by a hop
//! agent (`--from`), and a relay chain's segments in one waterfall.
#![cfg(test)] // clippy.toml: test helpers count as tests

#[path = "../common/mod.rs"]
pub mod common;
#[path = "../serve_util/mod.rs"]
pub mod serve_util;

mod end_to_end;
mod hop;
mod trace;
