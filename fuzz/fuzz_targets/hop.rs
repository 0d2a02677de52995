//! Fuzz target: the hop agent's request and reply decoders and the sealed-frame openers, fed
//! whatever the bytes say. Nothing from the network may panic, what decodes re-encodes to the
//! same message, and a frame sealed under one key never opens under another.
//! Run: `cargo +nightly fuzz run hop` from the repository root (needs cargo-fuzz).
#![no_main]

use libfuzzer_sys::fuzz_target;
use npt_wire::auth::SessionKey;
use npt_wire::hop::{open_reply, open_request, HopReply, HopRequest};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = HopRequest::decode(data) {
        let f = npt_wire::hop::request_frame(&r, 1, 1, 0, None).unwrap();
        assert_eq!(open_request(&f[..48], &f[48..], None).unwrap(), r);
    }
    let _ = HopReply::decode(data);
    let k = SessionKey::from_bytes(&[7; 32]);
    let _ = open_reply(data, 1, None);
    assert!(open_reply(data, 1, Some(&k)).is_err(), "garbage opened under a key");
    if data.len() >= 48 {
        assert!(open_request(&data[..48], &data[48..], Some(&k)).is_err());
    }
});
