//! The SACK scoreboard (RFC 6675 2-4): one record per outstanding segment.
//!
//! Segments are MSS-aligned (every segment but a flow's last is one MSS and
//! starts at a multiple of it), so the record of sequence number `seq` is at
//! index `(seq - base) / mss` of a deque that starts at `SND.UNA`. Each record
//! keeps the segment's last transmission time (RACK, RFC 8985) and four flags:
//! SACKed, lost, a retransmission in flight, ever retransmitted.
//!
//! Counters are kept in bytes so that `pipe` (RFC 6675 4, "SetPipe") is
//! `outstanding - sacked - lost + retransmitted`: a segment neither SACKed nor
//! lost counts once, a lost one only if its retransmission is in flight, and a
//! retransmitted one that was not lost (a tail loss probe) twice, as in RFC
//! 6675's `pipe` and Linux's `tcp_packets_in_flight`.
//!
//! Costs stay amortized O(1) per segment: the ranges already SACKed are kept
//! as sorted intervals, so a block repeated in later ACKs is skipped; the
//! search for the next segment to retransmit and the DupThresh loss marking
//! move cursors forward; RACK walks a queue of transmissions in time order
//! and stops at the first one not yet due.

use crate::units::SimTime;
use std::collections::VecDeque;

pub const SACKED: u8 = 1;
pub const LOST: u8 = 2;
/// A retransmission of this segment is in flight.
pub const RETRANS: u8 = 4;
pub const EVER_RETRANS: u8 = 8;

#[derive(Clone, Copy, Debug, Default)]
pub struct SegRec {
    /// Time of the latest transmission.
    pub xmit: SimTime,
    pub flags: u8,
}

/// The most recently sent of the segments an ACK newly delivered (for RACK).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub xmit: SimTime,
    pub end: u64,
    pub retransmitted: bool,
}

/// What one ACK delivered, as RACK reads it (RFC 8985 6.2 step 2): the most
/// recently sent of the segments it delivered (`latest`), and the one whose
/// RTT becomes `RACK.rtt` (`rtt_from`). A retransmitted segment delivered
/// sooner than the minimum RTT acknowledges its original transmission and
/// counts for neither.
///
/// Which RTT is kept depends on the order the deliveries are taken in.
/// RFC 8985 takes them in the order they were sent, so `RACK.rtt` is the
/// latest-sent segment's. Linux (`tcp_rack_advance`, called per newly
/// delivered skb, last call wins) takes them as `tcp_ack` walks them: the
/// SACKed ones in ascending sequence (`tcp_sacktag_write_queue` sorts the
/// blocks), then the cumulatively acknowledged ones in ascending sequence
/// (`tcp_clean_rtx_queue`). So when an ACK both SACKs and advances SND.UNA,
/// Linux keeps the RTT of the highest cumulatively acknowledged segment; if
/// that segment left in the same burst as a lost one after it, the lost one
/// is exactly `RACK.rtt` old and not yet past the reordering window: the
/// connection waits in Disorder for the next ACK (`in_ack_order`).
#[derive(Clone, Copy, Debug)]
pub struct Deliveries {
    now: SimTime,
    min_rtt: Option<SimTime>,
    in_ack_order: bool,
    pub latest: Option<Delivered>,
    /// Linux order: the highest SACKed segment, and the last cumulatively acknowledged one.
    sacked_top: Option<Delivered>,
    cum_last: Option<Delivered>,
}

impl Deliveries {
    pub fn new(now: SimTime, min_rtt: Option<SimTime>, in_ack_order: bool) -> Self {
        Deliveries { now, min_rtt, in_ack_order, latest: None, sacked_top: None, cum_last: None }
    }

    fn counts(&self, d: &Delivered) -> bool {
        !(d.retransmitted && self.min_rtt.map_or(false, |m| self.now.saturating_sub(d.xmit) < m))
    }

    fn keep_latest(&mut self, d: Delivered) {
        if self.latest.map_or(true, |cur| sent_after(d.xmit, d.end, cur.xmit, cur.end)) {
            self.latest = Some(d);
        }
    }

    /// A segment newly SACKed.
    fn sacked(&mut self, d: Delivered) {
        if self.counts(&d) {
            self.keep_latest(d);
            if self.sacked_top.map_or(true, |t| d.end > t.end) {
                self.sacked_top = Some(d);
            }
        }
    }

