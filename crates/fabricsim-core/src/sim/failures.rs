//! Link failures in the simulation (`network/failure.rs`): the events that
//! take a link down and bring it back, the drops on its wires, and the routes
//! recomputed `detect` after each change; and impairments, which change a
//! link's rate and random loss for a while and leave the routes alone.

use super::{Event, Simulation};
use crate::error::ConfigError;
use crate::ids::{ChannelId, PacketId};
use crate::network::routing::RoutingTable;
use crate::network::topology::{Graph, NodeKind};
use crate::stats::DropReason;
use crate::units::{Rate, SimTime};

/// One configured failure, resolved.
#[derive(Debug, Clone)]
struct Failure {
    /// Indices of its links in topology order (one, or all of a node's).
    links: Vec<usize>,
    /// Their wires (two per link, one per direction).
    wires: Vec<ChannelId>,
    /// For an impairment, what it does to them while it holds.
    impairment: Option<Impairment>,
    /// The nodes that move their routes together, nearest first: per stage,
    /// its delay after the first and its nodes (without `per_hop`, one stage
    /// that names no node: every node learns at once).
    stages: Vec<(u64, Vec<u32>)>,
    /// The next stage of the failure's reroute (`[up, down]`).
    next_stage: [usize; 2],
}

/// What an impairment sets on its wires while it holds.
#[derive(Debug, Clone, Copy)]
struct Impairment {
    rate: Option<Rate>,
    loss: f64,
    on: bool,
}

/// The failures of a run and what routing knows of them.
#[derive(Debug, Default)]
pub(super) struct Failures {
    failures: Vec<Failure>,
    /// Per wire: how many failures have it down now, and when it last went
    /// down (frames sent before that and arriving after it were on the wire
    /// when it failed).
    down: Vec<u32>,
    failed_at: Vec<SimTime>,
    /// Per failure: the nodes whose routes count it (its links down), for
    /// failures with `per_hop`; empty for the others, which every node
    /// learns at once (`all_know`).
    known: Vec<Vec<bool>>,
    all_know: Vec<bool>,
    /// Links in the topology.
    links: usize,
    /// Per wire (only with impairments): its own rate and loss, and the
    /// impairments that name it.
    nominal: Vec<(Rate, f64)>,
    impaired_by: Vec<Vec<u32>>,
    /// Counts for the summary.
    pub downs: u64,
    pub reroutes: u64,
    pub impairments: u64,
}

impl Failures {
    /// Whether the scenario has failures.
    pub fn is_empty(&self) -> bool {
        self.failures.is_empty()
    }

    /// Whether the scenario has impairments.
    /// Whether wire `c` is down now (what the port that sends onto it sees
    /// of its own link, before routing reacts).
    #[inline]
    pub fn wire_down(&self, c: ChannelId) -> bool {
        !self.down.is_empty() && self.down[c.idx()] > 0
    }

    pub fn has_impairments(&self) -> bool {
        !self.nominal.is_empty()
    }

    /// The rate wire `c` was built with (the links table reports it).
    pub fn nominal_rate(&self, c: usize) -> Option<Rate> {
        self.nominal.get(c).map(|n| n.0)
    }
}

