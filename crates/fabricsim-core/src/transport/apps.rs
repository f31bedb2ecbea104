//! Application descriptions for TCP traffic (resolved scenario form).
//!
//! Each struct repeats the `name`, `class` and `tcp` fields that all TCP
//! applications have (the scenario schema's `_TcpTraffic`). They are not
//! gathered in one `#[serde(flatten)]` struct on purpose: serde does not
//! support `flatten` together with `deny_unknown_fields`, and a misspelt field
//! must stay an error.

use super::tcp::TcpConfig;
use serde::{Deserialize, Serialize};

/// iperf3-like bulk transfer: `streams` parallel connections from each client
/// to the server, each sending `bytes` (or until `duration` has passed).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpBulkConfig {
    #[serde(default)]
    pub name: String,
    pub src: Vec<String>,
    pub dst: String,
    #[serde(default = "one")]
    pub streams: u32,
    #[serde(default)]
    pub bytes: Option<u64>,
    #[serde(default)]
    pub duration_ps: Option<u64>,
    #[serde(default)]
    pub start_ps: u64,
    #[serde(default)]
    pub class: u8,
    #[serde(default)]
    pub tcp: Option<TcpConfig>,
}

/// Incast: `client` asks every server for `response_bytes`; when all answers
/// of a round have arrived (plus `gap`), the next round starts; `rounds` rounds.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpIncastConfig {
    #[serde(default)]
    pub name: String,
    pub client: String,
    pub servers: Vec<String>,
    pub response_bytes: u64,
    #[serde(default = "one")]
    pub flows_per_server: u32,
    #[serde(default = "one")]
    pub rounds: u32,
    #[serde(default)]
    pub gap_ps: u64,
    #[serde(default)]
    pub start_ps: u64,
    #[serde(default)]
    pub class: u8,
    #[serde(default)]
    pub tcp: Option<TcpConfig>,
}

/// An explicit list of TCP flows.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpFlowsConfig {
    #[serde(default)]
    pub name: String,
    pub flows: Vec<TcpFlowSpec>,
    #[serde(default)]
    pub class: u8,
    #[serde(default)]
    pub tcp: Option<TcpConfig>,
}

/// One flow of a [`TcpFlowsConfig`].
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpFlowSpec {
    pub src: String,
    pub dst: String,
    pub bytes: u64,
    /// Earliest start; a flow with dependencies starts no earlier than this.
    #[serde(default)]
    pub start_ps: u64,
    /// Indices in `flows` of the flows it waits for: it starts once all of
    /// them have completed, `compute_ps` after the last one did
    /// (`sim/flow_deps.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<u32>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub compute_ps: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

fn one() -> u32 {
    1
}

/// iperf3-like bulk test: `instances` TCP streams from `src` to `dst`, each
/// sending for `duration`; instance `i` is pinned to core `i mod cores` at
/// both ends (when hosts have a CPU model). Reports each stream's goodput and
/// data packets per second over `[start + omit, start + duration]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Iperf3Config {
    #[serde(default)]
    pub name: String,
    pub src: String,
    pub dst: String,
    #[serde(default = "one")]
    pub instances: u32,
    pub duration_ps: u64,
    #[serde(default)]
    pub omit_ps: u64,
    #[serde(default)]
    pub start_ps: u64,
    #[serde(default)]
    pub class: u8,
    /// Pin instance `i` to core `i mod cores` (otherwise a core by flow hash).
    #[serde(default = "yes")]
    pub pin: bool,
    #[serde(default)]
    pub tcp: Option<TcpConfig>,
}

/// Transport of a ping-pong test.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PingPongProtocol {
    #[default]
    Udp,
    Tcp,
}

/// sockperf-like ping-pong: the client (`src`) sends a message of
/// `message_bytes` to the server (`dst`), which sends it back; the next
/// message leaves when the reply arrives (one outstanding), until `messages`
/// have been answered or `duration` has passed. One-way latency is half the
/// round trip, from the client's send call to its receive of the reply.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PingPongConfig {
    #[serde(default)]
    pub name: String,
    pub src: String,
    pub dst: String,
    #[serde(default)]
    pub protocol: PingPongProtocol,
    /// Payload bytes of a message (sockperf's `--msg-size`).
    pub message_bytes: u32,
    #[serde(default)]
    pub messages: Option<u64>,
    #[serde(default)]
    pub duration_ps: Option<u64>,
    #[serde(default)]
    pub start_ps: u64,
    /// A UDP message whose reply has not come back after this is counted lost.
    #[serde(default = "second")]
    pub timeout_ps: u64,
    /// Pause between a reply and the next message (0: at once).
    #[serde(default)]
    pub gap_ps: u64,
    #[serde(default)]
    pub class: u8,
    /// Core of the client and of the server (within their machines).
    #[serde(default)]
    pub core: u32,
    #[serde(default)]
    pub tcp: Option<TcpConfig>,
}

fn yes() -> bool {
    true
}

fn second() -> u64 {
    crate::units::PS_PER_SEC
}
