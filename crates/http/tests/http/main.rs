//! The HTTP engine's integration tests, one binary (each test binary links the whole tree):
//! real benchmarks against the in-process responder, servers that misbehave, the responder's
//! hardening, `--cold-start`, the open-loop timer, and the HTTP/1.1 parser's fuzz stand-in.
//! A module was once a binary of its own; each test takes its module's turn
//! (`npt_testkit::turn`), so that modules still run one after another.
#![cfg(test)] // clippy.toml: test helpers count as tests

mod common;

mod cold_start;
mod end_to_end;
mod faults;
mod h1_fuzz;
mod hardening;
mod open_loop_timer;
