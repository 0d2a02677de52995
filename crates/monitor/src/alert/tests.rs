//! Alert rules on made-up rounds: fire after N rounds, clear after M with hysteresis, a
//! baseline that does not follow a step, rules that name their keys when wrong.

use npt_result::marking::{Fate, Tos, Way};

use super::*;
use crate::config::AlertFile;

fn fig(p50: f64, sent: u64, lost: u64) -> Figures {
    Figures {
        count: sent - lost,
        sent,
        lost,
        p50_ms: p50,
        ..Figures::default()
    }
}

fn rule_of(text: &str) -> Result<Rule, String> {
    let a: AlertFile = toml::from_str(text).map_err(|e| e.to_string())?;
    rule(0, &a).map_err(|e| e.to_string())
}

fn feed(a: &mut Alerts, t: &str, rounds: &[(Status, Figures)]) -> Vec<(usize, bool)> {
    let mut out = Vec::new();
    for (i, (s, f)) in rounds.iter().enumerate() {
        let (ch, _) = a.on_round(t, *s, f, i64::try_from(i).unwrap() * 1000);
        out.extend(ch.iter().map(|c| (i, c.firing)));
    }
    out
}

#[test]
fn loss_fires_after_n_rounds_and_clears_with_hysteresis() {
    let r = rule_of(
        "name = 'loss'\nmetric = 'loss_pct'\nabove = 5\nclear = 1\nrounds = 3\nclear_rounds = 2",
    )
    .unwrap();
    let mut a = Alerts::new(vec![r]);
    let ok = (Status::Ok, fig(20.0, 100, 0));
    let bad = (Status::Ok, fig(20.0, 100, 10));
    let hover = (Status::Ok, fig(20.0, 100, 3)); // below 5 %, above the 1 % clear level
    let rounds = [
        ok.clone(),
        bad.clone(),
        bad.clone(),
        ok.clone(), // a streak broken: nothing
        bad.clone(),
        bad.clone(),
        bad.clone(), // fires at the third (index 6)
        hover.clone(),
        hover.clone(),
        hover.clone(), // hysteresis: still firing
        ok.clone(),
        (Status::Skipped, Figures::default()),
        ok.clone(), // clears at 12 (a skip counts neither way)
    ];
    assert_eq!(feed(&mut a, "relay", &rounds), vec![(6, true), (12, false)]);
    assert!(a.firing("relay").is_empty());
    // A round that could not run is 100 % loss.
    let errs = vec![(Status::Error, Figures::default()); 3];
    assert_eq!(feed(&mut a, "relay", &errs), vec![(2, true)]);
    assert_eq!(a.firing("relay"), vec!["loss"]);
}

#[test]
fn a_baseline_step_fires_and_stays_until_undone() {
    let r =
        rule_of("name = 'step'\nmetric = 'p50_ms'\nabove = 15\nbaseline_rounds = 20\nrounds = 2")
            .unwrap();
    let mut a = Alerts::new(vec![r]);
    let at = |ms: f64| (Status::Ok, fig(ms, 10, 0));
    let mut rounds: Vec<_> = (0..30).map(|i| at(20.0 + f64::from(i % 3) * 0.1)).collect();
    rounds.extend((0..40).map(|_| at(50.0))); // +30 ms for 40 rounds: the baseline stays 20
    rounds.extend((0..5).map(|_| at(20.1)));
    let ch = feed(&mut a, "direct", &rounds);
    assert_eq!(
        ch,
        vec![(31, true), (71, false)],
        "fires on the second round of the step"
    );
    // No answer: a latency rule has no value; it counts neither way.
    let (ch, rows) = a.on_round("direct", Status::NoAnswer, &fig(0.0, 10, 10), 99);
    assert!(ch.is_empty() && rows.is_empty());
}

