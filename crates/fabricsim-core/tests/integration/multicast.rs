//! Multicast: trees, native replication vs unicast copies, per-member delivery, conservation.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::{Column, RunOutput};
use fabricsim_core::{Scenario, Simulation};
use std::collections::BTreeMap;

/// Leaf-spine, 2 leaves x 3 hosts, one spine, 10G links of 1 us, 500 ns
/// store-and-forward switches; h0 sends 100 frames of 1000 B at 1 Gb/s to
/// the group {h1..h5} (h0 listed too: a source never sends to itself).
fn leaf_spine_group(replication: &str, leaf1_port_bytes: u64) -> String {
    format!(
        r#"{{"duration_ps": 10000000000,
        "network": {{"switch": {{"latency_ps": 500000, "buffer": {{"model": "static", "port_bytes": 1000000}}}},
                     "switch_overrides": {{"leaf1": {{"latency_ps": 500000,
                         "buffer": {{"model": "static", "port_bytes": {leaf1_port_bytes}}}}}}}}},
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 3,
                     "host_link": {{"rate_bps": 10000000000, "delay_ps": 1000000}},
                     "fabric_link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
        "multicast": {{"groups": [{{"name": "md", "members": ["h0", "h1", "h2", "h3", "h4", "h5"]}}]}},
        "traffic": [{{"kind": "udp_cbr", "src": ["h0"], "group": "md", "replication": "{replication}",
                     "rate_bps": 1000000000, "frame_bytes": 1000, "max_frames": 100}}]}}"#
    )
}

/// Packets carried by each link direction, keyed by (from, to) node name.
fn link_packets(out: &RunOutput) -> BTreeMap<(String, String), i64> {
    let names = &out.node_names;
    let src = i64_col(out, "links", "src");
    let dst = i64_col(out, "links", "dst");
    let packets = i64_col(out, "links", "packets");
    (0..src.len())
        .filter(|&i| packets[i] > 0)
        .map(|i| ((names[src[i] as usize].clone(), names[dst[i] as usize].clone()), packets[i]))
        .collect()
}

fn pairs(list: &[(&str, &str, i64)]) -> BTreeMap<(String, String), i64> {
    list.iter().map(|&(a, b, n)| ((a.to_string(), b.to_string()), n)).collect()
}

fn f64_col(out: &RunOutput, table: &str, col: &str) -> Vec<f64> {
    match out.tables[table].column(col) {
        Some(Column::F64(v)) => v.clone(),
        other => panic!("{table}.{col} is {other:?}"),
    }
}

#[test]
fn native_replication_sends_each_frame_once_over_every_tree_link() {
    let out = run_json(&leaf_spine_group("native", 1_000_000));
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    let expected = pairs(&[
        ("h0", "leaf0", 100),
        ("leaf0", "h1", 100),
        ("leaf0", "h2", 100),
        ("leaf0", "spine0", 100),
        ("spine0", "leaf1", 100),
        ("leaf1", "h3", 100),
        ("leaf1", "h4", 100),
        ("leaf1", "h5", 100),
    ]);
    assert_eq!(link_packets(&out), expected);
    // The tree table lists exactly these edges.
    assert_eq!(out.tables["multicast_tree"].rows(), 8);
    // Copies: leaf0 and leaf1 each make 2 beyond the frame they received.
    assert_eq!(int(&out, "packets_replicated"), 400);
    assert_eq!(int(&out, "packets_created"), 100);
    assert_eq!(int(&out, "packets_delivered"), 500);
    assert_eq!(i64_col(&out, "multicast_members", "packets"), vec![100; 5]);
    assert_eq!(i64_col(&out, "multicast", "messages_complete"), vec![100]);
    // The last member is 4 hops away: 4 x (1020 B at 10G + 1 us) + 3 x 500 ns.
    assert_eq!(i64_col(&out, "multicast", "last_member_latency_max_ps"), vec![4 * 1_816_000 + 1_500_000]);
    assert_eq!(i64_col(&out, "multicast", "last_member_latency_min_ps"), vec![4 * 1_816_000 + 1_500_000]);
}

