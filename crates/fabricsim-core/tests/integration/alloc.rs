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
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
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
