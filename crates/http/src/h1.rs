//! A minimal HTTP/1.1 client connection for the load driver: writes a request that was encoded
//! once per host, reads exactly one response (content-length, chunked or close-delimited body,
//! counted and discarded), one request in flight, no pipelining.
//!
//! Why not hyper's client here: a benchmark client must cost less than the server it loads.
//! hyper's dispatcher moves every request through channels and a `HeaderMap`; this path does
//! one `write` and usually one `read` per request with no allocation, like wrk. (h2 goes
//! through the `h2` crate.) Responses are parsed with [`httparse`]; the chunked decoder below
//! is pure and tested.

use std::io;
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

/// Largest response head accepted.
const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;
const READ_CHUNK: usize = 16 * 1024;

/// Why a response could not be read.
#[derive(Debug, thiserror::Error)]
pub enum H1Error {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("connection closed before the response was complete")]
    Closed,
    #[error("bad response: {0}")]
    Protocol(String),
}

impl H1Error {
    /// The error kind used in results (see `client::classify`).
    pub fn kind(&self) -> npt_result::error::ErrorKind {
        match self {
            H1Error::Io(e) => crate::client::classify(e),
            H1Error::Closed => npt_result::error::ErrorKind::Closed,
            H1Error::Protocol(_) => npt_result::error::ErrorKind::Protocol,
        }
    }
}

/// One response, read completely.
#[derive(Debug, Clone, Copy)]
pub struct Response {
    pub status: u16,
    /// When the head (status line and headers) had been parsed.
    pub head: Instant,
    /// Body bytes (after de-chunking).
    pub body: u64,
    /// False when the connection cannot carry another request.
    pub keep_alive: bool,
}

/// Encodes a request once; it is then written as is for every request to that host.
pub fn encode_request(
    method: &str,
    path: &str,
    host: &str,
    headers: &[(String, Vec<u8>)],
    body: &[u8],
    close: bool,
) -> Vec<u8> {
    let mut r = Vec::with_capacity(128 + body.len());
    r.extend_from_slice(method.as_bytes());
    r.push(b' ');
    r.extend_from_slice(path.as_bytes());
    r.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    r.extend_from_slice(host.as_bytes());
    r.extend_from_slice(b"\r\n");
    let mut has_len = false;
    let mut has_conn = false;
    for (k, v) in headers {
        has_len |= k.eq_ignore_ascii_case("content-length");
        has_conn |= k.eq_ignore_ascii_case("connection");
        r.extend_from_slice(k.as_bytes());
        r.extend_from_slice(b": ");
        r.extend_from_slice(v);
        r.extend_from_slice(b"\r\n");
    }
    let wants_len = !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH");
    if wants_len && !has_len {
        r.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
    }
    if close && !has_conn {
        r.extend_from_slice(b"Connection: close\r\n");
    }
    r.extend_from_slice(b"\r\n");
    r.extend_from_slice(body);
    r
}

/// A client connection over any byte stream.
pub struct Conn<IO> {
    io: IO,
    buf: Vec<u8>,
    /// Bytes of `buf` not yet consumed: `buf[pos..len]`.
    pos: usize,
    len: usize,
}

impl<IO: AsyncRead + AsyncWrite + Unpin> Conn<IO> {
    pub fn new(io: IO) -> Conn<IO> {
        Conn::with_buffer(io, Vec::new())
    }

    /// Reuses `buf` (from [`Conn::into_buffer`]) as the read buffer: `--new-conn` opens a
    /// connection per request and need not allocate and zero 16 KiB each time.
    pub fn with_buffer(io: IO, mut buf: Vec<u8>) -> Conn<IO> {
        if buf.len() < READ_CHUNK {
            buf.resize(READ_CHUNK, 0);
        }
        Conn {
            io,
            buf,
            pos: 0,
            len: 0,
        }
    }

    /// The read buffer, for the next connection.
    pub fn into_buffer(self) -> Vec<u8> {
        self.buf
    }

    /// The bytes read and not consumed yet (`pos <= len <= buf.len()` always holds).
    fn unread(&self) -> &[u8] {
        self.buf.get(self.pos..self.len).unwrap_or_default()
    }

