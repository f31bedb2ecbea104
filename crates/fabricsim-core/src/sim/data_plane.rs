//! The data plane: a packet's path through the world, one function per step.
//!
//! `create_packet` (into the pool, numbered for reordering) -> `inject` (a
//! host's datapath, or its NIC) -> `host_send` (the NIC's queue) -> `enqueue`
//! (route and admission by the node's buffer model, ECN, drops) ->
//! `start_next` (a port starts its next frame; the buffer releases it) ->
//! `on_tx_done` (onto the wire) -> `on_arrive` (the far node: a pipeline, a
//! host's datapath, `host_receive`, or `switch_forward` and its route) ->
//! `deliver` or `drop_packet`. The features that observe or alter a step are
//! hooked in through `sim/hooks.rs`.

use super::*;

impl Simulation {
    /// Allocates a packet made at its source node now and counts it as created
    /// (and as sent by its flow, unless it is a control frame).
    #[inline(always)]
    pub(super) fn create_packet(&mut self, mut pkt: Packet) -> PacketId {
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
    pub(super) fn inject(&mut self, node: NodeId, id: PacketId) {
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
    pub(super) fn nic_out(&mut self, node: NodeId, id: PacketId) {
        if let Some(d) = self.pipeline.at(node) {
            return self.pipeline_offer(d, id, LOCAL_PORT, crate::pipeline::Dir::Tx);
        }
        self.host_send(node, id);
    }

    /// Sends a packet of host `node` to the egress port its route picks.
    pub(super) fn host_send(&mut self, node: NodeId, id: PacketId) {
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
    pub(super) fn enqueue(
        &mut self,
        node: NodeId,
        out: u16,
        id: PacketId,
        ingress: Option<u16>,
        ingress_rate: Option<Rate>,
    ) {
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
        // push below reads anyway). A refused packet leaves any PFC signal
        // (shared model only) for the next admission or release.
        let (verdict, sig) = self.nodes[node.idx()].buffer.admit(AdmitRequest {
            in_port: ingress,
            out_port: out,
            class: pkt.class,
            bytes: pkt.size,
            flow: pkt.flow.0,
            now: self.now,
            ecn: pkt.ecn,
            queued: port.occupancy(pkt.class),
        });
        match verdict {
            Verdict::Admit => {}
            Verdict::Drop(reason) => {
                if self.trim_refused(node, out, id) {
                    // The header is offered in its own class; refused too, it is dropped.
                    return self.enqueue(node, out, id, ingress, ingress_rate);
                }
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
                        // The egress never ends before the last bit is in: a
                        // frame sent upstream before a rate change (an impaired
                        // link) may have come slower than its wire's rate now.
                        let end = eligible + port.tx_duration(pkt.size as u64 + self.overhead);
                        if port.free_at <= eligible && end >= self.now {
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
    pub(super) fn refuse(&mut self, node: NodeId, out: u16, pid: PortId, id: PacketId, reason: DropReason) {
        self.ports[pid.idx()].dropped_packets += 1;
        self.drop_packet(node, out as u32, id, reason);
    }

    /// Starts transmitting the next queued packet of `pid` at time `at`.
    pub(super) fn start_next(&mut self, pid: PortId, at: SimTime) {
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
        let port = &self.ports[pid.idx()];
        let sig = self.nodes[node.idx()].buffer.release(size, || AdmitRequest {
            in_port: if in_port == LOCAL_PORT { None } else { Some(in_port) },
            out_port: local,
            class,
            bytes: size,
            flow,
            now: at,
            ecn,
            queued: port.occupancy(class),
        });
        self.queue.push(end, Event::TxDone(pid));
        if let Some(sig) = sig {
            self.pfc_signal(node, sig);
        }
        let started = self.hooks.tx_started;
        if started.any() {
            if started.has(Hooks::ROCE_WAKE) && !self.roce.wait[pid.idx()].is_empty() {
                self.roce_wake(pid);
            }
            if started.has(Hooks::INT) {
                self.int_stamp(pid, id, at);
            }
            if started.has(Hooks::CAPTURE) {
                self.capture_tx(pid, id, at);
            }
        }
    }

    pub(super) fn on_tx_done(&mut self, pid: PortId) {
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

    pub(super) fn on_arrive(&mut self, cid: ChannelId) {
        let ch = &mut self.channels[cid.idx()];
        let (_, id) = ch.in_flight.pop_front().expect("Arrive on an empty channel");
        if let Some(&(next, _)) = ch.in_flight.front() {
            self.queue.push(next, Event::Arrive(cid));
        }
        let (node, ingress, rate) = (ch.to_node, ch.to_port_local, ch.rate);
        if ch.impaired {
            if let Some(reason) = self.wire_loss(cid, id) {
                self.drop_packet(node, ingress as u32, id, reason);
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
    pub(super) fn host_receive(&mut self, node: NodeId, ingress: u16, id: PacketId) {
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
                self.roce_arrive(id, &pkt);
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
    pub(super) fn switch_forward(&mut self, node: NodeId, ingress: u16, rate: Rate, id: PacketId) {
        let mtu = self.nodes[node.idx()].mtu;
        let pkt = self.pool.get_mut(id);
        if pkt.size > mtu || pkt.dst.0 & MCAST_TAG != 0 || pkt.ttl <= 1 {
            return self.switch_forward_special(node, ingress, rate, id);
        }
        pkt.ttl -= 1;
        let (dst, hash) = (pkt.dst, pkt.hash);
        match self.route(node, dst, hash) {
            Some(out) => self.enqueue(node, out, id, Some(ingress), Some(rate)),
            None => self.drop_packet(node, ingress as u32, id, DropReason::NoRoute),
        }
    }

    /// [`Simulation::switch_forward`] of a frame longer than the device's MTU
    /// or whose TTL runs out here (dropped), or of a multicast frame
    /// (replicated onto its tree ports).
    #[cold]
    #[inline(never)]
    pub(super) fn switch_forward_special(&mut self, node: NodeId, ingress: u16, rate: Rate, id: PacketId) {
        if self.pool.get(id).size > self.nodes[node.idx()].mtu {
            return self.drop_packet(node, ingress as u32, id, DropReason::FrameTooLong);
        }
        if self.pool.get(id).ttl <= 1 {
            return self.drop_packet(node, ingress as u32, id, DropReason::TtlExpired);
        }
        self.pool.get_mut(id).ttl -= 1;
        self.multicast_replicate(node, id, Some(ingress), Some(rate));
    }

    /// Delivers packet `id` at its destination; `pkt` is its content (the
    /// caller's copy, as the slot is freed here).
    #[inline(always)]
    pub(super) fn deliver(&mut self, id: PacketId, pkt: &Packet) {
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
    pub(super) fn drop_packet(&mut self, node: NodeId, port: u32, id: PacketId, reason: DropReason) {
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
}
