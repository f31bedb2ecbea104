//! Multicast in the simulation: groups, distribution trees, replication,
//! per-member delivery statistics and the `multicast`, `multicast_members` and
//! `multicast_tree` tables (model: `network/multicast.rs`).
//!
//! **Counting.** A native frame is one created packet; every further copy a
//! device makes is a new packet in the pool, counted in `packets_replicated`
//! (summary) and in its flow. Conservation therefore reads
//! `created + replicated = delivered + dropped + in network`. Between
//! replication points a copy carries, in `Packet::ack` (unused by UDP), the
//! number of members below it in the tree, so that a dropped copy tells how
//! many member deliveries it took with it. Unicast emulation makes ordinary
//! unicast packets: one created packet per member.
//!
//! **Messages.** The frames a source sends at one instant (one frame, or one
//! copy per member) form a message, identified by its sequence number. A
//! message is settled once every member has received it or the copy meant for
//! it was dropped; settled messages give the delivery time to the last member.

use super::{Hooks, Simulation};
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::ids::{FlowId, NodeId, PacketId, SourceId};
use crate::network::multicast::{Replication, Tree, MCAST_TAG};
use crate::network::topology::{Graph, NodeKind};
use crate::packet::{Packet, PacketKind};
use crate::rng::mix64;
use crate::stats::{Column, DropReason, Table, Value};
use crate::units::{Rate, SimTime};
use std::collections::{BTreeMap, VecDeque};

/// `Source::multicast` of a unicast source.
pub(crate) const NO_SENDER: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct MemberStats {
    packets: u64,
    bytes: u64,
    latency_sum_ps: u128,
    latency_min_ps: u64,
    latency_max_ps: u64,
}

impl Default for MemberStats {
    fn default() -> Self {
        MemberStats { packets: 0, bytes: 0, latency_sum_ps: 0, latency_min_ps: u64::MAX, latency_max_ps: 0 }
    }
}

/// A message not yet settled.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// Member deliveries still outstanding (neither delivered nor dropped).
    remaining: u32,
    delivered: u32,
    created: SimTime,
    last: SimTime,
}

/// One multicast traffic source (one flow).
#[derive(Debug)]
struct Sender {
    flow: FlowId,
    group: u32,
    tree: u32,
    replication: Replication,
    /// Members other than the source, in group order.
    members: Vec<NodeId>,
    /// Per member slot of the group (the source's own slot stays empty).
    member_stats: Vec<MemberStats>,
    pending: VecDeque<Pending>,
    /// Sequence number of `pending[0]`.
    base_seq: u64,
    messages: u64,
    complete: u64,
    incomplete: u64,
    last_sum_ps: u128,
    last_min_ps: u64,
    last_max_ps: u64,
}

impl Sender {
    /// Accounts `count` member deliveries of message `seq` as done (delivered or lost).
    fn settle(&mut self, seq: u64, count: u32, delivered_at: Option<SimTime>) {
        let Some(i) = seq.checked_sub(self.base_seq) else { return };
        let Some(p) = self.pending.get_mut(i as usize) else { return };
        p.remaining = p.remaining.saturating_sub(count);
        if let Some(t) = delivered_at {
            p.delivered += 1;
            p.last = p.last.max(t);
        }
        let expected = self.members.len() as u32;
        while let Some(front) = self.pending.front() {
            if front.remaining > 0 {
                break;
            }
            let front = self.pending.pop_front().expect("front exists");
            self.base_seq += 1;
            if front.delivered == expected {
                let lat = (front.last - front.created).0;
                self.complete += 1;
                self.last_sum_ps += lat as u128;
                self.last_min_ps = self.last_min_ps.min(lat);
                self.last_max_ps = self.last_max_ps.max(lat);
            } else {
                self.incomplete += 1;
            }
        }
    }
}

