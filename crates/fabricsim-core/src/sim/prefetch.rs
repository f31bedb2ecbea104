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
//! next events from the event queue (`EventQueue::upcoming`: the sorted run,
//! or past its end the earliest event of a lowest bucket small enough to be
//! sorted whole; nothing is settled or moved) and hints in stages, each
//! reading only lines an earlier stage asked for:
//!
//! 1. lines the event names itself: a `TxDone` gets its port's three lines,
//!    its wire's first line and its carried-traffic bin; an `Arrive` its
//!    wire's first line; a `Send` its source;
//! 2. the frame the event moves: the packet in transmission (named by the
//!    port's first line) and the one it starts next (the head of the class
//!    strict priority serves next: class 0's is named by the port's third
//!    line; a higher class's queue line is asked for here and its head at
//!    stage 3, with arrivals' own hints only), or the wire's head (named by the wire's line, with
//!    the far node's first line); for a `Send`, the flow's creation
//!    counters, the host's first line and its egress port;
//! 3. where that frame goes next (read from its record): for a `TxDone`, the
//!    hop its `Arrive` will make; for an `Arrive`, the hop it makes now: the
//!    node's first line and the egress port the route picks there, or at the
//!    frame's destination its flow's statistics.
//!
//! **Two depths.** By default a `TxDone` or `Send` gets stage 1 two events
//! ahead and the rest as the next event, and an `Arrive` nothing: on the
//! open-loop fat-trees a frame's `Arrive` comes right after its `TxDone`
//! (nothing else is due in between), whose stage 3 has looked its hop up
//! one event earlier. On a fabric with many frames in flight (TCP) hundreds
//! of events run between the two, the lines come back evicted, and the
//! frame's packet, wire and next port missed again at its arrival. There,
//! **arrivals' own hints** give every event stage 1 three events ahead,
//! stage 2 two ahead and stage 3 as the next event (an event named later
//! gets stage 1 alone two ahead, stage 2 would wait for the line just asked
//! for, and stages 2 and 3 as the next event; an `Arrive` first named as the
//! next event was just scheduled by its `TxDone` and gets nothing). They
//! cost instructions on every event, so they are used only in worlds whose
//! per-hop state, flows aside, takes half a shared cache
//! ([`ARRIVALS_ABOVE_BYTES`]), and there only for the next window of 65,536
//! events after a window in which at least one event in eight was an
//! arrival named two events ahead ([`Prefetch::choose_depth`]; what they
//! cost and how many arrivals are named ahead on the benchmark fabrics:
//! docs/design-notes/prefetch-hints.md).
//!
//! The route stage 3 looks up is kept in a two-entry memo ([`RouteMemo`],
//! keyed by node, destination and flow hash: everything the lookup reads),
//! and the forwarding at the frame's `Arrive` takes the port from it instead
//! of looking the route up a second time; an arrival's stage 3 that finds
//! its route there does nothing more. Two entries, because between a
//! `TxDone`'s stage 3 and its `Arrive` stage 3 usually runs once more, for
//! the event after the `TxDone` (docs/design-notes/prefetch-hints.md). With
//! the hints off the memo stays empty and the forwarding pays one test.
//!
//! Each event gets each stage once: the last event given each stage is
//! remembered by a key (port, source or wire; one event of each is pending
//! at a time). Static indices that would cost a miss of their own to read
//! (a port's wire and far node, a node's first port) are copied into
//! compact arrays. An event `EventQueue::upcoming` cannot name gets no hint.
//!
//! A prefetch is a hint: it never faults, changes no state a program can
//! read, and so cannot change a result (tests compare every output with the
//! hints on and off). The hints are on only above a world size at which the
//! per-hop state outgrows a private cache: below it the lines mostly hit and
//! the hints' instructions would be pure cost (see
//! docs/design-notes/prefetch-hints.md). Whatever the world's size, they
//! are on, with arrivals' own, while the packets alive fill half a shared
//! cache ([`PACKETS_ABOVE_BYTES`]): then the frames themselves miss.

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

