//! The event queue: a min-heap ordered by `(time, seq)`.
//!
//! # Ordering guarantee
//!
//! Events come out in non-decreasing time order. Events scheduled for the same
//! time come out in the order they were scheduled (first in, first out): every
//! push takes the next value of a monotonically increasing sequence number, and
//! the heap orders by `(time, seq)`. Nothing else (no addresses, no hash order)
//! influences the order, so a run is a pure function of its inputs.

use crate::units::SimTime;

/// Heap arity: a 4-ary heap is shallower than a binary one and its children
/// share a cache line, which matters because popping is the hottest operation
/// of the whole simulator.
const ARITY: usize = 4;

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    /// `time << 64 | seq`: one integer comparison orders by time, then by seq.
    key: u128,
    event: E,
}

/// A deterministic priority queue of events (an implicit 4-ary min-heap).
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: Vec<Entry<E>>,
    next_seq: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: Vec::with_capacity(1024), next_seq: 0 }
    }

    /// Schedules `event` at `time`.
    #[inline]
    pub fn push(&mut self, time: SimTime, event: E) {
        let key = ((time.0 as u128) << 64) | self.next_seq as u128;
        self.next_seq += 1;
        let mut i = self.heap.len();
        self.heap.push(Entry { key, event });
        // Sift up.
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.heap[parent].key <= key {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = Entry { key, event };
    }

    /// The earliest pending event, without removing it.
    #[inline]
    pub fn peek(&self) -> Option<(SimTime, E)> {
        self.heap.first().map(|e| (SimTime((e.key >> 64) as u64), e.event))
    }

    /// Removes and returns the earliest pending event.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let last = self.heap.pop()?;
        let n = self.heap.len();
        if n == 0 {
            return Some((SimTime((last.key >> 64) as u64), last.event));
        }
        let top = self.heap[0];
        // Sift the former last entry down from the root.
        let mut i = 0;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let end = (first + ARITY).min(n);
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
        Some((SimTime((top.key >> 64) as u64), top.event))
    }

    /// Bytes allocated for pending events.
    pub fn memory_bytes(&self) -> usize {
        self.heap.capacity() * std::mem::size_of::<Entry<E>>()
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_schedules_pop_sorted_by_time_then_seq() {
        use crate::rng::RandomStream;
        let mut r = RandomStream::new(3, "test", 0);
        let mut q = EventQueue::new();
        let mut expect = Vec::new();
        let mut seq = 0u32;
        for round in 0..50 {
            for _ in 0..(r.below(200) + 1) {
                let t = round * 10 + r.below(1000);
                q.push(SimTime(t), seq);
                expect.push((t, seq));
                seq += 1;
            }
            for _ in 0..r.below(150) {
                expect.sort();
                if let Some((t, e)) = q.pop() {
                    assert_eq!((t.0, e), expect.remove(0));
                }
            }
        }
        expect.sort();
        for want in expect {
            let (t, e) = q.pop().unwrap();
            assert_eq!((t.0, e), want);
        }
        assert!(q.is_empty());
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
}
