//! The simulation: builds the world from a resolved [`Scenario`] and runs the
//! event loop.
//!
//! # Event loop
//!
//! Four kinds of events exist, each owned by one component that keeps at most
//! one of them pending:
//!
//! | event            | owner   | pending at most                        |
//! |------------------|---------|----------------------------------------|
//! | `TxDone(port)`   | port    | one, while it transmits                |
//! | `Arrive(channel)`| channel | one, for the head of its in-flight FIFO |
//! | `Send(source)`   | source  | one, its next frame                    |
//! | `Sample`         | stats   | one                                    |
//!
//! A packet's life: a source creates it at a host and routes it to an egress
//! port; the device's buffer model admits or drops it; the port transmits it
//! (strict priority between classes, FIFO within one); at the end of
//! transmission it enters the channel's FIFO and arrives at the far node after the
//! propagation delay plus that node's fixed latency; a switch routes it on, a host
//! delivers it.

use crate::buffer::{AdmitRequest, BufferConfig, BufferModel, StaticLimits, Verdict};
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
mod carried;
mod egress;
mod fabric;
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
mod roce;
mod tcp_trace;
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
}

impl Simulation {
    /// Builds the world. Every problem in the scenario is reported with its field path.
    pub fn new(sc: &Scenario) -> Result<Simulation, ConfigError> {
        if sc.duration_ps == 0 {
            return Err(ConfigError::new("duration", "must be > 0"));
        }
        let net = &sc.network;
        if !(1..=8).contains(&net.classes) {
            return Err(ConfigError::new("network.classes", format!("must be between 1 and 8 (got {})", net.classes)));
        }
        let classes = net.classes as usize;
        limits::check(sc)?;
        let graph = Graph::build(&sc.topology, "topology")?;
        let n = graph.names.len();

        // Local port numbering: each node numbers its links in link order.
        let mut adj: Vec<Vec<(usize, u16)>> = vec![Vec::new(); n];
        let mut link_ports = Vec::with_capacity(graph.links.len());
        for &(a, b, _) in &graph.links {
            let pa = adj[a].len();
            let pb = adj[b].len();
            if pa >= u16::MAX as usize || pb >= u16::MAX as usize {
                return Err(ConfigError::new("topology", "a node has too many ports (max 65534)"));
            }
            adj[a].push((b, pa as u16));
            adj[b].push((a, pb as u16));
            link_ports.push((pa as u16, pb as u16));
        }

        for name in net.switch_overrides.keys() {
            match graph.names.iter().position(|x| x == name) {
                Some(i) if graph.kinds[i] == NodeKind::Switch => {}
                _ => {
                    return Err(ConfigError::new(
                        format!("network.switch_overrides.{name}"),
                        format!("no switch named '{name}' (switches: {})", list_names(&graph, NodeKind::Switch)),
                    ))
                }
            }
        }

        // Rate of each port of each node, for buffer reservations by port speed.
        let mut port_rates: Vec<Vec<u64>> = adj.iter().map(|a| vec![0; a.len()]).collect();
        for (l, &(a, b, cfg)) in graph.links.iter().enumerate() {
            let (pa, pb) = link_ports[l];
            port_rates[a][pa as usize] = cfg.rate_bps;
            port_rates[b][pb as usize] = cfg.rate_bps;
        }

        let mut nodes = Vec::with_capacity(n);
        let mut first_port = 0u32;
        for i in 0..n {
            let kind = graph.kinds[i];
            let num_ports = adj[i].len();
            let (latency, forwarding, cut_through_bytes, mtu, buffer) = match kind {
                NodeKind::Switch => {
                    let name = &graph.names[i];
                    let (cfg, path) = match net.switch_overrides.get(name) {
                        Some(c) => (c, format!("network.switch_overrides.{name}.buffer")),
                        None => (&net.switch, "network.switch.buffer".to_string()),
                    };
                    let b = match &cfg.buffer {
                        BufferConfig::Custom(c) => {
                            let ctx = crate::extension::buffer_policy::DeviceContext {
                                port_rates_bps: &port_rates[i],
                                classes,
                            };
                            let policy = crate::extension::buffer_policy::build(&c.model, &c.params, &ctx, &path)?;
                            BufferModel::custom(&c.model, policy, port_rates[i].len(), classes)
                        }
                        builtin => BufferModel::build(builtin, &port_rates[i], classes, &path)?,
                    };
                    let mtu = cfg.mtu_bytes.unwrap_or(u32::MAX);
                    (SimTime(cfg.latency_ps), cfg.forwarding, cfg.cut_through_bytes, mtu, b)
                }
                NodeKind::Host => {
                    let b = BufferModel::build(
                        &BufferConfig::static_limits(StaticLimits {
                            port_bytes: net.host.nic_buffer_bytes,
                            queue_bytes: None,
                            queue_packets: None,
                        }),
                        &port_rates[i],
                        classes,
                        "network.host.nic_buffer",
                    )?;
                    (SimTime(net.host.latency_ps), Forwarding::StoreAndForward, 0, u32::MAX, b)
                }
            };
            nodes.push(Node {
                name: graph.names[i].clone(),
                kind,
                latency,
                forwarding,
                cut_through_bytes,
                mtu,
                first_port,
                num_ports: num_ports as u16,
                buffer,
            });
            first_port += num_ports as u32;
        }

        // Ports and channels. Channel 2l goes a -> b, 2l+1 goes b -> a.
        let mut port_slots: Vec<Option<Port>> = (0..first_port).map(|_| None).collect();
        let mut channels = Vec::with_capacity(graph.links.len() * 2);
        for (l, &(a, b, cfg)) in graph.links.iter().enumerate() {
            let (pa, pb) = link_ports[l];
            let rate = Rate(cfg.rate_bps);
            let delay = SimTime(cfg.delay_ps);
            for (dir, (from, fp, to, tp)) in [(a, pa, b, pb), (b, pb, a, pa)].into_iter().enumerate() {
                let ch = ChannelId((2 * l + dir) as u32);
                let pid = nodes[from].port(fp);
                port_slots[pid.idx()] = Some(Port::new(NodeId(from as u32), fp, ch, rate, classes));
                channels.push(Channel {
                    link: l as u32,
                    from_node: NodeId(from as u32),
                    from_port: pid,
                    to_node: NodeId(to as u32),
                    to_port_local: tp,
                    rate,
                    delay,
                    arrival_delay: delay + nodes[to].latency,
                    in_flight: Default::default(),
                    loss: cfg.loss,
                    lossy: cfg.loss > 0.0,
                    loss_rng: (cfg.loss > 0.0).then(|| RandomStream::new(sc.seed, "link-loss", ch.0 as u64)),
                });
            }
        }
        let ports: Vec<Port> = port_slots.into_iter().map(|p| p.expect("every port belongs to a link")).collect();
        let num_channels = channels.len();
        let routing = RoutingTable::build(&graph.kinds, &adj, sc.seed);
        let mut lb_configs: Vec<Option<LoadBalancingConfig>> = vec![None; n];
        for (i, c) in lb_configs.iter_mut().enumerate() {
            if graph.kinds[i] == NodeKind::Switch {
                let name = &graph.names[i];
                let (cfg, path) = match net.switch_overrides.get(name) {
                    Some(c) => (c, format!("network.switch_overrides.{name}.load_balancing")),
                    None => (&net.switch, "network.switch.load_balancing".to_string()),
                };
                cfg.load_balancing.validate(&path)?;
                *c = Some(cfg.load_balancing);
            }
        }
        let lb = Balancer::new(&lb_configs, sc.seed);

        let mut sim = Simulation {
            name: sc.name.clone(),
            seed: sc.seed,
            now: SimTime::ZERO,
            duration: SimTime(sc.duration_ps),
            end_cap: if sc.drain {
                SimTime(sc.duration_ps.saturating_add(sc.drain_limit_ps))
            } else {
                SimTime(sc.duration_ps)
            },
            overhead: net.ethernet_overhead_bytes as u64,
            classes,
            txqueuelen: net.host.txqueuelen as usize,
            purge_at: PURGE_AT_LEAST,
            queue: EventQueue::new(),
            nodes,
            ports,
            channels,
            routing,
            pool: PacketPool::new(),
            sources: Vec::new(),
            flows: Vec::new(),
            flow_names: Vec::new(),
            drops: DropCounters::default(),
            samples: QueueSamples::default(),
            sample_interval: SimTime(sc.stats.queue_sample_interval_ps),
            sampled_ports: Vec::new(),
            events: 0,
            created_packets: 0,
            created_bytes: 0,
            delivered_packets: 0,
            delivered_bytes: 0,
            finished: false,
            hooks: hooks::PacketHooks::default(),
            horizon: SimTime::ZERO,
            tcp: Vec::new(),
            tcp_timer_gen: Vec::new(),
            tcp_cfgs: Vec::new(),
            tcp_cc: Vec::new(),
            tcp_default: sc.tcp.clone(),
            incasts: Vec::new(),
            flow_deps: Default::default(),
            flow_tcp: Vec::new(),
            outbox: Vec::new(),
            throughput: ThroughputBins::new(sc.stats.throughput_interval_ps),
            carried: carried::Carried::new(sc.stats.throughput_interval_ps, num_channels),
            capped: false,
            fabric: fabric::Fabric::default(),
            pfc: pfc::PfcState::default(),
            roce: roce::RoceState { default: sc.roce.clone(), ..Default::default() },
            pipeline: pipeline::PipelineState::default(),
            mcast: multicast::MulticastState::default(),
            power: power::PowerState::default(),
            broadcast: broadcast::BroadcastState::default(),
            guard: guard::StallGuard::default(),
            failure: None,
            host: host::HostState::default(),
            egress: egress::EgressState::default(),
            port_shapers: port_shaper::PortShapers::default(),
            apps: apps::AppState::default(),
            capture: pcap::CaptureState::default(),
            pkt_lat: packet_latency::PacketLatency::default(),
            tcp_trace: tcp_trace::TcpTrace::default(),
            prefetch: prefetch::Prefetch::default(),
            lb,
        };
        sim.setup_fabric(sc)?;
        sim.setup_pfc(sc)?;
        sim.setup_arbitration(sc)?;
        sim.setup_pipelines(sc)?;
        sim.setup_broadcast(sc)?;
        sim.setup_power(sc)?;
        sim.setup_hosts(sc)?;
        sim.setup_egress(sc)?;
        sim.setup_port_shapers(sc)?;
        sim.sampled_ports = (0..sim.ports.len() as u32)
            .map(PortId)
            .filter(|p| sc.stats.sample_hosts || sim.nodes[sim.ports[p.idx()].node.idx()].kind == NodeKind::Switch)
            .collect();
        let index: BTreeMap<&str, usize> = graph.names.iter().enumerate().map(|(i, s)| (s.as_str(), i)).collect();
        sim.setup_multicast(sc, &index, &graph)?;
        sim.setup_capture(sc, &index)?;
        let parts = graph.parts();
        for (i, t) in sc.traffic.iter().enumerate() {
            sim.add_traffic(i, t, &index, &graph, &parts)?;
        }
        sim.setup_flow_delays(sc)?;
        sim.setup_packet_latency(sc)?;
        sim.setup_tcp_trace(sc)?;
        sim.setup_prefetch();
        if sim.sample_interval.0 > 0 {
            sim.queue.push(SimTime::ZERO, Event::Sample);
        }
        sim.guard = guard::StallGuard::new(sim.stall_limit());
        sim.hooks = sim.packet_hooks();
        Ok(sim)
    }

