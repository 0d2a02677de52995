//! `npt serve` and the hop agent attacked on loopback the way a hostile peer would: bad frames,
//! slowloris, resets, QUIC clients that misbehave, and requests that would make the server a
//! reflector or an amplifier. Each module takes its turn (`common::turn`): they flood a server
//! and read its memory and descriptors, so two modules at once would measure each other.
#![cfg(test)] // clippy.toml: test helpers count as tests

#[path = "../common/mod.rs"]
pub mod common;
#[path = "../serve_util/mod.rs"]
pub mod serve_util;

mod frames;
mod hop;
mod notices;
mod quic;
mod rst;
mod udp_down;
