//! npt's wire format and the pure bookkeeping around it: frames and raw stamps, the hop
//! agent's request and reply, bulk requests and reports, STAMP's test packets (RFC 8762),
//! payload fill, the sequence window (loss, late, duplicate, reorder) and pacing schedules.
//!
//! Nothing here touches a socket or reads a clock: every function takes bytes and `now` (ns)
//! as arguments, so all of it is tested with fixed bytes and a virtual clock.
#![deny(clippy::indexing_slicing)] // parses peer frames and stamps: see `[workspace.lints]`

pub mod auth;
pub mod bucket;
pub mod bulk;
pub mod fill;
pub mod frame;
pub mod hop;
pub mod idle;
#[cfg(test)]
mod mangle;
pub mod marking;
pub mod mtu;
pub mod pacing;
pub mod raw;
pub mod reflect;
pub mod stamp;
pub mod window;

pub use bucket::TokenBucket;
pub use fill::Fill;
pub use frame::{Header, Kind, HEADER_LEN, MAGIC};
pub use pacing::{Pacer, Pacing};
pub use raw::{RawStamp, RAW_HEADER_LEN};
pub use window::{Outcome, Slot, Window};

/// Why bytes could not be decoded. One truncation error for every short read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated { need: usize, have: usize },
    #[error("not an npt frame (bad magic)")]
    BadMagic,
    #[error("unsupported npt wire version {0}")]
    BadVersion(u8),
    #[error("unknown frame kind {0}")]
    BadKind(u8),
    #[error("bad frame length {0}")]
    BadLength(u32),
    #[error("bad bulk direction {0}")]
    BadDirection(u8),
}
