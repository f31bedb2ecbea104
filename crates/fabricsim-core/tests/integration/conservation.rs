//! Conservation and drops: every packet is delivered, dropped or still inside.

use super::{flag, i64_col, int, run_json};

fn incast(port_bytes: u64, frames: u64, drain: bool) -> fabricsim_core::stats::RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": 2000000000, "drain": {drain},
        "network": {{"switch": {{"latency_ps": 300000, "buffer": {{"model": "static", "port_bytes": {port_bytes}}}}}}},
        "topology": {{"kind": "star", "hosts": 5, "link": {{"rate_bps": 10000000000, "delay_ps": 500000}}}},
        "traffic": [{{"kind": "burst", "src": ["h1", "h2", "h3", "h4"], "dst": "h0",
                     "frames": {frames}, "frame_bytes": 1500}}]}}"#
    ))
}

#[test]
fn a_buffer_that_holds_the_whole_burst_drops_nothing() {
    let out = incast(4 * 100 * 1500, 100, true);
    assert_eq!(int(&out, "packets_dropped"), 0);
    assert_eq!(int(&out, "packets_delivered"), 400);
    assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok"));
    assert_eq!(int(&out, "buffer_bytes_in_use"), 0);
}

#[test]
fn a_small_buffer_tail_drops_and_still_conserves() {
    let out = incast(30_000, 100, true);
    let dropped = int(&out, "packets_dropped");
    // 4 line-rate inputs into 1 output: while the 400 frames arrive (100 frame
    // times) the output sends about 100 of them and the buffer holds 20
    // (30 000 B), so about 280 are lost; a few frames either way for the
    // start-up (the output starts one frame time plus latency after the inputs).
    assert!((275..=285).contains(&dropped), "dropped {dropped}");
    assert_eq!(int(&out, "packets_delivered") + dropped, 400);
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    let reasons = &out.tables["drops"];
    assert_eq!(reasons.rows(), 1, "all drops at one port, one class, one reason");
    assert_eq!(i64_col(&out, "drops", "packets")[0], dropped);
}

#[test]
fn stopping_without_drain_counts_packets_still_inside() {
    // Stop in the middle of the burst: packets are queued and on the wire.
    let out = run_json(
        r#"{"duration_ps": 50000000, "drain": false,
        "network": {"switch": {"buffer": {"model": "static", "port_bytes": 100000000}}},
        "topology": {"kind": "star", "hosts": 3, "link": {"rate_bps": 10000000000, "delay_ps": 500000}},
        "traffic": [{"kind": "burst", "src": ["h1", "h2"], "dst": "h0", "frames": 1000, "frame_bytes": 1500}]}"#,
    );
    let inside = int(&out, "packets_in_network");
    assert!(inside > 0);
    assert_eq!(int(&out, "packets_created"), int(&out, "packets_delivered") + int(&out, "packets_dropped") + inside);
    assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok"));
    assert!(int(&out, "buffer_bytes_in_use") > 0);
}

#[test]
fn fat_tree_all_to_one_conserves() {
    let out = run_json(
        r#"{"duration_ps": 200000000, "seed": 5,
        "network": {"switch": {"buffer": {"model": "static", "port_bytes": 200000}}},
        "topology": {"kind": "fat_tree", "k": 4, "link": {"rate_bps": 10000000000, "delay_ps": 100000}},
        "traffic": [{"kind": "udp_poisson", "src": ["h1","h2","h3","h4","h5","h6","h7","h8","h9","h10","h11","h12","h13","h14","h15"],
                     "dst": "h0", "load": 0.2, "frame_bytes": 1000}]}"#,
    );
    assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok") && flag(&out, "drained"));
    assert!(int(&out, "packets_dropped") > 0, "3x oversubscribed last hop must drop");
}

#[test]
fn a_packet_capped_queue_tail_drops_at_its_cap() {
    // Two line-rate inputs into one output whose queue holds 20 packets (the
    // port's byte budget is far larger, so only the packet cap can bind).
    let out = run_json(
        r#"{"duration_ps": 2000000000,
        "network": {"switch": {"latency_ps": 0,
                               "buffer": {"model": "static", "port_bytes": 100000000, "queue_packets": 20}}},
        "topology": {"kind": "star", "hosts": 3, "link": {"rate_bps": 10000000000, "delay_ps": 500000}},
        "traffic": [{"kind": "burst", "src": ["h1"], "dst": "h0", "frames": 300, "frame_bytes": 1500},
                    {"kind": "burst", "src": ["h2"], "dst": "h0", "frames": 300, "frame_bytes": 1500}]}"#,
    );
    assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok") && flag(&out, "drained"));
    let dropped = int(&out, "packets_dropped");
    // 2:1 overload for 300 frame times: about 300 sent, 20 held, 280 dropped.
    assert!((275..=285).contains(&dropped), "dropped {dropped}");
    let reasons = &out.tables["drops"];
    assert_eq!(reasons.rows(), 1);
    match reasons.column("reason") {
        Some(fabricsim_core::stats::Column::Cat { codes, labels }) => {
            assert_eq!(labels[codes[0] as usize], "queue_packet_limit")
        }
        other => panic!("drops.reason is {other:?}"),
    }
    // The port's queue never held more than 20 frames (+1 admitted as one leaves).
    let high = i64_col(&out, "queue_peaks", "high_water_bytes").into_iter().max().unwrap();
    assert!(high <= 20 * 1500, "high water {high}");
    assert!(high >= 19 * 1500, "high water {high}");
}

#[test]
fn a_zero_packet_cap_is_rejected_naming_the_field() {
    let sc = fabricsim_core::Scenario::from_json(
        r#"{"duration_ps": 1000,
        "network": {"switch": {"buffer": {"model": "static", "port_bytes": 1000, "queue_packets": 0}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 10000000000, "delay_ps": 0}},
        "traffic": []}"#,
    )
    .unwrap();
    let err = fabricsim_core::Simulation::new(&sc).err().expect("a zero cap is an error");
    assert!(err.to_string().contains("network.switch.buffer.queue_packets"), "{err}");
}
