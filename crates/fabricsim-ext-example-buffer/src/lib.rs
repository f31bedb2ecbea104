//! An ABM-like buffer admission policy (Addanki et al., "ABM: Active Buffer
//! Management in Datacenters", SIGCOMM 2022), written against the core's
//! [`AdmissionPolicy`] interface and registered by name (`abm`) from outside
//! the core.
//!
//! A packet joins queue `i` of priority (class) `p` only while the queue,
//! packet included, stays within
//!
//! ```text
//! T_i^p = alpha_p / n_p * (B - Q) * mu_i^p / b_i
//! ```
//!
//! - `B`: the buffer (`size`), `Q`: bytes held in all (the wrapper's books);
//! - `n_p`: queues of priority `p` that are congested, i.e. hold at least
//!   `congested_bytes` (at least 1: the queue asking counts itself);
//! - `mu_i^p / b_i`: the queue's drain rate over its port's line rate,
//!   measured from departures over windows of `drain_interval_ps` (1 while the
//!   queue is not congested; a congested queue that sent nothing over a whole
//!   window drains at 0 and admits nothing).
//!
//! With `scale_by_congested: false` and `drain_rate: false` it is Choudhury
//! and Hahne's dynamic threshold `alpha (B - Q)` over bytes.
//!
//! [`register`] adds it to the core's registry (`fabricsim_core::extension::buffer_policy`).

use fabricsim_core::buffer::{AdmissionPolicy, AdmitRequest, BufferView, Verdict};
use fabricsim_core::extension::buffer_policy::{self, BufferPolicyInfo, DeviceContext, ParamError, Params};
use fabricsim_core::stats::DropReason;
use fabricsim_core::units::{Rate, SimTime};
use serde_json::{json, Value};

/// The name scenarios use: `buffer: {model: abm, params: {...}}`.
pub const NAME: &str = "abm";

/// Drain-rate measurement of one queue.
#[derive(Clone, Copy, Debug)]
struct Drain {
    /// Start of the current window and bytes sent since.
    since: SimTime,
    bytes: u64,
    /// Drain rate over line rate of the last whole window (1 until measured).
    ratio: f64,
}

/// The policy's state for one switch.
#[derive(Clone, Debug)]
pub struct Abm {
    size: u64,
    alpha: Vec<f64>,
    congested_bytes: u64,
    drain_interval_ps: u64,
    scale_by_congested: bool,
    drain_rate: bool,
    classes: usize,
    rates: Vec<u64>,
    drain: Vec<Drain>,
    /// Per queue: counted as congested; per class: how many are.
    congested: Vec<bool>,
    n_congested: Vec<u32>,
}

impl Abm {
    /// A policy for `ports` ports and `classes` classes.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        size: u64,
        alpha: Vec<f64>,
        congested_bytes: u64,
        drain_interval_ps: u64,
        scale_by_congested: bool,
        drain_rate: bool,
        ports: usize,
        classes: usize,
    ) -> Abm {
        Abm {
            size,
            alpha,
            congested_bytes,
            drain_interval_ps,
            scale_by_congested,
            drain_rate,
            classes,
            rates: vec![0; ports],
            drain: vec![Drain { since: SimTime::ZERO, bytes: 0, ratio: 1.0 }; ports * classes],
            congested: vec![false; ports * classes],
            n_congested: vec![0; classes],
        }
    }

    /// The threshold of queue `(port, class)` in bytes at `now`, given the view.
    pub fn threshold(&self, port: usize, class: usize, now: SimTime, view: &BufferView<'_>) -> f64 {
        let q = port * self.classes + class;
        let free = view.capacity_bytes().saturating_sub(view.used_bytes()) as f64;
        let mut t = self.alpha[class] * free;
        if self.scale_by_congested {
            let mut n = self.n_congested[class];
            if !self.congested[q] {
                n += 1;
            }
            t /= n.max(1) as f64;
        }
        if self.drain_rate && self.congested[q] {
            t *= self.drain_ratio(q, port, now);
        }
        t
    }

    /// The queue's drain rate over its line rate: the current window's if it
    /// is already a whole window long, else the last window's.
    fn drain_ratio(&self, q: usize, port: usize, now: SimTime) -> f64 {
        let d = &self.drain[q];
        let elapsed = now.0.saturating_sub(d.since.0);
        if elapsed >= self.drain_interval_ps && self.rates[port] > 0 {
            ratio(d.bytes, elapsed, self.rates[port])
        } else {
            d.ratio
        }
    }

    fn set_congested(&mut self, q: usize, class: usize, bytes: u64, now: SimTime) {
        let c = bytes >= self.congested_bytes;
        if c != self.congested[q] {
            self.congested[q] = c;
            if c {
                self.n_congested[class] += 1;
                // A queue becoming congested starts measuring afresh.
                self.drain[q] = Drain { since: now, bytes: 0, ratio: 1.0 };
            } else {
                self.n_congested[class] -= 1;
            }
        }
    }

    /// Queues of class `class` counted as congested now.
    pub fn congested_queues(&self, class: usize) -> u32 {
        self.n_congested[class]
    }
}