    /// Adds traffic entry `i`, checking that each of its flows can reach its destination.
    fn add_traffic(
        &mut self,
        i: usize,
        t: &TrafficConfig,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
        parts: &[u32],
    ) -> Result<(), ConfigError> {
        let first = self.flows.len();
        self.add_traffic_entry(i, t, index, graph)?;
        for f in &self.flows[first..] {
            let (src, dst) = (f.src as usize, f.dst as usize);
            if parts[src] != parts[dst] {
                return Err(ConfigError::new(
                    format!("traffic[{i}]"),
                    format!(
                        "'{}' cannot reach '{}': they are in separate parts of the topology",
                        graph.names[src], graph.names[dst]
                    ),
                ));
            }
        }
        Ok(())
    }

    fn add_traffic_entry(
        &mut self,
        i: usize,
        t: &TrafficConfig,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        match t {
            TrafficConfig::UdpCbr(_) | TrafficConfig::UdpPoisson(_) | TrafficConfig::Burst(_) => {
                self.add_udp_traffic(i, t, index, graph)
            }
            TrafficConfig::TcpBulk(b) => self.add_bulk(i, b, index, graph),
            TrafficConfig::TcpIncast(c) => self.add_incast(i, c, index, graph),
            TrafficConfig::TcpFlows(f) => self.add_flow_list(i, f, index, graph),
            TrafficConfig::RdmaWrite(r) => self.add_rdma_write(i, r, index, graph),
            TrafficConfig::Iperf3(c) => self.add_iperf3(i, c, index, graph),
            TrafficConfig::PingPong(c) => self.add_ping_pong(i, c, index, graph),
        }
    }

