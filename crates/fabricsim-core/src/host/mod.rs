//! The host datapath: CPU cores that run a host's software network stack, and
//! the NIC between the stack and the wire.
//!
//! ```text
//!  egress:  app ──> [stack on a core: syscall, tcp/udp, software stages, driver; GSO/TSO batches]
//!               ──> egress qdiscs (egress.rs: jitter, htb-like shaper, netem-like delay) ──> NIC: DMA (fixed + per byte)
//!               ──> NIC pipeline (tx, hardware offloads) ──> NIC port (line rate) ──> wire
//!  ingress: wire ──> NIC pipeline (rx) ──> DMA ──> rx ring of the steered core
//!               ──> interrupt (coalescing: usecs / frames) ──> NAPI poll on the core (budget, GRO)
//!               ──> [driver, software stages, tcp/udp, syscall] ──> socket / app
//! ```
//!
//! - `cpu.rs`: a core: its FIFO of work (transmit batches and receive polls),
//!   the receive rings it polls with interrupt moderation, busy-time bins.
//! - `stack.rs`: the software stages a core runs (kinds `tcp`, `udp`,
//!   `driver`, `syscall`, and every match-action stage kind of `pipeline/`,
//!   whose decisions are reused), their per-packet and per-byte costs in
//!   each direction, GRO merging.
//! - `egress.rs`: the qdisc chain below the stack: processing jitter, an
//!   htb-like shaper and a netem-like delay line (also for hosts without a model).
//! - `nic.rs`: the NIC's DMA delay lines and interrupt moderation settings.
//!
//! A host without a model (`network.host.model` absent) keeps the ideal
//! host: packets go straight between the transport and the NIC port, at no
//! cost per packet. The simulation glue is `sim/host.rs`.

pub mod cpu;
pub mod egress;
pub mod nic;
pub mod stack;

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

/// Which core processes a received packet.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Steering {
    /// Receive-side scaling: the NIC queue (and its core) by the packet's flow hash.
    #[default]
    Rss,
    /// The core of the application the flow belongs to (accelerated RFS, or a
    /// veth pair, where the receive runs on the sending CPU).
    App,
}

/// Resolved `network.host.model`: the host datapath of every host.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostModelConfig {
    /// CPU cores of each machine.
    #[serde(default = "one")]
    pub cores: u32,
    /// Share of each core's time the datapath gets, in parts per million
    /// (other load on the machine); service times are divided by it.
    #[serde(default = "million")]
    pub core_share_ppm: u32,
    #[serde(default)]
    pub rx_steering: Steering,
    /// Frames each receive ring (one per core) holds before it drops
    /// (`host_backlog_full`), like `netdev_max_backlog` or the ring size.
    #[serde(default = "default_backlog")]
    pub backlog_packets: u32,
    /// Packets a core's transmit queue holds before a new one is dropped
    /// (`host_tx_queue_full`).
    #[serde(default = "default_tx_queue")]
    pub tx_queue_packets: u32,
    /// Groups of hosts that are network namespaces of one machine: they share its cores.
    #[serde(default)]
    pub machines: Vec<Vec<String>>,
    /// Largest transmit batch (GSO/TSO skb) in bytes; 0: every segment alone.
    #[serde(default)]
    pub gso_bytes: u32,
    /// The NIC segments transmit batches (TSO): the driver sees one packet per batch.
    #[serde(default)]
    pub tso: bool,
    /// Largest GRO-merged receive skb in bytes; 0: no GRO.
    #[serde(default)]
    pub gro_bytes: u32,
    /// Frames a NAPI poll takes from its ring before it yields the core.
    #[serde(default = "default_budget")]
    pub napi_budget: u32,
    #[serde(default)]
    pub interrupt: nic::InterruptConfig,
    #[serde(default)]
    pub nic: nic::NicConfig,
    /// Bytes an application writes or reads per system call (iperf3's 128 KiB).
    #[serde(default = "default_message")]
    pub message_bytes: u64,
    /// The software stages, in order; each an object with a `kind`.
    #[serde(default)]
    pub stages: Vec<serde_json::Value>,
}

fn one() -> u32 {
    1
}
fn million() -> u32 {
    1_000_000
}
fn default_backlog() -> u32 {
    1000
}
fn default_tx_queue() -> u32 {
    1 << 20
}
fn default_budget() -> u32 {
    64
}
fn default_message() -> u64 {
    128 * 1024
}

impl HostModelConfig {
    /// Checks ranges; field paths start at `path`.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let err = |field: &str, msg: String| Err(ConfigError::new(format!("{path}.{field}"), msg));
        if !(1..=4096).contains(&self.cores) {
            return err("cores", format!("must be between 1 and 4096 (got {})", self.cores));
        }
        if self.core_share_ppm == 0 || self.core_share_ppm > 1_000_000 {
            return err("core_share", "must be > 0% and <= 100%".into());
        }
        if self.backlog_packets == 0 {
            return err("backlog", "must be >= 1 packet".into());
        }
        if self.tx_queue_packets == 0 {
            return err("tx_queue", "must be >= 1 packet".into());
        }
        if self.napi_budget == 0 {
            return err("napi_budget", "must be >= 1".into());
        }
        if self.message_bytes == 0 {
            return err("message_size", "must be > 0".into());
        }
        if self.tso && self.gso_bytes == 0 {
            return err("tso", "needs transmit batches (gso > 0)".into());
        }
        Ok(())
    }
}