    /// A segment newly acknowledged by the cumulative ACK (taken in ascending sequence).
    fn cum_acked(&mut self, d: Delivered) {
        if self.counts(&d) {
            self.keep_latest(d);
            self.cum_last = Some(d);
        }
    }

    /// The segment whose RTT becomes `RACK.rtt`.
    pub fn rtt_from(&self) -> Option<Delivered> {
        if self.in_ack_order {
            self.cum_last.or(self.sacked_top)
        } else {
            self.latest
        }
    }
}

/// RFC 8985 `RACK_sent_after`: was `(t1, end1)` sent after `(t2, end2)`?
pub fn sent_after(t1: SimTime, end1: u64, t2: SimTime, end2: u64) -> bool {
    t1 > t2 || (t1 == t2 && end1 > end2)
}

#[derive(Clone, Debug)]
pub struct Scoreboard {
    mss: u64,
    total: u64,
    /// Sequence number of `segs[0]` (SND.UNA).
    base: u64,
    /// End of the highest segment sent (SND.MAX, RFC 6675 HighData).
    high: u64,
    segs: VecDeque<SegRec>,
    /// Ranges known to be SACKed, sorted, disjoint, not touching, above `base`.
    sacked_ranges: Vec<(u64, u64)>,
    pub sacked_bytes: u64,
    pub sacked_segments: u64,
    lost_bytes: u64,
    retrans_bytes: u64,
    /// Segments marked lost whose retransmission is not yet sent.
    lost_waiting: u64,
    /// No segment below this waits for retransmission.
    retx_hint: u64,
    /// DupThresh marking has looked at every segment below this.
    dupthresh_mark: u64,
    /// Highest SACKed sequence number (end), at least `base`.
    fack: u64,
    /// No segment below this qualifies for RFC 6675 NextSeg rule 3.
    rule3_hint: u64,
    /// A segment never retransmitted was delivered after one sent later (RFC 8985 6.2).
    pub reordering_seen: bool,
    /// Segments marked lost so far (by any rule).
    pub lost_marks: u64,
    /// Transmissions in time order (sequence number, time), for RACK.
    tsorted: VecDeque<(u64, SimTime)>,
    time_order: bool,
}

impl Scoreboard {
    /// `total`: the flow's size (the last segment may be short); `time_order`:
    /// keep the transmission queue RACK needs.
    /// The flow's size grew (an application write).
    pub fn set_total(&mut self, total: u64) {
        self.total = total;
    }

    pub fn new(mss: u64, total: u64, time_order: bool) -> Self {
        Scoreboard {
            mss,
            total,
            base: 0,
            high: 0,
            segs: VecDeque::new(),
            sacked_ranges: Vec::new(),
            sacked_bytes: 0,
            sacked_segments: 0,
            lost_bytes: 0,
            retrans_bytes: 0,
            lost_waiting: 0,
            retx_hint: 0,
            dupthresh_mark: 0,
            fack: 0,
            rule3_hint: 0,
            reordering_seen: false,
            lost_marks: 0,
            tsorted: VecDeque::new(),
            time_order,
        }
    }

    #[inline]
    fn idx(&self, seq: u64) -> usize {
        ((seq - self.base) / self.mss) as usize
    }

    /// Payload bytes of the segment starting at `seq`.
    #[inline]
    pub fn seg_len(&self, seq: u64) -> u64 {
        (self.total - seq).min(self.mss)
    }

    pub fn rec(&self, seq: u64) -> SegRec {
        self.segs[self.idx(seq)]
    }

    pub fn base(&self) -> u64 {
        self.base
    }

    pub fn high(&self) -> u64 {
        self.high
    }

    /// RFC 6675 4 `pipe`: bytes presumed in the network.
    pub fn pipe(&self) -> u64 {
        (self.high - self.base) - self.sacked_bytes - self.lost_bytes + self.retrans_bytes
    }

    /// Bytes marked lost and not SACKed (retransmitted or not).
    pub fn lost_bytes(&self) -> u64 {
        self.lost_bytes
    }

    /// Bytes of retransmissions in flight (not yet SACKed or acknowledged).
    pub fn retrans_bytes(&self) -> u64 {
        self.retrans_bytes
    }

    pub fn has_lost_waiting(&self) -> bool {
        self.lost_waiting > 0
    }

