//! Match-action pipelines of switches and NICs.
//!
//! A [`Pipeline`] is an ordered list of [`Stage`]s (parse, VNI match, ACL,
//! DSCP rewrite, LPM, MAC rewrite, connection tracking, meters, VXLAN
//! encap/decap; one file per kind, chosen by `kind` from [`STAGE_KINDS`]) run
//! by one or more [`Pipe`]s. Each pipe serves a group of the device's ports,
//! issues packets at a packet-rate capacity (`rate_pps` passes per second)
//! and adds a fixed latency. A packet costs `base_cost` passes plus the cost
//! of every stage it runs, so a pipe whose enabled features cost more than
//! its capacity forwards below line rate; the excess waits in per-port queues
//! in front of the pipe, served in round robin, and is dropped there when its
//! port's queue is full (`pipeline_queue_full`): every port of an overloaded
//! pipe is slowed, whether it enabled a feature or not.
//!
//! Using a pipeline (the simulation's glue is `sim/pipeline.rs`):
//!
//! 1. [`Pipeline::build`] from a [`PipelineConfig`] once the device's ports exist;
//! 2. for each packet, pick its pipe with [`Pipeline::pipe_of`]; if
//!    [`Pipe::can_issue`], run [`Pipeline::process`] (the stages' decisions and
//!    the packet's cost) and [`Pipe::issue`] it; otherwise [`Pipe::wait`] in
//!    the port's slot ([`Pipeline::slot_of`]);
//! 3. when the pipe's slot frees ([`Pipe::free_at`]), issue the next waiting
//!    packet the same way; a packet the stages kept leaves at
//!    [`Pipe::exit_time`].
//!
//! Stages see the packet and a [`Ctx`] (time, port, direction, inner 5-tuple,
//! connection), may rewrite packet fields (DSCP, class, colour, size and VNI
//! for VXLAN), and answer with a [`Step`]. Hosts have synthetic addresses
//! (see [`addr`]).

pub mod acl;
pub mod addr;
pub mod conntrack;
pub mod dscp;
pub mod lpm;
pub mod mac;
pub mod meter;
pub mod parse;
pub mod pipe;
pub mod stage;
pub mod vni;
pub mod vxlan;

use crate::error::ConfigError;
use crate::packet::{Packet, LOCAL_PORT};
use crate::stats::DropReason;
use crate::units::{Rate, SimTime, PS_PER_SEC};
pub use pipe::{Held, Pipe, PipeStats};
use serde::{Deserialize, Serialize};
pub use stage::{BuildEnv, Ctx, Dir, FiveTuple, Stage, Step, PROTO_TCP, PROTO_UDP, STAGE_KINDS};
use std::collections::BTreeMap;

fn one() -> u32 {
    1
}
fn one_pass() -> f64 {
    1.0
}
fn default_queue_packets() -> Option<u64> {
    Some(1024)
}

/// Resolved `pipeline` section of a switch or a host NIC.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineConfig {
    /// Number of pipes; ports are split into equal contiguous blocks unless `port_pipe` is given.
    #[serde(default = "one")]
    pub pipes: u32,
    /// Pipe of each port.
    #[serde(default)]
    pub port_pipe: Option<Vec<u16>>,
    /// Capacity of each pipe in passes per second (packets per second at cost 1).
    pub rate_pps: u64,
    /// Passes every packet costs, with or without stages.
    #[serde(default = "one_pass")]
    pub base_cost: f64,
    /// Fixed latency of a pass through a pipe.
    #[serde(default)]
    pub latency_ps: u64,
    /// Limit of each port's waiting queue in front of its pipe, in packets (`None`: no limit).
    #[serde(default = "default_queue_packets")]
    pub queue_packets: Option<u64>,
    /// Limit of each port's waiting queue in bytes (`None`: no limit).
    #[serde(default)]
    pub queue_bytes: Option<u64>,
    /// The device's cost (passes) of each stage kind, for stages that give none.
    #[serde(default)]
    pub costs: BTreeMap<String, f64>,
    /// The stages, in order; each an object with a `kind`.
    #[serde(default)]
    pub stages: Vec<serde_json::Value>,
}

