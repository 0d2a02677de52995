//! The registry of result kinds: one line per kind, in [`kinds!`], from which everything that
//! reads a result of any kind is generated — the one result type ([`crate::any::AnyBody`]
//! and its reader), the kind without its body ([`Kind`]: what a monitor's target or a command
//! names), [`crate::any::KINDS`], the checked-in schemas ([`crate::schema`]) and the
//! dispatch of `npt merge` ([`with_stats`], for the kinds that name a stats value). What a
//! kind is and answers are its [`Body`] and [`View`] impls, next to its body type; what a
//! renderer prints for it is its `impl npt_report::render::Render`, dispatched from this same
//! list.
//!
//! A line reads `Variant(BodyType)`, and `merge StatsType` when the kind's parts of a
//! segmented run (`--segment`) are merged by adding that stats value ([`Stats`]). The kind's
//! name is its [`Body::KIND`].
//!
//! `kinds!(callback)` calls `callback! { Probe(…ProbeBody) merge …ProbeStats; … }`: a crate
//! above this one (a renderer) generates its own dispatch from the same list with a
//! `macro_rules!` of its own, so no list of kinds is written twice.

pub use crate::any::{with_stats, MERGEABLE};
pub use crate::body::{Body, View};
pub use crate::stats::Stats;

/// The kinds, each once. Call with the name of a macro that takes the list.
#[macro_export]
macro_rules! kinds {
    ($then:ident) => {
        $then! {
            Probe($crate::probe::ProbeBody) merge $crate::stats::ProbeStats;
            Run($crate::run::RunBody) merge $crate::stats::RunStats;
            Http($crate::http::HttpBody) merge $crate::stats::HttpStats;
            Ping($crate::ping::PingBody);
            Bulk($crate::bulk::BulkBody) merge $crate::stats::BulkStats;
            Trace($crate::trace::TraceBody);
            Lifetime($crate::lifetime::LifetimeBody);
            Mtu($crate::mtu::MtuBody);
            Setup($crate::setup::SetupBody);
        }
    };
}

/// Generates [`Kind`] from the list of [`kinds!`]: its names are the bodies' [`Body::KIND`].
macro_rules! kind_enum {
    ($($Var:ident($Body:ty) $(merge $Stats:ty)?;)*) => {
        /// A kind of result, without its body: what a command, a monitor's target or a
        /// report names. One variant per line of the registry, in its order; its name
        /// (in text, JSON and TOML) is the body's [`Body::KIND`], so it is written once.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Kind {
            $($Var,)*
        }

        impl Kind {
            /// Every kind, in the registry's order.
            pub const ALL: &'static [Kind] = &[$(Kind::$Var,)*];

            /// The kind's name: the document's `kind`, the subcommand that writes it.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Kind::$Var => <$Body as Body>::KIND,)*
                }
            }
        }
    };
}

// `Kind`, one fieldless variant per line of the registry.
kinds!(kind_enum);

impl Kind {
    /// The kind named `name`; `None` for a name no kind has.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.name() == name)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl serde::Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Kind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Kind::parse(&name)
            .ok_or_else(|| serde::de::Error::unknown_variant(&name, crate::any::KINDS))
    }
}

/// What `npt merge` does with one kind's stats value: handed the type, it adds the parts.
pub trait StatsVisitor {
    type Out;
    fn visit<S>(self) -> Self::Out
    where
        S: Stats,
        S::Body: Registered;
}

/// A body that is one variant of [`crate::any::AnyBody`] (generated for every registered
/// kind): how a reader of one kind takes its body back out of the one result type.
pub trait Registered: Body {
    fn pick(w: crate::any::AnyBody) -> Option<Self>;
}

/// The name of a kind that merges, its stats value named so that the registry's optional
/// `merge` part is what repeats in [`MERGEABLE`].
pub(crate) const fn merges<S: Stats>(
    kind: &'static str,
    _: std::marker::PhantomData<S>,
) -> &'static str {
    kind
}