#[test]
fn a_firing_baseline_rule_restored_after_a_restart_clears_once_the_step_is_undone() {
    let r = rule_of(
        "name = 'step'\nmetric = 'p50_ms'\nabove = 15\nbaseline_rounds = 10\nrounds = 2\nclear_rounds = 3",
    )
    .unwrap();
    let mut a = Alerts::new(vec![r]);
    let at = |ms: f64| (Status::Ok, fig(ms, 10, 0));
    // 24 ms for 12 rounds, then +30 ms: fires on the step's second round (index 13).
    let mut before: Vec<_> = (0..12).map(|_| at(24.0)).collect();
    before.extend((0..6).map(|_| at(54.0)));
    let mut rows = Vec::new();
    let mut fired = Vec::new();
    for (i, (s, f)) in before.iter().enumerate() {
        let (ch, r) = a.on_round("direct", *s, f, i64::try_from(i).unwrap() * 1000);
        fired.extend(ch.iter().map(|c| (i, c.firing)));
        rows.extend(r);
    }
    assert_eq!(fired, vec![(13, true)]);
    // kill -9: what the store holds is the state rows and the rounds.
    let restarted = |rebuilt: bool| {
        let mut b = Alerts::new(a.rules().to_vec());
        b.restore(&rows);
        if rebuilt {
            let from = b.replay_from("direct", 1000, 18_000, 86_400_000).unwrap();
            assert!(from <= 0, "reaches back before the step: {from}");
            let stored = before
                .iter()
                .enumerate()
                .map(|(i, (s, f))| (*s, f, i64::try_from(i).unwrap() * 1000));
            b.rebuild("direct", stored);
        }
        assert_eq!(b.firing("direct"), vec!["step"]);
        // The step undone: the path reads its old 24 ms again.
        let after: Vec<_> = (0..8).map(|_| at(24.0)).collect();
        feed(&mut b, "direct", &after)
    };
    // Restored without its window, the rule is never ready again and never clears.
    assert_eq!(restarted(false), vec![]);
    assert_eq!(
        restarted(true),
        vec![(2, false)],
        "clears on the third round back"
    );
    // A target no baseline rule watches has nothing to replay.
    assert_eq!(a.replay_from("other", 1000, 0, 1), Some(-1));
    let plain = Alerts::new(vec![
        rule_of("name = 'l'\nmetric = 'loss_pct'\nabove = 5").unwrap()
    ]);
    assert_eq!(plain.replay_from("direct", 1000, 0, 1), None);
}

#[test]
fn change_reports_what_it_compared() {
    let r = rule_of("name = 'slow'\nmetric = 'p99_ms'\nabove = 100\nrounds = 1").unwrap();
    let mut a = Alerts::new(vec![r]);
    let mut f = fig(10.0, 10, 0);
    f.p99_ms = 150.0;
    let (ch, rows) = a.on_round("x", Status::Ok, &f, 5000);
    assert_eq!(ch.len(), 1);
    let c = &ch[0];
    assert_eq!(
        (c.firing, c.value, c.threshold, c.rounds, c.metric),
        (true, 150.0, 100.0, 1, "p99_ms")
    );
    assert_eq!(rows.len(), 1);
    assert!(rows[0].firing);
    // Restored after a restart: still firing, clears with its own rounds.
    let mut b = Alerts::new(a.rules().to_vec());
    b.restore(&rows);
    assert_eq!(b.firing("x"), vec!["slow"]);
    let (ch, _) = b.on_round("x", Status::Ok, &fig(10.0, 10, 0), 6000);
    assert_eq!(ch.len(), 1);
    assert!(!ch[0].firing);
}

#[test]
fn unreachable_and_below_rules() {
    let r = rule_of("name = 'down'\nmetric = 'unreachable'\nrounds = 2").unwrap();
    let rpm =
        rule_of("name = 'rpm'\nmetric = 'rpm'\nbelow = 300\nclear = 400\nrounds = 1").unwrap();
    let mut a = Alerts::new(vec![r, rpm]);
    let rounds = [
        (Status::Timeout, Figures::default()),
        (Status::NoAnswer, fig(0.0, 5, 5)),
        (
            Status::Ok,
            Figures {
                rpm: Some(250.0),
                ..fig(10.0, 5, 0)
            },
        ),
        (
            Status::Ok,
            Figures {
                rpm: Some(350.0),
                ..fig(10.0, 5, 0)
            },
        ),
        (
            Status::Ok,
            Figures {
                rpm: Some(450.0),
                ..fig(10.0, 5, 0)
            },
        ),
    ];
    let ch = feed(&mut a, "x", &rounds);
    assert_eq!(ch, vec![(1, true), (2, true), (3, false), (4, false)]);
}

