//! The receiving side: cumulative ACKs, out-of-order data, delayed ACKs and
//! ECN-Echo.
//!
//! - In-order data is acknowledged after `delack_count` full segments or when
//!   the delayed-ACK timer expires (RFC 1122 4.2.3.2, RFC 5681 4.2); a short
//!   segment and the last byte of the flow are acknowledged at once, and so are
//!   the first `quickack_segments` segments, like Linux's quick-ACK mode at the
//!   start of a connection.
//! - Out-of-order segments, duplicates and segments that fill a hole are
//!   acknowledged at once (RFC 5681 4.2), which drives fast retransmit.
//! - SACK (RFC 2018 4): with `sack`, every ACK sent while out-of-order data is
//!   held carries up to three blocks: first the block holding the segment that
//!   triggered the ACK, then the most recently reported other blocks (Linux
//!   keeps the four most recent). With `dsack`, a duplicate segment is reported
//!   once in a D-SACK block placed first (RFC 2883 4). With SACK
//!   compression, ACKs withheld are sent before a block that was never
//!   reported first or second would move further down the list (Linux's
//!   `tcp_sack_new_ofo_skb`), so no block is lost to the sender.
//! - ECN: classic mode sets ECE on every ACK from a CE mark until a segment with
//!   CWR arrives (RFC 3168 6.1.3). DCTCP mode echoes each packet's CE state, and
//!   sends an immediate ACK when that state changes so the sender can tell
//!   marked bytes from unmarked ones (RFC 8257 3.2).
//! - Interactive (ping-pong) mode, as Linux's `pingpong` flag: when the
//!   receiving host writes data on the reverse direction within one
//!   delayed-ACK timeout of the last data it received, the receiver stops
//!   acknowledging short segments and quick-ACK segments at once and delays
//!   the ACK instead, so that the reverse data carries it (`take_piggyback`;
//!   `tcp_in_quickack_mode` is false in ping-pong mode, and
//!   `tcp_event_data_sent` enters it). Two full segments, out-of-order data
//!   and duplicates are still acknowledged at once. A delayed-ACK timer that
//!   fires leaves the mode (`tcp_delack_timer_handler`).
//! - Receive window: fixed (`rwnd`), or autotuned as Linux (`rcvbuf.rs`)
//!   and advertised in every ACK and the SYN-ACK.
//! - A receiving application (`reader.rs`, `tcp.receiver_app`) instead of
//!   the ideal reader: the bytes it has not read take receive window
//!   (`tcp_space`), and in-order data is acknowledged at once only if the
//!   window would not shrink, as `__tcp_ack_snd_check` does: more than one
//!   segment since the last ACK (here: `delack_count` segments) *and*
//!   `__tcp_select_window() >= rcv_wnd`; otherwise the ACK waits for the
//!   application's read (`tcp_cleanup_rbuf`: an ACK is scheduled and more
//!   than one segment is unacknowledged, or the read freed enough room to
//!   double the window) or for the delayed-ACK timer. Segments that arrive
//!   while the application holds the socket wait in its backlog and are
//!   processed, coalesced, when it releases the lock. A delayed-ACK timer
//!   that fires while the socket is held is deferred to the end of the read
//!   (`tcp_delack_timer`: `icsk_ack.blocked`). A full-sized segment with
//!   PSH (the end of a sender's GSO buffer) marks the pending ACK pushed
//!   (`tcp_measure_rcv_mss`, Linux 6.7+: `ICSK_ACK_PUSHED`), and a read that
//!   then leaves nothing queued acknowledges at once, even a single segment
//!   (`tcp_cleanup_rbuf`, outside ping-pong mode); not with `ack_pushed:
//!   false` (kernels before 6.7).

use super::rcvbuf::RcvBuf;
use super::reader::{Reader, ReaderState};
use super::{Outbox, SackBlocks, SegKind, Segment, TcpConfig};
use crate::units::SimTime;

/// SACK blocks an ACK is assumed to deliver: of the four Linux keeps, three
/// fit beside the timestamps, and one ACK may be lost (`TCP_SACK_BLOCKS_EXPECTED`).
const SACK_BLOCKS_EXPECTED: usize = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiverState {
    /// Waiting for SYN.
    Listen,
    /// SYN-ACK sent; data may arrive.
    Established,
}

#[derive(Clone, Debug)]
pub struct Receiver {
    pub state: ReceiverState,
    /// Next byte expected.
    pub rcv_nxt: u64,
    total: u64,
    /// Out-of-order intervals `[start, end)`, sorted, disjoint and not touching.
    ooo: Vec<(u64, u64)>,
    sack: bool,
    dsack: bool,
    /// SACK blocks in the order they are reported, most recent first (RFC 2018 4).
    recent: Vec<(u64, u64)>,
    /// A duplicate to report in the next ACK (RFC 2883).
    dsack_pending: Option<(u64, u64)>,
    unacked_segments: u32,
    delack_deadline: Option<SimTime>,
    delack_count: u32,
    delack_timeout: SimTime,
    quickack_left: u32,
    /// SACK compression (`tcp_comp_sack_nr`, 0: off) and its longest delay.
    comp_nr: u32,
    comp_delay: SimTime,
    /// ACKs withheld since the last one sent (`compressed_ack`), the
    /// `rcv_nxt` the immediate duplicates counted for, those duplicates,
    /// and when the withheld ACK goes (`compressed_ack_timer`).
    compressed_ack: u32,
    compressed_ack_rcv_nxt: u64,
    dup_ack_counter: u32,
    comp_deadline: Option<SimTime>,
    /// The compressed-ACK timer fired while the application held the socket.
    comp_deferred: bool,
    /// ACKs not sent thanks to SACK compression (`TcpExtTCPAckCompressed`).
    pub acks_compressed: u64,
    /// Interactive mode (see the module comment).
    pingpong: bool,
    /// When in-order data last arrived.
    last_data: SimTime,
    mss: u32,
    ts_recent: SimTime,
    dctcp: bool,
    ecn: bool,
    /// Classic ECN: echo until CWR.
    ece_latched: bool,
    /// DCTCP: CE state of the last data segment.
    last_ce: bool,
    /// When every byte had arrived in order.
    pub complete_at: Option<SimTime>,
    /// CE-marked data segments received.
    pub ce_segments: u64,
    /// Receive-window autotuning (`None`: the fixed window of the configuration).
    pub rcvbuf: Option<RcvBuf>,
    /// The receiving application (`None`: the ideal reader).
    pub app: Option<Box<Reader>>,
    /// `rcv_nxt` when the last ACK was sent (`rcv_wup`).
    rcv_wup: u64,
    /// A delayed-ACK timer fired while the application held the socket.
    delack_blocked: bool,
    /// A full-sized PSH segment arrived in order since the last ACK
    /// (`ICSK_ACK_PUSHED`), and whether such segments count (`ack_pushed`).
    pushed: bool,
    ack_pushed_full: bool,
    /// Data segments that arrived (each, before any backlog coalescing) and ACKs sent.
    pub data_segments: u64,
    pub acks_sent: u64,
    /// ACKs sent at the end of a read (`tcp_cleanup_rbuf`), and at once for
    /// out-of-order data, duplicates and hole fills.
    pub acks_at_read: u64,
    pub acks_out_of_order: u64,
}

