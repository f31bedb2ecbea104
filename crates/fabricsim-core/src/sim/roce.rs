//! RoCEv2 RC queue pairs inside the simulation: the `rdma_write` and
//! `rdma_flows` applications,
//! rate-based sending with DCQCN or a registered rate controller
//! (`transport/roce/rate.rs`, `extension/rate_cc.rs`), PSNs, ACK coalescing, NACK and go-back-N
//! or selective repeat, the retransmission timer, CNP generation at the
//! receiver, and the RoCE columns of the flows table.
//!
//! **Selective repeat** (`roce.recovery: selective_repeat`). The receiver
//! places a packet past a gap (its bytes count as delivered), remembers it,
//! and answers every such packet with a NACK carrying the expected PSN, the
//! packet's PSN and a bitmap of which of the 64 PSNs ending there it holds
//! (`Packet::nack_report`); a packet that fills the gap
//! moves the expected PSN over everything held and is ACKed at once. The
//! requester keeps the PSNs reported held; a hole is lost once `dupthresh`
//! later PSNs are reported held (RFC 6675's IsLost), and lost holes are resent
//! in PSN order before new data, each once per report; the timeout marks every
//! PSN sent and not reported held as lost. New data never rewinds.
//!
//! Each QP keeps at most one valid timer event (`RoceTimer`), armed at its
//! earliest deadline: next send (pacing at the current DCQCN rate), the
//! retransmission timeout, the DCQCN rate-increase timer. As for TCP, an
//! earlier deadline pushes a new event with a new generation.
//!
//! **NIC arbitration.** A QP hands a packet to its host port only while the
//! port's queue of the QP's class holds less than two full frames; otherwise
//! it waits in the port's FIFO of blocked QPs and one of them is woken each
//! time the port starts a frame. QPs of a host thus share the NIC in turn and
//! stop sending while the NIC is paused by PFC, as NIC schedulers do.

use super::telemetry::IntStack;
use super::{resolve_host, Event, Simulation};
use crate::error::ConfigError;
use crate::ids::{FlowId, NodeId, PacketId, PortId};
use crate::network::topology::Graph;
use crate::packet::{Packet, PacketKind, ECN_CE, ECN_ECT, ECN_NOT_ECT};
use crate::rng::mix64;
use crate::stats::{Column, FlowKind, FlowStats, Table};
use crate::transport::roce::dcqcn::Dcqcn;
use crate::transport::roce::rate::{AckFeedback, RateControl};
use crate::transport::roce::RoceRecovery;
use crate::transport::roce::{
    RdmaFlowsConfig, RdmaWriteConfig, RoceConfig, FLAG_ECE, FLAG_LAST, FLAG_RETX, FLAG_TRIMMED, OP_ACK, OP_CNP,
    OP_DATA, OP_NACK,
};
use crate::units::SimTime;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A QP's rate controller: DCQCN called directly, or a registered one.
/// DCQCN is kept in place (the common case; a QP is large anyway).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum QpCc {
    Dcqcn(Dcqcn),
    Custom { cc: Box<dyn RateControl>, cnps: u64 },
}

impl QpCc {
    fn cnps(&self) -> u64 {
        match self {
            QpCc::Dcqcn(d) => d.cnps,
            QpCc::Custom { cnps, .. } => *cnps,
        }
    }
    fn cuts(&self) -> u64 {
        match self {
            QpCc::Dcqcn(d) => d.cuts,
            QpCc::Custom { cc, .. } => cc.cuts(),
        }
    }
    #[inline]
    fn rate_bps(&self) -> u64 {
        match self {
            QpCc::Dcqcn(d) => d.rate_bps(),
            QpCc::Custom { cc, .. } => cc.rate_bps().max(1),
        }
    }
    #[inline]
    fn timer_at(&self) -> Option<SimTime> {
        match self {
            QpCc::Dcqcn(d) => d.inc_at,
            QpCc::Custom { cc, .. } => cc.timer_at(),
        }
    }
    /// The controller's window, if it keeps one.
    #[inline]
    fn window_bytes(&self) -> Option<u64> {
        match self {
            QpCc::Dcqcn(_) => None,
            QpCc::Custom { cc, .. } => cc.window_bytes(),
        }
    }
}

#[derive(Debug)]
pub(super) struct Qp {
    flow: FlowId,
    src: NodeId,
    dst: NodeId,
    class: u8,
    hash: u64,
    cfg: u32,
    port: PortId,
    /// Packets per message, payload of a message's last packet, packets in all.
    ppm: u64,
    last_payload: u32,
    total: u64,
    window: u64,
    snd_nxt: u64,
    snd_una: u64,
    snd_max: u64,
    next_send: SimTime,
    rto_at: Option<SimTime>,
    /// Paused time of the QP's NIC class when the timer was armed.
    rto_paused_mark: u64,
    cc: QpCc,
    /// Frame bytes of a full data packet (for the controller's window).
    frame: u64,
    /// Entropy values the controller spreads data over (0: the QP's own hash).
    paths: u32,
    /// Packets reported held leave the bytes in flight the window limits.
    window_excludes_reported: bool,
    gen: u32,
    timer_at: Option<SimTime>,
    blocked: bool,
    /// Selective repeat: PSNs at or above `snd_una` the receiver reports
    /// holding; holes below `lost_below` are lost; the next one to resend
    /// is at or after `resend_from`.
    selective: bool,
    sacked: BTreeSet<u64>,
    lost_below: u64,
    resend_from: u64,
    // receiver
    /// Selective repeat: PSNs past `epsn` received and placed.
    placed: BTreeSet<u64>,
    epsn: u64,
    unacked: u32,
    nack_for: u64,
    last_cnp: Option<SimTime>,
    /// A CE-marked data packet arrived since the last ACK or NACK (echoed on the next one).
    ce_unechoed: bool,
    delivered: u64,
    /// The flow completes when the responder has every byte (`rdma_flows`),
    /// not at the last ACK (`rdma_write`); `received`: it has.
    at_responder: bool,
    received: bool,
    // statistics
    retransmits: u64,
    timeouts: u64,
    nacks: u64,
    ce: u64,
    msg_starts: VecDeque<SimTime>,
    msgs_done: u64,
    msg_time_sum: u128,
    msg_time_max: u64,
    done: bool,
    /// Packet trimming's state, made at the first trimmed header.
    trim: Option<Box<TrimState>>,
}