impl Simulation {
    /// Resolves `failures` against the topology and schedules their events.
    pub(super) fn setup_failures(&mut self, sc: &crate::config::Scenario, graph: &Graph) -> Result<(), ConfigError> {
        if sc.failures.is_empty() {
            return Ok(());
        }
        let f = &mut self.failures;
        f.down = vec![0; self.channels.len()];
        f.failed_at = vec![SimTime::ZERO; self.channels.len()];
        f.links = graph.links.len();
        let mut wires_of: Vec<Vec<ChannelId>> = vec![Vec::new(); graph.links.len()];
        for (c, ch) in self.channels.iter().enumerate() {
            wires_of[ch.link as usize].push(ChannelId(c as u32));
        }
        for (i, cfg) in sc.failures.iter().enumerate() {
            let path = format!("failures[{i}]");
            let find = |name: &str, field: String| {
                graph.names.iter().position(|n| n == name).ok_or_else(|| {
                    let known: Vec<&str> = graph.names.iter().take(8).map(|s| s.as_str()).collect();
                    let more = if graph.names.len() > 8 { ", ..." } else { "" };
                    ConfigError::new(field, format!("no node named {name:?} (nodes: {}{more})", known.join(", ")))
                })
            };
            let node = |name: &str, k: usize| find(name, format!("{path}.between[{k}]"));
            let links: Vec<usize> = match (&cfg.between, &cfg.node) {
                (Some(between), None) => {
                    let (a, b) = (node(&between[0], 0)?, node(&between[1], 1)?);
                    let parallel: Vec<usize> = (0..graph.links.len())
                        .filter(|&l| {
                            let (x, y, _) = graph.links[l];
                            (x, y) == (a, b) || (x, y) == (b, a)
                        })
                        .collect();
                    let Some(&link) = parallel.get(cfg.nth as usize) else {
                        let (field, what) = if parallel.is_empty() {
                            ("between", format!("no link joins {} and {}", between[0], between[1]))
                        } else {
                            (
                                "link",
                                format!(
                                    "{} and {} have {} links (numbered from 0)",
                                    between[0],
                                    between[1],
                                    parallel.len()
                                ),
                            )
                        };
                        return Err(ConfigError::new(format!("{path}.{field}"), what));
                    };
                    vec![link]
                }
                (None, Some(name)) => {
                    let n = find(name, format!("{path}.node"))?;
                    (0..graph.links.len()).filter(|&l| graph.links[l].0 == n || graph.links[l].1 == n).collect()
                }
                _ => return Err(ConfigError::new(path.clone(), "give either `between` (a link) or `node`")),
            };
            if let Some(until) = cfg.until_ps {
                if until <= cfg.at_ps {
                    return Err(ConfigError::new(format!("{path}.until"), "must be after `at`"));
                }
            }
            let wires: Vec<ChannelId> = links.iter().flat_map(|&l| wires_of[l].iter().copied()).collect();
            let impairment =
                if cfg.is_impairment() { Some(self.setup_impairment(i, cfg, &wires, &path)?) } else { None };
            for &c in &wires {
                self.channels[c.idx()].impaired = true;
            }
            let stages = if (cfg.per_hop_ps > 0 || !cfg.per_node_ps.is_empty()) && impairment.is_none() {
                self.staged_convergence(graph, &links, cfg, &path)?
            } else {
                // One stage at `detect`: every node learns at once (`all_know`).
                vec![(0, Vec::new())]
            };
            let staged = stages.len() > 1;
            self.failures.known.push(if staged { vec![false; graph.kinds.len()] } else { Vec::new() });
            self.failures.all_know.push(false);
            let last = stages.last().map_or(0, |s| s.0);
            self.failures.failures.push(Failure { links, wires, impairment, stages, next_stage: [0; 2] });
            if impairment.is_some() {
                self.queue.push(SimTime(cfg.at_ps), Event::Impair(i as u32, true));
                if let Some(until) = cfg.until_ps {
                    self.queue.push(SimTime(until), Event::Impair(i as u32, false));
                }
                continue;
            }
            self.queue.push(SimTime(cfg.at_ps), Event::LinkDown(i as u32));
            let offsets: Vec<u64> = self.failures.failures[i].stages.iter().map(|s| s.0).collect();
            let first = cfg.at_ps.saturating_add(cfg.detect_ps);
            for &d in &offsets {
                self.queue.push(SimTime(first.saturating_add(d)), Event::Reroute(i as u32, true));
            }
            if let Some(until) = cfg.until_ps {
                // Each node learns of the recovery after it learnt of the failure.
                let back = until.saturating_add(cfg.detect_ps);
                if staged && back <= first.saturating_add(last) {
                    return Err(ConfigError::new(
                        format!("{path}.until"),
                        format!(
                            "the last node learns of the failure at {} ps (at + detect + its delay of {last} ps, from \
                             per_hop or per_node); the link must come back after that",
                            first.saturating_add(last),
                        ),
                    ));
                }
                self.queue.push(SimTime(until), Event::LinkUp(i as u32));
                for &d in &offsets {
                    self.queue.push(SimTime(back.saturating_add(d)), Event::Reroute(i as u32, false));
                }
            }
        }
        Ok(())
    }

