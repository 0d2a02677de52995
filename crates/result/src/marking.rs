//! The DSCP/ECN marking of a test's packets: what npt sent with (`--dscp`, `--tos`) and what
//! came back, counted by the TOS / traffic class byte the kernel says each reply arrived with
//! (`IP_RECVTOS`, `IPV6_RECVTCLASS`). A path that re-marks or bleaches DSCP, or marks ECN
//! congestion, shows here. A value that adds: parts of a run merge exactly.

use std::ops::AddAssign;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A TOS byte split into its two fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Tos {
    /// Differentiated Services code point, 0-63 (the TOS byte's upper six bits).
    #[schemars(range(max = 63))]
    pub dscp: u8,
    /// Explicit Congestion Notification, 0-3 (the lower two bits; 3 is CE).
    #[schemars(range(max = 3))]
    pub ecn: u8,
}

impl Tos {
    pub fn of(byte: u8) -> Tos {
        Tos {
            dscp: byte >> 2,
            ecn: byte & 3,
        }
    }

    pub fn byte(self) -> u8 {
        (self.dscp << 2) | (self.ecn & 3)
    }
}

/// Packets that arrived with one marking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct TosCount {
    #[schemars(range(max = 63))]
    pub dscp: u8,
    #[schemars(range(max = 3))]
    pub ecn: u8,
    pub packets: u64,
}

/// What was sent with and what came back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Marking {
    /// The marking every packet was sent with (`--dscp`, `--tos`); absent: the kernel's
    /// default (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<Tos>,
    /// Replies by the marking they arrived with, where the OS tells (UDP); ordered by DSCP,
    /// then ECN. Empty over TCP (a byte stream has no per-packet marking to read).
    #[serde(default)]
    pub received: Vec<TosCount>,
}

impl Marking {
    /// Counts one reply that arrived with TOS byte `byte`.
    pub fn count(&mut self, byte: u8) {
        self.add(Tos::of(byte), 1);
    }

    fn add(&mut self, t: Tos, n: u64) {
        let key = (t.dscp, t.ecn);
        match self
            .received
            .binary_search_by_key(&key, |c| (c.dscp, c.ecn))
        {
            Ok(i) => {
                if let Some(c) = self.received.get_mut(i) {
                    c.packets += n;
                }
            }
            Err(i) => self.received.insert(
                i,
                TosCount {
                    dscp: t.dscp,
                    ecn: t.ecn,
                    packets: n,
                },
            ),
        }
    }

    /// Nothing to say: sent unmarked and nothing came back marked.
    pub fn is_plain(&self) -> bool {
        self.sent.is_none() && self.received.iter().all(|c| c.dscp == 0 && c.ecn == 0)
    }

    /// The block a result carries: none when [`Marking::is_plain`].
    pub fn block(&self) -> Option<Marking> {
        (!self.is_plain()).then(|| self.clone())
    }
}

impl AddAssign<&Marking> for Marking {
    fn add_assign(&mut self, rhs: &Marking) {
        if self.sent.is_none() {
            self.sent = rhs.sent;
        }
        for c in &rhs.received {
            self.add(
                Tos {
                    dscp: c.dscp,
                    ecn: c.ecn,
                },
                c.packets,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_by_marking_in_order() {
        let mut a = Marking::default();
        assert!(a.is_plain() && a.block().is_none());
        a.count(0);
        assert!(a.is_plain(), "unmarked both ways");
        a.count(46 << 2);
        a.count(46 << 2 | 3);
        let mut b = Marking {
            sent: Some(Tos::of(0xb8)),
            ..Marking::default()
        };
        b.count(46 << 2);
        a += &b;
        assert_eq!(a.sent, Some(Tos { dscp: 46, ecn: 0 }));
        let got: Vec<(u8, u8, u64)> = a
            .received
            .iter()
            .map(|c| (c.dscp, c.ecn, c.packets))
            .collect();
        assert_eq!(got, vec![(0, 0, 1), (46, 0, 2), (46, 3, 1)]);
        assert_eq!(Tos::of(0xb9).byte(), 0xb9);
    }
}
