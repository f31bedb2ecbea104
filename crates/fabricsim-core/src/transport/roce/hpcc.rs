//! HPCC (Li et al., SIGCOMM 2019): rate control from in-band network
//! telemetry. Each switch on a data packet's path stamps its egress queue's
//! length, the bytes its port has sent and the time (`sim/int.rs`); the
//! receiver echoes the stamps in its ACK, and the sender estimates each link's
//! utilisation from two consecutive stamps of the same hop:
//!
//! `u_i = txRate_i / B_i + min(qlen_i, qlen_i') / (B_i T)`
//!
//! (the link's transmit rate over its capacity, plus the queue it holds in
//! units of one base RTT `T` at its rate). The most utilised hop's `u`, over
//! the time `dt` its two stamps span, updates the estimate
//! `U <- (U (T - dt) + u dt) / T` (with `dt <= T`), and the rate follows
//! (Algorithm 1 of the paper, in the rate form of its ns-3 code):
//!
//! - `U / eta >= 1`, or `max_stage` additive steps in a row: multiplicative
//!   adjustment `R = R_c / (U / eta) + R_AI`, and the stage count restarts;
//! - otherwise additive increase `R = R_c + R_AI`.
//!
//! `R_c` (the reference rate) and the stage count are committed once per RTT
//! (on the first ACK that acknowledges a packet sent after the previous
//! commit); between commits every ACK sets the rate from the same `R_c`
//! ("fast react"). The rate stays within `[min_rate, line rate]`, and the
//! bytes in flight within one base RTT at the current rate (the window of
//! HPCC's code with a variable window). Registered as `roce.cc: hpcc` by
//! `extension/rate_cc.rs`, which reads its parameters.

use super::rate::{AckFeedback, IntHop, RateControl};
use crate::units::SimTime;

/// The name scenarios give as `roce.cc`.
pub const NAME: &str = "hpcc";

/// HPCC's parameters (`roce.cc_params`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HpccParams {
    /// Target utilisation `eta`.
    pub eta: f64,
    /// Additive steps before a multiplicative adjustment is forced.
    pub max_stage: u32,
    /// Additive increase `R_AI`, bit/s.
    pub rate_ai_bps: u64,
    /// Lowest rate, bit/s.
    pub min_rate_bps: u64,
    /// Base RTT `T`; `None`: the QP's first RTT sample.
    pub base_rtt: Option<SimTime>,
    /// Set the rate on every ACK, committing once per RTT.
    pub fast_react: bool,
}

impl HpccParams {
    /// The paper's evaluation settings: eta 95 %, maxStage 5, `W_AI` 80 B,
    /// here as a rate (80 B per base RTT of about 13 us at 100 Gb/s: 50 Mb/s,
    /// scaled with the line rate), the minimum rate of HPCC's `RdmaHw`
    /// (100 Mb/s), and fast reaction on.
    pub fn defaults(line_rate_bps: u64) -> HpccParams {
        HpccParams {
            eta: 0.95,
            max_stage: 5,
            rate_ai_bps: (line_rate_bps / 2000).max(1),
            min_rate_bps: 100_000_000,
            base_rtt: None,
            fast_react: true,
        }
    }
}

/// One QP's HPCC state.
#[derive(Debug, Clone)]
pub struct Hpcc {
    p: HpccParams,
    line_bps: u64,
    /// Current and reference rates, bit/s.
    rate: f64,
    reference: f64,
    stage: u32,
    /// The utilisation estimate `U`.
    u: f64,
    /// Packets sent so far (the sender's next PSN, for the once-per-RTT commit).
    sent: u64,
    /// The commit happens on an ACK expecting a PSN beyond this.
    last_update: u64,
    /// The previous stamps, per hop.
    hops: Vec<IntHop>,
    base_rtt: Option<SimTime>,
    cuts: u64,
}

impl Hpcc {
    pub fn new(p: HpccParams, line_bps: u64) -> Hpcc {
        Hpcc {
            p,
            line_bps,
            rate: line_bps as f64,
            reference: line_bps as f64,
            stage: 0,
            u: 0.0,
            sent: 0,
            last_update: 0,
            hops: Vec::new(),
            base_rtt: p.base_rtt,
            cuts: 0,
        }
    }

    /// The most utilised hop's `u` and the time its stamps span, against the
    /// previous stamps; the stamps are kept for the next ACK.
    fn measure(&mut self, int: &[IntHop], t: f64) -> Option<(f64, f64)> {
        let mut best: Option<(f64, f64)> = None;
        for (i, h) in int.iter().enumerate() {
            if let Some(prev) = self.hops.get(i) {
                let dt = h.timestamp.0.saturating_sub(prev.timestamp.0) as f64 * 1e-12;
                if dt > 0.0 && h.link_rate_bps > 0 {
                    let b = h.link_rate_bps as f64;
                    let tx_rate = h.tx_bytes.saturating_sub(prev.tx_bytes) as f64 * 8.0 / dt;
                    let queue = h.queue_bytes.min(prev.queue_bytes) as f64 * 8.0;
                    let u = tx_rate / b + queue / (b * t);
                    if best.is_none_or(|(bu, _)| u > bu) {
                        best = Some((u, dt));
                    }
                }
            }
        }
        self.hops.clear();
        self.hops.extend_from_slice(int);
        best
    }
}

