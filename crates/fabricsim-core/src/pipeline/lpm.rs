//! Longest-prefix match on the inner destination (or source) address.
//!
//! A packet matches when a prefix of the table contains the address; the
//! longest such prefix wins (it is counted). A packet that matches none takes
//! the `miss` action (`drop`, reason `lpm_miss`, by default). The next hop
//! still comes from the topology's routing; the stage models the lookup, its
//! cost and its misses.

use super::addr::Prefix;
use super::stage::{Ctx, MissAction, Step};
use crate::error::ConfigError;
use crate::packet::Packet;
use crate::stats::DropReason;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    #[default]
    Dst,
    Src,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LpmConfig {
    /// Prefixes, `a.b.c.d/len`.
    pub prefixes: Vec<String>,
    #[serde(default)]
    pub field: Field,
    #[serde(default)]
    pub miss: MissAction,
}

#[derive(Clone, Debug)]
pub struct Lpm {
    /// Longest first; ties keep the table's order.
    table: Vec<Prefix>,
    field: Field,
    miss: MissAction,
}

impl Lpm {
    pub fn new(cfg: LpmConfig, path: &str) -> Result<Lpm, ConfigError> {
        let mut table = Vec::with_capacity(cfg.prefixes.len());
        for (i, p) in cfg.prefixes.iter().enumerate() {
            table.push(Prefix::parse(p, &format!("{path}.prefixes[{i}]"))?);
        }
        table.sort_by_key(|p| std::cmp::Reverse(p.len));
        Ok(Lpm { table, field: cfg.field, miss: cfg.miss })
    }

    /// The longest prefix containing `a`, if any.
    pub fn lookup(&self, a: u32) -> Option<Prefix> {
        self.table.iter().copied().find(|p| p.contains(a))
    }

    #[inline]
    pub fn run(&mut self, _pkt: &mut Packet, ctx: &Ctx) -> Step {
        let a = match self.field {
            Field::Dst => ctx.tuple.dst,
            Field::Src => ctx.tuple.src,
        };
        if self.lookup(a).is_some() {
            return Step::HIT;
        }
        match self.miss {
            MissAction::Drop => Step::dropped(DropReason::LpmMiss, false),
            MissAction::Pass => Step::PASS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins() {
        let cfg = LpmConfig {
            prefixes: vec!["10.0.0.0/8".into(), "10.0.0.0/30".into(), "10.0.0.0/24".into()],
            field: Field::Dst,
            miss: MissAction::Drop,
        };
        let t = Lpm::new(cfg, "x").unwrap();
        assert_eq!(t.lookup(0x0A00_0002).unwrap().len, 30);
        assert_eq!(t.lookup(0x0A00_0010).unwrap().len, 24);
        assert_eq!(t.lookup(0x0A01_0000).unwrap().len, 8);
        assert!(t.lookup(0x0B00_0000).is_none());
    }
}
