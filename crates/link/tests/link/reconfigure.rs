//! A link changed while it runs (`npt lab set`), on a virtual clock: packets already inside
//! keep their schedule, packets arriving from the change on get the new impairments, nothing
//! is reordered by a shorter delay, a smaller queue holds what it already had, and a seed still
//! replays the same run with the change in it.

#![cfg(test)]

use std::time::{Duration, Instant};

use npt_link::{DropReason, Impairments, Link, Verdict};

const MS: Duration = Duration::from_millis(1);

fn imp(table: &str) -> Impairments {
    toml::from_str(table).unwrap()
}

fn due(v: Verdict) -> Instant {
    match v {
        Verdict::Queued { due, .. } => due,
        Verdict::Dropped(r) => panic!("dropped: {r:?}"),
    }
}

#[test]
fn a_longer_delay_applies_to_arrivals_from_the_change_on() {
    let t0 = Instant::now();
    let mut link = Link::new(&imp("delay = \"20ms\""), 1);
    let before: Vec<Instant> = (0..5u32)
        .map(|i| due(link.push(t0 + MS * i, i, 100)))
        .collect();
    let at = t0 + 5 * MS;
    link.reconfigure(at, &imp("delay = \"60ms\""));
    // Already held: still due 20 ms after they arrived.
    assert_eq!(
        before,
        (0..5).map(|i| t0 + MS * i + 20 * MS).collect::<Vec<_>>()
    );
    assert_eq!(link.next_due(), Some(t0 + 20 * MS));
    for i in 5..10u32 {
        assert_eq!(due(link.push(t0 + MS * i, i, 100)), t0 + MS * i + 60 * MS);
    }
    let out: Vec<(u32, Instant)> =
        std::iter::from_fn(|| link.pop_due(t0 + Duration::from_secs(1))).collect();
    assert_eq!(
        out.iter().map(|p| p.0).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
}

#[test]
fn a_shorter_delay_steps_down_without_reordering() {
    let t0 = Instant::now();
    let mut link = Link::new(&imp("delay = \"80ms\""), 1);
    // One packet a millisecond for 100 ms, the delay cut to 30 ms at 50 ms.
    let mut dues = Vec::new();
    for i in 0..100u32 {
        let now = t0 + MS * i;
        if i == 50 {
            link.reconfigure(now, &imp("delay = \"30ms\""));
        }
        dues.push((now, due(link.push(now, i, 100))));
    }
    // The last packet of the old delay arrived at 49 ms and leaves at 129 ms.
    let last_old = t0 + 129 * MS;
    for (i, &(arrived, due)) in dues.iter().enumerate() {
        let hold = due - arrived;
        if i < 50 {
            assert_eq!(hold, 80 * MS, "packet {i}");
        } else {
            // New arrivals wait behind it until their own 30 ms is the later time: from
            // the arrival at 99 ms on (99 + 30 = 129), never before.
            assert_eq!(due, (arrived + 30 * MS).max(last_old), "packet {i}");
        }
    }
    assert!(dues.windows(2).all(|w| w[0].1 <= w[1].1), "order kept");
    // After the step, arrivals see the new delay alone.
    let later = t0 + 200 * MS;
    assert_eq!(due(link.push(later, 100, 100)), later + 30 * MS);
}

#[test]
fn a_new_rate_spaces_new_arrivals_and_a_smaller_queue_keeps_what_it_holds() {
    let t0 = Instant::now();
    let mut link = Link::new(&imp("rate = \"10mbit\"\nqueue = 10"), 1);
    // Ten 1,250-byte packets at once: serialized 1 ms apart at 10 Mbit/s.
    let old: Vec<Instant> = (0..10u32).map(|i| due(link.push(t0, i, 1250))).collect();
    assert_eq!(old.last(), Some(&(t0 + 10 * MS)));
    link.reconfigure(t0, &imp("rate = \"5mbit\"\nqueue = 4"));
    // The queue holds 10, more than the new 4: arrivals are dropped until it drains to 3.
    assert_eq!(
        link.push(t0 + MS, 10, 1250),
        Verdict::Dropped(DropReason::QueueFull)
    );
    let now = t0 + 7 * MS; // 3 still in the bottleneck (ends at 8, 9, 10 ms)
                           // The next serializes after the old backlog, at the new rate: 2 ms for 1,250 bytes.
    assert_eq!(due(link.push(now, 11, 1250)), t0 + 12 * MS);
    assert_eq!(
        link.push(now, 12, 1250),
        Verdict::Dropped(DropReason::QueueFull)
    );
    // The already accepted keep their 1 ms spacing.
    let out: Vec<(u32, Instant)> =
        std::iter::from_fn(|| link.pop_due(t0 + Duration::from_secs(1))).collect();
    assert_eq!(out.len(), 11);
    assert!(out[..10].windows(2).all(|w| w[1].1 - w[0].1 == MS));
    assert_eq!(link.stats().dropped_queue(), 2);
    // Without a rate, the next packet passes at once (behind nothing: the backlog has left).
    link.reconfigure(t0 + 20 * MS, &imp(""));
    let t = t0 + 20 * MS;
    assert_eq!(due(link.push(t, 13, 1250)), t);
}

#[test]
fn loss_starts_at_the_change_and_a_seed_replays_the_run() {
    let run = || {
        let t0 = Instant::now();
        let mut link = Link::new(&imp(""), 9);
        let mut dropped = Vec::new();
        for i in 0..40_000u32 {
            let now = t0 + Duration::from_micros(100) * i;
            if i == 20_000 {
                link.reconfigure(now, &imp("loss = \"5%\""));
            }
            dropped.push(matches!(link.push(now, i, 100), Verdict::Dropped(_)));
            while link.pop_due(now).is_some() {}
        }
        dropped
    };
    let a = run();
    assert!(!a[..20_000].iter().any(|&d| d), "no loss before the change");
    let after = a[20_000..].iter().filter(|&&d| d).count();
    // 5 % of 20,000 is 1,000 (binomial sd 31).
    assert!(
        (900..=1100).contains(&after),
        "{after} lost after the change"
    );
    assert_eq!(a, run(), "the same seed, the same drops");
}

#[test]
fn a_gilbert_elliott_chain_keeps_its_state_across_a_change() {
    let t0 = Instant::now();
    let ge = |r: &str| {
        imp(&format!(
            "loss = {{ model = \"gilbert-elliott\", p = \"100%\", r = \"{r}\" }}"
        ))
    };
    let mut link = Link::new(&ge("0%"), 3);
    // p = 100 %: the first packet passes (good state), then the chain is bad for good.
    assert!(matches!(link.push(t0, 0u32, 100), Verdict::Queued { .. }));
    assert!(matches!(link.push(t0, 1, 100), Verdict::Dropped(_)));
    link.reconfigure(t0, &ge("0%"));
    assert!(
        matches!(link.push(t0, 2, 100), Verdict::Dropped(_)),
        "still in the bad state"
    );
}