impl RateControl for Hpcc {
    fn on_sent(&mut self, _bytes: u64, _now: SimTime) {
        self.sent += 1;
    }

    fn on_ack(&mut self, fb: &AckFeedback<'_>) {
        if self.base_rtt.is_none() {
            self.base_rtt = fb.rtt.filter(|r| r.0 > 0);
        }
        let (Some(t), false) = (self.base_rtt, fb.int.is_empty()) else { return };
        let commit = fb.expected_psn > self.last_update;
        if self.hops.is_empty() {
            // The first stamps: nothing to compare them with yet.
            self.last_update = self.sent;
            self.hops.extend_from_slice(fb.int);
            return;
        }
        if !commit && !self.p.fast_react {
            return;
        }
        let t_s = t.0 as f64 * 1e-12;
        if let Some((u, dt)) = self.measure(fb.int, t_s) {
            let dt = dt.min(t_s);
            self.u = (self.u * (t_s - dt) + u * dt) / t_s;
            let c = self.u / self.p.eta;
            let ai = self.p.rate_ai_bps as f64;
            let (rate, stage) = if c >= 1.0 || self.stage >= self.p.max_stage {
                (self.reference / c + ai, 0)
            } else {
                (self.reference + ai, self.stage + 1)
            };
            let rate = rate.clamp(self.p.min_rate_bps as f64, self.line_bps as f64);
            self.rate = rate;
            if commit {
                // A committed decrease of the reference rate is a cut.
                self.cuts += (rate < self.reference) as u64;
                self.reference = rate;
                self.stage = stage;
            }
        }
        if commit && self.sent > self.last_update {
            self.last_update = self.sent;
        }
    }

    fn rate_bps(&self) -> u64 {
        (self.rate as u64).max(1)
    }

    fn window_bytes(&self) -> Option<u64> {
        self.base_rtt.map(|t| (self.rate * t.0 as f64 * 1e-12 / 8.0) as u64)
    }

    fn cuts(&self) -> u64 {
        self.cuts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(queue: u64, tx: u64, ps: u64) -> IntHop {
        IntHop { queue_bytes: queue, tx_bytes: tx, timestamp: SimTime(ps), link_rate_bps: 100_000_000_000 }
    }

    fn ack<'a>(psn: u64, int: &'a [IntHop]) -> AckFeedback<'a> {
        AckFeedback {
            trimmed: false,
            now: SimTime::ZERO,
            expected_psn: psn,
            newly_acked: 1,
            nack: false,
            ecn_echo: false,
            rtt: Some(SimTime(10_000_000)),
            int,
            entropy: 0,
        }
    }

    #[test]
    fn a_link_at_full_rate_with_a_queue_cuts_the_rate_by_u_over_eta() {
        // 100G, T = 10 us. Stamps 10 us apart: 125,000 B sent (100 Gb/s) and
        // 62,500 B queued (half a BDP): u = 1 + 0.5 = 1.5, U = u (dt = T).
        let mut h = Hpcc::new(HpccParams::defaults(100_000_000_000), 100_000_000_000);
        for _ in 0..10 {
            h.on_sent(1000, SimTime::ZERO);
        }
        h.on_ack(&ack(1, &[hop(62_500, 0, 0)]));
        assert_eq!(h.rate_bps(), 100_000_000_000, "the first stamps only start the measurement");
        h.on_ack(&ack(11, &[hop(62_500, 125_000, 10_000_000)]));
        let want = 100e9 / (1.5 / 0.95) + 50e6;
        assert!((h.rate - want).abs() < 1.0, "{} vs {want}", h.rate);
        assert_eq!(h.cuts(), 1);
        // The window is one base RTT at the new rate.
        assert_eq!(h.window_bytes(), Some((h.rate * 10e-6 / 8.0) as u64));
    }

    #[test]
    fn an_idle_path_adds_rate_ai_per_rtt_then_adjusts_after_max_stage() {
        // Half the line rate sent, no queue: u = 0.5 < eta, additive increase
        // from the reference rate, committed once per RTT.
        let mut h = Hpcc::new(HpccParams::defaults(100_000_000_000), 100_000_000_000);
        h.reference = 40e9;
        h.rate = 40e9;
        h.on_sent(1000, SimTime::ZERO);
        h.on_ack(&ack(1, &[hop(0, 0, 0)]));
        let mut tx = 0;
        for k in 1..=5u64 {
            h.on_sent(1000, SimTime::ZERO);
            tx += 62_500;
            h.on_ack(&ack(1 + k, &[hop(0, tx, k * 10_000_000)]));
            assert!((h.rate - (40e9 + k as f64 * 50e6)).abs() < 1.0, "step {k}: {}", h.rate);
        }
        // The sixth RTT: max_stage reached, a multiplicative step towards eta.
        h.on_sent(1000, SimTime::ZERO);
        tx += 62_500;
        h.on_ack(&ack(7, &[hop(0, tx, 60_000_000)]));
        assert!(h.rate > 40.25e9 / (0.5 / 0.95) - 1.0 && h.rate <= 100e9, "{}", h.rate);
    }
}
