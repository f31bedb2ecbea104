//! Dependencies between the flows of an explicit TCP flow list.

use super::{flag, i64_col};

fn chain(after2: &str) -> Result<fabricsim_core::stats::RunOutput, String> {
    let json = format!(
        r#"{{"duration_ps": 1000000000000,
        "network": {{"switch": {{"buffer": {{"model": "static", "port_bytes": 10000000}}}}}},
        "topology": {{"kind": "star", "hosts": 3, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
        "traffic": [{{"kind": "tcp_flows", "name": "chain", "flows": [
            {{"src": "h0", "dst": "h1", "bytes": 1000000}},
            {{"src": "h1", "dst": "h2", "bytes": 500000, "start_ps": 0, "after": [0], "compute_ps": 5000000}},
            {{"src": "h2", "dst": "h0", "bytes": 200000, "after": {after2}}},
            {{"src": "h1", "dst": "h0", "bytes": 300000, "start_ps": 2000000}}]}}]}}"#
    );
    let sc = fabricsim_core::Scenario::from_json(&json).map_err(|e| e.to_string())?;
    match fabricsim_core::Simulation::new(&sc) {
        Ok(mut sim) => Ok(sim.finish()),
        Err(e) => Err(format!("{}: {}", e.path, e.message)),
    }
}

#[test]
fn a_flow_starts_when_its_dependencies_have_completed_plus_its_compute_time() {
    let out = chain("[0, 1]").unwrap();
    let start = i64_col(&out, "flows", "start_ps");
    let fct = i64_col(&out, "flows", "fct_ps");
    assert!(fct.iter().all(|&f| f > 0), "every flow completes: {fct:?}");
    let done = |j: usize| start[j] + fct[j];
    assert_eq!(start[0], 0);
    assert_eq!(start[3], 2_000_000, "a flow without dependencies starts at its start");
    assert_eq!(start[1], done(0) + 5_000_000, "flow 1: 5 us after flow 0 completed");
    assert_eq!(start[2], done(0).max(done(1)), "flow 2: when the later of flows 0 and 1 completed");
    assert!(flag(&out, "conservation_ok"));
}

#[test]
fn unknown_dependencies_and_cycles_are_refused_with_the_field() {
    let e = chain("[7]").unwrap_err();
    assert!(e.starts_with("traffic[0].flows[2].after[0]: no flow 7"), "{e}");
    let e = chain("[2]").unwrap_err();
    assert!(e.starts_with("traffic[0].flows[2].after[0]: a flow cannot wait for itself"), "{e}");
    let sc = fabricsim_core::Scenario::from_json(
        r#"{"duration_ps": 1000000,
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 10000000000, "delay_ps": 1000}},
        "traffic": [{"kind": "tcp_flows", "flows": [
            {"src": "h0", "dst": "h1", "bytes": 1000, "after": [1]},
            {"src": "h1", "dst": "h0", "bytes": 1000, "after": [0]}]}]}"#,
    )
    .unwrap();
    let Err(e) = fabricsim_core::Simulation::new(&sc) else { panic!("a cycle is refused") };
    assert_eq!(e.path, "traffic[0].flows[0].after");
    assert!(e.message.contains("dependency cycle: flow 0 waits for 1 waits for 0"), "{e}");
}

fn rdma_chain(after2: &str) -> Result<fabricsim_core::stats::RunOutput, String> {
    let json = format!(
        r#"{{"duration_ps": 1000000000000,
        "network": {{"switch": {{"buffer": {{"model": "static", "port_bytes": 10000000}}}}}},
        "topology": {{"kind": "star", "hosts": 3, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
        "traffic": [{{"kind": "rdma_flows", "name": "chain", "flows": [
            {{"src": "h0", "dst": "h1", "bytes": 1000000}},
            {{"src": "h1", "dst": "h2", "bytes": 500000, "start_ps": 0, "after": [0], "compute_ps": 5000000}},
            {{"src": "h2", "dst": "h0", "bytes": 200000, "after": {after2}}},
            {{"src": "h1", "dst": "h0", "bytes": 300000, "start_ps": 2000000}}]}}]}}"#
    );
    let sc = fabricsim_core::Scenario::from_json(&json).map_err(|e| e.to_string())?;
    match fabricsim_core::Simulation::new(&sc) {
        Ok(mut sim) => Ok(sim.finish()),
        Err(e) => Err(format!("{}: {}", e.path, e.message)),
    }
}

