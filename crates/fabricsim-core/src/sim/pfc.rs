//! PFC inside the simulation: setup of lossless classes and headroom per
//! switch, PAUSE frames (created by a switch, consumed by the link partner),
//! paused egress ports, XOFF refresh, and the `pauses` table.
//!
//! A PAUSE frame is a MAC control frame: it waits only for the frame being
//! transmitted, then goes before every class ([`Port::push_ctrl`]); it is not
//! charged to any buffer and belongs to no flow. It counts as created when the
//! switch makes it and as delivered when the partner consumes it, so packet
//! conservation covers it (`control_frames_*` in the summary).
//!
//! [`Port::push_ctrl`]: crate::network::Port::push_ctrl

use super::{Event, Simulation};
use crate::buffer::pfc::{PfcIngress, Xoff};
use crate::buffer::shared::alpha_exponent;
use crate::buffer::{BufferConfig, BuiltinBufferConfig};
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::ids::{NodeId, PacketId, PortId};
use crate::network::pfc::{headroom_bytes, pause_time, PAUSE_FRAME_BYTES};
use crate::network::topology::NodeKind;
use crate::packet::Packet;
use crate::stats::{Column, Table, Value};
use crate::units::SimTime;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
struct PortPfc {
    until: [SimTime; 8],
    since: [SimTime; 8],
    paused_ps: [u64; 8],
    xoff_tx: [u64; 8],
    xon_tx: [u64; 8],
    xoff_rx: [u64; 8],
    xon_rx: [u64; 8],
    refresh_gen: [u32; 8],
}

/// PFC state of the simulation.
#[derive(Debug, Default)]
pub(super) struct PfcState {
    /// Per node: lossless classes (bit mask), switches with PFC only.
    pub lossless: Vec<u8>,
    /// Per node: XOFF quanta and refresh period (`None`: half the pause time).
    quanta: Vec<u16>,
    refresh: Vec<Option<u64>>,
    /// Per port (empty while no switch uses PFC).
    ports: Vec<PortPfc>,
    pub ctrl_created: u64,
    pub ctrl_delivered: u64,
}

impl PfcState {
    /// Time egress class `class` of port `pid` has spent paused up to `now`
    /// (`paused`: whether it is paused now); 0 when no switch uses PFC.
    pub fn paused_ps(&self, pid: PortId, class: u8, now: SimTime, paused: bool) -> u64 {
        let Some(ps) = self.ports.get(pid.idx()) else { return 0 };
        let c = class as usize;
        ps.paused_ps[c] + if paused { (now - ps.since[c]).0 } else { 0 }
    }
}

impl Simulation {
    /// Enables PFC on every switch whose configuration has a `pfc` section.
    pub(super) fn setup_pfc(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        let net = &sc.network;
        let n = self.nodes.len();
        self.pfc.lossless = vec![0; n];
        self.pfc.quanta = vec![0; n];
        self.pfc.refresh = vec![None; n];
        for i in 0..n {
            if self.nodes[i].kind != NodeKind::Switch {
                continue;
            }
            let name = self.nodes[i].name.clone();
            let (cfg, path) = match net.switch_overrides.get(&name) {
                Some(c) => (c, format!("network.switch_overrides.{name}")),
                None => (&net.switch, "network.switch".to_string()),
            };
            let Some(p) = &cfg.pfc else { continue };
            let path = format!("{path}.pfc");
            let err = |f: &str, m: String| ConfigError::new(format!("{path}.{f}"), m);
            let cell = match &cfg.buffer {
                BufferConfig::Builtin(BuiltinBufferConfig::Shared(c)) => c.cell_bytes as u64,
                _ => return Err(err("classes", "PFC needs buffer model shared".into())),
            };
            if p.classes.is_empty() {
                return Err(err("classes", "name at least one lossless class".into()));
            }
            let mut mask = 0u8;
            for &c in &p.classes {
                if c as usize >= self.classes {
                    return Err(err(
                        "classes",
                        format!("class {c} does not exist (classes are 0..{})", self.classes - 1),
                    ));
                }
                mask |= 1 << c;
            }
            if p.quanta == 0 {
                return Err(err("quanta", "must be 1..65535".into()));
            }
            let xoff = match p.xoff_bytes {
                Some(b) => Xoff::Static(b.div_ceil(cell)),
                None => match alpha_exponent(p.xoff_alpha) {
                    Some(k) => Xoff::Dynamic(k),
                    None => {
                        return Err(err(
                            "xoff_alpha",
                            format!("{} is not an allowed alpha; allowed: 1/128, 1/64, ..., 1, 2, 4, 8", p.xoff_alpha),
                        ))
                    }
                },
            };
            let node = &self.nodes[i];
            let headroom: Vec<u64> = (0..node.num_ports)
                .map(|l| {
                    let port = &self.ports[node.port(l).idx()];
                    let ch = &self.channels[port.channel.idx()];
                    let bytes = p.headroom_bytes.unwrap_or_else(|| {
                        let lat = node.latency + self.nodes[ch.to_node.idx()].latency;
                        headroom_bytes(port.rate, ch.delay, lat, p.mtu_bytes, self.overhead)
                    });
                    bytes.div_ceil(cell)
                })
                .collect();
            let ingress = PfcIngress::new(
                node.num_ports as usize,
                self.classes,
                mask,
                xoff,
                p.resume_offset_bytes.div_ceil(cell),
                headroom,
            );
            self.nodes[i].buffer.model_mut().enable_pfc(ingress).map_err(|m| err("headroom", m))?;
            self.pfc.lossless[i] = mask;
            self.pfc.quanta[i] = p.quanta;
            self.pfc.refresh[i] = p.refresh_ps;
            if self.pfc.ports.is_empty() {
                self.pfc.ports = vec![PortPfc::default(); self.ports.len()];
            }
        }
        Ok(())
    }

