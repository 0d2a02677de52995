//! Cuts a TCP echo stream back into replies, and finds its step again when it loses it.
//!
//! Over TCP the probe's replies arrive as one byte stream; each reply is exactly one packet
//! (`size` bytes) starting with a magic (framed or raw). Cutting the stream into fixed chunks
//! works until a middlebox adds or drops a byte: from then on every chunk straddles two replies
//! and nothing would match again (4.7 million "foreign" replies against a garbage stream, with
//! "errors none"). So a chunk that is not one of ours is not consumed whole: the splitter
//! slides one byte at a time until a chunk parses again, and reports each loss of step with the
//! bytes it skipped — the driver counts a `protocol` error, and after [`MAX_SKIP`] bytes with
//! no reply in sight gives up on the connection and reconnects.
//!
//! What counts as a reply is the session's test (`Session::try_handle_reply`): a whole frame of
//! this flow — `npt serve`'s echo reply, or, from a plain TCP echo, the request itself with every
//! field as sent. Neither weakens the resynchronisation: a garbage stream matches neither, so
//! it still breaks after [`MAX_SKIP`] bytes rather than yielding replies.
//!
//! Pure code: bytes in, replies out; tests feed it streams with bytes inserted and removed.
#![deny(clippy::indexing_slicing)] // parses echo replies from the network: see `[workspace.lints]`

/// Bytes skipped in one loss of step before the connection is declared broken.
pub const MAX_SKIP: u64 = 64 * 1024;

#[derive(Debug)]
pub struct ReplyStream {
    size: usize,
    buf: Vec<u8>,
    /// Bytes skipped since the stream lost its step (0 = in step).
    skipping: u64,
}

/// What one [`ReplyStream::drain`] found besides the replies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Desync {
    /// Times the stream lost its step (a reply was expected and something else was there).
    pub lost_step: u32,
    /// Bytes skipped to find it again (or still skipping).
    pub skipped: u64,
    /// More than [`MAX_SKIP`] bytes skipped in one loss of step: the stream is garbage.
    pub broken: bool,
}

impl ReplyStream {
    pub fn new(size: usize) -> ReplyStream {
        ReplyStream {
            size: size.max(1),
            buf: Vec::new(),
            skipping: 0,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Forgets everything buffered (the connection was replaced).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.skipping = 0;
    }

    /// Hands every whole reply to `handle`, which returns false (and does nothing) when the
    /// bytes are not one of this flow's replies.
    pub fn drain(&mut self, mut handle: impl FnMut(&[u8]) -> bool) -> Desync {
        let mut d = Desync::default();
        let mut off = 0;
        // `size >= 1`, so `off` stays within the buffer (a whole record ends at most at its end).
        while let Some(rec) = self.buf.get(off..).and_then(|b| b.get(..self.size)) {
            if handle(rec) {
                off += self.size;
                self.skipping = 0;
                continue;
            }
            if self.skipping == 0 {
                d.lost_step += 1;
            }
            self.skipping += 1;
            d.skipped += 1;
            off += 1;
            if self.skipping > MAX_SKIP {
                d.broken = true;
                break;
            }
        }
        self.buf.drain(..off);
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: usize = 8;

    /// A reply: magic 0xAA, then the sequence number, padded to SIZE.
    fn reply(seq: u8) -> Vec<u8> {
        let mut v = vec![0xAA, seq];
        v.resize(SIZE, 0x55);
        v
    }

    fn is_reply(b: &[u8]) -> bool {
        b[0] == 0xAA && b[2..].iter().all(|&x| x == 0x55)
    }

    fn run(stream: &[u8], pieces: usize) -> (Vec<u8>, Desync) {
        let mut s = ReplyStream::new(SIZE);
        let mut seqs = Vec::new();
        let mut total = Desync::default();
        for chunk in stream.chunks(stream.len().div_ceil(pieces).max(1)) {
            s.push(chunk);
            let d = s.drain(|b| {
                if is_reply(b) {
                    seqs.push(b[1]);
                    true
                } else {
                    false
                }
            });
            total.lost_step += d.lost_step;
            total.skipped += d.skipped;
            total.broken |= d.broken;
        }
        (seqs, total)
    }

    #[test]
    fn in_step_stream_in_any_pieces() {
        let stream: Vec<u8> = (0..50).flat_map(reply).collect();
        for pieces in [1, 3, 7, 50, 400] {
            let (seqs, d) = run(&stream, pieces);
            assert_eq!(seqs, (0..50).collect::<Vec<_>>());
            assert_eq!(d, Desync::default());
        }
    }

    #[test]
    fn one_extra_byte_costs_one_loss_of_step_not_the_rest_of_the_run() {
        let mut stream: Vec<u8> = (0..10).flat_map(reply).collect();
        stream.insert(3 * SIZE, 0x00); // a stray byte before reply 3
        stream.extend((10..20).flat_map(reply));
        for pieces in [1, 5, 33] {
            let (seqs, d) = run(&stream, pieces);
            assert_eq!(seqs, (0..20).collect::<Vec<_>>(), "every reply found");
            assert_eq!((d.lost_step, d.skipped, d.broken), (1, 1, false));
        }
    }

    #[test]
    fn a_missing_byte_loses_one_reply() {
        let mut stream: Vec<u8> = (0..10).flat_map(reply).collect();
        stream.remove(4 * SIZE + 5); // reply 4 is one byte short
        let (seqs, d) = run(&stream, 1);
        let want: Vec<u8> = (0..10).filter(|&s| s != 4).collect();
        assert_eq!(seqs, want);
        assert_eq!(d.lost_step, 1);
        assert_eq!(d.skipped, SIZE as u64 - 1);
    }

    #[test]
    fn a_garbage_stream_is_broken_after_the_skip_limit() {
        let garbage = vec![0x42u8; usize::try_from(MAX_SKIP).unwrap() + 2 * SIZE];
        let (seqs, d) = run(&garbage, 4);
        assert!(seqs.is_empty());
        assert_eq!(d.lost_step, 1, "one long loss of step, not one per chunk");
        assert!(d.broken);
    }
}
