//! TCP parameters and the profiles that choose their defaults.
//!
//! A profile is a named set of defaults; every behaviour it selects has a
//! field of its own, and a field given explicitly overrides the profile.
//!
//! - `linux` (the default): what a current Linux sender and receiver do out of
//!   the box: CUBIC with Linux's constants and its classic HyStart, SACK and
//!   D-SACK, RACK-TLP loss detection, PRR during recovery, limited transmit,
//!   window growth counted in acknowledged segments, growth only while the
//!   window limits the flight, Reno's `ssthresh` from cwnd, Linux's RTO
//!   formula, and Linux's 2 ms of slack
//!   on the RACK and TLP timers.
//! - `rfc`: the RFC baseline without SACK: NewReno recovery (RFC 6582), RFC
//!   5681 growth of one segment per ACK in slow start, `ssthresh` from
//!   FlightSize, RFC 6298 RTO, no HyStart.

use super::cc::CcKind;
use super::reader::ReceiverApp;
use crate::error::ConfigError;
use crate::units::PS_PER_SEC;
use serde::{Deserialize, Serialize};

const MS: u64 = 1_000_000_000;

/// Which set of defaults a TCP configuration starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TcpProfile {
    #[default]
    Linux,
    Rfc,
}

/// Slow-start exit algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum Hystart {
    /// Standard slow start until the first loss.
    #[serde(rename = "off")]
    Off,
    /// Linux's HyStart in `tcp_cubic.c`: ACK-train and delay-increase detection (CUBIC only).
    #[serde(rename = "classic")]
    Classic,
    /// HyStart++ (RFC 9406): delay increase, then Conservative Slow Start.
    #[serde(rename = "hystart++")]
    HystartPlusPlus,
}

/// Which CUBIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CubicFlavor {
    /// RFC 9438 as written: `C = 0.4`, `beta = 0.7`, smoothed RTT for the look-ahead.
    Rfc9438,
    /// `tcp_cubic.c`: `C = 410/1024`, `beta = 717/1024`, minimum RTT for the
    /// look-ahead, whole-segment counting, 5% per RTT floor while `W_max` is unknown.
    Linux,
}

/// How dynamic right-sizing grows the receive buffer (`tcp_rcv_space_adjust`),
/// by the Linux release that brought the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub enum RcvbufGrowth {
    /// Linux 6.18 (and the 6.16/6.17 stable kernels with the fix "tcp: fix
    /// too slow tcp_rcvbuf_grow() action"): a window of twice the bytes read
    /// in the last RTT plus twice that times their relative growth (a sender
    /// in slow start doubles per RTT, and the measure is one RTT late), plus
    /// the span of the out-of-order queue, re-checked whenever a segment joins
    /// that queue.
    #[serde(rename = "linux_6_18")]
    Linux618,
    /// Linux 6.16 and 6.17 as released: twice the bytes read plus the
    /// out-of-order span (no term for growth).
    #[serde(rename = "linux_6_16")]
    Linux616,
    /// Linux 4.19 to 6.15: twice the bytes read plus 16 segments, plus twice
    /// that times their relative growth; nothing on out-of-order data.
    #[serde(rename = "linux_4_19")]
    Linux419,
}

/// How the retransmission timeout follows the RTT estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoFormula {
    /// RFC 6298: `max(min_rto, SRTT + max(G, 4 RTTVAR))`.
    Rfc6298,
    /// Linux: `SRTT + max(min_rto, 4 RTTVAR)` (the minimum is added, not a floor).
    Linux,
}

/// What a Reno-style window reduction halves (NewReno, and DCTCP on loss;
/// CUBIC always scales cwnd by beta).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SsthreshFrom {
    /// RFC 5681 (4) and RFC 6675 (4.2): `FlightSize / 2`, the data outstanding.
    Flight,
    /// RFC 6675's `pipe` (what ns-3 halves when SACK is on); FlightSize without SACK.
    Pipe,
    /// The congestion window (Linux `tcp_reno_ssthresh`: `cwnd / 2`).
    Cwnd,
}