    /// Adds a `udp_cbr`, `udp_poisson` or `burst` entry.
    fn add_udp_traffic(
        &mut self,
        i: usize,
        t: &TrafficConfig,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        let kind = t.flow_kind();
        let path = format!("traffic[{i}]");
        let host = |name: &str, field: &str| resolve_host(index, graph, name, &format!("{path}.{field}"));
        let (name, srcs, dst, class, frame, dscp, dport, jitter) = match t {
            TrafficConfig::UdpCbr(u) | TrafficConfig::UdpPoisson(u) => {
                (&u.name, &u.src, &u.dst, u.class, u.frame_bytes, u.dscp, u.dst_port, Some(u.start_jitter_ps))
            }
            TrafficConfig::Burst(b) => {
                (&b.name, &b.src, &b.dst, b.class, b.frame_bytes, b.dscp, b.dst_port, b.start_jitter_ps)
            }
            _ => unreachable!("add_traffic_entry hands only UDP entries here"),
        };
        if srcs.is_empty() {
            return Err(ConfigError::new(format!("{path}.src"), "must name at least one host"));
        }
        self.check_class(class, &path)?;
        crate::pipeline::stage::check_dscp(dscp, &format!("{path}.dscp"))?;
        if frame == 0 || frame > 65_535 {
            return Err(ConfigError::new(
                format!("{path}.frame_size"),
                format!("must be 1..65535 bytes (got {frame})"),
            ));
        }
        let group = match t {
            TrafficConfig::UdpCbr(u) | TrafficConfig::UdpPoisson(u) => u.group.as_deref().map(|g| (g, u.replication)),
            _ => None,
        };
        let (dst, group) = match group {
            None => (host(dst, "dst")?, None),
            Some((g, replication)) => {
                if !dst.is_empty() {
                    return Err(ConfigError::new(format!("{path}.dst"), "give either dst or group, not both"));
                }
                (NodeId(u32::MAX), Some((self.multicast_group(g, &format!("{path}.group"))?, replication)))
            }
        };
        let name_idx = self.flow_names.len() as u32;
        self.flow_names.push(if name.is_empty() { format!("{}{}", kind.name(), i) } else { name.clone() });
        let wire = frame as u64 + self.overhead;
        for (j, s) in srcs.iter().enumerate() {
            let src = host(s, &format!("src[{j}]"))?;
            let flow = FlowId(self.flows.len() as u32);
            // A multicast source: its sender, the destination its frames carry, the member shown as `dst`.
            let (sender, dst, flow_dst) = match group {
                None => (multicast::NO_SENDER, dst, dst),
                Some((g, r)) => self.add_multicast_sender(flow, src, g, r, &format!("{path}.src[{j}]"))?,
            };
            if src == dst {
                return Err(ConfigError::new(
                    format!("{path}.src[{j}]"),
                    format!("source '{s}' is also the destination"),
                ));
            }
            let nic_rate = self.ports[self.nodes[src.idx()].port(0).idx()].rate.bps();
            let sid = SourceId(self.sources.len() as u32);
            let (pattern, start, stop, max_frames) = match t {
                TrafficConfig::UdpCbr(u) | TrafficConfig::UdpPoisson(u) => {
                    let rate = match (u.rate_bps, u.load) {
                        (Some(r), None) if r > 0 => r,
                        (None, Some(l)) if l > 0.0 && l.is_finite() => {
                            let r = (nic_rate as f64 * l).round() as u64;
                            r.max(1)
                        }
                        (Some(_), Some(_)) => {
                            return Err(ConfigError::new(
                                format!("{path}.rate"),
                                "give either an absolute rate or a load, not both",
                            ))
                        }
                        _ => return Err(ConfigError::new(format!("{path}.rate"), "must be a positive rate or load")),
                    };
                    let pattern = if kind == FlowKind::UdpCbr {
                        Source::constant(wire, rate)
                    } else {
                        Source::poisson(wire, rate, RandomStream::new(self.seed, "source", sid.0 as u64))
                    };
                    (pattern, u.start_ps, u.stop_ps.unwrap_or(u64::MAX), u.max_frames.unwrap_or(u64::MAX))
                }
                TrafficConfig::Burst(b) => {
                    if b.frames == 0 {
                        return Err(ConfigError::new(format!("{path}.frames"), "must be >= 1"));
                    }
                    (Source::constant(wire, nic_rate), b.start_ps, u64::MAX, b.frames)
                }
                TrafficConfig::TcpBulk(_)
                | TrafficConfig::TcpIncast(_)
                | TrafficConfig::TcpFlows(_)
                | TrafficConfig::RdmaWrite(_)
                | TrafficConfig::Iperf3(_)
                | TrafficConfig::PingPong(_) => {
                    unreachable!("TCP, RDMA and application traffic is added by their own functions")
                }
            };
            // A burst's default: a random phase within one frame's time on its link.
            let jitter =
                jitter.unwrap_or_else(|| (wire as u128 * 8 * 1_000_000_000_000 / nic_rate.max(1) as u128) as u64);
            let start = if jitter > 0 {
                start + RandomStream::new(self.seed, "start-jitter", sid.0 as u64).below(jitter)
            } else {
                start
            };
            let stop = SimTime(stop.min(self.duration.0));
            let hash = mix64(mix64(src.0 as u64) ^ mix64((dst.0 as u64) << 20) ^ mix64(0x11_0000 + flow.0 as u64));
            let mut source = Source {
                flow,
                src,
                dst,
                class,
                frame_bytes: frame,
                start: SimTime(start),
                stop,
                max_frames,
                sent: 0,
                pattern,
                next: SimTime::ZERO,
                hash,
                ecn: match t {
                    TrafficConfig::UdpCbr(u) | TrafficConfig::UdpPoisson(u) if u.ecn => ECN_ECT,
                    TrafficConfig::Burst(b) if b.ecn => ECN_ECT,
                    _ => ECN_NOT_ECT,
                },
                dscp,
                multicast: sender,
            };
            if let Some(port) = dport {
                self.pipeline.set_dport(flow.0, port);
            }
            let first = source.first_time();
            let done = first >= stop || max_frames == 0;
            source.next = first;
            self.flows.push(FlowStats {
                name: name_idx,
                kind,
                src: src.0,
                dst: flow_dst.0,
                class,
                start_ps: start,
                source_done: done,
                ..Default::default()
            });
            self.sources.push(source);
            if !done {
                self.queue.push(first, Event::Send(sid));
            }
        }
        Ok(())
    }

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
        self.purge_at = (2 * queue.len()).max(PURGE_AT_LEAST);
        self.queue = queue;
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

