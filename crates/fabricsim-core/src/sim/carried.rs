//! Carried traffic on the wire, per time bin (`stats.throughput_interval`):
//!
//! - `carried_links`: per link direction, the frames and frame bytes whose
//!   transmission ended in the bin and `busy_ps`, the time the transmitter
//!   was busy in the bin (preamble and inter-frame gap included). A frame's
//!   serialization is split exactly between the bins it spans, so
//!   `busy_ps / interval` is the link's utilization in the bin and never
//!   exceeds 1. Every frame counts: data, retransmissions, ACKs, PFC frames.
//! - `carried_flows`: per flow, the frames and frame bytes (headers and
//!   retransmissions included) that reached the flow's destination host (every
//!   member, for multicast) in the bin, counted when their last bit arrived. Per receiving host this is
//!   bounded by the access link: at most `rate x interval` plus one frame.
//!
//! `throughput` (in-order application bytes when the receiver's application
//! gets them, see `sim/transport.rs`) is a different view: after a loss is
//! repaired, a bin there can exceed what the link carried.

use crate::stats::{Column, FlowStats, Table};

/// A channel's current bin: one cache line, the only one `on_link` touches.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct LinkBin {
    /// `[lo, hi)`: the bin's span in ps, so that a frame inside it is
    /// counted without a division.
    lo: u64,
    hi: u64,
    /// Bin index ([`NONE`] before the first frame), frames, bytes, busy ps.
    cur: (u64, u64, u64, u64),
}

const EMPTY_BIN: LinkBin = LinkBin { lo: 0, hi: 0, cur: (NONE, 0, 0, 0) };

/// Link and flow counters of the current bin; finished bins as rows.
#[derive(Debug, Default)]
pub(super) struct Carried {
    interval: u64,
    /// Per channel: its current bin.
    links: Vec<LinkBin>,
    link_rows: Vec<(u64, u32, u64, u64, u64)>,
    /// Per flow: (bin end in ps, frames, bytes); a bin end of 0 means none yet.
    flows: Vec<(u64, u64, u64)>,
    flow_rows: Vec<(u64, u32, u64, u64)>,
}

const NONE: u64 = u64::MAX;

impl Carried {
    pub(super) fn new(interval_ps: u64, channels: usize) -> Self {
        Carried {
            interval: interval_ps,
            links: if interval_ps > 0 { vec![EMPTY_BIN; channels] } else { Vec::new() },
            ..Default::default()
        }
    }

    fn link_bin(&mut self, ch: usize, bin: u64) -> &mut (u64, u64, u64, u64) {
        let l = &mut self.links[ch];
        if l.cur.0 != bin {
            if l.cur.0 != NONE {
                self.link_rows.push((l.cur.0, ch as u32, l.cur.1, l.cur.2, l.cur.3));
            }
            *l = LinkBin { lo: bin * self.interval, hi: (bin + 1) * self.interval, cur: (bin, 0, 0, 0) };
        }
        &mut l.cur
    }

    /// Bytes of the per-channel bins.
    pub(super) fn link_bytes(&self) -> usize {
        std::mem::size_of_val(&self.links[..])
    }

    /// Prefetches channel `ch`'s bin (see `sim/prefetch.rs`).
    #[inline(always)]
    pub(super) fn prefetch_link(&self, ch: usize) {
        super::prefetch::lines(&self.links, ch, 0, 1);
    }

    /// Channel `ch` transmitted a frame of `bytes` over `[start, end)` ps.
    #[inline]
    pub(super) fn on_link(&mut self, ch: usize, start: u64, end: u64, bytes: u64) {
        if self.interval == 0 {
            return;
        }
        let l = &mut self.links[ch];
        if start >= l.lo && end <= l.hi && l.cur.0 != NONE {
            // The usual case: the frame lies inside the channel's current bin.
            let cur = &mut l.cur;
            cur.1 += 1;
            cur.2 += bytes;
            cur.3 += end - start;
            return;
        }
        self.on_link_slow(ch, start, end, bytes);
    }

