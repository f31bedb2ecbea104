//! Measurement applications: the iperf3-like bulk test and the sockperf-like
//! ping-pong, their events, and the `iperf3` and `ping_pong` tables.
//!
//! - **iperf3**: `instances` duration-limited TCP streams (the connections of
//!   `sim/transport.rs`), instance `i` pinned to core `i mod cores` at both
//!   ends when hosts have a CPU model. Each stream's goodput counts the bytes
//!   its receiving application got in `[start + omit, start + duration]`, and
//!   its packet rate the data frames that reached the receiving host in that
//!   window, as iperf3 reports bits per second (and packets with `-u`).
//! - **ping-pong** (UDP): one message outstanding; the server answers each
//!   request at once; the client records the round trip from its send call
//!   to its receipt of the reply and sends the next message (after `gap`).
//!   A reply that does not come within `timeout` counts the message lost.
//!   One-way latency is half the round trip, as sockperf reports it;
//!   percentiles are nearest-rank over every message.
//!
//! - **ping-pong** (TCP, as netperf TCP_RR and `sockperf --tcp`): one TCP
//!   connection carries the requests one way and the replies the other,
//!   modelled as two application-driven connections coupled so that each
//!   direction's data segments carry the other's ACK (`tcp_couple`). The
//!   first request leaves once both directions are established (the
//!   handshake is not part of any round trip); the server answers each
//!   complete request at once, the client takes the round trip when the
//!   whole reply has arrived. Once the exchange is interactive, the receivers
//!   delay their ACKs (Linux's ping-pong mode) and every reply carries the
//!   ACK of its request and every request that of the previous reply: one
//!   segment each way per message up to one MSS. TCP loses no message, so
//!   `timeout` does not apply.
//!
//! Each ping-pong keeps at most one `AppTimer` pending (start, gap or
//! timeout); a reply bumps the generation, which cancels a pending timeout.

use super::{resolve_host, Event, Simulation};
use crate::error::ConfigError;
use crate::ids::{FlowId, NodeId};
use crate::network::topology::Graph;
use crate::packet::{Packet, PacketKind};
use crate::rng::mix64;
use crate::stats::{Column, FlowKind, FlowStats, Table, Value};
use crate::transport::apps::{Iperf3Config, PingPongConfig, PingPongProtocol};
use crate::units::{SimTime, PS_PER_SEC};
use std::collections::BTreeMap;

const NONE: u32 = u32::MAX;
/// `AppState::by_flow` codes of ping-pong flows carry this bit.
const PP_BIT: u32 = 1 << 31;
/// UDP + IPv4 + Ethernet header and FCS bytes around a datagram's payload.
const UDP_OVERHEAD: u32 = 8 + 20 + 18;

/// One iperf3 stream.
#[derive(Debug)]
struct Iperf {
    name: u32,
    instance: u32,
    flow: FlowId,
    cores: (u32, u32),
    t0: SimTime,
    t1: SimTime,
    /// Cumulative application bytes and data frames at the receiver, and their values when the window opened / last inside it.
    bytes: u64,
    frames: u64,
    base: (u64, u64),
    last: (u64, u64),
}

/// One ping-pong client/server pair.
#[derive(Debug)]
struct PingPong {
    name: u32,
    req: FlowId,
    rep: FlowId,
    client: NodeId,
    server: NodeId,
    message: u32,
    frame: u32,
    class: u8,
    limit: u64,
    stop: SimTime,
    timeout: SimTime,
    gap: SimTime,
    hashes: (u64, u64),
    /// Index of the message in flight (or the next one).
    seq: u64,
    sent_at: SimTime,
    outstanding: bool,
    gen: u32,
    /// TCP: the request and reply connections, and the requests answered.
    tcp: Option<(u32, u32)>,
    served: u64,
    lost: u64,
    rtts: Vec<u64>,
    done: bool,
}

/// Applications of the simulation.
#[derive(Debug, Default)]
pub(super) struct AppState {
    iperf: Vec<Iperf>,
    pp: Vec<PingPong>,
    /// Per flow: its iperf3 stream, or `PP_BIT | ping-pong`, or `NONE`; empty while there are none.
    by_flow: Vec<u32>,
}

impl AppState {
    fn set(&mut self, flow: FlowId, code: u32) {
        if self.by_flow.len() <= flow.idx() {
            self.by_flow.resize(flow.idx() + 1, NONE);
        }
        self.by_flow[flow.idx()] = code;
    }

