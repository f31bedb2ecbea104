//! Typed indices into the world's arenas.
//!
//! Every component lives in a `Vec` owned by the simulation and is referred to by
//! a small copyable id; there are no pointers between components and no globals.

macro_rules! typed_id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
    };
}

typed_id!(
    /// A host or a switch.
    NodeId
);
typed_id!(
    /// An egress port (one per node per attached link).
    PortId
);
typed_id!(
    /// A full-duplex link; its two directions are [`ChannelId`]s `2*l` and `2*l+1`.
    LinkId
);
typed_id!(
    /// One direction of a link: the wire from one egress port to the far node.
    ChannelId
);
typed_id!(
    /// A flow (one source-destination stream of one traffic entry).
    FlowId
);
typed_id!(
    /// A traffic source (an application that creates packets).
    SourceId
);
typed_id!(
    /// A packet slot in the packet pool.
    PacketId
);
