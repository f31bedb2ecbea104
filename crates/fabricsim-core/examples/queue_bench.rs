//! Event-queue benchmark: which priority queue suits the simulator's workload.
//!
//! For each resolved scenario given (JSON files, e.g. from
//! `python -m fabricsim.bench --dump NAME`), the simulation runs once with the
//! queue's operations recorded (feature `queue-trace`; `QUEUE_BENCH_SAVE=DIR`
//! keeps them as `DIR/NAME.trace`, and a `.trace` file can be given instead of
//! a scenario); then
//!
//! 1. the time distribution is logged: how far ahead events are scheduled
//!    (log2 histogram of `push time - now`), how many are pending;
//! 2. the trace is replayed against every candidate queue (same pushes and
//!    pops, same order checked), best of three;
//! 3. the "hold" model runs at fixed pending counts (40, 3,000, 30,000,
//!    300,000): pop the earliest event, push one at its time plus a delay
//!    drawn from the scenario's recorded delays.
//!
//! ```sh
//! cargo run --release -p fabricsim-core --features queue-trace --example queue_bench -- a.json b.json
//! # instructions of one candidate's replay (the heap's is counted too), free of timing noise:
//! QUEUE_BENCH_COUNT=radix valgrind --tool=callgrind --toggle-collect='*replay*' target/release/examples/queue_bench a.json
//! ```
//!
//! Candidates: the 4-ary heap of 128-bit `(time, seq)` keys used until now; the
//! standard library's binary heap; a radix heap over the (monotone) event time
//! with FIFO buckets; a calendar queue (Brown 1988) with resizing; a ladder
//! queue (Tang, Goh and Thng 2005). Every candidate must give the order of the
//! reference heap: non-decreasing time, FIFO among equal times.

use fabricsim_core::event_queue::trace::POP;
use fabricsim_core::{Scenario, Simulation};
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

/// Stands in for the simulator's `Event` (12 bytes).
type Payload = [u32; 3];

trait Queue {
    const NAME: &'static str;
    fn new() -> Self;
    fn push(&mut self, t: u64, e: Payload);
    fn pop(&mut self) -> Option<(u64, Payload)>;
}

// ------------------------------------------------------------ 4-ary heap (u128)

#[derive(Clone, Copy)]
struct HEntry {
    key: u128,
    e: Payload,
}

/// The queue used before: an implicit 4-ary min-heap keyed by `time << 64 | seq`.
struct Heap4 {
    heap: Vec<HEntry>,
    seq: u64,
}

