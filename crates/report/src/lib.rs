//! Renderers of the npt result document ([`npt_result`]): text, CSV, Markdown and HTML, and
//! the two tools that read several results, `compare` and `merge`. Nothing here measures: the
//! engines write results through `npt-result` and never depend on this crate.

pub mod compare;
pub mod directions;
pub mod html;
pub mod kinds;
pub mod lifetime;
pub mod merge;
pub mod page;
pub mod render;
pub mod text;
pub mod trace;
pub mod trace_marking;
pub mod trace_mtu;
pub mod trace_segments;
