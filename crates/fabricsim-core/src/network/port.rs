//! An egress port: per-class queues, a scheduler between classes and the
//! transmitter. The port schedules only its next departure: while it transmits,
//! exactly one `TxDone` event of its own is pending.
//!
//! **Schedulers** (between classes):
//! - `strict` (default): the highest non-empty class goes first.
//! - `drr`: deficit round robin (Shreedhar & Varghese 1995) over the classes,
//!   with a quantum in bytes per class; each visit to a non-empty class adds its
//!   quantum to the class's deficit and sends head packets while they fit in it.
//!   An emptied class loses its deficit. Long-run byte shares of backlogged
//!   classes are proportional to their quanta.
//!
//! **Queue disciplines** (within a class):
//! - FIFO (default).
//! - Per-ingress sub-queues served packet by packet in round robin, used by
//!   VOQ devices: the sub-queue of ingress port `i` in class `c` of this port is
//!   the virtual output queue (i, this port, c). Packet round robin gives equal
//!   packet rates to backlogged inputs (equal byte rates when frames are equal).

use crate::ids::{ChannelId, NodeId, PacketId};
use crate::units::{Rate, SimTime, TxTime};
use serde::Deserialize;
use std::collections::VecDeque;

/// Resolved `scheduler` of a switch.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SchedulerConfig {
    #[default]
    Strict,
    Drr {
        /// Quantum in bytes: one value for every class, or one per class.
        quantum_bytes: Vec<u32>,
    },
}

impl SchedulerConfig {
    /// Checks the quanta against the number of classes.
    pub fn check(&self, classes: usize, path: &str) -> Result<(), crate::ConfigError> {
        if let SchedulerConfig::Drr { quantum_bytes } = self {
            if quantum_bytes.len() != 1 && quantum_bytes.len() != classes {
                return Err(crate::ConfigError::new(
                    format!("{path}.quantum"),
                    format!("expected 1 or {classes} values (one per class), got {}", quantum_bytes.len()),
                ));
            }
            if quantum_bytes.contains(&0) {
                return Err(crate::ConfigError::new(format!("{path}.quantum"), "every quantum must be > 0"));
            }
        }
        Ok(())
    }
}

/// The packets of one class: `(packet, frame bytes)`.
#[derive(Debug)]
pub enum ClassQueue {
    Fifo(VecDeque<(PacketId, u32)>),
    PerIngress(SubQueues),
}

/// Per-ingress sub-queues of one class, served in packet round robin.
#[derive(Debug, Default)]
pub struct SubQueues {
    subs: Vec<VecDeque<(PacketId, u32)>>,
    /// Non-empty sub-queues in service order.
    active: VecDeque<u16>,
    len: usize,
}

