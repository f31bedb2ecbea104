//! Loss recovery without SACK: the sender's ACK processing, sending and
//! retransmission timeout when SACK is off.
//!
//! - Fast retransmit on `dupack_threshold` duplicate ACKs (RFC 5681 3.2
//!   steps 2-3; RFC 6582 3.2 step 2): `ssthresh` from the controller,
//!   `recover = HighData`, `cwnd = ssthresh + 3 SMSS`.
//! - Fast recovery (RFC 6582 3.2): window inflation per further duplicate
//!   (RFC 5681 3.2 step 4); a partial ACK retransmits the next hole and
//!   deflates (step 5); a full ACK (covering `recover`) ends recovery with
//!   `cwnd = ssthresh` (step 3).
//! - Limited transmit (RFC 3042), when configured: each of the first two
//!   duplicate ACKs lets one new segment out beyond cwnd.
//! - Retransmission timeout (the skeleton is `Sender::on_rto`'s, shared
//!   with SACK): `recover` moves to the highest byte sent (RFC
//!   6582 3.2 step 4) and sending goes back to the first unacknowledged byte.

use super::cc::SlowStartExit;
use super::limits::Burst;
use super::recovery::CaState;
use super::sender::{EcnCut, SenderCore, SenderState};
use super::{Outbox, Segment};
use crate::units::SimTime;

/// NewReno's recovery state.
#[derive(Clone, Debug)]
pub struct NewReno {
    /// Duplicate ACKs since the last ACK of new data.
    pub(super) dupacks: u32,
    /// Open, in fast recovery (RFC 6582 3.2) or, after a timeout, Loss
    /// until `recover` is acknowledged (changed by `SenderCore::set_ca`).
    pub(super) ca: CaState,
    /// `recover` (RFC 6582 3.2): the highest byte sent when fast recovery
    /// or the last timeout began.
    pub(super) recover: Option<u64>,
}

impl Default for NewReno {
    fn default() -> Self {
        NewReno { dupacks: 0, ca: CaState::Open, recover: None }
    }
}

impl NewReno {
    /// The retransmission timer expired (the rest, the state Loss included,
    /// is `Sender::on_rto`'s): `recover` moves to the highest byte sent,
    /// `snd_max` (RFC 6582 3.2 step 4), so that duplicate ACKs of data sent
    /// before the timeout start no fast retransmit.
    pub(super) fn on_timeout(&mut self, snd_max: u64) {
        self.dupacks = 0;
        self.recover = Some(snd_max);
    }
}

