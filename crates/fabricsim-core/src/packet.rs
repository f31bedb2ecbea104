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
    /// A TCP segment; its fields are `seq`, `ack`, `len`, `flags` (the
    /// segment kind, [`Packet::tcp_segment`], in the low two bits), `ts`,
    /// `ts_echo`. An ACK that carries SACK blocks reuses `seq`, `ts`, `len`
    /// and `aux` for them (see `sim/transport.rs`); [`Packet::tcp_payload`]
    /// tells the payload.
    Tcp = 1,
    /// A PFC PAUSE frame (MAC control): `class` is the priority,
    /// [`Packet::pause_quanta`] the pause time (0 = XON). Belongs to no flow
    /// (`flow` is [`CONTROL_FLOW`]).
    Pause = 2,
    /// A RoCEv2 packet: `flags` holds the opcode (see `transport::roce`),
    /// [`Packet::psn`] the PSN, `ack` the expected PSN of an ACK/NACK, `len` the payload.
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
    /// Sequence number within the flow (TCP: first payload byte; a UDP
    /// datagram's or message's number); a PAUSE frame's quanta and a RoCE
    /// packet's PSN, read through [`Packet::pause_quanta`] and [`Packet::psn`].
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
    /// A TCP pure ACK's last SACK edge; on every other packet its flow's
    /// reordering number ([`Packet::reorder_number`]). It fits in what would
    /// be padding: the packet does not grow.
    pub aux: u32,
    /// TCP: the receive window an ACK advertises, in units of the
    /// receiver's window scale (RFC 7323); 0 when the window is fixed.
    /// RoCE: the entropy value a multipath sender gave a data packet
    /// (`roce.cc_params.entropies`), echoed by the ACK or NACK answering it.
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
    /// IP time to live (hop limit): [`DEFAULT_TTL`] at the source, one less
    /// after each switch; a switch drops a frame that arrives with 1 or less.
    pub ttl: u8,
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
            ttl: DEFAULT_TTL,
        }
    }

    /// Bytes of the frame its flow sent: the size without tunnel headers.
    #[inline]
    pub fn flow_bytes(&self) -> u64 {
        (self.size - self.encap as u32) as u64
    }
}

/// Typed views of the fields that mean different things per kind. Each view
/// reads its kind's fields only (checked in debug builds); the encoders and
/// decoders of the transports (`sim/transport.rs`, `sim/roce.rs`) write them.
impl Packet {
    /// A PFC PAUSE frame from `node` to its link peer for priority `class`,
    /// carrying `quanta` (0 = XON). It belongs to no flow.
    #[inline]
    pub fn pause_frame(node: NodeId, peer: NodeId, size: u32, class: u8, quanta: u16, now: SimTime) -> Packet {
        Packet { seq: quanta as u64, ..Packet::new(CONTROL_FLOW, node, peer, size, PacketKind::Pause, class, 0, now) }
    }

    /// A PAUSE frame's quanta (0 = XON); they travel in `seq`.
    #[inline]
    pub fn pause_quanta(&self) -> u16 {
        debug_assert_eq!(self.kind, PacketKind::Pause);
        self.seq as u16
    }

    /// A RoCEv2 packet's PSN; it travels in `seq`.
    #[inline]
    pub fn psn(&self) -> u64 {
        debug_assert_eq!(self.kind, PacketKind::Roce);
        self.seq
    }

    /// A selective-repeat NACK's report of what its receiver holds past the
    /// expected PSN (`ack`): the PSN whose arrival it answers, `top`, and a
    /// bitmap of the 64 PSNs ending there (bit i: PSN `top - i` held). The
    /// bitmap travels in `seq` and `top - ack` in `len`.
    #[inline]
    pub fn nack_report(&self) -> (u64, u64) {
        debug_assert_eq!(self.kind, PacketKind::Roce);
        (self.ack + self.len as u64, self.seq)
    }

    /// A TCP packet's segment kind, [`TCP_SYN`], [`TCP_SYN_ACK`], [`TCP_DATA`]
    /// or [`TCP_ACK`]: the low two bits of `flags`.
    #[inline]
    pub fn tcp_segment(&self) -> u8 {
        debug_assert_eq!(self.kind, PacketKind::Tcp);
        self.flags & TCP_SEGMENT_MASK
    }

