//! Buffer admission (the MMU): which packets a device may store.
//!
//! Each device owns one [`BufferModel`]. When a packet is about to join an egress
//! queue, the device asks the model to [`admit`](BufferModel::admit) it; the
//! model charges the packet to its accounting or answers with a drop reason. When
//! the packet leaves the queue (starts transmission) the device
//! [`release`](BufferModel::release)s it. Models are a closed enum, one file
//! each, so dispatch is a `match` the compiler can inline.

pub mod shared;
pub mod static_buffer;

use crate::config::BufferConfig;
use crate::error::ConfigError;
use crate::stats::DropReason;
pub use shared::{SharedBuffer, SharedParams};
pub use static_buffer::StaticBuffer;

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
}

/// The model's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Admit,
    Drop(DropReason),
}

/// The buffer models; see each variant's module for its rules.
#[derive(Clone, Debug)]
pub enum BufferModel {
    Static(StaticBuffer),
    Shared(SharedBuffer),
}

impl BufferModel {
    /// Builds the model for a device with `ports` ports and `classes` classes.
    pub fn build(cfg: &BufferConfig, ports: usize, classes: usize, path: &str) -> Result<Self, ConfigError> {
        match cfg {
            BufferConfig::Static { port_bytes, queue_bytes } => {
                if *port_bytes == 0 {
                    return Err(ConfigError::new(format!("{path}.port_size"), "must be > 0"));
                }
                if *queue_bytes == Some(0) {
                    return Err(ConfigError::new(format!("{path}.queue_size"), "must be > 0"));
                }
                Ok(BufferModel::Static(StaticBuffer::new(ports, classes, *port_bytes, *queue_bytes)))
            }
            BufferConfig::Shared {
                total_bytes,
                cell_bytes,
                per_packet_overhead_bytes,
                alpha,
                reserved_bytes_per_queue,
                ingress_alpha,
                pools,
                class_pool,
            } => {
                let p = SharedParams::from_config(
                    *total_bytes,
                    *cell_bytes,
                    *per_packet_overhead_bytes,
                    alpha,
                    *reserved_bytes_per_queue,
                    ingress_alpha.as_deref(),
                    pools.as_deref(),
                    class_pool.as_deref(),
                    ports,
                    classes,
                    path,
                )?;
                Ok(BufferModel::Shared(SharedBuffer::new(ports, classes, &p)))
            }
        }
    }

    /// Decides whether the packet may be stored; charges it if admitted.
    #[inline]
    pub fn admit(&mut self, req: &AdmitRequest) -> Verdict {
        match self {
            BufferModel::Static(m) => m.admit(req),
            BufferModel::Shared(m) => m.admit(req),
        }
    }

    /// Returns a previously admitted packet's buffer.
    #[inline]
    pub fn release(&mut self, req: &AdmitRequest) {
        match self {
            BufferModel::Static(m) => m.release(req),
            BufferModel::Shared(m) => m.release(req),
        }
    }

    /// Bytes currently charged to the model.
    pub fn used_bytes(&self) -> u64 {
        match self {
            BufferModel::Static(m) => m.used_bytes(),
            BufferModel::Shared(m) => m.used_bytes(),
        }
    }

    /// Name of the model as written in scenarios.
    pub fn name(&self) -> &'static str {
        match self {
            BufferModel::Static(_) => "static",
            BufferModel::Shared(_) => "shared",
        }
    }
}
