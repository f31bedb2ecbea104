//! Statistics: drop reasons, per-flow records, columnar output tables and the
//! run summary.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What created a flow: the kind of its traffic entry, written in the `flows`
/// table's `kind` column (its code is the column's category index).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u32)]
pub enum FlowKind {
    #[default]
    UdpCbr = 0,
    UdpPoisson = 1,
    Burst = 2,
    TcpBulk = 3,
    TcpIncast = 4,
    TcpFlow = 5,
    /// RoCEv2 queue pairs (`rdma_write`).
    Rdma = 6,
    Iperf3 = 7,
    PingPong = 8,
}

impl FlowKind {
    /// Every kind, in code order.
    pub const ALL: [FlowKind; 9] = [
        FlowKind::UdpCbr,
        FlowKind::UdpPoisson,
        FlowKind::Burst,
        FlowKind::TcpBulk,
        FlowKind::TcpIncast,
        FlowKind::TcpFlow,
        FlowKind::Rdma,
        FlowKind::Iperf3,
        FlowKind::PingPong,
    ];

    /// The label in outputs, and the prefix of an unnamed entry's flow names.
    pub fn name(self) -> &'static str {
        match self {
            FlowKind::UdpCbr => "udp_cbr",
            FlowKind::UdpPoisson => "udp_poisson",
            FlowKind::Burst => "burst",
            FlowKind::TcpBulk => "tcp_bulk",
            FlowKind::TcpIncast => "tcp_incast",
            FlowKind::TcpFlow => "tcp_flow",
            FlowKind::Rdma => "rdma",
            FlowKind::Iperf3 => "iperf3",
            FlowKind::PingPong => "ping_pong",
        }
    }

    /// The category code in the `flows` table.
    pub fn code(self) -> u32 {
        self as u32
    }
}

/// Why a packet was dropped. Every drop in the core goes through one call that
/// takes one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum DropReason {
    /// The egress port's static buffer was full (tail drop).
    PortBufferFull = 0,
    /// The egress queue's own cap was reached (tail drop).
    QueueLimit = 1,
    /// The node has no route to the destination.
    NoRoute = 2,
    /// Shared buffer: the egress queue would exceed its dynamic threshold.
    DynamicThreshold = 3,
    /// Shared buffer: the ingress priority group would exceed its dynamic threshold.
    IngressThreshold = 4,
    /// Shared buffer: the service pool has no free cells for the packet.
    PoolExhausted = 5,
    /// WRED: random early drop by the queue's RED profile (`ecn.mode: drop`).
    Wred = 6,
    /// VOQ buffer: the virtual output queue reached its limit.
    VoqLimit = 7,
    /// Intelligent buffer: approximate fair drop of an elephant flow's packet.
    Afd = 8,
    /// The link lost the packet (its configured random loss rate).
    RandomLoss = 9,
    /// PFC: a lossless packet found its priority group's headroom full.
    HeadroomOverflow = 10,
    /// Match-action pipeline: the queue in front of a pipe was full.
    PipelineQueueFull = 11,
    /// Match-action pipeline: an ACL rule (or the ACL's default) denied the packet.
    AclDeny = 12,
    /// Match-action pipeline: a meter's colour action dropped the packet.
    MeterDrop = 13,
    /// Match-action pipeline: the connection table was full for a new connection.
    ConntrackFull = 14,
    /// Match-action pipeline: the packet's VNI (or its absence) matched no entry.
    VniMiss = 15,
    /// Match-action pipeline: no prefix of the LPM table matched.
    LpmMiss = 16,
    /// Arbitration: the packet's input sub-queue at the egress port was full.
    InputQueueLimit = 17,
    /// The frame is longer than the device's MTU (`mtu`).
    FrameTooLong = 18,
    /// Broadcast fabric: the receiving adapter's buffer was full.
    ReceiverBufferFull = 19,
    /// Host model: a core's receive ring (backlog) was full.
    HostBacklogFull = 20,
    /// Host model: a core's transmit queue was full.
    HostTxQueueFull = 21,
    /// The egress queue's packet-count cap was reached (tail drop).
    QueuePacketLimit = 22,
    /// A host egress shaper's queue was full (its leaf qdisc's limit).
    ShaperQueueFull = 23,
    /// A host egress delay line held its limit of packets (netem's `limit`).
    EgressDelayFull = 24,
    /// A host NIC's class queue held `txqueuelen` packets when a datagram came
    /// (Linux's default qdisc refusing a UDP datagram).
    NicQueueFull = 25,
    /// The frame was on, or arrived over, a link that is down.
    LinkDown = 26,
    /// The frame reached a switch with a TTL of 1 or less (it went round a
    /// routing loop; the ICMP time-exceeded answer is not modelled).
    TtlExpired = 27,
}

