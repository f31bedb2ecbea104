//! Load balancing across a switch's equal-cost next hops
//! ([load-balancing.md](../../../../docs/models/load-balancing.md)).
//!
//! The routing table (`network/routing.rs`) gives the set of shortest-path
//! ports towards a destination; the switch's mode picks one of them for each
//! packet:
//!
//! | mode | choice |
//! |---|---|
//! | `ecmp` | hash of the flow's 5-tuple with the switch's salt: one path per flow (the routing table's own choice) |
//! | `spray_random` | uniformly at random, per packet |
//! | `spray_rr` | round robin over the set, per flow (its start drawn at random): a flow's packets take the ports in turn |
//! | `flowlet` | a flow keeps its port while its packets are at most `flowlet_gap` apart; after a longer gap it draws a new one at random (LetFlow) |
//! | `adaptive` | the eligible port with the fewest bytes queued or in transmission, ties broken at random (dynamic load balancing by local egress queue depth); with a `flowlet_gap`, decided once per flowlet instead of per packet; a port whose link is down is avoided from the instant it fails, before routing reacts |
//!
//! Random draws come from one stream per switch derived from the seed, so a
//! run is reproducible; a switch in `ecmp` mode draws nothing.

use crate::error::ConfigError;
use crate::rng::RandomStream;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How a switch spreads packets over equal-cost next hops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LbMode {
    #[default]
    Ecmp,
    SprayRandom,
    SprayRr,
    Flowlet,
    Adaptive,
}

/// Resolved `switch.load_balancing`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LoadBalancingConfig {
    #[serde(default)]
    pub mode: LbMode,
    /// `flowlet`: the idle gap after which a flow may change port (> 0);
    /// `adaptive`: 0 decides every packet, more decides once per flowlet.
    #[serde(default)]
    pub flowlet_gap_ps: u64,
}

impl LoadBalancingConfig {
    /// Checks the parameters against the mode.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        match self.mode {
            LbMode::Flowlet if self.flowlet_gap_ps == 0 => {
                Err(ConfigError::new(format!("{path}.flowlet_gap"), "must be > 0 for mode flowlet"))
            }
            LbMode::Ecmp | LbMode::SprayRandom | LbMode::SprayRr if self.flowlet_gap_ps != 0 => Err(ConfigError::new(
                format!("{path}.flowlet_gap"),
                format!("only for modes flowlet and adaptive (mode is {})", self.mode.name()),
            )),
            _ => Ok(()),
        }
    }
}

impl LbMode {
    /// The mode's scenario name.
    pub fn name(self) -> &'static str {
        match self {
            LbMode::Ecmp => "ecmp",
            LbMode::SprayRandom => "spray_random",
            LbMode::SprayRr => "spray_rr",
            LbMode::Flowlet => "flowlet",
            LbMode::Adaptive => "adaptive",
        }
    }
}

/// A flow's current flowlet at one switch.
#[derive(Clone, Copy, Debug)]
struct Flowlet {
    last_ps: u64,
    port: u16,
}

/// The load-balancing state of every node (hosts and `ecmp` switches have none).
#[derive(Debug, Default)]
pub struct Balancer {
    /// Some node balances other than by ECMP.
    pub active: bool,
    modes: Vec<LbMode>,
    gaps: Vec<u64>,
    rngs: Vec<Option<RandomStream>>,
    /// Round-robin position per (node, destination, flow hash).
    rr: HashMap<(u32, u32, u64), u32>,
    /// Current flowlet per (node, destination, flow hash).
    flowlets: HashMap<(u32, u32, u64), Flowlet>,
}

impl Balancer {
    /// State for `configs[node]` (`None`: a host, which uses ECMP).
    pub fn new(configs: &[Option<LoadBalancingConfig>], seed: u64) -> Balancer {
        let mut b = Balancer::default();
        for (u, c) in configs.iter().enumerate() {
            let c = c.unwrap_or_default();
            b.modes.push(c.mode);
            b.gaps.push(c.flowlet_gap_ps);
            let balanced = c.mode != LbMode::Ecmp;
            b.active |= balanced;
            b.rngs.push(balanced.then(|| RandomStream::new(seed, "load-balancing", u as u64)));
        }
        b
    }

    /// Whether `node` picks its ports other than by the ECMP hash.
    #[inline(always)]
    pub fn balances(&self, node: usize) -> bool {
        self.modes[node] != LbMode::Ecmp
    }

    /// The mode of `node`.
    pub fn mode(&self, node: usize) -> LbMode {
        self.modes[node]
    }

