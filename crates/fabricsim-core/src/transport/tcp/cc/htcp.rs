//! H-TCP (Leith and Shorten, "H-TCP: TCP for high-speed and long-distance
//! networks", PFLDnet 2004; the IETF draft draft-leith-tcp-htcp-06), as the
//! Linux `tcp_htcp` module runs it. There is no RFC.
//!
//! - **Increase** (paper section 3, equation 4): in congestion avoidance the
//!   window grows by `alpha` segments per RTT, where `alpha` depends on the
//!   time `Delta` since the last congestion event:
//!   `alpha(Delta) = 1` for `Delta <= Delta_L = 1 s`, else
//!   `1 + 10 (Delta - Delta_L) + ((Delta - Delta_L) / 2)^2`. Linux keeps the
//!   factor as an integer number of segments (it computes it in jiffies and
//!   divides down), so the curve is a floor of the closed form.
//! - **Alpha scaling** (paper section 4.2): `alpha <- 2 (1 - beta) alpha(Delta)`
//!   so that the average window with backoff `beta` matches a standard flow
//!   with backoff 0.5 in the low-speed regime. Linux always applies it.
//! - **RTT scaling** (paper section 4.3, optional): the factor is multiplied
//!   by `RTT_min / 100 ms` (clamped to [0.5, 10]) so that flows with different
//!   RTTs grow in wall-clock time alike. Linux turns it on by default
//!   (`use_rtt_scaling = 1`); `htcp_rtt_scaling: false` turns it off.
//! - **Adaptive backoff** (paper section 4.1): at a congestion event
//!   `beta = RTT_min / RTT_max`, clamped to [0.5, 0.8], but only once a
//!   previous backoff has happened in this mode and `RTT_min > 10 ms` (as
//!   Linux); else 0.5. `RTT_max` grows by at most 20 ms per sample and, after
//!   every backoff, decays to `RTT_min + 0.95 (RTT_max - RTT_min)`; both only
//!   from samples taken outside loss recovery.
//! - **Throughput-change rule** (paper section 4.1, "bandwidth switch"): the
//!   achieved throughput is measured once per window (an EWMA with weight
//!   1/4, reset in the first three RTTs after a backoff), and its maximum
//!   `B_max` is compared at each backoff with the one of the previous
//!   backoff: if it moved by more than 20% (`5 B_max` outside
//!   `[4 B_old, 6 B_old]`), `beta` resets to 0.5 (and the next backoff is
//!   again 0.5), so that the flows release bandwidth to new ones quickly.
//!   `htcp_bandwidth_switch: false` turns the rule off.
//! - Slow start is Linux's (`tcp_slow_start`, up to `ssthresh`); a loss, a
//!   timeout or an ECN echo sets `ssthresh = max(cwnd beta, 2)` segments and
//!   restarts `Delta` at the congestion event (Linux `htcp_state` resets the
//!   clock on entering CWR, Recovery or Loss).
//!
//! Simplifications: times are exact (Linux counts in jiffies: with HZ = 1000
//! the difference is below a millisecond); there is no undo of a reduction
//! found spurious (the sender has none); "outside loss recovery" is the span
//! from the first window increase after a reduction to the next reduction.

use super::{AckInfo, CongestionOps, LossInfo, Window};
use crate::units::SimTime;

/// Linux's fixed point: 1.0 is 128.
const ONE: u64 = 1 << 7;
/// `beta` bounds: 0.5 and 0.8 (102/128).
const BETA_MIN: u64 = ONE / 2;
const BETA_MAX: u64 = 102;
/// `Delta_L`: below it H-TCP behaves like Reno.
const DELTA_L_SECS: f64 = 1.0;

