//! `npt compare` end to end: result files and scenario files run as child `npt` processes, hops
//! measured by a hop agent, noise that is not a finding.
#![cfg(test)] // clippy.toml: test helpers count as tests

#[path = "../common/mod.rs"]
pub mod common;

mod children;
mod end_to_end;
mod measured;
mod noise;
