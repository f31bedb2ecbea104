//! The stall guard: a run whose simulated time stops advancing fails with an
//! error naming the component that keeps scheduling events, instead of
//! spinning forever.
//!
//! Every component keeps a bounded number of events pending (architecture.md,
//! "The event loop") and each of its events at one instant is followed by a
//! later one, so the events that legitimately share a timestamp are bounded
//! by a small multiple of the number of components: a 65,536-server incast
//! opens 65,536 connections at `t = 0`, a frame arrives on every wire at once.
//! A component that schedules itself again at the same instant without end is
//! a model error (for example a timer re-armed at a deadline that has already
//! passed). The guard counts the events processed at the current simulated
//! time and fails once the count exceeds
//!
//! `limit = max(2^20, 16 x components)`, components = ports x (1 + classes) +
//! channels + traffic sources + TCP connections + RoCE queue pairs + pipeline
//! pipes + 1,
//!
//! which no real scenario reaches (docs/scenarios.md, "Limits"). The owners of
//! the last [`WATCHED`] events before the limit are tallied (only then, so the
//! count costs one comparison per event), and the most frequent one is named.

use super::{Event, Simulation};
use crate::error::RunError;
use crate::units::SimTime;
use std::collections::BTreeMap;

/// Events at one instant allowed whatever the size of the world.
pub const STALL_FLOOR: u64 = 1 << 20;
/// Events at one instant allowed per component.
pub const STALL_PER_COMPONENT: u64 = 16;
/// How many of the last events before the limit are attributed to their owner.
const WATCHED: u64 = 4096;

/// Counts the events processed at the current simulated time.
#[derive(Debug, Default)]
pub(super) struct StallGuard {
    /// Fail when this many events ran at one instant.
    limit: u64,
    /// Events processed at the current instant (the first one included).
    at_now: u64,
    /// Owners of the events seen once `at_now` passed `limit - WATCHED`.
    owners: BTreeMap<(u8, u32, u32), u64>,
}

impl StallGuard {
    pub(super) fn new(limit: u64) -> Self {
        StallGuard { limit: limit.max(1), at_now: 0, owners: BTreeMap::new() }
    }

    pub(super) fn limit(&self) -> u64 {
        self.limit
    }

    pub(super) fn set_limit(&mut self, limit: u64) {
        self.limit = limit.max(1);
    }
}

/// The owner of an event as a sortable key: (kind, id, detail).
fn owner(ev: Event) -> (u8, u32, u32) {
    match ev {
        Event::TxDone(p) => (0, p.0, 0),
        Event::Arrive(c) => (1, c.0, 0),
        Event::Send(s) => (2, s.0, 0),
        Event::Sample => (3, 0, 0),
        Event::TcpOpen(t) => (4, t, 0),
        Event::TcpTimer(t, _) => (4, t, 1),
        Event::PfcResume(p, c) => (5, p.0, c as u32),
        Event::PfcRefresh(p, c, _) => (5, p.0, c as u32),
        Event::RoceOpen(q) => (6, q, 0),
        Event::RoceTimer(q, _) => (6, q, 1),
        Event::PipeStart(g) => (7, g, 0),
        Event::PipeExit(g) => (7, g, 1),
        Event::CpuRun(c) => (8, c, 0),
        Event::NicDma(l) => (9, l, 0),
        Event::Irq(r, _) => (10, r, 0),
        Event::AppTimer(a, _) => (11, a, 0),
        Event::HostEgress(x) => (12, x, 0),
        Event::PortShaper(p) => (13, p.0, 0),
        Event::LinkDown(i) | Event::LinkUp(i) => (14, i, 0),
        Event::Reroute(i, _) => (14, i, 1),
        Event::Impair(i, _) => (14, i, 2),
    }
}

impl Simulation {
    /// The guard's limit for the world as built (see the module documentation).
    pub(super) fn stall_limit(&self) -> u64 {
        let components = self.ports.len() as u64 * (1 + self.classes as u64)
            + self.channels.len() as u64
            + self.sources.len() as u64
            + self.tcp.len() as u64
            + self.roce.qps.len() as u64
            + self.pipeline.pipe_count() as u64
            + self.host.components() as u64
            + self.egress.components() as u64
            + self.port_shapers.components() as u64
            + 1;
        STALL_FLOOR.max(STALL_PER_COMPONENT.saturating_mul(components))
    }

