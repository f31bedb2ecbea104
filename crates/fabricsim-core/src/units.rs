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
    /// Exact integer arithmetic: `ceil(bytes * 8 * 10^12 / bps)`, in 64 bits
    /// when the numerator fits (any frame), else in 128 bits. For a fixed rate,
    /// [`TxTime`] is cheaper still.
    #[inline]
    pub fn serialization_time(self, bytes: u64) -> SimTime {
        debug_assert!(self.0 > 0);
        let d = self.0;
        if let Some(num) = bytes.checked_mul(8 * PS_PER_SEC).and_then(|n| n.checked_add(d - 1)) {
            return SimTime(num / d);
        }
        let num = bytes as u128 * 8 * PS_PER_SEC as u128;
        let d = d as u128;
        SimTime(((num + d - 1) / d) as u64)
    }

    /// Bytes this rate carries in `t` (rounded down).
    pub fn bytes_in(self, t: SimTime) -> u64 {
        (self.0 as u128 * t.0 as u128 / (8 * PS_PER_SEC as u128)) as u64
    }
}

/// Serialization times at one fixed rate (a port's), precomputed so that a
/// packet costs a multiplication instead of a division.
///
/// When `8 * 10^12` is a multiple of the rate (1, 10, 25, 40, 100, 400, 800
/// Gb/s, 320 kb/s, ...), a byte takes a whole number of picoseconds and
/// `bytes * ps_per_byte` is exact; otherwise [`Rate::serialization_time`]
/// rounds up as always. Results are identical to it in every case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxTime {
    rate: Rate,
    /// Picoseconds per byte when whole, else 0.
    ps_per_byte: u64,
}

impl TxTime {
    pub fn new(rate: Rate) -> Self {
        let per_byte = 8 * PS_PER_SEC;
        let ps_per_byte = if rate.0 > 0 && per_byte % rate.0 == 0 { per_byte / rate.0 } else { 0 };
        TxTime { rate, ps_per_byte }
    }

    /// Picoseconds per byte when whole, else 0.
    #[inline]
    pub fn whole_ps_per_byte(self) -> u64 {
        self.ps_per_byte
    }

    /// Time to serialize `bytes`, exactly as [`Rate::serialization_time`].
    #[inline]
    pub fn of(self, bytes: u64) -> SimTime {
        if self.ps_per_byte != 0 {
            if let Some(t) = bytes.checked_mul(self.ps_per_byte) {
                return SimTime(t);
            }
        }
        self.rate.serialization_time(bytes)
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

    /// The textbook formula, in 128 bits.
    fn reference(bps: u64, bytes: u64) -> u64 {
        let num = bytes as u128 * 8 * PS_PER_SEC as u128;
        ((num + bps as u128 - 1) / bps as u128) as u64
    }

    #[test]
    fn fast_paths_equal_the_exact_formula() {
        let mut r = crate::rng::RandomStream::new(1, "units", 0);
        let mut rates: Vec<u64> = vec![
            1,
            7,
            320_000,
            1_000_000_000,
            7_000_000_000,
            10_000_000_000,
            25_000_000_000,
            25_781_250_000,
            40_000_000_000,
            56_000_000_000,
            100_000_000_000,
            400_000_000_000,
            800_000_000_000,
            1_600_000_000_000,
            3_200_000_000_000,
            8_000_000_000_000,
            8_000_000_000_001,
            u64::MAX,
        ];
        rates.extend((0..200).map(|_| r.below(1 << 44) + 1));
        let mut sizes: Vec<u64> = vec![0, 1, 64, 84, 1538, 9238, 65_555, 2_305_843, 2_305_844, 10_000_000_000];
        sizes.extend((0..200).map(|_| r.below(70_000)));
        for &bps in &rates {
            let tx = TxTime::new(Rate(bps));
            for &b in &sizes {
                let want = reference(bps, b);
                assert_eq!(Rate(bps).serialization_time(b).0, want, "{b} B at {bps} b/s");
                assert_eq!(tx.of(b).0, want, "{b} B at {bps} b/s (TxTime)");
            }
        }
    }

    #[test]
    fn bytes_in_inverts_serialization() {
        let r = Rate::from_gbps(40);
        assert_eq!(r.bytes_in(SimTime::from_us(1)), 5_000);
        assert_eq!(r.bytes_in(r.serialization_time(1500)), 1500);
    }
}
