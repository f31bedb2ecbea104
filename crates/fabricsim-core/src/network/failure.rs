//! Failures at given times: a link goes down (both directions), or a node
//! (all its links), and optionally comes back; routing reacts after a
//! detection delay. Or a link is impaired for a while: it runs at a lower
//! rate, or loses frames at random, and stays in the routes.
//!
//! While a link is down its wires deliver nothing: every frame that arrives
//! over it, and every frame that was on it when it failed, is dropped with
//! reason `link_down` (its transmitter keeps draining its queue onto the dead
//! wire, as a port whose peer vanished does until the routes move away).
//! `detect` after the failure the routes are recomputed without the link
//! (ECMP groups shrink; a destination reachable only through it becomes
//! unreachable, and packets towards it are dropped as `no_route`); `detect`
//! after the link comes back, they are recomputed with it. With `per_hop`,
//! the nodes farther from the link move theirs later, hop by hop, each
//! routing by what it knows while the others still route the old way.
//! Simulation side: `sim/failures.rs`.

use serde::{Deserialize, Serialize};

/// One failure (`failures[i]`): a link (`between`) or a whole node (`node`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LinkFailureConfig {
    /// The link's two end nodes, by name (either order).
    #[serde(default)]
    pub between: Option<[String; 2]>,
    /// A node whose links all fail (a switch or host failure).
    #[serde(default)]
    pub node: Option<String>,
    /// Which of the parallel links between them, counted from 0 in topology order.
    #[serde(default)]
    pub nth: u32,
    /// When the link goes down.
    pub at_ps: u64,
    /// When it comes back (`None`: never).
    #[serde(default)]
    pub until_ps: Option<u64>,
    /// How long routing takes to react to each change (detection and convergence).
    #[serde(default)]
    pub detect_ps: u64,
    /// How much later each hop away from the failed links a node moves its
    /// routes (the news of the change spreading switch by switch): a node
    /// `h` hops from the nearest end reacts at `detect + h * per_hop`.
    #[serde(default)]
    pub per_hop_ps: u64,
    /// Nodes' own delays after `detect` (by name), in place of the one
    /// `per_hop` gives them; the other nodes keep theirs (`h * per_hop`, or
    /// 0 without it).
    #[serde(default)]
    pub per_node_ps: std::collections::BTreeMap<String, u64>,
    /// An impairment instead of a failure: the links run at this rate
    /// (bit/s, below their own) from `at` to `until`.
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// An impairment instead of a failure: the links' wires lose each frame
    /// with this probability (beside their own random loss) from `at` to `until`.
    #[serde(default)]
    pub loss: Option<f64>,
}

impl LinkFailureConfig {
    /// Whether this entry impairs its links (`rate` or `loss`) rather than taking them down.
    pub fn is_impairment(&self) -> bool {
        self.rate_bps.is_some() || self.loss.is_some()
    }
}
