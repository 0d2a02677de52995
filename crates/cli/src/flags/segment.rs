//! `--segment i/n`, `--start-at` and `--run-id`: one load split over several agents so the
//! parts add up to the whole exactly, begin together, and can be recognised as parts of one
//! run when they are merged.
//!
//! Counts are split as integers: part `i` of `n` gets `total / n` plus one of the remainder if
//! `i < total % n`, so the parts sum to `total` and differ by at most one; a total smaller than
//! `n` would leave a part with nothing and is refused. Rates (pps, requests/s, arrivals/s) are
//! divided evenly. Indexes are 0-based, as Kubernetes' `JOB_COMPLETION_INDEX` is.
//!
//! The run id and config hash go into each part's result: the hash is taken over the workload
//! *before* splitting (every agent given the same flags computes the same one), the run id is
//! `--run-id` or derived from that hash and `--start-at`.

use std::time::{Duration, SystemTime};

use clap::Args;
use serde::Serialize;

use npt_probe::{PacingSpec, ProbeConfig};

use crate::usage;

#[derive(Args, Debug, Default, Clone)]
pub struct SegmentArgs {
    /// Run part I of N of the load (0-based, e.g. 3/8): users, rates and counts are split so
    /// the N parts add up to the whole; `npt merge` joins the parts' results.
    #[arg(long, value_name = "I/N")]
    pub segment: Option<String>,
    /// Wait until this wall-clock time (RFC 3339, e.g. 2026-12-01T10:00:00Z) before starting,
    /// so the parts of a segmented run begin together.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Name shared by the parts of one run [default: derived from the workload and --start-at].
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
}

/// Part `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub index: u32,
    pub count: u32,
}

/// What goes into a part's result so `merge` can check the parts belong together.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SegmentInfo {
    pub index: u32,
    pub count: u32,
    pub run_id: String,
    pub config_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
}

impl Segment {
    pub fn parse(s: &str) -> anyhow::Result<Segment> {
        let bad = || usage!("--segment {s:?}: expected I/N with 0 <= I < N, e.g. 3/8");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Segment { index, count })
    }

    /// This part's share of an integer total; refuses a total that leaves a part empty.
    pub fn part(&self, total: u64, flag: &str) -> anyhow::Result<u64> {
        let n = u64::from(self.count);
        if total < n {
            return Err(usage!(
                "{flag} {total} cannot be split into {n} segments: every part needs at least 1"
            ));
        }
        Ok(total / n + u64::from(u64::from(self.index) < total % n))
    }

    /// This part's share of a rate.
    pub fn rate(&self, total: f64) -> f64 {
        total / f64::from(self.count)
    }

    /// Splits a probe's load: packet rate, packet count and relay window. Clients, duration
    /// and sizes stay as given (each agent runs its own clients for the whole time).
    pub fn apply_probe(&self, cfg: &mut ProbeConfig) -> anyhow::Result<()> {
        cfg.pacing = match cfg.pacing {
            PacingSpec::Rate { pps } => PacingSpec::Rate {
                pps: self.rate(pps),
            },
            PacingSpec::Relay {
                warmup,
                warmup_interval,
            } => PacingSpec::Relay {
                warmup: self.part(warmup, "--warmup")?,
                warmup_interval,
            },
            // Closed loop at a fixed interval: each agent is one more such user.
            p @ PacingSpec::Interval { .. } => p,
        };
        if let Some(c) = cfg.count {
            cfg.count = Some(self.part(c, "--count")?);
        }
        Ok(())
    }

    /// Splits simulated users: a fixed population or an arrival rate. Each part gets its own
    /// seed, so the parts' users do not act in lockstep.
    // NO-PANIC: a part is at most the whole, which was a u32.
    #[allow(clippy::cast_possible_truncation)]
    pub fn apply_run(&self, cfg: &mut npt_users::RunConfig) -> anyhow::Result<()> {
        cfg.load = match cfg.load {
            npt_users::Load::Users { users, ramp_up } => npt_users::Load::Users {
                users: self.part(u64::from(users), "--users")? as u32,
                ramp_up,
            },
            npt_users::Load::Arrivals {
                per_sec,
                max_active,
            } => npt_users::Load::Arrivals {
                per_sec: self.rate(per_sec),
                max_active: self.part(u64::from(max_active), "--max-active")? as u32,
            },
        };
        cfg.seed ^= u64::from(self.index).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Ok(())
    }

    /// Splits a gateway benchmark: connections and, in open loop, the request rate.
    // NO-PANIC: a part is at most the whole, which was a u32.
    #[allow(clippy::cast_possible_truncation)]
    pub fn apply_http(&self, cfg: &mut npt_http::Config) -> anyhow::Result<()> {
        cfg.connections = self.part(u64::from(cfg.connections), "-c/--connections")? as u32;
        cfg.rate = cfg.rate.map(|r| self.rate(r));
        for l in &mut cfg.host_loads {
            *l = match *l {
                npt_http::client::HostLoad::Connections(c) => {
                    npt_http::client::HostLoad::Connections(
                        self.part(u64::from(c), "--host NAME=N")? as u32,
                    )
                }
                npt_http::client::HostLoad::Rate(r) => {
                    npt_http::client::HostLoad::Rate(self.rate(r))
                }
            };
        }
        Ok(())
    }

    /// Splits a bulk: TCP/QUIC streams each way, or a UDP flow's rate (one flow per part).
    // NO-PANIC: a part is at most the whole, which was a u32.
    #[allow(clippy::cast_possible_truncation)]
    pub fn apply_bulk(&self, cfg: &mut npt_bulk::Config) -> anyhow::Result<()> {
        match &mut cfg.udp {
            Some(u) => u.rate_bps = self.rate(u.rate_bps),
            None => cfg.streams = self.part(u64::from(cfg.streams), "--streams")? as u32,
        }
        Ok(())
    }
}