/// Prefetches every cache line `x` overlaps (a packet record of 104 bytes
/// spans two or three). Reads nothing.
#[inline(always)]
fn object<T>(x: &T) {
    let first = x as *const T as *const u8;
    let last = first.wrapping_add(std::mem::size_of::<T>() - 1);
    let mut p = first;
    while (p as usize) >> 6 <= (last as usize) >> 6 {
        line(p);
        p = p.wrapping_add(64);
    }
}

/// Prefetching is on when the state a packet-hop reads (ports, wires,
/// carried-traffic bins, nodes, flow statistics) takes at least this many
/// bytes: about a private second-level cache. A k=8 fat-tree has about
/// 0.4 MB (off), a k=16 one about 3 MB (on); what the hints cost and gain on
/// each is in docs/design-notes/prefetch-hints.md.
pub(super) const ON_ABOVE_BYTES: usize = 1 << 20;

/// Arrivals get hints of their own (three stages, from three events ahead)
/// when the state every hop reads (ports, wires, carried-traffic bins,
/// nodes) takes at least this many bytes: half a shared last-level cache,
/// beyond which a line evicted between a frame's `TxDone` and its `Arrive`
/// comes back from memory. A k=32 fat-tree has about 22 MB (on), a k=16 one
/// about 3 MB (off: its lines come back from the shared cache, so the extra
/// instructions buy nothing); the measurements are in
/// docs/design-notes/prefetch-hints.md.
pub(super) const ARRIVALS_ABOVE_BYTES: usize = 16 << 20;

/// The hints, with arrivals' own, are also on while the packets alive take
/// at least this many bytes of the packet pool, whatever the fabric's size:
/// half a shared last-level cache, as [`ARRIVALS_ABOVE_BYTES`]. A fabric
/// whose queues hold hundreds of thousands of frames (an all-to-all on a
/// k=8 fat-tree with deep shared buffers: 290,000 frames, 30 MB) misses on
/// the frames themselves at every dequeue and arrival. Checked before each
/// slice of events ([`Simulation::follow_packets`]); they go back to the
/// world's default when the packets alive fall below a quarter of it.
pub(super) const PACKETS_ABOVE_BYTES: usize = 16 << 20;

/// What prefetching needs besides the simulation's own state.
#[derive(Debug, Default)]
pub(super) struct Prefetch {
    /// Whether the hints are given (see [`ON_ABOVE_BYTES`]).
    pub(super) on: bool,
    /// Whether arrivals get hints of their own, three events ahead (see
    /// [`ARRIVALS_ABOVE_BYTES`]).
    arrivals: bool,
    /// Whether the world is large enough for `arrivals` (see
    /// [`Prefetch::choose_depth`]).
    arrivals_allowed: bool,
    /// Whether the hints follow the world (its size, and the packets alive:
    /// [`PACKETS_ABOVE_BYTES`]) rather than a setting forced by
    /// [`Simulation::set_prefetch`], and whether they are on now because of
    /// the packets alive.
    follows_world: bool,
    for_packets: bool,
    /// [`PACKETS_ABOVE_BYTES`], or a smaller threshold a test set (0: the default).
    packets_above: usize,
    /// Events left in the current window of [`WINDOW`] events, and the
    /// arrivals named two events ahead in it.
    window_left: u32,
    early_arrivals: u32,
    /// Keys (see [`key`]) of the last events given hints when named three,
    /// two and one events ahead; with arrivals' own hints, an event given
    /// stage 1 two events ahead has [`ONLY_STAGE1`] set in the second.
    staged: [u64; 3],
    /// Compact copies of static indices whose originals sit in lines that
    /// would themselves miss. Per port: its channel and the node at the
    /// channel's far end.
    port_wire: Vec<(u32, u32)>,
    /// Per node: its first port index.
    first_port: Vec<u32>,
    /// The routes stage 3 looked up for the frames' next hops, for the
    /// forwarding at their `Arrive` (see [`RouteMemo`]).
    pub(super) routes: RouteMemo,
}

/// Entries of [`RouteMemo`]: between a `TxDone`'s stage 3 and its frame's
/// `Arrive`, stage 3 usually runs once more (for the event after the
/// `TxDone`, looked at when the `TxDone` is taken out and before it
/// schedules its `Arrive` in front).
const MEMO: usize = 2;