#[derive(Clone, Debug)]
pub struct Htcp {
    rtt_scaling: bool,
    bandwidth_switch: bool,
    /// Increase per RTT, in segments * 128.
    alpha: u64,
    /// Backoff factor * 128.
    beta: u64,
    /// Set once a backoff used 0.5; the next may be adaptive.
    modeswitch: bool,
    /// Time of the last congestion event (or of the first ACK).
    last_cong: Option<SimTime>,
    min_rtt: Option<SimTime>,
    max_rtt: Option<SimTime>,
    /// Between a reduction and the next window increase (Linux: not Open).
    recovering: bool,
    /// Segments ACKed by the last ACK (`pkts_acked`), for the AI counter.
    pkts_acked: u64,
    /// `snd_cwnd_cnt`.
    cwnd_cnt: u64,
    /// Achieved throughput (segments per second): EWMA, min and max since
    /// the last backoff, max at the previous backoff.
    bi: f64,
    min_b: f64,
    max_b: f64,
    old_max_b: f64,
    packetcount: u64,
    lasttime: Option<SimTime>,
}

impl Htcp {
    pub fn new(rtt_scaling: bool, bandwidth_switch: bool) -> Self {
        Htcp {
            rtt_scaling,
            bandwidth_switch,
            alpha: ONE,
            beta: BETA_MIN,
            modeswitch: false,
            last_cong: None,
            min_rtt: None,
            max_rtt: None,
            recovering: false,
            pkts_acked: 1,
            cwnd_cnt: 0,
            bi: 0.0,
            min_b: 0.0,
            max_b: 0.0,
            old_max_b: 0.0,
            packetcount: 0,
            lasttime: None,
        }
    }

