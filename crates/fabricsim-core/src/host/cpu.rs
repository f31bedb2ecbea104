//! CPU cores and the receive rings they poll.
//!
//! ```text
//!   a read() call going on ─────────────┐ 0th
//!   softirq ──> inline tx batches ──────┤ 1st
//!   NIC ──> ring ──> interrupt ──> polls ┤ 2nd ──> one item at a time (service = its stages' costs / share)
//!   app ──> tx batches, reader runs (FIFO)┘ 3rd   (a poll: up to `budget` frames of the ring, GRO-merged)
//! ```
//!
//! A core serves one work item at a time: a transmit batch (a GSO skb, or a
//! lone packet) or a NAPI poll of one of its receive rings. Softirq work comes
//! first, as in Linux, where it runs before the interrupted process resumes:
//! first the transmit work a poll generated inline (the ACKs and the data a
//! receive triggers), then the queued polls in turn, then the applications'
//! transmit batches and the receiving applications' runs (`Work::Read`: a
//! TCP reader that became runnable, `transport/tcp/reader.rs`) in FIFO order
//! of when they became runnable. A reader's `read()` call is not
//! interrupted: when it goes on copying (after processing its socket
//! backlog) it keeps the core (`resume`). A poll takes up to `napi_budget` frames;
//! if frames remain, another poll of the ring joins the back of the poll
//! queue, otherwise the ring's interrupt is enabled again.
//!
//! The simulation glue (`sim/host.rs`) drives the state here with at most one
//! pending `CpuRun` event per core.

use crate::ids::PacketId;
use crate::units::SimTime;
use std::collections::VecDeque;

/// A transmit batch waiting for a core: its `n` packets are the next ones of
/// the queue it sits in.
#[derive(Clone, Copy, Debug)]
pub struct TxBatch {
    /// Host datapath that sends it.
    pub dp: u32,
    pub flow: u32,
    pub n: u32,
    /// Frame bytes of its packets.
    pub bytes: u32,
    /// When it was formed (packets join only a batch formed at the same instant).
    pub at: SimTime,
    /// TCP segments with payload (only those batch).
    pub tcp_data: bool,
}

/// A core's work item.
#[derive(Clone, Copy, Debug)]
pub enum Work {
    Tx(TxBatch),
    /// A NAPI poll of ring `ring`; `irq`: the first after an interrupt.
    Rx {
        ring: u32,
        irq: bool,
    },
    /// A run of the receiving application of TCP connection `tcp`: one
    /// chunk of a `read()` call, its copy time on this core.
    Read {
        tcp: u32,
    },
}

/// Counters of one core.
#[derive(Clone, Copy, Debug, Default)]
pub struct CoreStats {
    pub busy_ps: u64,
    pub tx_batches: u64,
    pub tx_packets: u64,
    pub polls: u64,
    pub rx_frames: u64,
    pub rx_skbs: u64,
    pub tx_queue_drops: u64,
    pub tx_queue_high_water: u64,
    /// Time packets waited for the core (from joining its queue to service start).
    pub wait_sum_ps: u128,
    pub waited: u64,
}

/// One CPU core.
#[derive(Clone, Debug, Default)]
pub struct Core {
    /// Machine (index of its first host's datapath) and number within it, for outputs.
    pub machine_dp: u32,
    pub index: u32,
    /// Applications' transmit batches.
    pub fifo: VecDeque<Work>,
    /// Polls of its rings, served before `fifo`.
    pub polls: VecDeque<Work>,
    /// Packets of the transmit batches in `fifo`, in order.
    pub tx_pkts: VecDeque<PacketId>,
    /// Transmit batches generated inline by a poll, served before `fifo`.
    pub inline: VecDeque<TxBatch>,
    pub inline_pkts: VecDeque<PacketId>,
    /// A reader's `read()` call that goes on: served before anything else.
    pub resume: Option<Work>,
    /// What it serves now, if anything.
    pub current: Option<Work>,
    /// Packets of the item in service (a batch's packets, a poll's frames).
    pub serving: Vec<PacketId>,
    /// For a poll: the skb of each frame in `serving`, and the number of skbs.
    pub skb_of: Vec<u32>,
    pub skbs: u32,
    /// When the item in service started.
    pub since: SimTime,
    /// A `CpuRun` event is pending.
    pub pending: bool,
    pub stats: CoreStats,
    /// Busy picoseconds per time bin.
    pub bins: Vec<u64>,
}

