//! Receive-window autotuning as Linux 6.18 does it (`tcp_moderate_rcvbuf = 1`;
//! `net/ipv4/tcp_input.c`, `tcp_output.c`).
//!
//! - **Buffer and window**: the receive buffer starts at `tcp_rmem[1]`; the
//!   window a buffer of `space` bytes holds is `space x scaling_ratio / 256`
//!   (`tcp_win_from_space`; 50% until measured). The initial window is that of
//!   `tcp_rmem[1]`, rounded down to whole segments and at most 64 KB
//!   (`tcp_select_initial_window`); the window scale is the smallest shift
//!   that fits `tcp_rmem[2]` in 16 bits.
//! - **The scaling ratio** (`tcp_measure_rcv_mss`, Linux 6.7+): with
//!   `rcv_truesize_overhead`, a full-sized segment whose length differs from
//!   the receiver's segment-size estimate (`icsk_ack.rcv_mss`, first 536 B)
//!   sets the ratio to `len x 256 / truesize`, truesize being the payload
//!   plus that overhead; the window clamp follows (`tcp_set_window_clamp`,
//!   which raises `rcv_ssthresh` to the window last advertised when the
//!   clamp grows). In practice the first full segment sets it for good.
//! - **`rcv_ssthresh`** (`tcp_grow_window`): the window offered grows by two
//!   segments per full in-order segment received, up to `window_clamp`.
//! - **Dynamic right-sizing** (`tcp_rcv_space_adjust` -> `tcp_rcvbuf_grow`):
//!   once per receiver RTT, if the application read more than in the
//!   previous RTT (`copied > space`, `copied` excluding the bytes still
//!   queued unread, `inq`), `space` becomes `copied` and the buffer grows to
//!   hold a window of `2 copied` (the measure is one RTT late) plus twice
//!   that times `(copied - space) / space` (a sender in slow start doubles
//!   per RTT) plus the span of the out-of-order queue, at most `tcp_rmem[2]`;
//!   `window_clamp` follows. A segment that joins the out-of-order queue
//!   re-checks the size at once with `space` unchanged (`tcp_data_queue_ofo`),
//!   so a hole gets room without waiting for reads. This is Linux 6.18
//!   (`rcvbuf_growth: linux-6.18`; the lab's kernel: its buffers grew
//!   exactly by it, e.g. from 131,072 to 535,411 B when `rcv_space` went
//!   from 56,588 to 98,549 B at a scaling ratio of 234). 6.16 and 6.17 as
//!   released had no growth term (`linux-6.16`); 4.19 to 6.15 added 16
//!   segments to the doubled bytes and nothing for out-of-order data
//!   (`linux-4.19`, the profiles of those kernels).
//! - **The receiver's RTT** (`rcv_rtt_est`, Linux 6.16+), from two kinds of
//!   sample: the timestamps data segments echo (`tcp_rcv_rtt_measure_ts`:
//!   full-sized segments with a new echo; the TCP timestamp clock ticks in
//!   milliseconds, so a sample is a whole number of ms and a zero-ms sample
//!   is discarded) and the time to receive one advertised window
//!   (`tcp_rcv_rtt_measure`: from the segment that set `rcv_nxt + rcv_wnd`
//!   as the mark to the one that passes it). `tcp_rcv_rtt_update` takes any
//!   sample below the estimate at once (it seeks the minimum); a larger
//!   timestamp sample is smoothed in with gain 1/8, and only while the
//!   receive queue is empty; a larger window sample is ignored. On a sub-ms
//!   path the estimate therefore follows the time to receive a window, not
//!   the path's RTT: a flow that receives its window faster than one RTT
//!   (a burst at line rate) grows its buffer.
//! - **The window advertised** (`__tcp_select_window`): the free space
//!   (`tcp_space`: the window of the buffer left after the memory the
//!   out-of-order data and the bytes received but not yet read take; that
//!   memory is their length, as the receive queue coalesces segments into
//!   page fragments), at most `rcv_ssthresh` and `window_clamp`, rounded down
//!   to the window scale; the right edge never moves left
//!   (`tcp_select_window`). The window last advertised is `rcv_wnd`; the
//!   receiver compares a fresh window with it to decide whether to ACK at
//!   once (`__tcp_ack_snd_check`, `tcp_cleanup_rbuf`).
//! - **Who reads**: with the ideal reader (no `tcp.receiver_app`) in-order
//!   data is read as it arrives, so right-sizing counts it on arrival; with
//!   a receiving application (`reader.rs`) it counts the bytes *read*, when
//!   a `read()` call ends (`tcp_recvmsg` -> `tcp_rcv_space_adjust`). A
//!   receiving application on a fixed window (`rwnd`, no autotuning) has a
//!   locked buffer of that window (`SO_RCVBUF`): the same accounting, no
//!   growth.
//!
//! Simplifications: the timestamp clock's millisecond ticks start at
//! time zero (Linux adds a random per-connection offset in whole ms, so the
//! phase is the same); microsecond timestamps (the `tcp_usec_ts` route
//! feature) are not modelled; every segment has the same truesize overhead
//! (Linux's depends on the driver and on how the sender built the skb); queued
//! data takes exactly its length of memory (the skb heads that coalescing
//! leaves are not counted: the lab measured 1.04-1.13 bytes of memory per
//! queued byte); no memory pressure; the window never falls below one window-scale unit
//! (Linux advertises a zero window when the free space is below one MSS or
//! 1/16 of the buffer).

