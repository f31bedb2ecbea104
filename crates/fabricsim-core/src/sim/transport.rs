//! TCP inside the simulation: one [`Connection`] per flow, its timer event, the
//! applications that open connections (bulk, incast, explicit flow lists), and
//! per-interval throughput records.
//!
//! A connection keeps at most one valid timer event: when its earliest deadline
//! moves earlier, a new event is pushed with a new generation number and the old
//! one is ignored when it fires (the event queue drops it when it next moves
//! it); when the deadline moves later, the pending event fires early, finds
//! nothing expired and re-arms. The deadline is recomputed only after the
//! sender or receiver changed ([`deadline_memo::Memoized`]: every mutable
//! access to a side forgets what that side's change can move): a transmit
//! completion that wakes nothing leaves both as they were.

use super::{resolve_host, Event, Simulation};
use crate::error::ConfigError;
use crate::ids::{FlowId, NodeId};
use crate::network::topology::Graph;
use crate::packet::{Packet, PacketKind, ECN_CE, ECN_ECT, ECN_NOT_ECT, TCP_ACK, TCP_DATA, TCP_SYN, TCP_SYN_ACK};
use crate::rng::{mix64, RandomStream};
use crate::stats::{Column, FlowKind, FlowStats, Table};
use crate::transport::apps::{TcpBulkConfig, TcpFlowsConfig, TcpIncastConfig};
use crate::transport::tcp::cc::{CcInit, CongestionControl, SlowStartExit};
use crate::transport::tcp::reader::ReaderState;
use crate::transport::tcp::sender::SenderState;
use crate::transport::tcp::{Connection, SackBlocks, SegKind, Segment, TcpConfig};
use crate::units::SimTime;
use std::collections::BTreeMap;

/// A TCP flow's simulation state.
#[derive(Debug)]
pub(super) struct TcpFlow {
    conn: deadline_memo::Memoized,
    cfg: u32,
    flow: FlowId,
    src: NodeId,
    dst: NodeId,
    class: u8,
    hash: u64,
    /// The receiver's window scale: ACKs carry `wnd >> wscale`.
    wscale: u32,
    timer_at: Option<SimTime>,
    incast: Option<u32>,
    /// The connection carrying data the other way between the same two
    /// sockets (`tcp_couple`), or `u32::MAX`: its pending ACK rides on this
    /// connection's data segments, and theirs on its.
    peer: u32,
    round: u32,
    reported: u64,
    sized: bool,
    completed: bool,
}

/// An incast application: rounds of simultaneous responses.
#[derive(Debug)]
pub(super) struct IncastApp {
    rounds: Vec<Vec<u32>>,
    current: usize,
    remaining: usize,
    gap: SimTime,
}

/// Delivered application bytes per (time bin, flow).
#[derive(Debug, Default)]
pub(crate) struct ThroughputBins {
    interval: u64,
    /// Per flow: (current bin, its end time in ps, bytes in it); the end time
    /// spares a division per delivered packet.
    current: Vec<(u64, u64, u64)>,
    rows: Vec<(u64, u32, u64)>,
}

impl ThroughputBins {
    pub(crate) fn new(interval_ps: u64) -> Self {
        ThroughputBins { interval: interval_ps, current: Vec::new(), rows: Vec::new() }
    }

    #[inline(always)]
    pub(crate) fn add(&mut self, flow: u32, now_ps: u64, bytes: u64) {
        if self.interval == 0 || bytes == 0 {
            return;
        }
        let f = flow as usize;
        if self.current.len() <= f {
            self.current.resize(f + 1, (u64::MAX, 0, 0));
        }
        let cur = &mut self.current[f];
        // Delivery times of a flow never decrease: the bin changes only once
        // `now` reaches its end.
        if cur.0 == u64::MAX || now_ps >= cur.1 {
            let bin = now_ps / self.interval;
            if cur.0 != u64::MAX && cur.2 > 0 {
                self.rows.push((cur.0, flow, cur.2));
            }
            *cur = (bin, (bin + 1).saturating_mul(self.interval), 0);
        }
        cur.2 += bytes;
    }

    /// Columns `time_ps` (bin start), `flow_id`, `host` (the receiving node), `bytes`.
    pub(crate) fn into_table(mut self, flows: &[FlowStats]) -> Table {
        for (f, &(bin, _, bytes)) in self.current.iter().enumerate() {
            if bin != u64::MAX && bytes > 0 {
                self.rows.push((bin, f as u32, bytes));
            }
        }
        self.rows.sort_unstable();
        let mut t = Table::default();
        t.push("time_ps", Column::U64(self.rows.iter().map(|r| r.0 * self.interval).collect()));
        t.push("flow_id", Column::U32(self.rows.iter().map(|r| r.1).collect()));
        t.push("host", Column::U32(self.rows.iter().map(|r| flows[r.1 as usize].dst).collect()));
        t.push("bytes", Column::U64(self.rows.iter().map(|r| r.2).collect()));
        t
    }
}

const FLAG_ECE: u8 = 4;
const FLAG_CWR: u8 = 8;
pub(super) const FLAG_RETX: u8 = 16;
/// Bit 7 of `flags`: a data segment charged to its sender's TCP Small
/// Queues until it leaves the host (transmission completes at the NIC, it is
/// dropped, or a delay line takes it over).
pub(super) const FLAG_TSQ: u8 = 128;
/// Bit 5 of a data segment's `flags`: it also carries the ACK of its coupled
/// reverse connection in `ack`, `wnd`, `ts_echo` and the ECE bit (a pure
/// ACK uses bits 5-6 for its SACK block count instead).
const FLAG_PIGGY: u8 = 1 << 5;
/// Bit 6 of a data segment's `flags`: PSH (`Segment::psh`).
pub(super) const FLAG_PSH: u8 = 1 << 6;
/// Bits 5-6 of a pure ACK's `flags`: how many SACK blocks it carries.
const SACK_SHIFT: u8 = 5;
const SACK_MASK: u8 = 3 << SACK_SHIFT;

