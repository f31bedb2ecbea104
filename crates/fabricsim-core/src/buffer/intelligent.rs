//! Cisco Nexus 9000-style "intelligent buffer": dynamic thresholds plus an
//! elephant trap (ETRAP), approximate fair drop (AFD) and dynamic packet
//! prioritization (DPP).
//!
//! - **Base admission** is the shared buffer with dynamic thresholds of
//!   [`super::shared`] (held by composition), plus an optional cap on the bytes
//!   queued per egress port (`port_max_bytes`, drop reason `port_buffer_full`).
//! - **ETRAP**: each egress port keeps a table of flows (by flow id, standing for
//!   the 5-tuple) in a `BTreeMap`. A flow's byte count grows with every arriving
//!   packet; once it reaches `elephant_bytes` the flow is an elephant. A flow not
//!   seen for longer than `etrap_age_ps` is aged out: its count restarts from 0
//!   and it is a mouse again.
//! - **AFD** per (egress port, class) queue: every `afd_period_ps` (updated
//!   lazily, at the first arrival after a period ends) each elephant's arrival
//!   bytes in the last period `M_i` are taken and the fair share is updated by
//!   `M_fair <- M_fair - a (Q_now - Q_ref) + b (Q_old - Q_ref)`, with `M_fair` in
//!   bytes per AFD period and queue lengths in units of `afd_queue_unit_bytes`
//!   (default 16 B), clamped to `[0, port rate x period]`, once per period that
//!   ended (the queue at period ends no packet reached taken as draining at the
//!   port's rate). If `k > 1` periods passed, `M_i` is the per-period average.
//!   An arriving elephant packet is
//!   dropped (reason `afd`) with probability `max(0, 1 - M_fair / M_i)`, or
//!   CE-marked instead when `afd_ecn` is on and the packet is ECT. Mice are
//!   never AFD-dropped.
//! - **DPP**: the first `dpp_packets` packets of a new flow, or of a flow idle
//!   longer than `dpp_age_ps`, are queued in class `dpp_class` (default: the
//!   highest class) of the egress port; they are not AFD-dropped.
//!
//! Randomness: one stream per switch from the seed and the node id.

use super::shared::{SharedBuffer, SharedParams};
use super::{AdmitRequest, Verdict};
use crate::error::ConfigError;
use crate::packet::ECN_ECT;
use crate::rng::RandomStream;
use crate::stats::DropReason;
use crate::units::{Rate, SimTime};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Resolved `buffer` section of an intelligent-buffer device.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IntelligentConfig {
    pub total_bytes: u64,
    #[serde(default = "d_cell")]
    pub cell_bytes: u32,
    #[serde(default)]
    pub per_packet_overhead_bytes: u32,
    #[serde(default = "d_alpha")]
    pub alpha: Vec<f64>,
    #[serde(default)]
    pub reserved_bytes_per_queue: u64,
    #[serde(default)]
    pub port_max_bytes: Option<u64>,
    #[serde(default = "d_elephant")]
    pub elephant_bytes: u64,
    #[serde(default = "d_etrap_age")]
    pub etrap_age_ps: u64,
    #[serde(default = "d_afd_period")]
    pub afd_period_ps: u64,
    #[serde(default = "d_qref")]
    pub queue_desired_bytes: u64,
    #[serde(default = "d_a")]
    pub afd_a: f64,
    #[serde(default = "d_b")]
    pub afd_b: f64,
    #[serde(default = "d_unit")]
    pub afd_queue_unit_bytes: u32,
    #[serde(default)]
    pub afd_ecn: bool,
    #[serde(default = "d_true")]
    pub dpp: bool,
    #[serde(default = "d_dpp_packets")]
    pub dpp_packets: u32,
    #[serde(default = "d_dpp_age")]
    pub dpp_age_ps: u64,
    #[serde(default)]
    pub dpp_class: Option<u8>,
}

