//! Switch egress ports shaped like an htb class (`switch.shaper`): the
//! configuration and its checks. A shaped port keeps the class's two token
//! buckets (`token_bucket.rs`); the simulation gates the port's transmitter
//! by them (`sim/port_shaper.rs`).

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

/// Resolved `switch.shaper`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PortShaperConfig {
    pub rate_bps: u64,
    pub burst_bytes: u64,
    pub ceil_bps: u64,
    pub cburst_bytes: u64,
    /// Shape only the ports towards these nodes; empty: every port.
    #[serde(default)]
    pub towards: Vec<String>,
}

impl PortShaperConfig {
    /// Checks the rates and bursts (`towards` needs the topology: the simulation checks it).
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let err = |f: &str, m: &str| Err(ConfigError::new(format!("{path}.{f}"), m));
        if self.rate_bps == 0 {
            return err("rate", "must be > 0");
        }
        if self.ceil_bps < self.rate_bps {
            return err("ceil", "must be >= rate");
        }
        if self.burst_bytes == 0 || self.cburst_bytes == 0 {
            return err("burst", "burst and cburst must be > 0");
        }
        Ok(())
    }
}