    /// The stages in which the nodes move their routes for a failure of
    /// `links` with `per_hop` or `per_node`: a node `h` hops from the nearest
    /// end of one of the links (the ends are 0 hops away) `h * per_hop` after
    /// the ends, or after its own delay where `per_node` names it. Hops are
    /// counted over the topology's links, through switches only (a host
    /// passes on no routing news); a node that cannot be reached from the
    /// failure moves with the farthest. A failure of a host's link changes
    /// how that host is reached for every node at once, so it cannot be
    /// staged.
    fn staged_convergence(
        &self,
        graph: &Graph,
        links: &[usize],
        cfg: &crate::network::failure::LinkFailureConfig,
        path: &str,
    ) -> Result<Vec<(u64, Vec<u32>)>, ConfigError> {
        let per_hop = cfg.per_hop_ps;
        let field = if per_hop > 0 { "per_hop" } else { "per_node" };
        let mut own = Vec::with_capacity(cfg.per_node_ps.len());
        for (name, &d) in &cfg.per_node_ps {
            let Some(u) = graph.names.iter().position(|n| n == name) else {
                let known: Vec<&str> = graph.names.iter().take(8).map(|s| s.as_str()).collect();
                let more = if graph.names.len() > 8 { ", ..." } else { "" };
                return Err(ConfigError::new(
                    format!("{path}.per_node.{name}"),
                    format!("no node named {name:?} (nodes: {}{more})", known.join(", ")),
                ));
            };
            own.push((u, d));
        }
        let n = graph.kinds.len();
        let mut adj: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &(a, b, _) in &graph.links {
            adj[a].push(b);
            adj[b].push(a);
        }
        let mut hops = vec![u32::MAX; n];
        let mut queue = std::collections::VecDeque::new();
        for &l in links {
            let (a, b, _) = graph.links[l];
            for end in [a, b] {
                if graph.kinds[end] == NodeKind::Host {
                    return Err(ConfigError::new(
                        format!("{path}.{field}"),
                        format!(
                            "applies to failures of links between switches; {} is a host, and a host's link \
                             changes how it is reached for every node at once (leave per_hop and per_node out)",
                            graph.names[end]
                        ),
                    ));
                }
                if hops[end] == u32::MAX {
                    hops[end] = 0;
                    queue.push_back(end);
                }
            }
        }
        while let Some(u) = queue.pop_front() {
            if graph.kinds[u] == NodeKind::Host {
                continue;
            }
            for &v in &adj[u] {
                if hops[v] == u32::MAX {
                    hops[v] = hops[u] + 1;
                    queue.push_back(v);
                }
            }
        }
        let farthest = hops.iter().copied().filter(|&h| h != u32::MAX).max().unwrap_or(0);
        let mut delay: Vec<u64> =
            hops.iter().map(|&h| (if h == u32::MAX { farthest } else { h } as u64).saturating_mul(per_hop)).collect();
        for (u, d) in own {
            delay[u] = d;
        }
        // One stage per distinct delay, in time order; nodes in id order within it.
        let mut by_delay: std::collections::BTreeMap<u64, Vec<u32>> = std::collections::BTreeMap::new();
        for (u, &d) in delay.iter().enumerate() {
            by_delay.entry(d).or_default().push(u as u32);
        }
        Ok(by_delay.into_iter().collect())
    }

