//! Per-flow TCP sender state over time (`stats.tcp_trace`), the way Linux's
//! `tcp:tcp_probe` tracepoint or `ss -tin` shows a socket: after every ACK a
//! traced sender processes, a row with its windows, scoreboard counts, RTT
//! estimates, pacing rate and congestion-avoidance state
//! ([`TcpProbe`](crate::transport::tcp::probe::TcpProbe)). With an interval
//! the ACK rows are thinned to at most one per flow per interval (no events
//! of their own: the first ACK at or after the interval's end is kept).
//! Whatever the thinning, a row is recorded at each retransmission timeout
//! (`event` = `rto`), each entry into fast recovery (`recovery_start`, one
//! per `fast_retransmits` of the flows table) and each exit from it
//! (`recovery_end`), found by comparing the sender's counters (`timeouts`,
//! and `fast_retransmits` and `recovery_ends`, which the one function every
//! change of recovery state goes through keeps, `SenderCore::set_ca`) with
//! those seen at its previous ACK or timer.
//!
//! Off (the default), the cost is one test of a flag per ACK a sender
//! processes and per TCP timer event. On, rows go into one vector (amortized
//! growth) up to `max_rows`; later ones are counted in `tcp_trace_missed`.

use super::Simulation;
use crate::config::Scenario;
use crate::error::ConfigError;
use crate::stats::FlowRef;
use crate::stats::{Column, Table, Value};
use crate::transport::tcp::probe::{ProbeState, TcpProbe};
use std::collections::BTreeMap;

/// Largest `max_rows` (a row takes ~150 B).
pub const MAX_ROWS: u64 = 20_000_000;

/// Why a row was recorded.
const EVENTS: [&str; 4] = ["ack", "rto", "recovery_start", "recovery_end"];
const EV_ACK: u8 = 0;
const EV_RTO: u8 = 1;
const EV_RECOVERY_START: u8 = 2;
const EV_RECOVERY_END: u8 = 3;

#[derive(Clone, Copy, Debug)]
struct Row {
    time: u64,
    flow: u32,
    event: u8,
    probe: TcpProbe,
}

/// What was last seen of one traced connection.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    traced: bool,
    fast_retransmits: u64,
    timeouts: u64,
    recovery_ends: u64,
    /// The next ACK row is due at or after this time (thinning).
    next_ack_at: u64,
}

/// The trace's state.
#[derive(Debug, Default)]
pub(super) struct TcpTrace {
    /// Tracing is on: the hooks run.
    pub on: bool,
    interval: u64,
    max: usize,
    /// Per TCP connection (index into `Simulation::tcp`).
    seen: Vec<Seen>,
    rows: Vec<Row>,
    missed: u64,
}

impl TcpTrace {
    fn push(&mut self, row: Row) {
        if self.rows.len() < self.max {
            self.rows.push(row);
        } else {
            self.missed += 1;
        }
    }
}

impl Simulation {
    /// Resolves `stats.tcp_trace` (after the traffic, whose names and flows `flows` picks).
    pub(super) fn setup_tcp_trace(&mut self, sc: &Scenario) -> Result<(), ConfigError> {
        let Some(cfg) = &sc.stats.tcp_trace else { return Ok(()) };
        let path = "stats.tcp_trace";
        if cfg.max_rows == 0 || cfg.max_rows > MAX_ROWS {
            return Err(ConfigError::new(
                format!("{path}.max_rows"),
                format!("must be 1 to {MAX_ROWS}, got {}", cfg.max_rows),
            ));
        }
        let n = self.tcp.len();
        let mut traced = vec![cfg.flows.is_empty(); n];
        for (i, r) in cfg.flows.iter().enumerate() {
            let field = format!("{path}.flows[{i}]");
            match r {
                FlowRef::Id(id) => {
                    let t = self.flow_tcp.get(*id as usize).copied().unwrap_or(u32::MAX);
                    if t == u32::MAX {
                        let what = if (*id as usize) < self.flows.len() { "is not a TCP flow" } else { "no such flow" };
                        return Err(ConfigError::new(
                            field,
                            format!("flow id {id} {what}; TCP flows are {}", self.tcp_flow_ids()),
                        ));
                    }
                    traced[t as usize] = true;
                }
                FlowRef::Name(name) => {
                    let mut found = false;
                    for (t, on) in traced.iter_mut().enumerate() {
                        if self.tcp_entry_name(t as u32) == name {
                            *on = true;
                            found = true;
                        }
                    }
                    if !found {
                        let mut known: Vec<&str> = (0..n as u32).map(|t| self.tcp_entry_name(t)).collect();
                        known.sort_unstable();
                        known.dedup();
                        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
                        return Err(ConfigError::new(
                            field,
                            format!("no TCP traffic entry named '{name}'; TCP entries: {known}"),
                        ));
                    }
                }
            }
        }
        let t = &mut self.tcp_trace;
        t.on = true;
        t.interval = cfg.interval_ps;
        t.max = cfg.max_rows as usize;
        t.seen = traced.into_iter().map(|traced| Seen { traced, ..Seen::default() }).collect();
        Ok(())
    }

