//! # fabricsim-core
//!
//! A deterministic, packet-level discrete-event simulator of data-center switch
//! fabrics. Pure Rust: the Python package drives it through a thin binding.
//!
//! ```text
//!   h0 ──┐                 ┌── h2
//!        ├── leaf0 ═ spine0 ═ leaf1 ──┤
//!   h1 ──┘        ╲ spine1 ╱        └── h3
//! ```
//!
//! ```
//! use fabricsim_core::{config::Scenario, sim::Simulation};
//! let json = r#"{
//!   "duration_ps": 1000000000,
//!   "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
//!                "host_link": {"rate_bps": 100000000000, "delay_ps": 1000000},
//!                "fabric_link": {"rate_bps": 100000000000, "delay_ps": 1000000}},
//!   "traffic": [{"kind": "udp_cbr", "src": ["h0", "h1"], "dst": "h3",
//!                "rate_bps": 40000000000, "frame_bytes": 1500}]
//! }"#;
//! let mut sim = Simulation::new(&Scenario::from_json(json).unwrap()).unwrap();
//! let out = sim.finish();
//! assert_eq!(out.summary["conservation_ok"], fabricsim_core::stats::Value::Bool(true));
//! ```
//!
//! ## Guarantees
//!
//! - **Time** is an integer number of picoseconds; serialization times are exact
//!   integer computations rounded up to the picosecond.
//! - **Ordering**: events run in non-decreasing time order; events at equal times run in
//!   the order they were scheduled (see [`event_queue`]).
//! - **Determinism**: a run depends only on the scenario and the seed. Random
//!   draws come from per-component streams derived from `(seed, component)`
//!   ([`rng`]); no output depends on hash-map iteration, threads or wall clock.
//! - **Conservation**: every run checks that packets created = delivered +
//!   dropped + still in the network, per port and globally, and that buffer
//!   accounting matches the queues (zero once the network has drained).

pub mod buffer;
pub mod config;
pub mod error;
pub mod event_queue;
pub mod extension;
pub mod histogram;
pub mod host;
pub mod ids;
pub mod network;
pub mod packet;
pub mod pipeline;
pub mod power;
pub mod rng;
pub mod sim;
pub mod stats;
pub mod token_bucket;
pub mod traffic;
pub mod transport;
pub mod units;

pub use config::Scenario;
pub use error::{ConfigError, RunError};
pub use sim::{Progress, Simulation};
