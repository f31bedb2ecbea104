//! The event queue: a radix heap over event times with FIFO buckets.
//!
//! # Ordering guarantee
//!
//! Events come out in non-decreasing time order. Events scheduled for the same
//! time come out in the order they were scheduled (first in, first out).
//! Nothing else (no addresses, no hash order) influences the order, so a run is
//! a pure function of its inputs.
//!
//! # Design
//!
//! A discrete-event simulation never schedules an event before the one it is
//! processing, so the times taken out of the queue never decrease. A radix heap
//! (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the shortest path
//! problem", JACM 1990) exploits that: with `last` a time no later than any pending
//! event (the earliest time of the bucket emptied last), a pending event at time `t` lives in bucket `msb(t ^ last)`, the
//! highest bit in which it differs from `last`; the earliest ones live in
//! the run, a short sorted list of the earliest pending events. Taking out the
//! next event reads the run; when it is empty, the lowest non-empty bucket (a
//! bit mask finds it), whose events are all earlier than those of every other
//! bucket, is emptied: its earliest time (kept per bucket as events arrive)
//! becomes `last`; a bucket of at most 16 events is sorted (insertion sort,
//! stable) into the run whole, a larger one's events at `last` form the run
//! and the rest move to lower buckets. Every bucket event is later than the
//! latest time the run has held (`run_max`), so an event scheduled at or
//! before that time is inserted into the run behind the pending events at its
//! time or earlier, and a later one goes to its bucket. Each event moves at
//! most 64 times and in practice a few times; pushes are appends. Every step
//! scans or appends to vectors in order, so the cost hardly grows with the
//! number of pending events, where a heap's sift down misses the cache once
//! per level. A small bucket is sorted whole rather than split down to single
//! times because sorting takes fewer instructions than the several moves per
//! event a split takes (see docs/design-notes/event-queue.md).
//!
//! A caller may name events that are dead for good (a cancelled timer whose
//! generation moved on): [`EventQueue::peek_live`] drops them when it empties
//! the bucket they are in instead of moving them, and a run sorted from a
//! small bucket then reaches only its latest live event.
//!
//! FIFO order among equal times holds without a sequence number: a bucket keeps
//! its events in scheduling order, redistribution scans it in that order and
//! appends (or sorts it stably), an insertion into the run goes behind equal
//! times, and two events with the same time always share a bucket (an event
//! scheduled later, after `last` has moved towards its time, lands in the
//! bucket the earlier one sits in, or in the one that bucket was split into,
//! behind it).
//!
//! Scheduling an event before the latest one taken out is a bug in the caller
//! and panics. The simulator schedules only from inside event handlers, at the
//! current time or later; note that [`EventQueue::peek`] counts as taking out
//! for this, so nothing may be scheduled before the peeked event either.
//!
//! # Why a radix heap
//!
//! `examples/queue_bench.rs` (feature `queue-trace`) records the simulator's
//! queue operations on the benchmark scenarios and replays them against
//! candidate designs, checking that the order is identical; it also runs the
//! hold model (pop the earliest event, push one at its time plus a recorded
//! delay) at fixed numbers of pending events. A heap's cost grows with the
//! number of pending events (a cache miss per level once it outgrows the
//! cache) and the radix heap's does not; calendar and ladder queues depend on
//! bucket widths that suit one delay distribution, and a large fat-tree's
//! delays are spread too wide for any one width. The candidates and their
//! numbers are in docs/design-notes/event-queue.md.

use crate::units::SimTime;

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    time: u64,
    event: E,
}

/// A bucket of at most this many events is sorted straight into the run when
/// it is the lowest one left, instead of being split into lower buckets.
const SORT_AT_MOST: usize = 16;

