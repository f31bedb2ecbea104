//! An egress port: per-class FIFO queues, a strict-priority scheduler and the
//! transmitter. The port schedules only its next departure: while it transmits,
//! exactly one `TxDone` event of its own is pending.

use crate::ids::{ChannelId, NodeId, PacketId};
use crate::units::{Rate, SimTime};
use std::collections::VecDeque;

#[derive(Debug)]
pub struct Port {
    pub node: NodeId,
    pub local: u16,
    pub channel: ChannelId,
    pub rate: Rate,
    pub queues: Vec<VecDeque<PacketId>>,
    pub queued_bytes: Vec<u64>,
    /// Bit `c` set when queue `c` is not empty.
    pub nonempty: u8,
    /// Packet being transmitted, if any.
    pub in_tx: Option<PacketId>,
    /// When the transmitter last became free.
    pub free_at: SimTime,
    // Counters.
    pub enqueued_packets: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub dropped_packets: u64,
    pub queue_delay_sum_ps: u128,
    pub total_queued_bytes: u64,
    pub high_water_bytes: u64,
    /// Per class: whether the last queue sample was non-zero.
    pub sampled_nonzero: u8,
}

impl Port {
    pub fn new(node: NodeId, local: u16, channel: ChannelId, rate: Rate, classes: usize) -> Self {
        Port {
            node,
            local,
            channel,
            rate,
            queues: (0..classes).map(|_| VecDeque::new()).collect(),
            queued_bytes: vec![0; classes],
            nonempty: 0,
            in_tx: None,
            free_at: SimTime::ZERO,
            enqueued_packets: 0,
            tx_packets: 0,
            tx_bytes: 0,
            dropped_packets: 0,
            queue_delay_sum_ps: 0,
            total_queued_bytes: 0,
            high_water_bytes: 0,
            sampled_nonzero: 0,
        }
    }

    #[inline]
    pub fn is_idle(&self) -> bool {
        self.in_tx.is_none()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.nonempty == 0
    }

    #[inline]
    pub fn push(&mut self, class: u8, pkt: PacketId, bytes: u32) {
        let c = class as usize;
        self.queues[c].push_back(pkt);
        self.queued_bytes[c] += bytes as u64;
        self.total_queued_bytes += bytes as u64;
        self.nonempty |= 1 << c;
        self.enqueued_packets += 1;
        if self.total_queued_bytes > self.high_water_bytes {
            self.high_water_bytes = self.total_queued_bytes;
        }
    }

    /// Strict priority: the highest non-empty class goes first.
    #[inline]
    pub fn pop(&mut self) -> Option<(u8, PacketId)> {
        if self.nonempty == 0 {
            return None;
        }
        let c = 7 - self.nonempty.leading_zeros() as usize;
        let pkt = self.queues[c].pop_front().expect("nonempty bit set on an empty queue");
        if self.queues[c].is_empty() {
            self.nonempty &= !(1 << c);
        }
        Some((c as u8, pkt))
    }

    /// Bookkeeping after `pop` once the packet's size is known.
    #[inline]
    pub fn dequeued(&mut self, class: u8, bytes: u32) {
        self.queued_bytes[class as usize] -= bytes as u64;
        self.total_queued_bytes -= bytes as u64;
    }

    /// Packets waiting in the queues (not counting the one being transmitted).
    pub fn queued_packets(&self) -> usize {
        self.queues.iter().map(|q| q.len()).sum()
    }
}