/// The most bins a core keeps: a longer run widens them (see [`Core::widen_bins`]).
pub const MAX_BINS: u64 = 4096;

impl Core {
    /// Merges each two neighbouring bins into one, for bins twice as wide.
    pub fn widen_bins(&mut self) {
        let merged: Vec<u64> = self.bins.chunks(2).map(|pair| pair.iter().sum()).collect();
        self.bins = merged;
    }

    /// Packets waiting in its transmit queues.
    pub fn tx_queued(&self) -> usize {
        self.tx_pkts.len() + self.inline_pkts.len()
    }

    /// Packets it holds (waiting to transmit or in service).
    pub fn held(&self) -> usize {
        self.tx_queued() + self.serving.len()
    }

    /// Whether it has nothing to do.
    pub fn idle(&self) -> bool {
        self.current.is_none()
            && self.resume.is_none()
            && self.fifo.is_empty()
            && self.inline.is_empty()
            && self.polls.is_empty()
    }

    /// Adds a transmit packet: it joins the last batch of its queue when that
    /// batch is of the same datapath and flow, formed at the same instant,
    /// both carry TCP payload and the batch stays within `max_bytes`;
    /// otherwise it starts a batch of its own.
    #[allow(clippy::too_many_arguments)]
    pub fn push_tx(
        &mut self,
        inline: bool,
        dp: u32,
        flow: u32,
        id: PacketId,
        bytes: u32,
        tcp_data: bool,
        now: SimTime,
        max_bytes: u32,
    ) {
        let (batches_last, pkts) = if inline {
            (self.inline.back_mut(), &mut self.inline_pkts)
        } else {
            let last = match self.fifo.back_mut() {
                Some(Work::Tx(b)) => Some(b),
                _ => None,
            };
            (last, &mut self.tx_pkts)
        };
        pkts.push_back(id);
        if let Some(b) = batches_last {
            if b.dp == dp && b.flow == flow && b.at == now && tcp_data && b.tcp_data && b.bytes + bytes <= max_bytes {
                b.n += 1;
                b.bytes += bytes;
                return;
            }
        }
        let b = TxBatch { dp, flow, n: 1, bytes, at: now, tcp_data };
        if inline {
            self.inline.push_back(b);
        } else {
            self.fifo.push_back(Work::Tx(b));
        }
        let q = self.tx_queued() as u64;
        self.stats.tx_queue_high_water = self.stats.tx_queue_high_water.max(q);
    }

    /// Takes the next item to serve (a reader's call going on, inline work,
    /// then polls, then the applications' batches and reader runs) and moves
    /// its transmit packets into `serving`.
    pub fn next(&mut self) -> Option<Work> {
        self.serving.clear();
        let w = if let Some(w) = self.resume.take() {
            w
        } else if let Some(b) = self.inline.pop_front() {
            for _ in 0..b.n {
                self.serving.push(self.inline_pkts.pop_front().expect("a batch has its packets"));
            }
            Work::Tx(b)
        } else if let Some(w) = self.polls.pop_front() {
            w
        } else {
            let w = self.fifo.pop_front()?;
            if let Work::Tx(b) = w {
                for _ in 0..b.n {
                    self.serving.push(self.tx_pkts.pop_front().expect("a batch has its packets"));
                }
            }
            w
        };
        Some(w)
    }

    /// Adds busy time `[start, end)` to the bins of width `bin_ps` (0: no bins).
    pub fn account(&mut self, start: SimTime, end: SimTime, bin_ps: u64) {
        self.stats.busy_ps += (end - start).0;
        if bin_ps == 0 {
            return;
        }
        let mut t = start.0;
        while t < end.0 {
            let bin = (t / bin_ps) as usize;
            let bin_end = (bin as u64 + 1) * bin_ps;
            let upto = bin_end.min(end.0);
            if self.bins.len() <= bin {
                self.bins.resize(bin + 1, 0);
            }
            self.bins[bin] += upto - t;
            t = upto;
        }
    }
}

