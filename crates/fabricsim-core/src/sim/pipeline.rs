//! Match-action pipelines inside the simulation: which nodes have one, how a
//! packet enters and leaves it, its events, queue sampling, and the
//! `pipeline`, `pipes` and `pipeline_queues` tables.
//!
//! Where a pipeline sits:
//!
//! ```text
//!   switch:  link ──> [pipeline, ingress] ──> route ──> buffer ──> egress port
//!   host:    link ──> [pipeline, rx] ──> deliver        app ──> [pipeline, tx] ──> NIC port
//! ```
//!
//! A node without a pipeline pays one bounds check per packet
//! ([`PipelineState::at`] on an empty table when no node has one). Each pipe
//! keeps at most one `PipeStart` event (the head of its waiting queue is
//! issued when the slot frees) and one `PipeExit` event (the head of its
//! delay line leaves); a packet that is issued at once and has no latency
//! passes through without any event.
//!
//! Packets inside pipes count in `packets_in_network`. Stage drops and
//! queue drops go through `drop_packet`, recorded at the packet's ingress
//! port (the NIC port, 0, on a host's transmit side).
//!
//! The 5-tuple stages see: host addresses from [`addr::host_address`];
//! protocol 6 for TCP flows and 17 otherwise; source port `49152 + (hash of
//! the flow id mod 16384)`; destination port 5201 for TCP (iperf3's), 4791 for
//! RoCEv2 (IANA), and the traffic entry's `dst_port` (default 5001) for UDP;
//! replies swap the ports, except RoCEv2's, which go to 4791 both ways.
//! A connection is a flow: its packets both ways share one entry. Packet
//! captures (`sim/pcap.rs`) show the same 5-tuple.

use super::{Event, Simulation};
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::ids::{NodeId, PacketId};
use crate::network::topology::NodeKind;
use crate::packet::{Packet, LOCAL_PORT};
use crate::pipeline::{addr, Ctx, Dir, FiveTuple, Held, Pipeline, PROTO_TCP, PROTO_UDP};
use crate::rng::mix64;
use crate::stats::{Column, DropReason, FlowKind, Table, Value};
use crate::units::Rate;
use std::collections::BTreeMap;

const NONE: u32 = u32::MAX;
const DPORT_TCP: u16 = 5201;
const DPORT_ROCE: u16 = 4791;
const DPORT_UDP: u16 = 5001;

/// A node's pipeline and the index of its first pipe among all pipes.
#[derive(Debug)]
pub(super) struct Device {
    node: NodeId,
    pipeline: Pipeline,
    first_pipe: u32,
}

/// Pipelines of the simulation.
#[derive(Debug, Default)]
pub(super) struct PipelineState {
    /// Per node: its device, or `NONE`; empty while no node has a pipeline.
    by_node: Vec<u32>,
    devices: Vec<Device>,
    /// Per pipe, over all devices: (device, pipe within it).
    pipes: Vec<(u32, u16)>,
    /// Per node: IPv4 address (hosts only).
    address: Vec<u32>,
    /// Per flow: the UDP destination port its traffic entry gave (0: default).
    dport: Vec<u16>,
    /// Queue samples: (time, node, pipe, packets, bytes).
    samples: Vec<(u64, u32, u32, u64, u64)>,
    /// Per pipe: whether its last sample was non-zero.
    nonzero: Vec<bool>,
}

impl PipelineState {
    /// Pipes of every device (each keeps at most one `PipeStart` and one `PipeExit` pending).
    pub(super) fn pipe_count(&self) -> usize {
        self.pipes.len()
    }

    /// The pipeline device of `node`, if it has one.
    #[inline]
    pub(super) fn at(&self, node: NodeId) -> Option<u32> {
        match self.by_node.get(node.idx()) {
            Some(&d) if d != NONE => Some(d),
            _ => None,
        }
    }

    /// Records the UDP destination port of `flow`.
    pub(super) fn set_dport(&mut self, flow: u32, port: u16) {
        let f = flow as usize;
        if self.dport.len() <= f {
            self.dport.resize(f + 1, 0);
        }
        self.dport[f] = port;
    }

    /// Packets inside every pipe.
    pub(super) fn held_packets(&self) -> usize {
        self.devices.iter().flat_map(|d| &d.pipeline.pipes).map(|p| p.held_packets()).sum()
    }
}