    /// The port (one of `hops`, at least two) `node` sends a packet towards
    /// `dst` of the flow with `hash` on at time `now_ps`; `queued(p)` is the
    /// bytes queued or in transmission at local port `p`, or [`LINK_DOWN`]
    /// when its link is down: adaptive routing then takes another next hop
    /// at once, and leaves a flowlet's port that went down.
    pub fn choose(
        &mut self,
        node: usize,
        dst: u32,
        hash: u64,
        hops: &[u16],
        now_ps: u64,
        queued: impl Fn(u16) -> u64,
    ) -> u16 {
        debug_assert!(hops.len() >= 2);
        let n = hops.len() as u64;
        let rng = self.rngs[node].as_mut().expect("a balancing node has a stream");
        match self.modes[node] {
            LbMode::Ecmp => unreachable!("ECMP is the routing table's own choice"),
            LbMode::SprayRandom => hops[rng.below(n) as usize],
            LbMode::SprayRr => {
                let next = self.rr.entry((node as u32, dst, hash)).or_insert_with(|| rng.below(n) as u32);
                let p = hops[(*next as u64 % n) as usize];
                *next = next.wrapping_add(1);
                p
            }
            LbMode::Flowlet | LbMode::Adaptive => {
                let gap = self.gaps[node];
                let adaptive = self.modes[node] == LbMode::Adaptive;
                if adaptive && gap == 0 {
                    return least_queued(hops, rng, &queued);
                }
                let key = (node as u32, dst, hash);
                if let Some(f) = self.flowlets.get_mut(&key) {
                    if now_ps - f.last_ps <= gap && hops.contains(&f.port) && !(adaptive && queued(f.port) == LINK_DOWN)
                    {
                        f.last_ps = now_ps;
                        return f.port;
                    }
                }
                let port = if adaptive { least_queued(hops, rng, &queued) } else { hops[rng.below(n) as usize] };
                self.flowlets.insert(key, Flowlet { last_ps: now_ps, port });
                port
            }
        }
    }

    /// Bytes the state occupies (approximately: the hash maps' entries).
    pub fn memory_bytes(&self) -> usize {
        self.modes.len() * (1 + 8 + std::mem::size_of::<Option<RandomStream>>())
            + self.rr.len() * 16
            + self.flowlets.len() * 40
    }
}

/// What `queued` answers for a port whose link is down: more than any queue,
/// so that the least-queued choice avoids it while another next hop is up.
pub const LINK_DOWN: u64 = u64::MAX;