#[test]
fn globs_pick_targets() {
    assert!(glob("relay-*", "relay-udp"));
    assert!(glob("*udp", "relay-udp"));
    assert!(glob("r*-*p", "relay-udp"));
    assert!(!glob("relay-*", "direct"));
    assert!(glob("*", ""));
    assert!(glob("x", "x") && !glob("x", "xy"));
    let r = rule_of("name = 'l'\nmetric = 'loss_pct'\nabove = 1\ntargets = ['relay-*']").unwrap();
    assert!(r.applies_to("relay-tcp") && !r.applies_to("direct"));
}

#[test]
fn bad_rules_name_the_key() {
    let e = |t: &str| rule_of(t).unwrap_err();
    assert!(e("name = 'a'\nmetric = 'p50_ms'").starts_with("alert[0].above: missing"));
    assert!(e("name = 'a'\nmetric = 'p50_ms'\nabove = 1\nbelow = 2").starts_with("alert[0].below"));
    assert!(
        e("name = 'a'\nmetric = 'p50_ms'\nabove = 10\nclear = 20").starts_with("alert[0].clear")
    );
    assert!(e("name = 'a'\nmetric = 'rpm'\nbelow = 300\nclear = 200").starts_with("alert[0].clear"));
    assert!(e("name = 'a'\nmetric = 'unreachable'\nabove = 1").starts_with("alert[0].above"));
    assert!(
        e("name = 'a'\nmetric = 'p50_ms'\nabove = 1\nrounds = 0").starts_with("alert[0].rounds")
    );
    assert!(
        e("name = 'a'\nmetric = 'p50_ms'\nabove = 1\nbaseline_rounds = 1")
            .starts_with("alert[0].baseline_rounds")
    );
    assert!(e("name = ''\nmetric = 'p50_ms'\nabove = 1").starts_with("alert[0].name"));
    assert!(e("name = 'a'\nmetric = 'p51_ms'\nabove = 1").contains("unknown variant"));
}

/// `flagged` counts setup rounds whose verdict flagged a layer: it fires after its rounds in a
/// row, rounds of other kinds (no figure) count neither way, and it takes no threshold.
#[test]
fn flagged_setup_rounds_fire_and_other_kinds_count_neither_way() {
    let r = rule_of("name = 'setup'\nmetric = 'flagged'\nrounds = 2").unwrap();
    let mut a = Alerts::new(vec![r]);
    let setup = |n| Figures {
        flagged: Some(n),
        ..fig(50.0, 5, 0)
    };
    let rounds = [
        (Status::Ok, setup(0)),
        (Status::Ok, setup(1)),
        (Status::Ok, fig(50.0, 5, 0)), // not a setup round: neither way
        (Status::Ok, setup(1)),        // fires (two in a row)
        (Status::Ok, setup(0)),
        (Status::Ok, setup(0)), // clears
    ];
    assert_eq!(feed(&mut a, "s", &rounds), vec![(3, true), (5, false)]);
    let e = rule_of("name = 'x'\nmetric = 'flagged'\nabove = 1").unwrap_err();
    assert!(e.contains("flagged has no threshold"), "{e}");
    let e = rule_of("name = 'x'\nmetric = 'flagged'\nbaseline_rounds = 5").unwrap_err();
    assert!(e.contains("flagged has no baseline"), "{e}");
}

/// An mtu round's sizes: a tunnel whose MTU drops below the level fires; a round where
/// nothing was read that way (a plain echo's down) counts neither way.
#[test]
fn an_mtu_size_below_its_level_fires() {
    let r = rule_of("name = 'mtu'\nmetric = 'mtu_up_bytes'\nbelow = 1400\nrounds = 2").unwrap();
    assert!(!r.above);
    let mut a = Alerts::new(vec![r]);
    let size = |up: Option<f64>| {
        (
            Status::Ok,
            Figures {
                mtu_up_bytes: up,
                ..Figures::default()
            },
        )
    };
    let rounds = [
        size(Some(1472.0)),
        size(Some(1372.0)),
        size(None),
        size(Some(1372.0)), // fires: two rounds below 1400 (the one without counts neither way)
        size(Some(1472.0)),
        size(Some(1472.0)), // clears
    ];
    assert_eq!(feed(&mut a, "tunnel", &rounds), vec![(3, true), (5, false)]);
}

