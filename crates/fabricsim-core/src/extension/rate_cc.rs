//! The registry of RoCE rate controllers
//! ([`RateControl`](crate::transport::roce::rate::RateControl)) by name.
//!
//! As for buffer policies (`buffer_policy.rs`): [`register`] a name, a JSON
//! Schema of the parameters and a factory; a scenario's `roce.cc: <name>` with
//! `roce.cc_params` makes the core call the factory once per queue pair, the
//! parameters read through [`Params`] (errors at `...roce.cc_params.<field>`).
//! `dcqcn` is built in (its parameters are the `roce.dcqcn` section); `hpcc`
//! (`transport/roce/hpcc.rs`) and `nscc` (`transport/roce/nscc.rs`) are
//! registered here before any other name.

use super::buffer_policy::{check_name, ParamError, Params};
use crate::error::ConfigError;
use crate::transport::roce::rate::RateControl;
use crate::transport::roce::{hpcc, nscc, DCQCN};
use crate::units::SimTime;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::RwLock;

/// What a factory knows of the queue pair it builds a controller for.
#[derive(Clone, Copy, Debug)]
pub struct QpContext {
    /// The sender's NIC line rate, bit/s.
    pub line_rate_bps: u64,
    /// Payload bytes per data packet and frame bytes of a full data packet.
    pub mtu_bytes: u32,
    pub frame_bytes: u32,
    /// The QP's index among all QPs of the run (a stream key for seeded randomness).
    pub qp: u32,
    /// The scenario's seed.
    pub seed: u64,
}

/// Builds a controller for one queue pair from its checked parameters.
pub type RateControlFactory = fn(&Params<'_>, &QpContext) -> Result<Box<dyn RateControl>, ParamError>;

/// A registered controller.
#[derive(Clone, Debug)]
pub struct RateControlInfo {
    /// The name scenarios give as `roce.cc`.
    pub name: String,
    pub summary: String,
    /// JSON Schema of `roce.cc_params`.
    pub schema: Value,
    pub factory: RateControlFactory,
}

static REGISTRY: RwLock<BTreeMap<String, RateControlInfo>> = RwLock::new(BTreeMap::new());

/// The registry, with the core's own registered controllers in it.
fn registry() -> &'static RwLock<BTreeMap<String, RateControlInfo>> {
    static BUILT_IN: std::sync::Once = std::sync::Once::new();
    BUILT_IN.call_once(|| {
        let mut r = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
        for info in [hpcc_info(), nscc_info()] {
            r.insert(info.name.clone(), info);
        }
    });
    &REGISTRY
}

/// Registers a controller (the same name and factory again: no-op; `dcqcn` or
/// a name another factory holds: refused).
pub fn register(info: RateControlInfo) -> Result<(), String> {
    if info.name == DCQCN {
        return Err(format!("'{DCQCN}' is the built-in rate controller"));
    }
    check_name(&info.name)?;
    let mut r = registry().write().unwrap_or_else(|e| e.into_inner());
    if let Some(old) = r.get(&info.name) {
        if old.factory as usize == info.factory as usize {
            return Ok(());
        }
        return Err(format!("rate controller '{}' is already registered", info.name));
    }
    r.insert(info.name.clone(), info);
    Ok(())
}

/// Names of the registered controllers, sorted.
pub fn names() -> Vec<String> {
    registry().read().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect()
}

/// The registered controller `name`, if any.
pub fn info(name: &str) -> Option<RateControlInfo> {
    registry().read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
}

/// The JSON Schema of controller `name`'s parameters.
pub fn schema(name: &str) -> Option<Value> {
    info(name).map(|i| i.schema)
}

/// Every name `roce.cc` may take: `dcqcn`, then the registered ones.
pub fn allowed() -> Vec<String> {
    std::iter::once(DCQCN.to_string()).chain(names()).collect()
}

/// Builds controller `name` for a QP; `path` names the `roce` section.
pub fn build(name: &str, params: &Value, ctx: &QpContext, path: &str) -> Result<Box<dyn RateControl>, ConfigError> {
    let Some(info) = info(name) else {
        return Err(ConfigError::new(
            format!("{path}.cc"),
            format!("unknown value '{name}'; allowed: {}", allowed().join(", ")),
        ));
    };
    let at = format!("{path}.cc_params");
    let p = Params::new(params).map_err(|e| e.at(&at))?;
    let cc = (info.factory)(&p, ctx).map_err(|e| e.at(&at))?;
    p.finish().map_err(|e| e.at(&at))?;
    Ok(cc)
}