    /// Turns the buffer model's XOFF/XON decision at `node` into a PAUSE frame.
    pub(super) fn pfc_signal(&mut self, node: NodeId, (port, class, xoff): (u16, u8, bool)) {
        let pid = self.nodes[node.idx()].port(port);
        let quanta = if xoff { self.pfc.quanta[node.idx()] } else { 0 };
        self.send_pause(node, pid, class, quanta);
        if xoff {
            let ps = &mut self.pfc.ports[pid.idx()];
            ps.refresh_gen[class as usize] = ps.refresh_gen[class as usize].wrapping_add(1);
            let gen = ps.refresh_gen[class as usize];
            let at = self.now + self.refresh_period(node, pid);
            self.queue.push(at, Event::PfcRefresh(pid, class, gen));
        }
    }

    fn refresh_period(&self, node: NodeId, pid: PortId) -> SimTime {
        match self.pfc.refresh[node.idx()] {
            Some(r) => SimTime(r.max(1)),
            None => SimTime((pause_time(self.pfc.quanta[node.idx()], self.ports[pid.idx()].rate).0 / 2).max(1)),
        }
    }

    /// Sends a PFC frame for `class` out of port `pid` of `node` (quanta 0 = XON).
    fn send_pause(&mut self, node: NodeId, pid: PortId, class: u8, quanta: u16) {
        let now = self.now;
        let ps = &mut self.pfc.ports[pid.idx()];
        if quanta == 0 {
            ps.xon_tx[class as usize] += 1;
        } else {
            ps.xoff_tx[class as usize] += 1;
        }
        let peer = self.channels[self.ports[pid.idx()].channel.idx()].to_node;
        let pkt = Packet::pause_frame(node, peer, PAUSE_FRAME_BYTES, class, quanta, now);
        let id = self.create_packet(pkt);
        self.pfc.ctrl_created += 1;
        let port = &mut self.ports[pid.idx()];
        port.push_ctrl(id);
        if port.is_idle() {
            self.start_next(pid, now);
        }
    }

    /// XOFF refresh: re-send while the priority group is still paused.
    pub(super) fn pfc_refresh_is_stale(&self, pid: PortId, class: u8, gen: u32) -> bool {
        self.pfc.ports[pid.idx()].refresh_gen[class as usize] != gen
    }

    pub(super) fn on_pfc_refresh(&mut self, pid: PortId, class: u8, gen: u32) {
        if self.pfc.ports[pid.idx()].refresh_gen[class as usize] != gen {
            return;
        }
        let port = &self.ports[pid.idx()];
        let (node, local) = (port.node, port.local);
        let still = self.nodes[node.idx()].buffer.model().pfc().is_some_and(|p| p.is_paused(local, class));
        if still {
            self.send_pause(node, pid, class, self.pfc.quanta[node.idx()]);
            let at = self.now + self.refresh_period(node, pid);
            self.queue.push(at, Event::PfcRefresh(pid, class, gen));
        }
    }