/// How (and whether) a sender spaces its segments in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pacing {
    /// No pacing: segments leave as fast as the window (and TCP Small
    /// Queues) let them, as on a Linux host with `fq_codel` or `pfifo_fast`.
    Off,
    /// One frame time at `pacing_rate` between data segments (a constant
    /// rate, whatever the window and RTT).
    Fixed,
    /// Linux internal pacing (`tcp_internal_pacing`, used without `fq`):
    /// each TSO burst leaves `burst / sk_pacing_rate` after the previous one,
    /// with `sk_pacing_rate = ratio x cwnd x MSS / SRTT` (capped by `pacing_rate`).
    Internal,
    /// The `fq` qdisc enforcing the same per-flow departure times (Linux's
    /// early-departure-time model since 4.20 stamps them in TCP in both cases).
    Fq,
}

impl Pacing {
    /// Whether the rate follows cwnd / SRTT (`internal`, `fq`).
    pub fn is_dynamic(self) -> bool {
        matches!(self, Pacing::Internal | Pacing::Fq)
    }
}

/// TCP parameters of one flow (resolved: integers in bytes and picoseconds).
///
/// Deserialized through [`TcpConfigSpec`]: fields left out take the values of
/// the chosen `profile` ([`TcpConfig::for_profile`]).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(from = "TcpConfigSpec")]
pub struct TcpConfig {
    pub profile: TcpProfile,
    pub cc: CcKind,
    /// The registered controller and its parameters when `cc` is
    /// [`CcKind::Registered`] (`tcp.cc` names it, `tcp.cc_params` holds them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_ext: Option<CcExtension>,
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
    pub rto_formula: RtoFormula,
    /// ACK after this many full segments.
    pub delack_count: u32,
    pub delack_timeout_ps: u64,
    /// ACK every segment for the first this many segments (Linux quick-ACK mode).
    pub quickack_segments: u32,
    /// Negotiate ECN (RFC 3168). DCTCP always uses ECN.
    pub ecn: bool,
    pub dctcp_g: f64,
    /// H-TCP's RTT scaling of its increase (Linux `use_rtt_scaling`, on).
    pub htcp_rtt_scaling: bool,
    /// H-TCP's throughput-change rule (Linux `use_bandwidth_switch`, on).
    pub htcp_bandwidth_switch: bool,
    /// Appropriate byte counting (RFC 3465): growth by acknowledged bytes, not ACKs.
    pub byte_counting: bool,
    pub dupack_threshold: u32,
    /// `fixed` pacing: the rate (bit/s of frames); `internal`/`fq`: the
    /// cap on `sk_pacing_rate` (Linux `SO_MAX_PACING_RATE`, fq's `maxrate`).
    pub pacing_bps: Option<u64>,
    /// Pacing mode (see [`Pacing`]).
    pub pacing: Pacing,
    /// `sk_pacing_rate` in percent of cwnd / SRTT while `cwnd < ssthresh / 2`
    /// (Linux `tcp_pacing_ss_ratio`) and otherwise (`tcp_pacing_ca_ratio`).
    pub pacing_ss_ratio_pct: u32,
    pub pacing_ca_ratio_pct: u32,
    /// Largest TSO/GSO burst (`sk_gso_max_size`); 0: every segment its own
    /// burst (no TSO sizing).
    pub gso_max_bytes: u32,
    /// Fewest segments per TSO burst (`tcp_min_tso_segs`).
    pub min_tso_segs: u32,
    /// The RTT allowance of a TSO burst halves every `2^tso_rtt_log` us of
    /// minimum RTT (`tcp_tso_rtt_log`); 0 turns the allowance off.
    pub tso_rtt_log: u32,
    /// TCP Small Queues: bound the bytes a connection has below the socket
    /// (qdisc, shaper, NIC queue) until their transmission completes.
    pub tsq: bool,
    /// `tcp_limit_output_bytes`: the TSQ bound of an unpaced connection.
    pub limit_output_bytes: u64,
    /// Receive buffer min / default / max (`tcp_rmem`).
    pub rmem: [u64; 3],
    /// Send buffer min / default / max (`tcp_wmem`); `None`: no send buffer limit.
    pub wmem: Option<[u64; 3]>,
    /// Receive-window autotuning (`tcp_moderate_rcvbuf` with buffers from
    /// `rmem`); off: the window is `rwnd_bytes` (as a socket with `SO_RCVBUF`).
    pub rcv_autotune: bool,
    /// Fixed send buffer (a socket with `SO_SNDBUF`): caps the data outstanding.
    pub sndbuf_bytes: Option<u64>,
    /// Receive-window bytes per byte of buffer, in 256ths (Linux `scaling_ratio`,
    /// 128 = 50% as `TCP_DEFAULT_SCALING_RATIO` and `tcp_adv_win_scale = 1`).
    pub rcv_scaling_ratio: u32,
    /// The memory a received segment takes beyond its payload (`skb->truesize
    /// - skb->len`, the driver's and the stack's overhead). `Some`: the
    /// scaling ratio is learned from the first full-sized segment as Linux
    /// 6.7+ does (`tcp_measure_rcv_mss`); `None`: `rcv_scaling_ratio` stays.
    pub rcv_truesize_overhead: Option<u32>,
    /// How the receive buffer grows.
    pub rcvbuf_growth: RcvbufGrowth,
    /// A full-sized PSH segment marks the pending ACK pushed, and a read
    /// that empties the receive queue then sends it (`tcp_measure_rcv_mss`,
    /// Linux 6.7+: `ICSK_ACK_PUSHED`; `tcp_cleanup_rbuf`).
    pub ack_pushed: bool,
    /// Selective acknowledgments (RFC 2018) and SACK-based recovery (RFC 6675).
    pub sack: bool,
    /// Duplicate-SACK reports from the receiver (RFC 2883).
    pub dsack: bool,
    /// RACK time-based loss detection (RFC 8985 section 6).
    pub rack: bool,
    /// `RACK.rtt` from the last segment an ACK delivers in Linux's order
    /// (SACKed, then cumulatively acknowledged, each in ascending sequence;
    /// `tcp_rack_advance` in current kernels) rather than from the most
    /// recently sent one (RFC 8985); see `scoreboard::Deliveries`.
    pub rack_rtt_in_ack_order: bool,
    /// Tail loss probes (RFC 8985 section 7).
    pub tlp: bool,
    /// Proportional Rate Reduction (RFC 6937, slow-start reduction bound) in recovery.
    pub prr: bool,
    /// Limited transmit (RFC 3042).
    pub limited_transmit: bool,
    pub hystart: Hystart,
    pub cubic_flavor: CubicFlavor,
    pub ssthresh_from: SsthreshFrom,
    /// Grow the window only while it limits the flight (Linux `tcp_is_cwnd_limited`).
    pub cwnd_validation: bool,
    /// Added to the RACK reordering timer and to the tail-loss-probe timeout
    /// when more than one segment is in flight (Linux: `TCP_TIMEOUT_MIN`, 2 ms).
    pub loss_timer_slack_ps: u64,
    /// The receiving application (`reader.rs`); `None`: the ideal reader,
    /// which reads every in-order byte the moment it arrives.
    pub receiver_app: Option<ReceiverApp>,
    /// SACK compression (Linux `tcp_comp_sack_nr`): after three immediate
    /// duplicate ACKs for the same `rcv_nxt`, out-of-order data is
    /// acknowledged at most once per `sack_compression_delay_ps` or 5% of the
    /// receiver's RTT, or after this many withheld ACKs; 0: off.
    pub sack_compression_segments: u32,
    /// The longest a compressed SACK waits (`tcp_comp_sack_delay_ns`).
    pub sack_compression_delay_ps: u64,
    /// Linux CUBIC's clock (`CONFIG_HZ`, jiffies per second): `bictcp_update`
    /// counts time in jiffies and recomputes its increase at most once per
    /// jiffy; 0 (the default): exact time.
    pub cubic_hz: u32,
    /// With `cubic_hz`: hold `cnt` for `HZ / 32` jiffies while cwnd is
    /// unchanged, as Linux's `bictcp_update` does (the lab's 6.18.44 kernel
    /// included; default); false: `min(HZ / 32, delay_min)`, the rule of a
    /// change proposed for Linux in 2024 that this kernel does not run.
    pub cubic_hold_hz32: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig::for_profile(TcpProfile::Linux, None)
    }
}

