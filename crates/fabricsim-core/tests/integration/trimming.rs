//! Packet trimming (`network.switch.trimming`) in an incast: a switch forwards
//! the header of every data packet its buffer refuses, the selective-repeat
//! receiver NACKs that PSN at once, and nothing is lost for good; against
//! the same incast with drops, and against the closed form of a link busy
//! from the first to the last byte.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::RunOutput;

const G100: u64 = 100_000_000_000;
/// Payload and frame bytes of a data packet (4096 B MTU, 64 B of headers).
const MTU: u64 = 4096;
const FRAME: u64 = MTU + 64;

/// `n` senders into h0 on a star of 100G, 1 us links, no framing overhead:
/// each switch port holds `queue` bytes of data in its class and 25 KB more
/// for other classes (the trimmed headers); every sender writes `bytes` in one
/// QP with selective repeat (dupthresh 3, 250 us timeout) under `cc`.
fn incast(n: usize, bytes: u64, cc: &str, trimming: bool, queue: u64) -> RunOutput {
    let src: Vec<String> = (1..=n).map(|i| format!("\"h{i}\"")).collect();
    let trim = if trimming { r#", "trimming": {"header_bytes": 64}"# } else { "" };
    run_json(&format!(
        r#"{{"duration_ps": 100000000000, "seed": 1,
        "network": {{"ethernet_overhead_bytes": 0, "switch": {{"latency_ps": 0,
            "buffer": {{"model": "static", "port_bytes": {}, "queue_bytes": {queue}}},
            "ecn": {{"kmin_bytes": 20000, "kmax_bytes": 80000, "pmax": 1.0}}{trim}}}}},
        "topology": {{"kind": "star", "hosts": {}, "link": {{"rate_bps": {G100}, "delay_ps": 1000000}}}},
        "roce": {{"mtu_bytes": {MTU}, "header_bytes": 64, "recovery": "selective_repeat", "dupthresh": 3,
                  "rto_ps": 250000000, "ecn": true, {cc}}},
        "traffic": [{{"kind": "rdma_write", "src": [{}], "dst": "h0", "messages": 1, "message_bytes": {bytes}}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 1000000000}}}}"#,
        queue + 25_000,
        n + 1,
        src.join(", ")
    ))
}

const LINE: &str = r#""dcqcn": {"enabled": false}"#;
const NSCC: &str = r#""cc": "nscc""#;

fn check_ok(out: &RunOutput, n: usize) {
    assert!(flag(out, "conservation_ok"), "conservation");
    assert!(flag(out, "buffer_accounting_ok"), "buffer accounting");
    assert_eq!(int(out, "rdma_qps_completed"), n as i64);
}

/// The time the receiver's link needs for every data frame once: the
/// largest completion time cannot be shorter.
fn wire_time_ps(n: usize, bytes: u64) -> f64 {
    (n as u64 * bytes.div_ceil(MTU) * FRAME) as f64 * 8.0 / G100 as f64 * 1e12
}

#[test]
fn line_rate_senders_lose_nothing_for_good_and_resend_each_trimmed_packet() {
    let (n, bytes) = (8, 1_000_000);
    let dropped = incast(n, bytes, LINE, false, 100_000);
    let trimmed = incast(n, bytes, LINE, true, 100_000);
    check_ok(&dropped, n);
    check_ok(&trimmed, n);
    // Every packet the buffer refuses becomes a header; the headers have
    // room of their own, so nothing is dropped.
    assert!(int(&dropped, "packets_dropped") > 1000);
    assert_eq!(int(&trimmed, "packets_dropped"), 0);
    let trims = int(&trimmed, "packets_trimmed");
    assert!(trims > 1000, "{trims}");
    // A full frame loses its payload; a message's shorter last one less.
    let cut = int(&trimmed, "bytes_trimmed");
    assert_eq!(i64_col(&trimmed, "trims", "bytes_cut").iter().sum::<i64>(), cut);
    assert!(cut <= trims * (FRAME - 64) as i64 && cut > trims * (FRAME - 64) as i64 * 99 / 100, "{cut}");
    // The receiver saw every header, per flow, and the trims table agrees.
    let headers: i64 = i64_col(&trimmed, "flows", "trimmed_headers").iter().sum();
    assert_eq!(headers, trims);
    assert_eq!(i64_col(&trimmed, "trims", "packets").iter().sum::<i64>(), trims);
    // Each trimmed packet is resent once; only timeouts (a packet trimmed
    // again and again while line-rate senders keep the queue full) resend more.
    let resent = int(&trimmed, "rdma_retransmits");
    let timeouts = int(&trimmed, "rdma_timeouts");
    assert!(resent >= trims && resent <= trims + timeouts * 64, "resent {resent}, trims {trims}, timeouts {timeouts}");
    assert!(timeouts < int(&dropped, "rdma_timeouts"), "{timeouts}");
    // The loss is known one path delay after it happens instead of at a
    // timeout: the incast ends far sooner.
    let last = |o: &RunOutput| *i64_col(o, "flows", "fct_ps").iter().max().unwrap() as f64;
    assert!(last(&trimmed) < 0.5 * last(&dropped), "{} vs {}", last(&trimmed), last(&dropped));
}