#[test]
fn an_rdma_transfer_starts_when_its_dependencies_have_reached_their_responders_plus_its_compute_time() {
    let out = rdma_chain("[0, 1]").unwrap();
    let start = i64_col(&out, "flows", "start_ps");
    let fct = i64_col(&out, "flows", "fct_ps");
    let last = i64_col(&out, "flows", "end_ps");
    assert!(fct.iter().all(|&f| f > 0), "every transfer completes: {fct:?}");
    let done = |j: usize| start[j] + fct[j];
    assert_eq!(start[0], 0);
    assert_eq!(start[3], 2_000_000, "a transfer without dependencies starts at its start");
    assert_eq!(start[1], done(0) + 5_000_000, "transfer 1: 5 us after transfer 0 completed");
    assert_eq!(start[2], done(0).max(done(1)), "transfer 2: when the later of transfers 0 and 1 completed");
    // Complete when the responder has every byte: the last data packet's arrival, before the last ACK is back
    // (the flow's last delivery, an ACK at the requester, comes one path later).
    for j in 0..4 {
        assert!(last[j] > done(j), "transfer {j}: its last ACK arrives after the responder has every byte");
    }
    assert!(flag(&out, "conservation_ok"));
    // The same scenario twice gives the same table.
    let again = rdma_chain("[0, 1]").unwrap();
    assert_eq!(i64_col(&again, "flows", "start_ps"), start);
    assert_eq!(i64_col(&again, "flows", "fct_ps"), fct);
}

#[test]
fn unknown_rdma_dependencies_and_cycles_are_refused_with_the_field() {
    let e = rdma_chain("[7]").unwrap_err();
    assert!(e.starts_with("traffic[0].flows[2].after[0]: no flow 7"), "{e}");
    let e = rdma_chain("[2]").unwrap_err();
    assert!(e.starts_with("traffic[0].flows[2].after[0]: a flow cannot wait for itself"), "{e}");
    let e = rdma_chain("[3, 2]").unwrap_err();
    assert!(e.starts_with("traffic[0].flows[2].after[1]: a flow cannot wait for itself"), "{e}");
}

#[test]
fn tcp_flows_and_rdma_transfers_of_two_lists_keep_their_own_dependencies() {
    // Flow 1 of each list waits for flow 0 of its own list: the indices are per list, not global.
    let json = r#"{"duration_ps": 1000000000000,
        "network": {"switch": {"buffer": {"model": "static", "port_bytes": 10000000}}},
        "topology": {"kind": "star", "hosts": 4, "link": {"rate_bps": 10000000000, "delay_ps": 1000000}},
        "traffic": [
          {"kind": "tcp_flows", "name": "t", "flows": [
            {"src": "h0", "dst": "h1", "bytes": 400000},
            {"src": "h1", "dst": "h0", "bytes": 100000, "after": [0]}]},
          {"kind": "rdma_flows", "name": "r", "flows": [
            {"src": "h2", "dst": "h3", "bytes": 2000000},
            {"src": "h3", "dst": "h2", "bytes": 100000, "after": [0], "compute_ps": 1000000}]}]}"#;
    let sc = fabricsim_core::Scenario::from_json(json).unwrap();
    let out = fabricsim_core::Simulation::new(&sc).unwrap().finish();
    let start = i64_col(&out, "flows", "start_ps");
    let fct = i64_col(&out, "flows", "fct_ps");
    assert_eq!(start[1], start[0] + fct[0]);
    assert_eq!(start[3], start[2] + fct[2] + 1_000_000);
    assert!(start[3] > start[1], "the RDMA transfer of 2 MB ends later than the TCP flow of 400 kB");
    assert!(flag(&out, "conservation_ok"));
}