fn seg_kind_bits(k: SegKind) -> u8 {
    match k {
        SegKind::Syn => TCP_SYN,
        SegKind::SynAck => TCP_SYN_ACK,
        SegKind::Data => TCP_DATA,
        SegKind::Ack => TCP_ACK,
    }
}

/// SACK blocks ride in an ACK's packet as six signed 32-bit edge offsets
/// from the cumulative ACK (`SackBlocks::offsets`), in fields a pure ACK does
/// not otherwise use: `seq` (block 1), `ts` (block 2), `len` and `aux`
/// (block 3); the block count is in `flags`. The packet keeps its size.
fn pack_sack(p: &mut Packet, seg: &Segment) {
    let n = seg.sack.len();
    if n == 0 {
        return;
    }
    let o = seg.sack.offsets(seg.ack).map(|x| x as u32 as u64);
    p.seq = o[0] << 32 | o[1];
    p.ts = SimTime(o[2] << 32 | o[3]);
    p.len = o[4] as u32;
    p.aux = o[5] as u32;
    p.flags |= (n as u8) << SACK_SHIFT;
}

fn packet_segment(p: &Packet, wscale: u32) -> Segment {
    let kind = match p.tcp_segment() {
        TCP_SYN => SegKind::Syn,
        TCP_SYN_ACK => SegKind::SynAck,
        TCP_DATA => SegKind::Data,
        _ => SegKind::Ack,
    };
    let mut seg = Segment {
        kind,
        seq: p.seq,
        len: p.len,
        ack: p.ack,
        ece: p.flags & FLAG_ECE != 0,
        cwr: p.flags & FLAG_CWR != 0,
        ect: p.ecn != ECN_NOT_ECT,
        ts: p.ts,
        ts_echo: p.ts_echo,
        retransmit: p.flags & FLAG_RETX != 0,
        sack: SackBlocks::EMPTY,
        wnd: (p.wnd as u64) << wscale,
        tsq: false,
        psh: kind == SegKind::Data && p.flags & FLAG_PSH != 0,
    };
    let n = if kind == SegKind::Ack { ((p.flags & SACK_MASK) >> SACK_SHIFT) as usize } else { 0 };
    if n > 0 {
        let hi = |v: u64| (v >> 32) as u32 as i32;
        let lo = |v: u64| v as u32 as i32;
        let o = [hi(p.seq), lo(p.seq), hi(p.ts.0), lo(p.ts.0), p.len as i32, p.aux as i32];
        seg.sack = SackBlocks::from_offsets(p.ack, n, o);
        seg.seq = 0;
        seg.len = 0;
        seg.ts = SimTime::ZERO;
    }
    seg
}

/// TCP header flag bits (RFC 9293 3.1; ECE and CWR: RFC 3168 23.2).
pub(super) const TH_SYN: u8 = 0x02;
pub(super) const TH_PSH: u8 = 0x08;
pub(super) const TH_ACK: u8 = 0x10;
pub(super) const TH_ECE: u8 = 0x40;
pub(super) const TH_CWR: u8 = 0x80;

/// A TCP packet's header as a capture shows it (`sim/pcap.rs`). Sequence
/// and acknowledgment numbers count from 0 in each direction, as the
/// simulation does (the SYN and SYN-ACK lie outside that space); the
/// timestamps are the simulated ones in picoseconds.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TcpWire {
    /// Header flag bits (`TH_*`).
    pub flags: u8,
    pub seq: u64,
    pub ack: u64,
    pub len: u32,
    pub ts_ps: u64,
    pub ts_echo_ps: u64,
    /// Advertised receive window in bytes: what an autotuned receiver's ACK
    /// offers, else the fixed `tcp.rwnd`.
    pub window: u64,
    /// On SYN and SYN-ACK: the MSS option (IP MTU - 40, RFC 9293 3.7.1), 0 otherwise.
    pub mss: u32,
    /// On SYN and SYN-ACK: SACK is permitted (RFC 2018 2).
    pub sack_permitted: bool,
    /// TCP header bytes as the simulation sized the frame (`tcp.header_bytes`
    /// less 20 B of IPv4, plus the SACK option of an ACK).
    pub header_bytes: u32,
    pub sack_blocks: u8,
    /// SACK blocks in the receiver's order (a D-SACK block first).
    pub sack: [(u64, u64); 3],
    /// The sender marked the segment as a retransmission.
    pub retransmit: bool,
}

impl Simulation {
    pub(super) fn tcp_config(&mut self, cfg: &Option<TcpConfig>, path: &str) -> Result<u32, ConfigError> {
        let c = cfg.clone().unwrap_or_else(|| self.tcp_default.clone());
        c.validate(path)?;
        let cc = match &c.cc_ext {
            // The scenario's own `tcp` when the entry has none.
            Some(ext) => Some(crate::extension::tcp_cc::resolve(ext, if cfg.is_some() { path } else { "tcp" })?),
            None => None,
        };
        self.tcp_cfgs.push(c);
        self.tcp_cc.push(cc);
        Ok(self.tcp_cfgs.len() as u32 - 1)
    }

