//! The rate-controller interface of RoCE queue pairs: what a congestion
//! controller hears from the queue pair and what it answers.
//!
//! The core calls, per queue pair (see [`RateControl`]):
//!
//! - [`start`](RateControl::start) when the QP opens;
//! - [`on_sent`](RateControl::on_sent) after each data packet is handed to the NIC;
//! - [`on_cnp`](RateControl::on_cnp) when a CNP from the receiver arrives;
//! - [`on_ack`](RateControl::on_ack) when an ACK or NACK arrives, with
//!   [`AckFeedback`]: the PSN expected next, packets newly acknowledged,
//!   whether a CE-marked data packet arrived since the receiver's previous
//!   ACK (ECN echo), the RTT sample of the packet that triggered the ACK, and
//!   per-hop telemetry ([`IntHop`]) where the path's switches add it;
//! - [`on_timer`](RateControl::on_timer) at the time [`timer_at`](RateControl::timer_at)
//!   names (the QP's one timer event is armed at the earliest of its send
//!   time, its retransmission timeout and this).
//!
//! - [`on_loss`](RateControl::on_loss) when selective repeat or a go-back-N
//!   NACK finds packets lost, or the retransmission timeout fires.
//!
//! It answers with [`rate_bps`](RateControl::rate_bps), read after each
//! packet sent to space the next one (`frame bits / rate`), and optionally
//! [`window_bytes`](RateControl::window_bytes), bytes in flight beyond which
//! the QP waits for ACKs. A controller that chooses paths answers
//! [`paths`](RateControl::paths) > 0 and gives each data packet an entropy
//! value ([`next_entropy`](RateControl::next_entropy)), echoed to it in the
//! ACK ([`AckFeedback::entropy`]). DCQCN ([`super::dcqcn::DcqcnControl`]) implements it; other
//! controllers are registered by name (`extension::rate_cc`). See
//! `docs/extending/rate-control.md`.

use crate::units::SimTime;

/// One hop's telemetry as an INT-capable switch stamps it on a data packet
/// at its egress (HPCC's fields; `sim/telemetry.rs`). Switches stamp the
/// data of QPs whose controller reads it (`roce.cc: hpcc`, or `roce.int`);
/// otherwise [`AckFeedback::int`] is empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    /// Bytes queued at the egress queue when the packet left it.
    pub queue_bytes: u64,
    /// Bytes the egress port had sent in all when the packet left it.
    pub tx_bytes: u64,
    /// When the packet left the egress queue.
    pub timestamp: SimTime,
    /// The egress link's rate, bit/s.
    pub link_rate_bps: u64,
}

/// What an ACK or NACK tells the sender.
#[derive(Clone, Copy, Debug)]
pub struct AckFeedback<'a> {
    pub now: SimTime,
    /// The PSN the receiver expects next (cumulative acknowledgement).
    pub expected_psn: u64,
    /// Packets acknowledged by this ACK that were not before.
    pub newly_acked: u64,
    /// A NACK (the receiver saw a PSN gap) rather than an ACK.
    pub nack: bool,
    /// The receiver got a CE-marked data packet since its previous ACK.
    pub ecn_echo: bool,
    /// Time from sending the data packet that triggered this ACK to the
    /// ACK's arrival; `None` where no data packet's delay was measured: a
    /// NACK answering a trimmed header, which crossed the congested port in
    /// the trimming class.
    pub rtt: Option<SimTime>,
    /// The NACK answers a header a switch trimmed (`network/trimming.rs`):
    /// the data packet was lost in a full queue on its path.
    pub trimmed: bool,
    /// Per-hop telemetry of that data packet, first hop first; empty where
    /// no switch added it.
    pub int: &'a [IntHop],
    /// The entropy value that data packet carried (0 where the controller
    /// chooses no paths, [`RateControl::paths`]).
    pub entropy: u16,
}

/// A RoCE queue pair's rate controller. Implementations must be
/// deterministic (see `docs/extending/rate-control.md`).
pub trait RateControl: Send + Sync + std::fmt::Debug {
    /// The QP opens at `now`.
    fn start(&mut self, _now: SimTime) {}
    /// A data packet of `bytes` (frame bytes) was handed to the NIC at `now`.
    fn on_sent(&mut self, _bytes: u64, _now: SimTime) {}
    /// A CNP arrived at `now`.
    fn on_cnp(&mut self, _now: SimTime) {}
    /// An ACK or NACK arrived.
    fn on_ack(&mut self, _fb: &AckFeedback<'_>) {}
    /// When the controller wants [`on_timer`](RateControl::on_timer) called; `None`: not armed.
    fn timer_at(&self) -> Option<SimTime> {
        None
    }
    /// Its timer is due (`now >= timer_at()`).
    fn on_timer(&mut self, _now: SimTime) {}
    /// Sending rate in bit/s (at least 1).
    fn rate_bps(&self) -> u64;
    /// Bytes in flight allowed, if the controller keeps a window.
    fn window_bytes(&self) -> Option<u64> {
        None
    }
    /// Rate decreases so far (the flows table's `rate_cuts`).
    fn cuts(&self) -> u64 {
        0
    }
    /// Packets were found lost at `now`: by selective repeat's reports or a
    /// go-back-N NACK (`timeout` false), or by the retransmission timeout.
    fn on_loss(&mut self, _now: SimTime, _timeout: bool) {}
    /// Entropy values the controller spreads the QP's data over (asked once,
    /// when the QP is built); 0: none, every packet takes the QP's own hash.
    fn paths(&self) -> u32 {
        0
    }
    /// With [`paths`](RateControl::paths) > 0: the entropy value of the next
    /// data packet, below `paths()`; switches hash it with the flow's 5-tuple.
    fn next_entropy(&mut self) -> u16 {
        0
    }
    /// Whether, under selective repeat, packets the receiver reported
    /// holding leave the bytes in flight the window limits.
    fn window_excludes_reported(&self) -> bool {
        false
    }
}
