//! The simulation: the world's state, the event loop and its public
//! interface. Building the world is `sim/build.rs`, a packet's path through
//! it `sim/data_plane.rs` (with the features hooked into its steps,
//! `sim/hooks.rs`), writing the results `sim/results.rs`; each other file
//! of `sim/` joins one model to the loop. The event kinds, who owns each and
//! the ordering rules are listed in docs/architecture.md ("The event loop").
//!
//! A packet's life: a source creates it at a host and routes it to an egress
//! port; the device's buffer model admits or drops it; the port transmits it
//! (its scheduler picks the class); at the end of transmission it enters the
//! channel's FIFO and arrives at the far node after the propagation delay plus
//! that node's fixed latency; a switch routes it on, a host delivers it.

use crate::buffer::{AdmitRequest, Buffer, BufferConfig, StaticLimits, Verdict};
use crate::config::{Scenario, TrafficConfig};
use crate::error::{ConfigError, RunError};
use crate::event_queue::EventQueue;
use crate::ids::{ChannelId, FlowId, NodeId, PacketId, PortId, SourceId};
use crate::network::aqm::AqmAction;
use crate::network::balance::{Balancer, LoadBalancingConfig};
use crate::network::multicast::MCAST_TAG;
use crate::network::routing::RoutingTable;
use crate::network::topology::{Graph, NodeKind};
use crate::network::{Channel, Forwarding, Node, Port};
use crate::packet::{Packet, PacketKind, PacketPool, CONTROL_FLOW, ECN_ECT, ECN_NOT_ECT, LOCAL_PORT};
use crate::rng::{mix64, RandomStream};
use crate::stats::{
    Column, DropCounters, DropReason, FlowKind, FlowStats, QueueSamples, Reordering, RunOutput, Table, Value,
};
use crate::traffic::Source;
use crate::units::{Rate, SimTime};
use std::collections::BTreeMap;

mod apps;
mod arbitration;
mod broadcast;
mod build;
mod carried;
mod data_plane;
mod egress;
mod fabric;
mod failures;
mod flow_deps;
pub mod guard;
mod hooks;
use hooks::Hooks;
mod host;
pub mod limits;
mod memory;
mod multicast;
mod packet_latency;
mod pcap;
mod pfc;
mod pipeline;
mod port_shaper;
mod power;
mod prefetch;
mod results;
mod roce;
mod tcp_trace;
mod telemetry;
mod transport;

use crate::transport::tcp::{Outbox, TcpConfig};
pub use memory::MemoryUse;
use transport::{IncastApp, TcpFlow, ThroughputBins};

/// Events between checks of the event queue for cancelled timers to purge.
const PURGE_CHECK_EVERY: u64 = 1 << 20;
/// Pending events below which the queue is never purged.
const PURGE_AT_LEAST: usize = 1 << 20;

#[derive(Clone, Copy, Debug)]
enum Event {
    TxDone(PortId),
    Arrive(ChannelId),
    Send(SourceId),
    Sample,
    /// A TCP connection opens (its application starts).
    TcpOpen(u32),
    /// A TCP connection's timer; stale when the generation does not match.
    TcpTimer(u32, u32),
    /// A port's PFC pause of a class may have expired.
    PfcResume(PortId, u8),
    /// Re-send XOFF for (port, class) if still congested; stale when the generation does not match.
    PfcRefresh(PortId, u8, u32),
    /// A RoCE queue pair starts.
    RoceOpen(u32),
    /// A RoCE queue pair's timer; stale when the generation does not match.
    RoceTimer(u32, u32),
    /// A pipe's issue slot is free: issue the head of its queue (global pipe index).
    PipeStart(u32),
    /// The head of a pipe's delay line leaves the pipeline (global pipe index).
    PipeExit(u32),
    /// A host core finished its work item, or an idle core has work (global core index).
    CpuRun(u32),
    /// The head of a NIC DMA line leaves it (line index).
    NicDma(u32),
    /// A receive ring's interrupt-coalescing timer; stale when the generation does not match.
    Irq(u32, u32),
    /// A ping-pong application's timer (start, gap, reply timeout); stale when the generation does not match.
    AppTimer(u32, u32),
    /// The head of a host egress stage is due (`3 chain + stage`: jitter, shaper, delay).
    HostEgress(u32),
    /// A shaped switch port's buckets allow its next frame.
    PortShaper(PortId),
    /// Failure `i` (`failures[i]`) takes its link down (`sim/failures.rs`).
    LinkDown(u32),
    /// Failure `i`'s link comes back.
    LinkUp(u32),
    /// Routing reacts to failure `i`'s change: recomputed with its link down (`true`) or up.
    Reroute(u32, bool),
    /// Impairment `i` (`failures[i]` with `rate` or `loss`) starts (`true`) or ends.
    Impair(u32, bool),
}

