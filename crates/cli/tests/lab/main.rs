//! `npt lab` and everything measured through it (root: network namespaces joined by emulated
//! links whose delay, loss and rate are known): the lab itself, each engine against the links'
//! own counters, the example topologies, and the monitor's truth. Without root these print
//! SKIPPED and pass. One binary, so one link; its modules take turns (`common::turn`) where they
//! measure time, as they did when each was a binary of its own.
#![cfg(test)] // clippy.toml: test helpers count as tests

#[path = "../common/mod.rs"]
pub mod common;

mod bulk;
mod bulk_limits;
mod busy_link;
mod directions;
mod end_to_end;
mod examples;
mod hop;
mod http_setup;
mod lifetime;
mod loaded;
mod marking;
mod monitor;
mod monitor_prometheus;
mod mtu;
mod rate;
mod run_figures;
mod set;
mod setup;
mod setup_blocks;
mod stamp;
mod tcpinfo;
mod trace;
mod trace_marking;
mod trace_monitor;
mod trace_mtu;
