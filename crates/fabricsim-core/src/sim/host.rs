//! The host datapath inside the simulation (`network.host.model`): CPU
//! cores, NIC DMA, receive rings with interrupt moderation, and the `cpu`,
//! `cores`, `host_stages` and `host_latency` tables.
//!
//! ```text
//!  inject ──> host_tx: core of the flow's app (or of the poll that triggered it, inline)
//!         ──> CpuRun (batch served) ──> egress (sim/egress.rs) ──> DMA tx line ──> nic_out (NIC pipeline, port)
//!  host_receive ──> host_rx: DMA rx line ──> ring of the steered core ──> interrupt (Irq)
//!         ──> poll queued on the core ──> CpuRun (poll served: GRO, stages) ──> deliver, TCP, apps
//! ```
//!
//! Events: `CpuRun(core)` (at most one pending per core: the end of the item
//! in service, or a kick of an idle core), `NicDma(line)` (at most one per
//! DMA line: its head's exit), `Irq(ring, generation)` (a coalescing timer;
//! stale when the generation moved on).
//!
//! Hosts without a model cost one bounds check per packet sent and received
//! (`HostState::at` on an empty table). Packets held by cores, rings and DMA
//! lines count in `packets_in_network`; drops go through `drop_packet` with
//! `host_backlog_full`, `host_tx_queue_full`, or a software stage's reason.
//!
//! Latency per packet is split into components (`COMPONENTS`) and summed per
//! flow: where host time went, for latency breakdowns.

use super::{Event, Hooks, Simulation};
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::host::cpu::{Core, Ring, Work};
use crate::host::nic::{DmaLine, InterruptConfig};
use crate::host::stack::{gro_group, GroFrame, SoftKind, SoftStage};
use crate::host::Steering;
use crate::ids::{NodeId, PacketId};
use crate::network::topology::NodeKind;
use crate::packet::{Packet, PacketKind};
use crate::pipeline::Dir;
use crate::rng::mix64;
use crate::stats::{Column, DropReason, Table, Value};
use crate::units::SimTime;
use std::collections::BTreeMap;

const NONE: u32 = u32::MAX;

/// Host latency components, in a packet's order.
pub(super) const COMPONENTS: [&str; 7] =
    ["tx_cpu_wait", "tx_cpu", "tx_dma", "rx_dma", "rx_irq_wait", "rx_cpu_wait", "rx_cpu"];
const TX_CPU_WAIT: usize = 0;
const TX_CPU: usize = 1;
const TX_DMA: usize = 2;
const RX_DMA: usize = 3;
const RX_IRQ: usize = 4;
const RX_CPU_WAIT: usize = 5;
const RX_CPU: usize = 6;

/// A sum, count and maximum of one latency component.
#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    sum: u64,
    n: u64,
    max: u64,
}

/// One host's datapath.
#[derive(Debug)]
struct Datapath {
    node: NodeId,
    stages: Vec<SoftStage>,
    /// First core of its machine (cores are shared by the hosts of a machine).
    core_base: u32,
    /// Its first receive ring (one per core of its machine).
    ring_base: u32,
}

/// Host datapaths of the simulation.
#[derive(Debug, Default)]
pub(super) struct HostState {
    /// Per node: its datapath, or `NONE`; empty while no host has a model.
    by_node: Vec<u32>,
    dps: Vec<Datapath>,
    cores: Vec<Core>,
    rings: Vec<Ring>,
    /// Two DMA lines per datapath: `2 dp` transmit, `2 dp + 1` receive.
    dma: Vec<DmaLine>,
    dma_on: bool,
    cores_per_machine: u32,
    share_ppm: u64,
    gso_bytes: u32,
    tso: bool,
    gro_bytes: u32,
    budget: u32,
    irq: InterruptConfig,
    backlog: usize,
    tx_queue: usize,
    steering: Steering,
    message_bytes: u64,
    /// Per flow: the application's own TCP message size (0: `message_bytes`);
    /// empty while no application sets one.
    flow_message: Vec<u64>,
    /// Per flow: pinned application core (0-based within the machine) at its
    /// source and at its destination; `NONE` picks one by hash.
    pins: Vec<(u32, u32)>,
    /// While a poll's deliveries run: (datapath, core); what they send is inline work of that core.
    ctx: Option<(u32, u32)>,
    /// Per flow: latency components.
    lat: Vec<[Acc; 7]>,
    bin_ps: u64,
    frames: Vec<GroFrame>,
    skb_of: Vec<u32>,
    /// Scratch of a poll or transmit batch, kept between them so that the
    /// host datapath allocates nothing per packet once warmed up.
    scratch: Scratch,
}

/// Per-poll working buffers of [`HostState`] (cleared, never shrunk).
#[derive(Debug, Default)]
struct Scratch {
    /// Per stage: whether it ran on the packet (or batch) at hand.
    ran: Vec<bool>,
    /// Per skb: frames, bytes, transport, pure ACK, messages.
    info: Vec<(u64, u64, bool, bool, u64)>,
    /// Per frame of the poll: dropped by a stage.
    dropped: Vec<bool>,
    /// Per skb and stage: whether the stage ran on one of its frames.
    skb_ran: Vec<bool>,
}

