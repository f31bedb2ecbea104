//! SACK blocks as an ACK carries them (RFC 2018 3), and their compact form.
//!
//! An ACK carries at most three blocks: 40 bytes of TCP options minus 12 for
//! timestamps leave room for 3 x 8 bytes (RFC 2018 3). The first block is a
//! D-SACK block when the ACK reports a duplicate (RFC 2883 4).
//!
//! In a packet the blocks travel as signed 32-bit offsets of their edges from
//! the cumulative ACK ([`SackBlocks::offsets`]): a D-SACK block below the ACK
//! has negative offsets. With SACK the receive window is below 2 GiB
//! (`TcpConfig::validate`), so the offsets always fit.

/// Up to three `[start, end)` byte ranges, most relevant first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SackBlocks {
    n: u8,
    blocks: [(u64, u64); SackBlocks::MAX],
}

impl SackBlocks {
    pub const MAX: usize = 3;
    pub const EMPTY: SackBlocks = SackBlocks { n: 0, blocks: [(0, 0); SackBlocks::MAX] };

    pub fn len(&self) -> usize {
        self.n as usize
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Appends a block; ignored when full.
    pub fn push(&mut self, start: u64, end: u64) {
        if (self.n as usize) < Self::MAX {
            self.blocks[self.n as usize] = (start, end);
            self.n += 1;
        }
    }

    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.n as usize]
    }

    /// Edge offsets from `ack`: `[s0, e0, s1, e1, s2, e2]` (unused ones 0).
    pub fn offsets(&self, ack: u64) -> [i32; 6] {
        let mut o = [0i32; 6];
        for (i, &(s, e)) in self.as_slice().iter().enumerate() {
            o[2 * i] = (s as i64 - ack as i64) as i32;
            o[2 * i + 1] = (e as i64 - ack as i64) as i32;
        }
        o
    }

    /// The inverse of [`SackBlocks::offsets`] for `n` blocks.
    pub fn from_offsets(ack: u64, n: usize, o: [i32; 6]) -> Self {
        let mut b = SackBlocks::EMPTY;
        for i in 0..n.min(Self::MAX) {
            b.push((ack as i64 + o[2 * i] as i64) as u64, (ack as i64 + o[2 * i + 1] as i64) as u64);
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_survive_the_offset_encoding_including_a_dsack_below_the_ack() {
        // 64-bit sequence numbers far beyond 2^32; edges within 2^31 of the ACK.
        let ack = 10_000_000_000_000;
        let mut b = SackBlocks::EMPTY;
        b.push(ack - 5000, ack - 3552); // D-SACK of an old segment
        b.push(ack + 2_000_000_000, ack + 2_000_001_448);
        b.push(ack + 1448, ack + 2896);
        b.push(1, 2); // a fourth block does not fit
        assert_eq!(b.len(), 3);
        let back = SackBlocks::from_offsets(ack, b.len(), b.offsets(ack));
        assert_eq!(back, b);
    }
}