    /// Replaces the guard's limit (tests use a small one to exercise it).
    pub fn set_stall_limit(&mut self, limit: u64) {
        self.guard.set_limit(limit);
    }

    /// The number of events at one simulated time that makes the run fail.
    pub fn stall_limit_in_use(&self) -> u64 {
        self.guard.limit()
    }

    /// Counts event `ev`, due at `t`, before it runs; an error once too many
    /// events ran at one instant. Inlined into the event loop: one comparison
    /// per event unless the count gets close to the limit.
    #[inline]
    pub(super) fn guard_event(&mut self, t: SimTime, ev: Event) -> Result<(), RunError> {
        let g = &mut self.guard;
        if t != self.now {
            g.at_now = 1;
            if !g.owners.is_empty() {
                g.owners.clear();
            }
            return Ok(());
        }
        g.at_now += 1;
        if g.at_now + WATCHED <= g.limit {
            return Ok(());
        }
        *g.owners.entry(owner(ev)).or_insert(0) += 1;
        if g.at_now < g.limit {
            return Ok(());
        }
        Err(self.stall_error(t))
    }

    fn stall_error(&self, t: SimTime) -> RunError {
        let g = &self.guard;
        let watched: u64 = g.owners.values().sum();
        // The most frequent owner; ties go to the smallest key (deterministic).
        let (key, count) = g
            .owners
            .iter()
            .fold(None, |best: Option<(&(u8, u32, u32), &u64)>, (k, c)| match best {
                Some((_, bc)) if bc >= c => best,
                _ => Some((k, c)),
            })
            .map(|(k, c)| (*k, *c))
            .unwrap_or(((3, 0, 0), 0));
        RunError::Stalled {
            time_ps: t.0,
            events: g.at_now,
            limit: g.limit,
            culprit: format!("{count} of the last {watched} came from {}", self.describe_owner(key)),
        }
    }

    fn node_port(&self, port: u32) -> String {
        let p = &self.ports[port as usize];
        format!("port {} of {}", p.local, self.nodes[p.node.idx()].name)
    }

    fn describe_flow(&self, flow: usize) -> String {
        let f = &self.flows[flow];
        let name = self.flow_names.get(f.name as usize).map_or("?", |s| s.as_str());
        format!("flow {flow} '{name}' ({} -> {})", self.nodes[f.src as usize].name, self.nodes[f.dst as usize].name)
    }

    fn describe_owner(&self, (kind, id, detail): (u8, u32, u32)) -> String {
        match kind {
            0 => format!("the transmitter of {}", self.node_port(id)),
            1 => {
                let c = &self.channels[id as usize];
                format!("the wire from {} to {}", self.node_port(c.from_port.0), self.nodes[c.to_node.idx()].name)
            }
            2 => format!("the traffic source of {}", self.describe_flow(self.sources[id as usize].flow.idx())),
            3 => "queue sampling".to_string(),
            4 => {
                let what = if detail == 1 { "the timer of the TCP connection" } else { "the TCP connection" };
                match self.flow_tcp.iter().position(|&t| t == id) {
                    Some(f) => format!("{what} of {}", self.describe_flow(f)),
                    None => format!("{what} {id}"),
                }
            }
            5 => format!("PFC of class {detail} on {}", self.node_port(id)),
            7 => format!("pipeline pipe {id} ({})", if detail == 1 { "its delay line" } else { "its issue slot" }),
            8 => format!("host CPU core {id}"),
            9 => format!("host NIC DMA line {id}"),
            10 => format!("the interrupt timer of host receive ring {id}"),
            11 => format!("the timer of ping-pong application {id}"),
            12 => format!("host egress stage {id}"),
            13 => format!("the shaper of {}", self.node_port(id)),
            14 => format!("failure {id} (failures[{id}])"),
            _ => {
                let what = if detail == 1 { "the timer of the RoCE queue pair" } else { "the RoCE queue pair" };
                match self.roce.flow_qp.iter().position(|&q| q == id) {
                    Some(f) => format!("{what} of {}", self.describe_flow(f)),
                    None => format!("{what} {id}"),
                }
            }
        }
    }
}