impl Simulation {
    /// Builds the pipeline of every switch and host whose configuration has
    /// one (and for which it is not transparent).
    pub(super) fn setup_pipelines(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        let net = &sc.network;
        let n = self.nodes.len();
        let mut hosts = 0u32;
        self.pipeline.address = vec![0; n];
        for i in 0..n {
            if self.nodes[i].kind == NodeKind::Host {
                self.pipeline.address[i] = addr::host_address(hosts);
                hosts += 1;
            }
        }
        for i in 0..n {
            let node = &self.nodes[i];
            let (cfg, path, switch) = match node.kind {
                NodeKind::Switch => match net.switch_overrides.get(&node.name) {
                    Some(c) => (&c.pipeline, format!("network.switch_overrides.{}.pipeline", node.name), true),
                    None => (&net.switch.pipeline, "network.switch.pipeline".to_string(), true),
                },
                NodeKind::Host => (&net.host.pipeline, "network.host.pipeline".to_string(), false),
            };
            let Some(cfg) = cfg else { continue };
            let ports = node.num_ports as usize;
            let pipeline = Pipeline::build(cfg, ports, self.classes, switch, &path)?;
            let rates: Vec<Rate> = (0..node.num_ports).map(|l| self.ports[node.port(l).idx()].rate).collect();
            if pipeline.is_transparent(&rates, self.overhead) {
                continue;
            }
            if self.pipeline.by_node.is_empty() {
                self.pipeline.by_node = vec![NONE; n];
            }
            let d = self.pipeline.devices.len() as u32;
            self.pipeline.by_node[i] = d;
            let first_pipe = self.pipeline.pipes.len() as u32;
            for p in 0..pipeline.pipes.len() {
                self.pipeline.pipes.push((d, p as u16));
            }
            self.pipeline.devices.push(Device { node: NodeId(i as u32), pipeline, first_pipe });
        }
        self.pipeline.nonzero = vec![false; self.pipeline.pipes.len()];
        Ok(())
    }

    /// The 5-tuple of a flow's packet (not a PFC frame) as match-action
    /// stages and packet captures see it, and whether it travels against its
    /// flow's direction (a reply: TCP ACKs, RoCE ACKs, NACKs and CNPs).
    /// RoCEv2 packets go to port 4791 both ways (IBTA RoCEv2 annex A17: the
    /// source port carries the entropy), the others swap ports on replies.
    pub(super) fn five_tuple(&self, pkt: &Packet) -> (FiveTuple, bool) {
        let f = &self.flows[pkt.flow.idx()];
        let reply = pkt.src.0 != f.src;
        // RoCE flows are reliable (`f.tcp`) but ride on UDP.
        let rdma = f.kind == FlowKind::Rdma;
        let proto = if f.tcp && !rdma { PROTO_TCP } else { PROTO_UDP };
        let sport = 49152 + (mix64(pkt.flow.0 as u64 ^ 0x0005_ee4d_b0a7) % 16384) as u16;
        let (sport, dport) = if rdma {
            (sport, DPORT_ROCE)
        } else if f.tcp {
            if reply {
                (DPORT_TCP, sport)
            } else {
                (sport, DPORT_TCP)
            }
        } else {
            let dport = match self.pipeline.dport.get(pkt.flow.idx()) {
                Some(&p) if p != 0 => p,
                _ => DPORT_UDP,
            };
            if reply {
                (dport, sport)
            } else {
                (sport, dport)
            }
        };
        let a = &self.pipeline.address;
        let tuple = FiveTuple {
            src: a[pkt.src.idx()],
            dst: crate::network::multicast::ip_dst(a, pkt.dst),
            proto,
            sport,
            dport,
        };
        (tuple, reply)
    }

    /// What the stages see of a packet besides the packet.
    pub(super) fn pipeline_ctx(&self, pkt: &Packet, in_port: u16, dir: Dir) -> Ctx {
        let (tuple, reply) = self.five_tuple(pkt);
        Ctx {
            now: self.now,
            port: if dir == Dir::Rx && in_port != LOCAL_PORT { in_port } else { 0 },
            dir,
            tuple,
            conn: pkt.flow.0,
            reply,
        }
    }

    /// Hands packet `id`, which arrived on local port `in_port` (or was sent
    /// by the host, `LOCAL_PORT`), to the pipeline of device `d`.
    pub(super) fn pipeline_offer(&mut self, d: u32, id: PacketId, in_port: u16, dir: Dir) {
        let now = self.now;
        let bytes = self.pool.get(id).size;
        let mut h = Held { id, in_port, dir, bytes, since: now, waited: false };
        let dev = &mut self.pipeline.devices[d as usize];
        let p = dev.pipeline.pipe_of(in_port);
        let slot = dev.pipeline.slot_of(in_port);
        let (max_packets, max_bytes) = dev.pipeline.limits();
        let g = dev.first_pipe + p as u32;
        let pipe = &mut dev.pipeline.pipes[p];
        pipe.stats.offered += 1;
        if pipe.can_issue(now) {
            if let Some(out) = self.pipe_issue(d, p, &mut h) {
                self.pipeline_leave(d, out);
            }
            return;
        }
        if !pipe.wait(slot, h, max_packets, max_bytes) {
            let node = dev.node;
            self.drop_packet(node, drop_port(in_port), id, DropReason::PipelineQueueFull);
            return;
        }
        if !pipe.start_pending {
            pipe.start_pending = true;
            self.queue.push(pipe.free_at, Event::PipeStart(g));
        }
    }

