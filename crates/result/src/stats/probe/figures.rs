//! The figures a probe's document keeps only for the whole part, as values that add: the send
//! phase's rates (parts side by side add, the longest send phase stands; runs one after another
//! are over the summed time), the mean TCP phase times of parts saved before the phase
//! histograms existed, and the proxy handshakes (sums, saved as means per handshake).

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use super::super::WeightedMean;
use crate::common::Directions;
use crate::probe::ProxyPhases;

/// The send phase's rates, made by an engine on its own clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SendRates {
    pub pps: f64,
    pub pps_received: f64,
    pub send_duration_s: f64,
    pub bandwidth_bps: Directions,
}

impl SendRates {
    /// The rates of `sent` packets (`received` answered, `up`/`down` payload bytes) sent
    /// between `first_send` and `last_send` (ns): n packets on a regular schedule span n-1
    /// gaps, so the send phase is the span plus one packet's time.
    pub fn measured(
        sent: u64,
        received: u64,
        up: u64,
        down: u64,
        first_send: Option<u64>,
        last_send: Option<u64>,
    ) -> SendRates {
        let span = match (first_send, last_send) {
            (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
            _ => 0.0,
        };
        let pps = if span > 0.0 {
            (sent.saturating_sub(1)) as f64 / span
        } else {
            0.0
        };
        let per_packet_s = if pps > 0.0 { 1.0 / pps } else { 0.0 };
        let send_duration_s = span + per_packet_s;
        SendRates {
            pps,
            pps_received: if sent > 0 {
                pps * received as f64 / sent as f64
            } else {
                0.0
            },
            send_duration_s,
            bandwidth_bps: Directions::bits_per_s(up, down, send_duration_s),
        }
    }
}

impl SendRates {
    /// A later send phase after this one: the lengths add, each rate is over the summed time.
    pub fn then(&self, later: &SendRates) -> SendRates {
        let (a, b) = (self.send_duration_s, later.send_duration_s);
        SendRates {
            pps: super::super::over_time(self.pps, a, later.pps, b),
            pps_received: super::super::over_time(self.pps_received, a, later.pps_received, b),
            send_duration_s: a + b,
            bandwidth_bps: super::super::directions_over_time(
                &self.bandwidth_bps,
                a,
                &later.bandwidth_bps,
                b,
            ),
        }
    }
}

impl AddAssign<&SendRates> for SendRates {
    fn add_assign(&mut self, rhs: &SendRates) {
        self.pps += rhs.pps;
        self.pps_received += rhs.pps_received;
        self.send_duration_s = self.send_duration_s.max(rhs.send_duration_s);
        self.bandwidth_bps += &rhs.bandwidth_bps;
    }
}

/// Mean TCP phase times of saved parts, weighted by their clients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LegacyPhases {
    pub connect: Option<WeightedMean>,
    pub first_packet: Option<WeightedMean>,
}

fn add_mean(a: &mut Option<WeightedMean>, b: Option<WeightedMean>) {
    match (a.as_mut(), b) {
        (Some(a), Some(b)) => *a += &b,
        (None, b) => *a = b,
        (Some(_), None) => {}
    }
}

impl AddAssign<&LegacyPhases> for LegacyPhases {
    fn add_assign(&mut self, rhs: &LegacyPhases) {
        add_mean(&mut self.connect, rhs.connect);
        add_mean(&mut self.first_packet, rhs.first_packet);
    }
}

/// Proxy handshakes: how many and the sums of their phases (ns).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProxyStats {
    /// The proxy URL, password left out.
    pub via: String,
    pub handshakes: u64,
    pub proxy_connect_ns: f64,
    pub auth_ns: f64,
    pub reply_ns: f64,
    pub handshake_ns: f64,
}

impl ProxyStats {
    pub(super) fn from_saved(p: &ProxyPhases) -> ProxyStats {
        let n = p.handshakes.max(1) as f64;
        ProxyStats {
            via: p.via.clone(),
            handshakes: p.handshakes,
            proxy_connect_ns: p.proxy_connect_ms * 1e6 * n,
            auth_ns: p.auth_ms * 1e6 * n,
            reply_ns: p.reply_ms * 1e6 * n,
            handshake_ns: p.handshake_ms * 1e6 * n,
        }
    }

    pub(super) fn phases(&self) -> ProxyPhases {
        let n = self.handshakes.max(1) as f64;
        ProxyPhases {
            via: self.via.clone(),
            handshakes: self.handshakes,
            proxy_connect_ms: self.proxy_connect_ns / n / 1e6,
            auth_ms: self.auth_ns / n / 1e6,
            reply_ms: self.reply_ns / n / 1e6,
            handshake_ms: self.handshake_ns / n / 1e6,
        }
    }
}

impl AddAssign<&ProxyStats> for ProxyStats {
    fn add_assign(&mut self, rhs: &ProxyStats) {
        if self.via.is_empty() {
            self.via = rhs.via.clone();
        }
        self.handshakes += rhs.handshakes;
        self.proxy_connect_ns += rhs.proxy_connect_ns;
        self.auth_ns += rhs.auth_ns;
        self.reply_ns += rhs.reply_ns;
        self.handshake_ns += rhs.handshake_ns;
    }
}
