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

/// Mean wait for the core of a Poisson stream at load `rho` into a receive
/// core of deterministic service `S` = 1 us (one frame per poll).
fn md1_wait(rho: f64) -> (f64, f64) {
    let s_ps = 1_000_000u64;
    let frame = 1000u64;
    let rate = (rho / (s_ps as f64 * 1e-12) * ((frame + 20) * 8) as f64).round() as u64;
    let model = format!(
        r#"{{"cores": 1, "backlog_packets": 100000, "napi_budget": 1,
            "stages": [{{"kind": "udp", "rx": {{"per_packet_ps": {s_ps}}}}}]}}"#
    );
    let out = run_json(&format!(
        r#"{{"duration_ps": 200000000000, "seed": 11,
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 1000000000}}}},
                     "host": {{"model": {model}}}}},
        "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": 1000000000000, "delay_ps": 0}}}},
        "traffic": [{{"kind": "udp_poisson", "src": ["h0"], "dst": "h1", "rate_bps": {rate}, "frame_bytes": {frame}}}]}}"#
    ));
    assert!(flag(&out, "conservation_ok"));
    assert_eq!(int(&out, "packets_dropped"), 0);
    let wait = component(&out, 0, "rx_cpu_wait").1;
    let expected = rho * s_ps as f64 / (2.0 * (1.0 - rho));
    (wait, expected)
}

#[test]
fn a_core_queue_under_poisson_arrivals_waits_as_md1() {
    for rho in [0.5, 0.8] {
        let (wait, expected) = md1_wait(rho);
        let err = (wait - expected).abs() / expected;
        eprintln!("M/D/1 rho {rho}: {wait:.0} ps vs {expected:.0} ps");
        assert!(err < 0.05, "rho {rho}: mean wait {wait:.0} ps vs M/D/1 {expected:.0} ps ({:.1} %)", err * 100.0);
    }
}

/// A 2 MB TCP transfer between two linux-kernel-like hosts with or without batching.
fn batched(gso: u32, tso: bool, gro: u32) -> RunOutput {
    let model = format!(
        r#"{{"cores": 2, "gso_bytes": {gso}, "tso": {tso}, "gro_bytes": {gro},
            "stages": [{{"kind": "tcp", "tx": {{"per_packet_ps": 600000, "per_byte_fs": 170000}},
                                        "rx": {{"per_packet_ps": 600000, "per_byte_fs": 170000}}}},
                       {{"kind": "driver", "tx": {{"per_packet_ps": 150000}}, "rx": {{"per_packet_ps": 250000}}}}]}}"#
    );
    let traffic = r#"{"kind": "tcp_flows", "flows": [{"src": "h0", "dst": "h1", "bytes": 2000000}]}"#;
    pair(&model, traffic, 50_000_000_000)
}

pub(crate) fn sum(out: &RunOutput, table: &str, col: &str) -> i64 {
    i64_col(out, table, col).iter().sum()
}

#[test]
fn gso_tso_and_gro_batch_segments_and_save_cpu() {
    let plain = batched(0, false, 0);
    let fast = batched(65536, true, 65536);
    for out in [&plain, &fast] {
        assert!(flag(out, "conservation_ok") && flag(out, "drained"));
        assert_eq!(int(out, "flows_completed"), 1);
    }
    // Without batching every packet is its own batch and skb.
    assert_eq!(sum(&plain, "cores", "tx_batches"), sum(&plain, "cores", "tx_packets"));
    assert_eq!(sum(&plain, "cores", "rx_skbs"), sum(&plain, "cores", "rx_frames"));
    // With it, batches and skbs hold several segments, and the CPU works less for the same bytes.
    assert!(sum(&fast, "cores", "tx_batches") * 2 < sum(&fast, "cores", "tx_packets"));
    assert!(sum(&fast, "cores", "rx_skbs") * 2 < sum(&fast, "cores", "rx_frames"));
    assert!(int(&fast, "host_cpu_busy_ps") < int(&plain, "host_cpu_busy_ps"));
    let fct = |o: &RunOutput| i64_col(o, "flows", "fct_ps")[0];
    assert!(fct(&fast) < fct(&plain), "{} vs {}", fct(&fast), fct(&plain));
}

