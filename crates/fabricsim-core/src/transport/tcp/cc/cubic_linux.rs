//! CUBIC as Linux runs it (`net/ipv4/tcp_cubic.c`): RFC 9438's curve with
//! Linux's constants and integer segment counting.
//!
//! - `C = 410/1024` (`bic_scale = 41`), `beta = 717/1024`, fast convergence:
//!   on a loss `W_max = cwnd (1 + beta) / 2` if cwnd is below the previous
//!   `W_max`, else cwnd; `ssthresh = max(cwnd beta, 2)` segments.
//! - Each ACK in congestion avoidance computes `target = W_max + C (t - K)^3`
//!   (or `cwnd + C t^3` above `W_max`) with `t` the time since the epoch began
//!   plus the minimum RTT, and grows cwnd by one segment every `cnt` ACKed
//!   segments, `cnt = cwnd / (target - cwnd)` (`100 cwnd` when at or above
//!   the target), at most 1.5x per RTT (`cnt >= 2`), at least 5% per RTT
//!   while no loss has set `W_max` (`cnt <= 20`), and no slower than Reno
//!   (the TCP-friendly estimate grows by one segment per `cwnd * 15 / 8`
//!   ACKed segments, Linux's integer form of `3 (1 - beta) / (1 + beta)`).
//! - Slow start adds the ACKed segments up to ssthresh (`tcp_slow_start`); the
//!   remainder goes to congestion avoidance.
//! - Delay samples set the minimum RTT, except within 1 s of an epoch start
//!   (after a reduction); classic HyStart (`hystart.rs`) uses them in slow
//!   start.
//! - A retransmission timeout resets everything (`bictcp_reset`): `W_max = 0`.
//!
//! - **Jiffies** (`hz` > 0, Linux's `CONFIG_HZ`): Linux keeps CUBIC's time in
//!   jiffies (`tcp_jiffies32`). `bictcp_update` recomputes `cnt` at most once
//!   per jiffy (later ACKs in the same jiffy only run the TCP-friendly step),
//!   and not at all while cwnd is unchanged and no more than `HZ / 32`
//!   jiffies have passed since the last time (`hold_hz32`, Linux's rule:
//!   the lab's 6.18.44 kernel compares `jiffies - last_time` with the
//!   constant 7 at `HZ` 250 in its compiled `cubictcp_cong_avoid`); without
//!   `hold_hz32`, no more than `min(HZ / 32, delay_min in jiffies)` (a change
//!   proposed for Linux in 2024 to keep one update per RTT on short paths,
//!   which that kernel does not run). After a hold the TCP-friendly estimate
//!   is several segments ahead, `cnt` falls to its floor of 2, and for the
//!   rest of that jiffy the window grows 1.5x per RTT: steps, not a slope; `t`
//!   is whole jiffies since the epoch plus `delay_min` rounded up to whole
//!   jiffies (`usecs_to_jiffies`), and the 1 s guard on delay
//!   samples after an epoch start is in jiffies too. On a path whose RTT is
//!   below a jiffy (4 ms at `HZ` 250) a `cnt` then holds for several RTTs,
//!   which makes the increase burstier than the exact curve. `hz` 0: exact
//!   time, the curve as RFC 9438 writes it.
//!
//! Linux computes `K` with a table-based cube root; here it is exact.

use super::hystart::ClassicHystart;
use super::{AckInfo, CongestionOps, LossInfo, SlowStartExit, Window};
use crate::units::SimTime;

const BETA_SCALE: u64 = 1024;
const BETA: u64 = 717;
const C: f64 = 410.0 / 1024.0;
/// `8 (1024 + 717) / 3 / (1024 - 717)` in integers, as Linux computes it.
const BETA_SCALE_FRIENDLY: u64 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);

#[derive(Clone, Debug, Default)]
pub struct LinuxCubic {
    /// ACKed segments per one-segment increase.
    cnt: u64,
    last_max_cwnd: u64,
    epoch_start: Option<SimTime>,
    /// ACKed segments counted for the TCP-friendly estimate.
    ack_cnt: u64,
    /// TCP-friendly window estimate (segments).
    tcp_cwnd: u64,
    /// Seconds from the epoch start until the curve reaches its origin.
    k: f64,
    origin: u64,
    delay_min: Option<SimTime>,
    /// `snd_cwnd_cnt` of `tcp_cong_avoid_ai`.
    cwnd_cnt: u64,
    pub hystart: Option<ClassicHystart>,
    /// Jiffies per second (`CONFIG_HZ`); 0: exact time.
    hz: u32,
    /// Hold `cnt` for `HZ / 32` jiffies while cwnd is unchanged (Linux); false:
    /// `min(HZ / 32, delay_min)`.
    hold_hz32: bool,
    /// `last_cwnd`, `last_time` (in jiffies) of the last recomputation.
    last_cwnd: u64,
    last_time: u64,
}

