//! Congestion controllers, one file each, behind one closed enum.
//!
//! The sender owns the window ([`Window`]) and the loss-recovery machinery; a
//! controller decides how the window grows on new ACKs and where `ssthresh`
//! goes after a loss, a timeout or an ECN echo (DCTCP cuts on ECN itself).

pub mod cubic;
pub mod cubic_linux;
pub mod dctcp;
pub mod htcp;
pub mod hystart;
pub mod newreno;

use super::config::{CubicFlavor, Hystart, TcpConfig};
use crate::units::SimTime;
pub use cubic::Cubic;
pub use cubic_linux::LinuxCubic;
pub use dctcp::Dctcp;
pub use htcp::Htcp;
pub use hystart::SlowStartExit;
pub use newreno::NewReno;

/// The congestion window and slow-start threshold, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
}

impl Window {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// What a controller learns from one ACK that acknowledged new data.
#[derive(Clone, Copy, Debug)]
pub struct AckInfo {
    pub now: SimTime,
    /// Bytes newly acknowledged.
    pub acked: u64,
    /// The cumulative ACK.
    pub ack: u64,
    /// Next sequence number to be sent (end of the current window).
    pub snd_nxt: u64,
    /// The ACK carried ECN-Echo.
    pub ece: bool,
    pub srtt: Option<SimTime>,
    pub min_rtt: Option<SimTime>,
    /// The RTT measured with this ACK (timestamp echo), if any.
    pub rtt_sample: Option<SimTime>,
}

/// Which controller, as named in scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CcKind {
    Newreno,
    Cubic,
    Dctcp,
    Htcp,
}

impl CcKind {
    pub fn name(self) -> &'static str {
        match self {
            CcKind::Newreno => "newreno",
            CcKind::Cubic => "cubic",
            CcKind::Dctcp => "dctcp",
            CcKind::Htcp => "htcp",
        }
    }
}

#[derive(Clone, Debug)]
pub enum CongestionControl {
    NewReno(NewReno),
    Cubic(Cubic),
    CubicLinux(LinuxCubic),
    Dctcp(Dctcp),
    Htcp(Htcp),
}

impl CongestionControl {
    pub fn new(cfg: &TcpConfig) -> Self {
        match (cfg.cc, cfg.cubic_flavor) {
            (CcKind::Newreno, _) => CongestionControl::NewReno(NewReno::new(cfg.byte_counting)),
            (CcKind::Cubic, CubicFlavor::Rfc9438) => CongestionControl::Cubic(Cubic::new()),
            (CcKind::Cubic, CubicFlavor::Linux) => CongestionControl::CubicLinux(
                LinuxCubic::new(cfg.hystart == Hystart::Classic, cfg.cubic_hz).with_hold_hz32(cfg.cubic_hold_hz32),
            ),
            (CcKind::Dctcp, _) => CongestionControl::Dctcp(Dctcp::new(cfg.byte_counting, cfg.dctcp_g)),
            (CcKind::Htcp, _) => CongestionControl::Htcp(Htcp::new(cfg.htcp_rtt_scaling, cfg.htcp_bandwidth_switch)),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            CongestionControl::NewReno(_) => "newreno",
            CongestionControl::Cubic(_) | CongestionControl::CubicLinux(_) => "cubic",
            CongestionControl::Dctcp(_) => "dctcp",
            CongestionControl::Htcp(_) => "htcp",
        }
    }

    /// An ACK of new data with its RTT sample (Linux `pkts_acked`): CUBIC's
    /// minimum delay and classic HyStart, which may set `ssthresh`; H-TCP's
    /// RTT bounds and achieved throughput.
    pub fn on_rtt_sample(&mut self, w: &mut Window, info: &AckInfo) {
        match self {
            CongestionControl::CubicLinux(c) => c.on_rtt_sample(w, info),
            CongestionControl::Htcp(h) => h.on_ack(w, info),
            _ => {}
        }
    }

    /// Why classic HyStart ended slow start, once it has.
    pub fn hystart_exit(&self) -> Option<SlowStartExit> {
        match self {
            CongestionControl::CubicLinux(c) => c.hystart.as_ref().and_then(|h| h.exit),
            _ => None,
        }
    }

    /// A retransmission timeout (Linux CUBIC forgets its state).
    pub fn on_timeout(&mut self) {
        if let CongestionControl::CubicLinux(c) = self {
            c.on_timeout();
        }
    }

    /// DCTCP reacts to ECN-Echo in proportion to the marked fraction; the others
    /// treat an echo like a loss (RFC 3168), which the sender handles.
    pub fn handles_ecn(&self) -> bool {
        matches!(self, CongestionControl::Dctcp(_))
    }

    /// Every ACK of new data, in recovery or not (DCTCP's marked-fraction bookkeeping).
    /// Returns true if the controller cut the window in response to ECN.
    pub fn observe(&mut self, w: &mut Window, info: &AckInfo) -> bool {
        match self {
            CongestionControl::Dctcp(d) => d.observe(w, info),
            _ => false,
        }
    }

    /// Window growth on an ACK of new data outside loss recovery.
    pub fn increase(&mut self, w: &mut Window, info: &AckInfo) {
        match self {
            CongestionControl::NewReno(c) => c.increase(w, info),
            CongestionControl::Cubic(c) => c.increase(w, info),
            CongestionControl::CubicLinux(c) => c.increase(w, info),
            CongestionControl::Dctcp(c) => c.increase(w, info),
            CongestionControl::Htcp(c) => c.increase(w, info),
        }
    }

    /// New `ssthresh` on entering loss recovery, on a (first) retransmission
    /// timeout, or on a classic ECN echo: the same rule for all three
    /// (RFC 5681 equation 4, RFC 9438 4.6 and 4.8, RFC 3168 6.1.2).
    /// H-TCP's backoff is adaptive and restarts its clock at `now`.
    pub fn ssthresh_after_loss(&mut self, now: SimTime, w: &Window, flight: u64) -> u64 {
        match self {
            CongestionControl::Htcp(c) => c.ssthresh_after_loss(now, w, flight),
            CongestionControl::NewReno(_) | CongestionControl::Dctcp(_) => newreno::half_flight(w, flight),
            CongestionControl::Cubic(c) => c.ssthresh_after_loss(w),
            CongestionControl::CubicLinux(c) => c.ssthresh_after_loss(w),
        }
    }
}