/// Multicast state of the simulation.
#[derive(Debug, Default)]
pub struct MulticastState {
    /// Whether any traffic entry sends to a group (gates the per-packet hooks).
    pub active: bool,
    names: Vec<String>,
    members: Vec<Vec<NodeId>>,
    /// Per group: node -> member slot (`u32::MAX` if not a member).
    slot: Vec<Vec<u32>>,
    trees: Vec<Tree>,
    tree_index: BTreeMap<(u32, u32), u32>,
    senders: Vec<Sender>,
    /// Per flow: its sender, or [`NO_SENDER`].
    flow_sender: Vec<u32>,
    /// Copies made by devices (packets beyond the ones sources created).
    pub replicated: u64,
}

impl Simulation {
    /// Reads `multicast.groups` (before the traffic that refers to them).
    pub(super) fn setup_multicast(
        &mut self,
        sc: &Scenario,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        let n = self.nodes.len();
        for (g, group) in sc.multicast.groups.iter().enumerate() {
            let path = format!("multicast.groups[{g}]");
            if group.name.is_empty() {
                return Err(ConfigError::new(format!("{path}.name"), "must not be empty"));
            }
            if let Some(k) = self.mcast.names.iter().position(|x| *x == group.name) {
                return Err(ConfigError::new(
                    format!("{path}.name"),
                    format!("duplicate group name '{}' (also multicast.groups[{k}])", group.name),
                ));
            }
            if group.members.is_empty() {
                return Err(ConfigError::new(format!("{path}.members"), "must name at least one host"));
            }
            let mut slots = vec![u32::MAX; n];
            let mut members = Vec::with_capacity(group.members.len());
            for (j, m) in group.members.iter().enumerate() {
                let h = super::resolve_host(index, graph, m, &format!("{path}.members[{j}]"))?;
                if slots[h.idx()] != u32::MAX {
                    return Err(ConfigError::new(format!("{path}.members[{j}]"), format!("'{m}' is listed twice")));
                }
                slots[h.idx()] = members.len() as u32;
                members.push(h);
            }
            self.mcast.names.push(group.name.clone());
            self.mcast.members.push(members);
            self.mcast.slot.push(slots);
        }
        Ok(())
    }

    /// The index of group `name`, or an error at `field`.
    pub(super) fn multicast_group(&self, name: &str, field: &str) -> Result<u32, ConfigError> {
        match self.mcast.names.iter().position(|x| x == name) {
            Some(g) => Ok(g as u32),
            None if self.mcast.names.is_empty() => {
                Err(ConfigError::new(field, format!("unknown group '{name}' (no multicast.groups are defined)")))
            }
            None => Err(ConfigError::new(
                field,
                format!("unknown group '{name}' (groups: {})", self.mcast.names.join(", ")),
            )),
        }
    }

    /// Registers the multicast source of `flow` at `src` sending to group `g`;
    /// returns its sender index, the packet destination its frames carry, and
    /// the member listed as the flow's `dst`.
    pub(super) fn add_multicast_sender(
        &mut self,
        flow: FlowId,
        src: NodeId,
        g: u32,
        replication: Replication,
        field: &str,
    ) -> Result<(u32, NodeId, NodeId), ConfigError> {
        let members: Vec<NodeId> = self.mcast.members[g as usize].iter().copied().filter(|&m| m != src).collect();
        if members.is_empty() {
            return Err(ConfigError::new(
                field,
                format!("group '{}' has no member other than the source", self.mcast.names[g as usize]),
            ));
        }
        let tree = self.multicast_tree(g, src, field)?;
        let s = self.mcast.senders.len() as u32;
        let slots = self.mcast.members[g as usize].len();
        self.mcast.senders.push(Sender {
            flow,
            group: g,
            tree,
            replication,
            members: members.clone(),
            member_stats: vec![MemberStats::default(); slots],
            pending: VecDeque::new(),
            base_seq: 0,
            messages: 0,
            complete: 0,
            incomplete: 0,
            last_sum_ps: 0,
            last_min_ps: u64::MAX,
            last_max_ps: 0,
        });
        if self.mcast.flow_sender.len() <= flow.idx() {
            self.mcast.flow_sender.resize(flow.idx() + 1, NO_SENDER);
        }
        self.mcast.flow_sender[flow.idx()] = s;
        self.mcast.active = true;
        let dst = match replication {
            Replication::Native => NodeId(MCAST_TAG | tree),
            Replication::Unicast => members[0],
        };
        Ok((s, dst, members[0]))
    }

