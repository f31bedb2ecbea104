//! An NSCC-like window controller (the Ultra Ethernet transport's
//! network-signal congestion control, UEC 1.0, Congestion Management) with
//! REPS-like source-driven path selection by entropy values.
//!
//! **Window.** The sender keeps a congestion window `cwnd` in bytes, at most
//! `MaxWnd = max_window x BDP` (BDP: line rate times base RTT) and at least
//! one frame. Every ACK or NACK answers one data packet and carries its RTT
//! sample and whether it was CE-marked; the queueing delay is
//! `d = RTT - base RTT`, its average `D` an EWMA of gain `delay_gain`. The
//! pair (ECN, `d` against the target `T_q = target_qdelay x base RTT`) picks
//! one of four reactions:
//!
//! | | `d < T_q` | `d >= T_q` |
//! |---|---|---|
//! | no ECN | proportional + fair increase (fast increase while `d` stays near zero) | fair increase: the queue met was draining |
//! | ECN | hold the window (the mark is a queue on that path; the entropy is replaced) | multiplicative decrease |
//!
//! - proportional increase: `inc += alpha x s x acked x (T_q - d) / T_q`;
//! - fair increase: `inc += fair_increase x s x acked`;
//! - `inc` is applied as `cwnd += inc / cwnd` (plus `eta x s`) once
//!   `adjust_bytes` are acknowledged or `adjust_period` base RTTs pass, so a
//!   window's worth of ACKs adds `alpha x s x (T_q - d) / T_q` and
//!   `fair_increase x s` bytes per RTT whatever the window: an additive
//!   increase, the same for every flow (`s = BDP / 150 KB`, the
//!   specification's `scaling_a`, in MTUs);
//! - fast increase: after a whole window of ACKs with `d` within two frames'
//!   serialization at line rate and no mark, `cwnd += fast_increase_scale x
//!   s x acked` per ACK until a signal ends it;
//! - multiplicative decrease, at most once per base RTT:
//!   `cwnd *= max(1 - gamma (D - T_q) / D, max_md_jump)`;
//! - quick adapt: when `d > qa_threshold x T_q` and the bytes acknowledged
//!   over the last period of `base RTT + T_q` are below `MaxWnd / 2^qa_gate`,
//!   or when a packet is lost, the window becomes those bytes (at least one
//!   frame) and no decrease follows for a period; a timeout sets it to one frame.
//!
//! **Paths.** With `entropies > 1` each data packet carries an entropy value
//! in `0..entropies`, which the switches' ECMP hash takes with the flow's
//! (as a UDP source port would be). With `path_reaction` (REPS-like) an
//! entropy that comes back unmarked is recycled for a next packet, one that
//! comes back CE-marked is dropped, and with none to recycle the sender
//! explores one drawn at random; without it every packet draws one at random
//! (oblivious spraying). Registered as `roce.cc: nscc` by `extension/rate_cc.rs`.

use super::rate::{AckFeedback, RateControl};
use crate::rng::RandomStream;
use crate::units::SimTime;
use std::collections::VecDeque;

/// The name scenarios give as `roce.cc`.
pub const NAME: &str = "nscc";

/// The bandwidth-delay product the specification's gains are given for
/// (100 Gb/s x 12 us), the unit of `scaling_a`.
pub const REFERENCE_BDP_BYTES: f64 = 150_000.0;

