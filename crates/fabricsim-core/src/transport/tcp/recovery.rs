//! SACK-based loss recovery: the sender's ACK processing, sending and timers
//! when SACK is on.
//!
//! States (Linux's names; RFC 6675 and RFC 8985 describe the same steps):
//! - **Open**: normal operation; SACKed segments leave `pipe`, so duplicate
//!   ACKs let new data out (limited transmit, RFC 3042, in its SACK form).
//! - **Recovery** (RFC 6675 5): entered when a segment is deemed lost, by
//!   RACK (RFC 8985 6.2: sent before a delivered segment, `RACK.rtt +
//!   reo_wnd` ago) or, without RACK, by `IsLost` (`DupThresh` SACKed segments
//!   above it) or `DupThresh` duplicate ACKs. `RecoveryPoint = HighData`,
//!   `ssthresh` from the controller once per congestion event. While `pipe` is
//!   below cwnd the sender retransmits the lowest lost segment, else sends new
//!   data (RFC 6675 NextSeg rules 1 and 2). cwnd follows PRR (RFC 6937), or
//!   is `ssthresh` without PRR (RFC 6675 4.2, with the first retransmission
//!   sent regardless). RACK keeps running, so a lost retransmission is found
//!   and sent again without a timeout. A cumulative ACK at or beyond
//!   RecoveryPoint ends recovery with `cwnd = ssthresh`.
//! - **CWR**: an ECN-Echo (or DCTCP's cut) with PRR reduces the window
//!   gradually over one round trip, as Linux does, ending once SND.UNA passes
//!   the data outstanding when it began; without PRR the cut is immediate.
//! - **Loss**: after a retransmission timeout every segment not SACKed is
//!   lost (RFC 6675 5.1; the scoreboard is kept), `cwnd = 1 SMSS`, and slow
//!   start retransmits them before new data until RecoveryPoint is ACKed.
//!
//! Tail loss probes (RFC 8985 7) are armed in Open and CWR after new data is
//! sent and on ACKs of new data. A D-SACK (RFC 2883) reports a duplicate:
//! every duplicate in the simulated network is one of the sender's own
//! retransmissions, so each D-SACKed segment counts as a spurious
//! retransmission; D-SACKs also widen RACK's reordering window.
//!
//! Simplifications: no F-RTO, no undo of a reduction found spurious (Eifel,
//! D-SACK undo), and without RACK no RFC 6675 NextSeg rule 3 or rescue
//! retransmission (rule 4).

use super::cc::{AckInfo, CcState, SlowStartExit};
use super::limits::Burst;
use super::prr::Prr;
use super::rack::{Rack, Tlp};
use super::scoreboard::{Deliveries, Scoreboard, SACKED};
use super::sender::{EcnCut, SenderCore, SenderState};
use super::{Outbox, Segment, TcpConfig};
use crate::units::SimTime;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaState {
    Open,
    Cwr,
    Recovery,
    Loss,
}

impl From<CaState> for CcState {
    #[inline(always)]
    fn from(s: CaState) -> CcState {
        match s {
            CaState::Open => CcState::Open,
            CaState::Cwr => CcState::Cwr,
            CaState::Recovery => CcState::Recovery,
            CaState::Loss => CcState::Loss,
        }
    }
}

/// Counters of the SACK machinery, for the flows table.
#[derive(Clone, Copy, Debug, Default)]
pub struct SackStats {
    /// Segments RACK marked lost.
    pub rack_losses: u64,
    /// Segments marked lost by `DupThresh` SACKed segments above (without RACK).
    pub dupthresh_losses: u64,
    pub tlp_probes: u64,
    /// Probes that repaired a tail loss (the ACK covered the probe and no D-SACK came).
    pub tlp_recoveries: u64,
    pub dsacks: u64,
    pub spurious_retransmits: u64,
}

#[derive(Clone, Debug)]
pub struct SackRecovery {
    pub sb: Scoreboard,
    pub ca: CaState,
    /// RecoveryPoint (RFC 6675) or the end of the CWR or Loss episode.
    recovery_point: u64,
    rack: Option<Rack>,
    rack_rtt_in_ack_order: bool,
    tlp: Option<Tlp>,
    prr_on: bool,
    prr: Prr,
    /// Duplicate ACKs carrying new SACK information (RFC 6675 5, without RACK).
    dupacks: u32,
    slack: SimTime,
    pub tlp_deadline: Option<SimTime>,
    pub reo_deadline: Option<SimTime>,
    pub stats: SackStats,
}

impl SackRecovery {
    pub fn new(cfg: &TcpConfig, total: u64) -> Self {
        SackRecovery {
            sb: Scoreboard::new(cfg.mss() as u64, total, cfg.rack),
            ca: CaState::Open,
            recovery_point: 0,
            rack: cfg.rack.then(Rack::default),
            rack_rtt_in_ack_order: cfg.rack_rtt_in_ack_order,
            tlp: cfg.tlp.then(Tlp::default),
            prr_on: cfg.prr,
            prr: Prr::default(),
            dupacks: 0,
            slack: SimTime(cfg.loss_timer_slack_ps),
            tlp_deadline: None,
            reo_deadline: None,
            stats: SackStats::default(),
        }
    }

    pub fn finish(&mut self, _now: SimTime) {
        self.tlp_deadline = None;
        self.reo_deadline = None;
        self.sb.clear();
    }

