//! The hop codecs' reader: big-endian fields off the front of a slice, for the RTT messages
//! (`mod.rs`) and the MTU ones (`mtu/`) alike.

use crate::WireError;

/// Reads big-endian fields off the front of a slice; every short read is one
/// [`WireError::Truncated`].
pub(super) struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(b: &'a [u8]) -> Reader<'a> {
        Reader { b, at: 0 }
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.at.saturating_add(n);
        let s = self.b.get(self.at..end).ok_or(WireError::Truncated {
            need: end,
            have: self.b.len(),
        })?;
        self.at = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let s = self.take(N)?;
        Ok(s.first_chunk().copied().unwrap_or([0; N]))
    }

    pub(super) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(u8::from_be_bytes(self.array()?))
    }

    pub(super) fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub(super) fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    pub(super) fn rest(&self) -> &'a [u8] {
        self.b.get(self.at..).unwrap_or_default()
    }
}
