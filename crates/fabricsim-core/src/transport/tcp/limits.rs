//! What limits a Linux sender besides its congestion and receive windows:
//! the pacing rate, the size of TSO/GSO bursts, TCP Small Queues and the
//! send buffer. Each follows one function of `net/ipv4`:
//!
//! - **pacing rate** (`tcp_update_pacing_rate`, after every ACK):
//!   `sk_pacing_rate = ratio x MSS x max(cwnd, packets_out) / SRTT` with
//!   `ratio = tcp_pacing_ss_ratio` (200%) while `cwnd < ssthresh / 2`, else
//!   `tcp_pacing_ca_ratio` (120%), capped by `SO_MAX_PACING_RATE`
//!   (`pacing_rate`); unlimited before the first RTT sample. Linux computes it
//!   whether or not it paces: TSO sizing and TSQ use it.
//! - **pacing** (`internal` or `fq`; `tcp_update_skb_after_send`): a burst
//!   of `len` bytes moves the flow's earliest departure time on by `len /
//!   rate`, less a credit of up to half that for time the flow was idle; the
//!   first 10 data segments of a connection are not paced (as the original
//!   `sch_fq`). In Linux >= 4.20 TCP stamps each burst with this departure
//!   time both ways: `fq` holds the burst in the qdisc until then, internal
//!   pacing holds it in TCP with a timer. The departure times are the same,
//!   so both modes pace here in the sender.
//! - **TSO/GSO burst size** (`tcp_tso_autosize`): `pacing_rate >> 10`
//!   bytes (about 1 ms of data) plus `gso_max_size >> (min_rtt_us >>
//!   tcp_tso_rtt_log)`, at most `gso_max_size` (64 KB), at least
//!   `tcp_min_tso_segs` (2) segments. Segments of one burst leave back to
//!   back.
//! - **TCP Small Queues** (`tcp_small_queue_check`): a new burst waits while
//!   the connection has more than `max(2 x burst, pacing_rate >> 10)` bytes
//!   below the socket (qdisc, shaper, NIC queue) whose transmission has not
//!   completed, capped by `tcp_limit_output_bytes` unless the flow is paced,
//!   doubled for retransmissions; a burst always goes when at most one burst
//!   is outstanding. A transmit completion at the host's NIC (`tcp_wfree`)
//!   returns the bytes and wakes a throttled connection (Linux runs it from a
//!   tasklet soon after; here in a timer event at the completion time).
//! - **send buffer** (`tcp_sndbuf_expand`): `sk_sndbuf = min(tcp_wmem[2],
//!   max(tcp_wmem[1], 2 x max(cwnd, 10) x per-segment truesize))`, never
//!   shrinking; the data outstanding stays within it (TSO-sized buffers hold
//!   about their payload in memory).
//!
//! TSO deferral (`tcp_tso_should_defer`) is the sender's (`sender.rs`).
//!
//! Simplifications: a burst's truesize is its payload; autocorking is not
//! modelled; tail loss
//! probes and timeout retransmissions pass TSQ.

use super::config::{Pacing, TcpConfig};
use crate::units::{SimTime, PS_PER_SEC};

/// Data segments a connection sends before Linux starts pacing it.
const UNPACED_SEGMENTS: u64 = 10;

/// Linux's limits of one sender (`None` in the sender when all are off).
#[derive(Clone, Debug)]
pub struct SendLimits {
    pacing: Pacing,
    /// `SO_MAX_PACING_RATE` in bytes per second.
    max_rate: u64,
    ss_ratio: u64,
    ca_ratio: u64,
    /// `sk_pacing_rate` in bytes per second (`u64::MAX`: unlimited).
    pub rate: u64,
    /// Earliest departure of the next burst (dynamic pacing).
    wstamp: SimTime,
    /// The last send stopped for pacing: the sender's timer waits for `wstamp`.
    pub pace_blocked: bool,
    data_segments: u64,
    gso_max: u64,
    min_tso_segs: u64,
    tso_rtt_log: u32,
    tsq: bool,
    limit_output: u64,
    /// Frame bytes below the socket whose transmission has not completed.
    pub queued: u64,
    /// A burst waited for TSQ; a completion wakes the sender.
    pub throttled: bool,
    /// A completion made room: the sender sends at this time.
    pub wake_at: Option<SimTime>,
    /// Times a burst waited for TSQ.
    pub tsq_stalls: u64,
    wmem: Option<[u64; 3]>,
    sndbuf_fixed: Option<u64>,
    per_mss_truesize: u64,
    mss: u64,
    /// Current send buffer (autotuned).
    sndbuf: u64,
}

