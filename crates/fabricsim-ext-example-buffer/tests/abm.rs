//! The ABM-like policy: closed forms of its thresholds, and runs through the core.

use fabricsim_core::buffer::{AdmitRequest, Buffer, BufferModel, Occupancy, Verdict};
use fabricsim_core::stats::{Column, RunOutput, Value};
use fabricsim_core::units::{Rate, SimTime};
use fabricsim_core::{Scenario, Simulation};
use fabricsim_ext_example_buffer::{register, Abm};

const B: u64 = 1_000_000;
const PKT: u32 = 100;

fn req(port: u16, class: u8, bytes: u32, now: SimTime) -> AdmitRequest {
    AdmitRequest { in_port: None, out_port: port, class, bytes, flow: 0, now, ecn: 0, queued: Occupancy::default() }
}

/// Fills `n` queues (one per port, class 0) in turn with 100-byte packets,
/// nothing leaving, until a whole round is refused; returns each queue's bytes.
fn fill(policy: Abm, n: usize) -> Vec<u64> {
    let mut b = Buffer::custom("abm", Box::new(policy), n, 1);
    b.model_mut().attach(0, 0, &vec![Rate(100_000_000_000); n]);
    loop {
        let mut any = false;
        for p in 0..n {
            any |= b.admit(req(p as u16, 0, PKT, SimTime::ZERO)).0 == Verdict::Admit;
        }
        if !any {
            break;
        }
    }
    (0..n).map(|p| b.policy_view().unwrap().queue_bytes(p, 0)).collect()
}

fn abm(alpha: f64, scale: bool, drain: bool, ports: usize) -> Abm {
    Abm::new(B, vec![alpha], 1, 10_000_000, scale, drain, ports, 1)
}

#[test]
fn n_congested_queues_settle_at_the_closed_form() {
    for alpha in [0.25, 0.5, 1.0, 2.0, 8.0] {
        for n in [1usize, 2, 4, 8, 16] {
            // ABM: T = alpha / n (B - n T)  =>  T = alpha B / (n (1 + alpha)).
            let expect = alpha * B as f64 / (n as f64 * (1.0 + alpha));
            // Dynamic thresholds (no 1/n, no drain rate): T = alpha B / (1 + alpha n).
            let expect_dt = alpha * B as f64 / (1.0 + alpha * n as f64);
            for (policy, want) in [(abm(alpha, true, true, n), expect), (abm(alpha, false, false, n), expect_dt)] {
                let q = fill(policy, n);
                for &x in &q {
                    // Within the last packets of the fill order.
                    let tol = PKT as f64 * (1.0 + alpha * n as f64);
                    assert!((x as f64 - want).abs() <= tol, "alpha {alpha} n {n}: {x} vs {want:.0} (+-{tol})");
                }
            }
        }
    }
}

#[test]
fn a_queue_draining_at_half_rate_gets_half_the_threshold() {
    // Two ports of 100 Gb/s, class 0; both queues congested. Queue 0 sends at
    // line rate, queue 1 at half of it, for two windows of 10 us.
    let mut b = Buffer::custom("abm", Box::new(abm(1.0, true, true, 2)), 2, 1);
    b.model_mut().attach(0, 0, &[Rate(100_000_000_000); 2]);
    for _ in 0..40 {
        for p in 0..2 {
            assert_eq!(b.admit(req(p, 0, 1000, SimTime::ZERO)).0, Verdict::Admit);
        }
    }
    // 1000 B take 80 ns at 100 Gb/s.
    let mut t = 0u64;
    for k in 0..250u64 {
        t += 80_000;
        b.release_request(req(0, 0, 1000, SimTime(t)));
        b.admit(req(0, 0, 1000, SimTime(t)));
        if k % 2 == 0 {
            b.release_request(req(1, 0, 1000, SimTime(t)));
            b.admit(req(1, 0, 1000, SimTime(t)));
        }
    }
    let now = SimTime(t);
    let BufferModel::Custom(m) = b.model() else { unreachable!("a registered policy") };
    let policy = format!("{:?}", m.policy());
    assert!(policy.contains("n_congested: [2]"), "{policy}");
    // Full-rate threshold: alpha / 2 x (B - Q); queue 1's is about half of it.
    // A packet reaching 3/4 of the full-rate threshold passes queue 0's test
    // and fails queue 1's.
    let view = b.policy_view().unwrap();
    let full = (B - view.used_bytes()) as f64 / 2.0;
    let (q0, q1) = (view.queue_bytes(0, 0) as f64, view.queue_bytes(1, 0) as f64);
    assert!(q0 < full * 0.25 && q1 < full * 0.25, "{q0} {q1} {full}");
    let to_3_4 = |q: f64| (full * 0.75 - q) as u32;
    let drop = Verdict::Drop(fabricsim_core::stats::DropReason::DynamicThreshold);
    assert_eq!(b.admit(req(1, 0, to_3_4(q1), now)).0, drop);
    assert_eq!(b.admit(req(0, 0, to_3_4(q0), now)).0, Verdict::Admit);
}