fn d_cell() -> u32 {
    256
}
fn d_alpha() -> Vec<f64> {
    vec![1.0]
}
fn d_elephant() -> u64 {
    1_048_555
}
fn d_etrap_age() -> u64 {
    50_000_000
}
fn d_afd_period() -> u64 {
    25_000_000
}
fn d_qref() -> u64 {
    150_000
}
fn d_a() -> f64 {
    1.8
}
fn d_b() -> f64 {
    1.7
}
fn d_unit() -> u32 {
    16
}
fn d_true() -> bool {
    true
}
fn d_dpp_packets() -> u32 {
    120
}
fn d_dpp_age() -> u64 {
    5_000_000_000
}

#[derive(Clone, Debug, Default)]
struct FlowEntry {
    class: u8,
    /// Bytes since the flow (re)entered the trap.
    bytes: u64,
    elephant: bool,
    last_seen: SimTime,
    /// Packets steered by DPP since the flow was new or re-awakened.
    dpp_count: u32,
    /// Arrival bytes in the current AFD period and the last measurement.
    period_bytes: u64,
    m_i: f64,
}

#[derive(Clone, Debug)]
struct Afd {
    m_fair: f64,
    q_old: u64,
    last_update: SimTime,
}

/// What the AFD/DPP stage decided for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Admit { class: u8, mark: bool },
    Drop(DropReason),
}

#[derive(Clone, Debug)]
pub struct IntelligentBuffer {
    cfg: IntelligentConfig,
    classes: usize,
    dpp_class: u8,
    base: SharedBuffer,
    /// Frame bytes per (port, class) queue and per port.
    queue_bytes: Vec<u64>,
    port_bytes: Vec<u64>,
    flows: Vec<BTreeMap<u32, FlowEntry>>,
    afd: Vec<Afd>,
    /// Largest fair share per port: port rate x AFD period, in bytes.
    max_share: Vec<f64>,
    rng: RandomStream,
    /// Counters: AFD drops, AFD marks, DPP-steered packets, elephants detected.
    pub afd_drops: u64,
    pub afd_marks: u64,
    pub dpp_packets: u64,
    pub elephants: u64,
}

impl IntelligentBuffer {
    pub fn new(
        cfg: &IntelligentConfig,
        ports: usize,
        classes: usize,
        seed: u64,
        node: u32,
        path: &str,
    ) -> Result<IntelligentBuffer, ConfigError> {
        let p = SharedParams::from_config(
            cfg.total_bytes,
            cfg.cell_bytes,
            cfg.per_packet_overhead_bytes,
            &cfg.alpha,
            cfg.reserved_bytes_per_queue,
            None,
            None,
            None,
            ports,
            classes,
            path,
        )?;
        let err = |f: &str, m: &str| ConfigError::new(format!("{path}.{f}"), m.to_string());
        if cfg.afd_period_ps == 0 {
            return Err(err("afd_period", "must be > 0"));
        }
        if cfg.afd_queue_unit_bytes == 0 {
            return Err(err("afd_queue_unit", "must be > 0"));
        }
        if cfg.port_max_bytes == Some(0) {
            return Err(err("port_max", "must be > 0"));
        }
        for (field, gain) in [("afd_a", cfg.afd_a), ("afd_b", cfg.afd_b)] {
            if !(0.0..=1000.0).contains(&gain) {
                return Err(err(field, &format!("an AFD gain must be from 0 to 1000 (got {gain})")));
            }
        }
        let dpp_class = cfg.dpp_class.unwrap_or((classes - 1) as u8);
        if dpp_class as usize >= classes {
            return Err(ConfigError::new(
                format!("{path}.dpp_class"),
                format!("class {dpp_class} does not exist (classes are 0..{})", classes - 1),
            ));
        }
        Ok(IntelligentBuffer {
            cfg: cfg.clone(),
            classes,
            dpp_class,
            base: SharedBuffer::new(ports, classes, &p),
            queue_bytes: vec![0; ports * classes],
            port_bytes: vec![0; ports],
            flows: vec![BTreeMap::new(); ports],
            afd: vec![Afd { m_fair: f64::MAX, q_old: 0, last_update: SimTime::ZERO }; ports * classes],
            max_share: vec![f64::MAX; ports],
            rng: RandomStream::new(seed, "intelligent", node as u64),
            afd_drops: 0,
            afd_marks: 0,
            dpp_packets: 0,
            elephants: 0,
        })
    }