    #[inline]
    fn of(&self, flow: FlowId) -> Option<u32> {
        match self.by_flow.get(flow.idx()) {
            Some(&c) if c != NONE => Some(c),
            _ => None,
        }
    }
}

impl Simulation {
    /// Adds an `iperf3` traffic entry.
    pub(super) fn add_iperf3(
        &mut self,
        i: usize,
        c: &Iperf3Config,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        let path = format!("traffic[{i}]");
        self.check_class(c.class, &path)?;
        if c.instances == 0 {
            return Err(ConfigError::new(format!("{path}.instances"), "must be >= 1"));
        }
        if c.duration_ps == 0 {
            return Err(ConfigError::new(format!("{path}.duration"), "must be > 0"));
        }
        if c.omit_ps >= c.duration_ps {
            return Err(ConfigError::new(format!("{path}.omit"), "must be shorter than the duration"));
        }
        let src = resolve_host(index, graph, &c.src, &format!("{path}.src"))?;
        let dst = resolve_host(index, graph, &c.dst, &format!("{path}.dst"))?;
        if src == dst {
            return Err(ConfigError::new(format!("{path}.dst"), "the server is the client"));
        }
        let cfg = self.tcp_config(&c.tcp, &format!("{path}.tcp"))?;
        let name = self.flow_name(&c.name, format!("iperf3_{i}"));
        let start = SimTime(c.start_ps);
        let stop = start + SimTime(c.duration_ps);
        let cores = self.host.cores();
        for k in 0..c.instances {
            let t = self.new_tcp_flow(name, FlowKind::Iperf3, src, dst, c.class, None, start, Some(stop), cfg, None, k);
            let flow = self.tcp_flow_id(t);
            let core = if c.pin { k % cores } else { NONE };
            if c.pin {
                self.host.pin(flow.0, core, core);
            }
            let n = self.apps.iperf.len() as u32;
            self.apps.set(flow, n);
            self.apps.iperf.push(Iperf {
                name,
                instance: k,
                flow,
                cores: (core, core),
                t0: start + SimTime(c.omit_ps),
                t1: stop,
                bytes: 0,
                frames: 0,
                base: (0, 0),
                last: (0, 0),
            });
            self.queue.push(start, Event::TcpOpen(t));
        }
        Ok(())
    }

