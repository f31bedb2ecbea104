//! TCP with Linux's loss recovery (SACK, RACK-TLP, PRR) and slow-start exit
//! (HyStart++, classic HyStart), end to end, against the RFC baseline.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::{Column, RunOutput};

/// h0 -host_bps- sw -bottleneck_bps- h1, `delay_ps` per link, one flow.
fn one_flow(tcp: &str, host_bps: u64, bottleneck_bps: u64, delay_ps: u64, buffer: u64, size: u64) -> RunOutput {
    let out = run_json(&format!(
        r#"{{"duration_ps": 20000000000000, "seed": 3,
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": {buffer}}}}}}},
        "topology": {{"kind": "explicit",
           "nodes": [{{"name": "h0", "kind": "host"}}, {{"name": "sw", "kind": "switch"}}, {{"name": "h1", "kind": "host"}}],
           "links": [{{"a": "h0", "b": "sw", "rate_bps": {host_bps}, "delay_ps": {delay_ps}}},
                     {{"a": "sw", "b": "h1", "rate_bps": {bottleneck_bps}, "delay_ps": {delay_ps}}}]}},
        "tcp": {tcp},
        "traffic": [{{"kind": "tcp_bulk", "src": ["h0"], "dst": "h1", "bytes": {size}}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#
    ));
    assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok"));
    assert_eq!(int(&out, "flows_completed"), 1);
    out
}

fn col(out: &RunOutput, c: &str) -> i64 {
    i64_col(out, "flows", c)[0]
}

fn label(out: &RunOutput, c: &str) -> String {
    match out.tables["flows"].column(c) {
        Some(Column::Cat { codes, labels }) => labels[codes[0] as usize].clone(),
        other => panic!("flows.{c} is {other:?}"),
    }
}

/// Round trips spent in fast recovery.
fn recovery_rtts(out: &RunOutput) -> f64 {
    col(out, "recovery_time_ps") as f64 / col(out, "srtt_ps") as f64
}

#[test]
fn sack_repairs_a_window_of_many_losses_in_a_few_round_trips_newreno_needs_one_per_loss() {
    // 40G into 10G, 200 us of propagation RTT, a 150 KB buffer: slow start
    // overshoots and loses 100+ segments of one window.
    let run = |tcp: &str| one_flow(tcp, 40_000_000_000, 10_000_000_000, 50_000_000, 150_000, 30_000_000);
    let reno = run(r#"{"profile": "rfc"}"#);
    let lost = col(&reno, "retransmits") as f64;
    eprintln!("NewReno: {lost} retransmissions in {:.1} RTTs of recovery", recovery_rtts(&reno));
    assert!(lost >= 100.0, "{lost} losses");
    // One hole per round trip.
    assert!(recovery_rtts(&reno) >= 0.8 * col(&reno, "recovery_retransmits") as f64);
    for tcp in [r#"{"profile": "rfc", "sack": true}"#, r#"{"cc": "newreno"}"#] {
        let out = run(tcp);
        let lost = col(&out, "recovery_retransmits");
        let episodes = col(&out, "fast_retransmits");
        eprintln!("{tcp}: {lost} retransmissions in {episodes} recoveries, {:.1} RTTs", recovery_rtts(&out));
        assert!(lost >= 100, "{tcp}: {lost} losses");
        assert!(recovery_rtts(&out) <= 3.0 * episodes as f64, "{tcp}: {:.1} RTTs", recovery_rtts(&out));
        assert!(episodes <= 2);
        assert_eq!(col(&out, "timeouts"), 0);
        assert!(col(&out, "fct_ps") < col(&reno, "fct_ps") / 2);
    }
}

#[test]
fn hystart_plus_plus_leaves_slow_start_before_a_deep_buffer_overflows() {
    // 4G into 1G, 1 ms RTT, a 20 MB buffer (160 ms of queue). The queue's
    // delay must grow by 4 ms between rounds (RFC 9406 MIN_RTT_THRESH) before
    // HyStart++ reacts; Conservative Slow Start then stays within the buffer.
    let run = |tcp: &str| one_flow(tcp, 4_000_000_000, 1_000_000_000, 250_000_000, 20_000_000, 40_000_000);
    for cc in ["cubic", "newreno"] {
        let out = run(&format!(r#"{{"cc": "{cc}", "hystart": "hystart++", "rwnd_bytes": 100000000}}"#));
        assert_eq!(label(&out, "ss_exit_reason"), "hystart++", "{cc}");
        assert_eq!(int(&out, "packets_dropped"), 0, "{cc}");
        let off = run(&format!(r#"{{"cc": "{cc}", "hystart": "off", "rwnd_bytes": 100000000}}"#));
        assert_eq!(label(&off, "ss_exit_reason"), "loss", "{cc}");
        assert!(int(&off, "packets_dropped") > 100, "{cc}: the overshoot without HyStart");
        assert!(col(&off, "ss_exit_cwnd") > 5 * col(&out, "ss_exit_cwnd"));
    }
}

#[test]
fn linux_cubic_hystart_exits_on_the_ack_train_before_any_loss() {
    let out = one_flow("{}", 4_000_000_000, 1_000_000_000, 250_000_000, 20_000_000, 40_000_000);
    assert_eq!(label(&out, "ss_exit_reason"), "hystart_ack_train");
    assert_eq!(int(&out, "packets_dropped"), 0);
    // The train spans half the minimum RTT (about 0.5 ms) once cwnd reaches
    // 16 segments; the first rounds take about 1 ms each.
    assert!(col(&out, "ss_exit_ps") < 10_000_000_000, "{}", col(&out, "ss_exit_ps"));
}

#[test]
fn without_rack_a_lost_retransmission_waits_for_the_timeout_with_rack_it_does_not() {
    // ns-3's star: 16 senders, 1000-packet drop-tail queue, 256 KB windows,
    // byte counting (fast slow start): some retransmissions are lost.
    let run = |tcp: &str| {
        let srcs: Vec<String> = (1..=16).map(|i| format!("\"h{i}\"")).collect();
        run_json(&format!(
            r#"{{"duration_ps": 10000000000000, "seed": 1,
            "network": {{"ethernet_overhead_bytes": 0, "switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 1502000}}}}}},
            "topology": {{"kind": "star", "hosts": 17, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
            "tcp": {tcp},
            "traffic": [{{"kind": "tcp_bulk", "src": [{}], "dst": "h0", "bytes": 5000000}}],
            "stats": {{"queue_sample_interval_ps": 0}}}}"#,
            srcs.join(", ")
        ))
    };
    let common = r#""cc": "newreno", "l2_bytes": 2, "min_frame_bytes": 0, "rwnd_bytes": 262144, "delack_timeout_ps": 200000000000, "quickack_segments": 0"#;
    let without = run(&format!(r#"{{{common}, "rack": false, "tlp": false}}"#));
    let with = run(&format!(r#"{{{common}}}"#));
    let timeouts = |o: &RunOutput| i64_col(o, "flows", "timeouts").iter().sum::<i64>();
    let fct_max = |o: &RunOutput| *i64_col(o, "flows", "fct_ps").iter().max().unwrap();
    assert!(timeouts(&without) >= 1);
    assert!(fct_max(&without) > 200_000_000_000, "the 200 ms minimum RTO");
    assert_eq!(timeouts(&with), 0);
    assert!(i64_col(&with, "flows", "rack_losses").iter().sum::<i64>() > 0);
    assert!(fct_max(&with) < 70_000_000_000);
}

#[test]
fn dctcp_with_sack_and_prr_keeps_every_flow_going_without_loss() {
    // 16 DCTCP senders into one 10G port with K = 65 packets.
    let srcs: Vec<String> = (1..=16).map(|i| format!("\"h{i}\"")).collect();
    let k = 65 * 1538u64;
    for profile in [r#""profile": "rfc""#, r#""profile": "linux""#] {
        let out = run_json(&format!(
            r#"{{"duration_ps": 10000000000000, "seed": 1,
            "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 1538000}},
                         "ecn": {{"kmin_bytes": {k}, "kmax_bytes": {k}, "pmax": 1.0}}}}}},
            "topology": {{"kind": "star", "hosts": 17, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
            "tcp": {{{profile}, "cc": "dctcp"}},
            "traffic": [{{"kind": "tcp_bulk", "src": [{}], "dst": "h0", "bytes": 5000000}}],
            "stats": {{"queue_sample_interval_ps": 0}}}}"#,
            srcs.join(", ")
        ));
        assert!(flag(&out, "conservation_ok"));
        assert_eq!(int(&out, "flows_completed"), 16, "{profile}");
        assert_eq!(int(&out, "packets_dropped"), 0, "{profile}");
        let jct = *i64_col(&out, "flows", "fct_ps").iter().max().unwrap() as f64 * 1e-12;
        // 80 MB at 9.415 Gb/s of goodput: 68.0 ms.
        assert!(jct < 0.069, "{profile}: JCT {jct}");
        assert!(i64_col(&out, "flows", "ecn_reductions").iter().all(|&r| r > 0));
    }
}

#[test]
fn linux_tcp_runs_are_deterministic() {
    let run = || one_flow("{}", 40_000_000_000, 10_000_000_000, 50_000_000, 150_000, 10_000_000);
    let (a, b) = (run(), run());
    assert_eq!(a.summary, b.summary);
    assert_eq!(format!("{:?}", a.tables["flows"]), format!("{:?}", b.tables["flows"]));
}