/// The pipe of each of `ports` ports under `cfg`. Without `port_pipe` the
/// ports are split into `pipes` equal contiguous blocks; a device with fewer
/// ports than pipes (a preset on a small switch) has one pipe per port.
pub fn port_pipes(cfg: &PipelineConfig, ports: usize, path: &str) -> Result<Vec<u16>, ConfigError> {
    let pipes = cfg.pipes as usize;
    if pipes == 0 || pipes > u16::MAX as usize {
        return Err(ConfigError::new(format!("{path}.pipes"), format!("must be between 1 and 65535 (got {pipes})")));
    }
    match &cfg.port_pipe {
        Some(map) => {
            if map.len() != ports {
                return Err(ConfigError::new(
                    format!("{path}.port_pipe"),
                    format!("expected {ports} values (one per port), got {}", map.len()),
                ));
            }
            for (i, &p) in map.iter().enumerate() {
                if p as usize >= pipes {
                    return Err(ConfigError::new(
                        format!("{path}.port_pipe[{i}]"),
                        format!("pipe {p} does not exist (pipes are 0..{})", pipes - 1),
                    ));
                }
            }
            Ok(map.clone())
        }
        None => {
            let pipes = pipes.min(ports.max(1));
            Ok((0..ports).map(|p| (p * pipes / ports) as u16).collect())
        }
    }
}

/// The outcome of running a packet's stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Processed {
    /// Why a stage dropped it, if one did.
    pub drop: Option<DropReason>,
    /// Its cost in milli-passes (base cost plus the stages it ran).
    pub cost_milli: u64,
    /// How long the packet holds the pipe's issue slot (the cost at the pipe's rate).
    pub busy: SimTime,
    /// Latency from issue to exit (the pipe's plus the stages').
    pub latency: SimTime,
}

/// A device's match-action pipeline.
#[derive(Clone, Debug)]
pub struct Pipeline {
    pub stages: Vec<Stage>,
    pub pipes: Vec<Pipe>,
    port_pipe: Vec<u16>,
    /// Per port: its input slot in its pipe (the host's slot is the last).
    port_slot: Vec<u16>,
    rate_pps: u64,
    base_milli: u32,
    latency: SimTime,
    max_packets: u64,
    max_bytes: u64,
}

impl Pipeline {
    /// Builds the pipeline of a device with `ports` ports; `switch` devices
    /// run their stages on ingress only.
    pub fn build(
        cfg: &PipelineConfig,
        ports: usize,
        classes: usize,
        switch: bool,
        path: &str,
    ) -> Result<Pipeline, ConfigError> {
        let port_pipe = port_pipes(cfg, ports, path)?;
        if cfg.rate_pps == 0 {
            return Err(ConfigError::new(format!("{path}.rate"), "must be > 0 packets per second"));
        }
        for (k, &v) in &cfg.costs {
            if !STAGE_KINDS.contains(&k.as_str()) {
                return Err(ConfigError::new(
                    format!("{path}.costs.{k}"),
                    format!("unknown stage kind '{k}'; known kinds: {}", STAGE_KINDS.join(", ")),
                ));
            }
            stage::milli_passes(v, &format!("{path}.costs.{k}"))?;
        }
        if cfg.queue_packets == Some(0) || cfg.queue_bytes == Some(0) {
            return Err(ConfigError::new(format!("{path}.queue"), "a queue limit must be > 0 (or null for none)"));
        }
        let env = BuildEnv { ports, classes, costs: &cfg.costs, switch };
        let mut stages = Vec::with_capacity(cfg.stages.len());
        for (i, s) in cfg.stages.iter().enumerate() {
            stages.push(Stage::build(s, &format!("{path}.stages[{i}]"), &env)?);
        }
        let pipes = match cfg.port_pipe {
            Some(_) => cfg.pipes as usize,
            None => (cfg.pipes as usize).min(ports.max(1)),
        };
        let mut count = vec![0u16; pipes];
        let port_slot: Vec<u16> = port_pipe
            .iter()
            .map(|&p| {
                count[p as usize] += 1;
                count[p as usize] - 1
            })
            .collect();
        Ok(Pipeline {
            stages,
            // One slot per port of the pipe, plus one for packets the host sends.
            pipes: count.iter().map(|&n| Pipe::new(n as usize + 1)).collect(),
            port_pipe,
            port_slot,
            rate_pps: cfg.rate_pps,
            base_milli: stage::milli_passes(cfg.base_cost, &format!("{path}.base_cost"))?,
            latency: SimTime(cfg.latency_ps),
            max_packets: cfg.queue_packets.unwrap_or(u64::MAX),
            max_bytes: cfg.queue_bytes.unwrap_or(u64::MAX),
        })
    }

