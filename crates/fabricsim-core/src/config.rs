//! The resolved scenario: plain data with integer units, deserialized from JSON.
//!
//! Field names end in their unit: `_ps` (picoseconds), `_bps` (bit/s), `_bytes`.
//! Unknown fields are rejected. Semantic checks (names, ranges, connectivity)
//! happen when the simulation is built and report the field path.
//!
//! Each model owns its configuration (the buffer models in `buffer/`, the
//! topology, forwarding, ECN, schedulers, PFC, shapers and multicast in
//! `network/`, UDP sources in `traffic/`, TCP and RoCE in `transport/`, host
//! datapaths in `host/`, pipelines in `pipeline/`, what is measured in
//! `stats.rs`); this module only assembles them into the scenario, the
//! network's switch and host sections and the list of traffic entries. It
//! imports the models and nothing above them (`tests/layering.rs`).

use crate::buffer::BufferConfig;
use crate::error::ConfigError;
use crate::host::egress::EgressConfig;
use crate::host::HostModelConfig;
use crate::network::aqm::EcnConfig;
use crate::network::arbitration::ArbitrationConfig;
use crate::network::balance::LoadBalancingConfig;
use crate::network::multicast::MulticastConfig;
use crate::network::pfc::PfcConfig;
use crate::network::port::SchedulerConfig;
use crate::network::shaper::PortShaperConfig;
use crate::network::topology::TopologyConfig;
use crate::network::{DeviceKind, Forwarding};
use crate::pipeline::PipelineConfig;
use crate::power::PowerConfig;
use crate::stats::{FlowKind, StatsConfig};
use crate::traffic::{BurstConfig, UdpConfig};
use crate::transport::apps::{Iperf3Config, PingPongConfig, TcpBulkConfig, TcpFlowsConfig, TcpIncastConfig};
use crate::transport::roce::{RdmaFlowsConfig, RdmaWriteConfig, RoceConfig};
use crate::transport::tcp::TcpConfig;
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
    pub topology: TopologyConfig,
    #[serde(default)]
    pub traffic: Vec<TrafficConfig>,
    #[serde(default)]
    pub stats: StatsConfig,
    /// Defaults for TCP traffic; an entry may carry its own `tcp`.
    #[serde(default)]
    pub tcp: TcpConfig,
    /// Defaults for RoCEv2 traffic; an entry may carry its own `roce`.
    #[serde(default)]
    pub roce: RoceConfig,
    /// Multicast groups (see `network/multicast.rs`).
    #[serde(default)]
    pub multicast: MulticastConfig,
    /// Links that fail during the run (see `network/failure.rs`).
    #[serde(default)]
    pub failures: Vec<crate::network::failure::LinkFailureConfig>,
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
    pub kind: DeviceKind,
    #[serde(default)]
    pub forwarding: Forwarding,
    /// Cut-through: bytes of a frame the device receives before it starts
    /// forwarding it (the header it decides on).
    #[serde(default = "default_cut_through_bytes")]
    pub cut_through_bytes: u32,
    /// Largest frame the device forwards; longer frames are dropped (`frame_too_long`).
    #[serde(default)]
    pub mtu_bytes: Option<u32>,
    /// Power model of the device (see `power.rs`); `None`: not modelled.
    #[serde(default)]
    pub power: Option<PowerConfig>,
    #[serde(default = "default_switch_latency")]
    pub latency_ps: u64,
    #[serde(default)]
    pub buffer: BufferConfig,
    /// RED/ECN marking or WRED dropping per egress queue (see `network/aqm.rs`).
    #[serde(default)]
    pub ecn: Option<EcnConfig>,
    /// Egress scheduler of every port (see `network/port.rs`).
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    /// Priority flow control of lossless classes (see `network/pfc.rs`).
    #[serde(default)]
    pub pfc: Option<PfcConfig>,
    /// Ingress match-action pipeline (see `pipeline/`).
    #[serde(default)]
    pub pipeline: Option<PipelineConfig>,
    /// How egress ports divide their bandwidth among inputs (see `network/arbitration.rs`).
    #[serde(default)]
    pub arbitration: ArbitrationConfig,
    /// Egress ports shaped like an htb class (see `network/shaper.rs`).
    #[serde(default)]
    pub shaper: Option<PortShaperConfig>,
    /// How packets are spread over equal-cost next hops (see `network/balance.rs`).
    #[serde(default)]
    pub load_balancing: LoadBalancingConfig,
    /// Trimming of data packets the buffer has no room for (see `network/trimming.rs`).
    #[serde(default)]
    pub trimming: Option<crate::network::trimming::TrimmingConfig>,
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
            buffer: BufferConfig::default(),
            ecn: None,
            scheduler: Default::default(),
            pfc: None,
            pipeline: None,
            arbitration: Default::default(),
            shaper: None,
            load_balancing: LoadBalancingConfig::default(),
            trimming: None,
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
    /// Packets a host NIC's class queue holds before it refuses a UDP
    /// datagram: the device's `txqueuelen` (Linux: 1000), which each band of
    /// the default qdisc holds. TCP segments are never refused (TCP Small
    /// Queues and the kernel's retry on a full qdisc hold them back) and RoCE
    /// bypasses the qdisc. `u32::MAX`: no limit.
    #[serde(default = "default_txqueuelen")]
    pub txqueuelen: u32,
    /// Match-action pipeline of every host's NIC, on receive and transmit (see `pipeline/`).
    #[serde(default)]
    pub pipeline: Option<PipelineConfig>,
    /// CPU cores, software stack and NIC of every host (see `host/`); `None`: ideal hosts.
    #[serde(default)]
    pub model: Option<HostModelConfig>,
    /// Jitter, shaper and delay line below every host's stack (see `host/egress.rs`).
    #[serde(default)]
    pub egress: Option<EgressConfig>,
}

