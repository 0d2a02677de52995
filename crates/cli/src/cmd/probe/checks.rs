//! Checks `npt probe` makes before it starts: that the flags cannot ask for more memory than
//! a test tool should take (part of [`crate::cmd::probe::config`]), and, just before the run,
//! which addresses answer: the load's target, and which address of a TCP host name accepts.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use npt_probe::{PacingSpec, ProbeConfig, Proto, StageSpec};

use crate::cmd::probe::under_load;
use crate::usage;

/// Latency histograms the run may keep alive at once (stage histograms still open plus each
/// flow's totals). Histograms are sized lazily (tens of KiB for sub-millisecond round trips)
/// but one that sees values up to an hour takes ~256 KiB, so this bounds the worst case at
/// about 1 GiB.
const MAX_HISTOGRAMS: u64 = 4096;
const WORST_HISTOGRAM_BYTES: u64 = 256 * 1024;
/// Per flow, besides its open stages: RTT, corrected RTT, IPDV, send lateness.
const TOTALS_HISTOGRAMS: u64 = 4;

/// Stage histograms one flow keeps open: a stage stays open until the loss timeout after its
/// end has passed, so every stage that ended within one loss timeout is still alive.
// NO-PANIC: a float-to-int `as` saturates (NaN gives 0), and the value is at most 1e12.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn open_stages_per_flow(
    clients: u32,
    stage: StageSpec,
    loss_timeout: Duration,
    pacing: &PacingSpec,
) -> u64 {
    let lt = loss_timeout.as_secs_f64();
    let stages = match stage {
        StageSpec::Time(d) => lt / d.as_secs_f64().max(1e-9),
        StageSpec::Packets(p) => {
            let per_flow_pps = match *pacing {
                PacingSpec::Rate { pps } => pps / f64::from(clients.max(1)),
                PacingSpec::Interval { interval } => 1.0 / interval.as_secs_f64().max(1e-9),
                // Relay settles at whatever the path sustains: not known in advance.
                PacingSpec::Relay { .. } => 0.0,
            };
            per_flow_pps * lt / p.max(1) as f64
        }
    };
    stages.ceil().min(1e12) as u64 + 2
}

/// Refuses flag combinations whose histograms could not fit in [`MAX_HISTOGRAMS`].
pub fn check_memory(
    clients: u32,
    stage: StageSpec,
    loss_timeout: Duration,
    pacing: &PacingSpec,
) -> anyhow::Result<()> {
    let open = open_stages_per_flow(clients, stage, loss_timeout, pacing);
    let total = u64::from(clients).saturating_mul(open + TOTALS_HISTOGRAMS);
    if total <= MAX_HISTOGRAMS {
        return Ok(());
    }
    let stage_flag = match stage {
        StageSpec::Time(d) => format!("--report-every {d:?}"),
        StageSpec::Packets(p) => format!("--report-every-packets {p}"),
    };
    Err(usage!(
        "--clients {clients} with {stage_flag} and --loss-timeout {loss_timeout:?} would keep \
         {total} latency histograms alive (up to {} MiB; a stage stays open until its loss \
         timeout has passed); the limit is {MAX_HISTOGRAMS}: use fewer --clients, a longer \
         {}, or a shorter --loss-timeout",
        (total * WORST_HISTOGRAM_BYTES) >> 20,
        stage_flag.split(' ').next().unwrap_or("--report-every"),
    ))
}

/// Just before the run: a load target that refuses is a usage error; a TCP target is the
/// first of its addresses that accepts. Returns what to say of the address chosen.
pub fn reachable(cfg: &mut ProbeConfig) -> anyhow::Result<Vec<String>> {
    if let Some(plan) = &cfg.under_load {
        under_load::check_reachable(plan)?;
    }
    if cfg.proto == Proto::Tcp && cfg.via.is_none() {
        // A name with several addresses (localhost → ::1, 127.0.0.1): the first that accepts.
        if let Some((addr, notes)) = first_accepting(&cfg.target, cfg.addr, &cfg.source) {
            cfg.addr = addr;
            return Ok(notes);
        }
    }
    Ok(Vec::new())
}

/// For a TCP target whose host name has several addresses (localhost → ::1 and 127.0.0.1),
/// the first address that accepts a connection, with a notice when it is not the first one
/// resolved. None when there is nothing to choose or nothing accepts (the run then reports
/// the failure on the first address, as it would have).
fn first_accepting(
    hostport: &str,
    first: SocketAddr,
    source: &npt_client::source::Source,
) -> Option<(SocketAddr, Vec<String>)> {
    let addrs: Vec<SocketAddr> = hostport.to_socket_addrs().ok()?.collect();
    let addrs = source.pick(hostport, addrs).ok()?;
    first_accepting_of(hostport, &addrs, first)
}

fn first_accepting_of(
    hostport: &str,
    addrs: &[SocketAddr],
    first: SocketAddr,
) -> Option<(SocketAddr, Vec<String>)> {
    if addrs.len() < 2 {
        return None;
    }
    let chosen = addrs
        .iter()
        .copied()
        .find(|a| TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())?;
    let notes = if chosen == first {
        Vec::new()
    } else {
        vec![format!(
            "{hostport}: {first} did not accept a connection, using {chosen}"
        )]
    };
    Some((chosen, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn millisecond_stages_fit_one_client_but_not_thousands() {
        let rate = PacingSpec::Rate { pps: 100.0 };
        let ms = StageSpec::Time(Duration::from_millis(1));
        assert!(check_memory(1, ms, S, &rate).is_ok(), "1002 stages + 4");
        let e = check_memory(10, ms, S, &rate).unwrap_err().to_string();
        assert!(
            e.contains("--report-every 1ms") && e.contains("--clients 10"),
            "{e}"
        );
    }

    #[test]
    fn ten_thousand_clients_are_refused_with_the_reason() {
        let rate = PacingSpec::Rate { pps: 100.0 };
        let e = check_memory(10_000, StageSpec::Time(S), S, &rate)
            .unwrap_err()
            .to_string();
        assert!(e.contains("70000 latency histograms"), "{e}");
        assert!(check_memory(500, StageSpec::Time(S), S, &rate).is_ok());
    }

    #[test]
    fn the_first_address_that_accepts_is_chosen() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap();
        // A port just released on ::1 (or 127.0.0.2): nothing accepts there.
        let closed = {
            let l = std::net::TcpListener::bind("[::1]:0")
                .or_else(|_| std::net::TcpListener::bind("127.0.0.2:0"))
                .unwrap();
            l.local_addr().unwrap()
        };
        let (chosen, notes) = first_accepting_of("h:1", &[closed, open], closed).unwrap();
        assert_eq!(chosen, open);
        assert!(notes[0].contains("did not accept"), "{notes:?}");
        assert!(
            first_accepting_of("h:1", &[open], open).is_none(),
            "nothing to choose"
        );
        assert!(first_accepting_of("h:1", &[closed, closed], closed).is_none());
    }

    #[test]
    fn packet_stages_count_by_rate() {
        let rate = PacingSpec::Rate { pps: 1_000_000.0 };
        // 1 M pps, stage every 100 packets: 10,000 stages inside one loss timeout.
        assert!(check_memory(1, StageSpec::Packets(100), S, &rate).is_err());
        assert!(check_memory(1, StageSpec::Packets(100_000), S, &rate).is_ok());
    }
}
