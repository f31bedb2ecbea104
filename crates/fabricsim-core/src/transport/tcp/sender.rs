//! The sending side of a bulk TCP transfer.
//!
//! State machine (RFC 793 names): `Closed -> SynSent -> Established -> Done`.
//! In ESTABLISHED the sender runs:
//! - slow start / congestion avoidance through its congestion controller
//!   (RFC 5681 3.1), optionally with HyStart++ (RFC 9406) and growing only
//!   while the window limits the flight (`cwnd_validation`, as Linux);
//! - loss recovery, one of two ([`LossRecovery`], fixed when the sender is
//!   made; each machine's steps take the [`SenderCore`] and their own state):
//!   - without SACK (`newreno.rs`), fast retransmit on `dupack_threshold` duplicate ACKs and
//!     NewReno fast recovery (RFC 6582 3.2): `ssthresh` from the controller,
//!     `cwnd = ssthresh + 3 SMSS`, inflation per further duplicate, a partial
//!     ACK retransmits the next hole and deflates, a full ACK (covering
//!     `recover`) ends recovery with `cwnd = ssthresh`; optional limited
//!     transmit (RFC 3042);
//!   - with SACK, the scoreboard-based recovery of `recovery.rs` (RFC 6675,
//!     RACK-TLP of RFC 8985, PRR of RFC 6937);
//! - the retransmission timer (RFC 6298 5.1-5.6): on expiry `ssthresh` from the
//!   controller (held on a repeated expiry, RFC 5681 3.1), `cwnd = 1 SMSS`,
//!   `recover` moves to the highest byte sent (RFC 6582 3.2 step 4), go back to
//!   the first unacknowledged byte (or, with SACK, mark every segment not
//!   SACKed lost), double the RTO;
//! - ECN (RFC 3168 6.1.2): at most one window reduction per window of data on
//!   ECN-Echo, CWR set on the next new segment; DCTCP does its own reduction;
//! - optional pacing: data segments leave no closer than their frame time at
//!   a fixed rate, or Linux's pacing at a rate that follows cwnd / SRTT;
//! - Linux's limits besides the windows (`limits.rs`): TSO burst sizes, TCP
//!   Small Queues and the send buffer.

use super::cc::hystart::HystartPlusPlus;
use super::cc::{AckInfo, CongestionControl, LossInfo, SlowStartExit, Window};
use super::config::{Hystart, Pacing, SsthreshFrom};
use super::limits::{Burst, SendLimits};
use super::newreno::NewReno;
use super::recovery::{CaState, SackRecovery};
use super::rtt::RttEstimator;
use super::{Outbox, SegKind, Segment, TcpConfig};
use crate::units::{Rate, SimTime};
use std::ops::{Deref, DerefMut};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderState {
    Closed,
    SynSent,
    Established,
    /// Every byte acknowledged (or the send window closed and all data acknowledged).
    Done,
}

/// Whether the window limits the flight (Linux `tcp_cwnd_validate` and
/// `tcp_is_cwnd_limited`): remembered for a round trip once seen, and in
/// slow start the window may grow to twice the largest flight of the round.
#[derive(Clone, Debug, Default)]
pub(super) struct CwndUse {
    pub(super) is_limited: bool,
    max_flight: u64,
    usage_seq: u64,
}

impl CwndUse {
    fn allows_growth(&self, w: &Window) -> bool {
        self.is_limited || (w.in_slow_start() && w.cwnd < 2 * self.max_flight)
    }

    fn on_send(&mut self, limited_now: bool, flight: u64, snd_una: u64, snd_max: u64) {
        if snd_una >= self.usage_seq || limited_now || (!self.is_limited && flight > self.max_flight) {
            self.is_limited = limited_now;
            self.max_flight = flight;
            self.usage_seq = snd_max;
        }
    }
}

/// The window reduction [`SenderCore::ecn_on_ack`] made.
#[derive(Clone, Copy, Debug)]
pub(super) enum EcnCut {
    None,
    /// The controller cut the window itself (DCTCP) from `before`.
    Controller {
        before: Window,
    },
    /// RFC 3168 6.1.2: `ssthresh` set as for a loss; cwnd is the caller's.
    Classic,
}

/// Which loss-recovery machine a connection runs, with its state: the one
/// place that says it. Fixed when the sender is made (SACK negotiated or not).
#[derive(Clone, Debug)]
pub enum LossRecovery {
    /// Without SACK: fast retransmit on duplicate ACKs and NewReno fast
    /// recovery (RFC 5681 3.2, RFC 6582 3.2; `newreno.rs`).
    NewReno(NewReno),
    /// With SACK: the scoreboard-based recovery of RFC 6675, with RACK-TLP
    /// (RFC 8985) and PRR (RFC 6937) as configured (`recovery.rs`).
    Sack(SackRecovery),
}

/// A TCP sender: the connection's sending state and its loss-recovery
/// machine, kept apart so that each machine's steps borrow both at once.
#[derive(Clone, Debug)]
pub struct Sender {
    core: SenderCore,
    pub(super) loss: LossRecovery,
}

impl Deref for Sender {
    type Target = SenderCore;
    #[inline(always)]
    fn deref(&self) -> &SenderCore {
        &self.core
    }
}

impl DerefMut for Sender {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut SenderCore {
        &mut self.core
    }
}

/// Everything of a [`Sender`] but its loss-recovery machine: sequence
/// numbers, windows, timers, pacing and the statistics.
#[derive(Clone, Debug)]
pub struct SenderCore {
    pub state: SenderState,
    pub(super) total: u64,
    /// The application writes its data over time (`write`): having sent and
    /// had acknowledged everything written so far does not end the flow.
    pub(super) app_writes: bool,
    stop_at: Option<SimTime>,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Highest sequence number sent so far (end of the highest segment).
    pub snd_max: u64,
    pub window: Window,
    pub(super) rwnd: u64,
    pub(super) dupack_threshold: u32,
    /// The last send stopped in TSO deferral for want of cwnd.
    tso_deferred: bool,
    /// When the last data segment left (Linux's `tcp_wstamp_ns` without pacing).
    last_data_sent: SimTime,
    pub(super) rtt: RttEstimator,
    pub(super) backoff: u32,
    pub(super) rto_deadline: Option<SimTime>,
    syn_sent_at: SimTime,
    syn_retransmitted: bool,
    pub cc: CongestionControl,
    pub(super) ecn: bool,
    /// No further classic ECN reduction until the ACK passes this.
    pub(super) ecn_recover: Option<u64>,
    pub(super) cwr_pending: bool,
    pub(super) pacing: Option<Rate>,
    pub(super) next_send: SimTime,
    /// When `send_data` last ran. A pacing deadline at or before it held
    /// nothing back (the window or the data ran out first), so it arms no
    /// timer: re-arming it would fire at once, send nothing and repeat
    /// forever at the same simulated time.
    pub(super) pacing_checked: SimTime,
    pub(super) frame_overhead: u32,
    min_frame: u32,
    /// Pacing rate, TSO bursts, TCP Small Queues, send buffer (Linux profile).
    pub limits: Option<SendLimits>,
    /// The window comes from the receiver's ACKs (receive-window autotuning).
    wnd_from_acks: bool,
    /// Timestamp of the latest ACK, echoed by data segments (RFC 7323 TS.Recent).
    ts_recent: SimTime,
    pub(super) limited_transmit: bool,
    ssthresh_from: SsthreshFrom,
    pub(super) min_rto: SimTime,
    /// Send the next segment whatever the window (RFC 6675 fast retransmit without PRR).
    pub(super) force_one: bool,
    pub(super) hystart_pp: Option<HystartPlusPlus>,
    pub(super) cwnd_use: Option<CwndUse>,
    pub(super) recovery_started: SimTime,
    // Statistics.
    pub retransmits: u64,
    /// Entries into fast recovery.
    pub fast_retransmits: u64,
    /// Retransmissions sent during fast recovery (holes repaired).
    pub recovery_retransmits: u64,
    /// Time spent in fast recovery.
    pub recovery_time: SimTime,
    /// Exits from fast recovery other than by a timeout.
    pub recovery_ends: u64,
    pub timeouts: u64,
    pub ecn_reductions: u64,
    /// When, at which cwnd and why slow start first ended.
    pub ss_exit: Option<(SimTime, u64, SlowStartExit)>,
    pub done_at: Option<SimTime>,
}

