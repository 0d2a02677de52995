//! Raw mode: sequence and timestamp carried *inside* the payload, for any plain echo server.
//!
//! A plain echo server (the line tester's Go echo server, `socat`, inetd's echo) returns the bytes it got.
//! npt therefore writes its own 24-byte stamp at the front of the payload and reads it back
//! from the echo; the rest of the payload is fill. Integers big-endian:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |              magic: 0x1E 'n' 'p' 'r'                          |  0
//! +---------------------------------------------------------------+
//! |              flow id                                          |  4
//! +---------------------------------------------------------------+
//! |              sequence number                                  |  8
//! |                                                               |
//! +---------------------------------------------------------------+
//! |              send timestamp, ns                               | 16
//! |                                                               |
//! +---------------------------------------------------------------+
//! |              fill ...                                         | 24
//! ```

use crate::frame::{be32, be64};
use crate::WireError;

pub const RAW_MAGIC: [u8; 4] = [0x1E, b'n', b'p', b'r'];
pub const RAW_HEADER_LEN: usize = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawStamp {
    pub flow: u32,
    pub seq: u64,
    pub send_ts: u64,
}

impl RawStamp {
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let have = buf.len();
        let buf: &mut [u8; RAW_HEADER_LEN] = buf.first_chunk_mut().ok_or(WireError::Truncated {
            need: RAW_HEADER_LEN,
            have,
        })?;
        buf[0..4].copy_from_slice(&RAW_MAGIC);
        buf[4..8].copy_from_slice(&self.flow.to_be_bytes());
        buf[8..16].copy_from_slice(&self.seq.to_be_bytes());
        buf[16..24].copy_from_slice(&self.send_ts.to_be_bytes());
        Ok(())
    }

    pub fn decode(buf: &[u8]) -> Result<RawStamp, WireError> {
        let buf: &[u8; RAW_HEADER_LEN] = buf.first_chunk().ok_or(WireError::Truncated {
            need: RAW_HEADER_LEN,
            have: buf.len(),
        })?;
        if buf[0..4] != RAW_MAGIC {
            return Err(WireError::BadMagic);
        }
        Ok(RawStamp {
            flow: be32(&buf[4..8]),
            seq: be64(&buf[8..16]),
            send_ts: be64(&buf[16..24]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLDEN: [u8; 24] = [
        0x1E, b'n', b'p', b'r', 0, 0, 1, 0, // magic, flow=256
        0, 0, 0, 0, 0, 0, 0, 42, // seq
        0, 0, 0, 0, 0, 0, 0x30, 0x39, // ts = 12345
    ];

    #[test]
    fn golden_round_trip() {
        let s = RawStamp {
            flow: 256,
            seq: 42,
            send_ts: 12345,
        };
        let mut b = [0u8; 24];
        s.encode(&mut b).unwrap();
        assert_eq!(b, GOLDEN);
        assert_eq!(RawStamp::decode(&GOLDEN).unwrap(), s);
    }

    #[test]
    fn truncation_and_magic() {
        for n in 0..RAW_HEADER_LEN {
            assert!(matches!(
                RawStamp::decode(&GOLDEN[..n]),
                Err(WireError::Truncated { .. })
            ));
        }
        let mut b = GOLDEN;
        b[3] = b'x';
        assert_eq!(RawStamp::decode(&b), Err(WireError::BadMagic));
    }
}
