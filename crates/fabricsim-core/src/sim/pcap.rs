//! Packet captures: taps on chosen ports of switches and hosts
//! (`stats.pcap`), recording every frame a port starts to transmit (`tx`,
//! stamped with the time its first bit leaves) or receives whole (`rx`,
//! stamped with the time its last bit arrived; frames lost on the link are
//! not received). A tap on a host with a host model sees the wire side of
//! its NIC: frames, not the GSO/GRO batches inside the host.
//!
//! The core keeps a copy of each captured packet and, at the end of the run,
//! turns them into the `captures` table: one row per frame with the header
//! fields a capture shows (5-tuple, ECN, DSCP, VXLAN VNI, TCP sequence,
//! acknowledgment, flags, window, options, RoCEv2 BTH/AETH fields, PFC
//! class vector and quanta). `capture_taps` describes the taps. The Python
//! side (`fabricsim.outputs.pcap`) writes them as pcapng or pcap files with
//! synthesized headers.
//!
//! Off (no taps), the only cost is one test of a flag per transmitted and
//! per received frame.

use std::collections::BTreeMap;

use super::roce::RoceWire;
use super::transport::TcpWire;
use super::Simulation;
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::ids::{ChannelId, PacketId, PortId};
use crate::packet::{Packet, PacketKind, CONTROL_FLOW};
use crate::stats::PcapTapConfig;
use crate::stats::{Column, Table};
use crate::transport::roce::FLAG_TRIMMED;

/// Largest `max_packets` of a tap (each captured frame holds ~130 B until the run ends).
pub const MAX_CAPTURED: u64 = 10_000_000;

const NONE: u32 = u32::MAX;
/// `direction` codes of the tables.
const DIR_TX: u8 = 0;
const DIR_RX: u8 = 1;
const DIR_BOTH: u8 = 2;

#[derive(Clone, Debug)]
struct Tap {
    node: u32,
    /// Local port, or [`NONE`] for every port of the node.
    port: u32,
    dir: u8,
    snaplen: u32,
    max: u64,
    captured: u64,
    missed: u64,
}

#[derive(Clone, Copy, Debug)]
struct Record {
    t: u64,
    tap: u32,
    dir: u8,
    channel: u32,
    pkt: Packet,
}

/// Capture taps and what they recorded.
#[derive(Debug, Default)]
pub(super) struct CaptureState {
    /// Some tap exists: the per-frame hooks run.
    pub on: bool,
    /// Per port: the tap that records what it transmits, or [`NONE`].
    tx_tap: Vec<u32>,
    /// Per channel: the tap that records what its far end receives, or [`NONE`].
    rx_tap: Vec<u32>,
    taps: Vec<Tap>,
    records: Vec<Record>,
}

impl Simulation {
    /// Resolves `stats.pcap`.
    pub(super) fn setup_capture(&mut self, sc: &Scenario, index: &BTreeMap<&str, usize>) -> Result<(), ConfigError> {
        let cfg: &[PcapTapConfig] = &sc.stats.pcap;
        if cfg.is_empty() {
            return Ok(());
        }
        let c = &mut self.capture;
        c.tx_tap = vec![NONE; self.ports.len()];
        c.rx_tap = vec![NONE; self.channels.len()];
        for (i, t) in cfg.iter().enumerate() {
            let path = format!("stats.pcap[{i}]");
            let Some(&node) = index.get(t.node.as_str()) else {
                return Err(ConfigError::new(format!("{path}.node"), format!("unknown node '{}'", t.node)));
            };
            let n = &self.nodes[node];
            if let Some(p) = t.port {
                if p >= n.num_ports {
                    return Err(ConfigError::new(
                        format!("{path}.port"),
                        format!("'{}' has ports 0..{}", t.node, n.num_ports.saturating_sub(1)),
                    ));
                }
            }
            let dir = match t.direction.as_str() {
                "tx" => DIR_TX,
                "rx" => DIR_RX,
                "both" => DIR_BOTH,
                other => {
                    return Err(ConfigError::new(
                        format!("{path}.direction"),
                        format!("unknown direction '{other}' (tx, rx, both)"),
                    ))
                }
            };
            if t.snaplen == 0 {
                return Err(ConfigError::new(format!("{path}.snaplen"), "must be > 0"));
            }
            if t.max_packets == 0 || t.max_packets > MAX_CAPTURED {
                return Err(ConfigError::new(format!("{path}.max_packets"), format!("must be in 1..={MAX_CAPTURED}")));
            }
            let tap = c.taps.len() as u32;
            let (first, count) = match t.port {
                Some(p) => (p, 1),
                None => (0, n.num_ports),
            };
            for local in first..first + count {
                let pid = n.port(local);
                let clash = |path: &str| {
                    ConfigError::new(
                        format!("{path}.port"),
                        format!("port {local} of '{}' is already captured in this direction by another tap", t.node),
                    )
                };
                if dir != DIR_RX {
                    if c.tx_tap[pid.idx()] != NONE {
                        return Err(clash(&path));
                    }
                    c.tx_tap[pid.idx()] = tap;
                }
                if dir != DIR_TX {
                    // The channel arriving on this port: the reverse of the port's own.
                    let Some(back) =
                        self.channels.iter().position(|ch| ch.to_node.idx() == node && ch.to_port_local == local)
                    else {
                        return Err(ConfigError::new(
                            format!("{path}.port"),
                            format!("port {local} of '{}' receives nothing", t.node),
                        ));
                    };
                    if c.rx_tap[back] != NONE {
                        return Err(clash(&path));
                    }
                    c.rx_tap[back] = tap;
                }
            }
            c.taps.push(Tap {
                node: node as u32,
                port: t.port.map_or(NONE, |p| p as u32),
                dir,
                snaplen: t.snaplen,
                max: t.max_packets,
                captured: 0,
                missed: 0,
            });
        }
        c.on = true;
        Ok(())
    }

