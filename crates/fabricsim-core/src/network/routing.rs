//! Shortest-path routing with per-flow ECMP.
//!
//! For every destination host a breadth-first search over the graph gives each
//! node its hop distance; a node's next hops towards that host are the ports whose
//! neighbour is one hop closer. Hosts never forward, so they are never used as
//! transit. When several next hops exist, a switch picks one by hashing the
//! flow's 5-tuple hash with its own salt (derived from the seed and the switch
//! id), so a flow keeps one path and different switches make independent choices.
//!
//! # Compact tables
//!
//! A table of (node x destination host) entries grows with the square of the
//! fabric (42 MB for a k=32 fat-tree) and every hop of every packet reads a
//! random entry of it. Three facts make it small without changing any route:
//!
//! - Hosts with a single link to a switch (almost all hosts) are reached through
//!   that switch, so from every other node their next hops are those towards the
//!   switch's other hosts: such hosts form one **destination class** per switch
//!   (a host with several links, or linked to a host, is a class of its own).
//!   Rows have one entry per class, and the search runs once per class.
//! - At its own switch, a single-homed host is reached through the port of its
//!   link, stored with the host; the row entry for the switch's own class is
//!   never read, and is set to the row's most common entry so that rows match.
//! - Next-hop sets are interned globally (**ECMP groups**, id 0 the empty set)
//!   and identical rows are stored once: in a fat-tree all cores share one row,
//!   the aggregation switches of a pod one, the edge switches one.
//!
//! A k=32 fat-tree's routing state is 0.2 MB instead of 42 MB; a lookup reads
//! the destination's class, the node's row entry and the group.

use crate::network::topology::NodeKind;
use crate::rng::mix64;
use std::collections::{BTreeMap, VecDeque};

/// How a destination node is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Dest {
    /// Destination class (index into a row), or [`NO_CLASS`] for switches.
    class: u32,
    /// For a single-homed host: its switch, else `u32::MAX`.
    switch: u32,
    /// For a single-homed host: the port of its switch that leads to it.
    port: u16,
}

/// Per-node next-hop tables for every destination host.
#[derive(Debug, Default)]
pub struct RoutingTable {
    dests: Vec<Dest>,
    classes: usize,
    /// Per node: offset of its (shared) row in `rows`, or [`NO_TABLE`] for a
    /// host with a single port (it always sends on port 0).
    node_row: Vec<u32>,
    /// Deduplicated rows of `classes` ECMP group ids each.
    rows: Vec<u32>,
    /// ECMP groups: `(start, len)` into `ports`; group 0 is the empty set.
    groups: Vec<(u32, u32)>,
    ports: Vec<u16>,
    salt: Vec<u64>,
}

const NO_TABLE: u32 = u32::MAX;
const NO_CLASS: u32 = u32::MAX;