    /// The (shared) tree of group `g` from `src`, built on first use.
    fn multicast_tree(&mut self, g: u32, src: NodeId, field: &str) -> Result<u32, ConfigError> {
        if let Some(&t) = self.mcast.tree_index.get(&(g, src.0)) {
            return Ok(t);
        }
        if self.mcast.trees.len() as u32 >= MCAST_TAG {
            return Err(ConfigError::new(field, "too many multicast trees"));
        }
        // One hash per (group, source): the tree follows one ECMP choice per node.
        let hash = mix64(mix64(0x6d63_6173_7400 + g as u64) ^ mix64(src.0 as u64));
        let (nodes, ports, channels, routing) = (&self.nodes, &self.ports, &self.channels, &self.routing);
        let upstream = |u: NodeId| {
            let out = routing.route(u.idx(), src.idx(), hash)?;
            let ch = ports[nodes[u.idx()].port(out).idx()].channel;
            let parent = channels[ch.idx()].to_node;
            // Channels 2l and 2l + 1 are the two directions of link l.
            let back = channels[ch.idx() ^ 1].from_port;
            Some((parent, ports[back.idx()].local))
        };
        let tree = Tree::build(g, src, &self.mcast.members[g as usize], nodes.len(), upstream).map_err(|m| {
            ConfigError::new(field, format!("member '{}' has no route from the source", self.nodes[m.idx()].name))
        })?;
        let t = self.mcast.trees.len() as u32;
        self.mcast.trees.push(tree);
        self.mcast.tree_index.insert((g, src.0), t);
        Ok(t)
    }

    /// Sends the current message of multicast source `sid`.
    pub(super) fn multicast_send(&mut self, sid: SourceId) {
        let now = self.now;
        let s = &self.sources[sid.idx()];
        let sender_id = s.multicast as usize;
        let base = Packet {
            seq: s.sent,
            ecn: s.ecn,
            dscp: s.dscp,
            ..Packet::new(s.flow, s.src, s.dst, s.frame_bytes, PacketKind::Data, s.class, s.hash, now)
        };
        let sender = &mut self.mcast.senders[sender_id];
        let expected = sender.members.len() as u32;
        if sender.pending.is_empty() {
            sender.base_seq = base.seq;
        }
        sender.pending.push_back(Pending { remaining: expected, delivered: 0, created: now, last: now });
        sender.messages += 1;
        match sender.replication {
            Replication::Native => {
                let id = self.create_packet(Packet { ack: expected as u64, ..base });
                // Through the NIC's transmit pipeline, if any, then onto the tree.
                self.inject(base.src, id);
            }
            Replication::Unicast => {
                for k in 0..expected as usize {
                    let m = self.mcast.senders[sender_id].members[k];
                    // Each copy is its own datagram: a different destination address, so its own ECMP hash.
                    let pkt = Packet { dst: m, ack: 1, hash: mix64(base.hash ^ mix64(m.0 as u64)), ..base };
                    let id = self.create_packet(pkt);
                    self.inject(base.src, id);
                }
            }
        }
    }

