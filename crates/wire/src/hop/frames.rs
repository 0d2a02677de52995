//! The hop messages as whole frames (`mod.rs` has their layout): a request sealed and padded to
//! the reply it asks for, its reply never longer, and both opened with their tags checked.

use super::{status, HopError, HopReply, HopRequest};
use crate::auth::{Dir, SessionKey, BODY_TAG_LEN};
use crate::frame::{Header, Kind, HEADER_LEN};
use crate::WireError;

/// A whole request frame (header, message, zero padding, body tag), sealed with `key` when
/// the stream has one.
pub fn request_frame(
    req: &HopRequest,
    flow: u32,
    seq: u64,
    send_ts: u64,
    key: Option<&SessionKey>,
) -> Result<Vec<u8>, HopError> {
    let len = req.frame_len();
    let mut out = vec![0u8; HEADER_LEN];
    Header {
        kind: Kind::HopRequest,
        flags: 0,
        // At most MAX_HOST_LEN + the longest reply: a few KiB.
        frame_len: u32::try_from(len).unwrap_or(u32::MAX),
        reply_len: u32::try_from(req.reply_frame_len()).unwrap_or(0),
        flow,
        status: 0,
        seq,
        send_ts,
        token: 0,
    }
    .encode(&mut out)?;
    req.encode(&mut out)?;
    out.resize(len, 0);
    seal(&mut out, Dir::ToServer, key)?;
    Ok(out)
}

/// The request in a frame's payload (the bytes after the 48-byte header `hdr`), its body tag
/// checked under `key` when the stream has one (check the header's own tag first).
pub fn open_request(
    hdr: &[u8],
    payload: &[u8],
    key: Option<&SessionKey>,
) -> Result<HopRequest, HopError> {
    if let Some(k) = key {
        k.open_body(Dir::ToServer, hdr, payload)
            .map_err(HopError::Auth)?;
    }
    let msg_len = payload.len().saturating_sub(BODY_TAG_LEN);
    HopRequest::decode(payload.get(..msg_len).unwrap_or_default())
}

/// The reply frame to the request whose header is `req`: the measurements, or a refusal
/// `status` (a bare header). Never longer than the request.
pub fn reply_frame(
    req: &Header,
    answer: Result<&HopReply, u32>,
    key: Option<&SessionKey>,
) -> Result<Vec<u8>, HopError> {
    let mut out = vec![0u8; HEADER_LEN];
    if let Ok(reply) = answer {
        reply.encode(&mut out)?;
    }
    let len = if out.len() > HEADER_LEN {
        out.len() + BODY_TAG_LEN
    } else {
        HEADER_LEN
    };
    let request = usize::try_from(req.frame_len).unwrap_or(usize::MAX);
    if len > request {
        return Err(HopError::TooLarge {
            reply: len,
            request,
        });
    }
    out.resize(len, 0);
    let hdr = out.get_mut(..HEADER_LEN).unwrap_or_default();
    Header {
        kind: Kind::HopReply,
        flags: 0,
        frame_len: u32::try_from(len).unwrap_or(u32::MAX),
        reply_len: 0,
        status: answer.err().unwrap_or(status::OK),
        token: 0,
        ..*req
    }
    .encode(hdr)?;
    seal(&mut out, Dir::ToClient, key)?;
    Ok(out)
}

/// A reply frame to the request with sequence number `seq`: its header, and the measurements
/// or the refusal status. Both tags are checked under `key` when given.
pub fn open_reply(
    frame: &[u8],
    seq: u64,
    key: Option<&SessionKey>,
) -> Result<(Header, Result<HopReply, u32>), HopError> {
    let h = Header::decode(frame)?;
    if h.kind != Kind::HopReply || h.seq != seq {
        return Err(HopError::NotOurs);
    }
    let len = usize::try_from(h.frame_len).unwrap_or(usize::MAX);
    let frame = frame.get(..len).ok_or(WireError::Truncated {
        need: len,
        have: frame.len(),
    })?;
    if let Some(k) = key {
        k.open(Dir::ToClient, frame).map_err(HopError::Auth)?;
    }
    if h.status != status::OK {
        return Ok((h, Err(h.status)));
    }
    let (hdr, payload) = frame.split_at(HEADER_LEN.min(frame.len()));
    if let Some(k) = key {
        k.open_body(Dir::ToClient, hdr, payload)
            .map_err(HopError::Auth)?;
    }
    let msg_len = payload
        .len()
        .checked_sub(BODY_TAG_LEN)
        .ok_or(WireError::Truncated {
            need: HEADER_LEN + BODY_TAG_LEN,
            have: frame.len(),
        })?;
    let reply = HopReply::decode(payload.get(..msg_len).unwrap_or_default())?;
    Ok((h, Ok(reply)))
}

/// Seals the header (and, when there is a payload, the body) of a whole frame.
fn seal(frame: &mut [u8], dir: Dir, key: Option<&SessionKey>) -> Result<(), HopError> {
    let Some(k) = key else { return Ok(()) };
    let (hdr, body) = frame.split_at_mut(HEADER_LEN.min(frame.len()));
    k.seal(dir, hdr)?;
    if !body.is_empty() {
        k.seal_body(dir, hdr, body)?;
    }
    Ok(())
}
