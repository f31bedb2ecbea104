//! Match-action pipelines: forwarding rate against pipe capacity, the pipe
//! queue against M/D/1, shared pipes, stage decisions end to end, VXLAN bytes
//! on the wire, conservation.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::{Column, RunOutput};
use fabricsim_core::{Scenario, Simulation};

pub fn f64_col(out: &RunOutput, table: &str, col: &str) -> Vec<f64> {
    match out.tables[table].column(col) {
        Some(Column::F64(v)) => v.clone(),
        other => panic!("{table}.{col} is {other:?}"),
    }
}

pub fn cat_col(out: &RunOutput, table: &str, col: &str) -> Vec<String> {
    match out.tables[table].column(col) {
        Some(Column::Cat { codes, labels }) => codes.iter().map(|&c| labels[c as usize].clone()).collect(),
        other => panic!("{table}.{col} is {other:?}"),
    }
}

/// `(stage name, counter) -> value` of node `node` from the `pipeline` table.
fn counter(out: &RunOutput, node: i64, stage: &str, name: &str) -> i64 {
    let nodes = i64_col(out, "pipeline", "node");
    let stages = cat_col(out, "pipeline", "name");
    let counters = cat_col(out, "pipeline", "counter");
    let values = i64_col(out, "pipeline", "value");
    (0..nodes.len())
        .find(|&i| nodes[i] == node && stages[i] == stage && counters[i] == name)
        .map(|i| values[i])
        .unwrap_or_else(|| panic!("no counter {stage}.{name} at node {node}"))
}

/// Packets dropped for `reason` (summed over ports and classes).
fn drops(out: &RunOutput, reason: &str) -> i64 {
    let reasons = cat_col(out, "drops", "reason");
    let packets = i64_col(out, "drops", "packets");
    reasons.iter().zip(packets).filter(|(r, _)| r.as_str() == reason).map(|(_, p)| p).sum()
}

/// h0 -- sw -- h1 at 100G, one switch pipeline, one line-rate stream of `frame` B frames.
fn one_stream(frame: u32, pipeline: &str, frames: u64) -> RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": 100000000000, "seed": 1,
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 100000000}},
                     "pipeline": {pipeline}}}}},
        "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": 100000000000, "delay_ps": 0}}}},
        "traffic": [{{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "load": 1.0,
                     "frame_bytes": {frame}, "max_frames": {frames}}}]}}"#
    ))
}

#[test]
fn forwarding_rate_is_the_smaller_of_line_rate_and_pipe_capacity() {
    // A pipe of 200 M passes/s: 1 pass (base) + 1 pass (the ACL) = 10 ns per
    // packet, i.e. 100 Mpps. 100G carries (F + 20) * 8 / 100e9 s per frame:
    // 6.72 ns at 64 B, 8.16 ns at 82 B, 9.36 ns at 97 B (all faster than the
    // pipe: the pipe limits), 121.6 ns at 1500 B (line rate limits).
    let pipeline = r#"{"rate_pps": 200000000, "queue_packets": null,
        "stages": [{"kind": "acl", "cost": 1.0, "rules": [{"proto": 17, "action": "permit"}]}]}"#;
    let n = 2_000u64;
    for frame in [64u32, 82, 97, 1500] {
        let out = one_stream(frame, pipeline, n);
        assert_eq!(int(&out, "packets_delivered"), n as i64);
        let first = i64_col(&out, "flows", "latency_min_ps")[0];
        let last = i64_col(&out, "flows", "end_ps")[0];
        let line_ps = (frame as u64 + 20) * 8 * 1_000_000_000_000 / 100_000_000_000;
        let pipe_ps = 10_000u64;
        // Delivery spacing is exactly max(serialization, pipe time per packet).
        assert_eq!((last - first) as u64, (n - 1) * line_ps.max(pipe_ps), "frame {frame}");
        assert!(flag(&out, "conservation_ok"));
    }
}