    /// Derives the random stream from the seed and the node id.
    pub fn reseed(&mut self, seed: u64, node: u32) {
        self.rng = RandomStream::new(seed, "intelligent", node as u64);
    }

    /// Sets the largest fair share of each port from its rate.
    pub fn set_port_rates(&mut self, rates: &[Rate]) {
        for (m, r) in self.max_share.iter_mut().zip(rates) {
            *m = r.bps() as f64 * self.cfg.afd_period_ps as f64 / 8e12;
        }
        for (q, a) in self.afd.iter_mut().enumerate() {
            a.m_fair = self.max_share[q / self.classes];
        }
    }

    /// Runs the AFD update of queue (port, class) if at least one period
    /// ended (the test inline: on most admissions none has).
    #[inline(always)]
    fn afd_update(&mut self, port: usize, class: u8, now: SimTime) {
        let q = port * self.classes + class as usize;
        if now.0 >= self.afd[q].last_update.0 + self.cfg.afd_period_ps {
            self.afd_period_end(port, class, now);
        }
    }

    /// The AFD update of queue (port, class) once one period or more ended.
    #[inline(never)]
    fn afd_period_end(&mut self, port: usize, class: u8, now: SimTime) {
        let q = port * self.classes + class as usize;
        let period = self.cfg.afd_period_ps;
        let a = &mut self.afd[q];
        let k = (now.0 - a.last_update.0) / period;
        a.last_update = SimTime(a.last_update.0 + k * period);
        let unit = self.cfg.afd_queue_unit_bytes as f64;
        let qref = self.cfg.queue_desired_bytes as f64 / unit;
        let (ga, gb) = (self.cfg.afd_a, self.cfg.afd_b);
        let max = self.max_share[port];
        // The controller runs once per period whether packets arrive or not. No packet
        // reached this queue after the first of the `k` periods, so at the later period
        // ends the queue was draining: at most the port's rate per period (`max`) below
        // the one before, and never below the queue now.
        let q_now = self.queue_bytes[q] as f64 / unit;
        let drain = max / unit;
        let mut q_prev = a.q_old as f64 / unit;
        let mut m = a.m_fair;
        let mut steps = k;
        while steps > 0 {
            let q_end = if steps == 1 { q_now } else { (q_prev - drain).max(q_now) };
            if q_end == q_now && q_prev == q_now && steps > 1 {
                // The queue stays at `q_now` for the remaining steps: each moves the
                // share by the same amount, so the clamped result is reached at once.
                m += (steps as f64) * (gb - ga) * (q_now - qref);
                m = m.clamp(0.0, max);
                break;
            }
            m = (m - ga * (q_end - qref) + gb * (q_prev - qref)).clamp(0.0, max);
            q_prev = q_end;
            steps -= 1;
        }
        a.m_fair = m;
        a.q_old = self.queue_bytes[q];
        let idle = self.cfg.etrap_age_ps.max(if self.cfg.dpp { self.cfg.dpp_age_ps } else { 0 });
        let table = &mut self.flows[port];
        table.retain(|_, f| now.0.saturating_sub(f.last_seen.0) <= idle);
        for f in table.values_mut().filter(|f| f.class == class) {
            f.m_i = f.period_bytes as f64 / k as f64;
            f.period_bytes = 0;
        }
    }

