//! Host egress chains end to end: every stage (jitter, shaper, delay line)
//! with and without a host datapath model conserves packets and stays
//! deterministic; queue limits drop with their own reasons.

use super::{flag, i64_col, run_json};
use fabricsim_core::stats::{Column, RunOutput};

fn scenario(host: &str, seed: u64, traffic: &str) -> String {
    format!(
        r#"{{"duration_ps": 20000000000, "seed": {seed},
        "network": {{"ethernet_overhead_bytes": 0, "classes": 1,
            "switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 200000}}}},
            "host": {host}}},
        "topology": {{"kind": "explicit",
           "nodes": [{{"name": "a", "kind": "host"}}, {{"name": "b", "kind": "host"}},
                     {{"name": "sw", "kind": "switch"}}, {{"name": "rx", "kind": "host"}}],
           "links": [{{"a": "a", "b": "sw", "rate_bps": 10000000000, "delay_ps": 1000000}},
                     {{"a": "b", "b": "sw", "rate_bps": 10000000000, "delay_ps": 1000000}},
                     {{"a": "sw", "b": "rx", "rate_bps": 1000000000, "delay_ps": 1000000}}]}},
        "traffic": [{traffic}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#
    )
}

const EGRESS: &str = r#""egress": {"delay_ps": 300000000, "delay_limit_packets": 1000,
    "jitter": {"distribution": "uniform", "mean_ps": 3000000},
    "shaper": {"rate_bps": 2000000000, "burst_bytes": 30000, "ceil_bps": 5000000000, "cburst_bytes": 3000,
               "limit_packets": 50}}"#;

const MIX: &str = r#"{"kind": "tcp_bulk", "src": ["a"], "dst": "rx", "streams": 2, "bytes": 3000000},
    {"kind": "udp_cbr", "src": ["b"], "dst": "rx", "rate_bps": 3000000000, "frame_bytes": 1500}"#;

fn drops_by_reason(out: &RunOutput, reason: &str) -> i64 {
    let (codes, labels) = match out.tables["drops"].column("reason") {
        Some(Column::Cat { codes, labels }) => (codes.clone(), labels.clone()),
        other => panic!("drops.reason is {other:?}"),
    };
    let packets = i64_col(out, "drops", "packets");
    codes.iter().zip(packets).filter(|(c, _)| labels[**c as usize] == reason).map(|(_, p)| p).sum()
}

#[test]
fn every_egress_stage_conserves_packets_with_and_without_a_host_model() {
    for host in [
        format!("{{{EGRESS}}}"),
        format!(
            r#"{{{EGRESS}, "model": {{"cores": 2, "nic": {{"tx_latency_ps": 500000, "tx_per_byte_fs": 80000}}}}}}"#
        ),
    ] {
        let out = run_json(&scenario(&host, 3, MIX));
        assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok"));
        // The UDP source overruns its 2 Gb/s shaper's 50-frame queue.
        assert!(drops_by_reason(&out, "shaper_queue_full") > 0);
        // Both TCP streams complete their 3 MB.
        assert_eq!(i64_col(&out, "flows", "app_bytes_delivered")[..2], [3_000_000, 3_000_000]);
        let jittered = i64_col(&out, "host_egress", "jitter_packets");
        assert!(jittered.iter().all(|&n| n > 0), "{jittered:?}");
    }
}

#[test]
fn egress_runs_are_byte_identical_for_a_seed() {
    let host = format!("{{{EGRESS}}}");
    let a = run_json(&scenario(&host, 9, MIX));
    let b = run_json(&scenario(&host, 9, MIX));
    for t in ["flows", "drops", "host_egress", "links"] {
        assert_eq!(format!("{:?}", a.tables[t]), format!("{:?}", b.tables[t]), "table {t}");
    }
}

#[test]
fn a_full_delay_line_drops_with_its_own_reason() {
    let host = r#"{"egress": {"delay_ps": 1000000000, "delay_limit_packets": 10}}"#;
    let udp = r#"{"kind": "udp_cbr", "src": ["a"], "dst": "rx", "rate_bps": 1000000000, "frame_bytes": 1500}"#;
    let out = run_json(&scenario(host, 1, udp));
    assert!(flag(&out, "conservation_ok"));
    // 1 ms at 1 Gb/s is 83 frames of 1500 B; the line holds 10.
    assert!(drops_by_reason(&out, "egress_delay_full") > 1000);
}

#[test]
fn a_shaped_switch_port_conserves_packets_and_holds_its_rate() {
    // The switch's port towards rx runs on a 10G link but is shaped to 1 Gb/s
    // (the 1G link of `scenario` becomes 10G here): TCP and UDP through it.
    let json = scenario("{}", 2, MIX)
        .replace(
            r#"{"a": "sw", "b": "rx", "rate_bps": 1000000000"#,
            r#"{"a": "sw", "b": "rx", "rate_bps": 10000000000"#,
        )
        .replace(
            r#""switch": {"latency_ps": 0,"#,
            r#""switch": {"shaper": {"rate_bps": 1000000000, "burst_bytes": 15140, "ceil_bps": 1000000000,
                "cburst_bytes": 15140, "towards": ["rx"]}, "latency_ps": 0,"#,
        );
    let out = run_json(&json);
    assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok"));
    let src = i64_col(&out, "links", "src");
    let dst = i64_col(&out, "links", "dst");
    let bytes = i64_col(&out, "links", "bytes");
    let sw_rx = (0..src.len()).find(|&i| src[i] == 2 && dst[i] == 3).expect("sw -> rx");
    // 20 ms at 1 Gb/s is 2.5 MB, plus the 15,140 B burst and what drains after.
    let sent = bytes[sw_rx];
    assert!(sent >= 2_400_000, "{sent}");
    let busy = match out.tables["links"].column("utilization") {
        Some(Column::F64(v)) => v[sw_rx],
        other => panic!("links.utilization is {other:?}"),
    };
    assert!(busy < 0.11, "a 10G link shaped to 1G is busy {busy}");
}
