//! TCP end to end: bottleneck utilization, the Mathis loss-throughput law,
//! incast rounds and timeouts, determinism of TCP runs.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::{Column, RunOutput};

fn f64_col(out: &RunOutput, table: &str, col: &str) -> Vec<f64> {
    match out.tables[table].column(col) {
        Some(Column::F64(v)) => v.clone(),
        other => panic!("{table}.{col} is {other:?}"),
    }
}

/// Two hosts through one switch, 10G links with `delay_ps` each, a static port
/// buffer, one TCP bulk transfer from h0 to h1.
fn star_bulk(delay_ps: u64, buffer: u64, size: Option<u64>, duration: Option<u64>, tcp: &str, loss: f64) -> RunOutput {
    let size = size.map_or("null".to_string(), |s| s.to_string());
    let duration = duration.map_or("null".to_string(), |s| s.to_string());
    run_json(&format!(
        r#"{{"duration_ps": 20000000000000, "seed": 3,
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": {buffer}}}}}}},
        "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": 10000000000, "delay_ps": {delay_ps}, "loss": {loss}}}}},
        "tcp": {tcp},
        "traffic": [{{"kind": "tcp_bulk", "src": ["h0"], "dst": "h1", "bytes": {size}, "duration_ps": {duration}}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#
    ))
}

/// Goodput capacity of a 10G link for 1448 B segments in 1538 B on the wire.
const GOODPUT_10G: f64 = 10e9 * 1448.0 / (1448.0 + 52.0 + 18.0 + 20.0);

/// One flow h0 -40G- sw -10G- h1 through a 1 MB buffer, 200 MB; returns
/// (steady-state goodput, whole-transfer goodput) in bit/s.
fn one_flow_through_a_deep_buffer(tcp: &str) -> (f64, f64, RunOutput) {
    let size = 200_000_000u64;
    let out = run_json(&format!(
        r#"{{"duration_ps": 20000000000000, "seed": 3,
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 1000000}}}}}},
        "topology": {{"kind": "explicit",
           "nodes": [{{"name": "h0", "kind": "host"}}, {{"name": "sw", "kind": "switch"}}, {{"name": "h1", "kind": "host"}}],
           "links": [{{"a": "h0", "b": "sw", "rate_bps": 40000000000, "delay_ps": 10000000}},
                     {{"a": "sw", "b": "h1", "rate_bps": 10000000000, "delay_ps": 10000000}}]}},
        "tcp": {tcp},
        "traffic": [{{"kind": "tcp_bulk", "src": ["h0"], "dst": "h1", "bytes": {size}}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 1000000000}}}}"#
    ));
    assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok"));
    // Steady state: the second half of the transfer, after the slow-start
    // overshoot and its recovery.
    let fct = i64_col(&out, "flows", "fct_ps")[0];
    let times = i64_col(&out, "throughput", "time_ps");
    let bytes = i64_col(&out, "throughput", "bytes");
    let (from, to) = (fct / 2, fct - 2_000_000_000);
    let window: i64 = times.iter().zip(&bytes).filter(|(t, _)| **t >= from && **t < to).map(|(_, b)| *b).sum();
    let bins = times.iter().filter(|t| **t >= from && **t < to).count() as f64;
    let goodput = window as f64 * 8.0 / (bins * 1e-3);
    let whole = size as f64 * 8.0 / (fct as f64 * 1e-12);
    // The buffer overflowed, so the sawtooth and fast recovery were exercised.
    assert!(int(&out, "packets_dropped") > 0);
    assert!(i64_col(&out, "flows", "fast_retransmits")[0] > 0);
    assert_eq!(i64_col(&out, "flows", "timeouts")[0], 0);
    (goodput, whole, out)
}

#[test]
fn one_newreno_flow_fills_a_bottleneck_whose_buffer_exceeds_the_bdp() {
    // RTT about 40 us: BDP about 50 KB; buffer 1 MB, so after a loss the
    // halved window still covers the BDP and the link never idles.
    for tcp in [r#"{"profile": "rfc"}"#, r#"{"cc": "newreno"}"#] {
        let (goodput, whole, out) = one_flow_through_a_deep_buffer(tcp);
        eprintln!(
            "{tcp}: steady {:.3} Gb/s, whole {:.3} Gb/s, drops {}",
            goodput / 1e9,
            whole / 1e9,
            int(&out, "packets_dropped")
        );
        assert!(goodput >= 0.95 * GOODPUT_10G, "{tcp}: goodput {:.3} Gb/s of {:.3}", goodput / 1e9, GOODPUT_10G / 1e9);
        // Without SACK the slow-start overshoot is repaired one hole per RTT.
        let floor = if tcp.contains("rfc") { 0.85 } else { 0.99 };
        assert!(whole >= floor * GOODPUT_10G, "{tcp}: whole-transfer goodput {:.3} Gb/s", whole / 1e9);
    }
}