    /// Adds a `ping_pong` traffic entry.
    pub(super) fn add_ping_pong(
        &mut self,
        i: usize,
        c: &PingPongConfig,
        index: &BTreeMap<&str, usize>,
        graph: &Graph,
    ) -> Result<(), ConfigError> {
        let path = format!("traffic[{i}]");
        self.check_class(c.class, &path)?;
        let tcp = c.protocol == PingPongProtocol::Tcp;
        let mut frame = (c.message_bytes + UDP_OVERHEAD).max(64);
        // One datagram per message, up to a 9216 B jumbo frame (a 9198 B IP MTU, the
        // largest jumbo frame common switches accept).
        if tcp && c.message_bytes == 0 {
            return Err(ConfigError::new(format!("{path}.message_size"), "must be > 0"));
        }
        if !tcp && (c.message_bytes == 0 || frame > 9216) {
            return Err(ConfigError::new(
                format!("{path}.message_size"),
                format!(
                    "a UDP message must be 1..9170 bytes (one datagram in a 9216 B jumbo frame; got {})",
                    c.message_bytes
                ),
            ));
        }
        if c.messages == Some(0) || c.duration_ps == Some(0) {
            let field = if c.messages == Some(0) { "messages" } else { "duration" };
            return Err(ConfigError::new(format!("{path}.{field}"), "must be > 0"));
        }
        if c.messages.is_none() && c.duration_ps.is_none() {
            return Err(ConfigError::new(format!("{path}.messages"), "give a number of messages or a duration"));
        }
        if c.timeout_ps == 0 {
            return Err(ConfigError::new(format!("{path}.timeout"), "must be > 0"));
        }
        let client = resolve_host(index, graph, &c.src, &format!("{path}.src"))?;
        let server = resolve_host(index, graph, &c.dst, &format!("{path}.dst"))?;
        if client == server {
            return Err(ConfigError::new(format!("{path}.dst"), "the server is the client"));
        }
        let name = self.flow_name(&c.name, format!("ping_pong{i}"));
        let start = SimTime(c.start_ps);
        let mut flows = [FlowId(0); 2];
        let mut conns = None;
        if tcp {
            let cfg = self.tcp_config(&c.tcp, &format!("{path}.tcp"))?;
            let k = FlowKind::PingPong;
            let req = self.new_tcp_flow(name, k, client, server, c.class, None, start, None, cfg, None, 0);
            let rep = self.new_tcp_flow(name, k, server, client, c.class, None, start, None, cfg, None, 0);
            for t in [req, rep] {
                self.tcp_app_driven(t);
                self.queue.push(start, Event::TcpOpen(t));
            }
            self.tcp_couple(req, rep);
            flows = [self.tcp_flow_id(req), self.tcp_flow_id(rep)];
            let tc = &self.tcp_cfgs[cfg as usize];
            frame = tc.frame_bytes(c.message_bytes.min(tc.mss()));
            conns = Some((req, rep));
        }
        for (k, (a, b)) in [(client, server), (server, client)].into_iter().enumerate() {
            if tcp {
                break;
            }
            let flow = FlowId(self.flows.len() as u32);
            self.flows.push(FlowStats {
                name,
                kind: FlowKind::PingPong,
                src: a.0,
                dst: b.0,
                class: c.class,
                start_ps: start.0,
                ..Default::default()
            });
            self.flow_tcp.resize(self.flows.len(), u32::MAX);
            flows[k] = flow;
        }
        let core = c.core % self.host.cores();
        for f in flows {
            self.host.pin(f.0, core, core);
            if tcp {
                // One send() and one recv() per message.
                self.host.set_message_bytes(f.0, c.message_bytes as u64);
            }
        }
        let n = self.apps.pp.len() as u32;
        self.apps.set(flows[0], PP_BIT | n);
        self.apps.set(flows[1], PP_BIT | n);
        let hash = |f: FlowId, a: NodeId, b: NodeId| {
            mix64(mix64(a.0 as u64) ^ mix64((b.0 as u64) << 20) ^ mix64(0x99_0000 + f.0 as u64))
        };
        self.apps.pp.push(PingPong {
            name,
            req: flows[0],
            rep: flows[1],
            client,
            server,
            message: c.message_bytes,
            frame,
            class: c.class,
            limit: c.messages.unwrap_or(u64::MAX),
            stop: c.duration_ps.map_or(SimTime::MAX, |d| start + SimTime(d)),
            timeout: SimTime(c.timeout_ps),
            gap: SimTime(c.gap_ps),
            hashes: (hash(flows[0], client, server), hash(flows[1], server, client)),
            seq: 0,
            sent_at: SimTime::ZERO,
            outstanding: false,
            gen: 0,
            tcp: conns,
            served: 0,
            lost: 0,
            rtts: Vec::new(),
            done: false,
        });
        if !tcp {
            self.queue.push(start, Event::AppTimer(n, 0));
        }
        Ok(())
    }

    pub(super) fn app_timer_is_stale(&self, a: u32, generation: u32) -> bool {
        self.apps.pp[a as usize].gen != generation
    }

    /// `AppTimer`: a ping-pong starts, ends a gap, or gives up on a reply.
    pub(super) fn on_app_timer(&mut self, a: u32, generation: u32) {
        let p = &mut self.apps.pp[a as usize];
        if p.gen != generation || p.done {
            return;
        }
        if p.outstanding {
            p.lost += 1;
            p.outstanding = false;
            p.seq += 1;
        }
        self.pp_next(a);
    }

    /// Sends the next message of ping-pong `a`, or ends it.
    fn pp_next(&mut self, a: u32) {
        let now = self.now;
        let p = &mut self.apps.pp[a as usize];
        if p.seq >= p.limit || now >= p.stop || now >= self.duration {
            p.done = true;
            for f in [p.req, p.rep] {
                self.flows[f.idx()].source_done = true;
            }
            return;
        }
        p.outstanding = true;
        p.sent_at = now;
        p.gen = p.gen.wrapping_add(1);
        if let Some((req, _)) = p.tcp {
            let bytes = p.message as u64;
            self.tcp_write(req, bytes);
            return;
        }
        self.queue.push(now + p.timeout, Event::AppTimer(a, p.gen));
        let (flow, src, dst, seq) = (p.req, p.client, p.server, p.seq);
        self.pp_send(a, flow, src, dst, seq);
    }

