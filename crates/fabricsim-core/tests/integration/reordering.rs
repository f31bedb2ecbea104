//! Reordering measured at the receiver (the `flows` table's
//! `reordered_packets`, `reorder_distance_max`, `reorder_distance_mean`)
//! against a closed form, and what spraying's reordering costs each
//! transport: TCP's RACK absorbs it, RoCE's go-back-N pays for it.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::{Column, RunOutput};

fn f64_col(out: &RunOutput, table: &str, col: &str) -> Vec<f64> {
    match out.tables[table].column(col) {
        Some(Column::F64(v)) => v.clone(),
        other => panic!("{table}.{col} is {other:?}"),
    }
}

/// h0 - s0 = {a, b} = s1 - h1 at 10G; the path through b is `extra_ps`
/// longer. One UDP flow of 100 frames of 1000 B on the wire at 1 Gb/s
/// (one every 8 us).
fn two_paths(lb: &str, extra_ps: u64) -> String {
    let link =
        |a: &str, b: &str, d: u64| format!(r#"{{"a": "{a}", "b": "{b}", "rate_bps": 10000000000, "delay_ps": {d}}}"#);
    let links = [
        link("h0", "s0", 1_000_000),
        link("s0", "a", 1_000_000),
        link("s0", "b", 1_000_000),
        link("a", "s1", 1_000_000),
        link("b", "s1", 1_000_000 + extra_ps),
        link("s1", "h1", 1_000_000),
    ];
    let nodes: Vec<String> =
        [("h0", "host"), ("h1", "host"), ("s0", "switch"), ("a", "switch"), ("b", "switch"), ("s1", "switch")]
            .iter()
            .map(|(n, k)| format!(r#"{{"name": "{n}", "kind": "{k}"}}"#))
            .collect();
    format!(
        r#"{{"duration_ps": 2000000000, "seed": 1,
        "network": {{"switch": {{"load_balancing": {lb}}}}},
        "topology": {{"kind": "explicit", "nodes": [{}], "links": [{}]}},
        "traffic": [{{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "rate_bps": 1000000000,
                      "frame_bytes": 980, "max_frames": 100}}]}}"#,
        nodes.join(", "),
        links.join(", ")
    )
}

#[test]
fn round_robin_over_paths_of_unequal_delay_reorders_as_the_closed_form_says() {
    // Frames alternate between the paths; a frame through b arrives 30 us
    // late, so the frames through a sent 8 and 24 us after it (1 and 3
    // later) overtake it: every frame through b that has such frames after
    // it is reordered with distance 3, the one before the last frame through
    // a with distance 1. Frames through b are even or odd, by the round
    // robin's random start: 50 frames, 49 reordered (48 x 3 + 1: 145) when
    // the last frame takes b, 50 (49 x 3 + 1: 148) otherwise.
    let out = run_json(&two_paths(r#"{"mode": "spray_rr"}"#, 30_000_000));
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    assert_eq!(int(&out, "packets_delivered"), 100);
    let n = i64_col(&out, "flows", "reordered_packets")[0];
    let max = i64_col(&out, "flows", "reorder_distance_max")[0];
    let mean = f64_col(&out, "flows", "reorder_distance_mean")[0];
    assert_eq!(max, 3);
    let sum = (mean * n as f64).round() as i64;
    assert!((n, sum) == (49, 145) || (n, sum) == (50, 148), "{n} reordered, distance sum {sum}");
    // A path 10 us longer: only the next frame overtakes, distance 1 each.
    let out = run_json(&two_paths(r#"{"mode": "spray_rr"}"#, 10_000_000));
    let n = i64_col(&out, "flows", "reordered_packets")[0];
    assert!(n == 49 || n == 50, "{n}");
    assert_eq!(i64_col(&out, "flows", "reorder_distance_max")[0], 1);
    assert_eq!(f64_col(&out, "flows", "reorder_distance_mean")[0], 1.0);
}

#[test]
fn one_path_per_flow_delivers_in_order() {
    let out = run_json(&two_paths(r#"{"mode": "ecmp"}"#, 30_000_000));
    assert_eq!(i64_col(&out, "flows", "reordered_packets"), vec![0]);
    assert_eq!(i64_col(&out, "flows", "reorder_distance_max"), vec![-1], "no distance without reordering");
    assert!(f64_col(&out, "flows", "reorder_distance_mean")[0].is_nan());
}

/// Two leaves of four hosts, four spines, 100G everywhere, deep buffers (no
/// drops): a permutation h0..h3 -> h4..h7 of 4 MB TCP flows with `tcp`.
fn tcp_permutation(lb: &str, tcp: &str) -> RunOutput {
    tcp_permutation_of(lb, tcp, 4_000_000)
}

fn tcp_permutation_of(lb: &str, tcp: &str, bytes: u64) -> RunOutput {
    let flows: Vec<String> =
        (0..4).map(|i| format!(r#"{{"src": "h{i}", "dst": "h{}", "bytes": {bytes}}}"#, 4 + i)).collect();
    run_json(&format!(
        r#"{{"duration_ps": 50000000000, "seed": 2,
        "network": {{"switch": {{"load_balancing": {lb}, "buffer": {{"model": "static", "port_bytes": 50000000}}}}}},
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 4,
                     "host_link": {{"rate_bps": 100000000000, "delay_ps": 1000000}},
                     "fabric_link": {{"rate_bps": 100000000000, "delay_ps": 1000000}}}},
        "tcp": {tcp},
        "traffic": [{{"kind": "tcp_flows", "name": "perm", "flows": [{}]}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#,
        flows.join(", ")
    ))
}

fn sum(out: &RunOutput, col: &str) -> i64 {
    i64_col(out, "flows", col).iter().sum()
}

fn slowest_fct(out: &RunOutput) -> i64 {
    *i64_col(out, "flows", "fct_ps").iter().max().unwrap()
}

#[test]
fn tcp_with_rack_absorbs_spraying_where_duplicate_ack_counting_slows_down() {
    // Random spraying over four uplinks that carry 100 % between them: the
    // uplink queues differ, packets of a flow overtake each other by up to
    // tens of packets. Linux's loss detection (RACK, RFC 8985) waits a
    // reordering window of min_RTT / 4 once reordering has been seen, widens
    // it on each D-SACK (once per round trip, up to SRTT) and undoes the
    // congestion response of a spurious retransmission; without RACK, three
    // duplicate ACKs (SACKed segments) mean a loss and halve the window.
    let spray = r#"{"mode": "spray_random"}"#;
    let rack = tcp_permutation(spray, r#"{"profile": "linux"}"#);
    let dupthresh = tcp_permutation(spray, r#"{"profile": "linux", "rack": false, "tlp": false}"#);
    // Round robin per flow keeps the four uplinks' queues equal and the
    // flows all but in order: the reference without reordering's cost.
    let in_order = tcp_permutation(r#"{"mode": "spray_rr"}"#, r#"{"profile": "linux"}"#);
    for out in [&rack, &dupthresh, &in_order] {
        assert!(flag(out, "conservation_ok"));
        assert_eq!(int(out, "packets_dropped"), 0, "deep buffers: every retransmission is spurious");
        assert!(matches!(out.tables["flows"].column("completed"), Some(Column::Bool(c)) if c.iter().all(|&x| x)));
    }
    eprintln!(
        "round robin: reordered {}, retransmits {}, slowest FCT {} us",
        sum(&in_order, "reordered_packets"),
        sum(&in_order, "retransmits"),
        slowest_fct(&in_order) / 1_000_000
    );
    assert!(sum(&in_order, "reordered_packets") <= 8);
    assert_eq!(sum(&in_order, "retransmits"), 0);
    let (reordered, data) = (sum(&rack, "reordered_packets"), sum(&rack, "packets_delivered") / 2);
    let (r_rack, r_dup) = (sum(&rack, "retransmits"), sum(&dupthresh, "retransmits"));
    eprintln!(
        "reordered {reordered} of ~{data} (max distance {:?}); retransmits RACK {r_rack} (D-SACKed {}), \
         DupThresh {r_dup}; slowest FCT: in order {} us, RACK {} us, DupThresh {} us",
        i64_col(&rack, "flows", "reorder_distance_max"),
        sum(&rack, "dsacks"),
        slowest_fct(&in_order) / 1_000_000,
        slowest_fct(&rack) / 1_000_000,
        slowest_fct(&dupthresh) / 1_000_000
    );
    assert!(reordered > data / 4, "spraying over unequal queues reorders");
    assert!(*i64_col(&rack, "flows", "reorder_distance_max").iter().min().unwrap() > 10);
    // RACK: spurious retransmissions of under 1 % of the packets, each one
    // reported by a D-SACK, and the transfer as fast as in order (10 %).
    assert!(r_rack * 100 < data, "RACK: {r_rack} of {data}");
    assert_eq!(sum(&rack, "dsacks"), r_rack);
    assert!((slowest_fct(&rack) as f64) < 1.1 * slowest_fct(&in_order) as f64);
    // Duplicate-ACK counting takes each reordering of three for a loss: the
    // window halves again and again, the transfer takes over twice as long.
    assert!(r_dup > 0);
    assert!(slowest_fct(&dupthresh) > 2 * slowest_fct(&in_order));
    let ecmp = tcp_permutation(r#"{"mode": "ecmp"}"#, r#"{"profile": "linux"}"#);
    assert_eq!(sum(&ecmp, "reordered_packets"), 0);
    assert_eq!(sum(&ecmp, "retransmits"), 0);
}

#[test]
fn roce_go_back_n_pays_for_spraying_with_retransmissions() {
    // Four QPs h0..h3 -> h4..h7, 10 messages of 1 MB each, deep buffers, no
    // DCQCN: with ECMP nothing is reordered or resent; sprayed, every
    // reordered packet past the expected PSN is NACKed and discarded, and
    // the sender goes back to it.
    let ecmp = roce_permutation(r#"{"mode": "ecmp"}"#, "go_back_n", 0.0);
    let spray = roce_permutation(r#"{"mode": "spray_random"}"#, "go_back_n", 0.0);
    for out in [&ecmp, &spray] {
        assert!(flag(out, "conservation_ok") && flag(out, "drained"));
        assert_eq!(int(out, "rdma_qps_completed"), 4);
    }
    assert_eq!((int(&ecmp, "rdma_retransmits"), int(&ecmp, "rdma_nacks")), (0, 0));
    assert_eq!(sum(&ecmp, "reordered_packets"), 0);
    eprintln!(
        "sprayed RoCE: reordered {}, NACKs {}, retransmits {}, slowest FCT {} us (ECMP {} us)",
        sum(&spray, "reordered_packets"),
        int(&spray, "rdma_nacks"),
        int(&spray, "rdma_retransmits"),
        slowest_fct(&spray) / 1_000_000,
        slowest_fct(&ecmp) / 1_000_000
    );
    assert!(int(&spray, "rdma_nacks") > 0 && int(&spray, "rdma_retransmits") > 100);
    // Go-back-N resends everything after the first reordered packet: the
    // transfer takes several times longer than with one path per flow.
    assert!(slowest_fct(&spray) > 3 * slowest_fct(&ecmp));
}

/// Four QPs h0..h3 -> h4..h7 on two leaves of four hosts and four spines at
/// 100G, 10 messages of 1 MB each, deep buffers, no DCQCN, recovery
/// `recovery`, every link losing `loss` of its frames.
fn roce_permutation(lb: &str, recovery: &str, loss: f64) -> RunOutput {
    {
        let traffic: Vec<String> = (0..4)
            .map(|i| {
                format!(
                    r#"{{"kind": "rdma_write", "src": ["h{i}"], "dst": "h{}", "qps": 1, "messages": 10, "message_bytes": 1000000}}"#,
                    4 + i
                )
            })
            .collect();
        run_json(&format!(
            r#"{{"duration_ps": 50000000000, "seed": 2,
            "network": {{"switch": {{"load_balancing": {lb}, "buffer": {{"model": "static", "port_bytes": 50000000}}}}}},
            "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 4,
                         "host_link": {{"rate_bps": 100000000000, "delay_ps": 1000000, "loss": {loss}}},
                         "fabric_link": {{"rate_bps": 100000000000, "delay_ps": 1000000, "loss": {loss}}}}},
            "roce": {{"dcqcn": {{"enabled": false}}, "recovery": "{recovery}", "rto_ps": 100000000}},
            "traffic": [{}],
            "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#,
            traffic.join(", ")
        ))
    }
}

#[test]
fn roce_selective_repeat_absorbs_spraying_and_resends_only_the_holes() {
    // The same sprayed permutation with selective repeat: reordered packets
    // are placed, and a hole is resent only once three later packets are
    // held, so few spurious retransmissions and a transfer near ECMP's.
    let ecmp = roce_permutation(r#"{"mode": "ecmp"}"#, "selective_repeat", 0.0);
    let spray = roce_permutation(r#"{"mode": "spray_random"}"#, "selective_repeat", 0.0);
    let gbn = roce_permutation(r#"{"mode": "spray_random"}"#, "go_back_n", 0.0);
    for out in [&ecmp, &spray] {
        assert!(flag(out, "conservation_ok") && flag(out, "drained") && flag(out, "buffer_accounting_ok"));
        assert_eq!(int(out, "rdma_qps_completed"), 4);
        assert_eq!(int(out, "packets_dropped"), 0);
    }
    // Without reordering selective repeat is go-back-N: nothing to recover.
    assert_eq!((int(&ecmp, "rdma_retransmits"), int(&ecmp, "rdma_nacks")), (0, 0));
    let data = 4 * 10 * 1_000_000 / 1024;
    eprintln!(
        "sprayed RoCE, selective repeat: reordered {}, NACKs {}, retransmits {} of {data}, slowest FCT {} us \
         (ECMP {} us, go-back-N {} us with {} retransmits)",
        sum(&spray, "reordered_packets"),
        int(&spray, "rdma_nacks"),
        int(&spray, "rdma_retransmits"),
        slowest_fct(&spray) / 1_000_000,
        slowest_fct(&ecmp) / 1_000_000,
        slowest_fct(&gbn) / 1_000_000,
        int(&gbn, "rdma_retransmits"),
    );
    assert!(sum(&spray, "reordered_packets") > 1000 && int(&spray, "rdma_nacks") > 1000);
    assert!(int(&spray, "rdma_retransmits") * 10 < int(&gbn, "rdma_retransmits"));
    assert!((slowest_fct(&spray) as f64) < 1.2 * slowest_fct(&ecmp) as f64);
}

#[test]
fn roce_selective_repeat_resends_each_lost_packet_once_where_go_back_n_resends_the_window() {
    // Every link loses 0.1 % of its frames (data, ACKs, NACKs), one path per
    // flow: selective repeat resends about as many packets as were lost on
    // the data path; go-back-N resends every packet after each loss.
    let sr = roce_permutation(r#"{"mode": "ecmp"}"#, "selective_repeat", 0.001);
    let gbn = roce_permutation(r#"{"mode": "ecmp"}"#, "go_back_n", 0.001);
    for out in [&sr, &gbn] {
        assert!(flag(out, "conservation_ok") && flag(out, "drained") && flag(out, "buffer_accounting_ok"));
        assert_eq!(int(out, "rdma_qps_completed"), 4);
    }
    let lost = int(&sr, "packets_dropped");
    eprintln!(
        "0.1 % loss: selective repeat {} retransmits ({} timeouts) for {lost} frames lost, slowest FCT {} us; \
         go-back-N {} retransmits ({} timeouts) for {} lost, slowest FCT {} us",
        int(&sr, "rdma_retransmits"),
        int(&sr, "rdma_timeouts"),
        slowest_fct(&sr) / 1_000_000,
        int(&gbn, "rdma_retransmits"),
        int(&gbn, "rdma_timeouts"),
        int(&gbn, "packets_dropped"),
        slowest_fct(&gbn) / 1_000_000
    );
    assert!(lost > 50);
    // Lost frames include ACKs and NACKs; every resent packet answers a loss.
    assert!(int(&sr, "rdma_retransmits") <= lost, "{} resent for {lost} lost", int(&sr, "rdma_retransmits"));
    assert!(int(&gbn, "rdma_retransmits") > 5 * int(&sr, "rdma_retransmits"));
    assert!(slowest_fct(&sr) < slowest_fct(&gbn));
}
