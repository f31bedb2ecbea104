//! VXLAN encapsulation and decapsulation (RFC 7348).
//!
//! Encapsulation wraps the inner Ethernet frame (its FCS is replaced by the
//! outer one) in an outer Ethernet header (14 B, +4 with an 802.1Q tag), an
//! outer IP header (IPv4 20 B, IPv6 40 B), a UDP header (8 B) and the VXLAN
//! header (8 B) (RFC 7348 section 5): the frame grows by 50 B over IPv4 and
//! 70 B over IPv6, and every byte counts on the wire. The packet records the
//! VNI and the bytes added (`Packet::vni`, `Packet::encap`); flow byte counts
//! stay those of the inner frame. Decapsulation removes them again.

use super::stage::{Ctx, Step};
use super::vni::VNI_MAX;
use crate::error::ConfigError;
use crate::packet::{Packet, NO_VNI};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outer {
    #[default]
    Ipv4,
    Ipv6,
}

/// Outer headers of a VXLAN packet: Ethernet 14 (+4 with a VLAN tag) + IP + UDP 8 + VXLAN 8.
pub fn overhead_bytes(outer: Outer, vlan: bool) -> u8 {
    let ip = match outer {
        Outer::Ipv4 => 20,
        Outer::Ipv6 => 40,
    };
    14 + 4 * vlan as u8 + ip + 8 + 8
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VxlanEncapConfig {
    pub vni: u32,
    #[serde(default)]
    pub outer: Outer,
    /// The outer Ethernet header carries an 802.1Q tag.
    #[serde(default)]
    pub outer_vlan: bool,
}

#[derive(Clone, Debug)]
pub struct VxlanEncap {
    vni: u32,
    overhead: u8,
    encapsulated: u64,
    already: u64,
}

impl VxlanEncap {
    pub fn new(cfg: VxlanEncapConfig, path: &str) -> Result<VxlanEncap, ConfigError> {
        if cfg.vni > VNI_MAX {
            return Err(ConfigError::new(format!("{path}.vni"), format!("a VNI is 24 bits (0..{VNI_MAX})")));
        }
        Ok(VxlanEncap {
            vni: cfg.vni,
            overhead: overhead_bytes(cfg.outer, cfg.outer_vlan),
            encapsulated: 0,
            already: 0,
        })
    }

    /// Outer header bytes this stage adds.
    pub fn overhead(&self) -> u8 {
        self.overhead
    }

    #[inline]
    pub fn run(&mut self, pkt: &mut Packet, _ctx: &Ctx) -> Step {
        if pkt.vni != NO_VNI {
            // Nested tunnels are not modelled: a tunnelled packet passes as it is.
            self.already += 1;
            return Step::PASS;
        }
        pkt.size += self.overhead as u32;
        pkt.encap = self.overhead;
        pkt.vni = self.vni;
        self.encapsulated += 1;
        Step::HIT
    }

    pub fn counters(&self, out: &mut Vec<(String, u64)>) {
        out.push(("encapsulated".into(), self.encapsulated));
        out.push(("already_tunnelled".into(), self.already));
    }
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VxlanDecapConfig {
    /// Decapsulate only this VNI (`None`: any).
    #[serde(default)]
    pub vni: Option<u32>,
}

#[derive(Clone, Debug)]
pub struct VxlanDecap {
    vni: Option<u32>,
    decapsulated: u64,
    passed: u64,
}

impl VxlanDecap {
    pub fn new(cfg: VxlanDecapConfig) -> VxlanDecap {
        VxlanDecap { vni: cfg.vni, decapsulated: 0, passed: 0 }
    }

    #[inline]
    pub fn run(&mut self, pkt: &mut Packet, _ctx: &Ctx) -> Step {
        if pkt.vni == NO_VNI || self.vni.is_some_and(|v| v != pkt.vni) {
            self.passed += 1;
            return Step::PASS;
        }
        pkt.size -= pkt.encap as u32;
        pkt.encap = 0;
        pkt.vni = NO_VNI;
        self.decapsulated += 1;
        Step::HIT
    }

    pub fn counters(&self, out: &mut Vec<(String, u64)>) {
        out.push(("decapsulated".into(), self.decapsulated));
        out.push(("not_tunnelled".into(), self.passed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outer_headers_add_50_bytes_over_ipv4_and_70_over_ipv6() {
        assert_eq!(overhead_bytes(Outer::Ipv4, false), 50);
        assert_eq!(overhead_bytes(Outer::Ipv6, false), 70);
        assert_eq!(overhead_bytes(Outer::Ipv4, true), 54);
    }
}
