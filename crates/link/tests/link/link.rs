//! The link emulator on a virtual clock (a base `Instant` plus `Duration`s): each impairment
//! does exactly what the crate docs say — pass-through, fixed delay, order-keeping jitter,
//! random and Gilbert–Elliott loss, rate and queue, duplicate, reorder — deterministically for
//! a seed, and no sequence of calls makes it panic.

#![cfg(test)]
#![allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]

use std::time::{Duration, Instant};

use npt_link::{DropReason, Impairments, Link, Loss, Percent, Rate, Verdict};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const MS: Duration = Duration::from_millis(1);
const US: Duration = Duration::from_micros(1);

fn imp(table: &str) -> Impairments {
    toml::from_str(table).unwrap()
}

/// Drains every packet due at or before `now`.
fn drain<P: Clone>(link: &mut Link<P>, now: Instant) -> Vec<(P, Instant)> {
    std::iter::from_fn(|| link.pop_due(now)).collect()
}

fn due(v: Verdict) -> Instant {
    match v {
        Verdict::Queued { due, .. } => due,
        Verdict::Dropped(r) => panic!("dropped: {r:?}"),
    }
}

#[test]
fn a_link_can_move_to_its_own_thread() {
    fn send<T: Send + 'static>() {}
    send::<Link<Vec<u8>>>();
    send::<npt_link::LinkStats>();
}

#[test]
fn zero_impairments_pass_through_in_order_at_now() {
    let t0 = Instant::now();
    let mut link = Link::new(&Impairments::default(), 1);
    assert_eq!(link.next_due(), None);
    for i in 0..100u32 {
        let now = t0 + US * (i / 10); // ten packets per µs, same instants included
        assert_eq!(due(link.push(now, i, 64)), now);
    }
    assert_eq!(link.next_due(), Some(t0));
    let out = drain(&mut link, t0 + US * 9);
    assert_eq!(out.len(), 100);
    for (i, (pkt, due)) in out.into_iter().enumerate() {
        assert_eq!(pkt, i as u32);
        assert_eq!(due, t0 + US * (i as u32 / 10));
    }
    let s = link.stats().summary();
    assert_eq!((s.packets_in, s.packets_out), (100, 100));
    assert_eq!((s.bytes_in, s.bytes_out), (6400, 6400));
    assert_eq!(
        s.dropped_loss + s.dropped_queue + s.duplicated + s.reordered,
        0
    );
}

#[test]
fn a_fixed_delay_is_exact_and_nothing_leaves_early() {
    let t0 = Instant::now();
    let mut link = Link::new(&imp("delay = \"50ms\""), 1);
    for i in 0..10u32 {
        let now = t0 + US * (137 * i);
        assert_eq!(due(link.push(now, i, 100)), now + 50 * MS);
    }
    assert_eq!(link.next_due(), Some(t0 + 50 * MS));
    assert_eq!(link.pop_due(t0 + 50 * MS - Duration::from_nanos(1)), None);
    assert_eq!(link.pop_due(t0 + 50 * MS), Some((0, t0 + 50 * MS)));
    assert_eq!(link.next_due(), Some(t0 + US * 137 + 50 * MS));
    let rest = drain(&mut link, t0 + 60 * MS);
    assert_eq!(
        rest.iter().map(|p| p.0).collect::<Vec<_>>(),
        (1..10).collect::<Vec<_>>()
    );
    assert_eq!(link.held(), 0);
}

#[test]
fn jitter_keeps_order_and_stays_within_bounds() {
    let t0 = Instant::now();
    let mut link = Link::new(&imp("delay = \"20ms\"\njitter = \"5ms\""), 7);
    let mut dues = Vec::new();
    for i in 0..20_000u32 {
        let now = t0 + US * (100 * i); // 10,000 pps: jitter spans 100 packets
        let d = due(link.push(now, i, 64));
        assert!(d >= now + 15 * MS && d <= now + 25 * MS, "packet {i}");
        dues.push(d - now);
    }
    let out = drain(&mut link, t0 + Duration::from_secs(3));
    assert!(out.windows(2).all(|w| w[0].0 < w[1].0), "jitter reordered");
    assert!(out.windows(2).all(|w| w[0].1 <= w[1].1));
    assert_eq!(link.stats().reordered(), 0);
    // Jitter spreads the holds across the band and keeps their mean at the delay, even with
    // packets 20× closer together than the jitter.
    dues.sort();
    let q = |f: f64| dues[(f * (dues.len() - 1) as f64) as usize];
    let mean = dues.iter().sum::<Duration>() / dues.len() as u32;
    assert!(mean > 19_250 * US && mean < 20_750 * US, "mean {mean:?}");
    assert!(
        q(0.05) < 17 * MS && q(0.95) > 23 * MS,
        "{:?} {:?}",
        q(0.05),
        q(0.95)
    );
    // Sparse packets (farther apart than 2·jitter) too.
    let mut sparse = Link::new(&imp("delay = \"20ms\"\njitter = \"5ms\""), 8);
    let holds: Vec<Duration> = (0..2000u32)
        .map(|i| {
            let now = t0 + 13 * MS * i;
            due(sparse.push(now, i, 64)) - now
        })
        .collect();
    let mean = holds.iter().sum::<Duration>() / holds.len() as u32;
    assert!(
        mean > 19_750 * US && mean < 20_250 * US,
        "sparse mean {mean:?}"
    );
    assert!(holds.iter().all(|h| *h >= 15 * MS && *h <= 25 * MS));
}

