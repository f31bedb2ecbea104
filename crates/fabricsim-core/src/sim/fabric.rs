//! Switch-buffer features of the simulation: per-switch setup of schedulers,
//! VOQ sub-queues, buffer models and RED/ECN profiles; ECN mark accounting;
//! buffer pool sampling; and the `marks`, `pools`, `buffers` and `queue_peaks`
//! output tables.

use super::Simulation;
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::ids::{NodeId, PacketId, PortId};
use crate::network::aqm::{Aqm, AqmAction};
use crate::network::topology::NodeKind;
use crate::network::trimming::Trimming;
use crate::packet::{Packet, ECN_CE, ECN_ECT};
use crate::stats::{Column, Table, Value};
use crate::units::Rate;
use std::collections::BTreeMap;

/// Why a packet was CE-marked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum MarkReason {
    /// The queue's RED/step profile (`ecn` section).
    Red = 0,
    /// AFD of the intelligent buffer in ECN mode.
    Afd = 1,
    /// A registered admission policy's mark ([`crate::buffer::Verdict::Mark`]).
    Policy = 2,
}

/// Mark reasons' labels; `policy` is listed only in runs with such marks, so
/// runs of the built-in models keep their two labels.
const MARK_LABELS: [&str; 3] = ["red", "afd", "policy"];
/// Pool column labels: the whole device, then service pools 0..7.
const POOL_LABELS: [&str; 9] = ["total", "pool0", "pool1", "pool2", "pool3", "pool4", "pool5", "pool6", "pool7"];

/// State of the switch-buffer features.
#[derive(Debug, Default)]
pub struct Fabric {
    /// RED/ECN profile per node (switches with an `ecn` section).
    /// Per node; boxed so that the check made on every enqueue reads 8 B
    /// per node (eight nodes to a cache line) while ECN is off.
    aqm: Vec<Option<Box<Aqm>>>,
    /// Whether any node has a RED/ECN profile (the enqueue path's one test while ECN is off).
    any_aqm: bool,
    /// Marks per (node, local port, class, reason): (packets, bytes).
    marks: BTreeMap<(u32, u32, u8, MarkReason), (u64, u64)>,
    pub marked_packets: u64,
    /// Sampled pool occupancy: (time, node, pool label index, bytes).
    pool_samples: Vec<(u64, u32, u32, u64)>,
    /// Per node: whether its last total sample was non-zero.
    pool_nonzero: Vec<bool>,
    /// Packet trimming per node (switches with a `trimming` section); read
    /// only when a buffer refuses a packet.
    trim: Vec<Option<Trimming>>,
    /// Packets trimmed, and the payload bytes cut off them: in all, and per
    /// (node, local port).
    pub trimmed_packets: u64,
    pub trimmed_bytes: u64,
    trims: BTreeMap<(u32, u32), (u64, u64)>,
}

impl Fabric {
    /// Whether any switch trims packets.
    pub(super) fn trims(&self) -> bool {
        self.trim.iter().any(Option::is_some)
    }
}

impl Simulation {
    /// Configures schedulers, VOQ sub-queues, buffer models and RED profiles of
    /// every switch once the ports exist.
    pub(super) fn setup_fabric(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        let net = &sc.network;
        let n = self.nodes.len();
        self.fabric.aqm = (0..n).map(|_| None).collect();
        self.fabric.pool_nonzero = vec![false; n];
        self.fabric.trim = vec![None; n];
        for i in 0..n {
            let node = &self.nodes[i];
            let ports: Vec<PortId> = (0..node.num_ports).map(|l| node.port(l)).collect();
            let rates: Vec<Rate> = ports.iter().map(|p| self.ports[p.idx()].rate).collect();
            self.nodes[i].buffer.model_mut().attach(self.seed, i as u32, &rates);
            if self.nodes[i].kind != NodeKind::Switch {
                continue;
            }
            let name = &self.nodes[i].name;
            let (cfg, path) = match net.switch_overrides.get(name) {
                Some(c) => (c, format!("network.switch_overrides.{name}")),
                None => (&net.switch, "network.switch".to_string()),
            };
            cfg.scheduler.check(self.classes, &format!("{path}.scheduler"))?;
            let per_ingress = self.nodes[i].buffer.model().per_ingress_queues();
            let inputs = ports.len();
            for p in &ports {
                let port = &mut self.ports[p.idx()];
                port.set_scheduler(&cfg.scheduler);
                if per_ingress {
                    port.use_per_ingress_queues(inputs);
                }
            }
            if let Some(t) = &cfg.trimming {
                self.fabric.trim[i] = Some(Trimming::new(t, self.classes as u8, &format!("{path}.trimming"))?);
            }
            if let Some(e) = &cfg.ecn {
                self.fabric.any_aqm = true;
                self.fabric.aqm[i] =
                    Some(Box::new(Aqm::new(e, self.classes, self.seed, i as u32, &format!("{path}.ecn"))?));
            }
        }
        Ok(())
    }

