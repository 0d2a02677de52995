//! The server's authenticated sessions for a datagram socket: one per source address, each
//! with its key and a replay window over sequence numbers. Bounded: idle sessions are
//! forgotten, and when the table is still full a new handshake is refused (the sessions
//! already there are never evicted by strangers).

use std::collections::HashMap;
use std::net::SocketAddr;

use super::handshake::ServerStep;
use super::{AuthError, Dir, ServerAuth, SessionKey, COOKIE_LEN};
use crate::frame::be64;

/// Sequence numbers remembered behind the highest seen (reordering tolerated).
pub const REPLAY_WINDOW: u64 = 1024;
const WORDS: usize = (REPLAY_WINDOW / 64) as usize;

/// RFC 4303-style anti-replay window: the highest sequence number seen and a bitmap of the
/// [`REPLAY_WINDOW`] numbers below it. Older numbers are refused as replays.
#[derive(Clone, Debug, Default)]
pub struct ReplayWindow {
    top: Option<u64>,
    bits: [u64; WORDS],
}

impl ReplayWindow {
    #[allow(clippy::cast_possible_truncation, clippy::indexing_slicing)]
    fn bit(&mut self, seq: u64) -> (&mut u64, u64) {
        // NO-PANIC: `i < REPLAY_WINDOW = 64 * WORDS`, so the cast is lossless and `i / 64 < WORDS`
        // indexes the fixed `[u64; WORDS]`.
        let i = (seq % REPLAY_WINDOW) as usize;
        (&mut self.bits[i / 64], 1u64 << (i % 64))
    }

    /// True (and `seq` is remembered) if `seq` was not seen before and is not too old.
    pub fn accept(&mut self, seq: u64) -> bool {
        match self.top {
            None => {
                self.top = Some(seq);
                let (w, m) = self.bit(seq);
                *w |= m;
                true
            }
            Some(top) if seq > top => {
                // Clear the slots of the numbers skipped over (they are new).
                let gap = seq - top;
                if gap >= REPLAY_WINDOW {
                    self.bits = [0; WORDS];
                } else {
                    for s in top + 1..seq {
                        let (w, m) = self.bit(s);
                        *w &= !m;
                    }
                }
                self.top = Some(seq);
                let (w, m) = self.bit(seq);
                *w |= m;
                true
            }
            Some(top) => {
                if top - seq >= REPLAY_WINDOW {
                    return false;
                }
                let (w, m) = self.bit(seq);
                if *w & m != 0 {
                    return false;
                }
                *w |= m;
                true
            }
        }
    }
}

struct Entry {
    key: SessionKey,
    cookie: [u8; COOKIE_LEN],
    issued: u64,
    replay: ReplayWindow,
    last: u64,
}

/// A datagram socket's sessions.
pub struct Sessions {
    auth: ServerAuth,
    map: HashMap<SocketAddr, Entry>,
    max: usize,
    idle_ns: u64,
}

impl Sessions {
    /// At most `max` sessions; one idle for `idle_ns` may be forgotten.
    pub fn new(auth: ServerAuth, max: usize, idle_ns: u64) -> Sessions {
        Sessions {
            auth,
            map: HashMap::new(),
            max,
            idle_ns,
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if `peer` has a session (cheap: no MAC computed).
    pub fn has_session(&self, peer: &SocketAddr) -> bool {
        self.map.contains_key(peer)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Handles a handshake message from `peer`; the reply (as long as the message) is in
    /// `out` when this returns `Ok`. An Auth repeated for the session it created is answered
    /// again without resetting it; a newer valid Auth from the same address replaces it.
    pub fn handshake(
        &mut self,
        now: u64,
        peer: SocketAddr,
        msg: &[u8],
        out: &mut [u8],
    ) -> Result<(), AuthError> {
        match self.auth.handle(now, peer, msg, out)? {
            ServerStep::Challenge => Ok(()),
            ServerStep::Accepted {
                key,
                cookie,
                issued,
            } => {
                if let Some(e) = self.map.get_mut(&peer) {
                    if e.cookie == cookie {
                        return Ok(()); // the client's repeat: our Accept was lost
                    }
                    if issued < e.issued {
                        return Err(AuthError::Replay); // an older Auth replayed
                    }
                } else if self.map.len() >= self.max {
                    let idle = self.idle_ns;
                    self.map.retain(|_, e| now.saturating_sub(e.last) < idle);
                    if self.map.len() >= self.max {
                        return Err(AuthError::SessionsFull);
                    }
                }
                self.map.insert(
                    peer,
                    Entry {
                        key,
                        cookie,
                        issued,
                        replay: ReplayWindow::default(),
                        last: now,
                    },
                );
                Ok(())
            }
        }
    }

    /// Verifies a frame from `peer`: its session, its tag, and that its sequence number is
    /// new. Returns the session's key, to seal the reply with.
    pub fn open(
        &mut self,
        now: u64,
        peer: SocketAddr,
        frame: &[u8],
    ) -> Result<&SessionKey, AuthError> {
        let e = self.map.get_mut(&peer).ok_or(AuthError::UnknownSession)?;
        e.key.open(Dir::ToServer, frame)?;
        // `open` succeeded, so `frame` holds a whole header (sequence number at 24..32).
        let seq = frame.get(24..32).map_or(0, be64);
        if !e.replay.accept(seq) {
            return Err(AuthError::Replay);
        }
        e.last = now;
        Ok(&e.key)
    }
}