/// A deterministic priority queue of events with monotone extraction times.
#[derive(Debug)]
pub struct EventQueue<E> {
    /// The bucket reference: every event in a bucket is later than this time.
    last: u64,
    /// The latest time taken out or found earliest by `peek`; nothing may be
    /// scheduled before it.
    floor: u64,
    /// The run: the earliest pending events, sorted by time then scheduling
    /// order, from `head` on; every event in a bucket is later than `run_max`.
    current: Vec<Entry<E>>,
    head: usize,
    /// The latest time the run has held since it was formed (at least `last`).
    run_max: u64,
    /// `buckets[b]`: events whose time first differs from `last` in bit `b`.
    buckets: [Vec<Entry<E>>; 64],
    /// `mins[b]`: the earliest time in `buckets[b]` (`u64::MAX` when empty),
    /// kept on push so that emptying a bucket is a single pass.
    mins: [u64; 64],
    /// Bit `b` set when `buckets[b]` is not empty.
    nonempty: u64,
    #[cfg(feature = "queue-trace")]
    trace: trace::Trace,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            last: 0,
            floor: 0,
            current: Vec::with_capacity(64),
            head: 0,
            run_max: 0,
            buckets: std::array::from_fn(|_| Vec::new()),
            mins: [u64::MAX; 64],
            nonempty: 0,
            #[cfg(feature = "queue-trace")]
            trace: trace::Trace::default(),
        }
    }

    /// Schedules `event` at `time`, which must not be before the latest event
    /// taken out.
    #[inline(always)]
    pub fn push(&mut self, time: SimTime, event: E) {
        #[cfg(feature = "queue-trace")]
        self.trace.push(time.0);
        let t = time.0;
        assert!(t >= self.floor, "event scheduled at {t} ps, before the current time {} ps", self.floor);
        let entry = Entry { time: t, event };
        if t <= self.run_max {
            self.insert_into_run(entry);
        } else {
            let b = 63 - (t ^ self.last).leading_zeros() as usize;
            self.buckets[b].push(entry);
            self.mins[b] = self.mins[b].min(t);
            self.nonempty |= 1 << b;
        }
    }

    /// Puts `entry` (not later than `run_max`) into the run behind every
    /// pending event at its time or earlier. When none is later it goes at
    /// the end. Otherwise most such events are due now, a
    /// few places behind `head`: the place is searched from the nearer end
    /// of the run's time span, and the pending events in front of it move
    /// one slot towards the free slots before `head` when they are fewer
    /// than those behind it.
    #[inline(never)]
    fn insert_into_run(&mut self, entry: Entry<E>) {
        let t = entry.time;
        let run = &mut self.current;
        let (head, len) = (self.head, run.len());
        if len == head || run[len - 1].time <= t {
            // Behind everything pending (many events due at one time, as a
            // run's start with every flow opening at zero): no search, which
            // from the front would cross all of them.
            run.push(entry);
            return;
        }
        let mut i;
        if t - self.floor <= self.run_max - t {
            i = head;
            while i < len && run[i].time <= t {
                i += 1;
            }
        } else {
            i = len;
            while i > head && run[i - 1].time > t {
                i -= 1;
            }
        }
        if i == len {
            run.push(entry);
        } else if head > 0 && i - head <= len - i {
            for k in head..i {
                run[k - 1] = run[k];
            }
            run[i - 1] = entry;
            self.head = head - 1;
        } else {
            run.insert(i, entry);
        }
    }

    /// Makes `current[head]` the earliest pending event; false if there is
    /// none. Events for which `dead` holds are dropped when a bucket they
    /// are in is emptied (see [`EventQueue::peek_live`]).
    #[inline]
    fn settle<F: Fn(&E) -> bool>(&mut self, dead: &F) -> bool {
        while self.head >= self.current.len() {
            self.current.clear();
            self.head = 0;
            if self.nonempty == 0 {
                return false;
            }
            self.redistribute(dead);
        }
        true
    }

    /// Empties the lowest non-empty bucket, whose events are all earlier than
    /// those of the other buckets: its earliest time becomes `last`. A small
    /// bucket is sorted into the run whole; a larger one's events at that
    /// time form the run and the rest move, in order, to lower buckets.
    /// Events for which `dead` holds are dropped instead of moved.
    #[inline(never)]
    fn redistribute<F: Fn(&E) -> bool>(&mut self, dead: &F) {
        let b = self.nonempty.trailing_zeros() as usize;
        self.nonempty &= self.nonempty - 1;
        // Its events all go to lower buckets or the run, so it can be taken
        // out and put back empty, keeping its own allocation.
        let mut events = std::mem::take(&mut self.buckets[b]);
        let min = std::mem::replace(&mut self.mins[b], u64::MAX);
        self.last = min;
        if events.len() <= SORT_AT_MOST {
            // Insertion sort: stable, so equal times keep scheduling order.
            let v = events.as_mut_slice();
            for i in 1..v.len() {
                let e = v[i];
                let mut j = i;
                while j > 0 && v[j - 1].time > e.time {
                    v[j] = v[j - 1];
                    j -= 1;
                }
                v[j] = e;
            }
            if !v.iter().any(|e| dead(&e.event)) {
                self.run_max = v[v.len() - 1].time;
                self.current.extend_from_slice(v);
            } else {
                for e in v.iter() {
                    if !dead(&e.event) {
                        self.current.push(*e);
                    }
                }
                // The run reaches its latest live event (if none is left the
                // run stays empty and the next bucket is emptied).
                if let Some(e) = self.current.last() {
                    self.run_max = e.time;
                }
            }
        } else {
            // The moves run in an inner loop that never grows a vector (with
            // the call to grow one in it, the loop's state lived on the
            // stack): a full vector ends it, and the outer loop grows that
            // one (as a push would) and goes on with the same event. The
            // minimum and the bit are set again then, which changes nothing.
            let mut nonempty = self.nonempty;
            let mut i = 0;
            loop {
                let full = loop {
                    let Some(e) = events.get(i) else { break None };
                    if dead(&e.event) {
                        i += 1;
                        continue;
                    }
                    let diff = e.time ^ min;
                    let v = if diff == 0 {
                        &mut self.current
                    } else {
                        let b = 63 - diff.leading_zeros() as usize;
                        self.mins[b] = self.mins[b].min(e.time);
                        nonempty |= 1 << b;
                        &mut self.buckets[b]
                    };
                    if v.len() == v.capacity() {
                        break Some(diff);
                    }
                    v.push(*e);
                    i += 1;
                };
                match full {
                    None => break,
                    Some(0) => self.current.reserve(1),
                    Some(diff) => self.buckets[63 - diff.leading_zeros() as usize].reserve(1),
                }
            }
            self.nonempty = nonempty;
            self.run_max = min;
        }
        events.clear();
        self.buckets[b] = events;
    }

    /// The earliest pending event, without removing it.
    #[inline]
    pub fn peek(&mut self) -> Option<(SimTime, E)> {
        self.peek_live(&|_: &E| false)
    }

    /// The earliest pending event, without removing it, after dropping the
    /// events met on the way for which `dead` holds. `dead` must name events
    /// that stay dead (a cancelled timer whose generation has moved on), so
    /// that dropping one early is the same as skipping it when it comes
    /// out: the other events keep their order. A dead event already in the
    /// sorted run may still be returned.
    #[inline]
    pub fn peek_live<F: Fn(&E) -> bool>(&mut self, dead: &F) -> Option<(SimTime, E)> {
        if !self.settle(dead) {
            return None;
        }
        let e = self.current[self.head];
        self.floor = e.time;
        Some((SimTime(e.time), e.event))
    }

    /// The event `k` places behind the earliest pending one, if the sorted
    /// run holds it (nothing is settled or moved: a hint for prefetching; an
    /// event scheduled later may still come before it).
    #[inline(always)]
    pub fn upcoming(&self, k: usize) -> Option<E> {
        match self.current.get(self.head + k) {
            Some(e) => Some(e.event),
            None if self.head + k == self.current.len() => self.first_in_buckets(),
            None => None,
        }
    }

    /// The earliest event in the buckets, when the lowest non-empty bucket
    /// is small enough to be sorted into the run whole (so its earliest event,
    /// the first at its minimum time, will come right after the run).
    #[inline(never)]
    fn first_in_buckets(&self) -> Option<E> {
        if self.nonempty == 0 {
            return None;
        }
        let b = self.nonempty.trailing_zeros() as usize;
        let bucket = &self.buckets[b];
        if bucket.len() > SORT_AT_MOST {
            return None;
        }
        let min = self.mins[b];
        bucket.iter().find(|e| e.time == min).map(|e| e.event)
    }

    /// Removes the event the last call to [`EventQueue::peek`] returned (it
    /// stays first whatever is pushed after the `peek`, as nothing may be
    /// scheduled before it); only valid after a `peek` that found one.
    #[inline]
    pub fn take_peeked(&mut self) {
        debug_assert!(self.head < self.current.len());
        self.head += 1;
    }

    /// Removes and returns the earliest pending event.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        #[cfg(feature = "queue-trace")]
        self.trace.pop();
        if !self.settle(&|_: &E| false) {
            return None;
        }
        let e = self.current[self.head];
        self.floor = e.time;
        self.head += 1;
        Some((SimTime(e.time), e.event))
    }

    /// Drops every event for which `dead` holds from the buckets (the sorted
    /// run is left as it is), keeping the others in order, and gives back
    /// the slots they held. `dead` must name events that stay dead, as for
    /// [`EventQueue::peek_live`]: dropping them now is the same as dropping
    /// them when their bucket is emptied.
    pub fn purge<F: Fn(&E) -> bool>(&mut self, dead: &F) {
        let mut bits = self.nonempty;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let v = &mut self.buckets[b];
            v.retain(|e| !dead(&e.event));
            v.shrink_to(2 * v.len());
            match v.iter().map(|e| e.time).min() {
                Some(m) => self.mins[b] = m,
                None => {
                    self.mins[b] = u64::MAX;
                    self.nonempty &= !(1 << b);
                }
            }
        }
    }

    /// Bytes allocated for pending events.
    pub fn memory_bytes(&self) -> usize {
        let slots = self.current.capacity() + self.buckets.iter().map(|b| b.capacity()).sum::<usize>();
        slots * std::mem::size_of::<Entry<E>>()
    }

    /// Pending events (counted, not kept: the event loop never asks, and a
    /// kept count would cost instructions on every push and pop; see
    /// docs/design-notes/event-queue.md).
    pub fn len(&self) -> usize {
        self.current.len() - self.head + self.buckets.iter().map(Vec::len).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.head == self.current.len() && self.nonempty == 0
    }

    /// The operations recorded so far (feature `queue-trace`), see [`trace::Trace`].
    #[cfg(feature = "queue-trace")]
    pub fn take_trace(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.trace.ops)
    }
}

