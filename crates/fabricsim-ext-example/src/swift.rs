//! A Swift-like delay-based congestion controller (Kumar et al., "Swift:
//! Delay is Simple and Effective for Congestion Control in the Datacenter",
//! SIGCOMM 2020, Algorithm 1), written against the core's
//! [`CongestionOps`] interface.
//!
//! The window (`cwnd`, in segments, fractional) follows the delay an ACK
//! measures (the RTT sample of its timestamp echo) against a target:
//!
//! - target = `base_target` + flow scaling, where flow scaling is
//!   `alpha / sqrt(cwnd) + b` clamped to `[0, fs_range]`, with `alpha` and
//!   `b` chosen so that it is `fs_range` at `fs_min_cwnd` and 0 at
//!   `fs_max_cwnd` (many flows with small windows get a larger target, so
//!   that the queue they share stays fair);
//! - below the target, additive increase: `ai / cwnd` segments per acked
//!   segment (`ai` per RTT), `ai` per acked segment below one segment;
//! - above it, multiplicative decrease by
//!   `max(1 - beta (delay - target) / delay, 1 - max_mdf)`, at most once per
//!   RTT;
//! - on a loss detected by fast recovery: `cwnd (1 - max_mdf)` (at most once
//!   per RTT); on a retransmission timeout the same, and `min_cwnd` after
//!   `rto_reset` timeouts in a row;
//! - below one segment, the sender is paced at `cwnd x MSS / RTT`.
//!
//! Simplifications: the delay is the whole RTT sample (Swift subtracts the
//! hosts' processing delays measured by NIC timestamps and splits fabric
//! from endpoint delay with two windows; here they are one), and there is
//! no hop-count scaling of the target (the core's ACKs carry no hop count).
//! The core's sender keeps at least one segment in its window, so a window
//! below one segment acts through pacing only.

use fabricsim_core::extension::tcp_cc::{CcFactory, ParamError, Params};
use fabricsim_core::transport::tcp::cc::{AckInfo, CcInit, CcState, CongestionOps, LossInfo, Window};
use fabricsim_core::units::{Rate, SimTime};
use serde_json::{json, Value};

/// Swift's parameters (`tcp.cc_params`), times in microseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct SwiftParams {
    /// Target delay without flow scaling (`base_target`), microseconds.
    pub base_target_us: f64,
    /// Most delay flow scaling adds (`fs_range`), microseconds.
    pub fs_range_us: f64,
    /// Window (segments) at and below which flow scaling adds `fs_range`.
    pub fs_min_cwnd: f64,
    /// Window (segments) at and above which flow scaling adds nothing.
    pub fs_max_cwnd: f64,
    /// Additive increase, segments per RTT.
    pub ai: f64,
    /// Multiplicative decrease per unit of relative excess delay.
    pub beta: f64,
    /// Largest fraction one decrease takes.
    pub max_mdf: f64,
    /// Smallest window, segments.
    pub min_cwnd: f64,
    /// Largest window, segments.
    pub max_cwnd: f64,
    /// Timeouts in a row after which the window drops to `min_cwnd`.
    pub rto_reset: u64,
}

impl Default for SwiftParams {
    fn default() -> Self {
        SwiftParams {
            base_target_us: 25.0,
            fs_range_us: 50.0,
            fs_min_cwnd: 0.1,
            fs_max_cwnd: 100.0,
            ai: 1.0,
            beta: 0.8,
            max_mdf: 0.5,
            min_cwnd: 0.01,
            max_cwnd: 10_000.0,
            rto_reset: 3,
        }
    }
}

const KEYS: &[&str] = &[
    "base_target_us",
    "fs_range_us",
    "fs_min_cwnd",
    "fs_max_cwnd",
    "ai",
    "beta",
    "max_mdf",
    "min_cwnd",
    "max_cwnd",
    "rto_reset",
];

