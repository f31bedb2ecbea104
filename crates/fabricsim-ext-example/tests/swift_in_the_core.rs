//! The Swift-like controller run by the core: registered by name, selected
//! with `tcp.cc: swift`, checked against its closed-form steady state.

use fabricsim_core::stats::{Column, RunOutput, Value};
use fabricsim_core::{Scenario, Simulation};

fn run(json: &str) -> Result<RunOutput, fabricsim_core::ConfigError> {
    fabricsim_ext_example::register();
    let sc = Scenario::from_json(json)?;
    Ok(Simulation::new(&sc)?.finish())
}

fn col(out: &RunOutput, table: &str, name: &str) -> Vec<i64> {
    match out.tables[table].column(name) {
        Some(Column::I64(v)) => v.clone(),
        Some(Column::U64(v)) => v.iter().map(|&x| x as i64).collect(),
        Some(Column::U32(v)) => v.iter().map(|&x| x as i64).collect(),
        other => panic!("{table}.{name} is {other:?}"),
    }
}

fn int(out: &RunOutput, key: &str) -> i64 {
    match out.summary.get(key) {
        Some(Value::Int(v)) => *v,
        other => panic!("summary.{key} is {other:?}"),
    }
}

/// `flows` TCP bulk transfers of `bytes` each from h1.. into h0 over 40G
/// links, through one 10G port towards h0 with a deep buffer.
fn scenario(flows: usize, bytes: u64, tcp: &str) -> String {
    let mut nodes = vec![r#"{"name": "sw", "kind": "switch"}"#.to_string()];
    let mut links = Vec::new();
    for i in 0..=flows {
        nodes.push(format!(r#"{{"name": "h{i}", "kind": "host"}}"#));
        let rate = if i == 0 { 10_000_000_000u64 } else { 40_000_000_000 };
        links.push(format!(r#"{{"a": "h{i}", "b": "sw", "rate_bps": {rate}, "delay_ps": 2000000}}"#));
    }
    let src: Vec<String> = (1..=flows).map(|i| format!(r#""h{i}""#)).collect();
    format!(
        r#"{{"duration_ps": 1000000000000, "seed": 5,
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 4000000}}}}}},
        "topology": {{"kind": "explicit", "nodes": [{}], "links": [{}]}},
        "tcp": {tcp},
        "traffic": [{{"kind": "tcp_bulk", "src": [{}], "dst": "h0", "bytes": {bytes}}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#,
        nodes.join(","),
        links.join(","),
        src.join(",")
    )
}

/// Swift's fixed point for one flow whose target exceeds the base RTT: the
/// queue holds the RTT at the target (flow scaling off), and the bottleneck
/// stays busy, so the transfer takes its bytes at the line rate.
#[test]
fn one_flow_holds_its_rtt_at_the_target_and_fills_the_bottleneck() {
    let bytes = 20_000_000u64;
    let tcp = r#"{"profile": "linux", "cc": "swift", "cc_params": {"base_target_us": 40, "fs_range_us": 0}}"#;
    let out = run(&scenario(1, bytes, tcp)).unwrap();
    assert_eq!(int(&out, "packets_dropped"), 0);
    let srtt = col(&out, "flows", "srtt_ps")[0] as f64 * 1e-12;
    assert!((srtt - 40e-6).abs() < 0.1 * 40e-6, "srtt {srtt} against the 40 us target");
    // Goodput of 1448 B segments in 1538 B frames at 10G.
    let goodput = 10e9 * 1448.0 / 1538.0;
    let fct = col(&out, "flows", "fct_ps")[0] as f64 * 1e-12;
    let ideal = bytes as f64 * 8.0 / goodput;
    assert!(fct < 1.05 * ideal, "fct {fct} s against {ideal} s at line rate");
}

/// Four flows with flow scaling: the bottleneck stays busy (the last one
/// completes when all the bytes could have crossed at the line rate),
/// nothing is lost, and no flow takes much more than its share.
#[test]
fn four_flows_share_the_bottleneck_without_loss() {
    let tcp = r#"{"profile": "linux", "cc": "swift", "cc_params": {"base_target_us": 40}}"#;
    let out = run(&scenario(4, 5_000_000, tcp)).unwrap();
    assert_eq!(int(&out, "packets_dropped"), 0);
    let fct: Vec<f64> = col(&out, "flows", "fct_ps").iter().map(|&f| f as f64 * 1e-12).collect();
    let (lo, hi) = fct.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(hi / lo < 1.5, "completion times {fct:?}");
    let total = 4.0 * 5_000_000.0 * 8.0 / (10e9 * 1448.0 / 1538.0);
    assert!(hi < 1.05 * total, "last completion {hi} s against {total} s at line rate");
}

#[test]
fn bad_parameters_name_the_field() {
    let tcp = r#"{"cc": "swift", "cc_params": {"beta": 3}}"#;
    let e = run(&scenario(1, 1000, tcp)).err().unwrap();
    assert_eq!(e.path, "tcp.cc_params.beta");
    assert_eq!(e.message, "must be a number from 0 to 1, not 3");
}

#[test]
fn runs_are_deterministic() {
    let tcp = r#"{"cc": "swift"}"#;
    let a = run(&scenario(4, 1_000_000, tcp)).unwrap();
    let b = run(&scenario(4, 1_000_000, tcp)).unwrap();
    assert_eq!(format!("{:?}", a.tables["flows"].columns), format!("{:?}", b.tables["flows"].columns));
}
