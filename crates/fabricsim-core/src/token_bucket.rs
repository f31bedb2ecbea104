//! The two token buckets of an htb class, shared by the shapers that keep
//! them: a host's egress shaper (`host/egress.rs`) and a shaped switch port
//! (`network/shaper.rs`, `sim/port_shaper.rs`).
//!
//! All arithmetic is integral: tokens are held in bit-picoseconds (bits x
//! 10^12), so a byte is 8 x 10^12 and `rate` bit/s adds `rate` per ps.

use crate::units::SimTime;

/// Bit-picoseconds per byte.
const UNITS_PER_BYTE: i128 = 8 * 1_000_000_000_000;

/// The two token buckets of an htb class: `tokens` of `rate` up to `burst`,
/// `ctokens` of `ceil` up to `cburst`, in bit-picoseconds. A packet may go
/// when both are >= 0; it is charged after (they may go negative).
#[derive(Clone, Copy, Debug)]
pub struct TokenBuckets {
    rate_bps: u64,
    ceil_bps: u64,
    cap: i128,
    ccap: i128,
    tokens: i128,
    ctokens: i128,
    at: SimTime,
}

impl TokenBuckets {
    /// Full buckets at time 0.
    pub fn new(rate_bps: u64, burst_bytes: u64, ceil_bps: u64, cburst_bytes: u64) -> TokenBuckets {
        let cap = burst_bytes as i128 * UNITS_PER_BYTE;
        let ccap = cburst_bytes as i128 * UNITS_PER_BYTE;
        TokenBuckets { rate_bps, ceil_bps, cap, ccap, tokens: cap, ctokens: ccap, at: SimTime::ZERO }
    }

    /// Brings both buckets to `now` (a time before the last update adds nothing).
    fn fill(&mut self, now: SimTime) {
        if now <= self.at {
            return;
        }
        let dt = (now - self.at).0 as i128;
        self.at = now;
        self.tokens = (self.tokens + dt * self.rate_bps as i128).min(self.cap);
        self.ctokens = (self.ctokens + dt * self.ceil_bps as i128).min(self.ccap);
    }

    /// The earliest time at or after `now` when both buckets are >= 0.
    pub fn ready(&mut self, now: SimTime) -> SimTime {
        self.fill(now);
        let wait = |deficit: i128, rate: u64| -> u64 {
            if deficit >= 0 {
                0
            } else {
                ((-deficit) as u128).div_ceil(rate as u128) as u64
            }
        };
        now + SimTime(wait(self.tokens, self.rate_bps).max(wait(self.ctokens, self.ceil_bps)))
    }

    /// Charges a packet of `bytes` leaving at `now`.
    pub fn charge(&mut self, now: SimTime, bytes: u32) {
        self.fill(now);
        let c = bytes as i128 * UNITS_PER_BYTE;
        self.tokens -= c;
        self.ctokens -= c;
    }
}
