//! Host egress shaping inside the simulation (`network.host.egress`,
//! `network.host_overrides`): per host a jitter line, an htb-like shaper and
//! a netem-like delay line between the stack (or the host model's cores) and
//! the NIC (see `host/egress.rs`), and the `host_egress` table.
//!
//! Only TCP and UDP packets pass it (RDMA and MAC control frames bypass the
//! kernel's qdiscs). Events: `HostEgress(3 e + stage)` (stage 0 jitter, 1
//! shaper, 2 delay), at most one pending per stage. Hosts without egress
//! settings cost one bounds check per packet sent.
//!
//! TCP Small Queues: a packet charged to TSQ stays charged while jitter and
//! the shaper hold it (its bytes are in a qdisc, which the kernel's TSQ
//! limit covers) and is released when it enters the delay line: netem
//! orphans a packet it delays (`skb_orphan_partial` in `netem_enqueue`), so
//! a long delay does not throttle the sender. Without a delay line the
//! release stays where it is without shaping: transmission complete.

use super::{transport, Event, Simulation};
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::host::egress::{DelayLine, EgressConfig, Jitter, Shaper};
use crate::ids::{NodeId, PacketId};
use crate::network::topology::NodeKind;
use crate::packet::PacketKind;
use crate::stats::{Column, DropReason, Table, Value};
use crate::units::SimTime;
use std::collections::BTreeMap;

const NONE: u32 = u32::MAX;

/// One host's egress chain.
#[derive(Debug)]
struct Egress {
    node: NodeId,
    jitter: Option<Jitter>,
    jitter_line: DelayLine,
    shaper: Option<Shaper>,
    delay: SimTime,
    delay_limit: usize,
    delay_line: DelayLine,
    /// Traffic entry names with a delay of their own (resolved after the traffic is built).
    flow_delays: Vec<(String, SimTime)>,
    /// Flow id -> its line in `EgressState::flow_lines`; empty without per-flow delays.
    by_flow: BTreeMap<u32, u32>,
}

/// A per-traffic-entry delay line of one host.
#[derive(Debug)]
struct FlowLine {
    chain: u32,
    name: String,
    delay: SimTime,
    line: DelayLine,
}

/// Egress chains of the simulation.
#[derive(Debug, Default)]
pub(super) struct EgressState {
    /// Per node: its chain, or `NONE`; empty while no host has one.
    by_node: Vec<u32>,
    chains: Vec<Egress>,
    flow_lines: Vec<FlowLine>,
}

impl EgressState {
    /// Packets held by jitter lines, shapers and delay lines.
    pub(super) fn held_packets(&self) -> usize {
        self.chains
            .iter()
            .map(|e| e.jitter_line.held() + e.shaper.as_ref().map_or(0, |s| s.held()) + e.delay_line.held())
            .sum::<usize>()
            + self.flow_lines.iter().map(|l| l.line.held()).sum::<usize>()
    }

    /// Stages that can own events (the stall guard's count).
    pub(super) fn components(&self) -> usize {
        3 * self.chains.len() + self.flow_lines.len()
    }

    #[inline]
    fn at(&self, node: NodeId) -> Option<u32> {
        match self.by_node.get(node.idx()) {
            Some(&e) if e != NONE => Some(e),
            _ => None,
        }
    }
}

impl Simulation {
    /// Builds the egress chain of every host with active settings.
    pub(super) fn setup_egress(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        let base = sc.network.host.egress.as_ref();
        let overrides = &sc.network.host_overrides;
        if base.is_none() && overrides.is_empty() {
            return Ok(());
        }
        if let Some(b) = base {
            b.validate("network.host.egress")?;
        }
        for (name, o) in overrides {
            let path = format!("network.host_overrides.{name}");
            let Some(i) = self.nodes.iter().position(|x| &x.name == name) else {
                return Err(ConfigError::new(path, format!("unknown host '{name}'")));
            };
            if self.nodes[i].kind != NodeKind::Host {
                return Err(ConfigError::new(path, format!("'{name}' is a switch, not a host")));
            }
            if let Some(e) = &o.egress {
                e.validate(&format!("{path}.egress"))?;
            }
        }
        let n = self.nodes.len();
        let mut by_node = vec![NONE; n];
        let mut chains = Vec::new();
        for (i, slot) in by_node.iter_mut().enumerate() {
            let node = &self.nodes[i];
            if node.kind != NodeKind::Host {
                continue;
            }
            let cfg: Option<&EgressConfig> = match overrides.get(&node.name) {
                Some(o) if o.egress.is_some() => o.egress.as_ref(),
                _ => base,
            };
            let Some(cfg) = cfg.filter(|c| c.is_active()) else { continue };
            *slot = chains.len() as u32;
            chains.push(Egress {
                node: NodeId(i as u32),
                jitter: cfg.jitter.filter(|j| j.mean_ps > 0).map(|j| Jitter::new(j, self.seed, i as u32)),
                jitter_line: DelayLine::default(),
                shaper: cfg.shaper.map(Shaper::new),
                delay: SimTime(cfg.delay_ps),
                delay_limit: cfg.delay_limit_packets as usize,
                delay_line: DelayLine::default(),
                flow_delays: cfg.flow_delays_ps.iter().map(|(k, &v)| (k.clone(), SimTime(v))).collect(),
                by_flow: BTreeMap::new(),
            });
        }
        if !chains.is_empty() {
            self.egress = EgressState { by_node, chains, flow_lines: Vec::new() };
        }
        Ok(())
    }

