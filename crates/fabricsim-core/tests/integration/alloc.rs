//! The hot loop does not allocate: once a run has warmed up (queues, pools and
//! tables at their working sizes), processing events allocates nothing per
//! packet. Allocations are counted per thread by a wrapper around the system
//! allocator, so tests running in parallel do not disturb each other.

use super::flag;
use fabricsim_core::units::SimTime;
use fabricsim_core::{Scenario, Simulation};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Bytes allocated and not yet freed by this thread, and their peak.
    static LIVE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn grow(bytes: i64) {
    let _ = LIVE.try_with(|l| {
        let now = l.get() + bytes;
        l.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        grow(layout.size() as i64);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        grow(-(layout.size() as i64));
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        grow(new_size as i64 - layout.size() as i64);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

/// The result of `f` and the most heap bytes this thread held during it, above what it held before.
fn peak_bytes<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = LIVE.with(|l| l.get());
    PEAK.with(|p| p.set(before));
    let out = f();
    (out, (PEAK.with(|p| p.get()) - before) as u64)
}

/// Runs `json` to `warm_ps`, then to `end_ps`; returns the allocations and
/// the events of the second part, and the simulation.
fn steady_state(json: &str, warm_ps: u64, end_ps: u64) -> (u64, i64, Simulation) {
    let sc = Scenario::from_json(json).expect("valid scenario JSON");
    let mut sim = Simulation::new(&sc).expect("valid scenario");
    sim.run_until(SimTime(warm_ps));
    let (a0, e0) = (allocations(), sim.events());
    sim.run_until(SimTime(end_ps));
    let (a1, e1) = (allocations(), sim.events());
    assert!(e1 > e0);
    (a1 - a0, (e1 - e0) as i64, sim)
}

#[test]
fn udp_through_a_fat_tree_allocates_nothing_per_packet() {
    // Poisson and constant-rate UDP across a k=4 fat-tree with an oversubscribed
    // last hop (drops), queue sampling on.
    let (allocs, events, mut sim) = steady_state(
        r#"{"duration_ps": 40000000000, "seed": 3,
        "network": {"switch": {"buffer": {"model": "static", "port_bytes": 100000, "queue_packets": 50}}},
        "topology": {"kind": "fat_tree", "k": 4, "link": {"rate_bps": 10000000000, "delay_ps": 1000000}},
        "traffic": [{"kind": "udp_poisson", "src": ["h1","h2","h3","h4","h5","h6","h7","h8"], "dst": "h0",
                     "load": 0.2, "frame_bytes": 1500},
                    {"kind": "udp_cbr", "src": ["h9","h10","h11"], "dst": "h12", "load": 0.5, "frame_bytes": 1000}],
        "stats": {"queue_sample_interval_ps": 100000000}}"#,
        10_000_000_000,
        40_000_000_000,
    );
    assert!(events > 1_000_000, "{events} events");
    // Amortised growth (the sample table doubling, a queue reaching a new
    // length) is allowed; anything per packet or per event is not.
    assert!(allocs * 10_000 < events as u64, "{allocs} allocations in {events} events");
    assert!(flag(&sim.finish(), "conservation_ok"));
}

#[test]
fn tcp_with_losses_allocates_nothing_per_packet() {
    // Four CUBIC flows through a 10G bottleneck with a 100-packet queue: slow
    // start overflows it, so the run has losses, out-of-order arrivals,
    // retransmissions and timers.
    let (allocs, events, mut sim) = steady_state(
        r#"{"duration_ps": 100000000000, "seed": 1,
        "network": {"switch": {"buffer": {"model": "static", "port_bytes": 10000000, "queue_packets": 100}}},
        "topology": {"kind": "dumbbell", "left": 4, "right": 4,
                     "edge_link": {"rate_bps": 40000000000, "delay_ps": 5000000},
                     "bottleneck_link": {"rate_bps": 10000000000, "delay_ps": 20000000}},
        "tcp": {"cc": "cubic"},
        "traffic": [{"kind": "tcp_bulk", "src": ["left0"], "dst": "right0", "bytes": 1000000000},
                    {"kind": "tcp_bulk", "src": ["left1"], "dst": "right1", "bytes": 1000000000},
                    {"kind": "tcp_bulk", "src": ["left2"], "dst": "right2", "bytes": 1000000000},
                    {"kind": "tcp_bulk", "src": ["left3"], "dst": "right3", "bytes": 1000000000}],
        "stats": {"queue_sample_interval_ps": 100000000, "throughput_interval_ps": 1000000000}}"#,
        20_000_000_000,
        100_000_000_000,
    );
    let out = sim.finish();
    assert!(super::int(&out, "packets_dropped") > 0, "the scenario must exercise loss recovery");
    assert!(events > 500_000, "{events} events");
    assert!(allocs * 10_000 < events as u64, "{allocs} allocations in {events} events");
}