#[test]
fn packets_inside_hosts_count_in_conservation_and_runs_are_deterministic() {
    let model = r#"{"cores": 1, "nic": {"tx_latency_ps": 2000000, "rx_latency_ps": 3000000},
        "interrupt": {"usecs_ps": 20000000, "frames": 64},
        "stages": [{"kind": "udp", "tx": {"per_packet_ps": 900000}, "rx": {"per_packet_ps": 800000}}]}"#;
    let json = format!(
        r#"{{"duration_ps": 300000000, "drain": false, "seed": 5,
        "network": {{"host": {{"model": {model}}}}},
        "topology": {{"kind": "star", "hosts": 3, "link": {{"rate_bps": 100000000000, "delay_ps": 1000000}}}},
        "traffic": [{{"kind": "udp_poisson", "src": ["h0", "h1"], "dst": "h2", "rate_bps": 8000000000, "frame_bytes": 1000}}]}}"#
    );
    let a = run_json(&json);
    assert!(flag(&a, "conservation_ok"));
    assert!(int(&a, "packets_in_network") > 0);
    let b = run_json(&json);
    for t in ["cpu", "cores", "host_latency", "flows"] {
        assert_eq!(format!("{:?}", a.tables[t]), format!("{:?}", b.tables[t]), "{t}");
    }
}

#[test]
fn hosts_of_one_machine_share_its_cores() {
    let model = r#"{"cores": 2, "machines": [["h0", "h1"]],
        "stages": [{"kind": "udp", "tx": {"per_packet_ps": 1000000}, "rx": {"per_packet_ps": 1000000}}]}"#;
    let traffic = r#"{"kind": "ping_pong", "src": "h0", "dst": "h1", "message_bytes": 100, "messages": 10}"#;
    let out = pair(model, traffic, 1_000_000_000);
    // h0 and h1 share 2 cores; h2 does not exist here: 2 cores in all.
    assert_eq!(i64_col(&out, "cores", "core"), vec![0, 1]);
    assert_eq!(i64_col(&out, "ping_pong", "messages"), vec![10]);
}

#[test]
fn ping_pong_messages_fill_a_jumbo_frame_of_9216_bytes_and_no_more() {
    let model = r#"{"cores": 1, "stages": [{"kind": "udp", "tx": {"per_packet_ps": 100000}, "rx": {"per_packet_ps": 100000}}]}"#;
    // 9170 B of UDP payload + 46 B of UDP, IPv4 and Ethernet headers = 9216 B on the wire.
    let traffic = r#"{"kind": "ping_pong", "src": "h0", "dst": "h1", "message_bytes": 9170, "messages": 3}"#;
    let out = pair(model, traffic, 1_000_000_000);
    assert_eq!(i64_col(&out, "ping_pong", "messages"), vec![3]);
    assert_eq!(i64_col(&out, "ping_pong", "frame_bytes"), vec![9216]);
    let sc = fabricsim_core::Scenario::from_json(
        r#"{"duration_ps": 1000000,
            "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 100000000000, "delay_ps": 1000000}},
            "traffic": [{"kind": "ping_pong", "src": "h0", "dst": "h1", "message_bytes": 9171, "messages": 1}]}"#,
    )
    .expect("scenario JSON");
    let err = fabricsim_core::Simulation::new(&sc).err().expect("a 9217 B frame is refused");
    assert!(format!("{err}").contains("traffic[0].message_size"), "{err}");
}

/// The model of `unloaded_ping_pong_latency_is_the_exact_sum_of_nic_stack_and_wire`, without TCP.
const TRACED_MODEL: &str = r#"{"cores": 1, "core_share_ppm": 500000,
    "interrupt": {"usecs_ps": 5000000, "frames": 0, "cost_ps": 400000},
    "nic": {"tx_latency_ps": 600000, "tx_per_byte_fs": 80, "rx_latency_ps": 700000, "rx_per_byte_fs": 90},
    "stages": [
      {"kind": "syscall", "tx": {"per_packet_ps": 1000000}, "rx": {"per_packet_ps": 1500000}},
      {"kind": "udp", "tx": {"per_packet_ps": 700000, "per_byte_fs": 100}, "rx": {"per_packet_ps": 900000, "per_byte_fs": 300}},
      {"kind": "driver", "tx": {"per_packet_ps": 200000}, "rx": {"per_packet_ps": 300000, "per_byte_fs": 7}}]}"#;

fn traced_scenario(packet_latency: &str) -> String {
    format!(
        r#"{{"duration_ps": 10000000000, "seed": 3,
        "network": {{"switch": {{"latency_ps": 500000, "buffer": {{"model": "static", "port_bytes": 100000000}}}},
                     "host": {{"model": {TRACED_MODEL}}}}},
        "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": 100000000000, "delay_ps": 1000000}}}},
        "traffic": [{{"kind": "ping_pong", "name": "pp", "src": "h0", "dst": "h1", "message_bytes": 64, "messages": 20}}],
        "stats": {{"packet_latency": {packet_latency}}}}}"#
    )
}

