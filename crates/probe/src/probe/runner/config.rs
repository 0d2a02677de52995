//! The probe's configuration as the runner takes it: everything a run needs, validated by the
//! command line, and how it is recorded in the result (durations in ms, the fill by name, `--via`
//! without its password, secrets never). Apart from the runner so that what a probe is asked to
//! do reads in one place, away from how it is run.

use std::net::SocketAddr;
use std::time::Duration;

use npt_wire::Fill;
use serde::Serialize;

use super::super::load::LoadPlan;
use super::super::session::ClockSync;
use super::OnWaiting;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    Udp,
    Tcp,
    /// STAMP (RFC 8762) test packets over UDP to a Session-Reflector.
    Stamp,
}

impl Proto {
    pub fn name(&self) -> &'static str {
        match self {
            Proto::Udp => "udp",
            Proto::Tcp => "tcp",
            Proto::Stamp => "stamp",
        }
    }

    /// Datagrams (UDP and STAMP): the UDP driver, `--via` through a SOCKS5 UDP association.
    pub fn is_udp(&self) -> bool {
        matches!(self, Proto::Udp | Proto::Stamp)
    }
}

/// How packets are paced, for the whole run (split over clients by the runner).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum PacingSpec {
    Interval {
        #[serde(serialize_with = "ser_dur")]
        interval: Duration,
    },
    Rate {
        pps: f64,
    },
    Relay {
        warmup: u64,
        #[serde(serialize_with = "ser_dur")]
        warmup_interval: Duration,
    },
}

/// Where a UDP reply's receive time comes from (`--rx-stamp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RxStamp {
    /// The clock read right after the receive returned: the RTT includes how long the tester
    /// took to wake up and read (the RTT at the application, docs/measurement.md; what a
    /// user-space ping-pong tool reports). The default.
    #[default]
    User,
    /// The kernel's timestamp of the datagram's arrival (`SO_TIMESTAMPNS`): the tester's own
    /// wake-up and receive call are not in the RTT (opt-in).
    Kernel,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StageSpec {
    Time(#[serde(serialize_with = "ser_dur")] Duration),
    Packets(u64),
}

fn ser_dur<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{}ms", d.as_secs_f64() * 1e3))
}

fn ser_opt_dur<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => ser_dur(d, s),
        None => s.serialize_none(),
    }
}

fn ser_fill<S: serde::Serializer>(f: &Fill, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match f {
        Fill::Random => "random",
        Fill::Zero => "zero",
        Fill::Pattern => "pattern",
    })
}

/// Everything a probe run needs, validated.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeConfig {
    pub proto: Proto,
    /// As the user wrote it (`host:port`).
    pub target: String,
    pub addr: SocketAddr,
    pub raw: bool,
    /// `--token`'s secret, never recorded ([`super::auth`]).
    #[serde(skip)]
    pub token: Option<String>,
    /// `stamp://` with `--stamp-key`: STAMP's authenticated mode under this key (never
    /// recorded).
    #[serde(skip)]
    pub stamp_key: Option<npt_wire::stamp::StampKey>,
    pub size: usize,
    #[serde(serialize_with = "ser_fill")]
    pub fill: Fill,
    pub verify: bool,
    pub pacing: PacingSpec,
    #[serde(serialize_with = "ser_dur")]
    pub loss_timeout: Duration,
    pub count: Option<u64>,
    #[serde(serialize_with = "ser_opt_dur")]
    pub duration: Option<Duration>,
    pub clients: u32,
    pub threads: u32,
    pub stage: StageSpec,
    /// Sends later than this after their due time count as behind schedule.
    #[serde(serialize_with = "ser_dur")]
    pub behind_threshold: Duration,
    /// Go through this proxy (`--via`): SOCKS5 CONNECT or HTTP CONNECT for TCP, SOCKS5 UDP
    /// ASSOCIATE for UDP. Recorded without its password.
    #[serde(serialize_with = "ser_via")]
    pub via: Option<npt_proxy::Via>,
    /// `--under-load`: bulk streams during a loaded phase between an idle and a recovery
    /// phase ([`super::load`]); `duration` is then the three phases together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub under_load: Option<LoadPlan>,
    /// UDP: where each reply's receive time comes from.
    pub rx_stamp: RxStamp,
    /// UDP: wait by spinning instead of sleeping (one busy CPU per probe thread).
    pub spin: bool,
    /// The clock assumption one-way delays rest on (`same-host`, `synced` by `--owd`, or
    /// `none`: no one-way delay, only what needs no sync).
    #[serde(serialize_with = "ser_clock")]
    pub clock: ClockSync,
    /// `-4`/`-6`, `--bind`, `--dscp`: the flows' sockets (not `--via`'s proxy connection).
    #[serde(skip_serializing_if = "npt_client::source::Source::is_default")]
    pub source: npt_client::source::Source,
    /// UDP: the TOS byte `npt serve` is asked to send its replies with, and to say what each
    /// request arrived with (`--reply-dscp`, `--reply-ecn`; by default what `--dscp`, `--tos`,
    /// `--ecn` send). None: not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark: Option<u8>,
    /// Told once when every flow has stopped sending and replies are still in flight: the
    /// wait of up to the loss timeout before the report (not recorded).
    #[serde(skip)]
    pub on_waiting: OnWaiting,
}

fn ser_clock<S: serde::Serializer>(c: &ClockSync, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.name())
}

fn ser_via<S: serde::Serializer>(v: &Option<npt_proxy::Via>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => s.serialize_str(&v.to_string()),
        None => s.serialize_none(),
    }
}
