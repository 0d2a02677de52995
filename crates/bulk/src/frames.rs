//! The bulk protocol's client side on a byte stream, for TCP connections and QUIC streams
//! alike: the `--token` handshake, the `Bulk` request, the responder's accepting reply, and an
//! upload's progress reports ([`npt_wire::bulk`]). A download at a rate asks the responder to
//! pace it and fails unless the reply says it does ([`bulk::PACED`]): an older responder would
//! send as fast as the path goes, which is what `--rate` is there to prevent.

use npt_result::error::ErrorKind;
use std::io;
use std::sync::atomic::Ordering;
use std::time::Duration;

use npt_wire::auth::{Dir, SessionKey};
use npt_wire::bulk::{self, BulkReport, BulkSpec, Direction};
use npt_wire::frame::{status, Header, Kind, HEADER_LEN};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::{Config, StreamState};

/// A stream's failure: the error kind (the one vocabulary) and a detail.
pub(crate) type Fail = (ErrorKind, String);

pub(crate) fn io_fail(what: &str, e: &io::Error) -> Fail {
    (npt_result::error::io_error_kind(e), format!("{what}: {e}"))
}

fn timeout_fail(what: &str, t: Duration) -> Fail {
    (
        ErrorKind::Timeout,
        format!("{what}: no answer within {t:?}"),
    )
}

/// How much longer than the run the responder is asked to go on: the tester ends the
/// transfer itself, and the responder must not end it first.
const SLACK: Duration = Duration::from_secs(2);

/// `--token` handshake (if any), the `Bulk` request and its accepting reply. The session key.
// SAFE: `req` is `REQUEST_LEN` bytes, more than a header.
#[allow(clippy::indexing_slicing)]
pub(crate) async fn open<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    cfg: &Config,
    st: &StreamState,
) -> Result<Option<SessionKey>, Fail> {
    let t = cfg.timeout;
    let key = match &cfg.token {
        Some(secret) => Some(
            tokio::time::timeout(t, npt_client::auth_async::stream(s, secret))
                .await
                .map_err(|_| timeout_fail("--token handshake", t))?
                .map_err(|e| io_fail("--token handshake", &e))?,
        ),
        None => None,
    };
    // An upload is paced here; a download by the responder.
    let paced_down = cfg.rate_bps.filter(|_| st.direction == Direction::Down);
    // NO-PANIC: a float-to-int `as` saturates; the rate is positive (the command checks).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rate_bps = paced_down.map_or(0, |r| r.round().max(1.0) as u64);
    let spec = BulkSpec {
        direction: st.direction,
        size: 0,
        rate_bps,
        duration_ns: u64::try_from((cfg.duration + SLACK).as_nanos()).unwrap_or(u64::MAX),
    };
    let mut req = [0u8; bulk::REQUEST_LEN];
    bulk::encode_request(&mut req, st.index, 0, 0, &spec)
        .map_err(|e| (ErrorKind::Internal, e.to_string()))?;
    if let Some(k) = &key {
        k.seal(Dir::ToServer, &mut req[..HEADER_LEN])
            .map_err(|e| (ErrorKind::Internal, e.to_string()))?;
    }
    s.write_all(&req)
        .await
        .map_err(|e| io_fail("bulk request", &e))?;
    s.flush().await.map_err(|e| io_fail("bulk request", &e))?;
    let (h, _) = tokio::time::timeout(t, read_reply(s, &key))
        .await
        .map_err(|_| timeout_fail("bulk reply", t))??;
    if h.status == status::REFUSED {
        return Err((
            ErrorKind::Protocol,
            "the responder refused the bulk request".to_string(),
        ));
    }
    if paced_down.is_some() && h.flags & bulk::PACED == 0 {
        return Err((
            ErrorKind::Protocol,
            "--rate: the responder does not pace downloads (an npt serve older than --rate on \
             streams); update it, or pace uploads (--direction up)"
                .to_string(),
        ));
    }
    Ok(key)
}

/// Reads one `BulkReply` frame (its tag checked under `--token`).
pub(crate) async fn read_reply<R: AsyncRead + Unpin>(
    r: &mut R,
    key: &Option<SessionKey>,
) -> Result<(Header, BulkReport), Fail> {
    let mut b = [0u8; bulk::REPLY_LEN];
    r.read_exact(&mut b).await.map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            (
                ErrorKind::Closed,
                "the responder closed the stream (not npt serve, or an older one without bulk?)"
                    .to_string(),
            )
        } else {
            io_fail("bulk reply", &e)
        }
    })?;
    let h = Header::decode(&b).map_err(|e| (ErrorKind::Protocol, format!("bulk reply: {e}")))?;
    if h.kind != Kind::BulkReply || h.frame_len as usize != bulk::REPLY_LEN {
        return Err((
            ErrorKind::Protocol,
            format!("expected a bulk reply, got {:?}", h.kind),
        ));
    }
    if let Some(k) = key {
        k.open(Dir::ToClient, &b)
            .map_err(|e| (ErrorKind::Protocol, format!("bulk reply: {e}")))?;
    }
    let report = BulkReport::decode(b.get(HEADER_LEN..).unwrap_or_default())
        .map_err(|e| (ErrorKind::Protocol, format!("bulk report: {e}")))?;
    Ok((h, report))
}

/// An upload's reports, until the stream ends: each says what arrived, on the responder's
/// clock. Errors after the run was stopped are not failures.
pub(crate) async fn follow_reports<R: AsyncRead + Unpin>(
    mut r: R,
    key: Option<SessionKey>,
    st: &StreamState,
) -> Result<(), Fail> {
    loop {
        let (_, rep) = read_reply(&mut r, &key).await?;
        st.bytes.store(rep.bytes, Ordering::Relaxed);
        st.reported_ns.store(rep.elapsed_ns, Ordering::Relaxed);
    }
}