    /// Port `pid` starts transmitting packet `id` at `at`.
    #[cold]
    #[inline(never)]
    pub(super) fn capture_tx(&mut self, pid: PortId, id: PacketId, at: crate::units::SimTime) {
        let tap = self.capture.tx_tap[pid.idx()];
        if tap != NONE {
            let channel = self.ports[pid.idx()].channel.0;
            self.capture_record(tap, DIR_TX, channel, at.0, id);
        }
    }

    /// Channel `cid` delivered packet `id` whole to its far end now.
    #[cold]
    #[inline(never)]
    pub(super) fn capture_rx(&mut self, cid: ChannelId, id: PacketId) {
        let tap = self.capture.rx_tap[cid.idx()];
        if tap != NONE {
            self.capture_record(tap, DIR_RX, cid.0, self.now.0, id);
        }
    }

    fn capture_record(&mut self, tap: u32, dir: u8, channel: u32, t: u64, id: PacketId) {
        let pkt = *self.pool.get(id);
        let c = &mut self.capture;
        let tp = &mut c.taps[tap as usize];
        if tp.captured >= tp.max {
            tp.missed += 1;
            return;
        }
        tp.captured += 1;
        c.records.push(Record { t, tap, dir, channel, pkt });
    }

    /// Adds `captures` and `capture_taps` when taps exist.
    pub(super) fn capture_outputs(&mut self, tables: &mut BTreeMap<String, Table>) {
        if !self.capture.on {
            return;
        }
        let records = std::mem::take(&mut self.capture.records);
        let mut t = Table::default();
        macro_rules! col {
            ($name:expr, $kind:ident, $f:expr) => {
                t.push($name, Column::$kind(records.iter().map($f).collect()));
            };
        }
        col!("tap", U32, |r| r.tap);
        col!("time_ps", U64, |r| r.t);
        col!("direction", U8, |r| r.dir);
        col!("node", U32, |r| self.capture.taps[r.tap as usize].node);
        col!("port", U32, |r| {
            let ch = &self.channels[r.channel as usize];
            if r.dir == DIR_TX {
                self.ports[ch.from_port.idx()].local as u32
            } else {
                ch.to_port_local as u32
            }
        });
        col!("from_node", U32, |r| self.channels[r.channel as usize].from_node.0);
        col!("to_node", U32, |r| self.channels[r.channel as usize].to_node.0);
        col!("kind", U8, |r| r.pkt.kind as u8);
        col!("flow", U32, |r| r.pkt.flow.0);
        col!("src_id", U32, |r| r.pkt.src.0);
        col!("dst_id", U32, |r| r.pkt.dst.0);
        col!("size", U32, |r| r.pkt.size);
        col!("class", U8, |r| r.pkt.class);
        col!("ecn", U8, |r| r.pkt.ecn);
        col!("dscp", U8, |r| r.pkt.dscp);
        col!("encap", U8, |r| r.pkt.encap);
        col!("vni", U32, |r| r.pkt.vni);
        col!("ttl", U8, |r| r.pkt.ttl);
        // The 5-tuple (none for MAC control frames).
        let tuples: Vec<_> = records
            .iter()
            .map(|r| if r.pkt.flow == CONTROL_FLOW { None } else { Some(self.five_tuple(&r.pkt)) })
            .collect();
        t.push("ip_src", Column::U32(tuples.iter().map(|x| x.map_or(0, |(f, _)| f.src)).collect()));
        t.push("ip_dst", Column::U32(tuples.iter().map(|x| x.map_or(0, |(f, _)| f.dst)).collect()));
        t.push("ip_proto", Column::U8(tuples.iter().map(|x| x.map_or(0, |(f, _)| f.proto)).collect()));
        t.push("sport", Column::U32(tuples.iter().map(|x| x.map_or(0, |(f, _)| f.sport as u32)).collect()));
        t.push("dport", Column::U32(tuples.iter().map(|x| x.map_or(0, |(f, _)| f.dport as u32)).collect()));
        t.push("reply", Column::Bool(tuples.iter().map(|x| x.is_some_and(|(_, r)| r)).collect()));
        // TCP headers.
        let tcp: Vec<TcpWire> = records
            .iter()
            .map(|r| if r.pkt.kind == PacketKind::Tcp { self.tcp_wire(&r.pkt) } else { TcpWire::default() })
            .collect();
        t.push("tcp_flags", Column::U8(tcp.iter().map(|w| w.flags).collect()));
        t.push("tcp_seq", Column::U64(tcp.iter().map(|w| w.seq).collect()));
        t.push("tcp_ack", Column::U64(tcp.iter().map(|w| w.ack).collect()));
        t.push("tcp_len", Column::U32(tcp.iter().map(|w| w.len).collect()));
        t.push("tcp_ts_ps", Column::U64(tcp.iter().map(|w| w.ts_ps).collect()));
        t.push("tcp_ts_echo_ps", Column::U64(tcp.iter().map(|w| w.ts_echo_ps).collect()));
        t.push("tcp_window", Column::U64(tcp.iter().map(|w| w.window).collect()));
        t.push("tcp_mss", Column::U32(tcp.iter().map(|w| w.mss).collect()));
        t.push("tcp_sack_permitted", Column::Bool(tcp.iter().map(|w| w.sack_permitted).collect()));
        t.push("tcp_header", Column::U32(tcp.iter().map(|w| w.header_bytes).collect()));
        t.push("tcp_sack_blocks", Column::U8(tcp.iter().map(|w| w.sack_blocks).collect()));
        for k in 0..3 {
            t.push(&format!("tcp_sack{k}_start"), Column::U64(tcp.iter().map(|w| w.sack[k].0).collect()));
            t.push(&format!("tcp_sack{k}_end"), Column::U64(tcp.iter().map(|w| w.sack[k].1).collect()));
        }
        // RoCEv2 headers.
        let roce: Vec<RoceWire> = records
            .iter()
            .map(|r| if r.pkt.kind == PacketKind::Roce { self.roce_wire(&r.pkt) } else { RoceWire::default() })
            .collect();
        t.push("roce_op", Column::U8(roce.iter().map(|w| w.op).collect()));
        t.push("roce_psn", Column::U64(roce.iter().map(|w| w.psn).collect()));
        t.push("roce_dst_qp", Column::U32(roce.iter().map(|w| w.dst_qp).collect()));
        t.push("roce_msn", Column::U32(roce.iter().map(|w| w.msn).collect()));
        let retx = records.iter().zip(tcp.iter().zip(&roce)).map(|(r, (a, b))| match r.pkt.kind {
            PacketKind::Tcp => a.retransmit,
            PacketKind::Roce => b.retransmit,
            _ => false,
        });
        t.push("retransmit", Column::Bool(retx.collect()));
        // A RoCE data packet or NACK a switch's trimming made (`network/trimming.rs`).
        let trimmed = |r: &Record| r.pkt.kind == PacketKind::Roce && r.pkt.flags & FLAG_TRIMMED != 0;
        t.push("trimmed", Column::Bool(records.iter().map(trimmed).collect()));
        // PFC PAUSE frames (IEEE 802.1Qbb): one priority per frame, quanta 0 = XON.
        let pause = |r: &Record| r.pkt.kind == PacketKind::Pause;
        col!("pause_classes", U8, |r| if pause(r) { 1u8 << (r.pkt.class & 7) } else { 0 });
        col!("pause_quanta", U32, |r| if pause(r) { r.pkt.pause_quanta() as u32 } else { 0 });
        tables.insert("captures".to_string(), t);

        let taps = &self.capture.taps;
        let mut t = Table::default();
        t.push("tap", Column::U32((0..taps.len() as u32).collect()));
        t.push("node", Column::U32(taps.iter().map(|x| x.node).collect()));
        t.push("port", Column::U32(taps.iter().map(|x| x.port).collect()));
        t.push("direction", Column::U8(taps.iter().map(|x| x.dir).collect()));
        t.push("snaplen", Column::U32(taps.iter().map(|x| x.snaplen).collect()));
        t.push("max_packets", Column::U64(taps.iter().map(|x| x.max).collect()));
        t.push("captured", Column::U64(taps.iter().map(|x| x.captured).collect()));
        t.push("missed", Column::U64(taps.iter().map(|x| x.missed).collect()));
        tables.insert("capture_taps".to_string(), t);
    }
}