impl HostState {
    /// Cores, receive rings and DMA lines: what can own events (the stall guard's count).
    pub(super) fn components(&self) -> usize {
        self.cores.len() + self.rings.len() + self.dma.len()
    }

    /// The datapath of host `node`, if it has a model.
    #[inline]
    pub(super) fn at(&self, node: NodeId) -> Option<u32> {
        match self.by_node.get(node.idx()) {
            Some(&d) if d != NONE => Some(d),
            _ => None,
        }
    }

    /// Whether any host has a model.
    pub(super) fn enabled(&self) -> bool {
        !self.dps.is_empty()
    }

    /// Cores per machine (1 when no host has a model).
    pub(super) fn cores(&self) -> u32 {
        self.cores_per_machine.max(1)
    }

    /// Pins flow `flow` to core `src` at its source and `dst` at its destination.
    pub(super) fn pin(&mut self, flow: u32, src: u32, dst: u32) {
        let f = flow as usize;
        if self.pins.len() <= f {
            self.pins.resize(f + 1, (NONE, NONE));
        }
        self.pins[f] = (src, dst);
    }

    /// Packets held by cores, rings and DMA lines.
    pub(super) fn held_packets(&self) -> usize {
        self.cores.iter().map(|c| c.held()).sum::<usize>()
            + self.rings.iter().map(|r| r.frames.len()).sum::<usize>()
            + self.dma.iter().map(|d| d.held()).sum::<usize>()
    }

    /// Sets the TCP message size of `flow`'s application (its `send()`/`recv()` size).
    pub(super) fn set_message_bytes(&mut self, flow: u32, bytes: u64) {
        let f = flow as usize;
        if self.flow_message.len() <= f {
            self.flow_message.resize(f + 1, 0);
        }
        self.flow_message[f] = bytes;
    }

    fn message_bytes(&self, flow: u32) -> u64 {
        match self.flow_message.get(flow as usize) {
            Some(&m) if m > 0 => m,
            _ => self.message_bytes,
        }
    }

    fn record(&mut self, flow: u32, component: usize, ps: u64) {
        let f = flow as usize;
        if self.lat.len() <= f {
            self.lat.resize(f + 1, [Acc::default(); 7]);
        }
        let a = &mut self.lat[f][component];
        a.sum += ps;
        a.n += 1;
        a.max = a.max.max(ps);
    }

    /// Service time of `fs` femtoseconds of work at the core share.
    fn service(&self, fs: u128) -> SimTime {
        // fs / 1000 ps, divided by share_ppm / 1e6.
        SimTime((fs * 1000).div_ceil(self.share_ppm as u128) as u64)
    }
}

/// Application messages that start in `[seq, seq + len)` (transmit) with messages of `m` bytes.
fn messages_started(seq: u64, len: u64, m: u64) -> u64 {
    (seq + len).div_ceil(m) - seq.div_ceil(m)
}

/// Application messages completed by bytes `[seq, seq + len)` (receive).
fn messages_completed(seq: u64, len: u64, m: u64) -> u64 {
    (seq + len) / m - seq / m
}

impl Simulation {
    /// Records `ps` of host component `component` for packet `id` of `flow`:
    /// per flow, and per packet when `stats.packet_latency` is on.
    #[inline]
    fn host_record(&mut self, id: PacketId, flow: u32, component: usize, ps: u64) {
        self.host.record(flow, component, ps);
        if self.hooks.host_time.has(Hooks::PACKET_LATENCY) {
            self.pkt_lat.add(id, component, ps);
        }
    }

