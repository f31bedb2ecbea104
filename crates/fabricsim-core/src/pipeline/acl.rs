//! Access control list: ordered rules matched on the inner 5-tuple, DSCP,
//! traffic class, VNI and ingress port; the first rule that matches decides
//! (rule order is priority, as in a TCAM). A rule permits or denies (drop
//! reason `acl_deny`) and may rewrite the DSCP and the traffic class. A packet
//! no rule matches takes the `default` action.
//!
//! Cost: the stage's `cost` per lookup (a TCAM searches every rule at once),
//! plus `cost_per_rule` for each rule examined up to the match (a linear
//! software classifier), in passes.

use super::addr::Prefix;
use super::stage::{check_class, check_dscp, milli_passes, BuildEnv, Ctx, Rewrite, Step};
use crate::error::ConfigError;
use crate::packet::Packet;
use crate::stats::DropReason;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AclAction {
    #[default]
    Permit,
    Deny,
}

/// An L4 port or an inclusive range `[lo, hi]`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum PortMatch {
    One(u16),
    Range([u16; 2]),
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Inner source / destination prefix, `a.b.c.d/len`.
    #[serde(default)]
    pub src: Option<String>,
    #[serde(default)]
    pub dst: Option<String>,
    /// IP protocol (6 TCP, 17 UDP).
    #[serde(default)]
    pub proto: Option<u8>,
    #[serde(default)]
    pub sport: Option<PortMatch>,
    #[serde(default)]
    pub dport: Option<PortMatch>,
    #[serde(default)]
    pub dscp: Option<u8>,
    #[serde(default)]
    pub class: Option<u8>,
    #[serde(default)]
    pub vni: Option<u32>,
    /// Ingress ports the rule applies to (`None`: all).
    #[serde(default)]
    pub in_ports: Option<Vec<u16>>,
    #[serde(default)]
    pub action: AclAction,
    #[serde(default)]
    pub set_dscp: Option<u8>,
    #[serde(default)]
    pub set_class: Option<u8>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AclConfig {
    pub rules: Vec<RuleConfig>,
    /// Action for packets no rule matches.
    #[serde(default)]
    pub default: AclAction,
    /// Passes per rule examined (0 for a TCAM).
    #[serde(default)]
    pub cost_per_rule: f64,
}

#[derive(Clone, Debug)]
struct Rule {
    src: Option<Prefix>,
    dst: Option<Prefix>,
    proto: Option<u8>,
    sport: Option<(u16, u16)>,
    dport: Option<(u16, u16)>,
    dscp: Option<u8>,
    class: Option<u8>,
    vni: Option<u32>,
    /// Bit mask over ingress ports (`None`: all).
    in_ports: Option<Vec<bool>>,
    action: AclAction,
    rewrite: Rewrite,
}

impl Rule {
    #[inline]
    fn matches(&self, pkt: &Packet, ctx: &Ctx) -> bool {
        let t = &ctx.tuple;
        let range = |r: Option<(u16, u16)>, v: u16| r.is_none_or(|(lo, hi)| (lo..=hi).contains(&v));
        self.src.is_none_or(|p| p.contains(t.src))
            && self.dst.is_none_or(|p| p.contains(t.dst))
            && self.proto.is_none_or(|p| p == t.proto)
            && range(self.sport, t.sport)
            && range(self.dport, t.dport)
            && self.dscp.is_none_or(|d| d == pkt.dscp)
            && self.class.is_none_or(|c| c == pkt.class)
            && self.vni.is_none_or(|v| v == pkt.vni)
            && self.in_ports.as_ref().is_none_or(|m| m.get(ctx.port as usize).copied().unwrap_or(false))
    }
}

#[derive(Clone, Debug)]
pub struct Acl {
    rules: Vec<Rule>,
    default: AclAction,
    per_rule_milli: u32,
    /// Packets matched per rule.
    rule_hits: Vec<u64>,
    permitted: u64,
    denied: u64,
    rewritten: u64,
    defaulted: u64,
}

