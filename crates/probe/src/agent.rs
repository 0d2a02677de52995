//! The marking read of `npt trace --dscp` (and of `npt serve --hop-agent` for a hop request of
//! proto `mark`, [`npt_wire::hop::mark`]): a short `npt probe` of framed UDP echoes, each sent
//! with one TOS byte and asking its reply to carry the same ([`npt_wire::marking`]), against the
//! `npt serve` at the far end of one segment; its marking block's two directions are the
//! segment's verdicts. [`way`] and [`direction`] carry a direction through a hop reply and
//! back, so a segment read by an agent says what one read here says.
//!
//! The echoes are keyed with the chain's one `--token` (the far end is an `npt serve --token`);
//! their count, pace and timeout are the request's, bounded by the agent's limits like a UDP
//! echo's.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use npt_result::marking::{Fate, Tos, Way};
use npt_result::workload::Stop;
use npt_wire::hop::mark::FATES;
use npt_wire::hop::{HopRequest, MarkReply, MarkWay};
use npt_wire::Fill;

use crate::{PacingSpec, ProbeConfig, Proto, StageSpec};

/// One marking read: where, with what, how many.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The far end's `npt serve` (a checked literal: nothing is resolved again).
    pub addr: SocketAddr,
    /// The TOS byte every echo is sent with and every reply is asked to carry.
    pub tos: u8,
    pub count: u64,
    pub interval: Duration,
    /// How long an echo waits for its reply.
    pub timeout: Duration,
    /// Datagram size, header included.
    pub size: usize,
    /// The chain's secret.
    pub token: Option<String>,
    /// `-4`/`-6`, `--bind` (this host's own read); its TOS is the plan's.
    pub source: npt_client::source::Source,
}

/// Both directions of a read: up (to the far end, as it says each echo arrived) and down (as
/// this host's kernel says each reply arrived).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read {
    pub up: Way,
    pub down: Way,
}

/// Why a read said nothing: an error kind of npt's vocabulary and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failed {
    pub kind: &'static str,
    pub why: String,
}

/// Runs the read of `plan` (bounded by its count, pace and timeout).
pub fn read(plan: &Plan, stop: &Arc<Stop>) -> Result<Read, Failed> {
    let mut source = plan.source;
    source.tos = Some(plan.tos);
    let cfg = ProbeConfig {
        proto: Proto::Udp,
        target: plan.addr.to_string(),
        addr: plan.addr,
        raw: false,
        token: plan.token.clone(),
        stamp_key: None,
        size: plan.size.max(npt_wire::frame::HEADER_LEN),
        fill: Fill::Random,
        verify: true,
        pacing: PacingSpec::Interval {
            interval: plan.interval,
        },
        loss_timeout: plan.timeout,
        count: Some(plan.count.max(1)),
        duration: None,
        clients: 1,
        threads: 1,
        stage: StageSpec::Time(Duration::from_secs(1)),
        behind_threshold: Duration::from_millis(10),
        via: None,
        under_load: None,
        rx_stamp: Default::default(),
        spin: false,
        clock: crate::ClockSync::None,
        source,
        mark: Some(plan.tos),
        on_waiting: Default::default(),
    };
    let done = crate::probe::runner::run(&cfg, stop, &mut |_| {}, None).map_err(|e| Failed {
        kind: npt_client::auth::error_kind(&e).name(),
        why: e.to_string(),
    })?;
    let s = &done.body.summary;
    if s.packets.received == 0 {
        return Err(Failed {
            kind: "timeout",
            why: format!("none of {} marked echoes was answered", s.packets.sent),
        });
    }
    let m = s.marking.as_ref();
    match (m.and_then(|m| m.up), m.and_then(|m| m.down)) {
        (Some(up), Some(down)) => Ok(Read { up, down }),
        _ => Err(Failed {
            kind: "protocol",
            why: "the far end's replies say nothing of the marking".into(),
        }),
    }
}