#[test]
fn without_the_costly_stage_the_same_pipe_forwards_at_line_rate() {
    let pipeline = r#"{"rate_pps": 200000000, "queue_packets": null,
        "stages": [{"kind": "parse"}]}"#;
    let n = 2_000u64;
    let out = one_stream(64, pipeline, n);
    let spread = i64_col(&out, "flows", "end_ps")[0] - i64_col(&out, "flows", "latency_min_ps")[0];
    assert_eq!(spread as u64, (n - 1) * 6_720);
    assert_eq!(i64_col(&out, "pipes", "queue_high_water_packets"), vec![0]);
}

#[test]
fn excess_waits_in_the_pipe_queue_and_drops_there() {
    // 64 B at line rate (148.8 Mpps) into a 100 Mpps path with a 100-packet queue.
    let pipeline = r#"{"rate_pps": 200000000, "queue_packets": 100,
        "stages": [{"kind": "acl", "cost": 1.0, "rules": []}]}"#;
    let n = 30_000u64;
    let out = one_stream(64, pipeline, n);
    let dropped = drops(&out, "pipeline_queue_full");
    // The pipe forwards one packet per 10 ns while frames arrive every 6.72 ns:
    // over the 201.6 us of the stream it forwards ~20,160 plus the 100 queued.
    let delivered = int(&out, "packets_delivered");
    assert_eq!(delivered + dropped, n as i64);
    assert!((delivered - 20_260).abs() <= 3, "delivered {delivered}");
    assert_eq!(i64_col(&out, "pipes", "queue_high_water_packets"), vec![100]);
    assert_eq!(i64_col(&out, "pipes", "queue_drops"), vec![dropped]);
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
}

/// Mean wait in a pipe fed by Poisson arrivals at `load` of its capacity.
fn pipe_wait_ps(load: f64, seed: u64) -> (f64, f64) {
    // Pipe: 10 Mpps, 100 ns per packet. Links at 1 Tbps (8 ns per 1000 B frame)
    // so the NIC barely shapes the Poisson arrivals.
    let rate_bps = (load * 10_000_000.0 * 1020.0 * 8.0) as u64;
    let out = run_json(&format!(
        r#"{{"duration_ps": 60000000000, "seed": {seed},
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 1000000000}},
                     "pipeline": {{"rate_pps": 10000000, "queue_packets": null}}}}}},
        "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": 1000000000000, "delay_ps": 0}}}},
        "traffic": [{{"kind": "udp_poisson", "src": ["h0"], "dst": "h1", "rate_bps": {rate_bps},
                     "frame_bytes": 1000}}],
        "stats": {{"queue_sample_interval_ps": 0}}}}"#
    ));
    assert!(flag(&out, "conservation_ok"));
    (f64_col(&out, "pipes", "wait_mean_ps")[0], f64_col(&out, "pipes", "utilization")[0])
}

#[test]
fn the_pipe_queue_waits_like_md1_under_poisson_arrivals() {
    // M/D/1: Wq = rho * S / (2 (1 - rho)), S = 100 ns.
    for (load, tol) in [(0.5, 0.03), (0.8, 0.05)] {
        let (wq, util) = pipe_wait_ps(load, 3);
        let theory = load * 100_000.0 / (2.0 * (1.0 - load));
        assert!((wq / theory - 1.0).abs() < tol, "load {load}: {wq} ps vs {theory} ps");
        assert!((util - load).abs() < 0.01, "utilization {util}");
    }
}

/// Two line-rate 64 B streams (h1 -> h3 and h2 -> h4) through a switch whose
/// pipes serve ports in `port_pipe`; only port 1 (h1's) runs a costly ACL.
fn shared_pipe(pipes: u32, port_pipe: &str) -> RunOutput {
    run_json(&format!(
        r#"{{"duration_ps": 100000000000, "seed": 1,
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 100000000}},
            "pipeline": {{"pipes": {pipes}, "port_pipe": {port_pipe}, "rate_pps": 400000000, "queue_packets": 64,
                "stages": [{{"kind": "acl", "cost": 2.0, "ports": [1], "rules": []}}]}}}}}},
        "topology": {{"kind": "star", "hosts": 5, "link": {{"rate_bps": 100000000000, "delay_ps": 0}}}},
        "traffic": [{{"kind": "udp_cbr", "name": "featured", "src": ["h1"], "dst": "h3", "load": 1.0,
                     "frame_bytes": 64, "max_frames": 20000}},
                    {{"kind": "udp_cbr", "name": "plain", "src": ["h2"], "dst": "h4", "load": 1.0,
                     "frame_bytes": 64, "max_frames": 20000}}]}}"#
    ))
}