impl TcpConfig {
    /// The defaults of `profile`; `cc` (if given) replaces the profile's
    /// controller and the defaults that depend on it (HyStart).
    pub fn for_profile(profile: TcpProfile, cc: Option<CcKind>) -> Self {
        let linux = profile == TcpProfile::Linux;
        let cc = cc.unwrap_or(if linux { CcKind::Cubic } else { CcKind::Newreno });
        TcpConfig {
            profile,
            cc,
            cc_ext: None,
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
            rto_formula: if linux { RtoFormula::Linux } else { RtoFormula::Rfc6298 },
            delack_count: 2,
            delack_timeout_ps: 40 * MS,
            quickack_segments: 16,
            ecn: false,
            dctcp_g: 1.0 / 16.0,
            htcp_rtt_scaling: true,
            htcp_bandwidth_switch: true,
            byte_counting: linux,
            dupack_threshold: 3,
            pacing_bps: None,
            pacing: Pacing::Off,
            pacing_ss_ratio_pct: 200,
            pacing_ca_ratio_pct: 120,
            gso_max_bytes: if linux { 65_536 } else { 0 },
            min_tso_segs: 2,
            tso_rtt_log: 9,
            tsq: linux,
            limit_output_bytes: 4 << 20,
            rmem: [4096, 131_072, 6_291_456],
            wmem: linux.then_some([4096, 16_384, 4_194_304]),
            rcv_autotune: linux,
            sndbuf_bytes: None,
            rcv_scaling_ratio: 128,
            rcv_truesize_overhead: None,
            rcvbuf_growth: RcvbufGrowth::Linux618,
            ack_pushed: true,
            sack: linux,
            dsack: linux,
            rack: linux,
            rack_rtt_in_ack_order: linux,
            tlp: linux,
            prr: linux,
            limited_transmit: linux,
            hystart: if linux && cc == CcKind::Cubic { Hystart::Classic } else { Hystart::Off },
            cubic_flavor: if linux { CubicFlavor::Linux } else { CubicFlavor::Rfc9438 },
            ssthresh_from: if linux { SsthreshFrom::Cwnd } else { SsthreshFrom::Flight },
            cwnd_validation: linux,
            loss_timer_slack_ps: if linux { 2 * MS } else { 0 },
            receiver_app: None,
            sack_compression_segments: if linux { 44 } else { 0 },
            sack_compression_delay_ps: MS,
            cubic_hz: 0,
            cubic_hold_hz32: true,
        }
    }

