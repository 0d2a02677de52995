//! Who answers: a reply is counted by the far end that sent it ([`Responder`]: `npt serve`, a
//! STAMP reflector, or a plain echo that returned the request unchanged), so the report can
//! say which far end it measured and what its figures can be; and what a reply that is none of
//! them looked like ([`describe_foreign`]: its length, its first bytes, what it is not), so a
//! run whose replies are all foreign says why instead of "lost 100 %".
//!
//! A plain echo is recognized by its bytes: the request itself, unchanged — npt's magic and
//! version, kind still `Echo`, this flow, the status, flags, reply length and token as sent,
//! and the sequence number and send stamp of a packet in flight (the window checks those, as
//! for any reply). Nothing else sends a flow's own requests back to it. Under `--token` it is
//! never a reply: the server's answers are sealed toward the client, and an unchanged request
//! is sealed toward the server, so it proves nothing about the server (it stays foreign, and
//! [`describe_foreign`] says what it was).

use npt_wire::frame::{Header, Kind};

pub use npt_result::far_end::Answered;

use super::{Framing, SessionConfig};

/// The far end a reply came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Responder {
    /// `npt serve`'s framed echo reply.
    NptServe,
    /// A STAMP reflector's answer.
    Stamp,
    /// The request itself, returned unchanged (or, with `--raw`, any echo that kept the stamp).
    Echo,
}

/// Counts one reply by its far end.
pub(super) fn count(a: &mut Answered, r: Responder) {
    match r {
        Responder::NptServe => a.npt_serve += 1,
        Responder::Stamp => a.stamp += 1,
        Responder::Echo => a.echo += 1,
    }
}

/// Whether `h` is the header of one of this flow's own requests as it was sent (the window
/// checks its sequence number and stamp). `flags` is what the session writes (a `--token`
/// seal adds its own flag).
pub(super) fn is_own_request(cfg: &SessionConfig, flags: u16, h: &Header) -> bool {
    let Framing::Framed { token } = cfg.framing else {
        return false;
    };
    h.kind == Kind::Echo
        && h.flow == cfg.flow
        && h.status == cfg.mark.map_or(0, npt_wire::marking::request_status)
        && h.reply_len == 0
        && h.flags & !npt_wire::auth::AUTH_FLAG == flags
        // A `--token` seal writes its tag over the token field.
        && (h.token == token || cfg.auth.is_some())
}

/// Bytes of a foreign reply shown in hex.
const HEAD: usize = 16;

/// What a foreign reply looked like, for people: `64 B, 1e4e5054 01010000 …: not an npt frame`
/// and what to try.
pub(super) fn describe_foreign(cfg: &SessionConfig, flags: u16, bytes: &[u8]) -> String {
    let mut hex = String::new();
    for (i, b) in bytes.iter().take(HEAD).enumerate() {
        if i > 0 && i % 4 == 0 {
            hex.push(' ');
        }
        hex.push_str(&format!("{b:02x}"));
    }
    if bytes.len() > HEAD {
        hex.push_str(" …");
    }
    let what = what_it_is(cfg, flags, bytes);
    format!("{} B, {hex}: {what}", bytes.len())
}

fn what_it_is(cfg: &SessionConfig, flags: u16, bytes: &[u8]) -> String {
    let sent = cfg.size;
    match cfg.framing {
        Framing::Framed { .. } => match Header::decode(bytes) {
            Err(_) if bytes.len() != sent => format!(
                "not an npt frame, and not the {sent} B sent: a service that is not an echo, \
                 or an echo that changes bytes (--raw keeps the stamp in the payload)"
            ),
            Err(_) => "not an npt frame: an echo that changes bytes? (try --raw, which keeps \
                       the stamp in the payload)"
                .to_string(),
            Ok(h) if h.flow != cfg.flow => {
                format!("an npt frame of another flow ({}): not this run's", h.flow)
            }
            Ok(h) if cfg.auth.is_some() && is_own_request(cfg, flags, &h) => {
                "this flow's own request returned unchanged: a plain echo, which cannot \
                 answer a --token session (leave --token out to measure through it)"
                    .to_string()
            }
            Ok(h) if bytes.len() != sent || h.frame_len as usize != bytes.len() => format!(
                "this flow's frame, but {} B where {sent} B were sent: something on the path \
                 cut or padded it",
                bytes.len()
            ),
            Ok(h) if cfg.auth.is_some() => format!(
                "this flow's {:?} frame, but its --token seal does not verify",
                h.kind
            ),
            Ok(h) => format!(
                "this flow's frame, but not an answer to it (kind {:?}, status {})",
                h.kind, h.status
            ),
        },
        Framing::Raw => format!(
            "no raw stamp of this flow at its front (sent {sent} B): not an echo of this run"
        ),
        Framing::Stamp(_) => {
            "not a STAMP answer to this flow (or its HMAC does not verify)".to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_bytes_are_shown_and_named() {
        let cfg = crate::probe::fake_link::cfg(npt_wire::Pacing::Rate { pps: 1.0 });
        let d = describe_foreign(&cfg, 0, b"hello, world, this is not it");
        assert_eq!(
            d,
            "28 B, 68656c6c 6f2c2077 6f726c64 2c207468 …: not an npt frame, and not the 64 B \
             sent: a service that is not an echo, or an echo that changes bytes (--raw keeps \
             the stamp in the payload)"
        );
    }
}