    /// Builds the datapath of every host when `network.host.model` is given.
    pub(super) fn setup_hosts(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        let Some(cfg) = &sc.network.host.model else { return Ok(()) };
        let path = "network.host.model";
        cfg.validate(path)?;
        self.host.bin_ps = sc.stats.cpu_interval_ps;
        let n = self.nodes.len();
        // Machines: hosts named together share one set of cores.
        let mut machine_of: BTreeMap<usize, usize> = BTreeMap::new();
        for (g, group) in cfg.machines.iter().enumerate() {
            for (j, name) in group.iter().enumerate() {
                let field = format!("{path}.machines[{g}][{j}]");
                let Some(i) = self.nodes.iter().position(|x| &x.name == name) else {
                    return Err(ConfigError::new(field, format!("unknown host '{name}'")));
                };
                if self.nodes[i].kind != NodeKind::Host {
                    return Err(ConfigError::new(field, format!("'{name}' is a switch, not a host")));
                }
                if machine_of.insert(i, g).is_some() {
                    return Err(ConfigError::new(field, format!("host '{name}' is in more than one machine")));
                }
            }
        }
        let h = &mut self.host;
        h.cores_per_machine = cfg.cores;
        h.share_ppm = cfg.core_share_ppm as u64;
        h.gso_bytes = cfg.gso_bytes;
        h.tso = cfg.tso;
        h.gro_bytes = cfg.gro_bytes;
        h.budget = cfg.napi_budget;
        h.irq = cfg.interrupt;
        h.backlog = cfg.backlog_packets as usize;
        h.tx_queue = cfg.tx_queue_packets as usize;
        h.steering = cfg.rx_steering;
        h.message_bytes = cfg.message_bytes;
        h.by_node = vec![NONE; n];
        let mut machine_cores: BTreeMap<usize, u32> = BTreeMap::new();
        for i in 0..n {
            if self.nodes[i].kind != NodeKind::Host {
                continue;
            }
            let dp = self.host.dps.len() as u32;
            let mut stages = Vec::with_capacity(cfg.stages.len());
            for (k, s) in cfg.stages.iter().enumerate() {
                stages.push(SoftStage::build(s, &format!("{path}.stages[{k}]"), self.classes)?);
            }
            let h = &mut self.host;
            let core_base = match machine_of.get(&i).and_then(|g| machine_cores.get(g)) {
                Some(&base) => base,
                None => {
                    let base = h.cores.len() as u32;
                    for k in 0..cfg.cores {
                        h.cores.push(Core { machine_dp: dp, index: k, ..Default::default() });
                    }
                    if let Some(&g) = machine_of.get(&i) {
                        machine_cores.insert(g, base);
                    }
                    base
                }
            };
            let ring_base = h.rings.len() as u32;
            for k in 0..cfg.cores {
                h.rings.push(Ring { dp, core: core_base + k, ..Default::default() });
            }
            let nic = &cfg.nic;
            let mut tx = DmaLine::new(nic.tx_latency_ps, nic.tx_per_byte_fs);
            let mut rx = DmaLine::new(nic.rx_latency_ps, nic.rx_per_byte_fs);
            // A cut-through NIC keeps ahead of the slowest of its host's ports (a host without
            // links sends nothing).
            let node = &self.nodes[i];
            let ports = node.first_port as usize..node.first_port as usize + node.num_ports as usize;
            if let Some(wire) = self.ports[ports].iter().map(|p| p.rate).min() {
                tx = tx.cut_through(nic.cut_through_bytes, wire, false);
                rx = rx.cut_through(nic.cut_through_bytes, wire, true);
            }
            h.dma.push(tx);
            h.dma.push(rx);
            h.by_node[i] = dp;
            h.dps.push(Datapath { node: NodeId(i as u32), stages, core_base, ring_base });
        }
        self.host.dma_on = self.host.dma.iter().any(|d| !d.is_transparent());
        Ok(())
    }

    /// The largest GSO/TSO batch of host `node`'s device (`gso`), when it has
    /// a datapath model: Linux's TCP sizes its bursts within the device's
    /// `gso_max_size` (`sk_gso_max_size`), so one value serves both the
    /// sender's burst size and the CPU's batching (0: no GSO, one segment
    /// per skb).
    pub(super) fn host_gso_limit(&self, node: NodeId) -> Option<u32> {
        match self.host.by_node.get(node.idx()) {
            Some(&dp) if dp != NONE => Some(self.host.gso_bytes),
            _ => None,
        }
    }

    /// Whether the host datapath handles packet `id` (TCP and UDP; RDMA and
    /// MAC control frames bypass the CPU).
    #[inline]
    pub(super) fn host_takes(&self, id: PacketId) -> bool {
        matches!(self.pool.get(id).kind, PacketKind::Tcp | PacketKind::Data)
    }

    /// Core (global index) of flow `flow`'s application at host `dp`.
    fn app_core(&self, dp: u32, flow: u32, at_src: bool) -> u32 {
        let d = &self.host.dps[dp as usize];
        let cores = self.host.cores_per_machine;
        let pinned = self.host.pins.get(flow as usize).map(|p| if at_src { p.0 } else { p.1 });
        let k = match pinned {
            Some(k) if k != NONE => k % cores,
            _ => (mix64(flow as u64 ^ ((d.node.0 as u64) << 32) ^ 0x0a99_c04e) % cores as u64) as u32,
        };
        d.core_base + k
    }

    /// A packet the transport or an application of host `dp` sends: it joins
    /// a core's transmit queue.
    pub(super) fn host_tx(&mut self, dp: u32, id: PacketId) {
        let now = self.now;
        let pkt = *self.pool.get(id);
        let node = self.host.dps[dp as usize].node;
        let (core, inline) = match self.host.ctx {
            Some((d, c)) if d == dp => (c, true),
            _ => (self.app_core(dp, pkt.flow.0, pkt.src.0 == self.flows[pkt.flow.idx()].src), false),
        };
        let c = &mut self.host.cores[core as usize];
        if c.tx_queued() >= self.host.tx_queue {
            c.stats.tx_queue_drops += 1;
            self.drop_packet(node, 0, id, DropReason::HostTxQueueFull);
            return;
        }
        self.pool.get_mut(id).enqueued = now;
        let tcp_data = pkt.tcp_payload() > 0;
        c.push_tx(inline, dp, pkt.flow.0, id, pkt.size, tcp_data, now, self.host.gso_bytes);
        self.core_kick(core);
    }

    /// A packet leaving host `node`'s stack and qdiscs (`sim/egress.rs`):
    /// the NIC's transmit DMA when its host model has one, else the NIC.
    pub(super) fn egress_out(&mut self, node: NodeId, id: PacketId) {
        if self.host.dma_on {
            if let Some(dp) = self.host.at(node) {
                if self.host_takes(id) {
                    return self.dma_enter(2 * dp, id);
                }
            }
        }
        self.nic_out(node, id);
    }