/// A NIC receive queue and the ring it fills, polled by one core.
#[derive(Clone, Debug, Default)]
pub struct Ring {
    pub dp: u32,
    /// Global index of its core.
    pub core: u32,
    pub frames: VecDeque<PacketId>,
    /// A poll is queued or running (the interrupt is disabled).
    pub napi: bool,
    /// The coalescing timer is armed (its event's generation is `gen`).
    pub timer: bool,
    pub gen: u32,
    /// When the current poll was raised by an interrupt.
    pub raised_at: SimTime,
    pub interrupts: u64,
    pub drops: u64,
    pub high_water: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_time_splits_across_bins() {
        let mut c = Core::default();
        c.account(SimTime(50), SimTime(250), 100);
        assert_eq!(c.bins, vec![50, 100, 50]);
        assert_eq!(c.stats.busy_ps, 200);
        c.account(SimTime(250), SimTime(260), 0);
        assert_eq!(c.stats.busy_ps, 210);
        c.account(SimTime(300), SimTime(320), 100);
        assert_eq!(c.bins, vec![50, 100, 50, 20]);
        c.widen_bins();
        assert_eq!(c.bins, vec![150, 70]);
        c.account(SimTime(390), SimTime(410), 200);
        assert_eq!(c.bins, vec![150, 80, 10]);
    }

    #[test]
    fn a_reader_waits_behind_softirq_work_and_earlier_batches_but_a_call_going_on_comes_first() {
        let mut c = Core::default();
        let t = SimTime(1);
        c.push_tx(false, 0, 1, PacketId(0), 1000, true, t, 3000);
        c.fifo.push_back(Work::Read { tcp: 7 });
        c.push_tx(false, 0, 2, PacketId(1), 1000, true, t, 3000);
        c.polls.push_back(Work::Rx { ring: 0, irq: true });
        c.push_tx(true, 0, 3, PacketId(2), 64, false, t, 3000);
        let order: Vec<String> = std::iter::from_fn(|| c.next()).map(|w| format!("{w:?}")).collect();
        assert_eq!(order.len(), 5);
        assert!(order[0].contains("flow: 3"), "inline softirq work first: {order:?}");
        assert!(order[1].starts_with("Rx"), "then the polls: {order:?}");
        assert!(order[2].contains("flow: 1"), "then FIFO by when runnable: {order:?}");
        assert_eq!(order[3], "Read { tcp: 7 }");
        assert!(order[4].contains("flow: 2"));
        // A read() call that goes on keeps the core ahead of softirq work.
        c.polls.push_back(Work::Rx { ring: 0, irq: false });
        c.resume = Some(Work::Read { tcp: 7 });
        assert!(!c.idle());
        assert!(matches!(c.next(), Some(Work::Read { tcp: 7 })));
        assert!(matches!(c.next(), Some(Work::Rx { .. })));
        assert!(c.idle());
    }

    #[test]
    fn packets_of_one_flow_and_instant_batch_up_to_the_limit() {
        let mut c = Core::default();
        let t = SimTime(7);
        for i in 0..5 {
            c.push_tx(false, 0, 1, PacketId(i), 1000, true, t, 3000);
        }
        // Another flow, then an ACK of the first: separate batches.
        c.push_tx(false, 0, 2, PacketId(10), 1000, true, t, 3000);
        c.push_tx(false, 0, 1, PacketId(11), 64, false, t, 3000);
        let sizes: Vec<u32> = c
            .fifo
            .iter()
            .map(|w| match w {
                Work::Tx(b) => b.n,
                _ => 0,
            })
            .collect();
        assert_eq!(sizes, vec![3, 2, 1, 1]);
        // Inline work goes first.
        c.push_tx(true, 0, 3, PacketId(20), 64, false, t, 3000);
        assert!(matches!(c.next(), Some(Work::Tx(TxBatch { flow: 3, .. }))));
        assert_eq!(c.serving, vec![PacketId(20)]);
        assert!(matches!(c.next(), Some(Work::Tx(TxBatch { flow: 1, n: 3, .. }))));
        assert_eq!(c.serving, vec![PacketId(0), PacketId(1), PacketId(2)]);
        assert_eq!(c.tx_queued(), 4);
    }
}