/// NSCC's parameters (`roce.cc_params`); sources in `docs/models/nscc.md`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NsccParams {
    /// Target queueing delay, in base RTTs.
    pub target_qdelay: f64,
    /// `MaxWnd` (also the initial window), in BDPs.
    pub max_window: f64,
    /// Multiplicative-decrease gain on the average delay's excess.
    pub gamma: f64,
    /// The smallest factor one decrease applies.
    pub max_md_jump: f64,
    /// Fair increase per RTT, in MTUs times `scaling_a`.
    pub fair_increase: f64,
    /// Proportional increase per RTT at zero delay, in MTUs times `scaling_a`.
    pub alpha: f64,
    /// Additive increase per adjustment, in MTUs times `scaling_a`.
    pub eta: f64,
    /// Fast increase: window bytes per byte acknowledged, times `scaling_a`.
    pub fast_increase_scale: f64,
    /// Quick adapt on delay only if the last period's bytes are below `MaxWnd / 2^qa_gate`.
    pub qa_gate: u32,
    /// Quick adapt on delay above this many target delays (0: only on loss).
    pub qa_threshold: f64,
    /// Increases are applied after this many MTUs acknowledged ...
    pub adjust_bytes_mtu: u64,
    /// ... or this many base RTTs.
    pub adjust_period: f64,
    /// EWMA gain of the average queueing delay.
    pub delay_gain: f64,
    /// Base RTT; `None`: the smallest RTT sample so far.
    pub base_rtt: Option<SimTime>,
    /// Entropy values per QP (1: the QP's own path).
    pub entropies: u32,
    /// Recycle unmarked entropies, drop marked ones (REPS-like).
    pub path_reaction: bool,
}

impl Default for NsccParams {
    fn default() -> NsccParams {
        NsccParams {
            target_qdelay: 0.75,
            max_window: 1.0,
            gamma: 0.8,
            max_md_jump: 0.5,
            fair_increase: 5.0,
            alpha: 4.0,
            eta: 0.15,
            fast_increase_scale: 0.25,
            qa_gate: 3,
            qa_threshold: 4.0,
            adjust_bytes_mtu: 8,
            adjust_period: 1.0,
            delay_gain: 0.125,
            base_rtt: None,
            entropies: 1,
            path_reaction: true,
        }
    }
}

/// Entropies kept for recycling at most (beyond: the oldest is dropped).
const RECYCLE_MAX: usize = 4096;

/// One QP's NSCC state.
#[derive(Debug, Clone)]
pub struct Nscc {
    p: NsccParams,
    line_bps: f64,
    /// Frame bytes of a full data packet (the window's unit).
    frame: f64,
    base_rtt: Option<SimTime>,
    /// Window state, bytes (0 until the base RTT is known).
    cwnd: f64,
    max_wnd: f64,
    scaling: f64,
    avg_delay: f64,
    inc: f64,
    acked_since_adjust: f64,
    last_adjust: SimTime,
    last_decrease: Option<SimTime>,
    /// Bytes acknowledged in a row at near-zero delay without a mark.
    calm_bytes: f64,
    /// Quick adapt: the current period's start and bytes, the last period's
    /// bytes, and the end of the hold after a quick adapt.
    qa_start: SimTime,
    qa_bytes: f64,
    qa_last: f64,
    hold_until: SimTime,
    /// NACKs heard since the cumulative acknowledgement last moved.
    nacked: u64,
    recycled: VecDeque<u16>,
    rng: RandomStream,
    cuts: u64,
    quick_adapts: u64,
}

impl Nscc {
    pub fn new(p: NsccParams, line_bps: u64, frame_bytes: u32, seed: u64, qp: u32) -> Nscc {
        let mut n = Nscc {
            p,
            line_bps: line_bps as f64,
            frame: frame_bytes as f64,
            base_rtt: None,
            cwnd: 0.0,
            max_wnd: 0.0,
            scaling: 1.0,
            avg_delay: 0.0,
            inc: 0.0,
            acked_since_adjust: 0.0,
            last_adjust: SimTime::ZERO,
            last_decrease: None,
            calm_bytes: 0.0,
            qa_start: SimTime::ZERO,
            qa_bytes: 0.0,
            qa_last: f64::INFINITY,
            hold_until: SimTime::ZERO,
            nacked: 0,
            recycled: VecDeque::new(),
            rng: RandomStream::new(seed, "nscc-entropy", qp as u64),
            cuts: 0,
            quick_adapts: 0,
        };
        if let Some(t) = p.base_rtt {
            n.set_base_rtt(t);
        }
        n
    }

    /// Sets the base RTT and the window limits from it; the window starts at `MaxWnd`.
    fn set_base_rtt(&mut self, t: SimTime) {
        let first = self.base_rtt.is_none();
        self.base_rtt = Some(t);
        let bdp = self.line_bps / 8.0 * t.0 as f64 * 1e-12;
        self.max_wnd = (self.p.max_window * bdp).max(self.frame);
        self.scaling = bdp / REFERENCE_BDP_BYTES;
        self.cwnd = if first { self.max_wnd } else { self.cwnd.min(self.max_wnd) };
    }

