//! The stall guard: a run whose simulated time stops advancing fails with an
//! error naming the component, keeps what it computed, and real bursts of
//! simultaneous events stay under the limit.

use super::{flag, int};
use fabricsim_core::sim::guard::{STALL_FLOOR, STALL_PER_COMPONENT};
use fabricsim_core::units::SimTime;
use fabricsim_core::{Progress, RunError, Scenario, Simulation};

/// `servers` hosts each answer one 20 KB request at t = 0 (an incast).
fn incast(servers: u32) -> Simulation {
    let names: Vec<String> = (1..=servers).map(|i| format!("\"h{i}\"")).collect();
    let json = format!(
        r#"{{"duration_ps": 1000000000,
        "topology": {{"kind": "star", "hosts": {}, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
        "network": {{"switch": {{"buffer": {{"model": "static", "port_bytes": 100000000}}}}}},
        "traffic": [{{"kind": "tcp_incast", "client": "h0", "servers": [{}], "response_bytes": 20000}}],
        "stats": {{"queue_sample_interval_ps": 0}}}}"#,
        servers + 1,
        names.join(", ")
    );
    Simulation::new(&Scenario::from_json(&json).unwrap()).unwrap()
}

#[test]
fn too_many_events_at_one_instant_fail_the_run_naming_the_component() {
    let mut sim = incast(200);
    sim.set_stall_limit(50);
    let err = sim.advance(SimTime::MAX, u64::MAX).unwrap_err();
    let RunError::Stalled { time_ps, events, limit, culprit } = &err;
    assert_eq!((*time_ps, *events, *limit), (0, 50, 50));
    assert!(culprit.contains("TCP connection of flow") && culprit.contains("-> h0"), "{culprit}");
    let text = err.to_string();
    assert!(text.starts_with("simulated time stopped advancing at 0 ps"), "{text}");
    // The error sticks, and the results so far are still there.
    assert_eq!(sim.advance(SimTime::MAX, u64::MAX).unwrap_err(), err);
    assert_eq!(sim.failure(), Some(&err));
    sim.stop();
    let out = sim.finish();
    assert_eq!(int(&out, "events"), 49);
    assert!(flag(&out, "conservation_ok"));
}

#[test]
fn a_large_incast_stays_under_the_default_limit() {
    // 2,000 connections open at t = 0, their SYNs, SYN-ACKs and first windows
    // pile up at the same instants: far from the limit, which grows with the world.
    let mut sim = incast(2000);
    assert!(sim.stall_limit_in_use() >= STALL_FLOOR);
    assert!(sim.stall_limit_in_use() >= STALL_PER_COMPONENT * 2000);
    let out = sim.finish();
    assert_eq!(int(&out, "flows_completed"), 2000);
    assert!(flag(&out, "conservation_ok"));
}

#[test]
fn advance_stops_after_its_event_budget_and_resumes_where_it_stopped() {
    let whole = incast(20).finish();
    let mut sim = incast(20);
    let mut calls = 0;
    loop {
        calls += 1;
        match sim.advance(SimTime::MAX, 100).unwrap() {
            Progress::Paused => continue,
            Progress::Finished => break,
            Progress::Reached => unreachable!("no limit before the end"),
        }
    }
    assert!(calls > 5, "{calls}");
    let out = sim.finish();
    assert_eq!(int(&out, "events"), int(&whole, "events"));
    assert_eq!(out.summary, whole.summary);
}
