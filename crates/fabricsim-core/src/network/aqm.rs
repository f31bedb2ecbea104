//! RED-style ECN marking and WRED dropping per egress queue.
//!
//! Every (egress port, class) queue of a switch with an `ecn` section has the
//! same RED profile. The decision is taken when a packet is offered to the
//! queue, on the **instantaneous** number of frame bytes already waiting in that
//! queue (`q`, not counting the arriving packet nor the one in transmission):
//!
//! ```text
//! p(q) = 0                                    if q <= kmin
//!        pmax * (q - kmin) / (kmax - kmin)    if kmin < q <= kmax
//!        1                                    if q > kmax
//! ```
//!
//! With `kmin == kmax == K` this is DCTCP step marking: mark every packet that
//! finds more than `K` bytes queued.
//!
//! - `mode: ecn`: an ECT packet is CE-marked with probability `p` (after the
//!   buffer model admitted it). Non-ECT packets are neither marked nor
//!   early-dropped; only the buffer's own limits apply to them. A packet that is
//!   already CE stays CE and is not counted again.
//! - `mode: drop` (WRED): any packet is dropped with probability `p` before
//!   buffer admission (drop reason `wred`).
//!
//! Draws come from one random stream per switch, derived from the scenario seed
//! and the node id, and are taken only when `0 < p < 1`.

use crate::packet::{ECN_CE, ECN_ECT};
use crate::rng::RandomStream;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum EcnMode {
    /// Mark ECT packets CE.
    #[default]
    Ecn,
    /// Drop packets (WRED).
    Drop,
}

/// Resolved `ecn` section of a switch.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EcnConfig {
    pub kmin_bytes: u64,
    pub kmax_bytes: u64,
    #[serde(default = "default_pmax")]
    pub pmax: f64,
    /// Classes that mark; `None` = every class.
    #[serde(default)]
    pub classes: Option<Vec<u8>>,
    #[serde(default)]
    pub mode: EcnMode,
}

fn default_pmax() -> f64 {
    1.0
}

/// What the queue's RED profile decided for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AqmAction {
    Pass,
    Mark,
    Drop,
}

/// The RED profile of one switch, with its random stream.
#[derive(Clone, Debug)]
pub struct Aqm {
    kmin: u64,
    kmax: u64,
    pmax: f64,
    class_mask: u8,
    mode: EcnMode,
    rng: RandomStream,
}

impl Aqm {
    pub fn new(cfg: &EcnConfig, classes: usize, seed: u64, node: u32, path: &str) -> Result<Aqm, crate::ConfigError> {
        let err = |f: &str, m: String| crate::ConfigError::new(format!("{path}.{f}"), m);
        if cfg.kmax_bytes < cfg.kmin_bytes {
            return Err(err("kmax", format!("must be >= kmin ({} B), got {} B", cfg.kmin_bytes, cfg.kmax_bytes)));
        }
        if !(cfg.pmax > 0.0 && cfg.pmax <= 1.0) {
            return Err(err("pmax", format!("must be > 0 and <= 1 (got {})", cfg.pmax)));
        }
        let mut class_mask = 0u8;
        match &cfg.classes {
            None => class_mask = if classes >= 8 { 0xff } else { (1u8 << classes) - 1 },
            Some(list) => {
                for &c in list {
                    if c as usize >= classes {
                        return Err(err(
                            "classes",
                            format!("class {c} does not exist (classes are 0..{})", classes - 1),
                        ));
                    }
                    class_mask |= 1 << c;
                }
            }
        }
        Ok(Aqm {
            kmin: cfg.kmin_bytes,
            kmax: cfg.kmax_bytes,
            pmax: cfg.pmax,
            class_mask,
            mode: cfg.mode,
            rng: RandomStream::new(seed, "aqm", node as u64),
        })
    }

    /// Marking/drop probability for `q` queued bytes.
    #[inline]
    pub fn probability(&self, q: u64) -> f64 {
        if q <= self.kmin {
            0.0
        } else if q > self.kmax {
            1.0
        } else {
            self.pmax * (q - self.kmin) as f64 / (self.kmax - self.kmin) as f64
        }
    }

    /// Decision for a packet of `class` with ECN codepoint `ecn` finding `q` bytes queued.
    #[inline]
    pub fn decide(&mut self, q: u64, class: u8, ecn: u8) -> AqmAction {
        if self.class_mask & (1 << class) == 0 || q <= self.kmin {
            return AqmAction::Pass;
        }
        let hit_action = match self.mode {
            EcnMode::Ecn if ecn == ECN_ECT => AqmAction::Mark,
            EcnMode::Ecn => return AqmAction::Pass,
            EcnMode::Drop => AqmAction::Drop,
        };
        let p = self.probability(q);
        if p >= 1.0 || self.rng.next_open01() < p {
            hit_action
        } else {
            AqmAction::Pass
        }
    }

    pub fn mode(&self) -> EcnMode {
        self.mode
    }
}

/// `ecn` after a CE mark.
pub const MARKED: u8 = ECN_CE;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{ECN_CE, ECN_NOT_ECT};

    fn aqm(kmin: u64, kmax: u64, pmax: f64, mode: EcnMode) -> Aqm {
        let cfg = EcnConfig { kmin_bytes: kmin, kmax_bytes: kmax, pmax, classes: None, mode };
        Aqm::new(&cfg, 8, 1, 0, "x").unwrap()
    }

    #[test]
    fn step_marking_marks_only_above_k() {
        let mut a = aqm(1000, 1000, 1.0, EcnMode::Ecn);
        assert_eq!(a.decide(1000, 0, ECN_ECT), AqmAction::Pass);
        assert_eq!(a.decide(1001, 0, ECN_ECT), AqmAction::Mark);
        assert_eq!(a.decide(5000, 0, ECN_NOT_ECT), AqmAction::Pass);
        assert_eq!(a.decide(5000, 0, ECN_CE), AqmAction::Pass);
    }

    #[test]
    fn red_ramp_has_the_right_probability() {
        let mut a = aqm(0, 10_000, 0.5, EcnMode::Drop);
        assert_eq!(a.probability(5_000), 0.25);
        let n = 100_000;
        let hits = (0..n).filter(|_| a.decide(5_000, 3, ECN_NOT_ECT) == AqmAction::Drop).count();
        assert!((hits as f64 / n as f64 - 0.25).abs() < 0.01, "{hits}");
        assert_eq!(a.decide(10_001, 3, ECN_NOT_ECT), AqmAction::Drop);
    }

    #[test]
    fn classes_and_errors() {
        let cfg = EcnConfig { kmin_bytes: 0, kmax_bytes: 0, pmax: 1.0, classes: Some(vec![1]), mode: EcnMode::Ecn };
        let mut a = Aqm::new(&cfg, 2, 1, 0, "x").unwrap();
        assert_eq!(a.decide(10, 0, ECN_ECT), AqmAction::Pass);
        assert_eq!(a.decide(10, 1, ECN_ECT), AqmAction::Mark);
        let bad = EcnConfig { classes: Some(vec![2]), ..cfg.clone() };
        assert!(Aqm::new(&bad, 2, 1, 0, "x").unwrap_err().to_string().starts_with("x.classes:"));
        let bad = EcnConfig { kmin_bytes: 5, kmax_bytes: 4, ..cfg };
        assert!(Aqm::new(&bad, 2, 1, 0, "x").unwrap_err().to_string().starts_with("x.kmax:"));
    }
}