    /// Checks impairment `i` against its wires and gets them ready: their
    /// own rates and losses recorded, a random stream on each if it may lose.
    fn setup_impairment(
        &mut self,
        i: usize,
        cfg: &crate::network::failure::LinkFailureConfig,
        wires: &[ChannelId],
        path: &str,
    ) -> Result<Impairment, ConfigError> {
        if cfg.detect_ps != 0 || cfg.per_hop_ps != 0 || !cfg.per_node_ps.is_empty() {
            let field = if cfg.detect_ps != 0 {
                "detect"
            } else if cfg.per_hop_ps != 0 {
                "per_hop"
            } else {
                "per_node"
            };
            return Err(ConfigError::new(
                format!("{path}.{field}"),
                "applies to links that go down; an impaired link (`rate`, `loss`) stays in the routes",
            ));
        }
        let loss = cfg.loss.unwrap_or(0.0);
        if !(0.0..1.0).contains(&loss) {
            return Err(ConfigError::new(format!("{path}.loss"), format!("must be in [0, 1) (got {loss})")));
        }
        let rate = match cfg.rate_bps {
            None => None,
            Some(r) => {
                for &c in wires {
                    let own = self.channels[c.idx()].rate;
                    if r == 0 || r >= own.0 {
                        return Err(ConfigError::new(
                            format!("{path}.rate"),
                            format!("must be above 0 and below the link's own {} bit/s (got {r} bit/s)", own.0),
                        ));
                    }
                }
                Some(Rate(r))
            }
        };
        let f = &mut self.failures;
        if f.nominal.is_empty() {
            f.nominal = self.channels.iter().map(|ch| (ch.rate, ch.loss)).collect();
            f.impaired_by = vec![Vec::new(); self.channels.len()];
        }
        for &c in wires {
            f.impaired_by[c.idx()].push(i as u32);
            let ch = &mut self.channels[c.idx()];
            if loss > 0.0 && ch.loss_rng.is_none() {
                ch.loss_rng = Some(crate::rng::RandomStream::new(self.seed, "link-loss", c.0 as u64));
            }
        }
        Ok(Impairment { rate, loss, on: false })
    }

    /// `Impair`: impairment `i` starts or ends; each of its wires then runs
    /// at the lowest rate in force on it (its own, or an impairment's) and
    /// loses frames at the combined probability of its own loss and of the
    /// impairments holding.
    pub(super) fn on_impair(&mut self, i: u32, on: bool) {
        let f = &mut self.failures;
        if let Some(imp) = f.failures[i as usize].impairment.as_mut() {
            imp.on = on;
        }
        if on {
            f.impairments += 1;
        }
        for k in 0..f.failures[i as usize].wires.len() {
            let c = f.failures[i as usize].wires[k];
            let (mut rate, own_loss) = f.nominal[c.idx()];
            let mut kept = 1.0 - own_loss;
            for &j in &f.impaired_by[c.idx()] {
                match f.failures[j as usize].impairment {
                    Some(imp) if imp.on => {
                        rate = imp.rate.map_or(rate, |r| r.min(rate));
                        kept *= 1.0 - imp.loss;
                    }
                    _ => {}
                }
            }
            let ch = &mut self.channels[c.idx()];
            ch.rate = rate;
            ch.loss = 1.0 - kept;
            self.ports[ch.from_port.idx()].set_rate(rate);
        }
    }

    /// `LinkDown`: failure `i`'s wires go down.
    pub(super) fn on_link_down(&mut self, i: u32) {
        let now = self.now;
        let f = &mut self.failures;
        f.downs += 1;
        for &c in &f.failures[i as usize].wires {
            f.down[c.idx()] += 1;
            f.failed_at[c.idx()] = now;
        }
    }

