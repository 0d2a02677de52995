//! The ping engine's integration tests, one binary (each test binary links the whole tree): the
//! fuzz stand-ins of the UDP echo replies and of the ICMP echo decoder.
#![cfg(test)] // clippy.toml: test helpers count as tests

mod icmp_fuzz;
mod reply_fuzz;