    #[inline]
    pub fn admit(&mut self, r: &AdmitRequest) -> Verdict {
        let port = r.out_port as usize;
        let now = r.now;
        self.afd_update(port, r.class, now);
        let cfg = &self.cfg;
        let b = r.bytes as u64;
        let entry = self.flows[port].entry(r.flow).or_insert_with(|| FlowEntry {
            class: r.class,
            last_seen: now,
            ..Default::default()
        });
        let idle = now.0 - entry.last_seen.0;
        if idle > cfg.etrap_age_ps {
            entry.bytes = 0;
            entry.elephant = false;
            entry.period_bytes = 0;
            entry.m_i = 0.0;
        }
        if idle > cfg.dpp_age_ps {
            entry.dpp_count = 0;
        }
        entry.last_seen = now;
        let was_elephant = entry.elephant;
        entry.bytes += b;
        entry.period_bytes += b;
        if !entry.elephant && entry.bytes >= cfg.elephant_bytes {
            entry.elephant = true;
            self.elephants += 1;
        }
        let mut class = r.class;
        let mut steered = false;
        if cfg.dpp && entry.dpp_count < cfg.dpp_packets {
            entry.dpp_count += 1;
            class = self.dpp_class;
            steered = true;
        }
        let mut mark = false;
        if was_elephant && !steered {
            let m_fair = self.afd[port * self.classes + r.class as usize].m_fair;
            let m_i = entry.m_i;
            if m_i > m_fair {
                let p = 1.0 - m_fair / m_i;
                if self.rng.next_open01() < p {
                    if cfg.afd_ecn && r.ecn == ECN_ECT {
                        mark = true;
                    } else {
                        self.afd_drops += 1;
                        return Verdict::Drop(DropReason::Afd);
                    }
                }
            }
        }
        if let Some(max) = cfg.port_max_bytes {
            if self.port_bytes[port] + b > max {
                return Verdict::Drop(DropReason::PortBufferFull);
            }
        }
        let req = AdmitRequest { class, ..*r };
        if let Verdict::Drop(reason) = self.base.admit(&req) {
            return Verdict::Drop(reason);
        }
        self.queue_bytes[port * self.classes + class as usize] += b;
        self.port_bytes[port] += b;
        if steered {
            self.dpp_packets += 1;
        }
        if mark {
            self.afd_marks += 1;
        }
        if class == r.class && !mark {
            Verdict::Admit
        } else {
            Verdict::Steer { class, mark }
        }
    }

    /// `r.class` is the queue class the packet was admitted to.
    #[inline]
    pub fn release(&mut self, r: &AdmitRequest) {
        self.base.release(r);
        let b = r.bytes as u64;
        self.queue_bytes[r.out_port as usize * self.classes + r.class as usize] -= b;
        self.port_bytes[r.out_port as usize] -= b;
    }

    /// Whether the shared base and the per-port and per-queue bytes are empty.
    pub fn settled(&self) -> bool {
        self.base.settled() && self.port_bytes.iter().all(|&b| b == 0) && self.queue_bytes.iter().all(|&b| b == 0)
    }

    pub fn base(&self) -> &SharedBuffer {
        &self.base
    }

