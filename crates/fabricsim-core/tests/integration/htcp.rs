//! H-TCP end to end: its adaptive backoff on a path with a known queue.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::RunOutput;

/// h0 -1G- sw -100M- h1, 10 ms each way on each link (RTT_min about 40 ms,
/// BDP 500 kB), a static egress buffer of `buffer` bytes, one bulk flow for 40 s.
fn long_path(cc: &str, buffer: u64) -> RunOutput {
    let out = run_json(&format!(
        r#"{{"duration_ps": 40000000000000, "seed": 5,
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": {buffer}}}}}}},
        "topology": {{"kind": "explicit",
           "nodes": [{{"name": "h0", "kind": "host"}}, {{"name": "sw", "kind": "switch"}}, {{"name": "h1", "kind": "host"}}],
           "links": [{{"a": "h0", "b": "sw", "rate_bps": 1000000000, "delay_ps": 10000000000}},
                     {{"a": "sw", "b": "h1", "rate_bps": 100000000, "delay_ps": 10000000000}}]}},
        "tcp": {{"cc": "{cc}", "rwnd_bytes": 8000000, "sndbuf_bytes": 8000000}},
        "traffic": [{{"kind": "tcp_bulk", "src": ["h0"], "dst": "h1", "duration_ps": 40000000000000}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 100000000000}}}}"#
    ));
    assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok"));
    out
}

/// Goodput over the last 25 s (after slow start and the first backoffs),
/// as a fraction of the 100M link's goodput for 1448 B segments.
fn late_utilization(out: &RunOutput) -> f64 {
    let times = i64_col(out, "throughput", "time_ps");
    let bytes = i64_col(out, "throughput", "bytes");
    let from = 15_000_000_000_000i64;
    let sum: i64 = times.iter().zip(&bytes).filter(|(t, _)| **t >= from).map(|(_, b)| *b).sum();
    let capacity = 100e6 * 1448.0 / 1538.0 / 8.0 * 25.0;
    sum as f64 / capacity
}

#[test]
fn htcp_backoff_to_rtt_min_over_rtt_max_keeps_a_long_path_busy() {
    // Buffer BDP / 3 (167 kB, 13.3 ms of queue): RTT_max / RTT_min is about
    // 53.7 / 40.4 ms, so from the third backoff on (the first two use 0.5
    // while the throughput estimate settles) H-TCP backs off to
    // beta = RTT_min / RTT_max = 0.75, which leaves cwnd = beta (BDP + B) = BDP:
    // the queue drains just as the window stops exceeding the pipe and the
    // link never idles. Reno's 0.5 leaves 2/3 of the BDP after each loss
    // (utilization about 0.92 by the sawtooth's closed form).
    let buffer = 166_667;
    let htcp = long_path("htcp", buffer);
    let reno = long_path("newreno", buffer);
    let (u_htcp, u_reno) = (late_utilization(&htcp), late_utilization(&reno));
    let losses = |o: &RunOutput| i64_col(o, "flows", "fast_retransmits")[0];
    eprintln!(
        "htcp {u_htcp:.3} ({} fast retransmits, {} drops), newreno {u_reno:.3} ({} fast retransmits)",
        losses(&htcp),
        int(&htcp, "packets_dropped"),
        losses(&reno)
    );
    assert!(int(&htcp, "packets_dropped") > 0 && losses(&htcp) >= 3, "H-TCP must have backed off several times");
    assert!(u_htcp >= 0.97, "H-TCP late utilization {u_htcp:.3}");
    assert!((0.85..=0.96).contains(&u_reno), "Reno late utilization {u_reno:.3}");
}
