//! The per-packet log (`npt probe --packets FILE`, `npt ping --packets FILE`): one JSON object
//! per line (NDJSON) for each packet or attempt, written as soon as its fate is known — what
//! irtt's per-round-trip output gives, streamed instead of collected, so a day-long run costs
//! no memory. The engines emit [`PacketLine`]s; the command line writes them.
//!
//! Lines come in the order fates are decided, not in sequence order: a lost packet's line comes
//! one loss timeout after it was sent (later still when its direction waits for the replies
//! after it), a late reply's line after the packet's own `lost` line.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What happened to one packet (or one ping attempt).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Fate {
    /// Answered within the loss timeout: `rtt_ns` is its round trip.
    Received,
    /// No answer within the loss timeout, and the server did not refuse it: path loss
    /// (`direction` says which way where the far end's counts tell).
    Lost,
    /// An answer after the loss timeout (the packet's `lost` line came before): `rtt_ns` where
    /// the echo carried the send stamp back.
    Late,
    /// An answer seen before, again (`direction`: `up` when the far end received the packet
    /// twice, `down` when its one reply arrived twice).
    Duplicate,
    /// The server refused it (its per-source budget, its `--token`): not path loss.
    Refused,
    /// No answer, in a run of missing packets the far end says held both refusals and losses,
    /// without saying which was which (the summary's counts are exact).
    RefusedOrLost,
    /// The attempt failed with a classified error (`reason`: `refused`, `unreachable`, `tls` …).
    Error,
}

/// Which way a lost or duplicated packet went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// On the way to the far end (a lost packet never reached it).
    Up,
    /// On the way back (the far end received it; its reply was lost or duplicated).
    Down,
}

/// One line of the per-packet log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PacketLine {
    /// The packet's sequence number within its flow (a ping's attempt number).
    pub seq: u64,
    /// The client flow (probe `--clients`: 1, 2 …); absent for a ping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<u32>,
    /// When it was sent, ns after the run's start (monotonic clock); absent where not known
    /// (a late answer to a ping attempt already given up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_ns: Option<u64>,
    /// When it was sent, ns since the Unix epoch: the result's `started_at` plus `sent_ns`
    /// (the wall clock read once, so a clock step during the run moves no packet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_unix_ns: Option<u64>,
    pub fate: Fate,
    /// Round-trip time in ns (`received`, and `late` where known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_ns: Option<u64>,
    /// Which way it went wrong, where the far end's counts tell (`lost`, `duplicate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// Why: the error kind of an `error`, the server's reason for a `refused` (`budget`,
    /// `token` …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl PacketLine {
    /// A line for packet `seq` with fate `fate` and nothing else known yet.
    pub fn new(seq: u64, fate: Fate) -> PacketLine {
        PacketLine {
            seq,
            flow: None,
            sent_ns: None,
            sent_unix_ns: None,
            fate,
            rtt_ns: None,
            direction: None,
            reason: None,
        }
    }

    /// Sent `sent_ns` after a run that started at `start_unix_ns` (ns since the Unix epoch).
    pub fn sent(mut self, sent_ns: u64, start_unix_ns: u64) -> PacketLine {
        self.sent_ns = Some(sent_ns);
        self.sent_unix_ns = Some(start_unix_ns.saturating_add(sent_ns));
        self
    }
}

/// ns since the Unix epoch of `t` (0 before it).
pub fn unix_ns(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_only_what_is_known() {
        let mut l = PacketLine::new(7, Fate::Received).sent(2_000, 1_000_000);
        l.rtt_ns = Some(25_000);
        assert_eq!(
            serde_json::to_string(&l).unwrap(),
            r#"{"seq":7,"sent_ns":2000,"sent_unix_ns":1002000,"fate":"received","rtt_ns":25000}"#
        );
        let mut lost = PacketLine::new(8, Fate::Lost);
        lost.flow = Some(2);
        lost.direction = Some(Direction::Down);
        assert_eq!(
            serde_json::to_string(&lost).unwrap(),
            r#"{"seq":8,"flow":2,"fate":"lost","direction":"down"}"#
        );
        let back: PacketLine =
            serde_json::from_str(r#"{"seq":9,"fate":"refused_or_lost"}"#).unwrap();
        assert_eq!(back, PacketLine::new(9, Fate::RefusedOrLost));
    }
}
