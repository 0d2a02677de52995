//! `npt lab`: several hosts on one Linux box. Nodes are network namespaces; links are pairs of
//! TUN devices joined by npt's user-space link emulator ([`npt_link`]: delay, jitter, loss,
//! duplication, reordering, rate), since many kernels (this one included) have no netem;
//! services (npt serve, socat, haproxy, any command) run on nodes.
//!
//! [`topology`] reads and checks the file, [`plan`] turns it into addresses and routes (pure,
//! tested without root), and [`runtime`] builds and removes it (root).
#![deny(clippy::indexing_slicing)] // parses a user-written topology file: see `[workspace.lints]`

pub mod change;
pub mod control;
pub mod duty;
pub mod ecn;
pub mod netns;
pub mod plan;
mod process;
pub mod pump;
pub mod runtime;
pub mod show;
pub mod status;
pub mod topology;
pub mod transit;
pub mod tun;

pub use plan::Plan;
pub use runtime::{Lab, LabError, LabOptions};
pub use status::LabStatus;
pub use topology::{Topology, TopologyError};