    /// Replicates native multicast packet `id` at `node` onto the node's tree
    /// ports: each copy is offered to its egress port like any frame (buffer
    /// admission, queueing, cut-through).
    #[inline(never)]
    pub(super) fn multicast_replicate(
        &mut self,
        node: NodeId,
        id: PacketId,
        ingress: Option<u16>,
        ingress_rate: Option<Rate>,
    ) {
        let orig = *self.pool.get(id);
        let t = (orig.dst.0 & !MCAST_TAG) as usize;
        let (a, b) = self.mcast.trees[t].port_range(node);
        if a == b {
            self.drop_packet(node, ingress.unwrap_or(0) as u32, id, DropReason::NoRoute);
            return;
        }
        for i in a..b {
            let tree = &self.mcast.trees[t];
            let port = tree.port(i);
            let child = self.channels[self.ports[self.nodes[node.idx()].port(port).idx()].channel.idx()].to_node;
            let below = tree.members_below(child) as u64;
            let cid = if i == a {
                id
            } else {
                self.mcast.replicated += 1;
                self.flows[orig.flow.idx()].packets_replicated += 1;
                let cid = self.pool.alloc(orig);
                if self.hooks.copied.has(Hooks::PACKET_LATENCY) {
                    self.pkt_lat.copy(id, cid);
                }
                cid
            };
            let p = self.pool.get_mut(cid);
            p.ack = below;
            if self.nodes[child.idx()].kind == NodeKind::Host {
                p.dst = child;
            }
            self.enqueue(node, port, cid, ingress, ingress_rate);
        }
    }

    /// A multicast frame reached its member (called on delivery, before the packet is freed).
    pub(super) fn multicast_delivered(&mut self, pkt: &Packet, latency_ps: u64) {
        let Some(&s) = self.mcast.flow_sender.get(pkt.flow.idx()) else { return };
        if s == NO_SENDER {
            return;
        }
        let now = self.now;
        let sender = &mut self.mcast.senders[s as usize];
        let slot = self.mcast.slot[sender.group as usize][pkt.dst.idx()];
        if let Some(m) = sender.member_stats.get_mut(slot as usize) {
            m.packets += 1;
            m.bytes += pkt.size as u64;
            m.latency_sum_ps += latency_ps as u128;
            m.latency_min_ps = m.latency_min_ps.min(latency_ps);
            m.latency_max_ps = m.latency_max_ps.max(latency_ps);
        }
        sender.settle(pkt.seq, 1, Some(now));
    }

    /// A multicast frame was dropped: the members below it will not get this message.
    pub(super) fn multicast_dropped(&mut self, pkt: &Packet) {
        let Some(&s) = self.mcast.flow_sender.get(pkt.flow.idx()) else { return };
        if s == NO_SENDER {
            return;
        }
        let lost = pkt.ack.min(u32::MAX as u64) as u32;
        self.mcast.senders[s as usize].settle(pkt.seq, lost, None);
    }