    /// The current window in bytes (0 before the base RTT is known).
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// Quick adapts so far.
    pub fn quick_adapts(&self) -> u64 {
        self.quick_adapts
    }

    fn clamp(&mut self) {
        self.cwnd = self.cwnd.clamp(self.frame, self.max_wnd);
    }

    /// The window becomes what the last period delivered; nothing decreases it for a period.
    fn quick_adapt(&mut self, now: SimTime, period: SimTime) {
        let achieved = if self.qa_last.is_finite() { self.qa_last } else { self.qa_bytes };
        if achieved < self.cwnd {
            self.cwnd = achieved;
            self.clamp();
            self.cuts += 1;
        }
        self.quick_adapts += 1;
        self.hold_until = now + period;
        self.inc = 0.0;
        self.calm_bytes = 0.0;
    }
}

impl RateControl for Nscc {
    fn on_ack(&mut self, fb: &AckFeedback<'_>) {
        let now = fb.now;
        // One answered data packet per NACK; an ACK moving the cumulative
        // point over packets already NACKed counts only the rest.
        let packets = if fb.nack {
            self.nacked += 1;
            1
        } else {
            let k = fb.newly_acked.saturating_sub(self.nacked).max(1);
            if fb.newly_acked > 0 {
                self.nacked = 0;
            }
            k
        };
        // A trimmed packet's entropy led to a full queue: it is not reused.
        if self.p.entropies > 1 && self.p.path_reaction && !fb.ecn_echo && !fb.trimmed {
            if self.recycled.len() == RECYCLE_MAX {
                self.recycled.pop_front();
            }
            self.recycled.push_back(fb.entropy);
        }
        let Some(rtt) = fb.rtt.filter(|r| r.0 > 0) else { return };
        if self.base_rtt.is_none_or(|b| rtt < b) && self.p.base_rtt.is_none() {
            self.set_base_rtt(rtt);
        }
        let base = self.base_rtt.expect("set above");
        let acked = packets as f64 * self.frame;
        let d = rtt.0.saturating_sub(base.0) as f64;
        let g = self.p.delay_gain;
        self.avg_delay = (1.0 - g) * self.avg_delay + g * d;
        let target = self.p.target_qdelay * base.0 as f64;
        let unit = self.frame * self.scaling;
        // Quick-adapt periods of base RTT + target.
        let period = SimTime(base.0 + target as u64);
        if now >= self.qa_start + period {
            self.qa_last = self.qa_bytes;
            self.qa_bytes = 0.0;
            self.qa_start = now;
        }
        self.qa_bytes += acked;
        let holding = now < self.hold_until;
        if self.p.qa_threshold > 0.0
            && d > self.p.qa_threshold * target
            && !holding
            && self.qa_last < self.max_wnd / (1u64 << self.p.qa_gate.min(63)) as f64
        {
            self.quick_adapt(now, period);
            return;
        }
        let near_zero = 2.0 * self.frame * 8.0 / self.line_bps * 1e12;
        match (fb.ecn_echo, d < target) {
            (false, true) => {
                self.inc += self.p.alpha * unit * acked * (target - d) / target.max(1.0);
                self.inc += self.p.fair_increase * unit * acked;
                if d <= near_zero {
                    self.calm_bytes += acked;
                    if self.calm_bytes >= self.cwnd {
                        self.cwnd += self.p.fast_increase_scale * self.scaling * acked;
                    }
                } else {
                    self.calm_bytes = 0.0;
                }
            }
            (false, false) => {
                self.calm_bytes = 0.0;
                self.inc += self.p.fair_increase * unit * acked;
            }
            (true, true) => self.calm_bytes = 0.0,
            (true, false) => {
                self.calm_bytes = 0.0;
                let due = self.last_decrease.is_none_or(|t| now >= t + base);
                if due && !holding && self.avg_delay > target {
                    let f = 1.0 - self.p.gamma * (self.avg_delay - target) / self.avg_delay;
                    self.cwnd *= f.max(self.p.max_md_jump);
                    self.last_decrease = Some(now);
                    self.cuts += 1;
                    self.inc = 0.0;
                }
            }
        }
        self.acked_since_adjust += acked;
        let period_due = (now - self.last_adjust).0 as f64 >= self.p.adjust_period * base.0 as f64;
        if self.acked_since_adjust >= (self.p.adjust_bytes_mtu as f64) * self.frame || period_due {
            if self.inc > 0.0 {
                self.cwnd += self.inc / self.cwnd.max(self.frame) + self.p.eta * unit;
            }
            self.inc = 0.0;
            self.acked_since_adjust = 0.0;
            self.last_adjust = now;
        }
        self.clamp();
    }

