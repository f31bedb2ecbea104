//! Exact packet timing: serialization, propagation, device latency, cut-through.

use super::{i64_col, run_json};

/// One frame from h0 to h1 through one switch; returns its one-way latency in ps.
fn one_frame_latency(forwarding: &str, host_rate: u64, frame: u32) -> i64 {
    let json = format!(
        r#"{{"duration_ps": 100000000, "seed": 1,
        "network": {{"switch": {{"forwarding": "{forwarding}", "latency_ps": 500000,
                     "buffer": {{"model": "static", "port_bytes": 1000000}}}}}},
        "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": {host_rate}, "delay_ps": 1000000}}}},
        "traffic": [{{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "rate_bps": 1000000000,
                     "frame_bytes": {frame}, "max_frames": 1}}]}}"#
    );
    let out = run_json(&json);
    i64_col(&out, "flows", "latency_max_ps")[0]
}

#[test]
fn store_and_forward_latency_is_two_serializations_two_propagations_and_the_pipeline() {
    // (1000 + 20) B at 10 Gb/s = 816 ns per hop; 1 us per link; 500 ns switch.
    assert_eq!(one_frame_latency("store_and_forward", 10_000_000_000, 1000), 4_132_000);
    // 64 B frames at 100 Gb/s: (64 + 20) * 8 / 100e9 = 6.72 ns per hop.
    assert_eq!(one_frame_latency("store_and_forward", 100_000_000_000, 64), 2 * 6_720 + 2_000_000 + 500_000);
}

#[test]
fn cut_through_saves_one_serialization() {
    // First bit reaches the switch at 1 us, leaves at 1.5 us, last bit arrives
    // 816 ns + 1 us later.
    assert_eq!(one_frame_latency("cut_through", 10_000_000_000, 1000), 3_316_000);
    let saf = one_frame_latency("store_and_forward", 10_000_000_000, 9000);
    let ct = one_frame_latency("cut_through", 10_000_000_000, 9000);
    assert_eq!(saf - ct, 9020 * 8 * 100); // one serialization of 9020 B at 10G, in ps
}

/// h0 --(in_rate)-- sw --(out_rate)-- h1, one 1000 B frame.
fn mixed_rate_latency(forwarding: &str, in_rate: u64, out_rate: u64) -> i64 {
    let json = format!(
        r#"{{"duration_ps": 100000000,
        "network": {{"switch": {{"forwarding": "{forwarding}", "latency_ps": 0,
                     "buffer": {{"model": "static", "port_bytes": 1000000}}}}}},
        "topology": {{"kind": "explicit",
           "nodes": [{{"name": "h0", "kind": "host"}}, {{"name": "sw", "kind": "switch"}}, {{"name": "h1", "kind": "host"}}],
           "links": [{{"a": "h0", "b": "sw", "rate_bps": {in_rate}, "delay_ps": 0}},
                     {{"a": "sw", "b": "h1", "rate_bps": {out_rate}, "delay_ps": 0}}]}},
        "traffic": [{{"kind": "burst", "src": ["h0"], "dst": "h1", "frames": 1, "frame_bytes": 1000}}]}}"#
    );
    i64_col(&run_json(&json), "flows", "latency_max_ps")[0]
}

#[test]
fn cut_through_only_from_fast_to_slow_or_equal_ports() {
    let (g100, g10) = (100_000_000_000u64, 10_000_000_000u64);
    let ser = |r: u64| (1020u64 * 8 * 1_000_000_000_000 / r) as i64;
    // Fast to slow: cut through, the frame finishes at the slow port's pace.
    assert_eq!(mixed_rate_latency("cut_through", g100, g10), ser(g10));
    // Slow to fast: an underrun would follow, so the switch stores and forwards.
    assert_eq!(mixed_rate_latency("cut_through", g10, g100), ser(g10) + ser(g100));
    assert_eq!(mixed_rate_latency("store_and_forward", g100, g10), ser(g100) + ser(g10));
}

#[test]
fn constant_rate_source_spaces_frames_exactly() {
    // 1500 B frames (1520 B on the wire) at 3 Gb/s: 4053.33 ns apart; over 1 ms
    // the source sends ceil(1e9 ps / 4053333.33 ps) = 247 frames.
    let json = r#"{"duration_ps": 1000000000,
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 10000000000, "delay_ps": 0}},
        "traffic": [{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "rate_bps": 3000000000}]}"#;
    let out = run_json(json);
    assert_eq!(i64_col(&out, "flows", "packets_sent")[0], 247);
    // No queueing anywhere: every frame sees the same latency.
    assert_eq!(i64_col(&out, "flows", "latency_min_ps"), i64_col(&out, "flows", "latency_max_ps"));
}

#[test]
fn line_rate_burst_is_back_to_back() {
    // 1000 frames of 1000 B at 10 Gb/s from one port: the last one is delivered
    // 1000 serializations after the first left, plus the pipeline.
    let json = r#"{"duration_ps": 10000000000,
        "network": {"switch": {"latency_ps": 0, "buffer": {"model": "static", "port_bytes": 10000000}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 10000000000, "delay_ps": 0}},
        "traffic": [{"kind": "burst", "src": ["h0"], "dst": "h1", "frames": 1000, "frame_bytes": 1000}]}"#;
    let out = run_json(json);
    assert_eq!(i64_col(&out, "flows", "end_ps")[0], 1001 * 816_000);
    assert_eq!(i64_col(&out, "links", "queue_high_water_bytes").iter().max().copied(), Some(1000));
}
