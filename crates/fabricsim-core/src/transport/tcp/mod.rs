//! TCP: a sender and a receiver joined as one [`Connection`] per flow.
//!
//! - `sender.rs`: the sending side as an explicit state machine (RFC 793 states
//!   that matter for a bulk sender: SYN-SENT, ESTABLISHED, and done), slow start
//!   and congestion avoidance (RFC 5681), fast retransmit and NewReno fast
//!   recovery with partial ACKs (RFC 6582), the retransmission timer (RFC 6298),
//!   ECN reaction (RFC 3168) and optional pacing;
//! - `receiver.rs`: cumulative ACKs, out-of-order data, delayed ACKs with a
//!   quick-ACK start, ECN-Echo (RFC 3168, and DCTCP's per-packet echo);
//! - `reader.rs`: the receiving application (read size, wake-up delay, copy
//!   time, the socket backlog), whose reads pace the receiver's ACKs;
//! - `rtt.rs`: RTT estimation with timestamps (RFC 7323 style echo);
//! - `probe.rs`: a snapshot of the sender's state (the `tcp_trace` table's rows);
//! - `cc/`: NewReno, CUBIC and DCTCP behind one enum.
//!
//! Sequence numbers count payload bytes from 0; SYN and SYN-ACK are separate
//! segment kinds outside the byte space.

pub mod cc;
pub mod config;
pub mod limits;
pub mod newreno;
pub mod probe;
pub mod prr;
pub mod rack;
pub mod rcvbuf;
pub mod reader;
pub mod receiver;
pub mod recovery;
pub mod rtt;
pub mod sack;
pub mod scoreboard;
pub mod sender;

use crate::units::SimTime;
pub use cc::CcKind;
pub use config::{CubicFlavor, Hystart, Pacing, RcvbufGrowth, RtoFormula, SsthreshFrom, TcpConfig, TcpProfile};
pub use receiver::Receiver;
pub use sack::SackBlocks;
pub use sender::Sender;

/// What a segment is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegKind {
    Syn,
    SynAck,
    Data,
    Ack,
}

/// A TCP segment as the models see it.
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    pub kind: SegKind,
    pub seq: u64,
    pub len: u32,
    pub ack: u64,
    /// ECN-Echo flag.
    pub ece: bool,
    /// Congestion Window Reduced flag.
    pub cwr: bool,
    /// The IP header is ECN-capable.
    pub ect: bool,
    /// Timestamp value (sender's clock).
    pub ts: SimTime,
    /// Timestamp echo reply.
    pub ts_echo: SimTime,
    /// A retransmission (for statistics only).
    pub retransmit: bool,
    /// SACK blocks of an ACK (RFC 2018), most recent first; D-SACK first if any.
    pub sack: SackBlocks,
    /// The receive window an ACK or SYN-ACK advertises, in bytes (a multiple
    /// of the window scale); 0: none (the sender keeps its fixed window).
    pub wnd: u64,
    /// A data segment charged to TCP Small Queues: its transmission
    /// completion at the host's NIC is reported back to the sender.
    pub tsq: bool,
    /// PSH flag of a data segment: the last segment of a burst of two or
    /// more that left as one GSO buffer (Linux's `__tcp_transmit_skb` sets
    /// PSH on every buffer of more than one segment; GSO keeps it on the last).
    pub psh: bool,
}

impl Segment {
    pub fn control(kind: SegKind, now: SimTime) -> Self {
        Segment {
            kind,
            seq: 0,
            len: 0,
            ack: 0,
            ece: false,
            cwr: false,
            ect: false,
            ts: now,
            ts_echo: SimTime::ZERO,
            retransmit: false,
            sack: SackBlocks::EMPTY,
            wnd: 0,
            tsq: false,
            psh: false,
        }
    }
}

/// Segments a connection wants sent; `true` = from the receiver side.
pub type Outbox = Vec<(bool, Segment)>;

/// Both ends of one TCP flow.
#[derive(Clone, Debug)]
pub struct Connection {
    pub sender: Sender,
    pub receiver: Receiver,
}

impl Connection {
    /// A connection that will transfer `bytes` (or send until `stop`).
    pub fn new(cfg: &TcpConfig, bytes: u64, stop: Option<SimTime>) -> Self {
        Connection { sender: Sender::new(cfg, bytes, stop), receiver: Receiver::new(cfg, bytes) }
    }

    /// The earliest pending timer of either end.
    pub fn next_deadline(&self) -> Option<SimTime> {
        match (self.sender.next_deadline(), self.receiver.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the timers that have expired at `now`.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Outbox) {
        self.receiver.on_timer(now, out);
        self.sender.on_tsq_wake(now, out);
        self.sender.on_timer(now, out);
    }
}