    /// A packet for host `dp` that its NIC received: DMA, then the ring.
    pub(super) fn host_rx(&mut self, dp: u32, id: PacketId) {
        if !self.host.dma_on {
            return self.ring_push(dp, id);
        }
        self.dma_enter(2 * dp + 1, id);
    }

    fn dma_enter(&mut self, line: u32, id: PacketId) {
        let now = self.now;
        let p = self.pool.get_mut(id);
        p.enqueued = now;
        let bytes = p.size as u64;
        let (exit, head) = self.host.dma[line as usize].enter(now, id, bytes);
        if head {
            self.queue.push(exit, Event::NicDma(line));
        }
    }

    /// `NicDma`: the head of a DMA line leaves it.
    pub(super) fn on_nic_dma(&mut self, line: u32) {
        let (id, next) = self.host.dma[line as usize].leave();
        if let Some(t) = next {
            self.queue.push(t, Event::NicDma(line));
        }
        let pkt = *self.pool.get(id);
        let dp = line / 2;
        if line % 2 == 0 {
            self.host_record(id, pkt.flow.0, TX_DMA, (self.now - pkt.enqueued).0);
            let node = self.host.dps[dp as usize].node;
            self.nic_out(node, id);
        } else {
            self.host_record(id, pkt.flow.0, RX_DMA, (self.now - pkt.enqueued).0);
            self.ring_push(dp, id);
        }
    }

    /// A received frame reaches the ring of its steered core.
    fn ring_push(&mut self, dp: u32, id: PacketId) {
        let now = self.now;
        let pkt = *self.pool.get(id);
        let d = &self.host.dps[dp as usize];
        let k = match self.host.steering {
            Steering::Rss => (mix64(pkt.hash ^ 0x7255_0000) % self.host.cores_per_machine as u64) as u32,
            Steering::App => {
                let core = self.app_core(dp, pkt.flow.0, pkt.dst.0 == self.flows[pkt.flow.idx()].src);
                core - d.core_base
            }
        };
        let r = d.ring_base + k;
        let (node, backlog) = (d.node, self.host.backlog);
        let ring = &mut self.host.rings[r as usize];
        if ring.frames.len() >= backlog {
            ring.drops += 1;
            self.drop_packet(node, 0, id, DropReason::HostBacklogFull);
            return;
        }
        self.pool.get_mut(id).enqueued = now;
        ring.frames.push_back(id);
        ring.high_water = ring.high_water.max(ring.frames.len() as u64);
        if ring.napi {
            return;
        }
        let irq = self.host.irq;
        if irq.immediate() || (irq.frames > 0 && ring.frames.len() >= irq.frames as usize) {
            self.raise(r);
        } else if !ring.timer {
            ring.timer = true;
            ring.gen = ring.gen.wrapping_add(1);
            self.queue.push(now + SimTime(irq.usecs_ps), Event::Irq(r, ring.gen));
        }
    }

    /// The ring's interrupt fires: a poll is queued on its core.
    fn raise(&mut self, r: u32) {
        let now = self.now;
        let ring = &mut self.host.rings[r as usize];
        ring.napi = true;
        if ring.timer {
            ring.timer = false;
            ring.gen = ring.gen.wrapping_add(1);
        }
        ring.interrupts += 1;
        ring.raised_at = now;
        let core = ring.core;
        self.host.cores[core as usize].polls.push_back(Work::Rx { ring: r, irq: true });
        self.core_kick(core);
    }

    pub(super) fn irq_is_stale(&self, r: u32, generation: u32) -> bool {
        self.host.rings[r as usize].gen != generation || !self.host.rings[r as usize].timer
    }

    /// `Irq`: a ring's coalescing timer expired.
    pub(super) fn on_irq(&mut self, r: u32, generation: u32) {
        let ring = &mut self.host.rings[r as usize];
        if ring.gen != generation || !ring.timer {
            return;
        }
        ring.timer = false;
        if !ring.napi && !ring.frames.is_empty() {
            self.raise(r);
        }
    }

    /// The receiving application of TCP connection `tcp` (flow `flow`) at
    /// host `node` became runnable: it joins the queue of its core, the
    /// core of the flow's application there (pinned or by hash; under
    /// `rx_steering: app` also the core that polls the flow's ring), behind
    /// the transmit batches and reader runs already queued.
    pub(super) fn reader_enqueue(&mut self, node: NodeId, flow: u32, tcp: u32) {
        let Some(dp) = self.host.at(node) else { return };
        let core = self.app_core(dp, flow, false);
        self.host.cores[core as usize].fifo.push_back(Work::Read { tcp });
        self.core_kick(core);
    }

    /// Makes an idle core look for work now.
    fn core_kick(&mut self, core: u32) {
        let c = &mut self.host.cores[core as usize];
        if !c.pending && c.current.is_none() {
            c.pending = true;
            self.queue.push(self.now, Event::CpuRun(core));
        }
    }

    /// `CpuRun`: the core finished its item (if it had one) and takes the next.
    pub(super) fn on_cpu_run(&mut self, core: u32) {
        // `pending` stays set while the finished item's effects run, so the
        // work they queue on this core does not schedule a second event.
        if let Some(w) = self.host.cores[core as usize].current.take() {
            self.cpu_finish(core, w);
        }
        self.host.cores[core as usize].pending = false;
        self.cpu_start(core);
    }

