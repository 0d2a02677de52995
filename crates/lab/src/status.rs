//! What `npt lab status` reports of a running lab, as data: nodes, each link direction with its
//! configuration now and what it applied (counters and the delay-error and queue-wait
//! histograms, whole), services, and the history of changes (`npt lab set`). Two readings
//! subtract ([`LabStatus::since`]) into the figures of the time between them — one run of a
//! test or scenario — so a run's own drops and delay error are read exactly while the lab
//! stays up for others.

use npt_link::{Impairments, LinkStats, LinkSummary};
use npt_stats::{Histogram, SerializedHistogram};
use serde::{Deserialize, Serialize};

use crate::plan::Plan;
use crate::pump::Published;
use crate::transit::TransitStats;

/// One direction as `npt lab status` shows it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DirStatus {
    pub from: String,
    pub to: String,
    /// The impairments it applies now (after any `npt lab set`).
    pub config: Impairments,
    pub applied: LinkSummary,
    /// The bottleneck queue's waiting times so far (ns), whole: two readings subtract into
    /// the waits of the time between them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_wait: Option<SerializedHistogram>,
    /// The delay error (ns: when each packet really left minus when it was due) so far, whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_error: Option<SerializedHistogram>,
    pub read_errors: u64,
    pub write_errors: u64,
}

impl DirStatus {
    /// The direction's stats put back together (histograms missing from an older reading are
    /// empty).
    pub fn stats(&self) -> Result<LinkStats, String> {
        let hist = |h: &Option<SerializedHistogram>| {
            h.as_ref().map_or(Ok(Histogram::default()), |s| {
                Histogram::from_serialized(s).map_err(|e| e.to_string())
            })
        };
        Ok(LinkStats::from_parts(
            &self.applied,
            hist(&self.delay_error)?,
            hist(&self.queue_wait)?,
        ))
    }

    /// True when the box held this direction's packets past their due time by more than
    /// [`npt_link::LATE_RELEASE`]: figures read through it carry that delay.
    pub fn late(&self) -> bool {
        self.applied.released_late > 0
    }