    /// Payload bytes of a TCP data segment: its `len`; 0 for a SYN, SYN-ACK or
    /// pure ACK and for every other kind (a pure ACK lends `seq`, `ts`, `len`
    /// and `aux` to its SACK blocks, so `len` alone does not tell).
    #[inline]
    pub fn tcp_payload(&self) -> u32 {
        if self.kind == PacketKind::Tcp && self.flags & TCP_SEGMENT_MASK == TCP_DATA {
            self.len
        } else {
            0
        }
    }

    /// Whether the packet takes a reordering number in `aux` when its flow's
    /// source creates it: every packet but a TCP pure ACK, whose `aux` holds
    /// a SACK edge ([`crate::stats::Reordering`]).
    #[inline]
    pub fn numbered(&self) -> bool {
        self.kind != PacketKind::Tcp || self.flags & TCP_SEGMENT_MASK != TCP_ACK
    }

    /// The reordering number of a [`Packet::numbered`] packet; it travels in `aux`.
    #[inline]
    pub fn reorder_number(&self) -> u32 {
        debug_assert!(self.numbered());
        self.aux
    }

    /// Numbers a [`Packet::numbered`] packet for reordering statistics.
    #[inline]
    pub fn set_reorder_number(&mut self, n: u32) {
        debug_assert!(self.numbered());
        self.aux = n;
    }
}

/// The low bits of a TCP packet's `flags` that give its segment kind.
pub const TCP_SEGMENT_MASK: u8 = 3;
/// TCP segment kinds ([`Packet::tcp_segment`]).
pub const TCP_SYN: u8 = 0;
pub const TCP_SYN_ACK: u8 = 1;
pub const TCP_DATA: u8 = 2;
pub const TCP_ACK: u8 = 3;

// The packet slab's memory per packet in flight: 104 bytes (99 bytes of
// fields, 8-byte aligned). TCP's `aux` word and `wnd` take 6 of the 7 spare bytes.
const _: () = assert!(
    std::mem::size_of::<Packet>() <= 104,
    "a packet slot stays 104 bytes: the pool is most of the memory per packet in flight"
);

/// `Packet::vni` of a packet that is not tunnelled.
pub const NO_VNI: u32 = u32::MAX;

/// The TTL every source gives its packets: Linux's `net.ipv4.ip_default_ttl`
/// (and IPv6 hop limit) default of 64, which RDMA NICs also use for RoCEv2.
pub const DEFAULT_TTL: u8 = 64;

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

    #[test]
    fn the_views_read_each_kinds_own_fields() {
        let now = SimTime(7);
        let pause = Packet::pause_frame(NodeId(1), NodeId(2), 64, 3, 0xffff, now);
        assert_eq!(
            (pause.kind, pause.flow, pause.class, pause.pause_quanta()),
            (PacketKind::Pause, CONTROL_FLOW, 3, 0xffff)
        );
        let tcp = |flags: u8| Packet {
            flags,
            len: 1448,
            ..Packet::new(FlowId(0), NodeId(0), NodeId(1), 1514, PacketKind::Tcp, 0, 0, now)
        };
        let (data, ack, syn) = (tcp(TCP_DATA | 16), tcp(TCP_ACK | 1 << 5), tcp(TCP_SYN));
        assert_eq!((data.tcp_segment(), data.tcp_payload()), (TCP_DATA, 1448));
        // a pure ACK's `len` is a SACK edge, not payload, and its `aux` is not a reordering number
        assert_eq!((ack.tcp_segment(), ack.tcp_payload(), ack.numbered()), (TCP_ACK, 0, false));
        assert_eq!((syn.tcp_payload(), syn.numbered()), (0, true));
        let mut udp = Packet::new(FlowId(0), NodeId(0), NodeId(1), 1000, PacketKind::Data, 0, 0, now);
        udp.set_reorder_number(41);
        assert_eq!((udp.tcp_payload(), udp.reorder_number()), (0, 41));
        let roce = Packet { seq: 9, ..Packet::new(FlowId(0), NodeId(0), NodeId(1), 1000, PacketKind::Roce, 3, 0, now) };
        assert_eq!(roce.psn(), 9);
    }
}
