//! The NSCC-like controller (`roce.cc: nscc`) against closed forms: a lone
//! flow fills its link with no standing queue, an incast converges to fair
//! shares with the queue held near the delay target; its entropy spraying
//! reaches full bisection where per-flow ECMP collides, and its path
//! reaction moves traffic off a degraded spine link.

use super::{derangement, flag, i64_col, int, run_json};
use fabricsim_core::stats::{Column, RunOutput};
use fabricsim_core::{Scenario, Simulation};

const G100: u64 = 100_000_000_000;

fn f64_col(out: &RunOutput, table: &str, col: &str) -> Vec<f64> {
    match out.tables[table].column(col) {
        Some(Column::F64(v)) => v.clone(),
        other => panic!("{table}.{col} is {other:?}"),
    }
}

fn check_ok(out: &RunOutput) {
    assert!(flag(out, "conservation_ok"), "conservation");
    assert!(flag(out, "buffer_accounting_ok"), "buffer accounting");
    assert!(flag(out, "drained"), "drained");
}

/// Jain's fairness index of `x`.
fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

/// `n` senders into h0 on a star of 100G, 1 us links (shared 12 MB buffer,
/// ECN marking from `kmin` to `kmax` bytes), one QP each of `bytes`.
fn star(n: usize, bytes: u64, cc: &str, kmin: u64, kmax: u64) -> RunOutput {
    let src: Vec<String> = (1..=n).map(|i| format!("\"h{i}\"")).collect();
    run_json(&format!(
        r#"{{"duration_ps": 100000000000, "seed": 1,
        "network": {{"switch": {{"buffer": {{"model": "shared", "total_bytes": 12000000, "cell_bytes": 256, "alpha": [8.0]}},
                     "ecn": {{"kmin_bytes": {kmin}, "kmax_bytes": {kmax}, "pmax": 1.0}}}}}},
        "topology": {{"kind": "star", "hosts": {}, "link": {{"rate_bps": {G100}, "delay_ps": 1000000}}}},
        "roce": {cc},
        "traffic": [{{"kind": "rdma_write", "src": [{}], "dst": "h0", "messages": 1, "message_bytes": {bytes}}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 10000000}}}}"#,
        n + 1,
        src.join(", ")
    ))
}

/// The switch's port towards h0: its mean queue delay, ps.
fn bottleneck_qdelay(out: &RunOutput) -> f64 {
    f64_col(out, "links", "queue_delay_mean_ps").into_iter().fold(0.0, f64::max)
}

/// Frame bytes on the wire of `payload` bytes in 1024-byte packets (62 B of
/// headers, 20 B of Ethernet framing each).
fn wire_bytes(payload: u64) -> f64 {
    payload as f64 / 1024.0 * 1106.0
}