    /// The TCP flows' ids, for an error message (ranges collapsed).
    fn tcp_flow_ids(&self) -> String {
        let ids: Vec<u32> = (0..self.tcp.len() as u32).map(|t| self.tcp_flow_id(t).0).collect();
        if ids.is_empty() {
            return "none".to_string();
        }
        let mut parts = Vec::new();
        let mut start = ids[0];
        let mut prev = ids[0];
        for &id in &ids[1..] {
            if id != prev + 1 {
                parts.push(if start == prev { format!("{start}") } else { format!("{start}-{prev}") });
                start = id;
            }
            prev = id;
        }
        parts.push(if start == prev { format!("{start}") } else { format!("{start}-{prev}") });
        parts.join(", ")
    }

    /// Connection `t`'s sender processed an ACK (`ack`) or ran its timers:
    /// records the rows due. Called only when the trace is on.
    #[cold]
    pub(super) fn tcp_trace_record(&mut self, t: u32, ack: bool) {
        let now = self.now.0;
        if !self.tcp_trace.seen.get(t as usize).is_some_and(|x| x.traced) {
            return;
        }
        let s = self.tcp_sender(t);
        let probe = s.probe();
        let (timeouts, fast_retransmits, recovery_ends) = (s.timeouts, s.fast_retransmits, s.recovery_ends);
        let flow = self.tcp_flow_id(t).0;
        let tr = &mut self.tcp_trace;
        let seen = &mut tr.seen[t as usize];
        // The sender's counters of state changes (`SenderCore::set_ca`).
        let rto = timeouts > seen.timeouts;
        let start = fast_retransmits > seen.fast_retransmits;
        let end = recovery_ends > seen.recovery_ends;
        seen.timeouts = timeouts;
        seen.fast_retransmits = fast_retransmits;
        seen.recovery_ends = recovery_ends;
        let take_ack = ack && !rto && !start && !end && now >= seen.next_ack_at;
        if take_ack || start || end {
            seen.next_ack_at = now.saturating_add(tr.interval);
        }
        let row = |event| Row { time: now, flow, event, probe };
        // Several changes in one call (rare) give a row each, so that the
        // event rows count the flows table's counters exactly.
        if rto {
            tr.push(row(EV_RTO));
        }
        if start {
            tr.push(row(EV_RECOVERY_START));
        }
        if end {
            tr.push(row(EV_RECOVERY_END));
        }
        if take_ack {
            tr.push(row(EV_ACK));
        }
    }

    /// Adds the `tcp_trace` table (when on).
    pub(super) fn tcp_trace_outputs(&self, tables: &mut BTreeMap<String, Table>, s: &mut BTreeMap<String, Value>) {
        let tr = &self.tcp_trace;
        if !tr.on {
            return;
        }
        let rows = &tr.rows;
        let u64col = |g: &dyn Fn(&Row) -> u64| Column::U64(rows.iter().map(g).collect());
        let opt = |v: Option<crate::units::SimTime>| v.map_or(-1, |x| x.0 as i64);
        let mut out = Table::default();
        out.push("time_ps", u64col(&|r| r.time));
        out.push("flow_id", Column::U32(rows.iter().map(|r| r.flow).collect()));
        out.push(
            "event",
            Column::Cat {
                codes: rows.iter().map(|r| r.event as u32).collect(),
                labels: EVENTS.iter().map(|s| s.to_string()).collect(),
            },
        );
        out.push(
            "state",
            Column::Cat {
                codes: rows.iter().map(|r| r.probe.state as u32).collect(),
                labels: ProbeState::LABELS.iter().map(|s| s.to_string()).collect(),
            },
        );
        out.push("cwnd_segments", u64col(&|r| r.probe.cwnd_bytes / r.probe.mss.max(1)));
        out.push("cwnd_bytes", u64col(&|r| r.probe.cwnd_bytes));
        // -1 while unset (the initial slow start; Linux shows a huge value).
        out.push(
            "ssthresh_bytes",
            Column::I64(
                rows.iter()
                    .map(|r| if r.probe.ssthresh_bytes >= i64::MAX as u64 { -1 } else { r.probe.ssthresh_bytes as i64 })
                    .collect(),
            ),
        );
        out.push("packets_out", u64col(&|r| r.probe.packets_out));
        out.push("sacked_out", u64col(&|r| r.probe.sacked_out));
        out.push("lost_out", u64col(&|r| r.probe.lost_out));
        out.push("retrans_out", u64col(&|r| r.probe.retrans_out));
        out.push("in_flight_bytes", u64col(&|r| r.probe.in_flight_bytes));
        out.push("srtt_ps", Column::I64(rows.iter().map(|r| opt(r.probe.srtt)).collect()));
        out.push("rttvar_ps", Column::I64(rows.iter().map(|r| opt(r.probe.rttvar)).collect()));
        out.push("min_rtt_ps", Column::I64(rows.iter().map(|r| opt(r.probe.min_rtt)).collect()));
        out.push("pacing_rate_bps", u64col(&|r| r.probe.pacing_rate_bps));
        out.push("snd_una", u64col(&|r| r.probe.snd_una));
        out.push("snd_nxt", u64col(&|r| r.probe.snd_nxt));
        out.push("snd_wnd_bytes", u64col(&|r| r.probe.snd_wnd));
        out.push("delivered_bytes", u64col(&|r| r.probe.delivered_bytes));
        out.push("cwnd_limited", Column::Bool(rows.iter().map(|r| r.probe.cwnd_limited).collect()));
        tables.insert("tcp_trace".into(), out);
        s.insert("tcp_trace_missed".into(), Value::Int(tr.missed as i64));
    }
}
