//! Buffer admission (the MMU): which packets a device may store.
//!
//! Each device owns one [`BufferModel`]. When a packet is about to join an egress
//! queue, the device asks the model to [`admit`](BufferModel::admit) it; the
//! model charges the packet to its accounting or answers with a drop reason. When
//! the packet leaves the queue (starts transmission) the device
//! [`release`](BufferModel::release)s it. The built-in models are an enum,
//! one file each, so dispatch is a `match` the compiler can inline; a policy
//! from outside the core implements [`AdmissionPolicy`] and runs as
//! [`BufferModel::Custom`] inside a [`PolicyBuffer`] that keeps its books
//! (`policy.rs`, `docs/extending/buffer-policy.md`).

pub mod intelligent;
pub mod pfc;
pub mod policy;
pub mod shared;
pub mod static_buffer;
pub mod voq;

use crate::error::ConfigError;
use crate::stats::DropReason;
use crate::units::{Rate, SimTime};
pub use intelligent::{IntelligentBuffer, IntelligentConfig};
pub use policy::{AdmissionPolicy, BufferView, PolicyBuffer};
use serde::{Deserialize, Serialize};
pub use shared::{Reservations, SharedBuffer, SharedBufferConfig, SharedParams};
pub use static_buffer::{Occupancy, StaticBuffer, StaticLimits};
pub use voq::{VoqBuffer, VoqConfig};

/// Buffer (MMU) model of a device, chosen by `model`; each model's module
/// holds its configuration. A `model` that is not one of the built-in names
/// is a [`CustomBufferConfig`]: a policy registered by that name
/// (`extension::buffer_policy`) with its `params`.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum BufferConfig {
    Builtin(BuiltinBufferConfig),
    Custom(CustomBufferConfig),
}

/// A registered admission policy by name, with its parameters (checked by the
/// policy's factory when the world is built).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CustomBufferConfig {
    pub model: String,
    #[serde(default)]
    pub params: serde_json::Value,
}

/// Names of the built-in models, as written in `model`.
pub const BUILTIN_MODELS: [&str; 4] = ["static", "shared", "voq", "intelligent"];

impl<'de> Deserialize<'de> for BufferConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = serde_json::Value::deserialize(d)?;
        let builtin = match v.get("model") {
            None => true,
            Some(serde_json::Value::String(m)) => BUILTIN_MODELS.contains(&m.as_str()),
            Some(_) => return Err(D::Error::custom("buffer `model` must be a string")),
        };
        if builtin {
            serde_json::from_value(v).map(BufferConfig::Builtin).map_err(D::Error::custom)
        } else {
            serde_json::from_value(v).map(BufferConfig::Custom).map_err(D::Error::custom)
        }
    }
}

impl BufferConfig {
    /// A static buffer with these limits.
    pub fn static_limits(limits: StaticLimits) -> BufferConfig {
        BufferConfig::Builtin(BuiltinBufferConfig::Static(limits))
    }
}

/// The built-in models' configurations, chosen by `model`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum BuiltinBufferConfig {
    /// Static per-port drop-tail buffer, optionally with per-queue caps in
    /// bytes and in packets (see `buffer/static_buffer.rs`).
    Static(StaticLimits),
    /// Shared buffer with dynamic thresholds (see `buffer/shared.rs`).
    Shared(SharedBufferConfig),
    /// Deep-buffer VOQ switch (see `buffer/voq.rs`).
    Voq(VoqConfig),
    /// Dynamic thresholds plus elephant trap, AFD and DPP (see `buffer/intelligent.rs`).
    Intelligent(IntelligentConfig),
}

impl Default for BufferConfig {
    fn default() -> Self {
        BufferConfig::static_limits(StaticLimits { port_bytes: 1_000_000, queue_bytes: None, queue_packets: None })
    }
}

/// What the device knows about a packet asking for buffer.
#[derive(Clone, Copy, Debug)]
pub struct AdmitRequest {
    /// Local index of the port the packet arrived on (`None` for locally created packets).
    pub in_port: Option<u16>,
    /// Local index of the egress port.
    pub out_port: u16,
    pub class: u8,
    /// Frame size in bytes.
    pub bytes: u32,
    /// Flow id (the 5-tuple identity, for flow-aware models).
    pub flow: u32,
    /// Current time (for models with timers).
    pub now: SimTime,
    /// ECN codepoint of the packet.
    pub ecn: u8,
    /// The egress port's bytes queued and its class queue's bytes and packets
    /// (the static model's whole state per port; see [`Occupancy`]).
    pub queued: Occupancy,
}