    /// Reads more bytes after the unconsumed ones; `Ok(0)` is end of stream.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.len, 0);
            self.len -= self.pos;
            self.pos = 0;
        }
        if self.len == self.buf.len() {
            if self.buf.len() >= MAX_HEAD {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "response head too large",
                ));
            }
            self.buf.resize(self.buf.len() * 2, 0);
        }
        // `len <= buf.len()`: an empty slice would read 0, i.e. "closed", never panic.
        let n = self
            .io
            .read(self.buf.get_mut(self.len..).unwrap_or_default())
            .await?;
        self.len += n;
        Ok(n)
    }

    /// Sends `req` (from [`encode_request`]) and reads the whole response.
    pub async fn request(&mut self, req: &[u8], head_request: bool) -> Result<Response, H1Error> {
        // Left-over bytes would belong to no request: the previous response lied about its
        // length. Start clean rather than misparse.
        self.pos = 0;
        self.len = 0;
        self.io.write_all(req).await?;
        self.io.flush().await?;
        loop {
            let (status, head_len, framing, keep_alive) = loop {
                // Nothing read yet (every request's first pass): nothing to parse.
                if self.pos < self.len {
                    if let Some(h) = parse_head(self.unread())? {
                        break h;
                    }
                }
                if self.fill().await? == 0 {
                    return Err(H1Error::Closed);
                }
            };
            let head = Instant::now();
            self.pos += head_len;
            if (100..200).contains(&status) && status != 101 {
                continue; // 100 Continue and friends precede the real response
            }
            let no_body = head_request || status == 204 || status == 304 || status == 101;
            let framing = if no_body { Framing::Length(0) } else { framing };
            let body = self.read_body(framing).await?;
            let keep_alive = keep_alive && !matches!(framing, Framing::Close) && status != 101;
            return Ok(Response {
                status,
                head,
                body,
                keep_alive,
            });
        }
    }

    async fn read_body(&mut self, framing: Framing) -> Result<u64, H1Error> {
        match framing {
            Framing::Length(n) => {
                let mut left = n;
                loop {
                    let have =
                        (self.len - self.pos).min(usize::try_from(left).unwrap_or(usize::MAX));
                    self.pos += have;
                    left -= have as u64;
                    if left == 0 {
                        return Ok(n);
                    }
                    self.pos = 0;
                    self.len = 0;
                    if self.fill().await? == 0 {
                        return Err(H1Error::Closed);
                    }
                }
            }
            Framing::Close => {
                let mut n = (self.len - self.pos) as u64;
                self.pos = 0;
                self.len = 0;
                loop {
                    let r = self.fill().await?;
                    if r == 0 {
                        return Ok(n);
                    }
                    n += r as u64;
                    self.len = 0;
                }
            }
            Framing::Chunked => {
                let mut dec = Chunked::default();
                loop {
                    let (used, done) = dec
                        .feed(self.unread())
                        .map_err(|e| H1Error::Protocol(e.to_string()))?;
                    self.pos += used;
                    if done {
                        return Ok(dec.data);
                    }
                    if self.fill().await? == 0 {
                        return Err(H1Error::Closed);
                    }
                }
            }
        }
    }
}

/// How the body's end is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    Length(u64),
    Chunked,
    /// Until the server closes the connection.
    Close,
}

/// Parses a response head: `Some((status, head length, framing, keep-alive))` once complete.
pub fn parse_head(buf: &[u8]) -> Result<Option<(u16, usize, Framing, bool)>, H1Error> {
    // Uninitialised header slots: initialising 64 of them (2 KiB) cost more than parsing a
    // short response head, on every response.
    let mut headers =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let n = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        buf,
        &mut headers,
    ) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if buf.len() >= MAX_HEAD {
                return Err(H1Error::Protocol("response head too large".into()));
            }
            return Ok(None);
        }
        Err(e) => return Err(H1Error::Protocol(e.to_string())),
    };
    let status = resp.code.unwrap_or(0);
    let mut keep_alive = resp.version == Some(1);
    let mut framing = Framing::Close;
    let mut chunked = false;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let v = std::str::from_utf8(h.value)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or_else(|| H1Error::Protocol("bad Content-Length".into()))?;
            if let Framing::Length(old) = framing {
                if old != v {
                    return Err(H1Error::Protocol("conflicting Content-Length".into()));
                }
            }
            framing = Framing::Length(v);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = h
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            for tok in h.value.split(|&b| b == b',') {
                let tok = tok.trim_ascii();
                if tok.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if tok.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                }
            }
        }
    }
    if chunked {
        framing = Framing::Chunked; // takes precedence over Content-Length (RFC 9112 6.3)
    }
    Ok(Some((status, n, framing, keep_alive)))
}

/// Streaming decoder of a chunked body: counts data bytes, skips extensions and trailers.
#[derive(Debug, Default)]
pub struct Chunked {
    state: ChunkState,
    /// Data bytes so far.
    pub data: u64,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Reading the hex size; `u64` accumulated, `bool` = at least one digit.
    #[default]
    Size,
    SizeDigits(u64),
    /// After the size: extensions until LF.
    SizeLine(u64),
    Data(u64),
    DataCr,
    DataLf,
    /// After the last chunk: trailer lines; `bool` = the current line is empty so far.
    Trailer(bool),
}

