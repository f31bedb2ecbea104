//! Software prefetch: while one event runs, ask the CPU for the cache lines
//! the next events will read, so that their misses overlap with work instead
//! of stalling it one after the other.
//!
//! On a large fabric (a k=32 fat-tree's ports, wires and bins take 22 MB) a
//! packet-hop's state was last touched long before and misses the private
//! caches, and the misses were serialized: each was found only when the
//! handler reached it, and the later ones are named by the earlier ones (the
//! port names its wire, the wire the next node, the route there the next
//! egress port). After each event is taken out, the event loop reads the
//! next two events from the event queue (`EventQueue::upcoming`: the sorted
//! run, or past its end the earliest event of a lowest bucket small enough
//! to be sorted whole; nothing is settled or moved) and hints in two stages:
//!
//! 1. **two events ahead**: a `TxDone` gets its port's three lines, its
//!    wire's first line and its carried-traffic bin prefetched; a `Send` its
//!    source;
//! 2. **one event ahead** (whose lines stage 1 asked for one event earlier,
//!    so reading them is cheap now): for a `TxDone`, the frame's next hop,
//!    which its `Arrive` (usually the event right after) reads: the far
//!    node's first line and the egress port the route picks there, or at the
//!    frame's destination its flow's statistics; for a `Send`, the flow's
//!    creation counters, the host's first line and its egress port.
//!
//! The route stage 2 looks up for a `TxDone`'s frame is kept in a two-entry
//! memo ([`RouteMemo`], keyed by node, destination and flow hash: everything
//! the lookup reads), and the forwarding at the frame's `Arrive` takes the
//! port from it instead of looking the route up a second time (about 13 fewer
//! instructions per event at k=16 and k=32; hits at 94% and 90% of the
//! forwards). With the hints off the memo stays empty and the forwarding pays
//! one test.
//!
//! Each event gets each stage once (a `TxDone` schedules its `Arrive` in
//! front of the events it looked at, so they are looked at again). Static
//! indices that would cost a miss of their own to read (a port's wire and
//! far node, a node's first port) are copied into compact arrays. On
//! `fattree-k32-cbr` the next event is known at 96% of the steps and the
//! one after at 75%; an unknown one gets no hint.
//!
//! A prefetch is a hint: it never faults, changes no state a program can
//! read, and so cannot change a result (tests compare every output with the
//! hints on and off). The hints are on only above a world size at which the
//! per-hop state outgrows a private cache: below it the lines mostly hit and
//! the hints' instructions (about 90 per event) would be pure cost.

use super::{Event, Simulation};
use crate::ids::{NodeId, PortId, SourceId};
use crate::packet::Packet;

/// Asks the CPU to bring the cache line holding `p` into its first-level
/// cache. Never faults, whatever the address.
#[inline(always)]
fn line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint; it does not fault on any address and
    // changes no architectural state.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetches cache lines `first .. first + lines` of element `i` of `v`.
/// Without a bounds check: an index past the end names an address that is
/// harmless to prefetch.
#[inline(always)]
pub(super) fn lines<T>(v: &[T], i: usize, first: usize, lines: usize) {
    let base = (v.as_ptr() as *const u8).wrapping_add(i.wrapping_mul(std::mem::size_of::<T>()));
    for l in first..first + lines {
        line(base.wrapping_add(64 * l));
    }
}

/// Prefetching is on when the state a packet-hop reads (ports, wires,
/// carried-traffic bins, nodes, flow statistics) takes at least this many
/// bytes: about a private second-level cache. A k=8 fat-tree has about
/// 0.4 MB (off: the hints cost 20% more instructions there and gain
/// nothing), a k=16 one about 3 MB (on: 7-10% less loop time).
pub(super) const ON_ABOVE_BYTES: usize = 1 << 20;

/// What prefetching needs besides the simulation's own state.
#[derive(Debug, Default)]
pub(super) struct Prefetch {
    /// Whether the hints are given (see [`ON_ABOVE_BYTES`]).
    pub(super) on: bool,
    /// The last events given stages 1 and 2 (see [`key`]).
    staged: [u64; 2],
    /// Compact copies of static indices whose originals sit in lines that
    /// would themselves miss. Per port: its channel and the node at the
    /// channel's far end.
    port_wire: Vec<(u32, u32)>,
    /// Per node: its first port index.
    first_port: Vec<u32>,
    /// The routes stage 2 looked up for the frames' next hops, for the
    /// forwarding at their `Arrive` (see [`RouteMemo`]).
    pub(super) routes: RouteMemo,
}

/// Entries of [`RouteMemo`]: between a `TxDone`'s stage 2 and its frame's
/// `Arrive`, stage 2 usually runs once more (for the event after the
/// `TxDone`, looked at when the `TxDone` is taken out and before it
/// schedules its `Arrive` in front).
const MEMO: usize = 2;

