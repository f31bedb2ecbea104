//! Static drop-tail buffer: each egress port owns a fixed number of bytes,
//! optionally with a cap per (port, class) queue. A packet is admitted when it
//! fits in both; otherwise it is dropped at the tail. Nothing is shared between
//! ports.

use super::{AdmitRequest, Verdict};
use crate::stats::DropReason;

#[derive(Clone, Debug)]
pub struct StaticBuffer {
    classes: usize,
    port_limit: u64,
    queue_limit: Option<u64>,
    port_used: Vec<u64>,
    queue_used: Vec<u64>,
    total: u64,
    high_water: u64,
    /// Reason reported when a port's buffer is full (a broadcast fabric's
    /// receivers report `receiver_buffer_full`).
    full_reason: DropReason,
}

impl StaticBuffer {
    pub fn new(ports: usize, classes: usize, port_limit: u64, queue_limit: Option<u64>) -> Self {
        StaticBuffer {
            classes,
            port_limit,
            queue_limit,
            port_used: vec![0; ports],
            queue_used: vec![0; ports * classes],
            total: 0,
            high_water: 0,
            full_reason: DropReason::PortBufferFull,
        }
    }

    /// Sets the reason reported when a port's buffer is full.
    pub fn set_full_reason(&mut self, reason: DropReason) {
        self.full_reason = reason;
    }

    #[inline]
    pub fn admit(&mut self, r: &AdmitRequest) -> Verdict {
        let p = r.out_port as usize;
        let q = p * self.classes + r.class as usize;
        let b = r.bytes as u64;
        if let Some(limit) = self.queue_limit {
            if self.queue_used[q] + b > limit {
                return Verdict::Drop(DropReason::QueueLimit);
            }
        }
        if self.port_used[p] + b > self.port_limit {
            return Verdict::Drop(self.full_reason);
        }
        self.port_used[p] += b;
        self.queue_used[q] += b;
        self.total += b;
        self.high_water = self.high_water.max(self.total);
        Verdict::Admit
    }

    #[inline]
    pub fn release(&mut self, r: &AdmitRequest) {
        let p = r.out_port as usize;
        let b = r.bytes as u64;
        self.port_used[p] -= b;
        self.queue_used[p * self.classes + r.class as usize] -= b;
        self.total -= b;
    }

    pub fn used_bytes(&self) -> u64 {
        self.total
    }

    pub fn high_water_bytes(&self) -> u64 {
        self.high_water
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.port_limit * self.port_used.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(port: u16, class: u8, bytes: u32) -> AdmitRequest {
        AdmitRequest { in_port: None, out_port: port, class, bytes, flow: 0, now: crate::units::SimTime::ZERO, ecn: 0 }
    }

    #[test]
    fn port_limit_is_a_hard_tail_drop() {
        let mut b = StaticBuffer::new(2, 2, 3000, None);
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
        let mut b = StaticBuffer::new(1, 2, 10_000, Some(2000));
        assert_eq!(b.admit(&req(0, 0, 1500)), Verdict::Admit);
        assert_eq!(b.admit(&req(0, 0, 1500)), Verdict::Drop(DropReason::QueueLimit));
        assert_eq!(b.admit(&req(0, 1, 1500)), Verdict::Admit);
    }
}