    /// Whether the pipeline can never change a packet's fate or timing: no
    /// stages, no latency, and every pipe issues at least as fast as its
    /// ports receive minimum-size (64 B) frames at line rate. Such a pipeline
    /// need not be simulated.
    pub fn is_transparent(&self, port_rates: &[Rate], overhead_bytes: u64) -> bool {
        if !self.stages.is_empty() || self.latency > SimTime::ZERO {
            return false;
        }
        let frame_bits = ((64 + overhead_bytes) * 8) as u128;
        (0..self.pipes.len()).all(|p| {
            // Line-rate packet rate of the pipe's ports, times 1000 (milli-passes per pass).
            let demand_milli_pps: u128 = port_rates
                .iter()
                .zip(&self.port_pipe)
                .filter(|(_, &pp)| pp as usize == p)
                .map(|(r, _)| r.0 as u128 * self.base_milli as u128 / frame_bits)
                .sum();
            demand_milli_pps <= self.rate_pps as u128 * 1000
        })
    }

    /// Pipe that serves local port `port` (packets sent by the host use port 0's).
    #[inline]
    pub fn pipe_of(&self, port: u16) -> usize {
        let p = if port == LOCAL_PORT { 0 } else { port as usize };
        self.port_pipe.get(p).copied().unwrap_or(0) as usize
    }

    /// Input slot of local port `port` in its pipe (packets sent by the host
    /// have the last slot of port 0's pipe).
    #[inline]
    pub fn slot_of(&self, port: u16) -> usize {
        if port == LOCAL_PORT {
            self.pipes[self.pipe_of(port)].slots() - 1
        } else {
            self.port_slot[port as usize] as usize
        }
    }

    /// The pipe of each port.
    pub fn port_pipe(&self) -> &[u16] {
        &self.port_pipe
    }

    /// Limits of each port's waiting queue (packets, bytes).
    pub fn limits(&self) -> (u64, u64) {
        (self.max_packets, self.max_bytes)
    }

    /// Time a packet of `milli` milli-passes holds a pipe's issue slot.
    #[inline]
    pub fn busy_time(&self, milli: u64) -> SimTime {
        let num = milli as u128 * (PS_PER_SEC / 1000) as u128;
        let d = self.rate_pps as u128;
        SimTime(num.div_ceil(d) as u64)
    }