    pub(super) fn flow_name(&mut self, name: &str, default: String) -> u32 {
        self.flow_names.push(if name.is_empty() { default } else { name.to_string() });
        self.flow_names.len() as u32 - 1
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn new_tcp_flow(
        &mut self,
        name: u32,
        kind: FlowKind,
        src: NodeId,
        dst: NodeId,
        class: u8,
        bytes: Option<u64>,
        start: SimTime,
        stop: Option<SimTime>,
        cfg: u32,
        incast: Option<u32>,
        round: u32,
    ) -> u32 {
        let flow = FlowId(self.flows.len() as u32);
        let c = &self.tcp_cfgs[cfg as usize];
        let conn = match self.host_gso_limit(src) {
            // A modelled host's device sets the burst limit (see `host_gso_limit`).
            Some(g) if c.gso_max_bytes > 0 && c.gso_max_bytes != g => {
                let c = TcpConfig { gso_max_bytes: g, ..c.clone() };
                Connection::new(&c, bytes.unwrap_or(u64::MAX), stop)
            }
            _ => Connection::new(c, bytes.unwrap_or(u64::MAX), stop),
        };
        let wscale = c.rcv_wscale();
        let mut conn = conn;
        if let (Some(f), Some(ext)) = (&self.tcp_cc[cfg as usize], &c.cc_ext) {
            // A registered controller, with a random stream of its own.
            let init = CcInit {
                mss: c.mss() as u64,
                window: conn.sender.window,
                flow: flow.0,
                rng: RandomStream::new(self.seed, "tcp-cc", flow.0 as u64),
            };
            conn.sender.cc = CongestionControl::Custom(f.create(&ext.params, init));
        }
        if let Some(app) = &mut conn.receiver.app {
            // The receiving application's wake-up delays and preemptions: streams of their own per flow.
            app.seed(
                RandomStream::new(self.seed, "tcp-reader", flow.0 as u64),
                RandomStream::new(self.seed, "tcp-reader-preemption", flow.0 as u64),
            );
            // On a modelled host it runs on one of the host's cores.
            app.on_core = app.wants_core() && self.host.at(dst).is_some();
        }
        let hash = mix64(mix64(src.0 as u64) ^ mix64((dst.0 as u64) << 20) ^ mix64(0x6_0000_0000 + flow.0 as u64));
        self.flows.push(FlowStats {
            name,
            kind,
            src: src.0,
            dst: dst.0,
            class,
            start_ps: start.0,
            tcp: true,
            size_bytes: bytes,
            ..Default::default()
        });
        let t = self.tcp.len() as u32;
        self.flow_tcp.resize(self.flows.len(), u32::MAX);
        self.flow_tcp[flow.idx()] = t;
        self.tcp_timer_gen.push(0);
        self.tcp.push(TcpFlow {
            conn: deadline_memo::Memoized::new(conn),
            cfg,
            flow,
            src,
            dst,
            class,
            hash,
            wscale,
            timer_at: None,
            incast,
            peer: u32::MAX,
            round,
            reported: 0,
            sized: bytes.is_some(),
            completed: false,
        });
        t
    }

    pub(super) fn add_bulk(
        &mut self,
        i: usize,
        b: &TcpBulkConfig,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        let path = format!("traffic[{i}]");
        self.check_class(b.class, &path)?;
        if b.src.is_empty() {
            return Err(ConfigError::new(format!("{path}.src"), "must name at least one host"));
        }
        if b.streams == 0 {
            return Err(ConfigError::new(format!("{path}.streams"), "must be >= 1"));
        }
        match (b.bytes, b.duration_ps) {
            (Some(0), _) => return Err(ConfigError::new(format!("{path}.size"), "must be > 0")),
            (None, None) => {
                return Err(ConfigError::new(format!("{path}.size"), "give a size per stream or a duration"))
            }
            (_, Some(0)) => return Err(ConfigError::new(format!("{path}.duration"), "must be > 0")),
            _ => {}
        }
        let cfg = self.tcp_config(&b.tcp, &format!("{path}.tcp"))?;
        let dst = resolve_host(index, graph, &b.dst, &format!("{path}.dst"))?;
        let name = self.flow_name(&b.name, format!("tcp_bulk{i}"));
        let start = SimTime(b.start_ps);
        let stop = b.duration_ps.map(|d| start + SimTime(d));
        for (j, s) in b.src.iter().enumerate() {
            let src = resolve_host(index, graph, s, &format!("{path}.src[{j}]"))?;
            if src == dst {
                return Err(ConfigError::new(
                    format!("{path}.src[{j}]"),
                    format!("source '{s}' is also the destination"),
                ));
            }
            for _ in 0..b.streams {
                let t =
                    self.new_tcp_flow(name, FlowKind::TcpBulk, src, dst, b.class, b.bytes, start, stop, cfg, None, 0);
                self.queue.push(start, Event::TcpOpen(t));
            }
        }
        Ok(())
    }

    pub(super) fn add_incast(
        &mut self,
        i: usize,
        c: &TcpIncastConfig,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        let path = format!("traffic[{i}]");
        self.check_class(c.class, &path)?;
        if c.servers.is_empty() {
            return Err(ConfigError::new(format!("{path}.servers"), "must name at least one host"));
        }
        if c.response_bytes == 0 {
            return Err(ConfigError::new(format!("{path}.response_size"), "must be > 0"));
        }
        if c.rounds == 0 || c.flows_per_server == 0 {
            let field = if c.rounds == 0 { "rounds" } else { "flows_per_server" };
            return Err(ConfigError::new(format!("{path}.{field}"), "must be >= 1"));
        }
        let cfg = self.tcp_config(&c.tcp, &format!("{path}.tcp"))?;
        let client = resolve_host(index, graph, &c.client, &format!("{path}.client"))?;
        let mut servers = Vec::new();
        for (j, s) in c.servers.iter().enumerate() {
            let h = resolve_host(index, graph, s, &format!("{path}.servers[{j}]"))?;
            if h == client {
                return Err(ConfigError::new(
                    format!("{path}.servers[{j}]"),
                    format!("server '{s}' is also the client"),
                ));
            }
            servers.push(h);
        }
        let name = self.flow_name(&c.name, format!("tcp_incast{i}"));
        let app = self.incasts.len() as u32;
        let mut rounds = Vec::with_capacity(c.rounds as usize);
        for r in 0..c.rounds {
            let mut conns = Vec::new();
            for &s in &servers {
                for _ in 0..c.flows_per_server {
                    let start = SimTime(c.start_ps);
                    let t = self.new_tcp_flow(
                        name,
                        FlowKind::TcpIncast,
                        s,
                        client,
                        c.class,
                        Some(c.response_bytes),
                        start,
                        None,
                        cfg,
                        Some(app),
                        r,
                    );
                    conns.push(t);
                }
            }
            rounds.push(conns);
        }
        for &t in &rounds[0] {
            self.queue.push(SimTime(c.start_ps), Event::TcpOpen(t));
        }
        let remaining = rounds[0].len();
        self.incasts.push(IncastApp { rounds, current: 0, remaining, gap: SimTime(c.gap_ps) });
        Ok(())
    }

    pub(super) fn add_flow_list(
        &mut self,
        i: usize,
        f: &TcpFlowsConfig,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        let path = format!("traffic[{i}]");
        self.check_class(f.class, &path)?;
        let cfg = self.tcp_config(&f.tcp, &format!("{path}.tcp"))?;
        let name = self.flow_name(&f.name, format!("tcp_flows{i}"));
        super::flow_deps::check(&format!("{path}.flows"), &f.flows)?;
        let first = self.flows.len() as u32;
        for (j, spec) in f.flows.iter().enumerate() {
            let fp = format!("{path}.flows[{j}]");
            let src = resolve_host(index, graph, &spec.src, &format!("{fp}.src"))?;
            let dst = resolve_host(index, graph, &spec.dst, &format!("{fp}.dst"))?;
            if src == dst {
                return Err(ConfigError::new(fp, "source and destination are the same host"));
            }
            if spec.bytes == 0 {
                return Err(ConfigError::new(format!("{fp}.size"), "must be > 0"));
            }
            let start = SimTime(spec.start_ps);
            let t = self.new_tcp_flow(
                name,
                FlowKind::TcpFlow,
                src,
                dst,
                f.class,
                Some(spec.bytes),
                start,
                None,
                cfg,
                None,
                0,
            );
            debug_assert_eq!(self.tcp[t as usize].flow.0, first + j as u32, "a list's flows have consecutive ids");
            if spec.after.is_empty() {
                self.queue.push(start, Event::TcpOpen(t));
            } else {
                self.flow_deps_add(first, j, spec, Event::TcpOpen(t));
            }
        }
        Ok(())
    }

    /// The flow of TCP connection `t`.
    pub(super) fn tcp_flow_id(&self, t: u32) -> FlowId {
        self.tcp[t as usize].flow
    }

    /// The sending side of TCP connection `t`.
    pub(super) fn tcp_sender(&self, t: u32) -> &crate::transport::tcp::Sender {
        &self.tcp[t as usize].conn.get().sender
    }

    /// The name of the traffic entry that opened TCP connection `t`.
    pub(super) fn tcp_entry_name(&self, t: u32) -> &str {
        &self.flow_names[self.flows[self.tcp[t as usize].flow.idx()].name as usize]
    }

    // ------------------------------------------------------------- events

    pub(super) fn on_tcp_open(&mut self, t: u32) {
        let now = self.now;
        let f = &mut self.tcp[t as usize];
        self.flows[f.flow.idx()].start_ps = now.0;
        f.conn.sender_mut().open(now, &mut self.outbox);
        self.tcp_flush(t);
    }

    pub(super) fn tcp_timer_is_stale(&self, t: u32, generation: u32) -> bool {
        self.tcp_timer_gen[t as usize] != generation
    }

    pub(super) fn on_tcp_timer(&mut self, t: u32, generation: u32) {
        let now = self.now;
        if self.tcp_timer_gen[t as usize] != generation {
            return;
        }
        let f = &mut self.tcp[t as usize];
        f.timer_at = None;
        f.conn.both_mut().on_timer(now, &mut self.outbox);
        let (flow, reads) = (f.flow, f.conn.get().receiver.app.is_some());
        if self.tcp_trace.on {
            self.tcp_trace_record(t, false);
        }
        // A receiving application's reads deliver data on its timers.
        let (delivered, more) = if reads { self.tcp_note_delivered(t) } else { (0, false) };
        self.tcp_flush(t);
        if more {
            self.app_tcp_delivered(flow, delivered, 0);
        }
        if reads {
            self.tcp_reader_enqueue(t);
        }
    }

    /// A receiving application on a core that became runnable joins its core's queue.
    fn tcp_reader_enqueue(&mut self, t: u32) {
        let now = self.now;
        let f = &mut self.tcp[t as usize];
        let Some(app) = &mut f.conn.receiver_mut().app else { return };
        if app.state != ReaderState::Runnable {
            return;
        }
        app.state = ReaderState::Queued(now);
        let (node, flow) = (f.dst, f.flow.0);
        self.reader_enqueue(node, flow, t);
    }

    /// The core of connection `t`'s receiving application runs it: how long
    /// it holds the core (its copy), or `None` when it found nothing to read.
    pub(super) fn tcp_reader_run(&mut self, t: u32) -> Option<SimTime> {
        let now = self.now;
        let f = &mut self.tcp[t as usize];
        f.conn.receiver_mut().core_run(now)
    }

    /// The turn of connection `t`'s receiving application on its core
    /// ended: at the end of a chunk, the end of the call runs (data
    /// delivered, ACKs, the backlog). Returns, when the call goes on
    /// copying, whether it copies in turns (`copy_slice_bytes`: it lets the
    /// core's softirq work run first) or keeps the core.
    pub(super) fn tcp_reader_done(&mut self, t: u32) -> Option<bool> {
        let now = self.now;
        let f = &mut self.tcp[t as usize];
        f.conn.receiver_mut().core_done(now, &mut self.outbox);
        let flow = f.flow;
        if self.tcp_trace.on {
            self.tcp_trace_record(t, false);
        }
        let (delivered, more) = self.tcp_note_delivered(t);
        self.tcp_flush(t);
        if more {
            self.app_tcp_delivered(flow, delivered, 0);
        }
        let copying = match self.tcp[t as usize].conn.get().receiver.app.as_deref() {
            Some(a) if matches!(a.state, ReaderState::Copying { .. }) => Some(a.sliced()),
            _ => None,
        };
        if copying.is_none() {
            self.tcp_reader_enqueue(t);
        }
        copying
    }

    /// Bytes connection `t`'s receiver has delivered to its application,
    /// and whether that grew since last noted (then the growth is counted in
    /// the throughput bins).
    #[inline(always)]
    fn tcp_note_delivered(&mut self, t: u32) -> (u64, bool) {
        let f = &mut self.tcp[t as usize];
        let delivered = f.conn.get().receiver.delivered();
        if delivered <= f.reported {
            return (delivered, false);
        }
        self.throughput.add(f.flow.0, self.now.0, delivered - f.reported);
        f.reported = delivered;
        (delivered, true)
    }

    /// A TCP packet reached host `node` (its destination).
    #[inline(always)]
    pub(super) fn tcp_arrive(&mut self, node: NodeId, pkt: &Packet) {
        self.tcp_arrive_frames_inline(node, pkt, (pkt.tcp_payload() > 0) as u64);
    }

    /// A TCP segment (`data_frames` data frames on the wire, merged by GRO
    /// when more than one) reached host `node`.
    #[inline(never)]
    pub(super) fn tcp_arrive_frames(&mut self, node: NodeId, pkt: &Packet, data_frames: u64) {
        self.tcp_arrive_frames_inline(node, pkt, data_frames)
    }

    /// [`Simulation::tcp_arrive_frames`], inlined into the arrival of a
    /// single frame (every TCP frame's path when the host has no GRO).
    #[inline(always)]
    fn tcp_arrive_frames_inline(&mut self, node: NodeId, pkt: &Packet, data_frames: u64) {
        let t = self.flow_tcp[pkt.flow.idx()];
        let now = self.now;
        let seg = packet_segment(pkt, self.tcp[t as usize].wscale);
        if pkt.flags & FLAG_PIGGY != 0 && seg.kind == SegKind::Data {
            // The ACK of the coupled connection first, as TCP processes a
            // segment's ACK field before its data (RFC 9293 3.10.7.4).
            self.tcp_piggyback_arrive(self.tcp[t as usize].peer, pkt);
        }
        let f = &mut self.tcp[t as usize];
        let flow = f.flow;
        if node == f.dst {
            f.conn.receiver_mut().on_segment(now, &seg, pkt.ecn == ECN_CE, &mut self.outbox);
            let (delivered, _) = self.tcp_note_delivered(t);
            // What the receiver sends goes before anything the application writes.
            self.tcp_flush(t);
            self.app_tcp_delivered(flow, delivered, data_frames);
        } else {
            let was_open = f.conn.get().sender.state == SenderState::Established;
            f.conn.sender_mut().on_segment_inline(now, &seg, &mut self.outbox);
            let opened = !was_open && f.conn.get().sender.state == SenderState::Established;
            if self.tcp_trace.on {
                self.tcp_trace_record(t, true);
            }
            self.tcp_flush(t);
            if opened {
                self.app_tcp_established(flow);
            }
        }
    }

    /// Connection `t`'s sender has completed its handshake.
    pub(super) fn tcp_established(&self, t: u32) -> bool {
        self.tcp[t as usize].conn.get().sender.state == SenderState::Established
    }

    /// Couples connections `a` and `b`, which carry data in opposite
    /// directions between the same two sockets: together they are one TCP
    /// connection, whose segments acknowledge the other direction's data.
    pub(super) fn tcp_couple(&mut self, a: u32, b: u32) {
        self.tcp[a as usize].peer = b;
        self.tcp[b as usize].peer = a;
    }

    /// Makes connection `t` application-driven: it sends only what `tcp_write` gives it.
    pub(super) fn tcp_app_driven(&mut self, t: u32) {
        let f = &mut self.tcp[t as usize];
        f.conn.sender_mut().make_app_driven();
    }

    /// The application at connection `t`'s source writes `bytes` more.
    pub(super) fn tcp_write(&mut self, t: u32, bytes: u64) {
        let now = self.now;
        let peer = self.tcp[t as usize].peer;
        if peer != u32::MAX {
            let p = &mut self.tcp[peer as usize];
            p.conn.receiver_mut().note_reverse_write(now);
        }
        let f = &mut self.tcp[t as usize];
        f.conn.sender_mut().write(now, bytes, &mut self.outbox);
        self.tcp_flush(t);
    }

    /// The ACK for connection `t` that a data segment of its coupled
    /// connection carried arrives at `t`'s sender.
    fn tcp_piggyback_arrive(&mut self, t: u32, pkt: &Packet) {
        let now = self.now;
        let f = &mut self.tcp[t as usize];
        let mut seg = Segment::control(SegKind::Ack, pkt.ts);
        seg.ack = pkt.ack;
        seg.ece = pkt.flags & FLAG_ECE != 0;
        seg.ts_echo = pkt.ts_echo;
        seg.wnd = (pkt.wnd as u64) << f.wscale;
        f.conn.sender_mut().on_segment(now, &seg, &mut self.outbox);
        if self.tcp_trace.on {
            self.tcp_trace_record(t, true);
        }
        self.tcp_flush(t);
    }

    /// Sends what connection `t` put in the outbox, re-arms its timer and
    /// checks for completion.
    fn tcp_flush(&mut self, t: u32) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.outbox);
        let peer = self.tcp[t as usize].peer;
        let mut piggybacked = false;
        for &(from_receiver, ref seg) in out.iter() {
            let f = &self.tcp[t as usize];
            let cfg = &self.tcp_cfgs[f.cfg as usize];
            let (src, dst, hash) =
                if from_receiver { (f.dst, f.src, mix64(f.hash ^ 0xac)) } else { (f.src, f.dst, f.hash) };
            let mut flags = seg_kind_bits(seg.kind);
            if seg.ece {
                flags |= FLAG_ECE;
            }
            if seg.cwr {
                flags |= FLAG_CWR;
            }
            if seg.retransmit {
                flags |= FLAG_RETX;
            }
            if seg.tsq {
                flags |= FLAG_TSQ;
            }
            if seg.psh && seg.kind == SegKind::Data {
                flags |= FLAG_PSH;
            }
            let frame = if seg.kind == SegKind::Ack {
                cfg.ack_frame_bytes(seg.sack.len() as u32)
            } else {
                cfg.frame_bytes(seg.len)
            };
            let mut pkt = Packet {
                seq: seg.seq,
                ack: seg.ack,
                len: seg.len,
                flags,
                ts: seg.ts,
                ts_echo: seg.ts_echo,
                ecn: if seg.ect { ECN_ECT } else { ECN_NOT_ECT },
                wnd: (seg.wnd >> f.wscale).min(u16::MAX as u64) as u16,
                ..Packet::new(f.flow, src, dst, frame, PacketKind::Tcp, f.class, hash, now)
            };
            pack_sack(&mut pkt, seg);
            if peer != u32::MAX && !from_receiver && seg.kind == SegKind::Data {
                let p = &mut self.tcp[peer as usize];
                if let Some(a) = p.conn.take_piggyback(now) {
                    pkt.flags |= FLAG_PIGGY | if a.ece { FLAG_ECE } else { 0 };
                    pkt.ack = a.ack;
                    pkt.ts_echo = a.ts_echo;
                    pkt.wnd = (a.wnd >> p.wscale).min(u16::MAX as u64) as u16;
                    piggybacked = true;
                }
            }
            let id = self.create_packet(pkt);
            self.inject(src, id);
        }
        out.clear();
        self.outbox = out;
        if piggybacked {
            // The coupled receiver's delayed ACK went with the data.
            self.tcp_rearm(peer);
        }
        self.tcp_rearm(t);
        self.tcp_check_complete(t);
    }

    /// A packet of flow `flow` charged to TCP Small Queues leaves its host's
    /// accounting (transmission completed, dropped, or handed to a delay
    /// line); `frame` is its size. A throttled sender wakes up now.
    #[inline(never)]
    pub(super) fn tcp_tx_complete(&mut self, id: crate::ids::PacketId) {
        self.tcp_tx_complete_inline(id)
    }

    /// [`Simulation::tcp_tx_complete`], inlined where a host's NIC ends a
    /// transmission (every data segment's path).
    #[inline(always)]
    pub(super) fn tcp_tx_complete_inline(&mut self, id: crate::ids::PacketId) {
        let p = self.pool.get_mut(id);
        p.flags &= !FLAG_TSQ;
        let (flow, frame) = (p.flow, p.size as u64);
        let t = self.flow_tcp[flow.idx()];
        let now = self.now;
        let f = &mut self.tcp[t as usize];
        if f.conn.tx_complete(now, frame) {
            // A throttled sender woke: its TSQ deadline moved.
        } else if let Some(d) = f.conn.deadline() {
            // Nothing the deadline depends on changed since the last re-arm:
            // re-arming pushes or cancels only if the timer is not armed at
            // or before it.
            debug_assert_eq!(d, f.conn.get().next_deadline(), "connection changed without clearing its deadline");
            let armed = match (d, f.timer_at) {
                (None, None) => true,
                (Some(d), Some(x)) => x <= d,
                _ => false,
            };
            if armed {
                return;
            }
        }
        self.tcp_rearm(t);
    }

    #[inline(always)]
    fn tcp_rearm(&mut self, t: u32) {
        let now = self.now;
        let f = &mut self.tcp[t as usize];
        let deadline = f.conn.next_deadline();
        match deadline {
            None => {
                if f.timer_at.take().is_some() {
                    // Cancel the pending event.
                    let g = &mut self.tcp_timer_gen[t as usize];
                    *g = g.wrapping_add(1);
                }
            }
            Some(d) => {
                if f.timer_at.map_or(true, |cur| d < cur) {
                    let g = &mut self.tcp_timer_gen[t as usize];
                    *g = g.wrapping_add(1);
                    let at = d.max(now);
                    f.timer_at = Some(at);
                    self.queue.push(at, Event::TcpTimer(t, *g));
                }
            }
        }
    }

    fn tcp_check_complete(&mut self, t: u32) {
        let f = &mut self.tcp[t as usize];
        if f.completed {
            return;
        }
        let done = if f.sized { f.conn.get().receiver.complete_at } else { f.conn.get().sender.done_at };
        let Some(at) = done else { return };
        f.completed = true;
        let fs = &mut self.flows[f.flow.idx()];
        fs.app_complete_ps = Some(at.0);
        fs.source_done = true;
        if !self.flow_deps.is_empty() {
            self.flow_deps_complete_tcp(t, at);
        }
        let f = &self.tcp[t as usize];
        if let Some(app) = f.incast {
            let now = self.now;
            let a = &mut self.incasts[app as usize];
            a.remaining -= 1;
            if a.remaining == 0 && a.current + 1 < a.rounds.len() {
                a.current += 1;
                a.remaining = a.rounds[a.current].len();
                let start = now + a.gap;
                for &c in &a.rounds[a.current] {
                    self.queue.push(start, Event::TcpOpen(c));
                }
            }
        }
    }

    // ------------------------------------------------------------ captures

    /// The header fields of TCP packet `pkt` for a capture record.
    pub(super) fn tcp_wire(&self, pkt: &Packet) -> TcpWire {
        let f = &self.tcp[self.flow_tcp[pkt.flow.idx()] as usize];
        let seg = packet_segment(pkt, f.wscale);
        let cfg = &self.tcp_cfgs[f.cfg as usize];
        let ecn_setup = cfg.uses_ecn();
        let (flags, syn) = match seg.kind {
            // An ECN-setup SYN and SYN-ACK (RFC 3168 6.1.1).
            SegKind::Syn => (TH_SYN | if ecn_setup { TH_ECE | TH_CWR } else { 0 }, true),
            SegKind::SynAck => (TH_SYN | TH_ACK | if ecn_setup { TH_ECE } else { 0 }, true),
            SegKind::Data | SegKind::Ack => (
                TH_ACK
                    | if seg.ece { TH_ECE } else { 0 }
                    | if seg.cwr { TH_CWR } else { 0 }
                    | if seg.psh { TH_PSH } else { 0 },
                false,
            ),
        };
        let n = seg.sack.len();
        let mut sack = [(0, 0); 3];
        sack[..n].copy_from_slice(seg.sack.as_slice());
        let sack_bytes = if n > 0 { 4 + 8 * n as u32 } else { 0 };
        TcpWire {
            flags,
            seq: seg.seq,
            ack: seg.ack,
            len: seg.len,
            // A SACK-carrying ACK lends its timestamp field to the blocks: its
            // value is the time it was sent, which is what it would carry.
            ts_ps: if n > 0 { pkt.created.0 } else { seg.ts.0 },
            ts_echo_ps: seg.ts_echo.0,
            // An autotuned receiver's ACK carries its window; otherwise the fixed one.
            window: if seg.wnd > 0 { seg.wnd } else { cfg.rwnd_bytes },
            mss: if syn { cfg.mtu_bytes.saturating_sub(40) } else { 0 },
            sack_permitted: syn && cfg.sack,
            header_bytes: cfg.header_bytes.saturating_sub(20) + sack_bytes,
            sack_blocks: n as u8,
            sack,
            retransmit: seg.retransmit,
        }
    }

    // ------------------------------------------------------------ outputs

    /// The `tcp_receivers` table: per TCP connection, the data segments its
    /// receiver took in, the ACKs it sent and, with a receiving application
    /// (`tcp.receiver_app`), how it read (zeros for the ideal reader).
    pub(super) fn tcp_receiver_outputs(&self, tables: &mut BTreeMap<String, Table>) {
        if self.tcp.is_empty() {
            return;
        }
        let mut t = Table::default();
        let u64col = |g: &dyn Fn(&TcpFlow) -> u64| Column::U64(self.tcp.iter().map(g).collect());
        let app = |f: &TcpFlow| f.conn.get().receiver.app.as_ref().map(|a| a.stats).unwrap_or_default();
        t.push("flow", Column::U32(self.tcp.iter().map(|f| f.flow.0).collect()));
        t.push("data_segments", u64col(&|f| f.conn.get().receiver.data_segments));
        t.push("acks_sent", u64col(&|f| f.conn.get().receiver.acks_sent));
        t.push("acks_at_read", u64col(&|f| f.conn.get().receiver.acks_at_read));
        t.push("acks_out_of_order", u64col(&|f| f.conn.get().receiver.acks_out_of_order));
        t.push("acks_compressed", u64col(&|f| f.conn.get().receiver.acks_compressed));
        t.push("reads", u64col(&|f| app(f).reads));
        t.push("bytes_read", u64col(&|f| app(f).bytes_read));
        t.push("wakeups", u64col(&|f| app(f).wakeups));
        t.push("wakeup_delay_ps", u64col(&|f| app(f).wakeup_delay_ps));
        t.push("backlog_segments", u64col(&|f| app(f).backlog_segments));
        t.push("backlog_coalesced", u64col(&|f| app(f).backlog_coalesced));
        t.push("max_unread_bytes", u64col(&|f| app(f).max_unread));
        t.push("preemptions", u64col(&|f| app(f).preemptions));
        t.push("preemption_wait_ps", u64col(&|f| app(f).preemption_wait_ps));
        // A reader on a core (`on_core`): its waits in the core's queue.
        t.push("core_waits", u64col(&|f| app(f).core_waits));
        t.push("core_wait_ps", u64col(&|f| app(f).core_wait_ps));
        // Receive-buffer autotuning (`sk_rcvbuf` at the end and its growths; 0 without autotuning).
        t.push("rcvbuf_bytes", u64col(&|f| f.conn.get().receiver.rcvbuf.as_ref().map_or(0, |r| r.rcvbuf)));
        t.push("rcvbuf_grows", u64col(&|f| f.conn.get().receiver.rcvbuf.as_ref().map_or(0, |r| r.grows)));
        tables.insert("tcp_receivers".to_string(), t);
    }

    /// Adds the TCP columns to the flows table (defaults for non-TCP flows).
    pub(super) fn tcp_flow_columns(&self, t: &mut Table) {
        let n = self.flows.len();
        let get = |f: usize| -> Option<&TcpFlow> {
            self.flow_tcp.get(f).filter(|&&x| x != u32::MAX).map(|&x| &self.tcp[x as usize])
        };
        let u64col = |g: &dyn Fn(&TcpFlow) -> u64| Column::U64((0..n).map(|f| get(f).map_or(0, g)).collect());
        t.push("size_bytes", Column::I64(self.flows.iter().map(|f| f.size_bytes.map_or(-1, |b| b as i64)).collect()));
        t.push("app_bytes_delivered", u64col(&|x| x.conn.get().receiver.delivered()));
        t.push("retransmits", u64col(&|x| x.conn.get().sender.retransmits));
        t.push("fast_retransmits", u64col(&|x| x.conn.get().sender.fast_retransmits));
        t.push("timeouts", u64col(&|x| x.conn.get().sender.timeouts));
        t.push("ecn_marked", u64col(&|x| x.conn.get().receiver.ce_segments));
        t.push("ecn_reductions", u64col(&|x| x.conn.get().sender.ecn_reductions));
        t.push("recovery_retransmits", u64col(&|x| x.conn.get().sender.recovery_retransmits));
        let now = self.now;
        t.push("recovery_time_ps", u64col(&|x| x.conn.get().sender.recovery_time_until(now).0));
        t.push("rack_losses", u64col(&|x| x.conn.get().sender.sack_stats().rack_losses));
        t.push("tlp_probes", u64col(&|x| x.conn.get().sender.sack_stats().tlp_probes));
        t.push("tlp_recoveries", u64col(&|x| x.conn.get().sender.sack_stats().tlp_recoveries));
        t.push("dsacks", u64col(&|x| x.conn.get().sender.sack_stats().dsacks));
        t.push("spurious_retransmits", u64col(&|x| x.conn.get().sender.sack_stats().spurious_retransmits));
        let ss = |f: usize| get(f).and_then(|x| x.conn.get().sender.ss_exit);
        t.push("ss_exit_ps", Column::I64((0..n).map(|f| ss(f).map_or(-1, |e| e.0 .0 as i64)).collect()));
        t.push("ss_exit_cwnd", Column::I64((0..n).map(|f| ss(f).map_or(-1, |e| e.1 as i64)).collect()));
        t.push(
            "ss_exit_reason",
            Column::Cat {
                codes: (0..n).map(|f| ss(f).map_or(0, |e| e.2.code())).collect(),
                labels: SlowStartExit::LABELS.iter().map(|s| s.to_string()).collect(),
            },
        );
        t.push("round", Column::U32((0..n).map(|f| get(f).map_or(0, |x| x.round)).collect()));
        t.push(
            "srtt_ps",
            Column::I64(
                (0..n).map(|f| get(f).and_then(|x| x.conn.get().sender.srtt()).map_or(-1, |s| s.0 as i64)).collect(),
            ),
        );
        // The first four labels are fixed; other controllers' names follow
        // in the order their flows come.
        let mut labels = vec!["".to_string(), "newreno".to_string(), "cubic".to_string(), "dctcp".to_string()];
        let codes = (0..n)
            .map(|f| match get(f).map(|x| x.conn.get().sender.cc.name()) {
                None => 0,
                Some(name) => labels.iter().position(|l| l == name).unwrap_or_else(|| {
                    labels.push(name.to_string());
                    labels.len() - 1
                }) as u32,
            })
            .collect();
        t.push("cc", Column::Cat { codes, labels });
    }
}
/// A connection with the memo of its next deadlines, so that a re-arm after
/// something that left the connection as it was (most transmit completions)
/// skips recomputing them. The connection is reached only through methods
/// that forget what their change can move: the sender's deadline and the
/// connection's when the sender is handed `&mut`, the connection's when the
/// receiver is; no caller clears the memo by hand.
mod deadline_memo {
    use crate::transport::tcp::{Connection, Receiver, Segment, Sender};
    use crate::units::SimTime;

