//! Units as types: integer picosecond time, bit/s rates, byte sizes.
//!
//! Every event time in the core is a [`SimTime`] (picoseconds in a `u64`, enough for
//! about 213 days of simulated time). Serialization times are computed exactly in
//! integer arithmetic and rounded up to the next picosecond.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// Picoseconds per second.
pub const PS_PER_SEC: u64 = 1_000_000_000_000;

/// A point in simulated time, or a duration, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_ps(ps: u64) -> Self {
        SimTime(ps)
    }
    pub const fn from_ns(ns: u64) -> Self {
        SimTime(ns * 1_000)
    }
    pub const fn from_us(us: u64) -> Self {
        SimTime(us * 1_000_000)
    }
    pub const fn from_ms(ms: u64) -> Self {
        SimTime(ms * 1_000_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        SimTime(s * PS_PER_SEC)
    }
    pub const fn ps(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_SEC as f64
    }
    pub fn saturating_sub(self, other: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(other.0))
    }
}

/// Addition saturates at [`SimTime::MAX`] (about 213 days): a deadline that
/// far away never comes, and simulated time can never wrap around to the past.
impl Add for SimTime {
    type Output = SimTime;
    #[inline]
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for SimTime {
    #[inline]
    fn add_assign(&mut self, rhs: SimTime) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}

impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, rhs: SimTime) -> SimTime {
        SimTime(self.0 - rhs.0)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ps", self.0)
    }
}

/// A data rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    pub const fn from_bps(bps: u64) -> Self {
        Rate(bps)
    }
    pub const fn from_mbps(m: u64) -> Self {
        Rate(m * 1_000_000)
    }
    pub const fn from_gbps(g: u64) -> Self {
        Rate(g * 1_000_000_000)
    }
    pub const fn bps(self) -> u64 {
        self.0
    }

    /// Time to serialize `bytes` at this rate, rounded up to a whole picosecond.
    ///
    /// Exact integer arithmetic: `ceil(bytes * 8 * 10^12 / bps)`.
    pub fn serialization_time(self, bytes: u64) -> SimTime {
        debug_assert!(self.0 > 0);
        let num = bytes as u128 * 8 * PS_PER_SEC as u128;
        let d = self.0 as u128;
        SimTime(((num + d - 1) / d) as u64)
    }

    /// Bytes this rate carries in `t` (rounded down).
    pub fn bytes_in(self, t: SimTime) -> u64 {
        (self.0 as u128 * t.0 as u128 / (8 * PS_PER_SEC as u128)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_times_are_exact() {
        // 1500 B at 100 Gb/s = 12000 bits / 1e11 = 120 ns.
        assert_eq!(Rate::from_gbps(100).serialization_time(1500), SimTime::from_ns(120));
        // 64 B at 10 Gb/s = 51.2 ns.
        assert_eq!(Rate::from_gbps(10).serialization_time(64), SimTime::from_ps(51_200));
        // 1538 B on the wire (1518 + 20) at 10 Gb/s = 1230.4 ns.
        assert_eq!(Rate::from_gbps(10).serialization_time(1538), SimTime::from_ps(1_230_400));
        // 9216 B at 400 Gb/s = 184.32 ns.
        assert_eq!(Rate::from_gbps(400).serialization_time(9216), SimTime::from_ps(184_320));
        // 1500 B at 7 Gb/s = 1714.2857.. ns, rounded up.
        assert_eq!(Rate::from_gbps(7).serialization_time(1500), SimTime::from_ps(1_714_286));
        // 1 byte at 1 b/s = 8 s: no overflow on slow rates.
        assert_eq!(Rate::from_bps(1).serialization_time(1), SimTime::from_secs(8));
        // Large sizes use 128-bit intermediates.
        assert_eq!(Rate::from_gbps(1).serialization_time(10_000_000_000), SimTime::from_secs(80));
    }

    #[test]
    fn bytes_in_inverts_serialization() {
        let r = Rate::from_gbps(40);
        assert_eq!(r.bytes_in(SimTime::from_us(1)), 5_000);
        assert_eq!(r.bytes_in(r.serialization_time(1500)), 1500);
    }
}