#[test]
fn a_shared_pipe_hurts_ports_that_enabled_nothing() {
    // Pipe: 400 M passes/s. Featured packets cost 3 passes (7.5 ns), plain ones
    // 1 (2.5 ns); both ports offer one frame per 6.72 ns. The pipe takes the
    // two ports' queues in turn: one packet of each per 10 ns, so each port
    // gets 100 Mpps (67 % of its line rate), the plain one included.
    let shared = shared_pipe(1, "[0, 0, 0, 0, 0]");
    let delivered = i64_col(&shared, "flows", "packets_delivered");
    // 20,000 frames take 134.4 us to arrive: 13,440 pass, plus the 64 queued.
    for d in &delivered {
        assert!((d - 13_504).abs() <= 2, "{delivered:?}");
    }
    let lost = i64_col(&shared, "flows", "packets_dropped");
    assert_eq!(drops(&shared, "pipeline_queue_full"), lost[0] + lost[1]);
    // Separate pipes: the plain port keeps line rate, the featured one alone
    // gets 400/3 = 133 Mpps.
    let split = shared_pipe(2, "[0, 1, 0, 0, 0]");
    let delivered = i64_col(&split, "flows", "packets_delivered");
    assert_eq!(delivered[1], 20_000);
    assert!((delivered[0] - (134_400_000 / 7_500 + 64)).abs() <= 2, "{delivered:?}");
}

#[test]
fn acl_rules_rewrite_dscp_and_deny_by_first_match() {
    // Two streams into one switch; on port 1 an ACL rewrites DSCP to 46, then a
    // second ACL on all ports denies DSCP 46 and permits the rest.
    let out = run_json(
        r#"{"duration_ps": 10000000000, "seed": 1,
        "network": {"switch": {"buffer": {"model": "static", "port_bytes": 10000000},
            "pipeline": {"rate_pps": 1000000000000, "stages": [
                {"kind": "acl", "name": "mark", "ports": [1], "rules": [{"action": "permit", "set_dscp": 46}]},
                {"kind": "acl", "name": "filter", "rules": [
                    {"dscp": 46, "action": "deny"},
                    {"dst": "10.0.0.1/32", "action": "permit", "set_class": 1}]}]}}},
        "topology": {"kind": "star", "hosts": 3, "link": {"rate_bps": 10000000000, "delay_ps": 0}},
        "traffic": [{"kind": "udp_cbr", "src": ["h1"], "dst": "h0", "rate_bps": 1000000000, "max_frames": 100},
                    {"kind": "udp_cbr", "src": ["h2"], "dst": "h0", "rate_bps": 1000000000, "max_frames": 100,
                     "dscp": 10}]}"#,
    );
    assert_eq!(i64_col(&out, "flows", "packets_delivered"), vec![0, 100]);
    assert_eq!(drops(&out, "acl_deny"), 100);
    let sw = 0;
    assert_eq!(counter(&out, sw, "mark", "packets"), 100);
    assert_eq!(counter(&out, sw, "mark", "rewritten"), 100);
    assert_eq!(counter(&out, sw, "filter", "rule0"), 100);
    assert_eq!(counter(&out, sw, "filter", "rule1"), 100);
    assert_eq!(counter(&out, sw, "filter", "denied"), 100);
    // Rule 1 moved the permitted stream to class 1: it is queued there.
    let classes = i64_col(&out, "queue_peaks", "class");
    assert!(classes.iter().all(|&c| c == 1), "{classes:?}");
}