use super::{RcvbufGrowth, TcpConfig};
use crate::units::SimTime;

/// One tick of the TCP timestamp clock (`TCP_TS_HZ` = 1000).
const TS_TICK: SimTime = SimTime::from_ms(1);
/// The receiver's first estimate of the sender's segment size
/// (`tcp_initialize_rcv_mss`: `TCP_MSS_DEFAULT`).
const RCV_MSS_DEFAULT: u64 = 536;
/// The smallest window clamp (`SOCK_MIN_RCVBUF / 2`, with 2 KB of data and
/// the `sk_buff` overhead).
const MIN_CLAMP: u64 = 1_152;

#[derive(Clone, Debug)]
pub struct RcvBuf {
    rmem_max: u64,
    ratio: u64,
    advmss: u64,
    wscale: u32,
    /// `sk_rcvbuf`.
    pub rcvbuf: u64,
    window_clamp: u64,
    rcv_ssthresh: u64,
    /// `rcvq_space`: bytes read in the last measured RTT, and where it began.
    space: u64,
    space_seq: u64,
    space_time: SimTime,
    /// Receiver RTT estimate (`rcv_rtt_est.rtt_us`), zero until measured.
    rtt: SimTime,
    /// The last echoed timestamp, in timestamp-clock ticks (`rcv_rtt_last_tsecr`).
    last_tsecr: u64,
    /// The window-based measurement (`rcv_rtt_est.seq`, `.time`): the
    /// sequence that ends it and when it began (`None`: not begun).
    win_seq: u64,
    win_time: Option<SimTime>,
    /// Right edge of the last window advertised.
    right_edge: u64,
    /// The window last advertised (`rcv_wnd`).
    pub rcv_wnd: u64,
    /// Right-sizing counts bytes read by an application (see the module comment).
    app_reads: bool,
    /// A locked buffer: no growth (a receiving application on a fixed window).
    locked: bool,
    /// Times the buffer grew.
    pub grows: u64,
    growth: RcvbufGrowth,
    /// `skb->truesize - skb->len` of a received segment, when the scaling
    /// ratio is learned (`None`: fixed).
    truesize_overhead: Option<u64>,
    /// The receiver's estimate of the sender's segment size (`icsk_ack.rcv_mss`).
    rcv_mss: u64,
}

impl RcvBuf {
    pub fn new(cfg: &TcpConfig) -> Self {
        let mss = cfg.mss() as u64;
        let rcvbuf = cfg.rmem[1];
        let full = cfg.win_from_space(rcvbuf);
        let mut initial = if full > mss { full / mss * mss } else { full };
        initial = initial.min(65_535);
        let wscale = cfg.rcv_wscale();
        RcvBuf {
            rmem_max: cfg.rmem[2],
            ratio: cfg.rcv_scaling_ratio as u64,
            advmss: mss,
            wscale,
            rcvbuf,
            window_clamp: full.min(65_535u64 << wscale),
            rcv_ssthresh: initial,
            space: initial.min(10 * mss),
            space_seq: 0,
            space_time: SimTime::ZERO,
            rtt: SimTime::ZERO,
            last_tsecr: 0,
            win_seq: 0,
            win_time: None,
            right_edge: 0,
            rcv_wnd: 0,
            app_reads: cfg.receiver_app.is_some(),
            locked: false,
            grows: 0,
            growth: cfg.rcvbuf_growth,
            truesize_overhead: cfg.rcv_truesize_overhead.map(u64::from),
            rcv_mss: RCV_MSS_DEFAULT.min(mss),
        }
    }