    /// Issues `h` on pipe `p` of device `d` now: runs its stages, holds the
    /// slot, and drops it, puts it on the delay line, or returns it when it
    /// leaves at once.
    fn pipe_issue(&mut self, d: u32, p: usize, h: &mut Held) -> Option<Held> {
        let now = self.now;
        let mut pkt = *self.pool.get(h.id);
        let ctx = self.pipeline_ctx(&pkt, h.in_port, h.dir);
        let dev = &mut self.pipeline.devices[d as usize];
        let r = dev.pipeline.process(&mut pkt, &ctx);
        *self.pool.get_mut(h.id) = pkt;
        let pipe = &mut dev.pipeline.pipes[p];
        pipe.issue(h, now, r.busy);
        if let Some(reason) = r.drop {
            let node = dev.node;
            self.drop_packet(node, drop_port(h.in_port), h.id, reason);
            return None;
        }
        let exit = pipe.exit_time(now, r.latency);
        if exit == now {
            return Some(*h);
        }
        if pipe.hold(exit, *h) {
            self.queue.push(exit, Event::PipeExit(dev.first_pipe + p as u32));
        }
        None
    }

    /// `PipeStart`: the pipe's slot is free; issue the head of its queue.
    pub(super) fn on_pipe_start(&mut self, g: u32) {
        let (d, p) = self.pipeline.pipes[g as usize];
        let p = p as usize;
        let pipe = &mut self.pipeline.devices[d as usize].pipeline.pipes[p];
        pipe.start_pending = false;
        let Some(mut h) = pipe.next_waiting() else { return };
        let out = self.pipe_issue(d, p, &mut h);
        let pipe = &mut self.pipeline.devices[d as usize].pipeline.pipes[p];
        if pipe.has_waiting() && !pipe.start_pending {
            pipe.start_pending = true;
            self.queue.push(pipe.free_at, Event::PipeStart(g));
        }
        if let Some(h) = out {
            self.pipeline_leave(d, h);
        }
    }

    /// `PipeExit`: the head of the pipe's delay line leaves.
    pub(super) fn on_pipe_exit(&mut self, g: u32) {
        let (d, p) = self.pipeline.pipes[g as usize];
        let (h, next) = self.pipeline.devices[d as usize].pipeline.pipes[p as usize].leave();
        if let Some(t) = next {
            self.queue.push(t, Event::PipeExit(g));
        }
        self.pipeline_leave(d, h);
    }

    /// A packet leaves device `d`'s pipeline and goes on its way.
    fn pipeline_leave(&mut self, d: u32, h: Held) {
        let now = self.now;
        let node = self.pipeline.devices[d as usize].node;
        let n = &self.nodes[node.idx()];
        let pkt = self.pool.get_mut(h.id);
        // Cut-through counts from the header: a packet the pipe issued at once
        // had its header processed as it came in, so the pipe's delay shifts
        // the header; one that waited was stored first.
        if h.waited {
            pkt.first_bit = now.saturating_sub(n.latency);
        } else {
            pkt.first_bit += now - h.since;
        }
        match (n.kind, h.dir) {
            (NodeKind::Switch, _) => {
                let rate = self.ports[n.port(h.in_port).idx()].rate;
                self.switch_forward(node, h.in_port, rate, h.id)
            }
            (NodeKind::Host, Dir::Rx) => self.host_receive(node, h.in_port, h.id),
            (NodeKind::Host, Dir::Tx) => self.host_send(node, h.id),
        }
    }

    /// Records the occupancy of every pipe's queue.
    pub(super) fn sample_pipelines(&mut self) {
        let t = self.now.0;
        let st = &mut self.pipeline;
        for (g, &(d, p)) in st.pipes.iter().enumerate() {
            let dev = &st.devices[d as usize];
            let (packets, bytes) = dev.pipeline.pipes[p as usize].queue();
            if packets == 0 && !st.nonzero[g] {
                continue;
            }
            st.nonzero[g] = packets > 0;
            st.samples.push((t, dev.node.0, p as u32, packets, bytes));
        }
    }

