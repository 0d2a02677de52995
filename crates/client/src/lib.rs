//! What the client side of several engines shares, so that no engine depends on another for
//! it: the keyed `--token` handshake over a blocking socket ([`auth`], the probe and ping's
//! UDP) and over tokio ([`auth_async`], run and ping), the QUIC client endpoint with its
//! certificate trust and error classification ([`quic`], run and ping), and the
//! `tcp|udp|quic://HOST:PORT` targets of ping and bulk ([`target`]), where a client's
//! packets come from and how they are marked ([`source`]: `-4`/`-6`, `--bind`, `--dscp`), and
//! the one-event-loop-per-core runtime threads of http and run ([`workers`]). Beside
//! `npt-tls`, which holds the certificate verifier both sides use.

pub mod auth;
pub mod auth_async;
pub mod quic;
pub mod source;
pub mod target;
pub mod workers;

pub use quic::QuicTrust;
