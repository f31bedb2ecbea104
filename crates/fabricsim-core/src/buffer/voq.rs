//! Deep-buffer VOQ switch (Broadcom Jericho / Arista 7280R-like).
//!
//! Every (ingress port, egress port, class) triple has its own virtual output
//! queue (VOQ). A packet is admitted when
//! 1. the device's total buffer has room for it (otherwise `pool_exhausted`), and
//! 2. its VOQ stays within the per-VOQ limit (otherwise `voq_limit`). The limit
//!    is given in bytes, or in time at the egress port's rate
//!    (`limit = rate x time / 8`, e.g. 5 ms at 100 Gb/s = 62.5 MB).
//!
//! The egress port keeps the VOQs of each class as per-ingress sub-queues and
//! serves competing VOQs of one class in packet round robin (see
//! `network/port.rs`): this stands for the egress credit scheduler granting
//! credits to the requesting VOQs in turn. The fabric, credit messages and the
//! small egress buffer are not modelled (an ideal, zero-latency credit loop).
//! Accounting is in frame bytes (no cells).

use super::{AdmitRequest, Verdict};
use crate::error::ConfigError;
use crate::stats::DropReason;
use crate::units::Rate;
use serde::{Deserialize, Serialize};

/// Resolved `buffer` section of a VOQ device.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VoqConfig {
    /// Whole packet buffer of the device.
    pub total_bytes: u64,
    /// Per-VOQ limit in bytes (exactly one of this and `voq_limit_ps`).
    #[serde(default)]
    pub voq_limit_bytes: Option<u64>,
    /// Per-VOQ limit as time at the egress port's rate.
    #[serde(default)]
    pub voq_limit_ps: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct VoqBuffer {
    ports: usize,
    classes: usize,
    total_limit: u64,
    limit_bytes: Option<u64>,
    limit_ps: Option<u64>,
    /// Per-VOQ limit of each egress port, in bytes.
    port_limit: Vec<u64>,
    /// Bytes of VOQ ((in, out), class); `in == ports` holds locally created packets.
    voq: Vec<u64>,
}

impl VoqBuffer {
    pub fn new(cfg: &VoqConfig, ports: usize, classes: usize, path: &str) -> Result<VoqBuffer, ConfigError> {
        if cfg.total_bytes == 0 {
            return Err(ConfigError::new(format!("{path}.size"), "must be > 0"));
        }
        match (cfg.voq_limit_bytes, cfg.voq_limit_ps) {
            (Some(0), None) | (None, Some(0)) => {
                return Err(ConfigError::new(format!("{path}.voq_limit"), "must be > 0"));
            }
            (Some(_), None) | (None, Some(_)) => {}
            _ => {
                return Err(ConfigError::new(
                    format!("{path}.voq_limit"),
                    "give exactly one limit, in bytes (e.g. 5MB) or in time at the port rate (e.g. 5ms)",
                ))
            }
        }
        let initial = cfg.voq_limit_bytes.unwrap_or(u64::MAX);
        Ok(VoqBuffer {
            ports,
            classes,
            total_limit: cfg.total_bytes,
            limit_bytes: cfg.voq_limit_bytes,
            limit_ps: cfg.voq_limit_ps,
            port_limit: vec![initial; ports],
            voq: vec![0; (ports + 1) * ports * classes],
        })
    }

    /// Converts a time limit to bytes with each egress port's rate.
    pub fn set_port_rates(&mut self, rates: &[Rate]) {
        if let (None, Some(ps)) = (self.limit_bytes, self.limit_ps) {
            for (l, r) in self.port_limit.iter_mut().zip(rates) {
                *l = ((r.bps() as u128 * ps as u128) / 8_000_000_000_000u128).max(1) as u64;
            }
        }
    }

    #[inline]
    fn index(&self, r: &AdmitRequest) -> usize {
        let i = r.in_port.map_or(self.ports, |p| (p as usize).min(self.ports));
        (i * self.ports + r.out_port as usize) * self.classes + r.class as usize
    }

    /// `held`: the bytes the whole buffer holds now (the [`super::Buffer`]'s books).
    #[inline]
    pub fn admit(&mut self, r: &AdmitRequest, held: u64) -> Verdict {
        let b = r.bytes as u64;
        if held + b > self.total_limit {
            return Verdict::Drop(DropReason::PoolExhausted);
        }
        let q = self.index(r);
        if self.voq[q] + b > self.port_limit[r.out_port as usize] {
            return Verdict::Drop(DropReason::VoqLimit);
        }
        self.voq[q] += b;
        Verdict::Admit
    }

    #[inline]
    pub fn release(&mut self, r: &AdmitRequest) {
        let q = self.index(r);
        self.voq[q] -= r.bytes as u64;
    }

    /// Whether every VOQ is empty.
    pub fn settled(&self) -> bool {
        self.voq.iter().all(|&b| b == 0)
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.total_limit
    }

    /// Per-VOQ limit of egress port `out`, in bytes.
    pub fn voq_limit(&self, out: usize) -> u64 {
        self.port_limit[out]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::{Buffer, BufferModel};
    use crate::units::SimTime;

    fn req(i: u16, o: u16, b: u32) -> AdmitRequest {
        AdmitRequest {
            in_port: Some(i),
            out_port: o,
            class: 0,
            bytes: b,
            flow: 0,
            now: SimTime::ZERO,
            ecn: 0,
            queued: Default::default(),
        }
    }

    #[test]
    fn voq_and_total_limits() {
        let cfg = VoqConfig { total_bytes: 5000, voq_limit_bytes: None, voq_limit_ps: Some(1_000_000) };
        let mut m = VoqBuffer::new(&cfg, 3, 1, "b").unwrap();
        // 1 us at 16 Gb/s = 2000 B per VOQ.
        m.set_port_rates(&[Rate(16_000_000_000); 3]);
        assert_eq!(m.voq_limit(0), 2000);
        let mut v = Buffer::new(BufferModel::Voq(m));
        assert_eq!(v.admit(req(1, 0, 1500)).0, Verdict::Admit);
        assert_eq!(v.admit(req(1, 0, 1000)).0, Verdict::Drop(DropReason::VoqLimit));
        assert_eq!(v.admit(req(2, 0, 1500)).0, Verdict::Admit);
        assert_eq!(v.admit(req(0, 1, 1500)).0, Verdict::Admit);
        assert_eq!(v.admit(req(0, 2, 1500)).0, Verdict::Drop(DropReason::PoolExhausted));
        v.release_request(req(1, 0, 1500));
        assert_eq!(v.admit(req(0, 2, 1500)).0, Verdict::Admit);
        assert_eq!(v.used_bytes(), 4500);
        for (i, o) in [(2, 0), (0, 1), (0, 2)] {
            v.release_request(req(i, o, 1500));
        }
        assert!(v.used_bytes() == 0 && v.model_settled());
        let bad = VoqConfig { total_bytes: 1, voq_limit_bytes: Some(1), voq_limit_ps: Some(1) };
        assert!(VoqBuffer::new(&bad, 1, 1, "b").unwrap_err().to_string().starts_with("b.voq_limit:"));
    }
}
