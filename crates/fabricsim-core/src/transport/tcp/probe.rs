//! A snapshot of a sender's state, as Linux's `tcp:tcp_probe` tracepoint or
//! `ss -tin` shows it: the windows, the scoreboard's counts, the RTT
//! estimator, the pacing rate and the congestion-avoidance state. The
//! simulation's `stats.tcp_trace` (`sim/tcp_trace.rs`) records one per ACK.

use super::recovery::CaState;
use super::sender::{LossRecovery, Sender};
use crate::units::SimTime;

/// Linux's congestion-avoidance states (`tcp_ca_state`), as the trace names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ProbeState {
    /// Nothing unusual.
    Open = 0,
    /// Duplicate ACKs or SACKed data: reordering or the start of a loss.
    Disorder = 1,
    /// A window reduction on ECN-Echo is under way.
    Cwr = 2,
    /// Fast recovery.
    Recovery = 3,
    /// After a retransmission timeout, until what was outstanding then is acknowledged.
    Loss = 4,
}

impl ProbeState {
    /// Labels in code order.
    pub const LABELS: [&'static str; 5] = ["open", "disorder", "cwr", "recovery", "loss"];
}

/// One snapshot of a sender. Segment counts are of MSS-sized segments
/// (the last one of a flow may be short and counts as one).
#[derive(Clone, Copy, Debug)]
pub struct TcpProbe {
    pub state: ProbeState,
    pub cwnd_bytes: u64,
    pub mss: u64,
    /// `u64::MAX` while unset (the initial slow start).
    pub ssthresh_bytes: u64,
    /// Segments sent and not cumulatively acknowledged (`packets_out`).
    pub packets_out: u64,
    /// SACKed segments (`sacked_out`); without SACK the duplicate ACKs
    /// counted since the last new ACK (Linux's Reno emulation of it).
    pub sacked_out: u64,
    /// Segments marked lost and not SACKed (`lost_out`); 0 without SACK.
    pub lost_out: u64,
    /// Retransmissions in flight (`retrans_out`); 0 without SACK.
    pub retrans_out: u64,
    /// Bytes the window is compared with: RFC 6675 `pipe` with SACK
    /// (Linux's `tcp_packets_in_flight` in bytes), SND.NXT - SND.UNA without.
    pub in_flight_bytes: u64,
    pub srtt: Option<SimTime>,
    pub rttvar: Option<SimTime>,
    pub min_rtt: Option<SimTime>,
    /// The rate the sender paces at, bits per second; 0 if unpaced.
    pub pacing_rate_bps: u64,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// The window the receiver advertised (or the fixed `tcp.rwnd`).
    pub snd_wnd: u64,
    /// Bytes the sender knows were delivered: SND.UNA plus the SACKed bytes above it.
    pub delivered_bytes: u64,
    /// The window limits the flight: Linux's `tcp_is_cwnd_limited` when the
    /// sender keeps it (`cwnd_validation`), else whether the flight after
    /// the last send left no room for another full segment.
    pub cwnd_limited: bool,
}

impl Sender {
    /// The sender's state now (reads only; costs nothing unless called).
    pub fn probe(&self) -> TcpProbe {
        let w = self.window;
        let mss = w.mss.max(1);
        let outstanding = self.snd_max - self.snd_una;
        let (state, sacked_out, lost_out, retrans_out, in_flight, sacked_bytes) = match &self.loss {
            LossRecovery::Sack(s) => {
                let sb = &s.sb;
                let state = match s.ca {
                    CaState::Open if sb.sacked_bytes > 0 => ProbeState::Disorder,
                    CaState::Open => ProbeState::Open,
                    CaState::Cwr => ProbeState::Cwr,
                    CaState::Recovery => ProbeState::Recovery,
                    CaState::Loss => ProbeState::Loss,
                };
                (
                    state,
                    sb.sacked_segments,
                    sb.lost_bytes().div_ceil(mss),
                    sb.retrans_bytes().div_ceil(mss),
                    sb.pipe(),
                    sb.sacked_bytes,
                )
            }
            LossRecovery::NewReno(nr) => {
                // NewReno: recovery until `recover` is acknowledged; after a
                // timeout `recover` is the highest byte sent then (RFC 6582
                // 3.2 step 4), so the flow is in Loss until it is acknowledged.
                let state = if nr.ca == CaState::Recovery {
                    ProbeState::Recovery
                } else if nr.recover.is_some_and(|r| self.snd_una < r) && self.timeouts > 0 {
                    ProbeState::Loss
                } else if self.ecn_recover.is_some_and(|r| self.snd_una < r) {
                    ProbeState::Cwr
                } else if nr.dupacks > 0 {
                    ProbeState::Disorder
                } else {
                    ProbeState::Open
                };
                (state, nr.dupacks as u64, 0, 0, self.snd_nxt.saturating_sub(self.snd_una), 0)
            }
        };
        let cwnd_limited = match &self.cwnd_use {
            Some(u) => u.is_limited,
            None => in_flight + w.mss > w.cwnd,
        };
        let pacing_rate_bps = match (&self.limits, self.pacing) {
            (_, Some(r)) => r.0,
            (Some(l), None) => l.pacing_rate_bps(),
            (None, None) => 0,
        };
        TcpProbe {
            state,
            cwnd_bytes: w.cwnd,
            mss: w.mss,
            ssthresh_bytes: w.ssthresh,
            packets_out: outstanding.div_ceil(mss),
            sacked_out,
            lost_out,
            retrans_out,
            in_flight_bytes: in_flight,
            srtt: self.rtt.srtt(),
            rttvar: self.rtt.rttvar(),
            min_rtt: self.rtt.min_rtt(),
            pacing_rate_bps,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            snd_wnd: self.rwnd,
            delivered_bytes: self.snd_una + sacked_bytes,
            cwnd_limited,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SegKind, Segment, TcpConfig};
    use super::*;

    const M: u64 = 1448;

    fn ack(a: u64) -> Segment {
        let mut s = Segment::control(SegKind::Ack, SimTime(0));
        s.ack = a;
        s
    }

    fn established(c: &TcpConfig) -> Sender {
        let mut s = Sender::new(c, 10_000_000, None);
        let mut out = Vec::new();
        s.open(SimTime(0), &mut out);
        s.on_segment(SimTime::from_us(10), &Segment::control(SegKind::SynAck, SimTime(0)), &mut out);
        s
    }

    #[test]
    fn newreno_states_follow_duplicate_acks_recovery_and_timeout() {
        let mut s = established(&TcpConfig::rfc());
        let mut out = Vec::new();
        let p = s.probe();
        assert_eq!((p.state, p.cwnd_bytes, p.packets_out, p.in_flight_bytes), (ProbeState::Open, 10 * M, 10, 10 * M));
        assert_eq!(p.srtt, Some(SimTime::from_us(10)));
        assert_eq!(p.rttvar, Some(SimTime::from_us(5)));
        assert!(p.cwnd_limited && p.ssthresh_bytes == u64::MAX && p.pacing_rate_bps == 0);
        s.on_segment(SimTime::from_us(20), &ack(M), &mut out);
        s.on_segment(SimTime::from_us(21), &ack(M), &mut out);
        let p = s.probe();
        assert_eq!((p.state, p.sacked_out), (ProbeState::Disorder, 1), "a duplicate ACK counts as SACKed");
        s.on_segment(SimTime::from_us(21), &ack(M), &mut out);
        s.on_segment(SimTime::from_us(21), &ack(M), &mut out);
        let p = s.probe();
        assert_eq!(p.state, ProbeState::Recovery);
        assert_eq!(p.ssthresh_bytes, s.window.ssthresh);
        // A full ACK ends recovery; a timeout later puts the sender in Loss until all is acknowledged.
        let recover = s.snd_max;
        s.on_segment(SimTime::from_us(40), &ack(recover), &mut out);
        assert_eq!(s.probe().state, ProbeState::Open);
        s.on_timer(s.next_deadline().unwrap(), &mut out);
        let p = s.probe();
        assert_eq!((p.state, p.cwnd_bytes, p.snd_nxt), (ProbeState::Loss, M, p.snd_una + M));
    }

    #[test]
    fn sack_scoreboard_counts_and_delivered_bytes() {
        let c = TcpConfig::for_profile(super::super::TcpProfile::Linux, Some(super::super::CcKind::Newreno));
        let c = TcpConfig { tlp: false, ..c };
        let mut s = established(&c);
        let mut out = Vec::new();
        // Segment 0 is lost: ACKs of 0 SACK segments 1..=3.
        for k in 1..=3u64 {
            let mut a = ack(0);
            a.sack = super::super::SackBlocks::from_offsets(0, 1, [M as i32, ((k + 1) * M) as i32, 0, 0, 0, 0]);
            s.on_segment(SimTime::from_us(20 + k), &a, &mut out);
        }
        let p = s.probe();
        assert_eq!(p.sacked_out, 3);
        assert_eq!(p.delivered_bytes, 3 * M, "SND.UNA 0 plus three SACKed segments");
        assert!(matches!(p.state, ProbeState::Disorder | ProbeState::Recovery), "{:?}", p.state);
        assert_eq!(p.in_flight_bytes, s.sack().unwrap().sb.pipe());
        assert_eq!(p.packets_out, (s.snd_max - s.snd_una).div_ceil(M));
    }
}