    /// Today's RFC baseline (NewReno without SACK); `TcpConfig::default()` is Linux.
    pub fn rfc() -> Self {
        TcpConfig::for_profile(TcpProfile::Rfc, None)
    }

    pub fn mss(&self) -> u32 {
        self.mtu_bytes - self.header_bytes
    }

    /// Frame size on the wire for a segment carrying `payload` bytes.
    pub fn frame_bytes(&self, payload: u32) -> u32 {
        (payload + self.header_bytes + self.l2_bytes).max(self.min_frame_bytes)
    }

    /// Frame size of a pure ACK carrying `blocks` SACK blocks: the option
    /// takes 2 B of kind and length, 8 B per block, padded with two NOPs
    /// (RFC 2018 3; 3 blocks fit beside timestamps in 40 B of options).
    pub fn ack_frame_bytes(&self, blocks: u32) -> u32 {
        let sack = if blocks > 0 { 4 + 8 * blocks } else { 0 };
        (self.header_bytes + sack + self.l2_bytes).max(self.min_frame_bytes)
    }

    pub fn uses_ecn(&self) -> bool {
        self.ecn || self.cc == CcKind::Dctcp
    }

    /// The receiver's window scale (RFC 7323; Linux `tcp_select_initial_window`:
    /// the smallest shift that fits the largest window in 16 bits, at most 14).
    pub fn rcv_wscale(&self) -> u32 {
        let space = if self.rcv_autotune { self.rmem[2] } else { self.rwnd_bytes };
        let mut shift = 0;
        while shift < 14 && (space >> shift) > 65_535 {
            shift += 1;
        }
        shift
    }

    /// Receive-window bytes that `space` bytes of buffer hold (Linux `tcp_win_from_space`).
    pub fn win_from_space(&self, space: u64) -> u64 {
        space * self.rcv_scaling_ratio as u64 / 256
    }