    /// Allocates a packet made at its source node now and counts it as created
    /// (and as sent by its flow, unless it is a control frame).
    #[inline(always)]
    fn create_packet(&mut self, mut pkt: Packet) -> PacketId {
        self.created_packets += 1;
        self.created_bytes += pkt.size as u64;
        if pkt.flow != CONTROL_FLOW {
            let f = &mut self.flows[pkt.flow.idx()];
            f.packets_sent += 1;
            f.bytes_sent += pkt.size as u64;
            if pkt.src.0 == f.src && Reordering::numbered(&pkt) {
                pkt.set_reorder_number(f.reorder_stamp());
            }
        }
        let id = self.pool.alloc(pkt);
        if self.hooks.created.has(Hooks::PACKET_LATENCY) {
            self.pkt_lat.reset(id);
        }
        id
    }

    /// Hands a packet created at host `node` to its datapath (CPU and NIC) if
    /// the host has a model, else straight to its NIC.
    fn inject(&mut self, node: NodeId, id: PacketId) {
        if let Some(dp) = self.host.at(node) {
            if self.host_takes(id) {
                return self.host_tx(dp, id);
            }
        }
        if self.egress_take(node, id) {
            return;
        }
        self.nic_out(node, id);
    }

    /// Hands a packet leaving host `node`'s stack to its NIC's pipeline, if
    /// any, then to the egress port its route picks.
    fn nic_out(&mut self, node: NodeId, id: PacketId) {
        if let Some(d) = self.pipeline.at(node) {
            return self.pipeline_offer(d, id, LOCAL_PORT, crate::pipeline::Dir::Tx);
        }
        self.host_send(node, id);
    }

    /// Sends a packet of host `node` to the egress port its route picks.
    fn host_send(&mut self, node: NodeId, id: PacketId) {
        let pkt = *self.pool.get(id);
        if pkt.dst.0 & MCAST_TAG != 0 {
            return self.multicast_replicate(node, id, None, None);
        }
        match self.route(node, pkt.dst, pkt.hash) {
            Some(out) => {
                if pkt.kind == PacketKind::Data {
                    // The default qdisc's band of the class holds `txqueuelen` packets.
                    let pid = self.nodes[node.idx()].port(out);
                    if self.ports[pid.idx()].queue(pkt.class as usize).len() >= self.txqueuelen {
                        return self.refuse(node, out, pid, id, DropReason::NicQueueFull);
                    }
                }
                self.enqueue(node, out, id, None, None)
            }
            None => self.drop_packet(node, 0, id, DropReason::NoRoute),
        }
    }

    /// Offers a packet to egress port `out` of `node`. `ingress` is the local
    /// port it came in on and `ingress_rate` that link's rate (for cut-through).
    fn enqueue(&mut self, node: NodeId, out: u16, id: PacketId, ingress: Option<u16>, ingress_rate: Option<Rate>) {
        let pkt = *self.pool.get(id);
        let pid = self.nodes[node.idx()].port(out);
        let mut red = self.red_decision(node, pid, &pkt);
        if red == AqmAction::Drop && self.pfc.lossless[node.idx()] & (1 << pkt.class) != 0 {
            // A lossless class is never dropped early; WRED only marks it.
            red = AqmAction::Mark;
        }
        if red == AqmAction::Drop {
            return self.refuse(node, out, pid, id, DropReason::Wred);
        }
        let port = &self.ports[pid.idx()];
        if !port.input_has_room(pkt.class, ingress.unwrap_or(LOCAL_PORT), pkt.size) {
            return self.refuse(node, out, pid, id, DropReason::InputQueueLimit);
        }
        let mut class = pkt.class;
        // The static model (the default) reads the port's counters (lines the
        // push below reads anyway): no request built, no line of its own.
        let queued = port.occupancy(pkt.class);
        // Only the shared model signals PFC; the static one is not asked (the
        // question reads a line of the node that nothing else here reads). A
        // refused packet leaves any signal for the next admission or release.
        let (verdict, sig) = match &mut self.nodes[node.idx()].buffer {
            BufferModel::Static(m) => (m.admit_frame(&queued, pkt.size), None),
            buffer => {
                let verdict = buffer.admit(&AdmitRequest {
                    in_port: ingress,
                    out_port: out,
                    class: pkt.class,
                    bytes: pkt.size,
                    flow: pkt.flow.0,
                    now: self.now,
                    ecn: pkt.ecn,
                    queued,
                });
                let sig = if matches!(verdict, Verdict::Drop(_)) { None } else { buffer.take_pfc_signal() };
                (verdict, sig)
            }
        };
        match verdict {
            Verdict::Admit => {}
            Verdict::Drop(reason) => {
                return self.refuse(node, out, pid, id, reason);
            }
            Verdict::Steer { class: c, mark } => {
                class = c;
                if mark {
                    self.mark_packet(node, out, c, id, fabric::MarkReason::Afd);
                }
            }
            Verdict::Mark => self.mark_packet(node, out, class, id, fabric::MarkReason::Policy),
        }
        if red == AqmAction::Mark {
            self.mark_packet(node, out, class, id, fabric::MarkReason::Red);
        }
        if let Some(sig) = sig {
            self.pfc_signal(node, sig);
        }
        let n = &self.nodes[node.idx()];
        let port = &mut self.ports[pid.idx()];
        let idle = port.is_idle() && port.is_empty();
        let p = self.pool.get_mut(id);
        p.enqueued = self.now;
        p.in_port = ingress.unwrap_or(LOCAL_PORT);
        port.push_from(class, id, pkt.size, p.in_port);
        if idle {
            let mut start = self.now;
            if n.forwarding == Forwarding::CutThrough {
                if let Some(r) = ingress_rate {
                    if r >= port.rate {
                        // The port can start once the header (`cut_through_bytes`, or
                        // the whole frame if shorter) is in and the pipeline latency
                        // has passed (RFC 1242 bit forwarding: first bit in to first
                        // bit out). If the port was still busy then, the frame had to
                        // wait and is stored and forwarded.
                        let header = r.serialization_time(pkt.size.min(n.cut_through_bytes) as u64);
                        let eligible = pkt.first_bit + header + n.latency;
                        if port.free_at <= eligible {
                            start = eligible.min(self.now);
                            self.pool.get_mut(id).enqueued = start;
                        }
                    }
                }
            }
            self.start_next(pid, start);
        } else if port.is_idle() && port.paused != 0 {
            // Idle behind paused classes: this packet's class may be free to go.
            self.start_next(pid, self.now);
        }
    }