    /// Runs the stages that apply to the packet, in order, until one drops it.
    #[inline]
    pub fn process(&mut self, pkt: &mut Packet, ctx: &Ctx) -> Processed {
        let mut milli = self.base_milli as u64;
        let mut latency = self.latency;
        let mut drop = None;
        for s in &mut self.stages {
            if !s.applies(ctx.port, ctx.dir) {
                continue;
            }
            let step = s.run(pkt, ctx);
            milli += s.cost_milli as u64 + step.extra_milli as u64;
            latency += s.latency;
            if step.drop.is_some() {
                drop = step.drop;
                break;
            }
        }
        Processed { drop, cost_milli: milli, busy: self.busy_time(milli), latency }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(json: &str) -> PipelineConfig {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn ports_split_into_equal_blocks_of_pipes() {
        let c = cfg(r#"{"pipes": 4, "rate_pps": 1}"#);
        assert_eq!(port_pipes(&c, 8, "p").unwrap(), vec![0, 0, 1, 1, 2, 2, 3, 3]);
        let c = cfg(r#"{"pipes": 2, "port_pipe": [1, 0, 1], "rate_pps": 1}"#);
        assert_eq!(port_pipes(&c, 3, "p").unwrap(), vec![1, 0, 1]);
        // Fewer ports than pipes: one pipe per port.
        let c = cfg(r#"{"pipes": 4, "rate_pps": 1}"#);
        assert_eq!(port_pipes(&c, 2, "p").unwrap(), vec![0, 1]);
        assert_eq!(Pipeline::build(&c, 2, 1, true, "p").unwrap().pipes.len(), 2);
        let e = port_pipes(&cfg(r#"{"pipes": 2, "port_pipe": [2, 0, 1], "rate_pps": 1}"#), 3, "p").unwrap_err();
        assert_eq!(e.path, "p.port_pipe[0]");
    }

    #[test]
    fn busy_time_is_cost_over_rate_rounded_up() {
        let p = Pipeline::build(&cfg(r#"{"rate_pps": 3000000000}"#), 2, 1, true, "p").unwrap();
        // 1 pass at 3 Gpps = 333.33 ps -> 334 ps; 2.5 passes = 833.33 -> 834.
        assert_eq!(p.busy_time(1000), SimTime(334));
        assert_eq!(p.busy_time(2500), SimTime(834));
    }

    #[test]
    fn a_pipe_at_line_rate_without_stages_is_transparent() {
        let g100 = Rate::from_gbps(100);
        // 100G with 64 B frames + 20 B overhead: 148,809,523.8 frames/s per port.
        let at = |pps: u64| {
            Pipeline::build(&cfg(&format!(r#"{{"rate_pps": {pps}}}"#)), 2, 1, true, "p")
                .unwrap()
                .is_transparent(&[g100, g100], 20)
        };
        assert!(at(297_619_048));
        assert!(!at(297_619_000));
        let with_stage =
            Pipeline::build(&cfg(r#"{"rate_pps": 1000000000000, "stages": [{"kind": "parse"}]}"#), 2, 1, true, "p")
                .unwrap();
        assert!(!with_stage.is_transparent(&[g100, g100], 20));
    }

    #[test]
    fn unknown_stage_kinds_list_the_known_ones() {
        let e =
            Pipeline::build(&cfg(r#"{"rate_pps": 1, "stages": [{"kind": "nat"}]}"#), 2, 1, true, "net.p").unwrap_err();
        assert_eq!(e.path, "net.p.stages[0].kind");
        assert!(e.message.contains("conntrack") && e.message.contains("'nat'"), "{}", e.message);
        let e = Pipeline::build(&cfg(r#"{"rate_pps": 1, "stages": [{"kind": "acl", "rulez": []}]}"#), 2, 1, true, "p")
            .unwrap_err();
        assert_eq!(e.path, "p.stages[0]");
        assert!(e.message.contains("rulez"), "{}", e.message);
        let e = Pipeline::build(&cfg(r#"{"rate_pps": 1, "costs": {"acll": 1}}"#), 2, 1, true, "p").unwrap_err();
        assert_eq!(e.path, "p.costs.acll");
        let e = Pipeline::build(
            &cfg(r#"{"rate_pps": 1, "stages": [{"kind": "parse", "direction": "tx"}]}"#),
            2,
            1,
            true,
            "p",
        )
        .unwrap_err();
        assert!(e.message.contains("ingress"), "{}", e.message);
    }
}
