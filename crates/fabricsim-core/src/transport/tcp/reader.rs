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
//!   process reads again at once (it is running); otherwise it sleeps, after
//!   the rest of its loop (`loop_ps`: data arriving meanwhile is read
//!   without a wake-up).
//! - **Preemption** (optional): a kernel without in-kernel preemption
//!   (`PREEMPT_NONE`) switches a process out only where it returns to user
//!   space, so never while `read()` holds the socket lock; but between two
//!   calls the process may lose its CPU and wait for it while data sits
//!   unread (and unacknowledged). After every call that copied data, the
//!   process waits so with the configured probability, whether or not the
//!   call emptied the socket; data arriving meanwhile does not wake it (it
//!   is runnable, not asleep) and is read when it runs again.
//!
//! - **On a core** (a host with a datapath model, `network.host.model`):
//!   the process runs on its core of the receiving host (`sim/host.rs`
//!   picks it). A wake-up, or the end of a call with data left, makes it
//!   *runnable*: it joins the core's queue (after its softirq work, in FIFO
//!   order with the applications' transmit batches) and each chunk it
//!   copies occupies the core for `bytes / copy_bps` (in turns of
//!   `copy_slice_bytes`, softirq work between them, when set). The wake-up delay
//!   then stands for the scheduler's latency on an idle core only; the wait
//!   for the core comes from the packet processing it shares.
//!
//! The ACK rules that make the read cadence matter live in `receiver.rs`
//! (`__tcp_ack_snd_check`, `tcp_cleanup_rbuf`) and the window the unread
//! bytes take in `rcvbuf.rs` (`__tcp_select_window`).

use super::Segment;
use crate::error::ConfigError;
use crate::rng::RandomStream;
use crate::units::{Rate, SimTime};
use serde::{Deserialize, Serialize};

/// A delay distribution: how long the process takes to run after data woke
/// it (`wakeup`), or waits for a CPU after a preemption (`preemption.wait`).
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
    /// Waits for a CPU between two `read()` calls; None: never preempted.
    #[serde(default)]
    pub preemption: Option<Preemption>,
    /// How long the process runs on after a call that left nothing to read
    /// before it sleeps (its loop's other work: iperf3's last `read()`
    /// returning `EAGAIN`, `select()`); data arriving meanwhile is read at
    /// the end of it without a wake-up. 0: it sleeps at once.
    #[serde(default)]
    pub loop_ps: u64,
    /// Whether the process runs on a core of its host when the host has a
    /// datapath model (false: on its own timers, as without a model).
    #[serde(default = "yes")]
    pub on_core: bool,
    /// On a core: bytes copied per turn on the core; between two turns of
    /// one chunk the core serves its softirq work first (the process keeps
    /// the socket: segments TCP takes in meanwhile go to the backlog).
    /// 0: a chunk is copied in one turn.
    #[serde(default)]
    pub copy_slice_bytes: u64,
}

fn yes() -> bool {
    true
}

/// Preemption of the reading process between two `read()` calls.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Preemption {
    /// Chance that a call which copied data is followed by a wait (0 to 1).
    pub probability: f64,
    /// How long the process then waits for a CPU.
    pub wait: Wakeup,
}

impl ReceiverApp {
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        if self.read_bytes == 0 {
            return Err(ConfigError::new(format!("{path}.read_size"), "must be > 0"));
        }
        self.wakeup.validate(&format!("{path}.wakeup"))?;
        if let Some(p) = &self.preemption {
            if !(0.0..=1.0).contains(&p.probability) {
                return Err(ConfigError::new(format!("{path}.preemption.probability"), "must be within 0..1"));
            }
            p.wait.validate(&format!("{path}.preemption.wait"))?;
        }
        Ok(())
    }
}

impl Wakeup {
    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        match self {
            Wakeup::Empirical { samples_ps } if samples_ps.is_empty() => {
                Err(ConfigError::new(format!("{path}.samples"), "needs at least one delay"))
            }
            _ => Ok(()),
        }
    }

    /// One delay drawn from this distribution.
    fn draw(&self, rng: &mut RandomStream) -> SimTime {
        match self {
            Wakeup::Constant { delay_ps } => SimTime(*delay_ps),
            Wakeup::Exponential { mean_ps } => SimTime(rng.exponential(*mean_ps as f64).round() as u64),
            Wakeup::Empirical { samples_ps } => SimTime(samples_ps[rng.below(samples_ps.len() as u64) as usize]),
        }
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
    /// On a core: wants the core for its next call, not yet in the core's queue.
    Runnable,
    /// On a core: in the core's queue since this time.
    Queued(SimTime),
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
    /// Waits for a CPU between two calls (`preemption`), and their sum.
    pub preemptions: u64,
    pub preemption_wait_ps: u64,
    /// On a core: times the process waited in the core's queue, and the sum
    /// of those waits (from runnable to running).
    pub core_waits: u64,
    pub core_wait_ps: u64,
}

