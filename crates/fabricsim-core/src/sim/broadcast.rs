//! Broadcast fabrics: devices of `kind: broadcast` (see
//! `docs/models/broadcast-fabric.md`).
//!
//! Every host attaches to the fabric through the fabric's own adapter. A frame
//! a host transmits is broadcast to every other adapter (each transmitter has
//! its own broadcast channel, so inputs never contend inside the fabric); each
//! receiving adapter keeps the frames addressed to it (its host, or a group it
//! belongs to) and drops the rest without cost. A kept frame is delivered to
//! the host from the header on, after the fabric's fixed latency, when the
//! adapter's output is idle; otherwise it waits in the adapter's receive
//! buffer, and when that buffer is full it is lost (`receiver_buffer_full`).
//!
//! In the simulation the fabric is a node whose egress ports are the
//! receiving adapters: it forwards cut-through with its own header size and
//! latency, holds one static receive buffer per adapter, and replicates a
//! multicast frame once per member adapter (each adapter stores its own copy,
//! as separate receivers do). What every receiver saw, kept and filtered out is
//! computed from the port counters at the end (`fabric_receivers` table), so
//! filtering costs nothing per packet.

use super::Simulation;
use crate::buffer::{BufferConfig, BuiltinBufferConfig};
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::network::topology::NodeKind;
use crate::network::{DeviceKind, Forwarding};
use crate::stats::{Column, DropReason, Table};
use std::collections::BTreeMap;

/// Broadcast fabrics of the simulation.
#[derive(Debug, Default)]
pub struct BroadcastState {
    /// Nodes that are broadcast fabrics, in node order.
    pub nodes: Vec<u32>,
}

impl Simulation {
    /// Checks every broadcast fabric's settings and wiring and sets up its receivers.
    pub(super) fn setup_broadcast(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        let net = &sc.network;
        for i in 0..self.nodes.len() {
            if self.nodes[i].kind != NodeKind::Switch {
                continue;
            }
            let name = self.nodes[i].name.clone();
            let (cfg, path) = match net.switch_overrides.get(&name) {
                Some(c) => (c, format!("network.switch_overrides.{name}")),
                None => (&net.switch, "network.switch".to_string()),
            };
            if cfg.kind != DeviceKind::Broadcast {
                continue;
            }
            if cfg.forwarding != Forwarding::CutThrough {
                return Err(ConfigError::new(
                    format!("{path}.forwarding"),
                    "a broadcast fabric delivers from the header on: forwarding must be cut_through",
                ));
            }
            if !matches!(cfg.buffer, BufferConfig::Builtin(BuiltinBufferConfig::Static(_))) {
                return Err(ConfigError::new(
                    format!("{path}.buffer.model"),
                    "a broadcast fabric has one receive buffer per adapter: the buffer model must be static",
                ));
            }
            if cfg.ecn.is_some() {
                return Err(ConfigError::new(format!("{path}.ecn"), "not available on a broadcast fabric"));
            }
            if cfg.pfc.is_some() {
                return Err(ConfigError::new(format!("{path}.pfc"), "not available on a broadcast fabric"));
            }
            let node = &self.nodes[i];
            for l in 0..node.num_ports {
                let ch = self.ports[node.port(l).idx()].channel;
                let peer = self.channels[ch.idx()].to_node;
                if self.nodes[peer.idx()].kind != NodeKind::Host {
                    return Err(ConfigError::new(
                        format!("{path}.kind"),
                        format!(
                            "broadcast fabric '{name}' is linked to '{}': a broadcast fabric joins hosts only",
                            self.nodes[peer.idx()].name
                        ),
                    ));
                }
            }
            if let Some(b) = self.nodes[i].buffer.model_mut().as_static_mut() {
                b.set_full_reason(DropReason::ReceiverBufferFull);
            }
            self.broadcast.nodes.push(i as u32);
        }
        Ok(())
    }

    /// Whether node `i` is a broadcast fabric.
    pub(super) fn is_broadcast(&self, i: u32) -> bool {
        self.broadcast.nodes.binary_search(&i).is_ok()
    }

    /// The `fabric_receivers` table: per receiving adapter, the frames it saw
    /// (every frame any other adapter transmitted into the fabric), the frames
    /// addressed to it (kept, whether then delivered or lost for buffer) and the
    /// frames it filtered out.
    pub(super) fn broadcast_outputs(&self, tables: &mut BTreeMap<String, Table>) {
        if self.broadcast.nodes.is_empty() {
            return;
        }
        // (node, port, host, seen frames, seen bytes, addressed frames, delivered frames, delivered bytes, lost)
        let mut rows = Vec::new();
        for &n in &self.broadcast.nodes {
            let node = &self.nodes[n as usize];
            // Frames into the fabric on each port: what the attached host transmitted.
            let inputs: Vec<(u64, u64)> = (0..node.num_ports)
                .map(|l| {
                    let ch = self.ports[node.port(l).idx()].channel.idx() ^ 1;
                    let host_port = &self.ports[self.channels[ch].from_port.idx()];
                    (host_port.tx_packets, host_port.tx_bytes)
                })
                .collect();
            let (all_frames, all_bytes) = inputs.iter().fold((0, 0), |a, x| (a.0 + x.0, a.1 + x.1));
            for l in 0..node.num_ports {
                let p = &self.ports[node.port(l).idx()];
                let host = self.channels[p.channel.idx()].to_node.0;
                let seen = all_frames - inputs[l as usize].0;
                let seen_bytes = all_bytes - inputs[l as usize].1;
                let addressed = p.enqueued_packets + p.dropped_packets;
                rows.push((
                    n,
                    l as u32,
                    host,
                    seen,
                    seen_bytes,
                    addressed,
                    p.tx_packets,
                    p.tx_bytes,
                    p.dropped_packets,
                ));
            }
        }
        let mut t = Table::default();
        t.push("node", Column::U32(rows.iter().map(|r| r.0).collect()));
        t.push("port", Column::U32(rows.iter().map(|r| r.1).collect()));
        t.push("host", Column::U32(rows.iter().map(|r| r.2).collect()));
        t.push("frames_seen", Column::U64(rows.iter().map(|r| r.3).collect()));
        t.push("bytes_seen", Column::U64(rows.iter().map(|r| r.4).collect()));
        t.push("frames_addressed", Column::U64(rows.iter().map(|r| r.5).collect()));
        t.push("frames_filtered", Column::U64(rows.iter().map(|r| r.3.saturating_sub(r.5)).collect()));
        t.push("frames_delivered", Column::U64(rows.iter().map(|r| r.6).collect()));
        t.push("bytes_delivered", Column::U64(rows.iter().map(|r| r.7).collect()));
        t.push("frames_lost", Column::U64(rows.iter().map(|r| r.8).collect()));
        tables.insert("fabric_receivers".into(), t);
    }
}