    /// Loss, after a retransmission timeout (RFC 6675 5.1, Linux
    /// `tcp_enter_loss`; the rest, the state itself included, is
    /// `Sender::on_rto`'s): every segment not SACKed is lost (the scoreboard
    /// is kept) until `snd_max` is ACKed; no probe or reordering timer.
    pub(super) fn enter_loss(&mut self, snd_max: u64) {
        self.recovery_point = snd_max;
        self.dupacks = 0;
        self.sb.mark_all_lost();
        self.tlp_deadline = None;
        self.reo_deadline = None;
        if let Some(t) = &mut self.tlp {
            t.end_seq = None;
        }
    }

    pub(super) fn reducing(&self) -> bool {
        matches!(self.ca, CaState::Recovery | CaState::Cwr)
    }
}

type Block = (u64, u64);

/// Splits an ACK's blocks into a D-SACK block (RFC 2883 4: the first block,
/// when it lies below the cumulative ACK or inside the second block) and the
/// SACK blocks, sorted by start.
fn split_blocks(seg: &Segment) -> (Option<Block>, [Block; 3], usize) {
    let b = seg.sack.as_slice();
    let mut dsack = None;
    let mut rest = b;
    if let Some(&(s0, e0)) = b.first() {
        if s0 < seg.ack || (b.len() > 1 && b[1].0 <= s0 && e0 <= b[1].1) {
            dsack = Some((s0, e0));
            rest = &b[1..];
        }
    }
    let mut sorted = [(0, 0); 3];
    sorted[..rest.len()].copy_from_slice(rest);
    sorted[..rest.len()].sort_unstable();
    (dsack, sorted, rest.len())
}

impl SenderCore {
    /// An ACK with SACK on.
    pub(super) fn on_ack_sack(&mut self, s: &mut SackRecovery, now: SimTime, seg: &Segment, out: &mut Outbox) {
        let ack = seg.ack.min(self.snd_max);
        if ack < self.snd_una {
            return; // older than what is known; the network does not reorder ACKs of a flow
        }
        let prior_una = self.snd_una;
        let advanced = ack > prior_una;
        let mss = self.window.mss;
        let min_rtt = self.rtt.min_rtt();
        let (dsack, blocks, nblocks) = split_blocks(seg);
        let prior_marks = s.sb.lost_marks;
        let prior_fack = s.sb.fack();
        let mut deliveries = Deliveries::new(now, min_rtt, s.rack_rtt_in_ack_order);
        let mut newly_sacked = 0;
        for &(bs, be) in &blocks[..nblocks] {
            newly_sacked += s.sb.sack(bs, be, &mut deliveries);
        }
        let cum_acked = if advanced { s.sb.ack_to(ack, prior_fack, &mut deliveries) } else { 0 };
        let delivered = newly_sacked + cum_acked;
        let latest = deliveries.latest;
        if let (Some(r), Some(d), Some(rtt_from)) = (&mut s.rack, latest, deliveries.rtt_from()) {
            r.on_delivered(d, rtt_from, now);
        }
        if let Some((ds, de)) = dsack {
            s.stats.dsacks += 1;
            s.stats.spurious_retransmits += (de - ds).div_ceil(mss);
            if let Some(r) = &mut s.rack {
                r.on_dsack(ack, self.snd_max);
            }
        }
        if !advanced && newly_sacked > 0 {
            s.dupacks += 1;
        } else if advanced {
            s.dupacks = 0;
        }
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);

        let info = self.ack_info(now, seg, (ack, cum_acked), advanced, s.ca);
        self.tlp_on_ack(s, now, ack, advanced, newly_sacked, dsack);
        let reduced = advanced && self.ecn_on_ack_sack(s, now, &info, cum_acked);
        self.detect_losses(s, now, latest.is_some());
        let newly_lost = s.sb.lost_marks > prior_marks;

        // State transitions.
        match s.ca {
            CaState::Open | CaState::Cwr => {
                if self.loss_detected(s) {
                    self.enter_recovery(s, now);
                } else if s.ca == CaState::Cwr && ack > s.recovery_point {
                    self.set_ca(&mut s.ca, CaState::Open, now);
                    self.window.cwnd = self.window.ssthresh;
                }
            }
            CaState::Recovery => {
                if advanced && ack >= s.recovery_point {
                    self.exit_recovery(s, now);
                }
            }
            CaState::Loss => {
                if ack >= s.recovery_point {
                    self.set_ca(&mut s.ca, CaState::Open, now);
                }
            }
        }

        // The window.
        let ssthresh = self.window.ssthresh;
        match s.ca {
            CaState::Recovery | CaState::Cwr if s.prr_on => {
                let pipe = s.sb.pipe();
                if let Some(cwnd) = s.prr.on_ack(delivered, pipe, ssthresh, mss, advanced && !newly_lost) {
                    self.window.cwnd = cwnd;
                }
            }
            CaState::Recovery | CaState::Cwr => {}
            CaState::Open | CaState::Loss => {
                if advanced && !reduced {
                    // Linux grows by what was delivered, SACKed segments included.
                    self.grow(&AckInfo { acked: delivered, ..info });
                }
            }
        }

