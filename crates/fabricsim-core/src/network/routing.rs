//! Shortest-path routing with per-flow ECMP.
//!
//! For every destination host a breadth-first search over the graph gives each
//! node its hop distance; a node's next hops towards that host are the ports whose
//! neighbour is one hop closer. Hosts never forward, so they are never used as
//! transit. When several next hops exist, a switch picks one by hashing the
//! flow's 5-tuple hash with its own salt (derived from the seed and the switch
//! id), so a flow keeps one path and different switches make independent choices.

use crate::network::topology::NodeKind;
use crate::rng::mix64;
use std::collections::{BTreeMap, VecDeque};

/// Per-node next-hop tables for every destination host.
#[derive(Debug, Default)]
pub struct RoutingTable {
    host_index: Vec<u32>,
    hosts: usize,
    /// Per node: offset of its rows in `rows`, or `u32::MAX` if it has no table
    /// (a host with a single port always uses port 0).
    node_base: Vec<u32>,
    /// Per (node, dst host): packed `start << 8 | len` into `ports`.
    rows: Vec<u32>,
    ports: Vec<u16>,
    salt: Vec<u64>,
}

const NO_TABLE: u32 = u32::MAX;

impl RoutingTable {
    /// Builds the tables. `adj[u]` lists `(neighbour, local port index)`.
    pub fn build(kinds: &[NodeKind], adj: &[Vec<(usize, u16)>], seed: u64) -> RoutingTable {
        let n = kinds.len();
        let mut host_index = vec![u32::MAX; n];
        let mut hosts = 0usize;
        for (i, k) in kinds.iter().enumerate() {
            if *k == NodeKind::Host {
                host_index[i] = hosts as u32;
                hosts += 1;
            }
        }
        let mut node_base = vec![NO_TABLE; n];
        let mut n_tables = 0u32;
        for u in 0..n {
            if kinds[u] == NodeKind::Switch || adj[u].len() > 1 {
                node_base[u] = n_tables;
                n_tables += 1;
            }
        }
        let mut rows = vec![0u32; n_tables as usize * hosts];
        let mut ports: Vec<u16> = Vec::new();
        let mut dedupe: Vec<BTreeMap<Vec<u16>, u32>> = vec![BTreeMap::new(); n];
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        for dst in 0..n {
            if kinds[dst] != NodeKind::Host {
                continue;
            }
            let h = host_index[dst] as usize;
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
                if node_base[u] == NO_TABLE || u == dst || dist[u] == u32::MAX {
                    continue;
                }
                let set: Vec<u16> = adj[u]
                    .iter()
                    .filter(|&&(v, _)| dist[v] + 1 == dist[u] && (kinds[v] == NodeKind::Switch || v == dst))
                    .map(|&(_, p)| p)
                    .collect();
                if set.is_empty() {
                    continue;
                }
                let start = *dedupe[u].entry(set.clone()).or_insert_with(|| {
                    let s = ports.len() as u32;
                    ports.extend_from_slice(&set);
                    s
                });
                let len = set.len().min(255) as u32;
                rows[node_base[u] as usize * hosts + h] = (start << 8) | len;
            }
        }
        let salt = (0..n as u64).map(|u| mix64(seed ^ mix64(u ^ 0x5eed_ec3a))).collect();
        RoutingTable { host_index, hosts, node_base, rows, ports, salt }
    }

    /// Bytes the tables occupy.
    pub fn memory_bytes(&self) -> usize {
        self.host_index.len() * 4
            + self.node_base.len() * 4
            + self.rows.len() * 4
            + self.ports.len() * 2
            + self.salt.len() * 8
    }

    /// All next-hop ports (local indices) from `node` towards host `dst`.
    pub fn next_hops(&self, node: usize, dst: usize) -> &[u16] {
        let base = self.node_base[node];
        if base == NO_TABLE {
            return &[0];
        }
        let h = self.host_index[dst];
        if h == u32::MAX {
            return &[];
        }
        let row = self.rows[base as usize * self.hosts + h as usize];
        let (start, len) = ((row >> 8) as usize, (row & 0xff) as usize);
        &self.ports[start..start + len]
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{HostsPerLeaf, LinkConfig, TopologyConfig};
    use crate::network::topology::Graph;

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