    /// Starts the core's next item: runs its stages and schedules its end.
    fn cpu_start(&mut self, core: u32) {
        let (w, service) = loop {
            let c = &mut self.host.cores[core as usize];
            if c.pending || c.current.is_some() {
                return;
            }
            let Some(w) = c.next() else { return };
            let service = match w {
                Work::Tx(b) => {
                    let fs = self.tx_work(core, b.dp);
                    self.host.service(fs)
                }
                Work::Rx { ring, irq } => {
                    let fs = self.rx_work(core, ring, irq);
                    self.host.service(fs)
                }
                // A reader that finds nothing to read goes back to sleep at once.
                Work::Read { tcp } => match self.tcp_reader_run(tcp) {
                    Some(copy) => self.host.service(copy.0 as u128 * 1000),
                    None => continue,
                },
            };
            break (w, service);
        };
        let now = self.now;
        let c = &mut self.host.cores[core as usize];
        c.current = Some(w);
        c.since = now;
        c.pending = true;
        self.queue.push(now + service, Event::CpuRun(core));
    }

    /// Runs the stages of the transmit batch in `serving` and returns its CPU work (fs).
    fn tx_work(&mut self, core: u32, dp: u32) -> u128 {
        let now = self.now;
        let mut serving = std::mem::take(&mut self.host.cores[core as usize].serving);
        let mut kept = 0;
        let first = *self.pool.get(serving[0]);
        let tcp = first.kind == PacketKind::Tcp;
        let pure_ack = tcp && serving.len() == 1 && first.tcp_payload() == 0;
        let mut bytes = 0u64;
        let mut msgs = 0u64;
        let m = self.host.message_bytes(first.flow.0);
        let mut ran = std::mem::take(&mut self.host.scratch.ran);
        ran.clear();
        ran.resize(self.host.dps[dp as usize].stages.len(), false);
        for i in 0..serving.len() {
            let id = serving[i];
            let mut pkt = *self.pool.get(id);
            bytes += pkt.flow_bytes();
            msgs += if tcp {
                if pkt.tcp_payload() > 0 && pkt.flags & super::transport::FLAG_RETX == 0 {
                    messages_started(pkt.seq, pkt.len as u64, m)
                } else {
                    0
                }
            } else {
                1
            };
            let c = &mut self.host.cores[core as usize].stats;
            c.wait_sum_ps += (now - pkt.enqueued).0 as u128;
            c.waited += 1;
            self.host_record(id, pkt.flow.0, TX_CPU_WAIT, (now - pkt.enqueued).0);
            if let Some(reason) = self.run_soft_stages(dp, &mut pkt, Dir::Tx, &mut ran) {
                *self.pool.get_mut(id) = pkt;
                let node = self.host.dps[dp as usize].node;
                self.drop_packet(node, 0, id, reason);
                continue;
            }
            *self.pool.get_mut(id) = pkt;
            serving[kept] = id;
            kept += 1;
        }
        let n = serving.len() as u64;
        serving.truncate(kept);
        let tso = self.host.tso;
        let mut fs = 0u128;
        for (s, ran) in self.host.dps[dp as usize].stages.iter_mut().zip(&ran) {
            let cost = &s.cost[0];
            let (units, w) = match &s.kind {
                SoftKind::Tcp if tcp => (1, cost.fs(1, bytes, pure_ack)),
                SoftKind::Udp if !tcp => (n, cost.fs(n, bytes, false)),
                SoftKind::Driver => {
                    let u = if tso { 1 } else { n };
                    (u, cost.fs(u, bytes, pure_ack))
                }
                SoftKind::Syscall if msgs > 0 => (msgs, cost.fs(msgs, 0, false)),
                SoftKind::Pipeline(_) if *ran => (1, cost.fs(1, bytes, pure_ack)),
                _ => continue,
            };
            s.counters.units[0] += units;
            s.counters.busy_fs[0] += w;
            fs += w;
        }
        let c = &mut self.host.cores[core as usize];
        c.stats.tx_batches += 1;
        c.stats.tx_packets += n;
        c.serving = serving;
        self.host.scratch.ran = ran;
        fs
    }