impl LinuxCubic {
    pub fn new(hystart: bool, hz: u32) -> Self {
        LinuxCubic { hystart: hystart.then(ClassicHystart::default), hz, ..Default::default() }
    }

    /// While cwnd is unchanged, no recomputation for `HZ / 32` jiffies
    /// whatever the RTT (Linux's rule; false: `min(HZ / 32, delay_min)`).
    pub fn with_hold_hz32(mut self, hold: bool) -> Self {
        self.hold_hz32 = hold;
        self
    }

    /// `tcp_jiffies32` at `t` (jiffies counted from time zero).
    fn jiffies(&self, t: SimTime) -> u64 {
        (t.0 as u128 * self.hz as u128 / 1_000_000_000_000) as u64
    }

    /// `usecs_to_jiffies`: rounded up.
    fn to_jiffies_up(&self, d: SimTime) -> u64 {
        (d.0 as u128 * self.hz as u128).div_ceil(1_000_000_000_000) as u64
    }

    /// `cubictcp_recalc_ssthresh`.
    pub fn ssthresh_after_loss(&mut self, w: &Window) -> u64 {
        let cwnd = w.cwnd / w.mss;
        self.epoch_start = None;
        self.cwnd_cnt = 0;
        self.last_max_cwnd =
            if cwnd < self.last_max_cwnd { cwnd * (BETA_SCALE + BETA) / (2 * BETA_SCALE) } else { cwnd };
        (cwnd * BETA / BETA_SCALE).max(2) * w.mss
    }

    /// `cubictcp_state(TCP_CA_Loss)`: a retransmission timeout forgets `W_max`.
    pub fn forget(&mut self) {
        let hystart = self.hystart.is_some();
        *self = LinuxCubic::new(hystart, self.hz).with_hold_hz32(self.hold_hz32);
    }

    /// `cubictcp_acked`: a delay sample from an ACK of new data.
    pub fn on_rtt_sample(&mut self, w: &mut Window, info: &AckInfo) {
        let Some(delay) = info.rtt_sample else { return };
        if let Some(e) = self.epoch_start {
            let recent = if self.hz > 0 {
                self.jiffies(info.now) - self.jiffies(e) < self.hz as u64
            } else {
                info.now.saturating_sub(e) < SimTime::from_secs(1)
            };
            if recent {
                return;
            }
        }
        let delay = delay.max(SimTime::from_us(1));
        if self.delay_min.map_or(true, |m| delay < m) {
            self.delay_min = Some(delay);
        }
        if let Some(h) = &mut self.hystart {
            if w.in_slow_start() {
                let delay_min = self.delay_min.unwrap_or(delay);
                if let Some(ss) = h.on_delay(w, info, delay, delay_min) {
                    w.ssthresh = ss;
                }
            }
        }
    }

    /// `cubictcp_cong_avoid` (called only while the window limits the flight).
    pub fn increase(&mut self, w: &mut Window, info: &AckInfo) {
        let mss = w.mss;
        let mut acked = info.acked.div_ceil(mss);
        let mut cwnd = w.cwnd / mss;
        if w.in_slow_start() {
            // tcp_slow_start: cwnd = min(cwnd + acked, ssthresh).
            let ssthresh = w.ssthresh / mss;
            let new = (cwnd + acked).min(ssthresh.max(cwnd));
            acked -= new - cwnd;
            cwnd = new;
            w.cwnd = cwnd * mss;
            if acked == 0 {
                return;
            }
        }
        self.update(cwnd, acked, info.now);
        // tcp_cong_avoid_ai(cnt, acked).
        let cnt = self.cnt;
        if self.cwnd_cnt >= cnt {
            self.cwnd_cnt = 0;
            cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= cnt {
            let delta = self.cwnd_cnt / cnt;
            self.cwnd_cnt -= delta * cnt;
            cwnd += delta;
        }
        w.cwnd = cwnd * mss;
    }

    /// `bictcp_update`: sets `cnt`.
    fn update(&mut self, cwnd: u64, acked: u64, now: SimTime) {
        self.ack_cnt += acked;
        // `usecs_to_jiffies(delay_min)`: the curve's look-ahead (and the hold without `hold_hz32`).
        let delay_min_jiffies = if self.hz > 0 { self.delay_min.map_or(0, |d| self.to_jiffies_up(d)) } else { 0 };
        if self.hz > 0 {
            let jiffies = self.jiffies(now);
            let hold = if self.hold_hz32 { self.hz as u64 / 32 } else { (self.hz as u64 / 32).min(delay_min_jiffies) };
            if self.last_cwnd == cwnd && jiffies.saturating_sub(self.last_time) <= hold {
                return;
            }
            if self.epoch_start.is_some() && jiffies == self.last_time {
                self.friendliness(cwnd);
                return;
            }
            self.last_cwnd = cwnd;
            self.last_time = jiffies;
        }
        let start = match self.epoch_start {
            Some(s) => s,
            None => {
                self.epoch_start = Some(now);
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k = 0.0;
                    self.origin = cwnd;
                } else {
                    self.k = libm::cbrt((self.last_max_cwnd - cwnd) as f64 / C);
                    self.origin = self.last_max_cwnd;
                }
                now
            }
        };
        let t = if self.hz > 0 {
            (self.jiffies(now) - self.jiffies(start) + delay_min_jiffies) as f64 / self.hz as f64
        } else {
            (now - start).as_secs_f64() + self.delay_min.map_or(0.0, |d| d.as_secs_f64())
        };
        let offs = (t - self.k).abs();
        let delta = (C * offs * offs * offs) as u64;
        let target = if t < self.k { self.origin.saturating_sub(delta) } else { self.origin + delta };
        self.cnt = if target > cwnd { cwnd / (target - cwnd) } else { 100 * cwnd };
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
        self.friendliness(cwnd);
    }