    /// Once the traffic is built: the lines of traffic entries with a delay
    /// of their own (`flow_delays`), and which flows take them.
    pub(super) fn setup_flow_delays(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        for e in 0..self.egress.chains.len() {
            let node = self.egress.chains[e].node;
            let delays = std::mem::take(&mut self.egress.chains[e].flow_delays);
            for (name, delay) in delays {
                let Some(code) = self.flow_names.iter().position(|n| *n == name) else {
                    let host = &self.nodes[node.idx()].name;
                    let path = match sc.network.host_overrides.get(host) {
                        Some(o) if o.egress.is_some() => {
                            format!("network.host_overrides.{host}.egress.flow_delays.{name}")
                        }
                        _ => format!("network.host.egress.flow_delays.{name}"),
                    };
                    return Err(ConfigError::new(
                        path,
                        format!("no traffic entry is named '{name}' (entries: {})", self.flow_names.join(", ")),
                    ));
                };
                let line = self.egress.flow_lines.len() as u32;
                self.egress.flow_lines.push(FlowLine { chain: e as u32, name, delay, line: DelayLine::default() });
                for (f, fs) in self.flows.iter().enumerate() {
                    if fs.name == code as u32 && (fs.src == node.0 || fs.dst == node.0) {
                        self.egress.chains[e].by_flow.insert(f as u32, line);
                    }
                }
            }
        }
        Ok(())
    }

    /// A packet leaving host `node`'s stack: through its egress chain if it
    /// has one, then to the NIC. Returns `false` (and takes nothing) when the
    /// host has no chain or the packet bypasses it.
    #[inline]
    pub(super) fn egress_take(&mut self, node: NodeId, id: PacketId) -> bool {
        let Some(e) = self.egress.at(node) else { return false };
        if !matches!(self.pool.get(id).kind, PacketKind::Tcp | PacketKind::Data) {
            return false;
        }
        self.egress_jitter(e, id);
        true
    }

    fn egress_jitter(&mut self, e: u32, id: PacketId) {
        let now = self.now;
        let c = &mut self.egress.chains[e as usize];
        let Some(j) = c.jitter.as_mut() else { return self.egress_shape(e, id) };
        let d = j.draw();
        let (exit, head) = c.jitter_line.enter(now, d, id);
        if head {
            self.queue.push(exit, Event::HostEgress(3 * e));
        }
    }

    fn egress_shape(&mut self, e: u32, id: PacketId) {
        let now = self.now;
        let size = self.pool.get(id).size;
        let c = &mut self.egress.chains[e as usize];
        let node = c.node;
        let Some(s) = c.shaper.as_mut() else { return self.egress_delay(e, id) };
        if !s.has_room(size) {
            s.drops += 1;
            return self.drop_packet(node, 0, id, DropReason::ShaperQueueFull);
        }
        s.push(now, id, size);
        if !s.armed {
            self.shaper_run(e);
        }
    }

    /// Sends what the shaper's buckets allow now; arms a wake-up for the rest.
    fn shaper_run(&mut self, e: u32) {
        let now = self.now;
        loop {
            let s = self.egress.chains[e as usize].shaper.as_mut().expect("shaper");
            match s.head_ready(now) {
                None => {
                    s.armed = false;
                    return;
                }
                Some(t) if t > now => {
                    s.armed = true;
                    self.queue.push(t, Event::HostEgress(3 * e + 1));
                    return;
                }
                Some(_) => {
                    let id = s.pop(now);
                    self.egress_delay(e, id);
                }
            }
        }
    }

    fn egress_delay(&mut self, e: u32, id: PacketId) {
        let now = self.now;
        let nchains = self.egress.chains.len() as u32;
        let c = &mut self.egress.chains[e as usize];
        let node = c.node;
        let own = if c.by_flow.is_empty() { None } else { c.by_flow.get(&self.pool.get(id).flow.0).copied() };
        let (line, delay, event) = match own {
            Some(l) => {
                let fl = &mut self.egress.flow_lines[l as usize];
                (&mut fl.line, fl.delay, 3 * nchains + l)
            }
            None => (&mut c.delay_line, c.delay, 3 * e + 2),
        };
        if delay == SimTime::ZERO {
            return self.egress_out(node, id);
        }
        if line.held() >= c.delay_limit {
            line.drops += 1;
            return self.drop_packet(node, 0, id, DropReason::EgressDelayFull);
        }
        let (exit, head) = line.enter(now, delay, id);
        if head {
            self.queue.push(exit, Event::HostEgress(event));
        }
        // netem orphans what it delays: the packet leaves TCP Small Queues' accounting.
        let p = self.pool.get(id);
        if p.flags & transport::FLAG_TSQ != 0 && p.kind == PacketKind::Tcp {
            self.tcp_tx_complete(id);
        }
    }