/// Adds the part's identity to a result's `config` object.
pub fn label(config: &mut serde_json::Value, info: &SegmentInfo) -> anyhow::Result<()> {
    if let Some(obj) = config.as_object_mut() {
        obj.insert("segment".into(), serde_json::to_value(info)?);
    }
    Ok(())
}

impl SegmentArgs {
    /// The segment, if any; `workload` is the effective workload config before splitting.
    pub fn resolve(
        &self,
        workload: &serde_json::Value,
    ) -> anyhow::Result<Option<(Segment, SegmentInfo)>> {
        if let Some(t) = &self.start_at {
            parse_start(t)?;
        }
        let Some(s) = &self.segment else {
            if self.run_id.is_some() {
                return Err(usage!("--run-id names the parts of a --segment run"));
            }
            return Ok(None);
        };
        let seg = Segment::parse(s)?;
        let hash = config_hash(workload);
        let run_id = match &self.run_id {
            Some(id) if id.is_empty() => return Err(usage!("--run-id must not be empty")),
            Some(id) => id.clone(),
            None => format!(
                "{hash}-{}",
                self.start_at.as_deref().map_or("now".into(), short_hash)
            ),
        };
        Ok(Some((
            seg,
            SegmentInfo {
                index: seg.index,
                count: seg.count,
                run_id,
                config_hash: hash,
                start_at: self.start_at.clone(),
            },
        )))
    }

    /// Sleeps until `--start-at` (bounded: at most a day ahead; a time already past starts at
    /// once with a notice). Returns the notice, if any.
    pub fn wait_for_start(&self) -> anyhow::Result<Option<String>> {
        let Some(t) = &self.start_at else {
            return Ok(None);
        };
        let at = parse_start(t)?;
        match at.duration_since(SystemTime::now()) {
            Ok(wait) => {
                std::thread::sleep(wait);
                Ok(None)
            }
            Err(late) => Ok(Some(format!(
                "--start-at {t} was {:.1} s ago: starting now",
                late.duration().as_secs_f64()
            ))),
        }
    }
}

