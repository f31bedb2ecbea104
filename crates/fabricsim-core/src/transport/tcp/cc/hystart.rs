//! Leaving slow start before the queue overflows: Linux's classic HyStart and
//! HyStart++ (RFC 9406).
//!
//! **Classic HyStart** (`hystart_update` in Linux's `tcp_cubic.c`, used by
//! CUBIC only) watches each round trip of slow start once cwnd reaches 16
//! segments and sets `ssthresh = cwnd` when either
//! - *ACK train*: ACKs keep arriving at most 2 ms apart for longer than half
//!   of (minimum RTT + a cushion for TSO/GRO batching) since the round began
//!   (the cushion is `min(1 ms, 4 x 64 KB / pacing rate)` with Linux's
//!   slow-start pacing rate `2 cwnd MSS / SRTT`); or
//! - *delay*: the smallest of the round's first 8 RTT samples exceeds the
//!   minimum RTT by `clamp(min RTT / 8, 4 ms, 16 ms)`.
//!
//! **HyStart++** (RFC 9406 4) works with any controller: a round's minimum RTT
//! (after at least 8 samples) exceeding the previous round's by
//! `clamp(previous / 8, 4 ms, 16 ms)` ends standard slow start and starts
//! Conservative Slow Start, which grows a quarter as fast; an RTT back below
//! the baseline returns to slow start, and after 5 rounds of CSS the sender
//! enters congestion avoidance (`ssthresh = cwnd`). Growth per ACK is capped at
//! `L = 8` segments when not paced. A loss ends HyStart++ (it applies to the
//! initial slow start only).

use super::{AckInfo, Window};
use crate::units::SimTime;

/// Why slow start ended (first time only), for the flows table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlowStartExit {
    Loss,
    Ecn,
    Timeout,
    /// Classic HyStart, ACK-train detection.
    AckTrain,
    /// Classic HyStart, delay-increase detection.
    Delay,
    /// HyStart++ left standard slow start for CSS.
    HystartPlusPlus,
}

impl SlowStartExit {
    pub const LABELS: [&'static str; 7] =
        ["", "loss", "ecn", "timeout", "hystart_ack_train", "hystart_delay", "hystart++"];

    /// Index into [`SlowStartExit::LABELS`].
    pub fn code(self) -> u32 {
        match self {
            SlowStartExit::Loss => 1,
            SlowStartExit::Ecn => 2,
            SlowStartExit::Timeout => 3,
            SlowStartExit::AckTrain => 4,
            SlowStartExit::Delay => 5,
            SlowStartExit::HystartPlusPlus => 6,
        }
    }
}

const LOW_WINDOW: u64 = 16;
const ACK_DELTA: SimTime = SimTime::from_ms(2);
const MIN_SAMPLES: u32 = 8;
const DELAY_MIN: SimTime = SimTime::from_ms(4);
const DELAY_MAX: SimTime = SimTime::from_ms(16);
/// Linux's default `sk_gso_max_size` (`GSO_LEGACY_MAX_SIZE`).
const GSO_MAX_BYTES: u64 = 65_536;

fn clamp_thresh(t: SimTime) -> SimTime {
    t.clamp(DELAY_MIN, DELAY_MAX)
}

/// Linux's HyStart state (`struct bictcp` round fields).
#[derive(Clone, Debug, Default)]
pub struct ClassicHystart {
    found: bool,
    round_start: SimTime,
    last_ack: SimTime,
    end_seq: Option<u64>,
    curr_rtt: Option<SimTime>,
    sample_cnt: u32,
    /// Set when an exit is detected: the reason.
    pub exit: Option<SlowStartExit>,
}

impl ClassicHystart {
    /// One delay sample in slow start; returns the new ssthresh on an exit.
    pub fn on_delay(&mut self, w: &Window, info: &AckInfo, delay: SimTime, delay_min: SimTime) -> Option<u64> {
        if self.found {
            return None;
        }
        let now = info.now;
        if self.end_seq.map_or(true, |e| info.ack > e) {
            // bictcp_hystart_reset: a new round.
            self.round_start = now;
            self.last_ack = now;
            self.end_seq = Some(info.snd_nxt);
            self.curr_rtt = None;
            self.sample_cnt = 0;
        }
        if w.cwnd / w.mss < LOW_WINDOW {
            return None;
        }
        if now - self.last_ack <= ACK_DELTA {
            self.last_ack = now;
            let threshold = (delay_min + ack_delay(w, info.srtt)).0 / 2;
            if now.0 - self.round_start.0 > threshold {
                self.found = true;
                self.exit = Some(SlowStartExit::AckTrain);
            }
        }
        self.curr_rtt = Some(self.curr_rtt.map_or(delay, |c| c.min(delay)));
        if self.sample_cnt < MIN_SAMPLES {
            self.sample_cnt += 1;
        } else if self.curr_rtt.unwrap() > delay_min + clamp_thresh(SimTime(delay_min.0 / 8)) {
            self.found = true;
            self.exit = self.exit.or(Some(SlowStartExit::Delay));
        }
        self.found.then_some(w.cwnd)
    }
}

/// `hystart_ack_delay`: the TSO/GRO cushion, `min(1 ms, 4 GSO / rate)` with
/// the slow-start pacing rate `2 cwnd / SRTT`.
fn ack_delay(w: &Window, srtt: Option<SimTime>) -> SimTime {
    let Some(srtt) = srtt else { return SimTime::ZERO };
    if w.cwnd == 0 {
        return SimTime::ZERO;
    }
    // 4 GSO bytes at 2 cwnd bytes per SRTT.
    let ps = (4 * GSO_MAX_BYTES) as u128 * srtt.0 as u128 / (2 * w.cwnd) as u128;
    SimTime((ps as u64).min(SimTime::from_ms(1).0))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    SlowStart,
    Css,
    Done,
}

/// HyStart++ (RFC 9406 4.2).
#[derive(Clone, Debug)]
pub struct HystartPlusPlus {
    phase: Phase,
    window_end: Option<u64>,
    last_round_min_rtt: Option<SimTime>,
    current_round_min_rtt: Option<SimTime>,
    rtt_sample_count: u32,
    css_baseline_min_rtt: Option<SimTime>,
    css_rounds: u32,
    /// `L` in segments; `None` (infinity) when paced.
    limit: Option<u64>,
    /// Set when standard slow start ends (CSS begins) for the first time.
    pub exit: Option<SlowStartExit>,
}

const N_RTT_SAMPLE: u32 = 8;
const CSS_GROWTH_DIVISOR: u64 = 4;
const CSS_ROUNDS: u32 = 5;

impl HystartPlusPlus {
    pub fn new(paced: bool) -> Self {
        HystartPlusPlus {
            phase: Phase::SlowStart,
            window_end: None,
            last_round_min_rtt: None,
            current_round_min_rtt: None,
            rtt_sample_count: 0,
            css_baseline_min_rtt: None,
            css_rounds: 0,
            limit: if paced { None } else { Some(8) },
            exit: None,
        }
    }

