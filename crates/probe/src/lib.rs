//! `npt probe`: the sans-IO probe session (what is measured and how it is counted), the thin
//! drivers that move its bytes through real sockets, the runner and the line tester's XML reader.
//! (The crate was `npt-engine` until it was named after the one thing it holds.)

pub mod probe;