#[cfg(feature = "queue-trace")]
pub mod trace {
    /// A record of queue operations for replaying against other queue designs:
    /// a push is its event time in ps, a pop is [`POP`]. At most [`LIMIT`]
    /// operations are kept (the first ones).
    #[derive(Debug, Default)]
    pub struct Trace {
        pub ops: Vec<u64>,
    }

    /// A pop in [`Trace::ops`].
    pub const POP: u64 = u64::MAX;
    /// Operations kept at most (240 MB).
    pub const LIMIT: usize = 30_000_000;

    impl Trace {
        #[inline]
        pub fn push(&mut self, t: u64) {
            if self.ops.len() < LIMIT {
                self.ops.push(t);
            }
        }

        #[inline]
        pub fn pop(&mut self) {
            if self.ops.len() < LIMIT {
                self.ops.push(POP);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::RandomStream;

    /// Drives the queue and a sorted reference with the same monotone schedule:
    /// pushes at or after the latest time taken out, `spread` ps ahead at most
    /// (small spreads give many equal times), and compares every pop.
    fn matches_reference(seed: u64, spread: u64, rounds: u32) {
        let mut r = RandomStream::new(seed, "test", spread);
        let mut q = EventQueue::new();
        let mut reference: Vec<(u64, u32)> = Vec::new();
        let (mut now, mut seq) = (0u64, 0u32);
        for _ in 0..rounds {
            for _ in 0..(r.below(200) + 1) {
                let t = now + r.below(spread + 1);
                q.push(SimTime(t), seq);
                reference.push((t, seq));
                seq += 1;
            }
            reference.sort();
            for _ in 0..r.below(180) {
                if reference.is_empty() {
                    break;
                }
                let want = reference.remove(0);
                assert_eq!(q.peek().map(|(t, e)| (t.0, e)), Some(want));
                let (t, e) = q.pop().unwrap();
                assert_eq!((t.0, e), want);
                now = t.0;
            }
            assert_eq!(q.len(), reference.len());
        }
        reference.sort();
        for want in reference {
            let (t, e) = q.pop().unwrap();
            assert_eq!((t.0, e), want);
        }
        assert!(q.is_empty() && q.pop().is_none() && q.peek().is_none());
    }

    #[test]
    fn purging_dead_events_keeps_the_live_ones_in_order_and_frees_their_slots() {
        // Events with odd values are dead; the queue with purges between pops
        // returns exactly the live events of a queue that drops them on the way.
        let mut r = RandomStream::new(7, "purge", 0);
        let (mut q, mut plain) = (EventQueue::new(), EventQueue::new());
        let (mut now, mut seq) = (0u64, 0u32);
        let dead = |e: &u32| e % 2 == 1;
        // Takes out dead events up to the next live one, and that one.
        let next_live = |q: &mut EventQueue<u32>| loop {
            let (t, e) = q.peek_live(&dead)?;
            q.take_peeked();
            if !dead(&e) {
                return Some((t, e));
            }
        };
        for round in 0..300 {
            for _ in 0..(r.below(300) + 1) {
                let t = now + r.below(1 << 20);
                q.push(SimTime(t), seq);
                plain.push(SimTime(t), seq);
                seq += 1;
            }
            if round % 7 == 0 {
                let before = q.memory_bytes();
                q.purge(&dead);
                assert!(q.memory_bytes() <= before);
            }
            for _ in 0..r.below(250) {
                let (got, want) = (next_live(&mut q), next_live(&mut plain));
                assert_eq!(got, want);
                match want {
                    Some((t, _)) => now = t.0,
                    None => break,
                }
            }
        }
        loop {
            let (got, want) = (next_live(&mut q), next_live(&mut plain));
            assert_eq!(got, want);
            if want.is_none() {
                break;
            }
        }
    }

    /// Like a simulation: take out one event, schedule 0-3 at or after it.
    fn hold_matches_reference(seed: u64, spread: u64, steps: u32) {
        let mut r = RandomStream::new(seed, "hold", spread);
        let mut q = EventQueue::new();
        let mut reference = std::collections::BTreeSet::new();
        let mut seq = 0u32;
        for _ in 0..8 {
            let t = r.below(spread + 1);
            q.push(SimTime(t), seq);
            reference.insert((t, seq));
            seq += 1;
        }
        for _ in 0..steps {
            let Some(want) = reference.pop_first() else { break };
            assert_eq!(q.peek().map(|(t, e)| (t.0, e)), Some(want));
            assert_eq!(q.pop().map(|(t, e)| (t.0, e)), Some(want));
            for _ in 0..r.below(4) {
                let t = want.0 + r.below(spread + 1);
                q.push(SimTime(t), seq);
                reference.insert((t, seq));
                seq += 1;
            }
            assert_eq!(q.len(), reference.len());
        }
    }

    /// Like a simulation with cancelled timers: events are killed at random
    /// while queued (for good), `peek_live` drops dead ones as it meets them
    /// and the loop skips those it still returns; the live events must come
    /// out exactly as from a queue that drops nothing (ties included).
    fn dropping_dead_events_keeps_the_order_of_the_others(seed: u64, spread: u64, steps: u32) {
        let mut r = RandomStream::new(seed, "dead", spread);
        let (mut q, mut plain) = (EventQueue::new(), EventQueue::new());
        let mut dead = std::collections::HashSet::new();
        let mut seq = 0u32;
        for _ in 0..8 {
            let t = r.below(spread + 1);
            q.push(SimTime(t), seq);
            plain.push(SimTime(t), seq);
            seq += 1;
        }
        let mut taken = 0;
        for _ in 0..steps {
            let d = dead.clone();
            let want = loop {
                match plain.pop() {
                    Some((_, e)) if d.contains(&e) => continue,
                    w => break w,
                }
            };
            let got = loop {
                match q.peek_live(&|e: &u32| d.contains(e)) {
                    Some((_, e)) if d.contains(&e) => q.take_peeked(),
                    Some(w) => {
                        q.take_peeked();
                        break Some(w);
                    }
                    None => break None,
                }
            };
            assert_eq!(got, want);
            let Some((now, _)) = want else { break };
            taken += 1;
            for _ in 0..r.below(4) {
                let t = now.0 + r.below(spread + 1);
                q.push(SimTime(t), seq);
                plain.push(SimTime(t), seq);
                seq += 1;
            }
            // Kill one of the recent events now and then.
            if seq > 4 && r.below(3) == 0 {
                dead.insert(seq - 1 - r.below(4) as u32);
            }
        }
        assert!(taken > steps / 2);
    }

    #[test]
    fn dead_events_dropped_early_leave_the_order_unchanged() {
        for (seed, spread) in [(1, 0), (2, 3), (3, 50), (4, 1_000), (5, 1 << 20), (6, 1 << 40)] {
            dropping_dead_events_keeps_the_order_of_the_others(seed, spread, 20_000);
        }
    }

    #[test]
    fn one_out_a_few_in_pops_sorted_by_time_then_scheduling_order() {
        for seed in 0..4 {
            for spread in [0, 1, 3, 1000, 1 << 20, 1 << 40] {
                hold_matches_reference(seed, spread, 20_000);
            }
        }
    }

    #[test]
    fn random_schedules_pop_sorted_by_time_then_scheduling_order() {
        for seed in 0..4 {
            // Spreads from "mostly equal times" to a 64-bit wide range.
            for spread in [0, 3, 1000, 1 << 20, 1 << 40, 1 << 56] {
                matches_reference(seed, spread, 60);
            }
        }
    }

    #[test]
    fn pops_in_time_order() {
        let mut q = EventQueue::new();
        for (t, e) in [(30, 'c'), (10, 'a'), (20, 'b'), (5, 'z')] {
            q.push(SimTime(t), e);
        }
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['z', 'a', 'b', 'c']);
    }

    #[test]
    fn equal_times_are_first_in_first_out() {
        let mut q = EventQueue::new();
        for i in 0..1000u32 {
            // Interleave two timestamps; within each, scheduling order must hold.
            q.push(SimTime(if i % 2 == 0 { 100 } else { 50 }), i);
        }
        let mut last: Option<(SimTime, u32)> = None;
        while let Some((t, e)) = q.pop() {
            if let Some((lt, le)) = last {
                assert!(t > lt || (t == lt && e > le), "{lt}/{le} then {t}/{e}");
            }
            last = Some((t, e));
        }
    }

    #[test]
    fn many_events_due_at_the_current_time_keep_their_scheduling_order() {
        // A run's start: every flow opens at zero, and each opening schedules
        // more at zero while the earlier ones are still pending.
        let mut q = EventQueue::new();
        for i in 0..50_000u32 {
            q.push(SimTime(0), i);
        }
        let mut next = 50_000u32;
        let mut expected = 0u32;
        while let Some((t, e)) = q.pop() {
            assert_eq!((t, e), (SimTime(0), expected));
            expected += 1;
            if e % 2 == 0 && next < 100_000 {
                q.push(SimTime(0), next);
                next += 1;
            }
        }
        assert_eq!(expected, 100_000);
    }

    #[test]
    fn events_pushed_while_draining_keep_fifo_at_the_same_time() {
        let mut q = EventQueue::new();
        q.push(SimTime(10), 0u32);
        q.push(SimTime(10), 1);
        let (_, first) = q.pop().unwrap();
        assert_eq!(first, 0);
        q.push(SimTime(10), 2); // scheduled "now", after 1 was scheduled
        assert_eq!(q.pop().unwrap().1, 1);
        assert_eq!(q.pop().unwrap().1, 2);
        assert!(q.is_empty());
    }

    #[test]
    fn an_event_scheduled_later_at_the_same_time_stays_behind_one_moved_down() {
        // 12 and 13 go to one bucket relative to 0; after 8 is taken out, 13
        // is rescheduled relative to 8 while 12 still waits in the old bucket.
        let mut q = EventQueue::new();
        for (t, e) in [(8, 0u32), (13, 1), (12, 2)] {
            q.push(SimTime(t), e);
        }
        assert_eq!(q.pop(), Some((SimTime(8), 0)));
        q.push(SimTime(13), 3);
        q.push(SimTime(12), 4);
        let order: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))).collect();
        assert_eq!(order, vec![(12, 2), (12, 4), (13, 1), (13, 3)]);
    }

    #[test]
    fn an_event_scheduled_inside_the_sorted_run_goes_behind_equal_times() {
        // One small bucket is sorted into the run whole: 20, 30, 30, 40.
        let mut q = EventQueue::new();
        for (t, e) in [(40, 0u32), (30, 1), (20, 2), (30, 3), (1 << 30, 4)] {
            q.push(SimTime(t), e);
        }
        assert_eq!(q.pop(), Some((SimTime(20), 2)));
        // Inside the run, at a time it holds, before it, and at its end.
        q.push(SimTime(30), 5);
        q.push(SimTime(25), 6);
        q.push(SimTime(40), 7);
        // After the run: a bucket.
        q.push(SimTime(41), 8);
        let order: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop().map(|(t, e)| (t.0, e))).collect();
        assert_eq!(order, vec![(25, 6), (30, 1), (30, 3), (30, 5), (40, 0), (40, 7), (41, 8), (1 << 30, 4)]);
    }

    #[test]
    #[should_panic(expected = "before the current time")]
    fn scheduling_in_the_past_is_refused() {
        let mut q = EventQueue::new();
        q.push(SimTime(100), 0u32);
        q.pop();
        q.push(SimTime(99), 1);
    }

    #[test]
    fn upcoming_names_the_events_that_come_next_when_it_names_any() {
        for seed in 0..4 {
            for spread in [0, 1, 3, 1000, 1 << 20, 1 << 40] {
                let mut r = RandomStream::new(seed, "upcoming", spread);
                let mut q = EventQueue::new();
                let mut reference = std::collections::BTreeSet::new();
                let (mut seq, mut known) = (0u32, [0u32; 3]);
                for _ in 0..40 {
                    let t = r.below(spread + 1);
                    q.push(SimTime(t), seq);
                    reference.insert((t, seq));
                    seq += 1;
                }
                while let Some(want) = reference.pop_first() {
                    assert_eq!(q.pop().map(|(t, e)| (t.0, e)), Some(want));
                    let mut next = reference.iter().map(|&(_, e)| e);
                    for (k, n) in known.iter_mut().enumerate() {
                        let want = next.next();
                        if let Some(e) = q.upcoming(k) {
                            assert_eq!(Some(e), want, "event {k} after the one taken out");
                            *n += 1;
                        }
                    }
                    if r.below(2) == 0 {
                        let t = want.0 + r.below(spread + 1);
                        q.push(SimTime(t), seq);
                        reference.insert((t, seq));
                        seq += 1;
                    }
                }
                assert!(known[0] > 0, "seed {seed}, spread {spread}: never known");
            }
        }
    }

    #[test]
    fn peek_does_not_change_what_pop_returns() {
        let mut q = EventQueue::new();
        q.push(SimTime(1 << 40), 7u32);
        q.push(SimTime(5), 3);
        assert_eq!(q.peek(), Some((SimTime(5), 3)));
        assert_eq!(q.peek(), Some((SimTime(5), 3)));
        assert_eq!(q.pop(), Some((SimTime(5), 3)));
        // A push at a time after what peek found, but before it is taken out.
        q.push(SimTime(6), 4);
        assert_eq!(q.peek(), Some((SimTime(6), 4)));
        assert_eq!(q.pop(), Some((SimTime(6), 4)));
        assert_eq!(q.pop(), Some((SimTime(1 << 40), 7)));
        assert_eq!(q.len(), 0);
    }
}
