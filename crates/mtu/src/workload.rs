//! `npt mtu` as a [`Workload`]: the search of a [`Config`] and the `kind = "mtu"` body of
//! what it found. No series (one answer at the end), so it never calls `on_interval`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use npt_result::common::{Errors, NptLatency};
use npt_result::mtu::{MtuBody, MtuDirection, MtuSummary};
use npt_result::workload::{Finished, Length, Progress, Stop, Workload};
use npt_result::StopReason;
use npt_stats::{ErrorCounts, Histogram, Snapshot};

use crate::search::ladder::Limit;
use crate::search::{Failure, FarEnd, Search, Side};
use crate::{net, Config, MtuError, DEFAULT_MAX_PACKET, IPV4_HEADERS, IPV6_HEADERS};

impl Workload for Config {
    const KIND: &'static str = "mtu";
    type Body = MtuBody;
    type Error = MtuError;

    fn config(&self) -> serde_json::Value {
        serde_json::json!({
            "target": name(self),
            "max": self.max,
            "timeout_s": self.timeout.as_secs_f64(),
            "token": self.token.is_some(),
            "via": self.via.as_ref().map(|v| v.to_string()),
        })
    }

    fn length(&self) -> Option<Length> {
        Some(length(self.timeout, self.token.is_some()))
    }

    fn run(
        &mut self,
        stop: &Arc<Stop>,
        _no_intervals: &mut dyn FnMut(&Progress<'_>),
    ) -> Result<Finished<MtuBody>, MtuError> {
        let to = *self
            .target
            .resolve()?
            .first()
            .ok_or_else(|| MtuError::Silent(self.target.host.clone()))?;
        let hdr = if to.is_ipv4() {
            IPV4_HEADERS
        } else {
            IPV6_HEADERS
        };
        let started = SystemTime::now();
        let mono = Instant::now();
        let (sock, relay) = net::open(to, &self.target.host, self.via.as_ref())?;
        // Through a relay the client's leg carries its header too.
        let extra = relay.as_ref().map_or(0, |r| r.header().len());
        let max = self.max.unwrap_or(DEFAULT_MAX_PACKET - hdr - extra);
        let deadline = u64::try_from(self.timeout.as_nanos()).unwrap_or(u64::MAX);
        let mut search = Search::new(max, hdr, rand::random(), self.token.is_some(), deadline);
        search.extra = extra;
        net::run(
            &mut search,
            &sock,
            relay.as_ref(),
            self.token.as_deref(),
            stop,
        )?;
        if search.failure() == Some(Failure::Silent) {
            return Err(MtuError::Silent(name(self)));
        }
        let mut body = body(&search, name(self), to.to_string(), max);
        body.summary.via = self.via.as_ref().map(|v| v.to_string());
        body.summary.via_header = u(extra);
        let stopped_by = stop.reason().unwrap_or(StopReason::Count);
        Ok(Finished::new(
            body,
            started,
            started + mono.elapsed(),
            stopped_by,
            Snapshot::new(),
        ))
    }
}

fn name(c: &Config) -> String {
    let h = &c.target.host;
    let host = if h.contains(':') {
        format!("[{h}]")
    } else {
        h.clone()
    };
    format!("udp://{host}:{}", c.target.port)
}

/// The longest a search takes: its time bound, and with `--token` a handshake's.
pub fn length(timeout: Duration, token: bool) -> Length {
    let handshake = if token {
        npt_client::auth::HANDSHAKE_TIMEOUT
    } else {
        Duration::ZERO
    };
    Length::planned(timeout + handshake)
}

fn u(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// One direction of a finished search as the result says it.
fn direction(s: &Side, hdr: usize, down: bool) -> MtuDirection {
    let l = &s.ladder;
    let lo = l.lo;
    let hi = l.hi;
    let mut d = MtuDirection {
        largest_datagram: lo.map(u),
        largest_packet: lo.map(|x| u(x + hdr)),
        smallest_lost: hi.map(|h| u(h.0)),
        settled: l.all_crossed() || matches!((lo, hi), (Some(a), Some((b, _))) if b == a + 1),
        largest_fragment: s.largest_fragment,
        clamped: s.clamped,
        sent: s.sent,
        answered: s.answered,
        lost_sizes: s.lost_sizes,
        contradicted: l.contradicted,
        ..MtuDirection::default()
    };
    d.verdict = if s.unreadable {
        "unreadable"
    } else if l.all_crossed() {
        "max_crossed"
    } else if lo.is_none() {
        "nothing_crossed"
    } else {
        match hi.map(|h| h.1) {
            Some(Limit::Icmp { mtu }) => {
                d.icmp_mtu = Some(mtu);
                d.icmp_from = s.icmp.and_then(|i| i.1).map(|a| a.to_string());
                "icmp"
            }
            Some(Limit::Local { mtu }) => {
                d.local_mtu = Some(mtu);
                "local"
            }
            // Down: the responder's kernel learned a path MTU below the lost size — an ICMP
            // reached it (now or earlier): PMTUD works that way.
            Some(Limit::Lost)
                if down
                    && hi.is_some_and(|h| {
                        s.far_pmtu_last.is_some_and(|p| (p as usize) < h.0 + hdr)
                    }) =>
            {
                d.icmp_mtu = s.far_pmtu_last;
                "icmp"
            }
            Some(Limit::Lost) => "black_hole",
            None => "max_crossed",
        }
    }
    .to_string();
    d
}

/// The result body of a finished search.
pub fn body(s: &Search, target: String, address: String, max: usize) -> MtuBody {
    let mut rtt = Histogram::new();
    for &r in &s.rtts {
        rtt.record(r);
    }
    // A size lost after every try is the search's answer (too big for the path), counted in
    // each direction's `lost_sizes`, not an error: counted as one, a healthy path read as
    // three timeouts a search, and a monitor's error counter and compare's errors column said
    // so of every round.
    let errors = ErrorCounts::default();
    let sent = u64::from(s.up.sent) + u64::from(s.down.sent);
    let mut down = direction(&s.down, s.hdr, true);
    down.capped_by_up = !s.token
        && s.down.ladder.hi.is_some()
        && s.down.ladder.hi.map(|h| h.0) > s.up.ladder.lo.filter(|_| !s.up.ladder.all_crossed());
    MtuBody {
        target,
        address,
        summary: MtuSummary {
            headers: u(s.hdr),
            max: u(max),
            far_end: match s.far_end {
                FarEnd::Echo => "echo",
                FarEnd::NptServe | FarEnd::Unknown => "npt-serve",
            }
            .to_string(),
            timed_out: s.timed_out,
            via: None,
            via_header: 0,
            up: direction(&s.up, s.hdr, false),
            down,
            rounds: None,
        },
        latency: [("udp".to_string(), NptLatency::from(&rtt.summary()))].into(),
        errors: Errors::new(errors, sent),
        rtt_histogram: rtt.to_serialized(),
    }
}
