//! NewReno window growth (RFC 5681 section 3.1).
//!
//! Slow start adds `min(acked, SMSS)` per ACK; congestion avoidance adds
//! `SMSS * SMSS / cwnd` per ACK (RFC 5681 equation 3, as in ns-3). With
//! `byte_counting` (RFC 3465, closer to Linux) slow start adds up to 2 SMSS per
//! ACK and congestion avoidance adds one SMSS per cwnd of acknowledged bytes, so
//! delayed ACKs do not slow growth down.

use super::{AckInfo, CongestionOps, LossInfo, Window};

#[derive(Clone, Debug)]
pub struct NewReno {
    byte_counting: bool,
    /// Bytes acknowledged since the last congestion-avoidance increase.
    acc: u64,
}

impl NewReno {
    pub fn new(byte_counting: bool) -> Self {
        NewReno { byte_counting, acc: 0 }
    }

    pub fn increase(&mut self, w: &mut Window, info: &AckInfo) {
        reno_increase(w, info.acked, self.byte_counting, &mut self.acc);
    }
}

/// Shared Reno-style growth, also used by DCTCP.
pub fn reno_increase(w: &mut Window, acked: u64, byte_counting: bool, acc: &mut u64) {
    if w.in_slow_start() {
        let limit = if byte_counting { 2 * w.mss } else { w.mss };
        w.cwnd += acked.min(limit);
    } else if byte_counting {
        *acc += acked;
        if *acc >= w.cwnd {
            *acc -= w.cwnd;
            w.cwnd += w.mss;
        }
    } else {
        w.cwnd += (w.mss * w.mss / w.cwnd.max(1)).max(1);
    }
}

/// `ssthresh = max(FlightSize / 2, 2 * SMSS)` (RFC 5681 equation 4).
pub fn half_flight(w: &Window, flight: u64) -> u64 {
    (flight / 2).max(2 * w.mss)
}

impl CongestionOps for NewReno {
    fn name(&self) -> &str {
        "newreno"
    }

    #[inline(always)]
    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo) {
        self.increase(w, ack);
    }

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

    fn info(acked: u64) -> AckInfo {
        AckInfo {
            now: SimTime::ZERO,
            acked,
            ack: 0,
            snd_nxt: 0,
            ece: false,
            srtt: None,
            min_rtt: None,
            rtt_sample: None,
            flight: 0,
            state: crate::transport::tcp::cc::CcState::Open,
        }
    }

    #[test]
    fn slow_start_adds_one_segment_per_ack() {
        let mut w = Window { cwnd: 10 * 1448, ssthresh: u64::MAX, mss: 1448 };
        let mut c = NewReno::new(false);
        c.increase(&mut w, &info(2 * 1448)); // a delayed ACK covering two segments
        assert_eq!(w.cwnd, 11 * 1448);
        let mut c = NewReno::new(true);
        c.increase(&mut w, &info(2 * 1448));
        assert_eq!(w.cwnd, 13 * 1448);
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_window() {
        let mss = 1000;
        let mut w = Window { cwnd: 10 * mss, ssthresh: 5 * mss, mss };
        let mut c = NewReno::new(false);
        for _ in 0..10 {
            c.increase(&mut w, &info(mss));
        }
        // SMSS * SMSS / cwnd per ACK in whole bytes (100, 99, 98, ... as cwnd
        // grows): 956 bytes over the window's 10 ACKs.
        assert_eq!(w.cwnd, 10 * mss + 956);
        let mut w = Window { cwnd: 10 * mss, ssthresh: 5 * mss, mss };
        let mut c = NewReno::new(true);
        for _ in 0..10 {
            c.increase(&mut w, &info(mss));
        }
        assert_eq!(w.cwnd, 11 * mss);
    }

    #[test]
    fn ssthresh_is_half_the_flight_but_at_least_two_segments() {
        let w = Window { cwnd: 0, ssthresh: 0, mss: 1000 };
        assert_eq!(half_flight(&w, 100_000), 50_000);
        assert_eq!(half_flight(&w, 1_000), 2_000);
    }
}