/// Pushes `n` packets 10 µs apart; returns which were lost.
fn losses(link: &mut Link<u32>, n: u32) -> Vec<bool> {
    let t0 = Instant::now();
    (0..n)
        .map(|i| {
            let v = link.push(t0 + US * (10 * i), i, 64);
            drain(link, t0 + US * (10 * i));
            v == Verdict::Dropped(DropReason::Loss)
        })
        .collect()
}

#[test]
fn one_percent_random_loss_is_within_bounds_and_seeded() {
    let table = imp("loss = \"1%\"");
    let a = losses(&mut Link::new(&table, 42), 100_000);
    let lost = a.iter().filter(|l| **l).count();
    // Binomial(100000, 0.01): mean 1000, sd 31.5; ±5 sd.
    assert!((843..=1157).contains(&lost), "{lost}");
    assert_eq!(
        losses(&mut Link::new(&table, 42), 100_000),
        a,
        "same seed, same drops"
    );
    assert_ne!(losses(&mut Link::new(&table, 43), 100_000), a);
    let mut link = Link::new(&table, 42);
    losses(&mut link, 100_000);
    let s = link.stats().summary();
    assert_eq!(s.dropped_loss, lost as u64);
    assert_eq!(s.packets_out, 100_000 - lost as u64);
}

#[test]
fn gilbert_elliott_loses_in_bursts_of_mean_length_one_over_r() {
    let table = imp(
        "loss = { model = \"gilbert-elliott\", p = \"1%\", r = \"30%\", bad = \"100%\", good = \"0%\" }",
    );
    let lost = losses(&mut Link::new(&table, 9), 300_000);
    let mut bursts = Vec::new();
    let mut run = 0;
    for &l in &lost {
        if l {
            run += 1;
        } else if run > 0 {
            bursts.push(run);
            run = 0;
        }
    }
    let mean = bursts.iter().sum::<u32>() as f64 / bursts.len() as f64;
    assert!((mean - 1.0 / 0.3).abs() < 0.2, "mean burst {mean}");
    // Long-run loss p/(p+r) = 1/31 = 3.23 %.
    let rate = lost.iter().filter(|l| **l).count() as f64 / lost.len() as f64;
    assert!((rate - 1.0 / 31.0).abs() < 0.004, "loss {rate}");
    // Random loss at the same average gives far shorter bursts.
    let flat = losses(&mut Link::new(&imp("loss = \"3.23%\""), 9), 300_000);
    let pairs = flat.windows(2).filter(|w| w[0] && w[1]).count();
    let ge_pairs = lost.windows(2).filter(|w| w[0] && w[1]).count();
    assert!(ge_pairs > 10 * pairs, "ge {ge_pairs} random {pairs}");
}

#[test]
fn ten_mbit_with_1250_byte_packets_departs_exactly_1ms_apart() {
    let t0 = Instant::now();
    let mut link = Link::new(&imp("rate = \"10mbit\""), 1);
    // A burst of 100 at once: the bottleneck spaces them by the serialization time.
    for i in 0..100u32 {
        assert_eq!(due(link.push(t0, i, 1250)), t0 + MS * (i + 1));
    }
    let out = drain(&mut link, t0 + Duration::from_secs(1));
    assert!(out.windows(2).all(|w| w[1].1 - w[0].1 == MS));
    // Arrivals slower than the rate wait only for their own serialization.
    let t1 = t0 + Duration::from_secs(1);
    for i in 0..10u32 {
        let now = t1 + 2 * MS * i;
        assert_eq!(due(link.push(now, i, 1250)), now + MS);
    }
    // An odd rate never drifts: 1,000 packets of 100 bytes at 3 Mbit/s take exactly 800/3 ms.
    let mut odd = Link::new(&imp("rate = \"3mbit\""), 1);
    let last = (0..1000).map(|i| due(odd.push(t0, i, 100))).last().unwrap();
    assert_eq!(last - t0, Duration::from_nanos(266_666_666));
}

