//! Registries of models that live outside the core: admission policies of
//! switch buffers (`buffer_policy.rs`) and rate controllers of RoCE queue
//! pairs (`rate_cc.rs`). A crate registers a factory by name; a scenario names
//! it (`buffer.model`, `roce.cc`) with its `params`. See `docs/extending/`.

pub mod buffer_policy;
pub mod rate_cc;
