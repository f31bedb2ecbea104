//! The resolved scenario: plain data with integer units, deserialized from JSON.
//!
//! Field names end in their unit: `_ps` (picoseconds), `_bps` (bit/s), `_bytes`.
//! Unknown fields are rejected. Semantic checks (names, ranges, connectivity)
//! happen when the simulation is built and report the field path.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub seed: u64,
    pub duration_ps: u64,
    #[serde(default = "default_true")]
    pub drain: bool,
    #[serde(default = "default_drain_limit")]
    pub drain_limit_ps: u64,
    #[serde(default)]
    pub network: NetworkConfig,
    pub topology: crate::network::topology::TopologyConfig,
    #[serde(default)]
    pub traffic: Vec<TrafficConfig>,
    #[serde(default)]
    pub stats: StatsConfig,
    /// Defaults for TCP traffic; an entry may carry its own `tcp`.
    #[serde(default)]
    pub tcp: crate::transport::tcp::TcpConfig,
    /// Defaults for RoCEv2 traffic; an entry may carry its own `roce`.
    #[serde(default)]
    pub roce: crate::transport::roce::RoceConfig,
    /// Multicast groups (see `network/multicast.rs`).
    #[serde(default)]
    pub multicast: crate::network::multicast::MulticastConfig,
}

fn default_true() -> bool {
    true
}
fn default_drain_limit() -> u64 {
    crate::units::PS_PER_SEC
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    #[serde(default = "default_overhead")]
    pub ethernet_overhead_bytes: u32,
    #[serde(default = "default_classes")]
    pub classes: u8,
    #[serde(default)]
    pub switch: SwitchConfig,
    #[serde(default)]
    pub host: HostConfig,
    #[serde(default)]
    pub switch_overrides: BTreeMap<String, SwitchConfig>,
    /// Per-host settings over `host` (by host name).
    #[serde(default)]
    pub host_overrides: BTreeMap<String, HostOverrideConfig>,
}

fn default_overhead() -> u32 {
    20
}
fn default_classes() -> u8 {
    8
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            ethernet_overhead_bytes: default_overhead(),
            classes: default_classes(),
            switch: SwitchConfig::default(),
            host: HostConfig::default(),
            switch_overrides: BTreeMap::new(),
            host_overrides: BTreeMap::new(),
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchConfig {
    #[serde(default)]
    pub kind: crate::network::DeviceKind,
    #[serde(default)]
    pub forwarding: crate::network::Forwarding,
    /// Cut-through: bytes of a frame the device receives before it starts
    /// forwarding it (the header it decides on).
    #[serde(default = "default_cut_through_bytes")]
    pub cut_through_bytes: u32,
    /// Largest frame the device forwards; longer frames are dropped (`frame_too_long`).
    #[serde(default)]
    pub mtu_bytes: Option<u32>,
    /// Power model of the device (see `power.rs`); `None`: not modelled.
    #[serde(default)]
    pub power: Option<crate::power::PowerConfig>,
    #[serde(default = "default_switch_latency")]
    pub latency_ps: u64,
    #[serde(default)]
    pub buffer: crate::buffer::BufferConfig,
    /// RED/ECN marking or WRED dropping per egress queue (see `network/aqm.rs`).
    #[serde(default)]
    pub ecn: Option<crate::network::aqm::EcnConfig>,
    /// Egress scheduler of every port (see `network/port.rs`).
    #[serde(default)]
    pub scheduler: crate::network::port::SchedulerConfig,
    /// Priority flow control of lossless classes (see `network/pfc.rs`).
    #[serde(default)]
    pub pfc: Option<crate::network::pfc::PfcConfig>,
    /// Ingress match-action pipeline (see `pipeline/`).
    #[serde(default)]
    pub pipeline: Option<crate::pipeline::PipelineConfig>,
    /// How egress ports divide their bandwidth among inputs (see `network/arbitration.rs`).
    #[serde(default)]
    pub arbitration: crate::network::arbitration::ArbitrationConfig,
    /// Egress ports shaped like an htb class (see `network/shaper.rs`).
    #[serde(default)]
    pub shaper: Option<crate::network::shaper::PortShaperConfig>,
}

fn default_switch_latency() -> u64 {
    500_000
}

/// Ethernet header, IPv4 header and the UDP/TCP ports (14 + 20 + 4 B), rounded
/// up to the 64 B minimum frame: what an L2/L3/L4 cut-through device needs.
fn default_cut_through_bytes() -> u32 {
    64
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            kind: Default::default(),
            forwarding: Default::default(),
            cut_through_bytes: default_cut_through_bytes(),
            mtu_bytes: None,
            power: None,
            latency_ps: default_switch_latency(),
            buffer: crate::buffer::BufferConfig::default(),
            ecn: None,
            scheduler: Default::default(),
            pfc: None,
            pipeline: None,
            arbitration: Default::default(),
            shaper: None,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    #[serde(default)]
    pub latency_ps: u64,
    #[serde(default = "default_nic_buffer")]
    pub nic_buffer_bytes: u64,
    /// Match-action pipeline of every host's NIC, on receive and transmit (see `pipeline/`).
    #[serde(default)]
    pub pipeline: Option<crate::pipeline::PipelineConfig>,
    /// CPU cores, software stack and NIC of every host (see `host/`); `None`: ideal hosts.
    #[serde(default)]
    pub model: Option<crate::host::HostModelConfig>,
    /// Jitter, shaper and delay line below every host's stack (see `host/egress.rs`).
    #[serde(default)]
    pub egress: Option<crate::host::egress::EgressConfig>,
}

/// What one host sets differently from `network.host`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostOverrideConfig {
    /// The host's complete egress settings (replacing `network.host.egress`).
    #[serde(default)]
    pub egress: Option<crate::host::egress::EgressConfig>,
}