    #[derive(Debug)]
    pub(in crate::sim) struct Memoized {
        conn: Connection,
        /// The sender's next deadline (`Sender::next_deadline`) as of the
        /// last re-arm, `None` when the sender may have changed since.
        sender: Option<Option<SimTime>>,
        /// The connection's next deadline as of the last re-arm, `None` when
        /// either side may have changed since.
        both: Option<Option<SimTime>>,
    }

    impl Memoized {
        pub fn new(conn: Connection) -> Self {
            Memoized { conn, sender: None, both: None }
        }

        /// The connection, to read.
        #[inline(always)]
        pub fn get(&self) -> &Connection {
            &self.conn
        }

        /// The sender, to change: both deadlines are forgotten.
        #[inline(always)]
        pub fn sender_mut(&mut self) -> &mut Sender {
            self.sender = None;
            self.both = None;
            &mut self.conn.sender
        }

        /// The receiver, to change: the connection's deadline is forgotten.
        #[inline(always)]
        pub fn receiver_mut(&mut self) -> &mut Receiver {
            self.both = None;
            &mut self.conn.receiver
        }

        /// The whole connection, to change: both deadlines are forgotten.
        #[inline(always)]
        pub fn both_mut(&mut self) -> &mut Connection {
            self.sender = None;
            self.both = None;
            &mut self.conn
        }