    /// A new segment `[seq, seq + len)` left at `now`; `seq` is the old HighData.
    pub fn on_send_new(&mut self, seq: u64, now: SimTime) {
        debug_assert_eq!(seq, self.high);
        self.segs.push_back(SegRec { xmit: now, flags: 0 });
        self.high = seq + self.seg_len(seq);
        if self.time_order {
            self.tsorted.push_back((seq, now));
        }
    }

    /// The segment at `seq` is sent again at `now`.
    pub fn on_retransmit(&mut self, seq: u64, now: SimTime) {
        let len = self.seg_len(seq);
        let i = self.idx(seq);
        let r = &mut self.segs[i];
        debug_assert_eq!(r.flags & SACKED, 0, "a SACKed segment is not retransmitted");
        if r.flags & RETRANS == 0 {
            r.flags |= RETRANS;
            self.retrans_bytes += len;
            if r.flags & LOST != 0 {
                self.lost_waiting -= 1;
            }
        }
        r.flags |= EVER_RETRANS;
        r.xmit = now;
        if self.time_order {
            self.tsorted.push_back((seq, now));
        }
    }

    /// Marks the segment at `seq` lost: it leaves `pipe` and waits for
    /// retransmission. A lost retransmission (RACK) is marked again. Returns
    /// whether anything changed.
    pub fn mark_lost(&mut self, seq: u64) -> bool {
        let len = self.seg_len(seq);
        let i = self.idx(seq);
        let r = &mut self.segs[i];
        if r.flags & SACKED != 0 || (r.flags & LOST != 0 && r.flags & RETRANS == 0) {
            return false;
        }
        if r.flags & LOST == 0 {
            r.flags |= LOST;
            self.lost_bytes += len;
        }
        if r.flags & RETRANS != 0 {
            r.flags &= !RETRANS;
            self.retrans_bytes -= len;
        }
        self.lost_waiting += 1;
        self.retx_hint = self.retx_hint.min(seq);
        self.lost_marks += 1;
        true
    }

    /// The lowest segment marked lost whose retransmission has not been sent
    /// (RFC 6675 NextSeg rule 1).
    pub fn next_lost(&mut self) -> Option<u64> {
        if self.lost_waiting == 0 {
            return None;
        }
        let mut seq = self.retx_hint.max(self.base);
        while seq < self.high {
            if self.segs[self.idx(seq)].flags & (LOST | RETRANS | SACKED) == LOST {
                self.retx_hint = seq;
                return Some(seq);
            }
            seq += self.mss;
        }
        debug_assert!(false, "lost_waiting = {} but no segment waits", self.lost_waiting);
        None
    }

    /// RFC 6675 NextSeg rule 3: the lowest segment below the highest SACKed
    /// byte that is neither SACKed, lost nor retransmitted (each is sent at
    /// most once per recovery: the cursor only moves forward until
    /// [`Scoreboard::restart_rule3`]).
    pub fn next_rule3(&mut self) -> Option<u64> {
        let mut seq = self.rule3_hint.max(self.base);
        while seq < self.fack {
            if self.segs[self.idx(seq)].flags & (SACKED | LOST | RETRANS) == 0 {
                self.rule3_hint = seq;
                return Some(seq);
            }
            seq += self.mss;
        }
        self.rule3_hint = seq;
        None
    }

    /// A new recovery episode: rule 3 may look from SND.UNA again.
    pub fn restart_rule3(&mut self) {
        self.rule3_hint = self.base;
    }

    /// Marks newly SACKed segments in `[start, end)`; returns the bytes newly
    /// SACKed and records the newly SACKed segments in `deliveries`.
    pub fn sack(&mut self, start: u64, end: u64, deliveries: &mut Deliveries) -> u64 {
        let (s, e) = (start.max(self.base), end.min(self.high));
        if s >= e {
            return 0;
        }
        // Ranges i..j overlap or touch [s, e]; the gaps between them are new.
        let i = self.sacked_ranges.partition_point(|&(_, re)| re < s);
        let j = self.sacked_ranges.partition_point(|&(rs, _)| rs <= e);
        let mut newly = 0;
        let mut cur = s;
        for k in i..j {
            let (rs, re) = self.sacked_ranges[k];
            if rs > cur {
                newly += self.sack_segments(cur, rs.min(e), deliveries);
            }
            cur = cur.max(re);
        }
        if cur < e {
            newly += self.sack_segments(cur, e, deliveries);
        }
        if i == j {
            self.sacked_ranges.insert(i, (s, e));
        } else {
            let merged = (self.sacked_ranges[i].0.min(s), self.sacked_ranges[j - 1].1.max(e));
            self.sacked_ranges[i] = merged;
            self.sacked_ranges.drain(i + 1..j);
        }
        self.fack = self.fack.max(e);
        newly
    }

