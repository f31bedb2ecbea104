//! Buffer admission (the MMU): which packets a device may store.
//!
//! Each device owns one [`Buffer`]: a [`BufferModel`] and the bytes it holds.
//! When a packet is about to join an egress queue, the device asks the buffer to
//! [`admit`](Buffer::admit) it; the model decides (and keeps whatever state its
//! rules need: cells, pools, VOQs, flow tables) and the buffer charges the
//! admitted bytes to its books (bytes held, high-water mark), the same way for
//! every model. When the packet leaves the queue (starts transmission) the
//! device [`release`](Buffer::release)s it. The built-in models are an enum,
//! one file each, so dispatch is a `match` the compiler can inline; a policy
//! from outside the core implements [`AdmissionPolicy`] and runs as
//! [`BufferModel::Custom`] inside a [`PolicyBuffer`] that keeps the per-queue
//! books a policy reads (`policy.rs`, `docs/extending/buffer-policy.md`).

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

/// An XOFF (`true`) or XON (`false`) decision for (ingress port, class).
pub type PfcSignal = (u16, u8, bool);

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

/// A device's buffer: its model and the books every model shares, the bytes
/// held now and at most. Only the buffer admits and releases, so the books
/// cannot differ from what the model was asked.
///
/// `repr(C)` with the books first: inside its node (at offset 16), the books,
/// the model's tag and a static model's limits share the node's first cache
/// line, which the hop reads anyway.
#[derive(Debug)]
#[repr(C)]
pub struct Buffer {
    used: u64,
    high_water: u64,
    model: BufferModel,
}

impl Buffer {
    /// A buffer of this model, empty.
    pub fn new(model: BufferModel) -> Buffer {
        Buffer { used: 0, high_water: 0, model }
    }

    /// The buffer of a built-in model (see [`BufferModel::build`]).
    pub fn build(cfg: &BufferConfig, port_rates: &[u64], classes: usize, path: &str) -> Result<Buffer, ConfigError> {
        BufferModel::build(cfg, port_rates, classes, path).map(Buffer::new)
    }

    /// The buffer of a registered policy (see [`BufferModel::custom`]).
    pub fn custom(name: &str, policy: Box<dyn AdmissionPolicy>, ports: usize, classes: usize) -> Buffer {
        Buffer::new(BufferModel::custom(name, policy, ports, classes))
    }

    /// The model, to read (its name, capacity, pools, PFC state).
    pub fn model(&self) -> &BufferModel {
        &self.model
    }

    /// The model, to configure before the run (attach, PFC, a drop reason).
    pub fn model_mut(&mut self) -> &mut BufferModel {
        &mut self.model
    }

    /// Asks the model whether the packet may be stored; charges its bytes if
    /// it is (admitted, steered or marked). Also answers the XOFF/XON decision
    /// the admission took (shared model with PFC only); a refused packet
    /// leaves any decision for the next admission or release.
    ///
    /// The static model (the default) is asked in line and reads only the
    /// queue's counters and the size; the other models are asked out of line,
    /// with the request by value.
    #[inline(always)]
    pub fn admit(&mut self, req: AdmitRequest) -> (Verdict, Option<PfcSignal>) {
        let (verdict, signal) = match &self.model {
            BufferModel::Static(m) => (m.admit(&req), None),
            _ => self.admit_by_model(req),
        };
        if !matches!(verdict, Verdict::Drop(_)) {
            self.used += req.bytes as u64;
            self.high_water = self.high_water.max(self.used);
        }
        (verdict, signal)
    }

    #[inline(never)]
    fn admit_by_model(&mut self, req: AdmitRequest) -> (Verdict, Option<PfcSignal>) {
        let req = &req;
        let verdict = match &mut self.model {
            BufferModel::Static(m) => StaticBuffer::admit(m, req),
            BufferModel::Shared(m) => m.admit(req),
            BufferModel::Voq(m) => m.admit(req, self.used),
            BufferModel::Intelligent(m) => m.admit(req),
            BufferModel::Custom(m) => m.admit(*req, self.used),
        };
        let signal = if matches!(verdict, Verdict::Drop(_)) { None } else { self.model.take_pfc_signal() };
        (verdict, signal)
    }

    /// Returns the bytes of a packet admitted earlier (`bytes`), then tells
    /// the model, with the request `request` builds (its `class` is the queue
    /// the packet was admitted to), and answers the XOFF/XON decision the
    /// release took. The static model keeps nothing to return, so the request
    /// is built only for the others.
    #[inline(always)]
    pub fn release(&mut self, bytes: u32, request: impl FnOnce() -> AdmitRequest) -> Option<PfcSignal> {
        self.used -= bytes as u64;
        if matches!(self.model, BufferModel::Static(_)) {
            None
        } else {
            self.release_by_model(request())
        }
    }

    /// [`Buffer::release`] with the request at hand (for driving a buffer
    /// outside a run, as tests do).
    pub fn release_request(&mut self, req: AdmitRequest) -> Option<PfcSignal> {
        self.release(req.bytes, || req)
    }

    #[inline(never)]
    fn release_by_model(&mut self, req: AdmitRequest) -> Option<PfcSignal> {
        let req = &req;
        match &mut self.model {
            BufferModel::Static(m) => m.release(req),
            BufferModel::Shared(m) => m.release(req),
            BufferModel::Voq(m) => m.release(req),
            BufferModel::Intelligent(m) => m.release(req),
            BufferModel::Custom(m) => m.release(*req, self.used),
        }
        self.model.take_pfc_signal()
    }

    /// Bytes held now.
    pub fn used_bytes(&self) -> u64 {
        self.used
    }

    /// The most bytes held at once (the high-water mark).
    pub fn high_water_bytes(&self) -> u64 {
        self.high_water
    }

    /// A registered policy's view of the books (`None` for the built-in models).
    pub fn policy_view(&self) -> Option<BufferView<'_>> {
        match &self.model {
            BufferModel::Custom(m) => Some(m.view(self.used)),
            _ => None,
        }
    }

    /// Whether the model's own state is back to empty (every cell, pool, VOQ
    /// and queue count at zero); checked with the books at the end of a run.
    pub fn model_settled(&self) -> bool {
        self.model.settled()
    }
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
    fn take_pfc_signal(&mut self) -> Option<PfcSignal> {
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

    /// Whether the model's own state is back to empty.
    fn settled(&self) -> bool {
        match self {
            BufferModel::Static(_) => true,
            BufferModel::Shared(m) => m.settled(),
            BufferModel::Voq(m) => m.settled(),
            BufferModel::Intelligent(m) => m.settled(),
            BufferModel::Custom(m) => m.settled(),
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
