//! Deterministic random streams.
//!
//! Each component that needs randomness owns a [`RandomStream`] derived from the
//! scenario seed and a stable component key (for example `("source", 3)`), so a
//! component's draws never depend on how many draws another component made, and
//! outputs depend only on the scenario and the seed. The generator is
//! xoshiro256++ seeded through SplitMix64. Transcendental functions come from the
//! pure-Rust `libm` crate so results do not depend on the platform's C library.

/// SplitMix64 finalizer: a strong 64-bit mixing function.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Stable 64-bit hash of a string (FNV-1a), used to name random streams.
pub fn hash_str(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Key of a random stream: a domain name and an index within it.
pub fn stream_key(seed: u64, domain: &str, index: u64) -> u64 {
    mix64(mix64(seed ^ hash_str(domain)).wrapping_add(mix64(index)))
}

/// A xoshiro256++ generator.
#[derive(Clone, Debug)]
pub struct RandomStream {
    s: [u64; 4],
}

impl RandomStream {
    /// The stream for component `(domain, index)` under `seed`.
    pub fn new(seed: u64, domain: &str, index: u64) -> Self {
        let mut x = stream_key(seed, domain, index);
        let mut s = [0u64; 4];
        for w in s.iter_mut() {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            *w = mix64(x);
        }
        RandomStream { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in the open interval (0, 1).
    #[inline]
    pub fn next_open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// Exponentially distributed with the given mean.
    #[inline]
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * libm::log(self.next_open01())
    }

    /// Uniform integer in `0..n` (n > 0), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let v = self.next_u64();
            if v < zone {
                return v % n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let mut a = RandomStream::new(1, "source", 0);
        let mut b = RandomStream::new(1, "source", 0);
        let mut c = RandomStream::new(1, "source", 1);
        let mut d = RandomStream::new(2, "source", 0);
        let va: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let vc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        let vd: Vec<u64> = (0..8).map(|_| d.next_u64()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
        assert_ne!(va, vd);
    }

    #[test]
    fn exponential_has_the_right_mean() {
        let mut r = RandomStream::new(7, "test", 0);
        let n = 200_000;
        let mean: f64 = (0..n).map(|_| r.exponential(3.0)).sum::<f64>() / n as f64;
        assert!((mean - 3.0).abs() < 0.03, "mean {mean}");
    }
}
