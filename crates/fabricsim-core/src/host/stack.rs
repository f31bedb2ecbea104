//! The software stages a host's cores run, their costs, and how packets are
//! batched (GSO/TSO on transmit, GRO on receive).
//!
//! A stage is written as an object with a `kind`, an optional `name`, and
//! its cost in each direction: `tx` and `rx`, each `{per_packet_ps,
//! per_byte_fs, per_ack_ps}`. Kinds:
//!
//! | kind | runs on | unit of `per_packet` |
//! |---|---|---|
//! | `tcp` | TCP packets | one skb (a GSO/GRO batch counts once); `per_ack` (if given) replaces `per_packet + per_byte` for a segment without payload |
//! | `udp` | UDP datagrams | one datagram |
//! | `driver` | every frame | one frame on receive and without TSO; one batch with TSO |
//! | `syscall` | application messages | one `send`/`recv` call (a message boundary: `message_size` bytes of a stream, one datagram, one ping-pong message) |
//! | any `pipeline/` stage kind | the packets the stage applies to | one skb; the stage also decides (drop, rewrite, VXLAN bytes, connection table) as in a NIC pipeline |
//!
//! Per-byte costs count the bytes of the (inner) Ethernet frames of the skb,
//! tunnel headers left out. A batch of `n` frames of `B` bytes in all costs
//! each skb-level stage `per_packet + per_byte x B` once; that is what GSO,
//! TSO and GRO save.

use crate::error::ConfigError;
use crate::pipeline::stage::{params, BuildEnv};
use crate::pipeline::Stage;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The CPU-only stage kinds (besides the match-action kinds of `pipeline/`).
pub const CPU_KINDS: [&str; 4] = ["tcp", "udp", "driver", "syscall"];

/// Resolved cost of a stage in one direction.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    #[serde(default)]
    pub per_packet_ps: u64,
    /// Femtoseconds per byte.
    #[serde(default)]
    pub per_byte_fs: u64,
    /// Cost of a TCP segment without payload, replacing the other two.
    #[serde(default)]
    pub per_ack_ps: Option<u64>,
}

impl Cost {
    /// Femtoseconds for `units` packets of `bytes` bytes in all.
    #[inline]
    pub fn fs(&self, units: u64, bytes: u64, pure_ack: bool) -> u128 {
        if pure_ack {
            if let Some(a) = self.per_ack_ps {
                return units as u128 * a as u128 * 1000;
            }
        }
        units as u128 * self.per_packet_ps as u128 * 1000 + bytes as u128 * self.per_byte_fs as u128
    }

    pub fn is_zero(&self) -> bool {
        self.per_packet_ps == 0 && self.per_byte_fs == 0 && self.per_ack_ps.map_or(true, |a| a == 0)
    }
}

/// What a software stage does.
#[derive(Clone, Debug)]
pub enum SoftKind {
    Tcp,
    Udp,
    Driver,
    Syscall,
    /// A match-action stage run in software.
    Pipeline(Box<Stage>),
}

/// Counters of one software stage.
#[derive(Clone, Copy, Debug, Default)]
pub struct SoftCounters {
    /// Units (skbs, frames, messages) the stage ran on, per direction (tx, rx).
    pub units: [u64; 2],
    /// CPU time the stage used, per direction, in femtoseconds.
    pub busy_fs: [u128; 2],
}

/// One software stage of a host's datapath.
#[derive(Clone, Debug)]
pub struct SoftStage {
    pub kind: SoftKind,
    pub name: String,
    /// Cost on transmit (index 0) and receive (index 1).
    pub cost: [Cost; 2],
    pub counters: SoftCounters,
}

impl SoftStage {
    pub fn kind_name(&self) -> &str {
        match &self.kind {
            SoftKind::Tcp => "tcp",
            SoftKind::Udp => "udp",
            SoftKind::Driver => "driver",
            SoftKind::Syscall => "syscall",
            SoftKind::Pipeline(s) => s.kind.name(),
        }
    }

