//! A host's egress below its stack, the place of a Linux qdisc chain:
//!
//! ```text
//!  stack ──> jitter (random processing delay) ──> shaper (htb class: rate/burst, ceil/cburst, queue)
//!        ──> delay line (netem delay) ──> NIC (DMA, port)
//! ```
//!
//! - **Jitter**: every packet is held for a random time drawn from the
//!   host's own stream (`rng.rs`, domain `host_jitter`), but never leaves
//!   before the packet ahead of it: it leaves at `max(previous exit, now +
//!   draw)`, so no flow is reordered. This is the variation of stack and
//!   interrupt processing that keeps drop-tail queues from phase-locking.
//! - **Shaper**: a FIFO (the leaf qdisc of an htb class: a packet or byte
//!   limit, drops `shaper_queue_full`) drained by two token buckets as an
//!   htb class keeps them: `tokens` fill at `rate` up to `burst`, `ctokens`
//!   at `ceil` up to `cburst`. The head leaves when both are >= 0 and is then
//!   charged its length to both (they may go negative, as htb's do), so the
//!   class sends at up to `ceil`, `burst` bytes at a time after idle, and at
//!   `rate` in the long run. A single class has no parent to borrow from.
//! - **Delay line**: a fixed one-way delay (`netem delay`) with netem's packet
//!   limit (drops `egress_delay_full`); FIFO, no reordering. A traffic entry
//!   may have a delay of its own on a host (`flow_delays`): its packets take a
//!   line of their own instead, as netem under a class a filter selects.
//!
//! All arithmetic is integral: the shaper's buckets are `token_bucket.rs`'s,
//! in bit-picoseconds.

use crate::error::ConfigError;
use crate::ids::PacketId;
use crate::rng::RandomStream;
use crate::token_bucket::TokenBuckets;
use crate::units::SimTime;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Resolved egress settings of a host (`network.host.egress` or an override).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EgressConfig {
    /// Added one-way delay (`tc netem delay`); 0: no delay line.
    #[serde(default)]
    pub delay_ps: u64,
    /// Packets the delay line holds (netem's `limit`, 1000 by default).
    #[serde(default = "default_delay_limit")]
    pub delay_limit_packets: u32,
    #[serde(default)]
    pub shaper: Option<ShaperConfig>,
    #[serde(default)]
    pub jitter: Option<JitterConfig>,
    /// Per traffic entry (by name): a delay for its packets leaving this host
    /// instead of `delay_ps`, in a line of its own (netem on a filtered class).
    #[serde(default)]
    pub flow_delays_ps: std::collections::BTreeMap<String, u64>,
}

fn default_delay_limit() -> u32 {
    1000
}

/// Resolved htb-like class.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ShaperConfig {
    pub rate_bps: u64,
    pub burst_bytes: u64,
    pub ceil_bps: u64,
    pub cburst_bytes: u64,
    /// Packets the queue holds (the leaf pfifo's limit).
    pub limit_packets: u32,
    /// Bytes the queue holds (a bfifo leaf); `None`: packets only.
    #[serde(default)]
    pub limit_bytes: Option<u64>,
}

/// Distribution of the transmit processing jitter.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum JitterKind {
    /// Exponential with the given mean.
    #[default]
    Exponential,
    /// Uniform on [0, 2 x mean].
    Uniform,
}

/// Resolved jitter settings.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct JitterConfig {
    #[serde(default)]
    pub distribution: JitterKind,
    pub mean_ps: u64,
}

impl EgressConfig {
    /// Checks ranges; field paths start at `path`.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let err = |field: &str, msg: &str| Err(ConfigError::new(format!("{path}.{field}"), msg.to_string()));
        if self.delay_limit_packets == 0 {
            return err("delay_limit", "must be >= 1 packet");
        }
        if let Some(s) = &self.shaper {
            if s.rate_bps == 0 {
                return err("shaper.rate", "must be > 0");
            }
            if s.ceil_bps < s.rate_bps {
                return err("shaper.ceil", "must be >= rate");
            }
            if s.burst_bytes == 0 || s.cburst_bytes == 0 {
                return err("shaper.burst", "burst and cburst must be > 0");
            }
            if s.limit_packets == 0 || s.limit_bytes == Some(0) {
                return err("shaper.limit", "must be >= 1");
            }
        }
        Ok(())
    }

    /// Whether the settings hold packets at all.
    pub fn is_active(&self) -> bool {
        self.delay_ps > 0
            || self.shaper.is_some()
            || self.jitter.is_some_and(|j| j.mean_ps > 0)
            || !self.flow_delays_ps.is_empty()
    }
}