/// How a call to [`Simulation::advance`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// The run is over (no events left, the time cap reached, or stopped).
    Finished,
    /// Every event up to the requested time has been processed.
    Reached,
    /// The event budget of the call was used up first; call again.
    Paused,
}

/// A running simulation.
pub struct Simulation {
    name: String,
    seed: u64,
    now: SimTime,
    duration: SimTime,
    end_cap: SimTime,
    overhead: u64,
    classes: usize,
    /// Packets a host NIC's class queue holds before it refuses a datagram (`HostConfig::txqueuelen`).
    txqueuelen: usize,
    queue: EventQueue<Event>,
    /// Queue length beyond which cancelled timers are purged (`purge_cancelled_events`).
    purge_at: usize,
    /// The least `purge_at` ([`PURGE_AT_LEAST`]; tests set a small one).
    purge_floor: usize,
    /// Purges done so far.
    purges: u64,
    nodes: Vec<Node>,
    ports: Vec<Port>,
    channels: Vec<Channel>,
    routing: RoutingTable,
    pool: PacketPool,
    sources: Vec<Source>,
    flows: Vec<FlowStats>,
    flow_names: Vec<String>,
    drops: DropCounters,
    samples: QueueSamples,
    sample_interval: SimTime,
    sampled_ports: Vec<PortId>,
    events: u64,
    created_packets: u64,
    created_bytes: u64,
    delivered_packets: u64,
    delivered_bytes: u64,
    finished: bool,
    /// The features hooked into each step of the packet path (`sim/hooks.rs`),
    /// assembled once the world is built.
    hooks: hooks::PacketHooks,
    /// Every event up to this time has been processed.
    horizon: SimTime,
    // TCP connections, their configurations and applications.
    tcp: Vec<TcpFlow>,
    /// Per connection: its timer's generation; its timer events with another
    /// one are stale. Kept apart from the connections so that the event
    /// queue's check of every timer event it moves reads 4 bytes per
    /// connection, not a connection's cold lines.
    tcp_timer_gen: Vec<u32>,
    tcp_cfgs: Vec<TcpConfig>,
    /// Per TCP configuration: the factory of its registered controller, if it names one.
    tcp_cc: Vec<Option<std::sync::Arc<dyn crate::extension::tcp_cc::CcFactory>>>,
    tcp_default: TcpConfig,
    incasts: Vec<IncastApp>,
    flow_deps: flow_deps::FlowDeps,
    /// Per flow: index into `tcp`, or `u32::MAX`.
    flow_tcp: Vec<u32>,
    outbox: Outbox,
    throughput: ThroughputBins,
    /// Carried frames per link and per flow on the wire; see `sim/carried.rs`.
    carried: carried::Carried,
    /// The run stopped at its time cap (duration + drain limit) with events left.
    capped: bool,
    /// Switch-buffer features (ECN/RED, schedulers, pools); see `sim/fabric.rs`.
    fabric: fabric::Fabric,
    /// PFC: lossless classes, pause state and counters; see `sim/pfc.rs`.
    pfc: pfc::PfcState,
    /// RoCEv2 queue pairs; see `sim/roce.rs`.
    roce: roce::RoceState,
    /// In-band telemetry stamped on RoCE data; see `sim/telemetry.rs`.
    int: telemetry::Telemetry,
    /// Match-action pipelines of switches and NICs; see `sim/pipeline.rs`.
    pipeline: pipeline::PipelineState,
    /// Multicast groups, trees and senders; see `sim/multicast.rs`.
    mcast: multicast::MulticastState,
    /// Device power bins; see `sim/power.rs`.
    power: power::PowerState,
    /// Broadcast fabrics; see `sim/broadcast.rs`.
    broadcast: broadcast::BroadcastState,
    /// Fails the run when simulated time stops advancing; see `sim/guard.rs`.
    guard: guard::StallGuard,
    /// Set when the run failed; every later call reports it again.
    failure: Option<RunError>,
    /// Host datapaths (CPU cores, NIC DMA); see `sim/host.rs`.
    host: host::HostState,
    /// Host egress chains: jitter, shaper, delay line (`sim/egress.rs`).
    egress: egress::EgressState,
    /// Shaped switch ports (`sim/port_shaper.rs`).
    port_shapers: port_shaper::PortShapers,
    /// iperf3 and ping-pong applications; see `sim/apps.rs`.
    apps: apps::AppState,
    /// Packet capture taps; see `sim/pcap.rs`.
    capture: pcap::CaptureState,
    /// Per-packet latency breakdown; see `sim/packet_latency.rs`.
    pkt_lat: packet_latency::PacketLatency,
    /// Per-flow TCP sender state over time; see `sim/tcp_trace.rs`.
    tcp_trace: tcp_trace::TcpTrace,
    /// Software prefetch of the next events' state; see `sim/prefetch.rs`.
    prefetch: prefetch::Prefetch,
    /// Per-switch load balancing over equal-cost next hops (`network/balance.rs`).
    lb: Balancer,
    /// Link failures and the routing's view of them (`sim/failures.rs`).
    failures: failures::Failures,
}