/// The state of one receiving application.
#[derive(Clone, Debug)]
pub struct Reader {
    cfg: ReceiverApp,
    rng: RandomStream,
    /// Preemption draws: a stream of their own, so that turning preemption
    /// on leaves the wake-up draws as they were.
    preempt_rng: RandomStream,
    pub state: ReaderState,
    /// Bytes read so far (`copied_seq`).
    pub copied: u64,
    /// Segments that arrived while the process held the socket, in order of arrival.
    pub backlog: Vec<(Segment, bool)>,
    pub stats: ReaderStats,
    /// It runs on a core of its host (set by the simulation when the host
    /// has a datapath model and `on_core` is on): the core ends its copies,
    /// not its own timer.
    pub on_core: bool,
    /// On a core: bytes of the chunk being copied not yet copied (the turn
    /// in progress included).
    slice_left: u64,
}

impl Reader {
    pub fn new(cfg: &ReceiverApp) -> Self {
        Reader {
            cfg: cfg.clone(),
            rng: RandomStream::new(0, "tcp-reader", 0),
            preempt_rng: RandomStream::new(0, "tcp-reader-preemption", 0),
            state: ReaderState::Asleep,
            copied: 0,
            backlog: Vec::new(),
            stats: ReaderStats::default(),
            on_core: false,
            slice_left: 0,
        }
    }

    /// Gives the reader its own random streams (wake-ups, preemptions).
    pub fn seed(&mut self, rng: RandomStream, preempt_rng: RandomStream) {
        self.rng = rng;
        self.preempt_rng = preempt_rng;
    }

    /// Whether the configuration lets the process run on a core of a modelled host.
    pub fn wants_core(&self) -> bool {
        self.cfg.on_core
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
            ReaderState::Copying { until, .. } if !self.on_core => Some(until),
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
        self.cfg.wakeup.draw(&mut self.rng)
    }

    /// A call that left nothing to read ended at `now`: the process runs the
    /// rest of its loop, if that takes time, before it sleeps.
    pub fn after_last_read(&self, now: SimTime) -> ReaderState {
        if self.cfg.loop_ps == 0 {
            ReaderState::Asleep
        } else {
            ReaderState::Waking(now + SimTime(self.cfg.loop_ps))
        }
    }

    /// A call that copied data ended at `now`; `readable`: data is left to
    /// read. The process is running, not asleep, and may lose its CPU
    /// before it next looks at the socket (`preemption`), whether or not
    /// the call emptied it: Linux switches a process out where it returns
    /// to user space, after any call. Data that arrives during the wait
    /// does not wake it (it is not sleeping) and is read when it runs
    /// again; with nothing to read then, it sleeps.
    pub fn after_call(&mut self, now: SimTime, readable: bool) -> ReaderState {
        let at = self.next_read_at(now);
        if readable {
            ReaderState::Waking(at)
        } else if at > now {
            ReaderState::Waking(at + SimTime(self.cfg.loop_ps))
        } else {
            self.after_last_read(now)
        }
    }

    /// A call ended at `now`: when the process next looks at the socket
    /// (at once, or after a preemption's wait).
    pub fn next_read_at(&mut self, now: SimTime) -> SimTime {
        let Some(p) = &self.cfg.preemption else { return now };
        if p.probability <= 0.0 || self.preempt_rng.next_open01() >= p.probability {
            return now;
        }
        let wait = p.wait.draw(&mut self.preempt_rng);
        self.stats.preemptions += 1;
        self.stats.preemption_wait_ps += wait.0;
        now + wait
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
        self.slice_left = chunk;
    }

    /// Whether a chunk is copied in turns on the core (`copy_slice_bytes`).
    pub fn sliced(&self) -> bool {
        self.cfg.copy_slice_bytes > 0
    }

    /// On a core: the next turn of the chunk being copied starts; returns
    /// how long it holds the core.
    pub fn start_slice(&self) -> SimTime {
        self.copy_time(self.turn_bytes())
    }

    /// On a core: the turn in progress ended; returns whether the chunk is
    /// copied completely.
    pub fn end_slice(&mut self) -> bool {
        self.slice_left -= self.turn_bytes();
        self.slice_left == 0
    }

