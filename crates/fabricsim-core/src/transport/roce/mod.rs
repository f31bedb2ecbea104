//! RoCEv2 reliable-connection transport with DCQCN congestion control.
//!
//! - `mod.rs`: parameters ([`RoceConfig`], resolved units) and the
//!   `rdma_write` and `rdma_flows` application descriptions;
//! - `dcqcn.rs`: the DCQCN reaction point (rate state machine), pure logic;
//! - `hpcc.rs`: HPCC, rate from in-band telemetry (a registered controller, `roce.cc: hpcc`);
//! - `nscc.rs`: an NSCC-like window from ECN and delay, with entropy path
//!   selection (a registered controller, `roce.cc: nscc`);
//! - `rate.rs`: the [`rate::RateControl`] interface DCQCN and registered
//!   controllers (`roce.cc`) implement.
//!
//! The queue pairs themselves (PSNs, ACK coalescing, NACK with go-back-N or
//! selective repeat, retransmission timer, CNP generation) run inside the
//! simulation (`sim/roce.rs`), one timer event per QP as for TCP.

pub mod dcqcn;
pub mod hpcc;
pub mod nscc;
pub mod rate;

use crate::ConfigError;
use serde::{Deserialize, Serialize};

/// Opcodes carried in `Packet::flags`.
pub const OP_DATA: u8 = 0;
pub const OP_ACK: u8 = 1;
pub const OP_NACK: u8 = 2;
pub const OP_CNP: u8 = 3;
/// Flag bit on data packets: last packet of a message.
pub const FLAG_LAST: u8 = 8;
/// Flag bit on data packets: a retransmission.
pub const FLAG_RETX: u8 = 16;
/// Flag bit on ACKs and NACKs: a CE-marked data packet arrived since the
/// receiver's previous ACK or NACK (ECN echo, for rate controllers).
pub const FLAG_ECE: u8 = 32;
/// Flag bit on data packets: a switch cut the payload off (packet trimming,
/// `network/trimming.rs`); on a NACK: it answers such a header, whose PSN is
/// the report's `top`.
pub const FLAG_TRIMMED: u8 = 64;

/// DCQCN parameters (resolved); missing fields take [`DcqcnConfig::default`].
/// Defaults: the DCQCN paper's timing as used by HPCC's `dcqcn_paper` variant
/// and htsim (g = 1/256, alpha and increase timers 55 us, rate decrease and CNP
/// interval 50 us, F = 5), increase driven by the timer only as in HPCC's
/// `RdmaHw` (the byte counter, 10 MB in the paper, is available but off), with
/// HPCC's increase steps scaled by link speed (5 / 50 Mb/s per 25G) and the
/// `RdmaHw` minimum rate of 100 Mb/s.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DcqcnConfig {
    /// Run DCQCN; otherwise QPs always send at line rate.
    pub enabled: bool,
    /// EWMA gain g of alpha.
    pub g: f64,
    pub initial_alpha: f64,
    /// Alpha decays by (1 - g) every this long without a CNP.
    pub alpha_interval_ps: u64,
    /// At most one rate cut per this interval.
    pub rate_decrease_interval_ps: u64,
    /// Rate-increase timer period.
    pub rate_increase_timer_ps: u64,
    /// Rate-increase byte counter; `None`: timer only.
    pub byte_counter_bytes: Option<u64>,
    /// Fast-recovery stages F.
    pub fast_recovery_stages: u32,
    /// Additive increase step; `None`: 5 Mb/s per 25 Gb/s of NIC rate.
    pub rate_ai_bps: Option<u64>,
    /// Hyper increase step; `None`: 50 Mb/s per 25 Gb/s of NIC rate.
    pub rate_hai_bps: Option<u64>,
    pub min_rate_bps: u64,
    /// Notification point: at most one CNP per QP per this interval.
    pub cnp_interval_ps: u64,
}

const US: u64 = 1_000_000;

/// Default retransmission timeout: the InfiniBand local ACK timeout
/// `4.096 us x 2^timeout` (IBA vol. 1, QP attribute "Local Ack Timeout") with
/// the exponent 14 that the perftest tools (ib_write_bw, ...) set on RC QPs
/// by default: 67.108864 ms.
pub const DEFAULT_RTO_PS: u64 = 4_096_000 << 14;