    fn on_loss(&mut self, now: SimTime, timeout: bool) {
        let Some(base) = self.base_rtt else { return };
        if timeout {
            self.cwnd = self.frame;
            self.cuts += 1;
            self.inc = 0.0;
            self.calm_bytes = 0.0;
            return;
        }
        if now >= self.hold_until {
            let period = SimTime(base.0 + (self.p.target_qdelay * base.0 as f64) as u64);
            self.quick_adapt(now, period);
        }
    }

    fn rate_bps(&self) -> u64 {
        self.line_bps as u64
    }

    fn window_bytes(&self) -> Option<u64> {
        self.base_rtt.map(|_| self.cwnd as u64)
    }

    fn cuts(&self) -> u64 {
        self.cuts
    }

    fn paths(&self) -> u32 {
        if self.p.entropies > 1 {
            self.p.entropies
        } else {
            0
        }
    }

    fn next_entropy(&mut self) -> u16 {
        if self.p.path_reaction {
            if let Some(e) = self.recycled.pop_front() {
                return e;
            }
        }
        self.rng.below(self.p.entropies as u64) as u16
    }

    fn window_excludes_reported(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: u64 = 100_000_000_000;
    const FRAME: u32 = 1086;
    /// Base RTT 12 us: BDP 150 KB, scaling_a 1.
    const RTT: u64 = 12_000_000;

    fn nscc(p: NsccParams) -> Nscc {
        Nscc::new(NsccParams { base_rtt: Some(SimTime(RTT)), ..p }, LINE, FRAME, 1, 0)
    }

    fn fb(now: u64, delay: u64, ecn: bool, entropy: u16) -> AckFeedback<'static> {
        AckFeedback {
            trimmed: false,
            now: SimTime(now),
            expected_psn: 0,
            newly_acked: 1,
            nack: false,
            ecn_echo: ecn,
            rtt: Some(SimTime(RTT + delay)),
            int: &[],
            entropy,
        }
    }

    #[test]
    fn the_window_starts_at_max_wnd_one_bdp() {
        let n = nscc(NsccParams::default());
        assert_eq!(n.window_bytes(), Some(150_000));
        assert_eq!(n.paths(), 0);
        // Without a configured base RTT there is no window until the first sample.
        let mut m = Nscc::new(NsccParams::default(), LINE, FRAME, 1, 0);
        assert_eq!(m.window_bytes(), None);
        m.on_ack(&fb(RTT, 0, false, 0));
        assert_eq!(m.window_bytes(), Some(150_000));
    }

    #[test]
    fn ecn_with_high_delay_cuts_in_proportion_to_the_excess_once_per_rtt() {
        let mut n = nscc(NsccParams { delay_gain: 1.0, ..NsccParams::default() });
        // D = 2 T_q: f = 1 - 0.8 (2 T_q - T_q) / (2 T_q) = 0.6.
        let tq = RTT * 3 / 4;
        n.on_ack(&fb(100, 2 * tq, true, 0));
        assert!((n.cwnd() - 150_000.0 * 0.6).abs() < 1.0, "{}", n.cwnd());
        assert_eq!(n.cuts(), 1);
        // Within the same base RTT no second cut.
        n.on_ack(&fb(200, 2 * tq, true, 0));
        assert!((n.cwnd() - 90_000.0).abs() < 1.0);
        // A huge excess is bounded by max_md_jump (0.5) ... and by quick adapt's
        // threshold (4 T_q) it would adapt instead: stay below it.
        n.on_ack(&fb(200 + RTT, 3 * tq + tq / 2, true, 0));
        let f: f64 = 1.0 - 0.8 * (3.5 - 1.0) / 3.5;
        assert!((n.cwnd() - 90_000.0 * f.max(0.5)).abs() < 1.0, "{}", n.cwnd());
    }

