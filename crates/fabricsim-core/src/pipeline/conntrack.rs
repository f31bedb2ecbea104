//! Connection tracking: a table of connections with a fixed size, an entry
//! inserted on a connection's first packet, looked up on every later packet,
//! aged out after an idle timeout, and a policy for a full table.
//!
//! - A connection is both directions of one flow (`Ctx::conn`); an entry is
//!   *unreplied* until a packet travels the other way, then *replied*.
//! - Idle timeouts follow Linux netfilter's defaults (kernel
//!   `Documentation/networking/nf_conntrack-sysctl`): TCP unreplied 120 s
//!   (`tcp_timeout_syn_sent`), TCP replied 432,000 s (`tcp_timeout_established`,
//!   5 days), UDP unreplied 30 s (`udp_timeout`), UDP replied 120 s
//!   (`udp_timeout_stream`). An entry idle for its timeout is removed before
//!   the next packet is looked up (counted as `aged`).
//! - Full table (`entries == table_size`) on a new connection:
//!   `drop` drops the packet (reason `conntrack_full`); `evict_lru` evicts the
//!   least recently used entry; `early_drop` evicts the least recently used
//!   *unreplied* entry and drops the packet if there is none (as Linux's
//!   early drop prefers entries that are not assured).
//! - An insert costs `insert_cost` passes on top of the stage's lookup cost.
//!
//! Entries sit in one least-recently-used list per timeout class, so the
//! oldest entry of each class is at the head of its list: aging and eviction
//! cost O(1) per entry, and nothing depends on hash iteration order.

use super::stage::{milli_passes, Ctx, Step, PROTO_TCP};
use crate::error::ConfigError;
use crate::packet::Packet;
use crate::stats::DropReason;
use crate::units::PS_PER_SEC;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FullPolicy {
    #[default]
    Drop,
    EvictLru,
    EarlyDrop,
}

