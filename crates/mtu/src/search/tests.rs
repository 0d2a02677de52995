//! The search against a fake path on a virtual clock: an up MTU, a down MTU, routers that send
//! ICMP or not, loss, a responder that clamps strangers, and a plain echo.

use super::*;
use npt_wire::frame::{status, Header, Kind, HEADER_LEN};
use npt_wire::mtu::{self, Mtu};

const MS: u64 = 1_000_000;
const HDR: usize = 28;

fn u(n: usize) -> u32 {
    u32::try_from(n).unwrap()
}

/// A path: MTUs in IP bytes each way, whether its bottleneck sends ICMP, which sends it loses
/// (by their index), whether the far end is a plain echo, and whether the client has a token.
struct Path {
    up_mtu: usize,
    down_mtu: usize,
    icmp: bool,
    lose: Vec<usize>,
    echo: bool,
    token: bool,
    /// The responder's own interface MTU (a down probe above it is answered `MTU_TOO_BIG`).
    far_if_mtu: usize,
}

impl Default for Path {
    fn default() -> Path {
        Path {
            up_mtu: 1500,
            down_mtu: 1500,
            icmp: true,
            lose: Vec::new(),
            echo: false,
            token: true,
            far_if_mtu: 1500,
        }
    }
}

enum Ev {
    Datagram(Vec<u8>, Option<u16>),
    TooBig(u64, u32),
}

/// Runs a search of sizes up to 1472 over `p`: the search, and the virtual time it took.
fn run(p: &Path) -> (Search, u64) {
    let mut s = Search::new(1472, HDR, 7, p.token, 60_000 * MS);
    let mut now = 0u64;
    let mut queue: Vec<(u64, Ev)> = Vec::new();
    let mut sends = s.poll(now);
    let mut n = 0usize;
    let mut far_pmtu = u(p.far_if_mtu);
    for _ in 0..10_000 {
        for x in sends.drain(..) {
            n += 1;
            if p.lose.contains(&n) {
                continue;
            }
            let h = Header::decode(&x.frame).unwrap();
            if p.echo {
                if x.frame.len() + HDR <= p.up_mtu.min(p.down_mtu) {
                    queue.push((now + 20 * MS, Ev::Datagram(x.frame.clone(), None)));
                }
                continue;
            }
            let len = x.frame.len();
            // Up: a DF probe above the up MTU is refused; a request without DF is fragmented.
            let frag = if len + HDR > p.up_mtu {
                if x.df {
                    if p.icmp {
                        queue.push((now + 5 * MS, Ev::TooBig(x.seq, u(p.up_mtu))));
                    }
                    continue;
                }
                Some(u(p.up_mtu))
            } else {
                None
            };
            let ask = Mtu::decode(&x.frame[HEADER_LEN..]).unwrap();
            let mut body = Mtu {
                received: u(len),
                frag: frag.unwrap_or(0),
                pmtu: far_pmtu,
                ..ask
            };
            if x.direction == Direction::Up {
                let mut out = vec![0u8; mtu::MTU_LEN];
                mtu::write(
                    &mut out,
                    &h,
                    Kind::MtuReply,
                    status::OK,
                    &body,
                    mtu::MTU_LEN,
                )
                .unwrap();
                queue.push((now + 20 * MS, Ev::Datagram(out, None)));
                continue;
            }
            let mut size = ask.size as usize;
            let mut st = status::OK;
            if !p.token && size > len {
                size = len;
                st = status::CLAMPED;
            }
            if size + HDR > p.far_if_mtu {
                let mut out = vec![0u8; mtu::MTU_LEN];
                mtu::write(
                    &mut out,
                    &h,
                    Kind::MtuReply,
                    status::MTU_TOO_BIG,
                    &body,
                    mtu::MTU_LEN,
                )
                .unwrap();
                queue.push((now + 20 * MS, Ev::Datagram(out, None)));
                continue;
            }
            if size + HDR > p.down_mtu {
                if p.icmp {
                    far_pmtu = u(p.down_mtu); // the responder's kernel learns it
                }
                continue;
            }
            body.pmtu = far_pmtu;
            let mut out = vec![0u8; size];
            mtu::write(&mut out, &h, Kind::MtuReply, st, &body, size).unwrap();
            queue.push((now + 20 * MS, Ev::Datagram(out, None)));
        }
        if s.finished() {
            break;
        }
        queue.sort_by_key(|e| std::cmp::Reverse(e.0));
        let wake = s.next_wake().unwrap();
        match queue.last() {
            Some(&(t, _)) if t <= wake => {
                let (t, ev) = queue.pop().unwrap();
                now = t;
                sends = match ev {
                    Ev::Datagram(b, f) => s.on_datagram(now, &b, f),
                    Ev::TooBig(seq, m) => s.on_too_big(now, seq, Some(m), None, false),
                };
            }
            _ => {
                now = wake;
                sends = s.poll(now);
            }
        }
    }
    assert!(s.finished(), "the search ends");
    (s, now)
}