#[test]
fn the_queue_limit_drops_and_counts() {
    let t0 = Instant::now();
    let mut link = Link::new(&imp("rate = \"10mbit\"\nqueue = 10\ndelay = \"5ms\""), 1);
    let verdicts: Vec<Verdict> = (0..15).map(|i| link.push(t0, i, 1250)).collect();
    assert!(verdicts[..10]
        .iter()
        .all(|v| matches!(v, Verdict::Queued { .. })));
    assert!(verdicts[10..]
        .iter()
        .all(|v| *v == Verdict::Dropped(DropReason::QueueFull)));
    assert_eq!(link.stats().dropped_queue(), 5);
    // The 1st packet's serialization ends at 1 ms: one slot frees, and one only.
    assert!(matches!(
        link.push(t0 + MS, 15, 1250),
        Verdict::Queued { .. }
    ));
    assert_eq!(
        link.push(t0 + MS, 16, 1250),
        Verdict::Dropped(DropReason::QueueFull)
    );
    // Packets in the delay line (past the bottleneck) do not count against the queue.
    let later = t0 + 11 * MS;
    for i in 0..10 {
        assert!(matches!(
            link.push(later, 20 + i, 1250),
            Verdict::Queued { .. }
        ));
    }
    let s = link.stats().summary();
    assert_eq!((s.packets_in, s.dropped_queue), (27, 6));
    assert_eq!(drain(&mut link, t0 + Duration::from_secs(1)).len(), 21);
}

#[test]
fn duplicates_follow_the_original_and_are_counted() {
    let t0 = Instant::now();
    let mut link = Link::new(&imp("delay = \"1ms\"\nduplicate = \"10%\""), 3);
    let mut said = 0;
    for i in 0..10_000u32 {
        if let Verdict::Queued {
            duplicated: true, ..
        } = link.push(t0 + US * i, i, 64)
        {
            said += 1;
        }
    }
    let dup = link.stats().duplicated();
    assert_eq!(dup, said);
    assert!((800..=1200).contains(&dup), "{dup}");
    let out = drain(&mut link, t0 + Duration::from_secs(1));
    assert_eq!(out.len() as u64, 10_000 + dup);
    assert!(
        out.windows(2).all(|w| w[0].0 <= w[1].0),
        "copies stay in order"
    );
    let twice = out.windows(2).filter(|w| w[0].0 == w[1].0).count() as u64;
    assert_eq!(twice, dup, "each copy right behind its original");
    assert_eq!(link.stats().packets_out(), 10_000 + dup);
}

#[test]
fn reordered_packets_overtake_and_the_count_matches_what_a_receiver_sees() {
    let t0 = Instant::now();
    let mut link = Link::new(&imp("delay = \"10ms\"\nreorder = \"5%\""), 5);
    for i in 0..10_000u32 {
        link.push(t0 + MS * i, i, 64);
    }
    let out: Vec<u32> = drain(&mut link, t0 + Duration::from_secs(20))
        .into_iter()
        .map(|p| p.0)
        .collect();
    assert_eq!(out.len(), 10_000);
    // A packet overtook if some packet that arrived before it leaves after it.
    let mut min_after = u32::MAX;
    let mut overtakers = 0;
    for &id in out.iter().rev() {
        if id > min_after {
            overtakers += 1;
        }
        min_after = min_after.min(id);
    }
    let counted = link.stats().reordered();
    assert_eq!(counted, overtakers);
    assert!((400..=600).contains(&counted), "{counted}");
    // Without a delay there is nothing to overtake: chosen packets are not counted.
    let mut flat = Link::new(&imp("reorder = \"50%\""), 5);
    for i in 0..1000u32 {
        flat.push(t0 + US * i, i, 64);
    }
    assert_eq!(flat.stats().reordered(), 0);
    let ids: Vec<u32> = drain(&mut flat, t0 + MS).into_iter().map(|p| p.0).collect();
    assert_eq!(ids, (0..1000).collect::<Vec<_>>());
}