/// Generates, from the list of [`kinds!`], the one result type and what dispatches on it.
/// Called once, in [`crate::any`].
macro_rules! registry {
    ($($Var:ident($Body:ty) $(merge $Stats:ty)?;)*) => {
        /// The typed part of a result that differs by workload. Serializes flat, as each
        /// body always did (the envelope's `kind` says which it is). A ping is not a
        /// workload (no intervals, no tester health) but is read as one so that `report` and
        /// `compare` read every result alike. One variant per line of the registry
        /// ([`crate::kinds`]).
        #[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
        #[serde(untagged)]
        // One value per result read, never a collection of them: the variants' sizes do not
        // matter.
        #[allow(clippy::large_enum_variant)]
        pub enum AnyBody {
            $($Var($Body),)*
        }

        /// The kinds [`AnyBody`] holds, in the registry's order.
        pub const KINDS: &[&str] = &[$(<$Body as $crate::body::Body>::KIND,)*];

        /// The kinds `npt merge` joins (those whose registry line names a stats value).
        pub const MERGEABLE: &[&str] =
            &[$($($crate::kinds::merges(
                <$Body as $crate::body::Body>::KIND,
                std::marker::PhantomData::<$Stats>,
            ),)?)*];

        $(
            impl From<$Body> for AnyBody {
                fn from(b: $Body) -> AnyBody {
                    AnyBody::$Var(b)
                }
            }

            impl $crate::kinds::Registered for $Body {
                fn pick(w: AnyBody) -> Option<Self> {
                    match w {
                        AnyBody::$Var(b) => Some(b),
                        _ => None,
                    }
                }
            }
        )*

        impl AnyBody {
            /// The body's kind.
            pub fn kind(&self) -> $crate::Kind {
                match self {
                    $(AnyBody::$Var(_) => $crate::Kind::$Var,)*
                }
            }

            /// The body, as what every kind answers: its readers are called here, once.
            pub fn view(&self) -> &dyn $crate::body::View {
                match self {
                    $(AnyBody::$Var(b) => b,)*
                }
            }

            fn view_mut(&mut self) -> &mut dyn $crate::body::View {
                match self {
                    $(AnyBody::$Var(b) => b,)*
                }
            }
        }

        /// A document of kind `kind` read with its body's type; `None` for a kind not
        /// registered.
        fn typed(
            kind: &str,
            json: serde_json::Value,
        ) -> Option<Result<AnyResult, serde_json::Error>> {
            $(
                if kind == <$Body as $crate::body::Body>::KIND {
                    return Some(
                        serde_json::from_value::<Document<$Body>>(json)
                            .map(|d| d.map_body(AnyBody::$Var)),
                    );
                }
            )*
            None
        }

        /// The schema of `kind`'s documents as schemars derives it; `None` for a kind not
        /// registered.
        pub(crate) fn derived_schema(kind: &str) -> Option<serde_json::Value> {
            $(
                if kind == <$Body as $crate::body::Body>::KIND {
                    return Some($crate::schema::generate::<$Body>());
                }
            )*
            None
        }

        /// Runs `v` with the stats value of `kind`; `None` for a kind that does not merge.
        pub fn with_stats<V: $crate::kinds::StatsVisitor>(kind: &str, v: V) -> Option<V::Out> {
            $($(
                if kind == <$Body as $crate::body::Body>::KIND {
                    return Some(v.visit::<$Stats>());
                }
            )?)*
            let _ = v;
            None
        }
    };
}

pub(crate) use registry;

#[cfg(test)]
mod tests {
    use super::*;

    /// A kind reads and writes as its body's name, in text and JSON, and no other name is one.
    #[test]
    fn a_kind_is_its_bodys_name() {
        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names, crate::any::KINDS);
        assert_eq!(Kind::Probe.name(), <crate::probe::ProbeBody as Body>::KIND);
        for &k in Kind::ALL {
            assert_eq!(Kind::parse(k.name()), Some(k));
            assert_eq!(k.to_string(), k.name());
            let json = serde_json::to_value(k).unwrap();
            assert_eq!(json, k.name());
            assert_eq!(serde_json::from_value::<Kind>(json).unwrap(), k);
        }
        assert_eq!(Kind::parse("Probe"), None);
        let e = serde_json::from_value::<Kind>("walk".into()).unwrap_err();
        assert!(e.to_string().contains("unknown variant `walk`"), "{e}");
    }
}
