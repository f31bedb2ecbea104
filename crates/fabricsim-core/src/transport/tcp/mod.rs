//! TCP: a sender and a receiver joined as one [`Connection`] per flow.
//!
//! - `sender.rs`: the sending side as an explicit state machine (RFC 793 states
//!   that matter for a bulk sender: SYN-SENT, ESTABLISHED, and done), slow start
//!   and congestion avoidance (RFC 5681), fast retransmit and NewReno fast
//!   recovery with partial ACKs (RFC 6582), the retransmission timer (RFC 6298),
//!   ECN reaction (RFC 3168) and optional pacing;
//! - `receiver.rs`: cumulative ACKs, out-of-order data, delayed ACKs with a
//!   quick-ACK start, ECN-Echo (RFC 3168, and DCTCP's per-packet echo);
//! - `rtt.rs`: RTT estimation with timestamps (RFC 7323 style echo);
//! - `cc/`: NewReno, CUBIC and DCTCP behind one enum.
//!
//! Sequence numbers count payload bytes from 0; SYN and SYN-ACK are separate
//! segment kinds outside the byte space.

pub mod cc;
pub mod receiver;
pub mod rtt;
pub mod sender;

use crate::error::ConfigError;
use crate::units::{SimTime, PS_PER_SEC};
pub use cc::CcKind;
pub use receiver::Receiver;
pub use sender::Sender;
use serde::Deserialize;

/// TCP parameters of one flow (resolved: integers in bytes and picoseconds).
/// Missing fields take the values of [`TcpConfig::default`].
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    pub cc: CcKind,
    /// IP MTU; MSS = mtu - header_bytes.
    pub mtu_bytes: u32,
    /// IP + TCP header bytes per segment, options included (20 + 20 + 12 with timestamps).
    pub header_bytes: u32,
    /// Link-layer header + trailer per frame (Ethernet 14 + 4).
    pub l2_bytes: u32,
    /// Smallest frame on the wire (Ethernet: 64).
    pub min_frame_bytes: u32,
    pub init_cwnd_segments: u32,
    /// Receive window: the sender never has more than this in flight.
    pub rwnd_bytes: u64,
    pub min_rto_ps: u64,
    pub initial_rto_ps: u64,
    pub max_rto_ps: u64,
    pub clock_granularity_ps: u64,
    /// ACK after this many full segments.
    pub delack_count: u32,
    pub delack_timeout_ps: u64,
    /// ACK every segment for the first this many segments (Linux quick-ACK mode).
    pub quickack_segments: u32,
    /// Negotiate ECN (RFC 3168). DCTCP always uses ECN.
    pub ecn: bool,
    pub dctcp_g: f64,
    /// Appropriate byte counting (RFC 3465, Linux-like growth with delayed ACKs).
    pub byte_counting: bool,
    pub dupack_threshold: u32,
    /// Pace data segments at this rate (bit/s of frames), if set.
    pub pacing_bps: Option<u64>,
}

/// Linux-like defaults (the same as the scenario schema's, docs/models/tcp.md).
impl Default for TcpConfig {
    fn default() -> Self {
        const MS: u64 = 1_000_000_000;
        TcpConfig {
            cc: CcKind::Newreno,
            mtu_bytes: 1500,
            header_bytes: 52,
            l2_bytes: 18,
            min_frame_bytes: 64,
            init_cwnd_segments: 10,
            rwnd_bytes: 6 * 1024 * 1024,
            min_rto_ps: 200 * MS,
            initial_rto_ps: PS_PER_SEC,
            max_rto_ps: 120 * PS_PER_SEC,
            clock_granularity_ps: MS,
            delack_count: 2,
            delack_timeout_ps: 40 * MS,
            quickack_segments: 16,
            ecn: false,
            dctcp_g: 1.0 / 16.0,
            byte_counting: false,
            dupack_threshold: 3,
            pacing_bps: None,
        }
    }
}

impl TcpConfig {
    pub fn mss(&self) -> u32 {
        self.mtu_bytes - self.header_bytes
    }

    /// Frame size on the wire for a segment carrying `payload` bytes.
    pub fn frame_bytes(&self, payload: u32) -> u32 {
        (payload + self.header_bytes + self.l2_bytes).max(self.min_frame_bytes)
    }

    pub fn uses_ecn(&self) -> bool {
        self.ecn || self.cc == CcKind::Dctcp
    }

    /// Checks ranges; `path` prefixes the field names in errors.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let err = |field: &str, msg: String| Err(ConfigError::new(format!("{path}.{field}"), msg));
        // Linux's smallest segment: tcp_min_snd_mss (48) less 12 B of timestamp option.
        if self.header_bytes >= self.mtu_bytes || self.mtu_bytes - self.header_bytes < 36 {
            return err(
                "mtu",
                format!(
                    "leaves a segment of {} bytes after {} header bytes; need at least 36",
                    self.mtu_bytes.saturating_sub(self.header_bytes),
                    self.header_bytes
                ),
            );
        }
        if self.init_cwnd_segments == 0 {
            return err("init_cwnd", "must be >= 1".into());
        }
        if self.rwnd_bytes < self.mss() as u64 {
            return err("rwnd", "must hold at least one segment".into());
        }
        if self.delack_count == 0 {
            return err("delayed_ack.count", "must be >= 1".into());
        }
        if !(self.dctcp_g > 0.0 && self.dctcp_g <= 1.0) {
            return err("dctcp_g", "must be in (0, 1]".into());
        }
        if self.dupack_threshold == 0 {
            return err("dupack_threshold", "must be >= 1".into());
        }
        if self.pacing_bps == Some(0) {
            return err("pacing_rate", "must be positive".into());
        }
        if self.min_rto_ps > self.max_rto_ps {
            return err("min_rto", "must not exceed max_rto".into());
        }
        Ok(())
    }
}

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
        self.sender.on_timer(now, out);
    }
}