    /// The current increase per RTT (segments) and backoff factor.
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / ONE as f64
    }

    pub fn beta(&self) -> f64 {
        self.beta as f64 / ONE as f64
    }

    pub fn rtt_bounds(&self) -> (Option<SimTime>, Option<SimTime>) {
        (self.min_rtt, self.max_rtt)
    }

    fn cong_time(&self, now: SimTime) -> SimTime {
        self.last_cong.map_or(SimTime::ZERO, |t| now.saturating_sub(t))
    }

    /// RTTs since the last congestion event (`htcp_ccount`).
    fn ccount(&self, now: SimTime) -> u64 {
        match self.min_rtt {
            Some(m) if m > SimTime::ZERO => self.cong_time(now).ps() / m.ps(),
            _ => 0,
        }
    }

    /// The increase factor for `Delta` seconds since the last congestion event
    /// (before alpha and RTT scaling), as the integer Linux keeps.
    pub fn factor(delta_secs: f64) -> u64 {
        if delta_secs <= DELTA_L_SECS {
            return 1;
        }
        let d = delta_secs - DELTA_L_SECS;
        (1.0 + 10.0 * d + (d / 2.0) * (d / 2.0)).floor() as u64
    }

    /// `htcp_alpha_update`.
    fn alpha_update(&mut self, now: SimTime) {
        let mut factor = Self::factor(self.cong_time(now).as_secs_f64());
        if self.rtt_scaling {
            if let Some(min_rtt) = self.min_rtt.filter(|m| *m > SimTime::ZERO) {
                // scale = 8 * 100 ms / RTT_min, within [4, 80] (0.5 .. 10 in eighths).
                let us = (min_rtt.ps() / 1_000_000).max(1);
                let scale = (800_000 / us).clamp(4, 80);
                factor = (factor * 8 / scale).max(1);
            }
        }
        self.alpha = 2 * factor * (ONE - self.beta);
        if self.alpha == 0 {
            self.alpha = ONE;
        }
    }

    /// `htcp_beta_update`.
    fn beta_update(&mut self) {
        if self.bandwidth_switch {
            let (max_b, old) = (self.max_b, self.old_max_b);
            self.old_max_b = max_b;
            if !(4.0 * old..=6.0 * old).contains(&(5.0 * max_b)) {
                self.beta = BETA_MIN;
                self.modeswitch = false;
                return;
            }
        }
        match (self.modeswitch, self.min_rtt, self.max_rtt) {
            (true, Some(min), Some(max)) if min > SimTime::from_ms(10) && max > SimTime::ZERO => {
                self.beta = (min.ps() as u128 * ONE as u128 / max.ps() as u128) as u64;
                self.beta = self.beta.clamp(BETA_MIN, BETA_MAX);
            }
            _ => {
                self.beta = BETA_MIN;
                self.modeswitch = true;
            }
        }
    }

    /// `htcp_recalc_ssthresh` with `htcp_param_update`, then the clock reset
    /// of `htcp_state` on entering CWR, Recovery or Loss.
    pub fn ssthresh_after_loss(&mut self, now: SimTime, w: &Window, base: u64) -> u64 {
        self.beta_update();
        self.alpha_update(now);
        if let (Some(min), Some(max)) = (self.min_rtt, self.max_rtt) {
            if max > min {
                self.max_rtt = Some(min + SimTime::from_ps((max - min).ps() * 95 / 100));
            }
        }
        self.last_cong = Some(now);
        self.recovering = true;
        self.packetcount = 0;
        self.lasttime = Some(now);
        let segs = base / w.mss;
        (segs * self.beta / ONE).max(2) * w.mss
    }

    /// `htcp_acked` with `measure_rtt` and `measure_achieved_throughput`.
    pub fn on_rtt_sample(&mut self, w: &Window, info: &AckInfo) {
        let now = info.now;
        if self.last_cong.is_none() {
            self.last_cong = Some(now);
        }
        let segs = info.acked.div_ceil(w.mss);
        if !self.recovering {
            self.pkts_acked = segs;
        }
        if let Some(rtt) = info.rtt_sample.filter(|r| *r > SimTime::ZERO) {
            if self.min_rtt.map_or(true, |m| rtt < m) {
                self.min_rtt = Some(rtt);
            }
            if !self.recovering {
                let min = self.min_rtt.unwrap_or(rtt);
                let mut max = self.max_rtt.unwrap_or(min).max(min);
                // RTT_max follows samples, at most 20 ms above its last value.
                if max < rtt && rtt <= max + SimTime::from_ms(20) {
                    max = rtt;
                }
                self.max_rtt = Some(max);
            }
        }
        if !self.bandwidth_switch {
            return;
        }
        if self.recovering {
            self.packetcount = 0;
            self.lasttime = Some(now);
            return;
        }
        self.packetcount += segs;
        let last = *self.lasttime.get_or_insert(now);
        let cwnd = w.cwnd / w.mss;
        let alpha_segs = (self.alpha / ONE).max(1);
        let Some(min_rtt) = self.min_rtt else { return };
        let elapsed = now.saturating_sub(last);
        if self.packetcount >= cwnd.saturating_sub(alpha_segs) && elapsed >= min_rtt && elapsed > SimTime::ZERO {
            let cur = self.packetcount as f64 / elapsed.as_secs_f64();
            if self.ccount(now) <= 3 {
                // Just after a backoff: start the estimate afresh.
                self.bi = cur;
                self.min_b = cur;
                self.max_b = cur;
            } else {
                self.bi = (3.0 * self.bi + cur) / 4.0;
                self.max_b = self.max_b.max(self.bi);
                self.min_b = self.min_b.min(self.max_b);
            }
            self.packetcount = 0;
            self.lasttime = Some(now);
        }
    }

    /// `htcp_cong_avoid` (called only while the window limits the flight).
    pub fn increase(&mut self, w: &mut Window, info: &AckInfo) {
        self.recovering = false;
        let mss = w.mss;
        let mut cwnd = w.cwnd / mss;
        if w.in_slow_start() {
            // tcp_slow_start: cwnd = min(cwnd + acked, ssthresh); H-TCP drops
            // the remainder.
            let acked = info.acked.div_ceil(mss);
            let ssthresh = w.ssthresh / mss;
            cwnd = (cwnd + acked).min(ssthresh.max(cwnd));
        } else if self.cwnd_cnt * self.alpha / ONE >= cwnd {
            // One segment once alpha * counted ACKed segments reach cwnd:
            // alpha segments per window.
            cwnd += 1;
            self.cwnd_cnt = 0;
            self.alpha_update(info.now);
        } else {
            self.cwnd_cnt += self.pkts_acked;
        }
        self.pkts_acked = 1;
        w.cwnd = cwnd * mss;
    }
}

impl CongestionOps for Htcp {
    fn name(&self) -> &str {
        "htcp"
    }

    /// RTT bounds and achieved throughput.
    #[inline(always)]
    fn on_ack(&mut self, w: &mut Window, ack: &AckInfo) {
        self.on_rtt_sample(w, ack);
    }

