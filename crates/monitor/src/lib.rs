//! `npt monitor`: every path watched on a schedule, its history kept exactly, shown, and
//! alerted on — one process, one SQLite file, and OpenMetrics for Prometheus when one box is
//! not enough.
//!
//! A round of a target is an ordinary run of its workload (`ping`, `probe`, `trace`, `http`,
//! `bulk`, `probe --under-load`), whose result document is kept as its stats value
//! ([`kinds`]), so rounds and their rollups add exactly and any range reads back as one result
//! document ([`range`]). The cli hands each target's round to the monitor as a [`Runner`]
//! (it owns the flags of every workload and their checks); everything else is here:
//!
//! - [`config`]: the TOML file and the quick form, checked, keys named in errors ([`key`]);
//! - [`kinds`], [`round`]: what a round keeps, by kind, and how it ended;
//! - [`range`]: any range of a target's history as one result document;
//! - [`schedule`], [`rollup`], [`alert`]: sans-IO, on the time they are given;
//! - [`store`]: the history behind a trait, in memory or SQLite;
//! - [`writer`]: the one thread that writes the store, with a bounded backlog when it cannot;
//! - [`driver`]: the runtime that starts rounds on time, bounds them and feeds the rest;
//! - [`server`], [`dashboard`], [`metrics`], [`live`]: the listener, its page, its scrape and
//!   what they read of the running monitor;
//! - [`notify`]: webhooks and commands for alert changes.

pub mod alert;
pub mod config;
pub mod dashboard;
pub mod driver;
pub mod key;
pub mod kinds;
pub mod live;
pub mod metrics;
pub mod notify;
pub mod range;
pub mod rollup;
pub mod round;
pub mod schedule;
pub mod server;
pub mod store;
pub mod writer;

pub use driver::{run, Control, Reload, RunError, Runner, Setup, Target};
