//! `npt serve` as a user exposes it: its token on every protocol, its limits on files and
//! connections, and its budget's refusals told apart from the path's loss.
#![cfg(test)] // clippy.toml: test helpers count as tests

#[path = "../common/mod.rs"]
pub mod common;
#[path = "../serve_util/mod.rs"]
pub mod serve_util;

mod auth;
mod limits;
mod refusals;
mod token;
