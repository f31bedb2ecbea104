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

#[derive(Clone, Debug)]
pub enum Pattern {
    /// `num` = wire bits per frame x 10^12; frame k is due at start + ceil(k * num / rate).
    Constant { num: u128, rate: u128 },
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
        Pattern::Constant { num: wire_bytes as u128 * 8 * PS_PER_SEC as u128, rate: rate_bps as u128 }
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
        if self.sent >= self.max_frames {
            return None;
        }
        let next = match &mut self.pattern {
            Pattern::Constant { num, rate } => {
                let k = self.sent as u128;
                let off = (k * *num + *rate - 1) / *rate;
                self.start + SimTime(off as u64)
            }
            Pattern::Poisson { mean_ps, rng } => now + SimTime(rng.exponential(*mean_ps).round() as u64),
        };
        if next >= self.stop {
            None
        } else {
            Some(next)
        }
    }
}
