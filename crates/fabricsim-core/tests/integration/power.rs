//! Device power: static power over time plus energy per bit and per frame.

use super::{flag, i64_col, run_json};
use fabricsim_core::stats::{Column, RunOutput, Value};

fn f64_col(out: &RunOutput, table: &str, col: &str) -> Vec<f64> {
    match out.tables[table].column(col) {
        Some(Column::F64(v)) => v.clone(),
        other => panic!("{table}.{col} is {other:?}"),
    }
}

/// A 4-port switch drawing 100 W + 2 W per port, 50 pJ/bit and 10 nJ per frame,
/// binned every 100 us over 1 ms.
fn powered(traffic: &str) -> RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": 1000000000,
        "network": {{"switch": {{"power": {{"idle_uw": 100000000, "port_uw": 2000000, "bit_fj": 50000, "packet_fj": 10000000}}}}}},
        "topology": {{"kind": "star", "hosts": 4, "link": {{"rate_bps": 10000000000, "delay_ps": 0}}}},
        "stats": {{"power_interval_ps": 100000000}},
        "traffic": [{traffic}]}}"#
    ))
}

#[test]
fn an_idle_device_draws_its_static_power_in_every_bin() {
    let out = powered("");
    assert_eq!(f64_col(&out, "power", "watts"), vec![108.0; 10]);
    assert_eq!(f64_col(&out, "energy", "energy_j"), vec![0.108]);
    assert_eq!(out.summary["energy_j"], Value::Float(0.108));
}

#[test]
fn energy_is_static_power_over_the_run_plus_bits_and_frames_forwarded() {
    // 1000 B frames at 5 Gb/s from h0 to h1 for 1 ms.
    let out =
        powered(r#"{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "rate_bps": 5000000000, "frame_bytes": 1000}"#);
    assert!(flag(&out, "conservation_ok"));
    let frames = i64_col(&out, "flows", "packets_delivered")[0] as f64;
    let seconds = f64_col(&out, "energy", "seconds")[0];
    let expected = 108.0 * seconds + frames * 8000.0 * 50e-12 + frames * 10e-9;
    let got = f64_col(&out, "energy", "energy_j")[0];
    assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
    // The bins add up to the total, and every bin's power is its energy over its width.
    let bins: f64 = f64_col(&out, "power", "energy_j").iter().sum();
    assert!((bins - got).abs() < 1e-12);
    let loaded = f64_col(&out, "power", "watts")[3];
    // 5 Gb/s of 1000 B frames: 108 W + 0.25 W (bits) + 6.25e5 frames/s x 10 nJ (6.25 mW).
    assert!((loaded - (108.0 + 0.25 + 0.00625)).abs() < 0.01, "{loaded}");
}
