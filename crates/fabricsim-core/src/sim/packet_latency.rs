//! Per-packet latency breakdown (`stats.packet_latency`): for the first
//! `max_packets` packets delivered (of the chosen flows), where their time
//! went: the seven host datapath components of `sim/host.rs` and the rest,
//! `fabric_ps` (host egress qdiscs, NIC pipelines, wires, switches, queues).
//!
//! The components of a packet in flight live in a side array indexed by its
//! packet pool slot (the packet itself does not grow): zeroed when the packet
//! is created, added to wherever the host model records a component for
//! it, read when it is delivered to its destination (`deliver`). A multicast
//! copy starts with the components of the packet it was copied from.
//!
//! Off (the default), the cost is one test of a flag per packet created,
//! per host component recorded and per packet delivered. On, the rows are
//! preallocated; the side array grows only with the pool's peak.

use super::Simulation;
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::ids::PacketId;
use crate::packet::{Packet, PacketKind};
use crate::stats::{Column, Table, Value};
use std::collections::BTreeMap;

/// Largest `max_packets` (each row takes ~100 B, preallocated).
pub const MAX_TRACED: u64 = 1_000_000;

/// Row kinds: a UDP datagram, a TCP segment with payload, one without (ACK, SYN, FIN), a RoCEv2 packet.
const KINDS: [&str; 4] = ["udp", "data", "ack", "roce"];

#[derive(Clone, Copy, Debug)]
struct Row {
    flow: u32,
    src: u32,
    dst: u32,
    seq: u64,
    kind: u8,
    created: u64,
    delivered: u64,
    comp: [u64; 7],
}

/// The per-packet breakdown's state.
#[derive(Debug, Default)]
pub(super) struct PacketLatency {
    /// Tracing is on: the per-packet hooks run.
    pub on: bool,
    max: usize,
    /// Per flow: traced (empty: every flow).
    want: Vec<bool>,
    /// Per pool slot: host components of the packet in it.
    slots: Vec<[u64; 7]>,
    rows: Vec<Row>,
    /// Packets delivered (of the chosen flows) after the rows were full.
    missed: u64,
}

impl PacketLatency {
    /// A packet was created in slot `id`: no host time yet.
    #[inline]
    pub(super) fn reset(&mut self, id: PacketId) {
        let i = id.idx();
        if self.slots.len() <= i {
            self.slots.resize(i + 1, [0; 7]);
        }
        self.slots[i] = [0; 7];
    }

    /// Slot `copy` holds a copy of the packet in slot `orig`.
    #[inline]
    pub(super) fn copy(&mut self, orig: PacketId, copy: PacketId) {
        self.reset(copy);
        self.slots[copy.idx()] = self.slots[orig.idx()];
    }

    /// Adds `ps` to host component `component` of the packet in slot `id`.
    #[inline]
    pub(super) fn add(&mut self, id: PacketId, component: usize, ps: u64) {
        self.slots[id.idx()][component] += ps;
    }
}

impl Simulation {
    /// Resolves `stats.packet_latency` (after the traffic, whose entry names `flows` picks).
    pub(super) fn setup_packet_latency(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        let Some(cfg) = &sc.stats.packet_latency else { return Ok(()) };
        let path = "stats.packet_latency";
        if cfg.max_packets == 0 || cfg.max_packets > MAX_TRACED {
            return Err(ConfigError::new(
                format!("{path}.max_packets"),
                format!("must be 1 to {MAX_TRACED}, got {}", cfg.max_packets),
            ));
        }
        let t = &mut self.pkt_lat;
        if !cfg.flows.is_empty() {
            let mut names = vec![false; self.flow_names.len()];
            for (i, name) in cfg.flows.iter().enumerate() {
                let Some(k) = self.flow_names.iter().position(|n| n == name) else {
                    let mut known: Vec<&str> = self.flow_names.iter().map(String::as_str).collect();
                    known.sort_unstable();
                    known.dedup();
                    return Err(ConfigError::new(
                        format!("{path}.flows[{i}]"),
                        format!("unknown traffic entry '{name}'; known: {}", known.join(", ")),
                    ));
                };
                // Entries may share a name: every entry of that name is traced.
                for (j, n) in self.flow_names.iter().enumerate().skip(k) {
                    if n == name {
                        names[j] = true;
                    }
                }
            }
            t.want = self.flows.iter().map(|f| names[f.name as usize]).collect();
        }
        t.on = true;
        t.max = cfg.max_packets as usize;
        t.rows = Vec::with_capacity(t.max);
        Ok(())
    }

    /// A packet reached its destination host: records its row while there is room.
    #[cold]
    pub(super) fn packet_latency_delivered(&mut self, id: PacketId, pkt: &Packet) {
        let t = &mut self.pkt_lat;
        if !t.want.is_empty() && !t.want[pkt.flow.idx()] {
            return;
        }
        if t.rows.len() >= t.max {
            t.missed += 1;
            return;
        }
        let kind = match pkt.kind {
            PacketKind::Data => 0,
            PacketKind::Tcp if pkt.tcp_payload() > 0 => 1,
            PacketKind::Tcp => 2,
            _ => 3,
        };
        t.rows.push(Row {
            flow: pkt.flow.0,
            src: pkt.src.0,
            dst: pkt.dst.0,
            seq: pkt.seq,
            kind,
            created: pkt.created.0,
            delivered: self.now.0,
            comp: t.slots[id.idx()],
        });
    }

    /// Adds the `packet_latency` table (when on).
    pub(super) fn packet_latency_outputs(
        &mut self,
        tables: &mut BTreeMap<String, Table>,
        s: &mut BTreeMap<String, Value>,
    ) {
        if !self.pkt_lat.on {
            return;
        }
        let t = &self.pkt_lat;
        let rows = &t.rows;
        let mut out = Table::default();
        out.push("flow_id", Column::U32(rows.iter().map(|r| r.flow).collect()));
        out.push("src", Column::U32(rows.iter().map(|r| r.src).collect()));
        out.push("dst", Column::U32(rows.iter().map(|r| r.dst).collect()));
        out.push("seq", Column::U64(rows.iter().map(|r| r.seq).collect()));
        out.push(
            "kind",
            Column::Cat {
                codes: rows.iter().map(|r| r.kind as u32).collect(),
                labels: KINDS.iter().map(|s| s.to_string()).collect(),
            },
        );
        out.push("created_ps", Column::U64(rows.iter().map(|r| r.created).collect()));
        out.push("delivered_ps", Column::U64(rows.iter().map(|r| r.delivered).collect()));
        for (k, name) in super::host::COMPONENTS.iter().enumerate() {
            out.push(&format!("{name}_ps"), Column::U64(rows.iter().map(|r| r.comp[k]).collect()));
        }
        // Everything else: delivered - created - host time (never negative: host time is inside it).
        let fabric = rows.iter().map(|r| r.delivered - r.created - r.comp.iter().sum::<u64>()).collect();
        out.push("fabric_ps", Column::U64(fabric));
        tables.insert("packet_latency".into(), out);
        s.insert("packet_latency_missed".into(), Value::Int(t.missed as i64));
    }
}