/// The last routes stage 3 looked up, keyed by everything the lookup reads:
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

/// Identifies a `TxDone`, `Send` or `Arrive` for [`Prefetch::staged`]
/// (`u64::MAX`: none of them). A port has one `TxDone` pending at a time, a
/// source one `Send` and a wire one `Arrive`, so while an event is queued
/// its key names it alone.
#[inline(always)]
fn key(ev: Event) -> u64 {
    match ev {
        Event::TxDone(p) => p.0 as u64,
        Event::Send(s) => 1 << 32 | s.0 as u64,
        Event::Arrive(c) => 2 << 32 | c.0 as u64,
        _ => u64::MAX,
    }
}

/// Events over which [`Prefetch::choose_depth`] counts arrivals named ahead.
const WINDOW: u32 = 1 << 16;

impl Prefetch {
    /// At the end of each window of [`WINDOW`] events, in a world large
    /// enough for them, arrivals get hints of their own for the next window
    /// when at least one event in eight was an arrival named two events
    /// ahead. Where a frame's `Arrive` comes right after its `TxDone` (an
    /// open-loop fabric with little in flight), it is named only as the next
    /// event, and the `TxDone`'s hints have served it; where many frames are
    /// in flight (a TCP fabric) other events run in between, and it is named
    /// ahead.
    #[cold]
    #[inline(never)]
    fn choose_depth(&mut self) {
        self.arrivals = self.arrivals_allowed && self.early_arrivals >= WINDOW / 8;
        self.early_arrivals = 0;
        self.window_left = WINDOW;
    }
}

/// Marks the key in [`Prefetch::staged`]`[1]` of an event given stage 1
/// two events ahead instead of stage 2 (it still needs stage 2).
const ONLY_STAGE1: u64 = 1 << 63;

impl Simulation {
    /// Bytes of the state a packet-hop reads, for [`ON_ABOVE_BYTES`], and
    /// of the part of it every hop reads (all but the flows' statistics,
    /// read at the ends of a path), for [`ARRIVALS_ABOVE_BYTES`].
    fn hop_state_bytes(&self) -> (usize, usize) {
        use std::mem::size_of_val;
        let fabric = size_of_val(&self.ports[..])
            + size_of_val(&self.channels[..])
            + self.carried.link_bytes()
            + size_of_val(&self.nodes[..]);
        (fabric + size_of_val(&self.flows[..]), fabric)
    }

    /// Turns prefetching on for a world whose per-hop state outgrows a
    /// private cache; called once the world is built.
    pub(super) fn setup_prefetch(&mut self) {
        let (hop, fabric) = self.hop_state_bytes();
        self.set_prefetch(hop >= ON_ABOVE_BYTES);
        self.prefetch.arrivals_allowed = fabric >= ARRIVALS_ABOVE_BYTES && self.prefetch.on;
        self.prefetch.follows_world = true;
    }

    /// Before each slice of events: turns the hints on, with arrivals' own,
    /// while the packets alive take [`PACKETS_ABOVE_BYTES`] or more, and back
    /// to the world's default once they fall below a quarter of that (unless
    /// a setting was forced). Hints change no result, so neither does when
    /// this runs.
    #[inline(never)]
    pub(super) fn follow_packets(&mut self) {
        if !self.prefetch.follows_world {
            return;
        }
        let bytes = self.pool.live() * std::mem::size_of::<Packet>();
        let above = if self.prefetch.packets_above > 0 { self.prefetch.packets_above } else { PACKETS_ABOVE_BYTES };
        if !self.prefetch.for_packets && !self.prefetch.arrivals_allowed && bytes >= above {
            self.set_prefetch(true);
            self.prefetch.arrivals_allowed = true;
            self.prefetch.follows_world = true;
            self.prefetch.for_packets = true;
        } else if self.prefetch.for_packets && bytes < above / 4 {
            self.setup_prefetch();
        }
    }

    /// Replaces [`PACKETS_ABOVE_BYTES`] for this run (tests use a small one
    /// to see the hints follow the packets alive).
    pub fn set_prefetch_packets_above(&mut self, bytes: usize) {
        self.prefetch.packets_above = bytes.max(1);
    }