    /// The RED profile's decision for `pkt` offered to egress port `pid` of `node`.
    #[inline]
    pub(super) fn red_decision(&mut self, node: NodeId, pid: PortId, pkt: &Packet) -> AqmAction {
        if !self.fabric.any_aqm {
            return AqmAction::Pass;
        }
        match &mut self.fabric.aqm[node.idx()] {
            None => AqmAction::Pass,
            Some(aqm) => aqm.decide(self.ports[pid.idx()].queue(pkt.class as usize).queued, pkt.class, pkt.ecn),
        }
    }

    /// Trims packet `id`, refused by the buffer of `node`, if the node trims
    /// and the packet may be trimmed; returns whether it did (the header is
    /// then to be offered again).
    pub(super) fn trim_refused(&mut self, node: NodeId, out: u16, id: PacketId) -> bool {
        let Some(t) = self.fabric.trim.get(node.idx()).copied().flatten() else { return false };
        let p = self.pool.get_mut(id);
        if !t.applies(p) {
            return false;
        }
        let cut = t.trim(p) as u64;
        self.fabric.trimmed_packets += 1;
        self.fabric.trimmed_bytes += cut;
        let e = self.fabric.trims.entry((node.0, out as u32)).or_insert((0, 0));
        e.0 += 1;
        e.1 += cut;
        true
    }

    /// CE-marks an admitted ECT packet and counts the mark.
    pub(super) fn mark_packet(&mut self, node: NodeId, out: u16, class: u8, id: PacketId, reason: MarkReason) {
        let p = self.pool.get_mut(id);
        if p.ecn != ECN_ECT {
            return;
        }
        p.ecn = ECN_CE;
        let e = self.fabric.marks.entry((node.0, out as u32, class, reason)).or_insert((0, 0));
        e.0 += 1;
        e.1 += p.size as u64;
        self.fabric.marked_packets += 1;
    }

    /// Records the occupancy of every switch buffer (total and per pool).
    pub(super) fn sample_pools(&mut self) {
        let t = self.now.0;
        for (i, node) in self.nodes.iter().enumerate() {
            if node.kind != NodeKind::Switch {
                continue;
            }
            let used = node.buffer.used_bytes();
            if used == 0 && !self.fabric.pool_nonzero[i] {
                continue;
            }
            self.fabric.pool_nonzero[i] = used > 0;
            self.fabric.pool_samples.push((t, i as u32, 0, used));
            for (k, b) in node.buffer.model().pool_bytes().into_iter().enumerate() {
                self.fabric.pool_samples.push((t, i as u32, k as u32 + 1, b));
            }
        }
    }

