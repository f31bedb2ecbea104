//! Topology builders: star, dumbbell, leaf-spine, k-ary fat-tree and explicit
//! node/link lists, all producing one plain [`Graph`].
//!
//! ```text
//!   star            dumbbell                 leaf-spine              fat-tree (k=4)
//!    h0  h1      left0         right0      spine0   spine1          core0..core3
//!      \ /          \          /             |  \  /  |             agg{p}_{i}
//!      sw0        sw_left====sw_right      leaf0    leaf1           edge{p}_{i}
//!      / \          /          \           / | \    / | \           h0..h15
//!    h2  h3      left1         right1     h0 h1 h2 h3 h4 h5
//! ```

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub rate_bps: u64,
    pub delay_ps: u64,
    /// Probability that the link loses a packet, in each direction.
    #[serde(default)]
    pub loss: f64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum HostsPerLeaf {
    Same(u32),
    Each(Vec<u32>),
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExplicitNode {
    pub name: String,
    pub kind: NodeKindConfig,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NodeKindConfig {
    Host,
    Switch,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExplicitLink {
    pub a: String,
    pub b: String,
    pub rate_bps: u64,
    pub delay_ps: u64,
    #[serde(default)]
    pub loss: f64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TopologyConfig {
    Star {
        hosts: u32,
        link: LinkConfig,
    },
    Dumbbell {
        left: u32,
        right: u32,
        edge_link: LinkConfig,
        bottleneck_link: LinkConfig,
    },
    LeafSpine {
        leaves: u32,
        spines: u32,
        hosts_per_leaf: HostsPerLeaf,
        host_link: LinkConfig,
        fabric_link: LinkConfig,
        #[serde(default = "default_one")]
        links_per_spine: u32,
    },
    FatTree {
        k: u32,
        link: LinkConfig,
    },
    Explicit {
        nodes: Vec<ExplicitNode>,
        links: Vec<ExplicitLink>,
    },
}

fn default_one() -> u32 {
    1
}

/// Whether a node is an end host or a switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Host,
    Switch,
}

impl NodeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Host => "host",
            NodeKind::Switch => "switch",
        }
    }
}

/// A built topology: named nodes and full-duplex links between them.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    pub names: Vec<String>,
    pub kinds: Vec<NodeKind>,
    /// `(a, b, link)` with node indices.
    pub links: Vec<(usize, usize, LinkConfig)>,
}

impl Graph {
    fn add(&mut self, name: String, kind: NodeKind) -> usize {
        self.names.push(name);
        self.kinds.push(kind);
        self.names.len() - 1
    }

    fn connect(&mut self, a: usize, b: usize, link: LinkConfig) {
        self.links.push((a, b, link));
    }

