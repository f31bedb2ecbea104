//! Parser: recognises the packet's headers, and a VXLAN tunnel inside them.
//!
//! The parser decides nothing; it costs its pass, and parsing a tunnelled
//! packet's inner headers may cost more (`tunnel_cost`, passes). Counters:
//! plain and tunnelled packets (a tunnelled packet is a hit).

use super::stage::{milli_passes, Ctx, Step};
use crate::error::ConfigError;
use crate::packet::{Packet, NO_VNI};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ParseConfig {
    /// Extra passes to parse the inner headers of a VXLAN packet.
    #[serde(default)]
    pub tunnel_cost: f64,
}

#[derive(Clone, Debug)]
pub struct Parse {
    tunnel_milli: u32,
    plain: u64,
    tunnelled: u64,
}

impl Parse {
    pub fn new(cfg: ParseConfig, path: &str) -> Result<Parse, ConfigError> {
        Ok(Parse {
            tunnel_milli: milli_passes(cfg.tunnel_cost, &format!("{path}.tunnel_cost"))?,
            plain: 0,
            tunnelled: 0,
        })
    }

    #[inline]
    pub fn run(&mut self, pkt: &mut Packet, _ctx: &Ctx) -> Step {
        if pkt.vni != NO_VNI {
            self.tunnelled += 1;
            Step { drop: None, hit: true, extra_milli: self.tunnel_milli }
        } else {
            self.plain += 1;
            Step::PASS
        }
    }

    pub fn counters(&self, out: &mut Vec<(String, u64)>) {
        out.push(("plain".into(), self.plain));
        out.push(("tunnelled".into(), self.tunnelled));
    }
}