impl Sender {
    pub fn new(cfg: &TcpConfig, total: u64, stop_at: Option<SimTime>) -> Self {
        let loss = if cfg.sack {
            LossRecovery::Sack(SackRecovery::new(cfg, total))
        } else {
            LossRecovery::NewReno(NewReno::default())
        };
        Sender { core: SenderCore::new(cfg, total, stop_at), loss }
    }

    /// NewReno's state (tests).
    #[cfg(test)]
    pub(super) fn newreno(&self) -> &NewReno {
        match &self.loss {
            LossRecovery::NewReno(nr) => nr,
            LossRecovery::Sack(_) => panic!("a SACK sender"),
        }
    }

    /// The SACK machine's state (tests).
    #[cfg(test)]
    pub(super) fn sack_mut(&mut self) -> &mut SackRecovery {
        match &mut self.loss {
            LossRecovery::Sack(s) => s,
            LossRecovery::NewReno(_) => panic!("a NewReno sender"),
        }
    }

    /// The SACK machine's state, if the connection runs it.
    #[inline(always)]
    pub(super) fn sack(&self) -> Option<&SackRecovery> {
        match &self.loss {
            LossRecovery::Sack(s) => Some(s),
            LossRecovery::NewReno(_) => None,
        }
    }
}

impl SenderCore {
    fn new(cfg: &TcpConfig, total: u64, stop_at: Option<SimTime>) -> Self {
        let mss = cfg.mss() as u64;
        SenderCore {
            state: SenderState::Closed,
            total,
            app_writes: false,
            stop_at,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            window: Window { cwnd: cfg.init_cwnd_segments as u64 * mss, ssthresh: u64::MAX, mss },
            rwnd: cfg.rwnd_bytes,
            dupack_threshold: cfg.dupack_threshold,
            tso_deferred: false,
            last_data_sent: SimTime::ZERO,
            rtt: RttEstimator::new(
                SimTime(cfg.initial_rto_ps),
                SimTime(cfg.min_rto_ps),
                SimTime(cfg.max_rto_ps),
                SimTime(cfg.clock_granularity_ps),
            )
            .with_formula(cfg.rto_formula),
            backoff: 0,
            rto_deadline: None,
            syn_sent_at: SimTime::ZERO,
            syn_retransmitted: false,
            cc: CongestionControl::new(cfg),
            ecn: cfg.uses_ecn(),
            ecn_recover: None,
            cwr_pending: false,
            pacing: if cfg.pacing == Pacing::Fixed { cfg.pacing_bps.map(Rate) } else { None },
            next_send: SimTime::ZERO,
            pacing_checked: SimTime::ZERO,
            frame_overhead: cfg.header_bytes + cfg.l2_bytes,
            min_frame: cfg.min_frame_bytes,
            limits: SendLimits::new(cfg),
            wnd_from_acks: cfg.rcv_autotune || cfg.receiver_app.is_some(),
            ts_recent: SimTime::ZERO,
            limited_transmit: cfg.limited_transmit,
            ssthresh_from: cfg.ssthresh_from,
            min_rto: SimTime(cfg.min_rto_ps),
            force_one: false,
            hystart_pp: (cfg.hystart == Hystart::HystartPlusPlus)
                .then(|| HystartPlusPlus::new(cfg.pacing != Pacing::Off)),
            cwnd_use: cfg.cwnd_validation.then(CwndUse::default),
            recovery_started: SimTime::ZERO,
            retransmits: 0,
            fast_retransmits: 0,
            recovery_retransmits: 0,
            recovery_time: SimTime::ZERO,
            recovery_ends: 0,
            timeouts: 0,
            ecn_reductions: 0,
            ss_exit: None,
            done_at: None,
        }
    }

    /// Active open: send SYN (RFC 793, CLOSED -> SYN-SENT).
    pub fn open(&mut self, now: SimTime, out: &mut Outbox) {
        debug_assert_eq!(self.state, SenderState::Closed);
        self.state = SenderState::SynSent;
        self.syn_sent_at = now;
        out.push((false, Segment::control(SegKind::Syn, now)));
        self.rto_deadline = Some(now + self.rtt.rto(self.backoff));
    }

    /// The most data the sender may have outstanding besides cwnd: the
    /// receive window, and the send buffer when it is limited.
    #[inline]
    pub(super) fn send_window(&self) -> u64 {
        match &self.limits {
            Some(l) => self.rwnd.min(l.send_buffer()),
            None => self.rwnd,
        }
    }

    /// Frame bytes of a data segment carrying `len` bytes.
    #[inline]
    pub(super) fn frame_of(&self, len: u64) -> u64 {
        (len + self.frame_overhead as u64).max(self.min_frame as u64)
    }

    /// Linux's `tcp_update_pacing_rate`, after an ACK has been processed;
    /// a controller's own rate, if it sets one, replaces the fixed pacer's.
    #[inline(always)]
    pub(super) fn update_pacing_rate(&mut self) {
        if let Some(r) = self.cc.pacing_rate() {
            self.pacing = (r.0 > 0).then_some(r);
        }
        let (cwnd, ssthresh, out, srtt) = (self.window.cwnd, self.window.ssthresh, self.flight(), self.rtt.srtt());
        if let Some(l) = &mut self.limits {
            l.update_rate(cwnd, ssthresh, out, srtt);
        }
    }

