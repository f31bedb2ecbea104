//! Broadcast fabric: fixed latency, receivers that filter, native multicast, receive-buffer overflow.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::{Scenario, Simulation};

/// A broadcast fabric joining `hosts` hosts on 10G links of 5 ns; adapter
/// latency 300 ns from a 14 B header; 64 KB receive buffer per adapter.
fn fabric(hosts: u32, traffic: &str) -> String {
    format!(
        r#"{{"duration_ps": 1000000000,
        "network": {{"switch": {{"kind": "broadcast", "forwarding": "cut_through", "latency_ps": 300000,
                     "cut_through_bytes": 14, "buffer": {{"model": "static", "port_bytes": 65536}}}}}},
        "topology": {{"kind": "star", "hosts": {hosts}, "link": {{"rate_bps": 10000000000, "delay_ps": 5000}}}},
        "multicast": {{"groups": [{{"name": "g", "members": ["h1", "h2", "h3"]}}]}},
        "traffic": [{traffic}]}}"#
    )
}

fn ser(bytes: u64) -> i64 {
    (bytes * 8 * 100) as i64 // ps at 10 Gb/s
}

#[test]
fn latency_is_fixed_and_independent_of_other_traffic() {
    let one = r#"{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "rate_bps": 1000000000, "frame_bytes": 1000}"#;
    let expected = 5_000 + ser(14) + 300_000 + ser(1020) + 5_000;
    let out = run_json(&fabric(4, one));
    assert_eq!(i64_col(&out, "flows", "latency_min_ps"), vec![expected]);
    assert_eq!(i64_col(&out, "flows", "latency_max_ps"), vec![expected]);
    // Every other adapter sends at line rate meanwhile: h0 -> h1 does not notice.
    let busy = format!(
        r#"{one}, {{"kind": "udp_cbr", "src": ["h2"], "dst": "h3", "load": 1.0, "frame_bytes": 1500}},
           {{"kind": "udp_cbr", "src": ["h3"], "dst": "h2", "load": 1.0, "frame_bytes": 64}}"#
    );
    let out = run_json(&fabric(4, &busy));
    assert!(flag(&out, "conservation_ok"));
    assert_eq!(i64_col(&out, "flows", "latency_max_ps")[0], expected);
    assert_eq!(int(&out, "packets_dropped"), 0);
}