impl Receiver {
    pub fn new(cfg: &TcpConfig, total: u64) -> Self {
        Receiver {
            state: ReceiverState::Listen,
            rcv_nxt: 0,
            total,
            ooo: Vec::new(),
            sack: cfg.sack,
            dsack: cfg.dsack,
            recent: Vec::new(),
            dsack_pending: None,
            unacked_segments: 0,
            delack_deadline: None,
            delack_count: cfg.delack_count,
            delack_timeout: SimTime(cfg.delack_timeout_ps),
            quickack_left: cfg.quickack_segments,
            pingpong: false,
            last_data: SimTime::ZERO,
            mss: cfg.mss(),
            ts_recent: SimTime::ZERO,
            dctcp: cfg.cc == super::CcKind::Dctcp,
            ecn: cfg.uses_ecn(),
            ece_latched: false,
            last_ce: false,
            complete_at: None,
            ce_segments: 0,
            rcvbuf: if cfg.rcv_autotune {
                Some(RcvBuf::new(cfg))
            } else {
                cfg.receiver_app.as_ref().map(|_| RcvBuf::fixed(cfg))
            },
            app: cfg.receiver_app.as_ref().map(|a| Box::new(Reader::new(a))),
            rcv_wup: 0,
            delack_blocked: false,
            pushed: false,
            ack_pushed_full: cfg.ack_pushed,
            data_segments: 0,
            acks_sent: 0,
            acks_at_read: 0,
            acks_out_of_order: 0,
            comp_nr: if cfg.sack { cfg.sack_compression_segments } else { 0 },
            comp_delay: SimTime(cfg.sack_compression_delay_ps),
            compressed_ack: 0,
            compressed_ack_rcv_nxt: 0,
            dup_ack_counter: 0,
            comp_deadline: None,
            comp_deferred: false,
            acks_compressed: 0,
        }
    }

    pub fn next_deadline(&self) -> Option<SimTime> {
        let min = |a: Option<SimTime>, b: Option<SimTime>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        min(min(self.delack_deadline, self.comp_deadline), self.app.as_ref().and_then(|a| a.deadline()))
    }

    /// An ACK for out-of-order data (`__tcp_ack_snd_check` with the
    /// out-of-order queue non-empty): at once, unless SACK compression
    /// withholds it. Linux sends the first three duplicates for one
    /// `rcv_nxt` at once, then at most one ACK per min(`tcp_comp_sack_delay_ns`,
    /// 5% of the receiver's RTT) or per `tcp_comp_sack_nr` withheld ACKs.
    fn ack_out_of_order(&mut self, now: SimTime, out: &mut Outbox) {
        self.acks_out_of_order += 1;
        if self.comp_nr == 0 || self.compressed_ack >= self.comp_nr {
            self.ack_now(now, out);
            return;
        }
        if self.compressed_ack_rcv_nxt != self.rcv_nxt {
            self.compressed_ack_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < 3 {
            self.dup_ack_counter += 1;
            self.ack_now(now, out);
            return;
        }
        self.compressed_ack += 1;
        if self.comp_deadline.is_none() {
            let rtt = self.rcvbuf.as_ref().map_or(SimTime::ZERO, |r| r.rtt());
            self.comp_deadline = Some(now + self.comp_delay.min(SimTime(rtt.0 / 20)));
        }
    }

    /// Bytes received in order but not read by the application.
    fn unread(&self) -> u64 {
        self.unread_at(self.rcv_nxt)
    }

    /// Bytes in order up to `rcv_nxt` that the application has not read
    /// (none for the ideal reader).
    fn unread_at(&self, rcv_nxt: u64) -> u64 {
        self.app.as_ref().map_or(0, |a| rcv_nxt.min(self.total) - a.copied)
    }

    /// A segment from the sender arrived; `ce` tells whether it was CE-marked.
    #[inline(always)]
    pub fn on_segment(&mut self, now: SimTime, seg: &Segment, ce: bool, out: &mut Outbox) {
        match (self.state, seg.kind) {
            // RFC 793: a SYN in LISTEN is answered with SYN-ACK; a repeated
            // SYN (the SYN-ACK was lost) is answered again.
            (_, SegKind::Syn) => {
                self.state = ReceiverState::Established;
                let mut s = Segment::control(SegKind::SynAck, now);
                s.ts_echo = seg.ts;
                if let Some(r) = &mut self.rcvbuf {
                    r.start(now);
                    s.wnd = r.window(self.rcv_nxt, 0, 0);
                }
                out.push((true, s));
            }
            (ReceiverState::Established, SegKind::Data) => {
                self.data_segments += 1;
                if let Some(app) = &mut self.app {
                    if app.owns_socket() {
                        // tcp_v4_rcv: the user owns the socket; tcp_add_backlog.
                        app.stats.backlog_segments += 1;
                        app.backlog.push((*seg, ce));
                        return;
                    }
                }
                self.on_data(now, seg, ce, out);
                self.data_ready(now);
            }
            // Data before the SYN cannot happen with a reliable SYN exchange; ignore.
            _ => {}
        }
    }

    #[inline(always)]
    fn on_data(&mut self, now: SimTime, seg: &Segment, ce: bool, out: &mut Outbox) {
        if self.rcvbuf.is_some() {
            let before = self.rcv_nxt;
            // Measure first: the ACK this segment triggers advertises the new window.
            let advances = seg.seq <= before && seg.seq + seg.len as u64 > before;
            let ooo = if advances { 0 } else { self.ooo_bytes() };
            let end = seg.seq + seg.len as u64;
            let rcv_nxt_after = if advances { self.rcv_nxt_after(end) } else { before };
            let unread = self.unread_at(rcv_nxt_after);
            let unread_before = self.unread();
            // The out-of-order queue's reach beyond rcv_nxt, with this segment in it.
            let queued_ooo = seg.seq > before;
            let highest = self.ooo.last().map_or(0, |&(_, e)| e);
            let highest = if queued_ooo { highest.max(end) } else { highest };
            let ooo_span = highest.saturating_sub(rcv_nxt_after);
            if let Some(r) = &mut self.rcvbuf {
                r.on_data(
                    now,
                    seg.len as u64,
                    seg.ts_echo,
                    advances,
                    rcv_nxt_after,
                    ooo,
                    ooo_span,
                    queued_ooo,
                    unread,
                    unread_before,
                );
            }
        }
        if ce {
            self.ce_segments += 1;
        }
        if self.ecn {
            if self.dctcp {
                if ce != self.last_ce && self.unacked_segments > 0 {
                    // Acknowledge what arrived under the old CE state first.
                    self.send_ack(now, self.last_ce, out);
                }
                self.last_ce = ce;
            } else {
                if seg.cwr {
                    self.ece_latched = false;
                }
                if ce {
                    self.ece_latched = true;
                }
            }
        }
        let (start, end) = (seg.seq, seg.seq + seg.len as u64);
        if end <= self.rcv_nxt {
            // Entirely old: a spurious retransmission. ACK at once, with a
            // D-SACK for it (RFC 2883 4.1.1).
            if self.dsack {
                self.dsack_pending = Some((start, end));
            }
            self.acks_out_of_order += 1;
            self.ack_now(now, out);
            return;
        }
        if start > self.rcv_nxt {
            // A hole before this segment: keep it and send a duplicate ACK.
            let k = self.ooo.partition_point(|&(s, _)| s <= start);
            if self.dsack && k > 0 && self.ooo[k - 1].1 >= end {
                // Already held above the cumulative ACK (RFC 2883 4.1.2).
                self.dsack_pending = Some((start, end));
            }
            let block = self.insert_ooo(start, end);
            if self.sack {
                // With ACKs withheld by SACK compression, a block that would
                // move to the third place or further (or out of the list)
                // without ever having been reported could be lost to the
                // sender, which would then retransmit data that arrived.
                // Linux (`tcp_sack_new_ofo_skb`, since 5.8) sends the
                // withheld ACK first, before it rotates a block found third or
                // later to the front or adds a new block to two or more
                // (`TCP_SACK_BLOCKS_EXPECTED` = 2): every block has then been
                // reported first or second at least once.
                if self.compressed_ack > 0 {
                    let place = self.recent.iter().position(|&(s, e)| s <= end && start <= e);
                    if place.unwrap_or(self.recent.len()) >= SACK_BLOCKS_EXPECTED {
                        self.acks_out_of_order += 1;
                        self.ack_now(now, out);
                    }
                }
                // RFC 2018 4: the block holding this segment goes first; the
                // blocks it absorbed are no longer reported separately.
                self.recent.retain(|&(s, e)| e < block.0 || s > block.1);
                self.recent.insert(0, block);
                self.recent.truncate(4);
            }
            self.ack_out_of_order(now, out);
            return;
        }
        if start < self.rcv_nxt && self.dsack {
            // Partly old (RFC 2883 4.1.1 reports the duplicated part).
            self.dsack_pending = Some((start, self.rcv_nxt));
        }
        if self.unacked_segments == 0 {
            // The next ACK echoes the first segment it covers (RFC 7323 4.3).
            self.ts_recent = seg.ts;
        }
        let had_hole = !self.ooo.is_empty();
        self.rcv_nxt = end;
        while let Some(&(s, e)) = self.ooo.first() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.ooo.remove(0);
        }
        if self.sack && had_hole {
            let una = self.rcv_nxt;
            self.recent.retain(|&(_, e)| e > una);
        }
        if self.complete_at.is_none() && self.app.is_none() && self.rcv_nxt >= self.total {
            self.complete_at = Some(now);
        }
        // A segment coalesced in the backlog counts as the segments it holds
        // (Linux compares bytes: rcv_nxt - rcv_wup > rcv_mss).
        self.unacked_segments += if self.app.is_some() && seg.len > self.mss { seg.len.div_ceil(self.mss) } else { 1 };
        self.last_data = now;
        let full = seg.len >= self.mss;
        // tcp_measure_rcv_mss: a full-sized segment with PSH is likely the end
        // of a write (or of a GSO buffer): the ACK is marked pushed.
        if full && seg.psh && self.ack_pushed_full {
            self.pushed = true;
        }
        if self.pingpong && !had_hole {
            if self.unacked_segments >= self.delack_count && full {
                self.ack_now(now, out);
            } else if self.delack_deadline.is_none() {
                self.delack_deadline = Some(now + self.delack_timeout);
            }
        } else if had_hole || self.quickack_left > 0 || self.rcv_nxt >= self.total || !full {
            self.quickack_left = self.quickack_left.saturating_sub(1);
            self.acks_out_of_order += had_hole as u64;
            self.ack_now(now, out);
        } else if self.unacked_segments >= self.delack_count && self.window_would_not_shrink() {
            self.ack_now(now, out);
        } else if self.delack_deadline.is_none() {
            self.delack_deadline = Some(now + self.delack_timeout);
        }
    }