    #[cold]
    fn on_link_slow(&mut self, ch: usize, start: u64, end: u64, bytes: u64) {
        let i = self.interval;
        let mut t = start;
        while t < end {
            let bin = t / i;
            let seg_end = end.min((bin + 1) * i);
            self.link_bin(ch, bin).3 += seg_end - t;
            t = seg_end;
        }
        let cur = self.link_bin(ch, (end.max(1) - 1) / i);
        cur.1 += 1;
        cur.2 += bytes;
    }

    /// A frame of `bytes` of `flow` reached the flow's destination at `now`.
    #[inline]
    pub(super) fn on_flow(&mut self, flow: u32, now: u64, bytes: u64) {
        let i = self.interval;
        if i == 0 {
            return;
        }
        let f = flow as usize;
        if self.flows.len() <= f {
            self.flows.resize(f + 1, (0, 0, 0));
        }
        let cur = &mut self.flows[f];
        // Bins are `[end - i, end)`; arrivals at one receiver come in time order.
        if now >= cur.0 {
            if cur.0 != 0 {
                self.flow_rows.push((cur.0 / i - 1, flow, cur.1, cur.2));
            }
            *cur = ((now / i + 1) * i, 0, 0);
        }
        cur.1 += 1;
        cur.2 += bytes;
    }

    /// The `carried_links` table; `ends[ch]` is (src node, src port, dst node).
    pub(super) fn links_table(&mut self, ends: &[(u32, u32, u32)]) -> Table {
        let mut rows = std::mem::take(&mut self.link_rows);
        for (ch, cur) in self.links.iter().map(|l| &l.cur).enumerate() {
            if cur.0 != NONE {
                rows.push((cur.0, ch as u32, cur.1, cur.2, cur.3));
            }
        }
        rows.sort_unstable();
        let i = self.interval;
        let mut t = Table::default();
        t.push("time_ps", Column::U64(rows.iter().map(|r| r.0 * i).collect()));
        t.push("src", Column::U32(rows.iter().map(|r| ends[r.1 as usize].0).collect()));
        t.push("src_port", Column::U32(rows.iter().map(|r| ends[r.1 as usize].1).collect()));
        t.push("dst", Column::U32(rows.iter().map(|r| ends[r.1 as usize].2).collect()));
        t.push("frames", Column::U64(rows.iter().map(|r| r.2).collect()));
        t.push("bytes", Column::U64(rows.iter().map(|r| r.3).collect()));
        t.push("busy_ps", Column::U64(rows.iter().map(|r| r.4).collect()));
        t
    }

    /// The `carried_flows` table.
    pub(super) fn flows_table(&mut self, flows: &[FlowStats]) -> Table {
        let mut rows = std::mem::take(&mut self.flow_rows);
        for (f, cur) in self.flows.iter().enumerate() {
            if cur.0 != 0 {
                rows.push((cur.0 / self.interval - 1, f as u32, cur.1, cur.2));
            }
        }
        rows.sort_unstable();
        let i = self.interval;
        let mut t = Table::default();
        t.push("time_ps", Column::U64(rows.iter().map(|r| r.0 * i).collect()));
        t.push("flow_id", Column::U32(rows.iter().map(|r| r.1).collect()));
        t.push("host", Column::U32(rows.iter().map(|r| flows[r.1 as usize].dst).collect()));
        t.push("frames", Column::U64(rows.iter().map(|r| r.2).collect()));
        t.push("bytes", Column::U64(rows.iter().map(|r| r.3).collect()));
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_across_a_bin_edge_splits_its_busy_time() {
        let mut c = Carried::new(1_000, 1);
        c.on_link(0, 900, 1_300, 50);
        c.on_link(0, 1_300, 1_700, 50);
        c.on_link(0, 2_500, 3_000, 40); // ends exactly at a bin edge
        let t = c.links_table(&[(0, 1, 2)]);
        let Some(Column::U64(busy)) = t.column("busy_ps") else { panic!() };
        let Some(Column::U64(frames)) = t.column("frames") else { panic!() };
        let Some(Column::U64(time)) = t.column("time_ps") else { panic!() };
        assert_eq!(time, &vec![0, 1_000, 2_000]);
        assert_eq!(busy, &vec![100, 700, 500]);
        assert_eq!(frames, &vec![0, 2, 1]);
    }
}
