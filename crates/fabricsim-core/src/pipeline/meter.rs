//! Meters: the single rate three colour marker (srTCM, RFC 2697) and the two
//! rate three colour marker (trTCM, RFC 2698), colour-blind or colour-aware,
//! with an action per colour (pass, drop with reason `meter_drop`, rewrite the
//! DSCP or the traffic class).
//!
//! Token buckets are kept in exact integer arithmetic, in units of
//! 1/(8 * 10^12) byte, so a bucket filled at `R` bit/s gains exactly
//! `R * dt_ps` units in `dt_ps` picoseconds: the continuous form of the RFCs'
//! "incremented R times per second" with no rounding drift. Both buckets are
//! full at time 0 (RFC 2697 section 3, RFC 2698 section 3). A packet of `B`
//! bytes (the whole frame) is coloured:
//!
//! - srTCM (RFC 2697 section 4): bucket C fills at CIR up to CBS and its
//!   overflow fills E up to EBS. Blind: green if Tc >= B (Tc -= B), else
//!   yellow if Te >= B (Te -= B), else red. Aware: a green packet as blind; a
//!   yellow one yellow if Te >= B, else red; a red one red.
//! - trTCM (RFC 2698 section 4): P fills at PIR up to PBS, C at CIR up to CBS.
//!   Blind: red if Tp < B; else yellow if Tc < B (Tp -= B); else green
//!   (Tp -= B, Tc -= B). Aware: red if the packet is red or Tp < B; yellow if
//!   it is yellow or Tc < B (Tp -= B); else green (both -= B).
//!
//! A meter instance serves the whole stage, each flow, or each ingress port (`per`).

