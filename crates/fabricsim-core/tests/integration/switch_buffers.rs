//! Switch buffer architectures end to end: RED/ECN step marking and WRED, DRR
//! scheduling, VOQ round robin, and the intelligent buffer (AFD, DPP).

use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::{Column, RunOutput};

fn ok(out: &RunOutput) {
    assert!(flag(out, "conservation_ok"), "conservation");
    assert!(flag(out, "buffer_accounting_ok"), "buffer accounting");
}

/// Per flow name: summed column `col` of the flows table.
fn per_flow(out: &RunOutput, col: &str) -> Vec<(String, i64)> {
    let Some(Column::Cat { codes, labels }) = out.tables["flows"].column("name") else { panic!("flows.name") };
    let v = i64_col(out, "flows", col);
    codes.iter().zip(v).map(|(&c, x)| (labels[c as usize].clone(), x)).collect()
}

fn flow(out: &RunOutput, name: &str, col: &str) -> i64 {
    per_flow(out, col).into_iter().filter(|(n, _)| n == name).map(|(_, x)| x).sum()
}

fn drops_by_reason(out: &RunOutput, reason: &str) -> i64 {
    let Some(Column::Cat { codes, labels }) = out.tables["drops"].column("reason") else { panic!("drops.reason") };
    let p = i64_col(out, "drops", "packets");
    codes.iter().zip(p).filter(|(&c, _)| labels[c as usize] == reason).map(|(_, x)| x).sum()
}

/// h1 and h2 send `frames` line-rate frames each (ECT if `ecn`) to h0 through
/// sw0, a 2:1 overload; the switch has the given `ecn` section.
fn two_to_one(ecn_section: &str, ecn: bool, frames: u64) -> RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": 10000000000,
        "network": {{"classes": 1, "switch": {{"latency_ps": 0,
            "buffer": {{"model": "static", "port_bytes": 100000000}}, "ecn": {ecn_section}}}}},
        "topology": {{"kind": "star", "hosts": 3, "link": {{"rate_bps": 10000000000, "delay_ps": 100000}}}},
        "traffic": [{{"kind": "burst", "name": "b", "src": ["h1", "h2"], "dst": "h0", "frames": {frames},
                     "frame_bytes": 1500, "ecn": {ecn}}}]}}"#
    ))
}