    /// Marks the segments in `[s, e)` (none SACKed yet) as SACKed.
    fn sack_segments(&mut self, s: u64, e: u64, deliveries: &mut Deliveries) -> u64 {
        let mut seq = s - (s - self.base) % self.mss;
        let mut newly = 0;
        while seq < e {
            let len = self.seg_len(seq);
            let i = self.idx(seq);
            let r = &mut self.segs[i];
            if r.flags & SACKED == 0 {
                let flags = r.flags;
                r.flags = (flags | SACKED) & !(LOST | RETRANS);
                self.sacked_bytes += len;
                self.sacked_segments += 1;
                newly += len;
                if flags & LOST != 0 {
                    self.lost_bytes -= len;
                    if flags & RETRANS == 0 {
                        self.lost_waiting -= 1;
                    }
                }
                if flags & RETRANS != 0 {
                    self.retrans_bytes -= len;
                }
                // RFC 8985 6.2: delivered below a segment SACKed earlier, and
                // never retransmitted: the network reordered it.
                if flags & EVER_RETRANS == 0 && seq + len <= self.fack {
                    self.reordering_seen = true;
                }
                deliveries.sacked(Delivered { xmit: r.xmit, end: seq + len, retransmitted: flags & EVER_RETRANS != 0 });
            }
            seq += len;
        }
        newly
    }

    /// Highest SACKed sequence number (at least SND.UNA).
    pub fn fack(&self) -> u64 {
        self.fack
    }

    /// The cumulative ACK moved to `ack`; returns the bytes it delivered that
    /// were not SACKed before and records them in `deliveries`. `prior_fack` is the
    /// highest SACKed byte before this ACK's SACK blocks were processed.
    #[inline(always)]
    pub fn ack_to(&mut self, ack: u64, prior_fack: u64, deliveries: &mut Deliveries) -> u64 {
        let mut delivered = 0;
        while self.base < ack {
            let Some(r) = self.segs.pop_front() else { break };
            let len = self.seg_len(self.base);
            if r.flags & SACKED != 0 {
                self.sacked_bytes -= len;
                self.sacked_segments -= 1;
            } else {
                delivered += len;
                if r.flags & LOST != 0 {
                    self.lost_bytes -= len;
                    if r.flags & RETRANS == 0 {
                        self.lost_waiting -= 1;
                    }
                }
                if r.flags & RETRANS != 0 {
                    self.retrans_bytes -= len;
                }
                if r.flags & EVER_RETRANS == 0 && self.base + len <= prior_fack {
                    self.reordering_seen = true;
                }
                deliveries.cum_acked(Delivered {
                    xmit: r.xmit,
                    end: self.base + len,
                    retransmitted: r.flags & EVER_RETRANS != 0,
                });
            }
            self.base += len;
        }
        let base = self.base;
        let gone = self.sacked_ranges.partition_point(|&(_, e)| e <= base);
        self.sacked_ranges.drain(..gone);
        if let Some(first) = self.sacked_ranges.first_mut() {
            first.0 = first.0.max(base);
        }
        self.retx_hint = self.retx_hint.max(base);
        self.dupthresh_mark = self.dupthresh_mark.max(base);
        self.fack = self.fack.max(base);
        delivered
    }

    /// RFC 6675 4 `IsLost`: a segment is lost when at least `dupthresh`
    /// SACKed segments lie above it. Marks every such segment not yet marked
    /// or retransmitted; returns how many.
    pub fn mark_lost_dupthresh(&mut self, dupthresh: u32) -> u64 {
        // Start of the dupthresh-th highest SACKed segment.
        let mut need = dupthresh as u64;
        let mut bound = None;
        for &(rs, re) in self.sacked_ranges.iter().rev() {
            let count = (re - rs).div_ceil(self.mss);
            if count >= need {
                bound = Some(rs + (count - need) * self.mss);
                break;
            }
            need -= count;
        }
        let Some(bound) = bound else { return 0 };
        let mut n = 0;
        let mut seq = self.dupthresh_mark.max(self.base);
        while seq < bound {
            if self.segs[self.idx(seq)].flags & (SACKED | LOST | RETRANS) == 0 && self.mark_lost(seq) {
                n += 1;
            }
            seq += self.mss;
        }
        self.dupthresh_mark = self.dupthresh_mark.max(bound);
        n
    }

