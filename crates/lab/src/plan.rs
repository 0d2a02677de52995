//! From a checked topology to everything the runtime will create, as plain data: namespace
//! names, each link's two interfaces and addresses, and each node's routes. Pure, so the
//! addressing and routing are unit-tested without root, and `npt lab check` can print them.
//!
//! Addressing: link *i* (file order) uses `subnet` or 10.0.(i+1).0/24; its `a` end takes the
//! first host address, its `b` end the second. Routing: every node reaches every link subnet
//! along a shortest path (fewest links; the earlier link in the file wins a tie), so a path
//! may cross several nodes, each forwarding (ip_forward is on in every lab namespace).

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use crate::topology::{LinkSpec, Topology, TopologyError};

#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub lab: String,
    pub nodes: Vec<NodePlan>,
    pub links: Vec<LinkPlan>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NodePlan {
    pub name: String,
    /// The network namespace: `npt-LAB-NODE`.
    pub netns: String,
    pub routes: Vec<Route>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LinkPlan {
    pub spec: LinkSpec,
    /// Node indices of the two ends.
    pub a: usize,
    pub b: usize,
    pub network: Ipv4Addr,
    pub prefix: u8,
    pub a_addr: Ipv4Addr,
    pub b_addr: Ipv4Addr,
    /// Interface names inside `a`'s and `b`'s namespaces (TUN devices).
    pub a_if: String,
    pub b_if: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub network: Ipv4Addr,
    pub prefix: u8,
    pub via: Ipv4Addr,
    pub dev: String,
}

/// The prefix of every namespace npt lab creates; `npt lab down` and the leak test look for it.
pub const NETNS_PREFIX: &str = "npt-";

pub fn netns_name(lab: &str, node: &str) -> String {
    format!("{NETNS_PREFIX}{lab}-{node}")
}

fn contains(network: Ipv4Addr, prefix: u8, ip: Ipv4Addr) -> bool {
    // A /0 matches everything (a shift by 32 would overflow).
    let mask = u32::MAX
        .checked_shl(32u32.saturating_sub(u32::from(prefix)))
        .unwrap_or(0);
    u32::from(ip) & mask == u32::from(network)
}

fn overlaps(a: (Ipv4Addr, u8), b: (Ipv4Addr, u8)) -> bool {
    let p = a.1.min(b.1);
    contains(a.0, p, b.0) || contains(b.0, p, a.0)
}

/// An interface name (at most 15 bytes) for the end of link `i` that faces `peer`.
fn if_name(peer: &str, i: usize, taken: &[String]) -> String {
    let short: String = peer.chars().take(15).collect();
    if !taken.contains(&short) {
        return short;
    }
    let suffix = format!("-{i}");
    let head: String = peer.chars().take(15 - suffix.len()).collect();
    format!("{head}{suffix}")
}

impl Plan {
    // NO-PANIC: `a` and `b` are positions in `topo.nodes` (an unknown end is an error) and
    // `ifaces` has one entry per node; `j` is a position found in `links`.
    #[allow(clippy::indexing_slicing)]
    pub fn new(topo: &Topology) -> Result<Plan, TopologyError> {
        let index = |i: usize, end: &str, n: &str| {
            topo.nodes
                .iter()
                .position(|x| x == n)
                .ok_or_else(|| TopologyError {
                    key: format!("link[{i}].{end}"),
                    msg: format!("{n:?} is not a node"),
                })
        };
        let mut ifaces: Vec<Vec<String>> = vec![Vec::new(); topo.nodes.len()];
        let mut links: Vec<LinkPlan> = Vec::new();
        for (i, spec) in topo.links.iter().enumerate() {
            let (network, prefix) = match spec.subnet {
                Some(s) => s,
                None => {
                    let third = u8::try_from(i + 1).map_err(|_| TopologyError {
                        key: format!("link[{i}].subnet"),
                        msg: "more than 255 links: give each a subnet".into(),
                    })?;
                    (Ipv4Addr::new(10, 0, third, 0), 24)
                }
            };
            if let Some(j) = links
                .iter()
                .position(|l| overlaps((l.network, l.prefix), (network, prefix)))
            {
                return Err(TopologyError {
                    key: format!("link[{i}].subnet"),
                    msg: format!(
                        "{network}/{prefix} overlaps link[{j}]'s {}/{}",
                        links[j].network, links[j].prefix
                    ),
                });
            }
            let (a, b) = (index(i, "a", &spec.a)?, index(i, "b", &spec.b)?);
            let a_if = if_name(&spec.b, i, &ifaces[a]);
            ifaces[a].push(a_if.clone());
            let b_if = if_name(&spec.a, i, &ifaces[b]);
            ifaces[b].push(b_if.clone());
            let base = u32::from(network);
            links.push(LinkPlan {
                spec: spec.clone(),
                a,
                b,
                network,
                prefix,
                a_addr: Ipv4Addr::from(base + 1),
                b_addr: Ipv4Addr::from(base + 2),
                a_if,
                b_if,
            });
        }
        let mut nodes = Vec::new();
        for (n, name) in topo.nodes.iter().enumerate() {
            nodes.push(NodePlan {
                name: name.clone(),
                netns: netns_name(&topo.name, name),
                routes: routes_from(n, topo.nodes.len(), &links),
            });
        }
        Ok(Plan {
            lab: topo.name.clone(),
            nodes,
            links,
        })
    }

    pub fn node(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The node that owns `ip`, if any.
    pub fn owner(&self, ip: Ipv4Addr) -> Option<usize> {
        self.links.iter().find_map(|l| {
            if l.a_addr == ip {
                Some(l.a)
            } else if l.b_addr == ip {
                Some(l.b)
            } else {
                None
            }
        })
    }

    /// Whether `from` has a route to `ip`: its own address, a directly attached subnet, or a
    /// subnet its routes lead to — and some node actually owns `ip`.
    pub fn reaches(&self, from: usize, ip: Ipv4Addr) -> bool {
        if ip.is_loopback() {
            return true;
        }
        let Some(owner) = self.owner(ip) else {
            return false;
        };
        owner == from
            || self
                .links
                .iter()
                .any(|l| (l.a == from || l.b == from) && contains(l.network, l.prefix, ip))
            || self
                .nodes
                .get(from)
                .is_some_and(|n| n.routes.iter().any(|r| contains(r.network, r.prefix, ip)))
    }
}

/// Shortest-path routes from node `n` to every subnet it is not attached to.
// NO-PANIC: `n` and every link end are node positions below `count` (the plan's own), and `hop`
// is a position in `links`.
#[allow(clippy::indexing_slicing)]
fn routes_from(n: usize, count: usize, links: &[LinkPlan]) -> Vec<Route> {
    // BFS over nodes; first[m] = the link index through which n first reaches m.
    let mut dist = vec![usize::MAX; count];
    let mut first: Vec<Option<usize>> = vec![None; count];
    dist[n] = 0;
    let mut q = VecDeque::from([n]);
    while let Some(u) = q.pop_front() {
        for (li, l) in links.iter().enumerate() {
            let v = if l.a == u {
                l.b
            } else if l.b == u {
                l.a
            } else {
                continue;
            };
            if dist[v] == usize::MAX {
                dist[v] = dist[u] + 1;
                first[v] = if u == n { Some(li) } else { first[u] };
                q.push_back(v);
            }
        }
    }
    let mut routes = Vec::new();
    for l in links {
        if l.a == n || l.b == n {
            continue;
        }
        // Head for the nearer end of that link.
        let end = if dist[l.a] <= dist[l.b] { l.a } else { l.b };
        let Some(hop) = first[end] else {
            continue; // not connected: no route (a scenario aimed there is refused)
        };
        let h = &links[hop];
        let (via, dev) = if h.a == n {
            (h.b_addr, h.a_if.clone())
        } else {
            (h.a_addr, h.b_if.clone())
        };
        routes.push(Route {
            network: l.network,
            prefix: l.prefix,
            via,
            dev,
        });
    }
    routes
}

#[cfg(test)]
mod tests;