impl Simulation {
    // ----------------------------------------------------------------- running

    /// Current simulated time.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// How far the run has progressed: every event up to this time has been
    /// processed (at least [`Simulation::now`]; used for progress reports).
    pub fn progress(&self) -> SimTime {
        self.now.max(self.horizon)
    }

    /// Timer events carry a generation; an older generation was cancelled.
    fn is_cancelled(&self, ev: Event) -> bool {
        match ev {
            Event::TcpTimer(c, generation) => self.tcp_timer_is_stale(c, generation),
            Event::RoceTimer(q, generation) => self.roce_timer_is_stale(q, generation),
            Event::PfcRefresh(p, c, generation) => self.pfc_refresh_is_stale(p, c, generation),
            Event::Irq(r, generation) => self.irq_is_stale(r, generation),
            Event::AppTimer(a, generation) => self.app_timer_is_stale(a, generation),
            _ => false,
        }
    }

    /// The scenario's duration (sources and sampling stop there).
    pub fn duration(&self) -> SimTime {
        self.duration
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Whether the run is over (no events left, or the time cap reached).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Processes every event at or before `limit` (and before the time cap).
    /// Returns `true` once the run is over.
    ///
    /// # Panics
    ///
    /// If the run fails ([`RunError`]: simulated time stopped advancing).
    /// Use [`Simulation::advance`] to get the error instead.
    pub fn run_until(&mut self, limit: SimTime) -> bool {
        match self.advance(limit, u64::MAX) {
            Ok(p) => p == Progress::Finished,
            Err(e) => panic!("{e}"),
        }
    }

    /// Processes events at or before `limit` (and before the time cap), at
    /// most `max_events` of them, so that a caller can stay responsive (check
    /// for interrupts, report progress) however long a stretch of simulated
    /// time takes. Once it failed, every call returns the same error.
    pub fn advance(&mut self, limit: SimTime, max_events: u64) -> Result<Progress, RunError> {
        let mut left = max_events;
        loop {
            self.purge_cancelled_events();
            self.follow_packets();
            let slice = left.min(PURGE_CHECK_EVERY);
            let progress = self.advance_slice(limit, slice)?;
            left -= slice;
            if progress != Progress::Paused || left == 0 {
                return Ok(progress);
            }
        }
    }

    /// Drops cancelled timers from the event queue once it has doubled since
    /// the last time: a timer re-armed earlier leaves its older event behind,
    /// and without this, timers re-armed faster than they fall due (a QP
    /// woken by its NIC, with its retransmission deadline far ahead) grow the
    /// queue without bound. Cancelled events neither count nor move the
    /// clock, so when they go changes no result.
    fn purge_cancelled_events(&mut self) {
        if self.queue.len() <= self.purge_at {
            return;
        }
        let mut queue = std::mem::take(&mut self.queue);
        queue.purge(&|e: &Event| self.is_cancelled(*e));
        self.purge_at = (2 * queue.len()).max(self.purge_floor);
        self.queue = queue;
        self.purges += 1;
    }

    /// Replaces the queue length below which cancelled timers are never
    /// purged (tests use a small one to exercise the purge).
    pub fn set_purge_floor(&mut self, floor: usize) {
        self.purge_floor = floor.max(1);
        self.purge_at = self.purge_floor;
    }

    /// Purges of cancelled timers done so far.
    pub fn purges(&self) -> u64 {
        self.purges
    }

    /// Events pending in the queue now (cancelled ones not yet dropped included).
    pub fn pending_events(&self) -> usize {
        self.queue.len()
    }

    /// [`Simulation::advance`] for at most `max_events` events.
    fn advance_slice(&mut self, limit: SimTime, max_events: u64) -> Result<Progress, RunError> {
        if let Some(e) = &self.failure {
            return Err(e.clone());
        }
        if self.finished {
            return Ok(Progress::Finished);
        }
        debug_assert_eq!(self.hooks, self.packet_hooks(), "a feature was turned on after the world was built");
        let limit = limit.min(self.end_cap);
        let mut budget = max_events;
        // A TCP timer re-armed earlier leaves its older event behind, stale
        // for good (generations only move on): the queue drops such events
        // when it next moves them, instead of carrying them to the front.
        let tcp_timers = !self.tcp.is_empty();
        while let Some((t, ev)) = if tcp_timers {
            self.queue
                .peek_live(&|e: &Event| matches!(*e, Event::TcpTimer(c, g) if self.tcp_timer_gen[c as usize] != g))
        } else {
            self.queue.peek()
        } {
            if self.is_cancelled(ev) {
                // A cancelled timer: dropped unseen, it neither counts nor
                // moves the clock, so results do not depend on when it was due.
                self.queue.take_peeked();
                continue;
            }
            if t > limit {
                self.horizon = self.horizon.max(limit);
                if limit >= self.end_cap {
                    self.finished = true;
                    self.capped = true;
                    return Ok(Progress::Finished);
                }
                return Ok(Progress::Reached);
            }
            if budget == 0 {
                return Ok(Progress::Paused);
            }
            budget -= 1;
            if let Err(e) = self.guard_event(t, ev) {
                // The event stays queued: what was computed so far is intact.
                self.failure = Some(e.clone());
                return Err(e);
            }
            self.queue.take_peeked();
            if self.prefetch.on {
                // Hints for the events due next (`sim/prefetch.rs`).
                self.prefetch_next();
            }
            if t >= self.power.next_boundary {
                // A power bin ended before this event (see `sim/power.rs`).
                self.close_power_bins(t);
            }
            self.now = t;
            self.events += 1;
            match ev {
                Event::TxDone(p) => self.on_tx_done(p),
                Event::Arrive(c) => self.on_arrive(c),
                Event::Send(s) => self.on_send(s),
                Event::Sample => self.on_sample(),
                Event::TcpOpen(t) => self.on_tcp_open(t),
                Event::TcpTimer(t, generation) => self.on_tcp_timer(t, generation),
                Event::PfcResume(p, c) => self.on_pfc_resume(p, c),
                Event::PfcRefresh(p, c, generation) => self.on_pfc_refresh(p, c, generation),
                Event::RoceOpen(q) => self.on_roce_open(q),
                Event::RoceTimer(q, generation) => self.on_roce_timer(q, generation),
                Event::PipeStart(g) => self.on_pipe_start(g),
                Event::PipeExit(g) => self.on_pipe_exit(g),
                Event::CpuRun(c) => self.on_cpu_run(c),
                Event::NicDma(l) => self.on_nic_dma(l),
                Event::Irq(r, generation) => self.on_irq(r, generation),
                Event::AppTimer(a, generation) => self.on_app_timer(a, generation),
                Event::HostEgress(x) => self.on_host_egress(x),
                Event::PortShaper(p) => self.on_port_shaper(p),
                Event::LinkDown(i) => self.on_link_down(i),
                Event::LinkUp(i) => self.on_link_up(i),
                Event::Reroute(i, down) => self.on_reroute(i, down),
                Event::Impair(i, on) => self.on_impair(i, on),
            }
        }
        self.finished = true;
        Ok(Progress::Finished)
    }

    /// Runs to the end.
    ///
    /// # Panics
    ///
    /// As [`Simulation::run_until`].
    pub fn run(&mut self) {
        self.run_until(SimTime::MAX);
    }

    /// Ends the run now: no further event is processed, and
    /// [`Simulation::finish`] returns the results so far (the packets still
    /// queued or on wires count as in the network). Used when a run is
    /// interrupted or failed and its partial results are wanted.
    pub fn stop(&mut self) {
        self.finished = true;
        self.failure = None;
    }

    /// The error that ended the run, if it failed.
    pub fn failure(&self) -> Option<&RunError> {
        self.failure.as_ref()
    }

    fn on_send(&mut self, sid: SourceId) {
        let now = self.now;
        let s = &self.sources[sid.idx()];
        if s.multicast == multicast::NO_SENDER {
            let pkt = Packet {
                seq: s.sent,
                ecn: s.ecn,
                dscp: s.dscp,
                ..Packet::new(s.flow, s.src, s.dst, s.frame_bytes, PacketKind::Data, s.class, s.hash, now)
            };
            let id = self.create_packet(pkt);
            self.inject(pkt.src, id);
        } else {
            self.multicast_send(sid);
        }
        let s = &mut self.sources[sid.idx()];
        match s.advance(now) {
            Some(t) => {
                s.next = t;
                self.queue.push(t, Event::Send(sid));
            }
            None => {
                let flow = s.flow;
                self.flows[flow.idx()].source_done = true;
            }
        }
    }

    fn on_sample(&mut self) {
        self.sample_pools();
        self.sample_pipelines();
        let t = self.now.0;
        for &pid in &self.sampled_ports {
            let port = &mut self.ports[pid.idx()];
            if port.nonempty == 0 && port.sampled_nonzero == 0 {
                continue;
            }
            for c in 0..self.classes {
                let bit = 1u8 << c;
                let bytes = port.queue(c).queued;
                if bytes > 0 || port.sampled_nonzero & bit != 0 {
                    self.samples.push(t, port.node.0, port.local as u32, c as u8, bytes, port.queue(c).len() as u64);
                }
                if bytes > 0 {
                    port.sampled_nonzero |= bit;
                } else {
                    port.sampled_nonzero &= !bit;
                }
            }
        }
        let next = self.now + self.sample_interval;
        if next <= self.duration {
            self.queue.push(next, Event::Sample);
        }
    }
}

impl Simulation {
    /// Checks that traffic entry `path` names an existing traffic class.
    pub(super) fn check_class(&self, class: u8, path: &str) -> Result<(), ConfigError> {
        if class as usize >= self.classes {
            return Err(ConfigError::new(
                format!("{path}.class"),
                format!("must be between 0 and {} (network.classes = {})", self.classes - 1, self.classes),
            ));
        }
        Ok(())
    }
}

/// The host named `name`; errors are reported at `field` (a full path).
pub(super) fn resolve_host(
    index: &BTreeMap<&str, usize>,
    graph: &Graph,
    name: &str,
    field: &str,
) -> Result<NodeId, ConfigError> {
    match index.get(name) {
        Some(&n) if graph.kinds[n] == NodeKind::Host => Ok(NodeId(n as u32)),
        Some(_) => Err(ConfigError::new(field, format!("'{name}' is a switch, not a host"))),
        None => Err(ConfigError::new(
            field,
            format!("unknown host '{name}' (hosts: {})", list_names(graph, NodeKind::Host)),
        )),
    }
}

fn list_names(g: &Graph, kind: NodeKind) -> String {
    let names: Vec<&str> = (0..g.names.len()).filter(|&i| g.kinds[i] == kind).map(|i| g.names[i].as_str()).collect();
    match names.len() {
        0 => "none".to_string(),
        1..=8 => names.join(", "),
        n => format!("{}, ... {} ({} in all)", names[..4].join(", "), names[n - 1], n),
    }
}