        /// `Sender::on_tx_complete`: whether the sender woke (then its
        /// deadlines are forgotten; a sender that did not wake is unchanged).
        #[inline(always)]
        pub fn tx_complete(&mut self, now: SimTime, frame: u64) -> bool {
            let woke = self.conn.sender.on_tx_complete(now, frame);
            if woke {
                self.sender = None;
                self.both = None;
            }
            woke
        }

        /// `Receiver::take_piggyback`: the delayed ACK a data segment of the
        /// coupled connection carries, if one is due (the receiver changed then).
        #[inline(always)]
        pub fn take_piggyback(&mut self, now: SimTime) -> Option<Segment> {
            let a = self.conn.receiver.take_piggyback(now);
            if a.is_some() {
                self.both = None;
            }
            a
        }

        /// The connection's deadline as of the last [`Memoized::next_deadline`],
        /// if nothing changed since.
        #[inline(always)]
        pub fn deadline(&self) -> Option<Option<SimTime>> {
            self.both
        }

        /// The connection's next deadline (the earlier of the sender's and
        /// the receiver's), from the memo where it holds; remembered.
        #[inline(always)]
        pub fn next_deadline(&mut self) -> Option<SimTime> {
            let sender = match self.sender {
                Some(d) => {
                    debug_assert_eq!(d, self.conn.sender.next_deadline(), "the sender changed behind its memo");
                    d
                }
                None => {
                    let d = self.conn.sender.next_deadline();
                    self.sender = Some(d);
                    d
                }
            };
            let deadline = match (sender, self.conn.receiver.next_deadline()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            self.both = Some(deadline);
            deadline
        }
    }
}