/// The model's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Admit,
    Drop(DropReason),
    /// Admitted into queue `class` of the egress port (which may differ from
    /// the packet's class), CE-marked if `mark` (built-in models only).
    Steer {
        class: u8,
        mark: bool,
    },
    /// Admitted into its own queue and CE-marked if it is ECN-capable (an
    /// admission policy's mark; the `marks` table's reason `policy`).
    Mark,
}

/// The buffer models; see each variant's module for its rules.
#[derive(Debug)]
pub enum BufferModel {
    Static(StaticBuffer),
    Shared(SharedBuffer),
    Voq(VoqBuffer),
    Intelligent(Box<IntelligentBuffer>),
    /// A policy from outside the core, with the books kept for it.
    Custom(Box<PolicyBuffer>),
}

impl BufferModel {
    /// The model of a registered policy (built by its factory) for a device
    /// with `ports` ports and `classes` classes.
    pub fn custom(name: &str, policy: Box<dyn AdmissionPolicy>, ports: usize, classes: usize) -> Self {
        BufferModel::Custom(Box::new(PolicyBuffer::new(name, policy, ports, classes)))
    }

    /// Builds the model for a device with `ports` ports (of rates
    /// `port_rates`, bit/s) and `classes` classes.
    pub fn build(cfg: &BufferConfig, port_rates: &[u64], classes: usize, path: &str) -> Result<Self, ConfigError> {
        let ports = port_rates.len();
        let cfg = match cfg {
            BufferConfig::Builtin(c) => c,
            BufferConfig::Custom(c) => {
                return Err(ConfigError::new(
                    format!("{path}.model"),
                    format!("'{}' is a registered policy; it is built by its factory", c.model),
                ))
            }
        };
        match cfg {
            BuiltinBufferConfig::Static(limits) => {
                limits.validate(path)?;
                Ok(BufferModel::Static(StaticBuffer::new(ports, *limits)))
            }
            BuiltinBufferConfig::Shared(c) => {
                let p = c.params(port_rates, classes, path)?;
                Ok(BufferModel::Shared(SharedBuffer::new(ports, classes, &p)))
            }
            BuiltinBufferConfig::Voq(v) => Ok(BufferModel::Voq(VoqBuffer::new(v, ports, classes, path)?)),
            BuiltinBufferConfig::Intelligent(c) => {
                Ok(BufferModel::Intelligent(Box::new(IntelligentBuffer::new(c, ports, classes, 0, 0, path)?)))
            }
        }
    }

    /// Tells the model its node's random stream key and the rate of each of its
    /// egress ports; called once the device's ports exist.
    pub fn attach(&mut self, seed: u64, node: u32, rates: &[Rate]) {
        match self {
            BufferModel::Voq(m) => m.set_port_rates(rates),
            BufferModel::Intelligent(m) => {
                m.reseed(seed, node);
                m.set_port_rates(rates);
            }
            BufferModel::Custom(m) => m.attach(rates),
            _ => {}
        }
    }

    /// Turns on PFC ingress accounting (shared buffer only).
    pub fn enable_pfc(&mut self, pfc: pfc::PfcIngress) -> Result<(), String> {
        match self {
            BufferModel::Shared(m) => m.enable_pfc(pfc),
            other => Err(format!("PFC needs buffer model shared (this switch uses {})", other.name())),
        }
    }

    /// The PFC state, if PFC is on.
    pub fn pfc(&self) -> Option<&pfc::PfcIngress> {
        match self {
            BufferModel::Shared(m) => m.pfc.as_deref(),
            _ => None,
        }
    }

    /// The XOFF/XON decision of the last admit or release, if any.
    #[inline]
    pub fn take_pfc_signal(&mut self) -> Option<(u16, u8, bool)> {
        match self {
            BufferModel::Shared(m) => m.pfc.as_mut().and_then(|p| p.signal.take()),
            _ => None,
        }
    }