    /// Builds the graph described by `cfg`, checking it. `path` prefixes error fields.
    pub fn build(cfg: &TopologyConfig, path: &str) -> Result<Graph, ConfigError> {
        let mut g = Graph::default();
        match cfg {
            TopologyConfig::Star { hosts, link } => {
                positive(*hosts, &format!("{path}.hosts"))?;
                check_link(link, &format!("{path}.link"))?;
                let sw = g.add("sw0".into(), NodeKind::Switch);
                for i in 0..*hosts {
                    let h = g.add(format!("h{i}"), NodeKind::Host);
                    g.connect(h, sw, *link);
                }
            }
            TopologyConfig::Dumbbell { left, right, edge_link, bottleneck_link } => {
                positive(*left, &format!("{path}.left"))?;
                positive(*right, &format!("{path}.right"))?;
                check_link(edge_link, &format!("{path}.edge_link"))?;
                check_link(bottleneck_link, &format!("{path}.bottleneck_link"))?;
                let l = g.add("sw_left".into(), NodeKind::Switch);
                let r = g.add("sw_right".into(), NodeKind::Switch);
                g.connect(l, r, *bottleneck_link);
                for i in 0..*left {
                    let h = g.add(format!("left{i}"), NodeKind::Host);
                    g.connect(h, l, *edge_link);
                }
                for i in 0..*right {
                    let h = g.add(format!("right{i}"), NodeKind::Host);
                    g.connect(h, r, *edge_link);
                }
            }
            TopologyConfig::LeafSpine { leaves, spines, hosts_per_leaf, host_link, fabric_link, links_per_spine } => {
                positive(*leaves, &format!("{path}.leaves"))?;
                positive(*links_per_spine, &format!("{path}.links_per_spine"))?;
                if *spines == 0 && *leaves > 1 {
                    return Err(ConfigError::new(
                        format!("{path}.spines"),
                        "must be >= 1 when there is more than one leaf",
                    ));
                }
                check_link(host_link, &format!("{path}.host_link"))?;
                check_link(fabric_link, &format!("{path}.fabric_link"))?;
                let counts: Vec<u32> = match hosts_per_leaf {
                    HostsPerLeaf::Same(n) => vec![*n; *leaves as usize],
                    HostsPerLeaf::Each(v) => {
                        if v.len() != *leaves as usize {
                            return Err(ConfigError::new(
                                format!("{path}.hosts_per_leaf"),
                                format!("has {} entries but there are {} leaves", v.len(), leaves),
                            ));
                        }
                        v.clone()
                    }
                };
                let leaf_ids: Vec<usize> = (0..*leaves).map(|i| g.add(format!("leaf{i}"), NodeKind::Switch)).collect();
                let spine_ids: Vec<usize> =
                    (0..*spines).map(|j| g.add(format!("spine{j}"), NodeKind::Switch)).collect();
                for &l in &leaf_ids {
                    for &s in &spine_ids {
                        for _ in 0..*links_per_spine {
                            g.connect(l, s, *fabric_link);
                        }
                    }
                }
                let mut n = 0;
                for (i, &l) in leaf_ids.iter().enumerate() {
                    for _ in 0..counts[i] {
                        let h = g.add(format!("h{n}"), NodeKind::Host);
                        g.connect(h, l, *host_link);
                        n += 1;
                    }
                }
                if n == 0 {
                    return Err(ConfigError::new(format!("{path}.hosts_per_leaf"), "no hosts in the topology"));
                }
            }
            TopologyConfig::FatTree { k, link } => {
                if *k < 2 || k % 2 != 0 || *k > 64 {
                    return Err(ConfigError::new(
                        format!("{path}.k"),
                        format!("must be an even number between 2 and 64 (got {k})"),
                    ));
                }
                check_link(link, &format!("{path}.link"))?;
                let half = (k / 2) as usize;
                let cores: Vec<usize> = (0..half * half).map(|i| g.add(format!("core{i}"), NodeKind::Switch)).collect();
                let mut n = 0;
                for p in 0..*k as usize {
                    let aggs: Vec<usize> = (0..half).map(|i| g.add(format!("agg{p}_{i}"), NodeKind::Switch)).collect();
                    let edges: Vec<usize> =
                        (0..half).map(|i| g.add(format!("edge{p}_{i}"), NodeKind::Switch)).collect();
                    for (i, &a) in aggs.iter().enumerate() {
                        for j in 0..half {
                            g.connect(a, cores[i * half + j], *link);
                        }
                        for &e in &edges {
                            g.connect(e, a, *link);
                        }
                    }
                    for &e in &edges {
                        for _ in 0..half {
                            let h = g.add(format!("h{n}"), NodeKind::Host);
                            g.connect(h, e, *link);
                            n += 1;
                        }
                    }
                }
            }
            TopologyConfig::Explicit { nodes, links } => {
                if nodes.is_empty() {
                    return Err(ConfigError::new(format!("{path}.nodes"), "must list at least one node"));
                }
                let mut index = BTreeMap::new();
                for (i, n) in nodes.iter().enumerate() {
                    if n.name.is_empty() {
                        return Err(ConfigError::new(format!("{path}.nodes[{i}].name"), "must not be empty"));
                    }
                    let kind = match n.kind {
                        NodeKindConfig::Host => NodeKind::Host,
                        NodeKindConfig::Switch => NodeKind::Switch,
                    };
                    if index.insert(n.name.clone(), g.add(n.name.clone(), kind)).is_some() {
                        return Err(ConfigError::new(
                            format!("{path}.nodes[{i}].name"),
                            format!("duplicate node name '{}'", n.name),
                        ));
                    }
                }
                for (i, ExplicitLink { a, b, rate_bps, delay_ps, loss }) in links.iter().enumerate() {
                    let lp = format!("{path}.links[{i}]");
                    let find = |name: &str, field: &str| {
                        index
                            .get(name)
                            .copied()
                            .ok_or_else(|| ConfigError::new(format!("{lp}.{field}"), format!("unknown node '{name}'")))
                    };
                    let (ia, ib) = (find(a, "a")?, find(b, "b")?);
                    if ia == ib {
                        return Err(ConfigError::new(lp, format!("links node '{a}' to itself")));
                    }
                    let l = LinkConfig { rate_bps: *rate_bps, delay_ps: *delay_ps, loss: *loss };
                    check_link(&l, &lp)?;
                    g.connect(ia, ib, l);
                }
            }
        }
        g.check_connected(path)?;
        Ok(g)
    }

