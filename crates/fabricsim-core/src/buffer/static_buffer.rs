//! Static drop-tail buffer: each egress port owns a fixed number of bytes,
//! optionally with caps per (port, class) queue in bytes and in packets (a
//! router's hold queue is configured in packets). A packet is admitted when it
//! fits in all of them; otherwise it is dropped at the tail. Nothing is shared
//! between ports.

use super::{AdmitRequest, Verdict};
use crate::error::ConfigError;
use crate::stats::DropReason;
use serde::{Deserialize, Serialize};

/// The limits of a static buffer: its configuration (`buffer` of `model: static`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StaticLimits {
    /// Bytes per egress port.
    pub port_bytes: u64,
    /// Optional cap in bytes per (port, class) queue.
    #[serde(default)]
    pub queue_bytes: Option<u64>,
    /// Optional cap in packets per (port, class) queue (a router's hold queue).
    #[serde(default)]
    pub queue_packets: Option<u32>,
}

impl StaticLimits {
    /// Checks that every limit is above zero.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        if self.port_bytes == 0 {
            return Err(ConfigError::new(format!("{path}.port_size"), "must be > 0"));
        }
        if self.queue_bytes == Some(0) {
            return Err(ConfigError::new(format!("{path}.queue_size"), "must be > 0"));
        }
        if self.queue_packets == Some(0) {
            return Err(ConfigError::new(format!("{path}.queue_packets"), "must be > 0"));
        }
        Ok(())
    }
}

/// What a static buffer's admission reads: the egress port's bytes queued and
/// its class queue's bytes and packets. The port keeps these counters itself
/// (`Port::total_queued_bytes`, `ClassQueue::queued` and its length) and they
/// change exactly when the buffer admits and releases, so the buffer reads
/// them from the port's lines instead of keeping a copy in a line of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    pub port_bytes: u64,
    pub queue_bytes: u64,
    pub queue_packets: u64,
}

/// The model holds only its limits (the bytes held are the [`super::Buffer`]'s
/// books, the queues' counters the port's): kept small and in this order so
/// that, inside its node, the three limits an admission reads share the node's
/// first cache line with what the hop reads of the node.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct StaticBuffer {
    port_limit: u64,
    /// `u64::MAX` when unlimited, so each check costs one comparison.
    queue_limit: u64,
    queue_packet_limit: u64,
    ports: u32,
    /// Reason reported when a port's buffer is full (a broadcast fabric's
    /// receivers report `receiver_buffer_full`).
    full_reason: DropReason,
}

const _: () = assert!(std::mem::size_of::<StaticBuffer>() <= 32, "the static model fits in the node's line it shares");

impl StaticBuffer {
    pub fn new(ports: usize, limits: StaticLimits) -> Self {
        StaticBuffer {
            ports: ports as u32,
            port_limit: limits.port_bytes,
            queue_limit: limits.queue_bytes.unwrap_or(u64::MAX),
            queue_packet_limit: limits.queue_packets.map_or(u64::MAX, u64::from),
            full_reason: DropReason::PortBufferFull,
        }
    }

    /// Sets the reason reported when a port's buffer is full.
    pub fn set_full_reason(&mut self, reason: DropReason) {
        self.full_reason = reason;
    }

    /// Checks, in order: the queue's packet cap, the queue's byte cap, the
    /// port's bytes; the first one the packet would exceed is the drop reason.
    #[inline(always)]
    pub fn admit(&self, r: &AdmitRequest) -> Verdict {
        let (queued, b) = (&r.queued, r.bytes as u64);
        if queued.queue_packets >= self.queue_packet_limit {
            return Verdict::Drop(DropReason::QueuePacketLimit);
        }
        if queued.queue_bytes.saturating_add(b) > self.queue_limit {
            return Verdict::Drop(DropReason::QueueLimit);
        }
        if queued.port_bytes + b > self.port_limit {
            return Verdict::Drop(self.full_reason);
        }
        Verdict::Admit
    }

    /// A packet left its queue: nothing to do (the port counts its queues).
    #[inline(always)]
    pub fn release(&mut self, _r: &AdmitRequest) {}

