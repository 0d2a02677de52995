//! The link emulator's integration tests, one binary (each test binary links the whole tree):
//! impairments on a virtual clock, a link reconfigured while it runs, link tables as topology
//! files write them, and the impairment strings' fuzz stand-in. No sockets, no time read.
#![cfg(test)] // clippy.toml: test helpers count as tests

mod config;
mod link;
mod reconfigure;
mod strings_fuzz;