    /// After a retransmission timeout every segment not SACKed is lost
    /// (RFC 6675 5.1; Linux `tcp_timeout_mark_lost`).
    pub fn mark_all_lost(&mut self) {
        let mut seq = self.base;
        while seq < self.high {
            self.mark_lost(seq);
            seq += self.mss;
        }
        self.dupthresh_mark = self.high;
    }

    /// RACK's walk (RFC 8985 6.2 step 5): marks lost every segment sent
    /// before `(rack_xmit, rack_end)` whose deadline `xmit + rtt + reo_wnd` has
    /// passed. Returns the number marked and, if a segment sent before the
    /// RACK segment is not yet due, how long until the earliest one is.
    #[inline(always)]
    pub fn rack_detect(
        &mut self,
        now: SimTime,
        rack_xmit: SimTime,
        rack_end: u64,
        wait: SimTime,
    ) -> (u64, Option<SimTime>) {
        let mut n = 0;
        while let Some(&(seq, t)) = self.tsorted.front() {
            if seq < self.base || seq >= self.high {
                self.tsorted.pop_front();
                continue;
            }
            let r = self.segs[self.idx(seq)];
            let waiting_lost = r.flags & LOST != 0 && r.flags & RETRANS == 0;
            if r.xmit != t || r.flags & SACKED != 0 || waiting_lost {
                // Superseded by a later transmission, delivered, or already lost.
                self.tsorted.pop_front();
                continue;
            }
            let end = seq + self.seg_len(seq);
            if !sent_after(rack_xmit, rack_end, t, end) {
                break;
            }
            let due = t + wait;
            if due <= now {
                self.mark_lost(seq);
                n += 1;
                self.tsorted.pop_front();
            } else {
                // Later entries were sent later: this one is due first.
                return (n, Some(due - now));
            }
        }
        (n, None)
    }

