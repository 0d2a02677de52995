//! npt's measurement engines: sans-IO sessions (what is measured and how it is counted) and
//! the thin drivers that move their bytes through real sockets.

pub mod probe;
