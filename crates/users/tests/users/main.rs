//! `npt run`'s engine against real sockets, one binary (each test binary links the whole tree):
//! the game measured by the probe's session, and the run's TCP, UDP and QUIC users against an
//! in-process `npt serve`. A module was once a binary of its own; each test takes its module's
//! turn (`npt_testkit::turn`), so that modules still run one after another.
#![cfg(test)] // clippy.toml: test helpers count as tests

mod game;
mod run;
