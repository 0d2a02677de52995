//! What a UDP ping's datagrams carry: the framed echo request (asking `npt serve` to reflect) or
//! a raw stamp, and what comes back — an echo of ours and who sent it, a refusal notice, a flow
//! report's or a reply's refused count. Apart from [`crate::net`], which owns the sockets and
//! the schedule; the TCP echo ([`crate::echo`]) and the fuzz stand-in read through these too.

use npt_wire::frame::{Header, Kind};
use npt_wire::raw::RawStamp;
use npt_wire::reflect;

use crate::Config;

/// Writes attempt `seq` into `buf`: a framed echo request, or a raw stamp for any echo.
/// Fails only when `buf` is shorter than the header or stamp.
pub fn encode(
    buf: &mut [u8],
    cfg: &Config,
    flow: u32,
    seq: u64,
    now: u64,
) -> Result<(), npt_wire::WireError> {
    if cfg.raw {
        RawStamp {
            flow,
            seq,
            send_ts: now,
        }
        .encode(buf)
    } else {
        Header {
            kind: Kind::Echo,
            // Ask npt serve what it saw: with it come refusal notices and the refused count.
            flags: reflect::REFLECT,
            // Longer than `u32::MAX`: the server refuses the length (no such UDP datagram).
            frame_len: u32::try_from(buf.len()).unwrap_or(u32::MAX),
            reply_len: 0,
            flow,
            status: 0,
            seq,
            send_ts: now,
            token: 0,
        }
        .encode(buf)
    }
}

/// The sequence number of an echo of ours; `None` for anything else. An echo is `npt serve`'s
/// reply, or the request itself returned unchanged by a plain echo (socat, a forwarder in front
/// of one): kind still `Echo`, every field as [`encode`] wrote it. Under `--token` the caller
/// also requires the reply's seal toward the client, which an unchanged request never has.
pub fn decode(buf: &[u8], raw: bool, flow: u32) -> Option<u64> {
    if raw {
        let s = RawStamp::decode(buf).ok()?;
        (s.flow == flow).then_some(s.seq)
    } else {
        let h = Header::decode(buf).ok()?;
        let unchanged = h.kind == Kind::Echo
            && h.flags == reflect::REFLECT
            && h.reply_len == 0
            && h.status == 0
            && h.token == 0
            && h.frame_len as usize == buf.len();
        ((h.kind == Kind::EchoReply || unchanged) && h.flow == flow).then_some(h.seq)
    }
}

/// Which far end sent `buf`, an echo of ours ([`decode`]): `npt serve`'s framed reply, or our
/// own request returned unchanged by a plain echo (under `--raw`, any echo: the stamp comes
/// back as it went).
pub fn far_end(buf: &[u8], raw: bool) -> &'static str {
    use npt_result::far_end::{ECHO, NPT_SERVE};
    match Header::decode(buf) {
        Ok(h) if !raw && h.kind == Kind::EchoReply => NPT_SERVE,
        _ => ECHO,
    }
}

/// A refusal notice for an attempt of ours ([`reflect::read_notice`]): its sequence number,
/// why (the notice's status) and the server's count of this flow's refusals, if it says.
pub fn notice(buf: &[u8], raw: bool, flow: u32) -> Option<(u64, u32, Option<u32>)> {
    if raw {
        return None;
    }
    let h = Header::decode(buf).ok()?;
    let n = reflect::read_notice(&h)?;
    (h.kind == Kind::EchoReply && h.flow == flow).then_some((h.seq, n.status, n.refused))
}

/// The refused count of our flow's report ([`reflect::read_report`]).
pub(crate) fn flow_refused(buf: &[u8], flow: u32) -> Option<u64> {
    let h = Header::decode(buf).ok()?;
    (h.flow == flow)
        .then(|| reflect::read_report(&h, buf))
        .flatten()
        .map(|r| r.refused)
}

/// The refused count a reflected echo reply's stamps carry.
pub(crate) fn refused_count(buf: &[u8]) -> Option<u32> {
    let h = Header::decode(buf).ok()?;
    reflect::read_reply(&h, buf)?.stamps.map(|s| s.refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use npt_result::far_end;
    use std::time::Duration;

    fn cfg(raw: bool) -> Config {
        Config {
            timeout: Duration::from_millis(100),
            raw,
            token: Some("s3cret".into()),
            ..Config::for_test("udp://127.0.0.1:9")
        }
    }

    #[test]
    fn framed_and_raw_round_trip_only_our_flow() {
        for raw in [false, true] {
            let mut b = vec![0u8; 64];
            encode(&mut b, &cfg(raw), 42, 9, 123).unwrap();
            if !raw {
                npt_wire::frame::set_kind_status(&mut b, Kind::EchoReply, 0);
            }
            assert_eq!(decode(&b, raw, 42), Some(9), "raw={raw}");
            assert_eq!(decode(&b, raw, 43), None, "another flow, raw={raw}");
            // npt serve's framed reply names it; a raw stamp comes back from any echo.
            let by = if raw {
                far_end::ECHO
            } else {
                far_end::NPT_SERVE
            };
            assert_eq!(super::far_end(&b, raw), by, "raw={raw}");
        }
        let mut b = vec![0u8; 64];
        encode(&mut b, &cfg(false), 42, 9, 123).unwrap();
        assert_eq!(
            decode(&b, false, 42),
            Some(9),
            "our own request returned unchanged: a plain echo's answer"
        );
        assert_eq!(super::far_end(&b, false), far_end::ECHO);
        assert_eq!(decode(&b, false, 43), None, "another flow's request");
        assert_eq!(decode(&b[..63], false, 42), None, "cut short");
        let mut changed = b.clone();
        npt_wire::frame::set_kind_status(&mut changed, Kind::Echo, 2);
        assert_eq!(decode(&changed, false, 42), None, "a status it never sent");
        changed = b.clone();
        changed[5] = Kind::Request as u8;
        assert_eq!(decode(&changed, false, 42), None, "another kind");
    }
}
