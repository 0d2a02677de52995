//! A stats value as the store keeps it. Each round and rollup holds one, so its bytes are most
//! of the file: JSON whose histograms are references into a side table of their compact
//! bytes ([`npt_stats::compact`]), the two deflated together against a fixed dictionary of
//! what these values look like (the field names and the shape of every kind,
//! `stats_dict.json`), so that a ping round's value is a few dozen bytes instead of ~280.
//!
//! Layout: `b'N'`, a version byte (1), then the raw deflate stream of `JSON 0x00 side-table`
//! as it goes on after the dictionary: the dictionary's own compressed bytes (any encoding of it, ending on
//! a sync flush) are put back in front to read it. `b'N'` starts with the reserved block type
//! `11` of deflate, so the values the first store layout wrote (plain deflated JSON with
//! V2-serialized histograms) are told apart and read as they are.

use std::io::{Read, Write};
use std::sync::OnceLock;

use miniz_oxide::deflate::core::CompressorOxide;
use miniz_oxide::deflate::stream::deflate;
use miniz_oxide::{DataFormat, MZFlush, MZStatus};

use crate::kinds::{KindError, KindStats};

const MAGIC: u8 = b'N';
const V1: u8 = 1;
/// Never to change once a store holds values deflated against it: a new dictionary is a new
/// version byte.
const DICT: &[u8] = include_bytes!("stats_dict.json");
/// At most this much JSON is inflated (a corrupt blob is an error, not an allocation).
const MAX: u64 = 64 << 20;

/// The dictionary deflated, ending on a sync flush: put in front of a value's stream, the
/// inflater's window holds the dictionary when the value's bytes begin.
// NO-PANIC: deflating into a Vec does not fail.
#[allow(clippy::expect_used)]
fn primer() -> &'static [u8] {
    static P: OnceLock<Vec<u8>> = OnceLock::new();
    P.get_or_init(|| {
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(DICT).expect("deflating into a Vec");
        z.flush().expect("deflating into a Vec");
        z.get_ref().clone()
    })
}

/// A compressor that has deflated the dictionary, ending on a sync flush: each value goes on
/// from a copy of it. Deflating the 2.4 kB dictionary again for every value was most of what a
/// value cost (a monitor stores a thousand a second); the copy gives the same state, so the
/// same bytes.
fn primed() -> &'static CompressorOxide {
    static C: OnceLock<CompressorOxide> = OnceLock::new();
    C.get_or_init(|| {
        let mut c = CompressorOxide::default();
        c.set_format_and_level(DataFormat::Raw, LEVEL);
        let mut sink = vec![0; DICT.len() * 2 + 1024];
        let mut input = DICT;
        // Bounded: each pass consumes input or writes output, and the sink holds it all.
        for _ in 0..64 {
            let r = deflate(&mut c, input, &mut sink, MZFlush::Sync);
            input = input.get(r.bytes_consumed..).unwrap_or_default();
            if input.is_empty() && r.bytes_written < sink.len() {
                break;
            }
        }
        c
    })
}

/// The deflate level of values (zlib's default).
const LEVEL: u8 = 6;

/// The value's bytes.
// NO-PANIC: the value is numbers, strings and string-keyed maps, which serde_json writes into
// a `Vec` without fail.
#[allow(clippy::expect_used)]
pub fn encode(s: &KindStats) -> Vec<u8> {
    let (json, side) = npt_stats::compact::collect(|| serde_json::to_vec(s));
    let mut json = json.expect("stats values always serialize");
    json.push(0);
    json.extend_from_slice(&side);
    let mut c = primed().clone();
    let mut out = vec![0; 2 + json.len() / 2 + 64];
    out[0] = MAGIC;
    out[1] = V1;
    let (mut at, mut input) = (2, json.as_slice());
    // Bounded: the output grows each pass it fills, and a stream ends once its input is in.
    for _ in 0..64 {
        let r = deflate(
            &mut c,
            input,
            out.get_mut(at..).unwrap_or_default(),
            MZFlush::Finish,
        );
        at += r.bytes_written;
        input = input.get(r.bytes_consumed..).unwrap_or_default();
        match r.status {
            Ok(MZStatus::StreamEnd) => break,
            _ => out.resize(out.len() * 2, 0),
        }
    }
    out.truncate(at);
    out
}

