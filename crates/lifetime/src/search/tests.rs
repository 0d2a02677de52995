//! The search against a fake path on a virtual clock: a NAT next to the client that forgets
//! a mapping idle for `expiry` (and with `random`, maps a new flow to a new port), a
//! responder `rtt / 2` beyond it that calls back as `npt serve` does; with `closes`, a relay
//! that closes a connection idle for `expiry` (a FIN to the client); with `lose`, the first
//! callback of a gap in that range is lost on the way.

#![allow(clippy::cast_possible_truncation)] // small test counts (clippy.toml)

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;

use npt_wire::frame::{status, Header, Kind, HEADER_LEN};
use npt_wire::idle::{self, Idle};

use super::*;

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

#[derive(Default)]
struct Path {
    expiry: u64,
    rtt: u64,
    random: bool,
    echo: bool,
    silent: bool,
    closes: bool,
    lose: Option<std::ops::Range<u64>>,
}

struct Mapping {
    port: u16,
    last: u64,
    open: bool,
    closed: bool,
}

/// Runs `search` against `path` to the end; the virtual time it took.
fn run(search: &mut Search, path: &Path) -> u64 {
    let mut now = 0u64;
    let mut maps: HashMap<usize, Mapping> = HashMap::new();
    let mut next_port = 40_000u16;
    // (time, seq) → (flow, bytes) delivered to the client; callbacks due at the NAT.
    let mut to_client: BTreeMap<(u64, u64), (usize, Vec<u8>)> = BTreeMap::new();
    let mut callbacks: BTreeMap<(u64, u64), (usize, u16, Vec<u8>)> = BTreeMap::new();
    let mut pending: HashMap<usize, (u64, u64)> = HashMap::new();
    let mut n = 0u64;
    let mut lost = false;
    let mut actions = search.poll(now);
    for _ in 0..1_000_000 {
        for a in actions.drain(..) {
            match a {
                Action::Open { flow } => {
                    next_port += 1;
                    maps.insert(
                        flow,
                        Mapping {
                            port: next_port,
                            last: now,
                            open: true,
                            closed: false,
                        },
                    );
                }
                Action::Close { flow } => maps.get_mut(&flow).unwrap().open = false,
                Action::Send { flow, frame } => {
                    n += 1;
                    if path.silent {
                        continue;
                    }
                    let m = maps.get_mut(&flow).unwrap();
                    if now - m.last >= path.expiry && path.random {
                        next_port += 1;
                        m.port = next_port;
                    }
                    m.last = now;
                    let arrive = now + path.rtt;
                    if path.echo {
                        to_client.insert((arrive, n), (flow, frame.to_vec()));
                        continue;
                    }
                    let h = Header::decode(&frame).unwrap();
                    let ask = Idle::decode(&frame[HEADER_LEN..]).unwrap();
                    let seen = Some(SocketAddr::from(([192, 0, 2, 1], m.port)));
                    if let Some(k) = pending.remove(&flow) {
                        callbacks.remove(&k);
                    }
                    let gap = u64::from(ask.gap_ms) * MS;
                    let lose = !lost && path.lose.as_ref().is_some_and(|r| r.contains(&gap));
                    lost |= lose;
                    if ask.gap_ms > 0 && !lose {
                        let body = Idle {
                            seen,
                            held_us: ask.gap_ms * 1_000,
                            ..ask
                        };
                        let cb = idle::answer(&h, Kind::IdleCallback, status::OK, &body);
                        let at = arrive + u64::from(ask.gap_ms) * MS;
                        callbacks.insert((at, n), (flow, m.port, cb.to_vec()));
                        pending.insert(flow, (at, n));
                    }
                    let ack = idle::answer(&h, Kind::IdleAck, status::OK, &Idle { seen, ..ask });
                    to_client.insert((arrive, n), (flow, ack.to_vec()));
                    m.last = arrive;
                }
            }
        }
        // The NAT passes a callback only to a live mapping of the port it was sent to.
        while let Some((&(at, k), _)) = callbacks.first_key_value() {
            if at > now {
                break;
            }
            let (flow, port, cb) = callbacks.remove(&(at, k)).unwrap();
            let m = maps.get_mut(&flow).unwrap();
            if m.port == port && at - m.last < path.expiry {
                m.last = at;
                to_client.insert((at, k), (flow, cb));
            }
        }
        let closing = maps
            .iter()
            .filter(|(_, m)| path.closes && m.open && !m.closed)
            .map(|(f, m)| (m.last.saturating_add(path.expiry), *f))
            .min();
        if let Some((at, flow)) = closing.filter(|c| c.0 <= now) {
            maps.get_mut(&flow).unwrap().closed = true;
            actions = search.on_closed(flow, at, Close::Fin);
            continue;
        }
        if let Some((&(at, k), _)) = to_client.first_key_value() {
            if at <= now {
                let (flow, bytes) = to_client.remove(&(at, k)).unwrap();
                if maps[&flow].open {
                    actions = search.on_datagram(flow, now, &bytes);
                }
                continue;
            }
        }
        actions = search.poll(now);
        if search.finished() {
            return now;
        }
        if !actions.is_empty() {
            continue;
        }
        let next = [
            search.next_wake(),
            to_client.keys().next().map(|k| k.0),
            callbacks.keys().next().map(|k| k.0),
            closing.map(|c| c.0),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
        now = next.max(now);
    }
    panic!("the search did not end");
}

fn path(expiry: u64) -> Path {
    Path {
        expiry,
        rtt: 20 * MS,
        ..Path::default()
    }
}

#[test]
fn finds_a_nat_timeout_within_a_second_in_two_rounds() {
    let mut s = Search::new(40 * S, None, 7);
    let took = run(&mut s, &path(30 * S));
    let (lo, hi) = (s.plan.lo(), s.plan.hi().unwrap());
    assert!(lo < 30 * S && 30 * S <= hi && hi - lo <= S, "{lo} {hi}");
    assert_eq!(s.plan.rounds(), 2);
    // Each round ends at the second expiry past the bracket (the rebind flows a little
    // later), not at --max.
    assert!(took < 80 * S, "took {took}");
    assert!(s.flows.len() <= plan_flows(2));
    assert_eq!(s.failure(), None);
    assert_eq!(s.rebound(), (REBIND_FLOWS as u32, 0));
}

/// A callback lost on the way below the lifetime (the box dropped it) reads as an expiry
/// there; the flows above it go on, one of them survives, and the lost one stops counting.
#[test]
fn one_lost_callback_does_not_move_the_answer() {
    for lose in [20 * S..22 * S, 29 * S..30 * S] {
        let mut s = Search::new(40 * S, None, 7);
        let path = Path {
            lose: Some(lose.clone()),
            ..path(30 * S)
        };
        let took = run(&mut s, &path);
        let (lo, hi) = (s.plan.lo(), s.plan.hi().unwrap());
        assert!(
            lo < 30 * S && 30 * S <= hi && hi - lo <= S,
            "{lose:?}: {lo} {hi}"
        );
        assert_eq!(s.plan.inconsistent(), 1, "{lose:?}");
        eprintln!("{lose:?}: {} rounds, {took} ns", s.plan.rounds());
        assert!(took < 120 * S, "took {took}");
    }
}

fn plan_flows(rounds: usize) -> usize {
    crate::plan::LADDER
        + (rounds - 1) * (crate::plan::PER_ROUND + crate::plan::CHECKS as usize)
        + REBIND_FLOWS
}

#[test]
fn finds_a_relay_timeout_within_half_a_second() {
    let mut s = Search::new(8 * S, Some(S / 2), 7);
    run(&mut s, &path(5 * S));
    let (lo, hi) = (s.plan.lo(), s.plan.hi().unwrap());
    assert!(lo < 5 * S && 5 * S <= hi && hi - lo <= S / 2, "{lo} {hi}");
}

#[test]
fn a_direct_path_lives_past_max() {
    let mut s = Search::new(3 * S, None, 7);
    let took = run(&mut s, &path(u64::MAX / 4));
    assert!(s.plan.longer_than_max());
    assert_eq!(s.plan.rounds(), 1);
    assert!(took < 5 * S, "took {took}");
    assert!(s.flows.iter().all(|f| matches!(f.fate, Fate::Alive { .. })));
}

#[test]
fn a_random_nat_rebinds_expired_flows() {
    let mut s = Search::new(20 * S, None, 7);
    run(
        &mut s,
        &Path {
            random: true,
            ..path(10 * S)
        },
    );
    let (checked, moved) = s.rebound();
    assert!(checked > 0 && moved == checked, "{checked} {moved}");
}

#[test]
fn a_plain_echo_and_silence_fail_at_once() {
    let mut s = Search::new(20 * S, None, 7);
    run(
        &mut s,
        &Path {
            echo: true,
            ..path(10 * S)
        },
    );
    assert_eq!(s.failure(), Some(Failure::PlainEcho));
    let mut s = Search::new(20 * S, None, 7);
    let took = run(
        &mut s,
        &Path {
            silent: true,
            ..path(10 * S)
        },
    );
    assert_eq!(s.failure(), Some(Failure::Silent));
    let stagger = STAGGER_NS * crate::plan::LADDER as u64;
    assert!(
        took <= u64::from(ACK_TRIES) * ACK_RETRY_NS + stagger,
        "took {took}"
    );
    assert!(s.flows.iter().all(|f| f.fate == Fate::NoAck));
}

#[test]
fn a_relay_that_closes_idle_connections_is_read_from_its_fin() {
    let mut s = Search::over_streams(8 * S, Some(S / 2), 7);
    let took = run(
        &mut s,
        &Path {
            closes: true,
            ..path(5 * S)
        },
    );
    let (lo, hi) = (s.plan.lo(), s.plan.hi().unwrap());
    assert!(lo < 5 * S && 5 * S <= hi && hi - lo <= S / 2, "{lo} {hi}");
    // The close came at the relay's timeout, whatever the flow's gap: one round settles it.
    assert_eq!(s.plan.rounds(), 1);
    assert!(took < 8 * S, "took {took}");
    let closed: Vec<u64> = s
        .flows
        .iter()
        .filter_map(|f| match f.fate {
            Fate::Closed {
                by: Close::Fin,
                after_ns,
            } => Some(after_ns),
            _ => None,
        })
        .collect();
    assert!(!closed.is_empty());
    assert!(
        closed.iter().all(|a| a.abs_diff(5 * S) < 50 * MS),
        "{closed:?}"
    );
    assert_eq!(s.rebound(), (0, 0), "a connection has no rebind flows");
}

#[test]
fn a_nat_that_forgets_connections_drops_them_silently() {
    let mut s = Search::over_streams(40 * S, None, 7);
    run(&mut s, &path(10 * S));
    let (lo, hi) = (s.plan.lo(), s.plan.hi().unwrap());
    assert!(lo < 10 * S && 10 * S <= hi && hi - lo <= S, "{lo} {hi}");
    assert!(s.flows.iter().any(|f| f.fate == Fate::Gone));
    assert!(!s
        .flows
        .iter()
        .any(|f| matches!(f.fate, Fate::Closed { .. })));
    // Sent once each: the connection retransmits, not the search.
    let asks = s.flows.iter().filter(|f| f.ack_rtt_ns.is_some()).count();
    assert_eq!(asks, s.flows.len());
}