use super::stage::{BuildEnv, Ctx, Rewrite, Step};
use crate::error::ConfigError;
use crate::packet::{Packet, COLOR_GREEN, COLOR_RED, COLOR_YELLOW};
use crate::stats::DropReason;
use crate::units::PS_PER_SEC;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MeterMode {
    Srtcm,
    Trtcm,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MeterScope {
    /// One meter for every packet of the stage.
    #[default]
    Stage,
    /// One meter per flow (connection).
    Flow,
    /// One meter per ingress port.
    Port,
}

/// What happens to a packet of one colour: `"pass"`, `"drop"`, or an object
/// `{"drop": false, "set_dscp": 10, "set_class": 1}`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub enum ColorActionConfig {
    Word(Word),
    Detail {
        #[serde(default)]
        drop: bool,
        #[serde(default)]
        set_dscp: Option<u8>,
        #[serde(default)]
        set_class: Option<u8>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Word {
    Pass,
    Drop,
}

fn pass() -> ColorActionConfig {
    ColorActionConfig::Word(Word::Pass)
}
fn drop() -> ColorActionConfig {
    ColorActionConfig::Word(Word::Drop)
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MeterConfig {
    pub mode: MeterMode,
    /// Committed information rate and burst size.
    pub cir_bps: u64,
    pub cbs_bytes: u64,
    /// srTCM: excess burst size.
    #[serde(default)]
    pub ebs_bytes: Option<u64>,
    /// trTCM: peak information rate and burst size.
    #[serde(default)]
    pub pir_bps: Option<u64>,
    #[serde(default)]
    pub pbs_bytes: Option<u64>,
    #[serde(default)]
    pub color_aware: bool,
    #[serde(default)]
    pub per: MeterScope,
    #[serde(default = "pass")]
    pub green: ColorActionConfig,
    #[serde(default = "pass")]
    pub yellow: ColorActionConfig,
    #[serde(default = "drop")]
    pub red: ColorActionConfig,
}

#[derive(Clone, Copy, Debug)]
struct ColorAction {
    drop: bool,
    rewrite: Rewrite,
}

/// Token units per byte: 8 bits x 10^12 ps per second.
const UNITS_PER_BYTE: u128 = 8 * PS_PER_SEC as u128;

/// The two buckets of one meter instance, in token units.
#[derive(Clone, Copy, Debug)]
struct Buckets {
    /// srTCM: C; trTCM: P.
    a: u128,
    /// srTCM: E; trTCM: C.
    b: u128,
    last_ps: u64,
}

#[derive(Clone, Debug)]
pub struct Meter {
    mode: MeterMode,
    /// Fill rates (bit/s) and capacities (token units) of buckets a and b.
    rate_a: u128,
    cap_a: u128,
    rate_b: u128,
    cap_b: u128,
    aware: bool,
    per: MeterScope,
    actions: [ColorAction; 3],
    instances: Vec<Buckets>,
    packets: [u64; 3],
    bytes: [u64; 3],
}

impl Meter {
    pub fn new(cfg: MeterConfig, path: &str, env: &BuildEnv) -> Result<Meter, ConfigError> {
        let err = |f: &str, m: &str| ConfigError::new(format!("{path}.{f}"), m.to_string());
        if cfg.cir_bps == 0 {
            return Err(err("cir", "must be > 0"));
        }
        let (rate_a, cap_a, rate_b, cap_b) = match cfg.mode {
            MeterMode::Srtcm => {
                if cfg.pir_bps.is_some() || cfg.pbs_bytes.is_some() {
                    return Err(err("pir", "srtcm takes cir, cbs and ebs (pir and pbs belong to trtcm)"));
                }
                let ebs = cfg.ebs_bytes.ok_or_else(|| err("ebs", "srtcm needs an excess burst size"))?;
                if cfg.cbs_bytes == 0 && ebs == 0 {
                    // RFC 2697 section 2: at least one of CBS and EBS must be larger than 0.
                    return Err(err("cbs", "cbs and ebs cannot both be 0 (RFC 2697 section 2)"));
                }
                // C fills at CIR; E fills from C's overflow, so it has no rate of its own.
                (cfg.cir_bps as u128, cfg.cbs_bytes as u128 * UNITS_PER_BYTE, 0, ebs as u128 * UNITS_PER_BYTE)
            }
            MeterMode::Trtcm => {
                if cfg.ebs_bytes.is_some() {
                    return Err(err("ebs", "trtcm takes cir, cbs, pir and pbs (ebs belongs to srtcm)"));
                }
                let pir = cfg.pir_bps.ok_or_else(|| err("pir", "trtcm needs a peak information rate"))?;
                let pbs = cfg.pbs_bytes.ok_or_else(|| err("pbs", "trtcm needs a peak burst size"))?;
                if pir < cfg.cir_bps {
                    // RFC 2698 section 2: the PIR must be equal to or greater than the CIR.
                    return Err(err("pir", "must be >= cir (RFC 2698 section 2)"));
                }
                if pbs == 0 || cfg.cbs_bytes == 0 {
                    return Err(err("pbs", "pbs and cbs must be > 0 (RFC 2698 section 2)"));
                }
                (pir as u128, pbs as u128 * UNITS_PER_BYTE, cfg.cir_bps as u128, cfg.cbs_bytes as u128 * UNITS_PER_BYTE)
            }
        };
        let action = |a: ColorActionConfig, f: &str| -> Result<ColorAction, ConfigError> {
            let out = match a {
                ColorActionConfig::Word(Word::Pass) => ColorAction { drop: false, rewrite: Rewrite::default() },
                ColorActionConfig::Word(Word::Drop) => ColorAction { drop: true, rewrite: Rewrite::default() },
                ColorActionConfig::Detail { drop, set_dscp, set_class } => {
                    ColorAction { drop, rewrite: Rewrite { set_dscp, set_class } }
                }
            };
            out.rewrite.check(&format!("{path}.{f}"), env.classes)?;
            Ok(out)
        };
        Ok(Meter {
            mode: cfg.mode,
            rate_a,
            cap_a,
            rate_b,
            cap_b,
            aware: cfg.color_aware,
            per: cfg.per,
            actions: [action(cfg.green, "green")?, action(cfg.yellow, "yellow")?, action(cfg.red, "red")?],
            instances: Vec::new(),
            packets: [0; 3],
            bytes: [0; 3],
        })
    }

    /// Colours a packet of `bytes` bytes arriving at `now_ps` at instance `i`
    /// with pre-colour `pre` (used when colour-aware).
    pub fn color(&mut self, i: usize, now_ps: u64, bytes: u64, pre: u8) -> u8 {
        if self.instances.len() <= i {
            let full = Buckets { a: self.cap_a, b: self.cap_b, last_ps: 0 };
            self.instances.resize(i + 1, full);
        }
        let (rate_a, cap_a, rate_b, cap_b) = (self.rate_a, self.cap_a, self.rate_b, self.cap_b);
        let k = &mut self.instances[i];
        let dt = now_ps.saturating_sub(k.last_ps) as u128;
        k.last_ps = k.last_ps.max(now_ps);
        let need = bytes as u128 * UNITS_PER_BYTE;
        let pre = if self.aware { pre } else { COLOR_GREEN };
        match self.mode {
            MeterMode::Srtcm => {
                // Tokens go to C until it is full, then to E (RFC 2697 section 3).
                let a = k.a + rate_a * dt;
                if a > cap_a {
                    k.b = (k.b + (a - cap_a)).min(cap_b);
                    k.a = cap_a;
                } else {
                    k.a = a;
                }
                if pre == COLOR_GREEN && k.a >= need {
                    k.a -= need;
                    COLOR_GREEN
                } else if pre != COLOR_RED && k.b >= need {
                    k.b -= need;
                    COLOR_YELLOW
                } else {
                    COLOR_RED
                }
            }
            MeterMode::Trtcm => {
                k.a = (k.a + rate_a * dt).min(cap_a);
                k.b = (k.b + rate_b * dt).min(cap_b);
                if pre == COLOR_RED || k.a < need {
                    COLOR_RED
                } else if pre == COLOR_YELLOW || k.b < need {
                    k.a -= need;
                    COLOR_YELLOW
                } else {
                    k.a -= need;
                    k.b -= need;
                    COLOR_GREEN
                }
            }
        }
    }

    #[inline]
    pub fn run(&mut self, pkt: &mut Packet, ctx: &Ctx) -> Step {
        let i = match self.per {
            MeterScope::Stage => 0,
            MeterScope::Flow => ctx.conn as usize,
            MeterScope::Port => ctx.port as usize,
        };
        let c = self.color(i, ctx.now.0, pkt.size as u64, pkt.color);
        pkt.color = c;
        self.packets[c as usize] += 1;
        self.bytes[c as usize] += pkt.size as u64;
        let a = self.actions[c as usize];
        if a.drop {
            return Step::dropped(DropReason::MeterDrop, c == COLOR_GREEN);
        }
        a.rewrite.apply(pkt);
        Step { drop: None, hit: c == COLOR_GREEN, extra_milli: 0 }
    }

    pub fn counters(&self, out: &mut Vec<(String, u64)>) {
        for (i, name) in ["green", "yellow", "red"].iter().enumerate() {
            out.push((format!("{name}_packets"), self.packets[i]));
            out.push((format!("{name}_bytes"), self.bytes[i]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn meter(json: &str) -> Meter {
        let costs = BTreeMap::new();
        let env = BuildEnv { ports: 4, classes: 8, costs: &costs, switch: true };
        Meter::new(serde_json::from_str(json).unwrap(), "m", &env).unwrap()
    }

    /// Colours `n` packets of `bytes`, one every `gap_ps` from time 0, and sums bytes per colour.
    fn stream(m: &mut Meter, n: u64, bytes: u64, gap_ps: u64) -> [u64; 3] {
        let mut out = [0; 3];
        for k in 0..n {
            let c = m.color(0, k * gap_ps, bytes, COLOR_GREEN);
            out[c as usize] += bytes;
        }
        out
    }

    #[test]
    fn srtcm_gives_cbs_plus_cir_green_and_ebs_yellow_under_overload() {
        // 1000 B every 4 us = 2 Gb/s offered against CIR 1 Gb/s; CBS = EBS = 10 kB.
        // C starts full and never fills up again, so E is never refilled:
        // green = CBS + CIR * T (in whole packets), yellow = EBS, the rest red.
        let mut m = meter(r#"{"mode": "srtcm", "cir_bps": 1000000000, "cbs_bytes": 10000, "ebs_bytes": 10000}"#);
        let n = 10_000;
        let out = stream(&mut m, n, 1000, 4_000_000);
        let t_s = (n - 1) as f64 * 4e-6;
        let green = 10_000.0 + 1e9 / 8.0 * t_s;
        assert!((out[0] as f64 - green).abs() <= 1000.0, "{out:?} vs {green}");
        assert_eq!(out[1], 10_000);
        assert_eq!(out[0] + out[1] + out[2], n * 1000);
    }

    #[test]
    fn srtcm_below_cir_is_all_green() {
        let mut m = meter(r#"{"mode": "srtcm", "cir_bps": 1000000000, "cbs_bytes": 3000, "ebs_bytes": 3000}"#);
        // 1500 B every 12 us = 1 Gb/s exactly: tokens arrive as fast as they go.
        let out = stream(&mut m, 1000, 1500, 12_000_000);
        assert_eq!(out, [1_500_000, 0, 0]);
    }

    #[test]
    fn trtcm_splits_traffic_between_cir_and_pir() {
        // Offered 4 Gb/s (500 B every 1 us); CIR 1 Gb/s, PIR 2 Gb/s, CBS = PBS = 5000 B.
        // green = CBS + CIR*T; green + yellow = PBS + PIR*T (both in whole packets).
        let mut m = meter(
            r#"{"mode": "trtcm", "cir_bps": 1000000000, "cbs_bytes": 5000,
                "pir_bps": 2000000000, "pbs_bytes": 5000}"#,
        );
        let n = 20_000;
        let out = stream(&mut m, n, 500, 1_000_000);
        let t_s = (n - 1) as f64 * 1e-6;
        let green = 5000.0 + 1e9 / 8.0 * t_s;
        let not_red = 5000.0 + 2e9 / 8.0 * t_s;
        assert!((out[0] as f64 - green).abs() <= 500.0, "{out:?}");
        assert!(((out[0] + out[1]) as f64 - not_red).abs() <= 500.0, "{out:?}");
    }

    #[test]
    fn colour_aware_meters_never_promote_a_packet() {
        let mut m = meter(
            r#"{"mode": "trtcm", "cir_bps": 1000000000, "cbs_bytes": 5000,
                "pir_bps": 2000000000, "pbs_bytes": 5000, "color_aware": true}"#,
        );
        assert_eq!(m.color(0, 0, 100, COLOR_YELLOW), COLOR_YELLOW);
        assert_eq!(m.color(0, 0, 100, COLOR_RED), COLOR_RED);
        assert_eq!(m.color(0, 0, 100, COLOR_GREEN), COLOR_GREEN);
        let mut s = meter(
            r#"{"mode": "srtcm", "cir_bps": 1000000000, "cbs_bytes": 5000, "ebs_bytes": 5000, "color_aware": true}"#,
        );
        assert_eq!(s.color(0, 0, 100, COLOR_YELLOW), COLOR_YELLOW);
        assert_eq!(s.color(0, 0, 100, COLOR_RED), COLOR_RED);
    }

    #[test]
    fn bad_meter_parameters_are_rejected_with_the_rfc_rule() {
        let costs = BTreeMap::new();
        let env = BuildEnv { ports: 4, classes: 8, costs: &costs, switch: true };
        let bad = |j: &str| Meter::new(serde_json::from_str(j).unwrap(), "m", &env).unwrap_err();
        let e = bad(r#"{"mode": "trtcm", "cir_bps": 2, "cbs_bytes": 1, "pir_bps": 1, "pbs_bytes": 1}"#);
        assert!(e.path == "m.pir" && e.message.contains("RFC 2698"), "{e}");
        let e = bad(r#"{"mode": "srtcm", "cir_bps": 2, "cbs_bytes": 0, "ebs_bytes": 0}"#);
        assert!(e.message.contains("RFC 2697"), "{e}");
        let e = bad(r#"{"mode": "srtcm", "cir_bps": 2, "cbs_bytes": 1}"#);
        assert_eq!(e.path, "m.ebs");
    }
}