    /// The static model itself, if this is one.
    pub fn as_static_mut(&mut self) -> Option<&mut StaticBuffer> {
        match self {
            BufferModel::Static(m) => Some(m),
            _ => None,
        }
    }

    /// Whether egress ports must keep per-ingress sub-queues (VOQ devices).
    pub fn per_ingress_queues(&self) -> bool {
        matches!(self, BufferModel::Voq(_))
    }

    /// Buffer size in bytes (shared/VOQ/intelligent: the whole buffer; static: sum of the port buffers).
    pub fn capacity_bytes(&self) -> u64 {
        match self {
            BufferModel::Static(m) => m.capacity_bytes(),
            BufferModel::Shared(m) => m.capacity_bytes(),
            BufferModel::Voq(m) => m.capacity_bytes(),
            BufferModel::Intelligent(m) => m.base().capacity_bytes(),
            BufferModel::Custom(m) => m.capacity_bytes(),
        }
    }

    /// Occupancy of each service pool in bytes (cells x cell size), if the model has pools.
    pub fn pool_bytes(&self) -> Vec<u64> {
        match self {
            BufferModel::Shared(m) => m.pool_bytes(),
            BufferModel::Intelligent(m) => m.base().pool_bytes(),
            _ => Vec::new(),
        }
    }

    /// Decides whether the packet may be stored; charges it if admitted.
    #[inline]
    pub fn admit(&mut self, req: &AdmitRequest) -> Verdict {
        match self {
            BufferModel::Static(m) => m.admit(req),
            BufferModel::Shared(m) => m.admit(req),
            BufferModel::Voq(m) => m.admit(req),
            BufferModel::Intelligent(m) => m.admit(req),
            BufferModel::Custom(m) => m.admit(*req),
        }
    }

    /// Returns a previously admitted packet's buffer.
    #[inline]
    pub fn release(&mut self, req: &AdmitRequest) {
        match self {
            BufferModel::Static(m) => m.release(req),
            BufferModel::Shared(m) => m.release(req),
            BufferModel::Voq(m) => m.release(req),
            BufferModel::Intelligent(m) => m.release(req),
            BufferModel::Custom(m) => m.release(*req),
        }
    }

    /// Bytes currently charged to the model.
    pub fn used_bytes(&self) -> u64 {
        match self {
            BufferModel::Static(m) => m.used_bytes(),
            BufferModel::Shared(m) => m.used_bytes(),
            BufferModel::Voq(m) => m.used_bytes(),
            BufferModel::Intelligent(m) => m.used_bytes(),
            BufferModel::Custom(m) => m.used_bytes(),
        }
    }

    /// Cell size, for models that count their buffer in cells.
    pub fn cell_bytes(&self) -> Option<u32> {
        match self {
            BufferModel::Shared(m) => Some(m.cell_bytes()),
            BufferModel::Intelligent(m) => Some(m.base().cell_bytes()),
            _ => None,
        }
    }

    /// The most cells held at once, the whole buffer in cells and the cells
    /// set aside (minimums, headroom, fixed), for models that count cells.
    pub fn cell_counts(&self) -> Option<(u64, u64, u64)> {
        let m = match self {
            BufferModel::Shared(m) => m,
            BufferModel::Intelligent(m) => m.base(),
            _ => return None,
        };
        Some((m.high_water_cells(), m.capacity_cells(), m.reserved_cells_total()))
    }

    /// The most bytes charged to the model at once (its high-water mark).
    pub fn high_water_bytes(&self) -> u64 {
        match self {
            BufferModel::Static(m) => m.high_water_bytes(),
            BufferModel::Shared(m) => m.high_water_bytes(),
            BufferModel::Voq(m) => m.high_water_bytes(),
            BufferModel::Intelligent(m) => m.base().high_water_bytes(),
            BufferModel::Custom(m) => m.high_water_bytes(),
        }
    }

    /// Name of the model as written in scenarios.
    pub fn name(&self) -> &str {
        match self {
            BufferModel::Static(_) => "static",
            BufferModel::Shared(_) => "shared",
            BufferModel::Voq(_) => "voq",
            BufferModel::Intelligent(_) => "intelligent",
            BufferModel::Custom(m) => m.name(),
        }
    }
}