fn limits(s: &Search) -> (Option<usize>, Option<usize>) {
    (s.up.ladder.lo, s.down.ladder.lo)
}

#[test]
fn a_clean_path_carries_the_largest_each_way_at_once() {
    let (s, t) = run(&Path::default());
    assert_eq!(limits(&s), (Some(1472), Some(1472)));
    assert!(s.up.ladder.all_crossed() && s.down.ladder.all_crossed());
    assert_eq!((s.up.sent, s.down.sent), (1, 1));
    assert!(t < 100 * MS, "{t}");
    assert_eq!(s.far_end, FarEnd::NptServe);
}

#[test]
fn icmp_both_ways_reads_each_mtu_and_says_so() {
    let (s, _) = run(&Path {
        up_mtu: 1400,
        down_mtu: 1280,
        ..Path::default()
    });
    assert_eq!(limits(&s), (Some(1372), Some(1252)));
    assert_eq!(s.up.ladder.hi.unwrap().0, 1373);
    assert_eq!(s.up.icmp.map(|i| i.0), Some(1400));
    assert_eq!(s.up.lost_sizes, 0, "ICMP settles at once");
    // Down: the responder's kernel learned the MTU, and said so in a later answer.
    assert_eq!(s.down.far_pmtu_last, Some(1280));
    assert_eq!(s.down.ladder.hi.unwrap(), (1253, Limit::Lost));
}

#[test]
fn a_black_hole_is_bracketed_by_loss_after_every_try() {
    let (s, t) = run(&Path {
        up_mtu: 1400,
        down_mtu: 1400,
        icmp: false,
        ..Path::default()
    });
    assert_eq!(limits(&s), (Some(1372), Some(1372)));
    assert_eq!(s.up.ladder.hi, Some((1373, Limit::Lost)));
    assert!(s.up.icmp.is_none());
    assert_eq!(
        s.down.far_pmtu_last,
        Some(1500),
        "nothing told the responder"
    );
    // Each lost size was tried three times: 1472, then the sizes bisection lost.
    assert!(s.up.lost_sizes >= 2 && s.up.sent >= 3 * s.up.lost_sizes);
    assert!(t < 15_000 * MS, "{t}");
}

#[test]
fn loss_is_not_read_as_mtu() {
    // The first two sends of 1472 each way are lost: the third crosses.
    let (s, _) = run(&Path {
        lose: vec![1, 2, 3, 4],
        ..Path::default()
    });
    assert_eq!(limits(&s), (Some(1472), Some(1472)));
    assert_eq!(s.up.lost_sizes, 0);
}

#[test]
fn a_stranger_down_search_stops_at_the_clamp_and_an_up_limit_caps_it_only_without_fragments() {
    // No token: down requests are padded to the size and fragmented on the way up, so the
    // down MTU is still read.
    let (s, _) = run(&Path {
        up_mtu: 1300,
        down_mtu: 1400,
        token: false,
        ..Path::default()
    });
    assert_eq!(limits(&s), (Some(1272), Some(1372)));
    assert_eq!(s.down.clamped, 0);
}

#[test]
fn the_far_ends_own_interface_settles_down_at_once() {
    let (s, _) = run(&Path {
        far_if_mtu: 1400,
        down_mtu: 1400,
        ..Path::default()
    });
    assert_eq!(s.down.ladder.lo, Some(1372));
    assert_eq!(s.down.ladder.hi, Some((1373, Limit::Local { mtu: 1400 })));
    assert_eq!(s.down.lost_sizes, 0);
}

#[test]
fn a_plain_echo_reads_the_round_trip_and_no_down() {
    let (s, _) = run(&Path {
        up_mtu: 1500,
        down_mtu: 1400,
        echo: true,
        ..Path::default()
    });
    assert_eq!(s.far_end, FarEnd::Echo);
    assert_eq!(s.up.ladder.lo, Some(1372), "the smaller of the two ways");
    assert!(s.down.unreadable && s.down.ladder.lo.is_none());
}

#[test]
fn a_dead_path_fails_after_the_smallest() {
    let (s, t) = run(&Path {
        lose: (1..1000).collect(),
        ..Path::default()
    });
    assert!(
        t < 10_000 * MS,
        "two sizes each way, three tries of 1 s: {t}"
    );
    assert_eq!(s.failure(), Some(Failure::Silent));
    assert_eq!(s.up.ladder.hi, Some((MTU_LEN, Limit::Lost)));
}