    /// Buffer bytes needed for a window of `win` bytes (Linux `tcp_space_from_win`).
    pub fn space_from_win(&self, win: u64) -> u64 {
        win * 256 / self.rcv_scaling_ratio.max(1) as u64
    }

    /// Checks ranges; `path` prefixes the field names in errors.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let err = |field: &str, msg: String| Err(ConfigError::new(format!("{path}.{field}"), msg));
        match (&self.cc_ext, self.cc) {
            (Some(_), CcKind::Registered) => {}
            (Some(_), cc) => {
                return err(
                    "cc_params",
                    format!("only a registered controller takes parameters (cc is the built-in '{}')", cc.name()),
                )
            }
            (None, CcKind::Registered) => return err("cc", "a registered controller needs its name".to_string()),
            (None, _) => {}
        }
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
        if self.pacing == Pacing::Fixed && self.pacing_bps.is_none() {
            return err("pacing", "'fixed' needs a pacing_rate".into());
        }
        if self.pacing_ss_ratio_pct == 0 || self.pacing_ca_ratio_pct == 0 {
            let field = if self.pacing_ss_ratio_pct == 0 { "pacing_ss_ratio" } else { "pacing_ca_ratio" };
            return err(field, "must be > 0%".into());
        }
        if self.min_tso_segs == 0 {
            return err("min_tso_segs", "must be >= 1".into());
        }
        if self.tso_rtt_log > 31 {
            return err("tso_rtt_log", format!("must be 0..31 (got {})", self.tso_rtt_log));
        }
        for (field, v) in [("rmem", Some(self.rmem)), ("wmem", self.wmem)] {
            if let Some([lo, def, hi]) = v {
                if !(lo <= def && def <= hi) || lo == 0 {
                    return err(field, format!("needs 0 < min <= default <= max (got {lo}, {def}, {hi})"));
                }
            }
        }
        if self.rcv_truesize_overhead.is_some_and(|b| b > 1 << 20) {
            return err("rcv_truesize_overhead", "must be at most 1 MiB".into());
        }
        if !(1..=255).contains(&self.rcv_scaling_ratio) {
            return err("rcv_scaling_ratio", "must be in (0, 1) (1..255 256ths)".into());
        }
        if self.rcv_autotune && self.win_from_space(self.rmem[2]) < self.mss() as u64 {
            return err("rmem", "the largest receive buffer must hold at least one segment".into());
        }
        if self.sndbuf_bytes.is_some_and(|b| b < self.mss() as u64) {
            return err("sndbuf", "must hold at least one segment".into());
        }
        if self.min_rto_ps > self.max_rto_ps {
            return err("min_rto", "must not exceed max_rto".into());
        }
        if !self.sack {
            for (field, on) in [("dsack", self.dsack), ("rack", self.rack), ("tlp", self.tlp), ("prr", self.prr)] {
                if on {
                    return err(field, "needs sack: true (without SACK the sender uses NewReno recovery)".into());
                }
            }
        }
        if self.hystart == Hystart::Classic && self.cc != CcKind::Cubic {
            return err(
                "hystart",
                format!("'classic' is part of CUBIC (cc is '{}'); use 'hystart++' or 'off'", self.cc.name()),
            );
        }
        if let Some(app) = &self.receiver_app {
            app.validate(&format!("{path}.receiver_app"))?;
        }
        if self.sack && self.rcv_autotune && self.win_from_space(self.rmem[2]) > i32::MAX as u64 {
            return err("rmem", "the largest window must stay below 2 GiB with SACK (32-bit SACK offsets)".into());
        }
        if self.sack && !self.rcv_autotune && self.rwnd_bytes > i32::MAX as u64 {
            return err("rwnd", "must be below 2 GiB with SACK (SACK block edges travel as 32-bit offsets)".into());
        }
        Ok(())
    }
}

/// A controller registered by name from outside the core
/// (`extension/tcp_cc.rs`) and the parameters its factory checks.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CcExtension {
    pub name: String,
    #[serde(default)]
    pub params: serde_json::Value,
}

/// `tcp.cc` as written: a built-in controller, or the name of a registered one.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum CcChoice {
    BuiltIn(CcKind),
    Registered(String),
}

