//! What benchmarks measure inside a simulation: the memory its state occupies,
//! by part (bytes per in-flight packet), and, with the feature `queue-trace`,
//! the event queue's operations. Nothing in a run depends on them.

use super::Simulation;

/// Bytes held by each part of the simulation's state (allocated capacity, not
/// just what is in use), and the peak number of packets alive at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryUse {
    /// Packet slots and the pool's free list.
    pub packets: usize,
    /// Slots of the egress queues (per-class FIFOs, VOQ sub-queues, control frames).
    pub port_queues: usize,
    /// Slots of the channels' in-flight FIFOs.
    pub wires: usize,
    /// The event queue.
    pub events: usize,
    /// Routing tables.
    pub routing: usize,
    /// The most packets alive at once so far.
    pub peak_packets: usize,
}

impl MemoryUse {
    /// Bytes that scale with the number of packets in flight (their slots in
    /// the pool, the queues and the wires) per packet at the peak.
    pub fn bytes_per_packet(&self) -> f64 {
        (self.packets + self.port_queues + self.wires) as f64 / self.peak_packets.max(1) as f64
    }
}

impl Simulation {
    /// The memory the simulation's state holds now.
    pub fn memory_use(&self) -> MemoryUse {
        let port_queues = self
            .ports
            .iter()
            .map(|p| p.queues().map(|q| q.capacity_bytes()).sum::<usize>() + p.ctrl_capacity_bytes())
            .sum();
        // A wire's first entries live in the channel itself; only the
        // spill beyond them is memory held for packets.
        let wires = self.channels.iter().map(|c| c.in_flight.heap_bytes()).sum();
        MemoryUse {
            packets: self.pool.memory_bytes(),
            port_queues,
            wires,
            events: self.queue.memory_bytes(),
            routing: self.routing.memory_bytes(),
            peak_packets: self.pool.capacity_used(),
        }
    }

    /// The event-queue operations recorded so far (feature `queue-trace`).
    #[cfg(feature = "queue-trace")]
    pub fn take_queue_trace(&mut self) -> Vec<u64> {
        self.queue.take_trace()
    }
}