    /// Takes up to a budget of frames from ring `r`, groups them into skbs,
    /// runs their stages and returns the poll's CPU work (fs).
    fn rx_work(&mut self, core: u32, r: u32, irq: bool) -> u128 {
        let now = self.now;
        let budget = self.host.budget as usize;
        let ring = &mut self.host.rings[r as usize];
        let (dp, raised) = (ring.dp, ring.raised_at);
        let take = ring.frames.len().min(budget);
        let mut serving = std::mem::take(&mut self.host.cores[core as usize].serving);
        serving.clear();
        serving.extend(self.host.rings[r as usize].frames.drain(..take));
        let mut frames = std::mem::take(&mut self.host.frames);
        frames.clear();
        for &id in &serving {
            let p = self.pool.get(id);
            let tcp_data = p.kind == PacketKind::Tcp && p.tcp_payload() > 0;
            let psh = tcp_data && p.flags & super::transport::FLAG_PSH != 0;
            frames.push(GroFrame {
                flow: p.flow.0,
                tcp_data: p.tcp_payload() > 0,
                seq: p.seq,
                len: p.len,
                ecn: p.ecn,
                flags: if psh { p.flags & !super::transport::FLAG_PSH } else { p.flags },
                bytes: p.size,
                psh,
            });
            let irq_wait = raised.saturating_sub(p.enqueued).0;
            let flow = p.flow.0;
            let wait = (now - p.enqueued).0;
            self.host_record(id, flow, RX_IRQ, irq_wait);
            self.host_record(id, flow, RX_CPU_WAIT, wait - irq_wait);
            let c = &mut self.host.cores[core as usize].stats;
            c.wait_sum_ps += wait as u128;
            c.waited += 1;
        }
        let mut skb_of = std::mem::take(&mut self.host.skb_of);
        let skbs = gro_group(&frames, self.host.gro_bytes, &mut skb_of);
        let mut fs = if irq { self.host.irq.cost_ps as u128 * 1000 } else { 0 };
        let nstages = self.host.dps[dp as usize].stages.len();
        let Scratch { mut ran, mut info, mut dropped, mut skb_ran } = std::mem::take(&mut self.host.scratch);
        ran.clear();
        ran.resize(nstages, false);
        // Per skb: frames, bytes, transport, pure ACK, messages.
        info.clear();
        info.resize(skbs as usize, (0, 0, false, false, 0));
        for (i, &id) in serving.iter().enumerate() {
            let k = skb_of[i] as usize;
            let p = *self.pool.get(id);
            let tcp = p.kind == PacketKind::Tcp;
            let e = &mut info[k];
            e.0 += 1;
            e.1 += p.flow_bytes();
            e.2 = tcp;
            e.3 = tcp && p.tcp_payload() == 0;
            e.4 += if !tcp {
                1
            } else if p.tcp_payload() > 0 {
                messages_completed(p.seq, p.len as u64, self.host.message_bytes(p.flow.0))
            } else {
                0
            };
        }
        dropped.clear();
        dropped.resize(serving.len(), false);
        skb_ran.clear();
        skb_ran.resize(skbs as usize * nstages.max(1), false);
        for (i, &id) in serving.iter().enumerate() {
            let mut pkt = *self.pool.get(id);
            ran.iter_mut().for_each(|x| *x = false);
            let reason = self.run_soft_stages(dp, &mut pkt, Dir::Rx, &mut ran);
            *self.pool.get_mut(id) = pkt;
            let k = skb_of[i] as usize;
            for (j, &x) in ran.iter().enumerate() {
                skb_ran[k * nstages + j] |= x;
            }
            if let Some(reason) = reason {
                let node = self.host.dps[dp as usize].node;
                self.drop_packet(node, 0, id, reason);
                dropped[i] = true;
            }
        }
        for (k, &(n, bytes, tcp, pure_ack, msgs)) in info.iter().enumerate() {
            for (j, s) in self.host.dps[dp as usize].stages.iter_mut().enumerate() {
                let cost = &s.cost[1];
                let (units, w) = match &s.kind {
                    SoftKind::Tcp if tcp => (1, cost.fs(1, bytes, pure_ack)),
                    SoftKind::Udp if !tcp => (n, cost.fs(n, bytes, false)),
                    SoftKind::Driver => (n, cost.fs(n, bytes, pure_ack)),
                    SoftKind::Syscall if msgs > 0 => (msgs, cost.fs(msgs, 0, false)),
                    SoftKind::Pipeline(_) if skb_ran[k * nstages + j] => (1, cost.fs(1, bytes, pure_ack)),
                    _ => continue,
                };
                s.counters.units[1] += units;
                s.counters.busy_fs[1] += w;
                fs += w;
            }
        }
        let c = &mut self.host.cores[core as usize];
        c.stats.polls += 1;
        c.stats.rx_frames += serving.len() as u64;
        c.stats.rx_skbs += skbs as u64;
        c.skbs = skbs;
        // Dropped frames leave `serving`; the core's `skb_of` keeps the survivors' skbs.
        let mut kept_skb = std::mem::take(&mut c.skb_of);
        kept_skb.clear();
        let mut kept = 0;
        for i in 0..serving.len() {
            if !dropped[i] {
                serving[kept] = serving[i];
                kept_skb.push(skb_of[i]);
                kept += 1;
            }
        }
        serving.truncate(kept);
        c.serving = serving;
        c.skb_of = kept_skb;
        self.host.frames = frames;
        self.host.skb_of = skb_of;
        self.host.scratch = Scratch { ran, info, dropped, skb_ran };
        fs
    }

    /// Runs the match-action stages of datapath `dp` on a packet in direction
    /// `dir`; marks in `ran` the stages that ran; returns a drop reason.
    fn run_soft_stages(&mut self, dp: u32, pkt: &mut Packet, dir: Dir, ran: &mut [bool]) -> Option<DropReason> {
        if !self.host.dps[dp as usize].stages.iter().any(|s| matches!(s.kind, SoftKind::Pipeline(_))) {
            return None;
        }
        let ctx = self.pipeline_ctx(pkt, 0, dir);
        for (j, s) in self.host.dps[dp as usize].stages.iter_mut().enumerate() {
            let SoftKind::Pipeline(stage) = &mut s.kind else { continue };
            if !stage.applies(0, dir) {
                continue;
            }
            ran[j] = true;
            let step = stage.run(pkt, &ctx);
            if step.drop.is_some() {
                return step.drop;
            }
        }
        None
    }