impl SwiftParams {
    /// Reads and checks `tcp.cc_params` (`null`: every default).
    pub fn from_json(v: &Value) -> Result<Self, ParamError> {
        let p = Params::new(v, KEYS)?;
        let d = SwiftParams::default();
        let s = SwiftParams {
            base_target_us: p.f64("base_target_us", d.base_target_us, 0.1, 1e6)?,
            fs_range_us: p.f64("fs_range_us", d.fs_range_us, 0.0, 1e6)?,
            fs_min_cwnd: p.f64("fs_min_cwnd", d.fs_min_cwnd, 0.001, 1e6)?,
            fs_max_cwnd: p.f64("fs_max_cwnd", d.fs_max_cwnd, 0.001, 1e6)?,
            ai: p.f64("ai", d.ai, 0.0, 1e3)?,
            beta: p.f64("beta", d.beta, 0.0, 1.0)?,
            max_mdf: p.f64("max_mdf", d.max_mdf, 0.0, 1.0)?,
            min_cwnd: p.f64("min_cwnd", d.min_cwnd, 0.001, 1e6)?,
            max_cwnd: p.f64("max_cwnd", d.max_cwnd, 1.0, 1e9)?,
            rto_reset: p.u64("rto_reset", d.rto_reset, 1, 1000)?,
        };
        if s.fs_max_cwnd <= s.fs_min_cwnd {
            return Err(ParamError::new(
                "fs_max_cwnd",
                format!("must be above fs_min_cwnd ({}), not {}", s.fs_min_cwnd, s.fs_max_cwnd),
            ));
        }
        if s.max_cwnd < s.min_cwnd {
            return Err(ParamError::new(
                "max_cwnd",
                format!("must be at least min_cwnd ({}), not {}", s.min_cwnd, s.max_cwnd),
            ));
        }
        Ok(s)
    }

    /// The JSON Schema of the parameters.
    pub fn schema() -> Value {
        let num = |desc: &str, default: f64, min: f64, max: f64| json!({"type": "number", "description": desc, "default": default, "minimum": min, "maximum": max});
        let d = SwiftParams::default();
        json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "base_target_us": num("target delay without flow scaling, microseconds", d.base_target_us, 0.1, 1e6),
                "fs_range_us": num("most delay flow scaling adds, microseconds", d.fs_range_us, 0.0, 1e6),
                "fs_min_cwnd": num("window (segments) at which flow scaling adds fs_range", d.fs_min_cwnd, 0.001, 1e6),
                "fs_max_cwnd": num("window (segments) from which flow scaling adds nothing", d.fs_max_cwnd, 0.001, 1e6),
                "ai": num("additive increase, segments per RTT", d.ai, 0.0, 1e3),
                "beta": num("decrease per unit of relative excess delay", d.beta, 0.0, 1.0),
                "max_mdf": num("largest fraction one decrease takes", d.max_mdf, 0.0, 1.0),
                "min_cwnd": num("smallest window, segments", d.min_cwnd, 0.001, 1e6),
                "max_cwnd": num("largest window, segments", d.max_cwnd, 1.0, 1e9),
                "rto_reset": {"type": "integer", "description": "timeouts in a row after which the window is min_cwnd",
                              "default": d.rto_reset, "minimum": 1, "maximum": 1000},
            }
        })
    }
}

/// One connection's Swift state.
#[derive(Clone, Debug)]
pub struct Swift {
    p: SwiftParams,
    /// Flow-scaling coefficients: `fs = alpha / sqrt(cwnd) + b`, seconds.
    fs_alpha: f64,
    fs_b: f64,
    mss: u64,
    /// The window, segments.
    cwnd: f64,
    /// When the window was last decreased.
    last_decrease: Option<SimTime>,
    /// The latest RTT sample and smoothed RTT, seconds.
    rtt: f64,
    /// Timeouts since the last ACK of new data.
    timeouts: u64,
}

impl Swift {
    pub fn new(p: SwiftParams, init: &CcInit) -> Self {
        let (lo, hi) = (1.0 / p.fs_min_cwnd.sqrt(), 1.0 / p.fs_max_cwnd.sqrt());
        let fs_alpha = p.fs_range_us * 1e-6 / (lo - hi);
        let fs_b = -fs_alpha * hi;
        let cwnd = (init.window.cwnd as f64 / init.mss as f64).clamp(p.min_cwnd, p.max_cwnd);
        Swift { p, fs_alpha, fs_b, mss: init.mss, cwnd, last_decrease: None, rtt: 0.0, timeouts: 0 }
    }

    /// The window, segments.
    pub fn cwnd_segments(&self) -> f64 {
        self.cwnd
    }

    /// The target delay at the current window, seconds.
    pub fn target(&self) -> f64 {
        let fs = (self.fs_alpha / self.cwnd.sqrt() + self.fs_b).clamp(0.0, self.p.fs_range_us * 1e-6);
        self.p.base_target_us * 1e-6 + fs
    }

    fn can_decrease(&self, now: SimTime) -> bool {
        self.last_decrease.is_none_or(|t| (now - t).as_secs_f64() >= self.rtt)
    }

    fn decrease_to(&mut self, factor: f64, now: SimTime) {
        self.cwnd = (self.cwnd * factor).clamp(self.p.min_cwnd, self.p.max_cwnd);
        self.last_decrease = Some(now);
    }