impl Chunked {
    /// Consumes from `buf`; returns (bytes used, body complete).
    pub fn feed(&mut self, buf: &[u8]) -> Result<(usize, bool), &'static str> {
        let mut i = 0;
        while let Some(&b) = buf.get(i) {
            match self.state {
                ChunkState::Size | ChunkState::SizeDigits(_) => {
                    let acc = match self.state {
                        ChunkState::SizeDigits(a) => Some(a),
                        _ => None,
                    };
                    if let Some(d) = (b as char).to_digit(16) {
                        let a = acc.unwrap_or(0);
                        if a > (u64::MAX >> 8) {
                            return Err("chunk size too large");
                        }
                        self.state = ChunkState::SizeDigits(a * 16 + u64::from(d));
                    } else {
                        let Some(a) = acc else {
                            return Err("chunk size expected");
                        };
                        self.state = ChunkState::SizeLine(a);
                        continue; // re-examine this byte as part of the line
                    }
                }
                ChunkState::SizeLine(n) => {
                    if b == b'\n' {
                        self.state = if n == 0 {
                            ChunkState::Trailer(true)
                        } else {
                            ChunkState::Data(n)
                        };
                    }
                }
                ChunkState::Data(n) => {
                    let take = (buf.len() - i).min(usize::try_from(n).unwrap_or(usize::MAX));
                    let take64 = take as u64;
                    self.data = self.data.saturating_add(take64);
                    i += take;
                    self.state = if n == take64 {
                        ChunkState::DataCr
                    } else {
                        ChunkState::Data(n - take64)
                    };
                    continue;
                }
                ChunkState::DataCr => match b {
                    b'\r' => self.state = ChunkState::DataLf,
                    b'\n' => self.state = ChunkState::Size,
                    _ => return Err("CRLF expected after chunk data"),
                },
                ChunkState::DataLf => {
                    if b != b'\n' {
                        return Err("LF expected after chunk data");
                    }
                    self.state = ChunkState::Size;
                }
                ChunkState::Trailer(empty) => match b {
                    b'\n' if empty => return Ok((i + 1, true)),
                    b'\n' => self.state = ChunkState::Trailer(true),
                    b'\r' => {}
                    _ => self.state = ChunkState::Trailer(false),
                },
            }
            i += 1;
        }
        Ok((i, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_is_encoded_once_with_host_length_and_close() {
        let r = encode_request(
            "POST",
            "/x?y",
            "app1.test",
            &[("X-A".into(), b"1".to_vec())],
            b"hi",
            true,
        );
        assert_eq!(
            r,
            b"POST /x?y HTTP/1.1\r\nHost: app1.test\r\nX-A: 1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"
        );
        let r = encode_request("GET", "/", "h", &[], b"", false);
        assert_eq!(r, b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    }

    #[test]
    fn heads() {
        let h = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n";
        assert_eq!(
            parse_head(h).unwrap(),
            Some((200, h.len() - 3, Framing::Length(3), true))
        );
        assert_eq!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le").unwrap(), None);
        let h = b"HTTP/1.0 200 OK\r\n\r\n";
        assert_eq!(
            parse_head(h).unwrap(),
            Some((200, h.len(), Framing::Close, false))
        );
        let h = b"HTTP/1.1 404 X\r\nTransfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n";
        assert_eq!(
            parse_head(h).unwrap(),
            Some((404, h.len(), Framing::Chunked, false))
        );
        assert!(parse_head(b"NOT HTTP\r\n\r\n").is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").is_err());
    }

    #[test]
    fn chunked_bodies_in_any_split() {
        let body =
            b"4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        let end = body.len() - 4;
        for split in 0..end {
            let mut d = Chunked::default();
            let (a, done) = d.feed(&body[..split]).unwrap();
            assert!(!done || split == end);
            let (b, done) = d.feed(&body[a..]).unwrap();
            assert!(done, "split {split}");
            assert_eq!(a + b, end, "stops right after the body, split {split}");
            assert_eq!(d.data, 23);
        }
        assert!(Chunked::default().feed(b"zz\r\n").is_err());
        assert!(Chunked::default().feed(b"1\r\nab").is_err());
    }

    #[tokio::test]
    async fn reads_responses_back_to_back() {
        let (client, mut server) = tokio::io::duplex(1 << 16);
        let srv = tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            let mut replies: Vec<&[u8]> = vec![
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                b"HTTP/1.1 204 No Content\r\n\r\n",
                b"HTTP/1.1 503 Busy\r\nConnection: close\r\n\r\nbye",
            ];
            replies.reverse();
            while let Some(r) = replies.pop() {
                let _ = server.read(&mut buf).await.unwrap();
                server.write_all(r).await.unwrap();
            }
            // Last response is close-delimited.
            drop(server);
        });
        let mut c = Conn::new(client);
        let req = encode_request("GET", "/", "h", &[], b"", false);
        let r = c.request(&req, false).await.unwrap();
        assert_eq!((r.status, r.body, r.keep_alive), (200, 5, true));
        let r = c.request(&req, false).await.unwrap();
        assert_eq!((r.status, r.body, r.keep_alive), (200, 3, true));
        let r = c.request(&req, false).await.unwrap();
        assert_eq!((r.status, r.body, r.keep_alive), (204, 0, true));
        let r = c.request(&req, false).await.unwrap();
        assert_eq!((r.status, r.body, r.keep_alive), (503, 3, false));
        srv.await.unwrap();
        let e = c.request(&req, false).await.unwrap_err();
        assert!(matches!(e.kind().name(), "closed" | "reset"), "{e}");
    }
}