impl DropReason {
    pub const ALL: [DropReason; 28] = [
        DropReason::PortBufferFull,
        DropReason::QueueLimit,
        DropReason::NoRoute,
        DropReason::DynamicThreshold,
        DropReason::IngressThreshold,
        DropReason::PoolExhausted,
        DropReason::Wred,
        DropReason::VoqLimit,
        DropReason::Afd,
        DropReason::RandomLoss,
        DropReason::HeadroomOverflow,
        DropReason::PipelineQueueFull,
        DropReason::AclDeny,
        DropReason::MeterDrop,
        DropReason::ConntrackFull,
        DropReason::VniMiss,
        DropReason::LpmMiss,
        DropReason::InputQueueLimit,
        DropReason::FrameTooLong,
        DropReason::ReceiverBufferFull,
        DropReason::HostBacklogFull,
        DropReason::HostTxQueueFull,
        DropReason::QueuePacketLimit,
        DropReason::ShaperQueueFull,
        DropReason::EgressDelayFull,
        DropReason::NicQueueFull,
        DropReason::LinkDown,
        DropReason::TtlExpired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::PortBufferFull => "port_buffer_full",
            DropReason::QueueLimit => "queue_limit",
            DropReason::NoRoute => "no_route",
            DropReason::DynamicThreshold => "dynamic_threshold",
            DropReason::IngressThreshold => "ingress_threshold",
            DropReason::PoolExhausted => "pool_exhausted",
            DropReason::Wred => "wred",
            DropReason::VoqLimit => "voq_limit",
            DropReason::Afd => "afd",
            DropReason::RandomLoss => "random_loss",
            DropReason::HeadroomOverflow => "headroom_overflow",
            DropReason::PipelineQueueFull => "pipeline_queue_full",
            DropReason::AclDeny => "acl_deny",
            DropReason::MeterDrop => "meter_drop",
            DropReason::ConntrackFull => "conntrack_full",
            DropReason::VniMiss => "vni_miss",
            DropReason::LpmMiss => "lpm_miss",
            DropReason::InputQueueLimit => "input_queue_limit",
            DropReason::FrameTooLong => "frame_too_long",
            DropReason::ReceiverBufferFull => "receiver_buffer_full",
            DropReason::HostBacklogFull => "host_backlog_full",
            DropReason::HostTxQueueFull => "host_tx_queue_full",
            DropReason::QueuePacketLimit => "queue_packet_limit",
            DropReason::ShaperQueueFull => "shaper_queue_full",
            DropReason::EgressDelayFull => "egress_delay_full",
            DropReason::NicQueueFull => "nic_queue_full",
            DropReason::LinkDown => "link_down",
            DropReason::TtlExpired => "ttl_expired",
        }
    }
}

/// Per-flow counters kept while the simulation runs.
///
/// Laid out by cache line (`repr(C)`): what a delivery updates (counters,
/// latency sum, the source compared with the destination, then the latency
/// histogram's header, which keeps the exact min and max, and the highest
/// packet number delivered) and what a packet's creation updates (the next
/// packet number, packets and bytes sent) fill the first two lines; the
/// rest comes after.
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
pub struct FlowStats {
    // Line 0.
    /// One-way latency of the packets delivered in the flow's data direction
    /// (TCP ACKs and RoCE ACKs/CNPs back to the source are not counted;
    /// multicast copies count at every member): the sum here, count, exact
    /// min and max and log buckets in `latency`.
    pub latency_sum_ps: u128,
    pub packets_delivered: u64,
    pub bytes_delivered: u64,
    pub last_delivery_ps: u64,
    pub src: u32,
    pub dst: u32,
    // Bytes 48-103 (lines 0 and 1).
    pub latency: crate::histogram::LogHistogram,
    /// Reordering: the highest packet number delivered plus one, 0 before
    /// the first (read at every delivery; see [`Reordering`]).
    pub reorder_high: u32,
    /// Reordering: the number the source stamps on its next data packet.
    pub reorder_next: u32,
    // Bytes 112-127: what a creation updates (with `src` in line 0).
    pub packets_sent: u64,
    pub bytes_sent: u64,
    // Line 2.
    /// Multicast: copies made by devices from this flow's packets.
    pub packets_replicated: u64,
    pub packets_dropped: u64,
    pub bytes_dropped: u64,
    pub start_ps: u64,
    pub name: u32,
    pub kind: FlowKind,
    /// TCP: application bytes to transfer (`None`: until a deadline).
    pub size_bytes: Option<u64>,
    /// TCP: when the application completed (all bytes received, or the
    /// duration-limited sender finished).
    pub app_complete_ps: Option<u64>,
    pub class: u8,
    pub source_done: bool,
    /// A TCP flow (completion is decided by its application, not by packets).
    pub tcp: bool,
    /// Reordering at the receiver: what late packets there were.
    pub reorder: Reordering,
}