    /// `__tcp_ack_snd_check`'s window test: the window the free space allows
    /// now is at least the one last advertised (always so for the ideal
    /// reader, whose free space only grows while data is in order).
    fn window_would_not_shrink(&self) -> bool {
        match (&self.app, &self.rcvbuf) {
            (Some(_), Some(r)) => r.select(self.ooo_bytes(), self.unread()) >= r.rcv_wnd,
            _ => true,
        }
    }

    /// In-order data is readable: a sleeping application wakes up.
    fn data_ready(&mut self, now: SimTime) {
        let unread = self.unread();
        if let Some(app) = &mut self.app {
            app.stats.max_unread = app.stats.max_unread.max(unread);
            if unread > 0 {
                app.data_ready(now);
            }
        }
    }

    /// Runs the application's steps due at `now`: wake-ups, ends of copies.
    /// A process on a core becomes runnable instead of reading: its calls
    /// start and end where the core runs them (`core_run`, `core_done`).
    fn run_app(&mut self, now: SimTime, out: &mut Outbox) {
        loop {
            let Some(app) = &mut self.app else { return };
            match app.state {
                ReaderState::Waking(at) if at <= now && app.on_core => {
                    app.state = ReaderState::Runnable;
                    return;
                }
                ReaderState::Waking(at) if at <= now => self.begin_read(now),
                ReaderState::Copying { until, chunk, done } if until <= now && !app.on_core => {
                    self.end_copy(now, chunk, done, out)
                }
                _ => return,
            }
        }
    }

    /// A process on a core: the core runs it at `now` (it was queued, or
    /// goes on copying within one call). Returns how long it holds the
    /// core (the copy of its chunk, or of the chunk's next turn with
    /// `copy_slice_bytes`), or `None` when it found nothing to read and sleeps.
    pub fn core_run(&mut self, now: SimTime) -> Option<SimTime> {
        let app = self.app.as_mut()?;
        if let ReaderState::Queued(since) = app.state {
            app.stats.core_waits += 1;
            app.stats.core_wait_ps += (now - since).0;
            app.state = ReaderState::Running;
            self.begin_read(now);
        }
        let app = self.app.as_mut()?;
        match app.state {
            ReaderState::Copying { .. } => Some(app.start_slice()),
            _ => None,
        }
    }

    /// A process on a core: its turn on the core ended at `now`. With part
    /// of the chunk left it goes on copying at its next turn; otherwise the
    /// chunk is done, and the process may go on copying (the call continues
    /// on the core), want the core again (`Runnable`), wait on a timer, or
    /// sleep.
    pub fn core_done(&mut self, now: SimTime, out: &mut Outbox) {
        let Some(app) = &mut self.app else { return };
        if let ReaderState::Copying { chunk, done, .. } = app.state {
            if !app.end_slice() {
                // More of the chunk to copy: the process keeps the socket.
                return;
            }
            self.end_copy(now, chunk, done, out);
        }
        self.run_app(now, out);
    }

    /// A `read()` call starts (`tcp_recvmsg`: `lock_sock`).
    fn begin_read(&mut self, now: SimTime) {
        let unread = self.unread();
        let Some(app) = &mut self.app else { return };
        let chunk = unread.min(app.read_bytes());
        if chunk == 0 {
            app.state = ReaderState::Asleep;
        } else {
            app.stats.reads += 1;
            app.copy(now, chunk, 0);
        }
    }