#[test]
fn every_receiver_sees_every_frame_and_keeps_its_own() {
    let t = r#"{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "rate_bps": 1000000000, "frame_bytes": 1000, "max_frames": 100}"#;
    let out = run_json(&fabric(4, t));
    assert_eq!(i64_col(&out, "fabric_receivers", "frames_seen"), vec![0, 100, 100, 100]);
    assert_eq!(i64_col(&out, "fabric_receivers", "frames_addressed"), vec![0, 100, 0, 0]);
    assert_eq!(i64_col(&out, "fabric_receivers", "frames_filtered"), vec![0, 0, 100, 100]);
    match out.tables["nodes"].column("kind") {
        Some(fabricsim_core::stats::Column::Cat { codes, labels }) => {
            assert_eq!(labels[codes[0] as usize], "broadcast")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn multicast_is_native_each_member_adapter_keeps_a_copy() {
    let t = r#"{"kind": "udp_cbr", "src": ["h0"], "group": "g", "rate_bps": 1000000000, "frame_bytes": 1000, "max_frames": 50}"#;
    let out = run_json(&fabric(5, t));
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    // The sender's link carries each frame once; each member receives 50.
    assert_eq!(i64_col(&out, "links", "packets")[0], 50); // h0 -> fabric
    assert_eq!(i64_col(&out, "multicast_members", "packets"), vec![50, 50, 50]);
    assert_eq!(i64_col(&out, "fabric_receivers", "frames_addressed"), vec![0, 50, 50, 50, 0]);
    assert_eq!(i64_col(&out, "fabric_receivers", "frames_filtered"), vec![0, 0, 0, 0, 50]);
    let expected = 5_000 + ser(14) + 300_000 + ser(1020) + 5_000;
    assert_eq!(i64_col(&out, "multicast", "last_member_latency_max_ps"), vec![expected]);
}

#[test]
fn beyond_a_receivers_rate_frames_queue_then_overflow_its_buffer() {
    // Two senders at line rate to one receiver: it gets 20 Gb/s for a 10 Gb/s output.
    let t = r#"{"kind": "udp_cbr", "src": ["h0", "h2"], "dst": "h1", "load": 1.0, "frame_bytes": 1500}"#;
    let out = run_json(&fabric(4, t));
    assert!(flag(&out, "conservation_ok"));
    let drops = &out.tables["drops"];
    let reasons = match drops.column("reason") {
        Some(fabricsim_core::stats::Column::Cat { codes, labels }) => {
            codes.iter().map(|&c| labels[c as usize].clone()).collect::<Vec<_>>()
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(reasons, vec!["receiver_buffer_full".to_string()]);
    // Half the offered frames are lost, less the ones the 64 KB buffer held
    // (43 of 1500 B) when the senders stopped: the receiver delivers at its rate.
    let sent = int(&out, "packets_created");
    let lost = int(&out, "packets_dropped");
    assert!((sent - lost - (sent / 2 + 43)).abs() <= 2, "{lost} of {sent}");
    // Queued frames waited up to one buffer's worth (65536 B ~ 43 frames of 1520 B on the wire).
    let max = i64_col(&out, "flows", "latency_max_ps")[0];
    assert!(max > 40 * ser(1520) && max < 46 * ser(1520), "{max}");
}

#[test]
fn broadcast_fabric_configuration_errors_name_the_field() {
    let err = |json: &str| Simulation::new(&Scenario::from_json(json).unwrap()).err().unwrap().to_string();
    let t = r#"{"kind": "burst", "src": ["h0"], "dst": "h1", "frames": 1}"#;
    let e = err(&fabric(2, t).replace(r#""forwarding": "cut_through""#, r#""forwarding": "store_and_forward""#));
    assert!(e.starts_with("network.switch.forwarding: a broadcast fabric"), "{e}");
    let e = err(&fabric(2, t).replace(
        r#""buffer": {"model": "static", "port_bytes": 65536}"#,
        r#""buffer": {"model": "shared", "total_bytes": 1000000}"#,
    ));
    assert!(e.starts_with("network.switch.buffer.model: "), "{e}");
    let chain = r#"{"duration_ps": 1000,
        "network": {"switch_overrides": {"bf": {"kind": "broadcast", "forwarding": "cut_through"}}},
        "topology": {"kind": "explicit",
          "nodes": [{"name": "h0", "kind": "host"}, {"name": "bf", "kind": "switch"}, {"name": "sw", "kind": "switch"},
                    {"name": "h1", "kind": "host"}],
          "links": [{"a": "h0", "b": "bf", "rate_bps": 1000, "delay_ps": 0}, {"a": "bf", "b": "sw", "rate_bps": 1000, "delay_ps": 0},
                    {"a": "sw", "b": "h1", "rate_bps": 1000, "delay_ps": 0}]}}"#;
    let e = err(chain);
    assert!(e.starts_with("network.switch_overrides.bf.kind: broadcast fabric 'bf' is linked to 'sw'"), "{e}");
}

#[test]
fn a_switch_and_a_fabric_side_by_side_in_one_run_and_no_traffic_between_them() {
    let json = |dst: &str| {
        format!(
            r#"{{"duration_ps": 100000000,
            "network": {{"switch_overrides": {{"bf": {{"kind": "broadcast", "forwarding": "cut_through", "latency_ps": 300000,
                                                  "buffer": {{"model": "static", "port_bytes": 65536}}}}}}}},
            "topology": {{"kind": "explicit",
              "nodes": [{{"name": "sw", "kind": "switch"}}, {{"name": "bf", "kind": "switch"}},
                        {{"name": "s0", "kind": "host"}}, {{"name": "s1", "kind": "host"}},
                        {{"name": "f0", "kind": "host"}}, {{"name": "f1", "kind": "host"}}],
              "links": [{{"a": "s0", "b": "sw", "rate_bps": 10000000000, "delay_ps": 0}},
                        {{"a": "s1", "b": "sw", "rate_bps": 10000000000, "delay_ps": 0}},
                        {{"a": "f0", "b": "bf", "rate_bps": 10000000000, "delay_ps": 0}},
                        {{"a": "f1", "b": "bf", "rate_bps": 10000000000, "delay_ps": 0}}]}},
            "traffic": [{{"kind": "burst", "src": ["s0"], "dst": "s1", "frames": 1}},
                        {{"kind": "burst", "src": ["f0"], "dst": "{dst}", "frames": 1}}]}}"#
        )
    };
    let out = run_json(&json("f1"));
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    assert_eq!(i64_col(&out, "flows", "packets_delivered"), vec![1, 1]);
    let e = Simulation::new(&Scenario::from_json(&json("s1")).unwrap()).err().unwrap().to_string();
    assert!(e.starts_with("traffic[1]: 'f0' cannot reach 's1': they are in separate parts"), "{e}");
}
