//! Static drop-tail buffer: each egress port owns a fixed number of bytes,
//! optionally with caps per (port, class) queue in bytes and in packets (a
//! router's hold queue is configured in packets). A packet is admitted when it
//! fits in all of them; otherwise it is dropped at the tail. Nothing is shared
//! between ports.

use super::{AdmitRequest, Verdict};
use crate::stats::DropReason;

/// The limits of a static buffer.
#[derive(Clone, Copy, Debug)]
pub struct StaticLimits {
    /// Bytes per egress port.
    pub port_bytes: u64,
    /// Optional cap in bytes per (port, class) queue.
    pub queue_bytes: Option<u64>,
    /// Optional cap in packets per (port, class) queue.
    pub queue_packets: Option<u32>,
}

/// Occupancy of a port (slot 0 of its group) or of one of its class queues.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    bytes: u64,
    packets: u64,
}

#[derive(Clone, Debug)]
pub struct StaticBuffer {
    classes: usize,
    port_limit: u64,
    queue_limit: Option<u64>,
    /// `u64::MAX` when unlimited, so the check costs one comparison.
    queue_packet_limit: u64,
    /// Per port, `1 + classes` slots side by side: the port's total, then its
    /// class queues, so an admission touches one or two cache lines.
    slots: Vec<Slot>,
    total: u64,
    high_water: u64,
    /// Reason reported when a port's buffer is full (a broadcast fabric's
    /// receivers report `receiver_buffer_full`).
    full_reason: DropReason,
}

impl StaticBuffer {
    pub fn new(ports: usize, classes: usize, limits: StaticLimits) -> Self {
        StaticBuffer {
            classes,
            port_limit: limits.port_bytes,
            queue_limit: limits.queue_bytes,
            queue_packet_limit: limits.queue_packets.map_or(u64::MAX, u64::from),
            slots: vec![Slot::default(); ports * (classes + 1)],
            total: 0,
            high_water: 0,
            full_reason: DropReason::PortBufferFull,
        }
    }

    /// Sets the reason reported when a port's buffer is full.
    pub fn set_full_reason(&mut self, reason: DropReason) {
        self.full_reason = reason;
    }

    /// Checks, in order: the queue's packet cap, the queue's byte cap, the
    /// port's bytes; the first one the packet would exceed is the drop reason.
    #[inline]
    pub fn admit(&mut self, r: &AdmitRequest) -> Verdict {
        self.admit_frame(r.out_port, r.class, r.bytes)
    }

    /// [`StaticBuffer::admit`] from the three fields it reads.
    #[inline(always)]
    pub fn admit_frame(&mut self, out_port: u16, class: u8, bytes: u32) -> Verdict {
        let p = out_port as usize * (self.classes + 1);
        let q = p + 1 + class as usize;
        let b = bytes as u64;
        let queue = self.slots[q];
        if queue.packets >= self.queue_packet_limit {
            return Verdict::Drop(DropReason::QueuePacketLimit);
        }
        if let Some(limit) = self.queue_limit {
            if queue.bytes + b > limit {
                return Verdict::Drop(DropReason::QueueLimit);
            }
        }
        if self.slots[p].bytes + b > self.port_limit {
            return Verdict::Drop(self.full_reason);
        }
        self.slots[p].bytes += b;
        self.slots[p].packets += 1;
        self.slots[q] = Slot { bytes: queue.bytes + b, packets: queue.packets + 1 };
        self.total += b;
        self.high_water = self.high_water.max(self.total);
        Verdict::Admit
    }

    #[inline]
    pub fn release(&mut self, r: &AdmitRequest) {
        self.release_frame(r.out_port, r.class, r.bytes)
    }

    /// [`StaticBuffer::release`] from the three fields it reads.
    #[inline(always)]
    pub fn release_frame(&mut self, out_port: u16, class: u8, bytes: u32) {
        let p = out_port as usize * (self.classes + 1);
        let q = p + 1 + class as usize;
        let b = bytes as u64;
        self.slots[p].bytes -= b;
        self.slots[p].packets -= 1;
        self.slots[q].bytes -= b;
        self.slots[q].packets -= 1;
        self.total -= b;
    }

    pub fn used_bytes(&self) -> u64 {
        self.total
    }

    pub fn high_water_bytes(&self) -> u64 {
        self.high_water
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.port_limit * (self.slots.len() / (self.classes + 1)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(port: u16, class: u8, bytes: u32) -> AdmitRequest {
        AdmitRequest { in_port: None, out_port: port, class, bytes, flow: 0, now: crate::units::SimTime::ZERO, ecn: 0 }
    }

    fn limits(port_bytes: u64, queue_bytes: Option<u64>, queue_packets: Option<u32>) -> StaticLimits {
        StaticLimits { port_bytes, queue_bytes, queue_packets }
    }

    #[test]
    fn port_limit_is_a_hard_tail_drop() {
        let mut b = StaticBuffer::new(2, 2, limits(3000, None, None));
        assert_eq!(b.admit(&req(0, 0, 1500)), Verdict::Admit);
        assert_eq!(b.admit(&req(0, 1, 1500)), Verdict::Admit);
        assert_eq!(b.admit(&req(0, 0, 1)), Verdict::Drop(DropReason::PortBufferFull));
        // Another port is unaffected.
        assert_eq!(b.admit(&req(1, 0, 3000)), Verdict::Admit);
        b.release(&req(0, 0, 1500));
        assert_eq!(b.admit(&req(0, 0, 1500)), Verdict::Admit);
        assert_eq!(b.used_bytes(), 6000);
    }

    #[test]
    fn queue_limit_applies_per_class() {
        let mut b = StaticBuffer::new(1, 2, limits(10_000, Some(2000), None));
        assert_eq!(b.admit(&req(0, 0, 1500)), Verdict::Admit);
        assert_eq!(b.admit(&req(0, 0, 1500)), Verdict::Drop(DropReason::QueueLimit));
        assert_eq!(b.admit(&req(0, 1, 1500)), Verdict::Admit);
    }

    #[test]
    fn packet_cap_counts_packets_whatever_their_size() {
        let mut b = StaticBuffer::new(2, 2, limits(1_000_000, None, Some(3)));
        for size in [64, 9000, 1500] {
            assert_eq!(b.admit(&req(0, 0, size)), Verdict::Admit);
        }
        assert_eq!(b.admit(&req(0, 0, 64)), Verdict::Drop(DropReason::QueuePacketLimit));
        // The cap is per (port, class) queue.
        assert_eq!(b.admit(&req(0, 1, 64)), Verdict::Admit);
        assert_eq!(b.admit(&req(1, 0, 64)), Verdict::Admit);
        // A packet leaving the queue makes room for exactly one more.
        b.release(&req(0, 0, 9000));
        assert_eq!(b.admit(&req(0, 0, 1500)), Verdict::Admit);
        assert_eq!(b.admit(&req(0, 0, 1500)), Verdict::Drop(DropReason::QueuePacketLimit));
        assert_eq!(b.used_bytes(), 64 + 1500 + 1500 + 64 + 64);
    }

    #[test]
    fn packet_cap_is_checked_before_byte_limits() {
        let mut b = StaticBuffer::new(1, 1, limits(1500, Some(1500), Some(1)));
        assert_eq!(b.admit(&req(0, 0, 1500)), Verdict::Admit);
        // Over all three limits: the packet cap is the reason reported.
        assert_eq!(b.admit(&req(0, 0, 1500)), Verdict::Drop(DropReason::QueuePacketLimit));
    }
}