    /// Doubles the width of every core's busy-time bins (until the run's time
    /// fits in [`MAX_BINS`](crate::host::cpu::MAX_BINS) of them), merging each two into one.
    #[cold]
    #[inline(never)]
    fn widen_cpu_bins(&mut self) {
        while self.now.0 / self.host.bin_ps >= crate::host::cpu::MAX_BINS {
            self.host.bin_ps *= 2;
            for c in &mut self.host.cores {
                c.widen_bins();
            }
        }
    }

    /// The item in service on `core` is done.
    fn cpu_finish(&mut self, core: u32, w: Work) {
        let now = self.now;
        if self.host.bin_ps > 0 && now.0 / self.host.bin_ps >= crate::host::cpu::MAX_BINS {
            self.widen_cpu_bins();
        }
        let bin = self.host.bin_ps;
        let c = &mut self.host.cores[core as usize];
        let since = c.since;
        c.account(since, now, bin);
        let serving = std::mem::take(&mut c.serving);
        match w {
            Work::Read { tcp } => match self.tcp_reader_done(tcp) {
                // The call goes on copying: it keeps the core ...
                Some(false) => self.host.cores[core as usize].resume = Some(w),
                // ... or, copying in turns, lets the softirq work run first.
                Some(true) => self.host.cores[core as usize].fifo.push_front(w),
                None => {}
            },
            Work::Tx(b) => {
                let node = self.host.dps[b.dp as usize].node;
                for &id in &serving {
                    let flow = self.pool.get(id).flow.0;
                    self.host_record(id, flow, TX_CPU, (now - since).0);
                    if !self.egress_take(node, id) {
                        self.egress_out(node, id);
                    }
                }
            }
            Work::Rx { ring, .. } => {
                let skb_of = std::mem::take(&mut self.host.cores[core as usize].skb_of);
                let dp = self.host.rings[ring as usize].dp;
                let node = self.host.dps[dp as usize].node;
                // Skbs are numbered in the order of their first frame; GRO keeps a flow's frames in order.
                let skbs = skb_of.iter().copied().max().map_or(0, |m| m + 1);
                for k in 0..skbs {
                    let mut merged: Option<Packet> = None;
                    let (mut frames, mut len) = (0u64, 0u32);
                    for (x, &id) in serving.iter().enumerate() {
                        if skb_of[x] != k {
                            continue;
                        }
                        let p = *self.pool.get(id);
                        let m = merged.get_or_insert(p);
                        // The merged segment carries the PSH of the last (tcp_gro_receive).
                        if p.kind == PacketKind::Tcp && p.tcp_payload() > 0 {
                            m.flags |= p.flags & super::transport::FLAG_PSH;
                        }
                        self.host_record(id, p.flow.0, RX_CPU, (now - since).0);
                        frames += (p.tcp_payload() > 0) as u64;
                        len += p.len;
                        self.deliver(id, &p);
                    }
                    if let Some(mut m) = merged {
                        m.len = len;
                        self.host.ctx = Some((dp, core));
                        self.host_delivered(node, &m, frames);
                        self.host.ctx = None;
                    }
                }
                self.host.cores[core as usize].skb_of = skb_of;
                let r = &mut self.host.rings[ring as usize];
                if r.frames.is_empty() {
                    r.napi = false;
                } else {
                    let c = r.core;
                    self.host.cores[c as usize].polls.push_back(Work::Rx { ring, irq: false });
                }
            }
        }
        let c = &mut self.host.cores[core as usize];
        let mut serving = serving;
        serving.clear();
        c.serving = serving;
    }

    /// Hands a received skb (frames already counted as delivered) to its transport or application.
    fn host_delivered(&mut self, node: NodeId, pkt: &Packet, data_frames: u64) {
        match pkt.kind {
            PacketKind::Tcp => self.tcp_arrive_frames(node, pkt, data_frames),
            PacketKind::Data => self.app_udp_arrive(node, pkt),
            _ => {}
        }
    }

    // ------------------------------------------------------------ outputs

