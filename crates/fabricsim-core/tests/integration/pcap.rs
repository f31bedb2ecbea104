//! Packet capture taps: they record what the tapped ports carry, change
//! nothing else in a run, and refuse bad taps at their field.

use super::{i64_col, int, run_json};
use fabricsim_core::{Scenario, Simulation};

/// h0 -> h1 over one switch, 2 MB of TCP on a lossy 10G link, with `stats`.
fn lossy_tcp(stats: &str) -> String {
    format!(
        r#"{{"name": "pcap", "seed": 5, "duration_ps": 20000000000,
        "network": {{"switch": {{"latency_ps": 500000}}}},
        "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": 10000000000, "delay_ps": 2000000, "loss": 0.002}}}},
        "traffic": [{{"kind": "tcp_bulk", "src": ["h0"], "dst": "h1", "bytes": 2000000}}],
        "stats": {stats}}}"#
    )
}

const TAPS: &str = r#"{"pcap": [{"node": "h0"}, {"node": "sw0", "port": 1, "direction": "rx", "max_packets": 50}]}"#;

#[test]
fn taps_record_every_frame_of_their_ports_and_change_nothing_else() {
    let with = run_json(&lossy_tcp(TAPS));
    let without = run_json(&lossy_tcp("{}"));
    assert!(!without.tables.contains_key("captures") && !without.tables.contains_key("capture_taps"));
    for key in ["events", "packets_created", "packets_delivered", "packets_dropped", "sim_time_ps"] {
        assert_eq!(int(&with, key), int(&without, key), "{key}");
    }
    assert_eq!(i64_col(&with, "flows", "retransmits"), i64_col(&without, "flows", "retransmits"));
    assert!(i64_col(&with, "flows", "retransmits")[0] > 0, "the link loses packets");

    // h0's one port: every frame it sent and every frame it received whole.
    let h0 = with.node_names.iter().position(|n| n == "h0").unwrap() as i64;
    let (src, dst, packets) =
        (i64_col(&with, "links", "src"), i64_col(&with, "links", "dst"), i64_col(&with, "links", "packets"));
    let sent: i64 = (0..src.len()).filter(|&i| src[i] == h0).map(|i| packets[i]).sum();
    let into: i64 = (0..dst.len()).filter(|&i| dst[i] == h0).map(|i| packets[i]).sum();
    let tap = i64_col(&with, "captures", "tap");
    let dir = i64_col(&with, "captures", "direction");
    let count = |t: i64, d: i64| (0..tap.len()).filter(|&i| tap[i] == t && dir[i] == d).count() as i64;
    assert_eq!(count(0, 0), sent);
    // Received: what was sent to h0 less what the link lost on the way.
    let lost_to_h0 = into - count(0, 1);
    assert!(count(0, 1) > 0 && lost_to_h0 >= 0);
    assert_eq!(i64_col(&with, "capture_taps", "captured"), vec![count(0, 0) + count(0, 1), 50]);
    let missed = i64_col(&with, "capture_taps", "missed");
    assert_eq!(missed[0], 0);
    assert!(missed[1] > 0, "the second tap stops at max_packets");

    // Capture order is time order per tap and direction; the sender's
    // retransmissions are marked.
    let t = i64_col(&with, "captures", "time_ps");
    let tx: Vec<i64> = (0..t.len()).filter(|&i| tap[i] == 0 && dir[i] == 0).map(|i| t[i]).collect();
    assert!(tx.windows(2).all(|w| w[0] <= w[1]));
    let retx = match with.tables["captures"].column("retransmit") {
        Some(fabricsim_core::stats::Column::Bool(v)) => v.iter().filter(|&&b| b).count() as i64,
        other => panic!("retransmit is {other:?}"),
    };
    assert_eq!(retx, i64_col(&with, "flows", "retransmits")[0]);
}

#[test]
fn bad_taps_are_refused_at_their_field() {
    for (tap, field) in [
        (r#"{"node": "nowhere"}"#, "stats.pcap[0].node"),
        (r#"{"node": "sw0", "port": 7}"#, "stats.pcap[0].port"),
        (r#"{"node": "h0", "direction": "up"}"#, "stats.pcap[0].direction"),
        (r#"{"node": "h0", "max_packets": 0}"#, "stats.pcap[0].max_packets"),
        (r#"{"node": "h0", "snaplen": 0}"#, "stats.pcap[0].snaplen"),
    ] {
        let sc = Scenario::from_json(&lossy_tcp(&format!(r#"{{"pcap": [{tap}]}}"#))).unwrap();
        let err = Simulation::new(&sc).err().expect("refused");
        assert!(err.to_string().contains(field), "{tap}: {err}");
    }
    let sc = Scenario::from_json(&lossy_tcp(
        r#"{"pcap": [{"node": "sw0"}, {"node": "sw0", "port": 0, "direction": "tx"}]}"#,
    ))
    .unwrap();
    let err = Simulation::new(&sc).err().expect("refused");
    assert!(err.to_string().contains("stats.pcap[1].port"), "{err}");
}