/// Reordering of a flow's data packets at its receiver.
///
/// Every packet the flow's source creates in the data direction (TCP ACK
/// segments aside) is numbered in creation order, 0, 1, 2, ...
/// ([`FlowStats::reorder_next`]); a retransmission is a new packet and gets
/// a new number. A packet delivered after one with a higher number is
/// *reordered*, and its *reorder distance* is the highest number delivered
/// before it ([`FlowStats::reorder_high`] minus one) minus its own: how many
/// packets created after it had overtaken it, counting up to the furthest
/// one (the sequence displacement of RFC 4737's reordering extent, in
/// packets).
#[derive(Clone, Copy, Debug, Default)]
pub struct Reordering {
    pub packets: u64,
    pub distance_sum: u64,
    pub distance_max: u32,
}

impl Reordering {
    /// Whether a packet carries a reordering number: every packet but a TCP
    /// ACK segment, whose `aux` holds a SACK edge.
    #[inline(always)]
    pub fn numbered(pkt: &crate::packet::Packet) -> bool {
        pkt.numbered()
    }
}

impl FlowStats {
    /// The number of the source's next data packet.
    #[inline(always)]
    pub fn reorder_stamp(&mut self) -> u32 {
        let n = self.reorder_next;
        self.reorder_next = n.wrapping_add(1);
        n
    }

    /// A data packet numbered `n` delivered (numbers compare as serial
    /// numbers, RFC 1982, so a flow may number more than 2^32 packets).
    #[inline(always)]
    pub fn reorder_delivered(&mut self, n: u32) {
        let next = n.wrapping_add(1);
        let behind = self.reorder_high.wrapping_sub(next) as i32;
        if self.reorder_high != 0 && behind > 0 {
            let r = &mut self.reorder;
            r.packets += 1;
            r.distance_sum += behind as u64;
            r.distance_max = r.distance_max.max(behind as u32);
        } else {
            self.reorder_high = next;
        }
    }
}

const _: () = assert!(
    std::mem::offset_of!(FlowStats, dst) + 4 <= 64,
    "a delivery reads src and dst in the flow's first cache line"
);
const _: () = assert!(
    std::mem::offset_of!(FlowStats, latency) + std::mem::size_of::<crate::histogram::LogHistogram>() <= 128,
    "a delivery's latency histogram stays in the flow's first two cache lines"
);
const _: () = assert!(
    std::mem::offset_of!(FlowStats, bytes_sent) + 8 <= 128,
    "a packet's creation counts in the flow's first two cache lines"
);
const _: () = assert!(std::mem::size_of::<FlowStats>() == 256, "a flow's state is four cache lines");

impl FlowStats {
    pub fn in_network(&self) -> u64 {
        self.packets_sent + self.packets_replicated - self.packets_delivered - self.packets_dropped
    }

    /// A flow is complete once its source has stopped and none of its packets
    /// remains in the network.
    pub fn completed(&self) -> bool {
        if self.tcp {
            self.app_complete_ps.is_some()
        } else {
            self.source_done && self.in_network() == 0
        }
    }

    /// What became of the flow: 0 `complete`; 1 `lossy` (a UDP or burst flow
    /// that finished with packets lost); 2 `incomplete` (not finished when the
    /// run ended).
    pub fn status(&self) -> u32 {
        if !self.completed() {
            2
        } else if !self.tcp && self.packets_dropped > 0 {
            1
        } else {
            0
        }
    }

