//! Link failures in the simulation (`network/failure.rs`): the events that
//! take a link down and bring it back, the drops on its wires, and the routes
//! recomputed `detect` after each change.

use super::{Event, Simulation};
use crate::error::ConfigError;
use crate::ids::{ChannelId, PacketId};
use crate::network::routing::RoutingTable;
use crate::network::topology::{Graph, NodeKind};
use crate::stats::DropReason;
use crate::units::SimTime;

/// One configured failure, resolved.
#[derive(Debug, Clone)]
struct Failure {
    /// Indices of its links in topology order (one, or all of a node's).
    links: Vec<usize>,
    /// Their wires (two per link, one per direction).
    wires: Vec<ChannelId>,
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
    /// Per link: how many failures routing currently counts it down for.
    routed_down: Vec<u32>,
    /// Counts for the summary.
    pub downs: u64,
    pub reroutes: u64,
}

impl Failures {
    /// Whether the scenario has failures.
    pub fn is_empty(&self) -> bool {
        self.failures.is_empty()
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
        f.routed_down = vec![0; graph.links.len()];
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
            for &c in &wires {
                self.channels[c.idx()].impaired = true;
            }
            self.failures.failures.push(Failure { links, wires });
            self.queue.push(SimTime(cfg.at_ps), Event::LinkDown(i as u32));
            self.queue.push(SimTime(cfg.at_ps.saturating_add(cfg.detect_ps)), Event::Reroute(i as u32, true));
            if let Some(until) = cfg.until_ps {
                self.queue.push(SimTime(until), Event::LinkUp(i as u32));
                self.queue.push(SimTime(until.saturating_add(cfg.detect_ps)), Event::Reroute(i as u32, false));
            }
        }
        Ok(())
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

    /// `Reroute`: the routes are recomputed with failure `i`'s links down or up.
    pub(super) fn on_reroute(&mut self, i: u32, down: bool) {
        let f = &mut self.failures;
        for &link in &f.failures[i as usize].links {
            if down {
                f.routed_down[link] += 1;
            } else {
                f.routed_down[link] -= 1;
            }
        }
        f.reroutes += 1;
        // Every node's live links as routing sees them: (neighbour, local port).
        let adj: Vec<Vec<(usize, u16)>> = self
            .nodes
            .iter()
            .map(|n| {
                (0..n.num_ports)
                    .filter_map(|local| {
                        let ch = &self.channels[self.ports[n.port(local).idx()].channel.idx()];
                        (f.routed_down[ch.link as usize] == 0).then_some((ch.to_node.idx(), local))
                    })
                    .collect()
            })
            .collect();
        let kinds: Vec<NodeKind> = self.nodes.iter().map(|n| n.kind).collect();
        self.routing = RoutingTable::build(&kinds, &adj, self.seed);
        // The memo of recent lookups answers for the old tables.
        self.prefetch.routes = Default::default();
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
