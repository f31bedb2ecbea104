//! Device power over the run (model: `power.rs`): the `power` table (energy
//! and mean power per device and time bin) and the `energy` table (per device,
//! the whole run).
//!
//! Bins are `stats.power_interval` wide and cover the run from 0 to its end
//! (drain included) or to the scenario's duration if the network went quiet
//! earlier; the last bin may be shorter. A bin's traffic is read from the
//! device's transmit counters when the first event at or after the bin's end is
//! about to run (so the counters hold exactly the events before it; no event is
//! added and nothing is done per packet): a frame counts in the bin where its
//! transmission ends.

use super::Simulation;
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::power::{PowerConfig, AJ_PER_J};
use crate::stats::{Column, Table, Value};
use crate::units::SimTime;
use std::collections::BTreeMap;

/// One device with a power model.
#[derive(Debug)]
struct Powered {
    node: u32,
    cfg: PowerConfig,
    ports: u64,
    /// Transmit counters at the start of the open bin.
    bytes: u64,
    frames: u64,
}

/// One closed bin of one device.
#[derive(Debug)]
struct Bin {
    start: u64,
    end: u64,
    node: u32,
    bytes: u64,
    frames: u64,
    static_aj: u128,
    dynamic_aj: u128,
}

/// Power state of the simulation.
#[derive(Debug)]
pub struct PowerState {
    devices: Vec<Powered>,
    interval: SimTime,
    /// End of the open bin (`SimTime::MAX` when no device has a power model,
    /// or bins are off): the event loop closes bins once it reaches it.
    pub next_boundary: SimTime,
    /// Start of the open bin.
    bin_start: SimTime,
    bins: Vec<Bin>,
}

impl Default for PowerState {
    fn default() -> Self {
        PowerState {
            devices: Vec::new(),
            interval: SimTime::ZERO,
            next_boundary: SimTime::MAX,
            bin_start: SimTime::ZERO,
            bins: Vec::new(),
        }
    }
}

impl Simulation {
    /// Finds the devices with a `power` section and sets the first bin boundary.
    pub(super) fn setup_power(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        let net = &sc.network;
        for (i, node) in self.nodes.iter().enumerate() {
            if node.kind != crate::network::NodeKind::Switch {
                continue;
            }
            let (cfg, path) = match net.switch_overrides.get(&node.name) {
                Some(c) => (c, format!("network.switch_overrides.{}.power", node.name)),
                None => (&net.switch, "network.switch.power".to_string()),
            };
            if let Some(p) = cfg.power {
                p.check(&path)?;
                self.power.devices.push(Powered {
                    node: i as u32,
                    cfg: p,
                    ports: node.num_ports as u64,
                    bytes: 0,
                    frames: 0,
                });
            }
        }
        self.power.interval = SimTime(sc.stats.power_interval_ps);
        if !self.power.devices.is_empty() && self.power.interval.0 > 0 {
            self.power.next_boundary = self.power.interval;
        }
        Ok(())
    }

    /// Transmit counters of node `node` (frame bytes, frames).
    fn tx_counters(&self, node: u32) -> (u64, u64) {
        let n = &self.nodes[node as usize];
        (0..n.num_ports).fold((0, 0), |(b, f), l| {
            let p = &self.ports[n.port(l).idx()];
            (b + p.tx_bytes, f + p.tx_packets)
        })
    }

    /// Closes the open bin at `end` for every powered device.
    fn close_power_bin(&mut self, end: SimTime) {
        let start = self.power.bin_start;
        let dt = (end - start).0;
        for k in 0..self.power.devices.len() {
            let (bytes, frames) = self.tx_counters(self.power.devices[k].node);
            let d = &mut self.power.devices[k];
            let (db, df) = (bytes - d.bytes, frames - d.frames);
            d.bytes = bytes;
            d.frames = frames;
            self.power.bins.push(Bin {
                start: start.0,
                end: end.0,
                node: d.node,
                bytes: db,
                frames: df,
                static_aj: d.cfg.static_aj(d.ports, dt),
                dynamic_aj: d.cfg.dynamic_aj(db, df),
            });
        }
        self.power.bin_start = end;
    }

    /// Closes every bin ending at or before `t`, the time of the event about to
    /// run (the events before it are all done).
    #[cold]
    #[inline(never)]
    pub(super) fn close_power_bins(&mut self, t: SimTime) {
        while self.power.next_boundary <= t {
            let end = self.power.next_boundary;
            self.close_power_bin(end);
            self.power.next_boundary = end + self.power.interval;
        }
    }

