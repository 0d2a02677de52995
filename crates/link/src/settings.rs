//! One direction's impairments changed by `KEY=VALUE` settings, as `npt lab set` takes them on
//! the command line (`delay=80ms loss=2%`). The settings are written into the table the
//! topology file would hold, and that table goes through the file's own conversion and checks
//! ([`Impairments`]'s `TryFrom`, then [`Impairments::validate`]), so a value is accepted or
//! refused exactly as it would be in the file, and every error names its key.
//!
//! Keys are the file's: `delay`, `jitter`, `loss`, `duplicate`, `reorder`, `rate`, `queue`,
//! `ecn`, and
//! `loss.model`, `loss.p`, `loss.r`, `loss.bad`, `loss.good` for a loss model. `KEY=none`
//! removes a setting (no rate: an unlimited link; no queue: [`crate::DEFAULT_QUEUE`]). Giving
//! `loss.model` starts the model afresh (its other keys from these settings, or their
//! defaults); the other `loss.*` keys change the model the direction already has.

use crate::config::{RawImpairments, RawLoss, RawLossModel};
use crate::{Impairments, LinkError};

/// The keys of an impairment table, as a topology file writes them.
pub const IMPAIRMENT_KEYS: &[&str] = &[
    "delay",
    "jitter",
    "loss",
    "duplicate",
    "reorder",
    "rate",
    "queue",
    "ecn",
];

/// The keys of a loss model (`loss = { model = …, p = … }`), as a setting names them.
pub const LOSS_MODEL_KEYS: &[&str] = &["loss.model", "loss.p", "loss.r", "loss.bad", "loss.good"];

/// Whether a setting may name `key`.
pub fn is_setting_key(key: &str) -> bool {
    IMPAIRMENT_KEYS.contains(&key) || LOSS_MODEL_KEYS.contains(&key)
}

/// Every key a setting may name, for messages.
pub fn setting_keys() -> String {
    let all: Vec<&str> = IMPAIRMENT_KEYS
        .iter()
        .chain(LOSS_MODEL_KEYS)
        .copied()
        .collect();
    all.join(", ")
}

/// The value that removes a setting.
pub const NONE: &str = "none";

impl Impairments {
    /// These impairments with `settings` (key, value) applied; see the module doc. Nothing
    /// is applied unless every setting is good and the result passes the file's checks.
    pub fn with_settings<'a>(
        &self,
        settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Impairments, LinkError> {
        let settings: Vec<(&str, &str)> = settings.into_iter().collect();
        let mut raw = RawImpairments::from(self.clone());
        // `loss.model` first: it starts a fresh model that the other loss keys then fill.
        if let Some((_, model)) = settings.iter().rev().find(|(k, _)| *k == "loss.model") {
            raw.loss = (model.trim() != NONE).then(|| {
                RawLoss::Model(RawLossModel {
                    model: model.trim().to_string(),
                    p: None,
                    r: None,
                    bad: None,
                    good: None,
                })
            });
        }
        for &(key, value) in &settings {
            let v = value.trim();
            let text = (v != NONE).then(|| v.to_string());
            match key {
                "delay" => raw.delay = text,
                "jitter" => raw.jitter = text,
                "duplicate" => raw.duplicate = text,
                "reorder" => raw.reorder = text,
                "rate" => raw.rate = text,
                "ecn" => raw.ecn = text,
                "loss" => raw.loss = text.map(RawLoss::Percent),
                "queue" => raw.queue = text.map(|t| parse_queue(&t)).transpose()?,
                "loss.model" => {}
                "loss.p" | "loss.r" | "loss.bad" | "loss.good" => {
                    let Some(RawLoss::Model(m)) = raw.loss.as_mut() else {
                        return Err(LinkError::range(
                            "loss.model",
                            format!(
                                "{key} belongs to a loss model and this direction has none: \
                                 give loss.model=gilbert-elliott (or random) too"
                            ),
                        ));
                    };
                    let slot = match key {
                        "loss.p" => &mut m.p,
                        "loss.r" => &mut m.r,
                        "loss.bad" => &mut m.bad,
                        _ => &mut m.good,
                    };
                    *slot = text;
                }
                other => {
                    return Err(LinkError::range(
                        if other.is_empty() { "\"\"" } else { other },
                        format!("unknown key (expected one of: {})", setting_keys()),
                    ))
                }
            }
        }
        Impairments::try_from(raw)
    }
}

fn parse_queue(text: &str) -> Result<usize, LinkError> {
    text.parse().map_err(|_| LinkError::Unparsable {
        field: "queue".to_string(),
        value: text.to_string(),
        expected: "a number of packets such as 100",
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{Loss, Percent, Rate};

    fn imp(table: &str) -> Impairments {
        toml::from_str(table).unwrap()
    }

    #[test]
    fn settings_change_only_their_keys() {
        let base = imp("delay = \"50ms\"\nloss = \"1%\"\nrate = \"10mbit\"\nqueue = 100");
        let got = base
            .with_settings([("delay", "80ms"), ("loss", "2%")])
            .unwrap();
        assert_eq!(got.delay, Duration::from_millis(80));
        assert_eq!(
            got.loss,
            Loss::Random {
                p: Percent::new(2.0)
            }
        );
        assert_eq!(
            (got.rate, got.queue),
            (Some(Rate::bits_per_sec(10_000_000)), Some(100))
        );
        let got = got
            .with_settings([("rate", "none"), ("queue", "none")])
            .unwrap();
        assert_eq!((got.rate, got.queue), (None, None));
        assert_eq!(base.with_settings([]).unwrap(), base);
    }

    #[test]
    fn a_loss_model_is_started_with_its_model_and_changed_without() {
        let base = imp("loss = \"1%\"");
        let ge = base
            .with_settings([
                ("loss.p", "1%"),
                ("loss.model", "gilbert-elliott"),
                ("loss.r", "30%"),
            ])
            .unwrap();
        assert_eq!(
            ge.loss,
            Loss::GilbertElliott {
                p: Percent::new(1.0),
                r: Percent::new(30.0),
                loss_good: Percent::ZERO,
                loss_bad: Percent::new(100.0),
            }
        );
        let ge2 = ge.with_settings([("loss.r", "50%")]).unwrap();
        assert!(matches!(ge2.loss, Loss::GilbertElliott { r, .. } if r == Percent::new(50.0)));
        let e = base.with_settings([("loss.r", "50%")]).unwrap_err();
        assert_eq!(e.field(), "loss.model", "{e}");
        // Back to random loss, and no loss at all.
        let back = ge.with_settings([("loss", "0.5%")]).unwrap();
        assert_eq!(
            back.loss,
            Loss::Random {
                p: Percent::new(0.5)
            }
        );
        assert_eq!(
            ge.with_settings([("loss", "none")]).unwrap().loss,
            Loss::None
        );
    }

    #[test]
    fn bad_settings_are_refused_naming_the_key() {
        let base = imp("delay = \"10ms\"");
        for (key, value, field) in [
            ("delay", "-5ms", "delay"),
            ("delay", "soon", "delay"),
            ("loss", "101%", "loss"),
            ("rate", "fast", "rate"),
            ("rate", "0", "rate"),
            ("queue", "many", "queue"),
            ("queue", "0", "queue"),
            ("jitter", "20ms", "jitter"),
            ("colour", "red", "colour"),
            ("loss.model", "sometimes", "loss.model"),
            ("loss.model", "gilbert-elliott", "loss.p"),
        ] {
            let e = base.with_settings([(key, value)]).unwrap_err();
            assert_eq!(e.field(), field, "{key}={value}: {e}");
        }
    }
}
