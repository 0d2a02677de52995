//! `npt probe`: line quality by echo. [`session`] is the sans-IO measurement of one flow;
//! [`driver`] moves it over UDP or TCP sockets; [`runner`] runs many flows on threads, hands
//! over their merged stages and builds the result body; [`workload`] is the probe's side of the
//! contract with the cli; [`stream`] cuts a TCP echo stream back into replies; [`xml`] reads
//! the line tester's XML config; [`auth`] does the `--token` handshake; [`load`] runs the
//! bulk streams of `--under-load` beside the flows; [`waiting`] says when the send phase is
//! over and the probe waits for the last replies.

pub mod session;

pub mod auth;
pub mod driver;
#[cfg(test)]
mod fake_far;
#[cfg(test)]
mod fake_link;
pub mod kernel;
pub mod load;
pub mod runner;
#[cfg(test)]
mod session_echo_tests;
#[cfg(test)]
mod session_hold_tests;
#[cfg(test)]
mod session_log_tests;
#[cfg(test)]
mod session_progress_tests;
#[cfg(test)]
mod session_split_tests;
#[cfg(test)]
mod session_stamp_tests;
#[cfg(test)]
mod session_tests;
pub mod stream;
pub mod waiting;
pub mod workload;
pub mod xml;
