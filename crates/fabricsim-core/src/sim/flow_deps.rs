//! Dependencies between the flows of an explicit flow list: TCP flows
//! (`tcp_flows`) or RDMA transfers (`rdma_flows`).
//!
//! A flow of a list may wait for other flows of the same list (`after`,
//! indices in the list): it opens once all of them have completed (a TCP
//! flow: its receiver has every byte; an RDMA transfer: its responder has
//! every byte; the flow's `app_complete_ps`), `compute_ps` after the last
//! completion, and never before its own `start_ps`. The dependencies are
//! checked when the world is built: an index outside the list, a flow that
//! waits for itself and a cycle are refused with the field named. A flow
//! whose dependencies never complete never opens.
//!
//! Flows are known by their flow id, so one mechanism serves both transports:
//! a waiting flow keeps the event that opens it (`TcpOpen` or `RoceOpen`).
//! The state is looked at only when a flow of a list completes, and only when
//! some flow list has dependencies: the event loop does not see it otherwise.

use super::{Event, Simulation};
use crate::error::ConfigError;
use crate::transport::apps::TcpFlowSpec;
use crate::units::SimTime;
use std::collections::BTreeMap;

/// A flow waiting for others.
#[derive(Debug)]
struct Waiting {
    /// Dependencies not completed yet.
    remaining: u32,
    /// Latest completion among the completed dependencies.
    ready: SimTime,
    compute: SimTime,
    earliest: SimTime,
    /// What opens it: `TcpOpen(connection)` or `RoceOpen(queue pair)`.
    open: Event,
}

/// Who waits for whom, by flow id.
#[derive(Debug, Default)]
pub(super) struct FlowDeps {
    /// Per flow that others wait for: those flows.
    dependents: BTreeMap<u32, Vec<u32>>,
    waiting: BTreeMap<u32, Waiting>,
}

impl FlowDeps {
    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.dependents.is_empty()
    }
}

/// Refuses dependencies that name no flow of the list or form a cycle;
/// `path` is the list's field path (`traffic[i].flows`).
pub(super) fn check(path: &str, flows: &[TcpFlowSpec]) -> Result<(), ConfigError> {
    let n = flows.len();
    for (j, f) in flows.iter().enumerate() {
        for (k, &d) in f.after.iter().enumerate() {
            let field = format!("{path}[{j}].after[{k}]");
            if d as usize >= n {
                return Err(ConfigError::new(field, format!("no flow {d} in this list (it has {n})")));
            }
            if d as usize == j {
                return Err(ConfigError::new(field, "a flow cannot wait for itself"));
            }
        }
    }
    // Kahn's algorithm: what is left once every flow whose dependencies can
    // all complete has been taken out lies on a cycle or waits for one.
    let mut remaining: Vec<usize> = flows.iter().map(|f| f.after.len()).collect();
    let mut dependents = vec![Vec::new(); n];
    for (j, f) in flows.iter().enumerate() {
        for &d in &f.after {
            dependents[d as usize].push(j);
        }
    }
    let mut ready: Vec<usize> = (0..n).filter(|&j| remaining[j] == 0).collect();
    let mut done = 0;
    while let Some(j) = ready.pop() {
        done += 1;
        for &w in &dependents[j] {
            remaining[w] -= 1;
            if remaining[w] == 0 {
                ready.push(w);
            }
        }
    }
    if done < n {
        // Name a flow on the cycle: walk back from a stuck flow along stuck
        // dependencies until a flow repeats.
        let mut j = (0..n).find(|&j| remaining[j] > 0).unwrap_or(0);
        let mut seen = vec![false; n];
        while !seen[j] {
            seen[j] = true;
            j = flows[j].after.iter().map(|&d| d as usize).find(|&d| remaining[d] > 0).unwrap_or(j);
        }
        let mut cycle = vec![j];
        let mut k = flows[j].after.iter().map(|&d| d as usize).find(|&d| remaining[d] > 0).unwrap_or(j);
        while k != j && cycle.len() <= n {
            cycle.push(k);
            k = flows[k].after.iter().map(|&d| d as usize).find(|&d| remaining[d] > 0).unwrap_or(j);
        }
        cycle.push(j);
        let shown: Vec<String> = cycle.iter().map(|c| c.to_string()).collect();
        return Err(ConfigError::new(
            format!("{path}[{j}].after"),
            format!("dependency cycle: flow {}", shown.join(" waits for ")),
        ));
    }
    Ok(())
}

impl Simulation {
    /// Flow `j` of a list whose first flow has the id `first` (the list's
    /// flows have consecutive ids) waits for the flows `spec.after` of the
    /// same list; `open` is the event that opens it.
    pub(super) fn flow_deps_add(&mut self, first: u32, j: usize, spec: &TcpFlowSpec, open: Event) {
        let t = first + j as u32;
        for &d in &spec.after {
            self.flow_deps.dependents.entry(first + d).or_default().push(t);
        }
        self.flow_deps.waiting.insert(
            t,
            Waiting {
                remaining: spec.after.len() as u32,
                ready: SimTime::ZERO,
                compute: SimTime(spec.compute_ps),
                earliest: SimTime(spec.start_ps),
                open,
            },
        );
    }

    /// TCP connection `t` completed at `at` (its flow: [`Self::flow_deps_complete`]).
    #[inline(never)]
    pub(super) fn flow_deps_complete_tcp(&mut self, t: u32, at: SimTime) {
        let flow = self.tcp_flow_id(t).0;
        self.flow_deps_complete(flow, at);
    }

    /// Flow `flow` completed at `at`: the flows that waited for it and
    /// nothing else open.
    #[inline(never)]
    pub(super) fn flow_deps_complete(&mut self, flow: u32, at: SimTime) {
        let Some(list) = self.flow_deps.dependents.remove(&flow) else { return };
        let now = self.now;
        for w in list {
            let Some(x) = self.flow_deps.waiting.get_mut(&w) else { continue };
            x.remaining -= 1;
            x.ready = x.ready.max(at);
            if x.remaining == 0 {
                let start = (x.ready + x.compute).max(x.earliest).max(now);
                let open = x.open;
                self.flow_deps.waiting.remove(&w);
                self.queue.push(start, open);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(after: &[u32]) -> TcpFlowSpec {
        TcpFlowSpec { src: "h0".into(), dst: "h1".into(), bytes: 1, start_ps: 0, after: after.to_vec(), compute_ps: 0 }
    }

    #[test]
    fn a_chain_and_a_diamond_are_accepted() {
        assert!(check("f", &[flow(&[]), flow(&[0]), flow(&[1])]).is_ok());
        assert!(check("f", &[flow(&[]), flow(&[0]), flow(&[0]), flow(&[1, 2])]).is_ok());
    }

    #[test]
    fn unknown_indices_self_waits_and_cycles_are_refused_with_the_field() {
        let e = check("traffic[0].flows", &[flow(&[]), flow(&[5])]).unwrap_err();
        assert_eq!(e.path, "traffic[0].flows[1].after[0]");
        let e = check("traffic[0].flows", &[flow(&[0])]).unwrap_err();
        assert_eq!(e.path, "traffic[0].flows[0].after[0]");
        let e = check("traffic[0].flows", &[flow(&[]), flow(&[0, 3]), flow(&[1]), flow(&[2])]).unwrap_err();
        assert!(e.path.starts_with("traffic[0].flows[") && e.path.ends_with("].after"), "{e}");
        assert!(e.message.contains("dependency cycle"), "{e}");
    }
}