    /// Copying `chunk` bytes ended; the call had copied `done` before.
    fn end_copy(&mut self, now: SimTime, chunk: u64, done: u64, out: &mut Outbox) {
        let Some(app) = &mut self.app else { return };
        app.copied += chunk;
        app.stats.bytes_read += chunk;
        let done = done + chunk;
        if done < app.read_bytes() && !app.backlog.is_empty() {
            // tcp_recvmsg_locked: everything queued is copied but the call
            // wants more: process the backlog (__sk_flush_backlog) and go on.
            self.process_backlog(now, out);
            let unread = self.unread();
            let app = self.app.as_mut().unwrap();
            let more = unread.min(app.read_bytes() - done);
            if more > 0 {
                app.copy(now, more, done);
                return;
            }
        }
        let copied = self.app.as_ref().unwrap().copied;
        if self.complete_at.is_none() && copied >= self.total {
            self.complete_at = Some(now);
        }
        // The end of tcp_recvmsg_locked: right-sizing from the bytes read,
        // then tcp_cleanup_rbuf; release_sock processes the backlog.
        let ooo_span = self.ooo.last().map_or(0, |&(_, e)| e.saturating_sub(self.rcv_nxt));
        let inq = self.unread();
        if let Some(r) = &mut self.rcvbuf {
            r.space_adjust(now, copied, inq, ooo_span);
        }
        self.cleanup_rbuf(now, done, out);
        self.app.as_mut().unwrap().state = ReaderState::Running;
        self.process_backlog(now, out);
        if self.comp_deferred && self.compressed_ack > 0 {
            self.ack_now(now, out);
        }
        self.comp_deferred = false;
        // The application loops: it reads again at once if data is readable.
        let unread = self.unread();
        let app = self.app.as_mut().unwrap();
        app.state = app.after_call(now, unread > 0);
    }

    /// `tcp_cleanup_rbuf` after a read that copied `copied` bytes.
    fn cleanup_rbuf(&mut self, now: SimTime, copied: u64, out: &mut Outbox) {
        let Some(r) = &self.rcvbuf else { return };
        // inet_csk_ack_scheduled: data arrived since the last ACK; then more
        // than one segment is unacknowledged, or the read emptied the receive
        // queue (out-of-order data included: sk_rmem_alloc is 0) after a
        // pushed segment, outside ping-pong mode.
        let emptied_pushed = copied > 0 && self.pushed && !self.pingpong && self.unread() == 0 && self.ooo.is_empty();
        let mut time_to_ack = self.unacked_segments > 0
            && (self.delack_blocked || self.rcv_nxt - self.rcv_wup > self.mss as u64 || emptied_pushed);
        if copied > 0 && !time_to_ack {
            // "Send ACK now, if this read freed lots of space": the window
            // can at least double.
            let now_wnd = r.receive_window(self.rcv_nxt);
            if 2 * now_wnd <= r.clamp() {
                let new = r.select(self.ooo_bytes(), self.unread());
                time_to_ack = new > 0 && new >= 2 * now_wnd;
            }
        }
        self.delack_blocked = false;
        if time_to_ack {
            self.acks_at_read += 1;
            self.ack_now(now, out);
        }
    }

    /// Processes the segments held in the backlog (`release_sock` ->
    /// `sk_backlog_rcv`, or `__sk_flush_backlog`): a segment that continues
    /// the one before it, with the same CE mark and no CWR, was coalesced
    /// with it on arrival (`tcp_add_backlog`) and is processed as one.
    fn process_backlog(&mut self, now: SimTime, out: &mut Outbox) {
        let Some(app) = &mut self.app else { return };
        if app.backlog.is_empty() {
            return;
        }
        let mut backlog = std::mem::take(&mut app.backlog);
        let mut coalesced = 0;
        let mut k = 0;
        while k < backlog.len() {
            let (mut seg, ce) = backlog[k];
            k += 1;
            while k < backlog.len() {
                let (next, next_ce) = backlog[k];
                if next.seq != seg.seq + seg.len as u64 || next_ce != ce || next.cwr {
                    break;
                }
                seg.len += next.len;
                seg.ts_echo = next.ts_echo;
                seg.psh |= next.psh;
                coalesced += 1;
                k += 1;
            }
            self.on_data(now, &seg, ce, out);
        }
        backlog.clear();
        let unread = self.unread();
        let app = self.app.as_mut().unwrap();
        app.stats.backlog_coalesced += coalesced;
        app.backlog = backlog;
        app.stats.max_unread = app.stats.max_unread.max(unread);
    }

    /// Adds `[start, end)` to the out-of-order intervals, merging it with
    /// those it overlaps or touches; returns the interval that now holds it.
    fn insert_ooo(&mut self, start: u64, end: u64) -> (u64, u64) {
        // Intervals i..j overlap or touch [start, end].
        let i = self.ooo.partition_point(|&(_, e)| e < start);
        let j = self.ooo.partition_point(|&(s, _)| s <= end);
        if i == j {
            self.ooo.insert(i, (start, end));
        } else {
            let merged = (self.ooo[i].0.min(start), self.ooo[j - 1].1.max(end));
            self.ooo[i] = merged;
            self.ooo.drain(i + 1..j);
        }
        self.ooo[i]
    }

    fn ack_now(&mut self, now: SimTime, out: &mut Outbox) {
        let ece = if self.dctcp { self.last_ce } else { self.ece_latched };
        self.send_ack(now, ece, out);
    }

    fn send_ack(&mut self, now: SimTime, ece: bool, out: &mut Outbox) {
        let s = self.ack_segment(now, ece);
        out.push((true, s));
    }

    /// The host wrote data on the reverse direction at `now`: within one
    /// delayed-ACK timeout of the last data received, the exchange is
    /// interactive (Linux's `tcp_event_data_sent`).
    pub fn note_reverse_write(&mut self, now: SimTime) {
        if self.rcv_nxt > 0 && now.saturating_sub(self.last_data) < self.delack_timeout {
            self.pingpong = true;
        }
    }

    /// The ACK a reverse data segment sent at `now` carries: `Some` when an
    /// acknowledgment is due (data arrived since the last ACK) and it needs
    /// no SACK option (which a data segment here has no room for: then the
    /// ACK stays pending). Taking it cancels the delayed ACK, as any segment
    /// carrying the ACK does (`tcp_event_ack_sent`).
    pub fn take_piggyback(&mut self, now: SimTime) -> Option<Segment> {
        if self.unacked_segments == 0
            || self.state != ReceiverState::Established
            || self.dsack_pending.is_some()
            || !self.recent.is_empty()
        {
            return None;
        }
        let ece = if self.dctcp { self.last_ce } else { self.ece_latched };
        Some(self.ack_segment(now, ece))
    }

    /// Builds the cumulative ACK of everything received and resets the delayed-ACK state.
    fn ack_segment(&mut self, now: SimTime, ece: bool) -> Segment {
        let mut s = Segment::control(SegKind::Ack, now);
        s.ack = self.rcv_nxt;
        if self.rcvbuf.is_some() {
            let ooo = self.ooo_bytes();
            let unread = self.unread();
            if let Some(r) = &mut self.rcvbuf {
                s.wnd = r.window(self.rcv_nxt, ooo, unread);
            }
        }
        self.rcv_wup = self.rcv_nxt;
        self.acks_sent += 1;
        // tcp_event_ack_sent: the withheld ACKs are counted and the timer stops.
        self.acks_compressed += self.compressed_ack as u64;
        self.compressed_ack = 0;
        self.comp_deadline = None;
        self.comp_deferred = false;
        s.ece = ece;
        s.ts_echo = self.ts_recent;
        if let Some((ds, de)) = self.dsack_pending.take() {
            s.sack.push(ds, de);
        }
        for &(bs, be) in &self.recent {
            if s.sack.len() == SackBlocks::MAX {
                break;
            }
            s.sack.push(bs, be);
        }
        self.unacked_segments = 0;
        self.delack_deadline = None;
        // tcp_event_ack_sent -> inet_csk_clear_xmit_timer: icsk_ack.pending = 0.
        self.pushed = false;
        s
    }

