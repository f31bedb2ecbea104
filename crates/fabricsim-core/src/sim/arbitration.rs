//! Input arbitration inside the simulation: per-ingress sub-queues on the
//! egress ports of switches with an `arbitration` other than `fifo` (and of
//! VOQ devices), the input limit, and the `arbitration` and `fairness`
//! tables (see `network/arbitration.rs` for the rules).

use super::Simulation;
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::network::arbitration::jain;
use crate::network::port::Packets;
use crate::network::topology::NodeKind;
use crate::pipeline::port_pipes;
use crate::stats::{Column, Table};
use std::collections::BTreeMap;

/// (node, port, class, input (-1: local), group, packets, bytes, share).
type ShareRow = (u32, u32, u8, i64, u32, u64, u64, f64);
/// (node, port, class, inputs, share_min, share_max, jain).
type FairRow = (u32, u32, u8, u32, f64, f64, f64);

impl Simulation {
    /// Installs the arbiter of every switch whose `arbitration` asks for one.
    pub(super) fn setup_arbitration(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        let net = &sc.network;
        for i in 0..self.nodes.len() {
            let node = &self.nodes[i];
            if node.kind != NodeKind::Switch {
                continue;
            }
            let (cfg, path) = match net.switch_overrides.get(&node.name) {
                Some(c) => (c, format!("network.switch_overrides.{}", node.name)),
                None => (&net.switch, "network.switch".to_string()),
            };
            let ports = node.num_ports as usize;
            let pipes = match &cfg.pipeline {
                Some(p) => Some(port_pipes(p, ports, &format!("{path}.pipeline"))?),
                None => None,
            };
            let Some(arb) = cfg.arbitration.arbiter(ports, pipes.as_deref(), &format!("{path}.arbitration"))? else {
                continue;
            };
            // VOQ devices keep their per-ingress sub-queues; a FIFO arbiter only sets their limit.
            let voq = node.buffer.model().per_ingress_queues();
            for l in 0..node.num_ports {
                let port = &mut self.ports[node.port(l).idx()];
                if voq && !arb.round_robin {
                    port.set_input_limit(arb.input_limit);
                } else if arb.round_robin {
                    port.use_input_groups(ports, &arb.group, arb.input_limit);
                } else {
                    port.use_fifo_inputs(ports, arb.input_limit);
                }
            }
        }
        Ok(())
    }

    /// Adds the `arbitration` table (per egress port, class and input: packets
    /// and bytes sent, share of the port's bytes) and the `fairness` table (per
    /// egress port and class: inputs, smallest and largest share, Jain's index).
    pub(super) fn arbitration_outputs(&self, tables: &mut BTreeMap<String, Table>) {
        let mut rows: Vec<ShareRow> = Vec::new();
        let mut fair: Vec<FairRow> = Vec::new();
        for port in &self.ports {
            if self.nodes[port.node.idx()].kind != NodeKind::Switch {
                continue;
            }
            for (c, q) in port.queues().enumerate() {
                let Packets::PerIngress(s) = &q.packets else { continue };
                let (tx_packets, tx_bytes, groups) = (&s.tx_packets, &s.tx_bytes, s.groups());
                let total: u64 = tx_bytes.iter().sum();
                if total == 0 {
                    continue;
                }
                let local = tx_bytes.len() - 1;
                let mut shares = Vec::new();
                for (i, (&p, &b)) in tx_packets.iter().zip(tx_bytes).enumerate() {
                    if p == 0 {
                        continue;
                    }
                    let share = b as f64 / total as f64;
                    let input = if i == local { -1 } else { i as i64 };
                    let group = groups[i] as u32;
                    rows.push((port.node.0, port.local as u32, c as u8, input, group, p, b, share));
                    shares.push(share);
                }
                let min = shares.iter().copied().fold(f64::INFINITY, f64::min);
                let max = shares.iter().copied().fold(0.0, f64::max);
                fair.push((port.node.0, port.local as u32, c as u8, shares.len() as u32, min, max, jain(&shares)));
            }
        }
        let mut t = Table::default();
        t.push("node", Column::U32(rows.iter().map(|r| r.0).collect()));
        t.push("port", Column::U32(rows.iter().map(|r| r.1).collect()));
        t.push("class", Column::U8(rows.iter().map(|r| r.2).collect()));
        t.push("input", Column::I64(rows.iter().map(|r| r.3).collect()));
        t.push("group", Column::U32(rows.iter().map(|r| r.4).collect()));
        t.push("packets", Column::U64(rows.iter().map(|r| r.5).collect()));
        t.push("bytes", Column::U64(rows.iter().map(|r| r.6).collect()));
        t.push("share", Column::F64(rows.iter().map(|r| r.7).collect()));
        tables.insert("arbitration".into(), t);

        let mut t = Table::default();
        t.push("node", Column::U32(fair.iter().map(|r| r.0).collect()));
        t.push("port", Column::U32(fair.iter().map(|r| r.1).collect()));
        t.push("class", Column::U8(fair.iter().map(|r| r.2).collect()));
        t.push("inputs", Column::U32(fair.iter().map(|r| r.3).collect()));
        t.push("share_min", Column::F64(fair.iter().map(|r| r.4).collect()));
        t.push("share_max", Column::F64(fair.iter().map(|r| r.5).collect()));
        t.push("jain", Column::F64(fair.iter().map(|r| r.6).collect()));
        tables.insert("fairness".into(), t);
    }
}
