//! The event queue: a binary heap ordered by `(time, seq)`.
//!
//! # Ordering guarantee
//!
//! Events come out in non-decreasing time order. Events scheduled for the same
//! time come out in the order they were scheduled (first in, first out): every
//! push takes the next value of a monotonically increasing sequence number, and
//! the heap orders by `(time, seq)`. Nothing else (no addresses, no hash order)
//! influences the order, so a run is a pure function of its inputs.

use crate::units::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    time: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed so that `BinaryHeap` (a max-heap) pops the earliest entry.
    fn cmp(&self, other: &Self) -> Ordering {
        other.time.cmp(&self.time).then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A deterministic priority queue of events.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), next_seq: 0 }
    }

    /// Schedules `event` at `time`.
    #[inline]
    pub fn push(&mut self, time: SimTime, event: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { time: time.0, seq, event });
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| SimTime(e.time))
    }

    /// Removes and returns the earliest pending event.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.heap.pop().map(|e| (SimTime(e.time), e.event))
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