/// The port of `hops` with the fewest queued bytes; among equals, one drawn at random.
fn least_queued(hops: &[u16], rng: &mut RandomStream, queued: &impl Fn(u16) -> u64) -> u16 {
    let mut best = u64::MAX;
    let mut ties = 0u64;
    for &p in hops {
        let q = queued(p);
        if q < best {
            best = q;
            ties = 1;
        } else if q == best {
            ties += 1;
        }
    }
    let mut k = if ties > 1 { rng.below(ties) } else { 0 };
    for &p in hops {
        if queued(p) == best {
            if k == 0 {
                return p;
            }
            k -= 1;
        }
    }
    unreachable!("a least-queued port exists")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(mode: LbMode, gap: u64) -> Balancer {
        Balancer::new(&[Some(LoadBalancingConfig { mode, flowlet_gap_ps: gap })], 7)
    }

    const HOPS: [u16; 4] = [3, 5, 6, 9];

    #[test]
    fn spray_random_uses_every_port_about_equally() {
        let mut b = one(LbMode::SprayRandom, 0);
        let mut counts = HashMap::new();
        for i in 0..40_000u64 {
            *counts.entry(b.choose(0, 1, 42, &HOPS, i, |_| 0)).or_insert(0u32) += 1;
        }
        assert_eq!(counts.len(), 4);
        for (_, c) in counts {
            // Binomial std-dev ~87; 4 sigma.
            assert!((c as i64 - 10_000).abs() < 350, "{c}");
        }
    }

    #[test]
    fn spray_rr_cycles_each_flow_through_the_set() {
        let mut b = one(LbMode::SprayRr, 0);
        let seq: Vec<u16> = (0..8).map(|i| b.choose(0, 1, 42, &HOPS, i, |_| 0)).collect();
        let start = HOPS.iter().position(|&p| p == seq[0]).unwrap();
        for (i, &p) in seq.iter().enumerate() {
            assert_eq!(p, HOPS[(start + i) % 4], "{seq:?}");
        }
        // Another flow has its own position: the first flow's turn is kept.
        b.choose(0, 1, 43, &HOPS, 9, |_| 0);
        b.choose(0, 2, 42, &HOPS, 9, |_| 0);
        assert_eq!(b.choose(0, 1, 42, &HOPS, 10, |_| 0), HOPS[start % 4]);
    }

    #[test]
    fn flowlet_keeps_its_port_within_the_gap_and_may_change_after_it() {
        let gap = 50_000_000; // 50 us
        let mut b = one(LbMode::Flowlet, gap);
        let first = b.choose(0, 1, 42, &HOPS, 0, |_| 0);
        // Packets 10 us apart: one flowlet, one port.
        for i in 1..100u64 {
            assert_eq!(b.choose(0, 1, 42, &HOPS, i * 10_000_000, |_| 0), first);
        }
        // After gaps longer than 50 us the port is drawn again: over many
        // flowlets every port is used.
        let mut seen = std::collections::BTreeSet::new();
        let mut t = 1_000_000_000u64;
        for _ in 0..64 {
            t += gap + 1;
            seen.insert(b.choose(0, 1, 42, &HOPS, t, |_| 0));
        }
        assert_eq!(seen.len(), 4);
    }

    #[test]
    fn adaptive_takes_the_least_queued_port_and_breaks_ties_at_random() {
        let mut b = one(LbMode::Adaptive, 0);
        let q = |p: u16| match p {
            3 => 3000,
            5 => 1500,
            6 => 9000,
            _ => 1501,
        };
        for i in 0..100 {
            assert_eq!(b.choose(0, 1, i, &HOPS, i, q), 5);
        }
        let tie = |p: u16| if p == 3 || p == 9 { 0 } else { 100 };
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..100 {
            seen.insert(b.choose(0, 1, i, &HOPS, i, tie));
        }
        assert_eq!(seen, [3, 9].into_iter().collect());
    }

    #[test]
    fn adaptive_with_a_gap_decides_once_per_flowlet() {
        let mut b = one(LbMode::Adaptive, 1000);
        assert_eq!(b.choose(0, 1, 42, &HOPS, 0, |p| if p == 6 { 0 } else { 10 }), 6);
        // Port 6 is now the busiest, but the flowlet goes on.
        assert_eq!(b.choose(0, 1, 42, &HOPS, 500, |p| if p == 6 { 99 } else { 10 }), 6);
        // A new flowlet goes to the least queued port.
        assert_eq!(b.choose(0, 1, 42, &HOPS, 2000, |p| if p == 9 { 0 } else { 10 }), 9);
    }

    #[test]
    fn adaptive_leaves_a_port_whose_link_is_down_even_inside_a_flowlet() {
        let mut b = one(LbMode::Adaptive, 1000);
        let busy_but_up = |p: u16| if p == 6 { 0 } else { 1 << 40 };
        assert_eq!(b.choose(0, 1, 42, &HOPS, 0, busy_but_up), 6);
        // Port 6's link fails inside the flowlet: the next packet moves.
        let down6 = |p: u16| if p == 6 { LINK_DOWN } else { 1 << 40 };
        let moved = b.choose(0, 1, 42, &HOPS, 10, down6);
        assert_ne!(moved, 6);
        // Per packet, a down port is never taken while another is up, however full.
        let mut per_packet = one(LbMode::Adaptive, 0);
        for i in 0..100 {
            assert_ne!(per_packet.choose(0, 1, i, &HOPS, i, down6), 6);
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_choices() {
        let run = |seed| {
            let mut b =
                Balancer::new(&[Some(LoadBalancingConfig { mode: LbMode::SprayRandom, flowlet_gap_ps: 0 })], seed);
            (0..64).map(|i| b.choose(0, 1, 0, &HOPS, i, |_| 0)).collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn parameters_are_checked_against_the_mode() {
        let c = |mode, gap| LoadBalancingConfig { mode, flowlet_gap_ps: gap };
        assert!(c(LbMode::Flowlet, 0).validate("network.switch.load_balancing").is_err());
        let e = c(LbMode::SprayRr, 5).validate("network.switch.load_balancing").unwrap_err();
        assert!(e.to_string().contains("network.switch.load_balancing.flowlet_gap"), "{e}");
        assert!(c(LbMode::Adaptive, 0).validate("x").is_ok());
        assert!(c(LbMode::Flowlet, 1).validate("x").is_ok());
    }
}