#[test]
fn a_full_connection_table_drops_new_connections() {
    // Three UDP flows through a table of two: the third connection is refused.
    let out = run_json(
        r#"{"duration_ps": 1000000000, "seed": 1,
        "network": {"switch": {"pipeline": {"rate_pps": 1000000000000, "stages": [
            {"kind": "conntrack", "table_size": 2}]}}},
        "topology": {"kind": "star", "hosts": 4, "link": {"rate_bps": 10000000000, "delay_ps": 0}},
        "traffic": [{"kind": "udp_cbr", "src": ["h1", "h2"], "dst": "h0", "rate_bps": 1000000000, "max_frames": 50},
                    {"kind": "udp_cbr", "src": ["h3"], "dst": "h0", "rate_bps": 1000000000, "max_frames": 50,
                     "start_ps": 1000000}]}"#,
    );
    assert_eq!(i64_col(&out, "flows", "packets_delivered"), vec![50, 50, 0]);
    assert_eq!(drops(&out, "conntrack_full"), 50);
    assert_eq!(counter(&out, 0, "conntrack", "inserted"), 2);
    assert_eq!(counter(&out, 0, "conntrack", "entries_high_water"), 2);
}

#[test]
fn an_idle_connection_ages_out_and_makes_room() {
    // The first flow stops at 1 us; with a 10 us UDP timeout its entry is gone
    // when the second flow starts at 20 us, so the second is admitted.
    let out = run_json(
        r#"{"duration_ps": 100000000, "seed": 1,
        "network": {"switch": {"pipeline": {"rate_pps": 1000000000000, "stages": [
            {"kind": "conntrack", "table_size": 1, "udp_unreplied_timeout_ps": 10000000}]}}},
        "topology": {"kind": "star", "hosts": 3, "link": {"rate_bps": 10000000000, "delay_ps": 0}},
        "traffic": [{"kind": "udp_cbr", "src": ["h1"], "dst": "h0", "rate_bps": 1000000000, "max_frames": 1},
                    {"kind": "udp_cbr", "src": ["h2"], "dst": "h0", "rate_bps": 1000000000, "max_frames": 1,
                     "start_ps": 20000000}]}"#,
    );
    assert_eq!(i64_col(&out, "flows", "packets_delivered"), vec![1, 1]);
    assert_eq!(counter(&out, 0, "conntrack", "aged"), 1);
}

#[test]
fn a_meter_drops_red_and_passes_green_and_yellow() {
    // 2 Gb/s of 1000 B frames (4 us apart) for 2 ms against srTCM CIR 1 Gb/s,
    // CBS = EBS = 10 kB: green = CBS + CIR * T, yellow = EBS, red dropped.
    let out = run_json(
        r#"{"duration_ps": 2000000000, "seed": 1,
        "network": {"switch": {"pipeline": {"rate_pps": 1000000000000, "stages": [
            {"kind": "meter", "mode": "srtcm", "cir_bps": 1000000000, "cbs_bytes": 10000, "ebs_bytes": 10000}]}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 10000000000, "delay_ps": 0}},
        "traffic": [{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "rate_bps": 2040000000, "frame_bytes": 1000}]}"#,
    );
    let green = counter(&out, 0, "meter", "green_bytes");
    let yellow = counter(&out, 0, "meter", "yellow_bytes");
    let red = counter(&out, 0, "meter", "red_packets");
    let sent = i64_col(&out, "flows", "packets_sent")[0];
    // 1020 B on the wire at 2.04 Gb/s: frames arrive 4 us apart; CIR * T up to the last one.
    let t_last_s = (sent - 1) as f64 * 4e-6;
    let expect = 10_000.0 + 1e9 / 8.0 * t_last_s;
    assert!((green as f64 - expect).abs() <= 1000.0, "green {green} vs {expect}");
    assert_eq!(yellow, 10_000);
    assert_eq!(drops(&out, "meter_drop"), red);
    assert_eq!(i64_col(&out, "flows", "bytes_delivered")[0], green + yellow);
}

