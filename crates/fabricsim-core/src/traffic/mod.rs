//! Traffic sources: applications that create packets at a host.
//!
//! Each source keeps exactly one pending event (its next send). Sources:
//! - **constant rate** (`udp_cbr`): frame `k` leaves at `start + ceil(k * T)` with
//!   `T = (frame + overhead) * 8 / rate`, computed exactly so no drift accumulates;
//! - **Poisson** (`udp_poisson`): exponential gaps with mean `T`, drawn from the
//!   source's own random stream;
//! - **burst**: `frames` frames back to back at the NIC's line rate.
//!
//! Rates count the whole frame plus the per-frame Ethernet overhead (preamble,
//! start delimiter, inter-frame gap), so a source at 100% of a link's rate sends
//! back-to-back frames.

use crate::ids::{FlowId, NodeId};
use crate::rng::RandomStream;
use crate::units::{SimTime, PS_PER_SEC};
use serde::{Deserialize, Serialize};

/// Resolved `udp_cbr` and `udp_poisson` traffic entries.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UdpConfig {
    #[serde(default)]
    pub name: String,
    pub src: Vec<String>,
    /// Destination host; empty when the entry sends to a multicast `group`.
    #[serde(default)]
    pub dst: String,
    /// Multicast group (`multicast.groups[].name`) instead of a host.
    #[serde(default)]
    pub group: Option<String>,
    /// How a group is reached: switches replicate, or the sender sends one copy per member.
    #[serde(default)]
    pub replication: crate::network::multicast::Replication,
    #[serde(default)]
    pub rate_bps: Option<u64>,
    #[serde(default)]
    pub load: Option<f64>,
    #[serde(default = "default_frame")]
    pub frame_bytes: u32,
    #[serde(default)]
    pub start_ps: u64,
    #[serde(default)]
    pub stop_ps: Option<u64>,
    #[serde(default)]
    pub max_frames: Option<u64>,
    #[serde(default)]
    pub class: u8,
    /// Send packets as ECN-capable (ECT(0)).
    #[serde(default)]
    pub ecn: bool,
    /// DSCP of the packets (0..63).
    #[serde(default)]
    pub dscp: u8,
    /// UDP destination port seen by match-action stages (default 5001).
    #[serde(default)]
    pub dst_port: Option<u16>,
    /// Each source starts at `start_ps` plus a uniform random offset below
    /// this (traffic generators' ports are not phase-locked); 0: all at once.
    #[serde(default)]
    pub start_jitter_ps: u64,
}

/// Resolved `burst` traffic entry.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BurstConfig {
    #[serde(default)]
    pub name: String,
    pub src: Vec<String>,
    pub dst: String,
    pub frames: u64,
    #[serde(default = "default_frame")]
    pub frame_bytes: u32,
    #[serde(default)]
    pub start_ps: u64,
    #[serde(default)]
    pub class: u8,
    /// Send packets as ECN-capable (ECT(0)).
    #[serde(default)]
    pub ecn: bool,
    /// DSCP of the packets (0..63).
    #[serde(default)]
    pub dscp: u8,
    /// UDP destination port seen by match-action stages (default 5001).
    #[serde(default)]
    pub dst_port: Option<u16>,
    /// Each source starts at `start_ps` plus a uniform random offset below
    /// this; 0: all at once. `None`: below one frame's time on the source's
    /// link, so that the sources' frames meet a shared queue in a random
    /// order (real senders are not phase-locked to the picosecond) while the
    /// bursts still start together.
    #[serde(default)]
    pub start_jitter_ps: Option<u64>,
}

fn default_frame() -> u32 {
    1500
}

#[derive(Clone, Debug)]
pub enum Pattern {
    /// Frame k is due at `start + ceil(k * num / rate)`, with `num` = wire bits
    /// per frame x 10^12. Kept incrementally, without a division per frame:
    /// `k * num = offset * rate + rem` with `0 <= rem < rate`, and each frame
    /// adds `num = whole * rate + frac`.
    Constant { whole: u64, frac: u128, rate: u128, offset: u64, rem: u128 },
    /// Exponential gaps with this mean, in picoseconds.
    Poisson { mean_ps: f64, rng: RandomStream },
}

