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
    #[serde(default)]
    pub start_ps: u64,
}

fn one() -> u32 {
    1
}