    /// Adds the feature tables and summary entries.
    pub(super) fn fabric_outputs(&mut self, tables: &mut BTreeMap<String, Table>, s: &mut BTreeMap<String, Value>) {
        let f = &mut self.fabric;
        s.insert("packets_marked".into(), Value::Int(f.marked_packets as i64));
        if f.trims() {
            s.insert("packets_trimmed".into(), Value::Int(f.trimmed_packets as i64));
            s.insert("bytes_trimmed".into(), Value::Int(f.trimmed_bytes as i64));
            let mut t = Table::default();
            t.push("node", Column::U32(f.trims.keys().map(|k| k.0).collect()));
            t.push("port", Column::U32(f.trims.keys().map(|k| k.1).collect()));
            t.push("packets", Column::U64(f.trims.values().map(|v| v.0).collect()));
            t.push("bytes_cut", Column::U64(f.trims.values().map(|v| v.1).collect()));
            tables.insert("trims".into(), t);
        }

        let mut t = Table::default();
        t.push("node", Column::U32(f.marks.keys().map(|k| k.0).collect()));
        t.push("port", Column::U32(f.marks.keys().map(|k| k.1).collect()));
        t.push("class", Column::U8(f.marks.keys().map(|k| k.2).collect()));
        t.push(
            "reason",
            Column::Cat {
                codes: f.marks.keys().map(|k| k.3 as u32).collect(),
                labels: MARK_LABELS[..if f.marks.keys().any(|k| k.3 == MarkReason::Policy) { 3 } else { 2 }]
                    .iter()
                    .map(|x| x.to_string())
                    .collect(),
            },
        );
        t.push("packets", Column::U64(f.marks.values().map(|v| v.0).collect()));
        t.push("bytes", Column::U64(f.marks.values().map(|v| v.1).collect()));
        tables.insert("marks".into(), t);

        let samples = std::mem::take(&mut f.pool_samples);
        let mut t = Table::default();
        t.push("time_ps", Column::U64(samples.iter().map(|x| x.0).collect()));
        t.push("node", Column::U32(samples.iter().map(|x| x.1).collect()));
        t.push(
            "pool",
            Column::Cat {
                codes: samples.iter().map(|x| x.2).collect(),
                labels: POOL_LABELS.iter().map(|x| x.to_string()).collect(),
            },
        );
        t.push("bytes", Column::U64(samples.iter().map(|x| x.3).collect()));
        tables.insert("pools".into(), t);

        let switches: Vec<usize> = (0..self.nodes.len()).filter(|&i| self.nodes[i].kind == NodeKind::Switch).collect();
        let mut t = Table::default();
        t.push("node", Column::U32(switches.iter().map(|&i| i as u32).collect()));
        // Built-in model names, then each registered policy's name in order of first use.
        let mut labels: Vec<String> = crate::buffer::BUILTIN_MODELS.iter().map(|x| x.to_string()).collect();
        let mut codes = Vec::with_capacity(switches.len());
        for &i in &switches {
            let name = self.nodes[i].buffer.model().name();
            codes.push(match labels.iter().position(|l| l == name) {
                Some(k) => k as u32,
                None => {
                    labels.push(name.to_string());
                    labels.len() as u32 - 1
                }
            });
        }
        t.push("model", Column::Cat { codes, labels });
        t.push(
            "capacity_bytes",
            Column::U64(switches.iter().map(|&i| self.nodes[i].buffer.model().capacity_bytes()).collect()),
        );
        t.push(
            "high_water_bytes",
            Column::U64(switches.iter().map(|&i| self.nodes[i].buffer.high_water_bytes()).collect()),
        );
        // Devices that count cells: the same in cells (-1 for the others).
        let cells = |f: fn((u64, u64, u64)) -> u64| {
            Column::I64(
                switches
                    .iter()
                    .map(|&i| self.nodes[i].buffer.model().cell_counts().map_or(-1, |c| f(c) as i64))
                    .collect(),
            )
        };
        t.push(
            "cell_bytes",
            Column::I64(
                switches.iter().map(|&i| self.nodes[i].buffer.model().cell_bytes().map_or(-1, |c| c as i64)).collect(),
            ),
        );
        t.push("capacity_cells", cells(|c| c.1));
        t.push("reserved_cells", cells(|c| c.2));
        t.push("high_water_cells", cells(|c| c.0));
        tables.insert("buffers".into(), t);

        let mut rows: Vec<(u32, u32, u8, u64)> = Vec::new();
        for p in &self.ports {
            if self.nodes[p.node.idx()].kind != NodeKind::Switch {
                continue;
            }
            for (c, hw) in p.queues().map(|q| q.high_water).enumerate() {
                if hw > 0 {
                    rows.push((p.node.0, p.local as u32, c as u8, hw));
                }
            }
        }
        let mut t = Table::default();
        t.push("node", Column::U32(rows.iter().map(|x| x.0).collect()));
        t.push("port", Column::U32(rows.iter().map(|x| x.1).collect()));
        t.push("class", Column::U8(rows.iter().map(|x| x.2).collect()));
        t.push("high_water_bytes", Column::U64(rows.iter().map(|x| x.3).collect()));
        tables.insert("queue_peaks".into(), t);
    }
}
