//! One pipe: a packet-rate server fed by per-port waiting queues, with a
//! fixed latency.
//!
//! ```text
//!   port a ──> [ queue a (limit) ] ─┐
//!   port b ──> [ queue b (limit) ] ─┼─ round robin ──> issue slot (busy ps) ──> delay line (latency) ──> out
//!   host   ──> [ queue   (limit) ] ─┘
//! ```
//!
//! The pipe issues one packet at a time: a packet whose stages cost `c`
//! passes holds the issue slot for `c / rate` seconds (its *busy* time), so
//! the pipe forwards at most `rate / c` packets per second. A packet leaves
//! `latency` (plus the latency of the stages it ran) after it was issued, never
//! before the packet issued ahead of it. Packets that find the slot busy wait
//! in their port's FIFO, each with its own limit; one that finds its queue
//! full is dropped (`pipeline_queue_full`). When the slot frees, the pipe
//! takes the next packet from the ports with waiting packets in turn (packet
//! round robin), as an ingress scheduler does between the ports of a pipe:
//! backlogged ports get equal packet rates, `rate / (sum of their packets'
//! costs)` each, whatever their own line rate.
//!
//! The pipe is plain state: the simulation drives it (see `sim/pipeline.rs`)
//! with at most one pending start event (for the next packet to issue) and
//! one pending exit event (for the head of the delay line).

use super::stage::Dir;
use crate::ids::PacketId;
use crate::units::SimTime;
use std::collections::VecDeque;

/// A packet inside a pipe, with what the pipe must remember about it.
#[derive(Clone, Copy, Debug)]
pub struct Held {
    pub id: PacketId,
    /// Local port it arrived on ([`crate::packet::LOCAL_PORT`] when sent by the host).
    pub in_port: u16,
    pub dir: Dir,
    pub bytes: u32,
    /// When it was offered to the pipe.
    pub since: SimTime,
    /// It waited in the queue before it was issued.
    pub waited: bool,
}

/// Counters of one pipe.
#[derive(Clone, Copy, Debug, Default)]
pub struct PipeStats {
    pub offered: u64,
    pub queue_drops: u64,
    /// Packets issued (whatever the stages decided).
    pub issued: u64,
    pub busy_ps: u64,
    pub wait_sum_ps: u128,
    pub wait_max_ps: u64,
    pub high_water_packets: u64,
    pub high_water_bytes: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Pipe {
    /// Per input slot (a port of the pipe, or the host): its waiting packets.
    queues: Vec<VecDeque<Held>>,
    queue_bytes: Vec<u64>,
    /// Slots with waiting packets, in service order.
    active: VecDeque<u16>,
    waiting: u64,
    waiting_bytes: u64,
    line: VecDeque<(SimTime, Held)>,
    /// When the issue slot is free again.
    pub free_at: SimTime,
    last_exit: SimTime,
    /// A start event for the next waiting packet is pending.
    pub start_pending: bool,
    pub stats: PipeStats,
}

impl Pipe {
    /// A pipe with `slots` input slots.
    pub fn new(slots: usize) -> Pipe {
        Pipe {
            queues: (0..slots).map(|_| VecDeque::new()).collect(),
            queue_bytes: vec![0; slots],
            ..Default::default()
        }
    }

    /// Whether a packet offered now is issued at once.
    #[inline]
    pub fn can_issue(&self, now: SimTime) -> bool {
        self.waiting == 0 && self.free_at <= now
    }

    /// Queues a packet that cannot be issued now in input slot `slot`, within
    /// that slot's limits; `false` if its queue is full.
    pub fn wait(&mut self, slot: usize, h: Held, max_packets: u64, max_bytes: u64) -> bool {
        let q = &mut self.queues[slot];
        if q.len() as u64 >= max_packets || self.queue_bytes[slot] + h.bytes as u64 > max_bytes {
            self.stats.queue_drops += 1;
            return false;
        }
        if q.is_empty() {
            self.active.push_back(slot as u16);
        }
        q.push_back(h);
        self.queue_bytes[slot] += h.bytes as u64;
        self.waiting += 1;
        self.waiting_bytes += h.bytes as u64;
        self.stats.high_water_packets = self.stats.high_water_packets.max(self.waiting);
        self.stats.high_water_bytes = self.stats.high_water_bytes.max(self.waiting_bytes);
        true
    }

    /// The next waiting packet (round robin over the slots), taken out to be issued.
    pub fn next_waiting(&mut self) -> Option<Held> {
        let slot = self.active.pop_front()? as usize;
        let h = self.queues[slot].pop_front().expect("an active slot has a packet");
        if !self.queues[slot].is_empty() {
            self.active.push_back(slot as u16);
        }
        self.queue_bytes[slot] -= h.bytes as u64;
        self.waiting -= 1;
        self.waiting_bytes -= h.bytes as u64;
        Some(h)
    }

    pub fn has_waiting(&self) -> bool {
        self.waiting > 0
    }

    /// Number of input slots.
    pub fn slots(&self) -> usize {
        self.queues.len()
    }

    /// Issues a packet at `now`, holding the slot for `busy`.
    pub fn issue(&mut self, h: &mut Held, now: SimTime, busy: SimTime) {
        let wait = (now - h.since).0;
        h.waited = wait > 0;
        self.stats.issued += 1;
        self.stats.busy_ps += busy.0;
        self.stats.wait_sum_ps += wait as u128;
        self.stats.wait_max_ps = self.stats.wait_max_ps.max(wait);
        self.free_at = now + busy;
    }

    /// When a packet issued at `now` with `latency` leaves: never before the
    /// packet issued ahead of it.
    pub fn exit_time(&mut self, now: SimTime, latency: SimTime) -> SimTime {
        let exit = (now + latency).max(self.last_exit);
        self.last_exit = exit;
        exit
    }

    /// Puts an issued packet on the delay line; `true` if it is now its head
    /// (an exit event must be scheduled).
    pub fn hold(&mut self, exit: SimTime, h: Held) -> bool {
        self.line.push_back((exit, h));
        self.line.len() == 1
    }

    /// Takes the head of the delay line; returns it and the next head's exit time.
    pub fn leave(&mut self) -> (Held, Option<SimTime>) {
        let (_, h) = self.line.pop_front().expect("exit from an empty pipe");
        (h, self.line.front().map(|x| x.0))
    }

    /// Packets inside the pipe (waiting or on the delay line).
    pub fn held_packets(&self) -> usize {
        self.waiting as usize + self.line.len()
    }

    /// Waiting packets and bytes (the queues' occupancy).
    pub fn queue(&self) -> (u64, u64) {
        (self.waiting, self.waiting_bytes)
    }
}