#[test]
fn a_lone_nscc_flow_runs_at_line_rate_with_no_standing_queue() {
    let out = star(1, 50_000_000, r#"{"cc": "nscc"}"#, 20_000, 80_000);
    check_ok(&out);
    assert_eq!(int(&out, "rdma_qps_completed"), 1);
    assert_eq!(int(&out, "packets_dropped"), 0);
    let fct = i64_col(&out, "flows", "fct_ps")[0] as f64;
    let ideal = wire_bytes(50_000_000) * 8.0 / G100 as f64 * 1e12;
    let q = bottleneck_qdelay(&out);
    eprintln!("lone flow: {:.4} of line rate, mean queue delay {q:.0} ps", ideal / fct);
    // Line rate: the window (one BDP) keeps the pipe full ...
    assert!(ideal / fct > 0.99, "{}", ideal / fct);
    // ... and holds no queue: under one frame's time at 100G (88.5 ns).
    assert!(q < 1106.0 * 8.0 / 100.0 * 1000.0, "{q}");
    assert_eq!(i64_col(&out, "flows", "rate_cuts"), vec![0]);
}

/// Per-flow bytes delivered in the throughput bins of `[from, to)`.
fn shares(out: &RunOutput, flows: usize, from: u64, to: u64) -> Vec<f64> {
    let (t, f, b) = (
        i64_col(out, "throughput", "time_ps"),
        i64_col(out, "throughput", "flow_id"),
        i64_col(out, "throughput", "bytes"),
    );
    let mut x = vec![0.0; flows];
    for i in 0..t.len() {
        if t[i] as u64 >= from && (t[i] as u64) < to {
            x[f[i] as usize] += b[i] as f64;
        }
    }
    x
}

/// The base RTT of a star's two-hop path, closed form: four 1 us links, two
/// switch traversals of 500 ns, a data frame (1,106 B on the wire) and an
/// ACK (86 B) serialized at 100G at each of their two hops.
fn star_base_rtt_ps() -> f64 {
    4e6 + 2.0 * 500e3 + 2.0 * (1106.0 + 86.0) * 8.0 / 100.0 * 1000.0
}

/// An 8:1 incast of 20 MB per QP under `cc`: (Jain's index over the bytes
/// each QP delivered from 2 ms until the first finished, the bottleneck's
/// mean queue delay in ps, the job's fraction of the line-rate ideal, drops).
fn incast(cc: &str) -> (f64, f64, f64, i64) {
    let n = 8;
    let out = star(n, 20_000_000, cc, 10_000, 40_000);
    check_ok(&out);
    assert_eq!(int(&out, "rdma_qps_completed"), n as i64);
    let fct = i64_col(&out, "flows", "fct_ps");
    let first = *fct.iter().min().unwrap() as u64;
    let x = shares(&out, n, 2_000_000_000, first - first % 10_000_000 - 10_000_000);
    let last = *fct.iter().max().unwrap() as f64;
    let ideal = wire_bytes(20_000_000 * n as u64) * 8.0 / G100 as f64 * 1e12;
    let r = (jain(&x), bottleneck_qdelay(&out), ideal / last, int(&out, "packets_dropped"));
    eprintln!(
        "8:1 incast, {cc}: Jain {:.4}, mean queue delay {:.0} ps, job {:.4} of ideal, {} dropped",
        r.0, r.1, r.2, r.3
    );
    r
}

#[test]
fn an_nscc_incast_converges_to_fair_shares_with_the_queue_near_the_target() {
    let (j, q, goodput, drops) = incast(r#"{"cc": "nscc", "recovery": "selective_repeat"}"#);
    // The standing queue: decreases start once the delay passes the target
    // (every packet is marked well below it), increases go on below it, so
    // the queue sits at target_qdelay x base RTT: 0.75 x 5.19 us = 3.89 us,
    // 48.7 KB at 100G.
    let target = 0.75 * star_base_rtt_ps();
    eprintln!("target {target:.0} ps; mean queue delay / target {:.3}", q / target);
    assert!(q > 0.7 * target && q < 1.3 * target, "{q} ps vs target {target} ps");
    // Additive increase the same for every flow, decrease in proportion: fair shares.
    assert!(j > 0.98, "Jain {j}");
    assert!(goodput > 0.97, "{goodput}");
    assert_eq!(drops, 0);
}

#[test]
fn the_incast_side_by_side_with_dcqcn_and_hpcc() {
    let nscc = incast(r#"{"cc": "nscc", "recovery": "selective_repeat"}"#);
    let dcqcn = incast(r#"{"cc": "dcqcn", "recovery": "selective_repeat"}"#);
    let hpcc = incast(r#"{"cc": "hpcc", "recovery": "selective_repeat"}"#);
    // HPCC's queue is the shortest (it aims below full utilisation); NSCC
    // holds its target; all three share fairly and drop nothing.
    assert!(hpcc.1 < nscc.1, "{hpcc:?} {nscc:?}");
    for r in [nscc, dcqcn, hpcc] {
        assert_eq!(r.3, 0);
    }
}

const FT_HOSTS: usize = 16;
const FT_BYTES: u64 = 4_000_000;
const FT_FROM: u64 = 50_000_000;
const FT_TO: u64 = 300_000_000;

/// A k=4 fat-tree (16 hosts, 100G, 1 us links, ECN 20-80 KB): every host
/// writes 4 MB to its partner in a permutation, under NSCC with `params`.
/// The fraction of full bisection: payload bytes delivered from 50 to 300 us
/// over what 16 hosts take in at the most their links allow. Each host's
/// link also carries the ACKs (86 B on the wire, one per packet) of the QP
/// it receives, so data gets 1,106 of every 1,192 bytes of a link.
fn ft_permutation_with(params: &str, dupthresh: u32) -> (f64, RunOutput) {
    ft_permutation_roce(&format!(
        r#"{{"cc": "nscc", "recovery": "selective_repeat", "dupthresh": {dupthresh}, "cc_params": {params}}}"#
    ))
}

/// The same under the `roce` section `roce`.
fn ft_permutation_roce(roce: &str) -> (f64, RunOutput) {
    let p = derangement(FT_HOSTS, 7);
    let traffic: Vec<String> = (0..FT_HOSTS)
        .map(|i| {
            format!(
                r#"{{"kind": "rdma_write", "src": ["h{i}"], "dst": "h{}", "messages": 1, "message_bytes": {FT_BYTES}}}"#,
                p[i]
            )
        })
        .collect();
    let out = run_json(&format!(
        r#"{{"duration_ps": 20000000000, "seed": 1,
        "network": {{"switch": {{"ecn": {{"kmin_bytes": 20000, "kmax_bytes": 80000, "pmax": 1.0}}}}}},
        "topology": {{"kind": "fat_tree", "k": 4, "link": {{"rate_bps": {G100}, "delay_ps": 1000000}}}},
        "roce": {roce},
        "traffic": [{}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 10000000}}}}"#,
        traffic.join(", ")
    ));
    check_ok(&out);
    assert_eq!(int(&out, "rdma_qps_completed"), FT_HOSTS as i64);
    let got: f64 = shares(&out, FT_HOSTS, FT_FROM, FT_TO).iter().sum();
    let window_s = (FT_TO - FT_FROM) as f64 * 1e-12;
    // Payload bytes per second a host link carries: 1,024 of every 1,106 + 86 on the wire.
    let full = FT_HOSTS as f64 * G100 as f64 / 8.0 * window_s * 1024.0 / (1106.0 + 86.0);
    (got / full, out)
}

#[test]
fn entropy_spraying_reaches_full_bisection_where_per_flow_ecmp_collides() {
    // Reordering across paths reaches beyond a few packets: a hole counts as
    // lost only once 64 later packets are reported held.
    let (reps, out) = ft_permutation_with(r#"{"entropies": 256}"#, 64);
    let (oblivious, obl) = ft_permutation_with(r#"{"entropies": 256, "path_reaction": false}"#, 64);
    let (ecmp, _) = ft_permutation_with(r#"{"entropies": 1}"#, 64);
    // DCQCN and HPCC on the same permutation: one path per QP (ECMP).
    let (dcqcn, _) = ft_permutation_roce(r#"{"cc": "dcqcn", "recovery": "selective_repeat"}"#);
    let (hpcc, _) = ft_permutation_roce(r#"{"cc": "hpcc", "recovery": "selective_repeat"}"#);
    eprintln!("k=4 permutation, per-flow ECMP: DCQCN {dcqcn:.4}, HPCC {hpcc:.4} of full bisection");
    assert!(reps > dcqcn && reps > hpcc, "{reps} {dcqcn} {hpcc}");
    eprintln!(
        "k=4 permutation: REPS-like entropies {reps:.4} of full bisection ({} retransmits), \
         oblivious spraying {oblivious:.4} ({} retransmits), per-flow ECMP {ecmp:.4}",
        int(&out, "rdma_retransmits"),
        int(&obl, "rdma_retransmits")
    );
    // Within 5 % of full bisection; recycling unmarked entropies beats
    // oblivious spraying, and per-flow ECMP collides.
    assert!(reps > 0.95 && reps < 1.01, "{reps}");
    assert!(reps > oblivious + 0.05, "{reps} vs {oblivious}");
    assert!(ecmp < 0.7, "{ecmp}");
}

/// Two leaves of four hosts and four spines, all 100G and 1 us, the link
/// leaf0-spine0 degraded to 25G throughout; h0..h3 each write 4 MB to
/// h4..h7 under NSCC with `params`. The share of leaf0's uplink bytes that
/// went to spine0, and the job's end.
fn degraded(params: &str) -> (f64, i64) {
    let out = run_json(&format!(
        r#"{{"duration_ps": 20000000000, "seed": 1,
        "network": {{"switch": {{"ecn": {{"kmin_bytes": 20000, "kmax_bytes": 80000, "pmax": 1.0}}}}}},
        "topology": {{"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 4,
                     "host_link": {{"rate_bps": {G100}, "delay_ps": 1000000}},
                     "fabric_link": {{"rate_bps": {G100}, "delay_ps": 1000000}}}},
        "failures": [{{"between": ["leaf0", "spine0"], "at_ps": 0, "rate_bps": 25000000000}}],
        "roce": {{"cc": "nscc", "recovery": "selective_repeat", "dupthresh": 64, "cc_params": {params}}},
        "traffic": [{}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#,
        (0..4)
            .map(|i| format!(
                r#"{{"kind": "rdma_write", "src": ["h{i}"], "dst": "h{}", "messages": 1, "message_bytes": 4000000}}"#,
                i + 4
            ))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    check_ok(&out);
    assert_eq!(int(&out, "rdma_qps_completed"), 4);
    let names = &out.node_names;
    let id = |n: &str| names.iter().position(|x| x == n).unwrap() as i64;
    let (src, dst, bytes) =
        (i64_col(&out, "links", "src"), i64_col(&out, "links", "dst"), i64_col(&out, "links", "bytes"));
    let up = |s: usize| -> i64 {
        (0..src.len()).filter(|&i| src[i] == id("leaf0") && dst[i] == id(&format!("spine{s}"))).map(|i| bytes[i]).sum()
    };
    let total: i64 = (0..4).map(up).sum();
    let end = *i64_col(&out, "flows", "fct_ps").iter().max().unwrap();
    (up(0) as f64 / total as f64, end)
}

#[test]
fn the_path_reaction_moves_traffic_off_a_degraded_spine_link() {
    let (reps, reps_end) = degraded(r#"{"entropies": 256}"#);
    let (oblivious, obl_end) = degraded(r#"{"entropies": 256, "path_reaction": false}"#);
    eprintln!(
        "leaf0-spine0 at 25G: share of leaf0's uplink bytes on it {reps:.4} with the path reaction \
         (job {:.1} us), {oblivious:.4} without (job {:.1} us)",
        reps_end as f64 / 1e6,
        obl_end as f64 / 1e6
    );
    // Without the reaction every entropy is as likely: about 1/4 of the bytes.
    assert!(oblivious > 0.2, "{oblivious}");
    // With it, entropies hashed onto the slow link come back marked and are
    // replaced: well below 1/4, near the link's share of the capacity (25/325).
    assert!(reps < 0.125, "{reps}");
    assert!(reps_end < obl_end, "{reps_end} vs {obl_end}");
}

#[test]
fn bad_nscc_settings_name_the_field() {
    let err = |roce: &str| {
        let sc = Scenario::from_json(&format!(
            r#"{{"duration_ps": 1000000000, "seed": 1,
            "topology": {{"kind": "star", "hosts": 2, "link": {{"rate_bps": {G100}, "delay_ps": 1000000}}}},
            "roce": {roce},
            "traffic": [{{"kind": "rdma_write", "src": ["h1"], "dst": "h0", "message_bytes": 10000}}]}}"#
        ))
        .unwrap();
        Simulation::new(&sc).err().expect("rejected").to_string()
    };
    // Spreading over paths reorders packets: go-back-N is refused.
    let e = err(r#"{"cc": "nscc", "cc_params": {"entropies": 8}}"#);
    assert!(e.contains("roce.recovery") && e.contains("selective_repeat"), "{e}");
    let e = err(r#"{"cc": "nscc", "cc_params": {"entropies": 0}}"#);
    assert!(e.contains("roce.cc_params.entropies") && e.contains("1 to 65536"), "{e}");
    let e = err(r#"{"cc": "nscc", "cc_params": {"target_delay": 1}}"#);
    assert!(e.contains("roce.cc_params.target_delay"), "{e}");
    let e = err(r#"{"cc": "nscc", "cc_params": {"gamma": 2.0}}"#);
    assert!(e.contains("roce.cc_params.gamma"), "{e}");
}

#[test]
fn a_sprayed_nscc_run_is_deterministic_with_the_seed() {
    let run = || degraded(r#"{"entropies": 64}"#);
    assert_eq!(run(), run());
}

/// Two QPs of 4 MB into h0 over links losing 0.2 % of frames, under NSCC
/// with `recovery`: (QPs completed, retransmissions, window cuts).
fn lossy(recovery: &str) -> (i64, i64, i64) {
    let out = run_json(&format!(
        r#"{{"duration_ps": 50000000000, "seed": 3,
        "topology": {{"kind": "star", "hosts": 3, "link": {{"rate_bps": {G100}, "delay_ps": 1000000, "loss": 0.002}}}},
        "roce": {{"cc": "nscc", "recovery": "{recovery}", "rto_ps": 200000000}},
        "traffic": [{{"kind": "rdma_write", "src": ["h1", "h2"], "dst": "h0", "messages": 4, "message_bytes": 1000000}}],
        "stats": {{"queue_sample_interval_ps": 0, "throughput_interval_ps": 0}}}}"#
    ));
    check_ok(&out);
    let cuts: i64 = i64_col(&out, "flows", "rate_cuts").iter().sum();
    (int(&out, "rdma_qps_completed"), int(&out, "rdma_retransmits"), cuts)
}

#[test]
fn losses_shrink_the_window_under_either_recovery() {
    for recovery in ["selective_repeat", "go_back_n"] {
        let (done, retx, cuts) = lossy(recovery);
        eprintln!("lossy links, {recovery}: {retx} retransmits, {cuts} window cuts");
        assert_eq!(done, 2);
        // No switch marks ECN, and the queue two windows of one BDP hold
        // (one base RTT) stays below quick adapt's threshold (4 x 0.75 base
        // RTTs): every cut is a reaction to a loss or a timeout.
        assert!(retx > 0 && cuts > 0, "{recovery}: {retx} {cuts}");
    }
}