    pub fn on_timer(&mut self, now: SimTime, out: &mut Outbox) {
        if let Some(t) = self.delack_deadline {
            if t <= now {
                // A missed delayed ACK ends interactive mode.
                self.pingpong = false;
                if self.app.as_ref().is_some_and(|a| a.owns_socket()) {
                    // tcp_delack_timer: the user owns the socket; the ACK
                    // goes when the read ends.
                    self.delack_blocked = true;
                    self.delack_deadline = None;
                } else {
                    self.ack_now(now, out);
                }
            }
        }
        if let Some(t) = self.comp_deadline {
            if t <= now {
                self.comp_deadline = None;
                if self.app.as_ref().is_some_and(|a| a.owns_socket()) {
                    // tcp_compressed_ack_kick: deferred to release_sock.
                    self.comp_deferred = true;
                } else if self.compressed_ack > 0 {
                    self.ack_now(now, out);
                }
            }
        }
        self.run_app(now, out);
    }

    /// Bytes held out of order.
    fn ooo_bytes(&self) -> u64 {
        self.ooo.iter().map(|&(s, e)| e - s).sum()
    }

    /// `rcv_nxt` once in-order data up to `end` and the held blocks it reaches are in.
    fn rcv_nxt_after(&self, end: u64) -> u64 {
        let mut n = end;
        for &(s, e) in &self.ooo {
            if s > n {
                break;
            }
            n = n.max(e);
        }
        n
    }