    /// Closes the last bin and adds the `power` and `energy` tables and summary entries.
    pub(super) fn power_outputs(&mut self, tables: &mut BTreeMap<String, Table>, s: &mut BTreeMap<String, Value>) {
        if self.power.devices.is_empty() {
            return;
        }
        let end = self.now.max(self.duration);
        self.close_power_bins(end);
        if end > self.power.bin_start || self.power.bins.is_empty() {
            self.close_power_bin(end);
        }
        self.power.next_boundary = SimTime::MAX;
        let bins = std::mem::take(&mut self.power.bins);
        let j = |aj: u128| aj as f64 / AJ_PER_J;
        let mut t = Table::default();
        t.push("time_ps", Column::U64(bins.iter().map(|b| b.start).collect()));
        t.push("end_ps", Column::U64(bins.iter().map(|b| b.end).collect()));
        t.push("node", Column::U32(bins.iter().map(|b| b.node).collect()));
        t.push("bytes", Column::U64(bins.iter().map(|b| b.bytes).collect()));
        t.push("frames", Column::U64(bins.iter().map(|b| b.frames).collect()));
        t.push("static_j", Column::F64(bins.iter().map(|b| j(b.static_aj)).collect()));
        t.push("dynamic_j", Column::F64(bins.iter().map(|b| j(b.dynamic_aj)).collect()));
        t.push("energy_j", Column::F64(bins.iter().map(|b| j(b.static_aj + b.dynamic_aj)).collect()));
        t.push(
            "watts",
            Column::F64(
                bins.iter()
                    .map(|b| {
                        // Attojoules per picosecond are microwatts.
                        let dt = b.end - b.start;
                        if dt > 0 {
                            (b.static_aj + b.dynamic_aj) as f64 / dt as f64 / 1e6
                        } else {
                            f64::NAN
                        }
                    })
                    .collect(),
            ),
        );
        tables.insert("power".into(), t);

        // Whole-run totals per device, summed exactly in attojoules.
        let mut totals: BTreeMap<u32, (u64, u64, u128, u128)> = BTreeMap::new();
        for b in &bins {
            let e = totals.entry(b.node).or_insert((0, 0, 0, 0));
            e.0 += b.bytes;
            e.1 += b.frames;
            e.2 += b.static_aj;
            e.3 += b.dynamic_aj;
        }
        let devs = &self.power.devices;
        let seconds = end.as_secs_f64();
        let tot = |d: &Powered| totals.get(&d.node).copied().unwrap_or((0, 0, 0, 0));
        let mut t = Table::default();
        t.push("node", Column::U32(devs.iter().map(|d| d.node).collect()));
        t.push("ports", Column::U32(devs.iter().map(|d| d.ports as u32).collect()));
        t.push("idle_w", Column::F64(devs.iter().map(|d| d.cfg.idle_uw as f64 * 1e-6).collect()));
        t.push("port_w", Column::F64(devs.iter().map(|d| d.cfg.port_uw as f64 * 1e-6).collect()));
        t.push("bit_pj", Column::F64(devs.iter().map(|d| d.cfg.bit_fj as f64 * 1e-3).collect()));
        t.push("packet_nj", Column::F64(devs.iter().map(|d| d.cfg.packet_fj as f64 * 1e-6).collect()));
        t.push("seconds", Column::F64(devs.iter().map(|_| seconds).collect()));
        t.push("bytes", Column::U64(devs.iter().map(|d| tot(d).0).collect()));
        t.push("frames", Column::U64(devs.iter().map(|d| tot(d).1).collect()));
        t.push("static_j", Column::F64(devs.iter().map(|d| j(tot(d).2)).collect()));
        t.push("dynamic_j", Column::F64(devs.iter().map(|d| j(tot(d).3)).collect()));
        t.push("energy_j", Column::F64(devs.iter().map(|d| j(tot(d).2 + tot(d).3)).collect()));
        t.push(
            "mean_w",
            Column::F64(
                devs.iter().map(|d| if seconds > 0.0 { j(tot(d).2 + tot(d).3) / seconds } else { f64::NAN }).collect(),
            ),
        );
        tables.insert("energy".into(), t);
        let all: u128 = totals.values().map(|v| v.2 + v.3).sum();
        s.insert("energy_j".into(), Value::Float(j(all)));
    }
}
