//! Software prefetch: while one event runs, ask the CPU for the cache lines
//! the next events will read, so that their misses overlap with work instead
//! of stalling it one after the other.
//!
//! On a large fabric (a k=32 fat-tree's ports, wires and bins take several
//! MB) a packet-hop's state was last touched long before and misses the
//! private caches; the hop's misses were serialized, each found only when the
//! handler reached it (the port's lines, then the wire, then the next node's
//! egress port through its route). Two hints:
//!
//! - **the next event**: after an event is taken out, the event due next is
//!   read from the event queue's sorted run (no settling, nothing moved); a
//!   `TxDone` gets its port's three lines, its wire's first line and its
//!   carried-traffic bin prefetched, a `Send` its source;
//! - **the next hop**: at `TxDone`, the wire's far node and the route the
//!   frame takes there are known, and the `Arrive` that reads them is usually
//!   the next event: the egress port's three lines there (or, at the frame's
//!   destination, its flow's statistics) are prefetched.
//!
//! A prefetch is a hint: it never faults, changes no state a program can read,
//! and so cannot change a result. Everything here is off below a world size
//! at which the hot state fits the private caches (the cost, a few
//! instructions per event, would buy nothing there).

use super::{Event, Simulation};
use crate::ids::PortId;

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

/// Prefetches `lines` cache lines of element `i` of `v`, from its start.
/// Without a bounds check: an index past the end names an address that is
/// harmless to prefetch.
#[inline(always)]
pub(super) fn element<T>(v: &[T], i: usize, lines: usize) {
    let base = (v.as_ptr() as *const u8).wrapping_add(i.wrapping_mul(std::mem::size_of::<T>()));
    for l in 0..lines {
        line(base.wrapping_add(64 * l));
    }
}

/// Prefetching is on when the state a packet-hop reads (ports, wires,
/// carried-traffic bins, nodes, flow statistics) takes at least this many
/// bytes: about a private second-level cache. Below it the lines mostly hit
/// and the hints' instructions (about 50 per event) would be pure cost.
pub(super) const ON_ABOVE_BYTES: usize = 1 << 20;

/// How many events behind the one just taken out the next-event hint looks:
/// at 1 the hinted `TxDone` is often the very next event (its `Arrive` comes
/// first when the current event is a `TxDone`), too close for a miss to
/// complete; 2 was faster than 1, 3 and 4 on `fattree-k32-cbr`.
const AHEAD: usize = 2;

/// What prefetching needs besides the simulation's own state: compact copies
/// of two static indices whose originals sit in lines that would themselves
/// miss (a port's wire, a node's first port).
#[derive(Debug, Default)]
pub(super) struct Prefetch {
    /// Whether the hints are given (see [`ON_ABOVE_BYTES`]).
    pub(super) on: bool,
    /// Per port: its channel index.
    port_channel: Vec<u32>,
    /// Per node: its first port index.
    first_port: Vec<u32>,
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

    /// Turns prefetching on for a world whose per-hop state exceeds a
    /// private cache; called once the world is built.
    pub(super) fn setup_prefetch(&mut self) {
        self.set_prefetch(self.hop_state_bytes() >= ON_ABOVE_BYTES);
    }

    /// Whether the event loop gives prefetch hints.
    pub fn prefetching(&self) -> bool {
        self.prefetch.on
    }

    /// Turns the prefetch hints on or off, whatever the world's size (for
    /// tests and benchmarks: results are the same either way; by default they
    /// are on for worlds of at least [`ON_ABOVE_BYTES`] of per-hop state).
    pub fn set_prefetch(&mut self, on: bool) {
        self.prefetch.on = on;
        if on {
            self.prefetch.port_channel = self.ports.iter().map(|p| p.channel.0).collect();
            self.prefetch.first_port = self.nodes.iter().map(|n| n.first_port).collect();
        } else {
            self.prefetch.port_channel = Vec::new();
            self.prefetch.first_port = Vec::new();
        }
    }

    /// Prefetches what the event [`AHEAD`] places behind the one just taken out
    /// will read first, if the queue's sorted run holds it.
    #[inline(always)]
    pub(super) fn prefetch_next(&self) {
        let Some(ev) = self.queue.upcoming(AHEAD - 1) else { return };
        match ev {
            Event::TxDone(p) => self.prefetch_port(p),
            Event::Send(s) => element(&self.sources, s.idx(), 2),
            _ => {}
        }
    }

    /// A port's lines a `TxDone` reads (its three lines, then its wire's
    /// first line and carried-traffic bin).
    #[inline(always)]
    fn prefetch_port(&self, p: PortId) {
        element(&self.ports, p.idx(), 3);
        if let Some(&c) = self.prefetch.port_channel.get(p.idx()) {
            element(&self.channels, c as usize, 1);
            self.carried.prefetch_link(c as usize);
        }
    }

    /// At `TxDone`: what the frame's `Arrive` at `node` will read, its
    /// egress port there or, at its destination, its flow's statistics.
    #[inline(always)]
    pub(super) fn prefetch_hop(&self, node: crate::ids::NodeId, pkt: &crate::packet::Packet) {
        if pkt.dst == node {
            element(&self.flows, pkt.flow.idx(), 2);
            return;
        }
        if let Some(out) = self.routing.route(node.idx(), pkt.dst.idx(), pkt.hash) {
            if let Some(&first) = self.prefetch.first_port.get(node.idx()) {
                element(&self.ports, first as usize + out as usize, 3);
            }
        }
        element(&self.nodes, node.idx(), 1);
    }
}