    /// A packet refused by egress port `pid` (local port `out` of `node`):
    /// counted at the port and dropped. Out of line: the admission path
    /// keeps its registers for the packets that are queued.
    #[cold]
    #[inline(never)]
    fn refuse(&mut self, node: NodeId, out: u16, pid: PortId, id: PacketId, reason: DropReason) {
        self.ports[pid.idx()].dropped_packets += 1;
        self.drop_packet(node, out as u32, id, reason);
    }

    /// Starts transmitting the next queued packet of `pid` at time `at`.
    fn start_next(&mut self, pid: PortId, at: SimTime) {
        if self.hooks.tx_gate.has(Hooks::PORT_SHAPER) && !self.port_shaper_allows(pid, at) {
            return;
        }
        let port = &mut self.ports[pid.idx()];
        let Some((class, id)) = port.pop() else { return };
        let pkt = self.pool.get_mut(id);
        if class == crate::network::port::CTRL_CLASS {
            // A MAC control frame: no queue or buffer accounting.
            port.queue_delay_sum_ps += (at - pkt.enqueued).0 as u128;
            port.set_in_tx(id);
            port.tx_start = at;
            let end = at + port.tx_duration(pkt.size as u64 + self.overhead);
            self.queue.push(end, Event::TxDone(pid));
            if self.hooks.tx_started.has(Hooks::CAPTURE) {
                self.capture_tx(pid, id, at);
            }
            return;
        }
        port.dequeued(class, pkt.size);
        let size = pkt.size;
        port.queue_delay_sum_ps += (at - pkt.enqueued).0 as u128;
        port.set_in_tx(id);
        port.tx_start = at;
        // `first_bit` is set at `TxDone`, which reads the channel anyway.
        let end = at + port.tx_duration(pkt.size as u64 + self.overhead);
        let (in_port, flow, ecn, local) = (pkt.in_port, pkt.flow.0, pkt.ecn, port.local);
        let node = port.node;
        if self.hooks.tx_charge.has(Hooks::PORT_SHAPER) {
            self.port_shaper_charge(pid, at, size);
        }
        let sig = match &mut self.nodes[node.idx()].buffer {
            // The static model (the default) has no PFC signal and reads three fields.
            BufferModel::Static(m) => {
                m.release_frame(size);
                None
            }
            buffer => {
                buffer.release(&AdmitRequest {
                    in_port: if in_port == LOCAL_PORT { None } else { Some(in_port) },
                    out_port: local,
                    class,
                    bytes: size,
                    flow,
                    now: at,
                    ecn,
                    queued: self.ports[pid.idx()].occupancy(class),
                });
                buffer.take_pfc_signal()
            }
        };
        self.queue.push(end, Event::TxDone(pid));
        if let Some(sig) = sig {
            self.pfc_signal(node, sig);
        }
        let started = self.hooks.tx_started;
        if started.any() {
            if started.has(Hooks::ROCE_WAKE) && !self.roce.wait[pid.idx()].is_empty() {
                self.roce_wake(pid);
            }
            if started.has(Hooks::CAPTURE) {
                self.capture_tx(pid, id, at);
            }
        }
    }

    fn on_tx_done(&mut self, pid: PortId) {
        let now = self.now;
        let port = &mut self.ports[pid.idx()];
        let id = port.take_in_tx().expect("TxDone without a packet in transmission");
        let size = self.pool.get(id).size as u64;
        port.tx_packets += 1;
        port.tx_bytes += size;
        port.free_at = now;
        let ch_id = port.channel;
        let tx_start = port.tx_start;
        self.carried.on_link(ch_id.idx(), tx_start.0, now.0, size);
        let more = !port.is_empty();
        let ch = &mut self.channels[ch_id.idx()];
        let arrival = now + ch.arrival_delay;
        // The first bit left when the transmission started; read at the next
        // hop (cut-through), after this event. Set here rather than when the
        // transmission starts so that a hop reads the channel once.
        self.pool.get_mut(id).first_bit = tx_start + ch.delay;
        ch.in_flight.push_back((arrival, id));
        if ch.in_flight.len() == 1 {
            self.queue.push(arrival, Event::Arrive(ch_id));
        }
        if more {
            self.start_next(pid, now);
        }
        // A host's NIC completed a data segment charged to TCP Small Queues.
        let pkt = self.pool.get(id);
        if pkt.flags & transport::FLAG_TSQ != 0 && pkt.kind == PacketKind::Tcp {
            self.tcp_tx_complete_inline(id);
        }
    }

    fn on_arrive(&mut self, cid: ChannelId) {
        let ch = &mut self.channels[cid.idx()];
        let (_, id) = ch.in_flight.pop_front().expect("Arrive on an empty channel");
        if let Some(&(next, _)) = ch.in_flight.front() {
            self.queue.push(next, Event::Arrive(cid));
        }
        let (node, ingress, rate) = (ch.to_node, ch.to_port_local, ch.rate);
        if ch.lossy {
            let rng = ch.loss_rng.as_mut().expect("a lossy wire has its stream");
            if rng.next_open01() < ch.loss {
                self.drop_packet(node, ingress as u32, id, DropReason::RandomLoss);
                return;
            }
        }
        if self.hooks.received.has(Hooks::CAPTURE) {
            self.capture_rx(cid, id);
        }
        if self.pool.get(id).kind == PacketKind::Pause {
            self.on_pause_frame(node, ingress, id);
            return;
        }
        if let Some(d) = self.pipeline.at(node) {
            return self.pipeline_offer(d, id, ingress, crate::pipeline::Dir::Rx);
        }
        match self.nodes[node.idx()].kind {
            NodeKind::Host => self.host_receive(node, ingress, id),
            NodeKind::Switch => self.switch_forward(node, ingress, rate, id),
        }
    }