impl Queue for Heap4 {
    const NAME: &'static str = "4-ary heap (u128 keys)";
    fn new() -> Self {
        Heap4 { heap: Vec::with_capacity(1024), seq: 0 }
    }
    #[inline]
    fn push(&mut self, t: u64, e: Payload) {
        let key = ((t as u128) << 64) | self.seq as u128;
        self.seq += 1;
        let mut i = self.heap.len();
        self.heap.push(HEntry { key, e });
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.heap[parent].key <= key {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = HEntry { key, e };
    }
    #[inline]
    fn pop(&mut self) -> Option<(u64, Payload)> {
        let last = self.heap.pop()?;
        let n = self.heap.len();
        if n == 0 {
            return Some(((last.key >> 64) as u64, last.e));
        }
        let top = self.heap[0];
        let mut i = 0;
        loop {
            let first = i * 4 + 1;
            if first >= n {
                break;
            }
            let end = (first + 4).min(n);
            let mut best = first;
            let mut best_key = self.heap[first].key;
            for c in first + 1..end {
                let k = self.heap[c].key;
                if k < best_key {
                    best = c;
                    best_key = k;
                }
            }
            if last.key <= best_key {
                break;
            }
            self.heap[i] = self.heap[best];
            i = best;
        }
        self.heap[i] = last;
        Some(((top.key >> 64) as u64, top.e))
    }
}

// ------------------------------------------------------------ std binary heap

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Rev(std::cmp::Reverse<(u64, u64)>, Payload);

struct StdHeap {
    heap: BinaryHeap<Rev>,
    seq: u64,
}

impl Queue for StdHeap {
    const NAME: &'static str = "std BinaryHeap (time, seq)";
    fn new() -> Self {
        StdHeap { heap: BinaryHeap::with_capacity(1024), seq: 0 }
    }
    #[inline]
    fn push(&mut self, t: u64, e: Payload) {
        self.heap.push(Rev(std::cmp::Reverse((t, self.seq)), e));
        self.seq += 1;
    }
    #[inline]
    fn pop(&mut self) -> Option<(u64, Payload)> {
        self.heap.pop().map(|Rev(std::cmp::Reverse((t, _)), e)| (t, e))
    }
}

// ------------------------------------------------------------ radix heap

/// Radix heap over the event time (Ahuja, Mehlhorn, Orlin and Tarjan 1990):
/// bucket `b` holds events whose time first differs from the last extracted
/// time in bit `b - 1`; bucket 0 holds events at exactly that time, in FIFO
/// order. Redistribution scans a bucket in order, so equal times keep their
/// scheduling order without a sequence number.
struct Radix {
    last: u64,
    b0: Vec<(u64, Payload)>,
    b0_head: usize,
    buckets: Vec<Vec<(u64, Payload)>>,
    mask: u64,
    scratch: Vec<(u64, Payload)>,
}

impl Radix {
    #[inline]
    fn bucket(t: u64, last: u64) -> usize {
        64 - (t ^ last).leading_zeros() as usize
    }
}

impl Queue for Radix {
    const NAME: &'static str = "radix heap (u64 time, FIFO buckets)";
    fn new() -> Self {
        Radix {
            last: 0,
            b0: Vec::with_capacity(64),
            b0_head: 0,
            buckets: (0..65).map(|_| Vec::new()).collect(),
            mask: 0,
            scratch: Vec::new(),
        }
    }
    #[inline]
    fn push(&mut self, t: u64, e: Payload) {
        debug_assert!(t >= self.last);
        let b = Self::bucket(t, self.last);
        if b == 0 {
            self.b0.push((t, e));
        } else {
            self.buckets[b].push((t, e));
            self.mask |= 1 << (b - 1);
        }
    }
    #[inline]
    fn pop(&mut self) -> Option<(u64, Payload)> {
        if self.b0_head == self.b0.len() {
            self.b0.clear();
            self.b0_head = 0;
            if self.mask == 0 {
                return None;
            }
            let i = self.mask.trailing_zeros() as usize + 1;
            self.mask &= !(1 << (i - 1));
            std::mem::swap(&mut self.scratch, &mut self.buckets[i]);
            let m = self.scratch.iter().map(|x| x.0).min().unwrap();
            self.last = m;
            for &x in &self.scratch {
                let b = Self::bucket(x.0, m);
                if b == 0 {
                    self.b0.push(x);
                } else {
                    self.buckets[b].push(x);
                    self.mask |= 1 << (b - 1);
                }
            }
            self.scratch.clear();
        }
        let x = self.b0[self.b0_head];
        self.b0_head += 1;
        Some(x)
    }
}

// ------------------------------------------------------------ radix heap keeping bucket minima

/// The radix heap, with the earliest time of each bucket kept up to date on
/// push, so that emptying a bucket needs one pass instead of two.
struct RadixMin {
    last: u64,
    b0: Vec<(u64, Payload)>,
    b0_head: usize,
    buckets: [Vec<(u64, Payload)>; 64],
    mins: [u64; 64],
    mask: u64,
    scratch: Vec<(u64, Payload)>,
}

impl Queue for RadixMin {
    const NAME: &'static str = "radix heap, bucket minima";
    fn new() -> Self {
        RadixMin {
            last: 0,
            b0: Vec::with_capacity(64),
            b0_head: 0,
            buckets: std::array::from_fn(|_| Vec::new()),
            mins: [u64::MAX; 64],
            mask: 0,
            scratch: Vec::new(),
        }
    }
    #[inline]
    fn push(&mut self, t: u64, e: Payload) {
        let d = t ^ self.last;
        if d == 0 {
            self.b0.push((t, e));
        } else {
            let b = 63 - d.leading_zeros() as usize;
            self.buckets[b].push((t, e));
            self.mins[b] = self.mins[b].min(t);
            self.mask |= 1 << b;
        }
    }
    #[inline]
    fn pop(&mut self) -> Option<(u64, Payload)> {
        if self.b0_head == self.b0.len() {
            self.b0.clear();
            self.b0_head = 0;
            if self.mask == 0 {
                return None;
            }
            let i = self.mask.trailing_zeros() as usize;
            self.mask &= self.mask - 1;
            std::mem::swap(&mut self.scratch, &mut self.buckets[i]);
            let m = self.mins[i];
            self.mins[i] = u64::MAX;
            self.last = m;
            for &x in &self.scratch {
                let d = x.0 ^ m;
                if d == 0 {
                    self.b0.push(x);
                } else {
                    let b = 63 - d.leading_zeros() as usize;
                    self.buckets[b].push(x);
                    self.mins[b] = self.mins[b].min(x.0);
                    self.mask |= 1 << b;
                }
            }
            self.scratch.clear();
        }
        let x = self.b0[self.b0_head];
        self.b0_head += 1;
        Some(x)
    }
}

// ------------------------------------------------------------ radix heap with a sorted front

/// The radix heap above, but a small lowest bucket (at most `SMALL` events) is
/// sorted into a short "front" run instead of being redistributed one level at
/// a time; events pushed below the front's limit are inserted into it in
/// order (after equal times, so FIFO holds).
struct RadixFront {
    last: u64,
    /// Time of the latest event taken out (pushes may not go before it).
    now: u64,
    front: Vec<(u64, Payload)>,
    head: usize,
    /// Every event in a bucket is at or after this time.
    limit: u64,
    buckets: Vec<Vec<(u64, Payload)>>,
    mask: u64,
    scratch: Vec<(u64, Payload)>,
}

const SMALL: usize = 16;

impl Queue for RadixFront {
    const NAME: &'static str = "radix heap + sorted front";
    fn new() -> Self {
        RadixFront {
            last: 0,
            now: 0,
            front: Vec::with_capacity(64),
            head: 0,
            limit: 1,
            buckets: (0..65).map(|_| Vec::new()).collect(),
            mask: 0,
            scratch: Vec::new(),
        }
    }
    #[inline]
    fn push(&mut self, t: u64, e: Payload) {
        debug_assert!(t >= self.now);
        if t < self.limit {
            let mut i = self.front.len();
            while i > self.head && self.front[i - 1].0 > t {
                i -= 1;
            }
            self.front.insert(i, (t, e));
            return;
        }
        let b = Radix::bucket(t, self.last);
        debug_assert!(b > 0);
        self.buckets[b].push((t, e));
        self.mask |= 1 << (b - 1);
    }
    #[inline]
    fn pop(&mut self) -> Option<(u64, Payload)> {
        if self.head == self.front.len() {
            self.front.clear();
            self.head = 0;
            if self.mask == 0 {
                return None;
            }
            let i = self.mask.trailing_zeros() as usize + 1;
            self.mask &= !(1 << (i - 1));
            std::mem::swap(&mut self.scratch, &mut self.buckets[i]);
            if self.scratch.len() <= SMALL {
                // Bucket i covers times up to the next multiple of 2^(i-1) above `last`'s prefix.
                self.limit = ((self.last >> (i - 1)) | 1).wrapping_add(1) << (i - 1);
                if self.limit == 0 {
                    self.limit = u64::MAX;
                }
                self.front.extend_from_slice(&self.scratch);
                // Stable: equal times keep their bucket (scheduling) order.
                self.front.sort_by_key(|x| x.0);
            } else {
                let m = self.scratch.iter().map(|x| x.0).min().unwrap();
                self.last = m;
                self.limit = m + 1;
                for &x in &self.scratch {
                    let b = Radix::bucket(x.0, m);
                    if b == 0 {
                        self.front.push(x);
                    } else {
                        self.buckets[b].push(x);
                        self.mask |= 1 << (b - 1);
                    }
                }
            }
            self.scratch.clear();
        }
        let x = self.front[self.head];
        self.head += 1;
        self.now = x.0;
        Some(x)
    }
}

// ------------------------------------------------------------ calendar queue

/// Calendar queue (Brown 1988): `nb` buckets ("days") of `2^shift` ps, each a
/// list sorted by `(time, seq)`; dequeue walks the days of the current "year";
/// the number of days doubles or halves with the size and the day width is
/// re-estimated from the separation of the earliest events.
struct Calendar {
    days: Vec<VecDeque<(u128, Payload)>>,
    shift: u32,
    cur: usize,
    top: u64,
    last: u64,
    len: usize,
    seq: u64,
}

impl Calendar {
    fn day(&self, t: u64) -> usize {
        ((t >> self.shift) as usize) & (self.days.len() - 1)
    }

