//! Linux's sender limits end to end: TCP Small Queues keep a host's NIC queue
//! short, and receive-window autotuning caps a long path at the window that
//! `tcp_rmem[2]` holds.

use super::{flag, i64_col, run_json};
use fabricsim_core::stats::{Column, RunOutput};

/// h0 -host_bps- sw -fabric_bps- h1, `delay_ps` per link, one flow.
fn one_flow(tcp: &str, host_bps: u64, fabric_bps: u64, delay_ps: u64, traffic: &str) -> RunOutput {
    let out = run_json(&format!(
        r#"{{"duration_ps": 5000000000000, "seed": 5,
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 100000000}}}}}},
        "topology": {{"kind": "explicit",
           "nodes": [{{"name": "h0", "kind": "host"}}, {{"name": "sw", "kind": "switch"}}, {{"name": "h1", "kind": "host"}}],
           "links": [{{"a": "h0", "b": "sw", "rate_bps": {host_bps}, "delay_ps": {delay_ps}}},
                     {{"a": "sw", "b": "h1", "rate_bps": {fabric_bps}, "delay_ps": {delay_ps}}}]}},
        "tcp": {tcp},
        "traffic": [{{"kind": "tcp_bulk", "src": ["h0"], "dst": "h1", {traffic}}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#
    ));
    assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok"));
    out
}

/// The high-water mark of host h0's NIC queue.
fn host_queue_high_water(out: &RunOutput) -> u64 {
    let src = i64_col(out, "links", "src");
    let hw = match out.tables["links"].column("queue_high_water_bytes") {
        Some(Column::U64(v)) => v.clone(),
        other => panic!("links.queue_high_water_bytes is {other:?}"),
    };
    src.iter().zip(hw).filter(|(s, _)| **s == 0).map(|(_, h)| h).max().expect("h0 has a link")
}

#[test]
fn tcp_small_queues_keep_a_host_nic_bottleneck_queue_short() {
    // The host's 1G NIC is the bottleneck; socket buffers of 100 MB never
    // limit. Without TSQ the window fills the NIC queue (1 GB by default);
    // with it, `sk_pacing_rate >> 10` bytes wait below the socket: about 1 ms
    // at the pacing rate, which slow start (ratio 200%, cwnd up to twice the
    // flight) puts at about four times the NIC's rate, so ~4 ms of data.
    let tcp = |tsq: bool| {
        format!(r#"{{"tsq": {tsq}, "rwnd_bytes": 100000000, "sndbuf_bytes": 100000000, "hystart": "off"}}"#)
    };
    let traffic = r#""bytes": 100000000"#;
    let with = one_flow(&tcp(true), 1_000_000_000, 10_000_000_000, 10_000_000, traffic);
    let without = one_flow(&tcp(false), 1_000_000_000, 10_000_000_000, 10_000_000, traffic);
    let (hw_with, hw_without) = (host_queue_high_water(&with), host_queue_high_water(&without));
    eprintln!("host NIC queue high water: {hw_with} B with TSQ, {hw_without} B without");
    assert!(hw_with < 1_000_000, "{hw_with} B queued below the socket with TSQ");
    assert!(hw_without > 10_000_000, "{hw_without} B without TSQ");
    // Both finish the transfer, TSQ costing no throughput (the queue never empties).
    for out in [&with, &without] {
        assert_eq!(i64_col(out, "flows", "app_bytes_delivered")[0], 100_000_000);
    }
    let fct = |out: &RunOutput| i64_col(out, "flows", "fct_ps")[0] as f64;
    assert!(fct(&with) <= 1.02 * fct(&without), "{} vs {}", fct(&with), fct(&without));
}

#[test]
fn receive_autotuning_caps_a_long_path_at_the_window_of_tcp_rmem_max() {
    // 10G, 10 ms RTT (12.5 MB BDP); tcp_rmem[2] = 4 MB holds a 2 MB window
    // (scaling ratio 50%): goodput = 2 MB / 10 ms = 1.68 Gb/s of payload.
    let tcp = r#"{"rmem": [4096, 131072, 4194304], "wmem": [4096, 16384, 100000000]}"#;
    let secs = 2.0;
    let out = one_flow(tcp, 10_000_000_000, 10_000_000_000, 2_500_000_000, r#""duration_ps": 2000000000000"#);
    let bytes = i64_col(&out, "flows", "app_bytes_delivered")[0] as f64;
    let goodput = bytes * 8.0 / secs;
    let expected = 4_194_304.0 * 0.5 * 8.0 / 0.010;
    eprintln!("goodput {goodput:.3e} b/s, window-limited bound {expected:.3e} b/s");
    // The window grows over the first round trips, then holds at its cap.
    assert!(goodput < 1.02 * expected, "{goodput} above the window's bound {expected}");
    assert!(goodput > 0.85 * expected, "{goodput} well below the window's bound {expected}");
    assert_eq!(i64_col(&out, "flows", "retransmits")[0], 0);
}
