//! The NIC between the host's stack and its port: DMA over PCIe in each
//! direction (a fixed latency plus a time per byte), and receive interrupt
//! moderation.
//!
//! A DMA line is a FIFO server: a frame occupies it for `bytes x per_byte`
//! (the PCIe transfer, so back-to-back frames queue behind each other), then
//! takes the fixed latency (descriptor fetch, completion, doorbell) before it
//! leaves; frames never overtake each other. With both parts zero the line is
//! not simulated.

use crate::ids::PacketId;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Resolved `nic` of a host model.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NicConfig {
    /// Transmit: from the driver's doorbell to the frame in the NIC's port queue.
    #[serde(default)]
    pub tx_latency_ps: u64,
    /// Transmit DMA time per byte, in femtoseconds.
    #[serde(default)]
    pub tx_per_byte_fs: u64,
    /// Receive: from the frame's last bit in the NIC to the frame in host memory.
    #[serde(default)]
    pub rx_latency_ps: u64,
    /// Receive DMA time per byte, in femtoseconds.
    #[serde(default)]
    pub rx_per_byte_fs: u64,
}

/// Receive interrupt coalescing (`ethtool -C rx-usecs N rx-frames M`): after a
/// frame arrives with interrupts enabled, the interrupt fires `usecs` later,
/// or at once when `frames` frames are waiting; 0 and 0 (or `frames` = 1)
/// interrupt on every frame. While a NAPI poll is scheduled or running the
/// interrupt stays disabled and new frames are picked up by the poll.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InterruptConfig {
    #[serde(default)]
    pub usecs_ps: u64,
    #[serde(default)]
    pub frames: u32,
    /// CPU time of taking the interrupt (hard IRQ, scheduling the poll),
    /// charged to the first poll after it.
    #[serde(default)]
    pub cost_ps: u64,
}

impl InterruptConfig {
    /// Whether every frame interrupts at once.
    pub fn immediate(&self) -> bool {
        self.usecs_ps == 0 || self.frames == 1
    }
}

/// One direction of a NIC's DMA: a FIFO server plus a fixed latency.
#[derive(Clone, Debug, Default)]
pub struct DmaLine {
    /// When the PCIe transfer of the last frame ends.
    busy_until: SimTime,
    /// Frames in flight with their exit times (non-decreasing).
    line: VecDeque<(SimTime, PacketId)>,
    latency: SimTime,
    per_byte_fs: u64,
    pub frames: u64,
    pub bytes: u64,
}

impl DmaLine {
    pub fn new(latency_ps: u64, per_byte_fs: u64) -> DmaLine {
        DmaLine { latency: SimTime(latency_ps), per_byte_fs, ..Default::default() }
    }

    /// A line that adds nothing need not be simulated.
    pub fn is_transparent(&self) -> bool {
        self.latency == SimTime::ZERO && self.per_byte_fs == 0
    }

    /// Transfer time of `bytes`, rounded up to the picosecond.
    pub fn transfer_time(&self, bytes: u64) -> SimTime {
        SimTime((bytes as u128 * self.per_byte_fs as u128).div_ceil(1000) as u64)
    }

    /// A frame of `bytes` enters at `now`; returns its exit time and whether
    /// it is the line's head (an exit event must be scheduled).
    pub fn enter(&mut self, now: SimTime, id: PacketId, bytes: u64) -> (SimTime, bool) {
        let start = self.busy_until.max(now);
        self.busy_until = start + self.transfer_time(bytes);
        let exit = self.busy_until + self.latency;
        self.line.push_back((exit, id));
        self.frames += 1;
        self.bytes += bytes;
        (exit, self.line.len() == 1)
    }

    /// Takes the head; returns it and the next head's exit time.
    pub fn leave(&mut self) -> (PacketId, Option<SimTime>) {
        let (_, id) = self.line.pop_front().expect("DMA exit from an empty line");
        (id, self.line.front().map(|x| x.0))
    }

    pub fn held(&self) -> usize {
        self.line.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_queue_behind_the_transfer_and_keep_their_order() {
        // 1 ns per byte (1,000,000 fs), 500 ns fixed.
        let mut d = DmaLine::new(500_000, 1_000_000);
        let (a, head) = d.enter(SimTime(0), PacketId(1), 1000);
        assert!(head);
        assert_eq!(a, SimTime(1_000_000 + 500_000));
        // A small frame right behind waits for the first transfer.
        let (b, head) = d.enter(SimTime(10), PacketId(2), 100);
        assert!(!head);
        assert_eq!(b, SimTime(1_100_000 + 500_000));
        assert_eq!(d.leave(), (PacketId(1), Some(b)));
        assert_eq!(d.leave(), (PacketId(2), None));
    }

    #[test]
    fn per_byte_time_rounds_up_to_the_picosecond() {
        let d = DmaLine::new(0, 80); // 0.08 ps per byte
        assert_eq!(d.transfer_time(1500), SimTime(120));
        assert_eq!(d.transfer_time(1), SimTime(1));
        assert!(DmaLine::new(0, 0).is_transparent());
    }
}