fn run(json: &str) -> RunOutput {
    register();
    let sc = Scenario::from_json(json).expect("valid scenario JSON");
    Simulation::new(&sc).expect("valid scenario").finish()
}

fn incast(buffer: &str) -> String {
    let servers: Vec<String> = (1..=8).map(|i| format!("\"h{i}\"")).collect();
    format!(
        r#"{{"duration_ps": 2000000000000, "seed": 1,
        "network": {{"switch": {{"latency_ps": 500000, "buffer": {buffer}}}}},
        "topology": {{"kind": "star", "hosts": 10, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
        "tcp": {{"min_rto_ps": 10000000000}},
        "traffic": [
          {{"kind": "tcp_incast", "client": "h0", "servers": [{}], "response_bytes": 200000, "rounds": 2}},
          {{"kind": "tcp_bulk", "src": ["h9"], "dst": "h0", "bytes": 5000000}}],
        "stats": {{"queue_sample_interval_ps": 0}}}}"#,
        servers.join(", ")
    )
}

fn int(out: &RunOutput, key: &str) -> i64 {
    match out.summary.get(key) {
        Some(Value::Int(v)) => *v,
        other => panic!("summary.{key} is {other:?}"),
    }
}

fn flag(out: &RunOutput, key: &str) -> bool {
    matches!(out.summary.get(key), Some(Value::Bool(true)))
}

fn u64s(out: &RunOutput, table: &str, col: &str) -> Vec<u64> {
    match out.tables[table].column(col) {
        Some(Column::U64(v)) => v.clone(),
        Some(Column::I64(v)) => v.iter().map(|&x| x as u64).collect(),
        Some(Column::U32(v)) => v.iter().map(|&x| x as u64).collect(),
        other => panic!("{table}.{col} is {other:?}"),
    }
}

#[test]
fn incast_runs_through_the_core_within_the_threshold() {
    let alpha = 0.5;
    let out = run(&incast(&format!(r#"{{"model": "abm", "params": {{"size": 300000, "alpha": {alpha}}}}}"#)));
    assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok") && flag(&out, "drained"));
    assert_eq!(int(&out, "flows_completed"), int(&out, "flows_total"));
    assert!(int(&out, "packets_dropped") > 0, "the incast overflows 300 KB");
    let Some(Column::Cat { codes, labels }) = out.tables["buffers"].column("model") else { panic!("buffers.model") };
    assert_eq!(labels[codes[0] as usize], "abm");
    let hw = u64s(&out, "buffers", "high_water_bytes")[0];
    assert!(hw > 0 && hw <= 300_000, "{hw}");
    // One congested queue (towards h0): it holds at most alpha (B - Q) with
    // Q >= its own bytes, so at most alpha B / (1 + alpha) plus one frame.
    let qhw = u64s(&out, "links", "queue_high_water_bytes");
    let bound = alpha * 300_000.0 / (1.0 + alpha) + 1538.0;
    for &x in &qhw {
        assert!(x as f64 <= bound, "queue high water {x} > {bound}");
    }
    // Same scenario, same outputs.
    let again = run(&incast(&format!(r#"{{"model": "abm", "params": {{"size": 300000, "alpha": {alpha}}}}}"#)));
    assert_eq!(format!("{:?}", out.summary), format!("{:?}", again.summary));
}

#[test]
fn bad_params_and_names_are_refused_with_the_field() {
    register();
    let build = |buffer: &str| {
        let sc = Scenario::from_json(&incast(buffer)).unwrap();
        Simulation::new(&sc).err().expect("refused")
    };
    let e = build(r#"{"model": "abm", "params": {"size": 300000, "alpha": 100}}"#);
    assert_eq!(e.path, "network.switch.buffer.params.alpha");
    assert!(e.message.contains("out of range; allowed: 0.0078125 to 64"), "{}", e.message);
    let e = build(r#"{"model": "abm", "params": {"alpa": 1}}"#);
    assert_eq!(e.path, "network.switch.buffer.params.size");
    let e = build(r#"{"model": "abm", "params": {"size": 1000, "alpa": 1}}"#);
    assert_eq!(e.path, "network.switch.buffer.params.alpa");
    assert!(e.message.contains("unknown key 'alpa'; allowed: alpha, congested_bytes"), "{}", e.message);
    let e = build(r#"{"model": "abn", "params": {}}"#);
    assert_eq!(e.path, "network.switch.buffer.model");
    assert!(e.message.contains("allowed: static, shared, voq, intelligent, abm"), "{}", e.message);
}

#[test]
fn closed_form_with_a_policy_built_by_the_registry() {
    register();
    let ctx = fabricsim_core::extension::buffer_policy::DeviceContext { port_rates_bps: &[1; 4], classes: 1 };
    let p = fabricsim_core::extension::buffer_policy::build(
        "abm",
        &serde_json::json!({"size": 1_000_000, "alpha": 1.0}),
        &ctx,
        "b",
    )
    .unwrap();
    assert_eq!(p.capacity_bytes(), 1_000_000);
}
