//! RACK-TLP (RFC 8985): time-based loss detection and tail loss probes.
//!
//! RACK remembers the most recently sent segment that has been delivered
//! (`RACK.xmit_ts`, `RACK.end_seq`) and an RTT sample (`RACK.rtt`): that
//! segment's in RFC 8985, the last delivered one in Linux's ACK order with
//! `rack_rtt_in_ack_order` (`scoreboard::Deliveries` chooses it).
//! A segment sent before it is lost once `RACK.rtt + RACK.reo_wnd` has passed
//! since the segment was sent (section 6.2). The reordering window is zero
//! in recovery or once `DupThresh` segments are SACKed, as long as no
//! reordering has been seen, and `min_RTT / 4` (times a multiplier that D-SACKs
//! raise, capped at SRTT) otherwise (step 4). A segment not yet due arms the
//! reordering timer (6.3). The walk itself is `Scoreboard::rack_detect`.
//!
//! TLP (section 7): with data outstanding and no recovery under way, a probe
//! timeout `PTO = 2 SRTT` (plus the worst-case delayed-ACK time when only one
//! segment is in flight, and never later than the RTO) sends one new segment
//! or, with none to send, retransmits the last one, so that a loss at the tail
//! of a window is repaired by fast recovery instead of a timeout.

use super::scoreboard::Delivered;
use crate::units::SimTime;

/// RACK state (RFC 8985 6.1).
#[derive(Clone, Debug)]
pub struct Rack {
    pub xmit: SimTime,
    pub end: u64,
    pub rtt: SimTime,
    /// Whether any delivery has been recorded.
    pub valid: bool,
    reo_wnd_mult: u32,
    reo_wnd_persist: u32,
    /// No further multiplier increase until SND.UNA passes this.
    dsack_round: Option<u64>,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            xmit: SimTime::ZERO,
            end: 0,
            rtt: SimTime::ZERO,
            valid: false,
            reo_wnd_mult: 1,
            reo_wnd_persist: 0,
            dsack_round: None,
        }
    }
}

impl Rack {
    /// Step 2: an ACK delivered segments, `latest` the most recently sent of
    /// them and `rtt_from` the one whose RTT is kept (see
    /// [`Deliveries`](super::scoreboard::Deliveries): the same segment in the
    /// RFC's order, possibly an older one in Linux's).
    pub fn on_delivered(&mut self, latest: Delivered, rtt_from: Delivered, now: SimTime) {
        self.rtt = now.saturating_sub(rtt_from.xmit);
        if !self.valid || super::scoreboard::sent_after(latest.xmit, latest.end, self.xmit, self.end) {
            self.xmit = latest.xmit;
            self.end = latest.end;
        }
        self.valid = true;
    }

    /// Step 3: a D-SACK widens the reordering window, at most once per round trip.
    pub fn on_dsack(&mut self, snd_una: u64, snd_max: u64) {
        if self.dsack_round.map_or(true, |r| snd_una >= r) {
            self.dsack_round = Some(snd_max);
            self.reo_wnd_mult = (self.reo_wnd_mult + 1).min(255);
            self.reo_wnd_persist = 16;
        }
    }

    /// Step 3: after 16 recoveries without D-SACK the multiplier returns to 1.
    pub fn on_recovery_end(&mut self) {
        if self.reo_wnd_persist > 0 {
            self.reo_wnd_persist -= 1;
            if self.reo_wnd_persist == 0 {
                self.reo_wnd_mult = 1;
            }
        }
    }

    /// Step 4: the reordering window.
    pub fn reo_wnd(
        &self,
        reordering_seen: bool,
        in_recovery: bool,
        sacked_segments: u64,
        dupthresh: u32,
        min_rtt: Option<SimTime>,
        srtt: Option<SimTime>,
    ) -> SimTime {
        if !reordering_seen && (in_recovery || sacked_segments >= dupthresh as u64) {
            return SimTime::ZERO;
        }
        let w = SimTime(min_rtt.map_or(0, |m| m.0 / 4) * self.reo_wnd_mult as u64);
        srtt.map_or(w, |s| w.min(s))
    }
}

/// TLP state (RFC 8985 7.1).
#[derive(Clone, Debug, Default)]
pub struct Tlp {
    /// `TLP.end_seq`: SND.NXT when the outstanding probe was sent.
    pub end_seq: Option<u64>,
    /// The probe retransmitted `[probe_start, end_seq)` rather than sending new data.
    pub is_retrans: bool,
    pub probe_start: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(xmit_us: u64, end: u64, retransmitted: bool) -> Delivered {
        Delivered { xmit: SimTime::from_us(xmit_us), end, retransmitted }
    }

    #[test]
    fn rack_keeps_the_most_recently_sent_delivery_and_the_rtt_it_is_given() {
        let mut r = Rack::default();
        r.on_delivered(d(10, 5000, false), d(10, 5000, false), SimTime::from_us(60));
        r.on_delivered(d(5, 9000, false), d(5, 9000, false), SimTime::from_us(70));
        assert_eq!((r.xmit, r.end, r.rtt), (SimTime::from_us(10), 5000, SimTime::from_us(65)));
    }

    #[test]
    fn reordering_window_is_zero_after_dupthresh_sacks_until_reordering_is_seen() {
        let r = Rack::default();
        let (min, srtt) = (Some(SimTime::from_us(100)), Some(SimTime::from_us(120)));
        assert_eq!(r.reo_wnd(false, false, 3, 3, min, srtt), SimTime::ZERO);
        assert_eq!(r.reo_wnd(false, true, 1, 3, min, srtt), SimTime::ZERO);
        assert_eq!(r.reo_wnd(false, false, 1, 3, min, srtt), SimTime::from_us(25));
        assert_eq!(r.reo_wnd(true, true, 5, 3, min, srtt), SimTime::from_us(25));
    }

    #[test]
    fn dsacks_widen_the_window_once_per_round_up_to_srtt() {
        let mut r = Rack::default();
        let (min, srtt) = (Some(SimTime::from_us(100)), Some(SimTime::from_us(120)));
        r.on_dsack(0, 1000);
        r.on_dsack(500, 1000); // same round
        assert_eq!(r.reo_wnd(true, false, 0, 3, min, srtt), SimTime::from_us(50));
        for k in 0..10 {
            r.on_dsack(1000 * (k + 1), 1000 * (k + 2));
        }
        assert_eq!(r.reo_wnd(true, false, 0, 3, min, srtt), SimTime::from_us(120), "capped at SRTT");
        for _ in 0..16 {
            r.on_recovery_end();
        }
        assert_eq!(r.reo_wnd(true, false, 0, 3, min, srtt), SimTime::from_us(25));
    }
}