#[test]
fn newreno_throughput_under_random_loss_follows_mathis() {
    // The RFC baseline and NewReno with Linux's SACK, RACK-TLP and PRR.
    for profile in [r#""profile": "rfc""#, r#""cc": "newreno""#] {
        mathis(profile);
    }
}

fn mathis(profile: &str) {
    // RTT = 4 x 250 us of propagation (+ serialization). Each of the two links
    // on the path loses 5e-4 of the packets in each direction, so a data segment
    // is lost with p = 1 - (1 - 5e-4)^2. No delayed ACKs (b = 1):
    // rate = MSS / RTT * sqrt(3 / 2) / sqrt(p).
    let per_link = 5e-4;
    let p = 1.0 - (1.0f64 - per_link).powi(2);
    let secs = 10.0;
    let out = star_bulk(
        250_000_000,
        10_000_000,
        None,
        Some((secs * 1e12) as u64),
        &format!(r#"{{{profile}, "delack_count": 1, "quickack_segments": 0}}"#),
        per_link,
    );
    let delivered = i64_col(&out, "flows", "app_bytes_delivered")[0] as f64;
    let rate = delivered * 8.0 / secs;
    let rtt = i64_col(&out, "flows", "srtt_ps")[0] as f64 * 1e-12;
    let mathis = 1448.0 * 8.0 / rtt * (1.5f64).sqrt() / p.sqrt();
    let ratio = rate / mathis;
    let timeouts = i64_col(&out, "flows", "timeouts")[0];
    let fr = i64_col(&out, "flows", "fast_retransmits")[0];
    let sent = i64_col(&out, "flows", "packets_sent")[0];
    eprintln!("{profile}: ratio {ratio:.3}, timeouts {timeouts}, fast retransmits {fr}");
    assert!(
        (0.8..=1.2).contains(&ratio),
        "{profile}: rate {:.1} Mb/s, Mathis {:.1} Mb/s (ratio {ratio:.3}, rtt {rtt:e}, timeouts {timeouts}, fast retransmits {fr}, packets {sent})",
        rate / 1e6,
        mathis / 1e6
    );
}

fn incast(servers: usize, bytes: u64, buffer: u64, rounds: u32, min_rto: u64) -> RunOutput {
    let list: Vec<String> = (1..=servers).map(|i| format!("\"h{i}\"")).collect();
    run_json(&format!(
        r#"{{"duration_ps": 10000000000000, "seed": 1,
        "network": {{"switch": {{"latency_ps": 500000, "buffer": {{"model": "static", "port_bytes": {buffer}}}}}}},
        "topology": {{"kind": "star", "hosts": {}, "link": {{"rate_bps": 10000000000, "delay_ps": 1000000}}}},
        "tcp": {{"min_rto_ps": {min_rto}, "rwnd_bytes": 262144}},
        "traffic": [{{"kind": "tcp_incast", "client": "h0", "servers": [{}], "response_bytes": {bytes}, "rounds": {rounds}}}],
        "stats": {{"queue_sample_interval_ps": 0}}}}"#,
        servers + 1,
        list.join(", ")
    ))
}

#[test]
fn incast_rounds_run_one_after_another_and_all_complete() {
    let out = incast(8, 100_000, 4_000_000, 3, 200_000_000_000);
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    assert_eq!(int(&out, "flows_total"), 24);
    assert_eq!(int(&out, "flows_completed"), 24);
    let starts = i64_col(&out, "flows", "start_ps");
    let ends: Vec<i64> = starts.iter().zip(i64_col(&out, "flows", "fct_ps")).map(|(s, f)| s + f).collect();
    let rounds = i64_col(&out, "flows", "round");
    for r in 1..3 {
        let prev_end = (0..24).filter(|&i| rounds[i] == r - 1).map(|i| ends[i]).max().unwrap();
        let start = (0..24).filter(|&i| rounds[i] == r).map(|i| starts[i]).min().unwrap();
        assert_eq!(start, prev_end, "round {r} starts when round {} ends", r - 1);
    }
    // A big buffer: no loss, no timeout; the job takes about 8 x 100 KB at 9.4 Gb/s.
    assert_eq!(int(&out, "packets_dropped"), 0);
    let job = (0..24).filter(|&i| rounds[i] == 0).map(|i| ends[i]).max().unwrap() as f64 * 1e-12;
    let ideal = 8.0 * 100_000.0 * 8.0 / GOODPUT_10G;
    assert!(job < 1.3 * ideal + 50e-6, "first round took {job:e} s, ideal {ideal:e} s");
}

