//! Packet trimming: a switch that has no room for a data packet forwards its
//! header instead of dropping it.
//!
//! When a switch's buffer model refuses a trimmable packet (a RoCE data
//! packet that has not been trimmed already), the switch cuts the frame to
//! `header_bytes`, marks it trimmed and offers the header to the same egress
//! port in class `class` (by default the highest class, served first under
//! strict priority). The header carries the packet's flow and PSN, so the
//! receiver learns of the loss one path delay after it happened and can ask
//! for that one packet again (`sim/roce.rs`); a header the buffer refuses as
//! well is dropped with the reason the data packet met. This is the
//! behaviour of NDP's and the Ultra Ethernet transport's switches (UEC 1.0,
//! packet trimming: the trimmed packet leaves with a "trimmed" DSCP for a
//! high-priority queue); htsim's `CompositeQueue` is its reference model.
//!
//! A trimmed packet stays the same packet: it is delivered (as a header) or
//! dropped, so packet conservation is unaffected; the payload bytes cut are
//! counted in the summary (`bytes_trimmed`).

use crate::error::ConfigError;
use crate::packet::{Packet, PacketKind};
use crate::transport::roce::{FLAG_TRIMMED, OP_DATA};
use serde::{Deserialize, Serialize};

/// `network.switch.trimming`: present turns trimming on for the switch.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TrimmingConfig {
    /// Size of a trimmed frame: the headers a receiver needs (Ethernet, IP,
    /// UDP, BTH and FCS fit in 64 B).
    #[serde(default = "default_header_bytes")]
    pub header_bytes: u32,
    /// Class (egress queue) trimmed headers join; `None`: the highest class.
    #[serde(default)]
    pub class: Option<u8>,
}

fn default_header_bytes() -> u32 {
    64
}

impl Default for TrimmingConfig {
    fn default() -> Self {
        TrimmingConfig { header_bytes: default_header_bytes(), class: None }
    }
}

/// The smallest trimmed frame: Ethernet's minimum frame.
pub const MIN_HEADER_BYTES: u32 = 64;

/// A switch's resolved trimming settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trimming {
    pub header_bytes: u32,
    pub class: u8,
}

impl Trimming {
    /// Checks `cfg` (at field path `path`) against the network's `classes`.
    pub fn new(cfg: &TrimmingConfig, classes: u8, path: &str) -> Result<Trimming, ConfigError> {
        if cfg.header_bytes < MIN_HEADER_BYTES {
            return Err(ConfigError::new(
                format!("{path}.header_bytes"),
                format!(
                    "must be at least {MIN_HEADER_BYTES} bytes (the minimum Ethernet frame), got {}",
                    cfg.header_bytes
                ),
            ));
        }
        let class = cfg.class.unwrap_or(classes - 1);
        if class >= classes {
            return Err(ConfigError::new(
                format!("{path}.class"),
                format!("must be a class of the network, 0..={}, got {class}", classes - 1),
            ));
        }
        Ok(Trimming { header_bytes: cfg.header_bytes, class })
    }

    /// Whether `pkt` may be trimmed: a RoCE data packet not trimmed yet,
    /// longer than a header.
    #[inline]
    pub fn applies(&self, pkt: &Packet) -> bool {
        pkt.kind == PacketKind::Roce
            && pkt.flags & 7 == OP_DATA
            && pkt.flags & FLAG_TRIMMED == 0
            && pkt.size > self.header_bytes
    }

    /// Cuts `pkt` to a header in the trimming class; returns the bytes cut.
    #[inline]
    pub fn trim(&self, pkt: &mut Packet) -> u32 {
        let cut = pkt.size - self.header_bytes;
        pkt.size = self.header_bytes;
        pkt.len = 0;
        pkt.flags |= FLAG_TRIMMED;
        pkt.class = self.class;
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{FlowId, NodeId};
    use crate::units::SimTime;

    fn data(size: u32, flags: u8) -> Packet {
        Packet {
            len: size - 62,
            flags,
            ..Packet::new(FlowId(0), NodeId(0), NodeId(1), size, PacketKind::Roce, 3, 7, SimTime::ZERO)
        }
    }

    #[test]
    fn a_data_packet_becomes_a_header_in_the_trimming_class() {
        let t = Trimming::new(&TrimmingConfig::default(), 8, "t").unwrap();
        assert_eq!(t, Trimming { header_bytes: 64, class: 7 });
        let mut p = data(4158, OP_DATA);
        assert!(t.applies(&p));
        assert_eq!(t.trim(&mut p), 4094);
        assert_eq!((p.size, p.len, p.class), (64, 0, 7));
        assert!(p.flags & FLAG_TRIMMED != 0);
        assert!(!t.applies(&p), "a header is never trimmed again");
    }

    #[test]
    fn control_packets_and_other_kinds_are_not_trimmed() {
        let t = Trimming::new(&TrimmingConfig::default(), 8, "t").unwrap();
        for op in [1u8, 2, 3] {
            assert!(!t.applies(&data(4158, op)), "opcode {op}");
        }
        let udp = Packet::new(FlowId(0), NodeId(0), NodeId(1), 1500, PacketKind::Data, 0, 1, SimTime::ZERO);
        assert!(!t.applies(&udp));
        assert!(!t.applies(&data(64, OP_DATA)), "nothing to cut from a frame of header size");
    }

    #[test]
    fn bad_settings_name_the_field_and_the_allowed_values() {
        let e =
            Trimming::new(&TrimmingConfig { header_bytes: 40, class: None }, 8, "network.switch.trimming").unwrap_err();
        assert!(e.to_string().contains("network.switch.trimming.header_bytes"), "{e}");
        let e = Trimming::new(&TrimmingConfig { header_bytes: 64, class: Some(4) }, 4, "network.switch.trimming")
            .unwrap_err();
        let s = e.to_string();
        assert!(s.contains("network.switch.trimming.class") && s.contains("0..=3"), "{s}");
    }
}
