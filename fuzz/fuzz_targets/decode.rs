//! Fuzz target: the frame, raw-stamp, bulk (spec, report), reflect (stamps, notice, flow
//! report), marking (ask, answer), idle (ack, callback) and MTU (probe answer) decoders, and
//! the sequence window fed with whatever sequence numbers the bytes claim. Nothing from the
//! network may panic.
//! Run: `cargo +nightly fuzz run decode` from the repository root (needs cargo-fuzz).
#![no_main]

use libfuzzer_sys::fuzz_target;
use npt_wire::bulk::{BulkReport, BulkSpec};
use npt_wire::frame::Header;
use npt_wire::raw::RawStamp;
use npt_wire::reflect;
use npt_wire::Window;

fuzz_target!(|data: &[u8]| {
    let mut w = Window::new(1_000, 64);
    for i in 0..16 {
        w.push(i, i, 0);
    }
    if let Ok(h) = Header::decode(data) {
        let mut buf = [0u8; 48];
        h.encode(&mut buf).unwrap();
        assert_eq!(Header::decode(&buf).unwrap(), h);
        let _ = reflect::read_reply(&h, data);
        let _ = reflect::read_notice(&h);
        let _ = npt_wire::bulk::read_refused(&h, data);
        let _ = npt_wire::marking::wanted(&h);
        let _ = npt_wire::marking::read_reply(&h);
        let _ = npt_wire::marking::status_of(&h);
        if let Some(r) = reflect::read_report(&h, data) {
            let mut p = [0u8; reflect::FLOW_REPORT_LEN];
            r.encode(&mut p).unwrap();
            assert_eq!(reflect::FlowReport::decode(&p).unwrap(), r);
        }
        let mut notice = [0u8; 48];
        if reflect::write_notice(data, 3, Some(1), &mut notice).is_some() {
            let n = Header::decode(&notice).unwrap();
            assert!(reflect::read_notice(&n).is_some());
            assert!(notice.len() <= data.len(), "a notice is never longer than what it refuses");
        }
        w.expire(h.send_ts, |_, _| {});
        let _ = w.on_reply(h.seq);
    }
    if let Ok(s) = RawStamp::decode(data) {
        let _ = w.on_reply(s.seq);
    }
    if let Ok(s) = BulkSpec::decode(data) {
        let mut buf = [0u8; npt_wire::bulk::SPEC_LEN];
        s.encode(&mut buf).unwrap();
        assert_eq!(BulkSpec::decode(&buf).unwrap(), s);
    }
    if let Ok(r) = BulkReport::decode(data) {
        let _ = r.lost();
    }
    if let Some((_, body)) = npt_wire::idle::read(data) {
        let mut p = [0u8; npt_wire::idle::IDLE_PAYLOAD_LEN];
        body.encode(&mut p).unwrap();
        assert_eq!(npt_wire::idle::Idle::decode(&p).unwrap(), body);
    }
    if let Some((_, body)) = npt_wire::mtu::read(data) {
        let mut p = [0u8; npt_wire::mtu::MTU_PAYLOAD_LEN];
        body.encode(&mut p).unwrap();
        assert_eq!(npt_wire::mtu::Mtu::decode(&p).unwrap(), body);
    }
});
