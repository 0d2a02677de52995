//! The body of a `kind = "mtu"` result document (`npt mtu`): the largest datagram that
//! crossed each way, and what stopped a larger one — an ICMP "fragmentation needed" /
//! "packet too big" (PMTUD works), nothing (a black hole, bracketed), an interface's own MTU —
//! with the fragments the receiving end saw. Here rather than in npt-mtu so that every reader
//! reads it as one typed result ([`crate::any::AnyBody::Mtu`]).
//!
//! Field names are what users script against (docs/mtu.md); `schema/mtu.schema.json` checks
//! them.

use std::collections::BTreeMap;

use npt_stats::SerializedHistogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::common::{Errors, NptLatency};

/// The body of an `mtu` result.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MtuBody {
    /// `udp://HOST:PORT` as given.
    #[schemars(regex(pattern = "^udp://"))]
    pub target: String,
    /// The address it resolved to.
    pub address: String,
    pub summary: MtuSummary,
    /// `latency.udp`: the NPT latency block of the answers' round trips.
    #[schemars(extend(
        "propertyNames" = {"enum": ["udp"]},
        "maxProperties" = 1,
    ))]
    pub latency: BTreeMap<String, NptLatency>,
    /// `total_errors`: sizes lost after every try; `error_rate` over the datagrams sent.
    pub errors: Errors,
    /// The answers' round trips, ns.
    pub rtt_histogram: SerializedHistogram,
}

/// What the search found, each way.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MtuSummary {
    /// IP + UDP header bytes under a datagram: 28 (IPv4) or 48 (IPv6); an IP packet is the
    /// datagram plus these.
    pub headers: u32,
    /// The largest datagram tried (`--max`), bytes.
    pub max: u32,
    /// `npt-serve` (each direction read on its own) or `echo` (a plain echo: the round trip
    /// only, in `up`; `down` unreadable).
    #[schemars(extend("enum" = ["npt-serve", "echo"]))]
    pub far_end: String,
    /// True when the time bound (`--timeout`) cut the search short.
    pub timed_out: bool,
    /// `--via`: the proxy whose UDP relay the probes crossed (credentials left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// `--via`: the bytes its SOCKS5 header adds to each datagram on the client's leg (sizes
    /// are the datagrams the far end gets; the client's leg carries this much more).
    #[serde(default)]
    pub via_header: u32,
    /// Client to far end (against a plain echo: the round trip).
    pub up: MtuDirection,
    /// Far end to client.
    pub down: MtuDirection,
    /// `npt report --from` of a monitor's rounds: how many there were and what each read (the
    /// sizes above are then the bracket the rounds agree on). Absent from one run's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<MtuRounds>,
}

/// A monitor range's rounds of `npt mtu`, counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MtuRounds {
    /// Rounds in the range.
    pub rounds: u64,
    /// Rounds whose answer did not meet the range's before them (a size crossed that an
    /// earlier round lost, or the reverse: the path's MTU changed); the range keeps the later
    /// answer.
    pub changed: u64,
    /// Rounds that ran out of time (`--timeout`).
    pub timed_out: u64,
    pub up: MtuRoundsDirection,
    pub down: MtuRoundsDirection,
}

/// One direction over a range's rounds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MtuRoundsDirection {
    /// Rounds by their verdict (`icmp`, `black_hole`, `local`, `max_crossed`,
    /// `nothing_crossed`, `unreadable`).
    pub verdicts: BTreeMap<String, u64>,
    /// Rounds whose down bracket was capped by what crossed up (`capped_by_up`).
    pub capped_by_up: u64,
    /// The smallest and the largest of the rounds' `largest_datagram`, bytes; absent when no
    /// round had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smallest: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub largest: Option<u32>,
}

/// What one direction carried.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct MtuDirection {
    /// `max_crossed` (the largest size tried crossed), `icmp` (a larger one was refused with
    /// an ICMP: PMTUD works), `black_hole` (larger ones vanished with no ICMP), `local` (the
    /// sending host's own interface MTU: this host's up, the responder's down),
    /// `nothing_crossed`, `unreadable` (a plain echo has no down direction).
    #[schemars(extend("enum" = ["max_crossed", "icmp", "black_hole", "local", "nothing_crossed", "unreadable"]))]
    pub verdict: String,
    /// The largest datagram that crossed, bytes (UDP payload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub largest_datagram: Option<u32>,
    /// The same as an IP packet: `largest_datagram` + `headers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub largest_packet: Option<u32>,
    /// The smallest datagram that did not cross, bytes; absent when the largest tried did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smallest_lost: Option<u32>,
    /// True when the bracket is one byte wide (or the largest tried crossed).
    pub settled: bool,
    /// `icmp`: the MTU the ICMP announced (IP bytes); down, the responder's path MTU toward
    /// the client as its kernel learned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp_mtu: Option<u32>,
    /// `icmp` up: the router that sent it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icmp_from: Option<String>,
    /// `local`: the interface MTU that refused the size (IP bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_mtu: Option<u32>,
    /// The largest fragment (IP bytes) of a probe the receiving end got reassembled: the path
    /// fragmented it (a relay or tunnel re-sent it without DF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub largest_fragment: Option<u32>,
    /// Down, without `--token`: answers the responder clamped to its request's length.
    pub clamped: u32,
    /// Down, without `--token`: the sizes lost are above what crossed up, and each down
    /// request is as long as the size it asks for — it may be the request that was lost on the
    /// way up, so the bracket is not the down path's own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capped_by_up: bool,
    /// Datagrams sent, answered, and sizes lost after every try.
    pub sent: u32,
    pub answered: u32,
    pub lost_sizes: u32,
    /// Sizes counted as lost that a larger size then crossed (loss, not MTU).
    pub contradicted: u32,
}

impl crate::body::Body for MtuBody {
    const KIND: &'static str = "mtu";
}

impl crate::body::View for MtuBody {
    crate::body::blocks!();

    fn histograms(&self) -> BTreeMap<&str, &SerializedHistogram> {
        BTreeMap::from([("rtt", &self.rtt_histogram)])
    }
    fn headline_parts(&self) -> Vec<(&str, &SerializedHistogram)> {
        vec![("rtt", &self.rtt_histogram)]
    }
    fn target(&self) -> String {
        self.target.clone()
    }
}
