//! `[limits]`: how many rounds of each kind may run at once, and the backlog kept in memory
//! while the store cannot be written. One value per kind a monitor runs, keyed by the kind's
//! name (`ping = 256`); the defaults are one table ([`DEFAULTS`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserializer, Error as _, MapAccess, Visitor};
use serde::Deserialize;

use crate::key::{invalid, ConfigError};
use crate::kinds::{Kind, MONITORED};

/// Rounds of each kind that may run at once, unless the file says otherwise: many light
/// pings, fewer probes and traces, a few http rounds, one bulk (it fills the path), a few
/// lifetime searches (each holds dozens of sockets for minutes), mtu searches as many as
/// probes (a few dozen datagrams each), setups as many as http rounds (a connection at a time
/// each).
pub const DEFAULTS: [(Kind, u32); MONITORED.len()] = [
    (Kind::Ping, 256),
    (Kind::Probe, 32),
    (Kind::Trace, 32),
    (Kind::Http, 16),
    (Kind::Bulk, 1),
    (Kind::Lifetime, 4),
    (Kind::Mtu, 32),
    (Kind::Setup, 16),
];

/// Rounds kept in memory while the store cannot be written, unless the file says otherwise.
pub const BACKLOG: u32 = 100_000;

/// The section's keys: each kind a monitor runs, then `backlog`.
const KEYS: [&str; MONITORED.len() + 1] = {
    let mut keys = ["backlog"; MONITORED.len() + 1];
    let mut i = 0;
    while i < MONITORED.len() {
        keys[i] = MONITORED[i].name();
        i += 1;
    }
    keys
};

/// The `[limits]` section as written; an unknown key is refused, as everywhere in the file.
#[derive(Debug, Default)]
pub struct LimitsFile {
    pub rounds: BTreeMap<Kind, u32>,
    /// Rounds kept in memory while the store cannot be written.
    pub backlog: Option<u32>,
}

/// A key of `[limits]`: a kind a monitor runs, or `backlog`. An unknown one is refused as the
/// key is read, so the file's error points at it.
enum Key {
    Rounds(Kind),
    Backlog,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        let key = String::deserialize(d)?;
        if key == "backlog" {
            return Ok(Key::Backlog);
        }
        match MONITORED.iter().find(|k| k.name() == key) {
            Some(k) => Ok(Key::Rounds(*k)),
            None => Err(D::Error::unknown_field(&key, &KEYS)),
        }
    }
}

impl<'de> Deserialize<'de> for LimitsFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<LimitsFile, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = LimitsFile;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("struct LimitsFile")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<LimitsFile, A::Error> {
                let mut out = LimitsFile::default();
                while let Some(key) = m.next_key::<Key>()? {
                    match key {
                        Key::Backlog => out.backlog = Some(m.next_value()?),
                        Key::Rounds(k) => {
                            out.rounds.insert(k, m.next_value()?);
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_struct("LimitsFile", &KEYS, Keys)
    }
}

/// Rounds of each kind that may run at once, and the in-memory backlog's bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    rounds: BTreeMap<Kind, u32>,
    pub backlog: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            rounds: DEFAULTS.into_iter().collect(),
            backlog: BACKLOG,
        }
    }
}

impl Limits {
    /// Rounds of kind `k` that may run at once (0 for a kind a monitor does not run).
    pub fn of(&self, k: Kind) -> u32 {
        self.rounds.get(&k).copied().unwrap_or(0)
    }

    /// The file's values over the defaults; a 0 is refused, naming its key.
    pub fn check(f: &LimitsFile) -> Result<Limits, ConfigError> {
        let at_least_one = |k: &str, n: u32| {
            if n == 0 {
                Err(invalid(format!("limits.{k}"), "must be at least 1"))
            } else {
                Ok(n)
            }
        };
        let mut limits = Limits::default();
        for k in MONITORED {
            if let Some(&n) = f.rounds.get(&k) {
                limits.rounds.insert(k, at_least_one(k.name(), n)?);
            }
        }
        if let Some(n) = f.backlog {
            limits.backlog = at_least_one("backlog", n)?;
        }
        Ok(limits)
    }
}
