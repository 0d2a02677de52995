//! Whether the server speaks HTTP/2, asked once before an `--http2` run: over TLS, the protocol
//! ALPN chose (`h2` and `http/1.1` are offered); over cleartext, the first bytes answering the
//! h2c prior-knowledge preface — an HTTP/2 server opens with a SETTINGS frame, an HTTP/1.1 one
//! with a status line. Strict `--http2` then fails once, in one line, instead of opening
//! connection after connection that each fail ("frame with invalid size" thousands of times
//! a second); `--http2-fallback` runs HTTP/1.1 instead and the result says why.

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::*;

/// What the server speaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Speaks {
    H2,
    /// Not HTTP/2; why npt concluded so, in words for the result (`summary.downgrade`).
    H1(String),
}

/// The h2 client connection preface (RFC 9113 §3.4) and an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
/// Bytes read at most while looking for the answer's first line or frame.
const MAX_ANSWER: usize = 512;

/// What the first bytes a server sent after the h2c preface say; `None`: not enough yet.
pub fn classify_h2c_answer(first: &[u8]) -> Option<Speaks> {
    if first.starts_with(b"HTTP/") || (first.len() < 5 && b"HTTP/".starts_with(first)) {
        // Wait for the status line unless it is long enough already.
        let line_end = first.iter().position(|&b| b == b'\r' || b == b'\n');
        return match line_end {
            None if first.len() < MAX_ANSWER => None,
            end => {
                let line = first.get(..end.unwrap_or(first.len())).unwrap_or(first);
                Some(Speaks::H1(format!(
                    "h2c prior knowledge was answered by HTTP/1.x (\"{}\")",
                    String::from_utf8_lossy(line)
                )))
            }
        };
    }
    let header: &[u8; 9] = first.first_chunk()?;
    // A server's first frame is SETTINGS (type 4) on stream 0 (RFC 9113 §3.4).
    if header[3] == 4 && header[5..9] == [0, 0, 0, 0] {
        Some(Speaks::H2)
    } else {
        Some(Speaks::H1(
            "h2c prior knowledge was answered by neither an HTTP/2 SETTINGS frame nor an HTTP/1.1 status line".into(),
        ))
    }
}

/// Asks the server once (see the module doc). `Err`: no connection (refused, TLS failed,
/// timeout) — nothing is known about the protocol, and the run goes on as asked.
pub(super) async fn probe(ctx: &Ctx) -> Result<Speaks, Failure> {
    let (io, _) = tokio::time::timeout(ctx.timeout, ctx.connect_any())
        .await
        .map_err(|_| Failure(ErrorKind::Timeout, "connect".into()))??;
    let mut tcp = match io {
        Io::Tls(t) => {
            return Ok(match t.get_ref().1.alpn_protocol() {
                Some(crate::tls::ALPN_H2) => Speaks::H2,
                Some(p) => Speaks::H1(format!("TLS ALPN chose {}", String::from_utf8_lossy(p))),
                None => Speaks::H1("TLS: the server chose no ALPN protocol (h2 needs ALPN)".into()),
            })
        }
        Io::Plain(s) => s,
    };
    let answer = async {
        tcp.write_all(PREFACE).await?;
        let mut buf = Vec::with_capacity(MAX_ANSWER);
        loop {
            let mut chunk = [0u8; MAX_ANSWER];
            let n = tcp.read(&mut chunk).await?;
            if n == 0 {
                return Ok::<_, io::Error>(classify_h2c_answer(&buf).unwrap_or_else(|| {
                    Speaks::H1("the server closed the connection on the h2c preface".into())
                }));
            }
            buf.extend_from_slice(chunk.get(..n).unwrap_or_default());
            if let Some(s) = classify_h2c_answer(&buf) {
                return Ok(s);
            }
        }
    };
    match tokio::time::timeout(ctx.timeout, answer).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Ok(Speaks::H1(format!(
            "the server broke the connection on the h2c preface ({e})"
        ))),
        Err(_) => Ok(Speaks::H1(format!(
            "no answer to the h2c preface within {:?}",
            ctx.timeout
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h2c_answers_are_told_apart() {
        let settings = [0u8, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100];
        assert_eq!(classify_h2c_answer(&settings), Some(Speaks::H2));
        assert_eq!(
            classify_h2c_answer(&settings[..5]),
            None,
            "wait for 9 bytes"
        );
        assert_eq!(classify_h2c_answer(b"HTT"), None);
        assert_eq!(
            classify_h2c_answer(b"HTTP/1.1 400 Bad"),
            None,
            "wait for the line"
        );
        let Some(Speaks::H1(why)) = classify_h2c_answer(b"HTTP/1.1 400 Bad Request\r\n") else {
            panic!("an HTTP/1.1 status line is HTTP/1.1");
        };
        assert!(why.contains("HTTP/1.1 400 Bad Request"), "{why}");
        // A GOAWAY first, or garbage: not an h2 server's opening.
        let goaway = [0u8, 0, 8, 7, 0, 0, 0, 0, 0];
        assert!(matches!(classify_h2c_answer(&goaway), Some(Speaks::H1(_))));
    }
}