impl Acl {
    pub fn new(cfg: AclConfig, path: &str, env: &BuildEnv) -> Result<Acl, ConfigError> {
        let mut rules = Vec::with_capacity(cfg.rules.len());
        for (i, r) in cfg.rules.iter().enumerate() {
            let p = format!("{path}.rules[{i}]");
            let prefix = |s: &Option<String>, f: &str| -> Result<Option<Prefix>, ConfigError> {
                s.as_deref().map(|s| Prefix::parse(s, &format!("{p}.{f}"))).transpose()
            };
            let range = |m: Option<PortMatch>, f: &str| -> Result<Option<(u16, u16)>, ConfigError> {
                match m {
                    None => Ok(None),
                    Some(PortMatch::One(v)) => Ok(Some((v, v))),
                    Some(PortMatch::Range([lo, hi])) if lo <= hi => Ok(Some((lo, hi))),
                    Some(PortMatch::Range([lo, hi])) => {
                        Err(ConfigError::new(format!("{p}.{f}"), format!("range [{lo}, {hi}] is empty")))
                    }
                }
            };
            if let Some(d) = r.dscp {
                check_dscp(d, &format!("{p}.dscp"))?;
            }
            if let Some(c) = r.class {
                check_class(c, &format!("{p}.class"), env.classes)?;
            }
            let rewrite = Rewrite { set_dscp: r.set_dscp, set_class: r.set_class };
            rewrite.check(&p, env.classes)?;
            let in_ports = match &r.in_ports {
                None => None,
                Some(list) => {
                    let mut m = vec![false; env.ports];
                    for (j, &port) in list.iter().enumerate() {
                        if port as usize >= env.ports {
                            return Err(ConfigError::new(
                                format!("{p}.in_ports[{j}]"),
                                format!("port {port} does not exist (the device has ports 0..{})", env.ports - 1),
                            ));
                        }
                        m[port as usize] = true;
                    }
                    Some(m)
                }
            };
            rules.push(Rule {
                src: prefix(&r.src, "src")?,
                dst: prefix(&r.dst, "dst")?,
                proto: r.proto,
                sport: range(r.sport, "sport")?,
                dport: range(r.dport, "dport")?,
                dscp: r.dscp,
                class: r.class,
                vni: r.vni,
                in_ports,
                action: r.action,
                rewrite,
            });
        }
        let n = rules.len();
        Ok(Acl {
            rules,
            default: cfg.default,
            per_rule_milli: milli_passes(cfg.cost_per_rule, &format!("{path}.cost_per_rule"))?,
            rule_hits: vec![0; n],
            permitted: 0,
            denied: 0,
            rewritten: 0,
            defaulted: 0,
        })
    }

    #[inline]
    pub fn run(&mut self, pkt: &mut Packet, ctx: &Ctx) -> Step {
        let found = self.rules.iter().position(|r| r.matches(pkt, ctx));
        let examined = found.map_or(self.rules.len(), |i| i + 1) as u32;
        let extra_milli = examined * self.per_rule_milli;
        let action = match found {
            Some(i) => {
                self.rule_hits[i] += 1;
                let r = &self.rules[i];
                if r.action == AclAction::Permit && r.rewrite.apply(pkt) {
                    self.rewritten += 1;
                }
                r.action
            }
            None => {
                self.defaulted += 1;
                self.default
            }
        };
        match action {
            AclAction::Permit => {
                self.permitted += 1;
                Step { drop: None, hit: found.is_some(), extra_milli }
            }
            AclAction::Deny => {
                self.denied += 1;
                Step { drop: Some(DropReason::AclDeny), hit: found.is_some(), extra_milli }
            }
        }
    }

    pub fn counters(&self, out: &mut Vec<(String, u64)>) {
        out.push(("permitted".into(), self.permitted));
        out.push(("denied".into(), self.denied));
        out.push(("rewritten".into(), self.rewritten));
        out.push(("no_rule".into(), self.defaulted));
        for (i, &h) in self.rule_hits.iter().enumerate() {
            out.push((format!("rule{i}"), h));
        }
    }
}
