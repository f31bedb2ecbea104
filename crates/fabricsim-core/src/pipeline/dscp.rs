//! DSCP rewrite: sets the (inner) IP header's DSCP, to one value or by the
//! packet's traffic class. Counts the packets whose DSCP changed.

use super::stage::{check_dscp, BuildEnv, Ctx, Step};
use crate::error::ConfigError;
use crate::packet::Packet;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DscpRewriteConfig {
    /// The DSCP every packet gets.
    #[serde(default)]
    pub dscp: Option<u8>,
    /// The DSCP of each traffic class (one value per class).
    #[serde(default)]
    pub by_class: Option<Vec<u8>>,
}

#[derive(Clone, Debug)]
pub struct DscpRewrite {
    /// DSCP per class (all equal for a single value).
    map: [u8; 8],
    rewritten: u64,
}

impl DscpRewrite {
    pub fn new(cfg: DscpRewriteConfig, path: &str, env: &BuildEnv) -> Result<DscpRewrite, ConfigError> {
        let mut map = [0u8; 8];
        match (cfg.dscp, cfg.by_class) {
            (Some(d), None) => {
                check_dscp(d, &format!("{path}.dscp"))?;
                map = [d; 8];
            }
            (None, Some(v)) => {
                if v.len() != env.classes {
                    return Err(ConfigError::new(
                        format!("{path}.by_class"),
                        format!("expected {} values (one per class), got {}", env.classes, v.len()),
                    ));
                }
                for (c, &d) in v.iter().enumerate() {
                    check_dscp(d, &format!("{path}.by_class[{c}]"))?;
                    map[c] = d;
                }
            }
            _ => return Err(ConfigError::new(path, "give exactly one of 'dscp' and 'by_class'")),
        }
        Ok(DscpRewrite { map, rewritten: 0 })
    }

    #[inline]
    pub fn run(&mut self, pkt: &mut Packet, _ctx: &Ctx) -> Step {
        let d = self.map[(pkt.class & 7) as usize];
        if pkt.dscp != d {
            pkt.dscp = d;
            self.rewritten += 1;
        }
        Step::HIT
    }

    pub fn counters(&self, out: &mut Vec<(String, u64)>) {
        out.push(("rewritten".into(), self.rewritten));
    }
}