impl Default for DcqcnConfig {
    fn default() -> Self {
        DcqcnConfig {
            enabled: true,
            g: 1.0 / 256.0,
            initial_alpha: 1.0,
            alpha_interval_ps: 55 * US,
            rate_decrease_interval_ps: 50 * US,
            rate_increase_timer_ps: 55 * US,
            byte_counter_bytes: None,
            fast_recovery_stages: 5,
            rate_ai_bps: None,
            rate_hai_bps: None,
            min_rate_bps: 100_000_000,
            cnp_interval_ps: 50 * US,
        }
    }
}

/// How a QP recovers lost packets.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RoceRecovery {
    /// The RoCEv2 RC rule: the receiver drops every packet after a gap and
    /// NACKs the expected PSN once; the requester resends everything from it.
    #[default]
    GoBackN,
    /// The receiver places packets out of order and NACKs each one with a
    /// bitmap of what it holds past the expected PSN; the requester resends
    /// only the holes (as IRN and the Ultra Ethernet transport do).
    SelectiveRepeat,
}

/// RoCEv2 parameters of a QP (resolved); missing fields take [`RoceConfig::default`].
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RoceConfig {
    /// Payload bytes per packet (the RoCE path MTU, usually 256, 512, 1024,
    /// 2048 or 4096; any 1..9000 is accepted).
    pub mtu_bytes: u32,
    /// Header bytes per frame: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4.
    pub header_bytes: u32,
    /// Receiver ACKs every this many in-order packets, and at every message end.
    pub ack_every: u32,
    /// Class of ACKs and NACKs; `None`: the CNP class.
    pub ack_class: Option<u8>,
    /// Class of CNPs (strict priority).
    pub cnp_class: u8,
    /// Retransmission timeout (go-back-N from the oldest unacknowledged PSN,
    /// or, with selective repeat, every packet not reported received).
    /// Time the QP's own NIC spends paused by PFC does not count.
    pub rto_ps: u64,
    /// Go-back-N or selective repeat.
    pub recovery: RoceRecovery,
    /// Selective repeat: a hole is resent once this many later packets are
    /// reported received (RFC 6675's DupThresh; 1 resends at the first
    /// out-of-order arrival, as IRN does).
    pub dupthresh: u32,
    /// Data packets are ECN-capable (ECT(0)).
    pub ecn: bool,
    pub dcqcn: DcqcnConfig,
    /// Rate controller: `dcqcn` (the `dcqcn` section), or a controller
    /// registered by this name (`extension::rate_cc`) with `cc_params`.
    pub cc: String,
    /// Parameters of a registered controller (checked by its factory).
    pub cc_params: serde_json::Value,
    /// Switches stamp this QP's data packets with in-band telemetry, echoed
    /// to the controller in ACKs (always on for `hpcc`).
    pub int: bool,
}

/// The built-in rate controller's name.
pub const DCQCN: &str = "dcqcn";

impl RoceConfig {
    /// Whether the QPs run a registered controller rather than DCQCN.
    #[inline]
    pub fn custom_cc(&self) -> bool {
        self.cc != DCQCN
    }

    /// Whether receivers send CNPs for CE-marked data: with DCQCN enabled, and
    /// always with a registered controller (at most one per
    /// `dcqcn.cnp_interval` per QP in both cases).
    #[inline]
    pub fn sends_cnps(&self) -> bool {
        self.dcqcn.enabled || self.custom_cc()
    }

    /// Whether the QP's data carries in-band telemetry.
    pub fn uses_int(&self) -> bool {
        self.int || self.cc == hpcc::NAME
    }
}

impl Default for RoceConfig {
    fn default() -> Self {
        RoceConfig {
            mtu_bytes: 1024,
            header_bytes: 62,
            ack_every: 1,
            ack_class: None,
            cnp_class: 7,
            rto_ps: DEFAULT_RTO_PS,
            recovery: RoceRecovery::GoBackN,
            dupthresh: 3,
            ecn: true,
            dcqcn: DcqcnConfig::default(),
            cc: DCQCN.to_string(),
            cc_params: serde_json::Value::Null,
            int: false,
        }
    }
}

