//! PFC ingress accounting of the shared buffer: per (ingress port, priority
//! group) shared and headroom cells, XOFF/XON decisions.
//!
//! A lossless packet (its class is a lossless priority) that arrives on a port
//! is charged to its priority group (PG = (ingress port, class)):
//!
//! - to the **shared** pool if the pool has room and the PG's shared cells,
//!   packet included, stay within the XOFF threshold (static cells, or
//!   `alpha x free shared cells` of the pool);
//! - otherwise to the PG's **headroom** if it fits there;
//! - otherwise it is dropped with `headroom_overflow`. A lossless packet is
//!   never dropped for any other buffer reason, and its egress queue has no
//!   dynamic threshold (SONiC practice: lossless limited at ingress only).
//!
//! After an admission, a PG not yet paused goes **XOFF** when it uses headroom
//! or its shared cells reached the threshold. A release takes cells from the
//! headroom first (as the HPCC simulator's MMU does); a paused PG goes **XON**
//! when its headroom is empty and its shared cells are 0 or at least
//! `resume_offset` below the threshold. Each decision is left in `signal` for
//! the simulation to turn into a PAUSE frame.

use crate::stats::DropReason;

/// XOFF threshold of a priority group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Xoff {
    /// Fixed shared cells.
    Static(u64),
    /// `2^k x free shared cells` of the pool.
    Dynamic(i8),
}

/// PFC state of one device.
#[derive(Clone, Debug)]
pub struct PfcIngress {
    classes: usize,
    /// Bit `c` set for lossless classes.
    pub lossless: u8,
    xoff: Xoff,
    resume_cells: u64,
    /// Headroom cells of each ingress port (per lossless PG).
    headroom: Vec<u64>,
    shared: Vec<u64>,
    hdrm: Vec<u64>,
    paused: Vec<bool>,
    /// The last XOFF (`true`) or XON decision: (ingress port, class, xoff).
    pub signal: Option<(u16, u8, bool)>,
    /// Headroom cells in use, all PGs.
    pub headroom_used: u64,
    pub headroom_peak: u64,
}

impl PfcIngress {
    pub fn new(ports: usize, classes: usize, lossless: u8, xoff: Xoff, resume_cells: u64, headroom: Vec<u64>) -> Self {
        assert_eq!(headroom.len(), ports);
        PfcIngress {
            classes,
            lossless,
            xoff,
            resume_cells,
            headroom,
            shared: vec![0; ports * classes],
            hdrm: vec![0; ports * classes],
            paused: vec![false; ports * classes],
            signal: None,
            headroom_used: 0,
            headroom_peak: 0,
        }
    }

    /// Headroom cells reserved in all: every port times every lossless class.
    pub fn reserved_cells(&self) -> u64 {
        self.headroom.iter().sum::<u64>() * self.lossless.count_ones() as u64
    }

    #[inline]
    fn threshold(&self, free: u64) -> u64 {
        match self.xoff {
            Xoff::Static(c) => c,
            Xoff::Dynamic(k) => {
                if k >= 0 {
                    free << k
                } else {
                    free >> (-k)
                }
            }
        }
    }

    #[inline]
    pub fn is_lossless(&self, class: u8) -> bool {
        self.lossless & (1 << class) != 0
    }

    /// Whether PG (`port`, `class`) is in the XOFF state.
    pub fn is_paused(&self, port: u16, class: u8) -> bool {
        self.paused[port as usize * self.classes + class as usize]
    }

    /// Admits `cells` of a lossless packet; `used`/`size` are the pool's shared cells.
    #[inline]
    pub fn admit(&mut self, port: u16, class: u8, cells: u64, used: &mut u64, size: u64) -> Result<(), DropReason> {
        let pg = port as usize * self.classes + class as usize;
        let free = size - *used;
        if cells <= free && self.shared[pg] + cells <= self.threshold(free) {
            self.shared[pg] += cells;
            *used += cells;
        } else if self.hdrm[pg] + cells <= self.headroom[port as usize] {
            self.hdrm[pg] += cells;
            self.headroom_used += cells;
            self.headroom_peak = self.headroom_peak.max(self.headroom_used);
        } else {
            return Err(DropReason::HeadroomOverflow);
        }
        if !self.paused[pg] && (self.hdrm[pg] > 0 || self.shared[pg] >= self.threshold(size - *used)) {
            self.paused[pg] = true;
            self.signal = Some((port, class, true));
        }
        Ok(())
    }

    /// Releases `cells` of a lossless packet, headroom first.
    #[inline]
    pub fn release(&mut self, port: u16, class: u8, cells: u64, used: &mut u64, size: u64) {
        let pg = port as usize * self.classes + class as usize;
        let from_h = self.hdrm[pg].min(cells);
        self.hdrm[pg] -= from_h;
        self.headroom_used -= from_h;
        let s = cells - from_h;
        self.shared[pg] -= s;
        *used -= s;
        if self.paused[pg]
            && self.hdrm[pg] == 0
            && (self.shared[pg] == 0 || self.shared[pg] + self.resume_cells <= self.threshold(size - *used))
        {
            self.paused[pg] = false;
            self.signal = Some((port, class, false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xoff_headroom_overflow_and_xon_with_hysteresis() {
        // One port, one lossless class, static threshold 10 cells, resume 4, headroom 5.
        let mut p = PfcIngress::new(1, 1, 1, Xoff::Static(10), 4, vec![5]);
        let (mut used, size) = (0u64, 100u64);
        for _ in 0..9 {
            p.admit(0, 0, 1, &mut used, size).unwrap();
            assert_eq!(p.signal, None);
        }
        p.admit(0, 0, 1, &mut used, size).unwrap();
        assert_eq!(p.signal.take(), Some((0, 0, true)));
        for _ in 0..5 {
            p.admit(0, 0, 1, &mut used, size).unwrap();
        }
        assert_eq!((used, p.headroom_used), (10, 5));
        assert_eq!(p.admit(0, 0, 1, &mut used, size), Err(DropReason::HeadroomOverflow));
        // Release: headroom first, then shared until 10 - 4 = 6 cells remain.
        for _ in 0..5 {
            p.release(0, 0, 1, &mut used, size);
        }
        for _ in 0..3 {
            p.release(0, 0, 1, &mut used, size);
            assert_eq!(p.signal, None);
        }
        p.release(0, 0, 1, &mut used, size);
        assert_eq!(p.signal.take(), Some((0, 0, false)));
        assert_eq!(used, 6);
    }

    #[test]
    fn dynamic_threshold_is_alpha_times_free() {
        // alpha 1/8, 90 free cells: the 10th cell still fits (10 <= 90/8 = 11).
        let mut p = PfcIngress::new(2, 1, 1, Xoff::Dynamic(-3), 2, vec![50, 50]);
        let (mut used, size) = (0u64, 90u64);
        let mut n = 0;
        while p.signal.is_none() {
            p.admit(1, 0, 1, &mut used, size).unwrap();
            n += 1;
        }
        // shared >= (90 - shared) / 8  =>  shared >= 10.
        assert_eq!(n, 10);
        assert!(p.is_paused(1, 0) && !p.is_paused(0, 0));
    }
}
