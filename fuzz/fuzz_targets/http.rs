//! Fuzz target: what an HTTP/1.1 server sends back to `npt http` — the response head parser,
//! the chunked body decoder fed whole and in pieces, and a whole `Conn::request` reading up to
//! three responses from an in-memory stream that hands out the bytes in arbitrary reads. A
//! hostile server may make a request fail, never panic or count body bytes it did not send.
//! Run: `cargo fuzz run http` from fuzz/ (needs cargo-fuzz; see bench/fuzz.sh).
#![no_main]

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

use libfuzzer_sys::fuzz_target;
use npt_http::h1::{encode_request, parse_head, Chunked, Conn};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A server that has already written everything: reads return `piece` bytes at a time, never
/// wait, and end the stream when the bytes run out; writes are swallowed.
struct Script<'a> {
    data: &'a [u8],
    piece: usize,
}

impl AsyncRead for Script<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = self.piece.min(self.data.len()).min(buf.remaining());
        buf.put_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Script<'_> {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(b.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Polls once: nothing in [`Script`] ever waits, so a request either finishes or is stuck.
fn now<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a request waited on a stream that never waits"),
    }
}

/// Chunked decoding, all at once: (bytes used or the error, data bytes counted).
type Outcome = (Result<(usize, bool), &'static str>, u64);

fn chunked_whole(body: &[u8]) -> Outcome {
    let mut d = Chunked::default();
    let r = d.feed(body);
    (r, d.data)
}

fn chunked_pieces(body: &[u8], piece: usize) -> Outcome {
    let mut d = Chunked::default();
    let mut used = 0;
    for chunk in body.chunks(piece) {
        match d.feed(chunk) {
            Err(e) => return (Err(e), d.data),
            Ok((u, done)) => {
                assert!(u <= chunk.len());
                used += u;
                if done {
                    return (Ok((used, true)), d.data);
                }
                assert_eq!(u, chunk.len(), "an unfinished body consumes every byte");
            }
        }
    }
    (Ok((used, false)), d.data)
}

thread_local! {
    static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fuzz_target!(|data: &[u8]| {
    let (&sel, rest) = match data.split_first() {
        Some(x) => x,
        None => return,
    };
    let piece = usize::from(sel >> 1).max(1);

    if let Ok(Some((status, n, framing, keep_alive))) = parse_head(rest) {
        assert!(n <= rest.len());
        assert!(status <= 999);
        // The head alone parses the same: nothing after it changes what it says.
        let again = parse_head(&rest[..n]).unwrap().unwrap();
        assert_eq!(again, (status, n, framing, keep_alive));
    }

    let whole = chunked_whole(rest);
    if let (Ok((used, _)), counted) = whole {
        assert!(used <= rest.len() && counted <= used as u64);
    }
    assert_eq!(chunked_pieces(rest, piece), whole, "piece size {piece}");

    // The read buffer is reused as `--new-conn` does: no 16 KiB to zero per input, and what a
    // previous response left in it must not leak into this one.
    let buf = BUF.with(|b| std::mem::take(&mut *b.borrow_mut()));
    let mut conn = Conn::with_buffer(Script { data: rest, piece }, buf);
    let req = encode_request("GET", "/", "fuzz.test", &[], b"", false);
    let mut body = 0u64;
    for _ in 0..3 {
        match now(conn.request(&req, sel & 1 == 1)) {
            Ok(r) => {
                body += r.body;
                assert!(body <= rest.len() as u64, "counted body bytes never sent");
                if !r.keep_alive {
                    break;
                }
            }
            Err(e) => {
                let _ = e.kind();
                break;
            }
        }
    }
    BUF.with(|b| *b.borrow_mut() = conn.into_buffer());
});