    fn insert(&mut self, key: u128, e: Payload) {
        let d = self.day((key >> 64) as u64);
        let q = &mut self.days[d];
        let mut pos = q.len();
        while pos > 0 && q[pos - 1].0 > key {
            pos -= 1;
        }
        q.insert(pos, (key, e));
    }

    fn resize(&mut self, nb: usize) {
        let mut all: Vec<(u128, Payload)> = self.days.iter_mut().flat_map(|d| d.drain(..)).collect();
        all.sort_unstable_by_key(|x| x.0);
        // Width: three times the mean separation of the earliest events (gaps
        // over twice the first mean excluded), as Brown recommends.
        let sample: Vec<u64> = all.iter().take(25).map(|x| (x.0 >> 64) as u64).collect();
        let mut width = 1u64 << self.shift;
        if sample.len() >= 2 {
            let gaps: Vec<u64> = sample.windows(2).map(|w| w[1] - w[0]).collect();
            let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
            let kept: Vec<u64> = gaps.iter().copied().filter(|&g| g as f64 <= 2.0 * mean).collect();
            let m2 = if kept.is_empty() { mean } else { kept.iter().sum::<u64>() as f64 / kept.len() as f64 };
            width = ((3.0 * m2) as u64).max(1);
        }
        self.shift = 63 - width.next_power_of_two().leading_zeros();
        self.days = (0..nb).map(|_| VecDeque::new()).collect();
        for (k, e) in all {
            self.insert(k, e);
        }
        self.cur = self.day(self.last);
        self.top = ((self.last >> self.shift) + 1) << self.shift;
    }
}

impl Queue for Calendar {
    const NAME: &'static str = "calendar queue (Brown 1988)";
    fn new() -> Self {
        Calendar {
            days: (0..16).map(|_| VecDeque::new()).collect(),
            shift: 20,
            cur: 0,
            top: 1 << 20,
            last: 0,
            len: 0,
            seq: 0,
        }
    }
    fn push(&mut self, t: u64, e: Payload) {
        let key = ((t as u128) << 64) | self.seq as u128;
        self.seq += 1;
        self.insert(key, e);
        self.len += 1;
        if self.len > 2 * self.days.len() {
            self.resize(self.days.len() * 2);
        }
    }
    fn pop(&mut self) -> Option<(u64, Payload)> {
        if self.len == 0 {
            return None;
        }
        let nb = self.days.len();
        let mut found = None;
        for _ in 0..nb {
            if let Some(&(k, _)) = self.days[self.cur].front() {
                if ((k >> 64) as u64) < self.top {
                    found = Some(self.cur);
                    break;
                }
            }
            self.cur = (self.cur + 1) & (nb - 1);
            self.top += 1 << self.shift;
        }
        let d = match found {
            Some(d) => d,
            None => {
                // A whole year without an event: jump to the earliest one.
                let (d, k) =
                    (0..nb).filter_map(|d| self.days[d].front().map(|x| (d, x.0))).min_by_key(|x| x.1).unwrap();
                let t = (k >> 64) as u64;
                self.cur = d;
                self.top = ((t >> self.shift) + 1) << self.shift;
                d
            }
        };
        let (k, e) = self.days[d].pop_front().unwrap();
        self.len -= 1;
        self.last = (k >> 64) as u64;
        if nb > 16 && self.len < nb / 2 {
            self.resize(nb / 2);
        }
        Some((self.last, e))
    }
}

// ------------------------------------------------------------ ladder queue

const THRES: usize = 50;

struct Rung {
    buckets: Vec<Vec<(u128, Payload)>>,
    start: u64,
    width: u64,
    cur: usize,
}

impl Rung {
    fn cur_start(&self) -> u64 {
        self.start.saturating_add(self.width.saturating_mul(self.cur as u64))
    }
}

/// Ladder queue (Tang, Goh and Thng 2005): an unsorted `top` for far-future
/// events, rungs of buckets that split a crowded bucket into a finer rung, and
/// a small sorted `bottom` from which events leave. (The bottom-to-rung
/// transfer on a crowded bottom is left out.)
struct Ladder {
    top: Vec<(u128, Payload)>,
    top_min: u64,
    top_max: u64,
    top_start: u64,
    rungs: Vec<Rung>,
    /// Sorted descending: the earliest event is last.
    bottom: Vec<(u128, Payload)>,
    spare: Vec<Vec<(u128, Payload)>>,
    seq: u64,
}

impl Ladder {
    fn new_rung(&mut self, items: Vec<(u128, Payload)>, start: u64, span: u64) -> Rung {
        let n = items.len().max(1);
        let width = (span / n as u64).max(1);
        let nb = (span / width + 1) as usize;
        let mut buckets: Vec<Vec<(u128, Payload)>> = Vec::with_capacity(nb);
        for _ in 0..nb {
            buckets.push(self.spare.pop().unwrap_or_default());
        }
        for x in items {
            let t = (x.0 >> 64) as u64;
            buckets[((t - start) / width) as usize].push(x);
        }
        Rung { buckets, start, width, cur: 0 }
    }