    /// The TCP-friendly step of `bictcp_update` (and `cnt >= 2`).
    fn friendliness(&mut self, cwnd: u64) {
        let per = (cwnd * BETA_SCALE_FRIENDLY) >> 3;
        if per > 0 {
            while self.ack_cnt > per {
                self.ack_cnt -= per;
                self.tcp_cwnd += 1;
            }
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        self.cnt = self.cnt.max(2);
    }
}

impl CongestionOps for LinuxCubic {
    fn name(&self) -> &str {
        "cubic"
    }

    /// `cubictcp_acked`: the delay sample (and classic HyStart).
    #[inline(always)]
    fn on_ack(&mut self, w: &mut Window, ack: &AckInfo) {
        self.on_rtt_sample(w, ack);
    }

    #[inline(always)]
    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo) {
        self.increase(w, ack);
    }

    #[inline(always)]
    fn ssthresh(&mut self, w: &Window, _loss: &LossInfo) -> u64 {
        self.ssthresh_after_loss(w)
    }

    #[inline(always)]
    fn on_timeout(&mut self, _w: &Window, _now: SimTime) {
        self.forget();
    }

    #[inline(always)]
    fn slow_start_exit(&self) -> Option<SlowStartExit> {
        self.hystart.as_ref().and_then(|h| h.exit)
    }

    fn clone_box(&self) -> Box<dyn CongestionOps> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn info(now: SimTime, acked: u64) -> AckInfo {
        AckInfo {
            now,
            acked,
            ack: 0,
            snd_nxt: 0,
            ece: false,
            srtt: None,
            min_rtt: None,
            rtt_sample: Some(SimTime::from_ms(100)),
            flight: 0,
            state: crate::transport::tcp::cc::CcState::Open,
        }
    }

    #[test]
    fn linux_constants_beta_717_and_fast_convergence() {
        let mut c = LinuxCubic::new(false, 0);
        let w = Window { cwnd: 100 * MSS, ssthresh: 0, mss: MSS };
        assert_eq!(c.ssthresh_after_loss(&w), 70 * MSS, "100 * 717 / 1024 = 70");
        assert_eq!(c.last_max_cwnd, 100);
        let w = Window { cwnd: 80 * MSS, ssthresh: 0, mss: MSS };
        c.ssthresh_after_loss(&w);
        assert_eq!(c.last_max_cwnd, 80 * 1741 / 2048, "fast convergence: 68");
        assert_eq!(BETA_SCALE_FRIENDLY, 15);
    }

    #[test]
    fn window_climbs_back_to_w_max_in_k_seconds() {
        // Loss at 100 segments; cwnd 70; K = cbrt(30 / 0.4004) = 4.21 s. One
        // ACK per segment, cwnd segments per 100 ms RTT.
        let mut c = LinuxCubic::new(false, 0);
        let mut w = Window { cwnd: 100 * MSS, ssthresh: 0, mss: MSS };
        w.ssthresh = c.ssthresh_after_loss(&w);
        w.cwnd = w.ssthresh;
        let rtt = SimTime::from_ms(100);
        let mut now = SimTime::ZERO;
        // The delay sample arrives more than 1 s after the epoch start, so
        // delay_min is set from the first ACKs here (no epoch yet).
        c.on_rtt_sample(&mut w, &info(now, MSS));
        while now < SimTime::from_ms(4200) {
            for _ in 0..w.cwnd / MSS {
                c.increase(&mut w, &info(now, MSS));
            }
            now += rtt;
        }
        // t includes one min RTT of look-ahead, so the curve is 0.1 s ahead.
        let cw = w.cwnd / MSS;
        assert!((99..=101).contains(&cw), "cwnd {cw} segments at t = K");
    }

