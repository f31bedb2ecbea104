//! Priority flow control (IEEE 802.1Qbb): configuration and headroom sizing.
//!
//! The per-priority-group accounting that decides XOFF/XON lives with the
//! shared buffer (`buffer/pfc.rs`); the PAUSE frames, the paused egress ports
//! and the `pauses` table live in `sim/pfc.rs`.
//!
//! **Headroom** per (ingress port, lossless priority), unless given:
//!
//! ```text
//! headroom = 2 x delay x rate / 8            bytes on the cable, both ways
//!          + (latency_self + latency_peer) x rate / 8   pipelines on both ends
//!          + 2 x (mtu + ethernet overhead)    a frame in flight at each transmitter
//!          + peer_response                    quanta(speed) x 64 B (IEEE 802.3 Annex 31B)
//! ```
//!
//! rounded up to whole cells. The terms follow SONiC's "well-known formula"
//! (bytes on cable, port MTU, peer response quanta); the simulator's peer
//! reacts at once, so the peer-response term is slack.

use crate::units::{Rate, SimTime};
use serde::{Deserialize, Serialize};

/// Resolved `pfc` section of a switch.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PfcConfig {
    /// Lossless priorities (traffic classes); each is its own priority group.
    pub classes: Vec<u8>,
    /// Static XOFF threshold on the priority group's shared bytes; `None`: dynamic.
    #[serde(default)]
    pub xoff_bytes: Option<u64>,
    /// Dynamic XOFF threshold: alpha x free shared cells (ladder value).
    #[serde(default = "d_alpha")]
    pub xoff_alpha: f64,
    /// XON once the group's shared bytes fall this far below the threshold (and headroom is empty).
    #[serde(default = "d_resume")]
    pub resume_offset_bytes: u64,
    /// Headroom per (ingress port, lossless priority); `None`: from the formula.
    #[serde(default)]
    pub headroom_bytes: Option<u64>,
    /// Largest lossless frame, for the headroom formula.
    #[serde(default = "d_mtu")]
    pub mtu_bytes: u64,
    /// Pause time carried by an XOFF frame, in quanta of 512 bit times (1..=65535).
    #[serde(default = "d_quanta")]
    pub quanta: u16,
    /// Re-send XOFF this often while still congested; `None`: half the pause time.
    #[serde(default)]
    pub refresh_ps: Option<u64>,
}

fn d_alpha() -> f64 {
    0.125
}
fn d_resume() -> u64 {
    3072
}
fn d_mtu() -> u64 {
    9216
}
fn d_quanta() -> u16 {
    65535
}

/// Size of a PFC frame (a minimum Ethernet frame).
pub const PAUSE_FRAME_BYTES: u32 = 64;

/// IEEE 802.3 Annex 31B pause quanta a PHY of this speed may take to respond.
pub fn peer_response_quanta(rate: Rate) -> u64 {
    let g = rate.0;
    match g {
        _ if g <= 10_000_000_000 => 67,
        _ if g <= 25_000_000_000 => 80,
        _ if g <= 40_000_000_000 => 118,
        _ if g <= 50_000_000_000 => 147,
        _ if g <= 100_000_000_000 => 394,
        _ if g <= 200_000_000_000 => 453,
        _ => 905,
    }
}

/// Headroom in bytes for a port of `rate` on a cable of one-way `delay`, with
/// pipeline latencies of both ends, by the formula above.
pub fn headroom_bytes(rate: Rate, delay: SimTime, latencies: SimTime, mtu: u64, overhead: u64) -> u64 {
    let cable = rate.bytes_in(SimTime(2 * delay.0));
    let pipes = rate.bytes_in(latencies);
    cable + pipes + 2 * (mtu + overhead) + peer_response_quanta(rate) * 64
}

/// Duration of `quanta` pause quanta (512 bit times each) at `rate`.
pub fn pause_time(quanta: u16, rate: Rate) -> SimTime {
    rate.serialization_time(quanta as u64 * 64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_formula_100g() {
        // 100G, 1 us cable (about 200 m), 0.8 us + 0 pipelines, 9216 B MTU:
        // 25,000 + 10,000 + 18,472 + 25,216.
        let h = headroom_bytes(Rate(100_000_000_000), SimTime::from_us(1), SimTime::from_ns(800), 9216, 20);
        assert_eq!(h, 25_000 + 10_000 + 18_472 + 25_216);
        assert_eq!(pause_time(65535, Rate(100_000_000_000)), SimTime(335_539_200));
        assert_eq!(peer_response_quanta(Rate(25_000_000_000)), 80);
    }
}