#[test]
fn nscc_with_trimming_finishes_the_incast_at_the_wire_time_without_timeouts() {
    let (n, bytes) = (16, 1_000_000);
    let out = incast(n, bytes, NSCC, true, 100_000);
    check_ok(&out, n);
    assert_eq!(int(&out, "packets_dropped"), 0);
    assert_eq!(int(&out, "rdma_timeouts"), 0);
    let last = *i64_col(&out, "flows", "fct_ps").iter().max().unwrap() as f64;
    let ideal = wire_time_ps(n, bytes);
    let trims = int(&out, "packets_trimmed") as f64;
    // The receiver's link carries every frame once, the trimmed headers,
    // and the frames resent after a trim: within 3 % of that closed form.
    let with_trims = ideal + trims * ((64 + FRAME) * 8) as f64 / G100 as f64 * 1e12;
    eprintln!("nscc incast: last completion {:.4} of the wire time, {trims} trims", last / ideal);
    assert!(last >= ideal, "{last} < {ideal}");
    assert!(last < 1.03 * with_trims, "{last} vs {with_trims}");
    // A trim is a loss to NSCC (quick adapt), not an answered packet whose
    // short delay would raise the window: the windows come down, and after
    // the first windows' burst few packets are trimmed (a quarter at most;
    // answered as packets, they are trimmed many times over).
    let packets = (n as u64 * bytes.div_ceil(MTU)) as f64;
    assert!(trims < 0.25 * packets, "{trims} trims for {packets} packets");
    // Without trimming the same incast drops and waits for timeouts.
    let dropped = incast(n, bytes, NSCC, false, 100_000);
    check_ok(&dropped, n);
    assert!(int(&dropped, "rdma_timeouts") > 0);
    let last_dropped = *i64_col(&dropped, "flows", "fct_ps").iter().max().unwrap() as f64;
    assert!(last < last_dropped, "{last} vs {last_dropped}");
}

#[test]
fn a_go_back_n_receiver_discards_trimmed_headers() {
    // A RoCEv2 NIC that knows nothing of trimming drops the short packet;
    // the gap is found at the next packet, as for a drop.
    let src = r#"{"duration_ps": 100000000000, "seed": 1,
        "network": {"ethernet_overhead_bytes": 0, "switch": {"latency_ps": 0,
            "buffer": {"model": "static", "port_bytes": 125000, "queue_bytes": 100000},
            "trimming": {"header_bytes": 64}}},
        "topology": {"kind": "star", "hosts": 5, "link": {"rate_bps": 100000000000, "delay_ps": 1000000}},
        "roce": {"mtu_bytes": 4096, "header_bytes": 64, "dcqcn": {"enabled": false}, "rto_ps": 250000000},
        "traffic": [{"kind": "rdma_write", "src": ["h1", "h2", "h3", "h4"], "dst": "h0", "messages": 1, "message_bytes": 500000}],
        "stats": {"queue_sample_interval_ps": 0, "throughput_interval_ps": 1000000000}}"#;
    let out = run_json(src);
    check_ok(&out, 4);
    let trims = int(&out, "packets_trimmed");
    assert!(trims > 0);
    assert_eq!(i64_col(&out, "flows", "trimmed_headers").iter().sum::<i64>(), trims);
    // No NACK answers a header: every NACK is the go-back-N one at a gap,
    // at most one per expected PSN, so fewer than the headers.
    assert!(int(&out, "rdma_nacks") < trims, "{} nacks, {trims} trims", int(&out, "rdma_nacks"));
}

#[test]
fn bad_trimming_settings_name_the_field() {
    let src = |t: &str| {
        format!(
            r#"{{"duration_ps": 1000000, "network": {{"classes": 4, "switch": {{"trimming": {t}}}}},
            "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": 1000000000, "delay_ps": 1000}}}},
            "traffic": []}}"#
        )
    };
    for (t, field) in [
        (r#"{"header_bytes": 32}"#, "network.switch.trimming.header_bytes"),
        (r#"{"class": 4}"#, "network.switch.trimming.class"),
    ] {
        let sc = fabricsim_core::Scenario::from_json(&src(t)).unwrap();
        let e = fabricsim_core::Simulation::new(&sc).err().unwrap().to_string();
        assert!(e.contains(field), "{e}");
    }
}