fn default_nic_buffer() -> u64 {
    1_000_000_000
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig { latency_ps: 0, nic_buffer_bytes: default_nic_buffer(), pipeline: None, model: None, egress: None }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TrafficConfig {
    UdpCbr(UdpConfig),
    UdpPoisson(UdpConfig),
    Burst(BurstConfig),
    TcpBulk(crate::transport::apps::TcpBulkConfig),
    TcpIncast(crate::transport::apps::TcpIncastConfig),
    TcpFlows(crate::transport::apps::TcpFlowsConfig),
    RdmaWrite(crate::transport::roce::RdmaWriteConfig),
    Iperf3(crate::transport::apps::Iperf3Config),
    PingPong(crate::transport::apps::PingPongConfig),
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UdpConfig {
    #[serde(default)]
    pub name: String,
    pub src: Vec<String>,
    /// Destination host; empty when the entry sends to a multicast `group`.
    #[serde(default)]
    pub dst: String,
    /// Multicast group (`multicast.groups[].name`) instead of a host.
    #[serde(default)]
    pub group: Option<String>,
    /// How a group is reached: switches replicate, or the sender sends one copy per member.
    #[serde(default)]
    pub replication: crate::network::multicast::Replication,
    #[serde(default)]
    pub rate_bps: Option<u64>,
    #[serde(default)]
    pub load: Option<f64>,
    #[serde(default = "default_frame")]
    pub frame_bytes: u32,
    #[serde(default)]
    pub start_ps: u64,
    #[serde(default)]
    pub stop_ps: Option<u64>,
    #[serde(default)]
    pub max_frames: Option<u64>,
    #[serde(default)]
    pub class: u8,
    /// Send packets as ECN-capable (ECT(0)).
    #[serde(default)]
    pub ecn: bool,
    /// DSCP of the packets (0..63).
    #[serde(default)]
    pub dscp: u8,
    /// UDP destination port seen by match-action stages (default 5001).
    #[serde(default)]
    pub dst_port: Option<u16>,
    /// Each source starts at `start_ps` plus a uniform random offset below
    /// this (traffic generators' ports are not phase-locked); 0: all at once.
    #[serde(default)]
    pub start_jitter_ps: u64,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BurstConfig {
    #[serde(default)]
    pub name: String,
    pub src: Vec<String>,
    pub dst: String,
    pub frames: u64,
    #[serde(default = "default_frame")]
    pub frame_bytes: u32,
    #[serde(default)]
    pub start_ps: u64,
    #[serde(default)]
    pub class: u8,
    /// Send packets as ECN-capable (ECT(0)).
    #[serde(default)]
    pub ecn: bool,
    /// DSCP of the packets (0..63).
    #[serde(default)]
    pub dscp: u8,
    /// UDP destination port seen by match-action stages (default 5001).
    #[serde(default)]
    pub dst_port: Option<u16>,
    /// Each source starts at `start_ps` plus a uniform random offset below
    /// this (traffic generators' ports are not phase-locked); 0: all at once.
    #[serde(default)]
    pub start_jitter_ps: u64,
}

fn default_frame() -> u32 {
    1500
}

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

impl Scenario {
    /// Parses a resolved scenario from JSON text. Serde's message names the
    /// offending field and, for enums, the allowed variants.
    pub fn from_json(text: &str) -> Result<Scenario, ConfigError> {
        serde_json::from_str(text).map_err(|e| ConfigError::new("", format!("invalid scenario: {e}")))
    }

    /// The scenario as resolved JSON, every default filled in: the core's own
    /// defaults, which the tests compare with the scenario schema's.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a scenario always serializes")
    }
}
