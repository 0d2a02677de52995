//! One direction's impairments as a lab topology file writes them, and their checks.
//!
//! In TOML (every field optional; an empty table is a perfect wire):
//! ```toml
//! delay = "50ms"        # propagation delay
//! jitter = "2ms"        # uniform in ±jitter around delay; never more than delay
//! loss = "1%"           # random, or a Gilbert–Elliott burst model:
//! # loss = { model = "gilbert-elliott", p = "1%", r = "30%", bad = "100%", good = "0%" }
//! duplicate = "0.1%"
//! reorder = "1%"        # these packets skip the delay and overtake the ones before them
//! rate = "10mbit"       # bottleneck; also kbit, gbit, bps, or a bare number of bit/s
//! queue = 1000          # bottleneck queue in packets (default 1000)
//! ecn = "2ms"           # ECN marking: an ECT packet that would wait at least this long in
//!                       # the bottleneck queue is marked CE instead (needs a rate)
//! ```
//! Reading a table parses each string and then runs [`Impairments::validate`], so a value that
//! came from a file is always usable; both steps fail with a [`LinkError`] naming the field.

use std::fmt;
use std::time::Duration;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::human::{
    format_duration, parse_duration, parse_percent, parse_rate, LinkError, Percent, Rate,
};

/// Bottleneck queue length (packets) when `queue` is not written: the Linux default
/// `txqueuelen` and pfifo limit.
pub const DEFAULT_QUEUE: usize = 1000;

/// The longest delay (and so jitter) accepted: one hour, the top of npt's histograms.
pub const MAX_DELAY: Duration = Duration::from_secs(3600);

/// One direction's impairments. See the crate docs for what each does and in which order.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(try_from = "RawImpairments", into = "RawImpairments")]
pub struct Impairments {
    /// Propagation delay added to every packet after the bottleneck.
    pub delay: Duration,
    /// Half-width of the uniform jitter around `delay`; at most `delay`.
    pub jitter: Duration,
    pub loss: Loss,
    /// Probability that a packet is delivered twice.
    pub duplicate: Percent,
    /// Probability that a packet skips the propagation delay and overtakes earlier ones.
    pub reorder: Percent,
    /// Bottleneck rate; `None` is an unlimited link.
    pub rate: Option<Rate>,
    /// Bottleneck queue in packets; `None` is [`DEFAULT_QUEUE`]. Only used with a `rate`.
    pub queue: Option<usize>,
    /// ECN marking threshold: an ECN-capable packet (ECT(0) or ECT(1)) that would wait at
    /// least this long in the bottleneck queue is marked CE (step marking, as DCTCP's K or a
    /// CoDel target, without the drop); `None` marks nothing. Only used with a `rate`.
    pub ecn: Option<Duration>,
}

/// How packets are lost, before anything else happens to them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Loss {
    #[default]
    None,
    /// Each packet lost independently with probability `p`.
    Random { p: Percent },
    /// Two-state Markov chain (netem's `loss gemodel p r 1-h 1-k`): in the good state a packet
    /// is lost with probability `loss_good`, in the bad state with `loss_bad`; after each packet
    /// the chain moves good→bad with probability `p` and bad→good with `r`. Loss bursts (with
    /// `loss_bad` = 100 %) last 1/r packets on average; the long-run loss is
    /// (r·loss_good + p·loss_bad)/(p + r).
    GilbertElliott {
        p: Percent,
        r: Percent,
        loss_good: Percent,
        loss_bad: Percent,
    },
}

