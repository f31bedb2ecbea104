//! The interface every congestion controller implements, after Linux's
//! `struct tcp_congestion_ops` (`include/net/tcp.h`).
//!
//! The sender owns the window, the loss-recovery machine (fast retransmit,
//! SACK recovery, PRR, RACK-TLP) and the timers; a controller is told what
//! happened and answers with a window. The calls, in the order the sender
//! makes them for one ACK of new data (the Linux hook in brackets):
//!
//! 1. [`CongestionOps::on_ack`] (`pkts_acked`): every ACK of new data, in
//!    any state, with its RTT sample; may change `cwnd` and `ssthresh`;
//! 2. [`CongestionOps::on_ecn`] (`in_ack_event` with `CA_ACK_ECE`): only
//!    where the controller [`handles_ecn`](CongestionOps::handles_ecn) and
//!    the connection negotiated ECN; returns whether it cut the window;
//! 3. [`CongestionOps::cong_avoid`] (`cong_avoid`): window growth, only
//!    outside recovery (state Open or Loss), when the window limits the
//!    flight (`cwnd_validation`) and nothing cut it on this ACK.
//!
//! On a congestion event (fast retransmit, a probe that repaired a loss, a
//! classic ECN echo, the first of a run of timeouts) the sender asks
//! [`CongestionOps::ssthresh`] (`ssthresh`) and sets the window itself
//! (recovery: `ssthresh`, or PRR towards it; a timeout: one segment, after
//! [`CongestionOps::on_timeout`], `cwnd_event(CA_EVENT_LOSS)`). Every change
//! of the recovery state is announced with [`CongestionOps::set_state`]
//! (`set_state`). After each ACK the sender reads
//! [`CongestionOps::pacing_rate`] (`sk_pacing_rate`, which Linux modules
//! set themselves).
//!
//! A controller sees only the [`Window`] it may change and the facts it is
//! handed ([`AckInfo`], [`LossInfo`]); it has no clock but `now` there and no
//! randomness but the stream it was made with ([`CcInit`]), so runs stay
//! deterministic.

use super::{AckInfo, SlowStartExit, Window};
use crate::rng::RandomStream;
use crate::units::{Rate, SimTime};

/// The loss-recovery state of the connection (Linux `tcp_ca_state`, without
/// `Disorder`, which the machines here do not keep).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcState {
    /// No loss or reduction under way.
    Open,
    /// An ECN reduction under way (SACK with PRR).
    Cwr,
    /// Fast recovery after a loss.
    Recovery,
    /// After a retransmission timeout, until what was outstanding is acknowledged.
    Loss,
}

impl CcState {
    /// The name used in documentation and by the Python bindings.
    pub fn name(self) -> &'static str {
        match self {
            CcState::Open => "open",
            CcState::Cwr => "cwr",
            CcState::Recovery => "recovery",
            CcState::Loss => "loss",
        }
    }
}

/// What a controller learns at a congestion event (its `ssthresh` call).
#[derive(Clone, Copy, Debug)]
pub struct LossInfo {
    pub now: SimTime,
    /// The bytes the reduction is based on, as `tcp.ssthresh_from` names
    /// them: FlightSize (default), RFC 6675's pipe, or cwnd.
    pub flight: u64,
}

/// What a controller is made with, once per connection.
#[derive(Clone, Debug)]
pub struct CcInit {
    /// Payload bytes per segment.
    pub mss: u64,
    /// The window the sender starts with (initial cwnd, `ssthresh` unlimited).
    pub window: Window,
    /// The flow's index in the `flows` table.
    pub flow: u32,
    /// A random stream of the controller's own, derived from the scenario
    /// seed and the flow (`("tcp-cc", flow)`): the only randomness allowed.
    pub rng: RandomStream,
}

/// A congestion controller. Every method but [`name`](Self::name),
/// [`cong_avoid`](Self::cong_avoid), [`ssthresh`](Self::ssthresh) and
/// [`clone_box`](Self::clone_box) has a default that does nothing.
pub trait CongestionOps: Send + Sync + std::fmt::Debug {
    /// The name in the `flows` table's `cc` column.
    fn name(&self) -> &str;

    /// Every ACK of new data, in any state (Linux `pkts_acked`), before the
    /// ECN reaction and window growth.
    #[inline(always)]
    fn on_ack(&mut self, _w: &mut Window, _ack: &AckInfo) {}

    /// Whether the controller reacts to ECN-Echo itself (DCTCP). Otherwise an
    /// echo is a congestion event handled as RFC 3168 6.1.2 says (the
    /// sender asks [`ssthresh`](Self::ssthresh) at most once per window).
    #[inline(always)]
    fn handles_ecn(&self) -> bool {
        false
    }

    /// Every ACK of new data of an ECN connection, for a controller that
    /// [`handles_ecn`](Self::handles_ecn); returns whether it cut the window
    /// (the sender then counts an ECN reduction and sets CWR).
    #[inline(always)]
    fn on_ecn(&mut self, _w: &mut Window, _ack: &AckInfo) -> bool {
        false
    }

    /// Window growth on an ACK of new data outside recovery (Linux `cong_avoid`).
    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo);

    /// The slow-start threshold after a congestion event (Linux `ssthresh`).
    fn ssthresh(&mut self, w: &Window, loss: &LossInfo) -> u64;

    /// A retransmission timeout, after `ssthresh` was asked (unless held on
    /// a repeated timeout) and before cwnd becomes one segment.
    #[inline(always)]
    fn on_timeout(&mut self, _w: &Window, _now: SimTime) {}

    /// The recovery state changed to `state` (Linux `set_state`).
    #[inline(always)]
    fn set_state(&mut self, _w: &Window, _state: CcState, _now: SimTime) {}

    /// A pacing rate for the sender's segments, read after every ACK; `None`
    /// leaves the connection's own pacing (`tcp.pacing`) as it is.
    #[inline(always)]
    fn pacing_rate(&self) -> Option<Rate> {
        None
    }

    /// Why the controller ended slow start (classic HyStart), once it has.
    #[inline(always)]
    fn slow_start_exit(&self) -> Option<SlowStartExit> {
        None
    }

    /// A copy of the controller in its current state.
    fn clone_box(&self) -> Box<dyn CongestionOps>;
}

impl Clone for Box<dyn CongestionOps> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}
