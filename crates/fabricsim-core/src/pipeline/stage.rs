//! One match-action stage: the registry of stage kinds, the fields every
//! stage shares (cost, latency, ports, direction, counters), and what a stage
//! sees of a packet.
//!
//! A stage is written in a scenario as a JSON object whose `kind` names its
//! model; the other keys are the shared fields below plus the kind's own
//! parameters, parsed with unknown keys rejected. Each kind lives in its own
//! file and exposes `run(&mut self, &mut Packet, &Ctx) -> Step`.

use super::{acl, conntrack, dscp, lpm, mac, meter, parse, vni, vxlan};
use crate::error::ConfigError;
use crate::packet::Packet;
use crate::stats::DropReason;
use crate::units::SimTime;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The stage kinds, as written in scenarios (`kind`).
pub const STAGE_KINDS: [&str; 10] = [
    "parse",
    "vni_match",
    "acl",
    "dscp_rewrite",
    "lpm",
    "mac_rewrite",
    "conntrack",
    "meter",
    "vxlan_encap",
    "vxlan_decap",
];

/// Which way a packet crosses the device that owns the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Dir {
    /// Received from a link (a switch's ingress pipeline, a NIC's receive side).
    Rx = 0,
    /// Sent by the host that owns the NIC (transmit side).
    Tx = 1,
}

/// The inner IPv4 5-tuple of a packet, in the packet's own direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FiveTuple {
    pub src: u32,
    pub dst: u32,
    pub proto: u8,
    pub sport: u16,
    pub dport: u16,
}

/// IP protocol numbers.
pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// What a stage knows about a packet besides the packet's own fields.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    pub now: SimTime,
    /// Local port the packet arrived on (receive side); 0 on the transmit side.
    pub port: u16,
    pub dir: Dir,
    pub tuple: FiveTuple,
    /// Connection the packet belongs to (both directions share it).
    pub conn: u32,
    /// The packet travels against its connection's first direction.
    pub reply: bool,
}

/// A stage's decision on one packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Step {
    /// Drop the packet (later stages do not run).
    pub drop: Option<DropReason>,
    /// The stage's table matched (ACL rule, VNI, prefix, connection entry...).
    pub hit: bool,
    /// Cost on top of the stage's own, in milli-passes (e.g. a connection insert).
    pub extra_milli: u32,
}

impl Step {
    pub const PASS: Step = Step { drop: None, hit: false, extra_milli: 0 };
    pub const HIT: Step = Step { drop: None, hit: true, extra_milli: 0 };

    pub fn dropped(reason: DropReason, hit: bool) -> Step {
        Step { drop: Some(reason), hit, extra_milli: 0 }
    }
}

/// Packet, byte, hit and drop counts of one stage.
#[derive(Clone, Copy, Debug, Default)]
pub struct StageCounters {
    pub packets: u64,
    pub bytes: u64,
    pub hits: u64,
    pub drops: u64,
}

/// The model behind a stage, one variant per kind (see each module).
#[derive(Clone, Debug)]
pub enum StageKind {
    Parse(parse::Parse),
    VniMatch(vni::VniMatch),
    Acl(acl::Acl),
    DscpRewrite(dscp::DscpRewrite),
    Lpm(lpm::Lpm),
    MacRewrite(mac::MacRewrite),
    Conntrack(Box<conntrack::Conntrack>),
    Meter(Box<meter::Meter>),
    VxlanEncap(vxlan::VxlanEncap),
    VxlanDecap(vxlan::VxlanDecap),
}

impl StageKind {
    pub fn name(&self) -> &'static str {
        match self {
            StageKind::Parse(_) => "parse",
            StageKind::VniMatch(_) => "vni_match",
            StageKind::Acl(_) => "acl",
            StageKind::DscpRewrite(_) => "dscp_rewrite",
            StageKind::Lpm(_) => "lpm",
            StageKind::MacRewrite(_) => "mac_rewrite",
            StageKind::Conntrack(_) => "conntrack",
            StageKind::Meter(_) => "meter",
            StageKind::VxlanEncap(_) => "vxlan_encap",
            StageKind::VxlanDecap(_) => "vxlan_decap",
        }
    }

    #[inline]
    fn run(&mut self, pkt: &mut Packet, ctx: &Ctx) -> Step {
        match self {
            StageKind::Parse(s) => s.run(pkt, ctx),
            StageKind::VniMatch(s) => s.run(pkt, ctx),
            StageKind::Acl(s) => s.run(pkt, ctx),
            StageKind::DscpRewrite(s) => s.run(pkt, ctx),
            StageKind::Lpm(s) => s.run(pkt, ctx),
            StageKind::MacRewrite(s) => s.run(pkt, ctx),
            StageKind::Conntrack(s) => s.run(pkt, ctx),
            StageKind::Meter(s) => s.run(pkt, ctx),
            StageKind::VxlanEncap(s) => s.run(pkt, ctx),
            StageKind::VxlanDecap(s) => s.run(pkt, ctx),
        }
    }

    /// The kind's own counters, as `(name, value)`.
    fn extra_counters(&self, out: &mut Vec<(String, u64)>) {
        match self {
            StageKind::Parse(s) => s.counters(out),
            StageKind::VniMatch(_) | StageKind::Lpm(_) | StageKind::MacRewrite(_) => {}
            StageKind::Acl(s) => s.counters(out),
            StageKind::DscpRewrite(s) => s.counters(out),
            StageKind::Conntrack(s) => s.counters(out),
            StageKind::Meter(s) => s.counters(out),
            StageKind::VxlanEncap(s) => s.counters(out),
            StageKind::VxlanDecap(s) => s.counters(out),
        }
    }
}

