//! DCTCP (RFC 8257).
//!
//! The sender keeps `alpha`, a moving estimate of the fraction of bytes that
//! met congestion: once per window of data, `alpha <- (1 - g) alpha + g F`,
//! where `F` is the fraction of acknowledged bytes whose ACK carried ECN-Echo.
//! On an ECN-Echo it cuts the window once per window of data to
//! `cwnd (1 - alpha / 2)`. Growth and loss handling are Reno's. `g` defaults to
//! 1/16 and alpha starts at 1, as in Linux.

use super::newreno::{half_flight, reno_increase};
use super::{AckInfo, CongestionOps, LossInfo, Window};

#[derive(Clone, Debug)]
pub struct Dctcp {
    g: f64,
    alpha: f64,
    byte_counting: bool,
    acc: u64,
    /// End of the current observation window (a sequence number).
    window_end: Option<u64>,
    bytes_acked: u64,
    bytes_marked: u64,
    /// No further ECN cut until the cumulative ACK passes this.
    cut_until: Option<u64>,
}

impl Dctcp {
    pub fn new(byte_counting: bool, g: f64) -> Self {
        Dctcp {
            g,
            alpha: 1.0,
            byte_counting,
            acc: 0,
            window_end: None,
            bytes_acked: 0,
            bytes_marked: 0,
            cut_until: None,
        }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Marked-fraction bookkeeping (RFC 8257 3.3) and the once-per-window cut.
    pub fn observe(&mut self, w: &mut Window, info: &AckInfo) -> bool {
        self.bytes_acked += info.acked;
        if info.ece {
            self.bytes_marked += info.acked;
        }
        match self.window_end {
            None => self.window_end = Some(info.snd_nxt),
            Some(end) if info.ack >= end => {
                let f = if self.bytes_acked > 0 { self.bytes_marked as f64 / self.bytes_acked as f64 } else { 0.0 };
                self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
                self.bytes_acked = 0;
                self.bytes_marked = 0;
                self.window_end = Some(info.snd_nxt);
            }
            _ => {}
        }
        if info.ece && self.cut_until.map_or(true, |c| info.ack > c) {
            let cut = (w.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64;
            w.ssthresh = cut.max(2 * w.mss);
            w.cwnd = w.ssthresh;
            self.cut_until = Some(info.snd_nxt);
            return true;
        }
        false
    }

    pub fn increase(&mut self, w: &mut Window, info: &AckInfo) {
        reno_increase(w, info.acked, self.byte_counting, &mut self.acc);
    }
}

impl CongestionOps for Dctcp {
    fn name(&self) -> &str {
        "dctcp"
    }

    #[inline(always)]
    fn handles_ecn(&self) -> bool {
        true
    }

    #[inline(always)]
    fn on_ecn(&mut self, w: &mut Window, ack: &AckInfo) -> bool {
        self.observe(w, ack)
    }

    #[inline(always)]
    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo) {
        self.increase(w, ack);
    }

    /// Loss handling is Reno's (RFC 8257 3.5).
    #[inline(always)]
    fn ssthresh(&mut self, w: &Window, loss: &LossInfo) -> u64 {
        half_flight(w, loss.flight)
    }

    fn clone_box(&self) -> Box<dyn CongestionOps> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::SimTime;

    fn ack(ack: u64, acked: u64, snd_nxt: u64, ece: bool) -> AckInfo {
        AckInfo {
            now: SimTime::ZERO,
            acked,
            ack,
            snd_nxt,
            ece,
            srtt: None,
            min_rtt: None,
            rtt_sample: None,
            flight: 0,
            state: crate::transport::tcp::cc::CcState::Open,
        }
    }

    #[test]
    fn alpha_converges_to_the_marked_fraction() {
        let mut d = Dctcp::new(false, 1.0 / 16.0);
        let mut w = Window { cwnd: 100_000, ssthresh: 0, mss: 1000 };
        let mut seq = 0;
        // Windows of 10 ACKs, 3 of them marked: F = 0.3.
        d.observe(&mut w, &ack(0, 0, 10_000, false));
        for _ in 0..400 {
            for i in 0..10 {
                seq += 1000;
                w.cwnd = 100_000;
                d.observe(&mut w, &ack(seq, 1000, seq + 10_000, i < 3));
            }
        }
        assert!((d.alpha() - 0.3).abs() < 0.02, "alpha {}", d.alpha());
    }

    #[test]
    fn one_cut_per_window() {
        let mut d = Dctcp::new(false, 1.0 / 16.0);
        let mut w = Window { cwnd: 100_000, ssthresh: u64::MAX, mss: 1000 };
        // alpha starts at 1: the first echo halves the window.
        assert!(d.observe(&mut w, &ack(1000, 1000, 50_000, true)));
        assert_eq!(w.cwnd, 50_000);
        // Further echoes inside the same window do not cut again.
        assert!(!d.observe(&mut w, &ack(2000, 1000, 51_000, true)));
        assert_eq!(w.cwnd, 50_000);
        // After the window passes, the next echo cuts again.
        assert!(d.observe(&mut w, &ack(50_001, 1000, 100_000, true)));
        assert!(w.cwnd < 50_000);
    }
}
