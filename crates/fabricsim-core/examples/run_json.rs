//! Runs one resolved scenario (the JSON the core takes) without Python and
//! prints its speed as one JSON line; for profilers and instruction counters:
//!
//! ```sh
//! python -m fabricsim.bench --dump fattree-k16-cbr > /tmp/k16.json
//! cargo run --release -p fabricsim-core --example run_json -- /tmp/k16.json
//! perf record -g target/release/examples/run_json /tmp/k16.json
//! valgrind --tool=callgrind target/release/examples/run_json /tmp/k16.json
//! ```
//!
//! `--prefetch on|arrivals|off` (after the file) forces the event loop's
//! prefetch hints on (without arrivals' own hints), on with arrivals' hints
//! where the traffic asks for them, or off (by default they follow the
//! world's size); results are the same either way.

use fabricsim_core::stats::{Column, Value};
use fabricsim_core::{Scenario, Simulation};
use std::time::Instant;

/// CPU time of this thread in seconds (Linux `schedstat`, nanoseconds), if readable.
fn cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    Some(s.split_whitespace().next()?.parse::<f64>().ok()? / 1e9)
}

/// Peak resident set size in MB (`VmHWM`), if readable.
fn peak_rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<f64>().ok()? / 1024.0)
}

fn main() {
    let path = std::env::args().nth(1).expect("usage: run_json SCENARIO.json");
    let json = std::fs::read_to_string(&path).expect("readable scenario file");
    let sc = Scenario::from_json(&json).expect("valid scenario JSON");
    let t0 = Instant::now();
    let mut sim = Simulation::new(&sc).expect("valid scenario");
    let args: Vec<String> = std::env::args().skip(2).collect();
    if let Some(i) = args.iter().position(|a| a == "--prefetch") {
        match args.get(i + 1).map(String::as_str) {
            Some("on") => sim.set_prefetch(true),
            Some("arrivals") => sim.set_prefetch_arrivals(true),
            Some("off") => sim.set_prefetch(false),
            _ => panic!("--prefetch takes on, arrivals or off"),
        }
    }
    let build = t0.elapsed().as_secs_f64();
    let prefetch = match (sim.prefetching(), sim.prefetching_arrivals()) {
        (false, _) => "off",
        (true, false) => "on",
        (true, true) => "arrivals",
    };
    let (c1, t1) = (cpu_seconds(), Instant::now());
    sim.run();
    let (loop_wall, c2) = (t1.elapsed().as_secs_f64(), cpu_seconds());
    let mem = sim.memory_use();
    let out = sim.finish();
    let int = |k: &str| match out.summary.get(k) {
        Some(Value::Int(v)) => *v,
        _ => -1,
    };
    let hops: u64 = match out.tables["links"].column("packets") {
        Some(Column::U64(v)) => v.iter().sum(),
        _ => 0,
    };
    let events = int("events") as f64;
    let loop_cpu = match (c1, c2) {
        (Some(a), Some(b)) => b - a,
        _ => loop_wall,
    };
    println!(
        "{{\"scenario\": \"{}\", \"events\": {}, \"packets\": {}, \"packet_hops\": {}, \"sim_time_ps\": {}, \
         \"build_s\": {:.4}, \"loop_wall_s\": {:.4}, \"loop_cpu_s\": {:.4}, \"events_per_cpu_s\": {:.0}, \
         \"hops_per_cpu_s\": {:.0}, \"ns_per_event\": {:.2}, \"peak_rss_mb\": {:.1}, \"peak_packets\": {}, \
         \"bytes_per_packet\": {:.1}, \"event_queue_bytes\": {}, \"routing_bytes\": {}, \"prefetch\": \"{}\"}}",
        sc.name,
        int("events"),
        int("packets_created"),
        hops,
        int("sim_time_ps"),
        build,
        loop_wall,
        loop_cpu,
        events / loop_cpu,
        hops as f64 / loop_cpu,
        loop_cpu * 1e9 / events,
        peak_rss_mb().unwrap_or(-1.0),
        mem.peak_packets,
        mem.bytes_per_packet(),
        mem.events,
        mem.routing,
        prefetch,
    );
}