/// The plan a hop request stands for, aimed at `addr`, keyed with the agent's `secret`.
pub fn plan(req: &HopRequest, addr: SocketAddr, secret: Option<&str>) -> Plan {
    Plan {
        addr,
        tos: req.tos,
        count: u64::from(req.attempts),
        interval: Duration::from_micros(u64::from(req.interval_us)),
        timeout: Duration::from_micros(u64::from(req.timeout_us)),
        size: match usize::from(req.size) {
            0 => 64,
            n => n,
        },
        token: secret.map(str::to_string),
        source: Default::default(),
    }
}

/// The agent's reader for marking requests, keyed with the agent's `--token` `secret`.
pub fn measurer(
    secret: Option<String>,
) -> impl Fn(&HopRequest, SocketAddr) -> MarkReply + Send + Sync + 'static {
    move |req, addr| match read(&plan(req, addr, secret.as_deref()), &Arc::new(Stop::new())) {
        Ok(r) => MarkReply {
            up: way(&r.up),
            down: way(&r.down),
        },
        Err(f) => MarkReply {
            up: MarkWay::failed(f.kind),
            down: MarkWay::failed(f.kind),
        },
    }
}

fn fate_name(f: Fate) -> &'static str {
    match f {
        Fate::Arrived => FATES[0],
        Fate::Rewritten => FATES[1],
        Fate::Bleached => FATES[2],
        Fate::Mixed => FATES[3],
        Fate::Unknown => FATES[4],
    }
}

fn fate_of(name: &str) -> Fate {
    match name {
        "arrived" => Fate::Arrived,
        "rewritten" => Fate::Rewritten,
        "bleached" => Fate::Bleached,
        "mixed" => Fate::Mixed,
        _ => Fate::Unknown,
    }
}

/// One direction in the reply's terms (counts above 65,535 travel as 65,535: a request asks
/// for at most 100 echoes).
pub fn way(w: &Way) -> MarkWay {
    MarkWay {
        read: Ok(()),
        sent: w.sent.map(Tos::byte),
        arrived: w.arrived.map(Tos::byte),
        dscp: fate_name(w.dscp),
        ecn: fate_name(w.ecn),
        packets: u16::try_from(w.packets).unwrap_or(u16::MAX),
        ce: u16::try_from(w.ce).unwrap_or(u16::MAX),
    }
}

/// A direction of an agent's reply as a probe's marking block says it; `Err(kind)` when the
/// agent's read failed.
pub fn direction(w: &MarkWay) -> Result<Way, &'static str> {
    w.read?;
    Ok(Way {
        sent: w.sent.map(Tos::of),
        arrived: w.arrived.map(Tos::of),
        dscp: fate_of(w.dscp),
        ecn: fate_of(w.ecn),
        packets: u64::from(w.packets),
        ce: u64::from(w.ce),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direction_travels_to_the_reply_and_back_as_the_probe_says_it() {
        let w = Way {
            sent: Some(Tos { dscp: 46, ecn: 2 }),
            arrived: Some(Tos { dscp: 0, ecn: 2 }),
            dscp: Fate::Bleached,
            ecn: Fate::Arrived,
            packets: 20,
            ce: 3,
        };
        assert_eq!(direction(&way(&w)), Ok(w));
        for f in [
            Fate::Arrived,
            Fate::Rewritten,
            Fate::Bleached,
            Fate::Mixed,
            Fate::Unknown,
        ] {
            let w = Way {
                sent: None,
                arrived: None,
                dscp: f,
                ecn: f,
                packets: 0,
                ce: 0,
            };
            assert_eq!(direction(&way(&w)), Ok(w));
        }
        assert_eq!(direction(&MarkWay::failed("timeout")), Err("timeout"));
    }

    #[test]
    fn a_silent_far_end_is_a_timeout_within_the_bound() {
        let closed = {
            let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            s.local_addr().unwrap()
        };
        let plan = Plan {
            addr: closed,
            tos: 46 << 2,
            count: 3,
            interval: Duration::from_millis(10),
            timeout: Duration::from_millis(300),
            size: 64,
            token: None,
            source: Default::default(),
        };
        let t = std::time::Instant::now();
        let r = read(&plan, &Arc::new(Stop::new()));
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        let f = r.unwrap_err();
        assert!(matches!(f.kind, "timeout" | "refused"), "{f:?}");
    }
}
