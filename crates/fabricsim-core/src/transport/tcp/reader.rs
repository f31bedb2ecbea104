//! The receiving application: a process that reads the socket in `read()`
//! calls of a configured size, as Linux runs it.
//!
//! - **Wake-up** (`sk_data_ready` -> the scheduler): when data becomes
//!   readable while the process sleeps in `select()`/`read()`, it runs after
//!   a wake-up delay drawn from its own random stream (constant,
//!   exponential, or drawn from measured delays).
//! - **One `read()` call** (`tcp_recvmsg` -> `tcp_recvmsg_locked`): the
//!   process takes the socket lock (`lock_sock`) and copies up to
//!   `read_bytes` of in-order data, at `copy_bps`. While it holds the lock,
//!   arriving segments are not processed: they wait in the socket backlog
//!   (`tcp_add_backlog`), where a segment that continues the previous one is
//!   coalesced with it (`TcpExtTCPBacklogCoalesce`). When the call has
//!   copied everything that was queued but wants more and the backlog holds
//!   segments, it processes the backlog and goes on copying
//!   (`__sk_flush_backlog`). At the end of the call the receive buffer is
//!   re-sized from the bytes *read* (`tcp_rcv_space_adjust`), an ACK may go
//!   out (`tcp_cleanup_rbuf`), and releasing the lock processes the backlog
//!   (`release_sock` -> `tcp_v4_do_rcv` per coalesced segment, each through
//!   the receiver's normal ACK rules).
//! - **The loop** (iperf3's server): after a call, if data is readable the
//!   process reads again at once (it is running); otherwise it sleeps.
//!
//! The ACK rules that make the read cadence matter live in `receiver.rs`
//! (`__tcp_ack_snd_check`, `tcp_cleanup_rbuf`) and the window the unread
//! bytes take in `rcvbuf.rs` (`__tcp_select_window`).

use super::Segment;
use crate::error::ConfigError;
use crate::rng::RandomStream;
use crate::units::{Rate, SimTime};
use serde::{Deserialize, Serialize};

/// How long the process takes to run after data woke it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Wakeup {
    /// The same delay every time.
    Constant { delay_ps: u64 },
    /// Exponentially distributed with this mean.
    Exponential { mean_ps: u64 },
    /// Drawn uniformly from measured delays (e.g. a scheduler trace).
    Empirical { samples_ps: Vec<u64> },
}

/// The receiving application of a TCP connection (`tcp.receiver_app`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiverApp {
    /// Bytes asked for per `read()` call (iperf3: `-l`, 128 KiB for TCP).
    pub read_bytes: u64,
    pub wakeup: Wakeup,
    /// Payload bits per second copied to the application while it holds
    /// the socket; 0: copying takes no time.
    pub copy_bps: u64,
}

impl ReceiverApp {
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        if self.read_bytes == 0 {
            return Err(ConfigError::new(format!("{path}.read_size"), "must be > 0"));
        }
        if let Wakeup::Empirical { samples_ps } = &self.wakeup {
            if samples_ps.is_empty() {
                return Err(ConfigError::new(format!("{path}.wakeup.samples"), "needs at least one delay"));
            }
        }
        Ok(())
    }
}

/// Where the process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReaderState {
    /// Blocked, waiting for data.
    Asleep,
    /// Woken (or looping back to `read()`); runs at this time.
    Waking(SimTime),
    /// Inside `read()` holding the socket lock until `until`, copying
    /// `chunk` bytes; the call has copied `done` bytes before this chunk.
    Copying { until: SimTime, chunk: u64, done: u64 },
    /// Running, not holding the lock (between the end of a call and the next).
    Running,
}

/// Counters of one reader.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReaderStats {
    /// `read()` calls that copied data.
    pub reads: u64,
    pub bytes_read: u64,
    /// Times data woke the sleeping process.
    pub wakeups: u64,
    /// Sum of the wake-up delays drawn.
    pub wakeup_delay_ps: u64,
    /// Segments that waited in the backlog, and how many of them were
    /// coalesced into the segment before them.
    pub backlog_segments: u64,
    pub backlog_coalesced: u64,
    /// Most bytes received in order but not yet read.
    pub max_unread: u64,
}

/// The state of one receiving application.
#[derive(Clone, Debug)]
pub struct Reader {
    cfg: ReceiverApp,
    rng: RandomStream,
    pub state: ReaderState,
    /// Bytes read so far (`copied_seq`).
    pub copied: u64,
    /// Segments that arrived while the process held the socket, in order of arrival.
    pub backlog: Vec<(Segment, bool)>,
    pub stats: ReaderStats,
}