/// The burst being formed by one call of the send loop.
#[derive(Clone, Copy, Debug, Default)]
pub struct Burst {
    /// Segments the current burst may still take (0: start a new one).
    pub left: u64,
    /// Frame bytes in the current burst.
    pub bytes: u64,
    /// Segments in the current burst so far.
    pub segs: u64,
}

impl SendLimits {
    /// The limits `cfg` asks for, or `None` when none is on (the RFC profile).
    pub fn new(cfg: &TcpConfig) -> Option<Self> {
        let on = cfg.pacing.is_dynamic()
            || cfg.tsq
            || cfg.gso_max_bytes > 0
            || cfg.wmem.is_some()
            || cfg.sndbuf_bytes.is_some();
        if !on {
            return None;
        }
        let mss = cfg.mss() as u64;
        // tcp_sndbuf_expand: the memory of one full segment's buffer.
        let per_mss_truesize = (mss + 640).next_power_of_two() + 256;
        let sndbuf = cfg.wmem.map_or(u64::MAX, |w| w[1]);
        Some(SendLimits {
            pacing: cfg.pacing,
            max_rate: cfg.pacing_bps.map_or(u64::MAX, |b| b / 8),
            ss_ratio: cfg.pacing_ss_ratio_pct as u64,
            ca_ratio: cfg.pacing_ca_ratio_pct as u64,
            rate: u64::MAX,
            wstamp: SimTime::ZERO,
            pace_blocked: false,
            data_segments: 0,
            gso_max: cfg.gso_max_bytes as u64,
            min_tso_segs: cfg.min_tso_segs as u64,
            tso_rtt_log: cfg.tso_rtt_log,
            tsq: cfg.tsq,
            limit_output: cfg.limit_output_bytes,
            queued: 0,
            throttled: false,
            wake_at: None,
            tsq_stalls: 0,
            wmem: cfg.wmem,
            sndbuf_fixed: cfg.sndbuf_bytes,
            per_mss_truesize,
            mss,
            sndbuf,
        })
    }

    fn paced(&self) -> bool {
        self.pacing.is_dynamic()
    }

    /// `tcp_update_pacing_rate` after an ACK: `cwnd` and `ssthresh` in
    /// bytes, `outstanding` the bytes sent and not cumulatively acknowledged.
    pub fn update_rate(&mut self, cwnd: u64, ssthresh: u64, outstanding: u64, srtt: Option<SimTime>) {
        let Some(srtt) = srtt.filter(|s| s.0 > 0) else { return };
        let ratio = if cwnd < ssthresh / 2 { self.ss_ratio } else { self.ca_ratio };
        // ratio% x window / SRTT in bytes per second: window x ratio x 10^12
        // / (100 x SRTT) = window x ratio x 10^10 / SRTT exactly, in 64 bits
        // when it fits (always, below about 9 GB of window at 200%).
        let scaled = cwnd.max(outstanding).checked_mul(ratio).and_then(|w| w.checked_mul(PS_PER_SEC / 100));
        let bytes = match scaled {
            Some(n) => n / srtt.0,
            None => {
                let b = cwnd.max(outstanding) as u128 * ratio as u128 * PS_PER_SEC as u128 / (100 * srtt.0 as u128);
                b.min(u64::MAX as u128) as u64
            }
        };
        self.rate = bytes.min(self.max_rate).max(1);
        // tcp_sndbuf_expand on growth of cwnd (tcp_new_space).
        if let (Some([_, _, max]), None) = (self.wmem, self.sndbuf_fixed) {
            let want = 2 * self.per_mss_truesize * (cwnd / self.mss).max(10);
            if self.sndbuf < want {
                self.sndbuf = want.min(max);
            }
        }
    }

