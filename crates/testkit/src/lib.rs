//! What npt's tests share across crates, so that no test reaches into another crate's
//! `tests/` directory with `#[path]`: the headless-Chromium check of HTML charts
//! ([`chromium`]), seeded random-input loops for the `*_fuzz.rs` stand-ins of the cargo-fuzz
//! targets ([`fuzz`]), child processes killed on drop and waited for until they listen
//! ([`process`]), the real proxies the `--via` tests drive ([`proxies`]), forged and tapped
//! UDP over raw sockets for the hostile tests ([`raw`]), and result validation against the
//! checked-in JSON Schemas ([`schema`]), and turns between the modules of a crate's one test
//! binary ([`turn`]).
//!
//! Helpers used by one crate only stay in that crate's `tests/`.

pub mod chromium;
pub mod fuzz;
pub mod process;
pub mod proxies;
pub mod raw;
pub mod schema;
pub mod turn;