    #[test]
    fn ecn_with_low_delay_holds_and_no_ecn_with_high_delay_adds_fair_increase() {
        let mut n = nscc(NsccParams { eta: 0.0, ..NsccParams::default() });
        n.cwnd = 100_000.0;
        n.on_ack(&fb(100, 1_000_000, true, 0));
        assert_eq!(n.cwnd(), 100_000.0);
        // A window's worth of ACKs above the target, unmarked: + fair_increase MTUs.
        let mut n = nscc(NsccParams { eta: 0.0, adjust_bytes_mtu: 1_000_000, ..NsccParams::default() });
        n.cwnd = 100_000.0;
        let acks = (100_000.0 / FRAME as f64) as u64;
        for i in 0..acks {
            n.on_ack(&fb(100 + i, RTT, false, 0));
        }
        // The increase is applied after one base RTT.
        n.on_ack(&fb(RTT + 200, RTT, false, 0));
        let want = 100_000.0 + 5.0 * FRAME as f64 * (acks + 1) as f64 * FRAME as f64 / 100_000.0;
        assert!((n.cwnd() - want).abs() < 1.0, "{} vs {want}", n.cwnd());
    }

    #[test]
    fn low_delay_adds_proportional_and_fair_increase() {
        let mut n = nscc(NsccParams { eta: 0.0, adjust_bytes_mtu: 1, ..NsccParams::default() });
        n.cwnd = 100_000.0;
        let tq = (RTT * 3 / 4) as f64;
        // Delay a quarter of the target: (4 x 0.75 + 5) MTUs per window of ACKs.
        n.on_ack(&fb(100, (tq / 4.0) as u64, false, 0));
        let per_ack = (4.0 * 0.75 + 5.0) * FRAME as f64 * FRAME as f64 / 100_000.0;
        assert!((n.cwnd() - (100_000.0 + per_ack)).abs() < 0.5, "{}", n.cwnd());
    }

    #[test]
    fn quick_adapt_sets_the_window_to_what_the_last_period_delivered() {
        let mut n = nscc(NsccParams::default());
        // One period of ACKs delivering 10 frames, then a delay of 5 T_q.
        for i in 0..10 {
            n.on_ack(&fb(1000 + i, 0, false, 0));
        }
        let period = RTT + RTT * 3 / 4;
        n.on_ack(&fb(1000 + period, 5 * RTT * 3 / 4, false, 0));
        assert_eq!(n.quick_adapts(), 1);
        assert!((n.cwnd() - 10.0 * FRAME as f64).abs() < 1.0, "{}", n.cwnd());
        // A timeout leaves one frame.
        n.on_loss(SimTime(10 * RTT), true);
        assert_eq!(n.window_bytes(), Some(FRAME as u64));
    }

    #[test]
    fn marked_entropies_are_replaced_and_unmarked_ones_recycled() {
        let mut n = nscc(NsccParams { entropies: 64, ..NsccParams::default() });
        assert_eq!(n.paths(), 64);
        n.on_ack(&fb(100, 0, false, 7));
        n.on_ack(&fb(101, 0, true, 9));
        n.on_ack(&fb(102, 0, false, 11));
        assert_eq!(n.next_entropy(), 7);
        assert_eq!(n.next_entropy(), 11);
        // With nothing to recycle, a random one in range.
        let e = n.next_entropy();
        assert!(e < 64);
        // Without path reaction, every packet draws one.
        let mut o = nscc(NsccParams { entropies: 64, path_reaction: false, ..NsccParams::default() });
        o.on_ack(&fb(100, 0, false, 7));
        let draws: Vec<u16> = (0..32).map(|_| o.next_entropy()).collect();
        assert!(draws.iter().all(|&e| e < 64) && draws.iter().any(|&e| e != 7), "{draws:?}");
    }
}