    /// Whether the hints are on now because of the packets alive (see
    /// [`PACKETS_ABOVE_BYTES`]).
    pub fn prefetching_for_packets(&self) -> bool {
        self.prefetch.for_packets
    }

    /// Whether the event loop gives prefetch hints.
    pub fn prefetching(&self) -> bool {
        self.prefetch.on
    }

    /// Whether arrivals may get prefetch hints of their own (the world is
    /// large enough, see [`ARRIVALS_ABOVE_BYTES`]); they are used in the
    /// windows of events whose traffic asks for them.
    pub fn prefetching_arrivals(&self) -> bool {
        self.prefetch.arrivals_allowed
    }

    /// Turns the hints on, with arrivals' own hints or without them,
    /// whatever the world's size (tests and benchmarks; results are the same
    /// either way).
    pub fn set_prefetch_arrivals(&mut self, arrivals: bool) {
        self.set_prefetch(true);
        self.prefetch.arrivals_allowed = arrivals;
        self.prefetch.arrivals = arrivals;
    }

    /// Turns the prefetch hints on (without arrivals' own hints) or off
    /// whatever the world's size, for tests and benchmarks: results are the
    /// same either way. By default they are on for worlds with at least
    /// [`ON_ABOVE_BYTES`] of per-hop state, with arrivals' own hints from
    /// [`ARRIVALS_ABOVE_BYTES`].
    pub fn set_prefetch(&mut self, on: bool) {
        let packets_above = self.prefetch.packets_above;
        self.prefetch =
            Prefetch { on, staged: [u64::MAX; 3], window_left: WINDOW, packets_above, ..Default::default() };
        if on {
            let far = |p: &crate::network::Port| self.channels[p.channel.idx()].to_node.0;
            self.prefetch.port_wire = self.ports.iter().map(|p| (p.channel.0, far(p))).collect();
            self.prefetch.first_port = self.nodes.iter().map(|n| n.first_port).collect();
        }
    }

    /// Hints for the events after the one just taken out, if the event
    /// queue names them (see the module documentation).
    #[inline(always)]
    pub(super) fn prefetch_next(&mut self) {
        self.prefetch.window_left -= 1;
        if self.prefetch.window_left == 0 {
            self.prefetch.choose_depth();
        }
        if self.prefetch.arrivals {
            return self.prefetch_next_with_arrivals();
        }
        // A `TxDone` or `Send`: stage 1 one event before stage 2 and 3.
        if let Some(ev) = self.queue.upcoming(1) {
            let k = key(ev);
            if k != u64::MAX && k != self.prefetch.staged[1] {
                self.prefetch.staged[1] = k;
                if let Event::Arrive(_) = ev {
                    self.prefetch.early_arrivals += 1;
                } else {
                    self.prefetch_stage1(ev);
                }
            }
        }
        if let Some(ev) = self.queue.upcoming(0) {
            let k = key(ev);
            if k != u64::MAX && k != self.prefetch.staged[2] {
                self.prefetch.staged[2] = k;
                match ev {
                    Event::TxDone(_) => self.prefetch_stage3(ev),
                    Event::Send(_) => self.prefetch_stage2(ev),
                    _ => {}
                }
            }
        }
    }

