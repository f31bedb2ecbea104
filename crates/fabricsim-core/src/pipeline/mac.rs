//! Inner destination MAC rewrite (the routed overlay's next-hop MAC).
//!
//! The core has no MAC addresses, so the stage rewrites nothing visible: it
//! costs its pass, and counts the packets it rewrote (every packet it runs on).

use super::stage::{Ctx, Step};
use crate::packet::Packet;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MacRewriteConfig {}

#[derive(Clone, Debug)]
pub struct MacRewrite;

impl MacRewrite {
    pub fn new(_cfg: MacRewriteConfig) -> MacRewrite {
        MacRewrite
    }

    #[inline]
    pub fn run(&mut self, _pkt: &mut Packet, _ctx: &Ctx) -> Step {
        Step::HIT
    }
}
