//! `--token`, async (`npt run`, `npt ping`): the keyed handshake ([`npt_wire::auth::ClientHandshake`]) on each
//! TCP connection, each QUIC stream and each game's UDP socket, async. Its key seals every
//! frame the connection (stream) sends and checks every reply.
#![deny(clippy::indexing_slicing)] // parses peer handshake bytes: see `[workspace.lints]`

use std::io;
use std::time::{Duration, Instant};

use crate::auth::{nonce, returned_unchanged};
use npt_wire::auth::{
    stream_no_accept, stream_read_error, stream_step, ClientHandshake, SessionKey, HS_LEN,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::UdpSocket;

/// The handshake over a byte stream (the caller bounds it in time).
// NO-PANIC: `poll_transmit` returns the length it wrote into `m` (at most `HS_LEN`).
#[allow(clippy::indexing_slicing)]
pub async fn stream<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    secret: &str,
) -> io::Result<SessionKey> {
    let mut hs = ClientHandshake::new(secret.as_bytes(), nonce(), 0, u64::MAX);
    let mut m = [0u8; HS_LEN];
    for _ in 0..2 {
        let n = hs
            .poll_transmit(0, &mut m)
            .ok_or_else(|| io::Error::other("handshake: nothing to send"))?;
        let sent = m;
        s.write_all(&m[..n]).await?;
        s.flush().await?;
        s.read_exact(&mut m).await.map_err(stream_read_error)?;
        if let Some(e) = returned_unchanged(&sent[..n], &m[..n]) {
            return Err(e);
        }
        if let Some(k) = stream_step(&mut hs, &m)? {
            return Ok(k);
        }
    }
    Err(stream_no_accept())
}

/// The handshake over a connected UDP socket, repeating lost messages, within `timeout`.
// NO-PANIC: `poll_transmit` and `recv` return lengths within the buffer they filled.
#[allow(clippy::indexing_slicing)]
pub async fn udp(sock: &UdpSocket, secret: &str, timeout: Duration) -> io::Result<SessionKey> {
    let t0 = Instant::now();
    let now = || u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let mut hs = ClientHandshake::new(
        secret.as_bytes(),
        nonce(),
        0,
        u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX),
    );
    let (mut out, mut inb) = ([0u8; HS_LEN], [0u8; 2048]);
    let mut last = 0;
    loop {
        if hs.check(now()).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no answer to the --token handshake (wrong secret, or no --token there)",
            ));
        }
        if let Some(n) = hs.poll_transmit(now(), &mut out) {
            sock.send(&out[..n]).await?;
            last = n;
        }
        let wait = hs
            .poll_timeout()
            .map_or(0, |at| at.saturating_sub(now()))
            .max(1_000_000);
        if let Ok(r) = tokio::time::timeout(Duration::from_nanos(wait), sock.recv(&mut inb)).await {
            let n = r?;
            if let Some(e) = returned_unchanged(&out[..last], &inb[..n]) {
                return Err(e);
            }
            if let Ok(Some(k)) = hs.handle(now(), &inb[..n]) {
                return Ok(k);
            }
        }
    }
}