    /// TSO deferral (`tcp_tso_should_defer`, `tcp_tso_win_divisor` = 3): a
    /// burst of new data that the window cannot fill waits for more room
    /// when an ACK is due soon, so that bursts stay large. It goes at once
    /// without SACK, in recovery or with SACKed data, when nothing is in flight, when the window allows a full
    /// burst (`full` payload bytes) or a third of itself, when the rest of
    /// the data fits, or when the next ACK is due later than min(SRTT / 2,
    /// 1 ms) from now (it is expected one SRTT after the oldest
    /// unacknowledged segment left). A deferred sender sends on the next ACK.
    fn tso_should_defer(&mut self, sack: Option<&SackRecovery>, now: SimTime, full: u64) -> bool {
        // SACK only: NewReno sends at once.
        let Some(s) = sack else { return false };
        let flight = self.flight();
        if flight == 0 {
            return false;
        }
        // Open state only: with SACKed data (Linux's Disorder) limited
        // transmit goes at once.
        if s.ca != CaState::Open || s.sb.sacked_bytes > 0 {
            return false;
        }
        let (cwnd, wnd_end) = (self.window.cwnd, self.snd_una + self.send_window());
        let in_flight = if self.limited_transmit { s.sb.pipe() } else { flight };
        let cong_win = cwnd.saturating_sub(in_flight);
        let send_win = wnd_end.saturating_sub(self.snd_max);
        let limit = cong_win.min(send_win);
        if limit >= full || self.total.saturating_sub(self.snd_max) <= limit {
            return false;
        }
        let window = cwnd.min(self.send_window());
        if limit >= window / 3 {
            return false;
        }
        // Defer only while the flow is sending: not after 1 ms without a send.
        if now.saturating_sub(self.last_data_sent) > SimTime::from_us(1000) {
            return false;
        }
        // The next ACK (the oldest segment's, one SRTT after it left) must be
        // due within min(SRTT / 2, 1 ms).
        let Some(srtt) = self.rtt.srtt() else { return false };
        let oldest = s.sb.rec(self.snd_una).xmit;
        let threshold = SimTime(srtt.0 / 2).min(SimTime::from_us(1000));
        if oldest + srtt > now + threshold {
            return false;
        }
        // Held back by cwnd: the window is in use (Linux's `is_cwnd_limited`).
        self.tso_deferred |= cong_win < send_win;
        true
    }

    /// Before a segment leaves: whether it may start a new burst (or join
    /// the current one; TSO deferral needs the SACK
    /// machine's scoreboard, `sack`). `false`: the send loop stops here.
    #[inline(always)]
    pub(super) fn burst_gate(
        &mut self,
        sack: Option<&SackRecovery>,
        now: SimTime,
        burst: &mut Burst,
        retransmit: bool,
    ) -> bool {
        burst.left > 0 || self.start_burst(sack, now, burst, retransmit)
    }

    /// [`SenderCore::burst_gate`] when no burst is open.
    #[inline(never)]
    fn start_burst(&mut self, sack: Option<&SackRecovery>, now: SimTime, burst: &mut Burst, retransmit: bool) -> bool {
        let (mss, min_rtt, outstanding) = (self.window.mss, self.rtt.min_rtt(), self.flight());
        let frame = self.frame_of(mss);
        let Some(l) = &self.limits else { return true };
        let segs = l.tso_segs(mss, min_rtt);
        if !retransmit && l.tso_sizing() && self.tso_should_defer(sack, now, segs * mss) {
            return false;
        }
        let bytes = segs * frame;
        let Some(l) = &mut self.limits else { return true };
        if !l.may_start(now, bytes, outstanding, retransmit) {
            return false;
        }
        burst.left = segs;
        burst.bytes = 0;
        burst.segs = 0;
        true
    }

    /// After a data segment of `len` bytes joined the current burst; marks
    /// it for TSQ accounting, and with PSH when it completes a burst of two
    /// or more segments (one GSO buffer: `__tcp_transmit_skb` sets PSH on
    /// every buffer of more than one segment, and GSO leaves it on the last).
    #[inline]
    pub(super) fn burst_add(&mut self, now: SimTime, burst: &mut Burst, seg: &mut Segment) {
        let frame = self.frame_of(seg.len as u64);
        seg.ts_echo = self.ts_recent;
        let Some(l) = &mut self.limits else { return };
        self.last_data_sent = now;
        l.on_segment(frame);
        seg.tsq = l.charges_tsq();
        burst.bytes += frame;
        burst.segs += 1;
        burst.left -= 1;
        if burst.left == 0 {
            seg.psh = burst.segs > 1;
            l.end_burst(now, burst.bytes);
            burst.bytes = 0;
            burst.segs = 0;
        }
    }

    /// The send loop ended with a burst still open: its last segment (the
    /// last one in `out`) ends the GSO buffer, with PSH if it holds two or more.
    #[inline]
    pub(super) fn burst_close(&mut self, now: SimTime, burst: &mut Burst, out: &mut Outbox) {
        if let Some(l) = &mut self.limits {
            if burst.bytes > 0 {
                l.end_burst(now, burst.bytes);
            }
            if burst.segs > 1 {
                if let Some((false, seg)) = out.last_mut() {
                    seg.psh = true;
                }
            }
        }
        *burst = Burst::default();
    }

    /// One of this connection's packets charged to TCP Small Queues finished
    /// transmission at the host's NIC (or left the host's accounting); a
    /// throttled sender is woken by its timer at `now`. Returns whether it
    /// was (only then can [`Sender::next_deadline`] have changed).
    pub fn on_tx_complete(&mut self, now: SimTime, frame: u64) -> bool {
        match &mut self.limits {
            Some(l) => l.on_tx_complete(now, frame),
            None => false,
        }
    }

    /// The receive window and timestamp an ACK carries.
    #[inline]
    pub(super) fn note_ack_fields(&mut self, seg: &Segment) {
        if self.wnd_from_acks && seg.wnd > 0 {
            self.rwnd = seg.wnd;
        }
        if seg.ts > SimTime::ZERO {
            self.ts_recent = seg.ts;
        }
    }