impl RoutingTable {
    /// Builds the tables. `adj[u]` lists `(neighbour, local port index)`.
    pub fn build(kinds: &[NodeKind], adj: &[Vec<(usize, u16)>], seed: u64) -> RoutingTable {
        let n = kinds.len();
        // Destination classes, numbered in node order of first appearance.
        let mut dests = vec![Dest { class: NO_CLASS, switch: u32::MAX, port: 0 }; n];
        let mut class_of_switch: BTreeMap<usize, u32> = BTreeMap::new();
        let mut representative: Vec<usize> = Vec::new();
        for h in 0..n {
            if kinds[h] != NodeKind::Host {
                continue;
            }
            let single = adj[h].len() == 1 && kinds[adj[h][0].0] == NodeKind::Switch;
            if single {
                let s = adj[h][0].0;
                let port = adj[s].iter().find(|&&(v, _)| v == h).expect("links are symmetric").1;
                let next = representative.len() as u32;
                let class = *class_of_switch.entry(s).or_insert(next);
                if class == next {
                    representative.push(h);
                }
                dests[h] = Dest { class, switch: s as u32, port };
            } else {
                dests[h] = Dest { class: representative.len() as u32, switch: u32::MAX, port: 0 };
                representative.push(h);
            }
        }
        let classes = representative.len();
        // A host on one link sends everything on it (no table); a host whose
        // links are all down (a failure, `network/failure.rs`) reaches nothing.
        let has_table: Vec<bool> = (0..n).map(|u| kinds[u] == NodeKind::Switch || adj[u].len() != 1).collect();
        // Per node with a table: its index among them (the build's matrix has
        // one row per such node, not per node: hosts are most nodes).
        let mut table_of = vec![NO_TABLE; n];
        let mut tables = 0usize;
        for u in 0..n {
            if has_table[u] {
                table_of[u] = tables as u32;
                tables += 1;
            }
        }

        // Next-hop group per (node, class), by one search per class.
        let mut groups: Vec<(u32, u32)> = vec![(0, 0)];
        let mut ports: Vec<u16> = Vec::new();
        let mut interned: BTreeMap<Vec<u16>, u32> = BTreeMap::new();
        interned.insert(Vec::new(), 0);
        let mut full = vec![0u32; tables * classes];
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        for (c, &dst) in representative.iter().enumerate() {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[dst] = 0;
            queue.clear();
            queue.push_back(dst);
            while let Some(u) = queue.pop_front() {
                if kinds[u] == NodeKind::Host && u != dst {
                    continue; // hosts do not forward
                }
                for &(v, _) in &adj[u] {
                    if dist[v] == u32::MAX {
                        dist[v] = dist[u] + 1;
                        queue.push_back(v);
                    }
                }
            }
            for u in 0..n {
                if !has_table[u] || u == dst || dist[u] == u32::MAX {
                    continue;
                }
                let set: Vec<u16> = adj[u]
                    .iter()
                    .filter(|&&(v, _)| dist[v] + 1 == dist[u] && (kinds[v] == NodeKind::Switch || v == dst))
                    .map(|&(_, p)| p)
                    .collect();
                let g = *interned.entry(set).or_insert_with_key(|set| {
                    groups.push((ports.len() as u32, set.len() as u32));
                    ports.extend_from_slice(set);
                    (groups.len() - 1) as u32
                });
                full[table_of[u] as usize * classes + c] = g;
            }
        }

        // Rows: the own class of a switch is never read (its hosts are reached
        // by their port); give it the row's most common entry, then share rows.
        let mut node_row = vec![NO_TABLE; n];
        let mut rows: Vec<u32> = Vec::new();
        let mut seen: BTreeMap<Vec<u32>, u32> = BTreeMap::new();
        for u in 0..n {
            if !has_table[u] {
                continue;
            }
            let t = table_of[u] as usize;
            let mut row = full[t * classes..(t + 1) * classes].to_vec();
            if let Some(&own) = class_of_switch.get(&u) {
                row[own as usize] = most_common(&row, own as usize);
            }
            let offset = *seen.entry(row).or_insert_with_key(|row| {
                rows.extend_from_slice(row);
                (rows.len() - classes) as u32
            });
            node_row[u] = offset;
        }
        let salt = (0..n as u64).map(|u| mix64(seed ^ mix64(u ^ 0x5eed_ec3a))).collect();
        RoutingTable { dests, classes, node_row, rows, groups, ports, salt }
    }

    /// One table in which node `u` routes as `tables[pick[u]]` does, for
    /// nodes that do not all know the same links are down. The tables must
    /// reach the hosts alike (built with the same hosts' links up, so with
    /// the same destination classes); `None` if they do not.
    pub fn merge(tables: &[RoutingTable], pick: &[usize]) -> Option<RoutingTable> {
        let first = tables.first()?;
        if tables.iter().any(|t| t.dests != first.dests || t.node_row.len() != pick.len()) {
            return None;
        }
        let (mut rows, mut groups, mut ports) = (Vec::new(), Vec::new(), Vec::new());
        let mut node_row = vec![NO_TABLE; pick.len()];
        for (k, table) in tables.iter().enumerate() {
            let (row_base, group_base, port_base) = (rows.len() as u32, groups.len() as u32, ports.len() as u32);
            rows.extend(table.rows.iter().map(|&g| g + group_base));
            groups.extend(table.groups.iter().map(|&(start, len)| (start + port_base, len)));
            ports.extend_from_slice(&table.ports);
            for (u, &p) in pick.iter().enumerate() {
                if p == k && table.node_row[u] != NO_TABLE {
                    node_row[u] = table.node_row[u] + row_base;
                }
            }
        }
        Some(RoutingTable {
            dests: first.dests.clone(),
            classes: first.classes,
            node_row,
            rows,
            groups,
            ports,
            salt: first.salt.clone(),
        })
    }

    /// Bytes the tables occupy.
    pub fn memory_bytes(&self) -> usize {
        self.dests.len() * std::mem::size_of::<Dest>()
            + self.node_row.len() * 4
            + self.rows.len() * 4
            + self.groups.len() * 8
            + self.ports.len() * 2
            + self.salt.len() * 8
    }

