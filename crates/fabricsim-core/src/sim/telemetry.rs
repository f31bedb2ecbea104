//! In-band network telemetry (INT) for RoCE rate controllers that read it
//! (`roce.cc: hpcc`, or `roce.int`): every switch egress that starts a RoCE
//! data frame appends one [`IntHop`] to the frame's stack (its queue's bytes
//! after the frame left it, the bytes the port has sent including the frame,
//! the time, the port's rate), as HPCC's switches do at dequeue. The
//! receiver's ACK or NACK carries a copy of the stack of the data packet it
//! answers, and the sender hands it to the controller (`AckFeedback::int`).
//!
//! The stacks live beside the packet pool, one per slot, only while some QP
//! uses telemetry; a slot's stack is set when a RoCE packet is created in it.
//! A path longer than [`MAX_HOPS`] switches keeps its first `MAX_HOPS` hops.

use super::Simulation;
use crate::ids::{PacketId, PortId};
use crate::network::topology::NodeKind;
use crate::packet::PacketKind;
use crate::transport::roce::rate::IntHop;
use crate::transport::roce::OP_DATA;
use crate::units::SimTime;

/// The most hops a stack holds (HPCC's header holds 5; a 3-tier fat-tree
/// path crosses 5 switches).
pub(super) const MAX_HOPS: usize = 8;

/// One packet's hops, first switch first.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct IntStack {
    n: u8,
    hops: [IntHop; MAX_HOPS],
}

impl IntStack {
    pub fn hops(&self) -> &[IntHop] {
        &self.hops[..self.n as usize]
    }
}

/// Telemetry state of a run.
#[derive(Debug, Default)]
pub(super) struct Telemetry {
    /// Some QP uses telemetry: switches stamp RoCE data frames.
    pub on: bool,
    stacks: Vec<IntStack>,
}

impl Telemetry {
    fn slot(&mut self, id: PacketId) -> &mut IntStack {
        if self.stacks.len() <= id.idx() {
            self.stacks.resize(id.idx() + 1, IntStack::default());
        }
        &mut self.stacks[id.idx()]
    }

    /// The stack of packet `id` (empty if it has none).
    pub fn stack(&self, id: PacketId) -> IntStack {
        self.stacks.get(id.idx()).copied().unwrap_or_default()
    }

    /// The hops of packet `id`.
    pub fn hops(&self, id: PacketId) -> &[IntHop] {
        self.stacks.get(id.idx()).map_or(&[], |s| s.hops())
    }

    /// A RoCE packet was created in slot `id`: it carries `stack` (an ACK's
    /// echo) or starts empty (data).
    pub fn set(&mut self, id: PacketId, stack: IntStack) {
        *self.slot(id) = stack;
    }
}

impl Simulation {
    /// A port started frame `id` at `at`: a switch stamps it if it is RoCE data.
    /// Out of line: runs only with telemetry on.
    #[inline(never)]
    pub(super) fn int_stamp(&mut self, pid: PortId, id: PacketId, at: SimTime) {
        let port = &self.ports[pid.idx()];
        let pkt = self.pool.get(id);
        if pkt.kind != PacketKind::Roce
            || pkt.flags & 7 != OP_DATA
            || self.nodes[port.node.idx()].kind != NodeKind::Switch
        {
            return;
        }
        let hop = IntHop {
            queue_bytes: port.total_queued_bytes,
            tx_bytes: port.tx_bytes + pkt.size as u64,
            timestamp: at,
            link_rate_bps: port.rate.bps(),
        };
        let s = self.int.slot(id);
        if (s.n as usize) < MAX_HOPS {
            s.hops[s.n as usize] = hop;
            s.n += 1;
        }
    }
}