    pub(super) fn flight(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    /// The `ssthresh` a loss or an ECN echo leaves: the controller's rule
    /// applied to what `ssthresh_from` names (`flight` is the FlightSize the
    /// caller measured, `pipe` RFC 6675's pipe, `None` without SACK: FlightSize).
    pub(super) fn ssthresh_after_loss(&mut self, now: SimTime, flight: u64, pipe: Option<u64>) -> u64 {
        let base = match self.ssthresh_from {
            SsthreshFrom::Flight => flight,
            SsthreshFrom::Pipe => pipe.unwrap_or(flight),
            SsthreshFrom::Cwnd => self.window.cwnd,
        };
        self.cc.ssthresh(&self.window, &LossInfo { now, flight: base })
    }

    pub(super) fn sending_stopped(&self, now: SimTime) -> bool {
        self.stop_at.map_or(false, |t| now >= t)
    }

    /// What an ACK tells the controller ([`AckInfo`]; `acked` bytes newly
    /// acknowledged, by the cumulative ACK `ack`). An ACK of new data
    /// (`advanced`) also gives the RTT estimator its timestamp sample (RFC
    /// 7323, RFC 6298 2.2-2.3), clears the timer's backoff (RFC 6298 5.7)
    /// and gives the controller its delay sample. Both machines build it here.
    #[inline]
    pub(super) fn ack_info(
        &mut self,
        now: SimTime,
        seg: &Segment,
        (ack, acked): (u64, u64),
        advanced: bool,
        state: CaState,
    ) -> AckInfo {
        let rtt_sample = if advanced { Self::rtt_sample(now, seg) } else { None };
        if let Some(r) = rtt_sample {
            self.rtt.sample(r);
        }
        let info = AckInfo {
            now,
            acked,
            ack,
            snd_nxt: self.snd_nxt,
            ece: seg.ece,
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min_rtt(),
            rtt_sample,
            flight: self.snd_max - self.snd_una,
            state: state.into(),
        };
        if advanced {
            self.backoff = 0;
            self.on_rtt_sample(&info);
        }
        info
    }

    /// The ECN reaction to an ACK of new data (`info`, `acked` bytes), the
    /// same for both machines; what it means for their recovery state (PRR's
    /// CWR with SACK) is theirs to apply. A controller that handles ECN
    /// itself (DCTCP) cuts on its own terms; otherwise RFC 3168 6.1.2: on
    /// ECN-Echo, react as to a loss (`ssthresh` from the controller, `pipe`
    /// as in [`Self::ssthresh_after_loss`]) at most once per window of data
    /// and only where the machine `may_reduce` (not in recovery), and set
    /// CWR on the next new segment. The classic cut leaves cwnd to the caller.
    pub(super) fn ecn_on_ack(
        &mut self,
        now: SimTime,
        info: &AckInfo,
        acked: u64,
        may_reduce: bool,
        pipe: Option<u64>,
    ) -> EcnCut {
        if !self.ecn {
            return EcnCut::None;
        }
        if self.cc.handles_ecn() {
            let before = self.window;
            if !self.cc.on_ecn(&mut self.window, info) {
                return EcnCut::None;
            }
            self.note_ecn_reduction(now, before);
            return EcnCut::Controller { before };
        }
        if !info.ece || !may_reduce || self.ecn_recover.is_some_and(|r| info.ack <= r) {
            return EcnCut::None;
        }
        self.note_congestion(now, SlowStartExit::Ecn);
        let flight = self.flight() + acked;
        self.window.ssthresh = self.ssthresh_after_loss(now, flight, pipe);
        self.ecn_recover = Some(self.snd_max);
        self.cwr_pending = true;
        self.ecn_reductions += 1;
        EcnCut::Classic
    }

    /// The RTT sample an ACK of new data carries (timestamp echo, RFC 7323).
    pub(super) fn rtt_sample(now: SimTime, seg: &Segment) -> Option<SimTime> {
        (seg.ts_echo > SimTime::ZERO && seg.ts_echo <= now).then(|| now - seg.ts_echo)
    }

    /// Window growth on an ACK of new data outside recovery: HyStart++ in
    /// slow start if configured, else the controller; nothing while the
    /// window does not limit the flight (`cwnd_validation`).
    pub(super) fn grow(&mut self, info: &AckInfo) {
        let allowed = self.cwnd_use.as_ref().map_or(true, |u| u.allows_growth(&self.window));
        if let Some(h) = &mut self.hystart_pp {
            let handled = h.on_ack(&mut self.window, info, allowed);
            if let (None, Some(reason)) = (self.ss_exit, h.exit) {
                self.ss_exit = Some((info.now, self.window.cwnd, reason));
            }
            if handled {
                return;
            }
        }
        if allowed {
            self.cc.cong_avoid(&mut self.window, info);
        }
    }

    /// An ACK of new data for the controller (Linux `pkts_acked`: CUBIC's
    /// delay sample and its HyStart, H-TCP's RTT bounds).
    pub(super) fn on_rtt_sample(&mut self, info: &AckInfo) {
        self.cc.on_ack(&mut self.window, info);
        if self.ss_exit.is_none() {
            if let Some(reason) = self.cc.slow_start_exit() {
                self.ss_exit = Some((info.now, self.window.cwnd, reason));
            }
        }
    }

    /// A congestion signal (loss, timeout, ECN) while still in the initial
    /// slow start ends it; HyStart++ stops for good.
    pub(super) fn note_congestion(&mut self, now: SimTime, reason: SlowStartExit) {
        let window = self.window;
        self.note_congestion_in(now, window, reason);
    }

    /// As [`Self::note_congestion`], judged on `window` (the window before a reduction already made).
    fn note_congestion_in(&mut self, now: SimTime, window: Window, reason: SlowStartExit) {
        if self.ss_exit.is_none() && window.in_slow_start() {
            self.ss_exit = Some((now, window.cwnd, reason));
        }
        if let Some(h) = &mut self.hystart_pp {
            h.on_congestion();
        }
    }

    /// The congestion control reduced the window from `before` on ECN echoes
    /// (DCTCP-like): count it, set CWR on the next segment, end slow start.
    pub(super) fn note_ecn_reduction(&mut self, now: SimTime, before: Window) {
        self.ecn_reductions += 1;
        self.cwr_pending = true;
        self.note_congestion_in(now, before, SlowStartExit::Ecn);
    }

    /// Bookkeeping after a round of sending (Linux `tcp_write_xmit` ->
    /// `tcp_cwnd_validate`): is the window what limits the flight?
    pub(super) fn note_window_use(&mut self, in_flight: u64, sent: bool) {
        if let Some(u) = &mut self.cwnd_use {
            let limited = in_flight + self.window.mss > self.window.cwnd || std::mem::take(&mut self.tso_deferred);
            if sent || limited {
                u.on_send(limited, self.snd_max - self.snd_una, self.snd_una, self.snd_max);
            }
        }
    }

    /// Every byte the flow will ever send has been acknowledged.
    #[inline]
    pub(super) fn all_acked(&self) -> bool {
        self.snd_una >= self.total && !self.app_writes
    }

    /// Every byte acknowledged (or the sending time over and nothing in
    /// flight): ESTABLISHED -> DONE. The SACK machine calls
    /// `SackRecovery::finish` too.
    pub(super) fn finish(&mut self, now: SimTime) {
        self.state = SenderState::Done;
        self.rto_deadline = None;
        self.done_at = Some(now);
    }

    /// Every change of a loss-recovery machine's state (`ca`, either
    /// machine's) goes through here, with what follows from it: an entry
    /// into fast recovery counts in `fast_retransmits` and starts the clock
    /// of `recovery_time`; an exit stops it and, unless a timeout ended
    /// recovery, counts in `recovery_ends`. The `tcp_trace` rows of the
    /// entries and exits (`recovery_start`, `recovery_end`) are written from
    /// these counters after the ACK or timer (`sim/tcp_trace.rs`), those of
    /// timeouts (`rto`) from `timeouts`.
    #[inline]
    pub(super) fn set_ca(&mut self, ca: &mut CaState, to: CaState, now: SimTime) {
        let from = std::mem::replace(ca, to);
        if from == to {
            return;
        }
        if to == CaState::Recovery {
            self.fast_retransmits += 1;
            self.recovery_started = now;
        } else if from == CaState::Recovery {
            self.recovery_time += now - self.recovery_started;
            if to != CaState::Loss {
                self.recovery_ends += 1;
            }
        }
        self.cc.set_state(&self.window, to.into(), now);
    }

    /// Before a call of the send loop from outside the machine: whether the
    /// connection sends at all. Notes the attempt first, for the pacing
    /// timer rule (it holds for both machines).
    #[inline]
    pub(super) fn send_prelude(&mut self, now: SimTime) -> bool {
        if self.state != SenderState::Established {
            return false;
        }
        self.pacing_checked = now;
        true
    }

    pub(super) fn restart_rto(&mut self, now: SimTime) {
        self.rto_deadline = Some(now + self.rtt.rto(self.backoff));
    }

    pub(super) fn segment_at(&self, seq: u64, now: SimTime) -> Segment {
        let len = (self.total - seq).min(self.window.mss) as u32;
        let mut s = Segment::control(SegKind::Data, now);
        s.seq = seq;
        s.len = len;
        s.ect = self.ecn;
        s
    }

    /// Retransmits the first unacknowledged segment.
    pub(super) fn retransmit_head(&mut self, now: SimTime, out: &mut Outbox) {
        let mut s = self.segment_at(self.snd_una, now);
        s.retransmit = true;
        self.retransmits += 1;
        self.charge_single(&mut s);
        out.push((false, s));
    }

    /// A segment sent outside the send loop (a retransmission by the
    /// timer or a probe): it passes pacing and TSQ but is accounted.
    pub(super) fn charge_single(&mut self, seg: &mut Segment) {
        let frame = self.frame_of(seg.len as u64);
        seg.ts_echo = self.ts_recent;
        if let Some(l) = &mut self.limits {
            l.on_segment(frame);
            seg.tsq = l.charges_tsq();
        }
    }

    pub fn srtt(&self) -> Option<SimTime> {
        self.rtt.srtt()
    }
}

impl Sender {
    #[inline(always)]
    pub fn next_deadline(&self) -> Option<SimTime> {
        #[inline(always)]
        fn earliest(d: Option<SimTime>, t: Option<SimTime>) -> Option<SimTime> {
            match (d, t) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        }
        let mut d = self.rto_deadline;
        if let LossRecovery::Sack(s) = &self.loss {
            d = earliest(earliest(d, s.tlp_deadline), s.reo_deadline);
        }
        // A pacing deadline counts only while something waits to be sent;
        // the fixed pacer's only while it holds a segment back, that is when
        // the next send time is after the last attempt to send.
        let sending = || self.state == SenderState::Established && self.can_send_more();
        if self.pacing.is_some() && self.next_send > self.pacing_checked && sending() {
            d = earliest(d, Some(self.next_send));
        }
        if let Some(l) = &self.limits {
            d = earliest(d, l.wake_at);
            if let Some(p) = l.pacing_deadline() {
                if sending() {
                    d = earliest(d, Some(p));
                }
            }
        }
        d
    }

