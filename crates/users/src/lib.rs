//! `npt run`: simulated users browsing the web over TCP, browsing over QUIC, moving large
//! files and playing a game over UDP against `npt serve`, measured per request in HDR
//! histograms (NPT's user model from the forwarding-scenario table, with correct percentiles and flat memory).
//!
//! The decisions of a user live in [`model`] (pure, seeded, virtual-clock tested); the
//! sockets in [`driver`]; the measurements in [`collect`] (and the per-protocol setup block
//! they make, [`setup`]); the contract with the cli (run a
//! [`RunConfig`], hand over intervals, return the body) in [`workload`].

pub mod collect;
pub mod config;
pub mod driver;
pub mod inflight;
pub mod metrics;
pub mod model;
pub mod setup;
pub mod workload;

pub use config::{Activity, ConfigError, Load, Mix, Proto, Range, Shape, Targets};
pub use driver::{RunConfig, RunError};
pub use npt_client::QuicTrust;
