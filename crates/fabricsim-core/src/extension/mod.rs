//! Models added from outside the core, registered by name at run time.
//!
//! A model kind that takes extensions has a registry here: code in another
//! crate (or the Python bindings) registers a factory under a name, and a
//! scenario selects it by that name with its parameters. The factory checks
//! the parameters when the world is built (an error names the field and what
//! it allows) and makes one model per component. Registries are
//! process-wide; what a run computes depends only on the scenario, the seed
//! and the registered code, never on the order of registration.
//!
//! - [`tcp_cc`]: TCP congestion controllers (`tcp.cc`, `tcp.cc_params`),
//!   implementing [`CongestionOps`](crate::transport::tcp::cc::CongestionOps);
//! - [`buffer_policy`]: admission policies of switch buffers (`buffer.model`
//!   with its `params`);
//! - [`rate_cc`]: rate controllers of RoCE queue pairs (`roce.cc`, `roce.cc_params`).
//!
//! See `docs/extending/`.

pub mod buffer_policy;
pub mod rate_cc;
pub mod tcp_cc;