    fn set_stats(&mut self, s: &LinkStats) {
        self.applied = s.summary();
        self.delay_error = Some(s.delay_error().to_serialized());
        self.queue_wait = Some(s.queue_wait().to_serialized());
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LinkStatus {
    pub a: String,
    pub b: String,
    pub subnet: String,
    pub a_addr: String,
    pub b_addr: String,
    pub a_if: String,
    pub b_if: String,
    pub directions: Vec<DirStatus>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServiceStatus {
    pub name: String,
    pub node: String,
    pub pid: u32,
    pub running: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NodeStatus {
    pub name: String,
    pub netns: String,
    pub addrs: Vec<String>,
    /// The UDP datagrams it forwarded and how long each spent inside it (absent from readings
    /// of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transit: Option<TransitStatus>,
}

/// A node's transit time ([`crate::transit`]): from the instant the lab delivered a UDP
/// datagram into the node to the instant it read the same payload back out of it, sent on
/// elsewhere. All pairs of links together, then each (link in, link out) pair.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TransitStatus {
    pub count: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Deliveries forgotten unmatched because newer ones filled the table
    /// ([`crate::transit::HELD`]): a node receiving that many datagrams a second it does not
    /// forward, or a forwarder that far behind.
    pub evicted: u64,
    /// Every pair's transit times (ns) so far, whole.
    pub histogram: SerializedHistogram,
    pub pairs: Vec<TransitPair>,
}

/// One way through a node: in by one link, out by another (or the same).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TransitPair {
    /// The links' positions in the file.
    pub in_link: usize,
    pub out_link: usize,
    /// The nodes at the other ends of those links: it came from `from` and went on to `to`.
    pub from: String,
    pub to: String,
    pub count: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Its transit times (ns) so far, whole.
    pub histogram: SerializedHistogram,
}

/// (count, p50, p99, max in ms) of a histogram in ns.
fn quantiles_ms(h: &Histogram) -> (u64, f64, f64, f64) {
    if h.is_empty() {
        return (0, 0.0, 0.0, 0.0);
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    (
        h.count(),
        ms(h.quantile_ns(0.5)),
        ms(h.quantile_ns(0.99)),
        ms(h.max_ns()),
    )
}

impl TransitStatus {
    /// `stats` of node `node` of `plan`, its pairs named by the nodes across their links.
    pub fn new(plan: &Plan, node: usize, stats: &TransitStats) -> TransitStatus {
        let across = |link: usize| {
            plan.links
                .get(link)
                .map(|l| if l.a == node { l.b } else { l.a })
                .and_then(|n| plan.nodes.get(n))
                .map_or_else(|| format!("link {link}"), |n| n.name.clone())
        };
        TransitStatus::named(stats, |i, o| (across(i), across(o)))
    }

    fn named(
        stats: &TransitStats,
        names: impl Fn(usize, usize) -> (String, String),
    ) -> TransitStatus {
        let total = stats.total();
        let (count, p50_ms, p99_ms, max_ms) = quantiles_ms(&total);
        let pairs = stats
            .pairs
            .iter()
            .map(|(i, o, h)| {
                let (from, to) = names(*i, *o);
                let (count, p50_ms, p99_ms, max_ms) = quantiles_ms(h);
                TransitPair {
                    in_link: *i,
                    out_link: *o,
                    from,
                    to,
                    count,
                    p50_ms,
                    p99_ms,
                    max_ms,
                    histogram: h.to_serialized(),
                }
            })
            .collect();
        TransitStatus {
            count,
            p50_ms,
            p99_ms,
            max_ms,
            evicted: stats.evicted,
            histogram: total.to_serialized(),
            pairs,
        }
    }

    /// The figures put back together from the pairs' histograms.
    pub fn stats(&self) -> Result<TransitStats, String> {
        let pairs = self
            .pairs
            .iter()
            .map(|p| {
                Histogram::from_serialized(&p.histogram)
                    .map(|h| (p.in_link, p.out_link, h))
                    .map_err(|e| format!("transit {} > {}: {e}", p.from, p.to))
            })
            .collect::<Result<_, _>>()?;
        Ok(TransitStats {
            pairs,
            evicted: self.evicted,
        })
    }

    /// What was added since `earlier`, a reading of the same node.
    fn since(&self, earlier: &TransitStatus) -> Result<TransitStatus, String> {
        let stats = self
            .stats()?
            .since(&earlier.stats()?)
            .map_err(|e| format!("transit: {e}"))?;
        Ok(TransitStatus::named(&stats, |i, o| {
            self.pairs
                .iter()
                .find(|p| (p.in_link, p.out_link) == (i, o))
                .map(|p| (p.from.clone(), p.to.clone()))
                .unwrap_or_default()
        }))
    }
}

/// One direction's change by `npt lab set`, and when it took effect: the instant the wire
/// thread applied it, on three clocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// The link's position in the file (from 0).
    pub link: usize,
    pub from: String,
    pub to: String,
    /// Wall clock, RFC 3339 UTC with microseconds.
    pub at: String,
    /// `CLOCK_MONOTONIC` in seconds: the clock every process on the host reads (Rust's
    /// `Instant`, `clock_gettime`), so a test or monitor can place the change on its own
    /// timeline without trusting the wall clock.
    pub at_monotonic_s: f64,
    /// Seconds since the lab came up.
    pub at_lab_s: f64,
    pub before: Impairments,
    pub after: Impairments,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LabStatus {
    pub lab: String,
    /// When the lab came up (RFC 3339 UTC), and on `CLOCK_MONOTONIC` (s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_monotonic_s: Option<f64>,
    /// When these figures were read, the same two ways.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_monotonic_s: Option<f64>,
    /// Set when the figures are the difference from an earlier reading: that reading's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    pub nodes: Vec<NodeStatus>,
    pub links: Vec<LinkStatus>,
    pub services: Vec<ServiceStatus>,
    /// Every `npt lab set` change, oldest first (the last [`MAX_CHANGES`]).
    #[serde(default)]
    pub changes: Vec<Change>,
}

/// The changes a lab remembers (the oldest are forgotten beyond this).
pub const MAX_CHANGES: usize = 10_000;

impl LabStatus {
    /// The figures of the time between `earlier` (a reading of this same lab) and this
    /// reading: counters and histograms subtracted, the changes made in between.
    pub fn since(&self, earlier: &LabStatus) -> Result<LabStatus, String> {
        if earlier.lab != self.lab || earlier.up_at != self.up_at {
            return Err(format!(
                "the earlier reading is of lab {} as it came up at {}, not this one (up at {})",
                earlier.lab,
                earlier.up_at.as_deref().unwrap_or("?"),
                self.up_at.as_deref().unwrap_or("?")
            ));
        }
        let mut out = self.clone();
        for (i, l) in out.links.iter_mut().enumerate() {
            for d in &mut l.directions {
                let before = earlier
                    .links
                    .get(i)
                    .and_then(|el| {
                        el.directions
                            .iter()
                            .find(|e| e.from == d.from && e.to == d.to)
                    })
                    .ok_or_else(|| format!("the earlier reading has no {} > {}", d.from, d.to))?;
                let diff = d
                    .stats()?
                    .since(&before.stats()?)
                    .map_err(|e| format!("{} > {}: {e}", d.from, d.to))?;
                d.set_stats(&diff);
                d.read_errors = d.read_errors.saturating_sub(before.read_errors);
                d.write_errors = d.write_errors.saturating_sub(before.write_errors);
            }
        }
        for n in &mut out.nodes {
            let (Some(now), Some(before)) = (
                &n.transit,
                earlier
                    .nodes
                    .iter()
                    .find(|e| e.name == n.name)
                    .and_then(|e| e.transit.as_ref()),
            ) else {
                continue;
            };
            n.transit = Some(now.since(before).map_err(|e| format!("{}: {e}", n.name))?);
        }
        let t0 = earlier.read_monotonic_s.unwrap_or(f64::NEG_INFINITY);
        out.changes.retain(|c| c.at_monotonic_s > t0);
        out.since = earlier.read_at.clone();
        Ok(out)
    }

    /// The directions that were late ([`DirStatus::late`]), as `from > to`.
    pub fn late_directions(&self) -> Vec<String> {
        self.links
            .iter()
            .flat_map(|l| &l.directions)
            .filter(|d| d.late())
            .map(|d| format!("{} > {}", d.from, d.to))
            .collect()
    }
}

/// The status of `plan`'s lab from the directions' published snapshots (link index, a→b?,
/// snapshot) and the nodes' transit figures (in the plan's node order); the times and changes
/// are the caller's to fill.
// NO-PANIC: `l.a` and `l.b` are node positions of the plan (`Plan::new` made them).
#[allow(clippy::indexing_slicing)]
pub fn status_of(
    plan: &Plan,
    snaps: &[(usize, bool, Published)],
    transits: &[TransitStats],
    services: Vec<ServiceStatus>,
) -> LabStatus {
    let nodes = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(n, node)| NodeStatus {
            name: node.name.clone(),
            netns: node.netns.clone(),
            addrs: plan
                .links
                .iter()
                .filter_map(|l| {
                    if l.a == n {
                        Some(format!("{}/{} ({})", l.a_addr, l.prefix, l.a_if))
                    } else if l.b == n {
                        Some(format!("{}/{} ({})", l.b_addr, l.prefix, l.b_if))
                    } else {
                        None
                    }
                })
                .collect(),
            transit: Some(TransitStatus::new(
                plan,
                n,
                transits.get(n).unwrap_or(&TransitStats::default()),
            )),
        })
        .collect();
    let links = plan
        .links
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let (an, bn) = (&plan.nodes[l.a].name, &plan.nodes[l.b].name);
            let directions = [true, false]
                .iter()
                .map(|&ab| {
                    let p = snaps
                        .iter()
                        .find(|(j, d, _)| *j == i && *d == ab)
                        .map(|(_, _, p)| p.clone())
                        .unwrap_or_default();
                    let (from, to, config) = if ab {
                        (an, bn, &l.spec.a_to_b)
                    } else {
                        (bn, an, &l.spec.b_to_a)
                    };
                    DirStatus {
                        from: from.clone(),
                        to: to.clone(),
                        config: config.clone(),
                        applied: p.stats.summary(),
                        queue_wait: Some(p.stats.queue_wait().to_serialized()),
                        delay_error: Some(p.stats.delay_error().to_serialized()),
                        read_errors: p.read_errors,
                        write_errors: p.write_errors,
                    }
                })
                .collect();
            LinkStatus {
                a: an.clone(),
                b: bn.clone(),
                subnet: format!("{}/{}", l.network, l.prefix),
                a_addr: l.a_addr.to_string(),
                b_addr: l.b_addr.to_string(),
                a_if: l.a_if.clone(),
                b_if: l.b_if.clone(),
                directions,
            }
        })
        .collect();
    LabStatus {
        lab: plan.lab.clone(),
        up_at: None,
        up_monotonic_s: None,
        read_at: None,
        read_monotonic_s: None,
        since: None,
        nodes,
        links,
        services,
        changes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;
    use npt_link::Link;
    use std::time::{Duration, Instant};

    fn plan() -> Plan {
        let t = Topology::parse(
            "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n\
             delay = \"10ms\"\n",
            "t",
        )
        .unwrap();
        Plan::new(&t).unwrap()
    }

    /// A snapshot after `n` packets, each released `late` after its due time.
    fn reading(link: &mut Link<u32>, t0: Instant, n: u32, late: Duration) -> LabStatus {
        for i in 0..n {
            link.push(t0, i, 100);
        }
        let at = t0 + Duration::from_secs(1);
        while let Some((_, due)) = link.pop_due(at) {
            link.record_release(due, due + late);
        }
        let p = Published {
            stats: link.stats().clone(),
            ..Published::default()
        };
        let mut s = status_of(&plan(), &[(0, true, p)], &[], Vec::new());
        s.read_monotonic_s = Some(f64::from(n));
        // Through JSON, as `npt lab status --json` hands it over.
        serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap()
    }

    #[test]
    fn two_readings_subtract_into_one_run_and_flag_its_late_releases() {
        let plan = plan();
        let mut link = Link::new(&plan.links[0].spec.a_to_b, 1);
        let t0 = Instant::now();
        let first = reading(&mut link, t0, 10, Duration::from_micros(50));
        assert!(first.late_directions().is_empty());
        let second = reading(&mut link, t0, 5, Duration::from_millis(3));
        let run = second.since(&first).unwrap();
        let d = &run.links[0].directions[0];
        assert_eq!((d.applied.packets_in, d.applied.released_late), (5, 5));
        assert!(
            (d.applied.delay_error_p50_us - 3000.0).abs() < 5.0,
            "{:?}",
            d.applied
        );
        assert_eq!(run.late_directions(), ["a > b"]);
        assert!(first.since(&second).is_err(), "not an earlier reading");
    }

    /// A node's transit figures: named by the nodes across its links, through JSON and back,
    /// subtracted by `since` like a direction's, and shown by `npt lab status`.
    #[test]
    fn transit_readings_subtract_per_pair_and_show() {
        let plan = plan();
        let reading = |values_us: &[u64], evicted: u64| {
            let mut h = Histogram::default();
            for v in values_us {
                h.record(v * 1000);
            }
            let t = TransitStats {
                pairs: vec![(0, 0, h)],
                evicted,
            };
            let s = status_of(&plan, &[], &[TransitStats::default(), t], Vec::new());
            serde_json::from_value::<LabStatus>(serde_json::to_value(&s).unwrap()).unwrap()
        };
        let first = reading(&[100, 200], 1);
        let second = reading(&[100, 200, 900, 900, 900], 4);
        let t = second.nodes[1].transit.as_ref().unwrap();
        assert_eq!((t.count, t.pairs[0].count), (5, 5));
        assert_eq!(
            (t.pairs[0].from.as_str(), t.pairs[0].to.as_str()),
            ("a", "a")
        );
        let run = second.since(&first).unwrap();
        let t = run.nodes[1].transit.as_ref().unwrap();
        assert_eq!((t.count, t.evicted), (3, 3));
        assert!((t.p50_ms - 0.9).abs() < 0.001, "{t:?}");
        assert!((t.pairs[0].p50_ms - 0.9).abs() < 0.001, "{t:?}");
        assert_eq!(run.nodes[0].transit.as_ref().unwrap().count, 0);
        let mut text = Vec::new();
        crate::show::write_status(&mut text, &run).unwrap();
        let text = String::from_utf8(text).unwrap();
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("b   "))
            .unwrap();
        assert!(line.ends_with("3  0.900/0.900/0.900"), "{text}");
        assert!(text.contains("      a > a "), "{text}");
        assert!(text.contains("(3 deliveries forgotten unmatched"), "{text}");
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("a   ")),
            "a forwarded nothing: {text}"
        );
        assert!(second.since(&reading(&[300], 0)).is_err(), "not earlier");
    }
}