impl ClassQueue {
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            ClassQueue::Fifo(q) => q.len(),
            ClassQueue::PerIngress(s) => s.len,
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    fn push(&mut self, pkt: PacketId, bytes: u32, in_port: u16) {
        match self {
            ClassQueue::Fifo(q) => q.push_back((pkt, bytes)),
            ClassQueue::PerIngress(s) => {
                let i = (in_port as usize).min(s.subs.len() - 1);
                if s.subs[i].is_empty() {
                    s.active.push_back(i as u16);
                }
                s.subs[i].push_back((pkt, bytes));
                s.len += 1;
            }
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<(PacketId, u32)> {
        match self {
            ClassQueue::Fifo(q) => q.pop_front(),
            ClassQueue::PerIngress(s) => {
                let i = s.active.pop_front()? as usize;
                let head = s.subs[i].pop_front();
                if !s.subs[i].is_empty() {
                    s.active.push_back(i as u16);
                }
                s.len -= 1;
                head
            }
        }
    }

    /// Bytes of queue slots allocated (capacity, not occupancy).
    pub fn capacity_bytes(&self) -> usize {
        let slot = std::mem::size_of::<(PacketId, u32)>();
        match self {
            ClassQueue::Fifo(q) => q.capacity() * slot,
            ClassQueue::PerIngress(s) => {
                s.subs.iter().map(|q| q.capacity() * slot).sum::<usize>() + s.active.capacity() * 2
            }
        }
    }

    #[inline]
    fn front_bytes(&self) -> Option<u32> {
        match self {
            ClassQueue::Fifo(q) => q.front().map(|x| x.1),
            ClassQueue::PerIngress(s) => s.active.front().and_then(|&i| s.subs[i as usize].front()).map(|x| x.1),
        }
    }
}

#[derive(Debug)]
struct Drr {
    classes: usize,
    quantum: [u64; 8],
    deficit: [u64; 8],
    cur: usize,
    /// Whether the current class already received its quantum for this visit.
    visited: bool,
}

#[derive(Debug)]
enum Sched {
    Strict,
    Drr(Box<Drr>),
}

#[derive(Debug)]
pub struct Port {
    pub node: NodeId,
    pub local: u16,
    pub channel: ChannelId,
    pub rate: Rate,
    /// Serialization time at `rate`, precomputed.
    pub tx_time: TxTime,
    pub queues: Vec<ClassQueue>,
    pub queued_bytes: Vec<u64>,
    /// Bit `c` set when queue `c` is not empty.
    pub nonempty: u8,
    /// Packet being transmitted, if any.
    pub in_tx: Option<PacketId>,
    /// When the transmitter last became free.
    pub free_at: SimTime,
    sched: Sched,
    // Counters.
    pub enqueued_packets: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub dropped_packets: u64,
    pub queue_delay_sum_ps: u128,
    pub total_queued_bytes: u64,
    pub high_water_bytes: u64,
    /// Per class: the most bytes the class queue ever held.
    pub class_high_water: Vec<u64>,
    /// Per class: whether the last queue sample was non-zero.
    pub sampled_nonzero: u8,
    /// MAC control frames (PFC PAUSE): sent before any class, never paused,
    /// not charged to the buffer model.
    pub ctrl: VecDeque<PacketId>,
    /// Bit `c` set while class `c` is paused by the link partner (PFC).
    pub paused: u8,
}

/// Class reported by [`Port::pop`] for a MAC control frame.
pub const CTRL_CLASS: u8 = u8::MAX;

impl Port {
    pub fn new(node: NodeId, local: u16, channel: ChannelId, rate: Rate, classes: usize) -> Self {
        Port {
            node,
            local,
            channel,
            rate,
            tx_time: TxTime::new(rate),
            queues: (0..classes).map(|_| ClassQueue::Fifo(VecDeque::new())).collect(),
            queued_bytes: vec![0; classes],
            nonempty: 0,
            in_tx: None,
            free_at: SimTime::ZERO,
            sched: Sched::Strict,
            enqueued_packets: 0,
            tx_packets: 0,
            tx_bytes: 0,
            dropped_packets: 0,
            queue_delay_sum_ps: 0,
            total_queued_bytes: 0,
            high_water_bytes: 0,
            class_high_water: vec![0; classes],
            sampled_nonzero: 0,
            ctrl: VecDeque::new(),
            paused: 0,
        }
    }

    /// Sets the scheduler (checked with [`SchedulerConfig::check`]).
    pub fn set_scheduler(&mut self, cfg: &SchedulerConfig) {
        self.sched = match cfg {
            SchedulerConfig::Strict => Sched::Strict,
            SchedulerConfig::Drr { quantum_bytes } => {
                let classes = self.queues.len();
                let mut quantum = [0u64; 8];
                for (c, q) in quantum.iter_mut().enumerate().take(classes) {
                    *q = if quantum_bytes.len() == 1 { quantum_bytes[0] } else { quantum_bytes[c] } as u64;
                }
                Sched::Drr(Box::new(Drr { classes, quantum, deficit: [0; 8], cur: classes - 1, visited: false }))
            }
        };
    }

    /// Gives every class `inputs` per-ingress sub-queues (plus one for packets
    /// created at the node). Must be called while the port is empty.
    pub fn use_per_ingress_queues(&mut self, inputs: usize) {
        assert!(self.is_empty() && self.is_idle());
        for q in &mut self.queues {
            *q = ClassQueue::PerIngress(SubQueues {
                subs: (0..inputs + 1).map(|_| VecDeque::new()).collect(),
                active: VecDeque::new(),
                len: 0,
            });
        }
    }

    #[inline]
    pub fn is_idle(&self) -> bool {
        self.in_tx.is_none()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.nonempty == 0 && self.ctrl.is_empty()
    }

    /// Queues a MAC control frame (strict precedence over every class).
    #[inline]
    pub fn push_ctrl(&mut self, pkt: PacketId) {
        self.ctrl.push_back(pkt);
        self.enqueued_packets += 1;
    }

    /// Queues a packet created at the node (or on a FIFO port).
    #[inline]
    pub fn push(&mut self, class: u8, pkt: PacketId, bytes: u32) {
        self.push_from(class, pkt, bytes, u16::MAX)
    }

    /// Queues a packet that arrived on local port `in_port` (`u16::MAX`: created here).
    #[inline]
    pub fn push_from(&mut self, class: u8, pkt: PacketId, bytes: u32, in_port: u16) {
        let c = class as usize;
        self.queues[c].push(pkt, bytes, in_port);
        let qb = self.queued_bytes[c] + bytes as u64;
        self.queued_bytes[c] = qb;
        if qb > self.class_high_water[c] {
            self.class_high_water[c] = qb;
        }
        self.total_queued_bytes += bytes as u64;
        self.nonempty |= 1 << c;
        self.enqueued_packets += 1;
        if self.total_queued_bytes > self.high_water_bytes {
            self.high_water_bytes = self.total_queued_bytes;
        }
    }

    /// The next packet by the port's scheduler.
    #[inline]
    pub fn pop(&mut self) -> Option<(u8, PacketId)> {
        if !self.ctrl.is_empty() {
            return self.ctrl.pop_front().map(|id| (CTRL_CLASS, id));
        }
        let eligible = self.nonempty & !self.paused;
        if eligible == 0 {
            return None;
        }
        let c = match &mut self.sched {
            Sched::Strict => 7 - eligible.leading_zeros() as usize,
            Sched::Drr(d) => d.pick(&self.queues, eligible),
        };
        let (pkt, _) = self.queues[c].pop().expect("nonempty bit set on an empty queue");
        if self.queues[c].is_empty() {
            self.nonempty &= !(1 << c);
            if let Sched::Drr(d) = &mut self.sched {
                d.deficit[c] = 0;
                d.advance();
            }
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
        self.queues.iter().map(|q| q.len()).sum::<usize>() + self.ctrl.len()
    }

    /// Whether `pop` would return a packet (control frames or an unpaused class).
    #[inline]
    pub fn has_eligible(&self) -> bool {
        !self.ctrl.is_empty() || self.nonempty & !self.paused != 0
    }
}

impl Drr {
    #[inline]
    fn advance(&mut self) {
        self.cur = if self.cur == 0 { self.classes - 1 } else { self.cur - 1 };
        self.visited = false;
    }

    /// Class of the next packet; `nonempty` must not be 0.
    fn pick(&mut self, queues: &[ClassQueue], nonempty: u8) -> usize {
        loop {
            let c = self.cur;
            if nonempty & (1 << c) != 0 {
                if !self.visited {
                    self.deficit[c] += self.quantum[c];
                    self.visited = true;
                }
                let head = queues[c].front_bytes().expect("non-empty class") as u64;
                if head <= self.deficit[c] {
                    self.deficit[c] -= head;
                    return c;
                }
            } else {
                self.deficit[c] = 0;
            }
            self.advance();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(classes: usize) -> Port {
        Port::new(NodeId(0), 0, ChannelId(0), Rate(1), classes)
    }

    #[test]
    fn drr_shares_bytes_by_quantum() {
        let mut p = port(2);
        p.set_scheduler(&SchedulerConfig::Drr { quantum_bytes: vec![1500, 4500] });
        for i in 0..400 {
            p.push(0, PacketId(i), 1000);
            p.push(1, PacketId(1000 + i), 1000);
        }
        let mut bytes = [0u64; 2];
        for _ in 0..400 {
            let (c, _) = p.pop().unwrap();
            p.dequeued(c, 1000);
            bytes[c as usize] += 1000;
        }
        let share = bytes[1] as f64 / (bytes[0] + bytes[1]) as f64;
        assert!((share - 0.75).abs() < 0.01, "{bytes:?}");
    }

    #[test]
    fn per_ingress_round_robin() {
        let mut p = port(1);
        p.use_per_ingress_queues(3);
        for i in 0..6 {
            p.push_from(0, PacketId(i), 100, 0);
        }
        p.push_from(0, PacketId(10), 100, 2);
        p.push_from(0, PacketId(11), 100, 2);
        let order: Vec<u32> = std::iter::from_fn(|| p.pop().map(|x| x.1 .0)).collect();
        assert_eq!(order, vec![0, 10, 1, 11, 2, 3, 4, 5]);
        assert!(p.is_empty());
    }

    #[test]
    fn strict_priority_is_the_default() {
        let mut p = port(3);
        p.push(0, PacketId(0), 10);
        p.push(2, PacketId(1), 10);
        p.push(1, PacketId(2), 10);
        assert_eq!(p.pop(), Some((2, PacketId(1))));
        assert_eq!(p.pop(), Some((1, PacketId(2))));
        assert_eq!(p.pop(), Some((0, PacketId(0))));
        assert_eq!(p.class_high_water, vec![10, 10, 10]);
    }
}