    /// A packet received by host `node` on local port `ingress`: delivered if it is its destination.
    #[inline(always)]
    fn host_receive(&mut self, node: NodeId, ingress: u16, id: PacketId) {
        let pkt = *self.pool.get(id);
        if pkt.dst == node {
            if let Some(dp) = self.host.at(node) {
                if self.host_takes(id) {
                    return self.host_rx(dp, id);
                }
            }
            self.deliver(id, &pkt);
            if pkt.kind == PacketKind::Tcp {
                self.tcp_arrive(node, &pkt);
            } else if pkt.kind == PacketKind::Roce {
                self.roce_arrive(node, &pkt);
            } else if pkt.kind == PacketKind::Data {
                self.app_udp_arrive(node, &pkt);
            }
        } else {
            self.drop_packet(node, ingress as u32, id, DropReason::NoRoute);
        }
    }

    /// A packet received by switch `node` on local port `ingress` (a link of
    /// `rate`) goes to the egress port its route picks (a multicast frame to
    /// its tree ports); a frame longer than the device's MTU is dropped.
    #[inline(always)]
    fn switch_forward(&mut self, node: NodeId, ingress: u16, rate: Rate, id: PacketId) {
        let pkt = self.pool.get(id);
        if pkt.size > self.nodes[node.idx()].mtu || pkt.dst.0 & MCAST_TAG != 0 {
            return self.switch_forward_special(node, ingress, rate, id);
        }
        match self.route(node, pkt.dst, pkt.hash) {
            Some(out) => self.enqueue(node, out, id, Some(ingress), Some(rate)),
            None => self.drop_packet(node, ingress as u32, id, DropReason::NoRoute),
        }
    }

    /// [`Simulation::switch_forward`] of a frame longer than the device's MTU
    /// (dropped) or of a multicast frame (replicated onto its tree ports).
    #[cold]
    #[inline(never)]
    fn switch_forward_special(&mut self, node: NodeId, ingress: u16, rate: Rate, id: PacketId) {
        if self.pool.get(id).size > self.nodes[node.idx()].mtu {
            return self.drop_packet(node, ingress as u32, id, DropReason::FrameTooLong);
        }
        self.multicast_replicate(node, id, Some(ingress), Some(rate));
    }

    /// Delivers packet `id` at its destination; `pkt` is its content (the
    /// caller's copy, as the slot is freed here).
    #[inline(always)]
    fn deliver(&mut self, id: PacketId, pkt: &Packet) {
        let now = self.now.0;
        let f = &mut self.flows[pkt.flow.idx()];
        let lat = now - pkt.created.0;
        f.packets_delivered += 1;
        f.bytes_delivered += pkt.flow_bytes();
        f.last_delivery_ps = now;
        // The data direction: everything but what goes back to the source
        // (TCP ACKs, RoCE ACKs and CNPs); multicast copies count at every member.
        if pkt.dst.0 != f.src {
            f.latency_sum_ps += lat as u128;
            f.latency.record(lat);
            if pkt.dst.0 == f.dst && Reordering::numbered(pkt) {
                f.reorder_delivered(pkt.reorder_number());
            }
            self.carried.on_flow(pkt.flow.0, now, pkt.size as u64);
        }
        if pkt.kind == PacketKind::Data {
            self.throughput.add(pkt.flow.0, now, pkt.flow_bytes());
        }
        let delivered = self.hooks.delivered;
        if delivered.has(Hooks::MULTICAST) {
            self.multicast_delivered(pkt, lat);
        }
        if delivered.has(Hooks::PACKET_LATENCY) {
            self.packet_latency_delivered(id, pkt);
        }
        self.delivered_packets += 1;
        self.delivered_bytes += pkt.flow_bytes();
        self.pool.free(id);
    }

