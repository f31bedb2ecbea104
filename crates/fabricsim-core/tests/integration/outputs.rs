//! What the result tables say: carried bytes on the wire never exceed a link,
//! UDP flows that lost packets say so, latency percentiles, and a run cut at
//! its drain limit says so.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::{Column, RunOutput};

const G10: u64 = 10_000_000_000;

fn cat_col(out: &RunOutput, table: &str, col: &str) -> Vec<String> {
    match out.tables[table].column(col) {
        Some(Column::Cat { codes, labels }) => codes.iter().map(|&c| labels[c as usize].clone()).collect(),
        other => panic!("{table}.{col} is {other:?}"),
    }
}

fn f64_col(out: &RunOutput, table: &str, col: &str) -> Vec<f64> {
    match out.tables[table].column(col) {
        Some(Column::F64(v)) => v.clone(),
        other => panic!("{table}.{col} is {other:?}"),
    }
}

/// 8 TCP senders into one 10G port with a 60 KB buffer: losses, repairs.
fn lossy_incast(bin_ps: u64) -> RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": 20000000000, "seed": 3,
        "network": {{"switch": {{"latency_ps": 500000, "buffer": {{"model": "static", "port_bytes": 60000}}}}}},
        "topology": {{"kind": "star", "hosts": 9, "link": {{"rate_bps": {G10}, "delay_ps": 1000000}}}},
        "tcp": {{"min_rto_ps": 1000000000}},
        "traffic": [{{"kind": "tcp_incast", "client": "h0", "servers": ["h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"],
                      "response_bytes": 2000000}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": {bin_ps}}}}}"#
    ))
}

#[test]
fn carried_bytes_per_bin_never_exceed_the_link_but_delivered_bytes_can() {
    let bin = 20_000_000; // 20 us
    let out = lossy_incast(bin);
    assert!(int(&out, "packets_dropped") > 0);
    // In-order application bytes jump when a hole is filled: some bin holds
    // more than 10G can carry in it.
    let capacity = G10 as f64 * bin as f64 * 1e-12 / 8.0;
    let delivered = i64_col(&out, "throughput", "bytes");
    let max_delivered = *delivered.iter().max().unwrap() as f64;
    assert!(max_delivered > 1.05 * capacity, "{max_delivered} vs {capacity}");
    // On the wire: the transmitter is busy at most the whole bin ...
    let busy = i64_col(&out, "carried_links", "busy_ps");
    assert!(busy.iter().all(|&b| b as u64 <= bin), "{:?}", busy.iter().max());
    assert!(busy.iter().any(|&b| b as u64 == bin), "the bottleneck is busy for whole bins");
    // ... and frames reaching h0 stay within the link rate plus one frame.
    let host = i64_col(&out, "carried_flows", "host");
    let time = i64_col(&out, "carried_flows", "time_ps");
    let bytes = i64_col(&out, "carried_flows", "bytes");
    let h0 = out.node_names.iter().position(|n| n == "h0").unwrap() as i64;
    let mut per_bin = std::collections::BTreeMap::<i64, i64>::new();
    for i in 0..host.len() {
        if host[i] == h0 {
            *per_bin.entry(time[i]).or_default() += bytes[i];
        }
    }
    let frames_capacity = capacity * 1518.0 / 1538.0 + 1518.0;
    let max_carried = *per_bin.values().max().unwrap() as f64;
    assert!(max_carried <= frames_capacity, "{max_carried} vs {frames_capacity}");
    // Link totals agree with the links table: every frame transmitted is counted once.
    let link_frames: i64 = i64_col(&out, "carried_links", "frames").iter().sum();
    let tx: i64 = i64_col(&out, "links", "packets").iter().sum();
    assert_eq!(link_frames, tx);
    let link_bytes: i64 = i64_col(&out, "carried_links", "bytes").iter().sum();
    assert_eq!(link_bytes, i64_col(&out, "links", "bytes").iter().sum::<i64>());
}

#[test]
fn a_udp_flow_that_lost_packets_is_lossy_not_complete() {
    // Two Poisson senders at 10 Gb/s into one 10G port for 2 ms: half is lost.
    let out = run_json(&format!(
        r#"{{"duration_ps": 2000000000, "seed": 2,
        "network": {{"switch": {{"buffer": {{"model": "static", "port_bytes": 100000}}}}}},
        "topology": {{"kind": "star", "hosts": 4, "link": {{"rate_bps": {G10}, "delay_ps": 1000000}}}},
        "traffic": [{{"kind": "udp_poisson", "src": ["h1", "h2"], "dst": "h0", "rate_bps": {G10}, "frame_bytes": 1500}},
                    {{"kind": "udp_cbr", "src": ["h3"], "dst": "h1", "rate_bps": 1000000000, "frame_bytes": 1500}}]}}"#
    ));
    assert_eq!(cat_col(&out, "flows", "status"), vec!["lossy", "lossy", "complete"]);
    let loss = f64_col(&out, "flows", "loss_ratio");
    let sent = i64_col(&out, "flows", "packets_sent");
    let overall = (loss[0] * sent[0] as f64 + loss[1] * sent[1] as f64) / (sent[0] + sent[1]) as f64;
    assert!(loss[0] > 0.0 && loss[1] > 0.0 && (0.4..0.6).contains(&overall), "{loss:?}");
    assert_eq!(loss[2], 0.0);
    assert_eq!((int(&out, "flows_lossy"), int(&out, "flows_incomplete")), (2, 0));
}

