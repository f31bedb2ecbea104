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
//! - FIFO with per-input accounting (per-ingress sub-queues in arrival-order
//!   mode): the same order as a FIFO, plus the bytes each input has queued
//!   (for an input limit) and sent.
//! - Per-ingress sub-queues served packet by packet in round robin, used by
//!   VOQ devices and by input arbitration (`network/arbitration.rs`): the
//!   sub-queue of ingress port `i` in class `c` of this port is the virtual
//!   output queue (i, this port, c). Sub-queues belong to groups; the port
//!   serves the groups with a non-empty sub-queue in turn and, within a group,
//!   its non-empty sub-queues in turn (one group: plain round robin). Packet
//!   round robin gives equal packet rates to backlogged inputs (equal byte
//!   rates when frames are equal).

use super::fifo::InlineFifo;
use crate::buffer::Occupancy;
use crate::ids::{ChannelId, NodeId, PacketId};
use crate::units::{Rate, SimTime, TxTime};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Resolved `scheduler` of a switch.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
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

/// One class of a port: its bytes (now and at the peak) and its packets,
/// in one cache line. A FIFO class keeps its first three packets in place
/// ([`InlineFifo`]), so a queue of a few packets costs no line beyond this
/// one; the per-ingress sub-queues are boxed (they take ~250 B).
#[derive(Debug)]
#[repr(C, align(64))]
pub struct ClassQueue {
    /// Bytes queued.
    pub queued: u64,
    /// The most bytes the queue ever held.
    pub high_water: u64,
    pub packets: Packets,
}

const _: () = assert!(std::mem::size_of::<ClassQueue>() == 64, "a traffic class's queue is one cache line");

/// The packets of one class: `(packet, frame bytes)`.
#[derive(Debug)]
pub enum Packets {
    Fifo(InlineFifo<(PacketId, u32), 3>),
    PerIngress(Box<SubQueues>),
}

/// Per-ingress sub-queues of one class, served in packet round robin over
/// groups, then over the sub-queues of a group.
#[derive(Debug, Default)]
pub struct SubQueues {
    subs: Vec<VecDeque<(PacketId, u32)>>,
    /// Bytes queued per sub-queue.
    bytes: Vec<u64>,
    /// Group of each sub-queue.
    group: Vec<u16>,
    /// Per group: its non-empty sub-queues in service order.
    members: Vec<VecDeque<u16>>,
    /// Groups with a non-empty sub-queue, in service order.
    active: VecDeque<u16>,
    len: usize,
    /// Per sub-queue: packets and bytes that left it (started transmission).
    pub tx_packets: Vec<u64>,
    pub tx_bytes: Vec<u64>,
    /// Arrival-order mode: one FIFO of `(packet, bytes, sub-queue)` instead of
    /// round robin (the sub-queues only count bytes).
    order: Option<VecDeque<(PacketId, u32, u16)>>,
    /// Byte limit of each sub-queue (`u64::MAX`: none).
    limit: u64,
}

impl SubQueues {
    /// Bytes one sub-queue holds before any packet (its deque and counters).
    pub const BYTES_PER_INPUT: usize =
        std::mem::size_of::<VecDeque<(PacketId, u32)>>() + 3 * std::mem::size_of::<u64>() + std::mem::size_of::<u16>();

    /// `inputs` sub-queues plus one for locally created packets; sub-queue `i`
    /// is in group `group[i]`, the local one in a group of its own.
    fn new(inputs: usize, group: &[u16]) -> SubQueues {
        let mut g: Vec<u16> = (0..inputs).map(|i| group.get(i).copied().unwrap_or(0)).collect();
        let local = g.iter().copied().max().map_or(0, |m| m + 1);
        g.push(local);
        SubQueues {
            subs: (0..inputs + 1).map(|_| VecDeque::new()).collect(),
            bytes: vec![0; inputs + 1],
            members: (0..=local).map(|_| VecDeque::new()).collect(),
            group: g,
            active: VecDeque::new(),
            len: 0,
            tx_packets: vec![0; inputs + 1],
            tx_bytes: vec![0; inputs + 1],
            order: None,
            limit: u64::MAX,
        }
    }