fn parse_start(t: &str) -> anyhow::Result<SystemTime> {
    let at = humantime::parse_rfc3339_weak(t)
        .map_err(|e| usage!("--start-at {t:?}: {e} (expected e.g. 2026-12-01T10:00:00Z)"))?;
    if at
        .duration_since(SystemTime::now())
        .is_ok_and(|d| d > Duration::from_secs(24 * 3600))
    {
        return Err(usage!("--start-at {t}: more than a day ahead"));
    }
    Ok(at)
}

/// Keys that differ between agents of one run by design (each part has its own random seed)
/// and so stay out of the config hash.
const PER_AGENT_KEYS: [&str; 1] = ["seed"];

/// A stable hash of the workload: FNV-1a over its canonical JSON (serde_json sorts object
/// keys), so agents given the same flags agree whatever their platform.
fn config_hash(workload: &serde_json::Value) -> String {
    let mut w = workload.clone();
    if let Some(obj) = w.as_object_mut() {
        for k in PER_AGENT_KEYS {
            obj.remove(k);
        }
    }
    short_hash(&w.to_string())
}

fn short_hash(s: &str) -> String {
    // FNV-1a 64: stable across processes and Rust versions (std's hasher is not).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_add_up_exactly_and_differ_by_at_most_one() {
        for (total, n) in [(10u64, 4u32), (1_000_003, 7), (8, 8), (5, 1)] {
            let parts: Vec<u64> = (0..n)
                .map(|i| {
                    Segment { index: i, count: n }
                        .part(total, "--count")
                        .unwrap()
                })
                .collect();
            assert_eq!(parts.iter().sum::<u64>(), total, "{total}/{n}");
            let (lo, hi) = (parts.iter().min().unwrap(), parts.iter().max().unwrap());
            assert!(hi - lo <= 1 && *lo > 0, "{parts:?}");
        }
        let e = Segment { index: 0, count: 4 }
            .part(3, "--users")
            .unwrap_err();
        assert!(
            e.to_string().contains("--users 3 cannot be split into 4"),
            "{e}"
        );
        let r: f64 = (0..3)
            .map(|i| Segment { index: i, count: 3 }.rate(1000.0))
            .sum();
        assert!((r - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn flags_validate() {
        assert_eq!(
            Segment::parse("3/8").unwrap(),
            Segment { index: 3, count: 8 }
        );
        for bad in ["8/8", "1", "a/2", "0/0", "-1/2"] {
            assert!(Segment::parse(bad).is_err(), "{bad}");
        }
        let w = serde_json::json!({"users": 100, "mix": "web=100"});
        let a = SegmentArgs {
            segment: Some("1/4".into()),
            start_at: Some("2020-01-01T00:00:00Z".into()),
            run_id: None,
        };
        let (seg, info) = a.resolve(&w).unwrap().unwrap();
        assert_eq!((seg.index, info.count), (1, 4));
        // Every agent with the same flags derives the same id and hash.
        let b = SegmentArgs {
            segment: Some("3/4".into()),
            ..a.clone()
        };
        let (_, info_b) = b.resolve(&w).unwrap().unwrap();
        assert_eq!(
            (info.run_id, info.config_hash),
            (info_b.run_id, info_b.config_hash)
        );
        let other = serde_json::json!({"users": 101, "mix": "web=100"});
        assert_ne!(config_hash(&w), config_hash(&other));
        let seeded = serde_json::json!({"users": 100, "mix": "web=100", "seed": 7});
        assert_eq!(
            config_hash(&w),
            config_hash(&seeded),
            "the seed is per agent"
        );
        let bad = SegmentArgs {
            start_at: Some("tomorrow".into()),
            ..SegmentArgs::default()
        };
        assert!(bad.resolve(&w).is_err());
        let orphan = SegmentArgs {
            run_id: Some("x".into()),
            ..SegmentArgs::default()
        };
        assert!(orphan.resolve(&w).is_err());
    }
}