    /// A PFC frame arrived at `node` on local port `ingress`: pause or resume
    /// that port's egress class, and consume the frame.
    pub(super) fn on_pause_frame(&mut self, node: NodeId, ingress: u16, id: PacketId) {
        let pkt = *self.pool.get(id);
        self.delivered_packets += 1;
        self.delivered_bytes += pkt.size as u64;
        self.pfc.ctrl_delivered += 1;
        self.pool.free(id);
        let pid = self.nodes[node.idx()].port(ingress);
        let c = pkt.class as usize;
        let quanta = pkt.pause_quanta();
        if quanta == 0 {
            self.pfc.ports[pid.idx()].xon_rx[c] += 1;
            self.pfc_resume(pid, pkt.class);
            return;
        }
        let now = self.now;
        let until = now + pause_time(quanta, self.ports[pid.idx()].rate);
        let ps = &mut self.pfc.ports[pid.idx()];
        ps.xoff_rx[c] += 1;
        ps.until[c] = until;
        let port = &mut self.ports[pid.idx()];
        if port.paused & (1 << c) == 0 {
            port.paused |= 1 << c;
            ps.since[c] = now;
        }
        self.queue.push(until, Event::PfcResume(pid, pkt.class));
    }

    /// The pause time of a class may have run out.
    pub(super) fn on_pfc_resume(&mut self, pid: PortId, class: u8) {
        if self.now >= self.pfc.ports[pid.idx()].until[class as usize] {
            self.pfc_resume(pid, class);
        }
    }

    fn pfc_resume(&mut self, pid: PortId, class: u8) {
        let c = class as usize;
        let port = &mut self.ports[pid.idx()];
        if port.paused & (1 << c) == 0 {
            return;
        }
        port.paused &= !(1 << c);
        let ps = &mut self.pfc.ports[pid.idx()];
        ps.paused_ps[c] += (self.now - ps.since[c]).0;
        ps.until[c] = self.now;
        if port.is_idle() && port.has_eligible() {
            self.start_next(pid, self.now);
        }
    }

    /// The `pauses` table and the PFC summary entries.
    pub(super) fn pfc_outputs(&mut self, tables: &mut BTreeMap<String, Table>, s: &mut BTreeMap<String, Value>) {
        let now = self.now;
        let mut rows: Vec<(u32, u32, u8, [u64; 5])> = Vec::new();
        for (i, ps) in self.pfc.ports.iter().enumerate() {
            let port = &self.ports[i];
            for c in 0..8 {
                let mut paused = ps.paused_ps[c];
                if port.paused & (1 << c) != 0 {
                    paused += (now - ps.since[c]).0;
                }
                let v = [ps.xoff_tx[c], ps.xon_tx[c], ps.xoff_rx[c], ps.xon_rx[c], paused];
                if v.iter().any(|&x| x > 0) {
                    rows.push((port.node.0, port.local as u32, c as u8, v));
                }
            }
        }
        let total = |k: usize| rows.iter().map(|r| r.3[k]).sum::<u64>();
        let int = |v: u64| Value::Int(v as i64);
        s.insert("pfc_pause_frames_sent".into(), int(total(0) + total(1)));
        s.insert("pfc_pause_frames_received".into(), int(total(2) + total(3)));
        s.insert("pfc_xoff_sent".into(), int(total(0)));
        s.insert("pfc_paused_ps".into(), int(total(4)));
        s.insert("control_frames_created".into(), int(self.pfc.ctrl_created));
        s.insert("control_frames_delivered".into(), int(self.pfc.ctrl_delivered));
        let peak: u64 = self
            .nodes
            .iter()
            .filter_map(|n| n.buffer.model().pfc().map(|p| p.headroom_peak * self.cell_bytes_of(n)))
            .max()
            .unwrap_or(0);
        s.insert("pfc_headroom_peak_bytes".into(), int(peak));
        let mut t = Table::default();
        t.push("node", Column::U32(rows.iter().map(|r| r.0).collect()));
        t.push("port", Column::U32(rows.iter().map(|r| r.1).collect()));
        t.push("priority", Column::U8(rows.iter().map(|r| r.2).collect()));
        t.push("xoff_sent", Column::U64(rows.iter().map(|r| r.3[0]).collect()));
        t.push("xon_sent", Column::U64(rows.iter().map(|r| r.3[1]).collect()));
        t.push("xoff_received", Column::U64(rows.iter().map(|r| r.3[2]).collect()));
        t.push("xon_received", Column::U64(rows.iter().map(|r| r.3[3]).collect()));
        t.push("paused_ps", Column::U64(rows.iter().map(|r| r.3[4]).collect()));
        tables.insert("pauses".into(), t);
    }

    fn cell_bytes_of(&self, n: &crate::network::Node) -> u64 {
        match n.buffer.model() {
            crate::buffer::BufferModel::Shared(m) => m.cell_bytes() as u64,
            _ => 1,
        }
    }
}