    /// Current fair share of queue (port, class), bytes per AFD period.
    pub fn fair_share(&self, port: usize, class: usize) -> f64 {
        self.afd[port * self.classes + class].m_fair
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> IntelligentConfig {
        serde_json::from_str(r#"{"total_bytes": 10000000, "elephant_bytes": 3000, "dpp_packets": 2}"#).unwrap()
    }

    fn req(flow: u32, class: u8, now: u64) -> AdmitRequest {
        AdmitRequest {
            in_port: Some(1),
            out_port: 0,
            class,
            bytes: 1000,
            flow,
            now: SimTime(now),
            ecn: 0,
            queued: Default::default(),
        }
    }

    #[test]
    fn dpp_steers_the_first_packets_of_new_and_reawakened_flows() {
        let mut b = IntelligentBuffer::new(&cfg(), 2, 4, 1, 0, "b").unwrap();
        b.set_port_rates(&[Rate(100_000_000_000); 2]);
        assert_eq!(b.admit(&req(7, 0, 0)), Verdict::Steer { class: 3, mark: false });
        assert_eq!(b.admit(&req(7, 0, 10)), Verdict::Steer { class: 3, mark: false });
        assert_eq!(b.admit(&req(7, 0, 20)), Verdict::Admit);
        // Idle longer than the DPP age: new again.
        let later = 20 + 5_000_000_001;
        assert_eq!(b.admit(&req(7, 0, later)), Verdict::Steer { class: 3, mark: false });
        assert_eq!(b.dpp_packets, 3);
    }

    /// The fair share after `k` periods with no arrival, one step of the PI update
    /// per period, the queue draining at the port's rate down to what it holds now.
    fn stepped(m: f64, q_old: f64, q_now: f64, k: u64, max: f64) -> f64 {
        let (qref, drain) = (150_000.0 / 16.0, max / 16.0);
        let (mut m, mut prev) = (m, q_old);
        for j in 1..=k {
            let q = if j == k { q_now } else { (prev - drain).max(q_now) };
            m = (m - 1.8 * (q - qref) + 1.7 * (prev - qref)).clamp(0.0, max);
            prev = q;
        }
        m
    }

    #[test]
    fn the_fair_share_is_updated_every_period_an_idle_queue_included() {
        let mut c = cfg();
        c.dpp = false;
        let period = c.afd_period_ps;
        let max = 10e9 * period as f64 / 8e12; // 31,250 B per 25 us at 10 Gb/s
        for (m0, q_old_bytes, k) in [(0.0, 0u64, 10u64), (0.0, 0, 40), (5_000.0, 300_000, 10), (0.0, 2_000_000, 3)] {
            let mut b = IntelligentBuffer::new(&c, 1, 1, 1, 0, "b").unwrap();
            b.set_port_rates(&[Rate(10_000_000_000)]);
            b.afd[0].m_fair = m0;
            b.afd[0].q_old = q_old_bytes;
            // A mouse arriving `k` periods after the last update to an empty queue.
            b.admit(&req(9, 0, k * period));
            let want = stepped(m0, q_old_bytes as f64 / 16.0, 0.0, k, max);
            assert!(
                (b.fair_share(0, 0) - want).abs() < 1e-6,
                "m0 {m0} q_old {q_old_bytes} k {k}: {} vs {want}",
                b.fair_share(0, 0)
            );
        }
        // Ten idle periods at an empty queue raise the share by a tenth of Q_ref per period
        // (a - b = 0.1): 937.5 B each, not once.
        let mut b = IntelligentBuffer::new(&c, 1, 1, 1, 0, "b").unwrap();
        b.set_port_rates(&[Rate(10_000_000_000)]);
        b.afd[0].m_fair = 0.0;
        b.admit(&req(9, 0, 10 * period));
        assert!((b.fair_share(0, 0) - 9_375.0).abs() < 1e-6);
        // Long enough idle and the share is back at the port's rate.
        b.admit(&req(9, 0, 60 * period));
        assert_eq!(b.fair_share(0, 0), max);
    }

    #[test]
    fn elephants_are_detected_and_aged_out() {
        let mut c = cfg();
        c.dpp = false;
        let mut b = IntelligentBuffer::new(&c, 1, 1, 1, 0, "b").unwrap();
        for t in 0..3 {
            b.admit(&req(1, 0, t));
        }
        assert!(b.flows[0][&1].elephant);
        // Idle for longer than the ETRAP age period: a mouse again.
        b.admit(&req(1, 0, 2 + 50_000_001));
        assert!(!b.flows[0][&1].elephant);
        assert_eq!(b.elephants, 1);
    }
}