impl Reader {
    pub fn new(cfg: &ReceiverApp) -> Self {
        Reader {
            cfg: cfg.clone(),
            rng: RandomStream::new(0, "tcp-reader", 0),
            state: ReaderState::Asleep,
            copied: 0,
            backlog: Vec::new(),
            stats: ReaderStats::default(),
        }
    }

    /// Gives the reader its own random stream.
    pub fn seed(&mut self, rng: RandomStream) {
        self.rng = rng;
    }

    pub fn read_bytes(&self) -> u64 {
        self.cfg.read_bytes
    }

    /// The process holds the socket lock: arriving segments go to the backlog.
    pub fn owns_socket(&self) -> bool {
        matches!(self.state, ReaderState::Copying { .. })
    }

    pub fn deadline(&self) -> Option<SimTime> {
        match self.state {
            ReaderState::Waking(at) => Some(at),
            ReaderState::Copying { until, .. } => Some(until),
            _ => None,
        }
    }

    /// Data became readable at `now`: a sleeping process is woken.
    pub fn data_ready(&mut self, now: SimTime) {
        if self.state == ReaderState::Asleep {
            let d = self.draw_wakeup();
            self.stats.wakeups += 1;
            self.stats.wakeup_delay_ps += d.0;
            self.state = ReaderState::Waking(now + d);
        }
    }

    fn draw_wakeup(&mut self) -> SimTime {
        match &self.cfg.wakeup {
            Wakeup::Constant { delay_ps } => SimTime(*delay_ps),
            Wakeup::Exponential { mean_ps } => SimTime(self.rng.exponential(*mean_ps as f64).round() as u64),
            Wakeup::Empirical { samples_ps } => SimTime(samples_ps[self.rng.below(samples_ps.len() as u64) as usize]),
        }
    }

    /// How long copying `bytes` holds the socket.
    pub fn copy_time(&self, bytes: u64) -> SimTime {
        if self.cfg.copy_bps == 0 {
            return SimTime::ZERO;
        }
        Rate::from_bps(self.cfg.copy_bps).serialization_time(bytes)
    }

    /// Starts copying `chunk` bytes at `now`, `done` bytes into the call.
    pub fn copy(&mut self, now: SimTime, chunk: u64, done: u64) {
        self.state = ReaderState::Copying { until: now + self.copy_time(chunk), chunk, done };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(wakeup: Wakeup) -> ReceiverApp {
        ReceiverApp { read_bytes: 131_072, wakeup, copy_bps: 8_000_000_000 }
    }

    #[test]
    fn copy_time_follows_the_copy_rate() {
        let r = Reader::new(&app(Wakeup::Constant { delay_ps: 0 }));
        // 1 GB/s: 1000 bytes take 1 us.
        assert_eq!(r.copy_time(1000), SimTime::from_us(1));
    }

    #[test]
    fn wakeup_delays_follow_their_distribution_and_seed() {
        let mut r = Reader::new(&app(Wakeup::Exponential { mean_ps: 50_000_000 }));
        r.seed(RandomStream::new(7, "tcp-reader", 3));
        let n = 20_000;
        let draws: Vec<u64> = (0..n).map(|_| r.draw_wakeup().0).collect();
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / 50e6 - 1.0).abs() < 0.03, "mean {mean}");
        let mut again = Reader::new(&app(Wakeup::Exponential { mean_ps: 50_000_000 }));
        again.seed(RandomStream::new(7, "tcp-reader", 3));
        assert_eq!(again.draw_wakeup().0, draws[0], "same seed, same draws");
        let mut e = Reader::new(&app(Wakeup::Empirical { samples_ps: vec![5, 9] }));
        assert!((0..100).all(|_| matches!(e.draw_wakeup().0, 5 | 9)));
    }

    #[test]
    fn data_wakes_only_a_sleeping_process() {
        let mut r = Reader::new(&app(Wakeup::Constant { delay_ps: 500 }));
        r.data_ready(SimTime(100));
        assert_eq!(r.state, ReaderState::Waking(SimTime(600)));
        r.data_ready(SimTime(200));
        assert_eq!(r.state, ReaderState::Waking(SimTime(600)), "already woken");
        assert_eq!(r.stats.wakeups, 1);
    }

    #[test]
    fn an_empty_read_size_is_an_error_naming_the_field() {
        let bad = ReceiverApp { read_bytes: 0, ..app(Wakeup::Constant { delay_ps: 0 }) };
        let e = bad.validate("traffic[0].tcp.receiver_app").unwrap_err();
        assert!(e.to_string().contains("traffic[0].tcp.receiver_app.read_size"), "{e}");
    }
}