/// A field that tells "absent" (the profile's default) from JSON `null`.
fn some_or_null<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// The wire form of [`TcpConfig`]: every field optional; the profile fills the rest.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfigSpec {
    pub profile: Option<TcpProfile>,
    pub cc: Option<CcChoice>,
    /// Parameters of a registered controller (an object; only with one).
    pub cc_params: Option<serde_json::Value>,
    pub mtu_bytes: Option<u32>,
    pub header_bytes: Option<u32>,
    pub l2_bytes: Option<u32>,
    pub min_frame_bytes: Option<u32>,
    pub init_cwnd_segments: Option<u32>,
    pub rwnd_bytes: Option<u64>,
    pub min_rto_ps: Option<u64>,
    pub initial_rto_ps: Option<u64>,
    pub max_rto_ps: Option<u64>,
    pub clock_granularity_ps: Option<u64>,
    pub rto_formula: Option<RtoFormula>,
    pub delack_count: Option<u32>,
    pub delack_timeout_ps: Option<u64>,
    pub quickack_segments: Option<u32>,
    pub ecn: Option<bool>,
    pub dctcp_g: Option<f64>,
    pub htcp_rtt_scaling: Option<bool>,
    pub htcp_bandwidth_switch: Option<bool>,
    pub byte_counting: Option<bool>,
    pub dupack_threshold: Option<u32>,
    pub pacing_bps: Option<u64>,
    pub pacing: Option<Pacing>,
    pub pacing_ss_ratio_pct: Option<u32>,
    pub pacing_ca_ratio_pct: Option<u32>,
    pub gso_max_bytes: Option<u32>,
    pub min_tso_segs: Option<u32>,
    pub tso_rtt_log: Option<u32>,
    pub tsq: Option<bool>,
    pub limit_output_bytes: Option<u64>,
    pub rmem: Option<[u64; 3]>,
    /// `Some(None)` (JSON `null`) turns the send buffer limit off.
    #[serde(default, deserialize_with = "some_or_null")]
    pub wmem: Option<Option<[u64; 3]>>,
    pub rcv_autotune: Option<bool>,
    pub sndbuf_bytes: Option<u64>,
    pub rcv_scaling_ratio: Option<u32>,
    pub rcv_truesize_overhead: Option<u32>,
    pub rcvbuf_growth: Option<RcvbufGrowth>,
    pub ack_pushed: Option<bool>,
    pub sack: Option<bool>,
    pub dsack: Option<bool>,
    pub rack: Option<bool>,
    pub rack_rtt_in_ack_order: Option<bool>,
    pub tlp: Option<bool>,
    pub prr: Option<bool>,
    pub limited_transmit: Option<bool>,
    pub hystart: Option<Hystart>,
    pub cubic_flavor: Option<CubicFlavor>,
    pub ssthresh_from: Option<SsthreshFrom>,
    pub cwnd_validation: Option<bool>,
    pub loss_timer_slack_ps: Option<u64>,
    pub receiver_app: Option<ReceiverApp>,
    pub sack_compression_segments: Option<u32>,
    pub sack_compression_delay_ps: Option<u64>,
    pub cubic_hz: Option<u32>,
    pub cubic_hold_hz32: Option<bool>,
}