#[test]
fn every_traced_packet_carries_the_exact_host_components_and_the_wire_as_fabric() {
    let out = run_json(&traced_scenario(r#"{"max_packets": 100}"#));
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    let frame = 64 + 46u64;
    let cpu = |ps: u64, fs: u64| ((ps * 1000 + fs) * 1000).div_ceil(500_000);
    let want = [
        0,
        cpu(1_000_000 + 700_000 + 200_000, 100 * frame),
        (frame * 80).div_ceil(1000) + 600_000,
        (frame * 90).div_ceil(1000) + 700_000,
        5_000_000,
        0,
        cpu(400_000 + 300_000 + 900_000 + 1_500_000, 7 * frame + 300 * frame),
    ];
    let wire = ser100(frame) + 1_000_000 + 500_000 + ser100(frame) + 1_000_000;
    let cols =
        ["tx_cpu_wait_ps", "tx_cpu_ps", "tx_dma_ps", "rx_dma_ps", "rx_irq_wait_ps", "rx_cpu_wait_ps", "rx_cpu_ps"];
    let flows = i64_col(&out, "packet_latency", "flow_id");
    assert_eq!(flows.len(), 40);
    assert_eq!(flows.iter().filter(|&&f| f == 0).count(), 20);
    assert!(cat_col(&out, "packet_latency", "kind").iter().all(|k| k == "udp"));
    for (c, &w) in cols.iter().zip(&want) {
        assert!(i64_col(&out, "packet_latency", c).iter().all(|&v| v == w as i64), "{c}");
    }
    assert!(i64_col(&out, "packet_latency", "fabric_ps").iter().all(|&v| v == wire as i64));
    let (created, delivered) =
        (i64_col(&out, "packet_latency", "created_ps"), i64_col(&out, "packet_latency", "delivered_ps"));
    let one_way: u64 = want.iter().sum::<u64>() + wire;
    assert!((0..40).all(|i| delivered[i] - created[i] == one_way as i64));
    assert_eq!(int(&out, "packet_latency_missed"), 0);
    // Off by default: no table, no summary entry.
    let off = pair(
        TRACED_MODEL,
        r#"{"kind": "ping_pong", "src": "h0", "dst": "h1", "message_bytes": 64, "messages": 2}"#,
        1_000_000_000,
    );
    assert!(!off.tables.contains_key("packet_latency") && !off.summary.contains_key("packet_latency_missed"));
}

#[test]
fn packet_latency_settings_are_checked_with_their_field_path() {
    use fabricsim_core::{Scenario, Simulation};
    let err =
        |pl: &str| Simulation::new(&Scenario::from_json(&traced_scenario(pl)).unwrap()).err().unwrap().to_string();
    let e = err(r#"{"flows": ["pp", "nope"]}"#);
    assert!(
        e.contains("stats.packet_latency.flows[1]")
            && e.contains("unknown traffic entry 'nope'")
            && e.contains("known: pp"),
        "{e}"
    );
    assert!(err(r#"{"max_packets": 0}"#).contains("stats.packet_latency.max_packets"));
    assert!(err(r#"{"max_packets": 1000001}"#).contains("must be 1 to 1000000"));
}

/// 2 MB of TCP from h0 to h1, read by h1's application (128 KiB reads, a
/// constant 20 us wake-up, 1 GB/s copy: 1 ns per byte) on one-core hosts
/// whose TCP work costs nothing; with `udp`, a UDP stream into h1 too, one
/// frame every 2 us, each costing 1 us of h1's core (one frame per poll);
/// `slice`: the reader's `copy_slice_bytes`.
fn reader_on_core(on_core: bool, udp: bool, slice: u64) -> RunOutput {
    let model = r#"{"cores": 1, "napi_budget": 1, "stages": [{"kind": "udp", "rx": {"per_packet_ps": 1000000}}]}"#;
    let udp = if udp {
        r#", {"kind": "udp_cbr", "src": ["h0"], "dst": "h1", "load": 0.04, "frame_bytes": 980, "max_frames": 5000}"#
    } else {
        ""
    };
    run_json(&format!(
        r#"{{"duration_ps": 30000000000, "seed": 3,
        "network": {{"switch": {{"latency_ps": 500000, "buffer": {{"model": "static", "port_bytes": 100000000}}}},
                     "host": {{"model": {model}}}}},
        "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": 100000000000, "delay_ps": 1000000}}}},
        "tcp": {{"rwnd_bytes": 4194304, "receiver_app": {{"read_bytes": 131072, "copy_bps": 8000000000,
                 "wakeup": {{"kind": "constant", "delay_ps": 20000000}}, "on_core": {on_core},
                 "copy_slice_bytes": {slice}}}}},
        "traffic": [{{"kind": "tcp_flows", "flows": [{{"src": "h0", "dst": "h1", "bytes": 2000000}}]}}{udp}]}}"#
    ))
}

/// Busy picoseconds of h1's core (the cores table lists h0's core, then h1's).
fn h1_busy(out: &RunOutput) -> i64 {
    let nodes = i64_col(out, "cores", "node");
    assert_eq!(nodes.len(), 2);
    assert!(nodes[0] < nodes[1]);
    i64_col(out, "cores", "busy_ps")[1]
}

#[test]
fn an_idle_core_runs_the_reader_after_its_wakeup_latency_and_its_copies_occupy_the_core() {
    let out = reader_on_core(true, false, 0);
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    assert_eq!(int(&out, "flows_completed"), 1);
    let reads = sum(&out, "tcp_receivers", "reads");
    let wakeups = sum(&out, "tcp_receivers", "wakeups");
    assert!(reads > 1 && wakeups > 0, "{reads} reads, {wakeups} wake-ups");
    assert_eq!(sum(&out, "tcp_receivers", "bytes_read"), 2_000_000);
    // Every call ran on the core, which had nothing else to do: no wait
    // beyond the 20 us of the wake-up itself.
    assert!(sum(&out, "tcp_receivers", "core_waits") >= reads);
    assert_eq!(sum(&out, "tcp_receivers", "core_wait_ps"), 0);
    assert_eq!(sum(&out, "tcp_receivers", "wakeup_delay_ps"), wakeups * 20_000_000);
    // The copies are h1's core's only work: 2 MB at 1 ns per byte.
    assert_eq!(h1_busy(&out), 2_000_000 * 1000);
    // A chunk is copied in one turn: the polls of h1's only core wait for
    // it, so no segment reaches TCP while the process holds the socket.
    assert_eq!(sum(&out, "tcp_receivers", "backlog_segments"), 0);
    // In turns of one segment's payload, the polls run between them while
    // the process keeps the socket: segments go to the socket backlog. The
    // copies take the same time in all.
    let sliced = reader_on_core(true, false, 1448);
    assert_eq!(sum(&sliced, "tcp_receivers", "bytes_read"), 2_000_000);
    assert!(
        sum(&sliced, "tcp_receivers", "backlog_segments") > 100,
        "{}",
        sum(&sliced, "tcp_receivers", "backlog_segments")
    );
    assert_eq!(h1_busy(&sliced), 2_000_000 * 1000);
    // On its own timers (`on_core: false`) the reader leaves the core idle.
    let timers = reader_on_core(false, false, 0);
    assert_eq!(sum(&timers, "tcp_receivers", "core_waits"), 0);
    assert_eq!(h1_busy(&timers), 0);
    assert_eq!(sum(&timers, "tcp_receivers", "bytes_read"), 2_000_000);
}

#[test]
fn a_core_busy_with_polls_delays_the_reader_and_its_copies_delay_the_polls() {
    let busy = reader_on_core(true, true, 0);
    let timers = reader_on_core(false, true, 0);
    for out in [&busy, &timers] {
        assert!(flag(out, "conservation_ok") && flag(out, "drained"));
        assert_eq!(int(out, "flows_completed"), 2);
        assert_eq!(int(out, "packets_dropped"), 0);
    }
    // Softirq first: a runnable reader waits for the polls queued on its
    // core (each 1 us; after a copy of up to 131 us, about as many frames
    // wait in the ring as the copy lasted in 2 us steps, and draining them
    // at 1 us each while more arrive takes about as long as the copy).
    let waits = sum(&busy, "tcp_receivers", "core_waits");
    let wait_ps = sum(&busy, "tcp_receivers", "core_wait_ps");
    eprintln!("reader on a busy core: mean wait {} ps over {waits} runs", wait_ps / waits.max(1));
    assert!(waits > 0 && wait_ps / waits > 10_000_000, "mean wait {} ps over {waits}", wait_ps / waits.max(1));
    assert_eq!(sum(&timers, "tcp_receivers", "core_waits"), 0);
    // ... and the UDP frames wait for the reader's copies: they share the core.
    let udp_wait = |o: &RunOutput| component(o, 1, "rx_cpu_wait").1;
    assert!(udp_wait(&busy) > 4.0 * udp_wait(&timers), "{} vs {}", udp_wait(&busy), udp_wait(&timers));
    // The reader's copies are on the core: 2 MB at 1 ns per byte beside the
    // 5000 UDP frames at 1 us.
    assert_eq!(h1_busy(&busy), 2_000_000 * 1000 + 5000 * 1_000_000);
    assert_eq!(h1_busy(&timers), 5000 * 1_000_000);
}