/// What a stage's builder needs to know about the device.
#[derive(Clone, Copy, Debug)]
pub struct BuildEnv<'a> {
    /// Ports of the device.
    pub ports: usize,
    /// Traffic classes of the network.
    pub classes: usize,
    /// The device's cost of each stage kind (passes), for stages that give none.
    pub costs: &'a BTreeMap<String, f64>,
    /// A switch (ingress only) rather than a NIC (receive and transmit).
    pub switch: bool,
}

/// One stage of a pipeline: a model plus the shared fields.
#[derive(Clone, Debug)]
pub struct Stage {
    pub kind: StageKind,
    /// Label in outputs (`name`, or the kind).
    pub name: String,
    /// Cost of running the stage, in milli-passes.
    pub cost_milli: u32,
    /// Latency the stage adds to a packet that runs it.
    pub latency: SimTime,
    /// Per local port: the stage runs on packets received there (`None`: every port).
    ports: Option<Vec<bool>>,
    /// Bit 0: runs on received packets; bit 1: on transmitted ones.
    dirs: u8,
    pub counters: StageCounters,
}

/// Keys every stage may carry besides its kind's parameters.
const SHARED_KEYS: [&str; 6] = ["kind", "name", "cost", "latency_ps", "ports", "direction"];

impl Stage {
    /// Builds the stage described by `v`; errors name fields under `path`.
    pub fn build(v: &Value, path: &str, env: &BuildEnv) -> Result<Stage, ConfigError> {
        let Some(obj) = v.as_object() else {
            return Err(ConfigError::new(path, "a stage must be an object with a 'kind'"));
        };
        let kind = match obj.get("kind").and_then(Value::as_str) {
            Some(k) => k,
            None => {
                return Err(ConfigError::new(
                    format!("{path}.kind"),
                    format!("missing; one of: {}", STAGE_KINDS.join(", ")),
                ))
            }
        };
        let own: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| !SHARED_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let own = Value::Object(own);
        let model = match kind {
            "parse" => StageKind::Parse(parse::Parse::new(params(own, path)?, path)?),
            "vni_match" => StageKind::VniMatch(vni::VniMatch::new(params(own, path)?, path)?),
            "acl" => StageKind::Acl(acl::Acl::new(params(own, path)?, path, env)?),
            "dscp_rewrite" => StageKind::DscpRewrite(dscp::DscpRewrite::new(params(own, path)?, path, env)?),
            "lpm" => StageKind::Lpm(lpm::Lpm::new(params(own, path)?, path)?),
            "mac_rewrite" => StageKind::MacRewrite(mac::MacRewrite::new(params(own, path)?)),
            "conntrack" => StageKind::Conntrack(Box::new(conntrack::Conntrack::new(params(own, path)?, path)?)),
            "meter" => StageKind::Meter(Box::new(meter::Meter::new(params(own, path)?, path, env)?)),
            "vxlan_encap" => StageKind::VxlanEncap(vxlan::VxlanEncap::new(params(own, path)?, path)?),
            "vxlan_decap" => StageKind::VxlanDecap(vxlan::VxlanDecap::new(params(own, path)?)),
            other => {
                return Err(ConfigError::new(
                    format!("{path}.kind"),
                    format!("unknown stage kind '{other}'; known kinds: {}", STAGE_KINDS.join(", ")),
                ))
            }
        };
        let cost = match obj.get("cost") {
            None | Some(Value::Null) => env.costs.get(kind).copied().unwrap_or(0.0),
            Some(c) => c.as_f64().ok_or_else(|| ConfigError::new(format!("{path}.cost"), "must be a number"))?,
        };
        let cost_milli = milli_passes(cost, &format!("{path}.cost"))?;
        let latency = match obj.get("latency_ps") {
            None | Some(Value::Null) => 0,
            Some(l) => l
                .as_u64()
                .ok_or_else(|| ConfigError::new(format!("{path}.latency"), "must be a non-negative duration"))?,
        };
        let ports = match obj.get("ports") {
            None | Some(Value::Null) => None,
            Some(p) => {
                let list: Vec<u16> = params(p.clone(), &format!("{path}.ports"))?;
                let mut mask = vec![false; env.ports];
                for (i, &port) in list.iter().enumerate() {
                    if port as usize >= env.ports {
                        return Err(ConfigError::new(
                            format!("{path}.ports[{i}]"),
                            format!("port {port} does not exist (the device has ports 0..{})", env.ports - 1),
                        ));
                    }
                    mask[port as usize] = true;
                }
                Some(mask)
            }
        };
        let direction = match obj.get("direction") {
            None | Some(Value::Null) => None,
            Some(Value::String(d)) => Some(d.as_str()),
            Some(_) => Some("(not a string)"),
        };
        let dirs = match direction {
            None => {
                if env.switch {
                    1
                } else {
                    3
                }
            }
            Some("rx") => 1,
            Some("tx") if !env.switch => 2,
            Some("both") if !env.switch => 3,
            Some("both") => 1,
            Some(d) => {
                let allowed = if env.switch { "rx, both (a switch pipeline runs on ingress)" } else { "rx, tx, both" };
                return Err(ConfigError::new(
                    format!("{path}.direction"),
                    format!("'{d}' is not allowed; allowed: {allowed}"),
                ));
            }
        };
        let name = match obj.get("name") {
            Some(Value::String(s)) => s.clone(),
            _ => kind.to_string(),
        };
        Ok(Stage {
            kind: model,
            name,
            cost_milli,
            latency: SimTime(latency),
            ports,
            dirs,
            counters: StageCounters::default(),
        })
    }

