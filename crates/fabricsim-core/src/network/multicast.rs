//! Multicast groups and their distribution trees.
//!
//! A group is a named set of member hosts. A source reaches a group in one of
//! two ways ([`Replication`]):
//!
//! - **native**: the source sends one frame; each switch on the group's
//!   distribution tree replicates it onto the tree's egress ports (copies are
//!   made when the frame is switched to its egress ports, and each copy is
//!   admitted by the device's buffer model like any frame), so every link of the
//!   tree carries each frame once;
//! - **unicast**: the sender's application sends one unicast copy per member
//!   (how multicast is emulated where the network does not replicate), so the
//!   sender's link carries every frame once per member.
//!
//! The tree of a (source, group) pair is the source-specific shortest-path tree
//! built by reverse-path forwarding, as PIM-SSM does (RFC 7761 4.2: a router's
//! upstream neighbour towards the source is its unicast next hop to the
//! source): from each member, follow the unicast route towards the source; each
//! node's next hop towards the source is its parent. Every node has one route
//! to the source for a given flow hash, so the union of these paths is a tree.

use crate::ids::NodeId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Resolved `multicast` section.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MulticastConfig {
    #[serde(default)]
    pub groups: Vec<GroupConfig>,
}

/// A multicast group: a name and its member hosts.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    pub name: String,
    pub members: Vec<String>,
}

/// How a traffic entry reaches a group.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Replication {
    /// Switches replicate along the distribution tree.
    #[default]
    Native,
    /// The sender sends one unicast copy per member.
    Unicast,
}

impl Replication {
    pub fn as_str(self) -> &'static str {
        match self {
            Replication::Native => "native",
            Replication::Unicast => "unicast",
        }
    }
}

/// `Packet::dst` of a native multicast frame between replication points:
/// this bit plus the tree index. Copies sent to a host carry the host's id.
pub const MCAST_TAG: u32 = 1 << 31;

/// The IPv4 destination address of a packet for match-action stages: the
/// host's address (`addresses[dst]`), or for a native multicast frame between
/// replication points an address in 239.0.0.0/8 (administratively scoped,
/// RFC 2365) numbered by its tree.
#[inline]
pub fn ip_dst(addresses: &[u32], dst: NodeId) -> u32 {
    if dst.0 & MCAST_TAG != 0 {
        0xEF00_0000 | (dst.0 & 0x00FF_FFFF)
    } else {
        addresses[dst.idx()]
    }
}

/// A source-specific distribution tree.
#[derive(Clone, Debug)]
pub struct Tree {
    pub group: u32,
    pub source: NodeId,
    /// Per node `u`: its egress ports on the tree are `ports[first[u]..first[u + 1]]`.
    first: Vec<u32>,
    ports: Vec<u16>,
    /// Per node: members of the group in the subtree below it (itself included).
    below: Vec<u32>,
    /// Tree edges `(parent, parent's egress port, child)` in node order.
    pub edges: Vec<(NodeId, u16, NodeId)>,
}

impl Tree {
    /// Builds the tree of `source` to `members` (the source itself excluded).
    /// `upstream(u)` gives node `u`'s parent towards the source and the
    /// parent's local port towards `u`, or `None` if `u` has no route.
    pub fn build(
        group: u32,
        source: NodeId,
        members: &[NodeId],
        nodes: usize,
        mut upstream: impl FnMut(NodeId) -> Option<(NodeId, u16)>,
    ) -> Result<Tree, NodeId> {
        let mut edges = BTreeSet::new();
        let mut below = vec![0u32; nodes];
        for &m in members {
            if m == source {
                continue;
            }
            let mut cur = m;
            below[cur.idx()] += 1;
            // Hop count is bounded by the number of nodes (shortest paths).
            for _ in 0..nodes {
                if cur == source {
                    break;
                }
                let (parent, port) = upstream(cur).ok_or(m)?;
                edges.insert((parent, port, cur));
                below[parent.idx()] += 1;
                cur = parent;
            }
            if cur != source {
                return Err(m);
            }
        }
        let mut first = vec![0u32; nodes + 1];
        let mut ports = Vec::with_capacity(edges.len());
        let edges: Vec<(NodeId, u16, NodeId)> = edges.into_iter().collect();
        let mut k = 0;
        for (u, start) in first.iter_mut().enumerate().take(nodes) {
            *start = ports.len() as u32;
            while k < edges.len() && edges[k].0.idx() == u {
                ports.push(edges[k].1);
                k += 1;
            }
        }
        first[nodes] = ports.len() as u32;
        Ok(Tree { group, source, first, ports, below, edges })
    }

    /// Range of node `u`'s tree ports, for [`Tree::port`].
    #[inline]
    pub fn port_range(&self, u: NodeId) -> (u32, u32) {
        (self.first[u.idx()], self.first[u.idx() + 1])
    }

    #[inline]
    pub fn port(&self, i: u32) -> u16 {
        self.ports[i as usize]
    }

    /// Members in the subtree of `u`, `u` included.
    #[inline]
    pub fn members_below(&self, u: NodeId) -> u32 {
        self.below[u.idx()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_is_the_union_of_reverse_paths_without_duplicate_edges() {
        // 0 = source host, 1 = switch, 2 = switch, 3..5 = member hosts.
        //   0 - 1 - 2 - {3, 4};  1 - 5
        let parent = |u: NodeId| match u.0 {
            1 => Some((NodeId(0), 0)),
            2 => Some((NodeId(1), 1)),
            3 => Some((NodeId(2), 1)),
            4 => Some((NodeId(2), 2)),
            5 => Some((NodeId(1), 2)),
            _ => None,
        };
        let t = Tree::build(0, NodeId(0), &[NodeId(3), NodeId(4), NodeId(5), NodeId(0)], 6, parent).unwrap();
        assert_eq!(t.edges.len(), 5);
        let (a, b) = t.port_range(NodeId(1));
        assert_eq!((a..b).map(|i| t.port(i)).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(t.members_below(NodeId(0)), 3);
        assert_eq!(t.members_below(NodeId(2)), 2);
        assert_eq!(t.members_below(NodeId(5)), 1);
    }
}
