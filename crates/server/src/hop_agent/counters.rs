//! What the hop agent counts: requests answered and the attempts they made, and every refusal
//! by reason, for the exit summary, the periodic log line and `--metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

/// The hop agent's counters (all zero on a server that is not one, except `refused_disabled`).
#[derive(Debug, Default)]
pub struct HopCounters {
    /// Requests measured and answered.
    pub answered: AtomicU64,
    /// Attempts those requests made (connects, echoes, handshakes sent to targets).
    pub attempts: AtomicU64,
    /// Path-MTU searches answered (also counted in `answered`).
    pub mtu_searches: AtomicU64,
    /// Datagrams those searches sent: up probes, and down requests the next hop answered with
    /// datagrams of the sizes asked.
    pub mtu_probes: AtomicU64,
    /// Requests to a server without `--hop-agent`.
    pub refused_disabled: AtomicU64,
    /// Requests whose body tag does not verify (the stream is closed).
    pub refused_mac: AtomicU64,
    /// Requests whose sequence number the session has seen before (the stream is closed).
    pub refused_replay: AtomicU64,
    /// Requests out of bounds, malformed, or shorter than the reply they ask for.
    pub refused_bad: AtomicU64,
    /// Targets outside `--hop-allow`.
    pub refused_target: AtomicU64,
    /// Target names the agent could not resolve.
    pub refused_unresolved: AtomicU64,
    /// Over the session's request rate.
    pub refused_rate: AtomicU64,
    /// Over the agent's request rate, or its measurements in flight.
    pub refused_busy: AtomicU64,
}

impl HopCounters {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// Every refusal, by reason, in the order of [`HopCounters::line`].
    pub fn refusals(&self) -> [(&'static str, u64); 8] {
        let g = HopCounters::get;
        [
            ("disabled", g(&self.refused_disabled)),
            ("bad_mac", g(&self.refused_mac)),
            ("replay", g(&self.refused_replay)),
            ("bad_request", g(&self.refused_bad)),
            ("target", g(&self.refused_target)),
            ("unresolved", g(&self.refused_unresolved)),
            ("rate", g(&self.refused_rate)),
            ("busy", g(&self.refused_busy)),
        ]
    }

    pub fn refusals_total(&self) -> u64 {
        self.refusals().iter().map(|(_, v)| v).sum()
    }

    /// `hop agent: answered N attempts M mtu-searches S mtu-probes P; refused: disabled 0 …`.
    pub fn line(&self) -> String {
        let refused: Vec<String> = self
            .refusals()
            .iter()
            .map(|(k, v)| format!("{} {v}", k.replace('_', "-")))
            .collect();
        format!(
            "hop agent: answered {} attempts {} mtu-searches {} mtu-probes {}; refused: {}",
            HopCounters::get(&self.answered),
            HopCounters::get(&self.attempts),
            HopCounters::get(&self.mtu_searches),
            HopCounters::get(&self.mtu_probes),
            refused.join(" ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_every_refusal() {
        let c = HopCounters::default();
        c.answered.fetch_add(2, Ordering::Relaxed);
        c.attempts.fetch_add(10, Ordering::Relaxed);
        c.refused_target.fetch_add(3, Ordering::Relaxed);
        c.refused_rate.fetch_add(4, Ordering::Relaxed);
        assert_eq!(
            c.line(),
            "hop agent: answered 2 attempts 10 mtu-searches 0 mtu-probes 0; refused: disabled 0 \
             bad-mac 0 replay 0 \
             bad-request 0 target 3 unresolved 0 rate 4 busy 0"
        );
        assert_eq!(c.refusals_total(), 7);
    }
}
