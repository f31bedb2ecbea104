//! Same scenario and seed give the same run; a different seed changes random draws.

use super::{i64_col, int, run_json};

fn leaf_spine(seed: u64) -> fabricsim_core::stats::RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": 100000000, "seed": {seed},
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 4,
                     "host_link": {{"rate_bps": 25000000000, "delay_ps": 500000}},
                     "fabric_link": {{"rate_bps": 100000000000, "delay_ps": 500000}}}},
        "traffic": [{{"kind": "udp_poisson", "src": ["h0", "h1", "h2", "h3"], "dst": "h5", "load": 0.3}},
                    {{"kind": "udp_poisson", "src": ["h4", "h6"], "dst": "h1", "load": 0.5, "frame_bytes": 512}}]}}"#
    ))
}

/// Every summary entry and every table of `a` and `b` are the same.
fn assert_same_outputs(a: &fabricsim_core::stats::RunOutput, b: &fabricsim_core::stats::RunOutput) {
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.tables.keys().collect::<Vec<_>>(), b.tables.keys().collect::<Vec<_>>());
    for (name, t) in &a.tables {
        assert_eq!(format!("{t:?}"), format!("{:?}", b.tables[name]), "table {name}");
    }
}

#[test]
fn same_seed_same_everything() {
    let (a, b) = (leaf_spine(9), leaf_spine(9));
    assert_eq!(a.summary, b.summary);
    for t in ["flows", "links", "queues", "drops"] {
        assert_eq!(format!("{:?}", a.tables[t]), format!("{:?}", b.tables[t]), "table {t}");
    }
}

#[test]
fn another_seed_changes_poisson_draws_and_ecmp_paths() {
    let (a, c) = (leaf_spine(9), leaf_spine(10));
    assert_ne!(i64_col(&a, "flows", "packets_sent"), i64_col(&c, "flows", "packets_sent"));
    assert_ne!(i64_col(&a, "links", "packets"), i64_col(&c, "links", "packets"));
    assert!(int(&a, "events") > 0);
}

/// A k=16 fat-tree (1,024 hosts): half the hosts send Poisson UDP to hosts
/// in the other half, sixteen to each, so queues build and drop.
fn fat_tree_k16() -> fabricsim_core::Scenario {
    let traffic: Vec<String> = (0..32)
        .map(|d| {
            let src: Vec<String> = (0..16).map(|i| format!("\"h{}\"", 32 * i + d % 32)).collect();
            format!(
                r#"{{"kind": "udp_poisson", "src": [{}], "dst": "h{}", "load": 0.2, "frame_bytes": 1500}}"#,
                src.join(", "),
                512 + 16 * d
            )
        })
        .collect();
    let json = format!(
        r#"{{"duration_ps": 50000000, "seed": 3,
        "network": {{"switch": {{"buffer": {{"model": "static", "port_bytes": 30000}}}}}},
        "topology": {{"kind": "fat_tree", "k": 16, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
        "traffic": [{}]}}"#,
        traffic.join(", ")
    );
    fabricsim_core::Scenario::from_json(&json).expect("valid scenario JSON")
}

#[test]
fn prefetch_hints_are_on_for_a_large_world_and_change_no_output() {
    use fabricsim_core::Simulation;
    let sc = fat_tree_k16();
    let mut on = Simulation::new(&sc).expect("valid scenario");
    assert!(on.prefetching(), "a k=16 fat-tree's per-hop state exceeds a private cache");
    let mut off = Simulation::new(&sc).expect("valid scenario");
    off.set_prefetch(false);
    let (a, b) = (on.finish(), off.finish());
    assert!(int(&a, "packets_dropped") > 0 && int(&a, "packets_delivered") > 1000);
    assert_same_outputs(&a, &b);
}

#[test]
fn prefetch_hints_are_off_for_a_small_world_and_forcing_them_changes_no_output() {
    let sc = |seed| {
        fabricsim_core::Scenario::from_json(&format!(
            r#"{{"duration_ps": 100000000, "seed": {seed},
            "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 4,
                         "host_link": {{"rate_bps": 25000000000, "delay_ps": 500000}},
                         "fabric_link": {{"rate_bps": 100000000000, "delay_ps": 500000}}}},
            "traffic": [{{"kind": "udp_poisson", "src": ["h0", "h1", "h2", "h3"], "dst": "h5", "load": 0.3}}]}}"#
        ))
        .expect("valid scenario JSON")
    };
    let mut off = fabricsim_core::Simulation::new(&sc(9)).expect("valid scenario");
    assert!(!off.prefetching());
    let mut on = fabricsim_core::Simulation::new(&sc(9)).expect("valid scenario");
    on.set_prefetch(true);
    let (a, b) = (off.finish(), on.finish());
    assert_same_outputs(&a, &b);
}