#[test]
fn latency_percentiles_come_from_the_per_flow_histogram() {
    // Poisson UDP at 90 % of a 10G port: queueing spreads the latencies.
    let out = run_json(&format!(
        r#"{{"duration_ps": 20000000000, "seed": 7,
        "network": {{"switch": {{"latency_ps": 500000, "buffer": {{"model": "static", "port_bytes": 10000000}}}}}},
        "topology": {{"kind": "star", "hosts": 3, "link": {{"rate_bps": {G10}, "delay_ps": 1000000}}}},
        "traffic": [{{"kind": "udp_poisson", "src": ["h1"], "dst": "h0", "rate_bps": 4500000000, "frame_bytes": 1500}},
                    {{"kind": "udp_poisson", "src": ["h2"], "dst": "h0", "rate_bps": 4500000000, "frame_bytes": 1500}}]}}"#
    ));
    let (min, p50, p99, p999, max) = (
        i64_col(&out, "flows", "latency_min_ps"),
        i64_col(&out, "flows", "latency_p50_ps"),
        i64_col(&out, "flows", "latency_p99_ps"),
        i64_col(&out, "flows", "latency_p999_ps"),
        i64_col(&out, "flows", "latency_max_ps"),
    );
    for f in 0..2 {
        // Unloaded: 2 x 1 us of cable, 0.5 us of switch, 2 x 1.216 us of
        // serialization (1500 B + 20 B of preamble and gap).
        assert_eq!(min[f], 4_932_000);
        assert!(min[f] < p50[f] && p50[f] < p99[f] && p99[f] <= p999[f] && p999[f] <= max[f]);
    }
    // The histogram holds every delivered packet, and its buckets are narrow.
    let flow = i64_col(&out, "latency_hist", "flow_id");
    let n = i64_col(&out, "latency_hist", "packets");
    let lo = i64_col(&out, "latency_hist", "low_ps");
    let hi = i64_col(&out, "latency_hist", "high_ps");
    let delivered = i64_col(&out, "flows", "packets_delivered");
    for (f, &packets) in delivered.iter().enumerate() {
        let total: i64 = (0..flow.len()).filter(|&i| flow[i] == f as i64).map(|i| n[i]).sum();
        assert_eq!(total, packets);
    }
    assert!((0..lo.len()).all(|i| (hi[i] - lo[i]) * 32 <= lo[i]));
    // The p99 of M/D/1-like queueing at 90 % load is tens of microseconds.
    assert!(p99[0] > 10_000_000 && p99[0] < 200_000_000, "{}", p99[0]);
}

#[test]
fn tcp_latency_counts_the_data_direction_only() {
    let out = lossy_incast(1_000_000_000);
    // A data frame (1518 B) takes 1.2 us per hop at 10G; an ACK (64 B) 51 ns.
    // Were ACKs counted, the minimum would be below two data serializations.
    let min = i64_col(&out, "flows", "latency_min_ps");
    assert!(min.iter().all(|&m| m >= 2 * 1_000_000 + 500_000 + 2 * 51_200), "{min:?}");
    let p50 = i64_col(&out, "flows", "latency_p50_ps");
    assert!(p50.iter().all(|&m| m >= 2 * 1_000_000 + 500_000 + 2 * 1_214_400), "{p50:?}");
}

#[test]
fn a_run_cut_at_its_drain_limit_says_so() {
    let run = |drain_limit_ps: u64| {
        run_json(&format!(
            r#"{{"duration_ps": 1000000000, "drain_limit_ps": {drain_limit_ps},
            "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": {G10}, "delay_ps": 1000000}}}},
            "traffic": [{{"kind": "tcp_bulk", "src": ["h1"], "dst": "h0", "bytes": 20000000}}],
            "stats": {{"queue_sample_interval_ps": 0}}}}"#
        ))
    };
    // 20 MB at 10G takes about 17 ms: a 5 ms drain limit cuts it.
    let cut = run(5_000_000_000);
    assert!(flag(&cut, "drain_limit_reached"));
    assert_eq!(int(&cut, "flows_incomplete"), 1);
    assert_eq!(cat_col(&cut, "flows", "status"), vec!["incomplete"]);
    let full = run(1_000_000_000_000);
    assert!(!flag(&full, "drain_limit_reached"));
    assert_eq!(int(&full, "flows_incomplete"), 0);
}
