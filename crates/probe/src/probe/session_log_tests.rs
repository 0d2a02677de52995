//! The per-packet log of a session (`--packets`) against the fake path of `fake_far`: one
//! line per packet whose fate agrees with the session's own counts, the direction of a loss
//! written where the far end's counts place it and only there, refusals never written as loss.

use std::collections::BTreeMap;

use npt_result::packets::{Direction, Fate as LineFate, PacketLine};

use super::fake_far::{far_cfg, run_path, Path, BUDGET};
use super::fake_link::{Fate, MS};
use super::session::*;

const WALL: i64 = 1_763_000_000_000_000_000;

fn drop_if(p: bool) -> Fate {
    Fate {
        drop: p,
        ..Fate::default()
    }
}

/// Runs a logging session over `path`; its lines by sequence number (each seq once, a late
/// or duplicate reply apart).
fn run_logged(
    path: &mut Path,
    count: u64,
) -> (Session, BTreeMap<u64, PacketLine>, Vec<PacketLine>) {
    let mut s = Session::new(SessionConfig {
        log_packets: true,
        mark: None,
        count: Some(count),
        ..far_cfg()
    });
    path.far.wall = WALL;
    run_path(&mut s, path, WALL);
    let mut fates = BTreeMap::new();
    let mut again = Vec::new();
    for l in s.take_packets() {
        assert_eq!(l.flow, Some(s.config().flow));
        if matches!(l.fate, LineFate::Late | LineFate::Duplicate) {
            again.push(l);
        } else {
            assert!(l.sent_ns.is_some(), "{l:?}");
            let seq = l.seq;
            assert!(fates.insert(seq, l).is_none(), "seq {seq} written twice");
        }
    }
    (s, fates, again)
}

fn seqs(lines: &BTreeMap<u64, PacketLine>, fate: LineFate, dir: Option<Direction>) -> Vec<u64> {
    lines
        .values()
        .filter(|l| l.fate == fate && l.direction == dir)
        .map(|l| l.seq)
        .collect()
}

#[test]
fn every_packet_once_and_each_isolated_loss_with_its_direction() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.up = Box::new(|seq| drop_if(seq % 33 == 5));
    // The down leg drops the reply to the 7th, 57th … packet the far end received.
    path.down = Box::new(|_, rx| drop_if(rx % 50 == 7));
    let (s, lines, again) = run_logged(&mut path, 1000);
    let t = s.totals();
    assert_eq!(lines.len() as u64, t.packets.sent);
    assert!(again.is_empty());
    let received = seqs(&lines, LineFate::Received, None);
    assert_eq!(received.len() as u64, t.packets.received);
    assert!(lines
        .values()
        .filter(|l| l.fate == LineFate::Received)
        .all(|l| l.rtt_ns == Some(10 * MS)));
    let up_drop = |q: &u64| q % 33 == 5;
    let up = seqs(&lines, LineFate::Lost, Some(Direction::Up));
    let down = seqs(&lines, LineFate::Lost, Some(Direction::Down));
    let unknown = seqs(&lines, LineFate::Lost, None);
    assert!(up.iter().all(up_drop), "{up:?}");
    assert!(
        !down.iter().any(up_drop),
        "a down loss reached the far end: {down:?}"
    );
    assert_eq!(
        (up.len() + down.len() + unknown.len()) as u64,
        t.packets.lost,
        "every loss has its line"
    );
    // Where an up loss and a down loss are neighbours, their gap has one of each: which was
    // which is not known, and the log does not guess. Everywhere else the direction is there.
    assert!(!unknown.is_empty() && unknown.len() <= 4, "{unknown:?}");
    for q in &unknown {
        let lost = |x: u64| lines.get(&x).is_some_and(|l| l.fate == LineFate::Lost);
        assert!(
            lost(q + 1) || lost(q.wrapping_sub(1)),
            "{q} is not in a run of losses"
        );
    }
    assert!(up.len() >= 28 && down.len() as u64 + 2 >= t.dir.lost_down);
}

#[test]
fn a_run_of_losses_both_ways_has_no_direction_per_packet() {
    let mut path = Path::new(5 * MS, 5 * MS);
    // 100 and 101 lost up, the replies to the next two packets the far end saw lost down:
    // one gap of four, two each way.
    path.up = Box::new(|seq| drop_if(seq == 100 || seq == 101));
    path.down = Box::new(|seq, _| drop_if(seq == 102 || seq == 103));
    let (s, lines, _) = run_logged(&mut path, 1000);
    assert_eq!((s.totals().dir.lost_up, s.totals().dir.lost_down), (2, 2));
    assert_eq!(seqs(&lines, LineFate::Lost, None), [100, 101, 102, 103]);
}

#[test]
fn refusals_are_written_refused_never_lost() {
    let mut path = Path::new(5 * MS, 5 * MS);
    path.far.refuse = Box::new(|seq, _| (seq % 10 < 7).then_some(BUDGET));
    path.far.notice_every = 1;
    let (s, lines, _) = run_logged(&mut path, 1000);
    let t = s.totals();
    assert_eq!((t.refused, t.packets.lost), (700, 0));
    let refused = seqs(&lines, LineFate::Refused, None);
    let expected: Vec<u64> = (0..1000).filter(|q| q % 10 < 7).collect();
    assert_eq!(refused, expected);
    assert!(lines.values().all(|l| l.fate != LineFate::Lost));
}

#[test]
fn a_late_reply_follows_its_lost_line_with_its_round_trip() {
    let mut path = Path::new(5 * MS, 5 * MS);
    // The loss timeout is 1 s: packet 50 comes back 1.5 s late.
    path.up = Box::new(|seq| Fate {
        extra_delay: if seq == 50 { 1_500 * MS } else { 0 },
        ..Fate::default()
    });
    // Sending goes on for 3 s, so the session is still there when the reply comes.
    let (_, lines, again) = run_logged(&mut path, 3000);
    assert_eq!(lines[&50].fate, LineFate::Lost);
    let late: Vec<_> = again.iter().filter(|l| l.fate == LineFate::Late).collect();
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].seq, 50);
    assert_eq!(late[0].rtt_ns, Some(1_510 * MS));
    assert_eq!(late[0].sent_ns, lines[&50].sent_ns);
}
