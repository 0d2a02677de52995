//! What the server counts, per transport: traffic, and every refusal and forced close, so a
//! hostile peer shows up in the periodic log line ([`Counters::refusals_line`]) and in
//! `--metrics` while it happens, and in the exit summary ([`Counters::line`]), which names
//! only what is not zero. Kept apart from the responders that bump them.

use std::sync::atomic::{AtomicU64, Ordering};

/// A counter's name in the log lines, and its value.
pub(crate) type Named = (&'static str, u64);

/// What the stream responder did on one transport (TCP connections, or QUIC streams).
#[derive(Debug, Default)]
pub struct StreamCounters {
    pub rx_bytes: AtomicU64,
    pub tx_bytes: AtomicU64,
    /// Bulk transfers served ([`crate::bulk`]); their bytes are in `rx_bytes` / `tx_bytes`.
    pub bulk: AtomicU64,
    /// Streams closed for a missing or wrong token (or raw echo while a token is required).
    pub refused_token: AtomicU64,
    /// Streams closed for a failed handshake (wrong secret, bad message) under `--token`.
    pub refused_handshake: AtomicU64,
    /// Streams closed for a frame whose session tag does not verify.
    pub refused_mac: AtomicU64,
    /// `Request`s refused because the source address's reply budget did not hold them, and
    /// bulk transfers that had to wait for it.
    pub refused_budget: AtomicU64,
    /// Frames that do not decode, replies sent to us, and frames cut short by the peer.
    pub malformed: AtomicU64,
    /// Closed after `idle` without the first byte of a next frame.
    pub closed_idle: AtomicU64,
    /// Closed because a started header or a payload stopped arriving for `io`.
    pub stalled_read: AtomicU64,
    /// Closed because the peer did not drain a reply for `io`.
    pub stalled_write: AtomicU64,
    /// Ended by the peer's reset or another I/O error: a TCP RST (`ECONNRESET`, `EPIPE`,
    /// also a client that vanished and whose host answers with one), a QUIC stream reset or
    /// its connection lost.
    pub reset: AtomicU64,
    /// Idle callbacks written on a held connection ([`crate::idle_stream`]; not a refusal).
    pub idle_callbacks: AtomicU64,
    /// `Idle` requests acked without a callback: the address or the server held as many
    /// connections as it may, the gap was over the longest, or the request was short.
    pub refused_callbacks: AtomicU64,
}

impl StreamCounters {
    fn refusals(&self) -> [u64; 10] {
        let g = Counters::get;
        [
            g(&self.refused_token),
            g(&self.refused_handshake),
            g(&self.refused_mac),
            g(&self.refused_budget),
            g(&self.malformed),
            g(&self.closed_idle),
            g(&self.stalled_read),
            g(&self.stalled_write),
            g(&self.reset),
            g(&self.refused_callbacks),
        ]
    }

    /// The refusals, then the forced closes, by the names of the periodic line.
    fn named(&self) -> ([Named; 6], [Named; 4]) {
        let [token, handshake, mac, budget, malformed, idle, read, write, reset, callbacks] =
            self.refusals();
        (
            [
                ("token", token),
                ("handshake", handshake),
                ("bad-mac", mac),
                ("budget", budget),
                ("malformed", malformed),
                ("callbacks", callbacks),
            ],
            [
                ("idle", idle),
                ("stalled-read", read),
                ("stalled-write", write),
                ("reset", reset),
            ],
        )
    }
}

/// What the server has done, for its log and for tests. Each transport has its own counters.
#[derive(Debug, Default)]
pub struct Counters {
    pub udp_rx: AtomicU64,
    pub udp_rx_bytes: AtomicU64,
    pub udp_tx: AtomicU64,
    pub udp_tx_bytes: AtomicU64,
    pub udp_errors: AtomicU64,
    /// UDP datagrams refused for a missing token (raw echo or unsealed frames under
    /// `--token`; handshakes or sealed frames without it).
    pub udp_refused_token: AtomicU64,
    /// Raw UDP datagrams from public sources without `--raw-echo`.
    pub udp_refused_raw: AtomicU64,
    /// Handshake messages refused: wrong secret, forged, expired or foreign cookie, bad
    /// length, session table full.
    pub udp_auth_handshake: AtomicU64,
    /// Sealed frames from an address with no session (e.g. replayed from another socket).
    pub udp_auth_session: AtomicU64,
    /// Sealed frames whose tag does not verify.
    pub udp_auth_mac: AtomicU64,
    /// Sealed frames whose sequence number was seen before (or is too old).
    pub udp_auth_replay: AtomicU64,
    /// Authenticated sessions created (not a refusal).
    pub udp_sessions: AtomicU64,
    /// UDP datagrams over the per-source packet or byte budget ([`limiter`]).
    pub udp_refused_rate: AtomicU64,
    /// Raw UDP datagrams not echoed because they could start or feed an echo loop
    /// (see [`loopguard`]).
    pub udp_refused_loop: AtomicU64,
    pub udp_malformed: AtomicU64,
    /// UDP `Request`s answered with fewer bytes than asked (no amplification).
    pub udp_clamped: AtomicU64,
    /// UDP bulk flows counted ([`crate::bulk_udp`]; not a refusal).
    pub udp_bulk_flows: AtomicU64,
    /// UDP bulk datagrams not counted because the flow table was full of live flows, and UDP
    /// bulk requests refused (a `Down` pull from a source that is neither a `--token` session
    /// nor loopback: UDP down would make the server an amplifier for it).
    pub udp_bulk_refused: AtomicU64,
    /// UDP down datagrams sent (to `--token` sessions and loopback sources; not a refusal).
    pub udp_bulk_down: AtomicU64,
    /// UDP replies that carried their flow's counts ([`crate::reflect`]; not a refusal).
    pub udp_reflected: AtomicU64,
    /// UDP replies sent with the marking their client asked for, carrying the marking the
    /// request arrived with ([`npt_wire::marking`]; not a refusal).
    pub udp_marked: AtomicU64,
    /// Flows the UDP responder started counting (`REFLECT` frames; not a refusal).
    pub udp_flows: AtomicU64,
    /// Flows counted right now, over every UDP socket (a gauge).
    pub udp_flows_live: AtomicU64,
    /// `REFLECT` frames answered without counts because the flow table was full of live flows.
    pub udp_flows_untracked: AtomicU64,
    /// Idle flows forgotten to make room in a full flow table.
    pub udp_flows_evicted: AtomicU64,
    /// Flow queries answered with a flow report.
    pub udp_flow_reports: AtomicU64,
    /// Idle callbacks sent ([`crate::idle`], `npt lifetime`; not a refusal).
    pub udp_idle_callbacks: AtomicU64,
    /// `Idle` requests whose callback was not scheduled: the source address or the socket had
    /// as many pending as it keeps, or the gap was over the longest.
    pub udp_idle_refused: AtomicU64,
    /// Up MTU probes answered ([`npt_wire::mtu`], `npt mtu`; not a refusal).
    pub udp_mtu_up: AtomicU64,
    /// Down MTU probes sent, DF set (to the size asked, or clamped to the request's).
    pub udp_mtu_down: AtomicU64,
    /// Down MTU probes larger than this host's own interface sends, answered short.
    pub udp_mtu_too_big: AtomicU64,
    /// Refusal notices sent (header-only answers to refused `REFLECT` frames).
    pub udp_notices_sent: AtomicU64,
    /// Refusal notices held back by their per-source or total rate limit.
    pub udp_notices_suppressed: AtomicU64,
    pub tcp_accepted: AtomicU64,
    /// TCP connections closed at once because `max_tcp_conns` were open.
    pub tcp_refused_conns: AtomicU64,
    /// Failed TCP accepts (EMFILE/ENFILE: out of descriptors), each followed by a short back-off.
    pub tcp_accept_errors: AtomicU64,
    pub tcp: StreamCounters,
    pub quic_conns: AtomicU64,
    /// QUIC handshakes that failed: the client rejected our certificate, offered no ALPN we
    /// speak, or sent what does not parse.
    pub quic_handshake_failed: AtomicU64,
    /// QUIC handshakes not finished within the `io` deadline (an Initial, then nothing).
    pub quic_handshake_timeout: AtomicU64,
    /// QUIC connections the peer closed with an error code, or reset (stateless reset).
    pub quic_aborted: AtomicU64,
    /// QUIC connections that went silent until the idle timeout (a vanished client).
    pub quic_lost: AtomicU64,
    pub quic_streams: AtomicU64,
    pub quic: StreamCounters,
    /// The hop agent's requests and refusals (TCP and QUIC streams).
    pub hop: crate::hop_agent::HopCounters,
    /// The STAMP reflector's traffic and refusals (`--stamp`).
    pub stamp: crate::stamp::StampCounters,
    /// The DSCP/ECN marking of the UDP datagrams received.
    pub udp_marking: crate::marking::Marking,
}

impl Counters {
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// The exit summary: traffic, then refusals and closes, naming only the counters that
    /// are not zero (in the periodic line's order and words).
    pub fn line(&self) -> String {
        let g = Counters::get;
        let [stamp, _] = self.stamp.groups();
        let traffic = [
            group(
                "udp",
                &[
                    ("rx-pkts", g(&self.udp_rx)),
                    ("tx-pkts", g(&self.udp_tx)),
                    ("sessions", g(&self.udp_sessions)),
                    ("clamped", g(&self.udp_clamped)),
                    ("bulk-flows", g(&self.udp_bulk_flows)),
                    ("bulk-down", g(&self.udp_bulk_down)),
                    ("reflected", g(&self.udp_reflected)),
                    ("marked", g(&self.udp_marked)),
                    ("flows", g(&self.udp_flows)),
                    ("flow-reports", g(&self.udp_flow_reports)),
                    ("callbacks", g(&self.udp_idle_callbacks)),
                    ("mtu-up", g(&self.udp_mtu_up)),
                    ("mtu-down", g(&self.udp_mtu_down)),
                    ("mtu-too-big", g(&self.udp_mtu_too_big)),
                ],
                &[],
            ),
            group(
                "tcp",
                &[
                    ("conns", g(&self.tcp_accepted)),
                    ("rx-bytes", g(&self.tcp.rx_bytes)),
                    ("tx-bytes", g(&self.tcp.tx_bytes)),
                    ("bulk", g(&self.tcp.bulk)),
                    ("callbacks", g(&self.tcp.idle_callbacks)),
                ],
                &[],
            ),
            group(
                "quic",
                &[
                    ("conns", g(&self.quic_conns)),
                    ("streams", g(&self.quic_streams)),
                    ("rx-bytes", g(&self.quic.rx_bytes)),
                    ("tx-bytes", g(&self.quic.tx_bytes)),
                    ("bulk", g(&self.quic.bulk)),
                ],
                &[],
            ),
            stamp,
        ];
        let marking = self.udp_marking.text().map(|t| format!("udp marking: {t}"));
        summary(
            traffic
                .into_iter()
                .chain(self.refusal_groups())
                .chain([marking]),
        )
    }

    /// Every refusal and forced close, per transport (the periodic log line), naming only the
    /// counters that are not zero — `udp refused: rate 3062 notices 13 notices-suppressed
    /// 1390`, not 900 characters of zeros. UDP's refusal notices and the flow table's pressure
    /// (`flows-untracked`, `flows-evicted`) go with its refusals.
    pub fn refusals_line(&self) -> String {
        let text = self
            .refusal_groups()
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; ");
        if text.is_empty() {
            "nothing refused".to_string()
        } else {
            text
        }
    }

    /// Each transport's refusals and forced closes, in the words of both lines.
    fn refusal_groups(&self) -> [Option<String>; 5] {
        let g = Counters::get;
        let (tcp, tcp_closed) = self.tcp.named();
        let (quic, quic_closed) = self.quic.named();
        let tcp_refused = [
            [
                ("conns", g(&self.tcp_refused_conns)),
                ("accept-errors", g(&self.tcp_accept_errors)),
            ]
            .as_slice(),
            &tcp,
        ]
        .concat();
        let [_, stamp_refused] = self.stamp.groups();
        [
            group(
                "udp refused:",
                &[
                    ("token", g(&self.udp_refused_token)),
                    ("raw", g(&self.udp_refused_raw)),
                    ("handshake", g(&self.udp_auth_handshake)),
                    ("unknown-session", g(&self.udp_auth_session)),
                    ("bad-mac", g(&self.udp_auth_mac)),
                    ("replay", g(&self.udp_auth_replay)),
                    ("rate", g(&self.udp_refused_rate)),
                    ("loop", g(&self.udp_refused_loop)),
                    ("malformed", g(&self.udp_malformed)),
                    ("bulk", g(&self.udp_bulk_refused)),
                    ("callbacks", g(&self.udp_idle_refused)),
                    ("notices", g(&self.udp_notices_sent)),
                    ("notices-suppressed", g(&self.udp_notices_suppressed)),
                    ("flows-untracked", g(&self.udp_flows_untracked)),
                    ("flows-evicted", g(&self.udp_flows_evicted)),
                ],
                &[],
            ),
            group("tcp refused:", &tcp_refused, &tcp_closed),
            group(
                "quic conns refused:",
                &[
                    ("failed-handshake", g(&self.quic_handshake_failed)),
                    ("handshake-timeout", g(&self.quic_handshake_timeout)),
                    ("aborted", g(&self.quic_aborted)),
                    ("lost", g(&self.quic_lost)),
                ],
                &[],
            ),
            group("quic streams refused:", &quic, &quic_closed),
            stamp_refused,
        ]
    }

    /// The sum of every refusal and forced close: the periodic line is printed when it moves.
    pub fn refusals_total(&self) -> u64 {
        let g = Counters::get;
        g(&self.udp_refused_token)
            + g(&self.udp_refused_raw)
            + g(&self.udp_auth_handshake)
            + g(&self.udp_auth_session)
            + g(&self.udp_auth_mac)
            + g(&self.udp_auth_replay)
            + g(&self.udp_refused_rate)
            + g(&self.udp_flows_untracked)
            + g(&self.udp_flows_evicted)
            + g(&self.udp_refused_loop)
            + g(&self.udp_malformed)
            + g(&self.udp_bulk_refused)
            + g(&self.udp_idle_refused)
            + g(&self.tcp_refused_conns)
            + g(&self.tcp_accept_errors)
            + g(&self.quic_handshake_failed)
            + g(&self.quic_handshake_timeout)
            + g(&self.quic_aborted)
            + g(&self.quic_lost)
            + self.tcp.refusals().iter().sum::<u64>()
            + self.quic.refusals().iter().sum::<u64>()
            + self.hop.refusals_total()
            + self.stamp.refusals_total()
    }
}

/// `label name value …` with the values that are not zero, the `closed` ones after
/// `closed`; `None` when every value is zero.
pub(crate) fn group(label: &str, counts: &[(&str, u64)], closed: &[(&str, u64)]) -> Option<String> {
    let list = |xs: &[(&str, u64)]| {
        xs.iter()
            .filter(|(_, v)| *v != 0)
            .map(|(name, v)| format!("{name} {v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (counts, closed) = (list(counts), list(closed));
    match (counts.is_empty(), closed.is_empty()) {
        (true, true) => None,
        (false, true) => Some(format!("{label} {counts}")),
        (true, false) => Some(format!("{label} closed {closed}")),
        (false, false) => Some(format!("{label} {counts}; closed {closed}")),
    }
}

/// The groups that have something to say, or a short note that nothing was counted.
pub(crate) fn summary(groups: impl IntoIterator<Item = Option<String>>) -> String {
    let text = groups.into_iter().flatten().collect::<Vec<_>>().join("; ");
    if text.is_empty() {
        "nothing served or refused".to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_transport_has_its_own_refusals_in_the_periodic_line() {
        let c = Counters::default();
        assert_eq!(c.refusals_line(), "nothing refused");
        c.tcp.refused_token.fetch_add(1, Ordering::Relaxed);
        c.tcp_refused_conns.fetch_add(2, Ordering::Relaxed);
        c.quic.stalled_read.fetch_add(3, Ordering::Relaxed);
        c.quic_conns.fetch_add(4, Ordering::Relaxed);
        assert_eq!(
            c.refusals_line(),
            "tcp refused: conns 2 token 1; quic streams refused: closed stalled-read 3"
        );
        assert_eq!(c.refusals_total(), 6);
        c.udp_auth_replay.fetch_add(5, Ordering::Relaxed);
        c.udp_notices_sent.fetch_add(2, Ordering::Relaxed);
        c.tcp.reset.fetch_add(6, Ordering::Relaxed);
        c.quic_aborted.fetch_add(7, Ordering::Relaxed);
        c.stamp.refused_loop.fetch_add(8, Ordering::Relaxed);
        assert_eq!(
            c.refusals_line(),
            "udp refused: replay 5 notices 2; tcp refused: conns 2 token 1; closed reset 6; \
             quic conns refused: aborted 7; quic streams refused: closed stalled-read 3; \
             stamp refused: loop 8"
        );
        assert_eq!(c.refusals_total(), 32);
        assert!(!c.line().contains("tcp conns") && c.line().contains("quic conns 4;"));
    }

    #[test]
    fn the_exit_summary_names_only_what_is_not_zero() {
        let c = Counters::default();
        assert_eq!(c.line(), "nothing served or refused");
        c.udp_rx.fetch_add(20, Ordering::Relaxed);
        c.udp_tx.fetch_add(19, Ordering::Relaxed);
        c.udp_sessions.fetch_add(2, Ordering::Relaxed);
        c.udp_auth_replay.fetch_add(1, Ordering::Relaxed);
        c.tcp.closed_idle.fetch_add(3, Ordering::Relaxed);
        c.quic_lost.fetch_add(4, Ordering::Relaxed);
        c.quic.refused_budget.fetch_add(5, Ordering::Relaxed);
        c.quic.reset.fetch_add(6, Ordering::Relaxed);
        c.stamp.rx.fetch_add(9, Ordering::Relaxed);
        c.stamp.tx.fetch_add(8, Ordering::Relaxed);
        c.stamp.refused_rate.fetch_add(1, Ordering::Relaxed);
        assert_eq!(
            c.line(),
            "udp rx-pkts 20 tx-pkts 19 sessions 2; stamp rx-pkts 9 tx-pkts 8; \
             udp refused: replay 1; tcp refused: closed idle 3; quic conns refused: lost 4; \
             quic streams refused: budget 5; closed reset 6; stamp refused: rate 1"
        );
    }
}
