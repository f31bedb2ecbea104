//! Which features observe or alter which step of the packet path.
//!
//! The packet path (`create_packet`, `start_next`, `on_arrive`, `deliver`,
//! `drop_packet`, a host's datapath, multicast replication) runs every
//! feature's code at the steps the feature registered for, and tests one
//! [`Hooks`] set per step while no feature did. The sets are assembled once,
//! when the world is built ([`Simulation::packet_hooks`]), from the features
//! that are on:
//!
//! | feature | steps |
//! |---|---|
//! | packet captures (`sim/pcap.rs`) | `tx_started` (also MAC control frames), `received` |
//! | per-packet latency (`sim/packet_latency.rs`) | `created`, `copied`, `host_time`, `delivered` |
//! | port shapers (`sim/port_shaper.rs`) | `tx_gate` (may hold the port), `tx_charge` |
//! | RoCE queue pairs waiting for room (`sim/roce.rs`) | `tx_started` |
//! | in-band telemetry on RoCE data (`sim/telemetry.rs`) | `tx_started` |
//! | multicast groups (`sim/multicast.rs`) | `delivered`, `dropped` |
//!
//! Within a step the features run in the order of that table's rows for
//! which the step lists them: at `tx_started`, RoCE wake-ups, then telemetry,
//! then captures.

use super::Simulation;

/// A set of features hooked into one step of the packet path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Hooks(u8);

impl Hooks {
    pub const NONE: Hooks = Hooks(0);
    pub const CAPTURE: Hooks = Hooks(1);
    pub const PACKET_LATENCY: Hooks = Hooks(2);
    pub const PORT_SHAPER: Hooks = Hooks(4);
    pub const ROCE_WAKE: Hooks = Hooks(8);
    pub const MULTICAST: Hooks = Hooks(16);
    pub const INT: Hooks = Hooks(32);

    /// Whether any feature hooked the step.
    #[inline(always)]
    pub fn any(self) -> bool {
        self.0 != 0
    }

    /// Whether `feature` hooked the step.
    #[inline(always)]
    pub fn has(self, feature: Hooks) -> bool {
        self.0 & feature.0 != 0
    }

    fn with(self, feature: Hooks, on: bool) -> Hooks {
        if on {
            Hooks(self.0 | feature.0)
        } else {
            self
        }
    }
}

/// The features hooked into each step of the packet path (module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct PacketHooks {
    /// A packet entered the pool (`create_packet`).
    pub created: Hooks,
    /// A multicast copy was made of a packet (`multicast_replicate`).
    pub copied: Hooks,
    /// A host component spent time on a packet (`host_record`).
    pub host_time: Hooks,
    /// A port is about to start its next frame and may be held (`start_next`).
    pub tx_gate: Hooks,
    /// A port started a data frame, before its buffer releases it (`start_next`).
    pub tx_charge: Hooks,
    /// A port started a frame and its `TxDone` is scheduled (`start_next`).
    pub tx_started: Hooks,
    /// A frame arrived from a wire, before the node handles it (`on_arrive`).
    pub received: Hooks,
    /// A packet reached its destination (`deliver`).
    pub delivered: Hooks,
    /// A packet of a flow was dropped (`drop_packet`).
    pub dropped: Hooks,
}

impl Simulation {
    /// The hook sets of the features that are on (module documentation).
    pub(super) fn packet_hooks(&self) -> PacketHooks {
        let capture = self.capture.on;
        let latency = self.pkt_lat.on;
        let shaper = self.port_shapers.components() != 0;
        let roce = !self.roce.wait.is_empty();
        let multicast = self.mcast.active;
        let int = self.int.on;
        let none = Hooks::NONE;
        PacketHooks {
            created: none.with(Hooks::PACKET_LATENCY, latency),
            copied: none.with(Hooks::PACKET_LATENCY, latency),
            host_time: none.with(Hooks::PACKET_LATENCY, latency),
            tx_gate: none.with(Hooks::PORT_SHAPER, shaper),
            tx_charge: none.with(Hooks::PORT_SHAPER, shaper),
            tx_started: none.with(Hooks::ROCE_WAKE, roce).with(Hooks::INT, int).with(Hooks::CAPTURE, capture),
            received: none.with(Hooks::CAPTURE, capture),
            delivered: none.with(Hooks::MULTICAST, multicast).with(Hooks::PACKET_LATENCY, latency),
            dropped: none.with(Hooks::MULTICAST, multicast),
        }
    }
}