    #[inline]
    fn index(&self, in_port: u16) -> usize {
        (in_port as usize).min(self.subs.len() - 1)
    }

    /// Group of each sub-queue (the last is the local one).
    pub fn groups(&self) -> &[u16] {
        &self.group
    }
}

impl ClassQueue {
    fn fifo() -> ClassQueue {
        ClassQueue { queued: 0, high_water: 0, packets: Packets::Fifo(InlineFifo::new()) }
    }

    #[inline]
    pub fn len(&self) -> usize {
        match &self.packets {
            Packets::Fifo(q) => q.len(),
            Packets::PerIngress(s) => s.len,
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    fn push(&mut self, pkt: PacketId, bytes: u32, in_port: u16) {
        match &mut self.packets {
            Packets::Fifo(q) => q.push_back((pkt, bytes)),
            Packets::PerIngress(s) => {
                let i = s.index(in_port);
                if let Some(order) = &mut s.order {
                    order.push_back((pkt, bytes, i as u16));
                    s.bytes[i] += bytes as u64;
                    s.len += 1;
                    return;
                }
                if s.subs[i].is_empty() {
                    let g = s.group[i] as usize;
                    if s.members[g].is_empty() {
                        s.active.push_back(g as u16);
                    }
                    s.members[g].push_back(i as u16);
                }
                s.subs[i].push_back((pkt, bytes));
                s.bytes[i] += bytes as u64;
                s.len += 1;
            }
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<(PacketId, u32)> {
        match &mut self.packets {
            Packets::Fifo(q) => q.pop_front(),
            Packets::PerIngress(s) => {
                if let Some(order) = &mut s.order {
                    let (pkt, b, i) = order.pop_front()?;
                    let i = i as usize;
                    s.bytes[i] -= b as u64;
                    s.tx_packets[i] += 1;
                    s.tx_bytes[i] += b as u64;
                    s.len -= 1;
                    return Some((pkt, b));
                }
                let g = s.active.pop_front()? as usize;
                let i = s.members[g].pop_front().expect("an active group has a member") as usize;
                let head = s.subs[i].pop_front();
                if !s.subs[i].is_empty() {
                    s.members[g].push_back(i as u16);
                }
                if !s.members[g].is_empty() {
                    s.active.push_back(g as u16);
                }
                if let Some((_, b)) = head {
                    s.bytes[i] -= b as u64;
                    s.tx_packets[i] += 1;
                    s.tx_bytes[i] += b as u64;
                }
                s.len -= 1;
                head
            }
        }
    }

    /// Bytes of queue slots allocated (capacity, not occupancy).
    pub fn capacity_bytes(&self) -> usize {
        let slot = std::mem::size_of::<(PacketId, u32)>();
        match &self.packets {
            Packets::Fifo(q) => q.heap_bytes(),
            Packets::PerIngress(s) => {
                s.subs.iter().map(|q| q.capacity() * slot).sum::<usize>() + s.active.capacity() * 2
            }
        }
    }

    #[inline]
    fn front_bytes(&self) -> Option<u32> {
        match &self.packets {
            Packets::Fifo(q) => q.front().map(|x| x.1),
            Packets::PerIngress(s) if s.order.is_some() => s.order.as_ref().and_then(|o| o.front()).map(|x| x.1),
            Packets::PerIngress(s) => s
                .active
                .front()
                .and_then(|&g| s.members[g as usize].front())
                .and_then(|&i| s.subs[i as usize].front())
                .map(|x| x.1),
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

/// An egress port.
///
/// Laid out in cache lines by use (`repr(C)` keeps the order): the first
/// two lines hold everything an enqueue, a start and an end of transmission
/// read or update (the transmitter, the masks, the serialization time, the
/// per-packet counters); each class queue is a line of its own in one block
/// per port (its bytes and its first packets in place); the rest is read by
/// outputs or by features that are off in most runs.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Port {
    // Line 0.
    /// Packet being transmitted ([`NO_PACKET`]: none); see [`Port::in_tx`].
    tx_packet: u32,
    /// Bit `c` set when queue `c` is not empty.
    pub nonempty: u8,
    /// Bit `c` set while class `c` is paused by the link partner (PFC).
    pub paused: u8,
    pub local: u16,
    pub channel: ChannelId,
    pub node: NodeId,
    /// Whether `ctrl` holds frames (so that the common checks stay in this line).
    has_ctrl: bool,
    /// Per class: whether the last queue sample was non-zero.
    pub sampled_nonzero: u8,
    /// When the transmitter last became free.
    pub free_at: SimTime,
    /// When the frame in transmission started.
    pub tx_start: SimTime,
    /// `tx_time`'s whole picoseconds per byte (0: not whole); see [`Port::tx_duration`].
    ps_per_byte: u64,
    pub total_queued_bytes: u64,
    pub high_water_bytes: u64,
    // Line 1.
    pub queue_delay_sum_ps: u128,
    sched: Sched,
    pub enqueued_packets: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Classes 1 and up (empty with one class); see [`Port::queue`].
    upper: Box<[ClassQueue]>,
    // Line 2.
    /// Class 0, in place: with one class (the common case) every line a
    /// packet touches at the port follows from the port's index alone.
    class0: ClassQueue,
    // Line 3.
    pub rate: Rate,
    pub dropped_packets: u64,
    /// Serialization time at `rate`, precomputed.
    tx_time: TxTime,
    /// MAC control frames (PFC PAUSE): sent before any class, never paused,
    /// not charged to the buffer model.
    ctrl: VecDeque<PacketId>,
}

const NO_PACKET: u32 = u32::MAX;
const _: () = assert!(
    std::mem::offset_of!(Port, high_water_bytes) + 8 <= 64,
    "admission's port counters are in the port's first cache line"
);
const _: () = assert!(
    std::mem::offset_of!(Port, tx_bytes) + 8 <= 128,
    "a transmission's counters are in the port's first two cache lines"
);
const _: () = assert!(std::mem::size_of::<Sched>() == 8, "the scheduler's state is one word");
const _: () =
    assert!(std::mem::offset_of!(Port, upper) + 16 <= 128, "the port's hot fields end before its first class queue");
const _: () = assert!(std::mem::offset_of!(Port, class0) == 128, "class 0's queue is the port's third cache line");
const _: () = assert!(std::mem::size_of::<Port>() == 256, "a port is four cache lines");

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
            ps_per_byte: TxTime::new(rate).whole_ps_per_byte(),
            class0: ClassQueue::fifo(),
            upper: (1..classes).map(|_| ClassQueue::fifo()).collect(),
            nonempty: 0,
            tx_packet: NO_PACKET,
            free_at: SimTime::ZERO,
            tx_start: SimTime::ZERO,
            sched: Sched::Strict,
            enqueued_packets: 0,
            tx_packets: 0,
            tx_bytes: 0,
            dropped_packets: 0,
            queue_delay_sum_ps: 0,
            total_queued_bytes: 0,
            high_water_bytes: 0,
            sampled_nonzero: 0,
            ctrl: VecDeque::new(),
            has_ctrl: false,
            paused: 0,
        }
    }

    /// Sets the scheduler (checked with [`SchedulerConfig::check`]).
    pub fn set_scheduler(&mut self, cfg: &SchedulerConfig) {
        self.sched = match cfg {
            SchedulerConfig::Strict => Sched::Strict,
            SchedulerConfig::Drr { quantum_bytes } => {
                let classes = self.classes();
                let mut quantum = [0u64; 8];
                for (c, q) in quantum.iter_mut().enumerate().take(classes) {
                    *q = if quantum_bytes.len() == 1 { quantum_bytes[0] } else { quantum_bytes[c] } as u64;
                }
                Sched::Drr(Box::new(Drr { classes, quantum, deficit: [0; 8], cur: classes - 1, visited: false }))
            }
        };
    }

    /// Gives every class `inputs` per-ingress sub-queues (plus one for packets
    /// created at the node), served in plain round robin. Must be called while
    /// the port is empty.
    pub fn use_per_ingress_queues(&mut self, inputs: usize) {
        self.use_input_groups(inputs, &[], u64::MAX);
    }

    /// Per-ingress sub-queues in groups (`group[i]` is input `i`'s group),
    /// each holding at most `limit` bytes. Must be called while the port is empty.
    pub fn use_input_groups(&mut self, inputs: usize, group: &[u16], limit: u64) {
        assert!(self.is_empty() && self.is_idle());
        for q in self.queues_mut() {
            let mut s = Box::new(SubQueues::new(inputs, group));
            s.limit = limit;
            q.packets = Packets::PerIngress(s);
        }
    }

    /// FIFO classes that count each input's bytes, each input holding at
    /// most `limit` bytes. Must be called while the port is empty.
    pub fn use_fifo_inputs(&mut self, inputs: usize, limit: u64) {
        assert!(self.is_empty() && self.is_idle());
        for q in self.queues_mut() {
            let mut s = Box::new(SubQueues::new(inputs, &[]));
            s.order = Some(VecDeque::new());
            s.limit = limit;
            q.packets = Packets::PerIngress(s);
        }
    }

    /// Sets the byte limit of the per-ingress sub-queues (a VOQ device's
    /// queues under a FIFO arbiter); plain FIFO classes have none.
    pub fn set_input_limit(&mut self, limit: u64) {
        for q in self.queues_mut() {
            if let Packets::PerIngress(s) = &mut q.packets {
                s.limit = limit;
            }
        }
    }

    /// Number of classes.
    #[inline]
    pub fn classes(&self) -> usize {
        1 + self.upper.len()
    }

    /// The queue of class `c`.
    #[inline]
    pub fn queue(&self, c: usize) -> &ClassQueue {
        if c == 0 {
            &self.class0
        } else {
            &self.upper[c - 1]
        }
    }

    #[inline]
    pub fn queue_mut(&mut self, c: usize) -> &mut ClassQueue {
        if c == 0 {
            &mut self.class0
        } else {
            &mut self.upper[c - 1]
        }
    }

    /// The class queues, class 0 first.
    pub fn queues(&self) -> impl Iterator<Item = &ClassQueue> + '_ {
        std::iter::once(&self.class0).chain(self.upper.iter())
    }

    fn queues_mut(&mut self) -> impl Iterator<Item = &mut ClassQueue> + '_ {
        std::iter::once(&mut self.class0).chain(self.upper.iter_mut())
    }

    /// The bytes queued at the port and the bytes and packets of the queue of
    /// `class` (lines 0 and 2 with one class): what a static buffer admits by.
    #[inline]
    pub fn occupancy(&self, class: u8) -> Occupancy {
        let q = self.queue(class as usize);
        Occupancy { port_bytes: self.total_queued_bytes, queue_bytes: q.queued, queue_packets: q.len() as u64 }
    }

    /// Whether the queue of `class` can take `bytes` more from `in_port`
    /// under the input limit (always true for plain FIFO classes).
    #[inline]
    pub fn input_has_room(&self, class: u8, in_port: u16, bytes: u32) -> bool {
        match &self.queue(class as usize).packets {
            Packets::Fifo(_) => true,
            Packets::PerIngress(s) => s.bytes[s.index(in_port)] + bytes as u64 <= s.limit,
        }
    }

    /// Time to serialize `bytes` at the port's rate, exactly as
    /// [`TxTime::of`], from the first line when picoseconds per byte are whole.
    #[inline]
    pub fn tx_duration(&self, bytes: u64) -> SimTime {
        if self.ps_per_byte != 0 {
            if let Some(t) = bytes.checked_mul(self.ps_per_byte) {
                return SimTime(t);
            }
        }
        self.tx_time.of(bytes)
    }

    /// Runs the port at `rate` from its next frame on (a frame in
    /// transmission keeps its end).
    pub fn set_rate(&mut self, rate: Rate) {
        self.rate = rate;
        self.tx_time = TxTime::new(rate);
        self.ps_per_byte = self.tx_time.whole_ps_per_byte();
    }

    #[inline]
    pub fn is_idle(&self) -> bool {
        self.tx_packet == NO_PACKET
    }

    /// The packet being transmitted, if any.
    #[inline]
    pub fn in_tx(&self) -> Option<PacketId> {
        (self.tx_packet != NO_PACKET).then_some(PacketId(self.tx_packet))
    }

    /// For prefetch hints: the class strict priority would serve next (the
    /// highest unpaused class with packets; a guess under DRR), read from
    /// the port's first line.
    #[inline]
    pub fn next_class_hint(&self) -> usize {
        let eligible = self.nonempty & !self.paused;
        if eligible == 0 {
            0
        } else {
            7 - eligible.leading_zeros() as usize
        }
    }

    /// For prefetch hints: the queue of class `c` (above 0 it lives in a
    /// block of its own, named by the port's second line).
    #[inline]
    pub fn class_queue_hint(&self, c: usize) -> Option<&ClassQueue> {
        if c == 0 {
            Some(&self.class0)
        } else {
            self.upper.get(c - 1)
        }
    }

    /// The packet at the head of class `c`'s queue when that queue is a
    /// FIFO (for prefetch hints; class 0's is in the port's third line).
    #[inline]
    pub fn class_front(&self, c: usize) -> Option<PacketId> {
        match &self.class_queue_hint(c)?.packets {
            Packets::Fifo(q) => q.front().map(|x| x.0),
            Packets::PerIngress(_) => None,
        }
    }

    /// Starts transmitting `id`.
    #[inline]
    pub fn set_in_tx(&mut self, id: PacketId) {
        debug_assert!(id.0 != NO_PACKET);
        self.tx_packet = id.0;
    }

    /// Ends the transmission in progress, returning its packet.
    #[inline]
    pub fn take_in_tx(&mut self) -> Option<PacketId> {
        let id = self.in_tx();
        self.tx_packet = NO_PACKET;
        id
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.nonempty == 0 && !self.has_ctrl
    }

    /// Queues a MAC control frame (strict precedence over every class).
    #[inline]
    pub fn push_ctrl(&mut self, pkt: PacketId) {
        self.ctrl.push_back(pkt);
        self.has_ctrl = true;
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
        let q = self.queue_mut(c);
        q.push(pkt, bytes, in_port);
        q.queued += bytes as u64;
        q.high_water = q.high_water.max(q.queued);
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
        if self.has_ctrl {
            let id = self.ctrl.pop_front().expect("has_ctrl with no control frame");
            self.has_ctrl = !self.ctrl.is_empty();
            return Some((CTRL_CLASS, id));
        }
        let eligible = self.nonempty & !self.paused;
        if eligible == 0 {
            return None;
        }
        let c = match &mut self.sched {
            Sched::Strict => 7 - eligible.leading_zeros() as usize,
            Sched::Drr(d) => d.pick(&self.class0, &self.upper, eligible),
        };
        let q = self.queue_mut(c);
        let (pkt, _) = q.pop().expect("nonempty bit set on an empty queue");
        if q.is_empty() {
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
        self.queue_mut(class as usize).queued -= bytes as u64;
        self.total_queued_bytes -= bytes as u64;
    }

    /// Packets waiting in the queues (not counting the one being transmitted).
    pub fn queued_packets(&self) -> usize {
        self.queues().map(|q| q.len()).sum::<usize>() + self.ctrl.len()
    }

    /// Bytes of the control-frame queue's slots.
    pub fn ctrl_capacity_bytes(&self) -> usize {
        self.ctrl.capacity() * std::mem::size_of::<PacketId>()
    }

    /// Whether `pop` would return a packet (control frames or an unpaused class).
    #[inline]
    pub fn has_eligible(&self) -> bool {
        self.has_ctrl || self.nonempty & !self.paused != 0
    }
}

impl Drr {
    #[inline]
    fn advance(&mut self) {
        self.cur = if self.cur == 0 { self.classes - 1 } else { self.cur - 1 };
        self.visited = false;
    }

    /// Class of the next packet; `nonempty` must not be 0.
    fn pick(&mut self, class0: &ClassQueue, upper: &[ClassQueue], nonempty: u8) -> usize {
        loop {
            let c = self.cur;
            if nonempty & (1 << c) != 0 {
                if !self.visited {
                    self.deficit[c] += self.quantum[c];
                    self.visited = true;
                }
                let q = if c == 0 { class0 } else { &upper[c - 1] };
                let head = q.front_bytes().expect("non-empty class") as u64;
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
    fn a_fifo_class_takes_no_more_room_than_its_ring_buffer() {
        // The per-ingress sub-queues are boxed: ports of plain FIFO classes
        // do not pay for them (memory and cache lines per port).
        assert_eq!(std::mem::size_of::<ClassQueue>(), 64);
        assert_eq!(std::mem::size_of::<Packets>(), 48);
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
    fn hierarchical_round_robin_serves_groups_then_inputs() {
        let mut p = port(1);
        // Inputs 0 and 1 in group 0, input 2 alone in group 1.
        p.use_input_groups(3, &[0, 0, 1], u64::MAX);
        for i in 0..4 {
            p.push_from(0, PacketId(i), 100, 0);
            p.push_from(0, PacketId(10 + i), 100, 1);
            p.push_from(0, PacketId(20 + i), 100, 2);
        }
        let order: Vec<u32> = (0..8).map(|_| p.pop().unwrap().1 .0).collect();
        // Group 0 and group 1 alternate; inside group 0, inputs 0 and 1 alternate.
        assert_eq!(order, vec![0, 20, 10, 21, 1, 22, 11, 23]);
        let Packets::PerIngress(s) = &p.queue(0).packets else { panic!() };
        assert_eq!((s.tx_packets[0], s.tx_packets[1], s.tx_packets[2]), (2, 2, 4));
    }

    #[test]
    fn fifo_inputs_keep_arrival_order_and_count_each_input() {
        let mut p = port(1);
        p.use_fifo_inputs(2, 250);
        p.push_from(0, PacketId(0), 100, 1);
        p.push_from(0, PacketId(1), 100, 0);
        p.push_from(0, PacketId(2), 100, 1);
        assert!(!p.input_has_room(0, 1, 100) && p.input_has_room(0, 0, 100));
        let order: Vec<u32> = std::iter::from_fn(|| p.pop().map(|x| x.1 .0)).collect();
        assert_eq!(order, vec![0, 1, 2]);
        let Packets::PerIngress(s) = &p.queue(0).packets else { panic!() };
        assert_eq!((s.tx_packets[0], s.tx_packets[1]), (1, 2));
        assert!(p.input_has_room(0, 1, 200));
    }

    #[test]
    fn the_input_limit_bounds_each_sub_queue() {
        let mut p = port(1);
        p.use_input_groups(2, &[0, 0], 250);
        p.push_from(0, PacketId(0), 100, 0);
        p.push_from(0, PacketId(1), 100, 0);
        assert!(!p.input_has_room(0, 0, 100));
        assert!(p.input_has_room(0, 0, 50));
        assert!(p.input_has_room(0, 1, 100));
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
        assert!(p.queues().all(|q| q.high_water == 10));
    }
}