impl SenderCore {
    /// An ACK without SACK.
    pub(super) fn on_ack_newreno(&mut self, nr: &mut NewReno, now: SimTime, seg: &Segment, out: &mut Outbox) {
        let ack = seg.ack.min(self.snd_max);
        if ack > self.snd_una {
            let acked = ack - self.snd_una;
            self.snd_una = ack;
            if nr.ca == CaState::Loss && nr.recover.map_or(true, |r| ack >= r) {
                // Everything outstanding at the timeout is acknowledged.
                self.set_ca(&mut nr.ca, CaState::Open, now);
            }
            if self.snd_nxt < self.snd_una {
                self.snd_nxt = self.snd_una;
            }
            let info = self.ack_info(now, seg, (ack, acked), true, nr.ca);
            let reduced = match self.ecn_on_ack(now, &info, acked, nr.ca != CaState::Recovery, None) {
                EcnCut::None => false,
                EcnCut::Controller { .. } => true,
                EcnCut::Classic => {
                    // RFC 3168 6.1.2: cwnd = ssthresh, as after a loss.
                    self.window.cwnd = self.window.ssthresh;
                    true
                }
            };
            if nr.ca == CaState::Recovery {
                if nr.recover.map_or(true, |r| ack >= r) {
                    // Full acknowledgment (RFC 6582 3.2 step 3).
                    self.set_ca(&mut nr.ca, CaState::Open, now);
                    nr.dupacks = 0;
                    self.window.cwnd = self.window.ssthresh;
                } else {
                    // Partial acknowledgment (RFC 6582 3.2 step 5): retransmit the
                    // next hole, deflate by the acknowledged bytes and add back one
                    // SMSS if at least one was acknowledged. The timer restarts
                    // below on every partial ACK (the "Slow-but-Steady" variant of
                    // RFC 6582 section 4).
                    self.retransmit_head(now, out);
                    self.recovery_retransmits += 1;
                    self.window.cwnd = self.window.cwnd.saturating_sub(acked);
                    if acked >= self.window.mss {
                        self.window.cwnd += self.window.mss;
                    }
                    self.window.cwnd = self.window.cwnd.max(self.window.mss);
                }
            } else {
                nr.dupacks = 0;
                if !reduced {
                    self.grow(&info);
                }
            }
            if self.snd_una >= self.snd_max {
                self.rto_deadline = None;
            } else {
                self.restart_rto(now);
            }
            if self.all_acked() || (self.sending_stopped(now) && self.snd_una >= self.snd_max) {
                self.finish(now);
                return;
            }
        } else if ack == self.snd_una && self.snd_max > self.snd_una && seg.len == 0 {
            nr.dupacks += 1;
            if nr.ca != CaState::Recovery {
                if nr.dupacks == self.dupack_threshold && nr.recover.map_or(true, |r| ack > r) {
                    // Fast retransmit (RFC 5681 3.2 steps 2-3; RFC 6582 3.2 step 2).
                    self.note_congestion(now, SlowStartExit::Loss);
                    let flight = self.flight();
                    self.window.ssthresh = self.ssthresh_after_loss(now, flight, None);
                    nr.recover = Some(self.snd_max);
                    self.set_ca(&mut nr.ca, CaState::Recovery, now);
                    self.retransmit_head(now, out);
                    self.recovery_retransmits += 1;
                    self.window.cwnd = self.window.ssthresh + 3 * self.window.mss;
                    self.restart_rto(now);
                }
            } else {
                // Window inflation per additional duplicate (RFC 5681 3.2 step 4).
                self.window.cwnd += self.window.mss;
            }
        }
        self.update_pacing_rate();
        self.send_data_newreno(nr, now, out);
    }

    /// Sends new (or, after a timeout, re-sent) data while the window allows.
    pub(super) fn send_data_newreno(&mut self, nr: &NewReno, now: SimTime, out: &mut Outbox) {
        if !self.send_prelude(now) {
            return;
        }
        let send_wnd = self.send_window();
        let mut wnd = self.window.cwnd.min(send_wnd);
        if self.limited_transmit && nr.ca != CaState::Recovery && nr.dupacks > 0 && self.snd_nxt == self.snd_max {
            // RFC 3042: each of the first two duplicate ACKs lets one new
            // segment out beyond cwnd (within the receive window).
            let extra = nr.dupacks.min(2) as u64 * self.window.mss;
            wnd = (self.window.cwnd + extra).min(send_wnd);
        }
        let first = self.snd_nxt;
        let mut burst = Burst::default();
        while self.snd_nxt < self.total {
            if self.snd_nxt >= self.snd_max && self.sending_stopped(now) {
                break;
            }
            let len = (self.total - self.snd_nxt).min(self.window.mss);
            if self.snd_nxt + len > self.snd_una + wnd && self.snd_nxt > self.snd_una {
                break;
            }
            if let Some(rate) = self.pacing {
                if now < self.next_send {
                    break;
                }
                self.next_send = now + rate.serialization_time(len + self.frame_overhead as u64);
            }
            if !self.burst_gate(None, now, &mut burst, self.snd_nxt < self.snd_max) {
                break;
            }
            let mut s = self.segment_at(self.snd_nxt, now);
            if self.snd_nxt < self.snd_max {
                s.retransmit = true;
                self.retransmits += 1;
            } else if self.cwr_pending {
                s.cwr = true;
                self.cwr_pending = false;
            }
            self.burst_add(now, &mut burst, &mut s);
            out.push((false, s));
            self.snd_nxt += len;
            self.snd_max = self.snd_max.max(self.snd_nxt);
            if self.rto_deadline.is_none() {
                self.restart_rto(now);
            }
        }
        self.burst_close(now, &mut burst, out);
        self.note_window_use(self.snd_nxt - self.snd_una, self.snd_nxt > first);
        if self.sending_stopped(now) && self.snd_una >= self.snd_max && self.state == SenderState::Established {
            self.finish(now);
        }
    }
}