    /// Bytes delivered in order to the application (read by it, with a
    /// receiving application).
    pub fn delivered(&self) -> u64 {
        match &self.app {
            Some(a) => a.copied,
            None => self.rcv_nxt.min(self.total),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> TcpConfig {
        TcpConfig { quickack_segments: 0, ..TcpConfig::rfc() }
    }

    fn data(seq: u64, len: u32, ts: u64) -> Segment {
        let mut s = Segment::control(SegKind::Data, SimTime(ts));
        s.seq = seq;
        s.len = len;
        s
    }

    fn established(c: &TcpConfig, total: u64) -> Receiver {
        let mut r = Receiver::new(c, total);
        let mut out = Vec::new();
        r.on_segment(SimTime(0), &Segment::control(SegKind::Syn, SimTime(0)), false, &mut out);
        assert_eq!(out[0].1.kind, SegKind::SynAck);
        r
    }

    #[test]
    fn delayed_ack_every_second_full_segment_and_on_timeout() {
        let c = cfg();
        let mss = c.mss();
        let mut r = established(&c, 1_000_000);
        let mut out = Vec::new();
        r.on_segment(SimTime(10), &data(0, mss, 10), false, &mut out);
        assert!(out.is_empty());
        assert_eq!(r.next_deadline(), Some(SimTime(10) + SimTime(c.delack_timeout_ps)));
        r.on_segment(SimTime(20), &data(mss as u64, mss, 20), false, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1.ack, 2 * mss as u64);
        assert_eq!(out[0].1.ts_echo, SimTime(10), "echoes the first unacknowledged segment's timestamp");
        assert_eq!(r.next_deadline(), None);
        out.clear();
        r.on_segment(SimTime(30), &data(2 * mss as u64, mss, 30), false, &mut out);
        let t = r.next_deadline().unwrap();
        r.on_timer(t, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1.ack, 3 * mss as u64);
    }

    #[test]
    fn ping_pong_mode_delays_short_segments_for_the_reply_to_carry_the_ack() {
        let c = TcpConfig { quickack_segments: 16, ..TcpConfig::default() };
        let mut r = established(&c, u64::MAX);
        let mut out = Vec::new();
        // Before the exchange is interactive: a short segment (and a quick-ACK one) is acknowledged at once.
        r.on_segment(SimTime(10), &data(0, 100, 10), false, &mut out);
        assert_eq!(out.len(), 1);
        assert!(r.take_piggyback(SimTime(11)).is_none(), "nothing left to acknowledge");
        out.clear();
        // The host answers within the delayed-ACK timeout: ping-pong mode.
        r.note_reverse_write(SimTime(12));
        r.on_segment(SimTime(20), &data(100, 100, 20), false, &mut out);
        assert!(out.is_empty(), "the ACK waits for the reply");
        assert_eq!(r.next_deadline(), Some(SimTime(20) + SimTime(c.delack_timeout_ps)));
        let a = r.take_piggyback(SimTime(21)).expect("the reply carries the ACK");
        assert_eq!((a.ack, a.ts_echo), (200, SimTime(20)));
        assert_eq!(r.next_deadline(), None, "taking the ACK cancels the delayed ACK");
        // A delayed-ACK timer that fires ends the mode: the next short segment is ACKed at once.
        r.on_segment(SimTime(30), &data(200, 100, 30), false, &mut out);
        let t = r.next_deadline().unwrap();
        r.on_timer(t, &mut out);
        assert_eq!(out.len(), 1);
        out.clear();
        r.on_segment(t + SimTime(1), &data(300, 100, 40), false, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn out_of_order_data_gets_duplicate_acks_and_the_fill_a_full_ack() {
        let c = cfg();
        let m = c.mss() as u64;
        let mut r = established(&c, 1_000_000);
        let mut out = Vec::new();
        r.on_segment(SimTime(1), &data(0, c.mss(), 1), false, &mut out);
        for k in 2..5 {
            r.on_segment(SimTime(k), &data(k * m, c.mss(), k), false, &mut out);
        }
        let acks: Vec<u64> = out.iter().map(|(_, s)| s.ack).collect();
        assert_eq!(acks, vec![m, m, m], "three duplicate ACKs for the hole at {m}");
        out.clear();
        r.on_segment(SimTime(9), &data(m, c.mss(), 9), false, &mut out);
        assert_eq!(out[0].1.ack, 5 * m, "the retransmission fills the hole");
    }

    #[test]
    fn classic_ecn_echo_latches_until_cwr() {
        let c = TcpConfig { ecn: true, delack_count: 1, ..cfg() };
        let m = c.mss() as u64;
        let mut r = established(&c, 1_000_000);
        let mut out = Vec::new();
        r.on_segment(SimTime(1), &data(0, c.mss(), 1), true, &mut out);
        r.on_segment(SimTime(2), &data(m, c.mss(), 2), false, &mut out);
        let mut cwr = data(2 * m, c.mss(), 3);
        cwr.cwr = true;
        r.on_segment(SimTime(3), &cwr, false, &mut out);
        let eces: Vec<bool> = out.iter().map(|(_, s)| s.ece).collect();
        assert_eq!(eces, vec![true, true, false]);
    }

    #[test]
    fn dctcp_echo_follows_each_packet_and_acks_on_change() {
        let c = TcpConfig { cc: super::super::CcKind::Dctcp, ..cfg() };
        let m = c.mss() as u64;
        let mut r = established(&c, 1_000_000);
        let mut out = Vec::new();
        r.on_segment(SimTime(1), &data(0, c.mss(), 1), false, &mut out); // delayed
        r.on_segment(SimTime(2), &data(m, c.mss(), 2), true, &mut out); // state change
        let acks: Vec<(u64, bool)> = out.iter().map(|(_, s)| (s.ack, s.ece)).collect();
        assert_eq!(acks, vec![(m, false)], "immediate ACK for the unmarked segment");
        r.on_segment(SimTime(3), &data(2 * m, c.mss(), 3), true, &mut out);
        assert_eq!((out[1].1.ack, out[1].1.ece), (3 * m, true));
    }

    #[test]
    fn completion_is_recorded_when_the_last_byte_arrives_in_order() {
        let c = cfg();
        let mut r = established(&c, 3000);
        let mut out = Vec::new();
        r.on_segment(SimTime(5), &data(1448, 1448, 5), false, &mut out);
        r.on_segment(SimTime(6), &data(2896, 104, 6), false, &mut out);
        assert_eq!(r.complete_at, None);
        r.on_segment(SimTime(7), &data(0, 1448, 7), false, &mut out);
        assert_eq!(r.complete_at, Some(SimTime(7)));
        assert_eq!(r.delivered(), 3000);
    }

    /// Linux defaults without the start's quick ACKs, and without SACK
    /// compression (every out-of-order segment acknowledged; the tests of
    /// compression turn it on).
    fn sack_cfg() -> TcpConfig {
        TcpConfig { quickack_segments: 0, sack_compression_segments: 0, ..TcpConfig::default() }
    }

    fn blocks(out: &Outbox) -> Vec<Vec<(u64, u64)>> {
        out.iter().map(|(_, s)| s.sack.as_slice().to_vec()).collect()
    }

    #[test]
    fn sack_reports_the_block_of_the_latest_segment_first_then_the_most_recent_others() {
        let c = sack_cfg();
        let m = c.mss() as u64;
        let mut r = established(&c, 1_000_000);
        let mut out = Vec::new();
        // Segments 2, 4, 6, 8 arrive (0, 1, 3, 5, 7 missing).
        for k in [2u64, 4, 6, 8] {
            r.on_segment(SimTime(k), &data(k * m, c.mss(), k), false, &mut out);
        }
        let b = blocks(&out);
        assert_eq!(b[0], vec![(2 * m, 3 * m)]);
        assert_eq!(b[1], vec![(4 * m, 5 * m), (2 * m, 3 * m)]);
        assert_eq!(b[3], vec![(8 * m, 9 * m), (6 * m, 7 * m), (4 * m, 5 * m)], "at most three blocks");
        // Segment 5 joins blocks 4 and 6: the merged block goes first.
        out.clear();
        r.on_segment(SimTime(9), &data(5 * m, c.mss(), 9), false, &mut out);
        assert_eq!(blocks(&out)[0], vec![(4 * m, 7 * m), (8 * m, 9 * m), (2 * m, 3 * m)]);
        // Segments 0 and 1 fill the first hole: blocks below the ACK disappear.
        out.clear();
        r.on_segment(SimTime(10), &data(0, c.mss(), 10), false, &mut out);
        r.on_segment(SimTime(11), &data(m, c.mss(), 11), false, &mut out);
        assert_eq!(out[1].1.ack, 3 * m);
        assert_eq!(blocks(&out)[1], vec![(4 * m, 7 * m), (8 * m, 9 * m)]);
    }

    #[test]
    fn a_duplicate_segment_is_reported_once_in_a_dsack_block_placed_first() {
        let c = sack_cfg();
        let m = c.mss() as u64;
        let mut r = established(&c, 1_000_000);
        let mut out = Vec::new();
        r.on_segment(SimTime(1), &data(0, c.mss(), 1), false, &mut out);
        r.on_segment(SimTime(2), &data(m, c.mss(), 2), false, &mut out);
        r.on_segment(SimTime(3), &data(3 * m, c.mss(), 3), false, &mut out);
        out.clear();
        // Below the cumulative ACK (RFC 2883 4.1.1).
        r.on_segment(SimTime(4), &data(m, c.mss(), 4), false, &mut out);
        assert_eq!(blocks(&out)[0], vec![(m, 2 * m), (3 * m, 4 * m)]);
        // Above it, inside a SACKed block (4.1.2): D-SACK, then the block.
        r.on_segment(SimTime(5), &data(3 * m, c.mss(), 5), false, &mut out);
        assert_eq!(blocks(&out)[1], vec![(3 * m, 4 * m), (3 * m, 4 * m)]);
        // Reported once.
        r.on_segment(SimTime(6), &data(5 * m, c.mss(), 6), false, &mut out);
        assert_eq!(blocks(&out)[2], vec![(5 * m, 6 * m), (3 * m, 4 * m)]);
    }

    use super::super::reader::{Preemption, ReaderStats, ReceiverApp, Wakeup};

    /// A receiver on a locked 256 KB buffer whose application wakes
    /// `wakeup_us` after data arrives and copies at `copy_bps`.
    fn reading(wakeup_us: u64, copy_bps: u64, total: u64) -> (TcpConfig, Receiver) {
        let app = ReceiverApp {
            read_bytes: 131_072,
            wakeup: Wakeup::Constant { delay_ps: wakeup_us * 1_000_000 },
            copy_bps,
            preemption: None,
            loop_ps: 0,
            on_core: true,
            copy_slice_bytes: 0,
        };
        let c = TcpConfig { rwnd_bytes: 256 * 1024, receiver_app: Some(app), ..sack_cfg() };
        let c = TcpConfig { rcv_autotune: false, ..c };
        let r = established(&c, total);
        (c, r)
    }

    /// Feeds `n` full segments, one every `gap` ps from `start`, running
    /// the receiver's timers in between; returns the ACKs (time, ack, window).
    fn feed(r: &mut Receiver, mss: u32, start: u64, gap: u64, n: u64) -> Vec<(u64, u64, u64)> {
        let mut acks = Vec::new();
        let mut out = Vec::new();
        let run_timers = |r: &mut Receiver, until: u64, out: &mut Outbox, acks: &mut Vec<(u64, u64, u64)>| {
            while let Some(d) = r.next_deadline() {
                if d.0 > until {
                    break;
                }
                r.on_timer(d, out);
                acks.extend(out.drain(..).map(|(_, s)| (d.0, s.ack, s.wnd)));
            }
        };
        for k in 0..n {
            let t = start + k * gap;
            run_timers(r, t, &mut out, &mut acks);
            r.on_segment(SimTime(t), &data(k * mss as u64, mss, t), false, &mut out);
            acks.extend(out.drain(..).map(|(_, s)| (t, s.ack, s.wnd)));
        }
        run_timers(r, u64::MAX, &mut out, &mut acks);
        acks
    }

    /// Three full segments 720 us apart after each other, PSH on the third
    /// (a sender's three-segment GSO buffers through a 100 Mbps bottleneck),
    /// to a reader that wakes 30 us after data arrives; the ACKs (time, ack).
    fn feed_bursts_of_three(c: &TcpConfig, psh: bool, bursts: u64) -> Vec<(u64, u64)> {
        let mut r = established(c, 1 << 40);
        let (mss, gap) = (c.mss() as u64, 720_000_000);
        let mut out = Vec::new();
        let mut acks = Vec::new();
        for k in 0..3 * bursts {
            let t = 1_000 + k * gap;
            while let Some(d) = r.next_deadline() {
                if d.0 > t {
                    break;
                }
                r.on_timer(d, &mut out);
                acks.extend(out.drain(..).map(|(_, s)| (d.0, s.ack)));
            }
            let mut seg = data(k * mss, c.mss(), t);
            seg.psh = psh && k % 3 == 2;
            r.on_segment(SimTime(t), &seg, false, &mut out);
            acks.extend(out.drain(..).map(|(_, s)| (t, s.ack)));
        }
        while let Some(d) = r.next_deadline() {
            r.on_timer(d, &mut out);
            acks.extend(out.drain(..).map(|(_, s)| (d.0, s.ack)));
        }
        acks
    }

    #[test]
    fn a_read_that_empties_the_queue_after_a_full_psh_segment_acks_it_alone() {
        // tcp_measure_rcv_mss (Linux 6.7+): a full-sized PSH segment marks the
        // ACK pushed; tcp_cleanup_rbuf then ACKs once the read empties the queue.
        let (c, _) = reading(30, 0, 1 << 40);
        let m = c.mss() as u64;
        let acks = feed_bursts_of_three(&c, true, 20);
        let acked: Vec<u64> = acks.windows(2).map(|w| (w[1].1 - w[0].1) / m).collect();
        // Segments 0-1 of each burst: one ACK for two; segment 2 (PSH): its own, at the read.
        assert_eq!(acks.len(), 40);
        assert!(acked.iter().all(|&n| n == 1 || n == 2), "{acked:?}");
        for &(t, a) in &acks {
            if (a / m) % 3 == 0 {
                // The PSH segment's ACK leaves 30 us after it arrived (the read).
                let arrived = 1_000 + (a / m - 1) * 720_000_000;
                assert_eq!(t, arrived + 30_000_000);
            }
        }
        // Without PSH every second segment is acknowledged, as before.
        let plain = feed_bursts_of_three(&c, false, 20);
        assert!(plain.windows(2).all(|w| w[1].1 - w[0].1 == 2 * m), "{plain:?}");
        // Kernels before 6.7 (`ack_pushed: false`, as the linux-4.19 and linux-3.10 profiles): PSH changes nothing.
        let old = TcpConfig { ack_pushed: false, ..c.clone() };
        assert_eq!(feed_bursts_of_three(&old, true, 20), feed_bursts_of_three(&old, false, 20));
    }

    #[test]
    fn a_reader_without_delay_acks_every_second_segment_like_the_ideal_reader() {
        let app = ReceiverApp {
            read_bytes: 131_072,
            wakeup: Wakeup::Constant { delay_ps: 0 },
            copy_bps: 0,
            preemption: None,
            loop_ps: 0,
            on_core: true,
            copy_slice_bytes: 0,
        };
        let c = TcpConfig { receiver_app: Some(app), ..sack_cfg() };
        let mut r = established(&c, 1 << 40);
        let acks = feed(&mut r, c.mss(), 1_000, 23_168_000, 200);
        let mut ideal = established(&sack_cfg(), 1 << 40);
        let ideal_acks = feed(&mut ideal, c.mss(), 1_000, 23_168_000, 200);
        assert_eq!(acks.len(), 100);
        let pick = |v: &[(u64, u64, u64)]| v.iter().map(|&(t, a, _)| (t, a)).collect::<Vec<_>>();
        assert_eq!(pick(&acks), pick(&ideal_acks), "same ACK times and numbers");
        assert_eq!(r.delivered(), 200 * c.mss() as u64);
    }

    #[test]
    fn a_slow_reader_paces_the_acks_by_its_reads_as_the_closed_form_says() {
        // 500 Mb/s of 1448 B segments (one every 23.168 us), a reader waking
        // 500 us after data arrives: each read finds floor(500 / 23.168) + 1
        // = 22 segments, and the ACK goes out at the read.
        let (c, mut r) = reading(500, 0, 1 << 40);
        let mss = c.mss() as u64;
        let gap = 23_168_000;
        let n = 22 * 100;
        let acks = feed(&mut r, c.mss(), 1_000, gap, n);
        let app = r.app.as_ref().unwrap();
        assert_eq!(app.stats.reads, 100, "one read per 22 segments");
        assert_eq!(acks.len(), 100, "one ACK per read");
        for (i, &(t, ack, wnd)) in acks.iter().enumerate() {
            let first = 1_000 + 22 * i as u64 * gap;
            assert_eq!(t, first + 500_000_000, "ACK {i} at the read, 500 us after the data woke the reader");
            assert_eq!(ack, 22 * (i as u64 + 1) * mss);
            assert_eq!(wnd, 256 * 1024, "everything read: the whole buffer is free");
        }
        assert_eq!(app.stats.max_unread, 22 * mss);
        assert_eq!(r.delivered(), n * mss, "nothing lost");
    }

    #[test]
    fn a_reader_whose_loop_outlasts_the_gap_between_segments_never_sleeps_again() {
        // Segments every 23.168 us; after each read the process runs 100 us
        // more (its loop) before it would sleep, so the next segments are
        // already there: one wake-up, then one read per 100 us, each taking
        // the 4 or 5 segments that arrived during the loop.
        let (st, acks, span_us) = fed_every_23us(|app| ReceiverApp { loop_ps: 100_000_000, ..app });
        assert_eq!(st.wakeups, 1, "{st:?}");
        // The first read at 500 us, then one per 100 us until the last segment.
        assert!((st.reads as i64 - (span_us / 100 + 1) as i64).abs() <= 2, "{st:?} span {span_us} us");
        assert_eq!(acks, st.reads, "one ACK per read");
    }

    /// A receiver whose application wakes 500 us after data (`reading`),
    /// changed by `with`, fed 2,200 segments every 23.168 us from 1 us on:
    /// its reader's counters, the ACKs it sent and the span in us from its
    /// first read (500 us) to the last segment (50.97 ms). Checks that every
    /// byte was delivered.
    fn fed_every_23us(with: impl FnOnce(ReceiverApp) -> ReceiverApp) -> (ReaderStats, u64, u64) {
        let (c, _) = reading(500, 0, 1 << 40);
        let app = with(c.receiver_app.clone().unwrap());
        let c = TcpConfig { receiver_app: Some(app), ..c };
        let mut r = established(&c, 1 << 40);
        let (gap, n) = (23_168_000, 2_200);
        let acks = feed(&mut r, c.mss(), 1_000, gap, n);
        assert_eq!(r.delivered(), n * c.mss() as u64);
        let span_us = ((n - 1) * gap + 1_000) / 1_000_000 - 500;
        (r.app.as_ref().unwrap().stats, acks.len() as u64, span_us)
    }

    #[test]
    fn a_reader_preempted_after_emptying_the_socket_reads_what_came_meanwhile_without_a_wakeup() {
        // Segments every 23.168 us, a reader waking 500 us after data, and a
        // preemption after every call (probability 1, 1 ms): the process is
        // switched out where it returns to user space, also after a call that
        // emptied the socket, so it is not asleep when the next segments
        // arrive. It reads them when it runs again, 1 ms after each call,
        // woken once, as Linux's preempted process (runnable, not sleeping)
        // is not woken by `sk_data_ready`.
        let preemption = Some(Preemption { probability: 1.0, wait: Wakeup::Constant { delay_ps: 1_000_000_000 } });
        let (st, acks, span_us) = fed_every_23us(|app| ReceiverApp { preemption, ..app });
        assert_eq!(st.wakeups, 1, "{st:?}");
        // The first read at 500 us, then one per 1 ms until the last segment.
        assert!((st.reads as i64 - (span_us / 1_000 + 1) as i64).abs() <= 1, "{st:?} span {span_us} us");
        assert_eq!(st.preemptions, st.reads, "a wait after every call");
        assert_eq!(acks, st.reads, "one ACK per read");
    }

    #[test]
    fn unread_bytes_shrink_the_window_a_delayed_ack_advertises() {
        // The reader sleeps 100 ms; the delayed-ACK timer (40 ms) fires first.
        let (c, mut r) = reading(100_000, 0, 1 << 40);
        let mss = c.mss() as u64;
        let acks = feed(&mut r, c.mss(), 1_000, 23_168_000, 10);
        let (t, ack, wnd) = acks[0];
        assert_eq!(t, 1_000 + c.delack_timeout_ps, "the delayed ACK, 40 ms after the first segment");
        assert_eq!(ack, 10 * mss);
        // 256 KB needs window scale 3: the window is a multiple of 8 B.
        // The unread 10 segments take their memory from the 512 KB buffer that
        // holds a 256 KB window; half of it was window (tcp_space).
        assert_eq!(wnd, (512 * 1024 - 10 * mss) / 2 / 8 * 8, "the unread segments' memory is not offered");
        assert_eq!(acks.len(), 1, "a read freeing less than half the window sends no update (tcp_cleanup_rbuf)");
        assert_eq!(r.app.as_ref().unwrap().stats.reads, 1);
    }

    #[test]
    fn segments_arriving_while_the_reader_copies_wait_in_the_backlog_and_are_coalesced() {
        // Copying at 2 Gb/s holds the socket 5.8 us per segment read (127 us
        // for the 22 segments a read finds): the segments arriving meanwhile
        // go to the backlog.
        let (c, mut r) = reading(500, 2_000_000_000, 2_000 * 1448);
        let mss = c.mss() as u64;
        let acks = feed(&mut r, c.mss(), 1_000, 23_168_000, 2_000);
        let app = r.app.as_ref().unwrap();
        // Closed forms: copying takes r = 5.792 / 23.168 = 1/4 of the time
        // between arrivals, so N r = 500 of the 2000 segments arrive while
        // the socket is held; a read goes on through the backlog until it
        // catches up, taking 21.58 / (1 - r) = 28.8 segments per wake-up:
        // 2000 / 28.8 = 69 reads, one ACK each.
        let st = app.stats;
        assert!((450..=550).contains(&st.backlog_segments), "{st:?}");
        assert!(st.backlog_coalesced > st.backlog_segments / 2, "consecutive segments merge: {st:?}");
        assert!((67..=71).contains(&st.reads), "{st:?}");
        assert_eq!(acks.len() as u64, st.reads, "one ACK per read");
        assert_eq!(r.delivered(), 2_000 * mss, "every byte read, none lost");
        assert!(r.complete_at.is_some_and(|t| t.0 > 1_000 + 1_999 * 23_168_000));
        assert_eq!(acks.last().unwrap().1, 2_000 * mss);
    }

    /// A receiver that compresses SACKs (44 segments at most), established,
    /// which has taken segment 0 at `t0` echoing a timestamp 1 ms old (its
    /// RTT is 1 ms); the segment and `t0` returned for reuse.
    fn compressing_receiver_with_a_1ms_rtt() -> (TcpConfig, Receiver, Segment, u64) {
        let c = TcpConfig { sack_compression_segments: 44, ..sack_cfg() };
        let mut r = established(&c, 1 << 40);
        let t0 = 10_000_000_000u64;
        let mut first = data(0, c.mss(), t0);
        first.ts_echo = SimTime(t0 - 1_000_000_000);
        r.on_segment(SimTime(t0), &first, false, &mut Vec::new());
        (c, r, first, t0)
    }

    #[test]
    fn sack_compression_sends_three_duplicates_then_one_ack_per_twentieth_of_the_rtt() {
        let (c, mut r, first, t0) = compressing_receiver_with_a_1ms_rtt();
        let m = c.mss() as u64;
        let mut out = Vec::new();
        // Segments 2..=11 arrive 1 us apart behind the hole at segment 1.
        for k in 2..=11u64 {
            r.on_segment(SimTime(t0 + k * 1_000_000), &data(k * m, c.mss(), t0), false, &mut out);
        }
        assert_eq!(out.len(), 3, "three duplicate ACKs at once, the other seven withheld");
        let due = r.next_deadline().unwrap();
        assert_eq!(due.0, t0 + 5 * 1_000_000 + 50_000_000, "5% of the 1 ms RTT after the first withheld one");
        r.on_timer(due, &mut out);
        assert_eq!(out.len(), 4);
        assert_eq!(blocks(&out)[3][0], (2 * m, 12 * m), "the compressed ACK reports everything held");
        assert_eq!(r.acks_compressed, 7, "the seven withheld (TcpExtTCPAckCompressed)");
        // Without compression every out-of-order segment is acknowledged.
        let mut plain = established(&sack_cfg(), 1 << 40);
        let mut out = Vec::new();
        plain.on_segment(SimTime(t0), &first, false, &mut out);
        for k in 2..=11u64 {
            plain.on_segment(SimTime(t0 + k * 1_000_000), &data(k * m, c.mss(), t0), false, &mut out);
        }
        assert_eq!(out.len(), 10);
    }

    #[test]
    fn sack_compression_sends_the_withheld_ack_before_a_block_could_go_unreported() {
        // Every other segment lost from segment 1 on: each arrival opens a new
        // block. The first three duplicates go at once; afterwards each new
        // block would push an unreported one down the list, so the withheld
        // ACK goes first (Linux's tcp_sack_new_ofo_skb), and every block is
        // reported first in some ACK. Without that, a timer-driven ACK every
        // 5% of the RTT reports only the three newest blocks.
        let (c, mut r, _, t0) = compressing_receiver_with_a_1ms_rtt();
        let m = c.mss() as u64;
        let mut out = Vec::new();
        let evens = [2u64, 4, 6, 8, 10, 12, 14];
        for (i, k) in evens.iter().enumerate() {
            r.on_segment(SimTime(t0 + i as u64 * 1_000_000), &data(k * m, c.mss(), t0), false, &mut out);
        }
        // 2, 4, 6 at once; 8 withheld; 10, 12, 14 each send the withheld ACK first.
        assert_eq!(out.len(), 6);
        assert_eq!(blocks(&out)[3], vec![(8 * m, 9 * m), (6 * m, 7 * m), (4 * m, 5 * m)]);
        let due = r.next_deadline().unwrap();
        r.on_timer(due, &mut out);
        assert_eq!(out.len(), 7);
        for k in evens {
            assert!(
                blocks(&out).iter().any(|b| b[0] == (k * m, (k + 1) * m)),
                "segment {k}'s block is reported first in some ACK"
            );
        }
        assert_eq!(r.acks_compressed, 4, "one ACK withheld before each of the four sent early or by the timer");
    }

    #[test]
    fn without_sack_acks_carry_no_blocks() {
        let c = cfg();
        let m = c.mss() as u64;
        let mut r = established(&c, 1_000_000);
        let mut out = Vec::new();
        r.on_segment(SimTime(1), &data(2 * m, c.mss(), 1), false, &mut out);
        r.on_segment(SimTime(2), &data(2 * m, c.mss(), 2), false, &mut out);
        assert!(blocks(&out).iter().all(|b| b.is_empty()));
    }
}
