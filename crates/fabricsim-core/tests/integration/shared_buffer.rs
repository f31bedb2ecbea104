//! Shared buffer with dynamic thresholds: steady-state queue lengths and cell
//! rounding, end to end.

use super::{flag, i64_col, int, run_json};
use fabricsim_core::stats::{Column, RunOutput};

const CELL: u64 = 256;
/// 6 cells exactly, so queue bytes convert to cells without rounding.
const FRAME: u64 = 1536;

/// Star switch whose first `s` hosts each receive two line-rate CBR streams
/// (2:1 overload) for `duration_ps`. Returns the run output.
fn congested(s: usize, alpha: f64, total_bytes: u64, frame: u64, duration_ps: u64) -> RunOutput {
    let mut traffic = Vec::new();
    for i in 0..s {
        let (a, b) = (s + 2 * i, s + 2 * i + 1);
        traffic.push(format!(
            r#"{{"kind": "udp_cbr", "src": ["h{a}", "h{b}"], "dst": "h{i}", "load": 1.0, "frame_bytes": {frame}}}"#
        ));
    }
    run_json(&format!(
        r#"{{"duration_ps": {duration_ps},
        "network": {{"classes": 1, "switch": {{"latency_ps": 0,
            "buffer": {{"model": "shared", "total_bytes": {total_bytes}, "cell_bytes": {CELL}, "alpha": [{alpha}]}}}}}},
        "topology": {{"kind": "star", "hosts": {hosts}, "link": {{"rate_bps": 10000000000, "delay_ps": 100000}}}},
        "traffic": [{traffic}]}}"#,
        hosts = 3 * s,
        traffic = traffic.join(", ")
    ))
}

/// Per congested queue (the switch's egress ports towards h0..h{s-1}): the
/// high-water mark and the lowest and highest sampled occupancy at or after
/// `from_ps`, all in bytes.
fn switch_queues(out: &RunOutput, s: usize, from_ps: u64) -> Vec<(u64, u64, u64)> {
    let Some(Column::Cat { codes, labels }) = out.tables["nodes"].column("name") else { panic!("nodes.name") };
    let id = |name: &str| codes[labels.iter().position(|l| l == name).unwrap()] as i64;
    let sw = id("sw0");
    let (src, dst) = (i64_col(out, "links", "src"), i64_col(out, "links", "dst"));
    let src_port = i64_col(out, "links", "src_port");
    let hw = i64_col(out, "links", "queue_high_water_bytes");
    let (t, node, port, bytes) = (
        i64_col(out, "queues", "time_ps"),
        i64_col(out, "queues", "node"),
        i64_col(out, "queues", "port"),
        i64_col(out, "queues", "bytes"),
    );
    (0..s)
        .map(|i| {
            let h = id(&format!("h{i}"));
            let row = (0..src.len()).find(|&r| src[r] == sw && dst[r] == h).unwrap();
            let steady: Vec<u64> = (0..t.len())
                .filter(|&k| node[k] == sw && port[k] == src_port[row] && t[k] as u64 >= from_ps)
                .map(|k| bytes[k] as u64)
                .collect();
            assert!(steady.len() > 10, "too few samples");
            (hw[row] as u64, *steady.iter().min().unwrap(), *steady.iter().max().unwrap())
        })
        .collect()
}

fn switch_high_water(out: &RunOutput, s: usize) -> Vec<u64> {
    switch_queues(out, s, 0).into_iter().map(|q| q.0).collect()
}