    /// The one place where packets are dropped.
    fn drop_packet(&mut self, node: NodeId, port: u32, id: PacketId, reason: DropReason) {
        let pkt = *self.pool.get(id);
        if pkt.flags & transport::FLAG_TSQ != 0 && pkt.kind == PacketKind::Tcp {
            self.tcp_tx_complete(id);
        }
        self.drops.record(node.0, port, pkt.class, reason, pkt.size as u64);
        if pkt.flow != CONTROL_FLOW {
            let f = &mut self.flows[pkt.flow.idx()];
            f.packets_dropped += 1;
            f.bytes_dropped += pkt.flow_bytes();
            if self.hooks.dropped.has(Hooks::MULTICAST) {
                self.multicast_dropped(&pkt);
            }
        }
        self.pool.free(id);
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

    // ----------------------------------------------------------------- results

    /// Packets in queues, in transmission or on wires right now.
    pub fn packets_in_network(&self) -> u64 {
        let queued: usize = self.ports.iter().map(|p| p.queued_packets() + p.in_tx().is_some() as usize).sum();
        let wires: usize = self.channels.iter().map(|c| c.in_flight.len()).sum();
        (queued + wires + self.pipeline.held_packets() + self.host.held_packets() + self.egress.held_packets()) as u64
    }

    /// Runs to the end (if needed) and returns every table and the summary.
    ///
    /// # Panics
    ///
    /// As [`Simulation::run_until`], if the run fails on the way; after
    /// [`Simulation::stop`] it returns the results so far.
    pub fn finish(&mut self) -> RunOutput {
        self.run();
        let in_network = self.packets_in_network();
        let dropped = self.drops.packets;
        let flows_sent: u64 = self.flows.iter().map(|f| f.packets_sent).sum();
        let ports_ok = self
            .ports
            .iter()
            .all(|p| p.enqueued_packets == p.tx_packets + p.queued_packets() as u64 + p.in_tx().is_some() as u64);
        let conservation_ok = self.created_packets + self.mcast.replicated
            == self.delivered_packets + dropped + in_network
            && self.pool.live() as u64 == in_network
            && flows_sent + self.pfc.ctrl_created == self.created_packets
            && ports_ok;
        let mut buffer_in_use = 0u64;
        let mut buffer_ok = true;
        for n in &self.nodes {
            let queued: u64 = (0..n.num_ports).map(|l| self.ports[n.port(l).idx()].total_queued_bytes).sum();
            buffer_in_use += n.buffer.used_bytes();
            buffer_ok &= n.buffer.used_bytes() == queued;
            // A registered policy's books agree with the ports, port by port.
            if let BufferModel::Custom(m) = &n.buffer {
                let view = m.view();
                for l in 0..n.num_ports {
                    buffer_ok &= view.port_bytes(l as usize) == self.ports[n.port(l).idx()].total_queued_bytes;
                }
            }
        }
        let completed = self.flows.iter().filter(|f| f.completed()).count();

        let mut s = BTreeMap::new();
        let int = |v: u64| Value::Int(v as i64);
        s.insert("scenario".into(), Value::Str(self.name.clone()));
        s.insert("seed".into(), int(self.seed));
        s.insert("sim_time_ps".into(), int(self.now.0));
        s.insert("sim_time_s".into(), Value::Float(self.now.as_secs_f64()));
        s.insert("duration_s".into(), Value::Float(self.duration.as_secs_f64()));
        s.insert("events".into(), int(self.events));
        s.insert("packets_created".into(), int(self.created_packets));
        s.insert("packets_delivered".into(), int(self.delivered_packets));
        s.insert("packets_dropped".into(), int(dropped));
        s.insert("packets_in_network".into(), int(in_network));
        s.insert("bytes_created".into(), int(self.created_bytes));
        s.insert("bytes_delivered".into(), int(self.delivered_bytes));
        s.insert("bytes_dropped".into(), int(self.drops.bytes));
        s.insert("conservation_ok".into(), Value::Bool(conservation_ok));
        s.insert("buffer_accounting_ok".into(), Value::Bool(buffer_ok));
        s.insert("buffer_bytes_in_use".into(), int(buffer_in_use));
        s.insert("drained".into(), Value::Bool(in_network == 0));
        s.insert("flows_total".into(), int(self.flows.len() as u64));
        s.insert("flows_completed".into(), int(completed as u64));
        s.insert("flows_incomplete".into(), int((self.flows.len() - completed) as u64));
        s.insert("flows_lossy".into(), int(self.flows.iter().filter(|f| f.status() == 1).count() as u64));
        // Draining was cut short: the time cap (duration + drain_limit) came
        // with events still pending (flows unfinished or packets in flight).
        s.insert("drain_limit_reached".into(), Value::Bool(self.capped && self.end_cap > self.duration));
        s.insert("peak_packets_alive".into(), int(self.pool.capacity_used() as u64));
        s.insert("nodes".into(), int(self.nodes.len() as u64));
        s.insert("links".into(), int(self.channels.len() as u64 / 2));

        let mut tables = BTreeMap::new();
        tables.insert("nodes".to_string(), self.nodes_table());
        tables.insert("flows".to_string(), self.flows_table());
        tables.insert("queues".to_string(), std::mem::take(&mut self.samples).into_table());
        tables.insert("drops".to_string(), self.drops.to_table());
        tables.insert("links".to_string(), self.links_table());
        self.fabric_outputs(&mut tables, &mut s);
        self.pfc_outputs(&mut tables, &mut s);
        self.pipeline_outputs(&mut tables, &mut s);
        self.arbitration_outputs(&mut tables);
        self.multicast_outputs(&mut tables, &mut s);
        self.power_outputs(&mut tables, &mut s);
        self.broadcast_outputs(&mut tables);
        self.roce_summary(&mut s);
        self.host_outputs(&mut tables, &mut s);
        self.egress_outputs(&mut tables, &mut s);
        self.app_outputs(&mut tables, &mut s);
        self.tcp_receiver_outputs(&mut tables);
        self.capture_outputs(&mut tables);
        self.packet_latency_outputs(&mut tables, &mut s);
        self.tcp_trace_outputs(&mut tables, &mut s);
        let throughput = std::mem::take(&mut self.throughput);
        tables.insert("throughput".to_string(), throughput.into_table(&self.flows));
        let ends: Vec<(u32, u32, u32)> = self
            .channels
            .iter()
            .map(|c| (c.from_node.0, self.ports[c.from_port.idx()].local as u32, c.to_node.0))
            .collect();
        tables.insert("carried_links".to_string(), self.carried.links_table(&ends));
        tables.insert("carried_flows".to_string(), self.carried.flows_table(&self.flows));
        tables.insert("latency_hist".to_string(), self.latency_table());
        RunOutput { summary: s, node_names: self.nodes.iter().map(|n| n.name.clone()).collect(), tables }
    }

    fn nodes_table(&self) -> Table {
        let mut t = Table::default();
        let n = self.nodes.len() as u32;
        t.push("id", Column::U32((0..n).collect()));
        t.push(
            "name",
            Column::Cat { codes: (0..n).collect(), labels: self.nodes.iter().map(|x| x.name.clone()).collect() },
        );
        t.push(
            "kind",
            Column::Cat {
                codes: (0..n)
                    .map(|i| {
                        if self.is_broadcast(i) {
                            2
                        } else {
                            (self.nodes[i as usize].kind == NodeKind::Switch) as u32
                        }
                    })
                    .collect(),
                labels: vec!["host".into(), "switch".into(), "broadcast".into()],
            },
        );
        t.push("ports", Column::U32(self.nodes.iter().map(|x| x.num_ports as u32).collect()));
        t.push("latency_ps", Column::U64(self.nodes.iter().map(|x| x.latency.0).collect()));
        t
    }

    fn flows_table(&self) -> Table {
        let f = &self.flows;
        let mut t = Table::default();
        let opt = |c: bool, v: u64| if c { v as i64 } else { -1 };
        t.push("flow_id", Column::U32((0..f.len() as u32).collect()));
        t.push("name", Column::Cat { codes: f.iter().map(|x| x.name).collect(), labels: self.flow_names.clone() });
        t.push(
            "kind",
            Column::Cat {
                codes: f.iter().map(|x| x.kind.code()).collect(),
                labels: FlowKind::ALL.iter().map(|k| k.name().to_string()).collect(),
            },
        );
        t.push("src", Column::U32(f.iter().map(|x| x.src).collect()));
        t.push("dst", Column::U32(f.iter().map(|x| x.dst).collect()));
        t.push("class", Column::U8(f.iter().map(|x| x.class).collect()));
        t.push("start_ps", Column::U64(f.iter().map(|x| x.start_ps).collect()));
        t.push("end_ps", Column::I64(f.iter().map(|x| opt(x.packets_delivered > 0, x.last_delivery_ps)).collect()));
        t.push("packets_sent", Column::U64(f.iter().map(|x| x.packets_sent).collect()));
        t.push("bytes_sent", Column::U64(f.iter().map(|x| x.bytes_sent).collect()));
        t.push("packets_delivered", Column::U64(f.iter().map(|x| x.packets_delivered).collect()));
        t.push("bytes_delivered", Column::U64(f.iter().map(|x| x.bytes_delivered).collect()));
        t.push("packets_dropped", Column::U64(f.iter().map(|x| x.packets_dropped).collect()));
        t.push("bytes_dropped", Column::U64(f.iter().map(|x| x.bytes_dropped).collect()));
        t.push("completed", Column::Bool(f.iter().map(|x| x.completed()).collect()));
        t.push(
            "status",
            Column::Cat {
                codes: f.iter().map(|x| x.status()).collect(),
                labels: crate::stats::FLOW_STATUS.iter().map(|s| s.to_string()).collect(),
            },
        );
        t.push(
            "loss_ratio",
            Column::F64(
                f.iter()
                    .map(|x| if x.packets_sent > 0 { x.packets_dropped as f64 / x.packets_sent as f64 } else { 0.0 })
                    .collect(),
            ),
        );
        t.push("fct_ps", Column::I64(f.iter().map(|x| x.fct_ps().map_or(-1, |v| v as i64)).collect()));
        t.push("reordered_packets", Column::U64(f.iter().map(|x| x.reorder.packets).collect()));
        t.push(
            "reorder_distance_max",
            Column::I64(f.iter().map(|x| opt(x.reorder.packets > 0, x.reorder.distance_max as u64)).collect()),
        );
        t.push(
            "reorder_distance_mean",
            Column::F64(
                f.iter()
                    .map(|x| {
                        let r = &x.reorder;
                        if r.packets > 0 {
                            r.distance_sum as f64 / r.packets as f64
                        } else {
                            f64::NAN
                        }
                    })
                    .collect(),
            ),
        );
        t.push(
            "latency_mean_ps",
            Column::F64(
                f.iter()
                    .map(|x| {
                        let n = x.latency.total();
                        if n > 0 {
                            x.latency_sum_ps as f64 / n as f64
                        } else {
                            f64::NAN
                        }
                    })
                    .collect(),
            ),
        );
        t.push("latency_min_ps", Column::I64(f.iter().map(|x| x.latency.min().map_or(-1, |v| v as i64)).collect()));
        for (name, q) in [("latency_p50_ps", 0.5), ("latency_p99_ps", 0.99), ("latency_p999_ps", 0.999)] {
            t.push(name, Column::I64(f.iter().map(|x| x.latency.quantile(q).map_or(-1, |v| v as i64)).collect()));
        }
        t.push("latency_max_ps", Column::I64(f.iter().map(|x| x.latency.max().map_or(-1, |v| v as i64)).collect()));
        self.tcp_flow_columns(&mut t);
        self.roce_flow_columns(&mut t);
        t
    }

    /// Per flow, the non-empty buckets of its one-way latency histogram
    /// (see `histogram.rs`): `[low_ps, high_ps)` and the packets in it.
    fn latency_table(&self) -> Table {
        let mut rows: Vec<(u32, u8, u64, u64, u64)> = Vec::new();
        for (i, f) in self.flows.iter().enumerate() {
            rows.extend(f.latency.buckets().map(|(lo, hi, n)| (i as u32, f.class, lo, hi, n)));
        }
        let mut t = Table::default();
        t.push("flow_id", Column::U32(rows.iter().map(|r| r.0).collect()));
        t.push("class", Column::U8(rows.iter().map(|r| r.1).collect()));
        t.push("low_ps", Column::U64(rows.iter().map(|r| r.2).collect()));
        t.push("high_ps", Column::U64(rows.iter().map(|r| r.3).collect()));
        t.push("packets", Column::U64(rows.iter().map(|r| r.4).collect()));
        t
    }

    fn links_table(&self) -> Table {
        let c = &self.channels;
        let p = |ch: &Channel| &self.ports[ch.from_port.idx()];
        let span = self.now.0.max(1) as f64;
        let mut t = Table::default();
        t.push("link", Column::U32(c.iter().map(|x| x.link).collect()));
        t.push("src", Column::U32(c.iter().map(|x| x.from_node.0).collect()));
        t.push("src_port", Column::U32(c.iter().map(|x| p(x).local as u32).collect()));
        t.push("dst", Column::U32(c.iter().map(|x| x.to_node.0).collect()));
        t.push("dst_port", Column::U32(c.iter().map(|x| x.to_port_local as u32).collect()));
        t.push("rate_bps", Column::U64(c.iter().map(|x| x.rate.0).collect()));
        t.push("delay_ps", Column::U64(c.iter().map(|x| x.delay.0).collect()));
        t.push("packets", Column::U64(c.iter().map(|x| p(x).tx_packets).collect()));
        t.push("bytes", Column::U64(c.iter().map(|x| p(x).tx_bytes).collect()));
        t.push(
            "utilization",
            Column::F64(
                c.iter()
                    .map(|x| {
                        let port = p(x);
                        let busy = x.rate.serialization_time(port.tx_bytes + port.tx_packets * self.overhead).0 as f64;
                        busy / span
                    })
                    .collect(),
            ),
        );
        t.push(
            "queue_delay_mean_ps",
            Column::F64(
                c.iter()
                    .map(|x| {
                        let port = p(x);
                        let started = port.tx_packets + port.in_tx().is_some() as u64;
                        if started > 0 {
                            port.queue_delay_sum_ps as f64 / started as f64
                        } else {
                            0.0
                        }
                    })
                    .collect(),
            ),
        );
        t.push("queue_high_water_bytes", Column::U64(c.iter().map(|x| p(x).high_water_bytes).collect()));
        t.push("dropped_packets", Column::U64(c.iter().map(|x| p(x).dropped_packets).collect()));
        t
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
