//! CUBIC (RFC 9438).
//!
//! Window in segments; `C = 0.4`, `beta = 0.7`, fast convergence on. After a
//! congestion event the window follows `W(t) = C (t - K)^3 + W_max` with
//! `K = cbrt(W_max (1 - beta) / C)`, evaluated one RTT ahead and bounded to
//! `[cwnd, 1.5 cwnd]`; in the Reno-friendly region it follows the estimate
//! `W_est`, which grows by `3 (1 - beta) / (1 + beta)` segments per window.
//! Slow start is standard (no HyStart).

use super::{AckInfo, CongestionOps, LossInfo, Window};
use crate::units::SimTime;

const C: f64 = 0.4;
const BETA: f64 = 0.7;

/// CUBIC state; windows in segments.
#[derive(Clone, Debug, Default)]
pub struct Cubic {
    /// Window before the last reduction (after fast convergence).
    w_max: f64,
    /// Time from the epoch start until the curve reaches `origin`, in seconds.
    k: f64,
    /// Plateau of the cubic curve: `w_max`, or cwnd when the epoch starts above it.
    origin: f64,
    /// Reno-friendly estimate `W_est`.
    w_est: f64,
    /// Start of the current congestion-avoidance epoch; `None` until the first
    /// ACK in congestion avoidance after a reduction.
    epoch_start: Option<SimTime>,
    /// Fractional bytes of growth carried between ACKs.
    frac: f64,
}

impl Cubic {
    pub fn new() -> Self {
        Self::default()
    }

    /// RFC 9438 4.6 (multiplicative decrease) and 4.7 (fast convergence).
    pub fn ssthresh_after_loss(&mut self, w: &Window) -> u64 {
        let cw = w.cwnd as f64 / w.mss as f64;
        self.w_max = if cw < self.w_max { cw * (1.0 + BETA) / 2.0 } else { cw };
        self.epoch_start = None;
        self.frac = 0.0;
        ((cw * BETA * w.mss as f64) as u64).max(2 * w.mss)
    }

    pub fn increase(&mut self, w: &mut Window, info: &AckInfo) {
        if w.in_slow_start() {
            w.cwnd += info.acked.min(w.mss);
            return;
        }
        let mss = w.mss as f64;
        let cw = w.cwnd as f64 / mss;
        let start = *self.epoch_start.get_or_insert_with(|| {
            if cw < self.w_max {
                self.k = ((self.w_max - cw) / C).cbrt();
                self.origin = self.w_max;
            } else {
                self.k = 0.0;
                self.origin = cw;
            }
            self.w_est = cw;
            info.now
        });
        let rtt = info.srtt.or(info.min_rtt).map_or(0.0, |r| r.as_secs_f64());
        let t = (info.now - start).as_secs_f64() + rtt;
        let target = (self.origin + C * (t - self.k).powi(3)).clamp(cw, 1.5 * cw);
        let acked_segments = info.acked as f64 / mss;
        self.w_est += 3.0 * (1.0 - BETA) / (1.0 + BETA) * acked_segments / cw;
        let next = if target < self.w_est { self.w_est } else { cw + (target - cw) / cw * acked_segments };
        let grow = (next - cw).max(0.0) * mss + self.frac;
        let whole = grow.floor();
        self.frac = grow - whole;
        w.cwnd += whole as u64;
    }
}

impl CongestionOps for Cubic {
    fn name(&self) -> &str {
        "cubic"
    }

    #[inline(always)]
    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo) {
        self.increase(w, ack);
    }

    #[inline(always)]
    fn ssthresh(&mut self, w: &Window, _loss: &LossInfo) -> u64 {
        self.ssthresh_after_loss(w)
    }

    fn clone_box(&self) -> Box<dyn CongestionOps> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// A loss at a window of `w_max` segments, then one ACK per segment and
    /// cwnd segments per `rtt` until `until`; returns cwnd in segments.
    fn cwnd_after_loss(w_max: u64, rtt: SimTime, until: SimTime) -> f64 {
        let mut c = Cubic::new();
        let mut w = Window { cwnd: w_max * MSS, ssthresh: 0, mss: MSS };
        w.ssthresh = c.ssthresh_after_loss(&w);
        w.cwnd = w.ssthresh;
        let mut now = SimTime::ZERO;
        while now < until {
            for _ in 0..w.cwnd / MSS {
                let info = AckInfo {
                    now,
                    acked: MSS,
                    ack: 0,
                    snd_nxt: 0,
                    ece: false,
                    srtt: Some(rtt),
                    min_rtt: Some(rtt),
                    rtt_sample: None,
                    flight: 0,
                    state: crate::transport::tcp::cc::CcState::Open,
                };
                c.increase(&mut w, &info);
            }
            now += rtt;
        }
        w.cwnd as f64 / MSS as f64
    }

    #[test]
    fn short_rtts_follow_the_reno_friendly_estimate() {
        // 100 RTTs of 1 ms at 3 (1 - 0.7) / (1 + 0.7) = 0.53 segments per RTT
        // from 70 segments. The cubic curve stays below: t + RTT <= 0.1 s is far
        // short of K = 4.2 s.
        let cw = cwnd_after_loss(100, SimTime::from_ms(1), SimTime::from_ms(100));
        // Whole-segment ACK counts per RTT leave it a little short (122.5).
        assert!((cw - (70.0 + 52.9)).abs() < 1.0, "cwnd {cw}");
    }

    #[test]
    fn decrease_is_beta_and_fast_convergence_lowers_w_max() {
        let mut c = Cubic::new();
        let w = Window { cwnd: 100 * MSS, ssthresh: 0, mss: MSS };
        assert_eq!(c.ssthresh_after_loss(&w), 70 * MSS);
        assert_eq!(c.w_max, 100.0);
        let w = Window { cwnd: 80 * MSS, ssthresh: 0, mss: MSS };
        c.ssthresh_after_loss(&w);
        assert!((c.w_max - 80.0 * 1.7 / 2.0).abs() < 1e-9);
    }

    #[test]
    fn window_returns_to_w_max_after_k_seconds() {
        // After a loss at W_max = 100 segments, cwnd = 70; K = cbrt(30 / 0.4) = 4.22 s.
        // A long RTT keeps the Reno-friendly estimate (about 0.53 segments per
        // RTT) below the cubic curve, so the cubic region is what is tested.
        let cw = cwnd_after_loss(100, SimTime::from_ms(100), SimTime::from_ms(4200));
        assert!((cw - 100.0).abs() < 0.5, "cwnd {cw} segments at t = K");
    }
}