    /// Releases the memory of a finished connection.
    pub fn clear(&mut self) {
        self.segs = VecDeque::new();
        self.tsorted = VecDeque::new();
        self.sacked_ranges = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1000;

    /// A scoreboard with `n` segments sent at times 1..=n us.
    fn sent(n: u64) -> Scoreboard {
        let mut sb = Scoreboard::new(M, u64::MAX, true);
        for k in 0..n {
            sb.on_send_new(k * M, SimTime::from_us(k + 1));
        }
        sb
    }

    #[test]
    fn pipe_counts_outstanding_minus_sacked_and_lost_plus_retransmitted() {
        let mut sb = sent(10);
        assert_eq!(sb.pipe(), 10 * M);
        let mut latest = Deliveries::new(SimTime::from_us(30), None, false);
        assert_eq!(sb.sack(3 * M, 6 * M, &mut latest), 3 * M);
        assert_eq!(latest.latest.unwrap().end, 6 * M, "the most recently sent of the SACKed segments");
        assert_eq!(sb.pipe(), 7 * M);
        // The same block again changes nothing.
        assert_eq!(sb.sack(3 * M, 6 * M, &mut latest), 0);
        assert!(sb.mark_lost(M));
        assert_eq!(sb.pipe(), 6 * M);
        assert_eq!(sb.next_lost(), Some(M));
        sb.on_retransmit(M, SimTime::from_us(20));
        assert_eq!(sb.pipe(), 7 * M);
        assert_eq!(sb.next_lost(), None);
        // Cumulative ACK over segments 0..6: segment 1's retransmission and the
        // SACKed 3..6 leave; 0, 1 and 2 are delivered by this ACK.
        assert_eq!(sb.ack_to(6 * M, 6 * M, &mut latest), 3 * M);
        assert_eq!(sb.pipe(), 4 * M);
        assert_eq!((sb.sacked_bytes, sb.lost_bytes(), sb.retrans_bytes), (0, 0, 0));
    }

    #[test]
    fn three_sacked_segments_above_a_hole_mark_it_lost() {
        let mut sb = sent(10);
        let mut latest = Deliveries::new(SimTime::from_us(30), None, false);
        sb.sack(2 * M, 4 * M, &mut latest);
        assert_eq!(sb.mark_lost_dupthresh(3), 0, "two SACKed segments are not enough");
        sb.sack(5 * M, 6 * M, &mut latest);
        assert_eq!(sb.mark_lost_dupthresh(3), 2, "segments 0 and 1 have three SACKed above");
        assert_eq!(sb.next_lost(), Some(0));
        assert!(sb.rec(4 * M).flags & LOST == 0, "segment 4 has only one SACKed above");
    }

    #[test]
    fn rack_marks_segments_sent_before_the_delivered_one_once_due() {
        let mut sb = sent(10);
        // Segment 5 (sent at 6 us) is SACKed at 20 us: RACK.rtt = 14 us.
        let (xmit, end) = (SimTime::from_us(6), 6 * M);
        let wait = SimTime::from_us(14 + 2); // rtt + reo_wnd
        let (n, timeout) = sb.rack_detect(SimTime::from_us(20), xmit, end, wait);
        // Segment 0 (sent at 1 us) is due at 17 us, 1 at 18, 2 at 19, 3 at 20; 4 at 21.
        assert_eq!(n, 4);
        assert_eq!(timeout, Some(SimTime::from_us(1)));
        let (n, timeout) = sb.rack_detect(SimTime::from_us(21), xmit, end, wait);
        assert_eq!((n, timeout), (1, None), "segment 4 is due; later segments were sent after segment 5");
    }

    /// Segments 0 and 1 leave in one burst at 10 us, 2 and 3 in the next at
    /// 20 us; segment 1 is lost. At 50 us an ACK acknowledges segment 0 and
    /// SACKs segment 2.
    fn hole_in_a_burst() -> (Scoreboard, Deliveries, Deliveries) {
        let mut sb = Scoreboard::new(M, 10 * M, true);
        for (k, t) in [(0, 10), (1, 10), (2, 20), (3, 20)] {
            sb.on_send_new(k * M, SimTime::from_us(t));
        }
        let now = SimTime::from_us(50);
        let (mut rfc, mut linux) = (Deliveries::new(now, None, false), Deliveries::new(now, None, true));
        let mut twin = sb.clone();
        sb.sack(2 * M, 3 * M, &mut rfc);
        sb.ack_to(M, 3 * M, &mut rfc);
        twin.sack(2 * M, 3 * M, &mut linux);
        twin.ack_to(M, 3 * M, &mut linux);
        (sb, rfc, linux)
    }

    #[test]
    fn rack_rtt_comes_from_the_latest_sent_delivery_in_the_rfcs_order() {
        let (mut sb, rfc, _) = hole_in_a_burst();
        let (latest, from) = (rfc.latest.unwrap(), rfc.rtt_from().unwrap());
        assert_eq!((latest.end, from.end), (3 * M, 3 * M));
        // RACK.rtt = 30 us: segment 1, sent at 10 us, is due at 10 + 30 + 2 us.
        let (n, _) = sb.rack_detect(SimTime::from_us(50), latest.xmit, latest.end, SimTime::from_us(30 + 2));
        assert_eq!(n, 1);
    }

    #[test]
    fn linux_keeps_the_rtt_of_the_cumulatively_acked_segment_and_waits_on_its_burst_mate() {
        let (mut sb, _, linux) = hole_in_a_burst();
        let (latest, from) = (linux.latest.unwrap(), linux.rtt_from().unwrap());
        assert_eq!(latest.end, 3 * M, "RACK.xmit_ts is still the latest-sent delivery's");
        assert_eq!(from.end, M, "tcp_clean_rtx_queue's segment comes last");
        // RACK.rtt = 40 us, segment 1's own age: not lost until the reordering window passes.
        let rtt = SimTime::from_us(50) - from.xmit;
        let (n, timeout) = sb.rack_detect(SimTime::from_us(50), latest.xmit, latest.end, rtt + SimTime::from_us(2));
        assert_eq!((n, timeout), (0, Some(SimTime::from_us(2))));
    }

    #[test]
    fn a_retransmission_acked_faster_than_min_rtt_is_ambiguous_and_counts_for_nothing() {
        let mut sb = Scoreboard::new(M, 10 * M, true);
        sb.on_send_new(0, SimTime::from_us(1));
        sb.mark_lost(0);
        sb.on_retransmit(0, SimTime::from_us(100));
        for in_ack_order in [false, true] {
            let mut d = Deliveries::new(SimTime::from_us(110), Some(SimTime::from_us(50)), in_ack_order);
            sb.clone().ack_to(M, 0, &mut d);
            assert!(d.latest.is_none() && d.rtt_from().is_none());
        }
    }
}
