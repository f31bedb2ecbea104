//! Registries of models that live outside the core: admission policies of
//! switch buffers (`buffer_policy.rs`). A crate registers a factory by name;
//! a scenario names it (`buffer.model`) with its `params`. See `docs/extending/`.

pub mod buffer_policy;