    /// The `multicast`, `multicast_members` and `multicast_tree` tables and summary entries.
    pub(super) fn multicast_outputs(&mut self, tables: &mut BTreeMap<String, Table>, s: &mut BTreeMap<String, Value>) {
        let m = &self.mcast;
        let total_messages: u64 = m.senders.iter().map(|x| x.messages).sum();
        let complete: u64 = m.senders.iter().map(|x| x.complete).sum();
        s.insert("packets_replicated".into(), Value::Int(m.replicated as i64));
        s.insert("multicast_messages".into(), Value::Int(total_messages as i64));
        s.insert("multicast_messages_complete".into(), Value::Int(complete as i64));
        if m.senders.is_empty() && m.names.is_empty() {
            return;
        }
        let group_labels = m.names.clone();
        let cat = |codes: Vec<u32>| Column::Cat { codes, labels: group_labels.clone() };
        let opt = |c: bool, v: u64| if c { v as i64 } else { -1 };

        let f = &m.senders;
        let mut t = Table::default();
        t.push("flow_id", Column::U32(f.iter().map(|x| x.flow.0).collect()));
        t.push("group", cat(f.iter().map(|x| x.group).collect()));
        t.push("tree", Column::U32(f.iter().map(|x| x.tree).collect()));
        t.push("src", Column::U32(f.iter().map(|x| self.flows[x.flow.idx()].src).collect()));
        t.push(
            "replication",
            Column::Cat {
                codes: f.iter().map(|x| x.replication as u32).collect(),
                labels: vec!["native".into(), "unicast".into()],
            },
        );
        t.push("members", Column::U32(f.iter().map(|x| x.members.len() as u32).collect()));
        t.push("messages", Column::U64(f.iter().map(|x| x.messages).collect()));
        t.push("messages_complete", Column::U64(f.iter().map(|x| x.complete).collect()));
        t.push("messages_incomplete", Column::U64(f.iter().map(|x| x.incomplete).collect()));
        t.push("messages_in_flight", Column::U64(f.iter().map(|x| x.pending.len() as u64).collect()));
        t.push("frames_sent", Column::U64(f.iter().map(|x| self.flows[x.flow.idx()].packets_sent).collect()));
        t.push("copies", Column::U64(f.iter().map(|x| self.flows[x.flow.idx()].packets_replicated).collect()));
        t.push(
            "last_member_latency_mean_ps",
            Column::F64(
                f.iter()
                    .map(|x| if x.complete > 0 { x.last_sum_ps as f64 / x.complete as f64 } else { f64::NAN })
                    .collect(),
            ),
        );
        t.push(
            "last_member_latency_min_ps",
            Column::I64(f.iter().map(|x| opt(x.complete > 0, x.last_min_ps)).collect()),
        );
        t.push(
            "last_member_latency_max_ps",
            Column::I64(f.iter().map(|x| opt(x.complete > 0, x.last_max_ps)).collect()),
        );
        tables.insert("multicast".into(), t);

        let mut rows: Vec<(u32, u32, NodeId, MemberStats)> = Vec::new();
        for x in f {
            for (slot, &member) in m.members[x.group as usize].iter().enumerate() {
                if x.members.contains(&member) {
                    rows.push((x.flow.0, self.flows[x.flow.idx()].src, member, x.member_stats[slot]));
                }
            }
        }
        let mut t = Table::default();
        t.push("flow_id", Column::U32(rows.iter().map(|r| r.0).collect()));
        t.push("src", Column::U32(rows.iter().map(|r| r.1).collect()));
        t.push("dst", Column::U32(rows.iter().map(|r| r.2 .0).collect()));
        t.push("packets", Column::U64(rows.iter().map(|r| r.3.packets).collect()));
        t.push("bytes", Column::U64(rows.iter().map(|r| r.3.bytes).collect()));
        t.push(
            "latency_mean_ps",
            Column::F64(
                rows.iter()
                    .map(|r| if r.3.packets > 0 { r.3.latency_sum_ps as f64 / r.3.packets as f64 } else { f64::NAN })
                    .collect(),
            ),
        );
        t.push("latency_min_ps", Column::I64(rows.iter().map(|r| opt(r.3.packets > 0, r.3.latency_min_ps)).collect()));
        t.push("latency_max_ps", Column::I64(rows.iter().map(|r| opt(r.3.packets > 0, r.3.latency_max_ps)).collect()));
        tables.insert("multicast_members".into(), t);

        let mut edges: Vec<(u32, u32, NodeId, NodeId, u16, NodeId)> = Vec::new();
        for (i, tree) in m.trees.iter().enumerate() {
            for &(parent, port, child) in &tree.edges {
                edges.push((i as u32, tree.group, tree.source, parent, port, child));
            }
        }
        let mut t = Table::default();
        t.push("tree", Column::U32(edges.iter().map(|e| e.0).collect()));
        t.push("group", cat(edges.iter().map(|e| e.1).collect()));
        t.push("src", Column::U32(edges.iter().map(|e| e.2 .0).collect()));
        t.push("node", Column::U32(edges.iter().map(|e| e.3 .0).collect()));
        t.push("port", Column::U32(edges.iter().map(|e| e.4 as u32).collect()));
        t.push("dst", Column::U32(edges.iter().map(|e| e.5 .0).collect()));
        tables.insert("multicast_tree".into(), t);
    }
}
