//! VNI match: a tunnelled packet passes if its VXLAN network identifier is in
//! the table; a packet whose VNI is not (or that is not tunnelled) takes the
//! `miss` action (`drop` by default, drop reason `vni_miss`).

use super::stage::{Ctx, MissAction, Step};
use crate::error::ConfigError;
use crate::packet::{Packet, NO_VNI};
use crate::stats::DropReason;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VniMatchConfig {
    /// VNIs that match (24-bit values).
    pub vnis: Vec<u32>,
    #[serde(default)]
    pub miss: MissAction,
}

#[derive(Clone, Debug)]
pub struct VniMatch {
    /// Sorted, for binary search.
    vnis: Vec<u32>,
    miss: MissAction,
}

/// VNIs are 24-bit (RFC 7348 section 5).
pub const VNI_MAX: u32 = (1 << 24) - 1;

impl VniMatch {
    pub fn new(cfg: VniMatchConfig, path: &str) -> Result<VniMatch, ConfigError> {
        for (i, &v) in cfg.vnis.iter().enumerate() {
            if v > VNI_MAX {
                return Err(ConfigError::new(format!("{path}.vnis[{i}]"), format!("a VNI is 24 bits (0..{VNI_MAX})")));
            }
        }
        let mut vnis = cfg.vnis;
        vnis.sort_unstable();
        vnis.dedup();
        Ok(VniMatch { vnis, miss: cfg.miss })
    }

    #[inline]
    pub fn run(&mut self, pkt: &mut Packet, _ctx: &Ctx) -> Step {
        if pkt.vni != NO_VNI && self.vnis.binary_search(&pkt.vni).is_ok() {
            return Step::HIT;
        }
        match self.miss {
            MissAction::Drop => Step::dropped(DropReason::VniMiss, false),
            MissAction::Pass => Step::PASS,
        }
    }
}
