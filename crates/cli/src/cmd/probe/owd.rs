//! Which clock assumption a probe's one-way delays rest on: the target is on this host (a
//! loopback target, not through a remote proxy), the process runs inside `npt lab`'s
//! namespaces (one machine, one clock: `npt lab exec`, lab services and scenarios set
//! [`LAB_ENV`]), or the user says the clocks are synchronized (`--owd`). Without one, a
//! probe reports no one-way delay, only what needs no sync (delay variation per direction,
//! the server's dwell).

use std::net::SocketAddr;

use npt_probe::ClockSync;

/// Set by `npt lab` for every command it runs on a lab node (its value: the lab's name).
pub use npt_lab::runtime::LAB_ENV;

/// The assumption for a target at `addr` (None: resolved by a proxy), reached through a
/// proxy at `via_host` if any, with `--owd` given or not.
pub fn assumption(addr: Option<SocketAddr>, via_host: Option<&str>, owd: bool) -> ClockSync {
    if owd {
        return ClockSync::Synced;
    }
    if std::env::var_os(LAB_ENV).is_some_and(|v| !v.is_empty()) {
        return ClockSync::SameHost;
    }
    // Through a proxy, a loopback target is the proxy host's own loopback.
    let proxy_here = via_host.is_none_or(is_loopback_host);
    if proxy_here && addr.is_some_and(|a| a.ip().is_loopback()) {
        return ClockSync::SameHost;
    }
    ClockSync::None
}

fn is_loopback_host(h: &str) -> bool {
    let h = h.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_one_clock_unless_a_remote_proxy_is_in_between() {
        let lo: SocketAddr = "127.0.0.1:7777".parse().unwrap();
        let far: SocketAddr = "192.0.2.1:7777".parse().unwrap();
        // The test process is not in a lab (the variable is set only by `npt lab`).
        if std::env::var_os(LAB_ENV).is_some() {
            println!("SKIPPED: {LAB_ENV} is set in this environment");
            return;
        }
        assert_eq!(assumption(Some(lo), None, false), ClockSync::SameHost);
        assert_eq!(
            assumption(Some(lo), Some("127.0.0.1"), false),
            ClockSync::SameHost
        );
        assert_eq!(
            assumption(Some(lo), Some("[::1]"), false),
            ClockSync::SameHost
        );
        assert_eq!(
            assumption(Some(lo), Some("relay.example"), false),
            ClockSync::None
        );
        assert_eq!(assumption(Some(far), None, false), ClockSync::None);
        assert_eq!(assumption(None, None, false), ClockSync::None);
        assert_eq!(assumption(Some(far), None, true), ClockSync::Synced);
    }
}