    /// A TSQ wake-up due at `now`: send what TSQ held back.
    pub fn on_tsq_wake(&mut self, now: SimTime, out: &mut Outbox) {
        if self.limits.as_mut().is_some_and(|l| l.take_wake(now)) {
            self.send_data(now, out);
        }
    }

    /// Something is waiting to be sent: new data, or a segment marked lost.
    fn can_send_more(&self) -> bool {
        self.snd_nxt < self.total || matches!(&self.loss, LossRecovery::Sack(s) if s.sb.has_lost_waiting())
    }

    /// A segment from the receiver arrived.
    #[inline(never)]
    pub fn on_segment(&mut self, now: SimTime, seg: &Segment, out: &mut Outbox) {
        self.on_segment_inline(now, seg, out)
    }

    /// [`Sender::on_segment`], inlined into a TCP frame's arrival at its
    /// sender (the simulator's hot path; not part of the public interface).
    #[inline(always)]
    pub(crate) fn on_segment_inline(&mut self, now: SimTime, seg: &Segment, out: &mut Outbox) {
        match (self.state, seg.kind) {
            // RFC 793: SYN-SENT + SYN-ACK -> ESTABLISHED.
            (SenderState::SynSent, SegKind::SynAck) => {
                self.note_ack_fields(seg);
                if !self.syn_retransmitted {
                    let rtt = now - self.syn_sent_at;
                    self.rtt.sample(rtt);
                }
                self.backoff = 0;
                self.rto_deadline = None;
                self.state = SenderState::Established;
                self.update_pacing_rate();
                if self.sending_stopped(now) || (self.total == 0 && !self.app_writes) {
                    self.finish(now);
                } else {
                    self.send_data(now, out);
                }
            }
            (SenderState::Established, SegKind::Ack) => {
                let Sender { core, loss } = self;
                core.note_ack_fields(seg);
                match loss {
                    LossRecovery::NewReno(nr) => core.on_ack_newreno(nr, now, seg, out),
                    LossRecovery::Sack(s) => core.on_ack_sack(s, now, seg, out),
                }
            }
            _ => {}
        }
    }

    /// Makes the sender application-driven (see `write`): it starts with
    /// nothing to send and lasts until the simulation ends.
    pub fn make_app_driven(&mut self) {
        self.app_writes = true;
        self.total = 0;
        if let LossRecovery::Sack(s) = &mut self.loss {
            s.sb.set_total(0);
        }
    }

    /// The application writes `bytes` more (a `send()` call): they go out now
    /// as far as the windows allow, cut into segments of at most one MSS that
    /// end at the end of the write, as a `TCP_NODELAY` socket does (Linux's
    /// Nagle test also lets the short tail of a write go when the segments
    /// before it are full-sized, `tcp_nagle_check`).
    pub fn write(&mut self, now: SimTime, bytes: u64, out: &mut Outbox) {
        debug_assert!(self.app_writes);
        self.total += bytes;
        let total = self.total;
        if let LossRecovery::Sack(s) = &mut self.loss {
            s.sb.set_total(total);
        }
        self.send_data(now, out);
    }

    fn finish(&mut self, now: SimTime) {
        self.core.finish(now);
        if let LossRecovery::Sack(s) = &mut self.loss {
            s.finish(now);
        }
    }

    /// Sends new (or, after a timeout, re-sent) data while the window allows.
    fn send_data(&mut self, now: SimTime, out: &mut Outbox) {
        let Sender { core, loss } = self;
        match loss {
            LossRecovery::NewReno(nr) => core.send_data_newreno(nr, now, out),
            LossRecovery::Sack(s) => {
                if core.send_prelude(now) {
                    core.send_data_sack(s, now, out);
                }
            }
        }
    }