/// What a QP keeps about trimmed packets (`network/trimming.rs`).
#[derive(Debug, Default)]
struct TrimState {
    /// Requester, selective repeat: PSNs reported trimmed and to be resent,
    /// outside the holes the loss watermark already covers.
    resend: BTreeSet<u64>,
    /// Requester: PSNs resent after a trim at or past the watermark walk's
    /// position, which the walk then skips (each loss is resent once).
    resent: BTreeSet<u64>,
    /// Responder: trimmed headers received.
    headers: u64,
}

/// All queue pairs, their configurations and the NIC wait lists.
#[derive(Debug, Default)]
pub(super) struct RoceState {
    pub qps: Vec<Qp>,
    pub cfgs: Vec<RoceConfig>,
    pub default: RoceConfig,
    /// Per flow: index into `qps`, or `u32::MAX`.
    pub flow_qp: Vec<u32>,
    /// Per port: QPs waiting for room in the NIC queue (empty without RoCE traffic).
    pub wait: Vec<VecDeque<u32>>,
}

/// A RoCEv2 packet's transport headers for a capture record (`sim/pcap.rs`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RoceWire {
    /// What the packet is (the captures table's `roce_op`): 1..4 RDMA WRITE
    /// first, middle, last, only; 5 ACK; 6 NACK; 7 CNP; 0 not RoCE.
    pub op: u8,
    /// The BTH packet sequence number (not yet reduced to 24 bits): a data
    /// packet's own, the last one acknowledged by an ACK, the expected one
    /// of a NACK, 0 on a CNP.
    pub psn: u64,
    /// Destination queue pair: `0x100 + k` for the k-th QP's responder
    /// (data), `0x800100 + k` for its requester (ACK, NACK, CNP).
    pub dst_qp: u32,
    /// AETH message sequence number of an ACK or NACK: messages completed.
    pub msn: u32,
    /// The requester marked the packet as a retransmission.
    pub retransmit: bool,
}

impl Simulation {
    /// Adds an `rdma_write` entry.
    pub(super) fn add_rdma_write(
        &mut self,
        i: usize,
        r: &RdmaWriteConfig,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        let path = format!("traffic[{i}]");
        let host = |name: &str, field: String| resolve_host(index, graph, name, &field);
        self.check_class(r.class, &path)?;
        if r.src.is_empty() {
            return Err(ConfigError::new(format!("{path}.src"), "must name at least one host"));
        }
        for (f, v) in [("qps", r.qps), ("messages", r.messages), ("window", r.window)] {
            if v == 0 {
                return Err(ConfigError::new(format!("{path}.{f}"), "must be >= 1"));
            }
        }
        if r.message_bytes == 0 {
            return Err(ConfigError::new(format!("{path}.message_size"), "must be > 0"));
        }
        let (cfg_idx, roce_path) = self.roce_entry_config(&r.roce, &path)?;
        let dst = host(&r.dst, format!("{path}.dst"))?;
        let name = self.flow_names.len() as u32;
        self.flow_names.push(if r.name.is_empty() { format!("rdma_write{i}") } else { r.name.clone() });
        for (j, s) in r.src.iter().enumerate() {
            let src = host(s, format!("{path}.src[{j}]"))?;
            if src == dst {
                return Err(ConfigError::new(
                    format!("{path}.src[{j}]"),
                    format!("source '{s}' is also the destination"),
                ));
            }
            for _ in 0..r.qps {
                let q = self.new_qp(
                    name,
                    src,
                    dst,
                    r.class,
                    r.start_ps,
                    cfg_idx,
                    r.message_bytes,
                    r.messages,
                    r.window,
                    false,
                    &roce_path,
                )?;
                self.queue.push(SimTime(r.start_ps), Event::RoceOpen(q));
            }
        }
        Ok(())
    }

