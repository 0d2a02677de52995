//! What holds for the whole binary and the repository: the layering of the crates, generated
//! docs and manifests, the supply chain, what a new user meets first, output files that are
//! never lost, reports and the live view, and `--metrics` scraped by a real Prometheus.
#![cfg(test)] // clippy.toml: test helpers count as tests

#[path = "../common/mod.rs"]
pub mod common;

mod deploy;
mod generated_docs;
mod layering;
mod live;
mod metrics;
mod output;
mod polish;
mod report;
mod supply_chain;
