//! Load balancing over equal-cost paths: each mode's choice of uplinks seen
//! in the links table, determinism with the seed, ECMP untouched by the
//! other modes' state, bad parameters named by field.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::RunOutput;
use fabricsim_core::{Scenario, Simulation};

fn node_id(out: &RunOutput, name: &str) -> i64 {
    out.node_names.iter().position(|n| n == name).expect("node") as i64
}

/// Two leaves with one host each and four spines, every link 100G; one UDP
/// flow h0 -> h1 at 40 % of the host link; `lb` is the switches' `load_balancing`.
fn leaf_spine(lb: &str, seed: u64) -> String {
    format!(
        r#"{{"duration_ps": 200000000, "seed": {seed},
        "network": {{"switch": {{"load_balancing": {lb}}}}},
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 1,
                     "host_link": {{"rate_bps": 100000000000, "delay_ps": 1000000}},
                     "fabric_link": {{"rate_bps": 100000000000, "delay_ps": 1000000}}}},
        "traffic": [{{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "load": 0.4, "frame_bytes": 1500}}]}}"#
    )
}

/// Frames leaf0 sent to each spine (spine0..3).
fn uplink_frames(out: &RunOutput) -> Vec<i64> {
    uplinks(out, 4)
}

/// Frames leaf0 sent to each of `spines` spines.
fn uplinks(out: &RunOutput, spines: usize) -> Vec<i64> {
    let (src, dst, pk) = (i64_col(out, "links", "src"), i64_col(out, "links", "dst"), i64_col(out, "links", "packets"));
    let leaf0 = node_id(out, "leaf0");
    (0..spines)
        .map(|s| {
            let spine = node_id(out, &format!("spine{s}"));
            (0..src.len()).filter(|&i| src[i] == leaf0 && dst[i] == spine).map(|i| pk[i]).sum()
        })
        .collect()
}

fn check_ok(out: &RunOutput) {
    assert!(flag(out, "conservation_ok"), "conservation");
    assert!(flag(out, "drained"), "drained");
    assert_eq!(int(out, "packets_dropped"), 0);
}

