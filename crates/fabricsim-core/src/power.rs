//! Device power: a static part (chassis and the ports in use) plus energy per
//! bit and per frame forwarded.
//!
//! ```text
//! P(t) = idle + ports x port + bit_energy x (bits/s forwarded) + packet_energy x (frames/s forwarded)
//! ```
//!
//! This is the additive model of network-device power measurements (a fixed
//! chassis part, a part per port in use, and a traffic-proportional part split
//! into per-packet processing and per-byte store-and-forward energy; Mahadevan
//! et al., "A power benchmarking framework for network devices", IFIP
//! Networking 2009; Vishwanath et al., "Modeling energy consumption in
//! high-capacity routers and switches", IEEE JSAC 2014). Bits and frames are
//! counted where the device transmits them (egress), frame bytes without
//! preamble and inter-frame gap.
//!
//! Energy is computed exactly in integers: power in microwatts times time in
//! picoseconds gives attojoules (1e-18 J), as do bits times femtojoules x 1000.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

/// Resolved `power` section of a device.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct PowerConfig {
    /// Power of the device with no port in use and no traffic, in microwatts.
    #[serde(default)]
    pub idle_uw: u64,
    /// Added power of each port in use (a port with a link), in microwatts.
    #[serde(default)]
    pub port_uw: u64,
    /// Energy per bit forwarded, in femtojoules.
    #[serde(default)]
    pub bit_fj: u64,
    /// Energy per frame forwarded, in femtojoules.
    #[serde(default)]
    pub packet_fj: u64,
}

/// Attojoules per (microwatt x picosecond) and per femtojoule.
pub const AJ_PER_UW_PS: u128 = 1;
pub const AJ_PER_FJ: u128 = 1_000;
/// Attojoules per joule.
pub const AJ_PER_J: f64 = 1e18;

impl PowerConfig {
    /// Checks that the static power fits the arithmetic (`path` names the section).
    pub fn check(&self, path: &str) -> Result<(), ConfigError> {
        // 10 MW per device is far beyond any network device; it keeps the
        // attojoule sums of long runs well inside 128 bits.
        const LIMIT_UW: u64 = 10_000_000_000_000;
        for (v, field) in [(self.idle_uw, "idle"), (self.port_uw, "port")] {
            if v > LIMIT_UW {
                return Err(ConfigError::new(format!("{path}.{field}"), "must be at most 10 MW"));
            }
        }
        Ok(())
    }

    /// Static power of a device with `ports` ports in use, in microwatts.
    #[inline]
    pub fn static_uw(&self, ports: u64) -> u64 {
        self.idle_uw + self.port_uw * ports
    }

    /// Static energy over `dt_ps` picoseconds, in attojoules.
    #[inline]
    pub fn static_aj(&self, ports: u64, dt_ps: u64) -> u128 {
        self.static_uw(ports) as u128 * dt_ps as u128 * AJ_PER_UW_PS
    }

    /// Energy of forwarding `frames` frames holding `bytes` bytes, in attojoules.
    #[inline]
    pub fn dynamic_aj(&self, bytes: u64, frames: u64) -> u128 {
        (bytes as u128 * 8 * self.bit_fj as u128 + frames as u128 * self.packet_fj as u128) * AJ_PER_FJ
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_is_static_power_times_time_plus_traffic_energy() {
        // 100 W idle, 2 W per port, 24 ports, 50 pJ/bit, 10 nJ/frame.
        let p = PowerConfig { idle_uw: 100_000_000, port_uw: 2_000_000, bit_fj: 50_000, packet_fj: 10_000_000 };
        // 1 s: 148 J static.
        assert_eq!(p.static_aj(24, 1_000_000_000_000) as f64 / AJ_PER_J, 148.0);
        // 1 Gbit in 1e6 frames of 125 B: 0.05 J + 0.01 J.
        let j = p.dynamic_aj(125_000_000, 1_000_000) as f64 / AJ_PER_J;
        assert!((j - 0.06).abs() < 1e-15, "{j}");
    }
}