#[test]
fn host_datapath_polls_allocate_nothing_per_packet() {
    // Four iperf3 TCP streams between two hosts with a Linux-like datapath
    // (16 cores, GSO/TSO and GRO, per-packet stack and driver costs, NIC DMA)
    // at 100G: every received frame goes through a NAPI poll, every sent
    // batch through a core's transmit work.
    let (allocs, events, mut sim) = steady_state(
        r#"{"duration_ps": 12000000000, "seed": 1,
        "network": {"switch": {"latency_ps": 500000, "buffer": {"model": "static", "port_bytes": 16000000}},
          "host": {"model": {"cores": 16, "rx_steering": "rss", "backlog_packets": 1024,
            "gso_bytes": 65536, "tso": true, "gro_bytes": 65536, "napi_budget": 64,
            "interrupt": {"usecs_ps": 0, "frames": 0, "cost_ps": 1000000},
            "nic": {"tx_latency_ps": 1000000, "tx_per_byte_fs": 69400, "rx_latency_ps": 500000, "rx_per_byte_fs": 69400},
            "stages": [
              {"kind": "syscall", "tx": {"per_packet_ps": 500000}, "rx": {"per_packet_ps": 1000000}},
              {"kind": "tcp", "tx": {"per_packet_ps": 603935, "per_byte_fs": 170996, "per_ack_ps": 201312},
                              "rx": {"per_packet_ps": 603935, "per_byte_fs": 170996, "per_ack_ps": 201312}},
              {"kind": "driver", "tx": {"per_packet_ps": 150000}, "rx": {"per_packet_ps": 250000}}]}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 100000000000, "delay_ps": 500000}},
        "traffic": [{"kind": "iperf3", "src": "h0", "dst": "h1", "instances": 4, "duration_ps": 11500000000}]}"#,
        3_000_000_000,
        12_000_000_000,
    );
    assert!(events > 300_000, "{events} events");
    // A poll used to allocate six small vectors (about one allocation per 16
    // events here). What remains is amortised growth: the windows grow for the
    // whole run (no loss), so each of the 16 cores' transmit and receive queues,
    // the rings and the TCP scoreboards keep reaching new lengths (about one
    // allocation per 6,000 events).
    assert!(allocs * 2_000 < events as u64, "{allocs} allocations in {events} events");
    let out = sim.finish();
    assert!(flag(&out, "conservation_ok"));
    let polls = super::host::sum(&out, "cores", "polls");
    assert!(polls > 1_000, "the run must exercise receive polls ({polls})");
}

#[test]
fn the_world_size_estimate_is_close_to_what_building_it_takes() {
    // The limit on the world's memory (sim/limits.rs) is checked on an
    // estimate made before anything is allocated; here it is compared with
    // the heap actually held at the peak of building the world (routing
    // included) for fabrics of different shapes. Measured: 0.81-0.96 of it
    // (k=32 fat-tree, 0.81: 46 MB estimated, 57 MB at the peak).
    let link = r#"{"rate_bps": 10000000000, "delay_ps": 1000000}"#;
    let perm = |hosts: usize| -> String {
        let flows: Vec<String> = (0..hosts)
            .map(|i| format!(r#"{{"src": "h{i}", "dst": "h{}", "bytes": 1000000}}"#, (i + hosts / 2) % hosts))
            .collect();
        format!(r#"[{{"kind": "tcp_flows", "flows": [{}]}}]"#, flows.join(","))
    };
    let cases = [
        ("fat-tree k=16, 1,024 TCP flows", format!(r#"{{"kind": "fat_tree", "k": 16, "link": {link}}}"#), perm(1024)),
        (
            "leaf-spine 64 x 32 hosts, 8 spines",
            format!(
                r#"{{"kind": "leaf_spine", "leaves": 64, "spines": 8, "hosts_per_leaf": 32,
                "host_link": {link}, "fabric_link": {link}}}"#
            ),
            perm(2048),
        ),
        (
            "leaf-spine 512 x 4 hosts, 4 spines",
            format!(
                r#"{{"kind": "leaf_spine", "leaves": 512, "spines": 4, "hosts_per_leaf": 4,
                "host_link": {link}, "fabric_link": {link}}}"#
            ),
            perm(2048),
        ),
        ("star of 2,000 hosts", format!(r#"{{"kind": "star", "hosts": 2000, "link": {link}}}"#), perm(2000)),
    ];
    let static_buffer = r#"{"switch": {"buffer": {"model": "static", "port_bytes": 1000000, "queue_packets": 100}}}"#;
    // Input arbitration by pipe (the tomahawk-like preset's): every egress
    // port and class keeps a sub-queue per input, ports squared.
    let arbitration = r#"{"classes": 8, "switch": {"buffer": {"model": "static", "port_bytes": 1000000},
        "pipeline": {"pipes": 4, "rate_pps": 850000000}, "arbitration": {"kind": "hierarchical"}}}"#;
    let cases: Vec<(&str, String, String, &str)> = cases
        .into_iter()
        .map(|(n, t, f)| (n, t, f, static_buffer))
        .chain([(
            "star of 1,000 hosts, 8 classes, arbitration by pipe",
            format!(r#"{{"kind": "star", "hosts": 1000, "link": {link}}}"#),
            perm(1000),
            arbitration,
        )])
        .collect();
    for (name, topology, traffic, network) in cases {
        let json = format!(
            r#"{{"duration_ps": 1000000000, "seed": 1,
            "network": {network},
            "topology": {topology}, "traffic": {traffic}}}"#
        );
        let sc = Scenario::from_json(&json).expect("valid scenario JSON");
        let estimate = fabricsim_core::sim::limits::estimated_world_bytes(&sc).expect("within the limits");
        let (sim, held) = peak_bytes(|| Simulation::new(&sc).expect("valid scenario"));
        drop(sim);
        let ratio = estimate as f64 / held as f64;
        eprintln!("WORLD {name}: estimate {estimate} B, built {held} B, ratio {ratio:.2}");
        assert!((0.5..=2.0).contains(&ratio), "{name}: estimate {estimate} B, building took {held} B");
    }
}
