//! The load kinds end to end on loopback against `npt serve`: `npt http`, `npt run` and
//! `npt bulk` — their flags, their documents, and Ctrl-C.
#![cfg(test)] // clippy.toml: test helpers count as tests

#[path = "../common/mod.rs"]
pub mod common;

mod bulk;
mod http;
mod http_setup;
mod run;