    /// Adds the `cpu`, `cores`, `host_stages` and `host_latency` tables.
    pub(super) fn host_outputs(&mut self, tables: &mut BTreeMap<String, Table>, s: &mut BTreeMap<String, Value>) {
        if !self.host.enabled() {
            return;
        }
        if self.host.bin_ps > 0 {
            self.widen_cpu_bins();
        }
        let h = &self.host;
        let span = self.now.0.max(1);
        let node_of = |c: &Core| h.dps[c.machine_dp as usize].node.0;
        // cpu: busy time per bin and core.
        let mut t = Table::default();
        let (mut time, mut node, mut core, mut busy, mut util) = (vec![], vec![], vec![], vec![], vec![]);
        if h.bin_ps > 0 {
            let bins = span.div_ceil(h.bin_ps) as usize;
            for b in 0..bins {
                let start = b as u64 * h.bin_ps;
                let width = h.bin_ps.min(span - start).max(1);
                for c in &h.cores {
                    let v = c.bins.get(b).copied().unwrap_or(0);
                    time.push(start);
                    node.push(node_of(c));
                    core.push(c.index);
                    busy.push(v);
                    util.push(v as f64 / width as f64);
                }
            }
        }
        t.push("time_ps", Column::U64(time));
        t.push("node", Column::U32(node));
        t.push("core", Column::U32(core));
        t.push("busy_ps", Column::U64(busy));
        t.push("utilization", Column::F64(util));
        tables.insert("cpu".into(), t);

        // cores: totals per core, with the rings it polls.
        let mut t = Table::default();
        let cs = &h.cores;
        let mut irqs = vec![0u64; cs.len()];
        let mut drops = vec![0u64; cs.len()];
        let mut high = vec![0u64; cs.len()];
        for r in &h.rings {
            irqs[r.core as usize] += r.interrupts;
            drops[r.core as usize] += r.drops;
            high[r.core as usize] = high[r.core as usize].max(r.high_water);
        }
        t.push("node", Column::U32(cs.iter().map(node_of).collect()));
        t.push("core", Column::U32(cs.iter().map(|c| c.index).collect()));
        t.push("busy_ps", Column::U64(cs.iter().map(|c| c.stats.busy_ps).collect()));
        t.push("utilization", Column::F64(cs.iter().map(|c| c.stats.busy_ps as f64 / span as f64).collect()));
        t.push("tx_batches", Column::U64(cs.iter().map(|c| c.stats.tx_batches).collect()));
        t.push("tx_packets", Column::U64(cs.iter().map(|c| c.stats.tx_packets).collect()));
        t.push("polls", Column::U64(cs.iter().map(|c| c.stats.polls).collect()));
        t.push("rx_frames", Column::U64(cs.iter().map(|c| c.stats.rx_frames).collect()));
        t.push("rx_skbs", Column::U64(cs.iter().map(|c| c.stats.rx_skbs).collect()));
        t.push("interrupts", Column::U64(irqs));
        t.push("backlog_drops", Column::U64(drops.clone()));
        t.push("tx_queue_drops", Column::U64(cs.iter().map(|c| c.stats.tx_queue_drops).collect()));
        t.push("backlog_high_water", Column::U64(high));
        t.push("tx_queue_high_water", Column::U64(cs.iter().map(|c| c.stats.tx_queue_high_water).collect()));
        t.push(
            "wait_mean_ps",
            Column::F64(
                cs.iter()
                    .map(|c| if c.stats.waited > 0 { c.stats.wait_sum_ps as f64 / c.stats.waited as f64 } else { 0.0 })
                    .collect(),
            ),
        );
        tables.insert("cores".into(), t);

        // host_stages: per host, stage and direction.
        let (mut node, mut stage, mut name, mut kind, mut dir, mut units, mut busy) =
            (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
        let mut names: Vec<String> = Vec::new();
        let mut kinds: Vec<String> = Vec::new();
        let code = |list: &mut Vec<String>, s: &str| -> u32 {
            match list.iter().position(|x| x == s) {
                Some(i) => i as u32,
                None => {
                    list.push(s.to_string());
                    list.len() as u32 - 1
                }
            }
        };
        for d in &h.dps {
            for (j, st) in d.stages.iter().enumerate() {
                for side in 0..2 {
                    node.push(d.node.0);
                    stage.push(j as u32);
                    name.push(code(&mut names, &st.name));
                    kind.push(code(&mut kinds, st.kind_name()));
                    dir.push(side as u32);
                    units.push(st.counters.units[side]);
                    busy.push((st.counters.busy_fs[side] / 1000) as u64);
                }
            }
        }
        let mut t = Table::default();
        t.push("node", Column::U32(node));
        t.push("stage", Column::U32(stage));
        t.push("name", Column::Cat { codes: name, labels: names });
        t.push("kind", Column::Cat { codes: kind, labels: kinds });
        t.push("direction", Column::Cat { codes: dir, labels: vec!["tx".into(), "rx".into()] });
        t.push("units", Column::U64(units));
        t.push("busy_ps", Column::U64(busy));
        tables.insert("host_stages".into(), t);

        // host_latency: per flow and component.
        let (mut flow, mut node, mut comp, mut n, mut total, mut mean, mut max) =
            (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
        for (f, accs) in h.lat.iter().enumerate() {
            for (k, a) in accs.iter().enumerate() {
                if a.n == 0 {
                    continue;
                }
                let fs = &self.flows[f];
                flow.push(f as u32);
                node.push(if k <= TX_DMA { fs.src } else { fs.dst });
                comp.push(k as u32);
                n.push(a.n);
                total.push(a.sum);
                mean.push(a.sum as f64 / a.n as f64);
                max.push(a.max);
            }
        }
        let mut t = Table::default();
        t.push("flow_id", Column::U32(flow));
        t.push("node", Column::U32(node));
        t.push("component", Column::Cat { codes: comp, labels: COMPONENTS.iter().map(|s| s.to_string()).collect() });
        t.push("packets", Column::U64(n));
        t.push("total_ps", Column::U64(total));
        t.push("mean_ps", Column::F64(mean));
        t.push("max_ps", Column::U64(max));
        tables.insert("host_latency".into(), t);

        let busy: u64 = h.cores.iter().map(|c| c.stats.busy_ps).sum();
        s.insert("host_cpu_busy_ps".into(), Value::Int(busy as i64));
        s.insert("host_backlog_drops".into(), Value::Int(drops.iter().sum::<u64>() as i64));
    }
}