    /// All next-hop ports (local indices) from `node` towards host `dst`.
    #[inline]
    pub fn next_hops(&self, node: usize, dst: usize) -> &[u16] {
        let row = self.node_row[node];
        if row == NO_TABLE {
            return &[0];
        }
        let d = &self.dests[dst];
        if d.switch == node as u32 {
            return std::slice::from_ref(&d.port);
        }
        if d.class == NO_CLASS {
            return &[];
        }
        let (start, len) = self.groups[self.rows[row as usize + d.class as usize] as usize];
        &self.ports[start as usize..(start + len) as usize]
    }

    /// The port a flow with `hash` takes from `node` towards `dst`, if any.
    #[inline]
    pub fn route(&self, node: usize, dst: usize, hash: u64) -> Option<u16> {
        let hops = self.next_hops(node, dst);
        match hops.len() {
            0 => None,
            1 => Some(hops[0]),
            n => {
                let x = mix64(hash ^ self.salt[node]);
                Some(hops[((x as u128 * n as u128) >> 64) as usize])
            }
        }
    }

    /// Rows stored after sharing (for tests and benchmarks).
    pub fn distinct_rows(&self) -> usize {
        self.rows.len() / self.classes.max(1)
    }
}

/// The most frequent value of `row` outside position `skip` (the smallest on a tie; 0 if none).
fn most_common(row: &[u32], skip: usize) -> u32 {
    let mut counts: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, &g) in row.iter().enumerate() {
        if i != skip {
            *counts.entry(g).or_default() += 1;
        }
    }
    let mut best = (0, 0);
    for (g, c) in counts {
        if c > best.1 {
            best = (g, c);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::topology::Graph;
    use crate::network::topology::{HostsPerLeaf, LinkConfig, NodeKindConfig, TopologyConfig};

    fn adjacency(g: &Graph) -> Vec<Vec<(usize, u16)>> {
        let mut adj = vec![Vec::new(); g.names.len()];
        for &(a, b, _) in &g.links {
            let pa = adj[a].len() as u16;
            adj[a].push((b, pa));
            let pb = adj[b].len() as u16;
            adj[b].push((a, pb));
        }
        adj
    }

    fn leaf_spine(spines: u32) -> Graph {
        let l = LinkConfig { rate_bps: 1, delay_ps: 0, loss: 0.0 };
        Graph::build(
            &TopologyConfig::LeafSpine {
                leaves: 2,
                spines,
                hosts_per_leaf: HostsPerLeaf::Same(2),
                host_link: l,
                fabric_link: l,
                links_per_spine: 1,
            },
            "t",
        )
        .unwrap()
    }

    fn id(g: &Graph, name: &str) -> usize {
        g.names.iter().position(|n| n == name).unwrap()
    }

    #[test]
    fn shortest_paths_in_a_leaf_spine() {
        let g = leaf_spine(4);
        let adj = adjacency(&g);
        let rt = RoutingTable::build(&g.kinds, &adj, 1);
        let leaf0 = id(&g, "leaf0");
        // From leaf0 to a host on leaf1: all four spine uplinks (ports 0..4).
        assert_eq!(rt.next_hops(leaf0, id(&g, "h3")), &[0, 1, 2, 3]);
        // From leaf0 to its own host h1: the single down port to h1.
        let down = adj[leaf0].iter().find(|(v, _)| *v == id(&g, "h1")).unwrap().1;
        assert_eq!(rt.next_hops(leaf0, id(&g, "h1")), &[down]);
        // Spine to h2 (on leaf1): the one port to leaf1.
        let spine0 = id(&g, "spine0");
        let to_leaf1 = adj[spine0].iter().find(|(v, _)| *v == id(&g, "leaf1")).unwrap().1;
        assert_eq!(rt.next_hops(spine0, id(&g, "h2")), &[to_leaf1]);
        // Hosts are never transit: h0's table has just its uplink.
        assert_eq!(rt.route(id(&g, "h0"), id(&g, "h3"), 42), Some(0));
    }

    #[test]
    fn a_merged_table_routes_each_node_as_the_table_it_picks() {
        // Before and after leaf0's first uplink (to spine0) is gone: the
        // merged table answers for leaf0 as the new one and for every other
        // node as the old one, and the tables must reach the hosts alike.
        let g = leaf_spine(2);
        let adj = adjacency(&g);
        let (leaf0, spine0) = (id(&g, "leaf0"), id(&g, "spine0"));
        let without: Vec<Vec<(usize, u16)>> = adj
            .iter()
            .enumerate()
            .map(|(u, links)| {
                links
                    .iter()
                    .copied()
                    .filter(|&(v, _)| !((u, v) == (leaf0, spine0) || (u, v) == (spine0, leaf0)))
                    .collect()
            })
            .collect();
        let (old, new) = (RoutingTable::build(&g.kinds, &adj, 3), RoutingTable::build(&g.kinds, &without, 3));
        let pick: Vec<usize> = (0..g.names.len()).map(|u| usize::from(u == leaf0)).collect();
        let merged = RoutingTable::merge(&[old, new], &pick).expect("same hosts reached alike");
        let (old, new) = (RoutingTable::build(&g.kinds, &adj, 3), RoutingTable::build(&g.kinds, &without, 3));
        for u in 0..g.names.len() {
            for d in (0..g.names.len()).filter(|&d| g.kinds[d] == NodeKind::Host && d != u) {
                let want = if u == leaf0 { new.next_hops(u, d) } else { old.next_hops(u, d) };
                assert_eq!(merged.next_hops(u, d), want, "{} to {}", g.names[u], g.names[d]);
            }
        }
        assert_eq!(merged.next_hops(leaf0, id(&g, "h3")).len(), 1);
        assert_eq!(merged.next_hops(id(&g, "leaf1"), id(&g, "h0")).len(), 2, "leaf1 still uses both spines");
        // A host's only link gone changes how it is reached: no merge.
        let h0 = id(&g, "h0");
        let cut: Vec<Vec<(usize, u16)>> = adj
            .iter()
            .enumerate()
            .map(|(u, links)| links.iter().copied().filter(|&(v, _)| u != h0 && v != h0).collect())
            .collect();
        let tables = [RoutingTable::build(&g.kinds, &adj, 3), RoutingTable::build(&g.kinds, &cut, 3)];
        assert!(RoutingTable::merge(&tables, &pick).is_none());
    }

    #[test]
    fn ecmp_spreads_flows_evenly_and_is_stable_per_flow() {
        let g = leaf_spine(4);
        let adj = adjacency(&g);
        let rt = RoutingTable::build(&g.kinds, &adj, 7);
        let (leaf0, h3) = (id(&g, "leaf0"), id(&g, "h3"));
        let mut counts = [0u32; 4];
        let flows = 40_000u64;
        for f in 0..flows {
            let hash = mix64(f);
            let p = rt.route(leaf0, h3, hash).unwrap();
            assert_eq!(rt.route(leaf0, h3, hash), Some(p), "per-flow choice is stable");
            counts[p as usize] += 1;
        }
        let expect = flows as f64 / 4.0;
        for c in counts {
            // Binomial std-dev is ~87 flows; allow 4 sigma.
            assert!((c as f64 - expect).abs() < 350.0, "uneven spread {counts:?}");
        }
    }

    #[test]
    fn different_switches_hash_independently() {
        let g = leaf_spine(2);
        let adj = adjacency(&g);
        let rt = RoutingTable::build(&g.kinds, &adj, 3);
        let (leaf0, leaf1) = (id(&g, "leaf0"), id(&g, "leaf1"));
        let (h0, h3) = (id(&g, "h0"), id(&g, "h3"));
        let same = (0..10_000u64)
            .filter(|&f| {
                let h = mix64(f);
                rt.route(leaf0, h3, h) == rt.route(leaf1, h0, h)
            })
            .count();
        // Independent choices agree about half of the time.
        assert!((4_500..5_500).contains(&same), "{same}");
    }

    /// Next hops from every node to every destination by one search per
    /// destination host, with no sharing: what the compact table must equal.
    fn reference(kinds: &[NodeKind], adj: &[Vec<(usize, u16)>]) -> Vec<Vec<Vec<u16>>> {
        let n = kinds.len();
        let mut out = vec![vec![Vec::new(); n]; n];
        for dst in 0..n {
            if kinds[dst] != NodeKind::Host {
                continue;
            }
            let mut dist = vec![u32::MAX; n];
            dist[dst] = 0;
            let mut queue = VecDeque::from([dst]);
            while let Some(u) = queue.pop_front() {
                if kinds[u] == NodeKind::Host && u != dst {
                    continue;
                }
                for &(v, _) in &adj[u] {
                    if dist[v] == u32::MAX {
                        dist[v] = dist[u] + 1;
                        queue.push_back(v);
                    }
                }
            }
            for u in 0..n {
                if u == dst || dist[u] == u32::MAX {
                    continue;
                }
                out[u][dst] = adj[u]
                    .iter()
                    .filter(|&&(v, _)| dist[v] + 1 == dist[u] && (kinds[v] == NodeKind::Switch || v == dst))
                    .map(|&(_, p)| p)
                    .collect();
            }
        }
        out
    }

    fn assert_same_as_reference(g: &Graph) {
        let adj = adjacency(g);
        let rt = RoutingTable::build(&g.kinds, &adj, 11);
        let want = reference(&g.kinds, &adj);
        for u in 0..g.names.len() {
            let table = g.kinds[u] == NodeKind::Switch || adj[u].len() > 1;
            for dst in 0..g.names.len() {
                let got = rt.next_hops(u, dst);
                if !table {
                    assert_eq!(got, &[0], "single-port host {} always uses its link", g.names[u]);
                } else {
                    assert_eq!(got, want[u][dst].as_slice(), "{} -> {}", g.names[u], g.names[dst]);
                }
            }
        }
    }

    fn explicit(nodes: &[(&str, NodeKindConfig)], links: &[(&str, &str)]) -> Graph {
        use crate::network::topology::{ExplicitLink, ExplicitNode};
        let nodes = nodes.iter().map(|&(name, kind)| ExplicitNode { name: name.into(), kind }).collect();
        let links = links
            .iter()
            .map(|&(a, b)| ExplicitLink { a: a.into(), b: b.into(), rate_bps: 1, delay_ps: 0, loss: 0.0 })
            .collect();
        Graph::build(&TopologyConfig::Explicit { nodes, links }, "t").unwrap()
    }

    #[test]
    fn compact_tables_give_every_route_of_a_full_table() {
        let l = LinkConfig { rate_bps: 1, delay_ps: 0, loss: 0.0 };
        for k in [2, 4, 6] {
            assert_same_as_reference(&Graph::build(&TopologyConfig::FatTree { k, link: l }, "t").unwrap());
        }
        assert_same_as_reference(&leaf_spine(4));
        assert_same_as_reference(
            &Graph::build(
                &TopologyConfig::LeafSpine {
                    leaves: 3,
                    spines: 2,
                    hosts_per_leaf: HostsPerLeaf::Each(vec![3, 1, 2]),
                    host_link: l,
                    fabric_link: l,
                    links_per_spine: 2,
                },
                "t",
            )
            .unwrap(),
        );
        assert_same_as_reference(
            &Graph::build(&TopologyConfig::Dumbbell { left: 2, right: 3, edge_link: l, bottleneck_link: l }, "t")
                .unwrap(),
        );
        // Multi-homed hosts: one between two switches (never transit), one with
        // two parallel links to a switch.
        use NodeKindConfig::{Host, Switch};
        assert_same_as_reference(&explicit(
            &[
                ("s0", Switch),
                ("s1", Switch),
                ("s2", Switch),
                ("dual", Host),
                ("twice", Host),
                ("a", Host),
                ("b", Host),
                ("c", Host),
            ],
            &[
                ("s0", "s1"),
                ("s1", "s2"),
                ("dual", "s0"),
                ("dual", "s2"),
                ("twice", "s1"),
                ("twice", "s1"),
                ("a", "s0"),
                ("b", "s0"),
                ("c", "s2"),
            ],
        ));
    }

    #[test]
    fn fat_tree_rows_are_shared_by_layer() {
        let l = LinkConfig { rate_bps: 1, delay_ps: 0, loss: 0.0 };
        let k = 8;
        let g = Graph::build(&TopologyConfig::FatTree { k, link: l }, "t").unwrap();
        let rt = RoutingTable::build(&g.kinds, &adjacency(&g), 1);
        // One row for all cores, one for the edges, one per pod for aggregation.
        assert_eq!(rt.distinct_rows(), 1 + 1 + k as usize);
        assert_eq!(rt.classes, (k * k / 2) as usize, "one class per edge switch");
    }

    #[test]
    fn fat_tree_paths_use_all_cores() {
        let l = LinkConfig { rate_bps: 1, delay_ps: 0, loss: 0.0 };
        let g = Graph::build(&TopologyConfig::FatTree { k: 4, link: l }, "t").unwrap();
        let adj = adjacency(&g);
        let rt = RoutingTable::build(&g.kinds, &adj, 1);
        // Edge switch to a host in another pod: 2 agg uplinks; agg: 2 core uplinks.
        let e = id(&g, "edge0_0");
        let far = id(&g, "h15");
        assert_eq!(rt.next_hops(e, far).len(), 2);
        assert_eq!(rt.next_hops(id(&g, "agg0_0"), far).len(), 2);
        // Walking from h0 to h15 always takes 6 hops, whatever the hash.
        for f in 0..100u64 {
            let (mut u, mut hops) = (id(&g, "h0"), 0);
            while u != far {
                let p = rt.route(u, far, mix64(f)).unwrap();
                u = adj[u][p as usize].0;
                hops += 1;
            }
            assert_eq!(hops, 6);
        }
    }
}