    /// Adds the `pipeline`, `pipes` and `pipeline_queues` tables.
    pub(super) fn pipeline_outputs(&mut self, tables: &mut BTreeMap<String, Table>, s: &mut BTreeMap<String, Value>) {
        let st = &mut self.pipeline;
        let mut labels = Labels::default();
        let (mut node, mut stage, mut name, mut kind, mut counter, mut value) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        for dev in &st.devices {
            for (i, sg) in dev.pipeline.stages.iter().enumerate() {
                let nm = labels.name(&sg.name);
                let kd = labels.kind(sg.kind.name());
                for (c, v) in sg.all_counters() {
                    node.push(dev.node.0);
                    stage.push(i as u32);
                    name.push(nm);
                    kind.push(kd);
                    counter.push(labels.counter(&c));
                    value.push(v);
                }
            }
        }
        let mut t = Table::default();
        t.push("node", Column::U32(node));
        t.push("stage", Column::U32(stage));
        t.push("name", Column::Cat { codes: name, labels: labels.names });
        t.push("kind", Column::Cat { codes: kind, labels: labels.kinds });
        t.push("counter", Column::Cat { codes: counter, labels: labels.counters });
        t.push("value", Column::U64(value));
        tables.insert("pipeline".into(), t);

        let span = self.now.0.max(1) as f64;
        let mut t = Table::default();
        let rows: Vec<(u32, u32, u32, crate::pipeline::PipeStats)> = st
            .devices
            .iter()
            .flat_map(|dev| {
                dev.pipeline.pipes.iter().enumerate().map(move |(p, pipe)| {
                    let ports = dev.pipeline.port_pipe().iter().filter(|&&x| x as usize == p).count() as u32;
                    (dev.node.0, p as u32, ports, pipe.stats)
                })
            })
            .collect();
        t.push("node", Column::U32(rows.iter().map(|r| r.0).collect()));
        t.push("pipe", Column::U32(rows.iter().map(|r| r.1).collect()));
        t.push("ports", Column::U32(rows.iter().map(|r| r.2).collect()));
        t.push("offered", Column::U64(rows.iter().map(|r| r.3.offered).collect()));
        t.push("issued", Column::U64(rows.iter().map(|r| r.3.issued).collect()));
        t.push("queue_drops", Column::U64(rows.iter().map(|r| r.3.queue_drops).collect()));
        t.push("busy_ps", Column::U64(rows.iter().map(|r| r.3.busy_ps).collect()));
        t.push("utilization", Column::F64(rows.iter().map(|r| r.3.busy_ps as f64 / span).collect()));
        t.push(
            "wait_mean_ps",
            Column::F64(
                rows.iter()
                    .map(|r| if r.3.issued > 0 { r.3.wait_sum_ps as f64 / r.3.issued as f64 } else { 0.0 })
                    .collect(),
            ),
        );
        t.push("wait_max_ps", Column::U64(rows.iter().map(|r| r.3.wait_max_ps).collect()));
        t.push("queue_high_water_packets", Column::U64(rows.iter().map(|r| r.3.high_water_packets).collect()));
        t.push("queue_high_water_bytes", Column::U64(rows.iter().map(|r| r.3.high_water_bytes).collect()));
        tables.insert("pipes".into(), t);

        let samples = std::mem::take(&mut st.samples);
        let mut t = Table::default();
        t.push("time_ps", Column::U64(samples.iter().map(|x| x.0).collect()));
        t.push("node", Column::U32(samples.iter().map(|x| x.1).collect()));
        t.push("pipe", Column::U32(samples.iter().map(|x| x.2).collect()));
        t.push("packets", Column::U64(samples.iter().map(|x| x.3).collect()));
        t.push("bytes", Column::U64(samples.iter().map(|x| x.4).collect()));
        tables.insert("pipeline_queues".into(), t);

        let queue_drops: u64 = rows.iter().map(|r| r.3.queue_drops).sum();
        s.insert("pipeline_queue_drops".into(), Value::Int(queue_drops as i64));
    }
}

/// Port a pipeline drop is recorded at.
fn drop_port(in_port: u16) -> u32 {
    if in_port == LOCAL_PORT {
        0
    } else {
        in_port as u32
    }
}

/// Categorical labels in order of first appearance.
#[derive(Default)]
struct Labels {
    names: Vec<String>,
    kinds: Vec<String>,
    counters: Vec<String>,
}

impl Labels {
    fn code(list: &mut Vec<String>, s: &str) -> u32 {
        match list.iter().position(|x| x == s) {
            Some(i) => i as u32,
            None => {
                list.push(s.to_string());
                (list.len() - 1) as u32
            }
        }
    }
    fn name(&mut self, s: &str) -> u32 {
        Self::code(&mut self.names, s)
    }
    fn kind(&mut self, s: &str) -> u32 {
        Self::code(&mut self.kinds, s)
    }
    fn counter(&mut self, s: &str) -> u32 {
        Self::code(&mut self.counters, s)
    }
}