/// A FIFO of packets each leaving at `max(previous exit, entry + delay)`.
#[derive(Clone, Debug, Default)]
pub struct DelayLine {
    line: VecDeque<(SimTime, PacketId)>,
    last_exit: SimTime,
    pub packets: u64,
    /// Sum of the time packets spent in the line, ps.
    pub held_ps: u128,
    pub drops: u64,
    pub high_water: u64,
}

impl DelayLine {
    /// A packet enters at `now` for at least `delay`; returns its exit time
    /// and whether it is the head (an exit event must be scheduled).
    pub fn enter(&mut self, now: SimTime, delay: SimTime, id: PacketId) -> (SimTime, bool) {
        let exit = self.last_exit.max(now + delay);
        self.last_exit = exit;
        self.line.push_back((exit, id));
        self.packets += 1;
        self.held_ps += (exit - now).0 as u128;
        self.high_water = self.high_water.max(self.line.len() as u64);
        (exit, self.line.len() == 1)
    }

    /// Takes the head; returns it and the next head's exit time.
    pub fn leave(&mut self) -> (PacketId, Option<SimTime>) {
        let (_, id) = self.line.pop_front().expect("egress exit from an empty line");
        (id, self.line.front().map(|x| x.0))
    }

    pub fn held(&self) -> usize {
        self.line.len()
    }
}

/// Draws a host's transmit processing delays.
#[derive(Clone, Debug)]
pub struct Jitter {
    cfg: JitterConfig,
    rng: RandomStream,
}

impl Jitter {
    pub fn new(cfg: JitterConfig, seed: u64, node: u32) -> Jitter {
        Jitter { cfg, rng: RandomStream::new(seed, "host_jitter", node as u64) }
    }

    /// The next delay, rounded to the picosecond.
    pub fn draw(&mut self) -> SimTime {
        let mean = self.cfg.mean_ps as f64;
        let x = match self.cfg.distribution {
            JitterKind::Exponential => self.rng.exponential(mean),
            JitterKind::Uniform => 2.0 * mean * self.rng.next_open01(),
        };
        SimTime(x.round() as u64)
    }
}

/// Two token buckets and a FIFO: an htb class with its leaf queue.
#[derive(Clone, Debug)]
pub struct Shaper {
    cfg: ShaperConfig,
    buckets: TokenBuckets,
    queue: VecDeque<(PacketId, u32, SimTime)>,
    queued_bytes: u64,
    /// A wake-up for the head is pending.
    pub armed: bool,
    pub packets: u64,
    pub bytes: u64,
    pub drops: u64,
    pub high_water_bytes: u64,
    /// Sum of the time packets waited in the queue, ps.
    pub wait_ps: u128,
}

impl Shaper {
    /// A shaper with full buckets at time 0.
    pub fn new(cfg: ShaperConfig) -> Shaper {
        Shaper {
            cfg,
            buckets: TokenBuckets::new(cfg.rate_bps, cfg.burst_bytes, cfg.ceil_bps, cfg.cburst_bytes),
            queue: VecDeque::new(),
            queued_bytes: 0,
            armed: false,
            packets: 0,
            bytes: 0,
            drops: 0,
            high_water_bytes: 0,
            wait_ps: 0,
        }
    }

    pub fn held(&self) -> usize {
        self.queue.len()
    }

    /// Whether the queue has room for a packet of `bytes`.
    pub fn has_room(&self, bytes: u32) -> bool {
        self.queue.len() < self.cfg.limit_packets as usize
            && self.cfg.limit_bytes.is_none_or(|l| self.queued_bytes + bytes as u64 <= l)
    }

    /// Queues a packet (the caller checked `has_room`); returns whether it is the head.
    pub fn push(&mut self, now: SimTime, id: PacketId, bytes: u32) -> bool {
        self.queue.push_back((id, bytes, now));
        self.queued_bytes += bytes as u64;
        self.high_water_bytes = self.high_water_bytes.max(self.queued_bytes);
        self.queue.len() == 1
    }

    /// When the head may leave (`now` or later); `None` if the queue is empty.
    pub fn head_ready(&mut self, now: SimTime) -> Option<SimTime> {
        self.queue.front()?;
        Some(self.buckets.ready(now))
    }