    /// The sender's window for Swift's: whole bytes, at least one segment
    /// (below that, pacing does the rest); `ssthresh` follows it, so the
    /// sender never counts itself in slow start.
    fn write(&self, w: &mut Window) {
        w.cwnd = ((self.cwnd * self.mss as f64) as u64).max(self.mss);
        w.ssthresh = w.cwnd;
    }

    /// The delay reaction to one ACK of new data (Swift's `OnAck`).
    pub fn on_delay(&mut self, now: SimTime, delay: f64, acked_segments: f64) {
        self.rtt = delay;
        let target = self.target();
        if delay < target {
            self.cwnd +=
                if self.cwnd >= 1.0 { self.p.ai / self.cwnd * acked_segments } else { self.p.ai * acked_segments };
            self.cwnd = self.cwnd.min(self.p.max_cwnd);
        } else if self.can_decrease(now) {
            let factor = (1.0 - self.p.beta * (delay - target) / delay).max(1.0 - self.p.max_mdf);
            self.decrease_to(factor, now);
        }
    }
}

impl CongestionOps for Swift {
    fn name(&self) -> &str {
        "swift"
    }

    /// Every ACK of new data: outside recovery, the delay reaction and the
    /// sender's window; in recovery the sender's loss recovery holds the
    /// window (Swift's own reduction was made when it began).
    fn on_ack(&mut self, w: &mut Window, ack: &AckInfo) {
        self.timeouts = 0;
        if matches!(ack.state, CcState::Recovery | CcState::Cwr) {
            return;
        }
        if let Some(rtt) = ack.rtt_sample {
            self.on_delay(ack.now, rtt.as_secs_f64(), ack.acked as f64 / self.mss as f64);
        }
        self.write(w);
    }

    /// Growth happened in [`Self::on_ack`].
    fn cong_avoid(&mut self, w: &mut Window, _ack: &AckInfo) {
        self.write(w);
    }

    /// Fast recovery (Swift's retransmit reaction): `1 - max_mdf`, once per RTT.
    fn ssthresh(&mut self, _w: &Window, loss: &LossInfo) -> u64 {
        if self.can_decrease(loss.now) {
            self.decrease_to(1.0 - self.p.max_mdf, loss.now);
        }
        ((self.cwnd * self.mss as f64) as u64).max(self.mss)
    }

    fn on_timeout(&mut self, _w: &Window, now: SimTime) {
        self.timeouts += 1;
        if self.timeouts >= self.p.rto_reset {
            self.cwnd = self.p.min_cwnd;
            self.last_decrease = Some(now);
        } else if self.can_decrease(now) {
            self.decrease_to(1.0 - self.p.max_mdf, now);
        }
    }

    /// Below one segment: one segment per `RTT / cwnd`; otherwise unpaced.
    fn pacing_rate(&self) -> Option<Rate> {
        if self.cwnd < 1.0 && self.rtt > 0.0 {
            Some(Rate(((self.cwnd * self.mss as f64 * 8.0 / self.rtt) as u64).max(1)))
        } else {
            Some(Rate(0))
        }
    }

    fn clone_box(&self) -> Box<dyn CongestionOps> {
        Box::new(self.clone())
    }
}

/// Registers Swift as `swift`.
pub struct SwiftFactory;

impl CcFactory for SwiftFactory {
    fn validate(&self, params: &Value) -> Result<(), ParamError> {
        SwiftParams::from_json(params).map(|_| ())
    }