    /// [`Simulation::prefetch_next`] in a world large enough for arrivals'
    /// own hints: every event is meant to get stage 1 three events ahead,
    /// stage 2 two ahead and stage 3 as the next event. One named later (the
    /// queue named fewer events, or it was scheduled in front) gets stage 1
    /// alone when it is two ahead (stage 2 would wait for the line stage 1
    /// just asked for) and stages 2 and 3 when it is next; but an `Arrive`
    /// first named as the next event was scheduled by the `TxDone` just
    /// taken out, whose stage 3 asked for its hop already, and gets nothing.
    #[inline(always)]
    fn prefetch_next_with_arrivals(&mut self) {
        let (s1, s2) = (self.prefetch.staged[0], self.prefetch.staged[1]);
        if let Some(ev) = self.queue.upcoming(0) {
            let k = key(ev);
            if k != u64::MAX && k != self.prefetch.staged[2] {
                self.prefetch.staged[2] = k;
                if k == s2 {
                    self.prefetch_next_frame(ev);
                    self.prefetch_stage3(ev);
                } else if k | ONLY_STAGE1 == s2 || !matches!(ev, Event::Arrive(_)) {
                    self.prefetch_stage2(ev);
                    self.prefetch_stage3(ev);
                }
            }
        }
        if let Some(ev) = self.queue.upcoming(1) {
            let k = key(ev);
            if k != u64::MAX && k != s2 && k | ONLY_STAGE1 != s2 {
                self.prefetch.early_arrivals += matches!(ev, Event::Arrive(_)) as u32;
                if k == s1 {
                    self.prefetch.staged[1] = k;
                    self.prefetch_stage2(ev);
                } else {
                    self.prefetch.staged[1] = k | ONLY_STAGE1;
                    self.prefetch_stage1(ev);
                }
            }
        }
        if let Some(ev) = self.queue.upcoming(2) {
            let k = key(ev);
            if k != u64::MAX && k != self.prefetch.staged[0] {
                self.prefetch.staged[0] = k;
                self.prefetch_stage1(ev);
            }
        }
    }

    /// Stage 1 (two or three events ahead): lines named by the event itself.
    #[inline(always)]
    fn prefetch_stage1(&self, ev: Event) {
        match ev {
            Event::TxDone(p) => self.prefetch_port(p),
            Event::Arrive(c) => lines(&self.channels, c.idx(), 0, 1),
            Event::Send(s) => lines(&self.sources, s.idx(), 0, 2),
            _ => {}
        }
    }

    /// Stage 2 (two events ahead, or as the next event): the frame the event
    /// moves (named by the port's or wire's line stage 1 asked for), and a
    /// `Send`'s flow, host and egress port.
    #[inline(always)]
    fn prefetch_stage2(&self, ev: Event) {
        match ev {
            Event::TxDone(p) => {
                let port = &self.ports[p.idx()];
                if let Some(id) = port.in_tx() {
                    object(self.pool.get(id));
                }
                // The frame it starts next: class 0's head is named by the
                // port's third line; a higher class's by its queue's line in
                // the port's block of classes, asked for here and read at
                // stage 3 (with arrivals' own hints, one event later).
                match port.next_class_hint() {
                    0 => {
                        if let Some(id) = port.class_front(0) {
                            object(self.pool.get(id));
                        }
                    }
                    c if self.prefetch.arrivals => {
                        if let Some(q) = port.class_queue_hint(c) {
                            object(q);
                        }
                    }
                    _ => {}
                }
            }
            Event::Arrive(c) => {
                let ch = &self.channels[c.idx()];
                if let Some(&(_, id)) = ch.in_flight.front() {
                    object(self.pool.get(id));
                    lines(&self.nodes, ch.to_node.idx(), 0, 1);
                }
            }
            Event::Send(s) => self.prefetch_send(s),
            _ => {}
        }
    }

    /// Stage 3 (the next event): where its frame goes next (read from the
    /// frame stage 2 asked for): for a `TxDone` the next hop its `Arrive`
    /// will read, for an `Arrive` the egress port (or, at the destination,
    /// the flow's statistics); the route is kept in the memo.
    #[inline(always)]
    fn prefetch_stage3(&mut self, ev: Event) {
        match ev {
            Event::TxDone(p) => {
                let (Some(id), Some(&(_, far))) = (self.ports[p.idx()].in_tx(), self.prefetch.port_wire.get(p.idx()))
                else {
                    return;
                };
                self.prefetch_next_hop(NodeId(far), id);
            }
            Event::Arrive(c) => {
                let ch = &self.channels[c.idx()];
                let Some(&(_, id)) = ch.in_flight.front() else { return };
                let (node, pkt) = (ch.to_node, self.pool.get(id));
                if self.prefetch.routes.get(node, pkt.dst, pkt.hash).is_none() {
                    // Not looked up (and its lines asked for) at its `TxDone`.
                    self.prefetch_next_hop(node, id);
                }
            }
            _ => {}
        }
    }