#[test]
fn ecmp_keeps_a_flow_on_one_uplink() {
    let out = run_json(&leaf_spine(r#"{"mode": "ecmp"}"#, 1));
    check_ok(&out);
    let up = uplink_frames(&out);
    assert_eq!(up.iter().filter(|&&f| f > 0).count(), 1, "{up:?}");
}

#[test]
fn spray_rr_splits_a_flow_exactly_evenly() {
    let out = run_json(&leaf_spine(r#"{"mode": "spray_rr"}"#, 1));
    check_ok(&out);
    let up = uplink_frames(&out);
    let total: i64 = up.iter().sum();
    assert!(total > 600, "{total}");
    for f in &up {
        assert!((f - total / 4).abs() <= 1, "round robin differs by at most one frame: {up:?}");
    }
}

#[test]
fn spray_random_uses_every_uplink_about_equally() {
    let out = run_json(&leaf_spine(r#"{"mode": "spray_random"}"#, 1));
    check_ok(&out);
    let up = uplink_frames(&out);
    let total: i64 = up.iter().sum();
    let sd = (total as f64 * 0.25 * 0.75).sqrt();
    for f in &up {
        assert!(((*f as f64) - total as f64 / 4.0).abs() < 4.0 * sd, "{up:?}");
    }
}

#[test]
fn flowlet_keeps_a_gapless_flow_on_one_uplink_and_moves_it_after_gaps() {
    // Frames 300 ns apart: shorter than a 50 us gap, one flowlet for the whole run.
    let out = run_json(&leaf_spine(r#"{"mode": "flowlet", "flowlet_gap_ps": 50000000}"#, 1));
    check_ok(&out);
    assert_eq!(uplink_frames(&out).iter().filter(|&&f| f > 0).count(), 1);
    // A gap below the frame spacing: every frame starts a flowlet, so the
    // flow is sprayed.
    let out = run_json(&leaf_spine(r#"{"mode": "flowlet", "flowlet_gap_ps": 1000}"#, 1));
    check_ok(&out);
    assert!(uplink_frames(&out).iter().all(|&f| f > 100), "{:?}", uplink_frames(&out));
}

#[test]
fn adaptive_spreads_a_flow_over_idle_uplinks() {
    let out = run_json(&leaf_spine(r#"{"mode": "adaptive"}"#, 1));
    check_ok(&out);
    // At 40 % load every uplink is idle when a frame arrives: ties, broken at random.
    assert!(uplink_frames(&out).iter().all(|&f| f > 100), "{:?}", uplink_frames(&out));
}

#[test]
fn adaptive_steers_around_a_loaded_uplink() {
    // Two spines; leaf0 (the only adaptive switch) gets a line-rate flow
    // h0 -> h2 and a 40 % flow h1 -> h3: 1.4 uplinks' worth. The line-rate
    // flow alone would fill one uplink; adaptive sends each frame to the
    // shorter queue, so both uplinks carry a large share and nothing is lost.
    let sc = r#"{"duration_ps": 200000000, "seed": 5,
        "network": {"switch": {"buffer": {"model": "static", "port_bytes": 10000000}},
                    "switch_overrides": {"leaf0": {"buffer": {"model": "static", "port_bytes": 10000000},
                                                   "load_balancing": {"mode": "adaptive", "flowlet_gap_ps": 0}}}},
        "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                     "host_link": {"rate_bps": 100000000000, "delay_ps": 1000000},
                     "fabric_link": {"rate_bps": 100000000000, "delay_ps": 1000000}},
        "traffic": [{"kind": "udp_cbr", "src": ["h0"], "dst": "h2", "load": 1.0, "frame_bytes": 1500},
                    {"kind": "udp_cbr", "src": ["h1"], "dst": "h3", "load": 0.4, "frame_bytes": 1500}]}"#;
    let out = run_json(sc);
    assert!(flag(&out, "conservation_ok"));
    assert_eq!(int(&out, "packets_dropped"), 0, "adaptive keeps both flows off one uplink");
    let up = uplinks(&out, 2);
    let (hi, lo) = (up[0].max(up[1]), up[0].min(up[1]));
    assert!(hi + lo > 0 && (lo as f64) > 0.3 * (hi + lo) as f64, "{up:?}");
}

#[test]
fn every_mode_is_deterministic_with_the_seed() {
    for lb in [
        r#"{"mode": "spray_random"}"#,
        r#"{"mode": "spray_rr"}"#,
        r#"{"mode": "flowlet", "flowlet_gap_ps": 1000}"#,
        r#"{"mode": "adaptive"}"#,
    ] {
        let a = run_json(&leaf_spine(lb, 3));
        let b = run_json(&leaf_spine(lb, 3));
        assert_eq!(format!("{:?}", a.tables["links"]), format!("{:?}", b.tables["links"]), "{lb}");
        assert_eq!(format!("{:?}", a.tables["flows"]), format!("{:?}", b.tables["flows"]), "{lb}");
    }
    let a = uplink_frames(&run_json(&leaf_spine(r#"{"mode": "spray_random"}"#, 3)));
    let b = uplink_frames(&run_json(&leaf_spine(r#"{"mode": "spray_random"}"#, 4)));
    assert_ne!(a, b, "another seed, other draws");
}

#[test]
fn bad_load_balancing_parameters_name_the_field() {
    let err = |lb: &str| {
        let sc = Scenario::from_json(&leaf_spine(lb, 1));
        match sc {
            Err(e) => e.to_string(),
            Ok(sc) => Simulation::new(&sc).err().expect("rejected").to_string(),
        }
    };
    let e = err(r#"{"mode": "spray"}"#);
    assert!(e.contains("spray_random") && e.contains("adaptive"), "{e}");
    let e = err(r#"{"mode": "flowlet"}"#);
    assert!(e.contains("network.switch.load_balancing.flowlet_gap"), "{e}");
    let e = err(r#"{"mode": "spray_rr", "flowlet_gap_ps": 5}"#);
    assert!(e.contains("network.switch.load_balancing.flowlet_gap"), "{e}");
}
