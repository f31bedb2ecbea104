//! Arbitration between the inputs of an egress port: how its bandwidth is
//! divided among many congested inputs.
//!
//! - `fifo` (default): one queue per class; inputs share the port in the order
//!   the buffer admitted their packets (with `input_queue_bytes`, each input's
//!   bytes in the queue are counted and limited).
//! - `round_robin`: one sub-queue per input port in each class, served packet
//!   by packet in turn: backlogged inputs get equal packet rates.
//! - `hierarchical`: inputs are grouped (by default the device's pipes, see
//!   `pipeline.port_pipe`); the port serves the groups with a backlogged input
//!   in turn, and within a group its backlogged inputs in turn. An input in a
//!   small group gets a larger share.
//!
//! With `input_queue_bytes` each input sub-queue holds at most that many
//! bytes and drops the excess (`input_queue_limit`): the arbiter, not the
//! buffer, then decides the shares. Without it the buffer model's admission
//! is the only limit.
//!
//! Closed forms (packet rates; byte rates when frames are equal): with input
//! demands `d_i` and port capacity `C`, round robin gives the max-min fair
//! allocation [`max_min`]; hierarchical gives [`hierarchical_shares`]: the
//! groups split `C` max-min fairly by their total demands, and each group
//! splits its part max-min fairly among its inputs. All inputs backlogged:
//! input `i` of group `g` gets `C / (G * n_g)`, with `G` active groups and
//! `n_g` active inputs in `g`.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

/// Resolved `arbitration` of a switch.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ArbitrationConfig {
    Fifo {
        #[serde(default)]
        input_queue_bytes: Option<u64>,
    },
    RoundRobin {
        #[serde(default)]
        input_queue_bytes: Option<u64>,
    },
    Hierarchical {
        #[serde(default)]
        input_queue_bytes: Option<u64>,
        /// Equal contiguous blocks of ports (ignored when `port_group` is given).
        #[serde(default)]
        groups: Option<u32>,
        /// Group of each port.
        #[serde(default)]
        port_group: Option<Vec<u16>>,
    },
}

impl Default for ArbitrationConfig {
    fn default() -> Self {
        ArbitrationConfig::Fifo { input_queue_bytes: None }
    }
}

/// An arbiter ready to install on the device's ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arbiter {
    /// Per-input sub-queues in round robin (`false`: one FIFO counting each input's bytes).
    pub round_robin: bool,
    /// Group of each input port.
    pub group: Vec<u16>,
    /// Per input sub-queue byte limit (`u64::MAX`: none).
    pub input_limit: u64,
}

impl ArbitrationConfig {
    /// Whether the device's egress ports keep a sub-queue per input (every
    /// kind but a plain `fifo`).
    pub fn uses_input_queues(&self) -> bool {
        !matches!(self, ArbitrationConfig::Fifo { input_queue_bytes: None })
    }

    /// The arbiter for a device with `ports` ports; `pipes` is the pipe of
    /// each port when the device has a pipeline. `None` for a plain `fifo`.
    pub fn arbiter(&self, ports: usize, pipes: Option<&[u16]>, path: &str) -> Result<Option<Arbiter>, ConfigError> {
        let limit = |l: &Option<u64>| -> Result<u64, ConfigError> {
            match *l {
                Some(0) => Err(ConfigError::new(format!("{path}.input_queue_size"), "must be > 0 (or null for none)")),
                Some(b) => Ok(b),
                None => Ok(u64::MAX),
            }
        };
        match self {
            ArbitrationConfig::Fifo { input_queue_bytes: None } => Ok(None),
            ArbitrationConfig::Fifo { input_queue_bytes } => {
                Ok(Some(Arbiter { round_robin: false, group: vec![0; ports], input_limit: limit(input_queue_bytes)? }))
            }
            ArbitrationConfig::RoundRobin { input_queue_bytes } => {
                Ok(Some(Arbiter { round_robin: true, group: vec![0; ports], input_limit: limit(input_queue_bytes)? }))
            }
            ArbitrationConfig::Hierarchical { input_queue_bytes, groups, port_group } => {
                let group = match (port_group, groups, pipes) {
                    (Some(map), _, _) => {
                        if map.len() != ports {
                            return Err(ConfigError::new(
                                format!("{path}.port_group"),
                                format!("expected {ports} values (one per port), got {}", map.len()),
                            ));
                        }
                        map.clone()
                    }
                    (None, Some(g), _) => {
                        let g = *g as usize;
                        if g == 0 || g > ports {
                            return Err(ConfigError::new(
                                format!("{path}.groups"),
                                format!("must be between 1 and the device's port count {ports}"),
                            ));
                        }
                        (0..ports).map(|p| (p * g / ports) as u16).collect()
                    }
                    (None, None, Some(pipes)) => pipes.to_vec(),
                    (None, None, None) => {
                        return Err(ConfigError::new(
                            format!("{path}.groups"),
                            "hierarchical arbitration needs groups: give 'groups' or 'port_group', or a pipeline whose pipes group the ports",
                        ))
                    }
                };
                Ok(Some(Arbiter { round_robin: true, group, input_limit: limit(input_queue_bytes)? }))
            }
        }
    }
}

