//! Arbitration between congested inputs of one egress port: shares against
//! the closed forms of round robin and hierarchical round robin.

use super::pipeline::f64_col;
use super::{flag, i64_col, run_json};
use fabricsim_core::network::arbitration::{hierarchical_shares, jain, max_min};
use fabricsim_core::stats::RunOutput;

/// Hosts h1..h6 send 1500 B frames at `loads` of 10G to h0 through one
/// switch with the given arbitration (and any other `switch` fields in
/// `extra`). The run stops at 4 ms without draining, so the shares are those
/// of the congested period.
fn fan_in_with(arbitration: &str, extra: &str, loads: [f64; 6]) -> RunOutput {
    let traffic: Vec<String> = loads
        .iter()
        .enumerate()
        .map(|(i, l)| {
            format!(
                r#"{{"kind": "udp_cbr", "src": ["h{}"], "dst": "h0", "load": {l}, "frame_bytes": 1500,
                    "start_ps": {}}}"#,
                i + 1,
                i * 97_000 // staggered starts, so no input is always first
            )
        })
        .collect();
    run_json(&format!(
        r#"{{"duration_ps": 4000000000, "drain": false, "seed": 1,
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 100000000}},
                     "arbitration": {arbitration} {extra}}}}},
        "topology": {{"kind": "star", "hosts": 8, "link": {{"rate_bps": 10000000000, "delay_ps": 0}}}},
        "traffic": [{}]}}"#,
        traffic.join(",")
    ))
}

fn fan_in(arbitration: &str, loads: [f64; 6]) -> RunOutput {
    fan_in_with(arbitration, "", loads)
}

/// Share of port 0's bytes taken by inputs 1..=6 (the `arbitration` table).
fn shares(out: &RunOutput) -> Vec<f64> {
    let port = i64_col(out, "arbitration", "port");
    let input = i64_col(out, "arbitration", "input");
    let share = f64_col(out, "arbitration", "share");
    (1..=6).map(|i| (0..port.len()).find(|&r| port[r] == 0 && input[r] == i).map_or(0.0, |r| share[r])).collect()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < tol, "shares {got:?}, closed form {want:?}");
    }
}

#[test]
fn round_robin_gives_backlogged_inputs_equal_shares() {
    let out = fan_in(r#"{"kind": "round_robin", "input_queue_bytes": 30000}"#, [1.0; 6]);
    assert_close(&shares(&out), &[1.0 / 6.0; 6], 0.003);
    assert!(f64_col(&out, "fairness", "jain")[0] > 0.999);
    assert!(flag(&out, "conservation_ok"));
}

#[test]
fn hierarchical_arbitration_favours_inputs_in_small_groups() {
    // Groups: {h1}, {h2, h3}, {h4, h5, h6}: the port serves the three groups in
    // turn, so h1 gets 1/3, h2 and h3 1/6 each, h4..h6 1/9 each.
    let out = fan_in(
        r#"{"kind": "hierarchical", "input_queue_bytes": 30000, "port_group": [0, 1, 2, 2, 3, 3, 3, 0]}"#,
        [1.0; 6],
    );
    let want = hierarchical_shares(&[1.0; 6], &[1, 2, 2, 3, 3, 3], 1.0);
    assert_close(&want, &[1.0 / 3.0, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 9.0, 1.0 / 9.0, 1.0 / 9.0], 1e-12);
    let got = shares(&out);
    assert_close(&got, &want, 0.003);
    let fair = |c: &str| f64_col(&out, "fairness", c)[0];
    assert!((fair("share_max") - 1.0 / 3.0).abs() < 0.003 && (fair("share_min") - 1.0 / 9.0).abs() < 0.003);
    assert!((fair("jain") - jain(&want)).abs() < 0.005);
    // The excess is dropped at the inputs, not by the buffer.
    let reasons = super::pipeline::cat_col(&out, "drops", "reason");
    assert!(reasons.iter().all(|r| r == "input_queue_limit"), "{reasons:?}");
}

#[test]
fn a_light_input_keeps_its_demand_and_the_rest_is_shared_by_the_rule() {
    // h1 offers 10% of the port; its group takes only that, and the other two
    // groups split the remaining 90% (max-min at both levels).
    let loads = [0.1, 1.0, 1.0, 1.0, 1.0, 1.0];
    let out = fan_in(
        r#"{"kind": "hierarchical", "input_queue_bytes": 30000, "port_group": [0, 1, 2, 2, 3, 3, 3, 0]}"#,
        loads,
    );
    let want = hierarchical_shares(&loads, &[1, 2, 2, 3, 3, 3], 1.0);
    assert_close(&want, &[0.1, 0.225, 0.225, 0.15, 0.15, 0.15], 1e-12);
    assert_close(&shares(&out), &want, 0.004);
    // Flat round robin gives the same light input its demand and splits the rest evenly.
    let out = fan_in(r#"{"kind": "round_robin", "input_queue_bytes": 30000}"#, loads);
    assert_close(&shares(&out), &max_min(&loads, 1.0), 0.004);
}

#[test]
fn hierarchical_groups_default_to_the_pipes_of_the_pipeline() {
    // 8 ports in 2 pipes: ports 0..3 and 4..7. Inputs h1..h3 share a group, h4..h6 the other.
    let out = fan_in_with(
        r#"{"kind": "hierarchical", "input_queue_bytes": 30000}"#,
        r#", "pipeline": {"pipes": 2, "rate_pps": 1000000000000}"#,
        [1.0; 6],
    );
    let want = hierarchical_shares(&[1.0; 6], &[0, 0, 0, 1, 1, 1], 1.0);
    assert_close(&shares(&out), &want, 0.003);
    let groups = i64_col(&out, "arbitration", "group");
    assert!(groups.iter().all(|&g| g <= 1));
}

#[test]
fn a_fifo_with_input_limits_shares_max_min_fairly() {
    // One FIFO per port, but each input may hold at most 30 kB of it: the
    // light input gets its demand, the backlogged ones split the rest evenly.
    let loads = [0.1, 1.0, 1.0, 1.0, 1.0, 1.0];
    let out = fan_in(r#"{"kind": "fifo", "input_queue_bytes": 30000}"#, loads);
    assert_close(&shares(&out), &max_min(&loads, 1.0), 0.004);
    let reasons = super::pipeline::cat_col(&out, "drops", "reason");
    assert!(reasons.iter().all(|r| r == "input_queue_limit"), "{reasons:?}");
    assert_eq!(i64_col(&out, "arbitration", "group"), vec![0; 6]);
}

#[test]
fn start_jitter_offsets_each_source_within_the_bound() {
    let run = |seed: u64| {
        let out = run_json(&format!(
            r#"{{"duration_ps": 10000000, "seed": {seed},
            "topology": {{"kind": "star", "hosts": 5, "link": {{"rate_bps": 10000000000, "delay_ps": 0}}}},
            "traffic": [{{"kind": "udp_cbr", "src": ["h1", "h2", "h3", "h4"], "dst": "h0", "load": 0.1,
                         "start_ps": 1000, "start_jitter_ps": 500000, "max_frames": 1}}]}}"#
        ));
        i64_col(&out, "flows", "start_ps")
    };
    let starts = run(1);
    assert!(starts.iter().all(|&s| (1000..501_000).contains(&s)), "{starts:?}");
    let mut distinct = starts.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "{starts:?}");
    assert_eq!(run(1), starts, "the same seed gives the same offsets");
    assert_ne!(run(2), starts);
}
