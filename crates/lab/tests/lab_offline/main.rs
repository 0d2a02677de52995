//! The lab's integration tests that need no root, one binary (each test binary links the whole
//! tree): the fuzz stand-ins of the topology file and of the transit matcher. Not named `lab`:
//! `.cargo/runner.sh` gives binaries named `lab-*` (the cli's lab tests) four test threads.
#![cfg(test)] // clippy.toml: test helpers count as tests

mod topology_fuzz;
mod transit_fuzz;
