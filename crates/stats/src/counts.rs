//! The packet counts every packet-measuring value keeps — a probe's flows and summary, a game
//! session's, a run's — as one value that adds, so the six counters are named, documented and
//! added in one place. Result types put it in with `#[serde(flatten)]`: the JSON keeps the
//! names it always had (`sent`, `received`, `lost`, `late`, `duplicated`, `reordered`).
//!
//! What the far end refused is kept beside it by each value, under its own name (`refused`,
//! `refused_by_server`): it is a count of the server's, not of the path.

use std::ops::AddAssign;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Packets sent and what became of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PacketCounts {
    pub sent: u64,
    /// First replies within the loss timeout. `received + lost + refused_by_server == sent`.
    pub received: u64,
    /// Path loss: packets unanswered within the loss timeout that the server did not refuse.
    pub lost: u64,
    /// Replies after the loss timeout (already counted in `lost`).
    pub late: u64,
    pub duplicated: u64,
    pub reordered: u64,
}

impl AddAssign<&PacketCounts> for PacketCounts {
    fn add_assign(&mut self, rhs: &PacketCounts) {
        self.sent += rhs.sent;
        self.received += rhs.received;
        self.lost += rhs.lost;
        self.late += rhs.late;
        self.duplicated += rhs.duplicated;
        self.reordered += rhs.reordered;
    }
}

impl AddAssign for PacketCounts {
    fn add_assign(&mut self, rhs: PacketCounts) {
        *self += &rhs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_and_flatten_under_their_own_names() {
        let mut a = PacketCounts {
            sent: 10,
            received: 8,
            lost: 2,
            late: 1,
            duplicated: 1,
            reordered: 3,
        };
        a += PacketCounts {
            sent: 5,
            received: 5,
            ..PacketCounts::default()
        };
        assert_eq!((a.sent, a.received, a.lost, a.reordered), (15, 13, 2, 3));
        #[derive(Serialize, Deserialize)]
        struct Outer {
            #[serde(flatten)]
            packets: PacketCounts,
            refused_by_server: u64,
        }
        let v = serde_json::to_value(Outer {
            packets: a,
            refused_by_server: 0,
        })
        .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"sent": 15, "received": 13, "lost": 2, "late": 1,
                "duplicated": 1, "reordered": 3, "refused_by_server": 0})
        );
        let back: Outer = serde_json::from_value(v).unwrap();
        assert_eq!(back.packets, a);
    }
}