#[test]
fn release_errors_go_into_the_histogram() {
    let t0 = Instant::now();
    let mut link = Link::new(&imp("delay = \"20ms\""), 1);
    for i in 0..100u32 {
        link.push(t0 + MS * i, i, 64);
    }
    let mut late = 0;
    while let Some(due) = link.next_due() {
        // The runtime wakes a little late: 100 µs, 101 µs, …
        let actual = due + US * (100 + late);
        let (_, d) = link.pop_due(actual).unwrap();
        link.record_release(d, actual);
        late += 1;
    }
    link.record_release(t0 + MS, t0); // early: counted apart, recorded as 0
                                      // Taking the stats in two parts and adding them back gives the whole.
    let whole = link.stats().summary();
    let mut parts = link.take_stats();
    assert_eq!(link.stats().summary(), Default::default());
    parts += link.take_stats();
    assert_eq!(parts.summary(), whole);
    let s = parts.summary();
    assert_eq!(s.delay_error_count, 101);
    assert_eq!(s.released_early, 1);
    assert!((s.delay_error_p50_us - 149.0).abs() < 1.0, "{s:?}");
    assert!((s.delay_error_max_us - 199.0).abs() < 0.5, "{s:?}");
}

/// Impairments with arbitrary values, in range or not: `Link::new` must clamp, never panic.
fn arbitrary(rng: &mut SmallRng) -> Impairments {
    let dur = |rng: &mut SmallRng| match rng.gen_range(0..4) {
        0 => Duration::ZERO,
        1 => Duration::from_nanos(rng.gen_range(0..5_000_000)),
        2 => Duration::from_secs(rng.gen_range(0..100_000)),
        _ => Duration::MAX,
    };
    let pct = |rng: &mut SmallRng| {
        Percent::new(match rng.gen_range(0..5) {
            0 => 0.0,
            1 => rng.gen_range(0.0..100.0),
            2 => rng.gen_range(-1e9..1e9),
            3 => f64::NAN,
            _ => f64::INFINITY,
        })
    };
    Impairments {
        delay: dur(rng),
        jitter: dur(rng),
        loss: match rng.gen_range(0..3) {
            0 => Loss::None,
            1 => Loss::Random { p: pct(rng) },
            _ => Loss::GilbertElliott {
                p: pct(rng),
                r: pct(rng),
                loss_good: pct(rng),
                loss_bad: pct(rng),
            },
        },
        duplicate: pct(rng),
        reorder: pct(rng),
        rate: match rng.gen_range(0..4) {
            0 => None,
            1 => Some(Rate::bits_per_sec(0)),
            2 => Some(Rate::bits_per_sec(1)),
            _ => Some(Rate::bits_per_sec(rng.gen())),
        },
        queue: [None, Some(0), Some(1), Some(usize::MAX)][rng.gen_range(0..4)],
        ecn: [None, Some(Duration::ZERO), Some(dur(rng))][rng.gen_range(0..3)],
    }
}

#[test]
fn arbitrary_calls_never_panic_and_keep_the_books() {
    let mut rng = SmallRng::seed_from_u64(2024);
    let t0 = Instant::now();
    for round in 0..300 {
        let table = arbitrary(&mut rng);
        let mut link = Link::new(&table, round);
        let mut now = t0;
        let mut popped = 0u64;
        let mut earliest = t0;
        for _ in 0..500 {
            match rng.gen_range(0..10) {
                0..=4 => {
                    let len = [0, 1, 64, 1500, 65_535, usize::MAX][rng.gen_range(0..6)];
                    link.push(now, (), len);
                }
                5..=7 => {
                    if let Some((_, due)) = link.pop_due(now) {
                        assert!(due <= now);
                        link.record_release(due, now);
                        popped += 1;
                    }
                }
                8 => now += Duration::from_nanos(rng.gen_range(0..100_000_000)),
                _ => {
                    // Time handed in out of order must not break anything.
                    let back = Duration::from_nanos(rng.gen_range(0..1_000_000));
                    let then = now.checked_sub(back).unwrap_or(now);
                    earliest = earliest.min(then);
                    let ect = rng.gen();
                    link.push_marking(then, (), 100, ect, |_| {});
                }
            }
            if let Some(next) = link.next_due() {
                assert!(next >= earliest);
            }
        }
        let s = link.stats().summary();
        assert_eq!(s.packets_out, popped);
        assert_eq!(
            s.packets_in + s.duplicated,
            s.dropped_loss + s.dropped_queue + s.packets_out + link.held() as u64,
            "{table:?}"
        );
    }
}