    pub fn in_css(&self) -> bool {
        self.phase == Phase::Css
    }

    /// A loss or ECN echo: HyStart++ is over (RFC 9406 4.2, last step).
    pub fn on_congestion(&mut self) {
        self.phase = Phase::Done;
    }

    /// An ACK of new data in slow start. Returns whether HyStart++ handled the
    /// window (otherwise the controller grows it). `grow` is false when the
    /// window may not grow (it does not limit the flight).
    pub fn on_ack(&mut self, w: &mut Window, info: &AckInfo, grow: bool) -> bool {
        if self.phase == Phase::Done || !w.in_slow_start() {
            return false;
        }
        if self.window_end.map_or(true, |e| info.ack >= e) {
            // A new round.
            if self.window_end.is_some() {
                self.last_round_min_rtt = self.current_round_min_rtt;
                if self.phase == Phase::Css {
                    self.css_rounds += 1;
                    if self.css_rounds >= CSS_ROUNDS {
                        w.ssthresh = w.cwnd;
                        self.phase = Phase::Done;
                        return false;
                    }
                }
            }
            self.current_round_min_rtt = None;
            self.rtt_sample_count = 0;
            self.window_end = Some(info.snd_nxt);
        }
        if let Some(r) = info.rtt_sample {
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(r, |c| c.min(r)));
            self.rtt_sample_count += 1;
        }
        let inc = self.limit.map_or(info.acked, |l| info.acked.min(l * w.mss));
        match self.phase {
            Phase::SlowStart => {
                if grow {
                    w.cwnd += inc;
                }
                if let (true, Some(cur), Some(last)) =
                    (self.rtt_sample_count >= N_RTT_SAMPLE, self.current_round_min_rtt, self.last_round_min_rtt)
                {
                    if cur >= last + clamp_thresh(SimTime(last.0 / 8)) {
                        self.css_baseline_min_rtt = Some(cur);
                        self.phase = Phase::Css;
                        self.css_rounds = 0;
                        self.exit = self.exit.or(Some(SlowStartExit::HystartPlusPlus));
                    }
                }
            }
            Phase::Css => {
                if grow {
                    w.cwnd += inc / CSS_GROWTH_DIVISOR;
                }
                if let (true, Some(cur), Some(base)) =
                    (self.rtt_sample_count >= N_RTT_SAMPLE, self.current_round_min_rtt, self.css_baseline_min_rtt)
                {
                    if cur < base {
                        // The RTT increase was spurious: back to slow start.
                        self.css_baseline_min_rtt = None;
                        self.phase = Phase::SlowStart;
                    }
                }
            }
            Phase::Done => unreachable!(),
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ack(now: SimTime, ack: u64, snd_nxt: u64, rtt: SimTime) -> AckInfo {
        AckInfo {
            now,
            acked: MSS,
            ack,
            snd_nxt,
            ece: false,
            srtt: Some(rtt),
            min_rtt: Some(SimTime::from_ms(50)),
            rtt_sample: Some(rtt),
            flight: 0,
            state: crate::transport::tcp::cc::CcState::Open,
        }
    }

    /// Runs slow start round by round with one ACK per segment, the RTT of
    /// round `r` given by `rtt(r)`; returns the window after `rounds` rounds.
    fn rounds(h: &mut HystartPlusPlus, w: &mut Window, n: usize, rtt: impl Fn(usize) -> SimTime) {
        let mut now = SimTime::ZERO;
        let mut acked = 0;
        for r in 0..n {
            let snd_nxt = acked + w.cwnd;
            let segs = w.cwnd / MSS;
            for _ in 0..segs {
                acked += MSS;
                if !h.on_ack(w, &ack(now, acked, snd_nxt, rtt(r)), true) {
                    w.cwnd += MSS; // the controller's congestion avoidance (stand-in)
                }
            }
            now += rtt(r);
        }
    }

    #[test]
    fn hystart_plus_plus_exits_slow_start_on_rtt_increase() {
        let mut h = HystartPlusPlus::new(false);
        let mut w = Window { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS };
        // 50 ms for 5 rounds, then 57 ms: above 50 + max(4, 50/8 = 6.25) ms.
        rounds(&mut h, &mut w, 6, |r| SimTime::from_ms(if r < 5 { 50 } else { 57 }));
        assert_eq!(h.exit, Some(SlowStartExit::HystartPlusPlus));
        assert!(h.in_css());
        assert_eq!(w.ssthresh, u64::MAX, "CSS is still slow start");
    }

    #[test]
    fn an_rtt_rise_below_the_threshold_keeps_standard_slow_start() {
        let mut h = HystartPlusPlus::new(false);
        let mut w = Window { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS };
        rounds(&mut h, &mut w, 6, |r| SimTime::from_ms(if r < 5 { 50 } else { 56 }));
        assert_eq!(h.exit, None);
        assert_eq!(w.cwnd, 640 * MSS, "doubling every round");
    }

    #[test]
    fn conservative_slow_start_grows_a_quarter_as_fast_then_enters_congestion_avoidance() {
        let mut h = HystartPlusPlus::new(false);
        let mut w = Window { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS };
        rounds(&mut h, &mut w, 6, |r| SimTime::from_ms(if r < 5 { 50 } else { 60 }));
        let at_exit = w.cwnd;
        // One more round in CSS: +25%.
        rounds(&mut h, &mut w, 1, |_| SimTime::from_ms(60));
        assert!(h.in_css());
        assert_eq!(w.cwnd, at_exit + at_exit / 4);
        rounds(&mut h, &mut w, 5, |_| SimTime::from_ms(60));
        assert!(!h.in_css());
        assert!(w.ssthresh < u64::MAX, "after CSS_ROUNDS rounds ssthresh = cwnd");
    }

    #[test]
    fn classic_hystart_delay_detection_sets_ssthresh_to_cwnd() {
        let mut h = ClassicHystart::default();
        let w = Window { cwnd: 32 * MSS, ssthresh: u64::MAX, mss: MSS };
        let min = SimTime::from_ms(40);
        // ACKs 5 ms apart (no ACK train); delays 40 + 6 ms > 40 + max(4, 5) ms.
        let mut found = None;
        for k in 0..10u64 {
            let i = ack(SimTime::from_ms(5 * k), 1000 * (k + 1), 100_000, SimTime::from_ms(46));
            found = found.or(h.on_delay(&w, &i, SimTime::from_ms(46), min));
        }
        assert_eq!(found, Some(32 * MSS));
        assert_eq!(h.exit, Some(SlowStartExit::Delay));
    }

    #[test]
    fn classic_hystart_ack_train_spanning_half_the_min_rtt_exits() {
        let mut h = ClassicHystart::default();
        let w = Window { cwnd: 64 * MSS, ssthresh: u64::MAX, mss: MSS };
        let min = SimTime::from_ms(20);
        // ACKs every 100 us with no delay increase: after 10 ms + cushion/2 of train.
        let mut exit_at = None;
        for k in 0..200u64 {
            let now = SimTime::from_us(100 * k);
            let mut i = ack(now, 1000 * (k + 1), 10_000_000, min);
            i.srtt = Some(min);
            if h.on_delay(&w, &i, min, min).is_some() {
                exit_at = Some(now);
                break;
            }
        }
        // Cushion: 4 x 64 KB at 2 x 64 KB per 20 ms = 40 ms, capped at 1 ms.
        assert_eq!(h.exit, Some(SlowStartExit::AckTrain));
        assert_eq!(exit_at, Some(SimTime::from_us(10_600)), "first ACK past (20 + 1) / 2 ms");
    }
}