impl Impairments {
    /// Checks ranges, naming the field: probabilities in 0–100 %, jitter ≤ delay ≤ 1 h,
    /// rate > 0, queue ≥ 1. Durations and rates that cannot be written negative here were
    /// already refused when the text was parsed.
    pub fn validate(&self) -> Result<(), LinkError> {
        if self.delay > MAX_DELAY {
            return Err(LinkError::range(
                "delay",
                format!("{} is more than 1h", format_duration(self.delay)),
            ));
        }
        if self.jitter > self.delay {
            return Err(LinkError::range(
                "jitter",
                format!(
                    "{} is more than delay ({}): jitter is ±around the delay and a hold cannot \
                     be negative",
                    format_duration(self.jitter),
                    format_duration(self.delay)
                ),
            ));
        }
        match self.loss {
            Loss::None => {}
            Loss::Random { p } => p.check("loss")?,
            Loss::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                p.check("loss.p")?;
                r.check("loss.r")?;
                loss_good.check("loss.good")?;
                loss_bad.check("loss.bad")?;
            }
        }
        self.duplicate.check("duplicate")?;
        self.reorder.check("reorder")?;
        if self.rate == Some(Rate::bits_per_sec(0)) {
            return Err(LinkError::range(
                "rate",
                "must be above 0 bit/s; leave it out for an unlimited link",
            ));
        }
        if self.queue == Some(0) {
            return Err(LinkError::range("queue", "must hold at least 1 packet"));
        }
        if self.ecn.is_some() && self.rate.is_none() {
            return Err(LinkError::range(
                "ecn",
                "marks by the bottleneck queue's wait: give the link a rate too",
            ));
        }
        if self.ecn.is_some_and(|t| t > MAX_DELAY) {
            return Err(LinkError::range("ecn", "is more than 1h"));
        }
        Ok(())
    }

    /// True when a packet passes untouched and at once.
    pub fn is_passthrough(&self) -> bool {
        self.delay.is_zero()
            && self.jitter.is_zero()
            && matches!(self.loss, Loss::None | Loss::Random { p: Percent::ZERO })
            && self.duplicate.is_zero()
            && self.reorder.is_zero()
            && self.rate.is_none()
    }

    /// The bottleneck queue length in packets.
    pub fn queue_len(&self) -> usize {
        self.queue.unwrap_or(DEFAULT_QUEUE)
    }
}

/// The table as written. Each string is checked as it is read, so a parse error points at
/// the value in the file; `TryFrom` then converts (the same parse, now infallible) and runs
/// [`Impairments::validate`], whose errors point at the table.
#[derive(Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawImpairments {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "checked_delay"
    )]
    pub(crate) delay: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "checked_jitter"
    )]
    pub(crate) jitter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) loss: Option<RawLoss>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "checked_duplicate"
    )]
    pub(crate) duplicate: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "checked_reorder"
    )]
    pub(crate) reorder: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "checked_rate"
    )]
    pub(crate) rate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) queue: Option<usize>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "checked_ecn"
    )]
    pub(crate) ecn: Option<String>,
}

/// `loss = "1%"` or `loss = { model = "…", … }`.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum RawLoss {
    Percent(String),
    Model(RawLossModel),
}

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLossModel {
    pub(crate) model: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "checked_loss_p"
    )]
    pub(crate) p: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "checked_loss_r"
    )]
    pub(crate) r: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "checked_loss_bad"
    )]
    pub(crate) bad: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "checked_loss_good"
    )]
    pub(crate) good: Option<String>,
}

// Hand-written instead of `#[serde(untagged)]`: untagged deserialization reports only "did not
// match any variant", losing which key inside the model table was wrong.
impl<'de> Deserialize<'de> for RawLoss {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawLoss;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a percentage such as \"1%\" or a table with a `model` key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawLoss, E> {
                parse_percent("loss", v).map_err(E::custom)?;
                Ok(RawLoss::Percent(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawLoss, A::Error> {
                RawLossModel::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RawLoss::Model)
            }
        }
        d.deserialize_any(V)
    }
}

/// A field read as a string and checked with its parser, so the error carries the value's
/// position in the file.
macro_rules! checked {
    ($name:ident, $field:literal, $parse:ident) => {
        fn $name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
            let text = String::deserialize(d)?;
            $parse($field, &text).map_err(de::Error::custom)?;
            Ok(Some(text))
        }
    };
}
checked!(checked_delay, "delay", parse_duration);
checked!(checked_jitter, "jitter", parse_duration);
checked!(checked_ecn, "ecn", parse_duration);
checked!(checked_duplicate, "duplicate", parse_percent);
checked!(checked_reorder, "reorder", parse_percent);
checked!(checked_loss_p, "loss.p", parse_percent);
checked!(checked_loss_r, "loss.r", parse_percent);
checked!(checked_loss_bad, "loss.bad", parse_percent);
checked!(checked_loss_good, "loss.good", parse_percent);

fn checked_rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let text = string_or_number(d)?;
    parse_rate("rate", &text).map_err(de::Error::custom)?;
    Ok(Some(text))
}