/// Checks `params` of controller `name` as [`build`] would for a QP of a
/// 100 Gb/s NIC with 1024-byte packets; errors name `cc` or `cc_params.<field>`.
pub fn validate(name: &str, params: &Value) -> Result<(), ConfigError> {
    let ctx = QpContext { line_rate_bps: 100_000_000_000, mtu_bytes: 1024, frame_bytes: 1086, qp: 0, seed: 0 };
    build(name, params, &ctx, "roce")
        .map(|_| ())
        .map_err(|e| ConfigError::new(e.path.strip_prefix("roce.").unwrap_or(&e.path).to_string(), e.message))
}

/// HPCC's entry: its parameters read from `roce.cc_params`.
fn hpcc_factory(p: &Params<'_>, ctx: &QpContext) -> Result<Box<dyn RateControl>, ParamError> {
    let d = hpcc::HpccParams::defaults(ctx.line_rate_bps);
    let base_rtt = p.u64("base_rtt_ps", Some(0), 0, u64::MAX / 2)?;
    let params = hpcc::HpccParams {
        eta: p.f64("eta", Some(d.eta), 0.01, 1.0)?,
        max_stage: p.u64("max_stage", Some(d.max_stage as u64), 0, 1_000)? as u32,
        rate_ai_bps: p.u64("rate_ai_bps", Some(d.rate_ai_bps), 1, ctx.line_rate_bps)?,
        min_rate_bps: p.u64("min_rate_bps", Some(d.min_rate_bps.min(ctx.line_rate_bps)), 1, ctx.line_rate_bps)?,
        base_rtt: (base_rtt > 0).then_some(SimTime(base_rtt)),
        fast_react: p.bool("fast_react", d.fast_react)?,
    };
    Ok(Box::new(hpcc::Hpcc::new(params, ctx.line_rate_bps)))
}

fn hpcc_info() -> RateControlInfo {
    RateControlInfo {
        name: hpcc::NAME.into(),
        summary: "HPCC: rate from in-band telemetry of every hop's queue and transmit rate (Li et al. 2019)".into(),
        schema: serde_json::json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "eta": {"type": "number", "minimum": 0.01, "maximum": 1.0, "default": 0.95,
                        "description": "target utilisation"},
                "max_stage": {"type": "integer", "minimum": 0, "default": 5,
                              "description": "additive steps before a multiplicative adjustment"},
                "rate_ai_bps": {"type": "integer", "minimum": 1,
                                "description": "additive increase, bit/s (default: line rate / 2000)"},
                "min_rate_bps": {"type": "integer", "minimum": 1, "default": 100000000},
                "base_rtt_ps": {"type": "integer", "minimum": 0, "default": 0,
                                "description": "base RTT T; 0: the QP's first RTT sample"},
                "fast_react": {"type": "boolean", "default": true,
                               "description": "set the rate on every ACK, committing once per RTT"}
            }
        }),
        factory: hpcc_factory,
    }
}

/// NSCC's entry: its parameters read from `roce.cc_params`.
fn nscc_factory(p: &Params<'_>, ctx: &QpContext) -> Result<Box<dyn RateControl>, ParamError> {
    let d = nscc::NsccParams::default();
    let base_rtt = p.u64("base_rtt_ps", Some(0), 0, u64::MAX / 2)?;
    let params = nscc::NsccParams {
        target_qdelay: p.f64("target_qdelay", Some(d.target_qdelay), 0.01, 100.0)?,
        max_window: p.f64("max_window", Some(d.max_window), 0.01, 100.0)?,
        gamma: p.f64("gamma", Some(d.gamma), 0.0, 1.0)?,
        max_md_jump: p.f64("max_md_jump", Some(d.max_md_jump), 0.01, 1.0)?,
        fair_increase: p.f64("fair_increase", Some(d.fair_increase), 0.0, 1e6)?,
        alpha: p.f64("alpha", Some(d.alpha), 0.0, 1e6)?,
        eta: p.f64("eta", Some(d.eta), 0.0, 1e6)?,
        fast_increase_scale: p.f64("fast_increase_scale", Some(d.fast_increase_scale), 0.0, 100.0)?,
        qa_gate: p.u64("qa_gate", Some(d.qa_gate as u64), 0, 63)? as u32,
        qa_threshold: p.f64("qa_threshold", Some(d.qa_threshold), 0.0, 1e6)?,
        adjust_bytes_mtu: p.u64("adjust_bytes", Some(d.adjust_bytes_mtu), 1, 1 << 32)?,
        adjust_period: p.f64("adjust_period", Some(d.adjust_period), 0.0, 1e6)?,
        delay_gain: p.f64("delay_gain", Some(d.delay_gain), 0.001, 1.0)?,
        base_rtt: (base_rtt > 0).then_some(SimTime(base_rtt)),
        entropies: p.u64("entropies", Some(d.entropies as u64), 1, 65_536)? as u32,
        path_reaction: p.bool("path_reaction", d.path_reaction)?,
    };
    Ok(Box::new(nscc::Nscc::new(params, ctx.line_rate_bps, ctx.frame_bytes, ctx.seed, ctx.qp)))
}

