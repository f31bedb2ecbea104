//! Congestion controllers, one file each, behind one interface
//! ([`CongestionOps`], `ops.rs`) and one enum that dispatches to it.
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
pub mod ops;

use super::config::{CubicFlavor, Hystart, TcpConfig};
use crate::units::{Rate, SimTime};
pub use cubic::Cubic;
pub use cubic_linux::LinuxCubic;
pub use dctcp::Dctcp;
pub use htcp::Htcp;
pub use hystart::SlowStartExit;
pub use newreno::NewReno;
pub use ops::{CcInit, CcState, CongestionOps, LossInfo};

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
    /// Bytes in flight once this ACK is taken into account (`snd_max - snd_una`).
    pub flight: u64,
    /// The recovery state when the ACK arrived (before what it changes).
    pub state: CcState,
}

/// Which controller, as named in scenarios.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CcKind {
    Newreno,
    Cubic,
    Dctcp,
    Htcp,
    /// A controller registered by name (`extension/tcp_cc.rs`); its name and
    /// parameters are [`TcpConfig::cc_ext`](super::config::TcpConfig).
    #[serde(skip_deserializing)]
    Registered,
}

impl CcKind {
    pub fn name(self) -> &'static str {
        match self {
            CcKind::Newreno => "newreno",
            CcKind::Cubic => "cubic",
            CcKind::Dctcp => "dctcp",
            CcKind::Htcp => "htcp",
            CcKind::Registered => "registered",
        }
    }
}

/// The connection's controller: one of the built-ins, each called through
/// its [`CongestionOps`] implementation without a virtual call, or one made
/// outside the core (`Custom`: a controller registered by name, see
/// `extension/tcp_cc.rs`).
#[derive(Clone, Debug)]
pub enum CongestionControl {
    NewReno(NewReno),
    Cubic(Cubic),
    CubicLinux(LinuxCubic),
    Dctcp(Dctcp),
    Htcp(Htcp),
    Custom(Box<dyn CongestionOps>),
}

/// `$c.$call` on whichever controller `$self` holds.
macro_rules! dispatch {
    ($self:expr, $c:ident => $call:expr) => {
        match $self {
            CongestionControl::NewReno($c) => $call,
            CongestionControl::Cubic($c) => $call,
            CongestionControl::CubicLinux($c) => $call,
            CongestionControl::Dctcp($c) => $call,
            CongestionControl::Htcp($c) => $call,
            CongestionControl::Custom($c) => $call,
        }
    };
}

impl CongestionControl {
    /// The built-in controller `cfg` names (a registered one is made by the
    /// simulation, which replaces this one with [`CongestionControl::Custom`]).
    pub fn new(cfg: &TcpConfig) -> Self {
        match (cfg.cc, cfg.cubic_flavor) {
            (CcKind::Newreno | CcKind::Registered, _) => CongestionControl::NewReno(NewReno::new(cfg.byte_counting)),
            (CcKind::Cubic, CubicFlavor::Rfc9438) => CongestionControl::Cubic(Cubic::new()),
            (CcKind::Cubic, CubicFlavor::Linux) => CongestionControl::CubicLinux(
                LinuxCubic::new(cfg.hystart == Hystart::Classic, cfg.cubic_hz).with_hold_hz32(cfg.cubic_hold_hz32),
            ),
            (CcKind::Dctcp, _) => CongestionControl::Dctcp(Dctcp::new(cfg.byte_counting, cfg.dctcp_g)),
            (CcKind::Htcp, _) => CongestionControl::Htcp(Htcp::new(cfg.htcp_rtt_scaling, cfg.htcp_bandwidth_switch)),
        }
    }

    pub fn name(&self) -> &str {
        dispatch!(self, c => c.name())
    }

    /// Linux `pkts_acked`: every ACK of new data ([`CongestionOps::on_ack`]).
    #[inline(always)]
    pub fn on_ack(&mut self, w: &mut Window, info: &AckInfo) {
        dispatch!(self, c => c.on_ack(w, info))
    }

    /// Why the controller ended slow start (classic HyStart), once it has.
    #[inline(always)]
    pub fn slow_start_exit(&self) -> Option<SlowStartExit> {
        dispatch!(self, c => c.slow_start_exit())
    }

    /// A retransmission timeout ([`CongestionOps::on_timeout`]).
    #[inline(always)]
    pub fn on_timeout(&mut self, w: &Window, now: SimTime) {
        dispatch!(self, c => c.on_timeout(w, now))
    }

    /// Whether the controller reacts to ECN-Echo itself ([`CongestionOps::handles_ecn`]).
    #[inline(always)]
    pub fn handles_ecn(&self) -> bool {
        dispatch!(self, c => c.handles_ecn())
    }

    /// Every ACK of new data of an ECN connection whose controller handles
    /// ECN; true if it cut the window ([`CongestionOps::on_ecn`]).
    #[inline(always)]
    pub fn on_ecn(&mut self, w: &mut Window, info: &AckInfo) -> bool {
        dispatch!(self, c => c.on_ecn(w, info))
    }

    /// Window growth on an ACK of new data outside loss recovery ([`CongestionOps::cong_avoid`]).
    #[inline(always)]
    pub fn cong_avoid(&mut self, w: &mut Window, info: &AckInfo) {
        dispatch!(self, c => c.cong_avoid(w, info))
    }

    /// New `ssthresh` on entering loss recovery, on a (first) retransmission
    /// timeout, or on a classic ECN echo ([`CongestionOps::ssthresh`]).
    #[inline(always)]
    pub fn ssthresh(&mut self, w: &Window, loss: &LossInfo) -> u64 {
        dispatch!(self, c => c.ssthresh(w, loss))
    }

    /// The recovery state changed ([`CongestionOps::set_state`]).
    #[inline(always)]
    pub fn set_state(&mut self, w: &Window, state: CcState, now: SimTime) {
        dispatch!(self, c => c.set_state(w, state, now))
    }

    /// The controller's pacing rate, if it sets one ([`CongestionOps::pacing_rate`]).
    #[inline(always)]
    pub fn pacing_rate(&self) -> Option<Rate> {
        dispatch!(self, c => c.pacing_rate())
    }
}