    /// `HostEgress`: a stage's head is due.
    pub(super) fn on_host_egress(&mut self, x: u32) {
        let nchains = self.egress.chains.len() as u32;
        if x >= 3 * nchains {
            let fl = &mut self.egress.flow_lines[(x - 3 * nchains) as usize];
            let (id, next) = fl.line.leave();
            if let Some(t) = next {
                self.queue.push(t, Event::HostEgress(x));
            }
            let node = self.egress.chains[fl.chain as usize].node;
            return self.egress_out(node, id);
        }
        let (e, stage) = (x / 3, x % 3);
        if stage == 1 {
            return self.shaper_run(e);
        }
        let c = &mut self.egress.chains[e as usize];
        let line = if stage == 0 { &mut c.jitter_line } else { &mut c.delay_line };
        let (id, next) = line.leave();
        if let Some(t) = next {
            self.queue.push(t, Event::HostEgress(x));
        }
        if stage == 0 {
            self.egress_shape(e, id);
        } else {
            let node = c.node;
            self.egress_out(node, id);
        }
    }

    // ------------------------------------------------------------ outputs

    /// Adds the `host_egress` table: per host with a chain, what each stage passed, held and dropped.
    pub(super) fn egress_outputs(&mut self, tables: &mut BTreeMap<String, Table>, s: &mut BTreeMap<String, Value>) {
        if self.egress.chains.is_empty() {
            return;
        }
        let cs = &self.egress.chains;
        let mean = |sum: u128, n: u64| if n > 0 { sum as f64 / n as f64 } else { 0.0 };
        let sh = |e: &Egress, f: &dyn Fn(&Shaper) -> u64| e.shaper.as_ref().map_or(0, f);
        let mut t = Table::default();
        t.push("node", Column::U32(cs.iter().map(|e| e.node.0).collect()));
        t.push("jitter_packets", Column::U64(cs.iter().map(|e| e.jitter_line.packets).collect()));
        t.push(
            "jitter_mean_ps",
            Column::F64(cs.iter().map(|e| mean(e.jitter_line.held_ps, e.jitter_line.packets)).collect()),
        );
        t.push("shaper_packets", Column::U64(cs.iter().map(|e| sh(e, &|s| s.packets)).collect()));
        t.push("shaper_bytes", Column::U64(cs.iter().map(|e| sh(e, &|s| s.bytes)).collect()));
        t.push("shaper_drops", Column::U64(cs.iter().map(|e| sh(e, &|s| s.drops)).collect()));
        t.push("shaper_high_water_bytes", Column::U64(cs.iter().map(|e| sh(e, &|s| s.high_water_bytes)).collect()));
        t.push(
            "shaper_wait_mean_ps",
            Column::F64(cs.iter().map(|e| e.shaper.as_ref().map_or(0.0, |s| mean(s.wait_ps, s.packets))).collect()),
        );
        t.push("delay_packets", Column::U64(cs.iter().map(|e| e.delay_line.packets).collect()));
        t.push("delay_drops", Column::U64(cs.iter().map(|e| e.delay_line.drops).collect()));
        t.push("delay_high_water", Column::U64(cs.iter().map(|e| e.delay_line.high_water).collect()));
        tables.insert("host_egress".into(), t);
        if !self.egress.flow_lines.is_empty() {
            let fl = &self.egress.flow_lines;
            let mut names: Vec<String> = Vec::new();
            let codes = fl
                .iter()
                .map(|l| match names.iter().position(|n| *n == l.name) {
                    Some(i) => i as u32,
                    None => {
                        names.push(l.name.clone());
                        names.len() as u32 - 1
                    }
                })
                .collect();
            let mut t = Table::default();
            t.push("node", Column::U32(fl.iter().map(|l| cs[l.chain as usize].node.0).collect()));
            t.push("traffic", Column::Cat { codes, labels: names });
            t.push("delay_ps", Column::U64(fl.iter().map(|l| l.delay.0).collect()));
            t.push("packets", Column::U64(fl.iter().map(|l| l.line.packets).collect()));
            t.push("drops", Column::U64(fl.iter().map(|l| l.line.drops).collect()));
            t.push("high_water", Column::U64(fl.iter().map(|l| l.line.high_water).collect()));
            tables.insert("flow_delays".into(), t);
        }
        let drops: u64 = cs.iter().map(|e| sh(e, &|s| s.drops) + e.delay_line.drops).sum::<u64>()
            + self.egress.flow_lines.iter().map(|l| l.line.drops).sum::<u64>();
        s.insert("host_egress_drops".into(), Value::Int(drops as i64));
    }
}