/// `rate = "10mbit"` or `rate = 10000000`: numbers become their decimal text.
fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a bit rate such as \"10mbit\" or a number of bit/s")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(v.to_string())
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(v.to_string())
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(v.to_string())
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(v.to_string())
        }
    }
    d.deserialize_any(V)
}

impl TryFrom<RawImpairments> for Impairments {
    type Error = LinkError;

    fn try_from(raw: RawImpairments) -> Result<Impairments, LinkError> {
        let dur = |field, v: &Option<String>| {
            v.as_deref()
                .map_or(Ok(Duration::ZERO), |s| parse_duration(field, s))
        };
        let pct = |field, v: &Option<String>| {
            v.as_deref()
                .map_or(Ok(Percent::ZERO), |s| parse_percent(field, s))
        };
        let loss = match raw.loss {
            None => Loss::None,
            Some(RawLoss::Percent(s)) => Loss::Random {
                p: parse_percent("loss", &s)?,
            },
            Some(RawLoss::Model(m)) => loss_model(m)?,
        };
        let imp = Impairments {
            delay: dur("delay", &raw.delay)?,
            jitter: dur("jitter", &raw.jitter)?,
            loss,
            duplicate: pct("duplicate", &raw.duplicate)?,
            reorder: pct("reorder", &raw.reorder)?,
            rate: raw
                .rate
                .as_deref()
                .map(|s| parse_rate("rate", s))
                .transpose()?,
            queue: raw.queue,
            ecn: raw
                .ecn
                .as_deref()
                .map(|s| parse_duration("ecn", s))
                .transpose()?,
        };
        imp.validate()?;
        Ok(imp)
    }
}

fn loss_model(m: RawLossModel) -> Result<Loss, LinkError> {
    let need = |field: &str, v: &Option<String>| match v {
        Some(s) => parse_percent(field, s),
        None => Err(LinkError::range(
            field,
            format!("required by model {:?}", m.model),
        )),
    };
    let or = |field: &str, v: &Option<String>, default: Percent| {
        v.as_deref()
            .map_or(Ok(default), |s| parse_percent(field, s))
    };
    match m.model.as_str() {
        "random" => {
            for (name, v) in [
                ("loss.r", &m.r),
                ("loss.bad", &m.bad),
                ("loss.good", &m.good),
            ] {
                if v.is_some() {
                    return Err(LinkError::range(
                        name,
                        "only the gilbert-elliott model has it; random loss takes p alone",
                    ));
                }
            }
            Ok(Loss::Random {
                p: need("loss.p", &m.p)?,
            })
        }
        "gilbert-elliott" => Ok(Loss::GilbertElliott {
            p: need("loss.p", &m.p)?,
            r: need("loss.r", &m.r)?,
            loss_good: or("loss.good", &m.good, Percent::ZERO)?,
            loss_bad: or("loss.bad", &m.bad, Percent::new(100.0))?,
        }),
        other => Err(LinkError::Unparsable {
            field: "loss.model".to_string(),
            value: other.to_string(),
            expected: "\"random\" or \"gilbert-elliott\"",
        }),
    }
}

impl From<Impairments> for RawImpairments {
    fn from(i: Impairments) -> RawImpairments {
        let dur = |d: Duration| (!d.is_zero()).then(|| format_duration(d));
        let pct = |p: Percent| (!p.is_zero()).then(|| p.to_string());
        RawImpairments {
            delay: dur(i.delay),
            jitter: dur(i.jitter),
            loss: match i.loss {
                Loss::None => None,
                Loss::Random { p } => Some(RawLoss::Percent(p.to_string())),
                Loss::GilbertElliott {
                    p,
                    r,
                    loss_good,
                    loss_bad,
                } => Some(RawLoss::Model(RawLossModel {
                    model: "gilbert-elliott".to_string(),
                    p: Some(p.to_string()),
                    r: Some(r.to_string()),
                    bad: Some(loss_bad.to_string()),
                    good: Some(loss_good.to_string()),
                })),
            },
            duplicate: pct(i.duplicate),
            reorder: pct(i.reorder),
            rate: i.rate.map(|r| r.to_string()),
            queue: i.queue,
            ecn: i.ecn.map(format_duration),
        }
    }
}