/// The last routes stage 2 looked up, keyed by everything the lookup reads:
/// `RoutingTable::route(node, dst, hash)` depends only on them and on the
/// routing tables, which do not change during a run. An entry is therefore
/// the full lookup's answer whenever its key matches, whatever happened to
/// the frame in between (a pipeline rewriting its destination or hash gives
/// another key). Only routes that exist are kept; multicast destinations are
/// never looked up.
#[derive(Debug, Clone, Copy)]
pub(super) struct RouteMemo {
    /// Per entry: `node << 32 | dst` ([`u64::MAX`]: empty), the hash, the port.
    key: [u64; MEMO],
    hash: [u64; MEMO],
    out: [u16; MEMO],
    /// The entry written next (oldest first).
    next: usize,
}

impl Default for RouteMemo {
    fn default() -> Self {
        RouteMemo { key: [u64::MAX; MEMO], hash: [0; MEMO], out: [0; MEMO], next: 0 }
    }
}

impl RouteMemo {
    #[inline(always)]
    fn key(node: NodeId, dst: NodeId) -> u64 {
        (node.0 as u64) << 32 | dst.0 as u64
    }

    /// Remembers that the route from `node` towards `dst` for `hash` is `out`.
    #[inline(always)]
    fn put(&mut self, node: NodeId, dst: NodeId, hash: u64, out: u16) {
        let i = self.next;
        self.key[i] = Self::key(node, dst);
        self.hash[i] = hash;
        self.out[i] = out;
        self.next = (i + 1) % MEMO;
    }

    /// The remembered route from `node` towards `dst` for `hash`, if any.
    #[inline(always)]
    pub(super) fn get(&self, node: NodeId, dst: NodeId, hash: u64) -> Option<u16> {
        let k = Self::key(node, dst);
        (0..MEMO).find(|&i| self.key[i] == k && self.hash[i] == hash).map(|i| self.out[i])
    }
}

/// Identifies a `TxDone` or `Send` for [`Prefetch::staged`] (`u64::MAX`:
/// neither). A port has one `TxDone` pending at a time and a source one
/// `Send`, so the same key twice in a row is the same event.
#[inline(always)]
fn key(ev: Event) -> u64 {
    match ev {
        Event::TxDone(p) => p.0 as u64,
        Event::Send(s) => 1 << 32 | s.0 as u64,
        _ => u64::MAX,
    }
}

impl Simulation {
    /// Bytes of the state a packet-hop reads, for [`ON_ABOVE_BYTES`].
    fn hop_state_bytes(&self) -> usize {
        use std::mem::size_of_val;
        size_of_val(&self.ports[..])
            + size_of_val(&self.channels[..])
            + self.carried.link_bytes()
            + size_of_val(&self.nodes[..])
            + size_of_val(&self.flows[..])
    }

    /// Turns prefetching on for a world whose per-hop state outgrows a
    /// private cache; called once the world is built.
    pub(super) fn setup_prefetch(&mut self) {
        self.set_prefetch(self.hop_state_bytes() >= ON_ABOVE_BYTES);
    }

    /// Whether the event loop gives prefetch hints.
    pub fn prefetching(&self) -> bool {
        self.prefetch.on
    }

    /// Turns the prefetch hints on or off whatever the world's size, for
    /// tests and benchmarks: results are the same either way. By default
    /// they are on for worlds with at least [`ON_ABOVE_BYTES`] of per-hop
    /// state.
    pub fn set_prefetch(&mut self, on: bool) {
        self.prefetch = Prefetch { on, staged: [u64::MAX; 2], ..Default::default() };
        if on {
            let far = |p: &crate::network::Port| self.channels[p.channel.idx()].to_node.0;
            self.prefetch.port_wire = self.ports.iter().map(|p| (p.channel.0, far(p))).collect();
            self.prefetch.first_port = self.nodes.iter().map(|n| n.first_port).collect();
        }
    }

    /// Hints for the two events after the one just taken out, if the event
    /// queue's sorted run holds them (see the module documentation).
    #[inline(always)]
    pub(super) fn prefetch_next(&mut self) {
        if let Some(ev) = self.queue.upcoming(1) {
            let k = key(ev);
            if k != self.prefetch.staged[0] {
                self.prefetch.staged[0] = k;
                match ev {
                    Event::TxDone(p) => self.prefetch_port(p),
                    Event::Send(s) => lines(&self.sources, s.idx(), 0, 2),
                    _ => {}
                }
            }
        }
        let Some(ev) = self.queue.upcoming(0) else { return };
        let k = key(ev);
        if k == self.prefetch.staged[1] {
            return;
        }
        self.prefetch.staged[1] = k;
        match ev {
            Event::TxDone(p) => {
                let (Some(id), Some(&(_, far))) = (self.ports[p.idx()].in_tx(), self.prefetch.port_wire.get(p.idx()))
                else {
                    return;
                };
                let pkt = self.pool.get(id);
                let (node, dst, hash) = (NodeId(far), pkt.dst, pkt.hash);
                if let Some(out) = self.prefetch_hop(node, pkt) {
                    self.prefetch.routes.put(node, dst, hash, out);
                }
            }
            Event::Send(s) => self.prefetch_send(s),
            _ => {}
        }
    }