    /// Runs the retransmission timer, the RACK reordering timer and the
    /// tail-loss probe or, when pacing, sends what the pacing deadline held back.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Outbox) {
        if let Sender { core, loss: LossRecovery::Sack(s) } = self {
            // The reordering timer and the probe stand in for the RTO when
            // they are due no later (Linux keeps all three in one timer).
            let rto = core.rto_deadline.unwrap_or(SimTime::MAX);
            if s.reo_deadline.map_or(false, |t| t <= now && t <= rto) {
                core.on_reorder_timer(s, now, out);
                return;
            }
            if s.tlp_deadline.map_or(false, |t| t <= now && t <= rto) {
                core.on_probe_timer(s, now, out);
                return;
            }
        }
        if let Some(t) = self.rto_deadline {
            if t <= now {
                self.on_rto(now, out);
                return;
            }
        }
        if self.pacing.is_some() && self.state == SenderState::Established && now >= self.next_send {
            self.send_data(now, out);
        }
        if self.state == SenderState::Established
            && self.limits.as_ref().and_then(|l| l.pacing_deadline()).is_some_and(|t| t <= now)
        {
            self.send_data(now, out);
            // If the window, the send buffer or the sending time stopped the
            // loop before the pacer, pacing no longer holds anything back:
            // the next ACK sends (the timer must not fire again at `now`).
            if let Some(l) = &mut self.limits {
                l.pacing_checked(now);
            }
        }
    }

    /// Retransmission timeout (RFC 6298 5.4-5.6; RFC 5681 3.1 equation 4 and
    /// loss window; RFC 6582 3.2 step 4).
    fn on_rto(&mut self, now: SimTime, out: &mut Outbox) {
        // `backoff` is cleared by every ACK of new data, so a non-zero value here
        // means the head segment has already been resent by this timer.
        let repeated = self.backoff > 0;
        self.backoff += 1;
        match self.state {
            SenderState::SynSent => {
                self.syn_retransmitted = true;
                self.timeouts += 1;
                out.push((false, Segment::control(SegKind::Syn, now)));
                self.restart_rto(now);
            }
            SenderState::Established => self.on_rto_established(now, repeated, out),
            _ => self.rto_deadline = None,
        }
    }

    /// The retransmission timer expired in ESTABLISHED, for both machines
    /// (RFC 6298 5.4-5.6; RFC 5681 3.1 equation 4 and the loss window):
    /// `ssthresh` from the controller once per congestion event (held when
    /// the timer resends again, RFC 5681 3.1, and, as Linux, when fast
    /// recovery or CWR already reduced it), `cwnd = 1 SMSS`, then the
    /// machine's own loss state, and the first unacknowledged data resent.
    fn on_rto_established(&mut self, now: SimTime, repeated: bool, out: &mut Outbox) {
        let Sender { core, loss } = self;
        core.timeouts += 1;
        core.note_congestion(now, SlowStartExit::Timeout);
        let flight = core.flight();
        let (pipe, reduced_already) = match loss {
            LossRecovery::NewReno(_) => (None, false),
            LossRecovery::Sack(s) => (Some(s.sb.pipe()), s.reducing()),
        };
        if !repeated && !reduced_already {
            core.window.ssthresh = core.ssthresh_after_loss(now, flight, pipe);
        }
        core.cc.on_timeout(&core.window, now);
        core.window.cwnd = core.window.mss;
        core.rto_deadline = None;
        let ca = match loss {
            LossRecovery::NewReno(nr) => &mut nr.ca,
            LossRecovery::Sack(s) => &mut s.ca,
        };
        core.set_ca(ca, CaState::Loss, now);
        match loss {
            LossRecovery::NewReno(nr) => {
                // RFC 6582 3.2 step 4; go back to the first unacknowledged byte.
                nr.on_timeout(core.snd_max);
                core.snd_nxt = core.snd_una;
                core.send_data_newreno(nr, now, out);
            }
            LossRecovery::Sack(s) => {
                // RFC 6675 5.1: every segment not SACKed is lost.
                s.enter_loss(core.snd_max);
                core.send_data_sack(s, now, out);
            }
        }
        if core.rto_deadline.is_none() && core.snd_una < core.snd_max {
            core.restart_rto(now);
        }
    }

    /// Time spent in fast recovery up to `now`, an episode still open included.
    pub fn recovery_time_until(&self, now: SimTime) -> SimTime {
        let open = match &self.loss {
            LossRecovery::NewReno(nr) => nr.ca,
            LossRecovery::Sack(s) => s.ca,
        } == CaState::Recovery;
        if open && self.state == SenderState::Established {
            self.recovery_time + now.saturating_sub(self.recovery_started)
        } else {
            self.recovery_time
        }
    }