fn nscc_info() -> RateControlInfo {
    let num = |min: f64, max: f64, default: f64, description: &str| {
        serde_json::json!({"type": "number", "minimum": min, "maximum": max, "default": default,
                           "description": description})
    };
    let d = nscc::NsccParams::default();
    RateControlInfo {
        name: nscc::NAME.into(),
        summary: "NSCC-like: a window from ECN marks and queueing delay against a target, \
                  with REPS-like entropy path selection (Ultra Ethernet)"
            .into(),
        schema: serde_json::json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "target_qdelay": num(0.01, 100.0, d.target_qdelay, "target queueing delay, in base RTTs"),
                "max_window": num(0.01, 100.0, d.max_window, "MaxWnd and the initial window, in BDPs (line rate x base RTT)"),
                "gamma": num(0.0, 1.0, d.gamma, "multiplicative-decrease gain on the average delay's excess"),
                "max_md_jump": num(0.01, 1.0, d.max_md_jump, "smallest factor of one decrease"),
                "fair_increase": num(0.0, 1e6, d.fair_increase, "fair increase per RTT, MTUs x scaling_a"),
                "alpha": num(0.0, 1e6, d.alpha, "proportional increase per RTT at zero delay, MTUs x scaling_a"),
                "eta": num(0.0, 1e6, d.eta, "additive increase per adjustment, MTUs x scaling_a"),
                "fast_increase_scale": num(0.0, 100.0, d.fast_increase_scale,
                                           "fast increase, window bytes per byte acknowledged x scaling_a"),
                "qa_gate": {"type": "integer", "minimum": 0, "maximum": 63, "default": d.qa_gate,
                            "description": "quick adapt on delay only below MaxWnd / 2^qa_gate delivered per period"},
                "qa_threshold": num(0.0, 1e6, d.qa_threshold, "quick adapt above this many target delays; 0: on loss only"),
                "adjust_bytes": {"type": "integer", "minimum": 1, "default": d.adjust_bytes_mtu,
                                 "description": "increases applied after this many MTUs acknowledged"},
                "adjust_period": num(0.0, 1e6, d.adjust_period, "... or after this many base RTTs"),
                "delay_gain": num(0.001, 1.0, d.delay_gain, "EWMA gain of the average queueing delay"),
                "base_rtt_ps": {"type": "integer", "minimum": 0, "default": 0,
                                "description": "base RTT; 0: the smallest RTT sample so far"},
                "entropies": {"type": "integer", "minimum": 1, "maximum": 65536, "default": d.entropies,
                              "description": "entropy values per QP, hashed by the switches' ECMP; 1: the QP's own path"},
                "path_reaction": {"type": "boolean", "default": d.path_reaction,
                                  "description": "recycle unmarked entropies, replace marked ones (REPS-like); false: random per packet"}
            }
        }),
        factory: nscc_factory,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug)]
    struct Fixed(u64);
    impl RateControl for Fixed {
        fn rate_bps(&self) -> u64 {
            self.0
        }
    }
    fn fixed(p: &Params<'_>, ctx: &QpContext) -> Result<Box<dyn RateControl>, ParamError> {
        Ok(Box::new(Fixed(p.u64("rate_bps", Some(ctx.line_rate_bps), 1, ctx.line_rate_bps)?)))
    }

    #[test]
    fn registry_builds_by_name_and_checks_params() {
        let info = RateControlInfo { name: "test_fixed".into(), summary: "".into(), schema: json!({}), factory: fixed };
        register(info.clone()).unwrap();
        register(info.clone()).unwrap();
        assert!(register(RateControlInfo { name: "dcqcn".into(), ..info }).is_err());
        assert!(allowed().starts_with(&["dcqcn".to_string()]));
        let ctx = QpContext { line_rate_bps: 100, mtu_bytes: 1024, frame_bytes: 1086, qp: 0, seed: 0 };
        assert_eq!(build("test_fixed", &json!({"rate_bps": 40}), &ctx, "t.roce").unwrap().rate_bps(), 40);
        assert_eq!(build("test_fixed", &Value::Null, &ctx, "t.roce").unwrap().rate_bps(), 100);
        let e = build("test_fixed", &json!({"rate_bps": 400}), &ctx, "t.roce").unwrap_err();
        assert_eq!(e.path, "t.roce.cc_params.rate_bps");
        let e = build("nope", &json!({}), &ctx, "t.roce").unwrap_err();
        assert_eq!(e.path, "t.roce.cc");
        assert!(e.message.starts_with("unknown value 'nope'; allowed: dcqcn"), "{}", e.message);
        let e = validate("test_fixed", &json!({"rate": 1})).unwrap_err();
        assert_eq!(e.path, "cc_params.rate");
    }
}