    /// Whether the stage runs on a packet seen at `port` in direction `dir`.
    #[inline]
    pub fn applies(&self, port: u16, dir: Dir) -> bool {
        self.dirs & (1 << dir as u8) != 0
            && match &self.ports {
                None => true,
                Some(mask) => mask.get(port as usize).copied().unwrap_or(false),
            }
    }

    /// Runs the stage on a packet it applies to and counts the outcome.
    #[inline]
    pub fn run(&mut self, pkt: &mut Packet, ctx: &Ctx) -> Step {
        self.counters.packets += 1;
        self.counters.bytes += pkt.size as u64;
        let step = self.kind.run(pkt, ctx);
        self.counters.hits += step.hit as u64;
        self.counters.drops += step.drop.is_some() as u64;
        step
    }

    /// Every counter of the stage, shared ones first.
    pub fn all_counters(&self) -> Vec<(String, u64)> {
        let c = &self.counters;
        let mut out: Vec<(String, u64)> =
            [("packets", c.packets), ("bytes", c.bytes), ("hits", c.hits), ("drops", c.drops)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
        self.kind.extra_counters(&mut out);
        out
    }
}

/// A cost in passes as integer milli-passes (resolution 0.001 pass).
pub fn milli_passes(cost: f64, path: &str) -> Result<u32, ConfigError> {
    if !cost.is_finite() || !(0.0..=1_000_000.0).contains(&cost) {
        return Err(ConfigError::new(path, format!("must be between 0 and 1000000 passes (got {cost})")));
    }
    Ok((cost * 1000.0).round() as u32)
}

/// Deserializes a stage's own parameters; serde's message (unknown field,
/// expected ones) is kept and the path added.
pub fn params<T: DeserializeOwned>(v: Value, path: &str) -> Result<T, ConfigError> {
    serde_json::from_value(v).map_err(|e| ConfigError::new(path, e.to_string()))
}

/// Checks a DSCP value.
pub fn check_dscp(v: u8, path: &str) -> Result<(), ConfigError> {
    if v > 63 {
        return Err(ConfigError::new(path, format!("a DSCP is 0..63 (got {v})")));
    }
    Ok(())
}

/// Checks a traffic class against the network's classes.
pub fn check_class(c: u8, path: &str, classes: usize) -> Result<(), ConfigError> {
    if c as usize >= classes {
        return Err(ConfigError::new(path, format!("class {c} does not exist (classes are 0..{})", classes - 1)));
    }
    Ok(())
}

/// Rewrites of packet fields an action may carry (ACL rules, meter colours).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Rewrite {
    #[serde(default)]
    pub set_dscp: Option<u8>,
    #[serde(default)]
    pub set_class: Option<u8>,
}

impl Rewrite {
    pub fn check(&self, path: &str, classes: usize) -> Result<(), ConfigError> {
        if let Some(d) = self.set_dscp {
            check_dscp(d, &format!("{path}.set_dscp"))?;
        }
        if let Some(c) = self.set_class {
            check_class(c, &format!("{path}.set_class"), classes)?;
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.set_dscp.is_none() && self.set_class.is_none()
    }

    /// Applies the rewrite; returns whether a field changed.
    #[inline]
    pub fn apply(&self, pkt: &mut Packet) -> bool {
        let mut changed = false;
        if let Some(d) = self.set_dscp {
            changed |= pkt.dscp != d;
            pkt.dscp = d;
        }
        if let Some(c) = self.set_class {
            changed |= pkt.class != c;
            pkt.class = c;
        }
        changed
    }
}

/// What a table stage does with a packet its table does not match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MissAction {
    #[default]
    Drop,
    Pass,
}