    fn pp_send(&mut self, a: u32, flow: FlowId, src: NodeId, dst: NodeId, seq: u64) {
        let p = &self.apps.pp[a as usize];
        let hash = if flow == p.req { p.hashes.0 } else { p.hashes.1 };
        let pkt = Packet {
            seq,
            len: p.message,
            ..Packet::new(flow, src, dst, p.frame, PacketKind::Data, p.class, hash, self.now)
        };
        let id = self.create_packet(pkt);
        self.inject(src, id);
    }

    /// A UDP datagram reached its destination's application.
    pub(super) fn app_udp_arrive(&mut self, node: NodeId, pkt: &Packet) {
        let Some(code) = self.apps.of(pkt.flow) else { return };
        if code & PP_BIT == 0 {
            return;
        }
        let a = code & !PP_BIT;
        let p = &mut self.apps.pp[a as usize];
        if pkt.flow == p.req && node == p.server {
            let (flow, src, dst) = (p.rep, p.server, p.client);
            self.pp_send(a, flow, src, dst, pkt.seq);
        } else if pkt.flow == p.rep && node == p.client && p.outstanding && pkt.seq == p.seq {
            self.pp_reply_in(a);
        }
    }

    /// Ping-pong `a`'s outstanding reply is in: record its round trip, then
    /// send the next request after the gap (or at once).
    fn pp_reply_in(&mut self, a: u32) {
        let now = self.now;
        let p = &mut self.apps.pp[a as usize];
        p.rtts.push((now - p.sent_at).0);
        p.outstanding = false;
        p.seq += 1;
        p.gen = p.gen.wrapping_add(1);
        if p.gap > SimTime::ZERO {
            self.queue.push(now + p.gap, Event::AppTimer(a, p.gen));
        } else {
            self.pp_next(a);
        }
    }

    /// A TCP connection's sender completed its handshake: a TCP ping-pong
    /// starts once both of its directions have.
    pub(super) fn app_tcp_established(&mut self, flow: FlowId) {
        let Some(code) = self.apps.of(flow) else { return };
        if code & PP_BIT == 0 {
            return;
        }
        let a = code & !PP_BIT;
        let p = &self.apps.pp[a as usize];
        let Some((req, rep)) = p.tcp else { return };
        if p.seq == 0 && !p.outstanding && !p.done && self.tcp_established(req) && self.tcp_established(rep) {
            self.pp_next(a);
        }
    }

    /// TCP ping-pong `a`: `delivered` bytes in all reached the receiving end of `flow`.
    fn pp_tcp_delivered(&mut self, a: u32, flow: FlowId, delivered: u64) {
        let p = &mut self.apps.pp[a as usize];
        let (Some((_, rep)), m) = (p.tcp, p.message as u64) else { return };
        if flow == p.req {
            // The server answers every complete request at once.
            let mut answers = 0;
            while delivered >= (p.served + 1) * m {
                p.served += 1;
                answers += 1;
            }
            if answers > 0 {
                self.tcp_write(rep, answers * m);
            }
        } else if p.outstanding && delivered >= (p.seq + 1) * m {
            self.pp_reply_in(a);
        }
    }

    /// TCP bytes reached a receiving application: `delivered` in all so far,
    /// after `frames` more data frames arrived at the host.
    pub(super) fn app_tcp_delivered(&mut self, flow: FlowId, delivered: u64, frames: u64) {
        let Some(code) = self.apps.of(flow) else { return };
        if code & PP_BIT != 0 {
            self.pp_tcp_delivered(code & !PP_BIT, flow, delivered);
            return;
        }
        let now = self.now;
        let s = &mut self.apps.iperf[code as usize];
        s.bytes = delivered.max(s.bytes);
        s.frames += frames;
        if now <= s.t0 {
            s.base = (s.bytes, s.frames);
        }
        if now <= s.t1 {
            s.last = (s.bytes, s.frames);
        }
    }

    // ------------------------------------------------------------ outputs