    /// Bytes of the chunk's current turn on the core: the rest of the chunk,
    /// at most `copy_slice_bytes` when set.
    fn turn_bytes(&self) -> u64 {
        match self.cfg.copy_slice_bytes {
            0 => self.slice_left,
            slice => self.slice_left.min(slice),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(wakeup: Wakeup) -> ReceiverApp {
        ReceiverApp {
            read_bytes: 131_072,
            wakeup,
            copy_bps: 8_000_000_000,
            preemption: None,
            loop_ps: 0,
            on_core: true,
            copy_slice_bytes: 0,
        }
    }

    #[test]
    fn a_chunk_is_copied_in_turns_of_the_slice_and_in_one_without() {
        let mut r = Reader::new(&ReceiverApp { copy_slice_bytes: 1448, ..app(Wakeup::Constant { delay_ps: 0 }) });
        assert!(r.sliced());
        r.copy(SimTime(0), 4000, 0);
        let mut turns = Vec::new();
        loop {
            turns.push(r.start_slice());
            if r.end_slice() {
                break;
            }
        }
        // 1 GB/s: 1 ns per byte.
        assert_eq!(turns, vec![SimTime::from_ns(1448), SimTime::from_ns(1448), SimTime::from_ns(1104)]);
        let mut whole = Reader::new(&app(Wakeup::Constant { delay_ps: 0 }));
        whole.copy(SimTime(0), 4000, 0);
        assert_eq!(whole.start_slice(), SimTime::from_ns(4000));
        assert!(whole.end_slice());
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
        r.seed(RandomStream::new(7, "tcp-reader", 3), RandomStream::new(7, "tcp-reader-preemption", 3));
        let n = 20_000;
        let draws: Vec<u64> = (0..n).map(|_| r.draw_wakeup().0).collect();
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / 50e6 - 1.0).abs() < 0.03, "mean {mean}");
        let mut again = Reader::new(&app(Wakeup::Exponential { mean_ps: 50_000_000 }));
        again.seed(RandomStream::new(7, "tcp-reader", 3), RandomStream::new(7, "tcp-reader-preemption", 3));
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
    fn preemption_delays_the_next_call_with_its_probability_only() {
        let mut never = Reader::new(&app(Wakeup::Constant { delay_ps: 0 }));
        assert_eq!(never.next_read_at(SimTime(10)), SimTime(10));
        let preempted = |probability| ReceiverApp {
            preemption: Some(Preemption { probability, wait: Wakeup::Constant { delay_ps: 700 } }),
            ..app(Wakeup::Constant { delay_ps: 0 })
        };
        let mut always = Reader::new(&preempted(1.0));
        assert_eq!(always.next_read_at(SimTime(10)), SimTime(710));
        assert_eq!((always.stats.preemptions, always.stats.preemption_wait_ps), (1, 700));
        let mut some = Reader::new(&preempted(0.25));
        some.seed(RandomStream::new(1, "tcp-reader", 0), RandomStream::new(1, "tcp-reader-preemption", 0));
        let n = 40_000;
        let waited = (0..n).filter(|_| some.next_read_at(SimTime(0)) > SimTime(0)).count();
        assert!((waited as f64 / n as f64 - 0.25).abs() < 0.01, "{waited}");
        assert_eq!(some.stats.preemptions, waited as u64);
        // The wake-up stream is untouched by preemption draws.
        let mut a = Reader::new(&app(Wakeup::Exponential { mean_ps: 1_000 }));
        let mut b = Reader::new(&preempted(0.5));
        b.cfg.wakeup = Wakeup::Exponential { mean_ps: 1_000 };
        b.next_read_at(SimTime(0));
        assert_eq!(a.draw_wakeup(), b.draw_wakeup());
    }

    #[test]
    fn a_preemption_probability_outside_0_1_is_an_error_naming_the_field() {
        for bad in [-0.1, 1.5, f64::NAN] {
            let cfg = ReceiverApp {
                preemption: Some(Preemption { probability: bad, wait: Wakeup::Constant { delay_ps: 1 } }),
                ..app(Wakeup::Constant { delay_ps: 0 })
            };
            let e = cfg.validate("tcp.receiver_app").unwrap_err();
            assert!(e.to_string().contains("tcp.receiver_app.preemption.probability"), "{e}");
        }
        let empty = ReceiverApp {
            preemption: Some(Preemption { probability: 0.5, wait: Wakeup::Empirical { samples_ps: vec![] } }),
            ..app(Wakeup::Constant { delay_ps: 0 })
        };
        let e = empty.validate("tcp.receiver_app").unwrap_err();
        assert!(e.to_string().contains("tcp.receiver_app.preemption.wait.samples"), "{e}");
    }

    #[test]
    fn an_empty_read_size_is_an_error_naming_the_field() {
        let bad = ReceiverApp { read_bytes: 0, ..app(Wakeup::Constant { delay_ps: 0 }) };
        let e = bad.validate("traffic[0].tcp.receiver_app").unwrap_err();
        assert!(e.to_string().contains("traffic[0].tcp.receiver_app.read_size"), "{e}");
    }
}