    /// `LinkUp`: failure `i`'s wires carry frames again.
    pub(super) fn on_link_up(&mut self, i: u32) {
        let f = &mut self.failures;
        for &c in &f.failures[i as usize].wires {
            f.down[c.idx()] -= 1;
        }
    }

    /// `Reroute`: the next stage of failure `i`'s nodes (all nodes, without
    /// `per_hop`) recompute their routes with its links down or up.
    pub(super) fn on_reroute(&mut self, i: u32, down: bool) {
        let f = &mut self.failures;
        let failure = &mut f.failures[i as usize];
        let stage = failure.next_stage[down as usize];
        failure.next_stage[down as usize] += 1;
        if f.known[i as usize].is_empty() {
            f.all_know[i as usize] = down;
        } else {
            for &u in &failure.stages[stage].1 {
                f.known[i as usize][u as usize] = down;
            }
        }
        f.reroutes += 1;
        // Nodes grouped by what they know: the failures their routes count.
        let n = self.nodes.len();
        let mut views: std::collections::BTreeMap<Vec<u32>, Vec<usize>> = Default::default();
        for u in 0..n {
            let view: Vec<u32> = (0..f.failures.len() as u32)
                .filter(|&j| {
                    let known = &f.known[j as usize];
                    if known.is_empty() {
                        f.all_know[j as usize]
                    } else {
                        known[u]
                    }
                })
                .collect();
            views.entry(view).or_default().push(u);
        }
        let tables: Vec<RoutingTable> = views.keys().map(|view| self.routes_without(view)).collect();
        self.routing = if tables.len() == 1 {
            tables.into_iter().next().expect("one view")
        } else {
            let mut pick = vec![0usize; n];
            for (k, nodes) in views.values().enumerate() {
                for &u in nodes {
                    pick[u] = k;
                }
            }
            // Staged failures never take a host's link down (checked when
            // the world is built), so every view reaches the hosts alike.
            RoutingTable::merge(&tables, &pick).expect("the views' tables reach the hosts alike")
        };
        // The memo of recent lookups answers for the old tables.
        self.prefetch.routes = Default::default();
    }

    /// The routes of a node that counts failures `view` (their links down).
    fn routes_without(&self, view: &[u32]) -> RoutingTable {
        let f = &self.failures;
        let mut down = vec![0u32; f.links];
        for &j in view {
            for &link in &f.failures[j as usize].links {
                down[link] += 1;
            }
        }
        // Every node's live links as this view sees them: (neighbour, local port).
        let adj: Vec<Vec<(usize, u16)>> = self
            .nodes
            .iter()
            .map(|n| {
                (0..n.num_ports)
                    .filter_map(|local| {
                        let ch = &self.channels[self.ports[n.port(local).idx()].channel.idx()];
                        (down[ch.link as usize] == 0).then_some((ch.to_node.idx(), local))
                    })
                    .collect()
            })
            .collect();
        let kinds: Vec<NodeKind> = self.nodes.iter().map(|n| n.kind).collect();
        RoutingTable::build(&kinds, &adj, self.seed)
    }

    /// Why impaired wire `cid` loses frame `id` arriving now, if it does: its
    /// link is down, or was when the frame left; else its random loss.
    #[cold]
    #[inline(never)]
    pub(super) fn wire_loss(&mut self, cid: ChannelId, id: PacketId) -> Option<DropReason> {
        let f = &self.failures;
        if !f.down.is_empty() {
            let ch = &self.channels[cid.idx()];
            let sent = self.pool.get(id).first_bit.0.saturating_sub(ch.delay.0);
            if f.down[cid.idx()] > 0 || sent < f.failed_at[cid.idx()].0 {
                return Some(DropReason::LinkDown);
            }
        }
        let ch = &mut self.channels[cid.idx()];
        let rng = ch.loss_rng.as_mut()?;
        (rng.next_open01() < ch.loss).then_some(DropReason::RandomLoss)
    }
}