#[test]
fn incast_into_a_small_buffer_times_out_and_pays_the_minimum_rto() {
    let out = incast(16, 200_000, 60_000, 1, 200_000_000_000);
    assert!(flag(&out, "conservation_ok"));
    let timeouts: i64 = i64_col(&out, "flows", "timeouts").iter().sum();
    assert!(timeouts > 0, "16 x 10 segments into a 40-packet buffer must time out");
    let fct_max = *i64_col(&out, "flows", "fct_ps").iter().max().unwrap() as f64 * 1e-12;
    assert!(fct_max > 0.2, "a timeout costs at least the 200 ms minimum RTO (max FCT {fct_max})");
    // With a 1 ms minimum RTO the same job finishes two orders of magnitude sooner.
    let fast = incast(16, 200_000, 60_000, 1, 1_000_000_000);
    let fct_fast = *i64_col(&fast, "flows", "fct_ps").iter().max().unwrap() as f64 * 1e-12;
    assert!(fct_fast < fct_max / 20.0, "{fct_fast} vs {fct_max}");
    // Unloaded, a packet takes 2 x 1 us of propagation + 500 ns of switch
    // latency + two serializations; queueing only adds to that.
    let lat = f64_col(&out, "flows", "latency_mean_ps");
    assert!(lat.iter().all(|&l| l >= 2_500_000.0), "{lat:?}");
}

#[test]
fn tcp_runs_are_deterministic() {
    let a = incast(16, 200_000, 60_000, 2, 1_000_000_000);
    let b = incast(16, 200_000, 60_000, 2, 1_000_000_000);
    assert_eq!(a.summary, b.summary);
    assert_eq!(format!("{:?}", a.tables["flows"]), format!("{:?}", b.tables["flows"]));
    assert_eq!(format!("{:?}", a.tables["throughput"]), format!("{:?}", b.tables["throughput"]));
}

#[test]
fn dctcp_holds_the_queue_near_k_with_full_link_use() {
    // The RFC baseline cuts the window at once; Linux's reduces it with PRR.
    for profile in ["rfc", "linux"] {
        dctcp_queue(profile);
    }
}

