//! Switch egress ports shaped like an htb class (`switch.shaper`, configured
//! in `network/shaper.rs`): the port starts its next frame only when the
//! class's two token buckets allow (`token_bucket.rs`: rate/burst,
//! ceil/cburst), so a port on a fast link sends at up to `ceil` while tokens
//! last and at `rate` in the long run.
//! The port's own queue (the buffer model's limits) is the class's leaf
//! queue, as a bfifo under an htb class.
//!
//! Event: `PortShaper(port)`, at most one pending per port: the buckets
//! allow the head. Without shaped ports `start_next` pays one emptiness
//! check.

use super::{Event, Simulation};
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::ids::PortId;
use crate::network::topology::NodeKind;
use crate::token_bucket::TokenBuckets;
use crate::units::SimTime;

const NONE: u32 = u32::MAX;

#[derive(Debug)]
struct Shaped {
    buckets: TokenBuckets,
    armed: bool,
    /// Frames held back at least once, and the time they waited for tokens.
    pub held: u64,
}

/// Shaped ports of the simulation.
#[derive(Debug, Default)]
pub(super) struct PortShapers {
    /// Per port: its shaper, or `NONE`; empty while no port is shaped.
    by_port: Vec<u32>,
    shaped: Vec<Shaped>,
}

impl PortShapers {
    pub(super) fn components(&self) -> usize {
        self.shaped.len()
    }
}

impl Simulation {
    /// Shapes the ports that `switch.shaper` (or an override's) selects.
    pub(super) fn setup_port_shapers(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        let net = &sc.network;
        let mut by_port = Vec::new();
        let mut shaped = Vec::new();
        for i in 0..self.nodes.len() {
            let node = &self.nodes[i];
            if node.kind != NodeKind::Switch {
                continue;
            }
            let (cfg, path) = match net.switch_overrides.get(&node.name) {
                Some(c) => (&c.shaper, format!("network.switch_overrides.{}.shaper", node.name)),
                None => (&net.switch.shaper, "network.switch.shaper".to_string()),
            };
            let Some(cfg) = cfg else { continue };
            cfg.validate(&path)?;
            let err = |f: &str, m: String| Err(ConfigError::new(format!("{path}.{f}"), m));
            let neighbours: Vec<String> = (0..node.num_ports)
                .map(|l| {
                    let p = &self.ports[node.port(l).idx()];
                    self.nodes[self.channels[p.channel.idx()].to_node.idx()].name.clone()
                })
                .collect();
            for (k, name) in cfg.towards.iter().enumerate() {
                if !neighbours.contains(name) {
                    return err(
                        &format!("towards[{k}]"),
                        format!(
                            "'{name}' is not a neighbour of '{}' (neighbours: {})",
                            node.name,
                            neighbours.join(", ")
                        ),
                    );
                }
            }
            if by_port.is_empty() {
                by_port = vec![NONE; self.ports.len()];
            }
            for l in 0..node.num_ports {
                if cfg.towards.is_empty() || cfg.towards.contains(&neighbours[l as usize]) {
                    by_port[node.port(l).idx()] = shaped.len() as u32;
                    shaped.push(Shaped {
                        buckets: TokenBuckets::new(cfg.rate_bps, cfg.burst_bytes, cfg.ceil_bps, cfg.cburst_bytes),
                        armed: false,
                        held: 0,
                    });
                }
            }
        }
        self.port_shapers = PortShapers { by_port, shaped };
        Ok(())
    }

    /// Whether shaped port `pid` may start a frame at `at`; if not, a wake-up is armed.
    #[inline]
    pub(super) fn port_shaper_allows(&mut self, pid: PortId, at: SimTime) -> bool {
        let s = match self.port_shapers.by_port.get(pid.idx()) {
            Some(&s) if s != NONE => s,
            _ => return true,
        };
        let sh = &mut self.port_shapers.shaped[s as usize];
        if sh.armed {
            return false;
        }
        let ready = sh.buckets.ready(at);
        if ready <= at {
            return true;
        }
        sh.armed = true;
        sh.held += 1;
        self.queue.push(ready.max(self.now), Event::PortShaper(pid));
        false
    }

    /// Charges a frame of `bytes` that port `pid` starts at `at`.
    #[inline]
    pub(super) fn port_shaper_charge(&mut self, pid: PortId, at: SimTime, bytes: u32) {
        if let Some(&s) = self.port_shapers.by_port.get(pid.idx()) {
            if s != NONE {
                self.port_shapers.shaped[s as usize].buckets.charge(at, bytes);
            }
        }
    }

    /// `PortShaper`: the buckets allow the head of an idle port.
    pub(super) fn on_port_shaper(&mut self, pid: PortId) {
        let s = self.port_shapers.by_port[pid.idx()];
        self.port_shapers.shaped[s as usize].armed = false;
        if self.ports[pid.idx()].is_idle() && !self.ports[pid.idx()].is_empty() {
            self.start_next(pid, self.now);
        }
    }
}