    /// The scaling ratio in use, in 256ths (`tp->scaling_ratio`).
    pub fn scaling_ratio(&self) -> u64 {
        self.ratio
    }

    /// A locked buffer holding a window of `rwnd_bytes` (`SO_RCVBUF`): used
    /// for a receiving application on a fixed window.
    pub fn fixed(cfg: &TcpConfig) -> Self {
        let mut r = RcvBuf::new(cfg);
        let win = cfg.rwnd_bytes;
        r.rcvbuf = cfg.space_from_win(win).max(1);
        r.window_clamp = win.min(65_535u64 << r.wscale);
        r.rcv_ssthresh = r.window_clamp;
        r.locked = true;
        r
    }

    fn win_from_space(&self, space: u64) -> u64 {
        space * self.ratio / 256
    }

    fn space_from_win(&self, win: u64) -> u64 {
        win * 256 / self.ratio.max(1)
    }

    /// The receiver's RTT estimate (`rcv_rtt_est`), zero until measured.
    pub fn rtt(&self) -> SimTime {
        self.rtt
    }

    /// The connection is established at `now` (`tcp_init_buffer_space`).
    pub fn start(&mut self, now: SimTime) {
        self.space_time = now;
    }

    /// A data segment of `len` bytes arrived at `now` echoing `ts_echo`;
    /// `in_order` if it advanced `rcv_nxt` (now `rcv_nxt`), with `ooo` bytes
    /// held out of order (`ooo_span`: from `rcv_nxt` to the end of the
    /// highest of them, this segment's included; `queued_ooo`: the segment
    /// joined the out-of-order queue) and `unread` bytes received but not read
    /// (`unread_before`: before this segment was queued).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn on_data(
        &mut self,
        now: SimTime,
        len: u64,
        ts_echo: SimTime,
        in_order: bool,
        rcv_nxt: u64,
        ooo: u64,
        ooo_span: u64,
        queued_ooo: bool,
        unread: u64,
        unread_before: u64,
    ) {
        if self.truesize_overhead.is_some() && len >= self.rcv_mss {
            self.measure_rcv_mss(len);
        }
        // tcp_rcv_rtt_measure_ts: the echo is in timestamp-clock ticks.
        let tick = ts_echo.0 / TS_TICK.0;
        if ts_echo > SimTime::ZERO && tick != self.last_tsecr && ts_echo <= now {
            self.last_tsecr = tick;
            if len >= self.advmss {
                // tcp_rtt_tsopt_us(tp, 0): a zero-tick sample is discarded.
                let ticks = now.0 / TS_TICK.0 - tick;
                if ticks > 0 {
                    // Measured before the segment is queued (tcp_rcv_established).
                    self.rtt_update(SimTime(ticks * TS_TICK.0), false, unread_before);
                }
            }
        }
        if !in_order {
            if queued_ooo && self.growth != RcvbufGrowth::Linux419 {
                // tcp_data_queue_ofo -> tcp_rcvbuf_grow(sk, space): room for the hole.
                self.grow(self.space, ooo_span);
            }
            return;
        }
        // tcp_event_data_recv -> tcp_rcv_rtt_measure: the time to receive one window.
        if self.win_time.is_none() || rcv_nxt >= self.win_seq {
            if let Some(start) = self.win_time {
                // At least 1 us (the clock's resolution).
                self.rtt_update((now - start).max(SimTime::from_us(1)), true, unread);
            }
            self.win_seq = rcv_nxt + self.rcv_wnd;
            self.win_time = Some(now);
        }
        // tcp_grow_window (full segments; the buffer is never short here):
        // only while rcv_ssthresh is below the free space (tcp_space).
        if len >= self.advmss && self.rcv_ssthresh < self.window_clamp {
            let free = self.free_space(ooo, unread);
            if self.rcv_ssthresh < free {
                self.rcv_ssthresh = (self.rcv_ssthresh + 2 * self.advmss).min(self.window_clamp);
            }
        }
        if !self.app_reads {
            // The ideal reader has read up to rcv_nxt.
            self.space_adjust(now, rcv_nxt, 0, ooo_span);
        }
    }

    /// `tcp_rcv_rtt_update`: a sample below the estimate replaces it; a
    /// larger one is ignored if window-based (`win_dep`) or while `unread`
    /// bytes wait in the receive queue, else smoothed in with gain 1/8.
    fn rtt_update(&mut self, sample: SimTime, win_dep: bool, unread: u64) {
        if self.rtt == SimTime::ZERO || sample < self.rtt {
            self.rtt = sample;
        } else if !win_dep && unread == 0 {
            self.rtt = SimTime(self.rtt.0 - self.rtt.0 / 8 + sample.0 / 8);
        }
    }

    /// `tcp_measure_rcv_mss` for a full-sized segment of `len` bytes: a
    /// length other than the estimate re-learns the scaling ratio from the
    /// segment's `len / truesize`, and the window clamp follows
    /// (`tcp_set_window_clamp`).
    fn measure_rcv_mss(&mut self, len: u64) {
        if len != self.rcv_mss {
            let truesize = len + self.truesize_overhead.unwrap_or(0);
            let ratio = (len * 256 / truesize).max(1);
            if ratio != self.ratio {
                self.ratio = ratio;
                let old = self.window_clamp;
                let clamp = self.win_from_space(self.rcvbuf).max(MIN_CLAMP).min(65_535u64 << self.wscale);
                self.window_clamp = clamp;
                if clamp < old {
                    self.rcv_ssthresh = self.rcv_ssthresh.min(clamp);
                } else {
                    self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(clamp));
                }
                self.space = self.space.min(self.window_clamp);
            }
        }
        self.rcv_mss = len.min(self.advmss);
    }

    /// `tcp_rcv_space_adjust` at `now`, the application having read up to
    /// `copied_seq`, with `inq` bytes received in order but not read and
    /// the out-of-order queue spanning `ooo_span` bytes beyond `rcv_nxt`.
    pub fn space_adjust(&mut self, now: SimTime, copied_seq: u64, inq: u64, ooo_span: u64) {
        if self.rtt == SimTime::ZERO || now - self.space_time < self.rtt {
            return;
        }
        // Bytes read in the last RTT, less those still queued (Linux 6.16+).
        let copied = (copied_seq - self.space_seq).saturating_sub(inq);
        if copied > self.space {
            if self.growth == RcvbufGrowth::Linux419 {
                let old = self.space.max(1);
                let rcvwin = 2 * copied + 16 * self.advmss;
                let rcvwin = rcvwin + 2 * Self::relative_growth(rcvwin, copied, old);
                self.set_rcvbuf(self.space_from_win(rcvwin).min(self.rmem_max));
                self.space = copied;
            } else {
                self.grow(copied, ooo_span);
            }
        }
        self.space_seq = copied_seq;
        self.space_time = now;
    }

    /// `tcp_rcvbuf_grow(sk, newval)` (Linux 6.16+): `space` becomes `newval`
    /// and the buffer holds a window of twice it, plus (6.18) twice that
    /// times its growth relative to the previous `space`, plus the
    /// out-of-order span.
    fn grow(&mut self, newval: u64, ooo_span: u64) {
        let old = self.space.max(1);
        self.space = newval;
        let mut rcvwin = 2 * newval;
        if self.growth == RcvbufGrowth::Linux618 {
            rcvwin += 2 * Self::relative_growth(rcvwin, newval, old);
        }
        self.set_rcvbuf(self.space_from_win(rcvwin + ooo_span).min(self.rmem_max));
    }

    /// `rcvwin x (new - old) / old`, saturating.
    fn relative_growth(rcvwin: u64, new: u64, old: u64) -> u64 {
        (rcvwin as u128 * new.saturating_sub(old) as u128 / old as u128).min(u64::MAX as u128 / 4) as u64
    }

    /// A larger buffer, with the window clamp following it (never smaller;
    /// a locked buffer stays).
    fn set_rcvbuf(&mut self, rcvbuf: u64) {
        if rcvbuf > self.rcvbuf && !self.locked {
            self.rcvbuf = rcvbuf;
            self.window_clamp = self.win_from_space(rcvbuf).min(65_535u64 << self.wscale);
            self.grows += 1;
        }
    }

    /// `tcp_space`: the window of the buffer less what out-of-order data
    /// (`ooo`) and bytes not yet read (`unread`) hold.
    fn free_space(&self, ooo: u64, unread: u64) -> u64 {
        self.win_from_space(self.rcvbuf.saturating_sub(ooo + unread))
    }

    /// The window the free space allows now (`__tcp_select_window`), with
    /// `ooo` bytes held out of order and `unread` bytes not yet read: a
    /// multiple of `2^wscale`, without the never-shrink rule.
    pub fn select(&self, ooo: u64, unread: u64) -> u64 {
        let free = self.free_space(ooo, unread);
        let w = free.min(self.rcv_ssthresh).min(self.window_clamp);
        let unit = 1u64 << self.wscale;
        w / unit * unit
    }

    /// The largest window the buffer may offer (`window_clamp`).
    pub fn clamp(&self) -> u64 {
        self.window_clamp
    }

    /// The window to advertise with `rcv_nxt` acknowledged, `ooo` bytes
    /// held out of order and `unread` bytes not yet read (`tcp_select_window`):
    /// a multiple of `2^wscale`, never moving the right edge left.
    pub fn window(&mut self, rcv_nxt: u64, ooo: u64, unread: u64) -> u64 {
        let unit = 1u64 << self.wscale;
        let mut w = self.select(ooo, unread);
        let current = self.right_edge.saturating_sub(rcv_nxt);
        if w < current {
            w = current.div_ceil(unit) * unit;
        }
        self.right_edge = rcv_nxt + w;
        self.rcv_wnd = w.max(unit);
        self.rcv_wnd
    }

    /// What is left of the window last advertised (`tcp_receive_window`).
    pub fn receive_window(&self, rcv_nxt: u64) -> u64 {
        self.right_edge.saturating_sub(rcv_nxt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_window_and_scale_follow_tcp_rmem() {
        let cfg = TcpConfig::default();
        assert_eq!(cfg.rcv_wscale(), 7, "6 MB >> 7 fits in 16 bits");
        let mut r = RcvBuf::new(&cfg);
        // 131072 x 50% = 65536, rounded down to 45 segments of 1448 B, then to 128 B units.
        assert_eq!(r.window(0, 0, 0), 65_160 / 128 * 128);
    }

    /// A sender in slow start that sends what the window allows, spread over
    /// each 10 ms RTT: the buffer grows once per RTT to hold twice what was
    /// read (`growth`), until `tcp_rmem[2]`. Returns the buffer's sizes per round.
    fn slow_start_rounds(growth: RcvbufGrowth) -> (RcvBuf, Vec<u64>) {
        let mut cfg = TcpConfig::default();
        cfg.rcvbuf_growth = growth;
        let mut r = RcvBuf::new(&cfg);
        r.start(SimTime::ZERO);
        let rtt = SimTime::from_ms(10);
        let mss = 1448;
        let mut seq = 0;
        let mut w = r.window(0, 0, 0);
        let mut sizes = vec![];
        for round in 0..16u64 {
            let n = (10u64 << round.min(20)).min(w / mss).max(1);
            for k in 0..n {
                let now = SimTime(round * rtt.0 + k * rtt.0 / n);
                seq += mss;
                let echo = SimTime((round * rtt.0).saturating_sub(rtt.0)).max(SimTime(1));
                r.on_data(now, mss, echo, true, seq, 0, 0, false, 0, 0);
                let next = r.window(seq, 0, 0);
                assert!(seq + next >= seq - mss + w, "the right edge never moves left");
                w = next;
            }
            sizes.push(r.rcvbuf);
        }
        (r, sizes)
    }

    #[test]
    fn the_window_grows_two_segments_per_segment_then_the_buffer_per_rtt() {
        let (r, sizes) = slow_start_rounds(RcvbufGrowth::Linux616);
        assert!(r.grows >= 5, "{} {sizes:?}", r.grows);
        assert!(sizes.windows(2).all(|p| p[1] >= p[0]), "{sizes:?}");
        // Each growth at most doubles the window of the bytes read in an RTT.
        assert!(sizes.windows(2).all(|p| p[1] <= 4 * p[0].max(131_072)), "{sizes:?}");
        assert_eq!(r.rcvbuf, 6_291_456, "reached tcp_rmem[2]: {sizes:?}");
        assert_eq!(r.clamp(), 3_145_728, "50% of tcp_rmem[2]");
        // Before 6.16 the buffer ran ahead of the window it needed; 6.18 gives
        // the growth term back (without the 16-segment cushion).
        let (old, old_sizes) = slow_start_rounds(RcvbufGrowth::Linux419);
        let (now, now_sizes) = slow_start_rounds(RcvbufGrowth::Linux618);
        assert_eq!(old.rcvbuf, 6_291_456);
        assert_eq!(now.rcvbuf, 6_291_456);
        let first_full = |s: &[u64]| s.iter().position(|&b| b == 6_291_456).unwrap();
        assert!(first_full(&old_sizes) < first_full(&sizes), "{old_sizes:?} vs {sizes:?}");
        assert!(first_full(&now_sizes) < first_full(&sizes), "{now_sizes:?} vs {sizes:?}");
    }

    #[test]
    fn a_growth_step_of_the_lab_kernel() {
        // Linux 6.18.44 in the lab (ss -tmin every 5 ms, MTU 9000): rcv_space
        // went from 56,588 to 98,549 B and sk_rcvbuf from 131,072 to 535,411 B
        // at a scaling ratio of 234/256.
        let mut cfg = TcpConfig::default();
        cfg.mtu_bytes = 9000;
        cfg.rcv_truesize_overhead = Some(832);
        let mut r = RcvBuf::new(&cfg);
        r.on_data(SimTime::from_us(10), 8948, SimTime::ZERO, true, 8948, 0, 0, false, 0, 0);
        assert_eq!((r.scaling_ratio(), r.rcvbuf), (234, 131_072));
        // The kernel's first space (the model starts from 7 segments, 62,636 B).
        r.space = 56_588;
        r.grow(98_549, 0);
        assert_eq!(r.rcvbuf, 535_411);
        // 6.16 as released: twice the bytes read only.
        let mut cfg616 = cfg.clone();
        cfg616.rcvbuf_growth = RcvbufGrowth::Linux616;
        let mut r = RcvBuf::new(&cfg616);
        r.on_data(SimTime::from_us(10), 8948, SimTime::ZERO, true, 8948, 0, 0, false, 0, 0);
        r.space = 56_588;
        r.grow(98_549, 0);
        assert_eq!(r.rcvbuf, 2 * 98_549 * 256 / 234);
    }

    #[test]
    fn a_segment_queued_out_of_order_grows_the_buffer_for_the_hole() {
        let cfg = TcpConfig::default();
        let mut r = RcvBuf::new(&cfg);
        let before = r.rcvbuf;
        // 200 KB beyond rcv_nxt: twice the space (14,480 B) plus the span.
        r.on_data(SimTime::from_ms(1), 1448, SimTime::ZERO, false, 0, 1448, 200_000, true, 0, 0);
        assert_eq!(r.rcvbuf, (2 * 14_480 + 200_000) * 2);
        assert!(r.rcvbuf > before && r.grows == 1);
        let mut old_cfg = TcpConfig::default();
        old_cfg.rcvbuf_growth = RcvbufGrowth::Linux419;
        let mut old = RcvBuf::new(&old_cfg);
        old.on_data(SimTime::from_ms(1), 1448, SimTime::ZERO, false, 0, 1448, 200_000, true, 0, 0);
        assert_eq!(old.grows, 0, "before 6.16 only the reads grew it");
    }

    #[test]
    fn the_scaling_ratio_is_learned_from_the_first_full_segment() {
        // The lab's veth path: 832 B beyond the payload per segment.
        let mut cfg = TcpConfig::default();
        cfg.mtu_bytes = 9000;
        cfg.rcv_truesize_overhead = Some(832);
        let mss = cfg.mss() as u64;
        let mut r = RcvBuf::new(&cfg);
        assert_eq!(r.scaling_ratio(), 128, "50% until data arrives");
        let w0 = r.window(0, 0, 0);
        r.on_data(SimTime::from_us(10), mss, SimTime::ZERO, true, mss, 0, 0, false, 0, 0);
        assert_eq!(r.scaling_ratio(), mss * 256 / (mss + 832));
        assert_eq!(r.scaling_ratio(), 234);
        assert_eq!(r.clamp(), 131_072 * 234 / 256);
        assert!(r.window(mss, 0, 0) >= w0);
        // The 1500-byte MTU: 162/256.
        let mut small = TcpConfig::default();
        small.rcv_truesize_overhead = Some(832);
        let mut r = RcvBuf::new(&small);
        r.on_data(SimTime::from_us(10), 1448, SimTime::ZERO, true, 1448, 0, 0, false, 0, 0);
        assert_eq!(r.scaling_ratio(), 162);
        // Queued data takes its memory from the buffer before the ratio applies (tcp_space).
        assert_eq!(r.free_space(0, 31_072), 100_000 * 162 / 256);
    }

    #[test]
    fn out_of_order_data_takes_room_but_the_right_edge_holds() {
        let cfg = TcpConfig::default();
        let mut r = RcvBuf::new(&cfg);
        let w0 = r.window(0, 0, 0);
        let w1 = r.window(0, 30_000, 0);
        assert_eq!(w1, w0, "the right edge does not move left");
        let w2 = r.window(1448, 30_000, 0);
        assert!(w2 + 1448 >= w0 && w2 < w0);
    }

    #[test]
    fn timestamp_samples_are_whole_milliseconds_and_zero_ones_are_discarded() {
        let cfg = TcpConfig::default();
        let mss = cfg.mss() as u64;
        let mut r = RcvBuf::new(&cfg);
        r.start(SimTime::ZERO);
        // Echo sent at 10.2 ms, back at 10.9 ms: the same tick, no sample.
        r.on_data(SimTime::from_us(10_900), mss, SimTime::from_us(10_200), false, 0, 0, 0, false, 0, 0);
        assert_eq!(r.rtt(), SimTime::ZERO);
        // Echo sent at 11.9 ms, back at 12.1 ms: one tick, a 1 ms sample.
        r.on_data(SimTime::from_us(12_100), mss, SimTime::from_us(11_900), false, 0, 0, 0, false, 0, 0);
        assert_eq!(r.rtt(), SimTime::from_ms(1));
        // A larger sample is smoothed in only while nothing waits unread.
        r.on_data(SimTime::from_us(16_100), mss, SimTime::from_us(13_900), false, 0, 0, 0, false, 5_000, 5_000);
        assert_eq!(r.rtt(), SimTime::from_ms(1), "receive queue not empty: ignored");
        r.on_data(SimTime::from_us(18_100), mss, SimTime::from_us(14_900), false, 0, 0, 0, false, 0, 0);
        assert_eq!(r.rtt(), SimTime(SimTime::from_ms(1).0 * 7 / 8 + SimTime::from_ms(4).0 / 8));
    }

    #[test]
    fn the_time_to_receive_a_window_lowers_the_estimate_and_grows_the_buffer() {
        // A sub-ms path: no timestamp sample ever spans a tick, so only the
        // window-based samples count. A window received in a burst at 1 Gb/s
        // (0.5 ms for 62.6 KB of 8948 B segments) sets the estimate, and the
        // next burst read within it exceeds the initial space: the buffer grows.
        let mut cfg = TcpConfig::default();
        cfg.mtu_bytes = 9000;
        let mss = cfg.mss() as u64;
        let mut r = RcvBuf::new(&cfg);
        r.start(SimTime::ZERO);
        let w0 = r.window(0, 0, 0);
        assert_eq!(w0, 65_536 / mss * mss / 128 * 128);
        let gap = SimTime::from_ns(mss * 8); // one segment at 1 Gb/s
        let mut now = SimTime::from_us(100);
        let mut seq = 0;
        for _ in 0..40 {
            now = now + gap;
            seq += mss;
            r.on_data(now, mss, SimTime::from_us(50), true, seq, 0, 0, false, 0, 0);
            r.window(seq, 0, 0);
        }
        assert!(r.rtt() > SimTime::ZERO && r.rtt() < SimTime::from_ms(1), "{:?}", r.rtt());
        assert!(r.grows >= 1, "the buffer grew");
        assert!(r.clamp() > 65_536);
    }

    #[test]
    fn bytes_still_queued_do_not_count_as_read() {
        let cfg = TcpConfig::default();
        let mss = cfg.mss() as u64;
        let mut r = RcvBuf::new(&cfg);
        r.app_reads = true;
        r.start(SimTime::ZERO);
        r.on_data(SimTime::from_ms(3), mss, SimTime::from_ms(1), false, 0, 0, 0, false, 0, 0);
        assert_eq!(r.rtt(), SimTime::from_ms(2));
        // 70 KB read in the RTT but 60 KB of it still queued: 10 KB < space (14,480 B).
        r.space_adjust(SimTime::from_ms(3), 70_000, 60_000, 0);
        assert_eq!(r.grows, 0);
        r.space_adjust(SimTime::from_ms(6), 200_000, 0, 0);
        assert_eq!(r.grows, 1);
    }
}