    fn refill(&mut self) -> bool {
        loop {
            if self.rungs.is_empty() {
                if self.top.is_empty() {
                    return false;
                }
                let items = std::mem::take(&mut self.top);
                let (lo, hi) = (self.top_min, self.top_max);
                self.top_start = hi.saturating_add(1);
                self.top_min = u64::MAX;
                self.top_max = 0;
                let r = self.new_rung(items, lo, hi - lo + 1);
                self.rungs.push(r);
            }
            let r = self.rungs.last_mut().unwrap();
            while r.cur < r.buckets.len() && r.buckets[r.cur].is_empty() {
                r.cur += 1;
            }
            if r.cur == r.buckets.len() {
                let r = self.rungs.pop().unwrap();
                self.spare.extend(r.buckets);
                continue;
            }
            let idx = r.cur;
            r.cur += 1;
            let items = std::mem::take(&mut r.buckets[idx]);
            let (bstart, width) = (r.start + idx as u64 * r.width, r.width);
            if items.len() > THRES && width > 1 {
                let child = self.new_rung(items, bstart, width);
                self.rungs.push(child);
                continue;
            }
            let mut items = items;
            items.sort_unstable_by(|a, b| b.0.cmp(&a.0));
            self.bottom.extend_from_slice(&items);
            items.clear();
            self.spare.push(items);
            return true;
        }
    }
}

impl Queue for Ladder {
    const NAME: &'static str = "ladder queue (Tang et al. 2005)";
    fn new() -> Self {
        Ladder {
            top: Vec::new(),
            top_min: u64::MAX,
            top_max: 0,
            top_start: 0,
            rungs: Vec::new(),
            bottom: Vec::new(),
            spare: Vec::new(),
            seq: 0,
        }
    }
    fn push(&mut self, t: u64, e: Payload) {
        let key = ((t as u128) << 64) | self.seq as u128;
        self.seq += 1;
        if t >= self.top_start {
            self.top.push((key, e));
            self.top_min = self.top_min.min(t);
            self.top_max = self.top_max.max(t);
            return;
        }
        for r in self.rungs.iter_mut() {
            if t >= r.cur_start() {
                let i = ((t - r.start) / r.width) as usize;
                r.buckets[i].push((key, e));
                return;
            }
        }
        let pos = self.bottom.partition_point(|x| x.0 > key);
        self.bottom.insert(pos, (key, e));
    }
    fn pop(&mut self) -> Option<(u64, Payload)> {
        if self.bottom.is_empty() && !self.refill() {
            return None;
        }
        self.bottom.pop().map(|(k, e)| ((k >> 64) as u64, e))
    }
}

// ------------------------------------------------------------ workloads

struct Stats {
    pushes: u64,
    pops: u64,
    mean_pending: f64,
    max_pending: u64,
    zero_delay: u64,
    hist: [u64; 65],
    deltas: Vec<u64>,
}

fn analyse(trace: &[u64]) -> Stats {
    let mut s = Stats {
        pushes: 0,
        pops: 0,
        mean_pending: 0.0,
        max_pending: 0,
        zero_delay: 0,
        hist: [0; 65],
        deltas: Vec::new(),
    };
    let (mut now, mut pending, mut sum) = (0u64, 0u64, 0f64);
    let mut q = Heap4::new();
    let pushes = trace.iter().filter(|&&x| x != POP).count().max(1);
    let stride = (pushes / 1_000_000).max(1);
    for &op in trace {
        if op == POP {
            if let Some((t, _)) = q.pop() {
                now = t;
                pending -= 1;
                s.pops += 1;
                sum += pending as f64;
            }
        } else {
            let d = op - now;
            if s.pushes % stride as u64 == 0 {
                s.deltas.push(d);
            }
            s.pushes += 1;
            s.hist[64 - d.leading_zeros() as usize] += 1;
            s.zero_delay += (d == 0) as u64;
            q.push(op, [0; 3]);
            pending += 1;
            s.max_pending = s.max_pending.max(pending);
        }
    }
    s.mean_pending = sum / s.pops.max(1) as f64;
    s
}

/// Replays `trace`; returns (seconds, order checksum).
#[inline(never)]
fn replay<Q: Queue>(trace: &[u64]) -> (f64, u64) {
    let mut best = f64::MAX;
    let mut sum = 0;
    for _ in 0..repetitions() {
        let mut q = Q::new();
        let mut h = 0u64;
        let mut id = 0u32;
        let t0 = Instant::now();
        for &op in trace {
            if op == POP {
                if let Some((t, e)) = q.pop() {
                    h = h.wrapping_mul(0x100000001b3).wrapping_add(e[0] as u64 ^ t);
                }
            } else {
                q.push(op, [id, 0, 0]);
                id = id.wrapping_add(1);
            }
        }
        best = best.min(t0.elapsed().as_secs_f64());
        sum = h;
    }
    (best, sum)
}

/// The hold model with `n` pending events: ns per (pop + push).
fn hold<Q: Queue>(n: usize, deltas: &[u64]) -> f64 {
    let ops = (20 * n).clamp(2_000_000, 10_000_000);
    let mut best = f64::MAX;
    for _ in 0..3 {
        let mut q = Q::new();
        let mut k = 0usize;
        let mut next = || {
            k += 1;
            // A stride that is coprime with most lengths walks the samples in a scrambled order.
            deltas[(k.wrapping_mul(7919)) % deltas.len()]
        };
        for i in 0..n {
            q.push(next(), [i as u32, 0, 0]);
        }
        let mut last = 0;
        let t0 = Instant::now();
        for _ in 0..ops {
            let (t, e) = q.pop().unwrap();
            assert!(t >= last);
            last = t;
            q.push(t + next(), e);
        }
        best = best.min(t0.elapsed().as_secs_f64() * 1e9 / ops as f64);
    }
    best
}

/// Best of three, or one run with `QUEUE_BENCH_COUNT` set (for counting
/// instructions per replay under `valgrind --tool=callgrind`; no hold model).
fn repetitions() -> usize {
    if counting() {
        1
    } else {
        3
    }
}

fn counting() -> bool {
    std::env::var_os("QUEUE_BENCH_COUNT").is_some()
}

fn run_all(trace: &[u64], deltas: &[u64]) {
    let (base, want) = replay::<Heap4>(trace);
    println!("  replay of {} operations (best of {}):", trace.len(), repetitions());
    let row = |name: &str, (secs, sum): (f64, u64)| {
        let ok = if sum == want { "same order" } else { "ORDER DIFFERS" };
        println!(
            "    {name:40} {:8.1} ms  {:6.1} ns/op  x{:.2} vs heap  {ok}",
            secs * 1e3,
            secs * 1e9 / trace.len() as f64,
            base / secs
        );
    };
    // With QUEUE_BENCH_COUNT=NAME only the candidate whose name contains NAME is replayed (after the heap).
    let only = std::env::var("QUEUE_BENCH_COUNT").unwrap_or_default();
    let wanted = |name: &str| only.is_empty() || only == "1" || name.contains(only.as_str());
    row(Heap4::NAME, (base, want));
    if wanted(StdHeap::NAME) {
        row(StdHeap::NAME, replay::<StdHeap>(trace));
    }
    if wanted(Radix::NAME) {
        row(Radix::NAME, replay::<Radix>(trace));
    }
    if wanted(RadixMin::NAME) {
        row(RadixMin::NAME, replay::<RadixMin>(trace));
    }
    if wanted(RadixFront::NAME) {
        row(RadixFront::NAME, replay::<RadixFront>(trace));
    }
    if wanted(Calendar::NAME) {
        row(Calendar::NAME, replay::<Calendar>(trace));
    }
    if wanted(Ladder::NAME) {
        row(Ladder::NAME, replay::<Ladder>(trace));
    }
    if counting() {
        return;
    }
    println!("  hold model, ns per pop+push (best of 3), delays drawn from this trace:");
    println!("    {:40} {:>9} {:>9} {:>9} {:>9}", "pending", 40, 3000, 30000, 300000);
    let sizes = [40usize, 3_000, 30_000, 300_000];
    let line = |name: &str, f: &dyn Fn(usize) -> f64| {
        let v: Vec<String> = sizes.iter().map(|&n| format!("{:9.1}", f(n))).collect();
        println!("    {name:40} {}", v.join(" "));
    };
    line(Heap4::NAME, &|n| hold::<Heap4>(n, deltas));
    line(StdHeap::NAME, &|n| hold::<StdHeap>(n, deltas));
    line(Radix::NAME, &|n| hold::<Radix>(n, deltas));
    line(RadixMin::NAME, &|n| hold::<RadixMin>(n, deltas));
    line(RadixFront::NAME, &|n| hold::<RadixFront>(n, deltas));
    line(Calendar::NAME, &|n| hold::<Calendar>(n, deltas));
    line(Ladder::NAME, &|n| hold::<Ladder>(n, deltas));
}

fn main() {
    for path in std::env::args().skip(1) {
        let (name, trace) = if path.ends_with(".trace") {
            let bytes = std::fs::read(&path).expect("readable trace file");
            let ops = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
            (path.clone(), ops)
        } else {
            let json = std::fs::read_to_string(&path).expect("readable scenario file");
            let sc = Scenario::from_json(&json).expect("valid scenario JSON");
            let mut sim = Simulation::new(&sc).expect("valid scenario");
            sim.run();
            (sc.name.clone(), sim.take_queue_trace())
        };
        // QUEUE_BENCH_SAVE=DIR keeps the trace as DIR/NAME.trace (u64 little-endian), to replay later.
        if let Some(dir) = std::env::var_os("QUEUE_BENCH_SAVE") {
            let file = std::path::Path::new(&dir).join(format!("{name}.trace"));
            let bytes: Vec<u8> = trace.iter().flat_map(|x| x.to_le_bytes()).collect();
            std::fs::write(&file, bytes).expect("writable trace file");
        }
        let s = analyse(&trace);
        println!("== {name} ({path})");
        println!(
            "  {} pushes, {} pops recorded; pending: mean {:.0}, max {}; scheduled at `now`: {:.1}%",
            s.pushes,
            s.pops,
            s.mean_pending,
            s.max_pending,
            100.0 * s.zero_delay as f64 / s.pushes.max(1) as f64
        );
        print!("  delay histogram (push time - now), share of pushes by power of two:");
        for (b, &c) in s.hist.iter().enumerate() {
            if c * 1000 >= s.pushes {
                let lo = if b == 0 { 0 } else { 1u64 << (b - 1) };
                print!(" [{}: {:.1}%]", human_ps(lo), 100.0 * c as f64 / s.pushes as f64);
            }
        }
        println!();
        run_all(&trace, &s.deltas);
    }
}

fn human_ps(ps: u64) -> String {
    match ps {
        0 => "0".into(),
        p if p < 1_000 => format!("{p}ps"),
        p if p < 1_000_000 => format!("{}ns", p / 1_000),
        p if p < 1_000_000_000 => format!("{}us", p / 1_000_000),
        p if p < 1_000_000_000_000 => format!("{}ms", p / 1_000_000_000),
        p => format!("{}s", p / 1_000_000_000_000),
    }
}