/// A marked probe round each way: `arrived` or `bleached` up, `arrived` down, with `ce` of 20
/// packets marked CE up.
fn marked(up: Fate, ce: u64) -> (Status, Figures) {
    let ef0 = Some(Tos { dscp: 46, ecn: 2 });
    let way = |dscp: Fate, ce: u64| Way {
        sent: ef0,
        arrived: Some(Tos {
            dscp: if dscp == Fate::Arrived { 46 } else { 0 },
            ecn: 2,
        }),
        dscp,
        ecn: Fate::Arrived,
        packets: 20,
        ce,
    };
    (
        Status::Ok,
        Figures {
            marking_up: Some(way(up, ce)),
            marking_down: Some(way(Fate::Arrived, 0)),
            ..fig(5.0, 20, 0)
        },
    )
}

/// `bleached` counts marked probe rounds whose marking did not arrive as sent: it fires after
/// its rounds in a row and clears after `clear_rounds` rounds that arrived; rounds without a
/// known marking (none sent, a far end that did not say) count neither way; it takes no
/// threshold nor baseline.
#[test]
fn bleached_rounds_fire_and_rounds_without_a_marking_count_neither_way() {
    let r = rule_of("name = 'dscp'\nmetric = 'bleached'\nrounds = 2\nclear_rounds = 3").unwrap();
    let mut a = Alerts::new(vec![r]);
    let unknown = |(s, mut f): (Status, Figures)| {
        for w in [&mut f.marking_up, &mut f.marking_down]
            .into_iter()
            .flatten()
        {
            (w.dscp, w.ecn) = (Fate::Unknown, Fate::Unknown);
        }
        (s, f)
    };
    let rounds = [
        marked(Fate::Arrived, 0),
        marked(Fate::Bleached, 0),
        (Status::Ok, fig(5.0, 20, 0)),     // no marking: neither way
        unknown(marked(Fate::Arrived, 0)), // a far end that did not say: neither way
        marked(Fate::Rewritten, 0),        // fires (two in a row)
        marked(Fate::Arrived, 0),
        marked(Fate::Mixed, 0), // a streak of the clear broken
        marked(Fate::Arrived, 0),
        marked(Fate::Arrived, 0),
        marked(Fate::Arrived, 0), // clears (three in a row)
    ];
    assert_eq!(feed(&mut a, "ef", &rounds), vec![(4, true), (9, false)]);
    for (bad, key) in [
        ("above = 1", "alert[0].above"),
        ("below = 1", "alert[0].above"),
        ("baseline_rounds = 5", "alert[0].baseline_rounds"),
    ] {
        let e = rule_of(&format!("name = 'x'\nmetric = 'bleached'\n{bad}")).unwrap_err();
        assert!(e.starts_with(key), "{bad}: {e}");
        assert!(e.contains("bleached has no"), "{bad}: {e}");
    }
}

/// `ce_pct` reads the larger direction's share of CE marks (%); a share outside 0–100 is
/// refused, naming its key.
#[test]
fn ce_marks_above_a_share_fire() {
    let r = rule_of("name = 'ce'\nmetric = 'ce_pct'\nabove = 10\nrounds = 2").unwrap();
    let mut a = Alerts::new(vec![r]);
    let rounds = [
        marked(Fate::Arrived, 1),      // 5 %
        marked(Fate::Arrived, 4),      // 20 %
        (Status::Ok, fig(5.0, 20, 0)), // no marking: neither way
        marked(Fate::Bleached, 6),     // 30 %: fires
        marked(Fate::Arrived, 0),
        marked(Fate::Arrived, 2), // 10 %: at the level, clears
    ];
    assert_eq!(feed(&mut a, "ecn", &rounds), vec![(3, true), (5, false)]);
    let e = rule_of("name = 'x'\nmetric = 'ce_pct'\nabove = 120").unwrap_err();
    assert!(e.starts_with("alert[0].above"), "{e}");
    assert!(e.contains("0 to 100"), "{e}");
    let e = rule_of("name = 'x'\nmetric = 'ce_pct'\nbelow = -1").unwrap_err();
    assert!(e.starts_with("alert[0].below"), "{e}");
}
