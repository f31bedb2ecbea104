//! The network: nodes (hosts and switches), their egress ports, and the wires
//! (channels) between them.
//!
//! A full-duplex link is two [`Channel`]s, one per direction. Each channel is fed
//! by exactly one egress [`Port`] and keeps the packets on the wire in a FIFO of
//! `(arrival time, packet)`: since the propagation delay is constant, arrivals
//! leave the FIFO in order and the channel needs only one pending wake-up.

pub mod aqm;
pub mod arbitration;
pub mod balance;
pub mod failure;
pub mod fifo;
pub mod multicast;
pub mod pfc;
pub mod port;
pub mod routing;
pub mod shaper;
pub mod topology;
pub mod trimming;

use crate::buffer::Buffer;
use crate::ids::{NodeId, PacketId, PortId};
use crate::units::{Rate, SimTime};
pub use fifo::InlineFifo;
pub use port::Port;
use serde::{Deserialize, Serialize};
pub use topology::NodeKind;

/// When a switch starts forwarding a frame: once it is whole, or once its header is in.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Forwarding {
    #[default]
    StoreAndForward,
    CutThrough,
}

/// What kind of device a switch node is.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    /// An output-queued packet switch (the buffer models, schedulers, ECN, PFC).
    #[default]
    Switch,
    /// A broadcast fabric with its own adapters: every input reaches every
    /// output and receivers keep the frames addressed to them (see `sim/broadcast.rs`).
    Broadcast,
}

/// A host or a switch.
///
/// What a packet-hop reads (kind, forwarding, ports, MTU, then the buffer
/// model) comes first: with a static buffer, everything an admission reads
/// falls in the first cache line. The cut-through header and the latency
/// (read only when a cut-through frame may start early) follow the buffer
/// model; the name, read only for outputs, comes last.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Node {
    pub kind: NodeKind,
    pub forwarding: Forwarding,
    pub num_ports: u16,
    /// This node's egress ports are `first_port .. first_port + num_ports`.
    pub first_port: u32,
    /// Largest frame forwarded (`u32::MAX`: no limit).
    pub mtu: u32,
    pub buffer: Buffer,
    /// Cut-through: bytes received before forwarding starts (the header).
    pub cut_through_bytes: u32,
    /// Fixed forwarding latency (switch pipeline or host stack), added to every
    /// packet this node receives.
    pub latency: SimTime,
    pub name: String,
}

const _: () =
    assert!(std::mem::offset_of!(Node, buffer) == 16, "admission reads a node's buffer in its first cache line");

impl Node {
    #[inline]
    pub fn port(&self, local: u16) -> PortId {
        PortId(self.first_port + local as u32)
    }
}

/// One direction of a link.
///
/// Laid out for the two events of a packet-hop: its first cache line holds
/// everything `TxDone` and `Arrive` read (the wire's FIFO with its oldest
/// entry in place, the delays, the rate, the far end, whether the wire loses
/// packets); the second line holds the rest. A wire in a fabric of slow links
/// carries one frame at a time; faster ones spill into the FIFO's heap part.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Channel {
    /// Packets on the wire: `(arrival time, packet)`.
    pub in_flight: InlineFifo<(SimTime, PacketId), 1>,
    /// Propagation delay plus the receiving node's latency.
    pub arrival_delay: SimTime,
    pub delay: SimTime,
    pub rate: Rate,
    pub to_node: NodeId,
    /// Local index, at `to_node`, of the port on the same link (the ingress port).
    pub to_port_local: u16,
    /// Whether the wire may drop packets: at random (`loss > 0`), or because
    /// a failure is configured for its link (`sim/failures.rs`).
    pub impaired: bool,
    // Line 1.
    /// Random loss: probability and the channel's own random stream.
    pub loss: f64,
    pub loss_rng: Option<crate::rng::RandomStream>,
    pub link: u32,
    pub from_node: NodeId,
    pub from_port: PortId,
}

// One line for a hop's two events, one for the rest.
const _: () = assert!(std::mem::size_of::<Channel>() == 128, "a wire is two cache lines");
const _: () =
    assert!(std::mem::offset_of!(Channel, impaired) < 64, "an arrival reads `impaired` in the wire's first cache line");