#[test]
fn congested_queues_settle_at_the_dynamic_threshold() {
    // B = 6000 cells of 256 B; each queue is fed at twice its drain rate for 4 ms,
    // long enough for the largest share (8B/9 = 1.37 MB) to fill at 10 Gb/s in
    // about 1.1 ms. Queues are sampled every 10 us; the second half is steady state.
    let b_cells = 6000u64;
    let duration = 4_000_000_000u64;
    let cases: [(usize, f64); 10] =
        [(1, 1.0), (2, 1.0), (4, 1.0), (1, 2.0), (2, 2.0), (1, 8.0), (2, 8.0), (4, 8.0), (1, 0.125), (4, 0.125)];
    for (s, alpha) in cases {
        let out = congested(s, alpha, b_cells * CELL, FRAME, duration);
        assert!(flag(&out, "conservation_ok") && flag(&out, "buffer_accounting_ok") && flag(&out, "drained"));
        assert!(int(&out, "packets_dropped") > 0);
        let expect = alpha * b_cells as f64 / (1.0 + alpha * s as f64);
        let packet = (FRAME / CELL) as f64;
        // Admission compares the occupancy *after* the packet with the threshold
        // computed from the free space *before* it, and queues move in whole
        // packets (6 cells): the shared state sits within one packet plus one
        // cell of the fluid fixed point.
        let tol = packet + 1.0;
        // Each dequeue frees a packet and raises every threshold by alpha
        // packets. The CBR streams run in lockstep, so the S queues dequeue
        // together and the queue whose arrivals come first in a period keeps
        // the extra room: single queues settle in a staircase up to alpha * S
        // packets wide around the fixed point, while their mean stays on it.
        let tol_queue = tol.max(alpha * s as f64 * packet + 1.0);
        let queues = switch_queues(&out, s, duration / 2);
        let mut sum = 0.0;
        for (i, &(hw, lo, hi)) in queues.iter().enumerate() {
            assert_eq!((hw % CELL, lo % CELL, hi % CELL), (0, 0, 0));
            let (hw, lo, hi) = ((hw / CELL) as f64, (lo / CELL) as f64, (hi / CELL) as f64);
            println!("S={s} alpha={alpha} queue {i}: steady {lo}..{hi} cells, high water {hw}, theory {expect:.1}");
            assert!(hi - lo <= packet, "S={s} alpha={alpha}: queue {i} is not steady: {lo}..{hi}");
            assert!(
                (lo - expect).abs() <= tol_queue && (hi - expect).abs() <= tol_queue,
                "S={s} alpha={alpha}: {lo}..{hi} cells vs {expect:.1}"
            );
            assert!(hw >= hi && hw <= expect + tol_queue, "S={s} alpha={alpha}: high water {hw} vs {expect:.1}");
            sum += hi;
        }
        let mean = sum / s as f64;
        println!("S={s} alpha={alpha}: mean {mean:.1} cells, theory {expect:.1}");
        assert!((mean - expect).abs() <= tol, "S={s} alpha={alpha}: mean {mean:.1} cells vs {expect:.1}");
        if s == 1 {
            assert!((mean - expect).abs() <= 2.0, "S=1 alpha={alpha}: {mean} cells vs {expect:.1}");
        }
    }
}

#[test]
fn small_frames_waste_cells() {
    // Same buffer and alpha; 64 B frames take one 256 B cell each (25% used), 1536 B
    // frames fill their 6 cells exactly, so the queue holds far fewer bytes of
    // small frames.
    let total = 2000 * CELL;
    let small = switch_high_water(&congested(1, 1.0, total, 64, 1_000_000_000), 1)[0];
    let large = switch_high_water(&congested(1, 1.0, total, FRAME, 1_000_000_000), 1)[0];
    println!("high water: 64 B frames {small} B, {FRAME} B frames {large} B");
    // Both reach about B/2 = 1000 cells.
    assert!((large / CELL).abs_diff(1000) <= 7, "{large}");
    assert!(small.abs_diff(1000 * 64) <= 7 * 64, "{small}");
    assert!(small * 3 < large);
}

#[test]
fn shared_buffer_errors_name_the_field() {
    let sc = fabricsim_core::Scenario::from_json(
        r#"{"duration_ps": 1000,
        "network": {"switch": {"buffer": {"model": "shared", "total_bytes": 100000, "alpha": [3]}}},
        "topology": {"kind": "star", "hosts": 2, "link": {"rate_bps": 10000000000, "delay_ps": 0}}}"#,
    )
    .unwrap();
    let err = fabricsim_core::Simulation::new(&sc).err().unwrap().to_string();
    assert!(err.starts_with("network.switch.buffer.alpha: 3 is not an allowed alpha; allowed: 1/128"), "{err}");
}