fn secs(s: u64) -> u64 {
    s * PS_PER_SEC
}
fn d_tcp_unreplied() -> u64 {
    secs(120)
}
fn d_tcp_replied() -> u64 {
    secs(432_000)
}
fn d_udp_unreplied() -> u64 {
    secs(30)
}
fn d_udp_replied() -> u64 {
    secs(120)
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConntrackConfig {
    /// Most entries the table holds.
    pub table_size: u64,
    #[serde(default)]
    pub full_policy: FullPolicy,
    /// Passes an insert costs on top of the lookup.
    #[serde(default)]
    pub insert_cost: f64,
    #[serde(default = "d_tcp_unreplied")]
    pub tcp_unreplied_timeout_ps: u64,
    #[serde(default = "d_tcp_replied")]
    pub tcp_replied_timeout_ps: u64,
    #[serde(default = "d_udp_unreplied")]
    pub udp_unreplied_timeout_ps: u64,
    #[serde(default = "d_udp_replied")]
    pub udp_replied_timeout_ps: u64,
}

const NIL: u32 = u32::MAX;
/// Timeout classes, one LRU list each.
const TCP_UNREPLIED: u8 = 0;
const TCP_REPLIED: u8 = 1;
const UDP_UNREPLIED: u8 = 2;
const UDP_REPLIED: u8 = 3;

#[derive(Clone, Copy, Debug)]
struct Entry {
    conn: u32,
    last_ps: u64,
    class: u8,
    prev: u32,
    next: u32,
}

#[derive(Clone, Copy, Debug)]
struct List {
    head: u32,
    tail: u32,
}

#[derive(Clone, Debug)]
pub struct Conntrack {
    size: u64,
    policy: FullPolicy,
    insert_milli: u32,
    timeout: [u64; 4],
    entries: Vec<Entry>,
    free: Vec<u32>,
    /// Per connection id: its entry, or `NIL`.
    index: Vec<u32>,
    lists: [List; 4],
    count: u64,
    // Counters.
    lookups_hit: u64,
    inserted: u64,
    replied: u64,
    aged: u64,
    evicted: u64,
    full_drops: u64,
    high_water: u64,
}

impl Conntrack {
    pub fn new(cfg: ConntrackConfig, path: &str) -> Result<Conntrack, ConfigError> {
        if cfg.table_size == 0 || cfg.table_size > u32::MAX as u64 - 1 {
            return Err(ConfigError::new(format!("{path}.table_size"), "must be 1..4294967294 entries"));
        }
        let t = [
            (cfg.tcp_unreplied_timeout_ps, "tcp_unreplied_timeout"),
            (cfg.tcp_replied_timeout_ps, "tcp_replied_timeout"),
            (cfg.udp_unreplied_timeout_ps, "udp_unreplied_timeout"),
            (cfg.udp_replied_timeout_ps, "udp_replied_timeout"),
        ];
        for (v, name) in t {
            if v == 0 {
                return Err(ConfigError::new(format!("{path}.{name}"), "must be > 0"));
            }
        }
        Ok(Conntrack {
            size: cfg.table_size,
            policy: cfg.full_policy,
            insert_milli: milli_passes(cfg.insert_cost, &format!("{path}.insert_cost"))?,
            timeout: [t[0].0, t[1].0, t[2].0, t[3].0],
            entries: Vec::new(),
            free: Vec::new(),
            index: Vec::new(),
            lists: [List { head: NIL, tail: NIL }; 4],
            count: 0,
            lookups_hit: 0,
            inserted: 0,
            replied: 0,
            aged: 0,
            evicted: 0,
            full_drops: 0,
            high_water: 0,
        })
    }

    /// Entries in the table now.
    pub fn len(&self) -> u64 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether connection `conn` has an entry.
    pub fn contains(&self, conn: u32) -> bool {
        self.index.get(conn as usize).is_some_and(|&s| s != NIL)
    }

    fn unlink(&mut self, s: u32) {
        let e = self.entries[s as usize];
        let l = &mut self.lists[e.class as usize];
        if e.prev == NIL {
            l.head = e.next;
        } else {
            self.entries[e.prev as usize].next = e.next;
        }
        if e.next == NIL {
            self.lists[e.class as usize].tail = e.prev;
        } else {
            self.entries[e.next as usize].prev = e.prev;
        }
    }

    fn link_tail(&mut self, s: u32) {
        let class = self.entries[s as usize].class as usize;
        let tail = self.lists[class].tail;
        self.entries[s as usize].prev = tail;
        self.entries[s as usize].next = NIL;
        if tail == NIL {
            self.lists[class].head = s;
        } else {
            self.entries[tail as usize].next = s;
        }
        self.lists[class].tail = s;
    }

    fn remove(&mut self, s: u32) {
        self.unlink(s);
        let conn = self.entries[s as usize].conn;
        self.index[conn as usize] = NIL;
        self.free.push(s);
        self.count -= 1;
    }

    /// Removes every entry idle for at least its class's timeout.
    pub fn expire(&mut self, now_ps: u64) {
        for c in 0..4 {
            loop {
                let h = self.lists[c].head;
                if h == NIL || self.entries[h as usize].last_ps + self.timeout[c] > now_ps {
                    break;
                }
                self.remove(h);
                self.aged += 1;
            }
        }
    }

    /// The least recently used entry among the given classes.
    fn oldest(&self, classes: &[u8]) -> Option<u32> {
        classes
            .iter()
            .map(|&c| self.lists[c as usize].head)
            .filter(|&h| h != NIL)
            .min_by_key(|&h| (self.entries[h as usize].last_ps, h))
    }

    /// Makes room for one entry; `false` if the policy refuses.
    fn make_room(&mut self) -> bool {
        if self.count < self.size {
            return true;
        }
        let victim = match self.policy {
            FullPolicy::Drop => None,
            FullPolicy::EvictLru => self.oldest(&[TCP_UNREPLIED, TCP_REPLIED, UDP_UNREPLIED, UDP_REPLIED]),
            FullPolicy::EarlyDrop => self.oldest(&[TCP_UNREPLIED, UDP_UNREPLIED]),
        };
        match victim {
            Some(v) => {
                self.remove(v);
                self.evicted += 1;
                true
            }
            None => false,
        }
    }

    fn insert(&mut self, conn: u32, now_ps: u64, class: u8) {
        let e = Entry { conn, last_ps: now_ps, class, prev: NIL, next: NIL };
        let s = match self.free.pop() {
            Some(s) => {
                self.entries[s as usize] = e;
                s
            }
            None => {
                self.entries.push(e);
                (self.entries.len() - 1) as u32
            }
        };
        if self.index.len() <= conn as usize {
            self.index.resize(conn as usize + 1, NIL);
        }
        self.index[conn as usize] = s;
        self.link_tail(s);
        self.count += 1;
        self.high_water = self.high_water.max(self.count);
        self.inserted += 1;
    }

    #[inline]
    pub fn run(&mut self, _pkt: &mut Packet, ctx: &Ctx) -> Step {
        let now = ctx.now.0;
        self.expire(now);
        let tcp = ctx.tuple.proto == PROTO_TCP;
        let slot = self.index.get(ctx.conn as usize).copied().unwrap_or(NIL);
        if slot != NIL {
            self.lookups_hit += 1;
            let e = self.entries[slot as usize];
            let was_replied = e.class == TCP_REPLIED || e.class == UDP_REPLIED;
            let replied = was_replied || ctx.reply;
            if replied && !was_replied {
                self.replied += 1;
            }
            self.unlink(slot);
            let entry = &mut self.entries[slot as usize];
            entry.last_ps = now;
            entry.class = match (tcp, replied) {
                (true, false) => TCP_UNREPLIED,
                (true, true) => TCP_REPLIED,
                (false, false) => UDP_UNREPLIED,
                (false, true) => UDP_REPLIED,
            };
            self.link_tail(slot);
            return Step::HIT;
        }
        // A new connection: its first packet seen (in whichever direction).
        if !self.make_room() {
            self.full_drops += 1;
            return Step::dropped(DropReason::ConntrackFull, false);
        }
        self.insert(ctx.conn, now, if tcp { TCP_UNREPLIED } else { UDP_UNREPLIED });
        Step { drop: None, hit: false, extra_milli: self.insert_milli }
    }

    pub fn counters(&self, out: &mut Vec<(String, u64)>) {
        for (k, v) in [
            ("lookup_hits", self.lookups_hit),
            ("inserted", self.inserted),
            ("replied", self.replied),
            ("aged", self.aged),
            ("evicted", self.evicted),
            ("full_drops", self.full_drops),
            ("entries", self.count),
            ("entries_high_water", self.high_water),
        ] {
            out.push((k.to_string(), v));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{FlowId, NodeId};
    use crate::packet::PacketKind;
    use crate::pipeline::stage::{Dir, FiveTuple, PROTO_UDP};
    use crate::units::SimTime;

    fn table(size: u64, policy: FullPolicy) -> Conntrack {
        Conntrack::new(
            ConntrackConfig {
                table_size: size,
                full_policy: policy,
                insert_cost: 1.0,
                tcp_unreplied_timeout_ps: 1_000,
                tcp_replied_timeout_ps: 100_000,
                udp_unreplied_timeout_ps: 500,
                udp_replied_timeout_ps: 5_000,
            },
            "ct",
        )
        .unwrap()
    }

    /// Offers one packet of connection `conn` at time `t`.
    fn offer(ct: &mut Conntrack, conn: u32, t: u64, proto: u8, reply: bool) -> Step {
        let mut p = Packet::new(FlowId(conn), NodeId(0), NodeId(1), 64, PacketKind::Data, 0, 0, SimTime(t));
        let tuple = FiveTuple { proto, ..Default::default() };
        let ctx = Ctx { now: SimTime(t), port: 0, dir: Dir::Rx, tuple, conn, reply };
        ct.run(&mut p, &ctx)
    }

    #[test]
    fn first_packet_inserts_and_later_packets_hit() {
        let mut ct = table(4, FullPolicy::Drop);
        let s = offer(&mut ct, 7, 0, PROTO_TCP, false);
        assert_eq!((s.hit, s.drop, s.extra_milli), (false, None, 1000));
        let s = offer(&mut ct, 7, 10, PROTO_TCP, false);
        assert_eq!((s.hit, s.extra_milli), (true, 0));
        assert_eq!((ct.len(), ct.inserted, ct.lookups_hit), (1, 1, 1));
    }

    #[test]
    fn a_full_table_drops_new_connections_under_the_drop_policy() {
        let mut ct = table(2, FullPolicy::Drop);
        offer(&mut ct, 0, 0, PROTO_TCP, false);
        offer(&mut ct, 1, 0, PROTO_TCP, false);
        let s = offer(&mut ct, 2, 0, PROTO_TCP, false);
        assert_eq!(s.drop, Some(DropReason::ConntrackFull));
        // Known connections still pass.
        assert!(offer(&mut ct, 0, 1, PROTO_TCP, false).drop.is_none());
        assert_eq!((ct.len(), ct.full_drops), (2, 1));
    }

    #[test]
    fn evict_lru_replaces_the_least_recently_used_entry() {
        let mut ct = table(2, FullPolicy::EvictLru);
        offer(&mut ct, 0, 0, PROTO_TCP, false);
        offer(&mut ct, 1, 1, PROTO_TCP, false);
        offer(&mut ct, 0, 2, PROTO_TCP, false); // 0 is now the most recent
        assert!(offer(&mut ct, 2, 3, PROTO_TCP, false).drop.is_none());
        assert!(ct.contains(0) && ct.contains(2) && !ct.contains(1));
        assert_eq!(ct.evicted, 1);
    }

    #[test]
    fn early_drop_evicts_only_unreplied_entries() {
        let mut ct = table(2, FullPolicy::EarlyDrop);
        offer(&mut ct, 0, 0, PROTO_TCP, false);
        offer(&mut ct, 0, 1, PROTO_TCP, true); // replied
        offer(&mut ct, 1, 2, PROTO_TCP, false); // unreplied
        assert!(offer(&mut ct, 2, 3, PROTO_TCP, false).drop.is_none());
        assert!(ct.contains(0) && ct.contains(2) && !ct.contains(1));
        // Both entries replied: nothing may go, the new connection is dropped.
        offer(&mut ct, 2, 4, PROTO_TCP, true);
        assert_eq!(offer(&mut ct, 3, 5, PROTO_TCP, false).drop, Some(DropReason::ConntrackFull));
    }

    #[test]
    fn idle_entries_age_out_after_their_class_timeout() {
        let mut ct = table(8, FullPolicy::Drop);
        offer(&mut ct, 0, 0, PROTO_UDP, false); // udp unreplied: 500 ps
        offer(&mut ct, 1, 0, PROTO_TCP, false); // tcp unreplied: 1000 ps
        offer(&mut ct, 1, 100, PROTO_TCP, true); // tcp replied: 100000 ps from 100
        ct.expire(499);
        assert_eq!(ct.len(), 2);
        ct.expire(500);
        assert!(!ct.contains(0) && ct.contains(1));
        ct.expire(100_099);
        assert!(ct.contains(1));
        ct.expire(100_100);
        assert_eq!((ct.len(), ct.aged), (0, 2));
        // A packet of an aged connection inserts it again.
        let s = offer(&mut ct, 1, 200_000, PROTO_TCP, false);
        assert!(!s.hit && ct.contains(1));
    }

    #[test]
    fn an_aged_entry_frees_room_for_a_new_connection() {
        let mut ct = table(1, FullPolicy::Drop);
        offer(&mut ct, 0, 0, PROTO_UDP, false);
        assert_eq!(offer(&mut ct, 1, 100, PROTO_UDP, false).drop, Some(DropReason::ConntrackFull));
        assert!(offer(&mut ct, 1, 500, PROTO_UDP, false).drop.is_none());
        assert_eq!(ct.aged, 1);
    }
}
