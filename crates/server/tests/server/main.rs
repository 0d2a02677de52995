//! The responder's integration tests, one binary (each test binary links the whole tree), over
//! real loopback sockets: the responders' answers, `--token`, the bulk responder, deadlines,
//! per-source limits, echo loops, idle holds, QUIC streams and the reflect block. A module was
//! once a binary of its own; each test takes its module's turn (`npt_testkit::turn`), so that
//! modules that measure time or flood the server still run one after another.
#![cfg(test)] // clippy.toml: test helpers count as tests

mod util;

mod auth;
mod bulk;
mod deadlines;
mod echo_loop;
mod idle;
mod limits;
mod quic_streams;
mod reflect;
mod responders;
