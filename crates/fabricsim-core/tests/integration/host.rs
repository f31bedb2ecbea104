//! The host datapath: unloaded latency as the exact sum of its parts, a
//! core's packet rate against 1/c, the core queue against M/D/1, GSO/GRO
//! batching, interrupt moderation, conservation with packets inside hosts,
//! and the iperf3 and ping-pong applications.

use super::pipeline::{cat_col, f64_col};
use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::RunOutput;

/// h0 -- sw -- h1 (100G, 1 us links, 500 ns store-and-forward switch) with host model `model`.
fn pair(model: &str, traffic: &str, duration_ps: u64) -> RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": {duration_ps}, "seed": 3,
        "network": {{"switch": {{"latency_ps": 500000, "buffer": {{"model": "static", "port_bytes": 100000000}}}},
                     "host": {{"model": {model}}}}},
        "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": 100000000000, "delay_ps": 1000000}}}},
        "traffic": [{traffic}]}}"#
    ))
}

fn component(out: &RunOutput, flow: i64, name: &str) -> (i64, f64) {
    let flows = i64_col(out, "host_latency", "flow_id");
    let comps = cat_col(out, "host_latency", "component");
    let n = i64_col(out, "host_latency", "packets");
    let mean = f64_col(out, "host_latency", "mean_ps");
    (0..flows.len())
        .find(|&i| flows[i] == flow && comps[i] == name)
        .map(|i| (n[i], mean[i]))
        .unwrap_or_else(|| panic!("no {name} for flow {flow}"))
}

/// Serialization of `bytes` (+ 20 B of preamble and gap) at 100G, in ps, rounded up.
fn ser100(bytes: u64) -> u64 {
    ((bytes + 20) * 8 * 1_000_000_000_000).div_ceil(100_000_000_000)
}

#[test]
fn unloaded_ping_pong_latency_is_the_exact_sum_of_nic_stack_and_wire() {
    // One core at a 50 % share: every CPU time doubles.
    let model = r#"{"cores": 1, "core_share_ppm": 500000,
        "interrupt": {"usecs_ps": 5000000, "frames": 0, "cost_ps": 400000},
        "nic": {"tx_latency_ps": 600000, "tx_per_byte_fs": 80, "rx_latency_ps": 700000, "rx_per_byte_fs": 90},
        "stages": [
          {"kind": "syscall", "tx": {"per_packet_ps": 1000000}, "rx": {"per_packet_ps": 1500000}},
          {"kind": "udp", "tx": {"per_packet_ps": 700000, "per_byte_fs": 100}, "rx": {"per_packet_ps": 900000, "per_byte_fs": 300}},
          {"kind": "tcp", "tx": {"per_packet_ps": 99000000}, "rx": {"per_packet_ps": 99000000}},
          {"kind": "driver", "tx": {"per_packet_ps": 200000}, "rx": {"per_packet_ps": 300000, "per_byte_fs": 7}}]}"#;
    let traffic = r#"{"kind": "ping_pong", "src": "h0", "dst": "h1", "message_bytes": 64, "messages": 20}"#;
    let out = pair(model, traffic, 10_000_000_000);
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    let frame = 64 + 46u64;
    // CPU: picoseconds plus femtoseconds of work, at the 50 % share, rounded up to the picosecond.
    let cpu = |ps: u64, fs: u64| ((ps * 1000 + fs) * 1000).div_ceil(500_000);
    let tx_cpu = cpu(1_000_000 + 700_000 + 200_000, 100 * frame);
    let tx_dma = (frame * 80).div_ceil(1000) + 600_000;
    let wire = ser100(frame) + 1_000_000 + 500_000 + ser100(frame) + 1_000_000;
    let rx_dma = (frame * 90).div_ceil(1000) + 700_000;
    let irq_wait = 5_000_000;
    let rx_cpu = cpu(400_000 + 300_000 + 900_000 + 1_500_000, 7 * frame + 300 * frame);
    let one_way = tx_cpu + tx_dma + wire + rx_dma + irq_wait + rx_cpu;
    let p50 = f64_col(&out, "ping_pong", "latency_p50_ps")[0];
    let max = f64_col(&out, "ping_pong", "latency_max_ps")[0];
    let min = f64_col(&out, "ping_pong", "latency_min_ps")[0];
    assert_eq!(i64_col(&out, "ping_pong", "messages"), vec![20]);
    assert_eq!((min, p50, max), (one_way as f64, one_way as f64, one_way as f64));
    // The per-flow breakdown names each part.
    assert_eq!(component(&out, 0, "tx_cpu"), (20, tx_cpu as f64));
    assert_eq!(component(&out, 0, "tx_cpu_wait"), (20, 0.0));
    assert_eq!(component(&out, 0, "tx_dma"), (20, tx_dma as f64));
    assert_eq!(component(&out, 0, "rx_dma"), (20, rx_dma as f64));
    assert_eq!(component(&out, 0, "rx_irq_wait"), (20, irq_wait as f64));
    assert_eq!(component(&out, 0, "rx_cpu_wait"), (20, 0.0));
    assert_eq!(component(&out, 1, "rx_cpu"), (20, rx_cpu as f64));
    // Flow latency (creation to delivery) is the one-way latency too.
    assert_eq!(i64_col(&out, "flows", "latency_max_ps"), vec![one_way as i64, one_way as i64]);
}

/// One UDP stream of `frame` B frames at line rate from h0 into h1, whose
/// only cost is `per_packet` ps per received packet on one core.
fn rx_bound(frame: u32, per_packet_ps: u64, frames: u64) -> RunOutput {
    let model = format!(
        r#"{{"cores": 1, "backlog_packets": 100, "napi_budget": 1, "stages": [{{"kind": "udp", "rx": {{"per_packet_ps": {per_packet_ps}}}}}]}}"#
    );
    let traffic = format!(
        r#"{{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "load": 1.0, "frame_bytes": {frame}, "max_frames": {frames}}}"#
    );
    pair(&model, &traffic, 1_000_000_000_000)
}

#[test]
fn a_core_at_cost_c_per_packet_serves_one_over_c_packets_per_second() {
    // 1500 B at 100G arrive every 121.6 ns; a core at 1 us per packet serves
    // 1 Mpps: of 100,000 frames (12.16 ms) it serves 12.16 ms / 1 us = 12,160
    // plus the 100 its backlog holds at the end of the stream (then drains).
    // (A poll of one frame at a time: the frame in service is out of the ring.)
    let out = rx_bound(1500, 1_000_000, 100_000);
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    let delivered = int(&out, "packets_delivered");
    let expected = 12_160 + 100;
    assert!((delivered - expected).abs() <= 2, "{delivered} vs {expected}");
    assert_eq!(int(&out, "packets_dropped"), 100_000 - delivered);
    let reasons = cat_col(&out, "drops", "reason");
    assert!(reasons.iter().all(|r| r == "host_backlog_full"), "{reasons:?}");
    // With 100 ns per packet the core outpaces the line (121.6 ns per frame): nothing is lost.
    let out = rx_bound(1500, 100_000, 100_000);
    assert_eq!(int(&out, "packets_delivered"), 100_000);
    assert_eq!(int(&out, "packets_dropped"), 0);
}
