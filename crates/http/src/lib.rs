//! `npt http`: the HTTP gateway benchmark (as DynaPM's gateway benchmark measured). The HTTP responder behind
//! `npt serve --http` is in npt-server (`http_server`), with the other responders.
//!
//! Layout, sans-IO first: [`schedule`] (open-loop tickets, host rotation) and [`collect`]
//! (events → histograms, intervals, the result body) are plain code tested with a virtual
//! clock; [`pacer`] is the thread that releases open-loop requests on time; [`client`] is the thin tokio driver that opens sockets and emits events; [`h1`] is
//! its lean HTTP/1.1 connection (h2 goes through the `h2` crate); [`coldstart`] spawns and
//! reaps the command under test; [`tls`] is the client's rustls setup; [`workload`] is the
//! contract with the cli (run a [`Config`], hand over intervals, return the body).
#![deny(clippy::indexing_slicing)] // parses HTTP responses from the network

pub mod client;
pub mod coldstart;
pub mod collect;
pub mod h1;
pub mod inflight;
pub mod metrics;
pub mod pacer;
pub mod schedule;
pub mod setup;
pub mod threads;
pub mod tls;
pub mod workload;

pub use client::{run, Config, Target};

/// Errors of the library; the CLI maps `Url`/`Config` to usage errors (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("bad URL {0:?}: {1}")]
    Url(String, String),
    #[error("{0}")]
    Config(String),
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("{0}")]
    Protocol(String),
    #[error("cold start: {0}")]
    ColdStart(String),
}