/// What one host sets differently from `network.host`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostOverrideConfig {
    /// The host's complete egress settings (replacing `network.host.egress`).
    #[serde(default)]
    pub egress: Option<EgressConfig>,
}

fn default_nic_buffer() -> u64 {
    1_000_000_000
}

fn default_txqueuelen() -> u32 {
    1000
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            latency_ps: 0,
            nic_buffer_bytes: default_nic_buffer(),
            txqueuelen: default_txqueuelen(),
            pipeline: None,
            model: None,
            egress: None,
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TrafficConfig {
    UdpCbr(UdpConfig),
    UdpPoisson(UdpConfig),
    Burst(BurstConfig),
    TcpBulk(TcpBulkConfig),
    TcpIncast(TcpIncastConfig),
    TcpFlows(TcpFlowsConfig),
    RdmaWrite(RdmaWriteConfig),
    RdmaFlows(RdmaFlowsConfig),
    Iperf3(Iperf3Config),
    PingPong(PingPongConfig),
}

impl TrafficConfig {
    /// The kind of the flows this entry creates.
    pub fn flow_kind(&self) -> FlowKind {
        match self {
            TrafficConfig::UdpCbr(_) => FlowKind::UdpCbr,
            TrafficConfig::UdpPoisson(_) => FlowKind::UdpPoisson,
            TrafficConfig::Burst(_) => FlowKind::Burst,
            TrafficConfig::TcpBulk(_) => FlowKind::TcpBulk,
            TrafficConfig::TcpIncast(_) => FlowKind::TcpIncast,
            TrafficConfig::TcpFlows(_) => FlowKind::TcpFlow,
            TrafficConfig::RdmaWrite(_) | TrafficConfig::RdmaFlows(_) => FlowKind::Rdma,
            TrafficConfig::Iperf3(_) => FlowKind::Iperf3,
            TrafficConfig::PingPong(_) => FlowKind::PingPong,
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
