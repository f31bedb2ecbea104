//! Building the world: nodes, ports, wires, routes, buffers and every
//! feature's state from a resolved scenario, then the traffic sources.

use super::*;

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
                            Buffer::custom(&c.model, policy, port_rates[i].len(), classes)
                        }
                        builtin => Buffer::build(builtin, &port_rates[i], classes, &path)?,
                    };
                    let mtu = cfg.mtu_bytes.unwrap_or(u32::MAX);
                    (SimTime(cfg.latency_ps), cfg.forwarding, cfg.cut_through_bytes, mtu, b)
                }
                NodeKind::Host => {
                    let b = Buffer::build(
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
                    impaired: cfg.loss > 0.0,
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
            purge_floor: PURGE_AT_LEAST,
            purges: 0,
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
            int: Default::default(),
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
            failures: Default::default(),
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
        sim.setup_failures(sc, &graph)?;
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
    pub(super) fn add_traffic(
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

    pub(super) fn add_traffic_entry(
        &mut self,
        i: usize,
        t: &TrafficConfig,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        match t {
            TrafficConfig::UdpCbr(u) => self.add_udp_traffic(i, UdpEntry::Stream(u, FlowKind::UdpCbr), index, graph),
            TrafficConfig::UdpPoisson(u) => {
                self.add_udp_traffic(i, UdpEntry::Stream(u, FlowKind::UdpPoisson), index, graph)
            }
            TrafficConfig::Burst(b) => self.add_udp_traffic(i, UdpEntry::Burst(b), index, graph),
            TrafficConfig::TcpBulk(b) => self.add_bulk(i, b, index, graph),
            TrafficConfig::TcpIncast(c) => self.add_incast(i, c, index, graph),
            TrafficConfig::TcpFlows(f) => self.add_flow_list(i, f, index, graph),
            TrafficConfig::RdmaWrite(r) => self.add_rdma_write(i, r, index, graph),
            TrafficConfig::RdmaFlows(f) => self.add_rdma_flows(i, f, index, graph),
            TrafficConfig::Iperf3(c) => self.add_iperf3(i, c, index, graph),
            TrafficConfig::PingPong(c) => self.add_ping_pong(i, c, index, graph),
        }
    }

    /// Adds a `udp_cbr`, `udp_poisson` or `burst` entry.
    fn add_udp_traffic(
        &mut self,
        i: usize,
        t: UdpEntry<'_>,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        let kind = match t {
            UdpEntry::Stream(_, kind) => kind,
            UdpEntry::Burst(_) => FlowKind::Burst,
        };
        let path = format!("traffic[{i}]");
        let host = |name: &str, field: &str| resolve_host(index, graph, name, &format!("{path}.{field}"));
        let (name, srcs, dst, class, frame, dscp, dport, jitter) = match t {
            UdpEntry::Stream(u, _) => {
                (&u.name, &u.src, &u.dst, u.class, u.frame_bytes, u.dscp, u.dst_port, Some(u.start_jitter_ps))
            }
            UdpEntry::Burst(b) => {
                (&b.name, &b.src, &b.dst, b.class, b.frame_bytes, b.dscp, b.dst_port, b.start_jitter_ps)
            }
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
            UdpEntry::Stream(u, _) => u.group.as_deref().map(|g| (g, u.replication)),
            UdpEntry::Burst(_) => None,
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
                UdpEntry::Stream(u, _) => {
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
                UdpEntry::Burst(b) => {
                    if b.frames == 0 {
                        return Err(ConfigError::new(format!("{path}.frames"), "must be >= 1"));
                    }
                    (Source::constant(wire, nic_rate), b.start_ps, u64::MAX, b.frames)
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
                    UdpEntry::Stream(u, _) if u.ecn => ECN_ECT,
                    UdpEntry::Burst(b) if b.ecn => ECN_ECT,
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
}

/// A UDP traffic entry as `add_udp_traffic` reads it: a stream (constant or
/// Poisson, by its flow kind) or a burst.
#[derive(Clone, Copy)]
enum UdpEntry<'a> {
    Stream(&'a crate::traffic::UdpConfig, FlowKind),
    Burst(&'a crate::traffic::BurstConfig),
}