impl From<TcpConfigSpec> for TcpConfig {
    fn from(s: TcpConfigSpec) -> Self {
        let (cc, cc_ext) = match s.cc {
            None => (None, None),
            // Parameters with a built-in controller are kept to be refused by `validate`.
            Some(CcChoice::BuiltIn(k)) => {
                (Some(k), s.cc_params.clone().map(|params| CcExtension { name: k.name().to_string(), params }))
            }
            Some(CcChoice::Registered(name)) => (
                Some(CcKind::Registered),
                Some(CcExtension { name, params: s.cc_params.clone().unwrap_or(serde_json::Value::Null) }),
            ),
        };
        let d = TcpConfig::for_profile(s.profile.unwrap_or_default(), cc);
        let sack = s.sack.unwrap_or(d.sack);
        // Mechanisms that need SACK default to off when SACK is turned off.
        let with_sack = |v: Option<bool>, default: bool| v.unwrap_or(default && sack);
        TcpConfig {
            profile: d.profile,
            cc: d.cc,
            cc_ext,
            mtu_bytes: s.mtu_bytes.unwrap_or(d.mtu_bytes),
            header_bytes: s.header_bytes.unwrap_or(d.header_bytes),
            l2_bytes: s.l2_bytes.unwrap_or(d.l2_bytes),
            min_frame_bytes: s.min_frame_bytes.unwrap_or(d.min_frame_bytes),
            init_cwnd_segments: s.init_cwnd_segments.unwrap_or(d.init_cwnd_segments),
            rwnd_bytes: s.rwnd_bytes.unwrap_or(d.rwnd_bytes),
            min_rto_ps: s.min_rto_ps.unwrap_or(d.min_rto_ps),
            initial_rto_ps: s.initial_rto_ps.unwrap_or(d.initial_rto_ps),
            max_rto_ps: s.max_rto_ps.unwrap_or(d.max_rto_ps),
            clock_granularity_ps: s.clock_granularity_ps.unwrap_or(d.clock_granularity_ps),
            rto_formula: s.rto_formula.unwrap_or(d.rto_formula),
            delack_count: s.delack_count.unwrap_or(d.delack_count),
            delack_timeout_ps: s.delack_timeout_ps.unwrap_or(d.delack_timeout_ps),
            quickack_segments: s.quickack_segments.unwrap_or(d.quickack_segments),
            ecn: s.ecn.unwrap_or(d.ecn),
            dctcp_g: s.dctcp_g.unwrap_or(d.dctcp_g),
            htcp_rtt_scaling: s.htcp_rtt_scaling.unwrap_or(d.htcp_rtt_scaling),
            htcp_bandwidth_switch: s.htcp_bandwidth_switch.unwrap_or(d.htcp_bandwidth_switch),
            byte_counting: s.byte_counting.unwrap_or(d.byte_counting),
            dupack_threshold: s.dupack_threshold.unwrap_or(d.dupack_threshold),
            pacing_bps: s.pacing_bps.or(d.pacing_bps),
            // A rate alone asks for pacing: a constant rate in the RFC
            // profile (as before), Linux's internal pacing capped at that
            // rate in the Linux profile (what SO_MAX_PACING_RATE does).
            pacing: s.pacing.unwrap_or(match (s.pacing_bps, d.profile) {
                (None, _) => d.pacing,
                (Some(_), TcpProfile::Linux) => Pacing::Internal,
                (Some(_), TcpProfile::Rfc) => Pacing::Fixed,
            }),
            pacing_ss_ratio_pct: s.pacing_ss_ratio_pct.unwrap_or(d.pacing_ss_ratio_pct),
            pacing_ca_ratio_pct: s.pacing_ca_ratio_pct.unwrap_or(d.pacing_ca_ratio_pct),
            gso_max_bytes: s.gso_max_bytes.unwrap_or(d.gso_max_bytes),
            min_tso_segs: s.min_tso_segs.unwrap_or(d.min_tso_segs),
            tso_rtt_log: s.tso_rtt_log.unwrap_or(d.tso_rtt_log),
            tsq: s.tsq.unwrap_or(d.tsq),
            limit_output_bytes: s.limit_output_bytes.unwrap_or(d.limit_output_bytes),
            rmem: s.rmem.unwrap_or(d.rmem),
            wmem: s.wmem.unwrap_or(d.wmem),
            // A fixed receive window is a locked receive buffer (SO_RCVBUF):
            // no autotuning unless asked for.
            rcv_autotune: s.rcv_autotune.unwrap_or(d.rcv_autotune && s.rwnd_bytes.is_none()),
            sndbuf_bytes: s.sndbuf_bytes.or(d.sndbuf_bytes),
            rcv_scaling_ratio: s.rcv_scaling_ratio.unwrap_or(d.rcv_scaling_ratio),
            rcv_truesize_overhead: s.rcv_truesize_overhead.or(d.rcv_truesize_overhead),
            rcvbuf_growth: s.rcvbuf_growth.unwrap_or(d.rcvbuf_growth),
            ack_pushed: s.ack_pushed.unwrap_or(d.ack_pushed),
            sack,
            dsack: with_sack(s.dsack, d.dsack),
            rack: with_sack(s.rack, d.rack),
            rack_rtt_in_ack_order: s.rack_rtt_in_ack_order.unwrap_or(d.rack_rtt_in_ack_order),
            tlp: with_sack(s.tlp, d.tlp),
            prr: with_sack(s.prr, d.prr),
            limited_transmit: s.limited_transmit.unwrap_or(d.limited_transmit),
            hystart: s.hystart.unwrap_or(d.hystart),
            cubic_flavor: s.cubic_flavor.unwrap_or(d.cubic_flavor),
            ssthresh_from: s.ssthresh_from.unwrap_or(d.ssthresh_from),
            cwnd_validation: s.cwnd_validation.unwrap_or(d.cwnd_validation),
            loss_timer_slack_ps: s.loss_timer_slack_ps.unwrap_or(d.loss_timer_slack_ps),
            receiver_app: s.receiver_app,
            sack_compression_segments: s.sack_compression_segments.unwrap_or(d.sack_compression_segments),
            sack_compression_delay_ps: s.sack_compression_delay_ps.unwrap_or(d.sack_compression_delay_ps),
            cubic_hz: s.cubic_hz.unwrap_or(d.cubic_hz),
            cubic_hold_hz32: s.cubic_hold_hz32.unwrap_or(d.cubic_hold_hz32),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> TcpConfig {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn linux_is_the_default_profile() {
        let c = parse("{}");
        assert_eq!(c.profile, TcpProfile::Linux);
        assert_eq!(c.cc, CcKind::Cubic);
        assert!(c.sack && c.dsack && c.rack && c.tlp && c.prr && c.limited_transmit && c.cwnd_validation);
        assert_eq!(c.hystart, Hystart::Classic);
        assert_eq!(c.loss_timer_slack_ps, 2_000_000_000);
        assert_eq!((c.min_rto_ps, c.init_cwnd_segments, c.quickack_segments), (200_000_000_000, 10, 16));
    }

    #[test]
    fn rfc_profile_turns_every_linux_mechanism_off() {
        let c = parse(r#"{"profile": "rfc"}"#);
        assert_eq!(c.cc, CcKind::Newreno);
        assert!(!(c.sack || c.dsack || c.rack || c.tlp || c.prr || c.limited_transmit || c.byte_counting));
        assert_eq!(
            (c.hystart, c.rto_formula, c.cubic_flavor),
            (Hystart::Off, RtoFormula::Rfc6298, CubicFlavor::Rfc9438)
        );
    }

    #[test]
    fn explicit_fields_override_the_profile() {
        let c = parse(r#"{"profile": "rfc", "sack": true, "hystart": "hystart++", "cc": "cubic"}"#);
        assert!(c.sack && !c.rack && !c.prr, "the rfc profile keeps RACK and PRR off even with SACK");
        assert_eq!(c.hystart, Hystart::HystartPlusPlus);
        let c = parse(r#"{"cc": "newreno"}"#);
        assert_eq!(c.hystart, Hystart::Off, "classic HyStart belongs to CUBIC");
        let c = parse(r#"{"sack": false}"#);
        assert!(!c.rack && !c.tlp && !c.prr && !c.dsack, "mechanisms that need SACK follow it");
        assert!(c.validate("tcp").is_ok());
    }

    #[test]
    fn contradictions_are_errors_naming_the_field() {
        let e = parse(r#"{"sack": false, "rack": true}"#).validate("tcp").unwrap_err();
        assert!(e.to_string().contains("tcp.rack"), "{e}");
        let e = parse(r#"{"rwnd_bytes": 4294967296}"#).validate("tcp").unwrap_err();
        assert!(e.to_string().contains("tcp.rwnd"), "{e}");
        assert!(parse(r#"{"rwnd_bytes": 4294967296, "sack": false}"#).validate("tcp").is_ok());
        let e = parse(r#"{"cc": "dctcp", "hystart": "classic"}"#).validate("traffic[0].tcp").unwrap_err();
        assert!(e.to_string().contains("traffic[0].tcp.hystart"), "{e}");
        assert!(serde_json::from_str::<TcpConfig>(r#"{"profile": "bsd"}"#).is_err());
    }
}