#[test]
fn unicast_emulation_sends_one_copy_per_member_over_the_senders_link() {
    let out = run_json(&leaf_spine_group("unicast", 1_000_000));
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    let expected = pairs(&[
        ("h0", "leaf0", 500),
        ("leaf0", "h1", 100),
        ("leaf0", "h2", 100),
        ("leaf0", "spine0", 300),
        ("spine0", "leaf1", 300),
        ("leaf1", "h3", 100),
        ("leaf1", "h4", 100),
        ("leaf1", "h5", 100),
    ]);
    assert_eq!(link_packets(&out), expected);
    assert_eq!(int(&out, "packets_replicated"), 0);
    assert_eq!(int(&out, "packets_created"), 500);
    assert_eq!(i64_col(&out, "multicast", "frames_sent"), vec![500]);
    assert_eq!(i64_col(&out, "multicast", "messages_complete"), vec![100]);
    // The copy to h5 leaves the sender's NIC behind four others (4 x 816 ns), then 4 hops.
    assert_eq!(i64_col(&out, "multicast", "last_member_latency_max_ps"), vec![4 * 816_000 + 4 * 1_816_000 + 1_500_000]);
    // Members nearer or earlier in the copy order are served sooner.
    let mean = f64_col(&out, "multicast_members", "latency_mean_ps");
    assert_eq!(mean[0], (2 * 1_816_000 + 500_000) as f64);
}

#[test]
fn copies_lost_on_the_way_settle_their_messages_and_conserve_packets() {
    // A burst of 100 frames at line rate; leaf1 holds only 3000 B per port, so the
    // copies for h3..h5 are lost when leaf1's ports are busy.
    let json = leaf_spine_group("native", 3000).replace(
        r#""rate_bps": 1000000000, "frame_bytes": 1000, "max_frames": 100"#,
        r#""rate_bps": 10000000000, "frame_bytes": 1000, "max_frames": 100"#,
    );
    let out = run_json(&json);
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    let complete = i64_col(&out, "multicast", "messages_complete")[0];
    let incomplete = i64_col(&out, "multicast", "messages_incomplete")[0];
    assert_eq!(i64_col(&out, "multicast", "messages_in_flight"), vec![0]);
    assert_eq!(complete + incomplete, 100);
    assert_eq!(
        int(&out, "packets_created") + int(&out, "packets_replicated"),
        int(&out, "packets_delivered") + int(&out, "packets_dropped")
    );
}

#[test]
fn multicast_configuration_errors_name_the_field() {
    let err = |json: &str| Simulation::new(&Scenario::from_json(json).unwrap()).err().unwrap().to_string();
    let base = leaf_spine_group("native", 1_000_000);
    let e = err(&base.replace(r#""group": "md""#, r#""group": "nope""#));
    assert!(e.starts_with("traffic[0].group: unknown group 'nope' (groups: md)"), "{e}");
    let e = err(&base.replace(r#""group": "md""#, r#""group": "md", "dst": "h1""#));
    assert!(e.starts_with("traffic[0].dst: give either dst or group"), "{e}");
    let e = err(&base.replace(r#""members": ["h0","#, r#""members": ["leaf0","#));
    assert!(e.starts_with("multicast.groups[0].members[0]: 'leaf0' is a switch"), "{e}");
    let e = err(&base.replace(r#"["h0", "h1", "h2", "h3", "h4", "h5"]"#, r#"["h0"]"#));
    assert!(e.contains("no member other than the source"), "{e}");
}

#[test]
fn prefetch_hints_forced_on_skip_native_multicast_frames_and_change_no_output() {
    let sc = Scenario::from_json(&leaf_spine_group("native", 1_000_000)).unwrap();
    let mut on = Simulation::new(&sc).unwrap();
    on.set_prefetch(true);
    let mut off = Simulation::new(&sc).unwrap();
    let (a, b) = (on.finish(), off.finish());
    assert_eq!(a.summary, b.summary);
    for (name, t) in &a.tables {
        assert_eq!(format!("{t:?}"), format!("{:?}", b.tables[name]), "table {name}");
    }
}
