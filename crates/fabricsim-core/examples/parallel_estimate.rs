//! How much a conservative parallel mode could gain on a scenario, measured
//! from its own event times.
//!
//! A conservative synchronous scheme (one round = every partition runs its
//! events in `[T, T + L)`, then all exchange the packets they put on cut links
//! and meet at a barrier; `T` is the earliest pending event anywhere and `L`
//! the lookahead: the least time from a frame's start on a cut link to any
//! effect at the far node, i.e. propagation + the far node's latency + the
//! shortest frame's serialization) runs the same events as the sequential
//! loop, so its gain depends on two numbers only: how many rounds the run
//! needs (`R`) and how many events a round holds (`E / R`). With `P` cores, a
//! sequential cost `c` per event and a cost `s` per round (barrier and
//! exchange), the best case (perfect balance, no extra cache misses) is
//!
//! ```text
//!   speedup(P) = E c / (R s + E c / P)
//! ```
//!
//! This tool replays a scenario's recorded queue operations (feature
//! `queue-trace`) through the event queue to get every event's time, counts
//! the rounds for each lookahead given, and measures `s` on this machine with
//! two threads meeting at a spinning barrier (and at `std::sync::Barrier`,
//! which sleeps).
//!
//! ```sh
//! cargo run --release -p fabricsim-core --features queue-trace --example parallel_estimate -- \
//!     s.json LOOKAHEAD_PS[,LOOKAHEAD_PS...] [NS_PER_EVENT]
//! ```

use fabricsim_core::event_queue::trace::POP;
use fabricsim_core::event_queue::EventQueue;
use fabricsim_core::units::SimTime;
use fabricsim_core::{Scenario, Simulation};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;

/// Event times in the order the loop ran them.
fn event_times(trace: &[u64]) -> Vec<u64> {
    let mut q: EventQueue<()> = EventQueue::new();
    let mut times = Vec::with_capacity(trace.len() / 2);
    for &op in trace {
        if op == POP {
            let (t, ()) = q.pop().expect("a pop of a non-empty queue");
            times.push(t.0);
        } else {
            q.push(SimTime(op), ());
        }
    }
    times
}

/// Rounds of a synchronous conservative scheme with lookahead `l`: each
/// starts at the earliest event not yet run and takes every event before its
/// start + `l`. Returns (rounds, events per round at the median, share of the
/// events in rounds of fewer than 64 events).
fn rounds(times: &[u64], l: u64) -> (u64, u64, f64) {
    let mut sizes = Vec::new();
    let mut i = 0;
    while i < times.len() {
        let end = times[i].saturating_add(l);
        let j = i + times[i..].partition_point(|&t| t < end);
        sizes.push((j - i) as u64);
        i = j;
    }
    let small: u64 = sizes.iter().filter(|&&n| n < 64).sum();
    let r = sizes.len() as u64;
    sizes.sort_unstable();
    (r, sizes[sizes.len() / 2], small as f64 / times.len() as f64)
}

/// Mean time of one barrier between two threads, in ns: a spinning barrier
/// (a shared round counter) and the standard library's (which parks).
fn barrier_cost_ns(n: u64) -> (f64, f64) {
    let arrived = Arc::new(AtomicU64::new(0));
    let a2 = arrived.clone();
    let t0 = Instant::now();
    let other = std::thread::spawn(move || {
        for round in 0..n {
            a2.fetch_add(1, Ordering::AcqRel);
            while a2.load(Ordering::Acquire) < 2 * (round + 1) {
                std::hint::spin_loop();
            }
        }
    });
    for round in 0..n {
        arrived.fetch_add(1, Ordering::AcqRel);
        while arrived.load(Ordering::Acquire) < 2 * (round + 1) {
            std::hint::spin_loop();
        }
    }
    other.join().unwrap();
    let spin = t0.elapsed().as_nanos() as f64 / n as f64;

    let m = n / 10;
    let b = Arc::new(Barrier::new(2));
    let b2 = b.clone();
    let t0 = Instant::now();
    let other = std::thread::spawn(move || {
        for _ in 0..m {
            b2.wait();
        }
    });
    for _ in 0..m {
        b.wait();
    }
    other.join().unwrap();
    (spin, t0.elapsed().as_nanos() as f64 / m as f64)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, lookaheads, rest @ ..] = args.as_slice() else {
        eprintln!("usage: parallel_estimate SCENARIO.json LOOKAHEAD_PS[,...] [NS_PER_EVENT]");
        std::process::exit(2);
    };
    let c_ns: f64 = rest.first().map_or(100.0, |s| s.parse().expect("ns per event"));
    let json = std::fs::read_to_string(path).expect("readable scenario");
    let sc = Scenario::from_json(&json).expect("valid scenario JSON");
    let mut sim = Simulation::new(&sc).expect("valid scenario");
    sim.run();
    let trace = sim.take_queue_trace();
    assert!(trace.len() < fabricsim_core::event_queue::trace::LIMIT, "trace truncated: use a shorter scenario");
    let times = event_times(&trace);
    let e = times.len() as u64;
    let (spin, park) = barrier_cost_ns(2_000_000);
    println!("scenario {}: {e} events over {:.6} s simulated", sc.name, *times.last().unwrap() as f64 * 1e-12);
    println!("barrier between two threads: spinning {spin:.0} ns, std::sync::Barrier {park:.0} ns");
    println!("lookahead_ps rounds events/round(mean) (median) share_in_rounds<64 speedup2(spin) speedup2(park)");
    for l in lookaheads.split(',') {
        let l: u64 = l.parse().expect("lookahead in ps");
        let (r, median, small) = rounds(&times, l);
        let work = e as f64 * c_ns;
        let s2 = |s: f64| work / (r as f64 * s + work / 2.0);
        println!("{l} {r} {:.1} {median} {:.3} {:.2} {:.2}", e as f64 / r as f64, small, s2(spin), s2(park));
    }
}
