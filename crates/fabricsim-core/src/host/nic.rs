//! The NIC between the host's stack and its port: DMA over PCIe in each
//! direction (a fixed latency plus a time per byte), and receive interrupt
//! moderation.
//!
//! A DMA line is a FIFO server: a frame occupies it for `bytes x per_byte`
//! (the PCIe transfer, so back-to-back frames queue behind each other), then
//! takes the fixed latency (descriptor fetch, completion, doorbell) before it
//! leaves; frames never overtake each other. With both parts zero the line is
//! not simulated.
//!
//! A cut-through NIC (`cut_through_bytes` > 0) overlaps the transfer with the
//! wire: on transmit the frame starts on the wire once the first
//! `cut_through_bytes` are in the card and the rest cannot fall behind the
//! wire; on receive the transfer starts once that many bytes have arrived, so
//! only the last chunk (or what a transfer slower than the wire leaves over)
//! follows the frame's last bit. The lead of a frame of `n` bytes with chunk
//! `c < n` is `max(T(c), T(n) - W(n - c))`, `T` the transfer time and `W` the
//! wire's serialization time.

use crate::ids::PacketId;
use crate::units::{Rate, SimTime, TxTime};
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
    /// Cut-through DMA: bytes of a frame in the card before its transmission
    /// starts, and after its last bit on receive (one PCIe transfer); 0:
    /// store-and-forward (the whole frame crosses PCIe first).
    #[serde(default)]
    pub cut_through_bytes: u64,
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
    /// Cut-through chunk in bytes (0: store-and-forward).
    cut_through_bytes: u64,
    /// A receive line (cut-through overlaps the frame's arrival) rather than a transmit one.
    receive: bool,
    /// The wire's serialization at the host's port rate (cut-through only).
    wire: Option<TxTime>,
    pub frames: u64,
    pub bytes: u64,
}

impl DmaLine {
    pub fn new(latency_ps: u64, per_byte_fs: u64) -> DmaLine {
        DmaLine { latency: SimTime(latency_ps), per_byte_fs, ..Default::default() }
    }

    /// Makes the line cut-through with chunks of `bytes` against a wire of
    /// `rate` (`receive`: the line of received frames).
    pub fn cut_through(mut self, bytes: u64, rate: Rate, receive: bool) -> DmaLine {
        if bytes > 0 && self.per_byte_fs > 0 {
            self.cut_through_bytes = bytes;
            self.receive = receive;
            self.wire = Some(TxTime::new(rate));
        }
        self
    }

    /// Time from the start of a frame's transfer (transmit) or from its last
    /// bit (receive) until the wire may start it or the last chunk is in
    /// memory, for a frame whose whole transfer takes `transfer`: all of it
    /// when the line is store-and-forward or the frame fits one chunk.
    fn lead(&self, bytes: u64, transfer: SimTime) -> SimTime {
        let c = self.cut_through_bytes;
        match self.wire {
            Some(wire) if c < bytes => self.transfer_time(c).max(transfer.saturating_sub(wire.of(bytes - c))),
            _ => transfer,
        }
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
        let transfer = self.transfer_time(bytes);
        let exit = if self.receive {
            // The transfer began as the frame arrived, unless an earlier one held the line.
            self.busy_until = (now + self.lead(bytes, transfer)).max(self.busy_until + transfer);
            self.busy_until + self.latency
        } else {
            let start = self.busy_until.max(now);
            self.busy_until = start + transfer;
            start + self.lead(bytes, transfer) + self.latency
        };
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
    fn cut_through_transmit_starts_the_wire_after_one_chunk() {
        // 0.1389 ns per byte (PCIe Gen3 x8) against a 10G wire (0.8 ns per byte), 256 B chunks.
        let mut d = DmaLine::new(300_000, 138_900).cut_through(256, Rate::from_bps(10_000_000_000), false);
        let (a, _) = d.enter(SimTime(0), PacketId(1), 9000);
        // Faster than the wire: only the first chunk is waited for.
        assert_eq!(a, SimTime(300_000 + 35_559));
        // The next frame waits for the whole first transfer (9000 x 138.9 ps).
        let (b, _) = d.enter(SimTime(0), PacketId(2), 64);
        assert_eq!(b, SimTime(1_250_100 + 8_890 + 300_000));
    }

    #[test]
    fn cut_through_slower_than_the_wire_leaves_the_rest_after_the_last_bit() {
        // 1.6 ns per byte against a 10G wire (0.8 ns): half of each byte's transfer is left over.
        let mut d = DmaLine::new(0, 1_600_000).cut_through(100, Rate::from_bps(10_000_000_000), true);
        let (a, _) = d.enter(SimTime(1_000_000), PacketId(1), 1100);
        // max(T(100), T(1100) - W(1000)) = max(160 ns, 1760 - 800 ns).
        assert_eq!(a, SimTime(1_000_000 + 960_000));
        // A frame that fits one chunk is moved whole after its last bit.
        let mut e = DmaLine::new(0, 1_600_000).cut_through(100, Rate::from_bps(10_000_000_000), true);
        assert_eq!(e.enter(SimTime(0), PacketId(1), 64).0, SimTime(102_400));
    }

    #[test]
    fn per_byte_time_rounds_up_to_the_picosecond() {
        let d = DmaLine::new(0, 80); // 0.08 ps per byte
        assert_eq!(d.transfer_time(1500), SimTime(120));
        assert_eq!(d.transfer_time(1), SimTime(1));
        assert!(DmaLine::new(0, 0).is_transparent());
    }
}