    /// Takes the head (its time has come) and charges both buckets.
    pub fn pop(&mut self, now: SimTime) -> PacketId {
        let (id, bytes, t) = self.queue.pop_front().expect("shaper dequeue from an empty queue");
        self.wait_ps += (now - t).0 as u128;
        self.queued_bytes -= bytes as u64;
        self.buckets.charge(now, bytes);
        self.packets += 1;
        self.bytes += bytes as u64;
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(rate: u64, burst: u64, ceil: u64, cburst: u64) -> ShaperConfig {
        ShaperConfig {
            rate_bps: rate,
            burst_bytes: burst,
            ceil_bps: ceil,
            cburst_bytes: cburst,
            limit_packets: 1 << 20,
            limit_bytes: None,
        }
    }

    /// Drains a greedy source of `n` packets of `len` bytes; departure times.
    fn drain(s: &mut Shaper, n: u32, len: u32) -> Vec<SimTime> {
        for i in 0..n {
            s.push(SimTime::ZERO, PacketId(i), len);
        }
        let mut now = SimTime::ZERO;
        let mut out = Vec::new();
        while let Some(t) = s.head_ready(now) {
            now = t;
            s.pop(now);
            out.push(now);
        }
        out
    }

    #[test]
    fn a_burst_leaves_at_ceil_then_the_rate_holds() {
        // 1 Gbit/s with a 15,000 B burst; ceil 10 Gbit/s, cburst one packet.
        let mut s = Shaper::new(cfg(1_000_000_000, 15_000, 10_000_000_000, 1500));
        let t = drain(&mut s, 100, 1500);
        // The ceil bucket's 1500 B let two frames go at once (htb sends while
        // tokens >= 0); then, within the burst, frames are 1.2 us apart (1500 B at 10 Gbit/s).
        assert_eq!(t[1], t[0]);
        assert_eq!(t[2] - t[1], SimTime(1_200_000));
        assert_eq!(t[5] - t[4], SimTime(1_200_000));
        // Long after, 12 us apart (1500 B at 1 Gbit/s).
        assert_eq!(t[99] - t[98], SimTime(12_000_000));
    }

    #[test]
    fn the_head_waits_exactly_for_its_tokens() {
        let mut s = Shaper::new(cfg(8_000_000, 100, 8_000_000, 100)); // 1 byte per us
        s.push(SimTime::ZERO, PacketId(0), 100);
        s.push(SimTime::ZERO, PacketId(1), 100);
        assert_eq!(s.head_ready(SimTime::ZERO), Some(SimTime::ZERO));
        s.pop(SimTime::ZERO);
        // Tokens at 0 after the charge: the second packet may go at once (htb
        // sends while tokens >= 0), the third waits 100 us.
        assert_eq!(s.head_ready(SimTime::ZERO), Some(SimTime::ZERO));
        s.pop(SimTime::ZERO);
        s.push(SimTime::ZERO, PacketId(2), 100);
        assert_eq!(s.head_ready(SimTime::ZERO), Some(SimTime::from_us(100)));
    }

    #[test]
    fn the_queue_limit_counts_packets_and_bytes() {
        let mut c = cfg(1_000_000, 1500, 1_000_000, 1500);
        c.limit_packets = 2;
        c.limit_bytes = Some(2500);
        let mut s = Shaper::new(c);
        assert!(s.has_room(1500));
        s.push(SimTime::ZERO, PacketId(0), 1500);
        assert!(!s.has_room(1500));
        assert!(s.has_room(1000));
        s.push(SimTime::ZERO, PacketId(1), 1000);
        assert!(!s.has_room(1));
    }

    #[test]
    fn a_delay_line_never_reorders() {
        let mut d = DelayLine::default();
        let (a, head) = d.enter(SimTime(0), SimTime(100), PacketId(0));
        assert!(head);
        assert_eq!(a, SimTime(100));
        // A shorter delay drawn later still leaves after the first.
        let (b, head) = d.enter(SimTime(10), SimTime(5), PacketId(1));
        assert!(!head);
        assert_eq!(b, SimTime(100));
        assert_eq!(d.leave(), (PacketId(0), Some(SimTime(100))));
    }

    #[test]
    fn jitter_draws_have_the_configured_mean() {
        for distribution in [JitterKind::Exponential, JitterKind::Uniform] {
            let mut j = Jitter::new(JitterConfig { distribution, mean_ps: 2_000_000 }, 3, 1);
            let n = 100_000;
            let mean = (0..n).map(|_| j.draw().0 as f64).sum::<f64>() / n as f64;
            assert!((mean / 2_000_000.0 - 1.0).abs() < 0.02, "{distribution:?}: {mean}");
        }
    }
}
