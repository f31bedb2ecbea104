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

/// Picoseconds to serialize `bytes` at `rate` bit/s, rounded up.
fn ser(bytes: u64, rate: u64) -> i64 {
    (bytes as u128 * 8 * 1_000_000_000_000).div_ceil(rate as u128) as i64
}

#[test]
fn cut_through_waits_for_the_header_then_saves_the_rest_of_the_serialization() {
    // First bit reaches the switch at 1 us; the 64 B header is in 51.2 ns later;
    // the pipeline adds 500 ns; the frame then takes 816 ns + 1 us to reach h1.
    assert_eq!(one_frame_latency("cut_through", 10_000_000_000, 1000), 1_000_000 + 51_200 + 500_000 + 1_816_000);
    let saf = one_frame_latency("store_and_forward", 10_000_000_000, 9000);
    let ct = one_frame_latency("cut_through", 10_000_000_000, 9000);
    // Saves the serialization of the frame (with its 20 B overhead) but the header's.
    assert_eq!(saf - ct, ser(9020, 10_000_000_000) - ser(64, 10_000_000_000));
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
    // Fast to slow: cut through after the header, the frame finishes at the slow port's pace.
    assert_eq!(mixed_rate_latency("cut_through", g100, g10), ser(64, g100) + ser(1020, g10));
    // Slow to fast: an underrun would follow, so the switch stores and forwards.
    assert_eq!(mixed_rate_latency("cut_through", g10, g100), ser(1020, g10) + ser(1020, g100));
    assert_eq!(mixed_rate_latency("store_and_forward", g100, g10), ser(1020, g100) + ser(1020, g10));
}

/// One device on a chain: forwarding, latency (ps), cut-through header bytes.
#[derive(Clone, Copy)]
struct Dev {
    cut_through: bool,
    latency: u64,
    header: u32,
}

/// Unloaded one-way latency of one frame over a chain of links `(rate, delay)`
/// with `devs[k]` between link k and k + 1, computed hop by hop: a store-and-forward
/// stage (or a cut-through stage feeding a faster port) starts when the last bit
/// is in plus its latency; a cut-through stage when the header is in plus its latency.
fn chain_closed_form(links: &[(u64, u64)], devs: &[Dev], frame: u32, overhead: u64, host_latency: u64) -> i64 {
    let mut tx_start = 0i64;
    for (k, &(rate, delay)) in links.iter().enumerate() {
        let first = tx_start + delay as i64;
        let last = tx_start + ser(frame as u64 + overhead, rate) + delay as i64;
        if k == links.len() - 1 {
            return last + host_latency as i64;
        }
        let d = devs[k];
        tx_start = if d.cut_through && rate >= links[k + 1].0 {
            first + ser(frame.min(d.header) as u64, rate) + d.latency as i64
        } else {
            last + d.latency as i64
        };
    }
    unreachable!()
}