#[test]
fn prefetch_route_memo_tells_flows_to_one_destination_apart() {
    // Eight flows from leaf 0 to one host on leaf 1: the leaf spreads them
    // over its four uplinks by their hash, so the routes the hints remember
    // for the same (leaf, destination) differ from frame to frame; a memo
    // that answered for the node and destination alone would send frames up
    // the wrong spine. The forwarding must take each frame where the full
    // lookup does, as with the hints off.
    let hosts: Vec<String> = (0..8).map(|i| format!("\"h{i}\"")).collect();
    let sc = fabricsim_core::Scenario::from_json(&format!(
        r#"{{"duration_ps": 1000000000, "seed": 5,
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 8,
                     "host_link": {{"rate_bps": 25000000000, "delay_ps": 500000}},
                     "fabric_link": {{"rate_bps": 100000000000, "delay_ps": 500000}}}},
        "traffic": [{{"kind": "udp_poisson", "src": [{}], "dst": "h8", "load": 0.1}},
                    {{"kind": "udp_poisson", "src": ["h9", "h10", "h11"], "dst": "h0", "load": 0.2, "frame_bytes": 700}}]}}"#,
        hosts.join(", ")
    ))
    .expect("valid scenario JSON");
    let mut on = fabricsim_core::Simulation::new(&sc).expect("valid scenario");
    on.set_prefetch(true);
    let mut off = fabricsim_core::Simulation::new(&sc).expect("valid scenario");
    off.set_prefetch(false);
    let (a, b) = (on.finish(), off.finish());
    // The flows to h8 leave leaf 0 on at least three of its four uplinks
    // (the 100G links out of the switch h0 is attached to).
    let (src, dst) = (i64_col(&a, "links", "src"), i64_col(&a, "links", "dst"));
    let (rate, packets) = (i64_col(&a, "links", "rate_bps"), i64_col(&a, "links", "packets"));
    let h0 = i64_col(&a, "flows", "src")[0];
    let leaf0 = dst[src.iter().position(|&s| s == h0).expect("h0 has a link")];
    let used = (0..src.len()).filter(|&i| src[i] == leaf0 && rate[i] == 100_000_000_000 && packets[i] > 0).count();
    assert!(used >= 3, "ECMP spread over {used} uplinks");
    assert!(int(&a, "packets_delivered") > 1000);
    assert_same_outputs(&a, &b);
}