impl RoceConfig {
    /// Frame bytes of a data packet with `payload` bytes.
    pub fn data_frame(&self, payload: u32) -> u32 {
        (payload + self.header_bytes).max(64)
    }
    /// Frame bytes of an ACK/NACK (BTH + AETH).
    pub fn ack_frame(&self) -> u32 {
        (self.header_bytes + 4).max(64)
    }
    /// Frame bytes of a CNP (BTH + 16 reserved bytes).
    pub fn cnp_frame(&self) -> u32 {
        (self.header_bytes + 16).max(64)
    }
    pub fn ack_class(&self) -> u8 {
        self.ack_class.unwrap_or(self.cnp_class)
    }

    /// Checks ranges; `path` prefixes field names.
    pub fn validate(&self, path: &str, classes: usize) -> Result<(), ConfigError> {
        let e = |field: &str, msg: String| Err(ConfigError::new(format!("{path}.{field}"), msg));
        if self.mtu_bytes == 0 || self.mtu_bytes > 9000 {
            return e("mtu", format!("must be 1..9000 bytes (got {})", self.mtu_bytes));
        }
        if self.ack_every == 0 {
            return e("ack_every", "must be >= 1".into());
        }
        for (f, c) in [("cnp_class", self.cnp_class), ("ack_class", self.ack_class())] {
            if c as usize >= classes {
                return e(f, format!("must be < network.classes ({classes}) (got {c})"));
            }
        }
        if self.rto_ps == 0 {
            return e("rto", "must be > 0".into());
        }
        if self.dupthresh == 0 || self.dupthresh > 64 {
            return e("dupthresh", format!("must be 1..64 packets (got {})", self.dupthresh));
        }
        let d = &self.dcqcn;
        if !(d.g > 0.0 && d.g <= 1.0) {
            return e("dcqcn.g", format!("must be in (0, 1] (got {})", d.g));
        }
        if !(0.0..=1.0).contains(&d.initial_alpha) {
            return e("dcqcn.initial_alpha", "must be in [0, 1]".into());
        }
        if d.alpha_interval_ps == 0 {
            return e("dcqcn.alpha_interval", "must be > 0".into());
        }
        if d.rate_increase_timer_ps == 0 {
            return e("dcqcn.rate_increase_timer", "must be > 0".into());
        }
        if d.min_rate_bps == 0 {
            return e("dcqcn.min_rate", "must be > 0".into());
        }
        if d.byte_counter_bytes == Some(0) {
            return e("dcqcn.byte_counter", "must be > 0".into());
        }
        Ok(())
    }
}

/// `rdma_write`: from each client, `qps` queue pairs to `dst`; each QP writes
/// `messages` messages of `message_bytes`, at most `window` outstanding
/// (1 = closed loop: the next message starts once the previous is acknowledged).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RdmaWriteConfig {
    #[serde(default)]
    pub name: String,
    pub src: Vec<String>,
    pub dst: String,
    #[serde(default = "one")]
    pub qps: u32,
    #[serde(default = "one")]
    pub messages: u32,
    pub message_bytes: u64,
    #[serde(default = "one")]
    pub window: u32,
    #[serde(default)]
    pub start_ps: u64,
    #[serde(default = "d_class")]
    pub class: u8,
    #[serde(default)]
    pub roce: Option<RoceConfig>,
}

/// `rdma_flows`: an explicit list of RDMA WRITE transfers, one queue pair
/// and one message each, that may wait for others of the list (`after`,
/// `compute_ps`, as in `tcp_flows`; `sim/flow_deps.rs`). A transfer is
/// complete when its responder has every byte of it (the receive completion
/// of an RDMA WRITE with immediate), which is when those waiting for it may
/// start.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RdmaFlowsConfig {
    #[serde(default)]
    pub name: String,
    pub flows: Vec<crate::transport::apps::TcpFlowSpec>,
    #[serde(default = "d_class")]
    pub class: u8,
    #[serde(default)]
    pub roce: Option<RoceConfig>,
}

fn one() -> u32 {
    1
}
/// RDMA traffic defaults to class 3, the usual RoCE priority.
fn d_class() -> u8 {
    3
}
