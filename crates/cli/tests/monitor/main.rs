//! `npt monitor` end to end on loopback: stored rounds read back, kills and restarts that lose
//! nothing, alerts, and the dashboard drawn in headless Chromium. The monitor against lab paths
//! of known truth is in the lab binary (`lab/monitor.rs`).
#![cfg(test)] // clippy.toml: test helpers count as tests

#[path = "../common/mod.rs"]
pub mod common;

mod classified;
mod end_to_end;
mod lifetime;
mod mtu;
mod page;
mod setup;
