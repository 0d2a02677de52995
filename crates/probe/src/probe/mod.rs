//! `npt probe`: line quality by echo. [`session`] is the sans-IO measurement of one flow;
//! [`driver`] moves it over UDP or TCP sockets; [`runner`] runs many flows on threads, prints
//! stage lines and builds the result document; [`stream`] cuts a TCP echo stream back into
//! replies; [`xml`] reads the line tester's XML config; [`auth`] does the `--token` handshake.

pub mod session;

pub mod auth;
pub mod driver;
pub mod runner;
#[cfg(test)]
mod session_progress_tests;
#[cfg(test)]
mod session_tests;
pub mod stream;
pub mod xml;