#[test]
fn vxlan_adds_50_bytes_on_the_wire_and_none_to_the_flow() {
    // Every NIC encapsulates on transmit and decapsulates on receive; the
    // switch's pipeline matches the VNI.
    let out = run_json(
        r#"{"duration_ps": 1000000000, "seed": 1,
        "network": {
          "switch": {"pipeline": {"rate_pps": 1000000000000, "stages": [
              {"kind": "parse"}, {"kind": "vni_match", "vnis": [5000]}]}},
          "host": {"pipeline": {"rate_pps": 1000000000000, "stages": [
              {"kind": "vxlan_encap", "vni": 5000, "direction": "tx"},
              {"kind": "vxlan_decap", "direction": "rx"}]}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 10000000000, "delay_ps": 0}},
        "traffic": [{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "rate_bps": 1000000000,
                     "frame_bytes": 1000, "max_frames": 100}]}"#,
    );
    let link_bytes = i64_col(&out, "links", "bytes");
    let link_packets = i64_col(&out, "links", "packets");
    for (b, p) in link_bytes.iter().zip(&link_packets) {
        if *p > 0 {
            assert_eq!(*b, p * 1050, "every frame on the wire is 1000 + 50 B");
        }
    }
    assert_eq!(i64_col(&out, "flows", "bytes_delivered"), vec![100_000]);
    assert_eq!(counter(&out, 0, "vni_match", "hits"), 100);
    assert_eq!(counter(&out, 0, "parse", "tunnelled"), 100);
    assert!(flag(&out, "conservation_ok"));
}

#[test]
fn vxlan_overhead_lowers_the_inner_rate_at_line_rate() {
    // A line-rate stream of 200 B inner frames encapsulated at the NIC: the wire
    // carries 200 + 50 + 20 B per frame, so the inner goodput is 200/270 of 10G.
    let out = run_json(
        r#"{"duration_ps": 100000000, "drain": false, "seed": 1,
        "network": {"host": {"pipeline": {"rate_pps": 1000000000000, "stages": [
              {"kind": "vxlan_encap", "vni": 1, "direction": "tx"}]}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 10000000000, "delay_ps": 0}},
        "traffic": [{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "load": 1.0, "frame_bytes": 200}]}"#,
    );
    // h0's NIC port (link 0, direction h0 -> sw) is busy all the time.
    let util = f64_col(&out, "links", "utilization")[0];
    assert!(util > 0.99, "{util}");
    let sent = i64_col(&out, "links", "packets")[0] as f64;
    let per_frame_s = 270.0 * 8.0 / 1e10;
    assert!((sent - 1e-4 / per_frame_s).abs() <= 1.0, "{sent}");
}

#[test]
fn pipe_latency_adds_exactly_once() {
    let frame = |latency: u64| {
        let out = run_json(&format!(
            r#"{{"duration_ps": 100000000, "seed": 1,
            "network": {{"switch": {{"latency_ps": 500000, "pipeline": {{"rate_pps": 1000000000, "latency_ps": {latency},
                "stages": [{{"kind": "acl", "rules": [], "latency_ps": 7000}}]}}}}}},
            "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
            "traffic": [{{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "rate_bps": 1000000000,
                         "frame_bytes": 1000, "max_frames": 1}}]}}"#
        ));
        i64_col(&out, "flows", "latency_max_ps")[0]
    };
    // Store and forward: 2 x 816 ns + 2 x 1 us + 500 ns, plus the pipe's and the stage's latency.
    assert_eq!(frame(0), 4_132_000 + 7_000);
    assert_eq!(frame(100_000), 4_132_000 + 107_000);
}

#[test]
fn cut_through_counts_the_pipe_delay_from_the_header() {
    // Cut-through without a pipeline: 1 us + 51.2 ns (the 64 B header) + 500 ns
    // + 816 ns + 1 us = 3.3672 us (timing.rs). An idle pipe with 100 ns of
    // latency delays the header by exactly that much; the frame stays cut through.
    let out = run_json(
        r#"{"duration_ps": 100000000, "seed": 1,
        "network": {"switch": {"forwarding": "cut_through", "latency_ps": 500000,
            "pipeline": {"rate_pps": 1000000000, "latency_ps": 100000, "stages": [{"kind": "acl", "rules": []}]}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 10000000000, "delay_ps": 1000000}},
        "traffic": [{"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "rate_bps": 1000000000,
                     "frame_bytes": 1000, "max_frames": 1}]}"#,
    );
    assert_eq!(i64_col(&out, "flows", "latency_max_ps")[0], 3_367_200 + 100_000);
}