    #[test]
    fn with_jiffies_cnt_is_recomputed_at_most_once_per_jiffy() {
        // HZ 250: a jiffy is 4 ms. A recomputation records the window and
        // the jiffy (last_cwnd, last_time); within one jiffy a changed
        // window does not trigger one (only the TCP-friendly step runs).
        let mut c = LinuxCubic::new(false, 250);
        c.delay_min = Some(SimTime::from_us(100));
        c.last_max_cwnd = 120;
        let mut w = Window { cwnd: 100 * MSS, ssthresh: 50 * MSS, mss: MSS };
        let t0 = SimTime::from_ms(1000);
        c.increase(&mut w, &info(t0, MSS));
        assert_eq!((c.last_time, c.last_cwnd), (250, 100), "jiffy of 1.000 s");
        // K = cbrt(20 / 0.4004) = 3.683 s; t = delay_min (100 us) rounded up
        // to a jiffy: the target is 120 - floor(C (K - 0.004)^3) = 120 - 19 = 101.
        assert_eq!(c.cnt, 100, "cwnd / (target - cwnd)");
        w.cwnd = 99 * MSS;
        c.increase(&mut w, &info(t0 + SimTime::from_us(3_000), MSS));
        assert_eq!((c.last_time, c.last_cwnd), (250, 100), "same jiffy: not recomputed");
        w.cwnd = 99 * MSS;
        c.increase(&mut w, &info(t0 + SimTime::from_us(4_000), MSS));
        assert_eq!((c.last_time, c.last_cwnd), (251, 99), "the next jiffy recomputes");
        assert_eq!(c.cnt, 99 / 2, "target 101, cwnd 99");
    }

    #[test]
    fn with_jiffies_an_unchanged_window_waits_for_min_of_hz_32_and_delay_min() {
        // delay_min 9 ms = 3 jiffies at HZ 250 (below HZ / 32 = 7): with cwnd
        // unchanged, the update runs again only once more than 3 jiffies have passed.
        let mut c = LinuxCubic::new(false, 250);
        c.delay_min = Some(SimTime::from_ms(9));
        let mut w = Window { cwnd: 100 * MSS, ssthresh: 50 * MSS, mss: MSS };
        let t0 = SimTime::from_ms(1000);
        c.increase(&mut w, &info(t0, MSS));
        let cw = w.cwnd;
        assert_eq!(c.last_time, 250);
        for (ms, expect) in [(4, 250), (8, 250), (12, 250), (16, 254)] {
            w.cwnd = cw;
            c.increase(&mut w, &info(t0 + SimTime::from_ms(ms), MSS));
            assert_eq!(c.last_time, expect, "{ms} ms after");
        }
        // Exact time (hz 0) keeps no jiffy state.
        let mut exact = LinuxCubic::new(false, 0);
        let mut w = Window { cwnd: 100 * MSS, ssthresh: 50 * MSS, mss: MSS };
        exact.increase(&mut w, &info(t0, MSS));
        assert_eq!((exact.last_time, exact.last_cwnd), (0, 0));
    }

    #[test]
    fn as_linux_an_unchanged_window_waits_hz_32_jiffies() {
        // Linux's rule: 7 jiffies (28 ms) at HZ 250 whatever delay_min.
        let mut c = LinuxCubic::new(false, 250).with_hold_hz32(true);
        c.delay_min = Some(SimTime::from_ms(9));
        let mut w = Window { cwnd: 100 * MSS, ssthresh: 50 * MSS, mss: MSS };
        let t0 = SimTime::from_ms(1000);
        c.increase(&mut w, &info(t0, MSS));
        let cw = w.cwnd;
        for (ms, expect) in [(16, 250), (28, 250), (32, 258)] {
            w.cwnd = cw;
            c.increase(&mut w, &info(t0 + SimTime::from_ms(ms), MSS));
            assert_eq!(c.last_time, expect, "{ms} ms after");
        }
    }