    /// Adds the `iperf3` and `ping_pong` tables and their summary values.
    pub(super) fn app_outputs(&mut self, tables: &mut BTreeMap<String, Table>, s: &mut BTreeMap<String, Value>) {
        if !self.apps.iperf.is_empty() {
            let it = &self.apps.iperf;
            let secs: Vec<f64> = it.iter().map(|x| (x.t1 - x.t0).0 as f64 / PS_PER_SEC as f64).collect();
            let bytes: Vec<u64> = it.iter().map(|x| x.last.0 - x.base.0).collect();
            let frames: Vec<u64> = it.iter().map(|x| x.last.1 - x.base.1).collect();
            let gbps: Vec<f64> = bytes.iter().zip(&secs).map(|(&b, &t)| b as f64 * 8.0 / t / 1e9).collect();
            let pps: Vec<f64> = frames.iter().zip(&secs).map(|(&f, &t)| f as f64 / t).collect();
            let opt = |c: u32| if c == NONE { -1 } else { c as i64 };
            let mut t = Table::default();
            t.push("name", Column::Cat { codes: it.iter().map(|x| x.name).collect(), labels: self.flow_names.clone() });
            t.push("instance", Column::U32(it.iter().map(|x| x.instance).collect()));
            t.push("flow_id", Column::U32(it.iter().map(|x| x.flow.0).collect()));
            t.push("src", Column::U32(it.iter().map(|x| self.flows[x.flow.idx()].src).collect()));
            t.push("dst", Column::U32(it.iter().map(|x| self.flows[x.flow.idx()].dst).collect()));
            t.push("src_core", Column::I64(it.iter().map(|x| opt(x.cores.0)).collect()));
            t.push("dst_core", Column::I64(it.iter().map(|x| opt(x.cores.1)).collect()));
            t.push("start_ps", Column::U64(it.iter().map(|x| x.t0.0).collect()));
            t.push("end_ps", Column::U64(it.iter().map(|x| x.t1.0).collect()));
            t.push("seconds", Column::F64(secs));
            t.push("bytes", Column::U64(bytes));
            t.push("gbps", Column::F64(gbps.clone()));
            t.push("packets", Column::U64(frames));
            t.push("packets_per_s", Column::F64(pps.clone()));
            tables.insert("iperf3".into(), t);
            s.insert("iperf3_gbps".into(), Value::Float(gbps.iter().sum()));
            s.insert("iperf3_packets_per_s".into(), Value::Float(pps.iter().sum()));
        }
        if !self.apps.pp.is_empty() {
            let mut t = Table::default();
            let pp = &mut self.apps.pp;
            for p in pp.iter_mut() {
                p.rtts.sort_unstable();
            }
            let pct = |r: &[u64], q: f64| -> f64 {
                if r.is_empty() {
                    return f64::NAN;
                }
                let rank = ((q * r.len() as f64).ceil() as usize).clamp(1, r.len());
                r[rank - 1] as f64 / 2.0
            };
            let col = |f: &dyn Fn(&PingPong) -> f64| Column::F64(pp.iter().map(f).collect());
            t.push("name", Column::Cat { codes: pp.iter().map(|x| x.name).collect(), labels: self.flow_names.clone() });
            t.push("flow_id", Column::U32(pp.iter().map(|x| x.req.0).collect()));
            t.push("src", Column::U32(pp.iter().map(|x| x.client.0).collect()));
            t.push("dst", Column::U32(pp.iter().map(|x| x.server.0).collect()));
            t.push(
                "protocol",
                Column::Cat {
                    codes: pp.iter().map(|x| x.tcp.is_some() as u32).collect(),
                    labels: vec!["udp".into(), "tcp".into()],
                },
            );
            t.push("message_bytes", Column::U32(pp.iter().map(|x| x.message).collect()));
            t.push("frame_bytes", Column::U32(pp.iter().map(|x| x.frame).collect()));
            t.push("messages", Column::U64(pp.iter().map(|x| x.rtts.len() as u64).collect()));
            t.push("lost", Column::U64(pp.iter().map(|x| x.lost).collect()));
            t.push(
                "latency_mean_ps",
                col(&|x| {
                    if x.rtts.is_empty() {
                        f64::NAN
                    } else {
                        x.rtts.iter().map(|&v| v as f64).sum::<f64>() / x.rtts.len() as f64 / 2.0
                    }
                }),
            );
            t.push("latency_min_ps", col(&|x| pct(&x.rtts, 0.0)));
            for (label, q) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999), ("p9999", 0.9999)] {
                t.push(&format!("latency_{label}_ps"), col(&|x| pct(&x.rtts, q)));
            }
            t.push("latency_max_ps", col(&|x| pct(&x.rtts, 1.0)));
            tables.insert("ping_pong".into(), t);
        }
    }
}