    /// Stage 1 of a `TxDone`: its port's three lines, its wire's first line
    /// and its carried-traffic bin.
    #[inline(always)]
    fn prefetch_port(&self, p: PortId) {
        lines(&self.ports, p.idx(), 0, 3);
        if let Some(&(c, _)) = self.prefetch.port_wire.get(p.idx()) {
            lines(&self.channels, c as usize, 0, 1);
            self.carried.prefetch_link(c as usize);
        }
    }

    /// Stage 2 of a `TxDone`: what the frame's `Arrive` at `node` reads: the
    /// node's first line and the egress port its route picks there or, at
    /// its destination, its flow's statistics (two lines). Returns the port
    /// the route picks, if it was looked up.
    #[inline(always)]
    fn prefetch_hop(&self, node: NodeId, pkt: &Packet) -> Option<u16> {
        if pkt.dst == node {
            lines(&self.nodes, node.idx(), 0, 1);
            lines(&self.flows, pkt.flow.idx(), 0, 2);
            return None;
        }
        self.prefetch_egress(node, pkt.dst, pkt.hash)
    }

    /// Stage 2 of a `Send`: the flow's creation counters (its line 2), then
    /// the host's first line and its egress port.
    #[inline(always)]
    fn prefetch_send(&self, s: SourceId) {
        let src = &self.sources[s.idx()];
        lines(&self.flows, src.flow.idx(), 2, 1);
        self.prefetch_egress(src.src, src.dst, src.hash);
    }

    /// The route from `node` towards `dst` for `hash`: what
    /// `RoutingTable::route` returns, taken from the memo stage 2 filled
    /// when the hints are on and it holds the same key.
    #[inline(always)]
    pub(super) fn route(&self, node: NodeId, dst: NodeId, hash: u64) -> Option<u16> {
        if self.prefetch.on {
            if let Some(out) = self.prefetch.routes.get(node, dst, hash) {
                debug_assert_eq!(Some(out), self.routing.route(node.idx(), dst.idx(), hash));
                return Some(out);
            }
        }
        self.routing.route(node.idx(), dst.idx(), hash)
    }

    /// A node's first line and the three lines of the egress port its route
    /// towards `dst` picks for `hash`; returns that port.
    #[inline(always)]
    fn prefetch_egress(&self, node: NodeId, dst: NodeId, hash: u64) -> Option<u16> {
        lines(&self.nodes, node.idx(), 0, 1);
        if dst.0 & crate::network::multicast::MCAST_TAG != 0 {
            // A native multicast frame names its tree, not a routable host.
            return None;
        }
        let out = self.routing.route(node.idx(), dst.idx(), hash)?;
        if let Some(&first) = self.prefetch.first_port.get(node.idx()) {
            lines(&self.ports, first as usize + out as usize, 0, 3);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_memo_answers_only_for_the_same_node_destination_and_hash() {
        let mut m = RouteMemo::default();
        // Empty: nothing, not even for the all-zero key.
        assert_eq!(m.get(NodeId(0), NodeId(0), 0), None);
        m.put(NodeId(3), NodeId(7), 42, 5);
        assert_eq!(m.get(NodeId(3), NodeId(7), 42), Some(5));
        assert_eq!(m.get(NodeId(3), NodeId(7), 43), None, "another flow's hash");
        assert_eq!(m.get(NodeId(3), NodeId(8), 42), None, "another destination");
        assert_eq!(m.get(NodeId(4), NodeId(7), 42), None, "another node");
        assert_eq!(m.get(NodeId(7), NodeId(3), 42), None, "node and destination swapped");
        // The same node and destination, another hash and port: both kept.
        m.put(NodeId(3), NodeId(7), 43, 6);
        assert_eq!(m.get(NodeId(3), NodeId(7), 42), Some(5));
        assert_eq!(m.get(NodeId(3), NodeId(7), 43), Some(6));
        // A third route replaces the oldest.
        m.put(NodeId(9), NodeId(7), 42, 1);
        assert_eq!(m.get(NodeId(3), NodeId(7), 42), None);
        assert_eq!(m.get(NodeId(3), NodeId(7), 43), Some(6));
        assert_eq!(m.get(NodeId(9), NodeId(7), 42), Some(1));
    }
}