    /// cwnd after every RTT of a steady ACK clock (one ACK per two segments,
    /// a 1.6 ms round trip, as on the lab's jumbo-frame dumbbell) for 50 ms
    /// after a loss at 14 segments.
    fn steps_after_loss(hold_hz32: bool) -> Vec<(SimTime, u64)> {
        let mut c = LinuxCubic::new(false, 250).with_hold_hz32(hold_hz32);
        c.delay_min = Some(SimTime::from_us(1600));
        let mut w = Window { cwnd: 14 * MSS, ssthresh: 0, mss: MSS };
        w.ssthresh = c.ssthresh_after_loss(&w);
        w.cwnd = w.ssthresh;
        let rtt = SimTime::from_us(1600);
        let mut now = SimTime::from_ms(1000);
        let mut out = vec![(now, w.cwnd / MSS)];
        while now < SimTime::from_ms(1050) {
            let acks = (w.cwnd / MSS).div_ceil(2);
            for i in 0..acks {
                let at = now + SimTime(rtt.0 * i / acks);
                c.increase(&mut w, &info(at, 2 * MSS));
            }
            now += rtt;
            out.push((now, w.cwnd / MSS));
        }
        out
    }

    /// Longest time cwnd stayed unchanged, and the largest rise within 10 ms.
    fn flat_and_jump(steps: &[(SimTime, u64)]) -> (SimTime, u64) {
        let mut flat = SimTime::ZERO;
        let mut since = steps[0].0;
        let mut jump = 0;
        for (i, &(t, cw)) in steps.iter().enumerate().skip(1) {
            if cw != steps[i - 1].1 {
                since = t;
            }
            flat = flat.max(t - since);
            let earlier = steps[..i].iter().rev().find(|(u, _)| t - *u >= SimTime::from_ms(10));
            if let Some(&(_, before)) = earlier {
                jump = jump.max(cw.saturating_sub(before));
            }
        }
        (flat, jump)
    }

    #[test]
    fn holding_hz_32_jiffies_turns_the_reno_friendly_growth_into_jumps() {
        // Loss at 14 segments: ssthresh 9, W_max 14, K = cbrt(5 / 0.4004) =
        // 2.32 s, so within 50 ms the curve adds one segment and then stays
        // below cwnd (cnt = 100 cwnd), while the TCP-friendly estimate gains
        // one segment per 11 * 15 / 8 = 20 ACKed (about 0.55 per RTT).
        // With the HZ / 32 hold (the lab's kernel) cnt is recomputed only 8
        // jiffies (32 ms, 20 RTTs) after the window stopped changing; the
        // estimate is then ~10 segments ahead, cnt drops to its floor of 2,
        // and for the rest of that jiffy (later ACKs in the same jiffy only
        // run the TCP-friendly step, which does not raise cnt again) cwnd
        // grows by half of every ACKed segment: 1.5x per RTT for up to 2.5
        // RTTs, past the estimate. So: flat for 30+ ms, then the window
        // doubles or more within 10 ms, the shape of the kernel's `ss`
        // trajectories (flat runs of 40 ms median, rises of up to 18
        // segments per 10 ms at 10-16 segments). With min(HZ / 32, delay_min)
        // = 1 jiffy the update runs again after 2 jiffies: the same catch-up,
        // but after 8-16 ms instead of 32, so the rises are a third as large
        // (at most 8 segments per 10 ms here) and come three times as often.
        let steps = steps_after_loss(true);
        let (flat, jump) = flat_and_jump(&steps);
        assert!(flat >= SimTime::from_ms(28), "flat for {:?}", flat);
        assert!(jump >= 20, "rise within 10 ms: {jump} (from 11)");
        assert_eq!(steps.last().unwrap().1, 35, "11 x 1.5^2.5 + the catch-up rounding");
        let steps = steps_after_loss(false);
        let (flat, jump) = flat_and_jump(&steps);
        assert!(flat <= SimTime::from_ms(16), "flat for {:?}", flat);
        assert!(jump <= 8, "rise within 10 ms: {jump}");
        assert_eq!(steps.last().unwrap().1, 28);
    }

    #[test]
    fn slow_start_adds_every_acked_segment_up_to_ssthresh() {
        let mut c = LinuxCubic::new(false, 0);
        let mut w = Window { cwnd: 10 * MSS, ssthresh: 11 * MSS, mss: MSS };
        c.increase(&mut w, &info(SimTime::ZERO, 2 * MSS));
        assert_eq!(w.cwnd, 11 * MSS, "one segment to ssthresh; the other goes to congestion avoidance");
        let mut w = Window { cwnd: 10 * MSS, ssthresh: u64::MAX, mss: MSS };
        c.increase(&mut w, &info(SimTime::ZERO, 3 * MSS));
        assert_eq!(w.cwnd, 13 * MSS);
    }
}