fn chain_scenario(links: &[(u64, u64)], devs: &[Dev], frame: u32, host_latency: u64) -> String {
    let n = devs.len();
    let mut nodes = vec![r#"{"name": "h0", "kind": "host"}"#.to_string()];
    nodes.extend((0..n).map(|k| format!(r#"{{"name": "s{k}", "kind": "switch"}}"#)));
    nodes.push(r#"{"name": "h1", "kind": "host"}"#.to_string());
    let names: Vec<String> = std::iter::once("h0".to_string())
        .chain((0..n).map(|k| format!("s{k}")))
        .chain(std::iter::once("h1".to_string()))
        .collect();
    let link_json: Vec<String> = links
        .iter()
        .enumerate()
        .map(|(k, &(r, d))| {
            format!(r#"{{"a": "{}", "b": "{}", "rate_bps": {r}, "delay_ps": {d}}}"#, names[k], names[k + 1])
        })
        .collect();
    let overrides: Vec<String> = devs
        .iter()
        .enumerate()
        .map(|(k, d)| {
            format!(
                r#""s{k}": {{"forwarding": "{}", "latency_ps": {}, "cut_through_bytes": {},
                   "buffer": {{"model": "static", "port_bytes": 1000000}}}}"#,
                if d.cut_through { "cut_through" } else { "store_and_forward" },
                d.latency,
                d.header
            )
        })
        .collect();
    format!(
        r#"{{"duration_ps": 100000000,
        "network": {{"host": {{"latency_ps": {host_latency}}}, "switch_overrides": {{{}}}}},
        "topology": {{"kind": "explicit", "nodes": [{}], "links": [{}]}},
        "traffic": [{{"kind": "burst", "src": ["h0"], "dst": "h1", "frames": 1, "frame_bytes": {frame}}}]}}"#,
        overrides.join(", "),
        nodes.join(", "),
        link_json.join(", ")
    )
}

#[test]
fn multi_hop_latency_matches_the_closed_form_to_the_picosecond() {
    // Every mix of store-and-forward and cut-through over four devices, on a chain
    // whose rates go up and down (so some cut-through stages must fall back), with
    // odd delays, latencies and header sizes, for small, odd and jumbo frames.
    let g = 1_000_000_000u64;
    let links = [(100 * g, 1_234), (25 * g, 5_000), (25 * g, 777), (40 * g, 0), (10 * g, 100_001)];
    let lat = [450_000, 800_123, 300_000, 1_000];
    let hdr = [64, 128, 14, 64];
    let mut checked = 0;
    for mask in 0..16u32 {
        let devs: Vec<Dev> =
            (0..4).map(|k| Dev { cut_through: mask & (1 << k) != 0, latency: lat[k], header: hdr[k] }).collect();
        for frame in [64u32, 97, 1518, 9216] {
            let json = chain_scenario(&links, &devs, frame, 2_500_000);
            let got = i64_col(&run_json(&json), "flows", "latency_max_ps")[0];
            assert_eq!(got, chain_closed_form(&links, &devs, frame, 20, 2_500_000), "mask {mask:04b}, frame {frame}");
            checked += 1;
        }
    }
    assert_eq!(checked, 64);
}

#[test]
fn a_frame_that_finds_its_port_busy_when_the_header_is_in_is_stored_and_forwarded() {
    // h0 sends 64 B and h2 sends 1500 B, both at t = 0, to h1 through one
    // cut-through switch (10G, 1 us links, 300 ns pipeline). The short frame cuts
    // through and holds the port until 1.4184 us; the long frame's header was in
    // at 1.3512 us, so it had to wait: it leaves when its last bit is in (2.516 us)
    // plus the pipeline, not when the port freed.
    let json = r#"{"duration_ps": 100000000,
        "network": {"switch": {"forwarding": "cut_through", "latency_ps": 300000,
                               "buffer": {"model": "static", "port_bytes": 1000000}}},
        "topology": {"kind": "star", "hosts": 3, "link": {"rate_bps": 10000000000, "delay_ps": 1000000}},
        "traffic": [{"kind": "burst", "src": ["h0"], "dst": "h1", "frames": 1, "frame_bytes": 64, "start_jitter_ps": 0},
                    {"kind": "burst", "src": ["h2"], "dst": "h1", "frames": 1, "frame_bytes": 1500, "start_jitter_ps": 0}]}"#;
    let lat = i64_col(&run_json(json), "flows", "latency_max_ps");
    let g10 = 10_000_000_000;
    assert_eq!(lat[0], 1_000_000 + ser(64, g10) + 300_000 + ser(84, g10) + 1_000_000);
    assert_eq!(lat[1], 2 * (ser(1520, g10) + 1_000_000) + 300_000);
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
        "traffic": [{"kind": "burst", "src": ["h0"], "dst": "h1", "frames": 1000, "frame_bytes": 1000, "start_jitter_ps": 0}]}"#;
    let out = run_json(json);
    assert_eq!(i64_col(&out, "flows", "end_ps")[0], 1001 * 816_000);
    assert_eq!(i64_col(&out, "links", "queue_high_water_bytes").iter().max().copied(), Some(1000));
}