    /// Flow completion time: UDP, last delivery minus start once complete; TCP,
    /// application completion minus start.
    pub fn fct_ps(&self) -> Option<u64> {
        if self.tcp {
            self.app_complete_ps.map(|t| t.saturating_sub(self.start_ps))
        } else if self.completed() && self.packets_delivered > 0 {
            Some(self.last_delivery_ps.saturating_sub(self.start_ps))
        } else {
            None
        }
    }
}

/// Labels of [`FlowStats::status`].
pub const FLOW_STATUS: [&str; 3] = ["complete", "lossy", "incomplete"];

/// One output column.
#[derive(Clone, Debug)]
pub enum Column {
    U8(Vec<u8>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    /// Categorical strings: codes into `labels`.
    Cat {
        codes: Vec<u32>,
        labels: Vec<String>,
    },
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::U8(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::U64(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Bool(v) => v.len(),
            Column::Cat { codes, .. } => codes.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A named table of equal-length columns.
#[derive(Clone, Debug, Default)]
pub struct Table {
    pub columns: Vec<(String, Column)>,
}

impl Table {
    pub fn push(&mut self, name: &str, col: Column) {
        debug_assert!(self.columns.first().map_or(true, |(_, c)| c.len() == col.len()));
        self.columns.push((name.to_string(), col));
    }

    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }
}

/// A scalar in the run summary.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

/// Everything a run produces.
#[derive(Clone, Debug, Default)]
pub struct RunOutput {
    pub summary: BTreeMap<String, Value>,
    pub node_names: Vec<String>,
    /// `nodes`, `flows`, `queues`, `drops`, `links`, `throughput`, `marks`,
    /// `pools`, `buffers`, `queue_peaks` and `pauses`.
    pub tables: BTreeMap<String, Table>,
}

/// Sampled queue occupancy, stored column-wise while the run goes on.
#[derive(Clone, Debug, Default)]
pub struct QueueSamples {
    pub time_ps: Vec<u64>,
    pub node: Vec<u32>,
    pub port: Vec<u32>,
    pub class: Vec<u8>,
    pub bytes: Vec<u64>,
    pub packets: Vec<u64>,
}

impl QueueSamples {
    pub fn push(&mut self, t: u64, node: u32, port: u32, class: u8, bytes: u64, packets: u64) {
        self.time_ps.push(t);
        self.node.push(node);
        self.port.push(port);
        self.class.push(class);
        self.bytes.push(bytes);
        self.packets.push(packets);
    }

    pub fn into_table(self) -> Table {
        let mut t = Table::default();
        t.push("time_ps", Column::U64(self.time_ps));
        t.push("node", Column::U32(self.node));
        t.push("port", Column::U32(self.port));
        t.push("class", Column::U8(self.class));
        t.push("bytes", Column::U64(self.bytes));
        t.push("packets", Column::U64(self.packets));
        t
    }
}

/// Drop counters keyed by (node, local port, class, reason), in key order.
#[derive(Clone, Debug, Default)]
pub struct DropCounters {
    map: BTreeMap<(u32, u32, u8, DropReason), (u64, u64)>,
    pub packets: u64,
    pub bytes: u64,
}

impl DropCounters {
    pub fn record(&mut self, node: u32, port: u32, class: u8, reason: DropReason, bytes: u64) {
        let e = self.map.entry((node, port, class, reason)).or_insert((0, 0));
        e.0 += 1;
        e.1 += bytes;
        self.packets += 1;
        self.bytes += bytes;
    }

    pub fn to_table(&self) -> Table {
        let mut t = Table::default();
        let labels: Vec<String> = DropReason::ALL.iter().map(|r| r.as_str().to_string()).collect();
        t.push("node", Column::U32(self.map.keys().map(|k| k.0).collect()));
        t.push("port", Column::U32(self.map.keys().map(|k| k.1).collect()));
        t.push("class", Column::U8(self.map.keys().map(|k| k.2).collect()));
        t.push("reason", Column::Cat { codes: self.map.keys().map(|k| k.3 as u32).collect(), labels });
        t.push("packets", Column::U64(self.map.values().map(|v| v.0).collect()));
        t.push("bytes", Column::U64(self.map.values().map(|v| v.1).collect()));
        t
    }
}

/// Resolved `stats`: what a run measures and how often.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StatsConfig {
    #[serde(default = "default_sample_interval")]
    pub queue_sample_interval_ps: u64,
    #[serde(default)]
    pub sample_hosts: bool,
    /// Width of the throughput time bins; 0 turns them off.
    #[serde(default = "default_throughput_interval")]
    pub throughput_interval_ps: u64,
    /// Width of the power bins (devices with a power model); 0 gives one bin for the run.
    #[serde(default = "default_throughput_interval")]
    pub power_interval_ps: u64,
    /// Width of the CPU busy-time bins of host models (`cpu` table); 0 turns them off.
    #[serde(default = "default_cpu_interval")]
    pub cpu_interval_ps: u64,
    /// Packet capture taps (`sim/pcap.rs`); none by default.
    #[serde(default)]
    pub pcap: Vec<PcapTapConfig>,
    /// Per-packet latency breakdown (`sim/packet_latency.rs`); off by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_latency: Option<PacketLatencyConfig>,
    /// Per-flow TCP sender state over time (`sim/tcp_trace.rs`); off by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_trace: Option<TcpTraceConfig>,
}

/// `stats.tcp_trace`: a row per ACK a traced TCP sender processes (or at
/// most one per `interval_ps` per flow), plus one at each retransmission
/// timeout and each entry into and exit from fast recovery.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpTraceConfig {
    /// Traffic entry names or flow ids; every TCP flow when empty.
    #[serde(default)]
    pub flows: Vec<FlowRef>,
    /// At most one ACK row per flow per interval; 0: a row at every ACK.
    #[serde(default)]
    pub interval_ps: u64,
    /// Rows kept at most; later ones are counted in `tcp_trace_missed`.
    #[serde(default = "default_tcp_trace_rows")]
    pub max_rows: u64,
}

/// A flow chosen by its traffic entry's name or by its flow id.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum FlowRef {
    Id(u32),
    Name(String),
}