    /// Adds an `rdma_flows` entry: one queue pair per transfer, one message
    /// each; a transfer with dependencies opens when they complete
    /// (`sim/flow_deps.rs`).
    pub(super) fn add_rdma_flows(
        &mut self,
        i: usize,
        f: &RdmaFlowsConfig,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        let path = format!("traffic[{i}]");
        self.check_class(f.class, &path)?;
        let (cfg_idx, roce_path) = self.roce_entry_config(&f.roce, &path)?;
        super::flow_deps::check(&format!("{path}.flows"), &f.flows)?;
        let name = self.flow_names.len() as u32;
        self.flow_names.push(if f.name.is_empty() { format!("rdma_flows{i}") } else { f.name.clone() });
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
            let q = self.new_qp(name, src, dst, f.class, spec.start_ps, cfg_idx, spec.bytes, 1, 1, true, &roce_path)?;
            debug_assert_eq!(self.roce.qps[q as usize].flow.0, first + j as u32, "a list's flows have consecutive ids");
            if spec.after.is_empty() {
                self.queue.push(SimTime(spec.start_ps), Event::RoceOpen(q));
            } else {
                self.flow_deps_add(first, j, spec, Event::RoceOpen(q));
            }
        }
        Ok(())
    }

    /// An entry's RoCE parameters (its own `roce`, else the scenario's),
    /// checked and stored: their index and field path.
    fn roce_entry_config(&mut self, roce: &Option<RoceConfig>, path: &str) -> Result<(u32, String), ConfigError> {
        let cfg = roce.clone().unwrap_or_else(|| self.roce.default.clone());
        let roce_path = if roce.is_some() { format!("{path}.roce") } else { "roce".to_string() };
        cfg.validate(&roce_path, self.classes)?;
        self.int.on |= cfg.uses_int();
        self.roce.cfgs.push(cfg);
        if self.roce.wait.is_empty() {
            self.roce.wait = (0..self.ports.len()).map(|_| VecDeque::new()).collect();
        }
        Ok((self.roce.cfgs.len() as u32 - 1, roce_path))
    }

    /// A new queue pair from `src` to `dst` writing `messages` messages of
    /// `message_bytes`, at most `window` outstanding, with its flow;
    /// `at_responder`: the flow completes when the responder has every byte
    /// (else when the requester has the last ACK). Returns its index.
    #[allow(clippy::too_many_arguments)]
    fn new_qp(
        &mut self,
        name: u32,
        src: NodeId,
        dst: NodeId,
        class: u8,
        start_ps: u64,
        cfg_idx: u32,
        message_bytes: u64,
        messages: u32,
        window: u32,
        at_responder: bool,
        roce_path: &str,
    ) -> Result<u32, ConfigError> {
        let mtu = self.roce.cfgs[cfg_idx as usize].mtu_bytes as u64;
        let ppm = message_bytes.div_ceil(mtu);
        let last_payload = (message_bytes - (ppm - 1) * mtu) as u32;
        let port = self.nodes[src.idx()].port(0);
        let line = self.ports[port.idx()].rate.bps();
        let flow = FlowId(self.flows.len() as u32);
        let hash = mix64(mix64(src.0 as u64) ^ mix64((dst.0 as u64) << 20) ^ mix64(0x7_0000_0000 + flow.0 as u64));
        self.flows.push(FlowStats {
            name,
            kind: FlowKind::Rdma,
            src: src.0,
            dst: dst.0,
            class,
            start_ps,
            // Completion is decided by the application, as for TCP.
            tcp: true,
            size_bytes: Some(message_bytes * messages as u64),
            ..Default::default()
        });
        let q = self.roce.qps.len() as u32;
        self.roce.flow_qp.resize(self.flows.len(), u32::MAX);
        self.roce.flow_qp[flow.idx()] = q;
        let c = &self.roce.cfgs[cfg_idx as usize];
        let cc = if c.custom_cc() {
            let ctx = crate::extension::rate_cc::QpContext {
                line_rate_bps: line,
                mtu_bytes: c.mtu_bytes,
                frame_bytes: c.data_frame(c.mtu_bytes),
                qp: q,
                seed: self.seed,
            };
            let cc = crate::extension::rate_cc::build(&c.cc, &c.cc_params, &ctx, roce_path)?;
            if cc.paths() > 0 && c.recovery != RoceRecovery::SelectiveRepeat {
                return Err(ConfigError::new(
                    format!("{roce_path}.recovery"),
                    format!(
                        "must be selective_repeat when '{}' spreads a QP over several paths \
                         (cc_params.entropies > 1 reorders packets); allowed: selective_repeat",
                        c.cc
                    ),
                ));
            }
            QpCc::Custom { cc, cnps: 0 }
        } else {
            QpCc::Dcqcn(Dcqcn::new(&c.dcqcn, line))
        };
        let frame = c.data_frame(c.mtu_bytes) as u64;
        let selective = c.recovery == RoceRecovery::SelectiveRepeat;
        let (paths, window_excludes_reported) = match &cc {
            QpCc::Custom { cc, .. } => (cc.paths(), selective && cc.window_excludes_reported()),
            QpCc::Dcqcn(_) => (0, false),
        };
        self.roce.qps.push(Qp {
            flow,
            src,
            dst,
            class,
            hash,
            cfg: cfg_idx,
            port,
            ppm,
            last_payload,
            total: ppm * messages as u64,
            window: window as u64,
            snd_nxt: 0,
            snd_una: 0,
            snd_max: 0,
            next_send: SimTime::ZERO,
            rto_at: None,
            rto_paused_mark: 0,
            cc,
            frame,
            paths,
            window_excludes_reported,
            gen: 0,
            timer_at: None,
            blocked: false,
            selective,
            sacked: BTreeSet::new(),
            lost_below: 0,
            resend_from: 0,
            placed: BTreeSet::new(),
            epsn: 0,
            unacked: 0,
            nack_for: u64::MAX,
            last_cnp: None,
            ce_unechoed: false,
            delivered: 0,
            at_responder,
            received: false,
            retransmits: 0,
            timeouts: 0,
            nacks: 0,
            ce: 0,
            msg_starts: VecDeque::with_capacity(window.min(64) as usize),
            msgs_done: 0,
            msg_time_sum: 0,
            msg_time_max: 0,
            done: false,
            trim: None,
        });
        Ok(q)
    }

    // ------------------------------------------------------------- events

    pub(super) fn on_roce_open(&mut self, q: u32) {
        let now = self.now;
        let qp = &mut self.roce.qps[q as usize];
        self.flows[qp.flow.idx()].start_ps = now.0;
        match &mut qp.cc {
            QpCc::Dcqcn(d) => d.start(now),
            QpCc::Custom { cc, .. } => cc.start(now),
        }
        qp.next_send = now;
        self.roce_pump(q);
    }

    /// A QP's timer event is stale once re-armed, and once the QP is done:
    /// a finished QP has nothing to resend or pace, so its last deadline
    /// neither counts nor holds the run open.
    pub(super) fn roce_timer_is_stale(&self, q: u32, generation: u32) -> bool {
        let qp = &self.roce.qps[q as usize];
        qp.gen != generation || qp.done
    }

    pub(super) fn on_roce_timer(&mut self, q: u32, generation: u32) {
        let now = self.now;
        let qp = &mut self.roce.qps[q as usize];
        if qp.gen != generation {
            return;
        }
        qp.timer_at = None;
        let cfg = &self.roce.cfgs[qp.cfg as usize];
        if let Some(t) = qp.rto_at.filter(|&t| t <= now) {
            // Time the NIC spent paused by PFC since the timer was armed does
            // not count: move the deadline by it.
            let port = &self.ports[qp.port.idx()];
            let paused = self.pfc.paused_ps(qp.port, qp.class, now, port.paused & (1 << qp.class) != 0);
            if paused > qp.rto_paused_mark {
                qp.rto_at = Some(t + SimTime(paused - qp.rto_paused_mark));
                qp.rto_paused_mark = paused;
            } else {
                if qp.snd_una < qp.snd_nxt {
                    qp.timeouts += 1;
                    if let QpCc::Custom { cc, .. } = &mut qp.cc {
                        cc.on_loss(now, true);
                    }
                    if qp.selective {
                        // Everything sent and not reported held is lost.
                        qp.lost_below = qp.snd_max;
                        qp.resend_from = qp.snd_una;
                        if let Some(t) = &mut qp.trim {
                            t.resend.clear();
                            t.resent.clear();
                        }
                    } else {
                        qp.snd_nxt = qp.snd_una;
                    }
                }
                qp.rto_at = None;
            }
        }
        match &mut qp.cc {
            QpCc::Dcqcn(d) => {
                if d.inc_at.is_some_and(|t| t <= now) {
                    d.on_timer(&cfg.dcqcn, now);
                }
            }
            QpCc::Custom { cc, .. } => {
                if cc.timer_at().is_some_and(|t| t <= now) {
                    cc.on_timer(now);
                }
            }
        }
        self.roce_pump(q);
    }

    /// A free slot opened in the NIC queue of port `pid`: wake one waiting QP.
    /// Out of line: `start_next` keeps its registers for runs without RoCE.
    #[inline(never)]
    pub(super) fn roce_wake(&mut self, pid: PortId) {
        if let Some(q) = self.roce.wait[pid.idx()].pop_front() {
            self.roce.qps[q as usize].blocked = false;
            self.roce_pump(q);
        }
    }

    #[inline]
    fn can_send(qp: &Qp) -> bool {
        (qp.snd_nxt < qp.total && qp.snd_nxt / qp.ppm < qp.snd_una / qp.ppm + qp.window && Self::window_open(qp))
            || (qp.selective && Self::next_resend(qp).is_some())
    }

    /// Whether the controller's window (if it keeps one) has room for a packet.
    #[inline]
    fn window_open(qp: &Qp) -> bool {
        qp.cc.window_bytes().is_none_or(|w| Self::in_flight(qp) * qp.frame < w.max(qp.frame))
    }

    /// Packets in flight as the controller's window counts them: those
    /// reported held, and those reported trimmed and not yet resent, are not.
    #[inline]
    fn in_flight(qp: &Qp) -> u64 {
        let sent = qp.snd_nxt - qp.snd_una;
        if qp.window_excludes_reported {
            let trimmed = qp.trim.as_ref().map_or(0, |t| t.resend.len() as u64);
            sent.saturating_sub(qp.sacked.len() as u64 + trimmed)
        } else {
            sent
        }
    }

    /// Selective repeat: the next lost PSN to resend, if any: the first PSN
    /// from `resend_from` on that the receiver has not reported held, found
    /// by walking the held run in order rather than looking each PSN up.
    fn next_hole(qp: &Qp) -> Option<u64> {
        let mut p = qp.resend_from.max(qp.snd_una);
        if p >= qp.lost_below {
            return None;
        }
        if let Some(resent) = qp.trim.as_ref().map(|t| &t.resent).filter(|r| !r.is_empty()) {
            // Skip the PSNs already resent because a switch trimmed them.
            while p < qp.lost_below && (qp.sacked.contains(&p) || resent.contains(&p)) {
                p += 1;
            }
            return (p < qp.lost_below).then_some(p);
        }
        for &held in qp.sacked.range(p..qp.lost_below) {
            if held != p {
                break;
            }
            p += 1;
        }
        (p < qp.lost_below).then_some(p)
    }

    /// Selective repeat: the next PSN to resend and whether a trim reported
    /// it (those first, in PSN order, as the window allows: a trimmed packet
    /// left the flight and rejoins it), else the next lost hole.
    fn next_resend(qp: &Qp) -> Option<(u64, bool)> {
        if let Some(t) = qp.trim.as_ref().filter(|t| !t.resend.is_empty()) {
            if Self::window_open(qp) {
                if let Some(&p) = t.resend.iter().find(|&&p| p >= qp.snd_una && !qp.sacked.contains(&p)) {
                    return Some((p, true));
                }
            }
        }
        Self::next_hole(qp).map(|p| (p, false))
    }

    /// Selective repeat: the receiver reports PSN `top` trimmed. It is resent
    /// next, unless the loss watermark's walk is still to reach it, and the
    /// controller is told of a loss.
    fn on_trimmed(qp: &mut Qp, top: u64, now: SimTime) {
        if top >= qp.snd_una && top < qp.snd_max && !qp.sacked.contains(&top) {
            let walk = qp.resend_from.max(qp.snd_una);
            let t = qp.trim.get_or_insert_with(Default::default);
            // A PSN resent after a trim and trimmed again is resent again.
            let again = t.resent.remove(&top);
            if again || top < walk || top >= qp.lost_below {
                t.resend.insert(top);
            }
        }
        if let QpCc::Custom { cc, .. } = &mut qp.cc {
            cc.on_loss(now, false);
        }
    }

    /// Sends if a packet is due, then re-arms the QP's timer.
    fn roce_pump(&mut self, q: u32) {
        let now = self.now;
        let qp = &self.roce.qps[q as usize];
        if !qp.blocked && !qp.done && Self::can_send(qp) && qp.next_send <= now {
            self.roce_send_data(q);
        }
        let qp = &mut self.roce.qps[q as usize];
        let send = (!qp.blocked && !qp.done && Self::can_send(qp)).then(|| qp.next_send.max(now));
        let inc = if qp.done { None } else { qp.cc.timer_at() };
        let deadline = [send, qp.rto_at, inc].into_iter().flatten().min();
        if let Some(d) = deadline {
            if qp.timer_at.map_or(true, |cur| d < cur) {
                qp.gen = qp.gen.wrapping_add(1);
                qp.timer_at = Some(d);
                self.queue.push(d, Event::RoceTimer(q, qp.gen));
            }
        }
    }

    fn roce_send_data(&mut self, q: u32) {
        let now = self.now;
        let qp = &mut self.roce.qps[q as usize];
        let cfg = &self.roce.cfgs[qp.cfg as usize];
        let gate = 2 * cfg.data_frame(cfg.mtu_bytes) as u64;
        if self.ports[qp.port.idx()].queue(qp.class as usize).queued >= gate {
            qp.blocked = true;
            self.roce.wait[qp.port.idx()].push_back(q);
            return;
        }
        // Selective repeat resends a trimmed packet or a lost hole before new data.
        let hole = if qp.selective { Self::next_resend(qp) } else { None };
        let psn = hole.map_or(qp.snd_nxt, |h| h.0);
        let last = psn % qp.ppm == qp.ppm - 1;
        let payload = if last { qp.last_payload } else { cfg.mtu_bytes };
        let size = cfg.data_frame(payload);
        let mut flags = OP_DATA;
        if last {
            flags |= FLAG_LAST;
        }
        if psn < qp.snd_max {
            flags |= FLAG_RETX;
            qp.retransmits += 1;
        } else {
            if psn % qp.ppm == 0 {
                qp.msg_starts.push_back(now);
            }
            qp.snd_max = psn + 1;
        }
        match hole {
            Some((_, true)) => {
                let walk = qp.resend_from.max(qp.snd_una);
                let t = qp.trim.as_mut().expect("a trimmed PSN to resend has its state");
                t.resend.remove(&psn);
                if psn >= walk {
                    t.resent.insert(psn);
                }
            }
            Some((_, false)) => qp.resend_from = psn + 1,
            None => qp.snd_nxt = psn + 1,
        }
        if qp.rto_at.is_none() {
            qp.rto_at = Some(now + SimTime(cfg.rto_ps));
            let paused = self.ports[qp.port.idx()].paused & (1 << qp.class) != 0;
            qp.rto_paused_mark = self.pfc.paused_ps(qp.port, qp.class, now, paused);
        }
        let rate = match &mut qp.cc {
            QpCc::Dcqcn(d) => {
                if cfg.dcqcn.enabled {
                    d.on_sent(&cfg.dcqcn, size as u64);
                    d.rate_bps()
                } else {
                    self.ports[qp.port.idx()].rate.bps()
                }
            }
            QpCc::Custom { cc, .. } => {
                cc.on_sent(size as u64, now);
                cc.rate_bps().max(1)
            }
        };
        qp.next_send = now + crate::units::Rate(rate).serialization_time(size as u64 + self.overhead);
        let ecn = if cfg.ecn { ECN_ECT } else { ECN_NOT_ECT };
        let (src, dst, class) = (qp.src, qp.dst, qp.class);
        // A multipath controller's entropy value enters the 5-tuple hash
        // the switches' ECMP reads, as a UDP source port would.
        let (hash, entropy) = match &mut qp.cc {
            QpCc::Custom { cc, .. } if qp.paths > 0 => {
                let e = cc.next_entropy();
                (mix64(qp.hash ^ mix64(0xe000_0000 + e as u64)), e)
            }
            _ => (qp.hash, 0),
        };
        self.roce_emit(
            q,
            src,
            dst,
            class,
            hash,
            flags,
            psn,
            0,
            payload,
            size,
            ecn,
            SimTime::ZERO,
            IntStack::default(),
            entropy,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn roce_emit(
        &mut self,
        q: u32,
        src: NodeId,
        dst: NodeId,
        class: u8,
        hash: u64,
        flags: u8,
        psn: u64,
        ack: u64,
        len: u32,
        size: u32,
        ecn: u8,
        ts_echo: SimTime,
        int: IntStack,
        entropy: u16,
    ) {
        let now = self.now;
        let flow = self.roce.qps[q as usize].flow;
        let pkt = Packet {
            seq: psn,
            ack,
            len,
            flags,
            ecn,
            ts_echo,
            wnd: entropy,
            ..Packet::new(flow, src, dst, size, PacketKind::Roce, class, hash, now)
        };
        let id = self.create_packet(pkt);
        if self.int.on {
            self.int.set(id, int);
        }
        self.inject(src, id);
    }

    /// Sends an ACK, NACK or CNP from the receiver of QP `q`; an ACK or NACK
    /// echoes `sent` (the send time of the data packet that triggered it),
    /// any CE mark seen since the previous one, that packet's telemetry and
    /// its entropy value.
    #[allow(clippy::too_many_arguments)]
    fn roce_control(
        &mut self,
        q: u32,
        op: u8,
        epsn: u64,
        sent: SimTime,
        top: u64,
        int: IntStack,
        entropy: u16,
        trimmed: bool,
    ) {
        let qp = &mut self.roce.qps[q as usize];
        let cfg = &self.roce.cfgs[qp.cfg as usize];
        let (size, class) =
            if op == OP_CNP { (cfg.cnp_frame(), cfg.cnp_class) } else { (cfg.ack_frame(), cfg.ack_class()) };
        let mut flags = op;
        if trimmed {
            // The NACK answers a trimmed header: `top` is the PSN lost.
            flags |= FLAG_TRIMMED;
        }
        if op != OP_CNP && std::mem::take(&mut qp.ce_unechoed) {
            flags |= FLAG_ECE;
        }
        // A selective-repeat NACK reports what the receiver holds of the 64
        // PSNs ending at `top` (the PSN it answers).
        let (bitmap, offset) = if op == OP_NACK && qp.selective && top > epsn {
            let low = top.saturating_sub(63).max(epsn + 1);
            (qp.placed.range(low..=top).fold(0u64, |b, &p| b | 1 << (top - p)), (top - epsn) as u32)
        } else if trimmed {
            (0, top.saturating_sub(epsn) as u32)
        } else {
            (0, 0)
        };
        let (src, dst, hash) = (qp.dst, qp.src, mix64(qp.hash ^ 0xac));
        self.roce_emit(q, src, dst, class, hash, flags, bitmap, epsn, offset, size, ECN_NOT_ECT, sent, int, entropy);
    }

    /// The responder of `rdma_flows` transfer `q` has every byte: the
    /// transfer is complete, and those waiting for it may open. Out of line:
    /// once per transfer.
    #[inline(never)]
    fn roce_received(&mut self, q: u32) {
        let now = self.now;
        let qp = &mut self.roce.qps[q as usize];
        qp.received = true;
        let flow = qp.flow;
        let fs = &mut self.flows[flow.idx()];
        fs.app_complete_ps = Some(now.0);
        fs.source_done = true;
        if !self.flow_deps.is_empty() {
            self.flow_deps_complete(flow.0, now);
        }
    }

    /// RoCE packet `id` (`pkt`) reached its destination. Out of line, as
    /// before transfers completed at the responder: the event loop's
    /// dispatch keeps its registers for runs without RoCE.
    #[inline(never)]
    pub(super) fn roce_arrive(&mut self, id: PacketId, pkt: &Packet) {
        let q = self.roce.flow_qp[pkt.flow.idx()];
        let now = self.now;
        let op = pkt.flags & 7;
        let qp = &mut self.roce.qps[q as usize];
        let cfg = &self.roce.cfgs[qp.cfg as usize];
        match op {
            OP_DATA => {
                // Read before any reply takes the slot.
                let int = if self.int.on { self.int.stack(id) } else { IntStack::default() };
                let mut cnp = false;
                if pkt.ecn == ECN_CE {
                    qp.ce += 1;
                    qp.ce_unechoed = true;
                    if cfg.sends_cnps() && qp.last_cnp.map_or(true, |t| (now - t).0 >= cfg.dcqcn.cnp_interval_ps) {
                        qp.last_cnp = Some(now);
                        cnp = true;
                    }
                }
                let psn = pkt.psn();
                let last = pkt.flags & FLAG_LAST != 0;
                let mut reply = None;
                if pkt.flags & FLAG_TRIMMED != 0 {
                    // A switch cut the payload off: the packet is lost and
                    // the header says which. Selective repeat asks for it
                    // alone; a go-back-N receiver (a RoCEv2 NIC that knows
                    // nothing of trimming) discards the short packet and
                    // finds the gap at the next one.
                    qp.trim.get_or_insert_with(Default::default).headers += 1;
                    if qp.selective && psn >= qp.epsn && !qp.placed.contains(&psn) {
                        reply = Some((OP_NACK, qp.epsn, true));
                    }
                } else if psn == qp.epsn {
                    qp.epsn += 1;
                    qp.delivered += pkt.len as u64;
                    qp.unacked += 1;
                    let flow = qp.flow.0;
                    // Selective repeat: the gap is filled; move over what is held.
                    let mut filled = false;
                    while qp.placed.remove(&qp.epsn) {
                        qp.epsn += 1;
                        filled = true;
                    }
                    if qp.unacked >= cfg.ack_every || last || filled {
                        qp.unacked = 0;
                        reply = Some((OP_ACK, qp.epsn, false));
                    }
                    self.throughput.add(flow, now.0, pkt.len as u64);
                } else if psn > qp.epsn && qp.selective {
                    if qp.placed.insert(psn) {
                        qp.delivered += pkt.len as u64;
                        self.throughput.add(qp.flow.0, now.0, pkt.len as u64);
                    }
                    reply = Some((OP_NACK, qp.epsn, false));
                } else if psn > qp.epsn {
                    if qp.nack_for != qp.epsn {
                        qp.nack_for = qp.epsn;
                        reply = Some((OP_NACK, qp.epsn, false));
                    }
                } else if last || (psn + 1) % cfg.ack_every as u64 == 0 {
                    reply = Some((OP_ACK, qp.epsn, false));
                }
                if cnp {
                    self.roce_control(q, OP_CNP, 0, SimTime::ZERO, 0, IntStack::default(), 0, false);
                }
                if let Some((op, e, trimmed)) = reply {
                    self.roce_control(q, op, e, pkt.ts, psn, int, pkt.wnd, trimmed);
                }
                let qp = &self.roce.qps[q as usize];
                if qp.at_responder && !qp.received && qp.epsn == qp.total {
                    self.roce_received(q);
                }
            }
            OP_ACK | OP_NACK => {
                let a = pkt.ack;
                if let QpCc::Custom { cc, .. } = &mut qp.cc {
                    cc.on_ack(&AckFeedback {
                        now,
                        expected_psn: a,
                        newly_acked: a.saturating_sub(qp.snd_una),
                        nack: op == OP_NACK,
                        ecn_echo: pkt.flags & FLAG_ECE != 0,
                        rtt: (pkt.flags & FLAG_TRIMMED == 0).then(|| now - pkt.ts_echo),
                        trimmed: pkt.flags & FLAG_TRIMMED != 0,
                        int: self.int.hops(id),
                        entropy: pkt.wnd,
                    });
                }
                if a > qp.snd_una {
                    for _ in qp.snd_una / qp.ppm..a / qp.ppm {
                        let st = qp.msg_starts.pop_front().unwrap_or(now);
                        let d = (now - st).0;
                        qp.msg_time_sum += d as u128;
                        qp.msg_time_max = qp.msg_time_max.max(d);
                        qp.msgs_done += 1;
                    }
                    qp.snd_una = a;
                    qp.snd_nxt = qp.snd_nxt.max(a);
                    if qp.selective {
                        qp.sacked = qp.sacked.split_off(&a);
                    }
                    if let Some(t) = &mut qp.trim {
                        t.resend = t.resend.split_off(&a);
                        t.resent = t.resent.split_off(&a);
                    }
                    qp.rto_at = (qp.snd_una < qp.snd_nxt).then(|| now + SimTime(cfg.rto_ps));
                    let paused = self.ports[qp.port.idx()].paused & (1 << qp.class) != 0;
                    qp.rto_paused_mark = self.pfc.paused_ps(qp.port, qp.class, now, paused);
                    if qp.snd_una == qp.total && !qp.done {
                        qp.done = true;
                        qp.rto_at = None;
                        if !qp.at_responder {
                            let fs = &mut self.flows[qp.flow.idx()];
                            fs.app_complete_ps = Some(now.0);
                            fs.source_done = true;
                        }
                    }
                }
                if op == OP_NACK {
                    qp.nacks += 1;
                    if qp.selective {
                        let (top, bitmap) = pkt.nack_report();
                        for i in (0..64).filter(|i| bitmap >> i & 1 != 0) {
                            let p = top - i;
                            if p > a && p < qp.snd_max {
                                qp.sacked.insert(p);
                            }
                        }
                        // Holes below the dupthresh-th highest PSN held are lost.
                        let k = cfg.dupthresh as usize;
                        let lost_before = qp.lost_below;
                        if let Some(&kth) = qp.sacked.iter().rev().nth(k - 1) {
                            qp.lost_below = qp.lost_below.max(kth);
                        }
                        // With nothing new to send, no later report will come:
                        // the last hole below PSNs all held is lost too.
                        let new_data = qp.snd_nxt < qp.total && qp.snd_nxt / qp.ppm < qp.snd_una / qp.ppm + qp.window;
                        if !new_data {
                            let mut p = qp.snd_max;
                            while p > qp.snd_una && qp.sacked.contains(&(p - 1)) {
                                p -= 1;
                            }
                            if p < qp.snd_max && p > qp.snd_una {
                                qp.lost_below = qp.lost_below.max(p);
                            }
                        }
                        // A hole newly found lost (not one already resent).
                        if qp.lost_below > lost_before && qp.lost_below > qp.resend_from.max(qp.snd_una) {
                            if let QpCc::Custom { cc, .. } = &mut qp.cc {
                                if (qp.resend_from.max(qp.snd_una)..qp.lost_below).any(|p| !qp.sacked.contains(&p)) {
                                    cc.on_loss(now, false);
                                }
                            }
                        }
                        if pkt.flags & FLAG_TRIMMED != 0 {
                            Self::on_trimmed(qp, top, now);
                        }
                    } else if a < qp.snd_nxt {
                        // Go-back-N: a gap at the receiver, a packet lost.
                        qp.snd_nxt = a;
                        if let QpCc::Custom { cc, .. } = &mut qp.cc {
                            cc.on_loss(now, false);
                        }
                    }
                }
                self.roce_pump(q);
            }
            _ => {
                match &mut qp.cc {
                    QpCc::Dcqcn(d) => {
                        if cfg.dcqcn.enabled {
                            d.on_cnp(&cfg.dcqcn, now);
                        }
                    }
                    QpCc::Custom { cc, cnps } => {
                        *cnps += 1;
                        cc.on_cnp(now);
                    }
                }
                self.roce_pump(q);
            }
        }
    }

    // ------------------------------------------------------------ captures

    /// The transport header fields of RoCE packet `pkt` for a capture record.
    pub(super) fn roce_wire(&self, pkt: &Packet) -> RoceWire {
        let q = self.roce.flow_qp[pkt.flow.idx()];
        let qp = &self.roce.qps[q as usize];
        let responder = 0x100 + (q & 0x7f_feff);
        let requester = 0x80_0000 | responder;
        let epsn = pkt.ack;
        let msn = (epsn / qp.ppm.max(1)) as u32 & 0xff_ffff;
        match pkt.flags & 7 {
            OP_DATA => {
                let first = pkt.psn().is_multiple_of(qp.ppm.max(1));
                let last = pkt.flags & FLAG_LAST != 0;
                let op = match (first, last) {
                    (true, false) => 1,
                    (false, false) => 2,
                    (false, true) => 3,
                    (true, true) => 4,
                };
                RoceWire { op, psn: pkt.psn(), dst_qp: responder, msn: 0, retransmit: pkt.flags & FLAG_RETX != 0 }
            }
            OP_ACK => RoceWire { op: 5, psn: epsn.wrapping_sub(1), dst_qp: requester, msn, retransmit: false },
            OP_NACK => RoceWire { op: 6, psn: epsn, dst_qp: requester, msn, retransmit: false },
            _ => RoceWire { op: 7, psn: 0, dst_qp: requester, msn: 0, retransmit: false },
        }
    }

    // ------------------------------------------------------------ outputs

    /// Fills the transport columns of RoCE flows and adds the RoCE-only ones.
    pub(super) fn roce_flow_columns(&self, t: &mut Table) {
        let n = self.flows.len();
        let get = |f: usize| self.roce.flow_qp.get(f).filter(|&&x| x != u32::MAX).map(|&x| &self.roce.qps[x as usize]);
        for (name, col) in &mut t.columns {
            let g: fn(&Qp) -> u64 = match name.as_str() {
                "retransmits" => |q| q.retransmits,
                "timeouts" => |q| q.timeouts,
                "ecn_marked" => |q| q.ce,
                "app_bytes_delivered" => |q| q.delivered,
                _ => continue,
            };
            if let Column::U64(v) = col {
                for (f, x) in v.iter_mut().enumerate() {
                    if let Some(q) = get(f) {
                        *x = g(q);
                    }
                }
            }
        }
        let u64col = |g: &dyn Fn(&Qp) -> u64| Column::U64((0..n).map(|f| get(f).map_or(0, g)).collect());
        t.push("nacks", u64col(&|q| q.nacks));
        if self.fabric.trims() {
            t.push("trimmed_headers", u64col(&|q| q.trim.as_ref().map_or(0, |t| t.headers)));
        }
        t.push("cnps", u64col(&|q| q.cc.cnps()));
        t.push("rate_cuts", u64col(&|q| q.cc.cuts()));
        t.push("messages_completed", u64col(&|q| q.msgs_done));
        t.push(
            "msg_time_mean_ps",
            Column::I64(
                (0..n)
                    .map(|f| {
                        get(f).filter(|q| q.msgs_done > 0).map_or(-1, |q| (q.msg_time_sum / q.msgs_done as u128) as i64)
                    })
                    .collect(),
            ),
        );
        t.push(
            "msg_time_max_ps",
            Column::I64(
                (0..n).map(|f| get(f).filter(|q| q.msgs_done > 0).map_or(-1, |q| q.msg_time_max as i64)).collect(),
            ),
        );
        t.push("final_rate_bps", Column::I64((0..n).map(|f| get(f).map_or(-1, |q| q.cc.rate_bps() as i64)).collect()));
    }

    /// RoCE summary counters.
    pub(super) fn roce_summary(&self, s: &mut BTreeMap<String, crate::stats::Value>) {
        use crate::stats::Value;
        let qps = &self.roce.qps;
        let sum = |g: &dyn Fn(&Qp) -> u64| Value::Int(qps.iter().map(g).sum::<u64>() as i64);
        s.insert("rdma_qps".into(), Value::Int(qps.len() as i64));
        s.insert("rdma_qps_completed".into(), Value::Int(qps.iter().filter(|q| q.done).count() as i64));
        s.insert("rdma_retransmits".into(), sum(&|q| q.retransmits));
        s.insert("rdma_timeouts".into(), sum(&|q| q.timeouts));
        s.insert("rdma_nacks".into(), sum(&|q| q.nacks));
        s.insert("rdma_cnps".into(), sum(&|q| q.cc.cnps()));
    }
}