    /// `sk_pacing_rate` in bits per second when the sender paces by it; 0
    /// when it does not pace or has no RTT sample yet (no rate).
    pub fn pacing_rate_bps(&self) -> u64 {
        if self.paced() && self.rate != u64::MAX {
            self.rate.saturating_mul(8)
        } else {
            0
        }
    }

    /// The largest data outstanding the send buffer allows (`u64::MAX`: no limit).
    pub fn send_buffer(&self) -> u64 {
        self.sndbuf_fixed.unwrap_or(self.sndbuf)
    }

    /// Whether bursts are sized (and deferred) as TSO/GSO does.
    pub fn tso_sizing(&self) -> bool {
        self.gso_max > 0
    }

    /// Segments per burst (`tcp_tso_autosize`); 1 without TSO sizing.
    pub fn tso_segs(&self, mss: u64, min_rtt: Option<SimTime>) -> u64 {
        if self.gso_max == 0 {
            return 1;
        }
        let mut bytes = self.rate >> 10;
        let rtt_us = min_rtt.map_or(0, |r| r.0 / 1_000_000);
        if self.tso_rtt_log > 0 {
            let r = rtt_us >> self.tso_rtt_log;
            if r < 32 {
                bytes = bytes.saturating_add(self.gso_max >> r);
            }
        }
        (bytes.min(self.gso_max) / mss).max(self.min_tso_segs)
    }

    /// Whether a new burst of up to `burst_bytes` may start now: the pacing
    /// time has come and TCP Small Queues has room. `outstanding` is the data
    /// sent and not acknowledged (a burst always goes when it is at most one
    /// burst), `retransmit` doubles the TSQ limit.
    pub fn may_start(&mut self, now: SimTime, burst_bytes: u64, outstanding: u64, retransmit: bool) -> bool {
        if self.paced() && self.data_segments >= UNPACED_SEGMENTS && now < self.wstamp {
            self.pace_blocked = true;
            return false;
        }
        self.pace_blocked = false;
        if self.tsq {
            let mut limit = (2 * burst_bytes).max(self.rate >> 10);
            if !self.paced() {
                limit = limit.min(self.limit_output);
            }
            if retransmit {
                limit <<= 1;
            }
            if self.queued > limit && outstanding > burst_bytes {
                if !self.throttled {
                    self.tsq_stalls += 1;
                }
                self.throttled = true;
                return false;
            }
        }
        self.throttled = false;
        true
    }

    /// A data segment of `frame` bytes left the socket.
    #[inline]
    pub fn on_segment(&mut self, frame: u64) {
        self.data_segments += 1;
        if self.tsq {
            self.queued += frame;
        }
    }

    /// Whether segments are charged to TSQ (their packets carry a flag).
    pub fn charges_tsq(&self) -> bool {
        self.tsq
    }

    /// A burst of `bytes` frame bytes was sent at `now` (`tcp_update_skb_after_send`).
    pub fn end_burst(&mut self, now: SimTime, bytes: u64) {
        if !self.paced() || bytes == 0 || self.rate == u64::MAX || self.data_segments < UNPACED_SEGMENTS {
            return;
        }
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        let mut len = SimTime((bytes as u128 * PS_PER_SEC as u128 / self.rate as u128) as u64);
        // Credit for idle time ("OS jitter"): at most half the burst's time.
        let credit = self.wstamp.saturating_sub(prior);
        len = len.saturating_sub(credit.min(SimTime(len.0 / 2)));
        self.wstamp = self.wstamp + len;
    }

    /// When paced sending may resume, if the last send stopped for pacing.
    pub fn pacing_deadline(&self) -> Option<SimTime> {
        self.pace_blocked.then_some(self.wstamp)
    }