/// A load above the rate keeps the drop-tail queue full: every packet that gets in finds
/// `queue − 1` packets ahead (the first on the wire), so the queue's waiting time (arrival to
/// the start of serialization) is their drain time less the part of the head already sent,
/// and the stats' histogram says so. 1,500 bytes at 10 Mbit/s: 1.2 ms each, 99 ahead: 118.8 ms.
#[test]
fn a_full_queue_makes_every_packet_wait_its_drain_time() {
    let t0 = Instant::now();
    let mut link = Link::new(&imp("rate = \"10mbit\"\nqueue = 100"), 1);
    let every = 700 * US; // 17 Mbit/s of 1,500-byte packets
    let (mut accepted, mut last_wait) = (0u64, Duration::ZERO);
    for i in 0..3000u32 {
        let now = t0 + every * i;
        if let Verdict::Queued { due, .. } = link.push(now, i, 1500) {
            accepted += 1;
            last_wait = due - now - 1200 * US;
        }
        drain(&mut link, now);
    }
    let full = 99 * 1200 * US;
    assert!(
        last_wait <= full && last_wait + every >= full,
        "{last_wait:?}"
    );
    let s = link.stats().summary();
    assert_eq!(s.queue_wait_count, accepted);
    assert!(s.queue_wait_max_ms <= 118.8 + 0.1, "{s:?}");
    // Most of the 2.1 s is the full queue (it fills in the first 0.3 s).
    assert!(
        (118.8 - 0.7 - 0.1..=118.8 + 0.1).contains(&s.queue_wait_p50_ms),
        "{s:?}"
    );
    // A small packet that gets in right after a departure waits the same 99 packets.
    let mut now = t0 + every * 3000;
    while matches!(link.push(now, 0, 92), Verdict::Dropped(_)) {
        now += 10 * US;
        assert!(now < t0 + Duration::from_secs(3), "never admitted");
    }
    let wait = link.stats().queue_wait().max_ns();
    assert!(wait <= 118_800_000 + 200_000, "{wait}");
}

#[test]
fn ecn_marks_ect_packets_that_wait_past_the_threshold_and_drops_only_when_full() {
    // 1 Mbit/s: a 125-byte packet takes exactly 1 ms, so the k-th of a burst waits k ms.
    let imp = imp("rate = \"1mbit\"\nqueue = 8\necn = \"3ms\"");
    let mut link: Link<u8> = Link::new(&imp, 1);
    let t0 = Instant::now();
    let mut verdicts = Vec::new();
    for k in 0..10u8 {
        // Odd packets are not ECN-capable: never marked, whatever they wait.
        let (ect, ecn) = if k % 2 == 0 { (true, 2) } else { (false, 0) };
        verdicts.push(link.push_marking(t0, ecn, 125, ect, |p| *p = 3));
    }
    let dropped = verdicts
        .iter()
        .filter(|v| matches!(v, Verdict::Dropped(DropReason::QueueFull)))
        .count();
    assert_eq!(dropped, 2, "the queue holds 8: {verdicts:?}");
    let mut out = Vec::new();
    let end = t0 + Duration::from_millis(20);
    while let Some((p, _)) = link.pop_due(end) {
        out.push(p);
    }
    // Waits 0..7 ms for the 8 accepted: ECT ones (k = 0, 2, 4, 6) at ≥ 3 ms are 4 and 6.
    assert_eq!(out, vec![2, 0, 2, 0, 3, 0, 3, 0]);
    assert_eq!(link.stats().ce_marked(), 2);
    assert_eq!(link.stats().summary().ce_marked, 2);
    // After the queue drains, nothing waits: no mark.
    let later = t0 + Duration::from_millis(100);
    assert!(matches!(
        link.push_marking(later, 2, 125, true, |p| *p = 3),
        Verdict::Queued { .. }
    ));
    assert_eq!(
        link.pop_due(later + Duration::from_millis(5)).map(|p| p.0),
        Some(2)
    );
    assert_eq!(link.stats().ce_marked(), 2);
}

#[test]
fn ecn_needs_a_rate_and_reads_back_as_written() {
    let e = toml::from_str::<Impairments>("ecn = \"2ms\"").unwrap_err();
    assert!(e.to_string().contains("ecn"), "{e}");
    let i = imp("rate = \"10mbit\"\necn = \"2ms\"");
    assert_eq!(i.ecn, Some(Duration::from_millis(2)));
    let back: Impairments = toml::from_str(&toml::to_string(&i).unwrap()).unwrap();
    assert_eq!(back, i);
    let off = i.with_settings([("ecn", "none")]).unwrap();
    assert_eq!(off.ecn, None);
    let on = off.with_settings([("ecn", "5ms")]).unwrap();
    assert_eq!(on.ecn, Some(Duration::from_millis(5)));
}