    fn create(&self, params: &Value, init: CcInit) -> Box<dyn CongestionOps> {
        // Checked by `validate` when the world was built.
        let p = SwiftParams::from_json(params).unwrap_or_default();
        Box::new(Swift::new(p, &init))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabricsim_core::rng::RandomStream;

    const MSS: u64 = 1000;

    fn swift(p: SwiftParams, segments: u64) -> Swift {
        let window = Window { cwnd: segments * MSS, ssthresh: u64::MAX, mss: MSS };
        Swift::new(p, &CcInit { mss: MSS, window, flow: 0, rng: RandomStream::new(1, "tcp-cc", 0) })
    }

    #[test]
    fn below_the_target_the_window_grows_by_ai_per_rtt() {
        let mut s = swift(SwiftParams { ai: 2.0, ..Default::default() }, 10);
        let mut now = SimTime::ZERO;
        for _ in 0..50 {
            // One RTT: an ACK per segment of the window at its start.
            let n = s.cwnd.floor() as usize;
            let per = s.cwnd / n as f64;
            for _ in 0..n {
                s.on_delay(now, 5e-6, per);
            }
            now += SimTime::from_us(5);
        }
        // ai / cwnd per acked segment, cwnd acked segments per RTT: ai per RTT
        // (a little less, by about ai / cwnd per round, as cwnd grows within each round).
        assert!(s.cwnd < 110.0 && s.cwnd > 110.0 - 3.0, "cwnd {}", s.cwnd);
    }

    #[test]
    fn above_the_target_one_decrease_per_rtt_in_proportion_to_the_excess() {
        let p = SwiftParams { fs_range_us: 0.0, ..Default::default() };
        let mut s = swift(p, 100);
        // Delay twice the 25 us target: factor 1 - 0.8 x 0.5 = 0.6.
        s.on_delay(SimTime::from_us(100), 50e-6, 1.0);
        assert!((s.cwnd - 60.0).abs() < 1e-9);
        // Within the same RTT no further decrease.
        s.on_delay(SimTime::from_us(120), 50e-6, 1.0);
        assert!((s.cwnd - 60.0).abs() < 1e-9);
        // A delay far above the target, an RTT (the 500 us just measured) after the last cut, is
        // cut by max_mdf at most.
        s.on_delay(SimTime::from_us(600), 500e-6, 1.0);
        assert!((s.cwnd - 30.0).abs() < 1e-9);
    }

    #[test]
    fn flow_scaling_spans_its_range_between_the_two_windows() {
        let mut s = swift(SwiftParams::default(), 10);
        s.cwnd = 0.1;
        assert!((s.target() - 75e-6).abs() < 1e-12);
        s.cwnd = 100.0;
        assert!((s.target() - 25e-6).abs() < 1e-12);
        s.cwnd = 1000.0;
        assert!((s.target() - 25e-6).abs() < 1e-12);
        s.cwnd = 1.0;
        // alpha / 1 + b = 50 us (1 - 0.1) / (3.162 - 0.1) = 14.7 us above fs_max's 0.
        let alpha = 50e-6 / (1.0 / 0.1f64.sqrt() - 0.1);
        assert!((s.target() - (25e-6 + alpha * (1.0 - 0.1))).abs() < 1e-12);
    }

    /// One flow on a bottleneck (fluid model, rate `c` bytes/s, base RTT
    /// `base`): the delay an ACK sees is `base + max(0, inflight - c base) / c`.
    /// In steady state the window holds the delay near the target: the
    /// closed form is `cwnd* = c (target) / MSS`, where the queue is
    /// `c (target - base)` bytes.
    #[test]
    fn one_flow_on_a_bottleneck_holds_the_delay_at_the_target() {
        let p = SwiftParams { fs_range_us: 0.0, ..Default::default() };
        let (c, base) = (10e9 / 8.0, 10e-6);
        let mut s = swift(p.clone(), 10);
        let mut now = 0.0f64;
        let (mut sum, mut n) = (0.0, 0);
        for round in 0..4000 {
            let inflight = s.cwnd * MSS as f64;
            let delay = base + (inflight - c * base).max(0.0) / c;
            let acks = s.cwnd.max(1.0).floor() as usize;
            for _ in 0..acks {
                s.on_delay(SimTime((now * 1e12) as u64), delay, s.cwnd / acks as f64);
            }
            if round >= 2000 {
                sum += delay;
                n += 1;
            }
            now += delay;
        }
        let mean = sum / n as f64;
        let target = p.base_target_us * 1e-6;
        assert!((mean - target).abs() < 0.1 * target, "mean delay {mean} against target {target}");
        let cwnd_star = c * target / MSS as f64;
        assert!((s.cwnd - cwnd_star).abs() < 0.15 * cwnd_star, "cwnd {} against {cwnd_star}", s.cwnd);
    }

    #[test]
    fn parameters_are_checked_with_the_field_and_range() {
        assert_eq!(SwiftParams::from_json(&Value::Null).unwrap(), SwiftParams::default());
        let e = SwiftParams::from_json(&json!({"beta": 2})).unwrap_err();
        assert_eq!(e.field, "beta");
        assert!(e.message.contains("from 0 to 1"), "{}", e.message);
        let e = SwiftParams::from_json(&json!({"target": 2})).unwrap_err();
        assert_eq!(e.field, "target");
        assert!(e.message.contains("allowed: base_target_us"), "{}", e.message);
        let e = SwiftParams::from_json(&json!({"fs_min_cwnd": 10, "fs_max_cwnd": 5})).unwrap_err();
        assert_eq!(e.field, "fs_max_cwnd");
    }

    #[test]
    fn below_one_segment_the_sender_is_paced() {
        let mut s = swift(SwiftParams::default(), 10);
        s.rtt = 100e-6;
        assert_eq!(s.pacing_rate(), Some(Rate(0)));
        s.cwnd = 0.5;
        // 0.5 x 1000 B x 8 / 100 us = 40 Mbit/s.
        assert_eq!(s.pacing_rate(), Some(Rate(40_000_000)));
    }
}