fn default_tcp_trace_rows() -> u64 {
    1_000_000
}

/// `stats.packet_latency`: the first `max_packets` packets delivered of the
/// traffic entries named in `flows` (every entry when empty).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PacketLatencyConfig {
    #[serde(default = "default_traced_packets")]
    pub max_packets: u64,
    #[serde(default)]
    pub flows: Vec<String>,
}

fn default_traced_packets() -> u64 {
    10_000
}

/// A packet capture tap: the frames one port (or every port) of a node
/// transmits, receives or both.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PcapTapConfig {
    pub node: String,
    /// Local port; every port of the node if absent.
    #[serde(default)]
    pub port: Option<u16>,
    /// `tx`, `rx` or `both`.
    #[serde(default = "default_pcap_direction")]
    pub direction: String,
    /// Bytes of each frame kept in the file.
    #[serde(default = "default_snaplen")]
    pub snaplen: u32,
    /// Frames recorded at most; later ones are counted as missed.
    #[serde(default = "default_max_packets")]
    pub max_packets: u64,
}

fn default_pcap_direction() -> String {
    "both".to_string()
}

fn default_snaplen() -> u32 {
    262_144
}

fn default_max_packets() -> u64 {
    1_000_000
}

fn default_cpu_interval() -> u64 {
    100_000_000
}

fn default_throughput_interval() -> u64 {
    1_000_000_000
}

fn default_sample_interval() -> u64 {
    10_000_000
}

impl Default for StatsConfig {
    fn default() -> Self {
        StatsConfig {
            queue_sample_interval_ps: default_sample_interval(),
            sample_hosts: false,
            throughput_interval_ps: default_throughput_interval(),
            power_interval_ps: default_throughput_interval(),
            cpu_interval_ps: default_cpu_interval(),
            pcap: Vec::new(),
            packet_latency: None,
            tcp_trace: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FlowKind;

    #[test]
    fn flow_kinds_are_numbered_in_order_with_distinct_names() {
        for (i, k) in FlowKind::ALL.iter().enumerate() {
            assert_eq!(k.code() as usize, i, "{k:?}");
        }
        let mut names: Vec<_> = FlowKind::ALL.iter().map(|k| k.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FlowKind::ALL.len());
        assert_eq!(FlowKind::default(), FlowKind::UdpCbr);
    }
}
