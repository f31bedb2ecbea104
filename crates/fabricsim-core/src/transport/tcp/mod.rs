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

use crate::units::SimTime;
pub use cc::CcKind;
pub use receiver::Receiver;
pub use sender::Sender;
use serde::Deserialize;

/// TCP parameters of one flow (resolved: integers in bytes and picoseconds).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpConfig {
    #[serde(default = "d_cc")]
    pub cc: CcKind,
    /// IP MTU; MSS = mtu - header_bytes.
    #[serde(default = "d_mtu")]
    pub mtu_bytes: u32,
    /// IP + TCP header bytes per segment, options included (20 + 20 + 12 with timestamps).
    #[serde(default = "d_header")]
    pub header_bytes: u32,
    /// Link-layer header + trailer per frame (Ethernet 14 + 4).
    #[serde(default = "d_l2")]
    pub l2_bytes: u32,
    /// Smallest frame on the wire (Ethernet: 64).
    #[serde(default = "d_min_frame")]
    pub min_frame_bytes: u32,
    #[serde(default = "d_init_cwnd")]
    pub init_cwnd_segments: u32,
    /// Receive window: the sender never has more than this in flight.
    #[serde(default = "d_rwnd")]
    pub rwnd_bytes: u64,
    #[serde(default = "d_min_rto")]
    pub min_rto_ps: u64,
    #[serde(default = "d_initial_rto")]
    pub initial_rto_ps: u64,
    #[serde(default = "d_max_rto")]
    pub max_rto_ps: u64,
    #[serde(default = "d_granularity")]
    pub clock_granularity_ps: u64,
    /// ACK after this many full segments.
    #[serde(default = "d_delack_count")]
    pub delack_count: u32,
    #[serde(default = "d_delack_timeout")]
    pub delack_timeout_ps: u64,
    /// ACK every segment for the first this many segments (Linux quick-ACK mode).
    #[serde(default = "d_quickack")]
    pub quickack_segments: u32,
    /// Negotiate ECN (RFC 3168). DCTCP always uses ECN.
    #[serde(default)]
    pub ecn: bool,
    #[serde(default = "d_dctcp_g")]
    pub dctcp_g: f64,
    /// Appropriate byte counting (RFC 3465, Linux-like growth with delayed ACKs).
    #[serde(default)]
    pub byte_counting: bool,
    #[serde(default = "d_dupack")]
    pub dupack_threshold: u32,
    /// Pace data segments at this rate (bit/s of frames), if set.
    #[serde(default)]
    pub pacing_bps: Option<u64>,
}

fn d_cc() -> CcKind {
    CcKind::Newreno
}
fn d_mtu() -> u32 {
    1500
}
fn d_header() -> u32 {
    52
}
fn d_l2() -> u32 {
    18
}
fn d_min_frame() -> u32 {
    64
}
fn d_init_cwnd() -> u32 {
    10
}
fn d_rwnd() -> u64 {
    6 * 1024 * 1024
}
fn d_min_rto() -> u64 {
    200 * 1_000_000_000
}
fn d_initial_rto() -> u64 {
    crate::units::PS_PER_SEC
}
fn d_max_rto() -> u64 {
    120 * crate::units::PS_PER_SEC
}
fn d_granularity() -> u64 {
    1_000_000_000
}
fn d_delack_count() -> u32 {
    2
}
fn d_delack_timeout() -> u64 {
    40 * 1_000_000_000
}
fn d_quickack() -> u32 {
    16
}
fn d_dctcp_g() -> f64 {
    1.0 / 16.0
}
fn d_dupack() -> u32 {
    3
}

impl Default for TcpConfig {
    fn default() -> Self {
        serde_json::from_str("{}").expect("defaults")
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
    pub fn validate(&self, path: &str) -> Result<(), crate::error::ConfigError> {
        use crate::error::ConfigError;
        if self.header_bytes >= self.mtu_bytes || self.mtu_bytes - self.header_bytes < 64 {
            return Err(ConfigError::new(
                format!("{path}.mtu"),
                format!(
                    "leaves a segment of {} bytes after {} header bytes; need at least 64",
                    self.mtu_bytes.saturating_sub(self.header_bytes),
                    self.header_bytes
                ),
            ));
        }
        if self.init_cwnd_segments == 0 {
            return Err(ConfigError::new(format!("{path}.init_cwnd"), "must be >= 1"));
        }
        if self.rwnd_bytes < self.mss() as u64 {
            return Err(ConfigError::new(format!("{path}.rwnd"), "must hold at least one segment"));
        }
        if self.delack_count == 0 {
            return Err(ConfigError::new(format!("{path}.delayed_ack.count"), "must be >= 1"));
        }
        if !(self.dctcp_g > 0.0 && self.dctcp_g <= 1.0) {
            return Err(ConfigError::new(format!("{path}.dctcp_g"), "must be in (0, 1]"));
        }
        if self.dupack_threshold == 0 {
            return Err(ConfigError::new(format!("{path}.dupack_threshold"), "must be >= 1"));
        }
        if self.pacing_bps == Some(0) {
            return Err(ConfigError::new(format!("{path}.pacing_rate"), "must be positive"));
        }
        if self.min_rto_ps > self.max_rto_ps {
            return Err(ConfigError::new(format!("{path}.min_rto"), "must not exceed max_rto"));
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
    pub fn on_timer(&mut self, cfg: &TcpConfig, now: SimTime, out: &mut Outbox) {
        self.receiver.on_timer(now, out);
        self.sender.on_timer(cfg, now, out);
    }
}