/// Max-min fair allocation of `capacity` among `demands` (water filling).
pub fn max_min(demands: &[f64], capacity: f64) -> Vec<f64> {
    let mut alloc = vec![0.0; demands.len()];
    let mut open: Vec<usize> = (0..demands.len()).filter(|&i| demands[i] > 0.0).collect();
    let mut left = capacity;
    while !open.is_empty() && left > 0.0 {
        let fair = left / open.len() as f64;
        let (small, big): (Vec<usize>, Vec<usize>) = open.iter().partition(|&&i| demands[i] - alloc[i] <= fair);
        if small.is_empty() {
            for &i in &big {
                alloc[i] += fair;
            }
            break;
        }
        for &i in &small {
            left -= demands[i] - alloc[i];
            alloc[i] = demands[i];
        }
        open = big;
    }
    alloc
}

/// Two-level max-min allocation: groups by their total demand, then inputs within each group.
pub fn hierarchical_shares(demands: &[f64], group: &[usize], capacity: f64) -> Vec<f64> {
    let groups = group.iter().copied().max().map_or(0, |g| g + 1);
    let mut totals = vec![0.0; groups];
    for (i, &g) in group.iter().enumerate() {
        totals[g] += demands[i];
    }
    let per_group = max_min(&totals, capacity);
    let mut out = vec![0.0; demands.len()];
    for (g, &cap) in per_group.iter().enumerate() {
        let members: Vec<usize> = (0..demands.len()).filter(|&i| group[i] == g).collect();
        let d: Vec<f64> = members.iter().map(|&i| demands[i]).collect();
        for (k, a) in max_min(&d, cap).into_iter().enumerate() {
            out[members[k]] = a;
        }
    }
    out
}

/// Jain's fairness index `(sum x)^2 / (n * sum x^2)`: 1 when all equal, 1/n when one takes all.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || s2 == 0.0 {
        return 1.0;
    }
    s * s / (x.len() as f64 * s2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_min_fills_small_demands_first() {
        assert_eq!(max_min(&[1.0, 10.0, 10.0], 9.0), vec![1.0, 4.0, 4.0]);
        assert_eq!(max_min(&[1.0, 2.0], 9.0), vec![1.0, 2.0]);
        assert_eq!(max_min(&[0.0, 5.0], 3.0), vec![0.0, 3.0]);
    }

    #[test]
    fn hierarchical_favours_inputs_in_small_groups() {
        // Groups {0}, {1, 2, 3}: the lone input gets half the port.
        let s = hierarchical_shares(&[10.0; 4], &[0, 1, 1, 1], 6.0);
        assert_eq!(s, vec![3.0, 1.0, 1.0, 1.0]);
        // A group that needs less than half gives the rest to the other.
        let s = hierarchical_shares(&[1.0, 10.0, 10.0], &[0, 1, 1], 6.0);
        assert_eq!(s, vec![1.0, 2.5, 2.5]);
    }

    #[test]
    fn jain_index_bounds() {
        assert_eq!(jain(&[2.0, 2.0, 2.0]), 1.0);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn hierarchical_groups_come_from_the_config_or_the_pipes() {
        let c = ArbitrationConfig::Hierarchical { input_queue_bytes: Some(10), groups: Some(2), port_group: None };
        assert_eq!(c.arbiter(4, None, "a").unwrap().unwrap().group, vec![0, 0, 1, 1]);
        let c = ArbitrationConfig::Hierarchical { input_queue_bytes: None, groups: None, port_group: None };
        assert_eq!(c.arbiter(3, Some(&[1, 0, 1]), "a").unwrap().unwrap().group, vec![1, 0, 1]);
        let e = c.arbiter(3, None, "a").unwrap_err();
        assert_eq!(e.path, "a.groups");
    }
}
