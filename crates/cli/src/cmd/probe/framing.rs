//! A probe packet's framing: npt's own or raw (`--raw`, `--token`; the line tester's XML means
//! a plain echo), STAMP's key (`--stamp-key`), and `--size` checked against the framing's
//! header.

use npt_probe::xml::XmlConfig;
use npt_probe::Proto;

use crate::cmd::probe::args::ProbeArgs;
use crate::usage;

/// The packet's framing: raw or npt's (`--raw`, `--token`; the XML means a plain echo), the
/// STAMP key, and `--size` checked against the framing's header.
pub type Framing = (bool, Option<npt_wire::stamp::StampKey>, usize);

pub fn framing(a: &ProbeArgs, x: Option<&XmlConfig>, proto: Proto) -> anyhow::Result<Framing> {
    let stamp_key = stamp_key(a, proto)?;
    let raw = proto != Proto::Stamp && (a.raw || (x.is_some() && !a.auth.is_some()));
    if a.raw && a.auth.is_some() {
        return Err(usage!(
            "--token needs npt's framed packets; it cannot be used with --raw"
        ));
    }
    let size = size(a, proto, raw, stamp_key.is_some())?;
    Ok((raw, stamp_key, size))
}

/// `--stamp-key`: STAMP's authenticated mode, for `stamp://` only.
fn stamp_key(a: &ProbeArgs, proto: Proto) -> anyhow::Result<Option<npt_wire::stamp::StampKey>> {
    if proto != Proto::Stamp {
        if a.stamp_key.is_some() {
            return Err(usage!(
                "--stamp-key is for stamp:// targets (NPT_STAMP_KEY sets it too)"
            ));
        }
        return Ok(None);
    }
    if a.raw || a.auth.is_some() {
        return Err(usage!(
            "--raw and --token are for npt's own framing; a stamp:// target speaks STAMP \
             (--stamp-key for its authenticated mode)"
        ));
    }
    a.stamp_key
        .as_deref()
        .map(npt_wire::stamp::StampKey::from_hex)
        .transpose()
        .map_err(|e| usage!("--stamp-key: {e}"))
}

/// `--size`, checked against the framing's header [default: 64; STAMP's base packet, 44
/// bytes or 112 authenticated, which routers send].
fn size(a: &ProbeArgs, proto: Proto, raw: bool, authenticated: bool) -> anyhow::Result<usize> {
    use npt_wire::stamp::{valid_size, Mode, TLV_HEADER_LEN};
    let max = match proto {
        Proto::Udp | Proto::Stamp => 65_507,
        Proto::Tcp => npt_wire::frame::MAX_FRAME_LEN as usize,
    };
    if proto == Proto::Stamp {
        let mode = if authenticated {
            Mode::Authenticated
        } else {
            Mode::Open
        };
        let base = mode.base_len();
        let size = a.size.unwrap_or(base);
        if !valid_size(mode, size) || size > max {
            return Err(usage!(
                "--size {size}: a STAMP test packet is {base} bytes{}, or {} to {max} with \
                 padding (RFC 8972's Extra Padding TLV)",
                if authenticated {
                    " (authenticated)"
                } else {
                    ""
                },
                base + TLV_HEADER_LEN
            ));
        }
        return Ok(size);
    }
    let min = if raw {
        npt_wire::RAW_HEADER_LEN
    } else {
        npt_wire::HEADER_LEN
    };
    let size = a.size.unwrap_or(64);
    if size < min || size > max {
        return Err(usage!(
            "--size {size}: must be between {min} (the {} header) and {max} bytes",
            if raw { "raw" } else { "framed" }
        ));
    }
    Ok(size)
}
