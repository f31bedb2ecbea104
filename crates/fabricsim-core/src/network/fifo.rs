//! A FIFO whose first few entries live inside its owner.
//!
//! Egress queues and wires hold zero, one or two packets most of the time,
//! but a `VecDeque` keeps even one entry in a heap block of its own: one more
//! cache line to fetch on every packet-hop, and at thousands of ports that
//! line is cold. [`InlineFifo`] keeps up to `N` entries in place (a ring in
//! the owner's own cache lines) and moves to a boxed ring of a power-of-two
//! capacity (index by mask, grown by doubling) only past that; the box is
//! kept once made, like a `VecDeque`'s capacity.
//!
//! Order: every inline entry is older than every spilled one, because a
//! push goes inline only while nothing is spilled. A pop takes the oldest
//! inline entry, or, once the ring is empty, the spill's front; so the order
//! is exactly a `VecDeque`'s. A busy FIFO stays in its spill until it
//! drains (no entry is moved back and forth).

#[derive(Debug)]
pub struct InlineFifo<T: Copy + Default, const N: usize> {
    /// Index of the oldest inline entry.
    head: u16,
    /// Inline entries in use.
    len: u16,
    /// Entries in `spill` (kept here so that the common case never reads it).
    spilled: u32,
    ring: [T; N],
    /// Boxed: 8 B in the owner's line instead of a ring's 32.
    spill: Option<Box<Spill<T>>>,
}

/// The entries past the inline ones: a ring whose capacity is a power of two
/// (`buf.len()`), `len` entries from `head` on (the length is the owner's
/// `spilled`).
#[derive(Debug)]
struct Spill<T> {
    buf: Vec<T>,
    head: usize,
}

impl<T: Copy + Default> Spill<T> {
    fn new() -> Self {
        Spill { buf: vec![T::default(); 8], head: 0 }
    }

    #[inline]
    fn push(&mut self, len: usize, x: T) {
        if len == self.buf.len() {
            self.grow();
        }
        let mask = self.buf.len() - 1;
        self.buf[(self.head + len) & mask] = x;
    }

    #[inline]
    fn pop(&mut self) -> T {
        let x = self.buf[self.head];
        self.head = (self.head + 1) & (self.buf.len() - 1);
        x
    }

    /// Doubles the capacity, the entries moved to the front in order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let n = self.buf.len();
        let mut buf = vec![T::default(); 2 * n];
        for (k, slot) in buf.iter_mut().take(n).enumerate() {
            *slot = self.buf[(self.head + k) & (n - 1)];
        }
        self.buf = buf;
        self.head = 0;
    }
}

impl<T: Copy + Default, const N: usize> Default for InlineFifo<T, N> {
    fn default() -> Self {
        InlineFifo { head: 0, len: 0, spilled: 0, ring: [T::default(); N], spill: None }
    }
}

impl<T: Copy + Default, const N: usize> InlineFifo<T, N> {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize + self.spilled as usize
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0 && self.spilled == 0
    }

    #[inline]
    pub fn push_back(&mut self, x: T) {
        if self.spilled == 0 && (self.len as usize) < N {
            // head < N and len < N: one subtraction wraps it.
            let mut i = self.head as usize + self.len as usize;
            if i >= N {
                i -= N;
            }
            self.ring[i] = x;
            self.len += 1;
        } else {
            self.push_spill(x);
        }
    }

    #[inline]
    fn push_spill(&mut self, x: T) {
        self.spill.get_or_insert_with(|| Box::new(Spill::new())).push(self.spilled as usize, x);
        self.spilled += 1;
    }

    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return self.pop_spill();
        }
        let x = self.ring[self.head as usize];
        let h = self.head + 1;
        self.head = if h as usize == N { 0 } else { h };
        self.len -= 1;
        Some(x)
    }

    #[inline]
    fn pop_spill(&mut self) -> Option<T> {
        if self.spilled == 0 {
            return None;
        }
        self.spilled -= 1;
        self.spill.as_mut().map(|s| s.pop())
    }

    #[inline]
    pub fn front(&self) -> Option<&T> {
        if self.len != 0 {
            Some(&self.ring[self.head as usize])
        } else if self.spilled != 0 {
            self.spill.as_ref().map(|s| &s.buf[s.head])
        } else {
            None
        }
    }

    /// Heap bytes allocated for entries beyond the inline ones.
    pub fn heap_bytes(&self) -> usize {
        self.spill.as_ref().map_or(0, |s| s.buf.len() * std::mem::size_of::<T>())
    }

    /// Entries in order, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len as usize).map(move |k| &self.ring[(self.head as usize + k) % N]).chain(self.spill.iter().flat_map(
            move |s| {
                let mask = s.buf.len() - 1;
                (0..self.spilled as usize).map(move |k| &s.buf[(s.head + k) & mask])
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn keeps_the_order_of_a_vecdeque_through_spills() {
        let mut f: InlineFifo<u32, 3> = InlineFifo::new();
        let mut v: VecDeque<u32> = VecDeque::new();
        let mut rng = 12345u64;
        let mut next = 0u32;
        for _ in 0..20_000 {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Bias towards pushes in bursts, then drain.
            if (rng >> 33) % 7 < 4 {
                f.push_back(next);
                v.push_back(next);
                next += 1;
            } else {
                assert_eq!(f.pop_front(), v.pop_front());
            }
            assert_eq!(f.len(), v.len());
            assert_eq!(f.front(), v.front());
            assert_eq!(f.is_empty(), v.is_empty());
        }
        assert!(f.iter().copied().eq(v.iter().copied()));
        while let Some(x) = v.pop_front() {
            assert_eq!(f.pop_front(), Some(x));
        }
        assert_eq!(f.pop_front(), None);
    }

    #[test]
    fn stays_off_the_heap_up_to_its_inline_length() {
        let mut f: InlineFifo<(u64, u32), 2> = InlineFifo::new();
        for round in 0..100 {
            f.push_back((round, 1));
            f.push_back((round, 2));
            assert_eq!(f.pop_front(), Some((round, 1)));
            assert_eq!(f.pop_front(), Some((round, 2)));
        }
        assert_eq!(f.heap_bytes(), 0);
        f.push_back((0, 0));
        f.push_back((0, 0));
        f.push_back((0, 0));
        assert!(f.heap_bytes() > 0);
    }
}