/// A value either layout wrote.
pub fn decode(bytes: &[u8]) -> Result<KindStats, KindError> {
    let bad = |e: &dyn std::fmt::Display| KindError::Decode(e.to_string());
    let mut json = Vec::new();
    match bytes {
        [MAGIC, V1, rest @ ..] => {
            let mut all = flate2::read::DeflateDecoder::new(primer().chain(rest))
                .take(MAX + DICT.len() as u64);
            let mut dict = vec![0; DICT.len()];
            all.read_exact(&mut dict).map_err(|e| bad(&e))?;
            all.read_to_end(&mut json).map_err(|e| bad(&e))?;
            let at = json
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| bad(&"no side table"))?;
            let (text, side) = json.split_at(at);
            return npt_stats::compact::provide(side.get(1..).unwrap_or_default(), || {
                serde_json::from_slice(text)
            })
            .map_err(|e| bad(&e))?
            .map_err(|e| bad(&e));
        }
        [MAGIC, v, ..] => {
            return Err(bad(&format!(
                "stats value of layout {v}, newer than this npt"
            )))
        }
        _ => {
            flate2::read::DeflateDecoder::new(bytes)
                .take(MAX)
                .read_to_end(&mut json)
                .map_err(|e| bad(&e))?;
        }
    }
    serde_json::from_slice(&json).map_err(|e| bad(&e))
}

#[cfg(test)]
mod tests {
    use npt_result::stats::PingStats;

    use super::*;

    fn round() -> KindStats {
        let mut s = PingStats::default();
        for ms in [20, 21, 22, 25, 31] {
            s.sent += 1;
            s.received += 1;
            s.rtt.record(ms * 1_000_000 + 12_345);
        }
        s.answered.npt_serve = 5;
        KindStats::Ping(s)
    }

    /// What the first layout wrote: the JSON as result documents hold it, deflated.
    fn first_layout(s: &KindStats) -> Vec<u8> {
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&serde_json::to_vec(s).unwrap()).unwrap();
        z.finish().unwrap()
    }

    #[test]
    fn a_round_is_small_and_reads_back_exactly() {
        let r = round();
        let b = encode(&r);
        let old = first_layout(&r);
        assert!(b.len() * 5 < old.len(), "{} vs {}", b.len(), old.len());
        for bytes in [&b, &old] {
            let back = decode(bytes).unwrap();
            assert_eq!(back.figures(), r.figures());
            assert!(back.headline() == r.headline());
        }
    }

    /// The primed copy writes what deflating the dictionary and the value as one stream (as
    /// stores were written before it) writes after the dictionary.
    #[test]
    fn a_value_is_the_same_bytes_as_one_stream_after_the_dictionary() {
        let (json, side) = npt_stats::compact::collect(|| serde_json::to_vec(&round()));
        let mut json = json.unwrap();
        json.push(0);
        json.extend_from_slice(&side);
        let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(6));
        z.write_all(DICT).unwrap();
        z.flush().unwrap();
        let skip = z.get_ref().len();
        z.write_all(&json).unwrap();
        let all = z.finish().unwrap();
        assert_eq!(&encode(&round())[2..], &all[skip..]);
    }

    #[test]
    fn damaged_values_are_errors() {
        let b = encode(&round());
        assert!(decode(&b[..b.len() / 2]).is_err());
        assert!(decode(&[MAGIC, 9, 1, 2]).is_err());
        assert!(decode(b"not deflate").is_err());
    }
}