#[derive(Clone, Debug)]
pub struct Source {
    pub flow: FlowId,
    pub src: NodeId,
    pub dst: NodeId,
    pub class: u8,
    pub frame_bytes: u32,
    pub start: SimTime,
    /// No frame is sent at or after this time.
    pub stop: SimTime,
    pub max_frames: u64,
    pub sent: u64,
    pub pattern: Pattern,
    /// Time the current frame is due.
    pub next: SimTime,
    /// ECN codepoint of the packets it sends.
    pub ecn: u8,
    /// DSCP of the packets it sends.
    pub dscp: u8,
    /// Hash of the flow's 5-tuple, carried by its packets for ECMP.
    pub hash: u64,
    /// Index of its multicast sender (`u32::MAX` for a unicast source).
    pub multicast: u32,
}

impl Source {
    /// A constant-rate pattern for `wire_bytes` per frame at `rate_bps`.
    pub fn constant(wire_bytes: u64, rate_bps: u64) -> Pattern {
        let num = wire_bytes as u128 * 8 * PS_PER_SEC as u128;
        let rate = rate_bps as u128;
        Pattern::Constant { whole: (num / rate) as u64, frac: num % rate, rate, offset: 0, rem: 0 }
    }

    /// A Poisson pattern with the same mean rate as [`Source::constant`].
    pub fn poisson(wire_bytes: u64, rate_bps: u64, rng: RandomStream) -> Pattern {
        let mean_ps = wire_bytes as f64 * 8.0 * PS_PER_SEC as f64 / rate_bps as f64;
        Pattern::Poisson { mean_ps, rng }
    }

    /// Time of the first frame.
    pub fn first_time(&mut self) -> SimTime {
        match &mut self.pattern {
            Pattern::Constant { .. } => self.start,
            Pattern::Poisson { mean_ps, rng } => {
                let gap = rng.exponential(*mean_ps).round() as u64;
                self.start + SimTime(gap)
            }
        }
    }

    /// Advances to the next frame after one was sent at `now`; `None` once the
    /// source is done.
    pub fn advance(&mut self, now: SimTime) -> Option<SimTime> {
        self.sent += 1;
        if let Pattern::Constant { whole, frac, rate, offset, rem } = &mut self.pattern {
            *offset += *whole;
            *rem += *frac;
            if *rem >= *rate {
                *offset += 1;
                *rem -= *rate;
            }
        }
        if self.sent >= self.max_frames {
            return None;
        }
        let next = match &mut self.pattern {
            Pattern::Constant { offset, rem, .. } => self.start + SimTime(*offset + (*rem != 0) as u64),
            Pattern::Poisson { mean_ps, rng } => now + SimTime(rng.exponential(*mean_ps).round() as u64),
        };
        if next >= self.stop {
            None
        } else {
            Some(next)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cbr(wire: u64, rate: u64, start: u64) -> Source {
        Source {
            flow: FlowId(0),
            src: NodeId(0),
            dst: NodeId(1),
            class: 0,
            frame_bytes: wire as u32,
            start: SimTime(start),
            stop: SimTime::MAX,
            max_frames: u64::MAX,
            sent: 0,
            pattern: Source::constant(wire, rate),
            next: SimTime::ZERO,
            ecn: 0,
            hash: 0,
            dscp: 0,
            multicast: u32::MAX,
        }
    }

    #[test]
    fn constant_rate_frames_are_due_at_the_exact_rounded_up_times() {
        // Rates that divide the frame time evenly and ones that do not.
        for (wire, rate) in
            [(1520u64, 10_000_000_000u64), (1020, 8160), (1538, 7_000_000_000), (84, 3), (9238, 99_999_989)]
        {
            let mut s = cbr(wire, rate, 12_345);
            let num = wire as u128 * 8 * PS_PER_SEC as u128;
            assert_eq!(s.first_time(), SimTime(12_345));
            let mut now = SimTime(12_345);
            for k in 1..20_000u128 {
                let t = s.advance(now).unwrap();
                let want = 12_345 + ((k * num).div_ceil(rate as u128)) as u64;
                assert_eq!(t.0, want, "frame {k} of {wire} B at {rate} b/s");
                now = t;
            }
        }
    }
}