    /// The sender tried to send at `now`: a pacing block whose time has come
    /// no longer holds anything back.
    pub fn pacing_checked(&mut self, now: SimTime) {
        if self.pace_blocked && self.wstamp <= now {
            self.pace_blocked = false;
        }
    }

    /// A packet of `frame` bytes charged to TSQ completed transmission (or
    /// was dropped, or left the socket's accounting) at `now`. Returns
    /// whether the sender should be woken.
    pub fn on_tx_complete(&mut self, now: SimTime, frame: u64) -> bool {
        self.queued = self.queued.saturating_sub(frame);
        if self.throttled && self.wake_at.is_none() {
            self.wake_at = Some(now);
            return true;
        }
        false
    }

    /// Takes a pending TSQ wake-up due at `now`.
    pub fn take_wake(&mut self, now: SimTime) -> bool {
        match self.wake_at {
            Some(t) if t <= now => {
                self.wake_at = None;
                self.throttled = false;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux() -> TcpConfig {
        TcpConfig::default()
    }

    #[test]
    fn pacing_rate_is_twice_cwnd_over_srtt_in_slow_start_and_1_2x_after() {
        let mut l = SendLimits::new(&linux()).unwrap();
        let srtt = Some(SimTime::from_ms(1));
        // 100 segments of 1448 B over 1 ms: 144.8 MB/s; slow start doubles it.
        l.update_rate(144_800, u64::MAX, 0, srtt);
        assert_eq!(l.rate, 289_600_000);
        l.update_rate(144_800, 144_800, 0, srtt);
        assert_eq!(l.rate, 173_760_000);
        // packets_out above cwnd counts (Linux uses max(cwnd, packets_out)).
        l.update_rate(144_800, 144_800, 289_600, srtt);
        assert_eq!(l.rate, 347_520_000);
        // SO_MAX_PACING_RATE caps it.
        let mut l = SendLimits::new(&TcpConfig { pacing_bps: Some(800_000_000), ..linux() }).unwrap();
        l.update_rate(144_800, 144_800, 0, srtt);
        assert_eq!(l.rate, 100_000_000);
    }

    #[test]
    fn the_pacing_rate_in_64_bits_equals_the_128_bit_formula() {
        let mut l = SendLimits::new(&linux()).unwrap();
        let wide = |w: u64, ratio: u64, srtt: u64| {
            (w as u128 * ratio as u128 * PS_PER_SEC as u128 / (100 * srtt as u128)).min(u64::MAX as u128) as u64
        };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..2000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Windows from a segment to far beyond the 64-bit range of the product.
            let w = 1448 + (x >> (i % 64).max(14));
            let srtt = 1 + (x.rotate_left(17) >> (i % 61));
            let ss = i % 2 == 0;
            l.update_rate(w, if ss { u64::MAX } else { 0 }, 0, Some(SimTime(srtt)));
            let ratio = if ss { l.ss_ratio } else { l.ca_ratio };
            assert_eq!(l.rate, wide(w, ratio, srtt).min(l.max_rate).max(1), "window {w}, srtt {srtt} ps");
        }
    }

    #[test]
    fn tso_bursts_are_about_a_millisecond_of_data_between_2_segments_and_64_kb() {
        let mut l = SendLimits::new(&linux()).unwrap();
        let mss = 1448;
        let far = Some(SimTime::from_ms(50)); // no RTT allowance at 50 ms
        assert_eq!(l.tso_segs(mss, far), 45, "unknown rate: 64 KB");
        l.rate = 10_240_000; // 10 KB per 1/1024 s
        assert_eq!(l.tso_segs(mss, far), 6);
        l.rate = 1_000;
        assert_eq!(l.tso_segs(mss, far), 2, "tcp_min_tso_segs");
        // A close peer (min RTT < 512 us) adds the whole 64 KB allowance.
        assert_eq!(l.tso_segs(mss, Some(SimTime::from_us(100))), 45);
        // 1.2 ms: the allowance is 64 KB >> 2 = 16 KB.
        assert_eq!(l.tso_segs(mss, Some(SimTime::from_us(1200))), 11);
        let off = SendLimits::new(&TcpConfig { gso_max_bytes: 0, ..linux() }).unwrap();
        assert_eq!(off.tso_segs(mss, far), 1);
    }

    #[test]
    fn tsq_holds_a_burst_above_the_limit_until_a_completion() {
        let mut l = SendLimits::new(&linux()).unwrap();
        l.rate = 1_024_000_000; // 1 MB per 1/1024 s
        let now = SimTime::ZERO;
        for _ in 0..1000 {
            l.on_segment(1518);
        }
        assert_eq!(l.queued, 1_518_000);
        assert!(!l.may_start(now, 65_000, 10 << 20, false), "above max(2 bursts, 1 ms of rate)");
        assert!(l.throttled);
        assert!(l.may_start(now, 65_000, 10 << 20, true), "retransmissions get twice the room");
        assert!(l.may_start(now, 65_000, 60_000, false), "one burst outstanding always goes");
        l.may_start(now, 65_000, 10 << 20, false);
        assert!(l.on_tx_complete(SimTime(5), 1518 * 1400));
        assert!(l.take_wake(SimTime(5)));
        assert!(l.may_start(SimTime(5), 65_000, 10 << 20, false));
    }

    #[test]
    fn unpaced_tsq_is_capped_by_tcp_limit_output_bytes() {
        let mut l = SendLimits::new(&TcpConfig { limit_output_bytes: 100_000, ..linux() }).unwrap();
        l.rate = 1 << 40;
        l.queued = 100_001;
        assert!(!l.may_start(SimTime::ZERO, 1500, 1 << 30, false));
        let mut p = SendLimits::new(&TcpConfig { limit_output_bytes: 100_000, pacing: Pacing::Fq, ..linux() }).unwrap();
        p.rate = 1 << 40;
        p.queued = 100_001;
        p.data_segments = 0;
        assert!(p.may_start(SimTime::ZERO, 1500, 1 << 30, false), "a paced flow is not capped");
    }

    #[test]
    fn a_paced_burst_moves_the_next_departure_by_its_time_at_the_rate() {
        let mut l = SendLimits::new(&TcpConfig { pacing: Pacing::Internal, ..linux() }).unwrap();
        l.rate = 125_000_000; // 1 Gb/s
        for _ in 0..10 {
            l.on_segment(1518);
        }
        let t0 = SimTime::from_us(100);
        assert!(l.may_start(t0, 3036, 0, false));
        l.end_burst(t0, 3036);
        // 3036 B at 125 MB/s = 24.288 us, less half of it as credit for the idle start.
        assert_eq!(l.pacing_deadline(), None);
        assert!(!l.may_start(t0, 3036, 0, false));
        assert_eq!(l.pacing_deadline(), Some(t0 + SimTime(12_144_000)));
        let t1 = t0 + SimTime(12_144_000);
        assert!(l.may_start(t1, 3036, 0, false));
        l.end_burst(t1, 3036);
        assert_eq!(l.wstamp, t1 + SimTime(24_288_000), "back to back: no credit");
    }

    #[test]
    fn the_send_buffer_grows_with_cwnd_up_to_wmem_max() {
        let mut l = SendLimits::new(&linux()).unwrap();
        assert_eq!(l.send_buffer(), 16_384, "tcp_wmem[1] before the first ACK");
        l.update_rate(20 * 1448, u64::MAX, 0, Some(SimTime::from_ms(1)));
        assert_eq!(l.send_buffer(), 2 * 4352 * 20, "2 x cwnd x 4352 B per 1448 B segment");
        l.update_rate(10_000 * 1448, u64::MAX, 0, Some(SimTime::from_ms(1)));
        assert_eq!(l.send_buffer(), 4_194_304);
        let f = SendLimits::new(&TcpConfig { sndbuf_bytes: Some(1_000_000), ..linux() }).unwrap();
        assert_eq!(f.send_buffer(), 1_000_000);
    }
}