/// `bytes` sent over `ps` on a port of `rate_bps`, as a fraction of the line rate (at most 1).
fn ratio(bytes: u64, ps: u64, rate_bps: u64) -> f64 {
    let sent_bits = bytes as f64 * 8.0;
    let line_bits = rate_bps as f64 * ps as f64 * 1e-12;
    (sent_bits / line_bits).min(1.0)
}

impl AdmissionPolicy for Abm {
    fn capacity_bytes(&self) -> u64 {
        self.size
    }

    fn attach(&mut self, port_rates: &[Rate]) {
        for (r, x) in self.rates.iter_mut().zip(port_rates) {
            *r = x.bps();
        }
    }

    fn admit(&mut self, req: &AdmitRequest, view: &BufferView<'_>) -> Verdict {
        let (port, class) = (req.out_port as usize, req.class as usize);
        let queued = view.queue_bytes(port, class);
        let b = req.bytes as u64;
        if (queued + b) as f64 > self.threshold(port, class, req.now, view) {
            return Verdict::Drop(DropReason::DynamicThreshold);
        }
        self.set_congested(port * self.classes + class, class, queued + b, req.now);
        Verdict::Admit
    }

    fn release(&mut self, req: &AdmitRequest, view: &BufferView<'_>) {
        let (port, class) = (req.out_port as usize, req.class as usize);
        let q = port * self.classes + class;
        let now = req.now;
        if self.congested[q] {
            let d = &mut self.drain[q];
            d.bytes += req.bytes as u64;
            let elapsed = now.0.saturating_sub(d.since.0);
            if elapsed >= self.drain_interval_ps && self.rates[port] > 0 {
                d.ratio = ratio(d.bytes, elapsed, self.rates[port]);
                d.since = now;
                d.bytes = 0;
            }
        }
        self.set_congested(q, class, view.queue_bytes(port, class), now);
    }
}

/// JSON Schema of the parameters.
pub fn schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["size"],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "description": "buffer size B in bytes"},
            "alpha": {
                "description": "alpha per class (one value: every class)",
                "oneOf": [
                    {"type": "number", "minimum": 0.0078125, "maximum": 64},
                    {"type": "array", "items": {"type": "number", "minimum": 0.0078125, "maximum": 64}, "minItems": 1}
                ],
                "default": 0.5
            },
            "congested_bytes": {"type": "integer", "minimum": 1, "default": 3000,
                "description": "a queue holding at least this many bytes counts as congested"},
            "drain_interval_ps": {"type": "integer", "minimum": 1, "default": 10000000,
                "description": "window over which a congested queue's drain rate is measured"},
            "scale_by_congested": {"type": "boolean", "default": true,
                "description": "divide alpha by the number of congested queues of the class"},
            "drain_rate": {"type": "boolean", "default": true,
                "description": "scale by the queue's drain rate over its port's line rate"}
        }
    })
}

fn factory(p: &Params<'_>, ctx: &DeviceContext<'_>) -> Result<Box<dyn AdmissionPolicy>, ParamError> {
    let size = p.u64("size", None, 1, u64::MAX / 2)?;
    let alpha = p.f64_per_class("alpha", 0.5, 1.0 / 128.0, 64.0, ctx.classes)?;
    let congested_bytes = p.u64("congested_bytes", Some(3000), 1, u64::MAX)?;
    let drain_interval_ps = p.u64("drain_interval_ps", Some(10_000_000), 1, u64::MAX)?;
    let scale = p.bool("scale_by_congested", true)?;
    let drain = p.bool("drain_rate", true)?;
    Ok(Box::new(Abm::new(
        size,
        alpha,
        congested_bytes,
        drain_interval_ps,
        scale,
        drain,
        ctx.port_rates_bps.len(),
        ctx.classes,
    )))
}

/// Registers `abm` with the core (idempotent).
pub fn register() {
    buffer_policy::register(BufferPolicyInfo {
        name: NAME.to_string(),
        summary: "ABM-like: alpha / n_congested x (B - Q) x drain rate / line rate per queue".to_string(),
        schema: schema(),
        factory,
    })
    .expect("the name abm is free");
}