    /// With arrivals' own hints, for a `TxDone` given stage 2 an event
    /// earlier: the frame its port starts next when that is in a class above
    /// 0, whose queue line stage 2 asked for (class 0's head was named at
    /// stage 2 itself). An event given stage 2 just now skips it: the line
    /// would not be there yet.
    #[inline(always)]
    fn prefetch_next_frame(&self, ev: Event) {
        if let Event::TxDone(p) = ev {
            let port = &self.ports[p.idx()];
            let c = port.next_class_hint();
            if c > 0 {
                if let Some(id) = port.class_front(c) {
                    object(self.pool.get(id));
                }
            }
        }
    }

    /// What frame `id`'s arrival at `node` will read (see
    /// [`Simulation::prefetch_hop`]); the route it looks up goes to the memo.
    #[inline(always)]
    fn prefetch_next_hop(&mut self, node: NodeId, id: crate::ids::PacketId) {
        let pkt = self.pool.get(id);
        let (dst, hash) = (pkt.dst, pkt.hash);
        if let Some(out) = self.prefetch_hop(node, pkt) {
            self.prefetch.routes.put(node, dst, hash, out);
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

    /// What the frame's `Arrive` at `node` reads (stage 3): the node's first
    /// line and the egress port its route picks there or, at its
    /// destination, its flow's statistics (two lines). Returns the port the
    /// route picks, if it was looked up.
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

    /// The route from `node` towards `dst` for `hash`, the one route
    /// function of every unicast frame a node sends or forwards: at a switch
    /// that balances other than by ECMP, its mode's choice
    /// (`network/balance.rs`); otherwise what `RoutingTable::route`
    /// returns, taken from the memo stage 3 filled when the hints are on and
    /// it holds the same key (the memo holds ECMP routes only).
    #[inline(always)]
    pub(super) fn route(&mut self, node: NodeId, dst: NodeId, hash: u64) -> Option<u16> {
        if self.lb.active && self.lb.balances(node.idx()) {
            return self.route_balanced(node, dst, hash);
        }
        if self.prefetch.on {
            if let Some(out) = self.prefetch.routes.get(node, dst, hash) {
                debug_assert_eq!(Some(out), self.routing.route(node.idx(), dst.idx(), hash));
                return Some(out);
            }
        }
        self.routing.route(node.idx(), dst.idx(), hash)
    }

    /// [`Simulation::route`] at a switch whose mode is not ECMP.
    #[inline(never)]
    fn route_balanced(&mut self, node: NodeId, dst: NodeId, hash: u64) -> Option<u16> {
        let hops = self.routing.next_hops(node.idx(), dst.idx());
        match hops.len() {
            0 => None,
            1 => Some(hops[0]),
            _ => {
                let first = self.nodes[node.idx()].first_port as usize;
                let (ports, pool, failures) = (&self.ports, &self.pool, &self.failures);
                let queued = |p: u16| {
                    let port = &ports[first + p as usize];
                    if failures.wire_down(port.channel) {
                        return crate::network::balance::LINK_DOWN;
                    }
                    port.total_queued_bytes + port.in_tx().map_or(0, |id| pool.get(id).size as u64)
                };
                Some(self.lb.choose(node.idx(), dst.0, hash, hops, self.now.0, queued))
            }
        }
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
    fn arrivals_get_their_own_hints_after_a_window_with_many_named_ahead() {
        let mut p = Prefetch { arrivals_allowed: true, window_left: WINDOW, ..Default::default() };
        p.early_arrivals = WINDOW / 8 - 1;
        p.choose_depth();
        assert!(!p.arrivals, "fewer than one event in eight");
        assert_eq!((p.early_arrivals, p.window_left), (0, WINDOW), "a new window");
        p.early_arrivals = WINDOW / 8;
        p.choose_depth();
        assert!(p.arrivals);
        p.choose_depth();
        assert!(!p.arrivals, "decided again for each window");
        p.arrivals_allowed = false;
        p.early_arrivals = WINDOW;
        p.choose_depth();
        assert!(!p.arrivals, "never in a world below the size");
    }

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