    /// Builds the stage described by `v`; errors name fields under `path`.
    pub fn build(v: &Value, path: &str, classes: usize) -> Result<SoftStage, ConfigError> {
        let Some(obj) = v.as_object() else {
            return Err(ConfigError::new(path, "a stage must be an object with a 'kind'"));
        };
        let all_kinds = || {
            let mut k: Vec<&str> = CPU_KINDS.to_vec();
            k.extend(crate::pipeline::STAGE_KINDS);
            k.join(", ")
        };
        let kind = match obj.get("kind").and_then(Value::as_str) {
            Some(k) => k,
            None => return Err(ConfigError::new(format!("{path}.kind"), format!("missing; one of: {}", all_kinds()))),
        };
        let cost_of = |dir: &str| -> Result<Cost, ConfigError> {
            match obj.get(dir) {
                None | Some(Value::Null) => Ok(Cost::default()),
                Some(c) => params(c.clone(), &format!("{path}.{dir}")),
            }
        };
        let cost = [cost_of("tx")?, cost_of("rx")?];
        let name = match obj.get("name") {
            Some(Value::String(s)) => s.clone(),
            _ => kind.to_string(),
        };
        let soft = match kind {
            "tcp" | "udp" | "driver" | "syscall" => {
                if let Some(k) = obj.keys().find(|k| !["kind", "name", "tx", "rx"].contains(&k.as_str())) {
                    return Err(ConfigError::new(
                        path,
                        format!("unknown field '{k}' of a '{kind}' stage; allowed: kind, name, tx, rx"),
                    ));
                }
                match kind {
                    "tcp" => SoftKind::Tcp,
                    "udp" => SoftKind::Udp,
                    "driver" => SoftKind::Driver,
                    _ => SoftKind::Syscall,
                }
            }
            k if crate::pipeline::STAGE_KINDS.contains(&k) => {
                let rest: Map<String, Value> = obj
                    .iter()
                    .filter(|(k, _)| !["tx", "rx"].contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if rest.contains_key("cost") || rest.contains_key("latency_ps") {
                    return Err(ConfigError::new(
                        path,
                        "a software stage's cost is its CPU time ('tx', 'rx'); 'cost' and 'latency' are for NIC and switch pipes",
                    ));
                }
                let costs = BTreeMap::new();
                let env = BuildEnv { ports: 1, classes, costs: &costs, switch: false };
                SoftKind::Pipeline(Box::new(Stage::build(&Value::Object(rest), path, &env)?))
            }
            other => {
                return Err(ConfigError::new(
                    format!("{path}.kind"),
                    format!("unknown host stage kind '{other}'; known kinds: {}", all_kinds()),
                ))
            }
        };
        Ok(SoftStage { kind: soft, name, cost, counters: SoftCounters::default() })
    }
}

/// What the GRO engine needs to know about one received frame.
#[derive(Clone, Copy, Debug)]
pub struct GroFrame {
    pub flow: u32,
    /// A TCP segment with payload (only those merge).
    pub tcp_data: bool,
    pub seq: u64,
    pub len: u32,
    pub ecn: u8,
    /// Flags other than PSH (a segment joins only an skb with the same).
    pub flags: u8,
    pub bytes: u32,
    /// A TCP segment with PSH (it joins like any other: see [`gro_group`]).
    pub psh: bool,
}

/// Flows a GRO engine keeps open at once (Linux: `MAX_GRO_SKBS`, 8).
pub const GRO_MAX_FLOWS: usize = 8;

/// Groups the frames of one NAPI poll into skbs as GRO does: a TCP segment
/// joins the open skb of its flow when it continues it in sequence, has the
/// same ECN codepoint and flags (PSH aside, as `tcp_gro_receive` compares
/// them), and keeps the skb within `max_bytes`; a segment shorter than the
/// skb's first closes it. Linux also flushes after a PSH segment (the end of
/// each of the sender's GSO buffers), but it holds skbs across NAPI polls,
/// which these per-poll groups do not; with both, its receive skbs are the
/// sender's buffers (33.2 frames per receive skb for 33.1 segments per sent
/// skb at MTU 1500, `validation/linux_offloads.py`), which per-poll groups
/// that ignore PSH come near and per-poll groups that stop at it fall short
/// of (22 frames for 26). At most [`GRO_MAX_FLOWS`] skbs are open; opening another
/// closes the oldest. Writes each frame's skb number into `skb_of` and
/// returns the number of skbs, numbered in order of their first frame.
pub fn gro_group(frames: &[GroFrame], max_bytes: u32, skb_of: &mut Vec<u32>) -> u32 {
    skb_of.clear();
    // Open skbs: (skb number, flow, next seq, bytes, first segment's len,
    // first frame), oldest first; a fixed array, so a poll allocates nothing.
    let mut open = [(0u32, 0u32, 0u64, 0u32, 0u32, 0usize); GRO_MAX_FLOWS];
    let mut n = 0usize;
    let mut next = 0u32;
    for (i, f) in frames.iter().enumerate() {
        let mut joined = None;
        if max_bytes > 0 && f.tcp_data {
            if let Some(pos) = open[..n].iter().position(|o| o.1 == f.flow) {
                let o = open[pos];
                let h = &frames[o.5];
                let fits = o.3 + f.bytes <= max_bytes;
                if o.2 == f.seq && fits && h.ecn == f.ecn && h.flags == f.flags && f.len <= o.4 {
                    joined = Some(pos);
                } else {
                    open.copy_within(pos + 1..n, pos);
                    n -= 1;
                }
            }
        }
        match joined {
            Some(pos) => {
                let o = &mut open[pos];
                o.2 += f.len as u64;
                o.3 += f.bytes;
                skb_of.push(o.0);
                if f.len < o.4 {
                    open.copy_within(pos + 1..n, pos);
                    n -= 1;
                }
            }
            None => {
                skb_of.push(next);
                if max_bytes > 0 && f.tcp_data {
                    if n == GRO_MAX_FLOWS {
                        open.copy_within(1..n, 0);
                        n -= 1;
                    }
                    open[n] = (next, f.flow, f.seq + f.len as u64, f.bytes, f.len, i);
                    n += 1;
                }
                next += 1;
            }
        }
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(flow: u32, seq: u64, len: u32) -> GroFrame {
        GroFrame { flow, tcp_data: true, seq, len, ecn: 0, flags: 2, bytes: len + 70, psh: false }
    }

    #[test]
    fn consecutive_segments_of_a_flow_merge_up_to_the_size_limit() {
        let frames: Vec<GroFrame> = (0..10).map(|i| seg(1, i * 1448, 1448)).collect();
        let mut skb = Vec::new();
        // 1518 B frames: 4 fit in 6072 B.
        assert_eq!(gro_group(&frames, 6072, &mut skb), 3);
        assert_eq!(skb, vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2]);
        // No GRO: every frame alone.
        assert_eq!(gro_group(&frames, 0, &mut skb), 10);
    }

    #[test]
    fn interleaved_flows_merge_separately_and_holes_break_a_run() {
        let frames = [seg(1, 0, 100), seg(2, 0, 100), seg(1, 100, 100), seg(2, 300, 100), seg(1, 200, 100)];
        let mut skb = Vec::new();
        assert_eq!(gro_group(&frames, 65536, &mut skb), 3);
        assert_eq!(skb, vec![0, 1, 0, 2, 0]);
    }

    #[test]
    fn acks_ecn_changes_and_short_segments_end_merging() {
        let mut ack = seg(1, 300, 0);
        ack.tcp_data = false;
        let mut ce = seg(1, 100, 100);
        ce.ecn = 3;
        let frames = [seg(1, 0, 100), ce, seg(1, 200, 50), seg(1, 250, 50), ack];
        let mut skb = Vec::new();
        // The CE segment is an skb of its own (its neighbours are not CE); a pure ACK never merges.
        assert_eq!(gro_group(&frames, 65536, &mut skb), 4);
        assert_eq!(skb, vec![0, 1, 2, 2, 3]);
        // A segment shorter than the first joins the skb and closes it.
        let frames = [seg(1, 0, 100), seg(1, 100, 50), seg(1, 150, 100)];
        assert_eq!(gro_group(&frames, 65536, &mut skb), 2);
        assert_eq!(skb, vec![0, 0, 1]);
        // PSH neither stops a segment from joining nor closes the skb.
        let psh = |seq| GroFrame { psh: true, ..seg(1, seq, 100) };
        let frames = [seg(1, 0, 100), psh(100), seg(1, 200, 100), psh(300)];
        assert_eq!(gro_group(&frames, 65536, &mut skb), 1);
        assert_eq!(skb, vec![0, 0, 0, 0]);
    }

    #[test]
    fn costs_count_packets_and_bytes_in_femtoseconds() {
        let c = Cost { per_packet_ps: 1000, per_byte_fs: 500, per_ack_ps: Some(200) };
        assert_eq!(c.fs(1, 1000, false), 1_000_000 + 500_000);
        assert_eq!(c.fs(3, 1000, false), 3_000_000 + 500_000);
        assert_eq!(c.fs(1, 64, true), 200_000);
        let e = SoftStage::build(&serde_json::json!({"kind": "tcpp"}), "m.stages[0]", 1).unwrap_err();
        assert_eq!(e.path, "m.stages[0].kind");
        assert!(e.message.contains("conntrack") && e.message.contains("syscall"), "{}", e.message);
        let e = SoftStage::build(&serde_json::json!({"kind": "tcp", "cost": 1}), "m", 1).unwrap_err();
        assert!(e.message.contains("'cost'"), "{}", e.message);
        let e = SoftStage::build(&serde_json::json!({"kind": "tcp", "tx": {"per_packet": 1}}), "m", 1).unwrap_err();
        assert_eq!(e.path, "m.tx");
        let s = SoftStage::build(
            &serde_json::json!({"kind": "conntrack", "table_size": 10, "rx": {"per_packet_ps": 5}}),
            "m",
            1,
        )
        .unwrap();
        assert_eq!(s.kind_name(), "conntrack");
        assert_eq!(s.cost[1].per_packet_ps, 5);
    }
}
