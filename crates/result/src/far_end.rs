//! Which far end answered a probe (`summary.far_end`): `npt serve` (its replies say what it
//! saw, so loss and delay split per direction), a STAMP reflector (RFC 8762), or a plain echo
//! that returned each request unchanged (round trips only). A probe tells them apart by the
//! replies themselves, with no flag; the name says what the figures can be.
//!
//! The names are what users script against; keep them stable.

/// Replies were `npt serve`'s framed echo replies.
pub const NPT_SERVE: &str = "npt-serve";
/// Replies were a STAMP Session-Reflector's answers.
pub const STAMP: &str = "stamp";
/// Replies were the requests themselves, returned unchanged (socat, a forwarder in front of
/// an echo, `--raw` against any echo): round trips only.
pub const ECHO: &str = "echo";
/// No reply came back at all.
pub const NONE: &str = "none";
/// Replies of more than one kind (flows to different far ends, merged parts that differed).
pub const MIXED: &str = "mixed";
/// Every name above, for the schema.
pub const ALL: [&str; 5] = [NPT_SERVE, STAMP, ECHO, NONE, MIXED];

/// Replies counted by the far end they came from: a value that adds across flows and parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Answered {
    pub npt_serve: u64,
    pub stamp: u64,
    pub echo: u64,
}

impl Answered {
    /// One more reply from the far end named `name` ([`ALL`]; `none` and `mixed` count none).
    pub fn count(&mut self, name: &str) {
        match name {
            NPT_SERVE => self.npt_serve += 1,
            STAMP => self.stamp += 1,
            ECHO => self.echo += 1,
            _ => {}
        }
    }

    /// The far end's name ([`ALL`]).
    pub fn name(&self) -> &'static str {
        let kinds = [
            (self.npt_serve, NPT_SERVE),
            (self.stamp, STAMP),
            (self.echo, ECHO),
        ];
        let mut seen = kinds.iter().filter(|(n, _)| *n > 0);
        match (seen.next(), seen.next()) {
            (None, _) => NONE,
            (Some((_, name)), None) => name,
            (Some(_), Some(_)) => MIXED,
        }
    }
}

impl std::ops::AddAssign<&Answered> for Answered {
    fn add_assign(&mut self, o: &Answered) {
        self.npt_serve += o.npt_serve;
        self.stamp += o.stamp;
        self.echo += o.echo;
    }
}

/// Two parts' far ends merged (`npt merge`): a part that got no reply says nothing about the
/// other's far end; two that differ are `mixed`.
pub fn merge(a: Option<&str>, b: Option<&str>) -> Option<String> {
    match (a, b) {
        (Some(x), Some(y)) if x == y || y == NONE => Some(x.to_string()),
        (Some(x), Some(y)) if x == NONE => Some(y.to_string()),
        (Some(_), Some(_)) => Some(MIXED.to_string()),
        (x, y) => x.or(y).map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_kind_names_itself_several_are_mixed() {
        let mut a = Answered::default();
        assert_eq!(a.name(), NONE);
        a.echo = 3;
        assert_eq!(a.name(), ECHO);
        a += &Answered {
            npt_serve: 1,
            ..Answered::default()
        };
        assert_eq!(a.name(), MIXED);
    }

    #[test]
    fn merge_ignores_a_part_without_replies() {
        assert_eq!(merge(Some(ECHO), Some(NONE)).as_deref(), Some(ECHO));
        assert_eq!(merge(Some(NONE), Some(STAMP)).as_deref(), Some(STAMP));
        assert_eq!(merge(Some(ECHO), Some(NPT_SERVE)).as_deref(), Some(MIXED));
        assert_eq!(merge(None, Some(ECHO)).as_deref(), Some(ECHO));
        assert_eq!(merge(None, None), None);
    }
}