fn dctcp_queue(profile: &str) {
    // Four DCTCP flows, 40G senders into a 10G bottleneck with step marking at
    // K = 65 packets (100 KB). Propagation RTT 100 us: C x RTT = 81 packets.
    // DCTCP analysis (Alizadeh et al. 2010): Q_max = K + N, amplitude
    // A = sqrt(2 N (C RTT + K)) / 2 = 17 packets, so the queue stays within
    // about [K - A, K + N] = [48, 69] packets. The analysis assumes senders
    // that send segment by segment: TSO sizing and deferral are off (with
    // them, bursts of a third of the window dip the queue lower).
    let k = 65 * 1538u64;
    let srcs: Vec<String> = (1..=4).map(|i| format!("\"h{i}\"")).collect();
    let links: Vec<String> = (1..=4)
        .map(|i| format!(r#"{{"a": "h{i}", "b": "sw", "rate_bps": 40000000000, "delay_ps": 12500000}}"#))
        .collect();
    let nodes: Vec<String> = (0..=4).map(|i| format!(r#"{{"name": "h{i}", "kind": "host"}}"#)).collect();
    let out = run_json(&format!(
        r#"{{"duration_ps": 100000000000, "seed": 2,
        "network": {{"switch": {{"latency_ps": 0, "buffer": {{"model": "static", "port_bytes": 4000000}},
                     "ecn": {{"kmin_bytes": {k}, "kmax_bytes": {k}, "pmax": 1.0}}}}}},
        "topology": {{"kind": "explicit", "nodes": [{nodes}, {{"name": "sw", "kind": "switch"}}],
           "links": [{links}, {{"a": "sw", "b": "h0", "rate_bps": 10000000000, "delay_ps": 12500000}}]}},
        "tcp": {{"profile": "{profile}", "cc": "dctcp", "gso_max_bytes": 0}},
        "traffic": [{{"kind": "tcp_bulk", "src": [{srcs}], "dst": "h0", "duration_ps": 100000000000}}],
        "stats": {{"queue_sample_interval_ps": 10000000, "throughput_interval_ps": 10000000000}}}}"#,
        nodes = nodes.join(", "),
        links = links.join(", "),
        srcs = srcs.join(", "),
    ));
    assert!(flag(&out, "conservation_ok"));
    assert_eq!(int(&out, "packets_dropped"), 0, "DCTCP keeps the queue far below the buffer");
    // Queue at the bottleneck over the last 80 ms (after slow start).
    let names = &out.node_names;
    let sw = names.iter().position(|n| n == "sw").unwrap() as i64;
    let (t, node, bytes) =
        (i64_col(&out, "queues", "time_ps"), i64_col(&out, "queues", "node"), i64_col(&out, "queues", "bytes"));
    let port = i64_col(&out, "queues", "port");
    let to_h0 = 4; // the switch's fifth link (links are numbered in order)
    let samples: Vec<f64> = (0..t.len())
        .filter(|&i| node[i] == sw && port[i] == to_h0 && t[i] >= 20_000_000_000)
        .map(|i| bytes[i] as f64 / 1538.0)
        .collect();
    // Samples are written only while the queue is (or just was) non-empty.
    let expected = (80_000_000_000u64 / 10_000_000) as usize;
    assert!(samples.len() + 10 >= expected, "the queue never drained: {} of {expected} samples", samples.len());
    let mean = samples.iter().sum::<f64>() / samples.len() as f64;
    let min = samples.iter().copied().fold(f64::MAX, f64::min);
    eprintln!("DCTCP ({profile}): mean queue {mean:.1} packets, lowest sample {min:.1}");
    assert!((48.0..=69.0).contains(&mean), "mean queue {mean:.1} packets");
    // The queue never drains below K - A: the link stays busy.
    assert!(min >= 48.0, "lowest queue sample {min:.1} packets");
    // Full link use: goodput over the last 80 ms.
    let tt = i64_col(&out, "throughput", "time_ps");
    let tb = i64_col(&out, "throughput", "bytes");
    let late: i64 =
        tt.iter().zip(&tb).filter(|(t, _)| **t >= 20_000_000_000 && **t < 100_000_000_000).map(|(_, b)| *b).sum();
    let goodput = late as f64 * 8.0 / 0.08;
    assert!(goodput >= 0.95 * GOODPUT_10G, "goodput {:.3} Gb/s", goodput / 1e9);
    assert!(i64_col(&out, "flows", "ecn_marked").iter().all(|&m| m > 0));
}

/// A paced TCP flow whose window (or sending time) runs out while the pacer
/// would allow the next segment: the run goes on in simulated time and the
/// flow completes (the pacing timer once re-armed itself at a passed deadline
/// forever; the stall guard would now fail the run instead).
#[test]
fn paced_flows_limited_by_their_window_or_sending_time_complete() {
    let ms = 1_000_000_000u64;
    let tcp = |pacing_bps: u64| format!(r#"{{"pacing_bps": {pacing_bps}, "pacing": "fixed"}}"#);
    // Pacing faster than the link: the window fills at once.
    let out = star_bulk(1_000_000, 1_000_000, Some(100_000), None, &tcp(20_000_000_000), 0.0);
    assert_eq!(int(&out, "flows_completed"), 1);
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    // A long round trip (4 ms): the initial window is sent within microseconds
    // and runs out in slow start, round after round.
    let out = star_bulk(ms, 100_000_000, Some(2_000_000), None, &tcp(10_000_000_000), 0.0);
    assert_eq!(int(&out, "flows_completed"), 1);
    let fct = i64_col(&out, "flows", "fct_ps")[0];
    assert!(fct > 5 * 4 * ms as i64 && fct < 20 * 4 * ms as i64, "fct {fct}: 5 to 20 round trips");
    // A timed paced flow: its sending time ends with data in flight.
    let out = star_bulk(1_000_000, 1_000_000, None, Some(ms), &tcp(2_000_000_000), 0.0);
    assert_eq!(int(&out, "flows_completed"), 1);
    let delivered = i64_col(&out, "flows", "app_bytes_delivered")[0];
    // 1 ms at 2 Gb/s of frames carries about 238 KB of payload.
    assert!((200_000..=250_000).contains(&delivered), "{delivered}");
    assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    // Linux's pacing at cwnd / SRTT, capped by the rate: the pacer's deadline
    // passes while the window or the sending time holds the flow, and the
    // timer must not fire again at that instant.
    for (size, stop) in [(Some(2_000_000), None), (None, Some(ms))] {
        let out =
            star_bulk(1_000_000, 1_000_000, size, stop, r#"{"pacing_bps": 2000000000, "pacing": "internal"}"#, 0.0);
        assert_eq!(int(&out, "flows_completed"), 1);
        assert!(flag(&out, "conservation_ok") && flag(&out, "drained"));
    }
}