        if self.snd_una >= self.snd_max {
            self.rto_deadline = None;
        } else if advanced {
            self.restart_rto(now);
        }
        if self.all_acked() || (self.sending_stopped(now) && self.snd_una >= self.snd_max) {
            self.finish_sack(s, now);
            return;
        }
        self.update_pacing_rate();
        self.send_data_sack(s, now, out);
        if advanced && !newly_lost {
            self.arm_probe(s, now);
        }
    }

    /// The shared ECN reaction ([`SenderCore::ecn_on_ack`]; the classic one
    /// only in Open) and what it means here: with PRR the reduction runs in
    /// the CWR state, gradually over a round trip; without, the classic cut
    /// is immediate. Returns whether the window was reduced.
    fn ecn_on_ack_sack(&mut self, s: &mut SackRecovery, now: SimTime, info: &AckInfo, acked: u64) -> bool {
        let (flight, snd_max) = (self.flight(), self.snd_max);
        match self.ecn_on_ack(now, info, acked, s.ca == CaState::Open, Some(s.sb.pipe())) {
            EcnCut::None => false,
            EcnCut::Controller { before } => {
                if s.prr_on && s.ca != CaState::Loss {
                    // PRR takes the window down to the new ssthresh.
                    if s.ca == CaState::Open {
                        self.enter_cwr(s, now, snd_max, flight + acked);
                    }
                    self.window.cwnd = before.cwnd;
                }
                true
            }
            EcnCut::Classic => {
                if s.prr_on {
                    self.enter_cwr(s, now, snd_max, flight + acked);
                } else {
                    self.window.cwnd = self.window.ssthresh;
                }
                true
            }
        }
    }

    /// CWR: an ECN reduction with PRR, until SND.UNA passes `snd_max`;
    /// `flight` is PRR's RecoverFS.
    fn enter_cwr(&mut self, s: &mut SackRecovery, now: SimTime, snd_max: u64, flight: u64) {
        self.set_ca(&mut s.ca, CaState::Cwr, now);
        s.recovery_point = snd_max;
        s.prr.start(flight);
    }

    /// Marks lost segments: RACK (RFC 8985 6.2) after a delivery, or the
    /// DupThresh rule of RFC 6675 without RACK.
    fn detect_losses(&mut self, s: &mut SackRecovery, now: SimTime, delivered: bool) {
        let (min_rtt, srtt) = (self.rtt.min_rtt(), self.rtt.srtt());
        let dupthresh = self.dupack_threshold;
        match &s.rack {
            Some(rack) => {
                if !delivered || !rack.valid {
                    return;
                }
                let in_recovery = matches!(s.ca, CaState::Recovery | CaState::Loss);
                let reo =
                    rack.reo_wnd(s.sb.reordering_seen, in_recovery, s.sb.sacked_segments, dupthresh, min_rtt, srtt);
                let (n, wait) = s.sb.rack_detect(now, rack.xmit, rack.end, rack.rtt + reo);
                s.stats.rack_losses += n;
                s.reo_deadline = wait.map(|w| now + w + s.slack);
            }
            None => {
                let n = s.sb.mark_lost_dupthresh(dupthresh);
                s.stats.dupthresh_losses += n;
            }
        }
    }

    /// Whether to start fast recovery from Open or CWR.
    fn loss_detected(&mut self, s: &mut SackRecovery) -> bool {
        let dupthresh = self.dupack_threshold;
        let una = self.snd_una;
        if s.sb.lost_bytes() > 0 {
            return true;
        }
        if s.rack.is_none() && s.dupacks >= dupthresh && una < s.sb.high() {
            // RFC 6675 5 (DupAcks >= DupThresh): the first segment is presumed lost.
            if s.sb.rec(una).flags & SACKED == 0 && s.sb.mark_lost(una) {
                s.stats.dupthresh_losses += 1;
                return true;
            }
        }
        false
    }

    /// RFC 6675 5 step 4 / Linux `tcp_enter_recovery`.
    fn enter_recovery(&mut self, s: &mut SackRecovery, now: SimTime) {
        self.note_congestion(now, SlowStartExit::Loss);
        let flight = self.flight();
        let snd_max = self.snd_max;
        if s.ca != CaState::Cwr {
            // One reduction per congestion event: an ECN reduction under way stands.
            self.window.ssthresh = self.ssthresh_after_loss(now, flight, Some(s.sb.pipe()));
            s.prr.start(flight);
            if !s.prr_on {
                self.window.cwnd = self.window.ssthresh;
            }
        }
        self.set_ca(&mut s.ca, CaState::Recovery, now);
        s.recovery_point = snd_max;
        s.sb.restart_rule3();
        s.tlp_deadline = None;
        if let Some(t) = &mut s.tlp {
            t.end_seq = None;
        }
        if !s.prr_on {
            // RFC 6675 (4.3): the fast retransmit goes out whatever the window
            // (with PRR, its first ACK allows one segment).
            self.force_one = true;
        }
    }

    fn exit_recovery(&mut self, s: &mut SackRecovery, now: SimTime) {
        self.window.cwnd = self.window.ssthresh;
        self.set_ca(&mut s.ca, CaState::Open, now);
        if let Some(r) = &mut s.rack {
            r.on_recovery_end();
        }
    }

    /// ESTABLISHED -> DONE with SACK: the scoreboard and its timers go too.
    fn finish_sack(&mut self, s: &mut SackRecovery, now: SimTime) {
        self.finish(now);
        s.finish(now);
    }

    /// Sends while `pipe` (RFC 6675 4) is below cwnd: lost segments first
    /// (NextSeg rule 1), then new data within the receive window (rule 2).
    pub(super) fn send_data_sack(&mut self, s: &mut SackRecovery, now: SimTime, out: &mut Outbox) {
        let mut sent_new = false;
        let mut sent = false;
        let mut burst = Burst::default();
        loop {
            let stopped = self.sending_stopped(now);
            let (snd_una, snd_max, total, rwnd, cwnd, mss) =
                (self.snd_una, self.snd_max, self.total, self.send_window(), self.window.cwnd, self.window.mss);
            let limited_transmit = self.limited_transmit;
            let force = self.force_one;
            let pipe = s.sb.pipe();
            // Outside recovery without limited transmit, SACKed data still counts.
            let in_flight = if s.ca == CaState::Open && !limited_transmit { snd_max - snd_una } else { pipe };
            let (seq, len, retx) = if let Some(seq) = s.sb.next_lost() {
                (seq, s.sb.seg_len(seq), true)
            } else if snd_max < total && !stopped && snd_max + (total - snd_max).min(mss) <= snd_una + rwnd {
                (snd_max, (total - snd_max).min(mss), false)
            } else if s.rack.is_none() && s.ca == CaState::Recovery {
                // RFC 6675 NextSeg rule 3 (RACK makes it unnecessary).
                match s.sb.next_rule3() {
                    Some(seq) => (seq, s.sb.seg_len(seq), true),
                    None => break,
                }
            } else {
                break;
            };
            if !force && in_flight + len > cwnd && in_flight > 0 {
                break;
            }
            if let Some(rate) = self.pacing {
                if now < self.next_send {
                    break;
                }
                self.next_send = now + rate.serialization_time(len + self.frame_overhead as u64);
            }
            if !self.burst_gate(Some(&*s), now, &mut burst, retx) {
                break;
            }
            self.force_one = false;
            let mut seg = self.segment_at(seq, now);
            if s.prr_on && s.reducing() {
                s.prr.on_sent(len);
            }
            if retx {
                let in_recovery = s.ca == CaState::Recovery;
                s.sb.on_retransmit(seq, now);
                seg.retransmit = true;
                self.retransmits += 1;
                if in_recovery {
                    self.recovery_retransmits += 1;
                }
            } else {
                s.sb.on_send_new(seq, now);
                self.snd_max += len;
                self.snd_nxt = self.snd_max;
                sent_new = true;
                if self.cwr_pending {
                    seg.cwr = true;
                    self.cwr_pending = false;
                }
            }
            self.burst_add(now, &mut burst, &mut seg);
            out.push((false, seg));
            sent = true;
            if self.rto_deadline.is_none() {
                self.restart_rto(now);
            }
        }
        self.burst_close(now, &mut burst, out);
        let pipe = s.sb.pipe();
        self.note_window_use(pipe, sent);
        if sent_new {
            self.arm_probe(s, now);
        }
        if self.sending_stopped(now) && self.snd_una >= self.snd_max && self.state == SenderState::Established {
            self.finish_sack(s, now);
        }
    }

    /// RFC 8985 7.2 (Linux `tcp_schedule_loss_probe`): arms the probe timeout
    /// in Open or CWR with data outstanding and no probe in flight.
    fn arm_probe(&mut self, s: &mut SackRecovery, now: SimTime) {
        let (snd_una, snd_max, mss) = (self.snd_una, self.snd_max, self.window.mss);
        let srtt = self.rtt.srtt();
        let (rto_at, min_rto) = (self.rto_deadline, self.min_rto);
        let Some(tlp) = &s.tlp else { return };
        if !matches!(s.ca, CaState::Open | CaState::Cwr) || snd_una >= snd_max || tlp.end_seq.is_some() {
            s.tlp_deadline = None;
            return;
        }
        let mut pto = match srtt {
            // One segment in flight: allow for the receiver's delayed ACK.
            Some(srtt) => SimTime(2 * srtt.0) + if snd_max - snd_una <= mss { min_rto } else { s.slack },
            None => SimTime::from_secs(1),
        };
        if let Some(rto) = rto_at {
            pto = pto.min(rto.saturating_sub(now));
        }
        s.tlp_deadline = Some(now + pto);
    }

    /// RFC 8985 7.3: the probe timeout fired.
    pub(super) fn on_probe_timer(&mut self, s: &mut SackRecovery, now: SimTime, out: &mut Outbox) {
        let (snd_una, snd_max, total, rwnd, mss) =
            (self.snd_una, self.snd_max, self.total, self.send_window(), self.window.mss);
        let stopped = self.sending_stopped(now);
        s.tlp_deadline = None;
        let idle = s.tlp.as_ref().map_or(false, |t| t.end_seq.is_none());
        if !idle || !matches!(s.ca, CaState::Open | CaState::Cwr) || snd_una >= snd_max {
            return;
        }
        let new_len = (total - snd_max).min(mss);
        let mut seg;
        if snd_max < total && !stopped && snd_max + new_len <= snd_una + rwnd {
            // New data, whatever the window.
            seg = self.segment_at(snd_max, now);
            s.sb.on_send_new(snd_max, now);
            s.tlp = Some(Tlp { end_seq: Some(snd_max + new_len), is_retrans: false, probe_start: snd_max });
            self.snd_max += new_len;
            self.snd_nxt = self.snd_max;
            if self.cwr_pending {
                seg.cwr = true;
                self.cwr_pending = false;
            }
        } else {
            // Nothing new to send: the highest segment sent so far.
            let last = (snd_max - 1) / mss * mss;
            if s.sb.rec(last).flags & SACKED != 0 {
                return;
            }
            seg = self.segment_at(last, now);
            seg.retransmit = true;
            s.sb.on_retransmit(last, now);
            s.tlp = Some(Tlp { end_seq: Some(snd_max), is_retrans: true, probe_start: last });
            self.retransmits += 1;
        }
        self.charge_single(&mut seg);
        s.stats.tlp_probes += 1;
        if s.prr_on && s.reducing() {
            s.prr.on_sent(seg.len as u64);
        }
        out.push((false, seg));
        self.restart_rto(now);
    }

    /// RFC 8985 7.4 (Linux `tcp_process_tlp_ack`): did the probe repair a loss?
    fn tlp_on_ack(
        &mut self,
        s: &mut SackRecovery,
        now: SimTime,
        ack: u64,
        advanced: bool,
        newly_sacked: u64,
        dsack: Option<(u64, u64)>,
    ) {
        let Some(tlp) = &mut s.tlp else { return };
        let Some(end) = tlp.end_seq else { return };
        if ack < end {
            return;
        }
        if !tlp.is_retrans || dsack.map_or(false, |(ds, de)| ds < end && de > tlp.probe_start) {
            // New data, or both the original and the probe arrived: no loss.
            tlp.end_seq = None;
        } else if ack > end {
            // The probe repaired a loss: reduce the window once, at once.
            tlp.end_seq = None;
            s.stats.tlp_recoveries += 1;
            self.note_congestion(now, SlowStartExit::Loss);
            let flight = self.flight();
            self.window.ssthresh = self.ssthresh_after_loss(now, flight, Some(s.sb.pipe()));
            self.window.cwnd = self.window.ssthresh;
        } else if !advanced && newly_sacked == 0 {
            tlp.end_seq = None;
        }
    }

    /// RFC 8985 6.3: the reordering timer fired.
    pub(super) fn on_reorder_timer(&mut self, s: &mut SackRecovery, now: SimTime, out: &mut Outbox) {
        s.reo_deadline = None;
        let prior = s.sb.lost_marks;
        let (min_rtt, srtt) = (self.rtt.min_rtt(), self.rtt.srtt());
        let dupthresh = self.dupack_threshold;
        if let Some(rack) = &s.rack {
            let in_recovery = matches!(s.ca, CaState::Recovery | CaState::Loss);
            let reo = rack.reo_wnd(s.sb.reordering_seen, in_recovery, s.sb.sacked_segments, dupthresh, min_rtt, srtt);
            let (n, wait) = s.sb.rack_detect(now, rack.xmit, rack.end, rack.rtt + reo);
            s.stats.rack_losses += n;
            s.reo_deadline = wait.map(|w| now + w + s.slack);
        }
        if s.sb.lost_marks > prior {
            if matches!(s.ca, CaState::Open | CaState::Cwr) {
                self.enter_recovery(s, now);
                let (ssthresh, mss) = (self.window.ssthresh, self.window.mss);
                if s.prr_on {
                    // No ACK delivered anything: PRR's first step allows the retransmission.
                    let pipe = s.sb.pipe();
                    if let Some(cwnd) = s.prr.on_ack(0, pipe, ssthresh, mss, false) {
                        self.window.cwnd = cwnd;
                    }
                }
            }
            self.send_data_sack(s, now, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::sender::Sender;
    use super::super::{CcKind, SegKind, TcpProfile};
    use super::*;

    const M: u64 = 1448;

    /// Linux profile with NewReno growth (no HyStart) for round numbers.
    fn linux() -> TcpConfig {
        TcpConfig::for_profile(TcpProfile::Linux, Some(CcKind::Newreno))
    }

    /// RFC 6675 alone: SACK without RACK, TLP or PRR.
    fn rfc_sack() -> TcpConfig {
        TcpConfig { sack: true, ..TcpConfig::rfc() }
    }

    /// A sender past the handshake at 10 us (SRTT = min RTT = 10 us) that has
    /// sent its initial window of 10 segments at 10 us.
    fn established(c: &TcpConfig, total: u64, stop: Option<SimTime>) -> Sender {
        let mut s = Sender::new(c, total, stop);
        let mut out = Vec::new();
        s.open(SimTime(0), &mut out);
        s.on_segment(SimTime::from_us(10), &Segment::control(SegKind::SynAck, SimTime(0)), &mut out);
        assert_eq!(s.snd_max, 10 * M);
        s
    }

    /// An ACK at `ack` echoing a segment sent at 10 us, with SACK blocks (in segments).
    fn ack(a: u64, blocks: &[(u64, u64)]) -> Segment {
        let mut s = Segment::control(SegKind::Ack, SimTime(0));
        s.ack = a * M;
        s.ts_echo = SimTime::from_us(10);
        for &(b, e) in blocks {
            s.sack.push(b * M, e * M);
        }
        s
    }

    fn retransmitted(out: &Outbox) -> Vec<u64> {
        out.iter().filter(|(_, s)| s.retransmit).map(|(_, s)| s.seq / M).collect()
    }

    #[test]
    fn three_dupacks_with_sack_mark_the_hole_lost() {
        // RFC 6675 without RACK: segment 1 is lost; segments 2, 3, 4 are SACKed.
        let mut s = established(&rfc_sack(), 1 << 30, None);
        let mut out = Vec::new();
        let t = SimTime::from_us(20);
        s.on_segment(t, &ack(1, &[]), &mut out);
        s.on_segment(t, &ack(1, &[(2, 3)]), &mut out);
        s.on_segment(t, &ack(1, &[(2, 4)]), &mut out);
        assert!(retransmitted(&out).is_empty(), "two SACKed segments are not enough");
        assert_eq!(s.sack().unwrap().ca, CaState::Open);
        s.on_segment(t, &ack(1, &[(2, 5)]), &mut out);
        assert_eq!(s.sack().unwrap().ca, CaState::Recovery);
        assert_eq!(retransmitted(&out), vec![1]);
        assert_eq!(s.fast_retransmits, 1);
        // Without PRR, cwnd = ssthresh = FlightSize / 2 (RFC 6675 4.2).
        assert_eq!(s.window.cwnd, s.window.ssthresh);
        assert_eq!(s.window.ssthresh, (s.snd_max - M) / 2);
    }

    #[test]
    fn rack_marks_a_hole_lost_after_the_reordering_window() {
        // One SACKed segment above a hole: RACK waits min_RTT / 4 (2.5 us) plus
        // Linux's 2 ms timer slack, then retransmits.
        let mut s = established(&linux(), 1 << 30, None);
        let mut out = Vec::new();
        s.on_segment(SimTime::from_us(20), &ack(1, &[]), &mut out);
        out.clear();
        s.on_segment(SimTime::from_us(21), &ack(1, &[(2, 3)]), &mut out);
        assert!(retransmitted(&out).is_empty());
        let t = s.next_deadline().unwrap();
        assert_eq!(t, SimTime::from_us(21) + SimTime::from_ps(2_500_000) + SimTime::from_ms(2));
        s.on_timer(t, &mut out);
        assert_eq!(retransmitted(&out), vec![1]);
        assert_eq!(s.sack_stats().rack_losses, 1);
        assert_eq!(s.sack().unwrap().ca, CaState::Recovery);
    }

    #[test]
    fn rack_with_three_sacked_segments_marks_the_hole_at_once() {
        let mut s = established(&linux(), 1 << 30, None);
        let mut out = Vec::new();
        let t = SimTime::from_us(20);
        s.on_segment(t, &ack(1, &[]), &mut out);
        s.on_segment(t, &ack(1, &[(2, 4)]), &mut out);
        assert!(retransmitted(&out).is_empty());
        s.on_segment(t, &ack(1, &[(2, 5)]), &mut out);
        assert_eq!(retransmitted(&out), vec![1], "reo_wnd is 0 once DupThresh segments are SACKed");
    }

    #[test]
    fn a_lost_retransmission_is_found_by_rack_without_a_timeout() {
        let mut s = established(&linux(), 1 << 30, None);
        let mut out = Vec::new();
        s.on_segment(SimTime::from_us(20), &ack(1, &[(2, 5)]), &mut out);
        assert_eq!(retransmitted(&out), vec![1]); // sent at 20 us
                                                  // More SACKs: PRR lets new segments out after the retransmission.
        s.on_segment(SimTime::from_us(21), &ack(1, &[(2, 10)]), &mut out);
        assert!(s.snd_max > 10 * M);
        out.clear();
        // Segments sent after the retransmission are SACKed 15 us later: the
        // retransmission, sent before them, is lost too.
        let newest = s.snd_max / M;
        let mut later = ack(1, &[(2, newest)]);
        later.ts_echo = SimTime::from_us(20);
        s.on_segment(SimTime::from_us(35), &later, &mut out);
        assert_eq!(retransmitted(&out), vec![1], "the lost retransmission is sent again");
        assert_eq!(s.timeouts, 0);
    }

    #[test]
    fn prr_sends_about_one_segment_per_two_delivered_during_recovery() {
        // cwnd 20 segments, all sent; segment 0 lost. Each following ACK SACKs
        // one more segment; PRR (ssthresh 10) sends ~half as many as delivered.
        let c = TcpConfig { init_cwnd_segments: 20, rwnd_bytes: 20 * M, ..linux() };
        let mut s = Sender::new(&c, 1 << 30, None);
        let mut out = Vec::new();
        s.open(SimTime(0), &mut out);
        s.on_segment(SimTime::from_us(10), &Segment::control(SegKind::SynAck, SimTime(0)), &mut out);
        out.clear();
        let mut sent = Vec::new();
        for k in 2..=20 {
            s.on_segment(SimTime::from_us(20), &ack(0, &[(1, k)]), &mut out);
            sent.push(out.len());
            out.clear();
        }
        assert_eq!(s.window.ssthresh, 10 * M);
        // The receive window (20 segments from SND.UNA = 0) allows no new data,
        // so only the retransmission of segment 0 goes out.
        assert_eq!(sent.iter().sum::<usize>(), 1);
        assert!(!s.sack().unwrap().sb.reordering_seen);
        // The ACK of segment 0 covers everything: recovery ends at ssthresh.
        s.on_segment(SimTime::from_us(30), &ack(20, &[]), &mut out);
        assert_eq!(s.sack().unwrap().ca, CaState::Open);
        assert_eq!(s.window.cwnd, 10 * M);
    }

    #[test]
    fn prr_spreads_ssthresh_worth_of_sending_over_the_recovery_round_trip() {
        // cwnd 20; segment 0 lost; each ACK SACKs one more segment.
        let c = TcpConfig { init_cwnd_segments: 20, ..linux() };
        let mut s = Sender::new(&c, 1 << 30, None);
        let mut out = Vec::new();
        s.open(SimTime(0), &mut out);
        s.on_segment(SimTime::from_us(10), &Segment::control(SegKind::SynAck, SimTime(0)), &mut out);
        out.clear();
        // The first two duplicate ACKs each let one new segment out (limited
        // transmit: SACKed segments leave pipe); the third starts recovery
        // with RecoverFS = 22 segments and ssthresh = cwnd / 2 = 10 (Linux).
        for k in 2..=3 {
            s.on_segment(SimTime::from_us(20), &ack(0, &[(1, k)]), &mut out);
        }
        assert_eq!(out.len(), 2);
        out.clear();
        for k in 4..=20 {
            s.on_segment(SimTime::from_us(20), &ack(0, &[(1, k)]), &mut out);
        }
        assert_eq!(s.window.ssthresh, 10 * M);
        // 17 segments delivered in recovery: ceil(17 * 10 / 22) = 8 sent, the
        // retransmission first; pipe ends at ssthresh.
        assert_eq!(out.len(), 8);
        assert_eq!(retransmitted(&out), vec![0]);
        assert_eq!(s.sack().unwrap().sb.pipe(), 10 * M);
    }

    #[test]
    fn tail_loss_probe_fires_after_2_srtt_and_resends_the_last_segment() {
        // All data sent (the flow stops at 15 us); segments 8 and 9 lost.
        let mut s = established(&linux(), 1 << 30, Some(SimTime::from_us(15)));
        let mut out = Vec::new();
        s.on_segment(SimTime::from_us(20), &ack(8, &[]), &mut out);
        assert!(out.is_empty());
        let srtt = s.srtt().unwrap();
        let pto = s.next_deadline().unwrap();
        assert_eq!(pto, SimTime::from_us(20) + SimTime(2 * srtt.0) + SimTime::from_ms(2));
        s.on_timer(pto, &mut out);
        assert_eq!(retransmitted(&out), vec![9], "the probe resends the highest segment");
        assert_eq!(s.sack_stats().tlp_probes, 1);
        // The probe is SACKed: RACK finds segment 8 lost and fast recovery repairs it.
        out.clear();
        let mut a = ack(8, &[(9, 10)]);
        a.ts_echo = pto;
        s.on_segment(pto + SimTime::from_us(10), &a, &mut out);
        assert_eq!(retransmitted(&out), vec![8]);
        assert_eq!(s.timeouts, 0);
    }

    #[test]
    fn a_lost_last_segment_waits_for_the_probe_at_the_rto_when_it_is_alone_in_flight() {
        // Linux `tcp_schedule_loss_probe`: with one segment out the probe timeout is
        // 2 SRTT + TCP_RTO_MIN, capped by the RTO. A flow of 9 full segments and a
        // short last one; everything but the last is ACKed: nothing was sent after
        // it, so RACK cannot find it, and the probe goes at the RTO (~200 ms).
        let total = 9 * M + 112;
        let mut s = Sender::new(&linux(), total, None);
        let mut out = Vec::new();
        s.open(SimTime(0), &mut out);
        s.on_segment(SimTime::from_us(10), &Segment::control(SegKind::SynAck, SimTime(0)), &mut out);
        assert_eq!(s.snd_max, total);
        out.clear();
        let now = SimTime::from_us(20);
        s.on_segment(now, &ack(9, &[]), &mut out);
        assert!(out.is_empty());
        let srtt = s.srtt().unwrap();
        let rto_at = s.rto_deadline.unwrap();
        assert!(s.sack().unwrap().reo_deadline.is_none(), "RACK has no later delivery to go by");
        let pto = s.next_deadline().unwrap();
        assert_eq!(pto, (now + SimTime(2 * srtt.0) + SimTime::from_ms(200)).min(rto_at));
        assert!(pto >= now + SimTime::from_ms(200));
        s.on_timer(pto, &mut out);
        assert_eq!(retransmitted(&out), vec![9], "the probe resends the last segment");
        assert_eq!((s.sack_stats().tlp_probes, s.timeouts), (1, 0));
        // The probe's ACK covers the flow: its end equals the probe's end, not beyond
        // it, so no loss is counted as repaired (`tcp_process_tlp_ack`).
        let mut a = Segment::control(SegKind::Ack, SimTime(0));
        a.ack = total;
        a.ts_echo = pto;
        s.on_segment(pto + SimTime::from_us(10), &a, &mut out);
        assert_eq!(s.snd_una, total);
        assert_eq!(s.sack_stats().tlp_recoveries, 0);
    }

    #[test]
    fn a_probe_with_new_data_available_sends_new_data_beyond_the_window() {
        let mut s = established(&linux(), 1 << 30, None);
        let mut out = Vec::new();
        // Nothing comes back; cwnd (10 segments) is full.
        let pto = s.next_deadline().unwrap();
        assert!(pto < SimTime::from_ms(200), "the probe comes before the RTO");
        s.on_timer(pto, &mut out);
        assert_eq!(out.len(), 1);
        assert!(!out[0].1.retransmit && out[0].1.seq == 10 * M);
    }

    #[test]
    fn a_dsack_for_the_probe_means_nothing_was_lost() {
        let mut s = established(&linux(), 1 << 30, Some(SimTime::from_us(15)));
        let mut out = Vec::new();
        s.on_segment(SimTime::from_us(20), &ack(9, &[]), &mut out);
        // One segment in flight: PTO = 2 SRTT + the 200 ms delayed-ACK allowance, capped at the RTO.
        let pto = s.next_deadline().unwrap();
        s.on_timer(pto, &mut out);
        assert_eq!(retransmitted(&out), vec![9]);
        let ssthresh = s.window.ssthresh;
        // Both the original and the probe arrived: the ACK carries a D-SACK.
        let mut a = ack(10, &[(9, 10)]);
        a.ts_echo = pto;
        s.on_segment(pto + SimTime::from_us(10), &a, &mut out);
        assert_eq!(s.sack_stats().dsacks, 1);
        assert_eq!(s.sack_stats().spurious_retransmits, 1);
        assert_eq!(s.sack_stats().tlp_recoveries, 0);
        assert_eq!(s.window.ssthresh, ssthresh, "no reduction");
    }

    #[test]
    fn a_timeout_with_sack_marks_every_unsacked_segment_lost_and_keeps_the_sacked() {
        let mut s = established(&linux(), 1 << 30, None);
        let mut out = Vec::new();
        // Segments 3..5 SACKed with a reordering window pending; then silence.
        s.on_segment(SimTime::from_us(20), &ack(0, &[(3, 5)]), &mut out);
        let t = s.rto_deadline.unwrap();
        out.clear();
        s.sack_mut().reo_deadline = None;
        s.sack_mut().tlp_deadline = None;
        s.on_timer(t, &mut out);
        assert_eq!(s.timeouts, 1);
        assert_eq!(s.window.cwnd, M);
        assert_eq!(retransmitted(&out), vec![0], "one segment: cwnd is 1 SMSS");
        let sb = &s.sack().unwrap().sb;
        assert_eq!(sb.sacked_bytes, 2 * M, "the SACKed segments stay SACKed");
        // Lost: 0-2 and 5-9 of the first window and the two segments limited
        // transmit sent after the SACK.
        assert_eq!(sb.lost_bytes(), 10 * M);
        assert_eq!(s.sack().unwrap().ca, CaState::Loss);
        // The next ACK (segment 0) lets two more retransmissions out, skipping the SACKed ones.
        out.clear();
        let mut a = ack(1, &[(3, 5)]);
        a.ts_echo = t;
        s.on_segment(t + SimTime::from_us(10), &a, &mut out);
        assert_eq!(retransmitted(&out), vec![1, 2]);
        out.clear();
        let mut a = ack(5, &[]);
        a.ts_echo = t;
        s.on_segment(t + SimTime::from_us(20), &a, &mut out);
        assert_eq!(retransmitted(&out)[0], 5);
    }

    #[test]
    fn recovery_counts_as_one_episode_and_ends_at_the_recovery_point() {
        let mut s = established(&linux(), 1 << 30, None);
        let mut out = Vec::new();
        s.on_segment(SimTime::from_us(20), &ack(0, &[(1, 4), (5, 8)]), &mut out);
        assert_eq!(retransmitted(&out), vec![0, 4], "all holes below the SACKed data at once");
        // The retransmission of 0 arrives: a partial ACK, still in recovery.
        let mut a = ack(4, &[(5, 8)]);
        a.ts_echo = SimTime::from_us(20);
        s.on_segment(SimTime::from_us(30), &a, &mut out);
        assert_eq!(s.sack().unwrap().ca, CaState::Recovery);
        // RecoveryPoint is the end of the initial window.
        let mut a = ack(10, &[]);
        a.ts_echo = SimTime::from_us(20);
        s.on_segment(SimTime::from_us(40), &a, &mut out);
        assert_eq!(s.sack().unwrap().ca, CaState::Open);
        assert_eq!(s.window.cwnd, s.window.ssthresh);
        assert_eq!(s.fast_retransmits, 1);
        assert_eq!(s.recovery_time, SimTime::from_us(20));
    }

    #[test]
    fn tso_deferral_holds_new_data_until_a_third_of_the_window_is_free() {
        // 30 segments in flight since 10 us (SRTT 10 us); at 20 us ACKs free
        // 4 segments of room each (2 acknowledged, 2 of slow-start growth).
        let run = |gso: u32| {
            let c = TcpConfig { init_cwnd_segments: 30, gso_max_bytes: gso, ..linux() };
            let mut s = Sender::new(&c, 1 << 30, None);
            let mut out = Vec::new();
            s.open(SimTime(0), &mut out);
            s.on_segment(SimTime::from_us(10), &Segment::control(SegKind::SynAck, SimTime(0)), &mut out);
            assert_eq!(s.snd_max, 30 * M);
            (1..=3)
                .map(|k| {
                    let mut out = Vec::new();
                    s.on_segment(SimTime::from_us(20), &ack(2 * k, &[]), &mut out);
                    out.len()
                })
                .collect::<Vec<_>>()
        };
        // Per-segment sending: 4 segments per ACK.
        assert_eq!(run(0), vec![4, 4, 4]);
        // Deferred while the room (4, then 8 segments) is below a third of
        // cwnd (32 / 3, 34 / 3); then one burst of all 12.
        assert_eq!(run(65_536), vec![0, 0, 12]);
    }

    #[test]
    fn the_last_segment_of_each_burst_of_two_or_more_carries_psh() {
        // 30 segments of initial window: with GSO they leave in bursts of
        // `tso_segs` (one GSO buffer each), PSH on each burst's last segment
        // (__tcp_transmit_skb); per-segment sending carries none.
        let psh_at = |gso: u32| {
            let c = TcpConfig { init_cwnd_segments: 30, gso_max_bytes: gso, ..linux() };
            let mut s = Sender::new(&c, 1 << 30, None);
            let mut out = Vec::new();
            s.open(SimTime(0), &mut out);
            out.clear();
            s.on_segment(SimTime::from_us(10), &Segment::control(SegKind::SynAck, SimTime(0)), &mut out);
            assert_eq!(out.len(), 30);
            out.iter().filter(|(_, g)| g.psh).map(|(_, g)| g.seq / M).collect::<Vec<u64>>()
        };
        let first = psh_at(65_536);
        let segs = first[0] + 1;
        assert!(segs >= 2);
        let expected: Vec<u64> = (1..=30 / segs).map(|k| k * segs - 1).chain((30 % segs > 1).then_some(29)).collect();
        assert_eq!(first, expected);
        assert!(psh_at(0).is_empty());
    }
}