    #[inline(always)]
    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo) {
        self.increase(w, ack);
    }

    /// The adaptive backoff, which restarts H-TCP's clock at `now`.
    #[inline(always)]
    fn ssthresh(&mut self, w: &Window, loss: &LossInfo) -> u64 {
        self.ssthresh_after_loss(loss.now, w, loss.flight)
    }

    fn clone_box(&self) -> Box<dyn CongestionOps> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factor_follows_the_closed_form_above_delta_l() {
        assert_eq!(Htcp::factor(0.5), 1);
        assert_eq!(Htcp::factor(1.0), 1);
        // Delta = 3 s: 1 + 20 + 1 = 22.
        assert_eq!(Htcp::factor(3.0), 22);
        // Delta = 11 s: 1 + 100 + 25 = 126.
        assert_eq!(Htcp::factor(11.0), 126);
    }

    fn rtt_ack(now: SimTime, rtt: SimTime) -> AckInfo {
        AckInfo {
            now,
            acked: 1000,
            ack: 0,
            snd_nxt: 0,
            ece: false,
            srtt: Some(rtt),
            min_rtt: None,
            rtt_sample: Some(rtt),
            flight: 0,
            state: crate::transport::tcp::cc::CcState::Open,
        }
    }

    #[test]
    fn first_backoff_is_one_half_then_rtt_min_over_rtt_max() {
        let mut h = Htcp::new(false, false);
        let w = Window { cwnd: 100_000, ssthresh: u64::MAX, mss: 1000 };
        h.on_rtt_sample(&w, &rtt_ack(SimTime::from_ms(0), SimTime::from_ms(50)));
        for i in 1..=10 {
            h.on_rtt_sample(&w, &rtt_ack(SimTime::from_ms(i), SimTime::from_ms(50 + 5 * i)));
        }
        assert_eq!(h.ssthresh_after_loss(SimTime::from_ms(20), &w, w.cwnd), 50_000);
        assert_eq!(h.beta(), 0.5);
        let mut w2 = w;
        h.increase(&mut w2, &rtt_ack(SimTime::from_ms(30), SimTime::from_ms(60)));
        // RTT_max decayed to 50 + 0.95 * 50 = 97.5 ms; beta = 50/97.5 = 0.51.
        h.ssthresh_after_loss(SimTime::from_ms(40), &w, w.cwnd);
        assert!((h.beta() - 50.0 / 97.5).abs() < 1.0 / 128.0, "beta {}", h.beta());
    }

    #[test]
    fn beta_is_clamped_to_eight_tenths() {
        let mut h = Htcp::new(false, false);
        let w = Window { cwnd: 100_000, ssthresh: u64::MAX, mss: 1000 };
        h.on_rtt_sample(&w, &rtt_ack(SimTime::from_ms(0), SimTime::from_ms(100)));
        h.on_rtt_sample(&w, &rtt_ack(SimTime::from_ms(1), SimTime::from_ms(101)));
        h.ssthresh_after_loss(SimTime::from_ms(2), &w, w.cwnd);
        let mut w2 = w;
        h.increase(&mut w2, &rtt_ack(SimTime::from_ms(3), SimTime::from_ms(100)));
        assert_eq!(h.ssthresh_after_loss(SimTime::from_ms(4), &w, w.cwnd), 79_000);
        assert_eq!(h.beta, BETA_MAX);
    }

    #[test]
    fn a_throughput_change_resets_beta_to_one_half() {
        let mut h = Htcp::new(false, true);
        h.modeswitch = true;
        h.min_rtt = Some(SimTime::from_ms(100));
        h.max_rtt = Some(SimTime::from_ms(110));
        h.old_max_b = 1000.0;
        h.max_b = 1100.0; // +10%: adaptive.
        let w = Window { cwnd: 100_000, ssthresh: u64::MAX, mss: 1000 };
        h.ssthresh_after_loss(SimTime::from_secs(1), &w, w.cwnd);
        assert!(h.beta > BETA_MIN, "beta {}", h.beta());
        h.max_b = 1500.0; // +36%: back to 0.5.
        h.ssthresh_after_loss(SimTime::from_secs(2), &w, w.cwnd);
        assert_eq!(h.beta, BETA_MIN);
        assert!(!h.modeswitch);
    }

    #[test]
    fn rtt_scaling_is_neutral_at_100_ms_and_scales_the_factor() {
        let mut h = Htcp::new(true, false);
        h.last_cong = Some(SimTime::ZERO);
        h.min_rtt = Some(SimTime::from_ms(100));
        h.alpha_update(SimTime::from_secs(3));
        assert_eq!(h.alpha, 22 * ONE);
        h.min_rtt = Some(SimTime::from_ms(200));
        h.alpha_update(SimTime::from_secs(3));
        assert_eq!(h.alpha, 44 * ONE);
        let mut off = Htcp::new(false, false);
        off.last_cong = Some(SimTime::ZERO);
        off.min_rtt = Some(SimTime::from_ms(200));
        off.alpha_update(SimTime::from_secs(3));
        assert_eq!(off.alpha, 22 * ONE);
    }

    /// An ideal ACK clock: every segment of the window is ACKed once per RTT,
    /// no loss after the one at t = 0. Returns cwnd (segments) at each RTT.
    fn growth(rtt_ms: u64, rtt_scaling: bool, secs: u64) -> Vec<u64> {
        let mut h = Htcp::new(rtt_scaling, false);
        let rtt = SimTime::from_ms(rtt_ms);
        let mut w = Window { cwnd: 2000 * 1000, ssthresh: u64::MAX, mss: 1000 };
        h.on_rtt_sample(&w, &rtt_ack(SimTime::ZERO, rtt));
        w.ssthresh = h.ssthresh_after_loss(SimTime::ZERO, &w, w.cwnd);
        w.cwnd = w.ssthresh;
        let mut cwnds = vec![w.cwnd / 1000];
        let rounds = secs * 1000 / rtt_ms;
        for r in 0..rounds {
            let n = w.cwnd / 1000;
            for i in 0..n {
                let now = SimTime::from_ps(r * rtt.ps() + rtt.ps() * i / n);
                let info = rtt_ack(now, rtt);
                h.on_rtt_sample(&w, &info);
                h.increase(&mut w, &info);
            }
            cwnds.push(w.cwnd / 1000);
        }
        cwnds
    }

    /// The closed-form increase per RTT at `Delta` seconds after the
    /// backoff: `2 (1 - beta) alpha(Delta)` with beta = 0.5, times
    /// `RTT / 100 ms` with RTT scaling.
    fn closed_form(delta: f64, scale: f64) -> f64 {
        let a = if delta <= 1.0 { 1.0 } else { 1.0 + 10.0 * (delta - 1.0) + ((delta - 1.0) / 2.0).powi(2) };
        (a * scale).max(1.0)
    }

    #[test]
    fn window_grows_by_alpha_of_delta_per_rtt() {
        for (rtt_ms, scaling) in [(100, false), (100, true), (50, false), (200, true)] {
            let cwnds = growth(rtt_ms, scaling, 8);
            let per_s = 1000 / rtt_ms;
            let scale = if scaling { rtt_ms as f64 / 100.0 } else { 1.0 };
            // Below Delta_L: Reno, one segment per RTT (RTT-scaled; after the first RTT,
            // which fills the ACK counter).
            let n = per_s as usize - 1;
            let low = (cwnds[n] - cwnds[1]) as f64 / (n - 1) as f64;
            let expect = closed_form(0.5, scale);
            assert!(
                (0.9..=1.0).contains(&(low / expect)),
                "rtt {rtt_ms} ms: {low} per RTT below Delta_L, not {expect}"
            );
            // Above it: the closed form within -20% / +5%: Linux's integer
            // factor (up to one segment, times the RTT scale, below) and the
            // ACK that only checks the counter per increase (alpha / cwnd)
            // make it lower, never higher.
            for delta in [2.5, 4.0, 6.0, 7.5] {
                let r = (delta * per_s as f64) as usize;
                let measured = (cwnds[r + 1] - cwnds[r]) as f64;
                let expect = closed_form(delta + 0.5 / per_s as f64, scale);
                let ratio = measured / expect;
                assert!(
                    (0.8..=1.05).contains(&ratio),
                    "rtt {rtt_ms} ms scaling {scaling}: at {delta} s {measured} per RTT, closed form {expect:.1}"
                );
            }
        }
    }
}
