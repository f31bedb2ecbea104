//! Proportional Rate Reduction (RFC 6937), with the slow-start reduction
//! bound as Linux applies it (`tcp_cwnd_reduction`).
//!
//! During a window reduction (fast recovery, or an ECN response) the sender
//! sends in proportion to what the receiver reports delivered: while `pipe`
//! is above `ssthresh`, `sndcnt = ceil(prr_delivered * ssthresh / RecoverFS) -
//! prr_out`, so the window falls smoothly to `ssthresh` over one round trip;
//! once `pipe` is at or below `ssthresh`, PRR-SSRB lets it grow back like slow
//! start, at most `max(prr_delivered - prr_out, DeliveredData)` plus one
//! segment, the segment only on an ACK that advances SND.UNA without new loss
//! (RFC 6937 3.1; the condition is Linux's). The first ACK always allows one
//! segment, the fast retransmit. `cwnd = pipe + sndcnt`.
//! `RecoverFS` is the flight at the start (RFC 6937: SND.NXT - SND.UNA).

#[derive(Clone, Debug, Default)]
pub struct Prr {
    recover_fs: u64,
    delivered: u64,
    out: u64,
}

impl Prr {
    /// Starts a reduction with `flight` bytes outstanding.
    pub fn start(&mut self, flight: u64) {
        *self = Prr { recover_fs: flight.max(1), delivered: 0, out: 0 };
    }

    /// Bytes sent during the reduction (`prr_out`).
    pub fn on_sent(&mut self, bytes: u64) {
        self.out += bytes;
    }

    /// One ACK that delivered `delivered` bytes (cumulatively or by SACK);
    /// returns the new cwnd, or `None` when the ACK delivered nothing and the
    /// reduction is under way (the window stays).
    pub fn on_ack(&mut self, delivered: u64, pipe: u64, ssthresh: u64, mss: u64, safe_ack: bool) -> Option<u64> {
        if delivered == 0 && self.out > 0 {
            return None;
        }
        self.delivered += delivered;
        let sndcnt = if pipe > ssthresh {
            // Proportional part, rounded up (RFC 6937 3).
            let allowed = (self.delivered as u128 * ssthresh as u128).div_ceil(self.recover_fs as u128) as u64;
            allowed.saturating_sub(self.out)
        } else {
            // Slow-start reduction bound.
            let mut limit = self.delivered.saturating_sub(self.out).max(delivered);
            if safe_ack {
                limit += mss;
            }
            limit.min(ssthresh - pipe)
        };
        // Force the fast retransmit on entry.
        let sndcnt = if self.out == 0 { sndcnt.max(mss) } else { sndcnt };
        Some(pipe + sndcnt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1000;

    /// One round trip of recovery: `n` ACKs each delivering one segment,
    /// starting from `pipe` segments; returns (segments sent, final pipe).
    fn round(p: &mut Prr, mut pipe: u64, n: usize, ssthresh: u64) -> (u64, u64) {
        let mut sent = 0;
        for _ in 0..n {
            pipe -= M; // the delivered segment left the network
            let cwnd = p.on_ack(M, pipe, ssthresh, M, true).unwrap();
            while pipe + M <= cwnd {
                pipe += M;
                p.on_sent(M);
                sent += 1;
            }
        }
        (sent, pipe)
    }

    #[test]
    fn prr_sends_one_segment_for_every_two_delivered_when_halving() {
        // 20 segments outstanding, one lost, ssthresh 10: the 19 ACKs of the
        // round trip let out about one segment per two delivered, the first at
        // once (the fast retransmit), and pipe ends at ssthresh.
        let mut p = Prr::default();
        p.start(20 * M);
        let (sent, _) = round(&mut p, 19 * M, 1, 10 * M);
        assert_eq!(sent, 1, "the first ACK sends the fast retransmit");
        let (sent, pipe) = round(&mut p, 19 * M, 18, 10 * M);
        assert_eq!(sent + 1, 10, "ssthresh worth of data over the round trip");
        assert_eq!(pipe, 10 * M);
    }

    #[test]
    fn below_ssthresh_prr_ssrb_grows_by_delivered_plus_one_segment_on_safe_acks() {
        let mut p = Prr::default();
        p.start(20 * M);
        p.on_sent(M); // the fast retransmit
                      // pipe collapsed to 2 segments (heavy loss), ssthresh 10: an ACK
                      // delivering 2 segments allows max(2 - 1, 2) + 1 = 3.
        assert_eq!(p.on_ack(2 * M, 2 * M, 10 * M, M, true), Some(5 * M));
        p.on_sent(3 * M);
        // Delivered 4, sent 4: the next 2 delivered allow 2, no extra segment
        // without progress of SND.UNA.
        assert_eq!(p.on_ack(2 * M, 3 * M, 10 * M, M, false), Some(5 * M));
        assert_eq!(p.on_ack(0, 3 * M, 10 * M, M, true), None, "nothing delivered, the window stays");
    }
}
