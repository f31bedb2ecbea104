//! Round-trip time estimation and the retransmission timeout (RFC 6298).
//!
//! SRTT and RTTVAR follow RFC 6298 2.2-2.3. The timeout is RFC 6298's
//! `max(min_rto, SRTT + max(G, 4 RTTVAR))`, or Linux's `SRTT + max(min_rto,
//! 4 RTTVAR)` (`tcp_set_rto`: the minimum bounds the variance term, so the
//! timeout always exceeds SRTT by at least `min_rto`). Linux's estimator also
//! keeps the largest deviation of each round trip; here RTTVAR is RFC 6298's.

use super::config::RtoFormula;
use crate::units::SimTime;

/// Smoothed RTT, RTT variance and the RTO derived from them.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<f64>,
    rttvar: f64,
    min_rtt: Option<SimTime>,
    rto: SimTime,
    min_rto: SimTime,
    max_rto: SimTime,
    granularity: SimTime,
    formula: RtoFormula,
}

impl RttEstimator {
    /// Before the first sample the RTO is `initial` (RFC 6298 (2.1): 1 s).
    pub fn new(initial: SimTime, min_rto: SimTime, max_rto: SimTime, granularity: SimTime) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: 0.0,
            min_rtt: None,
            rto: initial,
            min_rto,
            max_rto,
            granularity,
            formula: RtoFormula::Rfc6298,
        }
    }

    /// The same with another timeout formula.
    pub fn with_formula(mut self, formula: RtoFormula) -> Self {
        self.formula = formula;
        self
    }

    /// Takes one RTT measurement (RFC 6298 (2.2) and (2.3), alpha = 1/8, beta = 1/4).
    pub fn sample(&mut self, rtt: SimTime) {
        let r = rtt.0 as f64;
        let s = match self.srtt {
            None => {
                self.rttvar = r / 2.0;
                r
            }
            Some(s) => {
                // RTTVAR first, from the previous SRTT.
                self.rttvar = 0.75 * self.rttvar + 0.25 * (s - r).abs();
                0.875 * s + 0.125 * r
            }
        };
        self.srtt = Some(s);
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.rto = match self.formula {
            RtoFormula::Rfc6298 => {
                let rto = s + (self.granularity.0 as f64).max(4.0 * self.rttvar);
                // (2.4): round up to the minimum; (2.5): a maximum may be placed.
                SimTime((rto.ceil() as u64).clamp(self.min_rto.0, self.max_rto.0))
            }
            RtoFormula::Linux => {
                let rto = s + (self.min_rto.0 as f64).max(4.0 * self.rttvar);
                SimTime((rto.ceil() as u64).min(self.max_rto.0))
            }
        };
    }

    /// The current RTO with `backoff` doublings (RFC 6298 (5.5)), capped at the maximum.
    pub fn rto(&self, backoff: u32) -> SimTime {
        let shifted = self.rto.0.checked_shl(backoff.min(40)).unwrap_or(u64::MAX);
        SimTime(shifted.min(self.max_rto.0))
    }

    pub fn srtt(&self) -> Option<SimTime> {
        self.srtt.map(|s| SimTime(s as u64))
    }

    pub fn min_rtt(&self) -> Option<SimTime> {
        self.min_rtt
    }

    /// RTTVAR (RFC 6298), `None` before the first sample.
    pub fn rttvar(&self) -> Option<SimTime> {
        self.srtt.map(|_| SimTime(self.rttvar as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est() -> RttEstimator {
        RttEstimator::new(SimTime::from_secs(1), SimTime::from_ms(200), SimTime::from_secs(120), SimTime::from_ms(1))
    }

    #[test]
    fn initial_rto_is_one_second_and_backs_off_to_the_cap() {
        let e = est();
        assert_eq!(e.rto(0), SimTime::from_secs(1));
        assert_eq!(e.rto(3), SimTime::from_secs(8));
        assert_eq!(e.rto(10), SimTime::from_secs(120));
    }

    #[test]
    fn small_rtts_are_floored_at_the_minimum_rto() {
        let mut e = est();
        for _ in 0..20 {
            e.sample(SimTime::from_us(100));
        }
        assert_eq!(e.rto(0), SimTime::from_ms(200));
        assert_eq!(e.srtt(), Some(SimTime::from_us(100)));
    }

    #[test]
    fn linux_rto_adds_the_minimum_to_srtt() {
        let mut e = est().with_formula(RtoFormula::Linux);
        for _ in 0..50 {
            e.sample(SimTime::from_ms(50));
        }
        // RTTVAR has decayed below 50 ms: RTO = 50 + 200 ms (RFC 6298: 200 ms).
        assert_eq!(e.rto(0), SimTime::from_ms(250));
        let mut e = est();
        for _ in 0..50 {
            e.sample(SimTime::from_ms(50));
        }
        assert_eq!(e.rto(0), SimTime::from_ms(200));
    }

    #[test]
    fn first_sample_sets_srtt_and_half_variance() {
        let mut e = RttEstimator::new(SimTime::from_secs(1), SimTime(0), SimTime::from_secs(120), SimTime(0));
        e.sample(SimTime::from_ms(100));
        // RTO = SRTT + 4 * RTTVAR = 100 + 4 * 50 ms.
        assert_eq!(e.rto(0), SimTime::from_ms(300));
        e.sample(SimTime::from_ms(100));
        // RTTVAR = 0.75 * 50 = 37.5 ms; RTO = 100 + 150 ms.
        assert_eq!(e.rto(0), SimTime::from_ms(250));
    }
}