    /// Parts of the topology: nodes joined through switches share a part
    /// (hosts do not forward, so two hosts linked only to each other form a part).
    pub fn parts(&self) -> Vec<u32> {
        let n = self.names.len();
        let mut adj = vec![Vec::new(); n];
        for &(a, b, _) in &self.links {
            adj[a].push(b);
            adj[b].push(a);
        }
        let mut part = vec![u32::MAX; n];
        let mut next = 0;
        for start in 0..n {
            if part[start] != u32::MAX {
                continue;
            }
            part[start] = next;
            let mut queue = VecDeque::from([start]);
            while let Some(u) = queue.pop_front() {
                // Hosts do not forward: do not expand through a host other than the start.
                if self.kinds[u] == NodeKind::Host && u != start {
                    continue;
                }
                for &v in &adj[u] {
                    if part[v] == u32::MAX {
                        part[v] = next;
                        queue.push_back(v);
                    }
                }
            }
            next += 1;
        }
        part
    }

    /// Every host must reach another host through switches. A topology may hold
    /// several independent networks (to compare devices side by side); traffic
    /// between them is rejected when the traffic is built.
    fn check_connected(&self, path: &str) -> Result<(), ConfigError> {
        let hosts: Vec<usize> = (0..self.names.len()).filter(|&i| self.kinds[i] == NodeKind::Host).collect();
        if hosts.is_empty() {
            return Err(ConfigError::new(path, "the topology has no hosts"));
        }
        if hosts.len() == 1 {
            return Ok(());
        }
        let part = self.parts();
        for &h in &hosts {
            if !hosts.iter().any(|&o| o != h && part[o] == part[h]) {
                return Err(ConfigError::new(
                    path,
                    format!(
                        "disconnected topology: host '{}' cannot reach any other host through switches",
                        self.names[h]
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn positive(v: u32, path: &str) -> Result<(), ConfigError> {
    if v == 0 {
        Err(ConfigError::new(path, "must be >= 1"))
    } else {
        Ok(())
    }
}

fn check_link(l: &LinkConfig, path: &str) -> Result<(), ConfigError> {
    if l.rate_bps == 0 {
        return Err(ConfigError::new(format!("{path}.rate"), "must be a positive rate"));
    }
    if !(0.0..1.0).contains(&l.loss) {
        return Err(ConfigError::new(format!("{path}.loss"), format!("must be in [0, 1) (got {})", l.loss)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link() -> LinkConfig {
        LinkConfig { rate_bps: 100_000_000_000, delay_ps: 1_000_000, loss: 0.0 }
    }

    #[test]
    fn fat_tree_has_the_textbook_counts() {
        let g = Graph::build(&TopologyConfig::FatTree { k: 4, link: link() }, "topology").unwrap();
        let hosts = g.kinds.iter().filter(|k| **k == NodeKind::Host).count();
        assert_eq!(hosts, 16); // k^3/4
        assert_eq!(g.names.len() - hosts, 20); // 5k^2/4 switches
        assert_eq!(g.links.len(), 48); // 3k^3/4 links
    }

    #[test]
    fn leaf_spine_with_uneven_hosts() {
        let g = Graph::build(
            &TopologyConfig::LeafSpine {
                leaves: 2,
                spines: 2,
                hosts_per_leaf: HostsPerLeaf::Each(vec![24, 1]),
                host_link: link(),
                fabric_link: link(),
                links_per_spine: 2,
            },
            "topology",
        )
        .unwrap();
        assert_eq!(g.kinds.iter().filter(|k| **k == NodeKind::Host).count(), 25);
        assert_eq!(g.links.len(), 2 * 2 * 2 + 25);
    }

    #[test]
    fn disconnected_explicit_topology_is_rejected() {
        let node = |n: &str, k| ExplicitNode { name: n.into(), kind: k };
        let cfg = TopologyConfig::Explicit {
            nodes: vec![
                node("a", NodeKindConfig::Host),
                node("b", NodeKindConfig::Host),
                node("s", NodeKindConfig::Switch),
            ],
            links: vec![ExplicitLink { a: "a".into(), b: "s".into(), rate_bps: 1, delay_ps: 0, loss: 0.0 }],
        };
        let err = Graph::build(&cfg, "topology").unwrap_err();
        assert!(err.message.contains("disconnected"), "{err}");
    }
}