#[test]
fn packets_inside_pipes_count_when_the_run_stops() {
    let out = run_json(
        r#"{"duration_ps": 20000000, "drain": false, "seed": 1,
        "network": {"switch": {"buffer": {"model": "static", "port_bytes": 100000000},
            "pipeline": {"rate_pps": 10000000, "latency_ps": 1000000, "queue_packets": null}}},
        "topology": {"kind": "star", "hosts": 3, "link": {"rate_bps": 100000000000, "delay_ps": 0}},
        "traffic": [{"kind": "udp_cbr", "src": ["h1", "h2"], "dst": "h0", "load": 1.0, "frame_bytes": 64}]}"#,
    );
    assert!(int(&out, "packets_in_network") > 100);
    assert!(flag(&out, "conservation_ok"));
}

#[test]
fn bad_pipeline_settings_name_the_field() {
    let err = |pipeline: &str| {
        let json = format!(
            r#"{{"duration_ps": 1000, "network": {{"switch": {{"pipeline": {pipeline}}}}},
            "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": 1000000000, "delay_ps": 0}}}}}}"#
        );
        match Simulation::new(&Scenario::from_json(&json).unwrap()) {
            Err(e) => e,
            Ok(_) => panic!("accepted {pipeline}"),
        }
    };
    let e = err(r#"{"rate_pps": 1, "stages": [{"kind": "firewall"}]}"#);
    assert_eq!(e.path, "network.switch.pipeline.stages[0].kind");
    assert!(e.message.contains("acl") && e.message.contains("meter"), "{e}");
    let e = err(r#"{"rate_pps": 1, "stages": [{"kind": "acl", "rules": [{"src": "10.0.0.1/8"}]}]}"#);
    assert_eq!(e.path, "network.switch.pipeline.stages[0].rules[0].src");
    let e = err(r#"{"rate_pps": 1, "stages": [{"kind": "acl", "ports": [5], "rules": []}]}"#);
    assert_eq!(e.path, "network.switch.pipeline.stages[0].ports[0]");
    let e = err(r#"{"rate_pps": 1, "pipes": 0}"#);
    assert_eq!(e.path, "network.switch.pipeline.pipes");
    let e = err(r#"{"rate_pps": 1, "pipes": 2, "port_pipe": [0, 2]}"#);
    assert_eq!(e.path, "network.switch.pipeline.port_pipe[1]");
    let e = err(r#"{"rate_pps": 0}"#);
    assert_eq!(e.path, "network.switch.pipeline.rate");
}

#[test]
fn pipelines_are_deterministic() {
    let run = || {
        let out = pipe_wait_ps(0.7, 9);
        (out.0.to_bits(), out.1.to_bits())
    };
    assert_eq!(run(), run());
}

#[test]
fn tcp_runs_through_nic_pipelines_with_tunnels_and_connection_tracking() {
    // Both NICs encapsulate, decapsulate and track connections in hardware
    // whose pipe is slow enough to queue (20 Mpps); the switch matches the VNI.
    let out = run_json(
        r#"{"duration_ps": 1000000000000, "seed": 1,
        "network": {
          "switch": {"pipeline": {"rate_pps": 1000000000000, "stages": [{"kind": "vni_match", "vnis": [7]}]}},
          "host": {"pipeline": {"rate_pps": 20000000, "latency_ps": 500000, "stages": [
              {"kind": "vxlan_decap", "direction": "rx"},
              {"kind": "conntrack", "table_size": 16},
              {"kind": "vxlan_encap", "vni": 7, "direction": "tx"}]}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 100000000000, "delay_ps": 1000000}},
        "traffic": [{"kind": "tcp_bulk", "src": ["h0"], "dst": "h1", "bytes": 2000000}]}"#,
    );
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    assert!(i64_col(&out, "flows", "fct_ps")[0] > 0, "the transfer completes");
    assert!(i64_col(&out, "flows", "bytes_delivered")[0] > 2_000_000);
    // One connection per NIC, seen both ways.
    for host in [1, 2] {
        assert_eq!(counter(&out, host, "conntrack", "inserted"), 1);
        assert_eq!(counter(&out, host, "conntrack", "replied"), 1);
    }
    let encapsulated =
        counter(&out, 1, "vxlan_encap", "encapsulated") + counter(&out, 2, "vxlan_encap", "encapsulated");
    assert_eq!(counter(&out, 0, "vni_match", "hits"), encapsulated);
    assert_eq!(drops(&out, "vni_miss"), 0);
}