    pub fn capacity_bytes(&self) -> u64 {
        self.port_limit * self.ports as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{Buffer, BufferModel};
    use crate::units::SimTime;

    /// The counters the egress ports keep (per port its bytes, per class
    /// queue its bytes and packets), updated as a port updates them.
    struct Ports {
        classes: usize,
        port: Vec<u64>,
        queue: Vec<(u64, u64)>,
    }

    impl Ports {
        fn new(ports: usize, classes: usize) -> Ports {
            Ports { classes, port: vec![0; ports], queue: vec![(0, 0); ports * classes] }
        }

        fn request(&self, port: usize, class: usize, bytes: u32) -> AdmitRequest {
            let q = self.queue[port * self.classes + class];
            let queued = Occupancy { port_bytes: self.port[port], queue_bytes: q.0, queue_packets: q.1 };
            AdmitRequest {
                in_port: None,
                out_port: port as u16,
                class: class as u8,
                bytes,
                flow: 0,
                now: SimTime::ZERO,
                ecn: 0,
                queued,
            }
        }

        fn admit(&mut self, b: &mut Buffer, port: usize, class: usize, bytes: u32) -> Verdict {
            let v = b.admit(self.request(port, class, bytes)).0;
            let q = &mut self.queue[port * self.classes + class];
            if v == Verdict::Admit {
                self.port[port] += bytes as u64;
                *q = (q.0 + bytes as u64, q.1 + 1);
            }
            v
        }

        fn release(&mut self, b: &mut Buffer, port: usize, class: usize, bytes: u32) {
            let q = &mut self.queue[port * self.classes + class];
            self.port[port] -= bytes as u64;
            *q = (q.0 - bytes as u64, q.1 - 1);
            b.release_request(self.request(port, class, bytes));
        }
    }

    fn buffer(ports: usize, limits: StaticLimits) -> Buffer {
        Buffer::new(BufferModel::Static(StaticBuffer::new(ports, limits)))
    }

    fn limits(port_bytes: u64, queue_bytes: Option<u64>, queue_packets: Option<u32>) -> StaticLimits {
        StaticLimits { port_bytes, queue_bytes, queue_packets }
    }

    #[test]
    fn port_limit_is_a_hard_tail_drop() {
        let mut b = buffer(2, limits(3000, None, None));
        let mut ports = Ports::new(2, 2);
        assert_eq!(ports.admit(&mut b, 0, 0, 1500), Verdict::Admit);
        assert_eq!(ports.admit(&mut b, 0, 1, 1500), Verdict::Admit);
        assert_eq!(ports.admit(&mut b, 0, 0, 1), Verdict::Drop(DropReason::PortBufferFull));
        // Another port is unaffected.
        assert_eq!(ports.admit(&mut b, 1, 0, 3000), Verdict::Admit);
        ports.release(&mut b, 0, 0, 1500);
        assert_eq!(ports.admit(&mut b, 0, 0, 1500), Verdict::Admit);
        assert_eq!(b.used_bytes(), 6000);
    }

    #[test]
    fn queue_limit_applies_per_class() {
        let mut b = buffer(1, limits(10_000, Some(2000), None));
        let mut ports = Ports::new(1, 2);
        assert_eq!(ports.admit(&mut b, 0, 0, 1500), Verdict::Admit);
        assert_eq!(ports.admit(&mut b, 0, 0, 1500), Verdict::Drop(DropReason::QueueLimit));
        assert_eq!(ports.admit(&mut b, 0, 1, 1500), Verdict::Admit);
    }

    #[test]
    fn packet_cap_counts_packets_whatever_their_size() {
        let mut b = buffer(2, limits(1_000_000, None, Some(3)));
        let mut ports = Ports::new(2, 2);
        for size in [64, 9000, 1500] {
            assert_eq!(ports.admit(&mut b, 0, 0, size), Verdict::Admit);
        }
        assert_eq!(ports.admit(&mut b, 0, 0, 64), Verdict::Drop(DropReason::QueuePacketLimit));
        // The cap is per (port, class) queue.
        assert_eq!(ports.admit(&mut b, 0, 1, 64), Verdict::Admit);
        assert_eq!(ports.admit(&mut b, 1, 0, 64), Verdict::Admit);
        // A packet leaving the queue makes room for exactly one more.
        ports.release(&mut b, 0, 0, 9000);
        assert_eq!(ports.admit(&mut b, 0, 0, 1500), Verdict::Admit);
        assert_eq!(ports.admit(&mut b, 0, 0, 1500), Verdict::Drop(DropReason::QueuePacketLimit));
        assert_eq!(b.used_bytes(), 64 + 1500 + 1500 + 64 + 64);
    }

    #[test]
    fn packet_cap_is_checked_before_byte_limits() {
        let mut b = buffer(1, limits(1500, Some(1500), Some(1)));
        let mut ports = Ports::new(1, 1);
        assert_eq!(ports.admit(&mut b, 0, 0, 1500), Verdict::Admit);
        // Over all three limits: the packet cap is the reason reported.
        assert_eq!(ports.admit(&mut b, 0, 0, 1500), Verdict::Drop(DropReason::QueuePacketLimit));
    }
}
