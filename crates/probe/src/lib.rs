//! `npt probe`: the sans-IO probe session (what is measured and how it is counted), the thin
//! drivers that move its bytes through real sockets, the runner and the line tester's XML reader.
//! (The crate was `npt-engine` until it was named after the one thing it holds.)
//!
//! Its public names are here at the root, each said once (`npt_probe::Session`,
//! `npt_probe::ProbeConfig`, `npt_probe::xml::parse`); the modules under `probe/` are its own.

pub mod agent;
mod probe;

pub use probe::load::LoadPlan;
pub use probe::runner::{OnWaiting, PacingSpec, ProbeConfig, Proto, RxStamp, StageSpec, Waiting};
pub use probe::session::{
    Answered, Arrival, ClockSync, DirTotals, FarEnd, Framing, Notices, Parsed, Reflect, RefusalWhy,
    Responder, Session, SessionConfig, Stage, StopReason,
};
pub use probe::workload::length;
pub use probe::xml;