#[test]
fn prefetch_hints_change_no_output_of_a_tcp_fat_tree_with_full_queues() {
    // CUBIC flows on a permutation of a k=8 fat-tree with short queues: many
    // frames queue behind others, so wires hold several frames and ports
    // spill their queues, and between a frame's `TxDone` and its `Arrive`
    // other events run; the hints for arrivals then look the route up again
    // and fill the memo themselves. With and without arrivals' own hints.
    let hosts = 128;
    let flows: Vec<String> = (0..hosts)
        .map(|i| format!(r#"{{"src": "h{i}", "dst": "h{}", "bytes": 60000}}"#, (i * 37 + 11) % hosts))
        .collect();
    let sc = fabricsim_core::Scenario::from_json(&format!(
        r#"{{"duration_ps": 1000000000, "seed": 2, "drain": true,
        "network": {{"switch": {{"latency_ps": 500000, "buffer": {{"model": "static", "port_bytes": 100000000, "queue_packets": 8}}}}}},
        "topology": {{"kind": "fat_tree", "k": 8, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
        "tcp": {{"cc": "cubic"}},
        "traffic": [{{"kind": "tcp_flows", "name": "perm", "flows": [{}]}}]}}"#,
        flows.join(", ")
    ))
    .expect("valid scenario JSON");
    let mut off = fabricsim_core::Simulation::new(&sc).expect("valid scenario");
    off.set_prefetch(false);
    let a = off.finish();
    assert!(int(&a, "packets_dropped") > 0, "the queues overflow");
    assert!(int(&a, "packets_delivered") > 5000);
    for arrivals in [false, true] {
        let mut on = fabricsim_core::Simulation::new(&sc).expect("valid scenario");
        on.set_prefetch_arrivals(arrivals);
        assert!(on.prefetching() && on.prefetching_arrivals() == arrivals);
        let b = on.finish();
        assert_eq!(a.summary, b.summary, "arrivals' hints {arrivals}");
        for (name, t) in &a.tables {
            assert_eq!(format!("{t:?}"), format!("{:?}", b.tables[name]), "table {name}, arrivals' hints {arrivals}");
        }
    }
}

#[test]
fn arrivals_prefetch_hints_are_allowed_in_a_k32_fat_tree_and_not_in_a_k16_one() {
    // The per-hop state without the flows: about 22 MB at k=32, 3 MB at k=16
    // (the threshold is 16 MiB).
    let world = |k: u32| {
        let sc = fabricsim_core::Scenario::from_json(&format!(
            r#"{{"duration_ps": 1000000, "seed": 1,
            "topology": {{"kind": "fat_tree", "k": {k}, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
            "traffic": [{{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "load": 0.01}}]}}"#
        ))
        .expect("valid scenario JSON");
        fabricsim_core::Simulation::new(&sc).expect("valid scenario")
    };
    let (k16, k32) = (world(16), world(32));
    assert!(k16.prefetching() && !k16.prefetching_arrivals());
    assert!(k32.prefetching() && k32.prefetching_arrivals());
}

#[test]
fn prefetch_hints_follow_the_packets_alive_and_change_no_output() {
    // Three 10G senders into one 10G host link for 2 ms behind an unlimited
    // static buffer: the queue towards h3 grows by 20 Gb/s, to about 3,300
    // frames of 1500 B (340 KB of packet slots), and drains after 2 ms. With
    // the threshold at 100 KB the hints turn on (with arrivals' own) while
    // the packets alive exceed it, and off once they fall below a quarter
    // of it; no output changes.
    let sc = fabricsim_core::Scenario::from_json(
        r#"{"duration_ps": 8000000000, "seed": 4,
        "network": {"switch": {"buffer": {"model": "static", "port_bytes": 1000000000}}},
        "topology": {"kind": "star", "hosts": 4, "link": {"rate_bps": 10000000000, "delay_ps": 1000000}},
        "traffic": [{"kind": "udp_cbr", "src": ["h0", "h1", "h2"], "dst": "h3", "load": 1.0, "frame_bytes": 1500,
                     "stop_ps": 2000000000}]}"#,
    )
    .expect("valid scenario JSON");
    let mut followed = fabricsim_core::Simulation::new(&sc).expect("valid scenario");
    assert!(!followed.prefetching(), "a star's per-hop state is small");
    followed.set_prefetch_packets_above(100_000);
    let (mut turned_on, mut turned_off) = (false, false);
    loop {
        let progress = followed.advance(fabricsim_core::units::SimTime::MAX, 5_000).expect("runs");
        if followed.prefetching_for_packets() {
            assert!(followed.prefetching() && followed.prefetching_arrivals());
            turned_on = true;
        } else if turned_on {
            assert!(!followed.prefetching(), "back to the world's default");
            turned_off = true;
        }
        if progress == fabricsim_core::Progress::Finished {
            break;
        }
    }
    assert!(turned_on && turned_off);
    let mut off = fabricsim_core::Simulation::new(&sc).expect("valid scenario");
    off.set_prefetch(false);
    let (a, b) = (followed.finish(), off.finish());
    assert!(int(&a, "peak_packets_alive") > 3000, "{}", int(&a, "peak_packets_alive"));
    assert_same_outputs(&a, &b);
}

#[test]
fn prefetch_hints_for_frames_of_higher_classes_change_no_output() {
    // Two classes queue at the same ports, strict priority: class 2 (a
    // higher class, whose queue lives in the port's block of classes) and
    // class 0, on a k=4 fat-tree with full queues. With arrivals' own hints
    // the loop names the head of the class a port serves next; no output
    // may change.
    let flows = |class: u32, load: f64| {
        let src: Vec<String> = (0..8).map(|i| format!("\"h{i}\"")).collect();
        format!(
            r#"{{"kind": "udp_poisson", "src": [{}], "dst": "h{}", "load": {load}, "frame_bytes": 1500, "class": {class}}}"#,
            src.join(", "),
            12 + class
        )
    };
    let sc = fabricsim_core::Scenario::from_json(&format!(
        r#"{{"duration_ps": 2000000000, "seed": 6,
        "network": {{"classes": 4, "switch": {{"scheduler": {{"kind": "strict"}}, "buffer": {{"model": "static", "port_bytes": 200000}}}}}},
        "topology": {{"kind": "fat_tree", "k": 4, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
        "traffic": [{}, {}, {}]}}"#,
        flows(0, 0.3),
        flows(2, 0.3),
        flows(2, 0.2).replace("\"h14\"", "\"h12\"")
    ))
    .expect("valid scenario JSON");
    let mut off = fabricsim_core::Simulation::new(&sc).expect("valid scenario");
    off.set_prefetch(false);
    let mut on = fabricsim_core::Simulation::new(&sc).expect("valid scenario");
    on.set_prefetch_arrivals(true);
    let (a, b) = (off.finish(), on.finish());
    assert!(int(&a, "packets_dropped") > 0 && int(&a, "packets_delivered") > 1000);
    assert_same_outputs(&a, &b);
}
