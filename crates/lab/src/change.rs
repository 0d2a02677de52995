//! `npt lab set LAB LINK KEY=VALUE…`, the pure part: which link `LINK` names, which direction
//! each setting is for, and what each direction's impairments become — checked by the
//! topology file's own conversion and checks ([`npt_link::Impairments::with_settings`]), so
//! a change is accepted or refused as the same value in the file would be, and a refused change
//! names its key and changes nothing. Tested without root; the runtime applies the result.
//!
//! - `LINK` is the two node names joined by `-`, in either order (`client-server`), or the
//!   link's position in the file from 0 (`link[0]` in the file's error messages; `0`).
//! - `KEY=VALUE` applies to both directions; `a_to_b.KEY=VALUE` and `b_to_a.KEY=VALUE` (the
//!   file's own table names; `a` and `b` are the file's) to one.

use npt_link::{Impairments, LinkError};
use serde::{Deserialize, Serialize};

use crate::plan::Plan;

/// A change that cannot be made; nothing was changed. The message names the argument.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[error("{0}")]
pub struct SetError(pub String);

/// Which directions a setting is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Both,
    AToB,
    BToA,
}

/// One `KEY=VALUE` argument, split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub which: Which,
    pub key: String,
    pub value: String,
}

/// The position of the link `text` names.
pub fn resolve_link(plan: &Plan, text: &str) -> Result<usize, SetError> {
    let name = |n: usize| plan.nodes.get(n).map_or("", |x| x.name.as_str());
    if let Ok(i) = text.parse::<usize>() {
        return if i < plan.links.len() {
            Ok(i)
        } else {
            Err(SetError(format!(
                "link {i}: lab {} has {} links (0 to {})",
                plan.lab,
                plan.links.len(),
                plan.links.len().saturating_sub(1)
            )))
        };
    }
    // Node names may hold '-': try every split into two known names.
    let mut found: Vec<usize> = Vec::new();
    for (at, _) in text.match_indices('-') {
        let (Some(x), Some(y)) = (text.get(..at), text.get(at + 1..)) else {
            continue;
        };
        for (i, l) in plan.links.iter().enumerate() {
            let (a, b) = (name(l.a), name(l.b));
            if ((a == x && b == y) || (a == y && b == x)) && !found.contains(&i) {
                found.push(i);
            }
        }
    }
    match found.as_slice() {
        [i] => Ok(*i),
        [] => {
            let names: Vec<String> = plan
                .links
                .iter()
                .enumerate()
                .map(|(i, l)| format!("{i} ({}-{})", name(l.a), name(l.b)))
                .collect();
            Err(SetError(format!(
                "link {text:?}: lab {} has no such link; its links: {}",
                plan.lab,
                names.join(", ")
            )))
        }
        many => Err(SetError(format!(
            "link {text:?} names {} links; give its number: {}",
            many.len(),
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Splits `KEY=VALUE` arguments (at least one) into settings.
pub fn parse_settings(args: &[String]) -> Result<Vec<Setting>, SetError> {
    if args.is_empty() {
        return Err(SetError(
            "nothing to set: give KEY=VALUE, e.g. delay=80ms loss=2% (a_to_b.KEY for one direction)"
                .into(),
        ));
    }
    args.iter()
        .map(|arg| {
            let (key, value) = arg
                .split_once('=')
                .ok_or_else(|| SetError(format!("{arg:?}: expected KEY=VALUE, e.g. delay=80ms")))?;
            let (which, key) = match key.split_once('.') {
                Some(("a_to_b", k)) => (Which::AToB, k),
                Some(("b_to_a", k)) => (Which::BToA, k),
                _ => (Which::Both, key),
            };
            if !npt_link::is_setting_key(key) {
                return Err(SetError(format!(
                    "{arg:?}: unknown key {key:?} (expected one of: {}, each alone or after \
                     a_to_b. or b_to_a.)",
                    npt_link::setting_keys()
                )));
            }
            Ok(Setting {
                which,
                key: key.to_string(),
                value: value.to_string(),
            })
        })
        .collect()
}

/// The two directions' impairments (a→b, b→a) after `settings`, each checked as the file's
/// `[link.a_to_b]` / `[link.b_to_a]` table would be.
pub fn apply(
    a_to_b: &Impairments,
    b_to_a: &Impairments,
    settings: &[Setting],
) -> Result<(Impairments, Impairments), SetError> {
    let one = |imp: &Impairments, dir: Which, name: &str| {
        imp.with_settings(
            settings
                .iter()
                .filter(|s| s.which == Which::Both || s.which == dir)
                .map(|s| (s.key.as_str(), s.value.as_str())),
        )
        .map_err(|e: LinkError| SetError(format!("{name}.{e}")))
    };
    Ok((
        one(a_to_b, Which::AToB, "a_to_b")?,
        one(b_to_a, Which::BToA, "b_to_a")?,
    ))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::topology::Topology;

    fn plan() -> Plan {
        let t = Topology::parse(
            r#"name = "t"
[[node]]
name = "client"
[[node]]
name = "la-1"
[[node]]
name = "server"
[[link]]
a = "client"
b = "la-1"
delay = "10ms"
[[link]]
a = "la-1"
b = "server"
[[link]]
a = "server"
b = "la-1"
"#,
            "t",
        )
        .unwrap();
        Plan::new(&t).unwrap()
    }

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn links_are_named_by_their_nodes_either_way_or_by_number() {
        let p = plan();
        assert_eq!(resolve_link(&p, "client-la-1"), Ok(0));
        assert_eq!(resolve_link(&p, "la-1-client"), Ok(0));
        assert_eq!(resolve_link(&p, "2"), Ok(2));
        let e = resolve_link(&p, "la-1-server").unwrap_err().0;
        assert!(e.contains("names 2 links") && e.contains("1, 2"), "{e}");
        let e = resolve_link(&p, "client-mars").unwrap_err().0;
        assert!(e.contains("0 (client-la-1)"), "{e}");
        assert!(resolve_link(&p, "3").unwrap_err().0.contains("0 to 2"));
    }

    #[test]
    fn settings_go_to_both_directions_or_one() {
        let p = plan();
        let l = &p.links[0].spec;
        let s = parse_settings(&args(&[
            "delay=80ms",
            "b_to_a.delay=30ms",
            "a_to_b.loss=2%",
        ]))
        .unwrap();
        let (ab, ba) = apply(&l.a_to_b, &l.b_to_a, &s).unwrap();
        assert_eq!(ab.delay, Duration::from_millis(80));
        assert_eq!(
            ba.delay,
            Duration::from_millis(30),
            "the later setting wins"
        );
        assert_eq!(
            ab.loss,
            npt_link::Loss::Random {
                p: npt_link::Percent::new(2.0)
            }
        );
        assert_eq!(ba.loss, npt_link::Loss::None);
    }

    #[test]
    fn bad_settings_name_their_argument_and_change_nothing() {
        let p = plan();
        let l = &p.links[0].spec;
        for (a, want) in [
            ("delay", "expected KEY=VALUE"),
            ("colour=red", "unknown key \"colour\""),
            ("c_to_d.delay=1ms", "unknown key \"c_to_d.delay\""),
        ] {
            let e = parse_settings(&args(&[a])).unwrap_err().0;
            assert!(e.contains(want), "{a}: {e}");
        }
        assert!(parse_settings(&[]).is_err());
        for (a, want) in [
            ("delay=-5ms", "a_to_b.delay: negative"),
            ("b_to_a.loss=101%", "b_to_a.loss:"),
            ("b_to_a.jitter=20ms", "b_to_a.jitter:"),
            ("rate=fast", "a_to_b.rate: cannot read \"fast\""),
        ] {
            let s = parse_settings(&args(&[a])).unwrap();
            let e = apply(&l.a_to_b, &l.b_to_a, &s).unwrap_err().0;
            assert!(e.starts_with(want), "{a}: {e}");
        }
    }
}