    /// SACK recovery statistics (zeros without SACK).
    pub fn sack_stats(&self) -> super::recovery::SackStats {
        self.sack().map(|s| s.stats).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RFC baseline: these tests are about NewReno without SACK.
    fn cfg() -> TcpConfig {
        TcpConfig::rfc()
    }

    fn ack(a: u64) -> Segment {
        let mut s = Segment::control(SegKind::Ack, SimTime(0));
        s.ack = a;
        s
    }

    /// A sender that has completed the handshake at 10 us (the first RTT
    /// sample) and sent what its window allows; `out` holds those segments.
    fn established_with(c: &TcpConfig, total: u64) -> (Sender, Outbox) {
        let mut s = Sender::new(c, total, None);
        let mut out = Vec::new();
        s.open(SimTime(0), &mut out);
        out.clear();
        s.on_segment(SimTime::from_us(10), &Segment::control(SegKind::SynAck, SimTime(0)), &mut out);
        (s, out)
    }

    fn established(total: u64) -> (Sender, Outbox) {
        established_with(&cfg(), total)
    }

    #[test]
    fn an_application_driven_sender_sends_each_write_and_never_finishes() {
        for c in [cfg(), TcpConfig::default()] {
            let mut s = Sender::new(&c, u64::MAX, None);
            s.make_app_driven();
            let mut out = Vec::new();
            s.open(SimTime(0), &mut out);
            out.clear();
            s.on_segment(SimTime::from_us(10), &Segment::control(SegKind::SynAck, SimTime(0)), &mut out);
            assert!(out.is_empty() && s.state == SenderState::Established, "nothing written yet");
            let mss = c.mss() as u64;
            // A write of 2.5 MSS: two full segments and the short tail, at once.
            s.write(SimTime::from_us(11), 2 * mss + mss / 2, &mut out);
            let lens: Vec<u32> = out.iter().map(|(_, x)| x.len).collect();
            assert_eq!(lens, vec![mss as u32, mss as u32, (mss / 2) as u32]);
            out.clear();
            s.on_segment(SimTime::from_us(20), &ack(2 * mss + mss / 2), &mut out);
            assert_eq!(s.state, SenderState::Established, "all acknowledged, but more may be written");
            s.write(SimTime::from_us(21), 100, &mut out);
            assert_eq!((out[0].1.seq, out[0].1.len), (2 * mss + mss / 2, 100));
        }
    }

    #[test]
    fn handshake_then_initial_window_of_ten_segments() {
        let (s, out) = established(1_000_000);
        assert_eq!(s.state, SenderState::Established);
        assert_eq!(out.len(), 10);
        assert_eq!(s.snd_nxt, 10 * 1448);
        assert_eq!(s.srtt(), Some(SimTime::from_us(10)));
    }

    #[test]
    fn fast_recovery_on_three_duplicate_acks() {
        let (mut s, _) = established(1_000_000);
        let m = 1448;
        let mut out = Vec::new();
        s.on_segment(SimTime::from_us(20), &ack(m), &mut out); // one segment acked
        out.clear();
        for _ in 0..3 {
            s.on_segment(SimTime::from_us(21), &ack(m), &mut out);
        }
        assert!(s.newreno().ca == CaState::Recovery);
        assert_eq!(s.fast_retransmits, 1);
        let retx: Vec<&Segment> = out.iter().map(|(_, seg)| seg).filter(|seg| seg.retransmit).collect();
        assert_eq!(retx.len(), 1);
        assert_eq!(retx[0].seq, m);
        let flight = s.snd_max - m;
        assert_eq!(s.window.ssthresh, flight / 2);
        assert_eq!(s.window.cwnd, s.window.ssthresh + 3 * m);
        // A further duplicate inflates the window by one segment.
        s.on_segment(SimTime::from_us(22), &ack(m), &mut out);
        assert_eq!(s.window.cwnd, s.window.ssthresh + 4 * m);
        // A partial ACK retransmits the next hole and stays in recovery.
        out.clear();
        s.on_segment(SimTime::from_us(30), &ack(3 * m), &mut out);
        assert!(s.newreno().ca == CaState::Recovery);
        assert!(out.iter().any(|(_, seg)| seg.retransmit && seg.seq == 3 * m));
        // A full ACK ends recovery with cwnd = ssthresh.
        let recover = s.newreno().recover.unwrap();
        s.on_segment(SimTime::from_us(40), &ack(recover), &mut out);
        assert!(s.newreno().ca != CaState::Recovery);
        assert_eq!(s.window.cwnd, s.window.ssthresh);
    }

    #[test]
    fn timeout_goes_back_to_one_segment_and_doubles_the_rto() {
        let (mut s, _) = established(1_000_000);
        let mut out = Vec::new();
        let t = s.next_deadline().unwrap();
        assert_eq!(t, SimTime::from_us(10) + SimTime::from_ms(200));
        s.on_timer(t, &mut out);
        assert_eq!(s.timeouts, 1);
        assert_eq!(s.window.cwnd, 1448);
        assert_eq!(out.len(), 1);
        assert!(out[0].1.retransmit && out[0].1.seq == 0);
        assert_eq!(s.next_deadline(), Some(t + SimTime::from_ms(400)));
    }

    #[test]
    fn a_repeated_timeout_holds_ssthresh() {
        // CUBIC's ssthresh depends on cwnd, which is 1 SMSS after the first
        // timeout: recomputing it on the second would collapse it to 2 SMSS.
        let (mut s, mut out) = established_with(&TcpConfig { cc: super::super::CcKind::Cubic, ..cfg() }, 1_000_000);
        s.on_timer(s.next_deadline().unwrap(), &mut out);
        let ssthresh = s.window.ssthresh;
        assert!(ssthresh > 2 * 1448, "{ssthresh}");
        s.on_timer(s.next_deadline().unwrap(), &mut out);
        assert_eq!(s.timeouts, 2);
        assert_eq!(s.window.ssthresh, ssthresh, "RFC 5681 3.1: held when the timer resends again");
        assert_eq!(s.window.cwnd, 1448);
    }

    #[test]
    fn receive_window_caps_the_flight() {
        let (_, out) = established_with(&TcpConfig { rwnd_bytes: 4 * 1448, ..cfg() }, 1_000_000);
        assert_eq!(out.len(), 4);
    }

    #[test]
    fn the_last_segment_is_short_and_the_flow_finishes_on_its_ack() {
        let (mut s, out) = established(3000);
        let lens: Vec<u32> = out.iter().map(|(_, seg)| seg.len).collect();
        assert_eq!(lens, vec![1448, 1448, 104]);
        let mut o = Vec::new();
        s.on_segment(SimTime::from_us(50), &ack(3000), &mut o);
        assert_eq!(s.state, SenderState::Done);
        assert_eq!(s.done_at, Some(SimTime::from_us(50)));
    }

    #[test]
    fn pacing_spaces_data_segments_by_their_frame_time() {
        // 1 Gb/s pacing: a 1448 B segment is 1518 B on the wire = 12.144 us.
        let c = TcpConfig { pacing_bps: Some(1_000_000_000), pacing: Pacing::Fixed, ..cfg() };
        let (mut s, mut out) = established_with(&c, 1_000_000);
        assert_eq!(out.len(), 1, "only one segment may leave at once");
        let mut times = vec![SimTime::from_us(10)];
        for _ in 0..4 {
            let t = s.next_deadline().unwrap();
            out.clear();
            s.on_timer(t, &mut out);
            assert_eq!(out.len(), 1);
            times.push(t);
        }
        for w in times.windows(2) {
            assert_eq!(w[1] - w[0], SimTime::from_ps(12_144_000));
        }
    }

    /// Fires the sender's timer `rounds` times with no segment arriving in
    /// between, and checks that every firing makes progress: it sends
    /// something, or the next deadline is later than the one that fired. A
    /// deadline that fires, sends nothing and stays put would be re-armed at
    /// the same instant forever (simulated time would stop).
    fn assert_timer_makes_progress(s: &mut Sender, rounds: usize) {
        let mut sent = 0;
        for _ in 0..rounds {
            let Some(t) = s.next_deadline() else { return };
            let mut out = Vec::new();
            s.on_timer(t, &mut out);
            sent += out.len();
            if out.is_empty() {
                if let Some(next) = s.next_deadline() {
                    assert!(next > t, "the timer fired at {t}, sent nothing and is due again at {next}");
                }
            }
        }
        assert!(sent > 0, "the retransmission timer resends in the end");
    }

    #[test]
    fn a_paced_sender_whose_window_is_full_waits_for_acks_not_for_its_pacing_timer() {
        // Pacing at 20 Gb/s lets a segment out every 0.6 us, the window of 2
        // segments is full after the second one: the pacing deadline passes
        // while nothing may be sent, so it must not keep the timer armed.
        let c = TcpConfig { pacing_bps: Some(20_000_000_000), pacing: Pacing::Fixed, init_cwnd_segments: 2, ..cfg() };
        let (mut s, out) = established_with(&c, 100_000);
        assert_eq!(out.len(), 1);
        let t = s.next_deadline().unwrap();
        let mut out = Vec::new();
        s.on_timer(t, &mut out);
        assert_eq!(out.len(), 1, "the second segment leaves at its pacing time");
        assert_eq!(s.snd_max - s.snd_una, 2 * 1448, "the window is full");
        // At most one more wake-up at the pacing time finds the window full;
        // then only the retransmission timer is left.
        let t = s.next_deadline().unwrap();
        if Some(t) != s.rto_deadline {
            s.on_timer(t, &mut out);
            assert_eq!(out.len(), 1);
        }
        assert_eq!(s.next_deadline(), s.rto_deadline, "only the retransmission timer is left");
        assert_timer_makes_progress(&mut s, 50);
        // An ACK opens the window: sending resumes at the pacing rate.
        let mut out = Vec::new();
        let mut s2 = established_with(&c, 100_000).0;
        let t = s2.next_deadline().unwrap();
        s2.on_timer(t, &mut out);
        out.clear();
        s2.on_segment(SimTime::from_us(30), &ack(2 * 1448), &mut out);
        assert_eq!(out.len(), 1, "one segment now, the next at the pacing time");
        let next = s2.next_deadline().unwrap();
        assert!(next > SimTime::from_us(30) && next < SimTime::from_us(31), "{next}");
    }

    #[test]
    fn a_paced_sender_limited_by_the_receive_window_waits_for_acks() {
        // Both loss-recovery paths (SACK scoreboard in the Linux profile,
        // NewReno without SACK in the RFC profile) share the pacing timer rule.
        for base in [cfg(), TcpConfig::rfc()] {
            let c = TcpConfig { pacing_bps: Some(40_000_000_000), pacing: Pacing::Fixed, rwnd_bytes: 3 * 1448, ..base };
            let (mut s, _) = established_with(&c, 1_000_000);
            assert_timer_makes_progress(&mut s, 50);
            assert_eq!(s.snd_max, 3 * 1448, "three segments, then the receive window is full (sack {})", c.sack);
        }
    }

    #[test]
    fn a_paced_sender_that_stopped_sending_waits_for_acks() {
        // A duration-limited paced flow: once the sending time is over, data
        // still in flight must not keep a pacing deadline in the past armed.
        for base in [cfg(), TcpConfig::rfc()] {
            let c = TcpConfig { pacing_bps: Some(10_000_000_000), pacing: Pacing::Fixed, ..base };
            let mut s = Sender::new(&c, u64::MAX, Some(SimTime::from_us(12)));
            let mut out = Vec::new();
            s.open(SimTime(0), &mut out);
            s.on_segment(SimTime::from_us(10), &Segment::control(SegKind::SynAck, SimTime(0)), &mut out);
            assert_timer_makes_progress(&mut s, 50);
            assert!(s.snd_max > 0 && s.snd_max < 20 * 1448, "{}", s.snd_max);
        }
    }

    #[test]
    fn classic_ecn_echo_halves_once_per_window_and_sets_cwr() {
        let (mut s, mut out) = established_with(&TcpConfig { ecn: true, ..cfg() }, 10_000_000);
        out.clear();
        let mut a = ack(1448);
        a.ece = true;
        s.on_segment(SimTime::from_us(20), &a, &mut out);
        assert_eq!(s.ecn_reductions, 1);
        assert_eq!(s.window.cwnd, 5 * 1448, "half of the flight");
        let mut a = ack(2 * 1448);
        a.ece = true;
        s.on_segment(SimTime::from_us(30), &a, &mut out);
        assert_eq!(s.ecn_reductions, 1, "one reduction per window");
        // Once the flight drops below the window, the first new segment carries CWR.
        s.on_segment(SimTime::from_us(40), &ack(7 * 1448), &mut out);
        let new: Vec<&Segment> = out.iter().map(|(_, seg)| seg).filter(|seg| seg.seq >= 10 * 1448).collect();
        assert!(!new.is_empty() && new[0].cwr && !new[1..].iter().any(|seg| seg.cwr));
    }

    #[test]
    fn limited_transmit_sends_a_new_segment_on_each_of_the_first_two_duplicate_acks() {
        let c = TcpConfig { limited_transmit: true, ..cfg() };
        let (mut s, _) = established_with(&c, 1_000_000);
        let m = 1448;
        let mut out = Vec::new();
        s.on_segment(SimTime::from_us(20), &ack(m), &mut out); // cwnd 11: segments 10 and 11 go out
        out.clear();
        s.on_segment(SimTime::from_us(21), &ack(m), &mut out);
        s.on_segment(SimTime::from_us(21), &ack(m), &mut out);
        let new: Vec<u64> = out.iter().map(|(_, seg)| seg.seq / m).collect();
        assert_eq!(new, vec![12, 13], "RFC 3042: one new segment per duplicate ACK, cwnd unchanged");
        assert_eq!(s.window.cwnd, 11 * m);
        // The third duplicate starts fast recovery as usual.
        out.clear();
        s.on_segment(SimTime::from_us(21), &ack(m), &mut out);
        assert_eq!(s.fast_retransmits, 1);
        assert!(out[0].1.retransmit && out[0].1.seq == m);
        // Without limited transmit the duplicates send nothing.
        let (mut s, _) = established(1_000_000);
        s.on_segment(SimTime::from_us(20), &ack(m), &mut out);
        out.clear();
        s.on_segment(SimTime::from_us(21), &ack(m), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn the_window_grows_only_while_it_limits_the_flight() {
        // A 4-segment receive window: with window validation cwnd stops
        // growing in slow start at twice the largest flight (Linux), without
        // it cwnd climbs with every ACK.
        let run = |validation: bool| {
            let c = TcpConfig { rwnd_bytes: 4 * 1448, cwnd_validation: validation, ..cfg() };
            let (mut s, _) = established_with(&c, 100_000_000);
            let mut out = Vec::new();
            for k in 1..200u64 {
                s.on_segment(SimTime::from_us(10 + k), &ack(k * 1448), &mut out);
            }
            s.window.cwnd / 1448
        };
        assert_eq!(run(true), 10, "never more than the initial window: the flight stays at 4");
        assert!(run(false) > 150);
    }

    #[test]
    fn ssthresh_halves_what_ssthresh_from_names() {
        // The receive window holds the flight at 8 segments while cwnd grows
        // to 11: FlightSize / 2 = 4 segments (RFC 5681; without SACK pipe is
        // FlightSize), cwnd / 2 = 5.5 (Linux).
        let m = 1448;
        use super::super::SsthreshFrom::{Cwnd, Flight, Pipe};
        for (from, expected) in [(Flight, 4 * m), (Pipe, 4 * m), (Cwnd, 11 * m / 2)] {
            let c = TcpConfig { ssthresh_from: from, rwnd_bytes: 8 * m, ..cfg() };
            let (mut s, _) = established_with(&c, 1_000_000);
            let mut out = Vec::new();
            s.on_segment(SimTime::from_us(20), &ack(m), &mut out);
            for _ in 0..3 {
                s.on_segment(SimTime::from_us(21), &ack(m), &mut out);
            }
            assert_eq!(s.window.ssthresh, expected, "{from:?}");
        }
    }
}
