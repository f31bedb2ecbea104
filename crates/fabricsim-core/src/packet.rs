//! Packets and the packet pool.
//!
//! Packets live in a slab with a free list; events and queues carry
//! [`PacketId`]s. A freed slot is reused by the next allocation, so the pool's
//! size is the peak number of packets alive at once, not the number created.

use crate::ids::{FlowId, NodeId, PacketId};
use crate::units::SimTime;

/// What a packet is, for the models that care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketKind {
    /// A UDP datagram.
    Data = 0,
    /// A TCP segment; its fields are `seq`, `ack`, `len`, `flags`, `ts`, `ts_echo`.
    /// An ACK that carries SACK blocks reuses `seq`, `ts`, `len` and `aux`
    /// for them (see `sim/transport.rs`).
    Tcp = 1,
    /// A PFC PAUSE frame (MAC control): `class` is the priority, `seq` the
    /// pause quanta (0 = XON). Belongs to no flow (`flow` is [`CONTROL_FLOW`]).
    Pause = 2,
    /// A RoCEv2 packet: `flags` holds the opcode (see `transport::roce`),
    /// `seq` the PSN, `ack` the expected PSN of an ACK/NACK, `len` the payload.
    Roce = 3,
}

/// Placeholder flow of packets that belong to no flow (PFC frames).
pub const CONTROL_FLOW: FlowId = FlowId(u32::MAX);

/// A packet in flight. Sizes are whole Ethernet frames in bytes (header and FCS
/// included; preamble and inter-frame gap are added on the wire).
#[derive(Clone, Copy, Debug)]
pub struct Packet {
    pub flow: FlowId,
    pub src: NodeId,
    pub dst: NodeId,
    /// Frame size in bytes.
    pub size: u32,
    pub kind: PacketKind,
    /// Traffic class (egress queue index).
    pub class: u8,
    /// ECN codepoint of the IP header (RFC 3168): [`ECN_NOT_ECT`], [`ECN_ECT`] or [`ECN_CE`].
    pub ecn: u8,
    /// Flow hash of the 5-tuple, used by ECMP.
    pub hash: u64,
    /// Sequence number within the flow (TCP: first payload byte).
    pub seq: u64,
    /// TCP: cumulative acknowledgment.
    pub ack: u64,
    /// TCP: payload bytes.
    pub len: u32,
    /// TCP: segment kind and flags, see [`crate::transport::tcp::Segment`].
    pub flags: u8,
    /// TCP: timestamp value and echo.
    pub ts: SimTime,
    pub ts_echo: SimTime,
    /// A spare word for transport use (TCP: the last SACK edge of an ACK).
    /// It fits in what would be padding: the packet does not grow.
    pub aux: u32,
    /// TCP: the receive window an ACK advertises, in units of the
    /// receiver's window scale (RFC 7323); 0 when the window is fixed.
    pub wnd: u16,
    /// When the source created the packet.
    pub created: SimTime,
    /// When its first bit reached the current node (for cut-through).
    pub first_bit: SimTime,
    /// When it entered its current egress queue.
    pub enqueued: SimTime,
    /// Local port it arrived on at the current node ([`LOCAL_PORT`] if created
    /// there); buffer models that account per ingress port need it at release.
    pub in_port: u16,
    /// DSCP of the (inner) IP header, 0..=63; match-action stages may rewrite it.
    pub dscp: u8,
    /// Meter colour ([`COLOR_GREEN`], [`COLOR_YELLOW`], [`COLOR_RED`]), set by
    /// meters and read by colour-aware meters.
    pub color: u8,
    /// Bytes of tunnel headers currently added to `size` (0, or 50/70 for
    /// VXLAN over IPv4/IPv6); flow byte counters leave them out.
    pub encap: u8,
    /// VXLAN network identifier while tunnelled, [`NO_VNI`] otherwise.
    pub vni: u32,
}

impl Packet {
    /// A packet created at `src` at time `now`, not ECN-capable, with the
    /// transport fields zero (`ts` is `now`); set the others with struct
    /// update syntax: `Packet { seq, ..Packet::new(..) }`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn new(
        flow: FlowId,
        src: NodeId,
        dst: NodeId,
        size: u32,
        kind: PacketKind,
        class: u8,
        hash: u64,
        now: SimTime,
    ) -> Packet {
        Packet {
            flow,
            src,
            dst,
            size,
            kind,
            class,
            ecn: ECN_NOT_ECT,
            hash,
            seq: 0,
            ack: 0,
            len: 0,
            flags: 0,
            ts: now,
            ts_echo: SimTime::ZERO,
            aux: 0,
            wnd: 0,
            created: now,
            first_bit: now,
            enqueued: now,
            in_port: LOCAL_PORT,
            dscp: 0,
            color: COLOR_GREEN,
            encap: 0,
            vni: NO_VNI,
        }
    }

    /// Bytes of the frame its flow sent: the size without tunnel headers.
    #[inline]
    pub fn flow_bytes(&self) -> u64 {
        (self.size - self.encap as u32) as u64
    }
}

// The packet slab's memory per packet in flight: 104 bytes (99 bytes of
// fields, 8-byte aligned). TCP's `aux` word and `wnd` take 6 of the 7 spare bytes.
const _: () = assert!(std::mem::size_of::<Packet>() <= 104);

/// `Packet::vni` of a packet that is not tunnelled.
pub const NO_VNI: u32 = u32::MAX;

/// Meter colours (RFC 2697 / RFC 2698).
pub const COLOR_GREEN: u8 = 0;
pub const COLOR_YELLOW: u8 = 1;
pub const COLOR_RED: u8 = 2;

/// `Packet::in_port` of a packet created at the node that holds it.
pub const LOCAL_PORT: u16 = u16::MAX;

/// Not ECN-capable transport.
pub const ECN_NOT_ECT: u8 = 0;
/// ECN-capable transport (ECT(0)).
pub const ECN_ECT: u8 = 2;
/// Congestion experienced.
pub const ECN_CE: u8 = 3;

/// Before a push into a full vector, makes room for an eighth more (at least
/// 1,024 entries) instead of letting it double: the pool's slots and free
/// list are most of the memory that grows with the packets in flight, and a
/// doubled vector holds up to twice the peak. Growth stays geometric, so a
/// push is still amortized O(1); the reallocations of large vectors are
/// page remaps.
#[inline]
fn grow_by_an_eighth<T>(v: &mut Vec<T>) {
    if v.len() == v.capacity() {
        v.reserve_exact((v.len() / 8).max(1024));
    }
}

/// Slab of packets with a free list.
#[derive(Debug, Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    free: Vec<u32>,
    live: usize,
}

impl PacketPool {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            PacketId(i)
        } else {
            grow_by_an_eighth(&mut self.slots);
            self.slots.push(p);
            PacketId((self.slots.len() - 1) as u32)
        }
    }

    #[inline]
    pub fn free(&mut self, id: PacketId) {
        self.live -= 1;
        grow_by_an_eighth(&mut self.free);
        self.free.push(id.0);
    }

    #[inline]
    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id.idx()]
    }

    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id.idx()]
    }

    /// Bytes allocated for packet slots and the free list.
    pub fn memory_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Packet>() + self.free.capacity() * 4
    }

    /// Packets currently allocated.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Peak number of packets alive at once.
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_stays_compact() {
        // The pool holds every packet in flight; keep each well under 200 B.
        assert!(std::mem::size_of::<Packet>() <= 112, "{} B", std::mem::size_of::<Packet>());
    }
}