#[test]
fn step_marking_marks_exactly_the_packets_that_find_more_than_k_queued() {
    // K = 30 000 B = 20 frames. Two line-rate inputs, one output: the queue
    // grows by one frame per frame time, so the first ~2K/1500 = 40 arrivals
    // (plus the start-up ones) find <= K queued and every later one finds more.
    let k = 30_000u64;
    let frames = 1000u64;
    let out =
        two_to_one(&format!(r#"{{"kmin_bytes": {k}, "kmax_bytes": {k}, "pmax": 1.0, "mode": "ecn"}}"#), true, frames);
    ok(&out);
    assert_eq!(int(&out, "packets_created"), 2 * frames as i64);
    assert_eq!(int(&out, "packets_dropped"), 0);
    let marked = int(&out, "packets_marked");
    let unmarked = 2 * frames as i64 - marked;
    // Queue q (frames) seen by arrivals: 0,1,1,2,2,...: unmarked while q <= 20.
    assert!((41..=43).contains(&unmarked), "unmarked {unmarked}");
    let marks = i64_col(&out, "marks", "packets");
    assert_eq!(marks.iter().sum::<i64>(), marked);
    // The largest queue is 1000 frames: all later arrivals see more than K.
    let fraction = marked as f64 / (2 * frames) as f64;
    eprintln!("step marking: {marked} of {} marked, {unmarked} unmarked, fraction {fraction:.4}", 2 * frames);
    assert!((fraction - 0.979).abs() < 0.002, "{fraction}");
}

#[test]
fn non_ect_packets_are_neither_marked_nor_early_dropped() {
    let out = two_to_one(r#"{"kmin_bytes": 0, "kmax_bytes": 0, "mode": "ecn"}"#, false, 500);
    ok(&out);
    assert_eq!(int(&out, "packets_marked"), 0);
    assert_eq!(int(&out, "packets_dropped"), 0);
}

#[test]
fn wred_drops_with_the_red_probability() {
    // Step WRED at 30 KB: the queue cannot grow beyond K + one frame, so about
    // half of the 2:1 offered load is dropped with reason wred.
    let out = two_to_one(r#"{"kmin_bytes": 30000, "kmax_bytes": 30000, "mode": "drop"}"#, true, 2000);
    ok(&out);
    assert_eq!(int(&out, "packets_marked"), 0);
    let wred = drops_by_reason(&out, "wred");
    assert_eq!(wred, int(&out, "packets_dropped"));
    let frac = wred as f64 / 4000.0;
    eprintln!("step WRED: {wred} of 4000 dropped ({frac:.4})");
    assert!((frac - 0.5).abs() < 0.02, "{frac}");
    // A RED ramp 10..60 KB with pmax 0.1 keeps the queue in the ramp; drops are random
    // but reproducible.
    let a = two_to_one(r#"{"kmin_bytes": 10000, "kmax_bytes": 60000, "pmax": 0.1, "mode": "drop"}"#, false, 2000);
    let b = two_to_one(r#"{"kmin_bytes": 10000, "kmax_bytes": 60000, "pmax": 0.1, "mode": "drop"}"#, false, 2000);
    assert_eq!(int(&a, "packets_dropped"), int(&b, "packets_dropped"));
    assert!(int(&a, "packets_dropped") > 0);
}

#[test]
fn drr_shares_a_congested_port_by_quantum() {
    let run = |sched: &str| {
        run_json(&format!(
            r#"{{"duration_ps": 2000000000, "drain": false,
            "network": {{"classes": 2, "switch": {{"buffer": {{"model": "static", "port_bytes": 100000000}},
                "scheduler": {sched}}}}},
            "topology": {{"kind": "star", "hosts": 3, "link": {{"rate_bps": 10000000000, "delay_ps": 100000}}}},
            "traffic": [{{"kind": "udp_cbr", "name": "lo", "src": ["h1"], "dst": "h0", "load": 1.0, "class": 0}},
                        {{"kind": "udp_cbr", "name": "hi", "src": ["h2"], "dst": "h0", "load": 1.0, "class": 1}}]}}"#
        ))
    };
    let out = run(r#"{"kind": "drr", "quantum_bytes": [1500, 4500]}"#);
    ok(&out);
    let (lo, hi) = (flow(&out, "lo", "bytes_delivered") as f64, flow(&out, "hi", "bytes_delivered") as f64);
    let ratio = hi / lo;
    eprintln!("DRR 1:3: lo {lo} B, hi {hi} B, ratio {ratio:.4}");
    assert!((ratio / 3.0 - 1.0).abs() < 0.02, "DRR 1:3 gave {lo} : {hi} ({ratio})");
    // Strict priority starves the low class.
    let out = run(r#"{"kind": "strict"}"#);
    assert!(flow(&out, "lo", "bytes_delivered") < 5 * 1500);
}

/// Eight inputs into h0: i1..i7 at 100 Gb/s, fast at 400 Gb/s, all at line rate.
fn eight_to_one(buffer: &str) -> RunOutput {
    let mut nodes = vec![r#"{"name": "sw", "kind": "switch"}"#.to_string(), r#"{"name": "h0", "kind": "host"}"#.into()];
    let mut links = vec![r#"{"a": "h0", "b": "sw", "rate_bps": 100000000000, "delay_ps": 100000}"#.to_string()];
    let mut srcs = Vec::new();
    for i in 1..=8 {
        let name = if i == 8 { "fast".to_string() } else { format!("i{i}") };
        let rate = if i == 8 { 400_000_000_000u64 } else { 100_000_000_000 };
        nodes.push(format!(r#"{{"name": "{name}", "kind": "host"}}"#));
        links.push(format!(r#"{{"a": "{name}", "b": "sw", "rate_bps": {rate}, "delay_ps": 100000}}"#));
        srcs.push(format!(r#"{{"kind": "udp_cbr", "name": "{name}", "src": ["{name}"], "dst": "h0", "load": 1.0}}"#));
    }
    run_json(&format!(
        r#"{{"duration_ps": 1000000000, "drain": false,
        "network": {{"classes": 1, "switch": {{"buffer": {buffer}}}}},
        "topology": {{"kind": "explicit", "nodes": [{}], "links": [{}]}},
        "traffic": [{}]}}"#,
        nodes.join(","),
        links.join(","),
        srcs.join(",")
    ))
}

fn input_shares(out: &RunOutput) -> Vec<(String, f64)> {
    let rows = per_flow(out, "bytes_delivered");
    let total: i64 = rows.iter().map(|r| r.1).sum();
    rows.into_iter().map(|(n, b)| (n, b as f64 / total as f64)).collect()
}

#[test]
fn voq_round_robin_gives_asymmetric_inputs_equal_shares() {
    let out = eight_to_one(r#"{"model": "voq", "total_bytes": 4000000000, "voq_limit_ps": 5000000}"#);
    ok(&out);
    eprintln!("VOQ shares: {:?}", input_shares(&out));
    for (name, share) in input_shares(&out) {
        assert!((share / 0.125 - 1.0).abs() < 0.02, "VOQ share of {name}: {share}");
    }
    // 5 us at 100 Gb/s = 62.5 KB per VOQ: the fast input's VOQ overflows.
    assert!(drops_by_reason(&out, "voq_limit") > 0);
    assert_eq!(int(&out, "packets_dropped"), drops_by_reason(&out, "voq_limit"));
    // A static drop-tail FIFO is not fair: the fast input takes far more than
    // 1/8 (with phase-locked CBR arrivals most of the freed space goes to it).
    let out = eight_to_one(r#"{"model": "static", "port_bytes": 1000000}"#);
    ok(&out);
    let shares = input_shares(&out);
    let fast = shares.iter().find(|r| r.0 == "fast").unwrap().1;
    eprintln!("FIFO shares: {shares:?}");
    assert!(fast > 0.3, "FIFO share of the fast input: {fast}");
    for (name, share) in shares.iter().filter(|r| r.0 != "fast") {
        assert!(*share < 0.1, "FIFO share of {name}: {share}");
    }
    // The VOQ pool limit: a tiny total buffer drops with pool_exhausted.
    let out = eight_to_one(r#"{"model": "voq", "total_bytes": 30000, "voq_limit_bytes": 1000000}"#);
    ok(&out);
    assert!(drops_by_reason(&out, "pool_exhausted") > 0);
}

fn intelligent(traffic: &str, extra: &str, classes: u32, duration_ps: u64) -> RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": {duration_ps}, "drain": false,
        "network": {{"classes": {classes}, "switch": {{"buffer": {{"model": "intelligent", "total_bytes": 10000000,
            "alpha": [8.0], "elephant_bytes": 100000 {extra}}}}}}},
        "topology": {{"kind": "star", "hosts": 8, "link": {{"rate_bps": 100000000000, "delay_ps": 100000}}}},
        "stats": {{"throughput_interval_ps": 100000000}},
        "traffic": [{traffic}]}}"#
    ))
}

/// Delivered rate (Gb/s) of each flow over time bins starting at `from_ps`.
fn rates_after(out: &RunOutput, from_ps: u64, to_ps: u64) -> Vec<f64> {
    let (t, f, b) = (
        i64_col(out, "throughput", "time_ps"),
        i64_col(out, "throughput", "flow_id"),
        i64_col(out, "throughput", "bytes"),
    );
    let n = out.tables["flows"].rows();
    let mut bytes = vec![0i64; n];
    for k in 0..t.len() {
        if t[k] as u64 >= from_ps && (t[k] as u64) < to_ps {
            bytes[f[k] as usize] += b[k];
        }
    }
    bytes.iter().map(|&x| x as f64 * 8.0 / (to_ps - from_ps) as f64 * 1000.0).collect()
}

#[test]
fn afd_holds_elephants_near_the_fair_share_and_spares_mice() {
    // Four elephants demanding 50, 40, 30 and 20 Gb/s into one 100 Gb/s port:
    // max-min fair shares are 26.7, 26.7, 26.7 and 20 Gb/s. Two mice send
    // 20 frames each (30 KB, below the 100 KB elephant threshold).
    let traffic = r#"
        {"kind": "udp_cbr", "name": "e50", "src": ["h1"], "dst": "h0", "rate_bps": 50000000000},
        {"kind": "udp_cbr", "name": "e40", "src": ["h2"], "dst": "h0", "rate_bps": 40000000000},
        {"kind": "udp_cbr", "name": "e30", "src": ["h3"], "dst": "h0", "rate_bps": 30000000000},
        {"kind": "udp_cbr", "name": "e20", "src": ["h4"], "dst": "h0", "rate_bps": 20000000000},
        {"kind": "udp_cbr", "name": "m1", "src": ["h5"], "dst": "h0", "rate_bps": 1000000000, "max_frames": 20, "start_ps": 1000000000},
        {"kind": "udp_cbr", "name": "m2", "src": ["h6"], "dst": "h0", "rate_bps": 1000000000, "max_frames": 20, "start_ps": 2000000000}"#;
    let out = intelligent(traffic, r#", "dpp": false"#, 1, 4_000_000_000);
    ok(&out);
    let r = rates_after(&out, 1_000_000_000, 4_000_000_000);
    let fair = [80.0 / 3.0, 80.0 / 3.0, 80.0 / 3.0, 20.0];
    eprintln!("AFD rates (Gb/s, 1-4 ms): {r:?}, afd drops {}", drops_by_reason(&out, "afd"));
    for (i, (got, want)) in r.iter().zip(fair).enumerate().take(4) {
        assert!((got - want).abs() / want < 0.08, "elephant {i}: {got:.2} Gb/s, fair {want:.2} ({r:?})");
    }
    assert!(drops_by_reason(&out, "afd") > 0);
    assert_eq!(int(&out, "packets_dropped"), drops_by_reason(&out, "afd"));
    assert_eq!(flow(&out, "m1", "packets_dropped") + flow(&out, "m2", "packets_dropped"), 0);
    assert_eq!(flow(&out, "m1", "packets_delivered") + flow(&out, "m2", "packets_delivered"), 40);
}

#[test]
fn dpp_gives_the_first_packets_of_a_new_flow_priority() {
    // Two line-rate elephants build a queue at h0's port; a new flow of 10
    // frames (all within DPP's first 10) skips it, one of 30 does not.
    let traffic = r#"
        {"kind": "udp_cbr", "name": "e1", "src": ["h1"], "dst": "h0", "load": 1.0},
        {"kind": "udp_cbr", "name": "e2", "src": ["h2"], "dst": "h0", "load": 1.0},
        {"kind": "burst", "name": "short", "src": ["h3"], "dst": "h0", "frames": 10, "start_ps": 300000000},
        {"kind": "burst", "name": "long", "src": ["h4"], "dst": "h0", "frames": 30, "start_ps": 300000000}"#;
    let out = intelligent(traffic, r#", "dpp_packets": 10, "queue_desired_bytes": 150000"#, 2, 600_000_000);
    ok(&out);
    let short = flow(&out, "short", "latency_max_ps");
    let long = flow(&out, "long", "latency_max_ps");
    eprintln!("DPP: short max latency {short} ps, long max latency {long} ps");
    // Ten frames of each new flow wait only for each other (< 5 us); the
    // long flow's 11th..30th frames wait behind the elephants' queue.
    assert!(short < 5_000_000, "short flow max latency {short} ps");
    assert!(long > 5_000_000, "long flow max latency {long} ps");
    assert_eq!(flow(&out, "short", "packets_dropped"), 0);
}
